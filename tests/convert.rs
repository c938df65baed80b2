//! `berth convert`: KubeSchedulerConfiguration files become SchedulerProfiles that resolve
//! to the plugin lists kube-scheduler would run, that `berth simulate` accepts, and that
//! leave nothing out silently (docs/convert.md).

use std::path::{Path, PathBuf};
use std::process::Output;

use berth::api::{EffectivePlugins, SchedulerProfile, WeightedPlugin};
use berth::convert::{Conversion, ConvertError, ConvertOptions, convert};
use berth::framework::{
    ExtensionPoint, Handle, PluginArgs, PluginError, PluginFactory, Registry, resolve,
};
use berth::plugins::default_registry;
use pretty_assertions::assert_eq;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

mod support;
use cli::{assert_exit, run_berth, stderr, stdout};
use support::cli;
use support::temp::TempDir;

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

/// `berth simulate -f <profiles> -f <cluster> <extra>`, the profiles written to a scratch
/// file first.
fn simulate_converted(profiles: &str, cluster: &str, extra: &[&str]) -> Output {
    let dir = TempDir::new("convert");
    let file = dir.write("profiles.yaml", profiles);
    let file = file.to_string_lossy();
    let mut args = vec!["simulate", "-f", &file, "-f", cluster];
    args.extend(extra);
    berth(&args)
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
/// berth's default registry has: the default multiPoint list expanded at each point, with
/// the GenericWorkload gate on (GangScheduling), as berth's defaults assume.
fn upstream_defaults() -> EffectivePlugins {
    EffectivePlugins {
        pre_enqueue: names(&[
            "SchedulingGates",
            "DynamicResources",
            "DefaultPreemption",
            "GangScheduling",
        ]),
        queue_sort: names(&["PrioritySort"]),
        pre_filter: names(&[
            "NodeAffinity",
            "NodePorts",
            "NodeResourcesFit",
            "VolumeRestrictions",
            "NodeVolumeLimits",
            "VolumeBinding",
            "VolumeZone",
            "PodTopologySpread",
            "InterPodAffinity",
            "DynamicResources",
        ]),
        filter: names(&[
            "NodeUnschedulable",
            "NodeName",
            "TaintToleration",
            "NodeAffinity",
            "NodePorts",
            "NodeResourcesFit",
            "VolumeRestrictions",
            "NodeVolumeLimits",
            "VolumeBinding",
            "VolumeZone",
            "PodTopologySpread",
            "InterPodAffinity",
            "DynamicResources",
        ]),
        post_filter: names(&["DynamicResources", "DefaultPreemption"]),
        pre_score: names(&[
            "TaintToleration",
            "NodeAffinity",
            "NodeResourcesFit",
            "VolumeBinding",
            "PodTopologySpread",
            "InterPodAffinity",
            "NodeResourcesBalancedAllocation",
        ]),
        score: weighted(&[
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
        ]),
        reserve: names(&["VolumeBinding", "DynamicResources"]),
        pre_bind: names(&["VolumeBinding", "DynamicResources"]),
        permit: names(&["GangScheduling"]),
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
    // plugins follow in multiPoint order with their default weights (VolumeBinding, which
    // multiPoint lists without a weight, with 1).
    let bin_packing = profile(&conversion, "bin-packing");
    let want = EffectivePlugins {
        score: weighted(&[
            ("NodeResourcesFit", 5),
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
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
    // The global settings berth keeps per profile are the only things to note.
    let notes: Vec<String> = stderr(&output)
        .lines()
        .map(|l| l.split(": ").nth(3).unwrap_or(l).to_string())
        .collect();
    assert_eq!(
        notes,
        [
            "percentageOfNodesToScore",
            "podInitialBackoffSeconds",
            "podMaxBackoffSeconds"
        ],
        "{}",
        stderr(&output)
    );
    let yaml = stdout(&output);
    let converted = profiles_of(&yaml);
    let names: Vec<String> = converted.iter().map(|p| p.scheduler_name()).collect();
    assert_eq!(names, ["no-scoring", "bin-packing"]);
    assert!(!yaml.contains("NodeResourcesFitArgs"), "{yaml}");

    let report = simulate_converted(
        &yaml,
        &fixture("cluster.yaml"),
        &["-o", "json", "--explain"],
    );
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
    let quickstart = repo_file("examples/quickstart.yaml");
    let report = simulate_converted(&stdout(&output), &quickstart.to_string_lossy(), &[]);
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
const UNSUPPORTED: [&str; 4] = [
    "extenders[0]: berth does not call scheduler extenders",
    "profiles[0].plugins.multiPoint.enabled[0].name: plugin \"CapacityScheduling\" is not registered in berth, which has ",
    "profiles[0].pluginConfig[0].name: plugin \"CapacityScheduling\" is not registered in berth, which has ",
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
        errors.contains("docs/writing-plugins.md") && errors.contains("NodeResourcesFit, "),
        "an unknown plugin lists berth's and points to the plugin guide:\n{errors}"
    );
    for setting in ["parallelism", "leaderElection", "clientConnection"] {
        assert!(
            errors.contains(&format!("note: {path}: document 0: {setting}: not carried")),
            "process settings are notes, never errors:\n{errors}"
        );
    }
    assert!(
        errors.contains("4 item(s) cannot be carried") && errors.contains("--skip-unsupported"),
        "{errors}"
    );
    assert!(
        errors.contains(&format!(
            "note: {path}: document 0: profiles[0].plugins.filter.disabled[0].name: dropped"
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
        "CapacityScheduling and NodeDeclaredFeatures are gone"
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
fn v1beta3_multi_point_and_point_sets_resolve_as_in_v1() {
    let registry = default_registry();
    let conversion = convert_with(&registry, &read_config("tests/convert/v1beta3.yaml"));
    assert_eq!(conversion.unsupported, []);
    let profile = profile(&conversion, "spread-less");
    assert_eq!(profile.spec.percentage_of_nodes_to_score, Some(20));
    // Disable-then-enable at a point moves NodeName after the multiPoint plugins; the
    // multiPoint weight replaces TaintToleration's default weight in place. v1beta3's
    // default Filter list had EBSLimits, GCEPDLimits and AzureDiskLimits around
    // NodeVolumeLimits; berth has none of them. VolumeBinding scored nothing in those
    // releases (its VolumeCapacityPriority gate was alpha and off, and no shape is given),
    // so it is disabled at PreScore and Score, where berth's defaults (1.37's) run it.
    let want = EffectivePlugins {
        pre_score: names(&[
            "TaintToleration",
            "NodeAffinity",
            "NodeResourcesFit",
            "PodTopologySpread",
            "InterPodAffinity",
            "NodeResourcesBalancedAllocation",
        ]),
        filter: names(&[
            "NodeUnschedulable",
            "TaintToleration",
            "NodeAffinity",
            "NodePorts",
            "NodeResourcesFit",
            "VolumeRestrictions",
            "NodeVolumeLimits",
            "VolumeBinding",
            "VolumeZone",
            "PodTopologySpread",
            "InterPodAffinity",
            "DynamicResources",
            "NodeName",
        ]),
        score: weighted(&[
            ("TaintToleration", 7),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
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
fn unreadable_documents_exit_2_naming_file_and_document() {
    let path = fixture("not-a-config.yaml");
    let output = berth(&["convert", "-f", &path]);
    assert_exit(&output, 2);
    assert_eq!(stdout(&output), "");
    let errors = stderr(&output);
    assert!(
        errors.contains(&format!(
            "error: {path}: document 1: apiVersion: Unsupported value: \"componentconfig/v1alpha1\""
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
        !errors.contains(&format!("error: {path}: document 0")),
        "document 0 is valid:\n{errors}"
    );
    assert!(
        errors.contains(&format!(
            "note: {path}: document 0: profiles: profile \"default-scheduler\""
        )),
        "a configuration without profiles yields default-scheduler:\n{errors}"
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
            json!({"apiVersion": "componentconfig/v1alpha1", "kind": "KubeSchedulerConfiguration"}),
            "the group before Kubernetes 1.12",
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
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
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

// ---------------------------------------------------------------------------------------
// One configuration per version, as the tutorials of its time wrote them

/// The profiles a fixture converts to, from the `.profiles.yaml` file beside it.
fn expected_profiles(version: &str) -> Vec<Value> {
    let text =
        std::fs::read_to_string(repo_file(&format!("tests/convert/{version}.profiles.yaml")))
            .expect("expected profiles are readable");
    let profiles: Vec<SchedulerProfile> =
        serde_saphyr::from_multiple(&text).expect("expected profiles are SchedulerProfiles");
    profiles
        .iter()
        .map(|p| serde_json::to_value(p).expect("profiles encode"))
        .collect()
}

/// A note: its path in the input and a fragment its message must contain.
type ExpectedNote = (&'static str, &'static str);

/// The note on a kept `default-scheduler` profile (issue: never a second scheduler for
/// default-scheduler by accident).
const DEFAULT_SCHEDULER: &str =
    "unless started with --serve-default-scheduler (Helm value serveDefaultScheduler: true)";
const LEADER_ELECTION: ExpectedNote = ("leaderElection", "`berth run --leader-elect`");
const CLIENT_CONNECTION: ExpectedNote = ("clientConnection", "`berth run --kubeconfig`");
/// A v1beta3 profile keeps scoring nothing with VolumeBinding, as its releases did.
const VOLUME_BINDING_UNSCORED: &str = "VolumeBinding disabled at preScore and score";

struct VersionCase {
    version: &'static str,
    notes: &'static [ExpectedNote],
}

const VERSION_CASES: &[VersionCase] = &[
    VersionCase {
        version: "v1alpha1",
        notes: &[
            (
                "apiVersion",
                "v1alpha1's default plugins (as Kubernetes 1.18 ran them)",
            ),
            LEADER_ELECTION,
            CLIENT_CONNECTION,
            ("healthzBindAddress", "--metrics-bind-address"),
            ("metricsBindAddress", "--metrics-bind-address"),
            (
                "percentageOfNodesToScore",
                "copied into spec.percentageOfNodesToScore",
            ),
            (
                "hardPodAffinitySymmetricWeight",
                "InterPodAffinity args hardPodAffinityWeight: 10",
            ),
            (
                "plugins",
                "NodePreferAvoidPods (weight 10000) is not carried",
            ),
            (
                "plugins",
                "DefaultPodTopologySpread (weight 1, later named SelectorSpread) is not carried",
            ),
            ("plugins", "TaintToleration 1 instead of 3"),
            ("pluginConfig", "scoringStrategy.type: MostAllocated"),
        ],
    },
    VersionCase {
        version: "v1alpha2",
        notes: &[
            ("apiVersion", "v1alpha2's default plugins"),
            LEADER_ELECTION,
            CLIENT_CONNECTION,
            (
                "profiles[0]",
                "NodePreferAvoidPods (weight 10000) is not carried",
            ),
            (
                "profiles[0]",
                "DefaultPodTopologySpread (weight 1, later named SelectorSpread)",
            ),
            ("profiles[0]", "PodTopologySpread 1 instead of 2"),
            ("profiles[0].schedulerName", DEFAULT_SCHEDULER),
        ],
    },
    VersionCase {
        version: "v1beta1",
        notes: &[
            (
                "apiVersion",
                "v1beta1's default plugins (as Kubernetes 1.19 ran them)",
            ),
            LEADER_ELECTION,
            CLIENT_CONNECTION,
            (
                "profiles[0].plugins",
                "NodePreferAvoidPods (weight 10000) is not carried",
            ),
            (
                "profiles[0].plugins",
                "SelectorSpread (weight 1) is not carried",
            ),
            ("profiles[0].plugins", "NodeAffinity 1 instead of 2"),
            (
                "profiles[0].plugins.postBind.enabled[0].name",
                "berth's Coscheduling does not run at postBind",
            ),
            (
                "profiles[0].pluginConfig[0].args.kubeConfigPath",
                "berth's own API connection",
            ),
            (
                "profiles[0].pluginConfig[0].args.podGroupGCIntervalSeconds",
                "dropped",
            ),
            (
                "profiles[0].pluginConfig[0].args.podGroupExpirationTimeSeconds",
                "dropped",
            ),
            ("profiles[0].schedulerName", DEFAULT_SCHEDULER),
            (
                "profiles[1].plugins",
                "NodePreferAvoidPods (weight 10000) is not carried",
            ),
            (
                "profiles[1].plugins",
                "SelectorSpread (weight 1) is not carried",
            ),
            ("profiles[1].plugins", "InterPodAffinity 1 instead of 2"),
            (
                "profiles[1].pluginConfig[0].name",
                "merged NodeResourcesMostAllocated into NodeResourcesFit",
            ),
        ],
    },
    VersionCase {
        version: "v1beta2",
        notes: &[
            (
                "apiVersion",
                "v1beta2's default plugins (as Kubernetes 1.22 ran them)",
            ),
            CLIENT_CONNECTION,
            (
                "profiles[0].pluginConfig[0].args.timeRangeInMinutes",
                "timeRangeSeconds: 180",
            ),
            ("profiles[0].schedulerName", DEFAULT_SCHEDULER),
        ],
    },
    VersionCase {
        version: "v1beta3",
        notes: &[
            LEADER_ELECTION,
            CLIENT_CONNECTION,
            ("profiles[0].plugins", VOLUME_BINDING_UNSCORED),
            ("profiles[1].plugins", VOLUME_BINDING_UNSCORED),
            (
                "profiles[1].pluginConfig[0].args.deniedPGExpirationTimeSeconds",
                "podGroupBackoffSeconds: 3",
            ),
        ],
    },
    VersionCase {
        version: "v1",
        notes: &[
            LEADER_ELECTION,
            CLIENT_CONNECTION,
            ("profiles[0].schedulerName", DEFAULT_SCHEDULER),
        ],
    },
];

#[test]
fn each_version_converts_to_its_expected_profiles_and_notes() {
    let registry = default_registry();
    for case in VERSION_CASES {
        let version = case.version;
        let config = read_config(&format!("tests/convert/{version}.yaml"));
        let conversion = convert_with(&registry, &config);
        assert_eq!(conversion.unsupported, [], "{version}");
        let profiles: Vec<Value> = conversion
            .profiles
            .iter()
            .map(|p| serde_json::to_value(p).expect("profiles encode"))
            .collect();
        assert_eq!(profiles, expected_profiles(version), "{version}");

        let mut unmatched: Vec<_> = conversion.notes.iter().collect();
        for (path, fragment) in case.notes {
            let found = unmatched
                .iter()
                .position(|n| n.path == *path && n.message.contains(fragment));
            match found {
                Some(index) => {
                    unmatched.remove(index);
                }
                None => panic!(
                    "{version}: no note {path}: ...{fragment}... in\n{:#?}",
                    conversion.notes
                ),
            }
        }
        assert!(
            unmatched.is_empty(),
            "{version}: unexpected notes {unmatched:#?}"
        );
        for profile in &conversion.profiles {
            effective(profile, &registry);
        }
    }
}

#[test]
fn legacy_profiles_run_the_plugins_and_weights_their_version_ran() {
    let registry = default_registry();
    // kube-scheduler 1.19 (v1beta1) ran these Score plugins for a profile without
    // plugins, restricted to those berth has: NodeResourcesLeastAllocated is
    // NodeResourcesFit's default strategy.
    let v1beta1_scores = [
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
        ("InterPodAffinity", 1),
        ("NodeResourcesFit", 1),
        ("NodeAffinity", 1),
        ("PodTopologySpread", 2),
        ("TaintToleration", 1),
    ];
    let cases = [
        ("v1beta1", "default-scheduler", &v1beta1_scores[..]),
        ("v1alpha2", "no-scoring-scheduler", &[][..]),
        ("v1beta2", "default-scheduler", &[("NetworkTraffic", 1)][..]),
    ];
    for (version, name, scores) in cases {
        let conversion = convert_with(
            &registry,
            &read_config(&format!("tests/convert/{version}.yaml")),
        );
        let plugins = effective(profile(&conversion, name), &registry);
        let mut got: Vec<(String, i32)> = plugins
            .score
            .iter()
            .map(|p| (p.name.clone(), p.weight))
            .collect();
        got.sort();
        let mut want: Vec<(String, i32)> =
            scores.iter().map(|(n, w)| (n.to_string(), *w)).collect();
        want.sort();
        assert_eq!(got, want, "{version} {name}");
        // Every Score plugin with a PreScore in berth runs it, and nothing else does.
        let mut pre_score = plugins.pre_score.clone();
        pre_score.sort();
        let mut scored_with_pre: Vec<String> = want
            .iter()
            .map(|(n, _)| n.clone())
            .filter(|n| n != "ImageLocality")
            .collect();
        scored_with_pre.sort();
        assert_eq!(pre_score, scored_with_pre, "{version} {name}");
    }

    // Coscheduling joins the defaults at the points the tutorial enabled it.
    let conversion = convert_with(&registry, &read_config("tests/convert/v1beta1.yaml"));
    let coscheduling = effective(profile(&conversion, "default-scheduler"), &registry);
    assert_eq!(coscheduling.queue_sort, names(&["Coscheduling"]));
    assert_eq!(
        coscheduling.pre_filter.last().map(String::as_str),
        Some("Coscheduling")
    );
    assert_eq!(coscheduling.permit, names(&["Coscheduling"]));
    let mut filter = upstream_defaults().filter;
    filter.retain(|p| p != "DynamicResources");
    assert_eq!(
        coscheduling.filter, filter,
        "v1beta1 had no DynamicResources"
    );
}

/// A minimal configuration of `version` with `fields` added at the top level.
fn config(version: &str, fields: Value) -> Value {
    let mut config = json!({
        "apiVersion": format!("kubescheduler.config.k8s.io/{version}"),
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "berth-default"}],
    });
    if let (Some(config), Some(fields)) = (config.as_object_mut(), fields.as_object()) {
        config.extend(fields.clone());
    }
    config
}

#[test]
fn process_settings_are_notes_naming_berths_flag_or_helm_value() {
    let cases = [
        (
            "v1",
            "parallelism",
            json!(16),
            "`berth run --parallelism` (Helm value `parallelism`)",
        ),
        (
            "v1",
            "leaderElection",
            json!({"leaderElect": true}),
            "Helm values `leaderElection.enabled`",
        ),
        ("v1", "clientConnection", json!({"qps": 50}), "--kubeconfig"),
        (
            "v1",
            "healthzBindAddress",
            json!("0.0.0.0:10251"),
            "`metrics.bindAddress`",
        ),
        (
            "v1",
            "metricsBindAddress",
            json!("0.0.0.0:10251"),
            "`berth run --metrics-bind-address`",
        ),
        (
            "v1",
            "enableProfiling",
            json!(true),
            "no profiling endpoints",
        ),
        (
            "v1",
            "enableContentionProfiling",
            json!(true),
            "no profiling endpoints",
        ),
        (
            "v1",
            "delayCacheUntilActive",
            json!(true),
            "keep their caches warm",
        ),
        (
            "v1alpha2",
            "disablePreemption",
            json!(true),
            "copied into spec.plugins.postFilter.disabled of every profile (DefaultPreemption)",
        ),
        (
            "v1",
            "percentageOfNodesToScore",
            json!(30),
            "copied into spec.percentageOfNodesToScore",
        ),
        (
            "v1",
            "podInitialBackoffSeconds",
            json!(2),
            "copied into spec.podInitialBackoffSeconds",
        ),
        (
            "v1",
            "podMaxBackoffSeconds",
            json!(20),
            "copied into spec.podMaxBackoffSeconds",
        ),
    ];
    for (version, field, value, fragment) in cases {
        let conversion = convert_with(&default_registry(), &config(version, json!({field: value})));
        assert_eq!(conversion.unsupported, [], "{field}");
        assert_eq!(conversion.profiles.len(), 1, "{field}");
        assert!(
            conversion
                .notes
                .iter()
                .any(|n| n.path == field && n.message.contains(fragment)),
            "{field}: {:?}",
            conversion.notes
        );
    }
}

/// The volume plugins berth registers, and the in-tree limit plugins it does not have.
struct VolumePluginCase {
    name: &'static str,
    config: Value,
    /// Paths of the unsupported items.
    unsupported: &'static [&'static str],
    /// Paths of the notes saying a `disabled` entry was dropped.
    dropped: &'static [&'static str],
    filter_has: &'static [&'static str],
    filter_lacks: &'static [&'static str],
}

#[test]
fn volume_plugins_are_carried_and_in_tree_limit_plugins_are_not() {
    const VOLUME_PLUGINS: &[&str] = &[
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
    ];
    let profile_with = |version: &str, plugins: Value| {
        json!({
            "apiVersion": format!("kubescheduler.config.k8s.io/{version}"),
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "a", "plugins": plugins}],
        })
    };
    let cases = [
        VolumePluginCase {
            name: "v1alpha1: 1.18's default Filter list keeps its volume plugins",
            config: json!({
                "apiVersion": "kubescheduler.config.k8s.io/v1alpha1",
                "kind": "KubeSchedulerConfiguration",
                "schedulerName": "a",
            }),
            unsupported: &[],
            dropped: &[],
            filter_has: VOLUME_PLUGINS,
            filter_lacks: &["EBSLimits", "GCEPDLimits", "AzureDiskLimits"],
        },
        VolumePluginCase {
            name: "v1: disabling a volume plugin is carried",
            config: profile_with(
                "v1",
                json!({"multiPoint": {"disabled": [{"name": "VolumeZone"}]}}),
            ),
            unsupported: &[],
            dropped: &[],
            filter_has: &["VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding"],
            filter_lacks: &["VolumeZone"],
        },
        VolumePluginCase {
            name: "v1: disabling an in-tree limit plugin is a note",
            config: profile_with(
                "v1",
                json!({"filter": {"disabled": [{"name": "EBSLimits"}]}}),
            ),
            unsupported: &[],
            dropped: &["profiles[0].plugins.filter.disabled[0].name"],
            filter_has: VOLUME_PLUGINS,
            filter_lacks: &[],
        },
        VolumePluginCase {
            name: "v1: enabling an in-tree limit plugin is unsupported",
            config: profile_with(
                "v1",
                json!({"filter": {"enabled": [{"name": "AzureDiskLimits"}]}}),
            ),
            unsupported: &["profiles[0].plugins.filter.enabled[0].name"],
            dropped: &[],
            filter_has: VOLUME_PLUGINS,
            filter_lacks: &["AzureDiskLimits"],
        },
        VolumePluginCase {
            // GCEPDLimits is one of 1.19's defaults: disabling it leaves nothing to say.
            name: "v1beta1: NodeVolumeLimits disabled is carried, GCEPDLimits needs nothing",
            config: profile_with(
                "v1beta1",
                json!({"filter": {"disabled": [{"name": "NodeVolumeLimits"}, {"name": "GCEPDLimits"}]}}),
            ),
            unsupported: &[],
            dropped: &[],
            filter_has: &["VolumeRestrictions", "VolumeBinding", "VolumeZone"],
            filter_lacks: &["NodeVolumeLimits"],
        },
        VolumePluginCase {
            name: "v1beta2: enabling CinderLimits is unsupported",
            config: profile_with(
                "v1beta2",
                json!({"filter": {"enabled": [{"name": "CinderLimits"}]}}),
            ),
            unsupported: &["profiles[0].plugins.filter.enabled[0].name"],
            dropped: &[],
            filter_has: VOLUME_PLUGINS,
            filter_lacks: &["CinderLimits"],
        },
    ];
    let registry = default_registry();
    for case in cases {
        let name = case.name;
        let conversion = convert(&case.config, &registry, &ConvertOptions::default()).expect(name);
        let unsupported: Vec<&str> = conversion
            .unsupported
            .iter()
            .map(|u| u.path.as_str())
            .collect();
        assert_eq!(unsupported, case.unsupported, "{name}");
        let dropped: Vec<&str> = conversion
            .notes
            .iter()
            .filter(|n| n.message.starts_with("dropped"))
            .map(|n| n.path.as_str())
            .collect();
        assert_eq!(dropped, case.dropped, "{name}");
        let plugins = effective(profile(&conversion, "a"), &registry);
        for plugin in case.filter_has {
            assert!(
                plugins.filter.iter().any(|p| p == plugin),
                "{name}: {plugin}"
            );
        }
        for plugin in case.filter_lacks {
            assert!(
                !plugins.filter.iter().any(|p| p == plugin),
                "{name}: {plugin}"
            );
        }
        if case.filter_has.contains(&"VolumeBinding") {
            let binds = (plugins.reserve, plugins.pre_bind);
            let mut want = (names(&["VolumeBinding"]), names(&["VolumeBinding"]));
            if case.name.starts_with("v1:") {
                // v1's defaults (upstream 1.37's) reserve devices after volumes.
                want.0.push("DynamicResources".into());
                want.1.push("DynamicResources".into());
            }
            assert_eq!(binds, want, "{name}");
        }
    }
}

/// What `spec.pluginConfig.volumeBinding` each profile of a converted configuration gets.
struct VolumeBindingCase {
    name: &'static str,
    config: Value,
    /// Per profile, its VolumeBinding args (`None`: no pluginConfig entry, so berth's
    /// defaults, which are upstream's: 600 seconds, no scoring).
    want: &'static [(&'static str, Option<&'static str>)],
    unsupported: &'static [(&'static str, &'static str)],
}

#[test]
fn volume_binding_args_and_the_alpha_bind_timeout_reach_the_profiles() {
    // Upstream (TestInjectingPluginConfigForVolumeBinding, 1.19): the top-level
    // bindTimeoutSeconds becomes VolumeBinding's args in every profile, unless the
    // profile's pluginConfig configures VolumeBinding itself ("PluginConfig is preferred").
    let cases = [
        VolumeBindingCase {
            name: "v1alpha2: the global value, unless a profile configures VolumeBinding",
            config: json!({
                "apiVersion": "kubescheduler.config.k8s.io/v1alpha2",
                "kind": "KubeSchedulerConfiguration",
                "bindTimeoutSeconds": 100,
                "profiles": [
                    {"schedulerName": "a"},
                    {"schedulerName": "b", "pluginConfig": [
                        {"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 200}},
                    ]},
                ],
            }),
            want: &[
                ("a", Some(r#"{"bindTimeoutSeconds": 100}"#)),
                ("b", Some(r#"{"bindTimeoutSeconds": 200}"#)),
            ],
            unsupported: &[],
        },
        VolumeBindingCase {
            name: "v1alpha1: the one scheduler, 0 kept (no waiting)",
            config: json!({
                "apiVersion": "kubescheduler.config.k8s.io/v1alpha1",
                "kind": "KubeSchedulerConfiguration",
                "schedulerName": "a",
                "bindTimeoutSeconds": 0,
            }),
            want: &[("a", Some(r#"{"bindTimeoutSeconds": 0}"#))],
            unsupported: &[],
        },
        VolumeBindingCase {
            name: "v1alpha2: unset, upstream's default is berth's",
            config: json!({
                "apiVersion": "kubescheduler.config.k8s.io/v1alpha2",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [{"schedulerName": "a"}],
            }),
            want: &[("a", None)],
            unsupported: &[],
        },
        VolumeBindingCase {
            name: "v1alpha2: a profile that does not run VolumeBinding needs no args",
            config: json!({
                "apiVersion": "kubescheduler.config.k8s.io/v1alpha2",
                "kind": "KubeSchedulerConfiguration",
                "bindTimeoutSeconds": 100,
                "profiles": [{"schedulerName": "a", "plugins": {
                    "filter": {"disabled": [{"name": "VolumeBinding"}]},
                    "reserve": {"disabled": [{"name": "VolumeBinding"}]},
                    "preBind": {"disabled": [{"name": "VolumeBinding"}]},
                }}],
            }),
            want: &[("a", None)],
            unsupported: &[],
        },
        VolumeBindingCase {
            name: "v1alpha2: a negative value is refused as VolumeBindingArgs refuse it",
            config: json!({
                "apiVersion": "kubescheduler.config.k8s.io/v1alpha2",
                "kind": "KubeSchedulerConfiguration",
                "bindTimeoutSeconds": -1,
                "profiles": [{"schedulerName": "a"}],
            }),
            want: &[("a", None)],
            unsupported: &[(
                "bindTimeoutSeconds",
                "Invalid value: -1: invalid BindTimeoutSeconds, should not be a negative value",
            )],
        },
        VolumeBindingCase {
            name: "v1beta1: VolumeBindingArgs lose their type meta",
            config: json!({
                "apiVersion": "kubescheduler.config.k8s.io/v1beta1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [{"schedulerName": "a", "pluginConfig": [{"name": "VolumeBinding", "args": {
                    "apiVersion": "kubescheduler.config.k8s.io/v1beta1",
                    "kind": "VolumeBindingArgs",
                    "bindTimeoutSeconds": 300,
                }}]}],
            }),
            want: &[("a", Some(r#"{"bindTimeoutSeconds": 300}"#))],
            unsupported: &[],
        },
        VolumeBindingCase {
            name: "v1: a capacity-scoring shape is carried",
            config: json!({
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [{"schedulerName": "a", "pluginConfig": [{"name": "VolumeBinding", "args": {
                    "bindTimeoutSeconds": 60,
                    "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
                }}]}],
            }),
            want: &[(
                "a",
                Some(
                    r#"{"bindTimeoutSeconds": 60, "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}"#,
                ),
            )],
            unsupported: &[],
        },
        VolumeBindingCase {
            name: "v1: negative args are reported at their field",
            config: json!({
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [{"schedulerName": "a", "pluginConfig": [
                    {"name": "VolumeBinding", "args": {"bindTimeoutSeconds": -5}},
                ]}],
            }),
            want: &[("a", None)],
            // As the API server words the CRD's minimum.
            unsupported: &[(
                "profiles[0].pluginConfig[0].args.bindTimeoutSeconds",
                "Invalid value: -5: must be greater than or equal to 0",
            )],
        },
    ];
    for case in cases {
        let name = case.name;
        let conversion = convert_with(&default_registry(), &case.config);
        let unsupported: Vec<(&str, &str)> = conversion
            .unsupported
            .iter()
            .map(|u| (u.path.as_str(), u.message.as_str()))
            .collect();
        assert_eq!(
            unsupported.len(),
            case.unsupported.len(),
            "{name}: {unsupported:#?}"
        );
        for ((path, message), (want_path, fragment)) in unsupported.iter().zip(case.unsupported) {
            assert!(
                path == want_path && message.contains(fragment),
                "{name}: {path}: {message}"
            );
        }
        for (profile_name, want) in case.want {
            let got = profile(&conversion, profile_name)
                .spec
                .plugin_config
                .get("volumeBinding");
            let want: Option<Value> =
                want.map(|w| serde_json::from_str(w).expect("expected args are JSON"));
            assert_eq!(got, want.as_ref(), "{name}: {profile_name}");
            effective(profile(&conversion, profile_name), &default_registry());
        }
    }
}

#[test]
fn the_alpha_bind_timeout_is_noted_where_it_went() {
    let conversion = convert_with(
        &default_registry(),
        &config("v1alpha2", json!({"bindTimeoutSeconds": 300})),
    );
    assert!(
        conversion.notes.iter().any(|n| {
            n.path == "bindTimeoutSeconds"
            && n.message.contains(
                "copied into spec.pluginConfig.volumeBinding.bindTimeoutSeconds of every profile"
            )
        }),
        "{:#?}",
        conversion.notes
    );
}

#[test]
fn what_a_version_cannot_say_or_berth_cannot_carry_is_reported() {
    let cases = [
        (
            "the Policy API",
            config(
                "v1alpha1",
                json!({"algorithmSource": {"policy": {"file": {"path": "/etc/policy.json"}}}}),
            ),
            "algorithmSource.policy",
            "the Policy API",
        ),
        (
            "an unknown provider",
            config(
                "v1alpha1",
                json!({"algorithmSource": {"provider": "MyProvider"}}),
            ),
            "algorithmSource.provider",
            "Unsupported value: \"MyProvider\"",
        ),
        (
            "profiles in v1alpha1",
            config("v1alpha1", json!({})),
            "profiles",
            "v1alpha1 has no such field",
        ),
        (
            "top-level plugins after v1alpha1",
            config("v1beta1", json!({"plugins": {}, "schedulerName": "x"})),
            "schedulerName",
            "v1beta1 has no such field",
        ),
        (
            "disablePreemption after v1alpha2",
            config("v1beta1", json!({"disablePreemption": true})),
            "disablePreemption",
            "unknown field",
        ),
        (
            "bindTimeoutSeconds after v1alpha2 (VolumeBindingArgs has it)",
            config("v1beta1", json!({"bindTimeoutSeconds": 600})),
            "bindTimeoutSeconds",
            "unknown field",
        ),
        (
            "a plugin upstream removed",
            config(
                "v1beta1",
                json!({"profiles": [{"schedulerName": "a", "plugins": {"filter": {"enabled": [{"name": "NodeLabel"}]}}}]}),
            ),
            "profiles[0].plugins.filter.enabled[0].name",
            "upstream removed NodeLabel in v1beta2",
        ),
        (
            "two resource scorers",
            config(
                "v1beta1",
                json!({"profiles": [{"schedulerName": "a", "plugins": {"score": {"enabled": [{"name": "NodeResourcesMostAllocated"}]}}}]}),
            ),
            "profiles[0].plugins.score.enabled[0].name",
            "as NodeResourcesLeastAllocated already does",
        ),
        (
            "RequestedToCapacityRatio without the shape v1beta1 required",
            config(
                "v1beta1",
                json!({"profiles": [{"schedulerName": "a",
                "plugins": {"score": {"disabled": [{"name": "NodeResourcesLeastAllocated"}], "enabled": [{"name": "RequestedToCapacityRatio"}]}}}]}),
            ),
            "profiles[0]",
            "requestedToCapacityRatio",
        ),
        (
            "v1alpha1's scheduler without a QueueSort plugin",
            json!({"apiVersion": "kubescheduler.config.k8s.io/v1alpha1", "kind": "KubeSchedulerConfiguration",
                "schedulerName": "a", "plugins": {"queueSort": {"disabled": [{"name": "*"}]}}}),
            "plugins",
            "exactly one QueueSort plugin must be enabled",
        ),
        (
            "an out-of-tree plugin",
            config(
                "v1alpha2",
                json!({"profiles": [{"schedulerName": "a", "plugins": {"score": {"enabled": [{"name": "Trimaran"}]}}}]}),
            ),
            "profiles[0].plugins.score.enabled[0].name",
            "to run a plugin of your own, build it into a berth binary (docs/writing-plugins.md)",
        ),
        (
            "v1alpha1's preScore name",
            config(
                "v1alpha1",
                json!({"profiles": null, "plugins": {"preScore": {"enabled": [{"name": "TaintToleration"}]}}}),
            ),
            "plugins.preScore",
            "v1alpha1 has no preScore extension point",
        ),
    ];
    for (name, config, path, fragment) in cases {
        let conversion = convert_with(&default_registry(), &config);
        assert!(
            conversion
                .unsupported
                .iter()
                .any(|u| u.path == path && u.message.contains(fragment)),
            "{name}: {:#?}",
            conversion.unsupported
        );
    }
}

#[test]
fn legacy_args_take_berths_shapes() {
    let registry = default_registry();
    let cases = [
        (
            "RequestedToCapacityRatio with its v1beta1 args",
            config(
                "v1beta1",
                json!({"profiles": [{"schedulerName": "a",
                "plugins": {"score": {"disabled": [{"name": "NodeResourcesLeastAllocated"}], "enabled": [{"name": "RequestedToCapacityRatio", "weight": 3}]}},
                "pluginConfig": [{"name": "RequestedToCapacityRatio", "args": {
                    "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
                    "resources": [{"name": "cpu", "weight": 2}]}}]}]}),
            ),
            "nodeResourcesFit",
            json!({"scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]},
                "resources": [{"name": "cpu", "weight": 2}]}}),
        ),
        (
            "NodeResourcesFit's own args merge with the strategy",
            config(
                "v1alpha2",
                json!({"profiles": [{"schedulerName": "a",
                "plugins": {"score": {"disabled": [{"name": "NodeResourcesLeastAllocated"}], "enabled": [{"name": "NodeResourcesMostAllocated"}]}},
                "pluginConfig": [
                    {"name": "NodeResourcesFit", "args": {"ignoredResources": ["example.com/foo"]}},
                    {"name": "NodeResourcesMostAllocated", "args": {"resources": [{"name": "cpu", "weight": 1}]}}]}]}),
            ),
            "nodeResourcesFit",
            json!({"ignoredResources": ["example.com/foo"], "scoringStrategy": {
                "type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1}]}}),
        ),
        (
            "v1alpha1's hardPodAffinitySymmetricWeight wins over pluginConfig",
            json!({"apiVersion": "kubescheduler.config.k8s.io/v1alpha1", "kind": "KubeSchedulerConfiguration",
                "schedulerName": "a", "hardPodAffinitySymmetricWeight": 5,
                "pluginConfig": [{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 50}}]}),
            "interPodAffinity",
            json!({"hardPodAffinityWeight": 5}),
        ),
        (
            "v1beta1's default constraints were a list",
            config(
                "v1beta1",
                json!({"profiles": [{"schedulerName": "a",
                "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"}]}}]}]}),
            ),
            "podTopologySpread",
            json!({"defaultingType": "List", "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"}]}),
        ),
    ];
    for (name, config, field, want) in cases {
        let conversion = convert_with(&registry, &config);
        assert_eq!(conversion.unsupported, [], "{name}");
        let [profile] = &conversion.profiles[..] else {
            panic!("{name}: {:?}", conversion.profiles);
        };
        assert_eq!(profile.spec.plugin_config.get(field), Some(&want), "{name}");
        effective(profile, &registry);
    }
}

#[test]
fn the_cluster_autoscaler_provider_packs_nodes() {
    let registry = default_registry();
    let conversion = convert_with(
        &registry,
        &json!({"apiVersion": "kubescheduler.config.k8s.io/v1alpha1", "kind": "KubeSchedulerConfiguration",
            "schedulerName": "packer", "algorithmSource": {"provider": "ClusterAutoscalerProvider"}}),
    );
    let packer = profile(&conversion, "packer");
    assert_eq!(
        packer.spec.plugin_config.get("nodeResourcesFit"),
        Some(&json!({"scoringStrategy": {"type": "MostAllocated"}}))
    );
    assert!(
        effective(packer, &registry)
            .score
            .iter()
            .any(|p| p.name == "NodeResourcesFit" && p.weight == 1)
    );
}

#[test]
fn rename_gives_converted_profiles_another_scheduler_name() {
    let path = fixture("v1beta1.yaml");
    let output = berth(&[
        "convert",
        "-f",
        &path,
        "--rename",
        "default-scheduler=berth-default",
    ]);
    assert_exit(&output, 0);
    let names: Vec<String> = profiles_of(&stdout(&output))
        .iter()
        .map(SchedulerProfile::scheduler_name)
        .collect();
    assert_eq!(names, ["berth-default", "bin-packing"]);
    let notes = stderr(&output);
    assert!(
        notes.contains(
            "profiles[0].schedulerName: \"default-scheduler\" renamed to \"berth-default\""
        ),
        "{notes}"
    );
    assert!(!notes.contains("--serve-default-scheduler"), "{notes}");

    // Renaming onto default-scheduler earns the same note as keeping it.
    let options = ConvertOptions {
        renames: [("bin-packing".to_string(), "default-scheduler".to_string())].into(),
        ..ConvertOptions::default()
    };
    let config = read_config("tests/convert/v1beta1.yaml");
    let conversion = convert(&config, &default_registry(), &options).expect("converts");
    assert!(conversion.renamed.contains("bin-packing"));
    let on_default: Vec<&str> = conversion
        .notes
        .iter()
        .filter(|n| n.message.contains("--serve-default-scheduler"))
        .map(|n| n.path.as_str())
        .collect();
    assert_eq!(
        on_default,
        ["profiles[0].schedulerName", "profiles[1].schedulerName"]
    );
    assert!(
        conversion
            .unsupported
            .iter()
            .any(|u| u.path == "profiles[1].schedulerName"
                && u.message
                    .contains("duplicate schedulerName \"default-scheduler\"")),
        "{:?}",
        conversion.unsupported
    );

    let cases = [
        (
            vec!["--rename", "my-scheduler=b"],
            "no converted profile is named \"my-scheduler\"",
        ),
        (
            vec!["--rename", "default-scheduler=Berth"],
            "cannot name a SchedulerProfile",
        ),
        (vec!["--rename", "default-scheduler"], "expected OLD=NEW"),
        (
            vec![
                "--rename",
                "bin-packing=default-scheduler-2",
                "--rename",
                "bin-packing=x",
            ],
            "renamed twice",
        ),
    ];
    for (flags, message) in cases {
        let mut args = vec!["convert", "-f", &path];
        args.extend(flags.iter().copied());
        let output = berth(&args);
        assert_exit(&output, 2);
        assert_eq!(stdout(&output), "", "{flags:?}");
        assert!(
            stderr(&output).contains(message),
            "{flags:?}: {}",
            stderr(&output)
        );
    }
}

#[test]
fn a_converted_v1beta1_bin_packing_profile_packs_in_simulate() {
    let output = berth(&[
        "convert",
        "-f",
        &fixture("v1beta1.yaml"),
        "--rename",
        "default-scheduler=gang",
    ]);
    assert_exit(&output, 0);
    let report = simulate_converted(&stdout(&output), &fixture("cluster.yaml"), &["-o", "json"]);
    assert_exit(&report, 0);
    let report: Value = serde_json::from_str(&stdout(&report)).expect("report is JSON");
    let packed = report["pods"]
        .as_array()
        .and_then(|pods| pods.iter().find(|p| p["name"] == "packed"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (&packed["result"], &packed["node"]),
        (&json!("Scheduled"), &json!("node-a")),
        "NodeResourcesMostAllocated (weight 5) packs onto the busier node: {packed}"
    );
}

#[test]
fn the_binary_converts_every_version_fixture() {
    for case in VERSION_CASES {
        let version = case.version;
        let path = fixture(&format!("{version}.yaml"));
        let output = berth(&["convert", "-f", &path]);
        assert_exit(&output, 0);
        let profiles: Vec<Value> = profiles_of(&stdout(&output))
            .iter()
            .map(|p| serde_json::to_value(p).expect("profiles encode"))
            .collect();
        assert_eq!(profiles, expected_profiles(version), "{version}");
        let notes = stderr(&output);
        assert_eq!(
            notes.lines().count(),
            case.notes.len(),
            "{version}: one line per note:\n{notes}"
        );
        assert!(
            notes
                .lines()
                .all(|l| l.starts_with(&format!("note: {path}: document 0: "))),
            "{version}: {notes}"
        );
    }
}

/// The alpha versions preempted without a plugin; `disablePreemption: true` turned that
/// off, and kube-scheduler 1.19 converted it to DefaultPreemption disabled at PostFilter
/// in every profile. Without it, the profiles preempt as v1's do.
#[test]
fn the_alpha_disable_preemption_disables_default_preemption() {
    let registry = default_registry();
    for (disable, want) in [(true, vec![]), (false, names(&["DefaultPreemption"]))] {
        let conversion = convert_with(
            &registry,
            &config("v1alpha2", json!({"disablePreemption": disable})),
        );
        assert_eq!(conversion.unsupported, []);
        assert_eq!(conversion.profiles.len(), 1);
        for profile in &conversion.profiles {
            assert_eq!(
                effective(profile, &registry).post_filter,
                want,
                "disablePreemption: {disable}"
            );
        }
    }
}

/// A kube-scheduler 1.37 configuration that enables DynamicResources and
/// NodeDeclaredFeatures (which berth does not have) and configures them with
/// `plugin_config`.
fn config_1_37(plugin_config: Value) -> Value {
    json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{
            "schedulerName": "berth-default",
            "plugins": {
                "multiPoint": {"enabled": [
                    {"name": "DynamicResources", "weight": 2},
                    {"name": "NodeDeclaredFeatures"},
                ]},
                "filter": {"enabled": [{"name": "NodeDeclaredFeatures"}]},
            },
            "pluginConfig": plugin_config,
        }],
    })
}

struct UpstreamOnlyCase {
    name: &'static str,
    plugin_config: Value,
    /// (path, fragment) of each expected note about these plugins.
    notes: &'static [(&'static str, &'static str)],
    /// (path, fragment) of each expected unsupported item.
    unsupported: &'static [(&'static str, &'static str)],
}

/// Issue 18: a 1.37 configuration names NodeDeclaredFeatures, which upstream runs by
/// default and berth lacks. Enabling or configuring it is noted (the profile runs
/// without it, as every berth profile does), not refused as an unknown plugin; args its
/// upstream type does not have are still reported. DynamicResources (issue 30) is
/// berth's own: enabling it changes nothing, its args convert as any plugin's.
#[test]
fn plugins_of_upstream_1_37_berth_lacks_are_noted_not_refused() {
    let enabled_notes: [(&str, &str); 2] = [
        (
            "profiles[0].plugins.multiPoint.enabled[1].name",
            "dropped: berth does not have NodeDeclaredFeatures, which kube-scheduler 1.37 runs by \
             default; `node.status.declaredFeatures` is not checked",
        ),
        (
            "profiles[0].plugins.filter.enabled[0].name",
            "dropped: berth does not have NodeDeclaredFeatures",
        ),
    ];
    let cases = [
        UpstreamOnlyCase {
            name: "DynamicResourcesArgs as upstream writes its defaults, NodeDeclaredFeatures without args",
            plugin_config: json!([
                {"name": "DynamicResources", "args": {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "DynamicResourcesArgs",
                    "filterTimeout": "10s",
                    "bindingTimeout": "600s",
                }},
                {"name": "NodeDeclaredFeatures"},
            ]),
            notes: &[(
                "profiles[0].pluginConfig[1].name",
                "dropped: berth does not have NodeDeclaredFeatures",
            )],
            unsupported: &[],
        },
        UpstreamOnlyCase {
            name: "a field DynamicResourcesArgs does not have",
            plugin_config: json!([
                {"name": "DynamicResources", "args": {"filterTimeout": "0s", "timeout": "5s"}},
            ]),
            notes: &[],
            unsupported: &[("profiles[0].pluginConfig[0].args.timeout", "unknown field")],
        },
        UpstreamOnlyCase {
            name: "args for NodeDeclaredFeatures, which takes none",
            plugin_config: json!([{"name": "NodeDeclaredFeatures", "args": {"features": ["x"]}}]),
            notes: &[(
                "profiles[0].pluginConfig[0].name",
                "dropped: berth does not have NodeDeclaredFeatures",
            )],
            unsupported: &[(
                "profiles[0].pluginConfig[0].args.features",
                "upstream's NodeDeclaredFeatures takes no args",
            )],
        },
        UpstreamOnlyCase {
            name: "args of another plugin's kind",
            plugin_config: json!([
                {"name": "DynamicResources", "args": {"kind": "VolumeBindingArgs"}},
            ]),
            notes: &[],
            unsupported: &[(
                "profiles[0].pluginConfig[0].args.kind",
                "args of kind VolumeBindingArgs do not belong to plugin DynamicResources",
            )],
        },
    ];
    let registry = default_registry();
    for case in cases {
        let conversion = convert_with(&registry, &config_1_37(case.plugin_config));
        let name = case.name;
        let unsupported: Vec<(&str, &str)> = conversion
            .unsupported
            .iter()
            .map(|u| (u.path.as_str(), u.message.as_str()))
            .collect();
        assert_eq!(
            unsupported.len(),
            case.unsupported.len(),
            "{name}: {unsupported:?}"
        );
        for ((path, message), (want_path, fragment)) in unsupported.iter().zip(case.unsupported) {
            assert_eq!(path, want_path, "{name}");
            assert!(message.contains(fragment), "{name}: {message}");
        }
        let about_them: Vec<(&str, &str)> = conversion
            .notes
            .iter()
            .filter(|n| {
                n.path.starts_with("profiles[0].plugins")
                    || n.path.starts_with("profiles[0].pluginConfig")
            })
            .map(|n| (n.path.as_str(), n.message.as_str()))
            .collect();
        let want: Vec<&(&str, &str)> = enabled_notes.iter().chain(case.notes).collect();
        assert_eq!(about_them.len(), want.len(), "{name}: {about_them:?}");
        for ((path, message), (want_path, fragment)) in about_them.iter().zip(want) {
            assert_eq!(path, want_path, "{name}");
            assert!(message.contains(fragment), "{name}: {message}");
        }
        // The profile runs berth's defaults and configures nothing for the plugins berth
        // lacks; DynamicResources' args are carried as written.
        let profile = profile(&conversion, "berth-default");
        assert!(
            profile
                .spec
                .plugin_config
                .keys()
                .all(|k| k == "dynamicResources"),
            "{name}"
        );
        assert_eq!(effective(profile, &registry), upstream_defaults(), "{name}");
    }

    // The binary writes the profile and exits 0: notes are not failures.
    let dir = TempDir::new("convert-1-37");
    let path = dir.path().join("kube-scheduler-1.37.yaml");
    let text = serde_json::to_string(&config_1_37(json!([
        {"name": "DynamicResources", "args": {"filterTimeout": "10s"}},
    ])))
    .expect("encodes");
    std::fs::write(&path, text).expect("writes the configuration");
    let output = berth(&["convert", "-f", &path.to_string_lossy()]);
    assert_exit(&output, 0);
    let profiles = profiles_of(&stdout(&output));
    assert_eq!(profiles.len(), 1);
    assert!(
        stderr(&output).contains("dropped: berth does not have NodeDeclaredFeatures"),
        "{}",
        stderr(&output)
    );
}

/// Issue 30: DynamicResourcesArgs convert as written, the Go durations kept as text; an
/// invalid one is reported with upstream's message.
#[test]
fn dynamic_resources_args_convert() {
    let registry = default_registry();
    let conversion = convert_with(
        &registry,
        &config_1_37(json!([
            {"name": "DynamicResources", "args": {"filterTimeout": "1m30s", "bindingTimeout": "600s"}},
        ])),
    );
    assert_eq!(conversion.unsupported, []);
    let profile = profile(&conversion, "berth-default");
    assert_eq!(
        profile.spec.plugin_config["dynamicResources"],
        json!({"filterTimeout": "1m30s", "bindingTimeout": "600s"})
    );
    let conversion = convert_with(
        &registry,
        &config_1_37(json!([
            {"name": "DynamicResources", "args": {"filterTimeout": "-1s"}},
        ])),
    );
    let messages: Vec<String> = conversion
        .unsupported
        .iter()
        .map(|u| format!("{}: {}", u.path, u.message))
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("filterTimeout") && m.contains("must be zero or positive")),
        "{messages:?}"
    );
}

/// v1 `SetDefaults_VolumeBindingArgs` (1.37, StorageCapacityScoring on) fills an empty
/// shape with the default, so an empty one is not an error; berth's default is the same
/// shape, so the converted args leave it out and the profile scores with it.
#[test]
fn an_empty_volume_binding_shape_takes_upstream_1_37s_default() {
    let registry = default_registry();
    let config = config(
        "v1",
        json!({"profiles": [{"schedulerName": "berth-default", "pluginConfig": [
            {"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 300, "shape": []}},
        ]}]}),
    );
    let conversion = convert_with(&registry, &config);
    assert_eq!(conversion.unsupported, []);
    let profile = profile(&conversion, "berth-default");
    assert_eq!(
        profile.spec.plugin_config.get("volumeBinding"),
        Some(&json!({"bindTimeoutSeconds": 300}))
    );
    let note = conversion
        .notes
        .iter()
        .find(|n| n.path == "profiles[0].pluginConfig[0].args.shape")
        .unwrap_or_else(|| panic!("no note on the shape: {:?}", conversion.notes));
    assert!(
        note.message.contains(
            "upstream 1.37's default, which berth applies too: [{utilization: 0, score: 10}, \
             {utilization: 100, score: 0}]"
        ),
        "{}",
        note.message
    );
    let resolved = resolve(&profile.spec, &registry).expect("resolves");
    assert!(
        resolved
            .plugins_at(ExtensionPoint::Score)
            .iter()
            .any(|p| p == "VolumeBinding"),
        "VolumeBinding scores, as in 1.37"
    );
}

/// v1 `SetDefaults_NodeResourcesFitArgs` and `SetDefaults_NodeResourcesBalancedAllocationArgs`
/// read a resource weight of 0 as the default 1; berth's args take 1..=100, so the
/// converted args say 1 and the configuration is not refused.
#[test]
fn a_zero_resource_weight_is_read_as_1_as_upstream_defaulting_does() {
    let registry = default_registry();
    let config = config(
        "v1",
        json!({"profiles": [{"schedulerName": "berth-default", "pluginConfig": [
            {"name": "NodeResourcesFit", "args": {"scoringStrategy": {
                "type": "MostAllocated",
                "resources": [{"name": "cpu", "weight": 0}, {"name": "memory", "weight": 3}],
            }}},
            {"name": "NodeResourcesBalancedAllocation", "args": {
                "resources": [{"name": "cpu", "weight": 0}, {"name": "memory"}],
            }},
        ]}]}),
    );
    let conversion = convert_with(&registry, &config);
    assert_eq!(conversion.unsupported, []);
    let profile = profile(&conversion, "berth-default");
    assert_eq!(
        profile.spec.plugin_config.get("nodeResourcesFit"),
        Some(&json!({"scoringStrategy": {
            "type": "MostAllocated",
            "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 3}],
        }}))
    );
    assert_eq!(
        profile
            .spec
            .plugin_config
            .get("nodeResourcesBalancedAllocation"),
        Some(&json!({"resources": [{"name": "cpu", "weight": 1}, {"name": "memory"}]}))
    );
    let noted: Vec<&str> = conversion
        .notes
        .iter()
        .filter(|n| n.message.contains("weight 0 written as 1"))
        .map(|n| n.path.as_str())
        .collect();
    assert_eq!(
        noted,
        [
            "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight",
            "profiles[0].pluginConfig[1].args.resources[0].weight",
        ]
    );
}

struct V1beta3VolumeScoringCase {
    name: &'static str,
    profile: Value,
    /// Whether the converted profile scores with VolumeBinding.
    scores: bool,
    /// Whether convert disabled it (with a note).
    noted: bool,
}

/// v1beta3's releases (1.23-1.28) scored with VolumeBinding only with the alpha
/// VolumeCapacityPriority gate on, which a `shape` shows (upstream refused a shape with
/// the gate off); berth scores by default, as 1.37 does. A converted v1beta3 profile
/// therefore scores with VolumeBinding only where it did.
#[test]
fn v1beta3_profiles_score_with_volume_binding_only_with_a_shape() {
    let cases = [
        V1beta3VolumeScoringCase {
            name: "defaults: no capacity scoring, as in 1.23-1.28",
            profile: json!({"schedulerName": "p"}),
            scores: false,
            noted: true,
        },
        V1beta3VolumeScoringCase {
            name: "a shape: the gate was on, the profile scores with it",
            profile: json!({"schedulerName": "p", "pluginConfig": [
                {"name": "VolumeBinding", "args": {"shape": [
                    {"utilization": 0, "score": 0}, {"utilization": 100, "score": 10},
                ]}},
            ]}),
            scores: true,
            noted: false,
        },
        V1beta3VolumeScoringCase {
            name: "Score disabled already: nothing to add",
            profile: json!({"schedulerName": "p", "plugins": {
                "score": {"disabled": [{"name": "*"}]},
            }}),
            scores: false,
            noted: false,
        },
    ];
    let registry = default_registry();
    for case in cases {
        let name = case.name;
        let config = json!({
            "apiVersion": "kubescheduler.config.k8s.io/v1beta3",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [case.profile],
        });
        let conversion = convert_with(&registry, &config);
        assert_eq!(conversion.unsupported, [], "{name}");
        let resolved = resolve(&profile(&conversion, "p").spec, &registry).expect("resolves");
        let scores = resolved
            .plugins_at(ExtensionPoint::Score)
            .iter()
            .any(|p| p == "VolumeBinding");
        assert_eq!(scores, case.scores, "{name}");
        let noted = conversion
            .notes
            .iter()
            .any(|n| n.message.contains(VOLUME_BINDING_UNSCORED));
        assert_eq!(noted, case.noted, "{name}");
    }
}
