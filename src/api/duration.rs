//! `metav1.Duration`: a duration written in Go's syntax (`10s`, `1m30s`, `1.5h`, `300ms`),
//! as upstream's plugin args take timeouts (DynamicResources' `filterTimeout` and
//! `bindingTimeout`). It parses as Go's `time.ParseDuration` does and prints as Go's
//! `Duration.String`, so a value reads back in errors exactly as kube-scheduler shows it.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

const NANOSECOND: u64 = 1;
const MICROSECOND: u64 = 1_000 * NANOSECOND;
const MILLISECOND: u64 = 1_000 * MICROSECOND;
const SECOND: u64 = 1_000 * MILLISECOND;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;

/// The magnitude of `i64::MIN` nanoseconds, the largest Go accepts.
const LIMIT: u64 = 1 << 63;

/// A signed duration in nanoseconds, written as Go writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct GoDuration {
    nanos: i64,
}

impl GoDuration {
    pub const fn from_nanos(nanos: i64) -> GoDuration {
        GoDuration { nanos }
    }

    pub const fn from_secs(secs: i64) -> GoDuration {
        GoDuration {
            nanos: secs.saturating_mul(SECOND as i64),
        }
    }

    pub const fn as_nanos(&self) -> i64 {
        self.nanos
    }

    /// The duration as a std one; a negative duration is zero.
    pub fn to_std(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(u64::try_from(self.nanos).unwrap_or(0))
    }

    /// Go's `time.ParseDuration`: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, units `ns`, `us`
    /// (`µs`, `μs`), `ms`, `s`, `m`, `h`, or a bare `0`; its error texts.
    pub fn parse(text: &str) -> Result<GoDuration, String> {
        let invalid = || format!("time: invalid duration {}", quote(text));
        let (negative, mut rest) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        if rest == "0" {
            return Ok(GoDuration::default());
        }
        if rest.is_empty() {
            return Err(invalid());
        }
        let mut total: u64 = 0;
        while !rest.is_empty() {
            let first = rest.as_bytes()[0];
            if !(first == b'.' || first.is_ascii_digit()) {
                return Err(invalid());
            }
            let (whole, after, had_whole) = leading_int(rest).ok_or_else(invalid)?;
            rest = after;
            let (mut fraction, mut scale, mut had_fraction) = (0u64, 1f64, false);
            if let Some(after_dot) = rest.strip_prefix('.') {
                let (f, s, after) = leading_fraction(after_dot);
                had_fraction = after.len() != after_dot.len();
                (fraction, scale, rest) = (f, s, after);
            }
            if !had_whole && !had_fraction {
                return Err(invalid());
            }
            let unit_len = rest
                .find(|c: char| c == '.' || c.is_ascii_digit())
                .unwrap_or(rest.len());
            if unit_len == 0 {
                return Err(format!("time: missing unit in duration {}", quote(text)));
            }
            let (unit_text, after) = rest.split_at(unit_len);
            rest = after;
            let unit = match unit_text {
                "ns" => NANOSECOND,
                "us" | "\u{b5}s" | "\u{3bc}s" => MICROSECOND,
                "ms" => MILLISECOND,
                "s" => SECOND,
                "m" => MINUTE,
                "h" => HOUR,
                _ => {
                    return Err(format!(
                        "time: unknown unit {} in duration {}",
                        quote(unit_text),
                        quote(text)
                    ));
                }
            };
            if whole > LIMIT / unit {
                return Err(invalid());
            }
            let mut value = whole * unit;
            if fraction > 0 {
                // Go computes the fraction in float64, nanosecond-exact up to hours.
                value += (fraction as f64 * (unit as f64 / scale)) as u64;
                if value > LIMIT {
                    return Err(invalid());
                }
            }
            total += value;
            if total > LIMIT {
                return Err(invalid());
            }
        }
        if negative {
            return Ok(GoDuration {
                nanos: (total as i128).wrapping_neg() as i64,
            });
        }
        i64::try_from(total)
            .map(|nanos| GoDuration { nanos })
            .map_err(|_| invalid())
    }
}

/// Go's `leadingInt`: the digits at the start, their value and whether there were any;
/// `None` past `1 << 63`.
fn leading_int(text: &str) -> Option<(u64, &str, bool)> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let mut value: u64 = 0;
    for b in text[..digits].bytes() {
        if value > LIMIT / 10 {
            return None;
        }
        value = value * 10 + u64::from(b - b'0');
        if value > LIMIT {
            return None;
        }
    }
    Some((value, &text[digits..], digits > 0))
}

/// Go's `leadingFraction`: the digits after a dot as an integer and the power of ten it
/// is scaled by; digits past what fits are read and dropped.
fn leading_fraction(text: &str) -> (u64, f64, &str) {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let (mut value, mut scale, mut overflow) = (0u64, 1f64, false);
    for b in text[..digits].bytes() {
        if overflow {
            continue;
        }
        if value > (LIMIT - 1) / 10 {
            overflow = true;
            continue;
        }
        let next = value * 10 + u64::from(b - b'0');
        if next > LIMIT {
            overflow = true;
            continue;
        }
        value = next;
        scale *= 10.0;
    }
    (value, scale, &text[digits..])
}

/// Go's `time.quote`: double quotes, bytes outside printable ASCII as `\xHH`.
fn quote(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        if !(' '..'\u{80}').contains(&c) {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// `value` with the last `precision` digits as a fraction, trailing zeros dropped.
fn with_fraction(value: u64, precision: u32) -> String {
    let scale = 10u64.pow(precision);
    let (whole, fraction) = (value / scale, value % scale);
    if fraction == 0 {
        return whole.to_string();
    }
    let digits = format!("{fraction:0width$}", width = precision as usize);
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

impl fmt::Display for GoDuration {
    /// Go's `Duration.String`: `0s`; below a second in the largest of `ns`, `µs`, `ms`
    /// with a fraction; else hours, minutes and seconds (`1h0m0s`, `4m5.001s`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.nanos < 0 { "-" } else { "" };
        let u = self.nanos.unsigned_abs();
        if u == 0 {
            return f.write_str("0s");
        }
        if u < SECOND {
            let (precision, unit) = if u < MICROSECOND {
                (0, "ns")
            } else if u < MILLISECOND {
                (3, "\u{b5}s")
            } else {
                (6, "ms")
            };
            return write!(f, "{sign}{}{unit}", with_fraction(u, precision));
        }
        let seconds = with_fraction(u % MINUTE, 9);
        let minutes = u / MINUTE;
        if minutes == 0 {
            return write!(f, "{sign}{seconds}s");
        }
        let hours = minutes / 60;
        if hours == 0 {
            return write!(f, "{sign}{minutes}m{seconds}s");
        }
        write!(f, "{sign}{hours}h{}m{seconds}s", minutes % 60)
    }
}

impl Serialize for GoDuration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for GoDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        GoDuration::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for GoDuration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A duration in Go's syntax, e.g. \"10s\", \"1m30s\", \"300ms\"."
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Go's `durationTests` (time_test.go): printing, also negated.
    #[test]
    fn prints_as_go_prints() {
        for (text, nanos) in [
            ("0s", 0),
            ("1ns", 1),
            ("1.1\u{b5}s", 1_100),
            ("2.2ms", 2_200_000),
            ("3.3s", 3_300_000_000),
            ("4m5s", 245_000_000_000),
            ("4m5.001s", 245_001_000_000),
            ("5h6m7.001s", 18_367_001_000_000),
            ("8m0.000000001s", 480_000_000_001),
            ("2562047h47m16.854775807s", i64::MAX),
            ("-2562047h47m16.854775808s", i64::MIN),
        ] {
            assert_eq!(GoDuration::from_nanos(nanos).to_string(), text);
            if nanos > 0 {
                assert_eq!(
                    GoDuration::from_nanos(-nanos).to_string(),
                    format!("-{text}")
                );
            }
        }
    }

    /// Go's `parseDurationTests`.
    #[test]
    fn parses_as_go_parses() {
        const S: i64 = 1_000_000_000;
        const MS: i64 = 1_000_000;
        const US: i64 = 1_000;
        for (text, nanos) in [
            ("0", 0),
            ("5s", 5 * S),
            ("30s", 30 * S),
            ("1478s", 1478 * S),
            ("-5s", -5 * S),
            ("+5s", 5 * S),
            ("-0", 0),
            ("+0", 0),
            ("5.0s", 5 * S),
            ("5.6s", 5 * S + 600 * MS),
            ("5.s", 5 * S),
            (".5s", 500 * MS),
            ("1.0s", S),
            ("1.00s", S),
            ("1.004s", S + 4 * MS),
            ("1.0040s", S + 4 * MS),
            ("100.00100s", 100 * S + MS),
            ("10ns", 10),
            ("11us", 11 * US),
            ("12\u{b5}s", 12 * US),
            ("12\u{3bc}s", 12 * US),
            ("13ms", 13 * MS),
            ("14s", 14 * S),
            ("15m", 15 * 60 * S),
            ("16h", 16 * 3600 * S),
            ("3h30m", 3 * 3600 * S + 30 * 60 * S),
            ("10.5s4m", 4 * 60 * S + 10 * S + 500 * MS),
            ("-2m3.4s", -(2 * 60 * S + 3 * S + 400 * MS)),
            (
                "1h2m3s4ms5us6ns",
                3600 * S + 2 * 60 * S + 3 * S + 4 * MS + 5 * US + 6,
            ),
            (
                "39h9m14.425s",
                39 * 3600 * S + 9 * 60 * S + 14 * S + 425 * MS,
            ),
            ("52763797000ns", 52_763_797_000),
            ("0.3333333333333333333h", 20 * 60 * S),
            ("9007199254740993ns", (1 << 53) + 1),
            ("9223372036854775807ns", i64::MAX),
            ("9223372036854775.807us", i64::MAX),
            ("9223372036s854ms775us807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
            ("-9223372036854775.808us", i64::MIN),
            ("-9223372036s854ms775us808ns", i64::MIN),
            ("-2562047h47m16.854775808s", i64::MIN),
            ("0.100000000000000000000h", 6 * 60 * S),
            (
                "0.830103483285477580700h",
                49 * 60 * S + 48 * S + 372_539_827,
            ),
        ] {
            assert_eq!(
                GoDuration::parse(text),
                Ok(GoDuration::from_nanos(nanos)),
                "{text}"
            );
        }
    }

    /// Go's `parseDurationErrorTests` (inputs Rust strings can hold).
    #[test]
    fn refuses_what_go_refuses_with_its_words() {
        for (text, quoted) in [
            ("", r#""""#),
            ("3", r#""3""#),
            ("-", r#""-""#),
            ("s", r#""s""#),
            (".", r#"".""#),
            ("-.", r#""-.""#),
            (".s", r#"".s""#),
            ("+.s", r#""+.s""#),
            ("1d", r#""1d""#),
            ("\u{FFFD}", r#""\xef\xbf\xbd""#),
            (
                "\u{FFFD} hello \u{FFFD} world",
                r#""\xef\xbf\xbd hello \xef\xbf\xbd world""#,
            ),
            ("9223372036854775810ns", r#""9223372036854775810ns""#),
            ("9223372036854775808ns", r#""9223372036854775808ns""#),
            ("-9223372036854775809ns", r#""-9223372036854775809ns""#),
            ("9223372036854776us", r#""9223372036854776us""#),
            ("3000000h", r#""3000000h""#),
            ("9223372036854775.808us", r#""9223372036854775.808us""#),
            (
                "9223372036854ms775us808ns",
                r#""9223372036854ms775us808ns""#,
            ),
        ] {
            let error = GoDuration::parse(text).expect_err(text);
            assert!(error.contains(quoted), "{text}: {error}");
        }
        assert_eq!(
            GoDuration::parse("3").expect_err("no unit"),
            r#"time: missing unit in duration "3""#
        );
        assert_eq!(
            GoDuration::parse("1d").expect_err("no such unit"),
            r#"time: unknown unit "d" in duration "1d""#
        );
    }

    #[test]
    fn round_trips_through_json() {
        let d: GoDuration = serde_json::from_str("\"1m30s\"").expect("valid");
        assert_eq!(d, GoDuration::from_secs(90));
        assert_eq!(serde_json::to_string(&d).expect("serializes"), "\"1m30s\"");
        assert!(serde_json::from_str::<GoDuration>("\"ten seconds\"").is_err());
    }
}
