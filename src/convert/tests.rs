use super::translations::parse_duration_seconds;
use super::*;
use crate::plugins::default_registry;
use serde_json::json;
use std::collections::HashSet;

/// Every plugin name a plugin section mentions.
fn mentioned(plugins: &Plugins) -> HashSet<String> {
    let sets = std::iter::once(plugins.multi_point.as_ref())
        .chain(ExtensionPoint::ALL.into_iter().map(|p| plugins.at(p)));
    sets.flatten()
        .flat_map(|set| set.enabled.iter().chain(&set.disabled))
        .map(|p| p.name.clone())
        .collect()
}

fn run(config: Value) -> Conversion {
    convert(&config, &default_registry(), &ConvertOptions::default())
        .unwrap_or_else(|e| panic!("{e}"))
}

fn paths(items: &[Unsupported]) -> Vec<&str> {
    items.iter().map(|u| u.path.as_str()).collect()
}

#[test]
fn durations_parse_as_go_writes_them() {
    let cases = [
        ("60", Some(60)),
        ("90s", Some(90)),
        ("5m", Some(300)),
        ("1h30m", Some(5400)),
        ("1.5m", Some(90)),
        ("1500ms", None),
        ("0s", None),
        ("-5s", None),
        ("5 minutes", None),
        ("", None),
    ];
    for (text, want) in cases {
        assert_eq!(parse_duration_seconds(text), want, "{text:?}");
    }
}

#[test]
fn dns_subdomains() {
    for ok in ["a", "default-scheduler", "bin.packing-2"] {
        assert!(is_dns1123_subdomain(ok), "{ok}");
    }
    for bad in ["", "Upper", "under_score", "-lead", "trail-", "a..b"] {
        assert!(!is_dns1123_subdomain(bad), "{bad}");
    }
}

#[test]
fn no_profiles_means_one_default_profile_with_the_globals() {
    let conversion = run(json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "percentageOfNodesToScore": 30,
        "podMaxBackoffSeconds": 20,
    }));
    assert_eq!(conversion.unsupported, []);
    let [profile] = &conversion.profiles[..] else {
        panic!("{:?}", conversion.profiles);
    };
    assert_eq!(profile.metadata.name.as_deref(), Some("default-scheduler"));
    assert_eq!(profile.spec.scheduler_name, None);
    assert_eq!(profile.spec.percentage_of_nodes_to_score, Some(30));
    assert_eq!(profile.spec.pod_max_backoff_seconds, Some(20));
    assert_eq!(profile.spec.pod_initial_backoff_seconds, None);
}

#[test]
fn wrong_types_are_errors_naming_every_path() {
    let error = convert(
        &json!({
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": "half",
            "profiles": [{"plugins": {"score": {"enabled": [{"name": 3}]}}}],
        }),
        &default_registry(),
        &ConvertOptions::default(),
    )
    .expect_err("invalid");
    let ConvertError::Invalid(errors) = error else {
        panic!("{error:?}");
    };
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "percentageOfNodesToScore",
            "profiles[0].plugins.score.enabled[0].name"
        ]
    );
}

#[test]
fn disabled_plugins_berth_lacks_are_dropped_with_a_note() {
    let conversion = run(json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"plugins": {"filter": {"disabled": [{"name": "NodeDeclaredFeatures"}, {"name": "TaintToleration"}]}}}],
    }));
    assert_eq!(conversion.unsupported, []);
    let plugins = conversion.profiles[0]
        .spec
        .plugins
        .clone()
        .unwrap_or_default();
    assert_eq!(
        mentioned(&plugins),
        HashSet::from(["TaintToleration".to_string()])
    );
    assert_eq!(
        conversion.notes[0].path,
        "profiles[0].plugins.filter.disabled[0].name"
    );
}

#[test]
fn weights_upstream_ignores_are_dropped() {
    let conversion = run(json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"plugins": {
            "filter": {"enabled": [{"name": "NodeName", "weight": 4}]},
            "score": {"enabled": [{"name": "TaintToleration", "weight": 0}]},
        }}],
    }));
    let plugins = conversion.profiles[0]
        .spec
        .plugins
        .clone()
        .unwrap_or_default();
    let filter = plugins.filter.unwrap_or_default();
    let score = plugins.score.unwrap_or_default();
    assert_eq!(filter.enabled, [PluginRef::named("NodeName")]);
    assert_eq!(score.enabled, [PluginRef::named("TaintToleration")]);
    let weight_notes: Vec<&str> = conversion
        .notes
        .iter()
        .map(|n| n.path.as_str())
        .filter(|p| p.ends_with(".weight"))
        .collect();
    assert_eq!(
        weight_notes,
        [
            "profiles[0].plugins.filter.enabled[0].weight",
            "profiles[0].plugins.score.enabled[0].weight"
        ]
    );
}

#[test]
fn unknown_args_fields_are_reported_and_pruned() {
    let conversion = run(json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": {
            "kind": "NodeResourcesFitArgs",
            "scoringStrategy": {"type": "MostAllocated", "shape": []},
            "ignoredResource": ["x"],
        }}]}],
    }));
    assert_eq!(
        paths(&conversion.unsupported),
        [
            "profiles[0].pluginConfig[0].args.ignoredResource",
            "profiles[0].pluginConfig[0].args.scoringStrategy.shape"
        ]
    );
    assert_eq!(
        conversion.profiles[0].spec.plugin_config["nodeResourcesFit"],
        json!({"scoringStrategy": {"type": "MostAllocated"}})
    );
}

#[test]
fn args_kind_of_another_plugin_is_reported() {
    let conversion = run(json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": {"kind": "NodeAffinityArgs"}}]}],
    }));
    assert_eq!(
        paths(&conversion.unsupported),
        ["profiles[0].pluginConfig[0].args.kind"]
    );
}

#[test]
fn a_profile_berth_would_reject_is_reported_and_left_out() {
    let conversion = run(json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {"schedulerName": "a", "plugins": {"queueSort": {"enabled": [{"name": "CustomQueueSort"}], "disabled": [{"name": "*"}]}}},
            {"schedulerName": "b", "plugins": {"score": {"enabled": [{"name": "TaintToleration", "weight": 500}]}}},
            {"schedulerName": "c"},
        ],
    }));
    assert_eq!(
        paths(&conversion.unsupported),
        [
            "profiles[0].plugins.queueSort.enabled[0].name",
            "profiles[0]",
            "profiles[1]"
        ]
    );
    let names: Vec<String> = conversion
        .profiles
        .iter()
        .map(SchedulerProfile::scheduler_name)
        .collect();
    assert_eq!(names, ["c"]);
}
