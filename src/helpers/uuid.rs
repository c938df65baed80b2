//! UUIDs as text: the simulator's deterministic uids and the allocator's random share IDs
//! print alike.

/// `bytes` as a UUID of `version` (RFC 9562 layout: the version in the high nibble of
/// byte 6, the variant `10` in the top bits of byte 8), lowercase and hyphenated.
pub fn uuid_text(mut bytes: [u8; 16], version: u8) -> String {
    bytes[6] = (bytes[6] & 0x0f) | (version << 4);
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_the_version_and_variant_bits() {
        assert_eq!(
            uuid_text([0xff; 16], 4),
            "ffffffff-ffff-4fff-bfff-ffffffffffff"
        );
        assert_eq!(
            uuid_text([0; 16], 8),
            "00000000-0000-8000-8000-000000000000"
        );
    }
}
