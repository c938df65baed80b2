//! `berth-custom crds`: the CRDs of a binary with out-of-tree plugins type those plugins'
//! args, so the API server rejects wrong args at `kubectl apply` time.
//!
//! The schema is checked the way the API server checks it, structurally, with a JSON
//! Schema validator (`jsonschema`); CEL rules are only checked for presence here
//! (tests/simulate.rs shows one enforced by berth's local validation).

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

const BERTH_CUSTOM: &str = env!("CARGO_BIN_EXE_berth-custom");

/// The openAPIV3Schema of the SchedulerProfile CRD printed by `berth-custom crds`.
fn profile_schema() -> Value {
    let output = Command::new(BERTH_CUSTOM)
        .arg("crds")
        .output()
        .expect("berth-custom runs");
    assert!(
        output.status.success(),
        "berth-custom crds failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stream = String::from_utf8(output.stdout).expect("UTF-8 output");
    let crds: Vec<Value> = serde_saphyr::from_str_multiple(&stream).expect("a YAML stream");
    let crd = crds
        .into_iter()
        .find(|crd| crd["spec"]["names"]["kind"] == "SchedulerProfile")
        .expect("a SchedulerProfile CRD");
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone()
}

fn at<'a>(schema: &'a Value, pointer: &str) -> &'a Value {
    schema
        .pointer(pointer)
        .unwrap_or_else(|| panic!("no schema node at {pointer}"))
}

/// examples/custom-plugin/profile.yaml as JSON.
fn example_profile() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("profile.yaml");
    let text = std::fs::read_to_string(&path).expect("profile.yaml is readable");
    serde_saphyr::from_str(&text).expect("profile.yaml is YAML")
}

/// The instance paths the schema rejects in `profile`, e.g.
/// `/spec/pluginConfig/maxPodsPerZone/maxPods`.
fn rejected_paths(schema: &Value, profile: &Value) -> Vec<String> {
    let validator = jsonschema::validator_for(schema).expect("the CRD schema compiles");
    let mut paths: Vec<String> = validator
        .iter_errors(profile)
        .map(|error| error.instance_path().to_string())
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

#[test]
fn plugin_config_has_a_typed_property_per_args_taking_plugin() {
    let schema = profile_schema();
    let config = "/properties/spec/properties/pluginConfig/properties";

    let zone = at(&schema, &format!("{config}/maxPodsPerZone"));
    assert_eq!(zone["type"], "object");
    let fields = &zone["properties"];
    assert_eq!(fields["topologyKey"]["type"], "string");
    assert_eq!(
        fields["topologyKey"]["default"],
        "topology.kubernetes.io/zone"
    );
    assert_eq!(fields["groupLabel"]["type"], "string");
    assert_eq!(fields["maxPods"]["type"], "integer");
    assert_eq!(fields["maxPods"]["minimum"].as_f64(), Some(1.0));
    assert_eq!(fields["maxPods"]["maximum"].as_f64(), Some(1000.0));
    assert_eq!(fields["maxPods"]["default"], 2);
    assert_eq!(fields["exemptNamespaces"]["type"], "array");
    assert_eq!(fields["exemptNamespaces"]["items"]["type"], "string");
    assert_eq!(fields["exemptNamespaces"]["maxItems"].as_f64(), Some(64.0));
    assert_eq!(
        fields["nodesWithoutTopology"]["enum"],
        json!(["Reject", "Admit"])
    );
    assert_eq!(fields["enforce"]["type"], "boolean");
    assert_eq!(fields["enforce"]["default"], true);
    assert_eq!(
        zone["x-kubernetes-validations"],
        json!([{
            "rule": "self.groupLabel != self.topologyKey",
            "message": "groupLabel must differ from topologyKey",
            "fieldPath": ".groupLabel",
        }])
    );

    let prefer = at(&schema, &format!("{config}/preferNodes/properties/nodes"));
    assert_eq!(prefer["type"], "array");
    assert_eq!(prefer["items"]["type"], "string");
    assert_eq!(prefer["x-kubernetes-list-type"], "set");
    assert_eq!(prefer["maxItems"].as_f64(), Some(100.0));

    let in_flight = at(
        &schema,
        &format!("{config}/inFlightBindings/properties/maxPerNode"),
    );
    assert_eq!(in_flight["type"], "integer");
    assert_eq!(in_flight["minimum"].as_f64(), Some(1.0));
    assert_eq!(in_flight["default"], 4);
}

#[test]
fn plugin_names_are_accepted_only_where_the_plugins_run() {
    let schema = profile_schema();
    let names = |point: &str| {
        at(
            &schema,
            &format!("/properties/spec/properties/plugins/properties/{point}/properties/enabled/items/properties/name/enum"),
        )
        .as_array()
        .expect("an enum of names")
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect::<Vec<_>>()
    };
    let ours = ["MaxPodsPerZone", "PreferNodes", "InFlightBindings"];
    for name in ours {
        assert!(names("multiPoint").iter().any(|n| n == name), "{name}");
    }
    let has = |point: &str, name: &str| names(point).iter().any(|n| n == name);
    assert!(has("preFilter", "MaxPodsPerZone") && has("filter", "MaxPodsPerZone"));
    assert!(has("preBind", "MaxPodsPerZone") && !has("score", "MaxPodsPerZone"));
    assert!(has("score", "PreferNodes") && !has("filter", "PreferNodes"));
    assert!(has("reserve", "InFlightBindings") && has("postBind", "InFlightBindings"));
    assert!(!has("filter", "InFlightBindings"));
}

#[test]
fn the_schema_accepts_the_example_profile_and_rejects_wrong_args() {
    let schema = profile_schema();
    let profile = example_profile();
    assert_eq!(
        rejected_paths(&schema, &profile),
        Vec::<String>::new(),
        "profile.yaml is valid"
    );

    let config = "/spec/pluginConfig";
    // (case, pointer of the arg, wrong value): wrong types, out-of-range and unknown
    // enum values.
    let cases = [
        (
            "integer given as a word",
            "/maxPodsPerZone/maxPods",
            json!("two"),
        ),
        (
            "integer below the minimum",
            "/maxPodsPerZone/maxPods",
            json!(0),
        ),
        (
            "integer above the maximum",
            "/maxPodsPerZone/maxPods",
            json!(1001),
        ),
        (
            "boolean given as a string",
            "/maxPodsPerZone/enforce",
            json!("yes"),
        ),
        (
            "string given as a number",
            "/maxPodsPerZone/topologyKey",
            json!(7),
        ),
        (
            "unknown enum value",
            "/maxPodsPerZone/nodesWithoutTopology",
            json!("Maybe"),
        ),
        (
            "list given as a string",
            "/maxPodsPerZone/exemptNamespaces",
            json!("kube-system"),
        ),
        (
            "list of strings with a number",
            "/preferNodes/nodes",
            json!(["node-a", 3]),
        ),
        (
            "integer given as a float",
            "/inFlightBindings/maxPerNode",
            json!(1.5),
        ),
    ];
    for (name, pointer, value) in cases {
        let mut wrong = profile.clone();
        let field = format!("{config}{pointer}");
        *wrong
            .pointer_mut(&field)
            .unwrap_or_else(|| panic!("profile.yaml sets {field}")) = value;
        let rejected = rejected_paths(&schema, &wrong);
        assert!(
            rejected.iter().any(|path| path.starts_with(&field)),
            "case {name}: the schema should reject {field}, rejected {rejected:?}"
        );
    }
}
