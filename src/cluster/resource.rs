//! Resource amounts with Kubernetes quantity semantics.
//!
//! CPU is kept in millicores and everything else in base units (bytes, pods, devices), as
//! upstream's `framework.Resource` does.
//!
//! Quantities are evaluated exactly, in integer nano-units, following apimachinery's
//! `ParseQuantity`: a non-zero amount finer than `1n` is rounded up to `1n`, magnitudes are
//! capped at `i64::MAX` base units, and `Value()` / `MilliValue()` round away from zero.
//! Sums (as in `PodRequests`) are taken on the exact amounts and rounded once at the end,
//! as upstream adds `Quantity`s before calling `Value()`. `kube_quantity::ParsedQuantity`
//! is deliberately not used for evaluation: it goes through `f64` (losing precision), and
//! rejects the valid suffixes `E` and `Ei`.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// CPU assumed for a container that requests none, when scoring (upstream
/// `DefaultMilliCPURequest`, 0.1 core).
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// Memory assumed for a container that requests none, when scoring (upstream
/// `DefaultMemoryRequest`, 200 MiB).
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

const CPU: &str = "cpu";
const MEMORY: &str = "memory";
const EPHEMERAL_STORAGE: &str = "ephemeral-storage";
const PODS: &str = "pods";

const NANOS_PER_UNIT: i128 = 1_000_000_000;
const NANOS_PER_MILLI: i128 = 1_000_000;
/// apimachinery caps every quantity at `MaxInt64` base units.
const MAX_NANOS: i128 = i64::MAX as i128 * NANOS_PER_UNIT;
/// Significant digits kept exactly; further non-zero digits round the magnitude up.
const MAX_SIGNIFICANT_DIGITS: usize = 19;

/// A quantity string that is not a valid Kubernetes quantity.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("invalid quantity {value:?} for resource {resource}: {reason}")]
pub struct QuantityError {
    pub resource: String,
    pub value: String,
    pub reason: String,
}

/// Amounts of every resource kind. Scalar resources (extended resources, hugepages,
/// attachable volumes) are keyed by their resource name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resource {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    pub allowed_pod_number: i64,
    pub scalar_resources: BTreeMap<String, i64>,
}

impl Resource {
    /// Parses a resource list (requests, limits, allocatable, overhead).
    ///
    /// As upstream `Resource.Add(ResourceList)`: native names other than cpu, memory,
    /// ephemeral-storage and pods (e.g. `storage`) are ignored. Every value is validated.
    pub fn from_list(list: &BTreeMap<String, Quantity>) -> Result<Self, QuantityError> {
        Ok(Self::from_exact(&exact_list(list)?))
    }

    /// Converts exact amounts (nano-units per resource name) with upstream rounding.
    pub(super) fn from_exact(list: &ExactList) -> Self {
        let mut resource = Resource::default();
        for (name, &nanos) in list {
            match name.as_str() {
                CPU => resource.milli_cpu = milli_value(nanos),
                MEMORY | EPHEMERAL_STORAGE | PODS => resource.set(name, value(nanos)),
                _ if is_scalar_resource_name(name) => resource.set(name, value(nanos)),
                _ => {}
            }
        }
        resource
    }

    /// The amount of `name` (`cpu` in millicores).
    pub fn get(&self, name: &str) -> i64 {
        match name {
            CPU => self.milli_cpu,
            MEMORY => self.memory,
            EPHEMERAL_STORAGE => self.ephemeral_storage,
            PODS => self.allowed_pod_number,
            _ => self.scalar_resources.get(name).copied().unwrap_or(0),
        }
    }

    /// Sets the amount of `name` (`cpu` in millicores).
    pub fn set(&mut self, name: &str, value: i64) {
        match name {
            CPU => self.milli_cpu = value,
            MEMORY => self.memory = value,
            EPHEMERAL_STORAGE => self.ephemeral_storage = value,
            PODS => self.allowed_pod_number = value,
            _ => {
                self.scalar_resources.insert(name.to_owned(), value);
            }
        }
    }

    pub fn add(&mut self, other: &Resource) {
        self.combine(other, i64::saturating_add);
    }

    /// Subtracts `other`. Scalar resources that reach zero are kept (at 0), as upstream.
    pub fn sub(&mut self, other: &Resource) {
        self.combine(other, i64::saturating_sub);
    }

    /// True when every amount is zero.
    pub fn is_zero(&self) -> bool {
        self.milli_cpu == 0
            && self.memory == 0
            && self.ephemeral_storage == 0
            && self.allowed_pod_number == 0
            && self.scalar_resources.values().all(|&v| v == 0)
    }

    fn combine(&mut self, other: &Resource, op: fn(i64, i64) -> i64) {
        self.milli_cpu = op(self.milli_cpu, other.milli_cpu);
        self.memory = op(self.memory, other.memory);
        self.ephemeral_storage = op(self.ephemeral_storage, other.ephemeral_storage);
        self.allowed_pod_number = op(self.allowed_pod_number, other.allowed_pod_number);
        for (name, &amount) in &other.scalar_resources {
            let entry = self.scalar_resources.entry(name.clone()).or_insert(0);
            *entry = op(*entry, amount);
        }
    }
}

/// Exact amounts in nano-units by resource name: the Rust stand-in for a
/// `v1.ResourceList` that is still being summed (upstream adds `Quantity`s exactly).
pub(super) type ExactList = BTreeMap<String, i128>;

/// Parses every quantity of `list` exactly.
pub(super) fn exact_list(list: &BTreeMap<String, Quantity>) -> Result<ExactList, QuantityError> {
    list.iter()
        .map(|(name, q)| Ok((name.clone(), parse_nanos(name, q)?)))
        .collect()
}

/// `Quantity.Value()`: the amount in base units, rounded up.
pub fn parse_value(resource: &str, q: &Quantity) -> Result<i64, QuantityError> {
    parse_nanos(resource, q).map(value)
}

/// `Quantity.MilliValue()`: the amount in thousandths, rounded up.
pub fn parse_milli_value(resource: &str, q: &Quantity) -> Result<i64, QuantityError> {
    parse_nanos(resource, q).map(milli_value)
}

/// `Value()` of an exact amount: rounded away from zero, as apimachinery does.
pub(super) fn value(nanos: i128) -> i64 {
    saturate(div_away_from_zero(nanos, NANOS_PER_UNIT))
}

/// `MilliValue()` of an exact amount: rounded away from zero, saturating at `i64`.
pub(super) fn milli_value(nanos: i128) -> i64 {
    saturate(div_away_from_zero(nanos, NANOS_PER_MILLI))
}

fn div_away_from_zero(n: i128, d: i128) -> i128 {
    let q = n / d;
    if n % d == 0 { q } else { q + n.signum() }
}

fn saturate(n: i128) -> i64 {
    i64::try_from(n).unwrap_or(if n < 0 { i64::MIN } else { i64::MAX })
}

/// Parses a quantity into nano-units with apimachinery's grammar and rounding (up, to a
/// nano-unit; at most `i64::MAX` units).
pub fn parse_nanos(resource: &str, q: &Quantity) -> Result<i128, QuantityError> {
    parse_capped(resource, q, MAX_NANOS)
}

/// Parses a quantity into nano-units like [`parse_nanos`], capped at [`MAX_EXACT_NANOS`]
/// instead of `i64::MAX` units: dynamic resource allocation compares capacities and
/// counters exactly, also beyond what an `i64` of units holds (apimachinery keeps such
/// decimal quantities at arbitrary precision).
pub fn parse_nanos_exact(resource: &str, q: &Quantity) -> Result<i128, QuantityError> {
    parse_capped(resource, q, MAX_EXACT_NANOS)
}

/// The largest amount [`parse_nanos_exact`] keeps: 10^36 nano-units (10^27 units), so
/// that the sum of any two still fits an `i128`.
pub const MAX_EXACT_NANOS: i128 = 1_000_000_000_000_000_000_000_000_000_000_000_000;

fn parse_capped(resource: &str, q: &Quantity, cap: i128) -> Result<i128, QuantityError> {
    parse_quantity(&q.0, cap).map_err(|reason| QuantityError {
        resource: resource.to_owned(),
        value: q.0.clone(),
        reason: reason.to_owned(),
    })
}

/// `<sign><digits>[.<digits>]<suffix>`, suffix one of the decimal SI prefixes
/// (`n u m "" k M G T P E`), the binary ones (`Ki` .. `Ei`) or an exponent (`e3`, `E-2`).
fn parse_quantity(s: &str, cap: i128) -> Result<i128, &'static str> {
    const VALID: &str = "expected a number with an optional suffix (m, k, M, G, Ki, Mi, Gi, e3, ...), e.g. \"100m\" or \"1.5Gi\"";
    let (negative, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        Some(_) => (false, s),
        None => return Err("empty quantity"),
    };
    let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (int_digits, rest) = rest.split_at(int_len);
    let (frac_digits, suffix) = match rest.strip_prefix('.') {
        Some(after_dot) => {
            let frac_len = after_dot.bytes().take_while(u8::is_ascii_digit).count();
            after_dot.split_at(frac_len)
        }
        None => ("", rest),
    };
    if int_digits.is_empty() && frac_digits.is_empty() {
        return Err(VALID);
    }
    let (exp10, exp2) = parse_suffix(suffix).ok_or(VALID)?;
    let frac_len = i64::try_from(frac_digits.len()).map_err(|_| VALID)?;
    let magnitude = scaled_nanos(int_digits, frac_digits, exp10 - frac_len + 9, exp2, cap);
    Ok(if negative { -magnitude } else { magnitude })
}

/// Decimal and binary exponents of a suffix.
fn parse_suffix(suffix: &str) -> Option<(i64, u32)> {
    let decimal = |e: i64| Some((e, 0));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => Some((0, 10)),
        "Mi" => Some((0, 20)),
        "Gi" => Some((0, 30)),
        "Ti" => Some((0, 40)),
        "Pi" => Some((0, 50)),
        "Ei" => Some((0, 60)),
        _ => {
            let exponent = suffix
                .strip_prefix('e')
                .or_else(|| suffix.strip_prefix('E'))?;
            let digits = exponent.trim_start_matches(['+', '-']);
            let sign_len = exponent.len() - digits.len();
            if sign_len > 1 || digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            // Anything beyond +-1000 is saturated or rounded to 1n anyway.
            exponent
                .parse::<i64>()
                .ok()
                .map(|e| (e.clamp(-1000, 1000), 0))
        }
    }
}

/// `digits * 10^exp10 * 2^exp2`, rounded up to an integer and capped at `cap`.
fn scaled_nanos(int_digits: &str, frac_digits: &str, exp10: i64, exp2: u32, cap: i128) -> i128 {
    let all = format!("{int_digits}{frac_digits}");
    let significant = all.trim_start_matches('0');
    let trimmed = significant.trim_end_matches('0');
    if trimmed.is_empty() {
        return 0;
    }
    // Value = mantissa * 10^exp10, with trailing zeros folded into the exponent.
    let mut exp10 = exp10 + (significant.len() - trimmed.len()) as i64;
    let kept = trimmed.len().min(MAX_SIGNIFICANT_DIGITS);
    let mut mantissa: i128 = trimmed[..kept]
        .bytes()
        .fold(0, |acc, b| acc * 10 + i128::from(b - b'0'));
    if trimmed.len() > kept {
        // The dropped digits are not all zero (trailing zeros were trimmed): round up.
        mantissa += 1;
        exp10 += (trimmed.len() - kept) as i64;
    }
    let Some(mantissa) = mantissa.checked_mul(1 << exp2) else {
        return cap;
    };
    if exp10 >= 0 {
        let scaled = u32::try_from(exp10)
            .ok()
            .and_then(|e| 10i128.checked_pow(e))
            .and_then(|p| mantissa.checked_mul(p));
        scaled.map_or(cap, |n| n.min(cap))
    } else {
        // mantissa < 2^124, so a divisor above 10^38 leaves less than one nano: round up.
        match u32::try_from(-exp10)
            .ok()
            .and_then(|e| 10i128.checked_pow(e))
        {
            Some(divisor) => div_away_from_zero(mantissa, divisor).min(cap),
            None => 1,
        }
    }
}

/// Upstream `IsNativeResource`: no domain, or in the `kubernetes.io/` domain.
fn is_native_resource_name(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// Upstream `IsExtendedResourceName`: a fully-qualified name outside `kubernetes.io/`
/// that is not `requests.`-prefixed.
pub fn is_extended_resource_name(name: &str) -> bool {
    if is_native_resource_name(name) || name.starts_with("requests.") {
        return false;
    }
    // Upstream checks that `requests.<name>` is a valid qualified name (for quota).
    is_qualified_name(&format!("requests.{name}"))
}

/// Upstream `IsScalarResourceName`: extended, hugepages-*, attachable-volumes-*, or
/// other native scalar resources.
pub fn is_scalar_resource_name(name: &str) -> bool {
    is_extended_resource_name(name)
        || name.starts_with("hugepages-")
        || name.contains("kubernetes.io/")
        || name.starts_with("attachable-volumes-")
}

/// apimachinery `IsQualifiedName`: `[dns-subdomain/]name`, name at most 63 characters of
/// `[A-Za-z0-9][-A-Za-z0-9_.]*[A-Za-z0-9]`.
fn is_qualified_name(value: &str) -> bool {
    let (prefix, name) = match value.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, value),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    name_ok && prefix.is_none_or(is_dns1123_subdomain)
}

/// apimachinery `IsDNS1123Subdomain`: at most 253 characters, dot-separated labels of
/// lowercase alphanumerics and `-`, starting and ending with an alphanumeric.
fn is_dns1123_subdomain(value: &str) -> bool {
    let label_ok = |label: &str| {
        !label.is_empty()
            && label.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && label.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && label
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    };
    value.len() <= 253 && value.split('.').all(label_ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity(s.to_owned())
    }

    #[test]
    fn quantity_values_round_up_like_apimachinery() {
        // (name, quantity, Value(), MilliValue()) as apimachinery computes them; `None`
        // where MilliValue overflows int64 upstream (berth saturates at i64::MAX).
        let cases = [
            ("millicores", "100m", 1, Some(100)),
            ("whole core", "1", 1, Some(1000)),
            ("half core", "0.5", 1, Some(500)),
            (
                "binary giga fraction",
                "1.5Gi",
                1_610_612_736,
                Some(1_610_612_736_000),
            ),
            ("decimal exponent", "1e3", 1000, Some(1_000_000)),
            ("upper-case exponent", "1E3", 1000, Some(1_000_000)),
            ("negative exponent", "5e-3", 1, Some(5)),
            ("kibi", "1Ki", 1024, Some(1_024_000)),
            ("mebi", "10Mi", 10_485_760, Some(10_485_760_000)),
            ("kilo", "1k", 1000, Some(1_000_000)),
            ("exa", "1E", 1_000_000_000_000_000_000, None),
            ("exbi", "1Ei", 1_152_921_504_606_846_976, None),
            ("sub-milli rounds up", "0.1m", 1, Some(1)),
            ("nano rounds up", "1n", 1, Some(1)),
            ("sub-nano rounds up to 1n", "0.0001n", 1, Some(1)),
            ("micro", "1500u", 1, Some(2)),
            ("zero", "0", 0, Some(0)),
            ("zero with suffix", "0Gi", 0, Some(0)),
            ("explicit plus", "+2", 2, Some(2000)),
            ("negative rounds away from zero", "-1.5", -2, Some(-1500)),
            ("leading zeros and dot", "007.50", 8, Some(7500)),
            ("trailing dot", "3.", 3, Some(3000)),
            ("leading dot", ".5", 1, Some(500)),
            ("capped at MaxInt64", "100E", i64::MAX, None),
            ("huge exponent capped", "1e100", i64::MAX, None),
            ("tiny exponent rounds up", "1e-100", 1, Some(1)),
            (
                "many digits round up",
                "0.1000000000000000000001",
                1,
                Some(101),
            ),
        ];
        for (name, input, value, milli) in cases {
            assert_eq!(
                parse_value("cpu", &q(input)),
                Ok(value),
                "{name}: Value({input})"
            );
            let want_milli = milli.unwrap_or(i64::MAX);
            assert_eq!(
                parse_milli_value("cpu", &q(input)),
                Ok(want_milli),
                "{name}: MilliValue({input})"
            );
        }
    }

    #[test]
    fn invalid_quantities_are_rejected_naming_resource_and_value() {
        let cases = [
            ("empty", ""),
            ("word", "garbage"),
            ("unknown suffix", "1K"),
            ("lower-case binary", "1ki"),
            ("two dots", "1.5.0"),
            ("sign only", "-"),
            ("suffix only", "Mi"),
            ("exponent without digits", "1e"),
            ("double exponent sign", "1e+-3"),
            ("space", "1 Gi"),
            ("trailing garbage", "10Mib"),
        ];
        for (name, input) in cases {
            let err = parse_value("memory", &q(input)).expect_err(name);
            assert_eq!(err.resource, "memory", "{name}");
            assert_eq!(err.value, input, "{name}");
            assert!(err.to_string().contains("memory"), "{name}: {err}");
        }
    }

    #[test]
    fn from_list_maps_names_like_upstream_add() {
        let list: BTreeMap<String, Quantity> = [
            ("cpu", "1500m"),
            ("memory", "1Gi"),
            ("ephemeral-storage", "10G"),
            ("pods", "110"),
            ("nvidia.com/gpu", "2"),
            ("hugepages-2Mi", "4Mi"),
            ("attachable-volumes-aws-ebs", "39"),
            ("storage", "5Gi"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), q(v)))
        .collect();
        let want = Resource {
            milli_cpu: 1500,
            memory: 1 << 30,
            ephemeral_storage: 10_000_000_000,
            allowed_pod_number: 110,
            scalar_resources: [
                ("attachable-volumes-aws-ebs".to_owned(), 39),
                ("hugepages-2Mi".to_owned(), 4 << 20),
                ("nvidia.com/gpu".to_owned(), 2),
            ]
            .into(),
        };
        assert_eq!(Resource::from_list(&list), Ok(want));

        let bad: BTreeMap<String, Quantity> = [("cpu".to_owned(), q("lots"))].into();
        assert!(Resource::from_list(&bad).is_err());
    }

    #[test]
    fn resource_names_are_classified_like_v1helper() {
        // (name, IsExtendedResourceName, IsScalarResourceName)
        let cases = [
            ("cpu", false, false),
            ("memory", false, false),
            ("storage", false, false),
            ("kubernetes.io/something", false, true),
            ("example.com/dongle", true, true),
            ("nvidia.com/gpu", true, true),
            ("requests.example.com/foo", false, false),
            ("Example.com/dongle", false, false),
            ("example.com/-bad", false, false),
            ("hugepages-1Gi", false, true),
            ("attachable-volumes-csi-ebs", false, true),
        ];
        for (name, extended, scalar) in cases {
            assert_eq!(is_extended_resource_name(name), extended, "extended {name}");
            assert_eq!(is_scalar_resource_name(name), scalar, "scalar {name}");
        }
    }

    #[test]
    fn get_set_add_sub() {
        let mut r = Resource::default();
        r.set("cpu", 250);
        r.set("memory", 1024);
        r.set("ephemeral-storage", 7);
        r.set("pods", 3);
        r.set("example.com/foo", 5);
        let cases = [
            ("cpu", 250),
            ("memory", 1024),
            ("ephemeral-storage", 7),
            ("pods", 3),
            ("example.com/foo", 5),
            ("example.com/absent", 0),
        ];
        for (name, want) in cases {
            assert_eq!(r.get(name), want, "{name}");
        }

        let mut sum = r.clone();
        sum.add(&r);
        assert_eq!(sum.get("cpu"), 500);
        assert_eq!(sum.get("example.com/foo"), 10);
        sum.sub(&r);
        assert_eq!(sum, r);
        sum.sub(&r);
        assert!(sum.is_zero());
        assert_eq!(sum.scalar_resources.get("example.com/foo"), Some(&0));
    }
}
