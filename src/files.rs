//! Reading the files berth is pointed at, with a size bound.
//!
//! Every path berth reads comes from its user: `-f` files and stdin for `berth simulate`
//! and `berth convert`, a Prometheus `caFile` or `bearerTokenFile` in a profile. Any of them
//! may be a device or a pipe that never ends (`/dev/zero`, `yes |`), so each is read through
//! [`read_to_string`] or [`read_bytes`] with a limit fitting what it should hold: the read
//! stops one byte past the limit and reports the file as too large, quickly and without
//! holding more than the limit in memory. This module sits below `cli`, `simulate` and
//! `plugins` and depends on none of them.

use std::fmt;
use std::io::Read;
use std::path::Path;

/// The bound for cluster descriptions and scheduler configurations (`-f`, stdin).
pub const MANIFEST_LIMIT: u64 = 64 * MIB;

/// The bound for small secrets and certificates: a bearer token, a CA bundle.
pub const CREDENTIAL_LIMIT: u64 = MIB;

const MIB: u64 = 1024 * 1024;

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be opened or read (missing, unreadable, not UTF-8).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The file holds more than the limit.
    #[error("larger than {}: berth reads at most {} bytes from it", Size(*.limit), .limit)]
    TooLarge { limit: u64 },
}

/// `path` (`-` is stdin) as UTF-8 text of at most `limit` bytes.
pub fn read_to_string(path: &Path, limit: u64) -> Result<String, ReadError> {
    let bytes = read_bytes(path, limit)?;
    String::from_utf8(bytes).map_err(|error| {
        ReadError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("stream did not contain valid UTF-8: {}", error.utf8_error()),
        ))
    })
}

/// The bytes of `path` (`-` is stdin), at most `limit` of them.
pub fn read_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    if path == Path::new("-") {
        read_limited(std::io::stdin().lock(), limit)
    } else {
        read_limited(std::fs::File::open(path)?, limit)
    }
}

/// Everything `reader` yields, or [`ReadError::TooLarge`] as soon as it yields more than
/// `limit` bytes.
pub fn read_limited(reader: impl Read, limit: u64) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge { limit });
    }
    Ok(bytes)
}

/// A byte count as people write limits: `64 MiB`, `1 MiB`, `512 KiB`, `100 bytes`.
struct Size(u64);

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = self.0;
        if bytes >= MIB && bytes.is_multiple_of(MIB) {
            write!(f, "{} MiB", bytes / MIB)
        } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
            write!(f, "{} KiB", bytes / 1024)
        } else {
            write!(f, "{bytes} bytes")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A case: name, input, limit, and the bytes read or the error message.
    type Case<'a> = (&'a str, &'a [u8], u64, Result<&'a [u8], &'a str>);

    #[test]
    fn reads_up_to_the_limit_and_refuses_one_byte_more() {
        let cases: [Case; 4] = [
            ("empty", b"", 4, Ok(b"")),
            ("below the limit", b"abc", 4, Ok(b"abc")),
            ("at the limit", b"abcd", 4, Ok(b"abcd")),
            (
                "one byte over",
                b"abcde",
                4,
                Err("larger than 4 bytes: berth reads at most 4 bytes from it"),
            ),
        ];
        for (name, input, limit, expected) in cases {
            let got = read_limited(input, limit);
            match (got, expected) {
                (Ok(bytes), Ok(want)) => assert_eq!(bytes, want, "{name}"),
                (Err(error), Err(want)) => assert_eq!(error.to_string(), want, "{name}"),
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn an_endless_stream_stops_at_the_limit() {
        let error = read_limited(std::io::repeat(0), MIB).unwrap_err();
        assert_eq!(
            error.to_string(),
            "larger than 1 MiB: berth reads at most 1048576 bytes from it"
        );
    }

    #[cfg(unix)]
    #[test]
    fn dev_zero_is_too_large() {
        let error = read_to_string(Path::new("/dev/zero"), MANIFEST_LIMIT).unwrap_err();
        assert!(matches!(error, ReadError::TooLarge { limit } if limit == 64 * MIB));
    }
}
