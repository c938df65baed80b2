//! Exact quantities for counters and capacities, with apimachinery's canonical form.
//!
//! The allocator adds and compares counters and capacities exactly (apimachinery's
//! `Quantity.Add`, `Sub`, `Cmp`) and writes consumed capacity back into a claim's
//! status, where the API server would print the quantity in its canonical form. An
//! [`Amount`] is the exact value in nano-units (every quantity the API accepts rounds to
//! a whole nano-unit; amounts are kept up to 10^27 units, far beyond `i64::MAX`, as
//! apimachinery keeps decimal quantities exactly) and the format the value was written
//! in, which decides how it prints: binary (`Ki` .. `Ei`), decimal SI (`m`, `k`, `M`,
//! ..) or a decimal exponent.

use std::cmp::Ordering;
use std::fmt;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::cluster::{QuantityError, parse_nanos_exact};

const NANOS_PER_UNIT: i128 = 1_000_000_000;

/// How a quantity prints (apimachinery's `Format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    DecimalSi,
    BinarySi,
    DecimalExponent,
}

/// An exact quantity and the format it prints in.
#[derive(Debug, Clone, Copy, Default)]
pub struct Amount {
    pub nanos: i128,
    pub format: Format,
}

impl PartialEq for Amount {
    /// Value equality (`Cmp == 0`); the format does not count.
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Amount {}

impl PartialOrd for Amount {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Amount {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

impl Amount {
    pub const ZERO: Amount = Amount {
        nanos: 0,
        format: Format::DecimalSi,
    };

    /// Parses `quantity` (named `name` in errors) with apimachinery's grammar.
    pub fn parse(name: &str, quantity: &Quantity) -> Result<Amount, QuantityError> {
        let nanos = parse_nanos_exact(name, quantity)?;
        Ok(Amount {
            nanos,
            format: format_of(&quantity.0),
        })
    }

    /// `units` whole units, in `format`.
    pub fn from_units(units: i64, format: Format) -> Amount {
        Amount {
            nanos: i128::from(units) * NANOS_PER_UNIT,
            format,
        }
    }

    /// `millis` thousandths, in `format`.
    pub fn from_millis(millis: i64, format: Format) -> Amount {
        Amount {
            nanos: i128::from(millis) * 1_000_000,
            format,
        }
    }

    /// The sum, in this amount's format (apimachinery's `Add` keeps the receiver's).
    pub fn plus(self, other: Amount) -> Amount {
        Amount {
            nanos: self.nanos.saturating_add(other.nanos),
            format: self.format,
        }
    }

    /// The difference, in this amount's format.
    pub fn minus(self, other: Amount) -> Amount {
        Amount {
            nanos: self.nanos.saturating_sub(other.nanos),
            format: self.format,
        }
    }

    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// `Value()`: whole units, rounded away from zero.
    pub fn value(&self) -> i128 {
        div_away_from_zero(self.nanos, NANOS_PER_UNIT)
    }

    /// The value in thousandths, when it is a whole number of them that fits an `i64`
    /// (upstream's `safeMilliValue`).
    pub fn exact_millis(&self) -> Option<i128> {
        let millis = self.nanos / 1_000_000;
        (self.nanos % 1_000_000 == 0 && i64::try_from(millis).is_ok()).then_some(millis)
    }

    /// The canonical form the API server prints.
    pub fn to_quantity(&self) -> Quantity {
        Quantity(self.to_string())
    }
}

fn div_away_from_zero(n: i128, d: i128) -> i128 {
    let q = n / d;
    if n % d == 0 { q } else { q + n.signum() }
}

/// The format a quantity string is written in: a binary suffix, an exponent, or else
/// decimal SI (apimachinery's parser decides the same way).
fn format_of(text: &str) -> Format {
    let trimmed = text.trim_end_matches(|c: char| c.is_ascii_digit() || c == '+' || c == '-');
    if text.ends_with('i') {
        Format::BinarySi
    } else if trimmed.len() < text.len()
        && (trimmed.ends_with('e') || trimmed.ends_with('E'))
        && trimmed.len() > 1
    {
        Format::DecimalExponent
    } else {
        Format::DecimalSi
    }
}

impl fmt::Display for Amount {
    /// apimachinery's `CanonicalizeBytes`: binary when the format is binary, the value a
    /// whole number and at least 1024 in magnitude (`1536Mi`, `1Gi`); otherwise the
    /// smallest integer mantissa with a power-of-1000 suffix (`1500m`, `2k`), or an
    /// exponent (`15e2`) for the exponent format and beyond the SI suffixes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.nanos == 0 {
            return f.write_str("0");
        }
        let whole = self.nanos % NANOS_PER_UNIT == 0;
        let binary =
            self.format == Format::BinarySi && whole && (self.nanos / NANOS_PER_UNIT).abs() >= 1024;
        if binary {
            let mut value = self.nanos / NANOS_PER_UNIT;
            let mut exponent = 0;
            while value % 1024 == 0 && exponent < 6 {
                value /= 1024;
                exponent += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][exponent];
            return write!(f, "{value}{suffix}");
        }
        let mut mantissa = self.nanos;
        let mut exponent: i32 = -9;
        while mantissa % 10 == 0 {
            mantissa /= 10;
            exponent += 1;
        }
        while exponent.rem_euclid(3) != 0 {
            mantissa *= 10;
            exponent -= 1;
        }
        let si = match exponent {
            -9 => Some("n"),
            -6 => Some("u"),
            -3 => Some("m"),
            0 => Some(""),
            3 => Some("k"),
            6 => Some("M"),
            9 => Some("G"),
            12 => Some("T"),
            15 => Some("P"),
            18 => Some("E"),
            _ => None,
        };
        match (self.format, si) {
            (Format::DecimalExponent, _) if exponent == 0 => write!(f, "{mantissa}"),
            (Format::DecimalExponent, _) | (_, None) => write!(f, "{mantissa}e{exponent}"),
            (_, Some(suffix)) => write!(f, "{mantissa}{suffix}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(text: &str) -> String {
        Amount::parse("q", &Quantity(text.into()))
            .expect("valid")
            .to_string()
    }

    /// apimachinery's quantity_test.go: `TestQuantityString`'s alternate spellings and
    /// `TestQuantityParseEmit`, each parsed and printed, also negated.
    #[test]
    fn prints_the_canonical_form_apimachinery_prints() {
        for (input, expected) in [
            ("1024Mi", "1Gi"),
            ("307200Ki", "300Mi"),
            ("1025024Mi", "1001Gi"),
            ("1024Gi", "1Ti"),
            ("5000m", "5"),
            ("0.5", "500m"),
            ("1000M", "1G"),
            ("0.001T", "1G"),
            ("1000u", "1m"),
            ("1.08", "1080m"),
            ("1080000000n", "1080m"),
            (".001e12", "1e9"),
            ("0.001e0", "1e-3"),
            ("1000e-12", "1e-9"),
            ("1Ki", "1Ki"),
            ("1Mi", "1Mi"),
            ("1Gi", "1Gi"),
            ("1000M", "1G"),
            (".001Ki", "1024m"),
            (".000001Ki", "1024u"),
            (".000000001Ki", "1024n"),
            (".000000000001Ki", "2n"),
        ] {
            assert_eq!(canonical(input), expected, "{input}");
            assert_eq!(
                canonical(&format!("-{input}")),
                format!("-{expected}"),
                "-{input}"
            );
        }
        assert_eq!(canonical("0"), "0");
        assert_eq!(canonical("0Gi"), "0");
    }

    #[test]
    fn compares_and_adds_exactly_keeping_the_first_format() {
        let a = Amount::parse("q", &Quantity("1Gi".into())).expect("valid");
        let b = Amount::parse("q", &Quantity("1073741824".into())).expect("valid");
        assert_eq!(a, b);
        assert_eq!(a.plus(b).to_string(), "2Gi");
        assert_eq!(b.plus(a).to_string(), "2147483648");
        assert!(
            Amount::from_millis(1500, Format::DecimalSi) > Amount::from_units(1, Format::DecimalSi)
        );
        assert_eq!(Amount::from_millis(1500, Format::DecimalSi).value(), 2);
    }
}
