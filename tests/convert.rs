//! `berth convert`: KubeSchedulerConfiguration files become SchedulerProfiles that resolve
//! to the plugin lists kube-scheduler would run, that `berth simulate` accepts, and that
//! leave nothing out silently (docs/convert.md).

use std::path::{Path, PathBuf};
use std::process::Output;

use berth::api::convert::{Conversion, ConvertError, ConvertOptions, convert};
use berth::api::{EffectivePlugins, SchedulerProfile, WeightedPlugin};
use berth::framework::{
    ExtensionPoint, Handle, PluginArgs, PluginError, PluginFactory, Registry, resolve,
};
use berth::plugins::default_registry;
use pretty_assertions::assert_eq;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[path = "support/cli.rs"]
mod cli;
use cli::{assert_exit, run_berth, stderr, stdout};

fn repo_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn fixture(name: &str) -> String {
    repo_file(&format!("tests/convert/{name}"))
        .to_string_lossy()
        .into_owned()
}

const EXAMPLE: &str = "examples/kube-scheduler-config.yaml";

fn berth(args: &[&str]) -> Output {
    berth_with_stdin(args, None)
}

fn berth_with_stdin(args: &[&str], stdin: Option<&str>) -> Output {
    run_berth(args, stdin)
}

/// The YAML documents of `berth convert`'s output as SchedulerProfiles.
fn profiles_of(yaml: &str) -> Vec<SchedulerProfile> {
    serde_saphyr::from_multiple(yaml).expect("output is a YAML stream of SchedulerProfiles")
}

fn read_config(path: &str) -> Value {
    let text = std::fs::read_to_string(repo_file(path)).expect("config is readable");
    serde_saphyr::from_str(&text).expect("config is YAML")
}

fn convert_with(registry: &Registry, config: &Value) -> Conversion {
    convert(config, registry, &ConvertOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn profile<'a>(conversion: &'a Conversion, name: &str) -> &'a SchedulerProfile {
    conversion
        .profiles
        .iter()
        .find(|p| p.metadata.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("profile {name} in {:?}", conversion.profiles))
}

fn effective(profile: &SchedulerProfile, registry: &Registry) -> EffectivePlugins {
    resolve(&profile.spec, registry)
        .unwrap_or_else(|e| panic!("{:?} resolves: {e:?}", profile.metadata.name))
        .effective()
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn weighted(list: &[(&str, i32)]) -> Vec<WeightedPlugin> {
    list.iter()
        .map(|(name, weight)| WeightedPlugin {
            name: name.to_string(),
            weight: *weight,
        })
        .collect()
}

/// What kube-scheduler v1 runs for a profile without `plugins`, restricted to the plugins
/// berth's default registry has: the default multiPoint list expanded at each point.
fn upstream_defaults() -> EffectivePlugins {
    EffectivePlugins {
        pre_enqueue: names(&["SchedulingGates"]),
        queue_sort: names(&["PrioritySort"]),
        pre_filter: names(&[
            "NodeAffinity",
            "NodePorts",
            "NodeResourcesFit",
            "PodTopologySpread",
            "InterPodAffinity",
        ]),
        filter: names(&[
            "NodeUnschedulable",
            "NodeName",
            "TaintToleration",
            "NodeAffinity",
            "NodePorts",
            "NodeResourcesFit",
            "PodTopologySpread",
            "InterPodAffinity",
        ]),
        pre_score: names(&[
            "TaintToleration",
            "NodeAffinity",
            "NodeResourcesFit",
            "PodTopologySpread",
            "InterPodAffinity",
            "NodeResourcesBalancedAllocation",
        ]),
        score: weighted(&[
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
        ]),
        bind: names(&["DefaultBinder"]),
        ..Default::default()
    }
}

#[test]
fn the_two_profile_example_resolves_to_upstreams_effective_plugins() {
    let registry = default_registry();
    let conversion = convert_with(&registry, &read_config(EXAMPLE));
    assert_eq!(conversion.unsupported, []);
    assert_eq!(conversion.profiles.len(), 2);

    // `disabled: ["*"]` at preScore and score skips multiPoint expansion there.
    let no_scoring = profile(&conversion, "no-scoring");
    let want = EffectivePlugins {
        pre_score: vec![],
        score: vec![],
        ..upstream_defaults()
    };
    assert_eq!(effective(no_scoring, &registry), want);

    // NodeResourcesFit re-listed under score (not disabled) overrides the multiPoint
    // entry: it runs first, with the weight given there; the other multiPoint Score
    // plugins follow in multiPoint order with their default weights.
    let bin_packing = profile(&conversion, "bin-packing");
    let want = EffectivePlugins {
        score: weighted(&[
            ("NodeResourcesFit", 5),
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
        ]),
        ..upstream_defaults()
    };
    assert_eq!(effective(bin_packing, &registry), want);
}

#[test]
fn args_lose_their_type_meta_and_globals_reach_every_profile() {
    let conversion = convert_with(&default_registry(), &read_config(EXAMPLE));
    let bin_packing = profile(&conversion, "bin-packing");
    assert_eq!(
        bin_packing.spec.plugin_config.keys().collect::<Vec<_>>(),
        ["nodeResourcesFit"]
    );
    assert_eq!(
        bin_packing.spec.plugin_config["nodeResourcesFit"],
        json!({"scoringStrategy": {
            "type": "MostAllocated",
            "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
        }})
    );
    for profile in &conversion.profiles {
        assert_eq!(profile.spec.scheduler_name, None, "equal to metadata.name");
        assert_eq!(profile.spec.percentage_of_nodes_to_score, Some(50));
        assert_eq!(profile.spec.pod_initial_backoff_seconds, Some(2));
        assert_eq!(profile.spec.pod_max_backoff_seconds, Some(20));
    }
}

#[test]
fn a_profiles_own_percentage_wins_over_the_global_one() {
    let mut config = read_config(EXAMPLE);
    config["profiles"][1]["percentageOfNodesToScore"] = json!(0);
    let conversion = convert_with(&default_registry(), &config);
    let pct = |name| profile(&conversion, name).spec.percentage_of_nodes_to_score;
    assert_eq!((pct("no-scoring"), pct("bin-packing")), (Some(50), Some(0)));
}

#[test]
fn the_cli_writes_a_yaml_stream_that_simulate_accepts_and_that_takes_effect() {
    let output = berth(&["convert", "-f", &repo_file(EXAMPLE).to_string_lossy()]);
    assert_exit(&output, 0);
    assert_eq!(stderr(&output), "");
    let yaml = stdout(&output);
    let converted = profiles_of(&yaml);
    let names: Vec<String> = converted.iter().map(|p| p.scheduler_name()).collect();
    assert_eq!(names, ["no-scoring", "bin-packing"]);
    assert!(!yaml.contains("NodeResourcesFitArgs"), "{yaml}");

    let file = std::env::temp_dir().join(format!("berth-convert-{}.yaml", std::process::id()));
    std::fs::write(&file, &yaml).expect("converted profiles are written");
    let report = berth(&[
        "simulate",
        "-f",
        &file.to_string_lossy(),
        "-f",
        &fixture("cluster.yaml"),
        "-o",
        "json",
        "--explain",
    ]);
    let _ = std::fs::remove_file(&file);
    assert_exit(&report, 0);
    let report: Value = serde_json::from_str(&stdout(&report)).expect("report is JSON");
    let pod = |name: &str| {
        report["pods"]
            .as_array()
            .and_then(|pods| pods.iter().find(|p| p["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("{name} in {report}"))
    };
    let packed = pod("packed");
    assert_eq!(
        (&packed["result"], &packed["node"]),
        (&json!("Scheduled"), &json!("node-a")),
        "MostAllocated packs onto the busier node: {packed}"
    );
    let anywhere = pod("anywhere");
    assert_eq!(anywhere["result"], "Scheduled");
    for node in anywhere["nodes"].as_array().into_iter().flatten() {
        assert_eq!(node["scores"], json!([]), "no Score plugin runs: {node}");
    }
}

#[test]
fn the_converted_example_runs_next_to_the_quickstart() {
    let output = berth(&["convert", "-f", &repo_file(EXAMPLE).to_string_lossy()]);
    assert_exit(&output, 0);
    let file = std::env::temp_dir().join(format!("berth-convert-qs-{}.yaml", std::process::id()));
    std::fs::write(&file, stdout(&output)).expect("converted profiles are written");
    let report = berth(&[
        "simulate",
        "-f",
        &file.to_string_lossy(),
        "-f",
        &repo_file("examples/quickstart.yaml").to_string_lossy(),
    ]);
    let _ = std::fs::remove_file(&file);
    assert_exit(&report, 0);
}

#[test]
fn json_output_is_a_list_of_profiles() {
    let output = berth(&[
        "convert",
        "-f",
        &repo_file(EXAMPLE).to_string_lossy(),
        "-o",
        "json",
    ]);
    assert_exit(&output, 0);
    let list: Value = serde_json::from_str(&stdout(&output)).expect("stdout is JSON");
    assert_eq!(
        (&list["apiVersion"], &list["kind"]),
        (&json!("v1"), &json!("List"))
    );
    let items: Vec<SchedulerProfile> =
        serde_json::from_value(list["items"].clone()).expect("items are SchedulerProfiles");
    assert_eq!(items.len(), 2);
    assert_eq!(list["items"][0]["apiVersion"], "berth.dev/v1alpha1");
}

/// The unsupported items of tests/convert/unsupported.yaml, as `path: message start`.
const UNSUPPORTED: [&str; 7] = [
    "parallelism: parallelism configures the scheduler process, not a profile",
    "leaderElection: leaderElection configures the scheduler process, not a profile",
    "clientConnection: clientConnection configures the scheduler process, not a profile",
    "extenders[0]: berth does not call scheduler extenders",
    "profiles[0].plugins.multiPoint.enabled[0].name: plugin \"CapacityScheduling\" is not registered in berth",
    "profiles[0].pluginConfig[0].name: plugin \"CapacityScheduling\" is not registered in berth",
    "profiles[1].pluginConfig[0].args.scoringStrategy.type: Unsupported value: \"MostAlocated\"",
];

#[test]
fn unsupported_items_exit_2_naming_each_path_and_write_nothing() {
    let path = fixture("unsupported.yaml");
    let output = berth(&["convert", "-f", &path]);
    assert_exit(&output, 2);
    assert_eq!(stdout(&output), "");
    let errors = stderr(&output);
    let prefix = format!("error: {path}: document 0: ");
    for item in UNSUPPORTED {
        assert!(
            errors
                .lines()
                .any(|l| l.starts_with(&format!("{prefix}{item}"))),
            "{item}\nin\n{errors}"
        );
    }
    assert!(
        errors.contains("Helm values of the berth deployment"),
        "process settings point at berth's own configuration:\n{errors}"
    );
    assert!(
        errors.contains("7 item(s) cannot be carried") && errors.contains("--skip-unsupported"),
        "{errors}"
    );
    assert!(
        errors.contains(&format!(
            "note: {path}: document 0: profiles[0].plugins.score.disabled[0].name: dropped"
        )),
        "disabling a plugin berth lacks is lossless, so only a note:\n{errors}"
    );
}

#[test]
fn skip_unsupported_drops_them_and_writes_the_rest() {
    let path = fixture("unsupported.yaml");
    let output = berth(&["convert", "-f", &path, "--skip-unsupported"]);
    assert_exit(&output, 0);
    let warnings = stderr(&output);
    for item in UNSUPPORTED {
        let line = format!("warning: {path}: document 0: {item}");
        assert!(
            warnings
                .lines()
                .any(|l| l.starts_with(&line) && l.ends_with("(dropped)")),
            "{item}\nin\n{warnings}"
        );
    }
    let profiles = profiles_of(&stdout(&output));
    let [gang, typo] = &profiles[..] else {
        panic!("two profiles: {profiles:?}");
    };
    assert_eq!(gang.scheduler_name(), "gang");
    assert_eq!(
        gang.spec.plugins, None,
        "CapacityScheduling and VolumeBinding are gone"
    );
    assert_eq!(
        gang.spec.plugin_config["nodeResourcesFit"],
        json!({"scoringStrategy": {"type": "MostAllocated"}})
    );
    assert_eq!(typo.scheduler_name(), "typo");
    assert!(typo.spec.plugin_config.is_empty());
    for profile in &profiles {
        effective(profile, &default_registry());
    }
}

#[test]
fn v1beta3_is_converted_with_v1_semantics() {
    let registry = default_registry();
    let conversion = convert_with(&registry, &read_config("tests/convert/v1beta3.yaml"));
    assert_eq!(conversion.unsupported, []);
    let profile = profile(&conversion, "spread-less");
    assert_eq!(profile.spec.percentage_of_nodes_to_score, Some(20));
    // Disable-then-enable at a point moves NodeName after the multiPoint plugins; the
    // multiPoint weight replaces TaintToleration's default weight in place.
    let want = EffectivePlugins {
        filter: names(&[
            "NodeUnschedulable",
            "TaintToleration",
            "NodeAffinity",
            "NodePorts",
            "NodeResourcesFit",
            "PodTopologySpread",
            "InterPodAffinity",
            "NodeName",
        ]),
        score: weighted(&[
            ("TaintToleration", 7),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
        ]),
        ..upstream_defaults()
    };
    assert_eq!(effective(profile, &registry), want);

    let output = berth(&["convert", "-f", &fixture("v1beta3.yaml")]);
    assert_exit(&output, 0);
}

#[test]
fn v1beta2_is_converted_with_a_note_on_its_other_defaults() {
    let mut config = read_config("tests/convert/v1beta3.yaml");
    config["apiVersion"] = json!("kubescheduler.config.k8s.io/v1beta2");
    let conversion = convert_with(&default_registry(), &config);
    assert_eq!(conversion.unsupported, []);
    assert_eq!(conversion.profiles.len(), 1);
    assert!(
        conversion
            .notes
            .iter()
            .any(|n| n.path == "apiVersion" && n.message.contains("TaintToleration 3 instead of 1")),
        "{:?}",
        conversion.notes
    );
}

#[test]
fn unreadable_documents_exit_2_naming_file_and_document() {
    let path = fixture("not-a-config.yaml");
    let output = berth(&["convert", "-f", &path]);
    assert_exit(&output, 2);
    assert_eq!(stdout(&output), "");
    let errors = stderr(&output);
    assert!(
        errors.contains(&format!(
            "error: {path}: document 1: apiVersion: Unsupported value: \"kubescheduler.config.k8s.io/v1beta1\""
        )),
        "{errors}"
    );
    assert!(
        errors.contains(&format!(
            "error: {path}: document 2: kind: Invalid value: \"ConfigMap\""
        )),
        "{errors}"
    );
    assert!(
        !errors.contains("document 0"),
        "document 0 is valid:\n{errors}"
    );

    let path = fixture("malformed.yaml");
    let output = berth(&["convert", "-f", &path]);
    assert_exit(&output, 2);
    let errors = stderr(&output);
    assert!(
        errors.starts_with(&format!("error: {path}: document 1: malformed YAML")),
        "{errors}"
    );
    assert_eq!(stdout(&output), "");
}

#[test]
fn fields_of_the_wrong_type_exit_2_with_their_paths() {
    let config = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: a\n  plugins:\n    score:\n      enabled:\n      - name: TaintToleration\n        weight: heavy\n";
    let output = berth_with_stdin(&["convert", "-f", "-"], Some(config));
    assert_exit(&output, 2);
    let errors = stderr(&output);
    assert!(
        errors.starts_with(
            "error: <stdin>: document 0: profiles[0].plugins.score.enabled[0].weight: Invalid value: \"heavy\""
        ),
        "{errors}"
    );
}

#[test]
fn the_same_scheduler_name_in_two_files_is_reported() {
    let path = repo_file(EXAMPLE).to_string_lossy().into_owned();
    let output = berth(&["convert", "-f", &path, "-f", &path]);
    assert_exit(&output, 2);
    assert!(
        stderr(&output).contains("duplicate schedulerName \"no-scoring\""),
        "{}",
        stderr(&output)
    );
    let output = berth(&["convert", "-f", &path, "-f", &path, "--skip-unsupported"]);
    assert_exit(&output, 0);
    assert_eq!(profiles_of(&stdout(&output)).len(), 2);
}

#[test]
fn library_rejects_what_is_not_a_scheduler_configuration() {
    let registry = default_registry();
    let options = ConvertOptions::default();
    let cases = [
        (json!(["a"]), "not an object"),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap"}),
            "wrong kind",
        ),
        (
            json!({"apiVersion": "kubescheduler.config.k8s.io/v1alpha1", "kind": "KubeSchedulerConfiguration"}),
            "old version",
        ),
    ];
    for (config, name) in cases {
        let error = convert(&config, &registry, &options).expect_err(name);
        assert!(
            matches!(
                error,
                ConvertError::NotAnObject { .. }
                    | ConvertError::WrongKind { .. }
                    | ConvertError::UnknownApiVersion { .. }
            ),
            "{name}: {error:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// The tutorial's NetworkTraffic args, with a stand-in NetworkTraffic plugin

/// The args berth's NetworkTraffic plugin takes.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
struct NetworkTrafficArgs {
    prometheus_address: String,
    network_interface: String,
    time_range_seconds: i64,
}

impl Default for NetworkTrafficArgs {
    fn default() -> Self {
        NetworkTrafficArgs {
            prometheus_address: String::new(),
            network_interface: "eth0".into(),
            time_range_seconds: 60,
        }
    }
}

impl PluginArgs for NetworkTrafficArgs {}

struct NetworkTraffic;

impl berth::framework::Plugin for NetworkTraffic {
    fn name(&self) -> &str {
        "NetworkTraffic"
    }
}

impl PluginFactory for NetworkTraffic {
    const NAME: &'static str = "NetworkTraffic";
    const POINTS: &'static [ExtensionPoint] = &[ExtensionPoint::Score];
    type Args = NetworkTrafficArgs;

    fn build(_: NetworkTrafficArgs, _: &Handle) -> Result<Self, PluginError> {
        Ok(NetworkTraffic)
    }
}

#[test]
fn network_traffic_tutorial_args_translate_once_the_plugin_is_registered() {
    let config = read_config("tests/convert/network-traffic.yaml");
    let mut registry = default_registry();
    registry.register::<NetworkTraffic>();
    let conversion = convert_with(&registry, &config);
    assert_eq!(conversion.unsupported, []);
    let profile = profile(&conversion, "network-aware");
    assert_eq!(
        profile.spec.plugin_config["networkTraffic"],
        json!({
            "prometheusAddress": "http://10.0.0.5:9090",
            "networkInterface": "ens192",
            "timeRangeSeconds": 300,
        })
    );
    let renamed: Vec<&str> = conversion.notes.iter().map(|n| n.path.as_str()).collect();
    assert_eq!(
        renamed,
        [
            "profiles[0].pluginConfig[0].args.ip",
            "profiles[0].pluginConfig[0].args.deviceName",
            "profiles[0].pluginConfig[0].args.timeRange",
        ]
    );
    assert_eq!(
        effective(profile, &registry).score,
        weighted(&[
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
            ("NetworkTraffic", 10),
        ])
    );
}

#[test]
fn network_traffic_without_the_plugin_is_unsupported() {
    // A binary built without NetworkTraffic: the default registry minus that plugin.
    let defaults = default_registry();
    let mut registry = Registry::new();
    for entry in defaults.entries().filter(|e| e.name != "NetworkTraffic") {
        registry.insert(entry.clone());
    }
    registry.set_defaults(defaults.defaults().to_vec());
    let conversion = convert_with(
        &registry,
        &read_config("tests/convert/network-traffic.yaml"),
    );
    let paths: Vec<&str> = conversion
        .unsupported
        .iter()
        .map(|u| u.path.as_str())
        .collect();
    assert_eq!(
        paths,
        [
            "profiles[0].plugins.score.enabled[0].name",
            "profiles[0].pluginConfig[0].name"
        ]
    );
}

#[test]
fn bad_tutorial_values_are_reported_at_their_field() {
    let mut config = read_config("tests/convert/network-traffic.yaml");
    config["profiles"][0]["pluginConfig"][0]["args"]["timeRange"] = json!("soon");
    let mut registry = default_registry();
    registry.register::<NetworkTraffic>();
    let conversion = convert_with(&registry, &config);
    let [item] = &conversion.unsupported[..] else {
        panic!("{:?}", conversion.unsupported);
    };
    assert_eq!(item.path, "profiles[0].pluginConfig[0].args.timeRange");
    assert!(item.message.contains("\"5m\""), "{}", item.message);
}
