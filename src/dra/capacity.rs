//! Consumable capacity (upstream `DRAConsumableCapacity`, beta and on in 1.37): what a
//! request consumes of a device's capacities, rounded to the device's request policy,
//! and whether it still fits beside what other shares consume.

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::{
    CapacityRequestPolicy, CapacityRequestPolicyRange, CapacityRequirements, DeviceCapacity,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::quantity::Amount;

/// Consumed amounts by capacity name.
pub type Consumed = BTreeMap<String, Amount>;

const NANOS_PER_MILLI: i128 = 1_000_000;
const NANOS_PER_UNIT: i128 = 1_000_000_000;

fn parse(name: &str, q: &Quantity) -> Amount {
    // The API server validated every quantity it stored; an unparsable one counts as 0.
    Amount::parse(name, q).unwrap_or_default()
}

fn requests(requirements: Option<&CapacityRequirements>) -> BTreeMap<&str, &Quantity> {
    requirements
        .and_then(|r| r.requests.as_ref())
        .map(|r| r.iter().map(|(k, v)| (k.as_str(), v)).collect())
        .unwrap_or_default()
}

/// Upstream `CmpRequestOverCapacity`: whether `requested` fits `capacities` beside
/// `current` (what persisted shares consume) and `allocating` (what this allocation's
/// shares consume). A request naming a capacity the device lacks does not fit. An error
/// for a request the policy's arithmetic cannot represent.
pub fn request_fits(
    current: Option<&Consumed>,
    requested: Option<&CapacityRequirements>,
    capacities: &BTreeMap<String, DeviceCapacity>,
    allocating: Option<&Consumed>,
) -> Result<bool, String> {
    let requests = requests(requested);
    if requests.keys().any(|name| !capacities.contains_key(*name)) {
        return Ok(false);
    }
    let consumed = consumed_by(requested, capacities)?;
    for (name, capacity) in capacities {
        let amount = consumed[name];
        if violates_policy(amount, capacity.request_policy.as_ref()) {
            return Ok(false);
        }
        let zero = Amount::ZERO;
        let total = current
            .and_then(|c| c.get(name))
            .copied()
            .unwrap_or(zero)
            .plus(amount)
            .plus(
                allocating
                    .and_then(|c| c.get(name))
                    .copied()
                    .unwrap_or(zero),
            );
        if total > parse(name, &capacity.value) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Upstream `GetConsumedCapacityFromRequest`: what the request consumes of every
/// capacity of the device.
pub fn consumed_by(
    requested: Option<&CapacityRequirements>,
    capacities: &BTreeMap<String, DeviceCapacity>,
) -> Result<Consumed, String> {
    let requests = requests(requested);
    let mut consumed = Consumed::new();
    for (name, capacity) in capacities {
        let amount = consumed_of(requests.get(name.as_str()).copied(), name, capacity)
            .map_err(|e| format!("capacity {name:?}: {e}"))?;
        if amount.nanos < 0 {
            return Err(format!("capacity {name:?}: capacity value is negative"));
        }
        consumed.insert(name.clone(), amount);
    }
    Ok(consumed)
}

/// Upstream `calculateConsumedCapacity`.
fn consumed_of(
    requested: Option<&Quantity>,
    name: &str,
    capacity: &DeviceCapacity,
) -> Result<Amount, String> {
    let policy = capacity.request_policy.as_ref();
    let Some(requested) = requested else {
        let default = policy.and_then(|p| p.default.as_ref());
        return Ok(parse(name, default.unwrap_or(&capacity.value)));
    };
    let request = parse(name, requested);
    let Some(policy) = policy else {
        return Ok(request);
    };
    if let Some(range) = &policy.valid_range {
        return round_up_range(request, requested, range);
    }
    if let Some(values) = policy.valid_values.as_ref().filter(|v| !v.is_empty()) {
        return Ok(values
            .iter()
            .map(|v| parse(name, v))
            .find(|v| *v >= request)
            .unwrap_or(request));
    }
    Ok(request)
}

/// The range's bounds in thousandths, when every one of them is a whole number of
/// thousandths and the step at least one (upstream's `useMilli` with
/// FractionalCapacityRange on).
fn milli_range(range: &CapacityRequestPolicyRange) -> Option<(i128, Option<i128>, i128)> {
    let min = parse("min", &range.min).exact_millis()?;
    let max = match &range.max {
        Some(max) => Some(parse("max", max).exact_millis()?),
        None => None,
    };
    let step = parse("step", range.step.as_ref()?).exact_millis()?;
    (step >= 1).then_some((min, max, step))
}

fn ceil_div(n: i128, d: i128) -> i128 {
    let q = n / d;
    if n % d != 0 && (n > 0) == (d > 0) {
        q + 1
    } else {
        q
    }
}

/// Upstream `roundUpRange`: below the minimum, the minimum; else up to the next step.
fn round_up_range(
    request: Amount,
    requested: &Quantity,
    range: &CapacityRequestPolicyRange,
) -> Result<Amount, String> {
    let min = parse("min", &range.min);
    if request < min {
        return Ok(min);
    }
    let Some(step_quantity) = &range.step else {
        return Ok(request);
    };
    let step = parse("step", step_quantity);
    let shown = || {
        Amount::parse("request", requested)
            .map(|a| a.to_string())
            .unwrap_or_default()
    };
    let unrepresentable = "capacity request cannot be represented in the device's range arithmetic";
    if let Some((min_m, _, step_m)) = milli_range(range) {
        let Some(request_m) = request.exact_millis() else {
            return Err(format!(
                "{unrepresentable}: request {} is not a representable milli value",
                shown()
            ));
        };
        let n = ceil_div(request_m - min_m, step_m);
        if n > (i128::from(i64::MAX) - min_m) / step_m {
            return Err(format!(
                "{unrepresentable}: rounding request {} up to the next step passes the milli-value range",
                shown()
            ));
        }
        let value = min_m + step_m * n;
        return Ok(if value % 1000 == 0 {
            Amount {
                nanos: value / 1000 * NANOS_PER_UNIT,
                format: step.format,
            }
        } else {
            Amount {
                nanos: value * NANOS_PER_MILLI,
                format: step.format,
            }
        });
    }
    if request.nanos > i128::from(i64::MAX) * NANOS_PER_UNIT {
        return Err(format!(
            "{unrepresentable}: request {} exceeds MaxInt64",
            shown()
        ));
    }
    let (r, s, m) = (request.value(), step.value(), min.value());
    if s <= 0 {
        return Ok(request);
    }
    let n = ceil_div(r - m, s);
    if m >= 0 && n > (i128::from(i64::MAX) - m) / s {
        return Err(format!(
            "{unrepresentable}: rounding request {} up to the next step passes MaxInt64",
            shown()
        ));
    }
    Ok(Amount {
        nanos: (m + s * n) * NANOS_PER_UNIT,
        format: step.format,
    })
}

/// Upstream `violatesPolicy`.
fn violates_policy(consumed: Amount, policy: Option<&CapacityRequestPolicy>) -> bool {
    let Some(policy) = policy else {
        return false;
    };
    if policy
        .default
        .as_ref()
        .is_some_and(|d| parse("default", d) == consumed)
    {
        return false;
    }
    if let Some(range) = &policy.valid_range {
        if range
            .max
            .as_ref()
            .is_some_and(|max| consumed > parse("max", max))
        {
            return true;
        }
        let Some(step_quantity) = &range.step else {
            return false;
        };
        let min = parse("min", &range.min);
        let step = parse("step", step_quantity);
        if let Some((min_m, _, step_m)) = milli_range(range) {
            return match consumed.exact_millis() {
                Some(c) => (c - min_m) % step_m != 0,
                None => true,
            };
        }
        let s = step.value();
        return s > 0 && (consumed.value() - min.value()) % s != 0;
    }
    if let Some(values) = policy.valid_values.as_ref().filter(|v| !v.is_empty()) {
        return !values.iter().any(|v| parse("value", v) == consumed);
    }
    false
}

#[cfg(test)]
mod tests;
