//! The generated CRDs: the checked-in `crds/` is fresh, plugin names and args come from the
//! registry, and the schemas are ones the API server accepts (structural, list-map
//! conditions, int-or-string quantities, bounded lists, CEL rules that compile and do what
//! their messages say when kube-cel evaluates them).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use berth::cli::crds::crd_files;
use berth::framework::{
    ExtensionPoint, Handle, NoArgs, Plugin, PluginArgs, PluginError, PluginFactory, Registry,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::cel::{CompiledSchema, Validator, compile_schema, estimate_rule_cost};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const REGENERATE: &str = "run `cargo run -- crds --output-dir crds` and commit the result";

fn crds_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crds")
}

fn generated(registry: &Registry) -> Vec<CustomResourceDefinition> {
    berth::schema::crds(registry).expect("CRDs for the registry")
}

/// `(SchedulerProfile schema, PodGroup schema)` for the default registry, as JSON.
fn schemas(registry: &Registry) -> Vec<Value> {
    generated(registry)
        .iter()
        .map(|crd| {
            let schema = crd.spec.versions[0].schema.as_ref();
            serde_json::to_value(schema.and_then(|s| s.open_api_v3_schema.as_ref()))
                .expect("schema as JSON")
        })
        .collect()
}

fn at<'a>(schema: &'a Value, pointer: &str) -> &'a Value {
    schema
        .pointer(pointer)
        .unwrap_or_else(|| panic!("no schema node at {pointer}"))
}

fn plugin_set_fields() -> impl Iterator<Item = &'static str> {
    std::iter::once("multiPoint").chain(ExtensionPoint::ALL.map(ExtensionPoint::field_name))
}

#[test]
fn checked_in_crds_are_fresh() {
    let registry = berth::plugins::default_registry();
    let files = crd_files(&generated(&registry)).expect("YAML for the CRDs");
    for file in &files {
        let path = crds_dir().join(&file.file_name);
        let on_disk = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}; {REGENERATE}", path.display()));
        assert!(
            on_disk == file.yaml,
            "{} is stale: it differs from what the registry generates; {REGENERATE}",
            path.display()
        );
    }

    let expected: BTreeSet<String> = files.iter().map(|f| f.file_name.clone()).collect();
    let on_disk: BTreeSet<String> = std::fs::read_dir(crds_dir())
        .expect("crds/ exists")
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".yaml"))
        .collect();
    assert_eq!(
        on_disk, expected,
        "crds/ holds files no CRD generates; {REGENERATE}"
    );
}

#[test]
fn stdout_stream_is_the_files_joined_and_parses_back_to_the_crds() {
    let registry = berth::plugins::default_registry();
    let crds = generated(&registry);
    let files = crd_files(&crds).expect("YAML for the CRDs");
    let stream = berth::schema::crds_yaml(&registry).expect("YAML stream");
    let joined: Vec<&str> = files.iter().map(|f| f.yaml.as_str()).collect();
    assert_eq!(stream, joined.join("---\n"));

    let parsed: Vec<Value> = serde_saphyr::from_str_multiple(&stream).expect("valid YAML");
    let expected: Vec<Value> = crds
        .iter()
        .map(|crd| serde_json::to_value(crd).expect("CRD as JSON"))
        .collect();
    assert!(
        parsed == expected,
        "the YAML does not parse back to the generated CRDs"
    );
}

#[test]
fn plugin_names_are_an_enum_of_the_registry() {
    let registry = berth::plugins::default_registry();
    let profile = &schemas(&registry)[0];
    let names: Vec<&str> = registry.names();
    let sets = "/properties/spec/properties/plugins/properties";

    let multi_point = at(
        profile,
        &format!("{sets}/multiPoint/properties/enabled/items/properties/name/enum"),
    );
    assert_eq!(multi_point, &json!(names));

    let mut disabled = names.clone();
    disabled.push("*");
    for field in plugin_set_fields() {
        let pointer = format!("{sets}/{field}/properties/disabled/items/properties/name/enum");
        assert_eq!(at(profile, &pointer), &json!(disabled), "{field}.disabled");
    }

    for point in ExtensionPoint::ALL {
        let enabled = at(
            profile,
            &format!("{sets}/{}/properties/enabled", point.field_name()),
        );
        let implementing: Vec<&str> = registry
            .entries()
            .filter(|entry| entry.implements(point))
            .map(|entry| entry.name)
            .collect();
        if implementing.is_empty() {
            assert_eq!(
                enabled["maxItems"],
                json!(0),
                "{point}: no plugin implements it"
            );
        } else {
            let allowed = at(enabled, "/items/properties/name/enum");
            assert_eq!(allowed, &json!(implementing), "{point}.enabled");
        }
    }
}

#[test]
fn plugin_config_has_one_property_per_plugin_with_args() {
    let registry = berth::plugins::default_registry();
    let profile = &schemas(&registry)[0];
    let config = at(profile, "/properties/spec/properties/pluginConfig");
    assert_eq!(config["type"], "object");
    assert!(
        config.get("x-kubernetes-preserve-unknown-fields").is_none()
            && config.get("additionalProperties").is_none(),
        "unknown pluginConfig entries must be pruned, not kept"
    );

    let with_args: BTreeSet<&str> = registry
        .entries()
        .filter(|entry| entry.args.is_some())
        .map(|entry| entry.name)
        .collect();
    let properties: BTreeSet<String> = config
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default();
    assert_eq!(
        properties.len(),
        with_args.len(),
        "{properties:?} vs {with_args:?}"
    );
    for name in with_args {
        let field = lower_camel_of(name);
        assert!(
            properties.contains(&field),
            "pluginConfig.{field} (plugin {name}) is missing"
        );
        assert_eq!(
            config["properties"][&field]["type"], "object",
            "pluginConfig.{field}"
        );
    }
}

/// Independent of the registry's own helper: `NodeResourcesFit` -> `nodeResourcesFit`,
/// leading acronyms lowered as a whole (`QOSSort` -> `qosSort`).
fn lower_camel_of(name: &str) -> String {
    let upper = name.chars().take_while(|c| c.is_ascii_uppercase()).count();
    let lower = if upper > 1 && upper < name.len() {
        upper - 1
    } else {
        upper.max(1)
    };
    name[..lower].to_ascii_lowercase() + &name[lower..]
}

#[test]
fn schemas_are_structural() {
    for registry in [
        berth::plugins::default_registry(),
        registry_with_out_of_tree_plugin(),
    ] {
        for (crd, schema) in generated(&registry).iter().zip(schemas(&registry)) {
            let mut problems = Vec::new();
            walk(&schema, "", false, &mut problems);
            let name = crd.metadata.name.as_deref().unwrap_or_default();
            assert!(
                problems.is_empty(),
                "{name} is not structural:\n{}",
                problems.join("\n")
            );
        }
    }
}

/// The structural-schema rules of apiextensions v1 that generated schemas can break.
fn walk(node: &Value, path: &str, in_junctor: bool, problems: &mut Vec<String>) {
    let Some(object) = node.as_object() else {
        problems.push(format!("{path}: not a schema object"));
        return;
    };
    let is_true = |key: &str| object.get(key) == Some(&json!(true));
    if object.contains_key("$ref") {
        problems.push(format!("{path}: $ref"));
    }
    if object.contains_key("definitions") || object.contains_key("$defs") {
        problems.push(format!("{path}: definitions"));
    }
    let typed = object.get("type").and_then(Value::as_str).is_some();
    if !in_junctor
        && !typed
        && !is_true("x-kubernetes-int-or-string")
        && !is_true("x-kubernetes-preserve-unknown-fields")
    {
        problems.push(format!("{path}: no type"));
    }
    if object.get("type") == Some(&json!("object"))
        && object.contains_key("properties")
        && object.contains_key("additionalProperties")
    {
        problems.push(format!("{path}: properties with additionalProperties"));
    }
    for junctor in ["anyOf", "oneOf", "allOf"] {
        let Some(branches) = object.get(junctor) else {
            continue;
        };
        let int_or_string = is_true("x-kubernetes-int-or-string");
        for (i, branch) in branches.as_array().into_iter().flatten().enumerate() {
            let branch_path = format!("{path}/{junctor}/{i}");
            for key in [
                "type",
                "nullable",
                "default",
                "description",
                "additionalProperties",
            ] {
                let allowed = int_or_string && key == "type";
                if branch.get(key).is_some() && !allowed {
                    problems.push(format!("{branch_path}: {key} inside {junctor}"));
                }
            }
            walk(branch, &branch_path, true, problems);
        }
    }
    if let Some(properties) = object.get("properties").and_then(Value::as_object) {
        for (name, child) in properties {
            walk(child, &format!("{path}.{name}"), in_junctor, problems);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = object.get(key).filter(|child| child.is_object()) {
            walk(child, &format!("{path}.{key}"), in_junctor, problems);
        }
    }
}

#[test]
fn conditions_are_a_list_map_keyed_by_type() {
    for (schema, kind) in schemas(&berth::plugins::default_registry())
        .iter()
        .zip(["SchedulerProfile", "PodGroup"])
    {
        let conditions = at(schema, "/properties/status/properties/conditions");
        assert_eq!(conditions["type"], "array", "{kind}");
        assert_eq!(conditions["x-kubernetes-list-type"], "map", "{kind}");
        assert_eq!(
            conditions["x-kubernetes-list-map-keys"],
            json!(["type"]),
            "{kind}"
        );
        let required = conditions["items"]["required"]
            .as_array()
            .expect("required fields");
        assert!(
            required.contains(&json!("type")),
            "{kind}: a list-map key must be required"
        );
        assert_eq!(
            conditions["items"]["properties"]["type"]["type"], "string",
            "{kind}"
        );
    }
}

#[test]
fn names_columns_and_required_spec_are_as_documented() {
    let crds = generated(&berth::plugins::default_registry());
    let cases = [
        (
            "schedulerprofiles.berth.dev",
            "Cluster",
            "sprof",
            vec!["SCHEDULER", "ACCEPTED", "READY", "AGE"],
        ),
        (
            "podgroups.berth.dev",
            "Namespaced",
            "pg",
            vec!["PHASE", "MIN", "SCHEDULED", "RUNNING", "AGE"],
        ),
    ];
    for (crd, (name, scope, short_name, columns)) in crds.iter().zip(cases) {
        assert_eq!(crd.metadata.name.as_deref(), Some(name));
        assert_eq!(crd.spec.group, "berth.dev");
        assert_eq!(crd.spec.scope, scope, "{name}");
        assert_eq!(
            crd.spec.names.short_names,
            Some(vec![short_name.to_string()]),
            "{name}"
        );
        assert_eq!(
            crd.spec.names.categories,
            Some(vec!["berth".to_string()]),
            "{name}"
        );
        let version = &crd.spec.versions[0];
        assert_eq!(
            (version.name.as_str(), version.served, version.storage),
            ("v1alpha1", true, true)
        );
        assert!(
            version
                .subresources
                .as_ref()
                .is_some_and(|s| s.status.is_some()),
            "{name}: status subresource"
        );
        let printed: Vec<String> = version
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|column| column.name.to_uppercase())
            .collect();
        assert_eq!(printed, columns, "{name}");
        let schema = version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref());
        let required = schema.and_then(|s| s.required.clone()).unwrap_or_default();
        assert!(
            required.contains(&"spec".to_string()),
            "{name}: spec is required"
        );
    }
}

#[test]
fn the_smallest_profile_is_an_empty_spec() {
    let profile = &schemas(&berth::plugins::default_registry())[0];
    let spec_required = profile.pointer("/properties/spec/required");
    assert_eq!(spec_required, None, "`spec: {{}}` must be a valid profile");
}

#[test]
fn pod_group_quantities_accept_numbers_and_strings() {
    let pod_group = &schemas(&berth::plugins::default_registry())[1];
    let quantity = at(
        pod_group,
        "/properties/spec/properties/minResources/additionalProperties",
    );
    assert_eq!(quantity["x-kubernetes-int-or-string"], true);
    assert!(
        quantity.get("type").is_none(),
        "int-or-string must not also fix a type"
    );
    assert_eq!(
        at(pod_group, "/properties/spec/required"),
        &json!(["minMember"])
    );
}

#[test]
fn out_of_tree_plugin_args_are_typed_in_the_crd() {
    let profile = &schemas(&registry_with_out_of_tree_plugin())[0];
    let args = at(
        profile,
        "/properties/spec/properties/pluginConfig/properties/gpuPacking",
    );
    assert_eq!(args["type"], "object");
    assert_eq!(args["properties"]["maxGpusPerNode"]["type"], "integer");
    assert_eq!(args["properties"]["maxGpusPerNode"]["default"], 8);
    assert_eq!(
        args["properties"]["mode"]["enum"],
        json!(["Pack", "Spread"])
    );
    let score = at(
        profile,
        "/properties/spec/properties/plugins/properties/score/properties/enabled/items/properties/name/enum",
    );
    assert!(
        score
            .as_array()
            .is_some_and(|names| names.contains(&json!("GPUPacking")))
    );
}

/// Out-of-tree plugin, as a crate depending on berth would write it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", default)]
struct GpuPackingArgs {
    /// GPUs a node may hold before it scores 0.
    max_gpus_per_node: i32,
    mode: PackingMode,
    /// Per-resource weights.
    weights: std::collections::BTreeMap<String, i64>,
}

impl Default for GpuPackingArgs {
    fn default() -> Self {
        GpuPackingArgs {
            max_gpus_per_node: 8,
            mode: PackingMode::Pack,
            weights: Default::default(),
        }
    }
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
enum PackingMode {
    Pack,
    Spread,
}

impl PluginArgs for GpuPackingArgs {}

struct GpuPacking;

impl Plugin for GpuPacking {
    fn name(&self) -> &str {
        Self::NAME
    }
}

impl PluginFactory for GpuPacking {
    const NAME: &'static str = "GPUPacking";
    const POINTS: &'static [ExtensionPoint] = &[ExtensionPoint::Score];
    type Args = GpuPackingArgs;

    fn build(_: GpuPackingArgs, _: &Handle) -> Result<Self, PluginError> {
        Ok(GpuPacking)
    }
}

fn registry_with_out_of_tree_plugin() -> Registry {
    let mut registry = berth::plugins::default_registry();
    registry.register::<GpuPacking>();
    registry
}

/// A second QueueSort plugin, so a profile can enable two different ones.
struct FifoSort;

impl Plugin for FifoSort {
    fn name(&self) -> &str {
        Self::NAME
    }
}

impl PluginFactory for FifoSort {
    const NAME: &'static str = "FifoSort";
    const POINTS: &'static [ExtensionPoint] = &[ExtensionPoint::QueueSort];
    type Args = NoArgs;

    fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
        Ok(FifoSort)
    }
}

fn registry_with_second_queue_sort() -> Registry {
    let mut registry = berth::plugins::default_registry();
    registry.register::<FifoSort>();
    registry
}

/// Every `x-kubernetes-validations` list in `schema`, with the JSON pointer of its node.
fn rule_nodes<'a>(schema: &'a Value, pointer: &str, found: &mut Vec<(String, &'a Value)>) {
    if let Some(rules) = schema.get("x-kubernetes-validations") {
        found.push((pointer.to_string(), rules));
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, child) in properties {
            rule_nodes(child, &format!("{pointer}/properties/{name}"), found);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = schema.get(key).filter(|child| child.is_object()) {
            rule_nodes(child, &format!("{pointer}/{key}"), found);
        }
    }
}

fn compilation_errors(compiled: &CompiledSchema, errors: &mut Vec<String>) {
    errors.extend(
        compiled
            .compilation_errors()
            .iter()
            .map(ToString::to_string),
    );
    let children = compiled
        .properties
        .values()
        .chain(compiled.items.as_deref())
        .chain(compiled.additional_properties.as_deref());
    for child in children {
        compilation_errors(child, errors);
    }
}

const SPEC: &str = "/properties/spec/properties";
const FIT: &str = "/properties/spec/properties/pluginConfig/properties/nodeResourcesFit/properties";

#[test]
fn every_cel_rule_compiles_with_kube_cel_and_has_bounded_inputs() {
    for registry in [
        berth::plugins::default_registry(),
        registry_with_out_of_tree_plugin(),
    ] {
        for schema in schemas(&registry) {
            let mut errors = Vec::new();
            compilation_errors(&compile_schema(&schema), &mut errors);
            assert_eq!(errors, Vec::<String>::new(), "rules that do not compile");

            let mut nodes = Vec::new();
            rule_nodes(&schema, "", &mut nodes);
            for (pointer, rules) in nodes {
                let node = compile_schema(at(&schema, &pointer));
                for rule in rules.as_array().expect("a list of rules") {
                    let text = rule["rule"].as_str().expect("rule text");
                    assert!(
                        rule["message"].as_str().is_some_and(|m| !m.is_empty()),
                        "{pointer}: rule {text:?} has no message"
                    );
                    // kube-cel's coarse estimate: over budget, or iterating an unbounded list.
                    let warnings = estimate_rule_cost(text, &node);
                    assert!(warnings.is_empty(), "{pointer}: {warnings:?}");
                }
            }
        }
    }
}

#[test]
fn cel_rules_sit_where_the_design_puts_them() {
    let profile = &schemas(&berth::plugins::default_registry())[0];
    let mut nodes = Vec::new();
    rule_nodes(profile, "", &mut nodes);
    let found: BTreeSet<String> = nodes.into_iter().map(|(pointer, _)| pointer).collect();
    let mut expected: BTreeSet<String> = plugin_set_fields()
        .map(|field| format!("{SPEC}/plugins/properties/{field}/properties/enabled"))
        .collect();
    expected.extend([
        "/properties/spec".to_string(),
        format!("{SPEC}/plugins/properties/queueSort"),
        format!("{FIT}/ignoredResourceGroups"),
        format!("{FIT}/scoringStrategy"),
        format!("{FIT}/scoringStrategy/properties/requestedToCapacityRatio/properties/shape"),
        // NodeResourcesBalancedAllocation: unique resource names, every weight 1.
        format!(
            "{SPEC}/pluginConfig/properties/nodeResourcesBalancedAllocation/properties/resources"
        ),
        // PodTopologySpread: constraints require `defaultingType: List`; no duplicate
        // (topologyKey, whenUnsatisfiable); no labelSelector in a default constraint.
        format!("{SPEC}/pluginConfig/properties/podTopologySpread"),
        format!("{SPEC}/pluginConfig/properties/podTopologySpread/properties/defaultConstraints"),
        format!(
            "{SPEC}/pluginConfig/properties/podTopologySpread/properties/defaultConstraints/items"
        ),
    ]);
    assert_eq!(found, expected);
}

/// Arrays without `maxItems`, as JSON pointers.
fn unbounded_lists(schema: &Value, pointer: &str, found: &mut Vec<String>) {
    if schema.get("type") == Some(&json!("array")) && schema.get("maxItems").is_none() {
        found.push(pointer.to_string());
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, child) in properties {
            unbounded_lists(child, &format!("{pointer}/properties/{name}"), found);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = schema.get(key).filter(|child| child.is_object()) {
            unbounded_lists(child, &format!("{pointer}/{key}"), found);
        }
    }
}

/// Lists that may stay unbounded: k8s-openapi's own types embedded in plugin args — the
/// NodeAffinity of NodeAffinity's `addedAffinity`, and the LabelSelector of a
/// PodTopologySpread default constraint (which a CEL rule forbids outright). No CEL rule
/// iterates them, so they cost the API server's CEL budget nothing (docs/architecture.md
/// §2 asks for maxItems on lists CEL iterates).
const UNBOUNDED_ALLOWED: [&str; 2] = [
    "/properties/spec/properties/pluginConfig/properties/nodeAffinity/properties/addedAffinity/",
    "/properties/spec/properties/pluginConfig/properties/podTopologySpread/properties/defaultConstraints/items/properties/labelSelector/",
];

#[test]
fn every_list_has_max_items() {
    for schema in schemas(&berth::plugins::default_registry()) {
        let mut unbounded = Vec::new();
        unbounded_lists(&schema, "", &mut unbounded);
        unbounded.retain(|pointer| !UNBOUNDED_ALLOWED.iter().any(|p| pointer.starts_with(p)));
        assert_eq!(unbounded, Vec::<String>::new());
    }
}

#[test]
fn bounds_are_in_the_schema() {
    let registry = berth::plugins::default_registry();
    let all = schemas(&registry);
    let (profile, pod_group) = (&all[0], &all[1]);
    let range = |schema: &Value, pointer: &str| {
        let node = at(schema, pointer);
        (node.get("minimum").cloned(), node.get("maximum").cloned())
    };
    let (one, hundred, zero) = (Some(json!(1.0)), Some(json!(100.0)), Some(json!(0.0)));
    for field in plugin_set_fields() {
        let set = format!("{SPEC}/plugins/properties/{field}/properties");
        let enabled = at(profile, &format!("{set}/enabled"));
        if enabled["maxItems"] != json!(0) {
            assert_eq!(enabled["maxItems"], 64, "{field}.enabled");
            let weight = format!("{set}/enabled/items/properties/weight");
            assert_eq!(range(profile, &weight), (one.clone(), hundred.clone()));
        }
        assert_eq!(at(profile, &format!("{set}/disabled"))["maxItems"], 64);
    }
    let cases = [
        ("percentageOfNodesToScore", (zero.clone(), hundred.clone())),
        ("podInitialBackoffSeconds", (one.clone(), None)),
        ("podMaxBackoffSeconds", (one.clone(), None)),
    ];
    for field in ["podInitialBackoffSeconds", "podMaxBackoffSeconds"] {
        // A kept `null` would reach the backoff rule's arithmetic; non-nullable drops it.
        let node = at(profile, &format!("{SPEC}/{field}"));
        assert_eq!(node.get("nullable"), None, "{field}");
    }
    for (field, expected) in cases {
        assert_eq!(
            range(profile, &format!("{SPEC}/{field}")),
            expected,
            "{field}"
        );
    }
    let strategy = format!("{FIT}/scoringStrategy/properties");
    assert_eq!(
        at(profile, &format!("{strategy}/resources"))["maxItems"],
        32
    );
    assert_eq!(
        range(
            profile,
            &format!("{strategy}/resources/items/properties/weight")
        ),
        (one.clone(), hundred.clone())
    );
    let shape = format!("{strategy}/requestedToCapacityRatio/properties/shape");
    assert_eq!(at(profile, &shape)["minItems"], 1);
    assert_eq!(at(profile, &shape)["maxItems"], 16);
    let point = format!("{shape}/items/properties");
    assert_eq!(
        range(profile, &format!("{point}/utilization")),
        (zero.clone(), hundred)
    );
    assert_eq!(
        range(profile, &format!("{point}/score")),
        (zero, Some(json!(10.0)))
    );
    assert_eq!(
        at(profile, &format!("{strategy}/type"))["enum"],
        json!([
            "LeastAllocated",
            "MostAllocated",
            "RequestedToCapacityRatio"
        ])
    );
    let pod_spec = "/properties/spec/properties";
    for field in ["minMember", "scheduleTimeoutSeconds"] {
        assert_eq!(
            range(pod_group, &format!("{pod_spec}/{field}")),
            (one.clone(), None),
            "PodGroup {field}"
        );
    }
}

#[test]
fn scheduler_name_is_a_dns_subdomain() {
    let profile = &schemas(&berth::plugins::default_registry())[0];
    let name = at(profile, &format!("{SPEC}/schedulerName"));
    assert_eq!(name["maxLength"], 253);
    // The pattern is checked for what it accepts, not compared with a copy of itself.
    let pattern = json!({"type": "string", "pattern": name["pattern"]});
    let long_label = "a".repeat(63);
    for valid in ["batch", "gpu-1", "team.batch", "0", long_label.as_str()] {
        assert!(jsonschema::is_valid(&pattern, &json!(valid)), "{valid}");
    }
    for invalid in ["", "Batch", "-batch", "batch-", "a..b", "a_b", "a/b", ".a"] {
        assert!(
            !jsonschema::is_valid(&pattern, &json!(invalid)),
            "{invalid}"
        );
    }
}

/// `(case, spec, expected error as (path, message fragment))`.
type RuleCase = (&'static str, Value, Option<(&'static str, &'static str)>);

fn rule_cases() -> Vec<RuleCase> {
    let backoff = "must be greater than or equal to podInitialBackoffSeconds";
    let fit = |args: Value| json!({"pluginConfig": {"nodeResourcesFit": args}});
    let rtcr = |shape: Value| {
        fit(json!({"scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "requestedToCapacityRatio": {"shape": shape},
        }}))
    };
    let point = |utilization: i64, score: i64| json!({"utilization": utilization, "score": score});
    let shape_path =
        "spec.pluginConfig.nodeResourcesFit.scoringStrategy.requestedToCapacityRatio.shape";
    vec![
        ("the smallest profile", json!({}), None),
        (
            "initial backoff up to the default max",
            json!({"podInitialBackoffSeconds": 10}),
            None,
        ),
        (
            "initial backoff above the default max",
            json!({"podInitialBackoffSeconds": 11}),
            Some(("spec.podMaxBackoffSeconds", backoff)),
        ),
        (
            "max backoff below initial",
            json!({"podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 4}),
            Some(("spec.podMaxBackoffSeconds", backoff)),
        ),
        (
            "max backoff at the default initial",
            json!({"podMaxBackoffSeconds": 1}),
            None,
        ),
        (
            "both backoffs raised",
            json!({"podInitialBackoffSeconds": 20, "podMaxBackoffSeconds": 20}),
            None,
        ),
        (
            "one queue sort plugin",
            json!({"plugins": {"queueSort": {
                "enabled": [{"name": "FifoSort"}], "disabled": [{"name": "*"}],
            }}}),
            None,
        ),
        (
            "two queue sort plugins",
            json!({"plugins": {"queueSort": {
                "enabled": [{"name": "PrioritySort"}, {"name": "FifoSort"}],
            }}}),
            Some((
                "spec.plugins.queueSort.enabled",
                "only one queue sort plugin",
            )),
        ),
        (
            "a score plugin enabled twice",
            json!({"plugins": {"score": {"enabled": [
                {"name": "NodeResourcesFit", "weight": 2}, {"name": "NodeResourcesFit"},
            ]}}}),
            Some((
                "spec.plugins.score.enabled",
                "only once per extension point",
            )),
        ),
        (
            "a plugin enabled at multiPoint and at score",
            json!({"plugins": {
                "multiPoint": {"enabled": [{"name": "NodeResourcesFit"}]},
                "score": {"enabled": [{"name": "NodeResourcesFit", "weight": 5}]},
            }}),
            None,
        ),
        (
            "RequestedToCapacityRatio without its parameters",
            fit(json!({"scoringStrategy": {"type": "RequestedToCapacityRatio"}})),
            Some((
                "spec.pluginConfig.nodeResourcesFit.scoringStrategy.requestedToCapacityRatio",
                "required when type is RequestedToCapacityRatio",
            )),
        ),
        (
            "MostAllocated needs no shape",
            fit(json!({"scoringStrategy": {"type": "MostAllocated"}})),
            None,
        ),
        (
            "increasing shape",
            rtcr(json!([point(0, 0), point(50, 3), point(100, 10)])),
            None,
        ),
        (
            "shape with a repeated utilization",
            rtcr(json!([point(0, 0), point(50, 3), point(50, 10)])),
            Some((shape_path, "strictly increasing")),
        ),
        (
            "decreasing shape",
            rtcr(json!([point(100, 10), point(0, 0)])),
            Some((shape_path, "strictly increasing")),
        ),
        (
            "resource group",
            fit(json!({"ignoredResourceGroups": ["example.com"]})),
            None,
        ),
        (
            "resource group with a '/'",
            fit(json!({"ignoredResourceGroups": ["example.com", "example.com/foo"]})),
            Some((
                "spec.pluginConfig.nodeResourcesFit.ignoredResourceGroups",
                "cannot contain '/'",
            )),
        ),
    ]
}

#[test]
fn cel_rules_accept_valid_and_reject_invalid_profiles() {
    let schema = &schemas(&registry_with_second_queue_sort())[0];
    let validator = Validator::new();
    for (case, spec, expected) in rule_cases() {
        let profile = json!({
            "apiVersion": "berth.dev/v1alpha1",
            "kind": "SchedulerProfile",
            "metadata": {"name": "batch"},
            "spec": spec,
        });
        let errors: Vec<(String, String)> = match validator.validate(schema, &profile, None) {
            Ok(()) => Vec::new(),
            Err(errors) => errors
                .iter()
                .map(|e| (e.field_path.clone(), e.message.clone()))
                .collect(),
        };
        match expected {
            None => assert_eq!(errors, Vec::new(), "{case}"),
            Some((path, fragment)) => {
                assert_eq!(errors.len(), 1, "{case}: {errors:?}");
                assert_eq!(errors[0].0, path, "{case}");
                assert!(errors[0].1.contains(fragment), "{case}: {errors:?}");
            }
        }
    }
}

#[test]
fn the_backoff_rule_uses_the_documented_defaults() {
    use berth::api::SchedulerProfileSpec as Spec;
    let schema = &schemas(&berth::plugins::default_registry())[0];
    let rejects = |spec: Value| {
        let profile =
            json!({"apiVersion": "berth.dev/v1alpha1", "kind": "SchedulerProfile", "spec": spec});
        Validator::new().validate(schema, &profile, None).is_err()
    };
    let max = Spec::DEFAULT_MAX_BACKOFF_SECONDS;
    let initial = Spec::DEFAULT_INITIAL_BACKOFF_SECONDS;
    assert!(!rejects(json!({"podInitialBackoffSeconds": max})));
    assert!(rejects(json!({"podInitialBackoffSeconds": max + 1})));
    assert!(!rejects(json!({"podMaxBackoffSeconds": initial})));
    assert!(rejects(json!({"podMaxBackoffSeconds": initial - 1})));
}
