//! Deterministic identities: uids and generated name suffixes derived from an object's
//! key, so that the same input always gives the same objects.

/// 64-bit FNV-1a: stable across Rust versions, unlike `DefaultHasher`.
pub(super) fn fnv1a(bytes: &[u8], seed: u64) -> u64 {
    bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325 ^ seed, |hash, byte| {
            (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

/// A UUID-shaped (version 8, RFC 9562 "custom") identifier derived from `key`.
pub(crate) fn deterministic_uid(key: &str) -> String {
    let high = fnv1a(key.as_bytes(), 0);
    let low = fnv1a(key.as_bytes(), 0x9e37_79b9_7f4a_7c15);
    let bytes = ((u128::from(high) << 64) | u128::from(low)).to_be_bytes();
    crate::helpers::uuid::uuid_text(bytes, 8)
}

/// The 5-character suffix of `generateName`, from the alphabet the API server uses.
pub(crate) fn name_suffix(key: &str) -> String {
    pub(super) const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut hash = fnv1a(key.as_bytes(), 0);
    (0..5)
        .map(|_| {
            let index = (hash % ALPHABET.len() as u64) as usize;
            hash /= ALPHABET.len() as u64;
            char::from(ALPHABET[index])
        })
        .collect()
}
