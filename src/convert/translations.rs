//! Args translations: how the args of a plugin, as widely published configurations write
//! them, map to the args type berth registers for that plugin.

use super::*;

// ---------------------------------------------------------------------------------------
// Args translations

/// How the args of one plugin, as widely published configurations write them, map to the
/// args type berth registers for that plugin. Active only when `plugin` is registered.
#[derive(Debug, Clone, Copy)]
pub struct ArgsTranslation {
    pub plugin: &'static str,
    pub fields: &'static [FieldTranslation],
    /// Fields with no counterpart in berth's args, each with why nothing is lost; they are
    /// dropped with a note instead of being reported as unknown.
    pub dropped: &'static [(&'static str, &'static str)],
}

/// One args field renamed, with its value converted.
#[derive(Debug, Clone, Copy)]
pub struct FieldTranslation {
    /// The field name in the input's args.
    pub from: &'static str,
    /// The field name in berth's args.
    pub to: &'static str,
    /// Converts the value; the error says what would be valid.
    pub value: fn(&Value) -> Result<Value, String>,
}

/// The translations `berth convert` applies.
pub const BUILTIN_ARGS_TRANSLATIONS: &[ArgsTranslation] =
    &[NETWORK_TRAFFIC_TUTORIAL, COSCHEDULING_TUTORIAL];

/// The NetworkTraffic plugin of the widely copied "write a scheduler plugin" tutorial
/// (`ip`, `deviceName`, `timeRange`) and of scheduler-plugins' sample
/// (`timeRangeInMinutes`), to berth's NetworkTraffic args.
pub const NETWORK_TRAFFIC_TUTORIAL: ArgsTranslation = ArgsTranslation {
    plugin: "NetworkTraffic",
    fields: &[
        FieldTranslation {
            from: "ip",
            to: "prometheusAddress",
            value: prometheus_address,
        },
        FieldTranslation {
            from: "deviceName",
            to: "networkInterface",
            value: same_string,
        },
        FieldTranslation {
            from: "timeRange",
            to: "timeRangeSeconds",
            value: duration_seconds,
        },
        FieldTranslation {
            from: "timeRangeInMinutes",
            to: "timeRangeSeconds",
            value: minutes_to_seconds,
        },
    ],
    dropped: &[],
};

/// The Coscheduling args of scheduler-plugins' releases, as its tutorials configure them,
/// to berth's Coscheduling args.
pub const COSCHEDULING_TUTORIAL: ArgsTranslation = ArgsTranslation {
    plugin: "Coscheduling",
    fields: &[FieldTranslation {
        // Both hold a denied group's pods back at PreFilter for this many seconds.
        from: "deniedPGExpirationTimeSeconds",
        to: "podGroupBackoffSeconds",
        value: whole_seconds,
    }],
    dropped: &[
        (
            "kubeConfigPath",
            "berth's plugins use berth's own API connection (`berth run --kubeconfig`)",
        ),
        (
            "kubeMaster",
            "berth's plugins use berth's own API connection (`berth run --kubeconfig`)",
        ),
        (
            "podGroupGCIntervalSeconds",
            "it tuned scheduler-plugins' in-memory pod group records; berth reads PodGroups from the API",
        ),
        (
            "podGroupExpirationTimeSeconds",
            "it tuned scheduler-plugins' in-memory pod group records; berth reads PodGroups from the API",
        ),
    ],
};

pub(super) fn whole_seconds(value: &Value) -> Result<Value, String> {
    value
        .as_i64()
        .filter(|s| *s >= 0)
        .map(Value::from)
        .ok_or_else(|| "expected a whole number of seconds, 0 or more".into())
}

pub(super) fn same_string(value: &Value) -> Result<Value, String> {
    match value {
        Value::String(_) => Ok(value.clone()),
        _ => Err("expected a string".into()),
    }
}

/// The tutorial's `ip` is often a bare `host:port`; berth wants an http(s) URL.
pub(super) fn prometheus_address(value: &Value) -> Result<Value, String> {
    let Some(address) = value.as_str().filter(|s| !s.is_empty()) else {
        return Err("expected the Prometheus address, e.g. \"http://prometheus:9090\"".into());
    };
    if address.contains("://") {
        Ok(Value::String(address.to_string()))
    } else {
        Ok(Value::String(format!("http://{address}")))
    }
}

/// Whole seconds as a number, or a Go duration string (`"90s"`, `"5m"`, `"1h30m"`).
pub(super) fn duration_seconds(value: &Value) -> Result<Value, String> {
    pub(super) const EXPECTED: &str =
        "expected whole seconds as a number or a duration such as \"5m\"";
    match value {
        Value::Number(n) => n
            .as_i64()
            .filter(|s| *s > 0)
            .map(Value::from)
            .ok_or_else(|| EXPECTED.to_string()),
        Value::String(text) => parse_duration_seconds(text)
            .map(Value::from)
            .ok_or_else(|| EXPECTED.to_string()),
        _ => Err(EXPECTED.into()),
    }
}

pub(super) fn minutes_to_seconds(value: &Value) -> Result<Value, String> {
    value
        .as_i64()
        .filter(|m| *m > 0)
        .and_then(|m| m.checked_mul(60))
        .map(Value::from)
        .ok_or_else(|| "expected a positive whole number of minutes".into())
}

/// Parses a Go `time.Duration` string into whole seconds; `None` when it is malformed,
/// not positive or not a whole number of seconds.
pub(super) fn parse_duration_seconds(text: &str) -> Option<i64> {
    pub(super) const UNITS: [(&str, f64); 6] = [
        ("ns", 1e-9),
        ("us", 1e-6),
        ("ms", 1e-3),
        ("s", 1.0),
        ("m", 60.0),
        ("h", 3600.0),
    ];
    let mut rest = text.trim();
    if let Ok(seconds) = rest.parse::<i64>() {
        return (seconds > 0).then_some(seconds);
    }
    let mut total = 0.0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..number_len].parse().ok()?;
        rest = &rest[number_len..];
        let (unit, scale) = UNITS
            .iter()
            .filter(|(unit, _)| rest.starts_with(unit))
            .max_by_key(|(unit, _)| unit.len())?;
        rest = &rest[unit.len()..];
        total += number * scale;
    }
    let seconds = total.round();
    ((total - seconds).abs() < 1e-6 && seconds >= 1.0 && seconds <= i64::MAX as f64)
        .then_some(seconds as i64)
}
