//! CRD generation: the output of `#[derive(CustomResource)]`, enriched from the plugin
//! registry so that the API server itself rejects unknown plugin names and bad plugin args
//! at `kubectl apply` time.
//!
//! What the registry adds to the `SchedulerProfile` schema:
//!
//! - `spec.plugins.multiPoint.enabled[].name`: an `enum` of every registered plugin, since
//!   `multiPoint` enables a plugin wherever it runs.
//! - `spec.plugins.<point>.enabled[].name`: only the plugins that implement `<point>`.
//!   Upstream kube-scheduler refuses to start when a plugin is enabled at a point it does
//!   not extend ("plugin X does not extend Y plugin"); narrowing the enum moves that error
//!   to `kubectl apply`. A point no registered plugin implements gets `maxItems: 0`
//!   instead, because an empty `enum` would accept any name.
//! - `spec.plugins.<point>.disabled[].name`: every registered plugin plus `"*"`, at every
//!   point. Upstream ignores disabling a plugin where it does not run, so this is not
//!   narrowed: a profile written against the default set stays valid as plugins change.
//! - `spec.pluginConfig`: one optional property per plugin with args, named
//!   [`PluginEntry::config_field`](crate::framework::PluginEntry::config_field), typed with the args schema. Unknown properties are
//!   pruned (no `x-kubernetes-preserve-unknown-fields`), so a misspelt plugin is dropped
//!   rather than silently kept.
//!
//! - `spec.plugins.queueSort`: the CEL rule "at most one enabled plugin". It is injected
//!   here rather than written on [`PluginSet`](crate::api::PluginSet), which every point shares.
//!
//! ## Validation the API server runs
//!
//! Bounds, enums and patterns come from `#[schemars(...)]` attributes on the API and args
//! types; cross-field checks are CEL rules (`x-kubernetes-validations`) on the same types,
//! so `berth simulate` and the API server evaluate one definition. Each rule carries a
//! `message`, and a cross-field rule a `fieldPath`, so the error names the offending field.
//! The rules of the profile itself:
//!
//! | rule at | checks | reported at |
//! |---|---|---|
//! | `spec` | `podMaxBackoffSeconds >= podInitialBackoffSeconds`, absent fields as their defaults (1, 10) | `spec.podMaxBackoffSeconds` |
//! | `spec.plugins.<point>.enabled` | no plugin listed twice (upstream fails with "already registered") | the list |
//! | `spec.plugins.queueSort` | at most one enabled plugin | `spec.plugins.queueSort.enabled` |
//!
//! A plugin's own bounds and rules live on its args type and reach
//! `spec.pluginConfig.<plugin>` with the args schema; they are not restated here.
//! `berth plugins NAME` and `docs/plugins.md`, rendered from the same schemas, list each
//! plugin's constraints and CEL rules.
//!
//! The two backoff fields are not `nullable`, unlike other optional fields: the API server
//! then drops an explicit `null` (serde reads it as unset anyway) instead of handing it to
//! the backoff rule's arithmetic, where `has()` would be true and the comparison an error.
//!
//! Bounds of the profile: score weights (`plugins.*.enabled[].weight`) 1..=100;
//! `percentageOfNodesToScore` 0..=100; backoff seconds >= 1; PodGroup `minMember` and
//! `scheduleTimeoutSeconds` >= 1; `schedulerName` a DNS-1123 subdomain (253 characters,
//! upstream pattern).
//!
//! Every list has a `maxItems`, chosen generous but finite, because the API server costs
//! each CEL rule against the largest list the schema allows and refuses a CRD whose rules
//! could exceed its budget: `MAX_PLUGINS_PER_SET` (64) per `enabled`/`disabled`,
//! `MAX_EFFECTIVE_PLUGINS` (256) per status plugin list, `MAX_CONDITIONS` (16)
//! conditions, and a bound on every list of every args type. Strings a rule reads have a
//! `maxLength` for the same reason.
//!
//! Left to local semantic validation (`PluginArgs::validate` and the profile checks that
//! need the resolved plugin lists): a plugin enabled where the resolved profile needs
//! exactly one QueueSort and at least one Bind; what a schema cannot say about a value
//! (the length of a qualified name's prefix beyond the overall `maxLength`, for
//! instance); args for a plugin that is not enabled (a warning).
//!
//! ### A CEL rule on plugin args
//!
//! A plugin author, in-tree or out-of-tree, adds a rule to the args type itself; the
//! registry copies the args schema into `spec.pluginConfig.<plugin>` with the rule:
//!
//! ```ignore
//! #[derive(Clone, Default, Serialize, Deserialize, JsonSchema)]
//! #[serde(rename_all = "camelCase", default)]
//! #[schemars(extend("x-kubernetes-validations" = [{
//!     "rule": "self.maxPods >= self.minPods",
//!     "message": "must be at least minPods",
//!     "fieldPath": ".maxPods",
//! }]))]
//! struct MyArgs {
//!     #[schemars(range(min = 1))]
//!     min_pods: i32,
//!     max_pods: i32,
//!     /// A rule that iterates a list needs `maxItems` on it, and `maxLength` on strings.
//!     #[schemars(
//!         length(max = 16),
//!         inner(length(max = 253)),
//!         extend("x-kubernetes-validations" = [{
//!             "rule": "self.all(n, self.exists_one(m, m == n))",
//!             "message": "must not name a node twice",
//!         }])
//!     )]
//!     preferred_nodes: Vec<String>,
//! }
//! ```
//!
//! On a field, `extend` puts the rule on that field's schema (`self` is the field). Rules
//! must stay within the API server's cost budget: bound every list and string they
//! iterate. `tests/crds.rs` compiles every rule of the default registry with kube-cel.
//!
//! ## Structural schemas
//!
//! Args schemas are generated with the settings and transforms kube-derive uses for the
//! rest of the CRD (inlined subschemas, `nullable`, kube-core's structural rewriter), then
//! checked against the structural-schema rules of apiextensions v1. An args type that
//! cannot be expressed (a recursive type needs `$ref`, for instance) is a [`CrdError`]
//! naming the offending schema path (`.../pluginConfig/properties/<plugin>/...`), not a CRD
//! the API server rejects later. Like kube-derive, kube-core's rewriter panics on enums
//! whose variants give one property two different schemas; that is a bug in the args type,
//! caught by the first `berth crds` or test run.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};
use kube::CustomResourceExt;
use kube::core::Rule;
use kube::core::schema::{OptionalEnum, OptionalIntOrString, StructuralSchemaRewriter};
use schemars::SchemaGenerator;
use schemars::generate::SchemaSettings;
use schemars::transform::AddNullable;
use serde_json::{Map, Value, json};

use crate::api::{ExtensionPoint, PodGroup, SchedulerProfile};
use crate::framework::Registry;

/// Why the CRDs could not be generated or rendered.
#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    /// The derive output lacks a node the enrichment expects; the API types and this
    /// module disagree.
    #[error(
        "CRD {crd}: the generated schema has no node at {pointer}; schema::crd is out of date with the API types"
    )]
    MissingSchemaNode { crd: String, pointer: String },
    /// A schema did not survive the round trip through `JSONSchemaProps`.
    #[error("CRD {crd}: the schema is not a valid JSONSchemaProps: {source}")]
    SchemaProps {
        crd: String,
        source: serde_json::Error,
    },
    /// The schema breaks the structural-schema rules the API server enforces.
    #[error(
        "CRD {crd}: the schema is not structural, the API server would reject it:\n  {}\n\
         Plugin args types must be plain, non-recursive serde structs and enums.",
        problems.join("\n  ")
    )]
    NotStructural { crd: String, problems: Vec<String> },
    /// YAML serialization failed.
    #[error("CRD {crd}: cannot render YAML: {source}")]
    Yaml {
        crd: String,
        source: serde_saphyr::SerializeError,
    },
}

/// Both CRDs (SchedulerProfile, PodGroup). The SchedulerProfile schema is enriched from
/// `registry`: `enum`s of plugin names in `spec.plugins` (narrowed per extension point for
/// `enabled`, plus `"*"` for `disabled`) and one typed `spec.pluginConfig` property per
/// plugin with args. Fails when an args schema cannot be made structural.
pub fn crds(registry: &Registry) -> Result<Vec<CustomResourceDefinition>, CrdError> {
    let mut profile = SchedulerProfile::crd();
    enrich_schema(&mut profile, |schema| {
        enrich_profile_schema(schema, registry)
    })?;
    Ok(vec![profile, pod_group_crd()?])
}

/// The PodGroup CRD, which does not depend on the registry.
pub(crate) fn pod_group_crd() -> Result<CustomResourceDefinition, CrdError> {
    let mut pod_group = PodGroup::crd();
    enrich_schema(&mut pod_group, |_| Ok(()))?;
    Ok(pod_group)
}

/// The CRDs as one multi-document YAML stream, as `berth crds` prints it: each CRD
/// rendered with `serde_saphyr::to_string` (default options), joined by `---` lines.
/// Deterministic: schema maps are ordered by key.
pub fn crds_yaml(registry: &Registry) -> Result<String, CrdError> {
    let documents = crds(registry)?
        .iter()
        .map(crd_yaml)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(documents.join("---\n"))
}

/// One CRD as a YAML document.
fn crd_yaml(crd: &CustomResourceDefinition) -> Result<String, CrdError> {
    serde_saphyr::to_string(crd).map_err(|source| CrdError::Yaml {
        crd: crd_name(crd),
        source,
    })
}

fn crd_name(crd: &CustomResourceDefinition) -> String {
    crd.metadata.name.clone().unwrap_or_default()
}

/// Applies `edit` to the (single) version's schema as JSON, checks that the result is
/// structural and stores it back.
fn enrich_schema(
    crd: &mut CustomResourceDefinition,
    mut edit: impl FnMut(&mut Value) -> Result<(), String>,
) -> Result<(), CrdError> {
    let name = crd_name(crd);
    for version in &mut crd.spec.versions {
        let Some(props) = version
            .schema
            .as_mut()
            .and_then(|validation| validation.open_api_v3_schema.as_mut())
        else {
            return Err(CrdError::MissingSchemaNode {
                crd: name,
                pointer: "/openAPIV3Schema".into(),
            });
        };
        let schema_error = |source| CrdError::SchemaProps {
            crd: name.clone(),
            source,
        };
        let mut schema = serde_json::to_value(&*props).map_err(schema_error)?;
        edit(&mut schema).map_err(|pointer| CrdError::MissingSchemaNode {
            crd: name.clone(),
            pointer,
        })?;
        let problems = structural_problems(&schema);
        if !problems.is_empty() {
            return Err(CrdError::NotStructural {
                crd: name,
                problems,
            });
        }
        *props = serde_json::from_value::<JSONSchemaProps>(schema).map_err(schema_error)?;
    }
    Ok(())
}

/// Plugin-name enums and typed `pluginConfig`. Errors are JSON pointers of missing nodes.
fn enrich_profile_schema(schema: &mut Value, registry: &Registry) -> Result<(), String> {
    let all_names = registry.names();
    let mut disabled_names = all_names.clone();
    disabled_names.push("*");
    let specific_points = ExtensionPoint::ALL.map(|point| {
        let implementing = registry
            .entries()
            .filter(|entry| entry.implements(point))
            .map(|entry| entry.name)
            .collect::<Vec<_>>();
        (point.field_name(), implementing)
    });
    let points = std::iter::once(("multiPoint", all_names)).chain(specific_points);
    for (field, enabled_names) in points {
        let set = format!("/properties/spec/properties/plugins/properties/{field}/properties");
        restrict_names(schema, &format!("{set}/enabled"), &enabled_names)?;
        restrict_names(schema, &format!("{set}/disabled"), &disabled_names)?;
    }
    // The backoff rule does arithmetic on these fields, and `has()` is true for an explicit
    // `null`, which a nullable field keeps. Without `nullable` the API server drops the null
    // (as serde reads it: unset) before the rule runs.
    for field in ["podInitialBackoffSeconds", "podMaxBackoffSeconds"] {
        node_object_mut(schema, &format!("/properties/spec/properties/{field}"))?
            .remove("nullable");
    }
    add_rule(
        schema,
        "/properties/spec/properties/plugins/properties/queueSort",
        // Upstream `validateCommonQueueSort`: "only one queue sort plugin can be enabled".
        Rule::new("!has(self.enabled) || size(self.enabled) <= 1")
            .message("only one queue sort plugin can be enabled")
            .field_path(".enabled"),
    )?;

    let plugin_config = node_mut(schema, "/properties/spec/properties/pluginConfig")?;
    let properties = plugin_config_properties(registry);
    let Some(plugin_config) = plugin_config.as_object_mut() else {
        return Err("/properties/spec/properties/pluginConfig".into());
    };
    plugin_config.insert("type".into(), json!("object"));
    plugin_config.remove("additionalProperties");
    plugin_config.remove("x-kubernetes-preserve-unknown-fields");
    if !properties.is_empty() {
        plugin_config.insert("properties".into(), Value::Object(properties));
    }
    Ok(())
}

/// Appends a CEL rule to the `x-kubernetes-validations` of the node at `pointer`.
fn add_rule(schema: &mut Value, pointer: &str, rule: Rule) -> Result<(), String> {
    let node = node_object_mut(schema, pointer)?;
    let rule = serde_json::to_value(rule).map_err(|_| pointer.to_string())?;
    match node
        .entry("x-kubernetes-validations")
        .or_insert_with(|| json!([]))
    {
        Value::Array(rules) => rules.push(rule),
        _ => return Err(format!("{pointer}/x-kubernetes-validations")),
    }
    Ok(())
}

fn node_mut<'a>(schema: &'a mut Value, pointer: &str) -> Result<&'a mut Value, String> {
    schema
        .pointer_mut(pointer)
        .ok_or_else(|| pointer.to_string())
}

/// Restricts `<list>[].name` to `names`; an empty `names` means the list must be empty.
/// The name also gets the `maxLength` of the longest name, which bounds the cost the API
/// server estimates for CEL rules comparing names.
fn restrict_names(schema: &mut Value, list: &str, names: &[&str]) -> Result<(), String> {
    if names.is_empty() {
        node_object_mut(schema, list)?.insert("maxItems".into(), json!(0));
        return Ok(());
    }
    let name = node_object_mut(schema, &format!("{list}/items/properties/name"))?;
    name.insert("enum".into(), json!(names));
    let longest = names
        .iter()
        .map(|name| name.len())
        .max()
        .unwrap_or_default();
    name.insert("maxLength".into(), json!(longest));
    Ok(())
}

fn node_object_mut<'a>(
    schema: &'a mut Value,
    pointer: &str,
) -> Result<&'a mut Map<String, Value>, String> {
    node_mut(schema, pointer)?
        .as_object_mut()
        .ok_or_else(|| pointer.to_string())
}

/// One property per plugin with args, typed with the args schema.
fn plugin_config_properties(registry: &Registry) -> Map<String, Value> {
    let mut generator = schema_generator();
    registry
        .entries()
        .filter_map(|entry| Some((entry, entry.args.as_ref()?)))
        .map(|(entry, args)| {
            let mut schema = args.schema(&mut generator);
            for transform in generator.transforms_mut() {
                transform.transform(&mut schema);
            }
            let mut schema = schema.to_value();
            preserve_untyped_values(&mut schema);
            (entry.config_field(), schema)
        })
        .collect()
}

/// A generator configured as kube-derive configures the one behind `CustomResourceExt::crd`.
fn schema_generator() -> SchemaGenerator {
    SchemaSettings::openapi3()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .with_transform(AddNullable::default())
        .with_transform(StructuralSchemaRewriter)
        .with_transform(OptionalEnum)
        .with_transform(OptionalIntOrString)
        .into_generator()
}

/// Marks untyped nodes (e.g. a `serde_json::Value` field, schema `{}`) with
/// `x-kubernetes-preserve-unknown-fields`, the structural way to say "any value".
fn preserve_untyped_values(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    let untyped = [
        "type",
        "x-kubernetes-int-or-string",
        "$ref",
        "anyOf",
        "oneOf",
        "allOf",
    ]
    .iter()
    .all(|key| !object.contains_key(*key));
    if untyped {
        object.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
    }
    for child in child_schemas_mut(object) {
        preserve_untyped_values(child);
    }
}

fn child_schemas_mut(object: &mut Map<String, Value>) -> Vec<&mut Value> {
    let mut children = Vec::new();
    for (key, value) in object.iter_mut() {
        match (key.as_str(), value) {
            ("properties", Value::Object(properties)) => children.extend(properties.values_mut()),
            ("items" | "additionalProperties", child @ Value::Object(_)) => children.push(child),
            _ => {}
        }
    }
    children
}

/// Keywords a schema inside `anyOf`/`oneOf`/`allOf`/`not` must not set.
const FORBIDDEN_IN_JUNCTORS: [&str; 5] = [
    "type",
    "description",
    "default",
    "additionalProperties",
    "nullable",
];

/// Violations of the structural-schema rules (apiextensions v1) that generated schemas
/// can run into, as `<JSON pointer>: <problem>`.
fn structural_problems(schema: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    check_node(schema, "", false, &mut problems);
    problems
}

fn check_node(schema: &Value, pointer: &str, in_junctor: bool, problems: &mut Vec<String>) {
    let Some(object) = schema.as_object() else {
        problems.push(format!("{pointer}: boolean schemas are not allowed"));
        return;
    };
    let has = |key: &str| object.contains_key(key);
    let flag = |key: &str| object.get(key) == Some(&Value::Bool(true));
    if has("$ref") {
        problems.push(format!(
            "{pointer}: $ref is not allowed; the type must be inlinable"
        ));
    }
    if has("properties")
        && matches!(object.get("additionalProperties"), Some(v) if v != &json!(false))
    {
        problems.push(format!(
            "{pointer}: properties and additionalProperties are mutually exclusive"
        ));
    }
    if in_junctor {
        for key in FORBIDDEN_IN_JUNCTORS.iter().filter(|key| has(key)) {
            problems.push(format!(
                "{pointer}: {key} is not allowed inside anyOf/oneOf/allOf/not"
            ));
        }
    } else if !has("type")
        && !flag("x-kubernetes-int-or-string")
        && !flag("x-kubernetes-preserve-unknown-fields")
    {
        problems.push(format!("{pointer}: type is required"));
    }
    if let Some(default) = object.get("default") {
        problems.extend(
            default_violations(object, default)
                .into_iter()
                .map(|problem| format!("{pointer}/default: {problem}")),
        );
    }
    for (key, value) in object {
        match (key.as_str(), value) {
            ("properties", Value::Object(properties)) => {
                for (name, child) in properties {
                    check_node(
                        child,
                        &format!("{pointer}/properties/{name}"),
                        in_junctor,
                        problems,
                    );
                }
            }
            ("items" | "additionalProperties", child @ Value::Object(_)) => {
                check_node(child, &format!("{pointer}/{key}"), in_junctor, problems);
            }
            ("anyOf" | "oneOf" | "allOf", Value::Array(branches)) => {
                let int_or_string = flag("x-kubernetes-int-or-string");
                for (i, branch) in branches.iter().enumerate() {
                    if !(int_or_string && is_int_or_string_branch(branch)) {
                        check_node(branch, &format!("{pointer}/{key}/{i}"), true, problems);
                    }
                }
            }
            ("not", child) => check_node(child, &format!("{pointer}/not"), true, problems),
            _ => {}
        }
    }
}

/// How a node's `default` breaks the node's own bounds: kube-apiserver validates every
/// default against its schema and refuses the whole CRD when one does not pass (an
/// empty-list default under `minItems: 1` did, unnoticed, until the end-to-end tests met a
/// real API server). The bounds serde defaults can break are checked; CEL rules on
/// defaults are left to the API server.
fn default_violations(schema: &Map<String, Value>, default: &Value) -> Vec<String> {
    let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
    let mut problems = Vec::new();
    let mut below = |what: &str, key: &str, actual: usize| {
        if bound(key).is_some_and(|min| (actual as f64) < min) {
            problems.push(format!("{what} {actual} is below {key} {}", schema[key]));
        }
    };
    match default {
        Value::Array(items) => below("length", "minItems", items.len()),
        Value::String(text) => below("length", "minLength", text.chars().count()),
        Value::Object(fields) => below("size", "minProperties", fields.len()),
        _ => {}
    }
    let length = match default {
        Value::Array(items) => Some(items.len()),
        Value::String(text) => Some(text.chars().count()),
        Value::Object(fields) => Some(fields.len()),
        _ => None,
    };
    for key in ["maxItems", "maxLength", "maxProperties"] {
        if let (Some(max), Some(length)) = (bound(key), length)
            && length as f64 > max
        {
            problems.push(format!("length {length} is above {key} {max}"));
        }
    }
    if let Some(number) = default.as_f64() {
        if bound("minimum").is_some_and(|min| number < min) {
            problems.push(format!("{number} is below minimum {}", schema["minimum"]));
        }
        if bound("maximum").is_some_and(|max| number > max) {
            problems.push(format!("{number} is above maximum {}", schema["maximum"]));
        }
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(default)
    {
        problems.push(format!("{default} is not in the enum"));
    }
    problems
}

/// `{type: integer}` / `{type: string}`: the one junctor pattern allowed to set `type`,
/// next to `x-kubernetes-int-or-string: true`.
fn is_int_or_string_branch(branch: &Value) -> bool {
    matches!(
        branch.get("type").and_then(Value::as_str),
        Some("integer" | "string")
    ) && branch.as_object().is_some_and(|object| object.len() == 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::{Handle, NoArgs, Plugin, PluginArgs, PluginError, PluginFactory};
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// Args shaped like upstream's: nested struct, enum, optional and defaulted fields.
    #[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase", default)]
    struct FakeArgs {
        scoring_strategy: Strategy,
        timeout_seconds: Option<i64>,
        resources: Vec<Resource>,
        extra: serde_json::Value,
    }

    #[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    struct Resource {
        name: String,
        weight: i64,
    }

    #[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
    enum Strategy {
        #[default]
        LeastAllocated,
        MostAllocated,
    }

    impl PluginArgs for FakeArgs {}

    /// Recursive: cannot be inlined, so it must be refused with the plugin named.
    #[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
    struct TreeArgs {
        children: Vec<TreeArgs>,
    }

    impl PluginArgs for TreeArgs {}

    macro_rules! fake_plugin {
        ($ty:ident, $name:literal, $args:ty, [$($point:ident),*]) => {
            struct $ty;
            impl Plugin for $ty {
                fn name(&self) -> &str {
                    $name
                }
            }
            impl PluginFactory for $ty {
                const NAME: &'static str = $name;
                const POINTS: &'static [ExtensionPoint] = &[$(ExtensionPoint::$point),*];
                type Args = $args;
                fn build(_: $args, _: &Handle) -> Result<Self, PluginError> {
                    Ok($ty)
                }
            }
        };
    }

    fake_plugin!(
        Fit,
        "NodeResourcesFit",
        FakeArgs,
        [PreFilter, Filter, Score]
    );
    fake_plugin!(Sort, "QOSSort", NoArgs, [QueueSort]);
    fake_plugin!(Tree, "Tree", TreeArgs, [Filter]);

    fn registry() -> Registry {
        let mut registry = Registry::new();
        registry.register::<Fit>().register::<Sort>();
        registry
    }

    fn profile_schema(registry: &Registry) -> Value {
        let crds = crds(registry).expect("CRDs from test plugins");
        let schema = crds[0].spec.versions[0]
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref());
        serde_json::to_value(schema).expect("schema as JSON")
    }

    fn at<'a>(schema: &'a Value, pointer: &str) -> &'a Value {
        schema
            .pointer(pointer)
            .unwrap_or_else(|| panic!("no schema node at {pointer}"))
    }

    const PLUGINS: &str = "/properties/spec/properties/plugins/properties";

    #[test]
    fn enabled_names_are_narrowed_to_the_plugins_of_the_point() {
        let schema = profile_schema(&registry());
        let cases = [
            ("multiPoint", json!(["NodeResourcesFit", "QOSSort"])),
            ("queueSort", json!(["QOSSort"])),
            ("score", json!(["NodeResourcesFit"])),
        ];
        for (point, expected) in cases {
            let name = at(
                &schema,
                &format!("{PLUGINS}/{point}/properties/enabled/items/properties/name"),
            );
            assert_eq!(name["enum"], expected, "enabled names at {point}");
        }
    }

    #[test]
    fn a_point_without_plugins_accepts_no_enabled_entries() {
        let schema = profile_schema(&registry());
        let enabled = at(&schema, &format!("{PLUGINS}/bind/properties/enabled"));
        assert_eq!(enabled["maxItems"], json!(0));
    }

    #[test]
    fn disabled_names_are_every_plugin_and_star_at_every_point() {
        let schema = profile_schema(&registry());
        for point in ["multiPoint", "bind", "queueSort"] {
            let name = at(
                &schema,
                &format!("{PLUGINS}/{point}/properties/disabled/items/properties/name"),
            );
            assert_eq!(
                name["enum"],
                json!(["NodeResourcesFit", "QOSSort", "*"]),
                "disabled names at {point}"
            );
        }
    }

    #[test]
    fn plugin_config_has_one_typed_property_per_plugin_with_args() {
        let schema = profile_schema(&registry());
        let config = at(&schema, "/properties/spec/properties/pluginConfig");
        let properties = config["properties"]
            .as_object()
            .expect("pluginConfig properties");
        assert_eq!(properties.keys().collect::<Vec<_>>(), ["nodeResourcesFit"]);
        let fit = &properties["nodeResourcesFit"];
        assert_eq!(fit["type"], "object");
        assert_eq!(
            fit["properties"]["scoringStrategy"]["enum"],
            json!(["LeastAllocated", "MostAllocated"])
        );
        assert_eq!(
            fit["properties"]["scoringStrategy"]["default"],
            "LeastAllocated"
        );
        assert_eq!(fit["properties"]["timeoutSeconds"]["nullable"], true);
        assert_eq!(
            fit["properties"]["resources"]["items"]["required"],
            json!(["name", "weight"])
        );
        assert_eq!(
            fit["properties"]["extra"]["x-kubernetes-preserve-unknown-fields"],
            true
        );
        assert!(config.get("x-kubernetes-preserve-unknown-fields").is_none());
    }

    #[test]
    fn recursive_args_are_refused_naming_the_crd_and_path() {
        let mut registry = registry();
        registry.register::<Tree>();
        let error = crds(&registry).expect_err("recursive args need $ref");
        let message = error.to_string();
        assert!(message.contains("schedulerprofiles.berth.dev"), "{message}");
        assert!(
            message.contains("/pluginConfig/properties/tree"),
            "{message}"
        );
        assert!(message.contains("$ref"), "{message}");
    }

    #[test]
    fn structural_check_flags_what_the_api_server_rejects() {
        let cases = [
            (
                "untyped property",
                json!({"type": "object", "properties": {"a": {}}}),
                "/properties/a: type is required",
            ),
            (
                "type in anyOf",
                json!({"type": "object", "anyOf": [{"type": "string"}]}),
                "/anyOf/0: type is not allowed",
            ),
            (
                "ref",
                json!({"type": "object", "items": {"$ref": "#/x"}}),
                "/items: $ref is not allowed",
            ),
            (
                "properties with additionalProperties",
                json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}),
                ": properties and additionalProperties are mutually exclusive",
            ),
            // kube-apiserver 1.37: "default: Invalid value: 0: in body should have at least 1 items".
            (
                "empty default under minItems",
                json!({"type": "object", "properties": {"shape": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "default": []}}}),
                "/properties/shape/default: length 0 is below minItems 1",
            ),
            (
                "default above maximum",
                json!({"type": "integer", "maximum": 100, "default": 101}),
                "/default: 101 is above maximum 100",
            ),
            (
                "default outside the enum",
                json!({"type": "string", "enum": ["A", "B"], "default": "C"}),
                "/default: \"C\" is not in the enum",
            ),
            (
                "default string too long",
                json!({"type": "string", "maxLength": 2, "default": "abc"}),
                "/default: length 3 is above maxLength 2",
            ),
        ];
        for (name, schema, expected) in cases {
            let problems = structural_problems(&schema);
            assert!(
                problems.iter().any(|p| p.starts_with(expected)),
                "{name}: {problems:?}"
            );
        }
        let int_or_string = json!({"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]});
        assert_eq!(structural_problems(&int_or_string), Vec::<String>::new());
        let fitting_default = json!({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3, "default": [1]});
        assert_eq!(structural_problems(&fitting_default), Vec::<String>::new());
    }

    #[test]
    fn yaml_stream_holds_both_crds_in_order() {
        let yaml = crds_yaml(&registry()).expect("YAML");
        let documents: Vec<&str> = yaml.split("\n---\n").collect();
        assert_eq!(documents.len(), 2, "{yaml}");
        assert!(documents[0].contains("name: schedulerprofiles.berth.dev"));
        assert!(documents[1].contains("name: podgroups.berth.dev"));
        assert_eq!(
            yaml,
            crds_yaml(&registry()).expect("YAML"),
            "output is deterministic"
        );
    }
}
