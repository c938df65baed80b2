//! Status conditions of berth's resources: the stable condition types and reasons of a
//! `SchedulerProfile` (documented for users in `docs/operator.md`), and the merge of freshly computed conditions into
//! the ones already stored, with the `metav1.Condition` conventions: `lastTransitionTime`
//! moves only when a condition's status flips, `observedGeneration` says which spec the
//! condition was computed from, and conditions of types this controller does not own are
//! kept as they are.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// The profile is valid and holds its scheduler name.
pub const ACCEPTED: &str = "Accepted";
/// The profile's scheduler instance is scheduling pods.
pub const READY: &str = "Ready";
/// The instance runs, but some plugin is in its documented fallback.
pub const DEGRADED: &str = "Degraded";

/// Condition reasons: stable strings, part of the API.
pub mod reason {
    /// Accepted True.
    pub const VALID: &str = "Valid";
    /// Accepted False: a plugin argument, weight, list or other field is invalid.
    pub const INVALID_PLUGIN_CONFIG: &str = "InvalidPluginConfig";
    /// Accepted False: a plugin name is not registered (or not at that point).
    pub const UNKNOWN_PLUGIN: &str = "UnknownPlugin";
    /// Accepted False: an older valid profile serves the same scheduler name.
    pub const DUPLICATE_SCHEDULER_NAME: &str = "DuplicateSchedulerName";
    /// Accepted False: the profile claims `default-scheduler`, which kube-scheduler serves,
    /// and berth runs without `--serve-default-scheduler`.
    pub const RESERVED_SCHEDULER_NAME: &str = "ReservedSchedulerName";
    /// Accepted False: the profile is valid but a plugin factory failed.
    pub const PLUGIN_INIT_FAILED: &str = "PluginInitFailed";
    /// Ready True.
    pub const RUNNING: &str = "Running";
    /// Ready False: the Accepted condition is False.
    pub const NOT_ACCEPTED: &str = "NotAccepted";
    /// Ready False: this replica does not hold the lease.
    pub const NOT_LEADER: &str = "NotLeader";
    /// Ready False: some cache has not completed its first list (the message names the
    /// kinds).
    pub const CACHES_NOT_SYNCED: &str = "CachesNotSynced";
    /// Ready False: no instance runs for the profile (the scheduling loop is gone).
    pub const STOPPED: &str = "Stopped";
    /// Degraded False.
    pub const AS_EXPECTED: &str = "AsExpected";
    /// Degraded True: a metrics plugin cannot reach its source and scores neutrally.
    pub const METRICS_UNAVAILABLE: &str = "MetricsUnavailable";
    /// Degraded: a plugin reported a fallback other than a missing metrics source.
    pub const PLUGIN_DEGRADED: &str = "PluginDegraded";
}

/// Longest condition message berth writes; longer ones are cut at a character boundary.
/// (The API allows 32 KiB, but `kubectl describe` readers stop long before.)
pub const MAX_MESSAGE_CHARS: usize = 1000;

/// A condition as computed by a reconcile, before it is merged with the stored one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredCondition {
    pub type_: &'static str,
    pub status: bool,
    pub reason: &'static str,
    pub message: String,
}

impl DesiredCondition {
    pub fn new(type_: &'static str, status: bool, reason: &'static str, message: String) -> Self {
        DesiredCondition {
            type_,
            status,
            reason,
            message: truncate_message(message),
        }
    }

    fn status_str(&self) -> &'static str {
        if self.status { "True" } else { "False" }
    }
}

/// `desired` merged into `current`: each desired condition replaces the stored one of its
/// type, keeping the stored `lastTransitionTime` when the status did not flip and taking
/// `now` when it did (or when the condition is new). Desired conditions come first, in
/// their order, followed by stored conditions of other types.
pub fn merge(
    current: &[Condition],
    desired: &[DesiredCondition],
    observed_generation: Option<i64>,
    now: &Time,
) -> Vec<Condition> {
    let mut merged: Vec<Condition> = desired
        .iter()
        .map(|want| {
            let status = want.status_str();
            let last_transition_time = find(current, want.type_)
                .filter(|stored| stored.status == status)
                .map_or_else(|| now.clone(), |stored| stored.last_transition_time.clone());
            Condition {
                type_: want.type_.to_string(),
                status: status.to_string(),
                reason: want.reason.to_string(),
                message: want.message.clone(),
                observed_generation,
                last_transition_time,
            }
        })
        .collect();
    merged.extend(
        current
            .iter()
            .filter(|stored| !desired.iter().any(|want| want.type_ == stored.type_))
            .cloned(),
    );
    merged
}

/// The condition of `type_`, if present.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// The status (`"True"`, `"False"`, `"Unknown"`) of the condition of `type_`, if present.
pub fn status_of<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a str> {
    find(conditions, type_).map(|c| c.status.as_str())
}

/// The current time at the precision the API stores (`metav1.Time` is whole seconds), so
/// a condition read back compares equal to the one written.
pub fn now() -> Time {
    let now = Timestamp::now();
    Time(Timestamp::from_second(now.as_second()).unwrap_or(now))
}

/// `message` cut to [`MAX_MESSAGE_CHARS`] characters, marked with an ellipsis when cut.
pub fn truncate_message(message: String) -> String {
    if message.chars().count() <= MAX_MESSAGE_CHARS {
        return message;
    }
    let mut cut: String = message.chars().take(MAX_MESSAGE_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64) -> Time {
        Time(Timestamp::from_second(second).unwrap_or(Timestamp::UNIX_EPOCH))
    }

    fn stored(type_: &str, status: &str, reason: &str, second: i64) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: String::new(),
            observed_generation: Some(1),
            last_transition_time: at(second),
        }
    }

    #[test]
    fn transition_time_moves_only_when_the_status_flips() {
        let current = vec![
            stored(ACCEPTED, "True", reason::VALID, 10),
            stored(READY, "False", reason::CACHES_NOT_SYNCED, 10),
        ];
        let desired = [
            DesiredCondition::new(ACCEPTED, true, reason::VALID, "ok".into()),
            DesiredCondition::new(READY, true, reason::RUNNING, "running".into()),
            DesiredCondition::new(DEGRADED, false, reason::AS_EXPECTED, String::new()),
        ];
        let merged = merge(&current, &desired, Some(2), &at(50));
        let times: Vec<(&str, &Time)> = merged
            .iter()
            .map(|c| (c.type_.as_str(), &c.last_transition_time))
            .collect();
        assert_eq!(
            times,
            [(ACCEPTED, &at(10)), (READY, &at(50)), (DEGRADED, &at(50))]
        );
        assert!(merged.iter().all(|c| c.observed_generation == Some(2)));
        assert_eq!(merged[0].message, "ok");
    }

    #[test]
    fn a_reason_change_without_a_flip_keeps_the_transition_time() {
        let current = vec![stored(ACCEPTED, "False", reason::UNKNOWN_PLUGIN, 10)];
        let desired = [DesiredCondition::new(
            ACCEPTED,
            false,
            reason::INVALID_PLUGIN_CONFIG,
            "bad".into(),
        )];
        let merged = merge(&current, &desired, Some(3), &at(99));
        assert_eq!(merged[0].last_transition_time, at(10));
        assert_eq!(merged[0].reason, reason::INVALID_PLUGIN_CONFIG);
    }

    #[test]
    fn conditions_of_other_writers_are_kept() {
        let current = vec![stored("Custom", "True", "Because", 5)];
        let desired = [DesiredCondition::new(
            ACCEPTED,
            true,
            reason::VALID,
            String::new(),
        )];
        let merged = merge(&current, &desired, None, &at(7));
        let types: Vec<&str> = merged.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, [ACCEPTED, "Custom"]);
    }

    #[test]
    fn long_messages_are_cut_at_a_character_boundary() {
        let long = "é".repeat(MAX_MESSAGE_CHARS + 10);
        let cut = truncate_message(long);
        assert_eq!(cut.chars().count(), MAX_MESSAGE_CHARS);
        assert!(cut.ends_with('…'));
        assert_eq!(truncate_message("short".into()), "short");
    }

    #[test]
    fn now_has_whole_seconds() {
        assert_eq!(now().0.subsec_nanosecond(), 0);
    }
}
