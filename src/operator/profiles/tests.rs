use super::*;
use crate::api::EffectivePlugins;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

#[test]
fn default_scheduler_is_reserved_table() {
    struct Case {
        name: &'static str,
        metadata_name: &'static str,
        spec: Value,
        valid: bool,
        want: Option<&'static str>,
    }
    let cases = [
        Case {
            name: "named after it",
            metadata_name: "default-scheduler",
            spec: serde_json::json!({}),
            valid: true,
            want: Some("metadata.name: Forbidden: \"default-scheduler\""),
        },
        Case {
            name: "claimed in spec.schedulerName",
            metadata_name: "converted",
            spec: serde_json::json!({"schedulerName": "default-scheduler"}),
            valid: true,
            want: Some("spec.schedulerName: Forbidden: \"default-scheduler\""),
        },
        Case {
            name: "another name",
            metadata_name: "default-scheduler",
            spec: serde_json::json!({"schedulerName": "berth"}),
            valid: true,
            want: None,
        },
        Case {
            name: "an invalid profile keeps its own rejection",
            metadata_name: "default-scheduler",
            spec: serde_json::json!({}),
            valid: false,
            want: None,
        },
    ];
    for case in cases {
        let mut object = DynamicObject::new(
            case.metadata_name,
            &ApiResource::erase::<SchedulerProfile>(&()),
        );
        object.data = serde_json::json!({"spec": case.spec});
        let scheduler_name = case.spec["schedulerName"]
            .as_str()
            .unwrap_or(case.metadata_name);
        let mut verdict = Verdict {
            generation: 1,
            scheduler_name: scheduler_name.to_string(),
            outcome: if case.valid {
                Ok(Valid {
                    resolved: ResolvedProfile::default(),
                    warnings: Vec::new(),
                })
            } else {
                Err(Rejection {
                    reason: reason::INVALID_PLUGIN_CONFIG,
                    message: "bad".into(),
                })
            },
        };
        reserve_default_scheduler(&mut verdict, &object);
        match (case.want, &verdict.outcome) {
            (None, Ok(_)) => assert!(case.valid, "{}", case.name),
            (None, Err(rejection)) => {
                assert!(!case.valid, "{}: {}", case.name, rejection.message);
                assert_eq!(rejection.reason, reason::INVALID_PLUGIN_CONFIG);
            }
            (Some(prefix), Err(rejection)) => {
                assert_eq!(
                    rejection.reason,
                    reason::RESERVED_SCHEDULER_NAME,
                    "{}",
                    case.name
                );
                assert!(
                    rejection.message.starts_with(prefix),
                    "{}: {}",
                    case.name,
                    rejection.message
                );
                assert!(
                    rejection.message.contains("--serve-default-scheduler")
                        && rejection.message.contains("serveDefaultScheduler"),
                    "{}: the message says how to opt in: {}",
                    case.name,
                    rejection.message
                );
            }
            (Some(_), Ok(_)) => panic!("{}: accepted", case.name),
        }
    }
}

#[test]
fn degraded_follows_the_plugins_reports() {
    let health = PluginHealth::new();
    let healthy = degraded_condition(Some(&health));
    assert_eq!(
        (healthy.status, healthy.reason),
        (false, reason::AS_EXPECTED)
    );
    assert!(!degraded_condition(None).status);

    health.set_degraded(
        "NetworkTraffic",
        reason::METRICS_UNAVAILABLE,
        "NetworkTraffic: Prometheus at http://127.0.0.1:9 is unavailable: connection refused",
    );
    health.set_degraded("Custom", "CacheCold", "Custom: cache is cold");
    let degraded = degraded_condition(Some(&health));
    assert!(degraded.status);
    // The first plugin by name decides the reason; every message is shown.
    assert_eq!(degraded.reason, reason::PLUGIN_DEGRADED);
    assert_eq!(
        degraded.message,
        "Custom: cache is cold; NetworkTraffic: Prometheus at http://127.0.0.1:9 is unavailable: connection refused"
    );

    health.set_healthy("Custom");
    let degraded = degraded_condition(Some(&health));
    assert_eq!(
        (degraded.status, degraded.reason),
        (true, reason::METRICS_UNAVAILABLE)
    );
    health.set_healthy("NetworkTraffic");
    assert!(!degraded_condition(Some(&health)).status);
}

fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Condition {
    Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message: message.into(),
        observed_generation: Some(1),
        last_transition_time: conditions::now(),
    }
}

fn status(generation: i64, accepted: Option<(&str, &str, &str)>) -> SchedulerProfileStatus {
    SchedulerProfileStatus {
        observed_generation: Some(generation),
        scheduler_name: Some("batch".into()),
        conditions: accepted
            .map(|(status, reason, message)| vec![condition(ACCEPTED, status, reason, message)])
            .unwrap_or_default(),
        plugins: None,
    }
}

#[test]
fn events_follow_the_accepted_transitions() {
    let valid = Some(("True", reason::VALID, "ok"));
    let unknown = Some((
        "False",
        reason::UNKNOWN_PLUGIN,
        "spec.plugins.filter.enabled[0].name: Unsupported value: \"Foo\"",
    ));
    let invalid = Some((
        "False",
        reason::INVALID_PLUGIN_CONFIG,
        "spec.plugins.bind: Required value",
    ));
    let cases = [
        (
            "first acceptance",
            status(0, None),
            status(1, valid),
            vec!["Accepted"],
        ),
        ("unchanged", status(1, valid), status(1, valid), vec![]),
        (
            "new generation hot-swapped",
            status(1, valid),
            status(2, valid),
            vec!["Reloaded"],
        ),
        (
            "becomes rejected",
            status(1, valid),
            status(2, unknown),
            vec!["Rejected"],
        ),
        (
            "first seen rejected",
            status(0, None),
            status(1, unknown),
            vec!["Rejected"],
        ),
        (
            "rejected for a new reason",
            status(1, unknown),
            status(2, invalid),
            vec!["Rejected"],
        ),
        (
            "still rejected alike",
            status(1, unknown),
            status(2, unknown),
            vec![],
        ),
        (
            "fixed",
            status(2, invalid),
            status(3, valid),
            vec!["Accepted"],
        ),
    ];
    for (name, current, desired, want) in cases {
        let got: Vec<String> = transition_events(&current, &desired)
            .into_iter()
            .map(|event| event.reason)
            .collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn plugin_name_errors_are_unknown_plugin_and_others_invalid_config() {
    let unknown = FieldError::not_supported(
        "spec.plugins.score.enabled[1].name",
        &Value::from("Nope"),
        &["NodeResourcesFit"],
    );
    let weight = FieldError::new(
        "spec.plugins.score.enabled[0].weight",
        0,
        "must be between 1 and 100",
    );
    let strategy = FieldError::not_supported(
        "spec.pluginConfig.nodeResourcesFit.scoringStrategy.type",
        &Value::from("Most"),
        &["MostAllocated"],
    );
    let both = rejection(&[weight.clone(), unknown]);
    assert_eq!(both.reason, reason::UNKNOWN_PLUGIN);
    assert!(
        both.message
            .contains("; spec.plugins.score.enabled[1].name: Unsupported value: \"Nope\""),
        "{}",
        both.message
    );
    assert_eq!(
        rejection(&[weight, strategy]).reason,
        reason::INVALID_PLUGIN_CONFIG
    );
}

#[test]
fn the_status_patch_clears_what_the_status_leaves_out() {
    let status = SchedulerProfileStatus {
        observed_generation: Some(2),
        scheduler_name: Some("batch".into()),
        conditions: Vec::new(),
        plugins: Some(EffectivePlugins {
            bind: vec!["DefaultBinder".into()],
            ..Default::default()
        }),
    };
    let patch = status_patch(&status);
    assert_eq!(patch["status"]["conditions"], Value::Null);
    assert_eq!(
        patch["status"]["plugins"]["bind"],
        serde_json::json!(["DefaultBinder"])
    );
    assert!(
        patch["status"]["plugins"]
            .get("filter")
            .is_some_and(Value::is_null)
    );
    let rejected = SchedulerProfileStatus {
        plugins: None,
        ..status
    };
    assert!(
        status_patch(&rejected)["status"]
            .get("plugins")
            .is_some_and(Value::is_null)
    );
}
