//! The plugin reference that `berth plugins` prints, read from the registry.
//!
//! [`Reference::of`] turns every registry entry (name, extension points, default-set
//! membership and Score weight, args schema and defaults) into plain data: [`PluginDoc`],
//! [`ArgsDoc`], [`FieldDoc`]. The renderers print it as terminal text
//! ([`render_list_text`], [`render_plugin_text`]) or as the Markdown reference checked in
//! as `docs/plugins.md` ([`render_markdown`]).
//!
//! Args fields come from the args type's JSON schema: one row per field, nested fields as
//! dotted paths and list items as `[]` (`scoringStrategy.resources[].weight`), with the
//! type, the default from the args type's `Default` (`ArgsSpec::defaults`), the allowed
//! values of enums, the constraints (bounds, patterns, CEL rule messages), and the doc
//! text the schema carries from the Rust doc comments. Output depends only on the
//! registry, so it is deterministic.

use serde_json::{Map, Value};

use crate::api::ExtensionPoint;
use crate::framework::{PluginEntry, Registry};

/// Everything `berth plugins` shows, for every registered plugin.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// Every registered plugin, sorted by name.
    pub plugins: Vec<PluginDoc>,
    /// The default plugin set (a `multiPoint` list), in order.
    pub default_set: Vec<DefaultSetEntry>,
}

/// One plugin of the default set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultSetEntry {
    pub name: String,
    /// The Score weight, for plugins that implement Score (a missing weight means 1, as
    /// in profile resolution).
    pub weight: Option<i32>,
}

/// One registered plugin.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginDoc {
    pub name: String,
    /// One sentence from the plugin itself; may be empty.
    pub description: String,
    pub points: Vec<ExtensionPoint>,
    pub in_default_set: bool,
    /// The Score weight the default set gives it; `None` when it is not a Score plugin of
    /// the default set.
    pub default_weight: Option<i32>,
    /// `None` for plugins without args.
    pub args: Option<ArgsDoc>,
}

/// The args of one plugin.
#[derive(Debug, Clone, PartialEq)]
pub struct ArgsDoc {
    /// The property under `spec.pluginConfig`, e.g. `nodeResourcesFit`.
    pub config_field: String,
    /// The args type's name, e.g. `NodeResourcesFitArgs`.
    pub type_name: String,
    /// The first paragraph of the args type's doc text (later paragraphs of a type's doc
    /// comment are usually for the Rust reader).
    pub description: String,
    /// The defaulted args.
    pub defaults: Value,
    /// Every field, parents before their children.
    pub fields: Vec<FieldDoc>,
    /// The CEL rules of the args type, the args object's own first, then its fields'.
    pub rules: Vec<RuleDoc>,
}

/// One CEL rule (`x-kubernetes-validations`) of an args type, as the CRD carries it: the
/// API server evaluates it at `kubectl apply`, `berth simulate` before scheduling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleDoc {
    /// The field the rule is on, as [`FieldDoc::path`]; empty for the args object itself.
    pub path: String,
    /// The CEL expression (`self` is the field).
    pub rule: String,
    /// The error message; empty when the rule gives none.
    pub message: String,
    /// Where the error is reported, relative to the field (`fieldPath`); empty when at
    /// the field itself.
    pub field_path: String,
}

/// One field of an args type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldDoc {
    /// Dotted path from the args object; list items as `[]`, map values as `*`.
    pub path: String,
    /// `string`, `integer`, `[]string`, `map[string]integer`, `object`, ...
    pub type_name: String,
    /// The default as compact JSON; `None` when the field has none.
    pub default: Option<String>,
    /// Whether the field must be given (only fields inside list items or maps can be).
    pub required: bool,
    /// The allowed values of an enum.
    pub allowed: Vec<String>,
    /// Bounds and CEL rule messages, e.g. `1..100`, `items: >= 1`, `pattern: ^[a-z]+$`.
    pub constraints: Vec<String>,
    /// The doc text, on one line.
    pub doc: String,
}

impl FieldDoc {
    /// The default column: the JSON default, `required`, or `-`.
    pub fn default_text(&self) -> &str {
        match (&self.default, self.required) {
            (Some(value), _) => value,
            (None, true) => "required",
            (None, false) => "-",
        }
    }
}

impl Reference {
    /// The reference of every plugin in `registry`.
    pub fn of(registry: &Registry) -> Self {
        let default_set = registry
            .defaults()
            .iter()
            .map(|plugin| DefaultSetEntry {
                name: plugin.name.to_string(),
                weight: registry
                    .get(plugin.name)
                    .filter(|entry| entry.implements(ExtensionPoint::Score))
                    .map(|_| plugin.weight.unwrap_or(1)),
            })
            .collect::<Vec<_>>();
        let plugins = registry
            .entries()
            .map(|entry| PluginDoc::of(entry, &default_set))
            .collect();
        Reference {
            plugins,
            default_set,
        }
    }

    /// The plugin named exactly `name`.
    pub fn plugin(&self, name: &str) -> Option<&PluginDoc> {
        self.plugins.iter().find(|plugin| plugin.name == name)
    }
}

impl PluginDoc {
    fn of(entry: &PluginEntry, default_set: &[DefaultSetEntry]) -> Self {
        let default = default_set.iter().find(|d| d.name == entry.name);
        PluginDoc {
            name: entry.name.to_string(),
            description: one_line(entry.description),
            points: entry.points.to_vec(),
            in_default_set: default.is_some(),
            default_weight: default.and_then(|d| d.weight),
            args: entry.args.as_ref().map(|args| {
                let schema = args.schema_json();
                let defaults = args.defaults();
                ArgsDoc {
                    config_field: entry.config_field(),
                    type_name: args.type_name(),
                    description: summary(&text_of(&schema, "description")),
                    fields: FieldWalker::new(&schema).fields(&schema, &defaults),
                    rules: rules_of(&schema),
                    defaults,
                }
            }),
        }
    }

    /// The extension points, comma-separated, in the order a pod meets them.
    pub fn points_text(&self) -> String {
        self.points
            .iter()
            .map(|point| point.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Reads the fields of an args schema. Subschemas are inlined, except recursive types,
/// which stay `$ref`s into `$defs` and are not expanded a second time.
struct FieldWalker<'a> {
    definitions: Option<&'a Map<String, Value>>,
    /// The `$defs` being expanded, to stop at recursion.
    expanding: Vec<String>,
    fields: Vec<FieldDoc>,
}

/// What a field's schema says, once `$ref`s and nullability are looked through.
struct Resolved {
    schema: Value,
    /// The `$defs` entry it came from, if any.
    definition: Option<String>,
}

impl<'a> FieldWalker<'a> {
    fn new(root: &'a Value) -> Self {
        FieldWalker {
            definitions: root.get("$defs").and_then(Value::as_object),
            expanding: Vec::new(),
            fields: Vec::new(),
        }
    }

    fn fields(mut self, root: &Value, defaults: &Value) -> Vec<FieldDoc> {
        let root = self.resolve(root);
        self.expanding.extend(root.definition);
        self.properties(&root.schema, "", Some(defaults), false);
        self.fields
    }

    /// One row per property of `schema`, then its children. Inside list items and map
    /// values (`in_item`) defaults come from the schema, since `defaults` has no value
    /// there.
    fn properties(
        &mut self,
        schema: &Value,
        prefix: &str,
        defaults: Option<&Value>,
        in_item: bool,
    ) {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return;
        };
        let required = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect::<Vec<_>>())
            .unwrap_or_default();
        for (name, property) in properties {
            let path = format!("{prefix}{name}");
            let default = defaults.and_then(|d| d.get(name));
            let required = required.contains(&name.as_str());
            self.field(&path, property, default, in_item, required);
        }
    }

    fn field(
        &mut self,
        path: &str,
        schema: &Value,
        default: Option<&Value>,
        in_item: bool,
        required: bool,
    ) {
        let resolved = self.resolve(schema);
        let field = &resolved.schema;
        // An object's defaults show on its fields' rows.
        let row_default = if field.get("properties").is_some() {
            None
        } else if in_item {
            field.get("default")
        } else {
            default
        };
        let (allowed, doc) = allowed_and_doc(field);
        self.fields.push(FieldDoc {
            path: path.to_string(),
            type_name: self.type_name(field),
            default: row_default.map(Value::to_string),
            required,
            allowed,
            constraints: constraints(field),
            doc,
        });

        if let Some(name) = &resolved.definition {
            if self.expanding.contains(name) {
                return;
            }
            self.expanding.push(name.clone());
        }
        self.children(path, field, default, in_item);
        if resolved.definition.is_some() {
            self.expanding.pop();
        }
    }

    fn children(&mut self, path: &str, field: &Value, default: Option<&Value>, in_item: bool) {
        if field.get("properties").is_some() {
            self.properties(field, &format!("{path}."), default, in_item);
        } else if let Some(items) = field.get("items") {
            self.nested(&format!("{path}[]"), items);
        } else if let Some(values) = field.get("additionalProperties").filter(|v| v.is_object()) {
            self.nested(&format!("{path}.*"), values);
        }
    }

    /// The fields of list items or map values (`path` ends in `[]` or `.*`).
    fn nested(&mut self, path: &str, schema: &Value) {
        let resolved = self.resolve(schema);
        let nested = &resolved.schema;
        if let Some(name) = &resolved.definition {
            if self.expanding.contains(name) {
                return;
            }
            self.expanding.push(name.clone());
        }
        if nested.get("properties").is_some() {
            self.properties(nested, &format!("{path}."), None, true);
        } else if let Some(items) = nested.get("items") {
            self.nested(&format!("{path}[]"), items);
        } else if let Some(values) = nested.get("additionalProperties").filter(|v| v.is_object()) {
            self.nested(&format!("{path}.*"), values);
        } else {
            self.scalar_item(path, nested);
        }
        if resolved.definition.is_some() {
            self.expanding.pop();
        }
    }

    /// A row for scalar list items or map values, when their schema says more than the
    /// parent's type does (e.g. a pattern every item must match).
    fn scalar_item(&mut self, path: &str, schema: &Value) {
        let (allowed, doc) = allowed_and_doc(schema);
        let constraints = constraints(schema);
        if allowed.is_empty() && constraints.is_empty() && doc.is_empty() {
            return;
        }
        self.fields.push(FieldDoc {
            path: path.to_string(),
            type_name: self.type_name(schema),
            default: schema.get("default").map(Value::to_string),
            required: false,
            allowed,
            constraints,
            doc,
        });
    }

    /// `string`, `integer`, `[]string`, `map[string]integer`, `object`; `string (uri)`
    /// for string formats.
    fn type_name(&self, schema: &Value) -> String {
        self.type_name_within(schema, 8)
    }

    /// [`Self::type_name`], looking at most `depth` item or value types deep (a
    /// self-referencing list type has no finite name).
    fn type_name_within(&self, schema: &Value, depth: usize) -> String {
        let inner = |schema: &Value| match depth {
            0 => "any".to_string(),
            _ => self.type_name_within(&self.resolve(schema).schema, depth - 1),
        };
        match schema.get("type").and_then(Value::as_str) {
            Some("array") => match schema.get("items") {
                Some(items) => format!("[]{}", inner(items)),
                None => "[]any".into(),
            },
            Some("object") => match schema.get("additionalProperties").filter(|v| v.is_object()) {
                Some(values) if schema.get("properties").is_none() => {
                    format!("map[string]{}", inner(values))
                }
                _ => "object".into(),
            },
            Some("string") => match schema.get("format").and_then(Value::as_str) {
                Some(format) => format!("string ({format})"),
                None => "string".into(),
            },
            Some(other) => other.into(),
            None if schema.get("enum").is_some() || schema.get("const").is_some() => {
                "string".into()
            }
            None => {
                let branches = ["oneOf", "anyOf"]
                    .iter()
                    .find_map(|key| schema.get(*key).and_then(Value::as_array));
                match branches {
                    // An enum whose values carry docs: one branch per value.
                    Some(branches) if !enum_values(schema).0.is_empty() => {
                        branches.first().map_or_else(|| "string".into(), inner)
                    }
                    Some(branches) => {
                        let mut names: Vec<String> = branches.iter().map(inner).collect();
                        names.dedup();
                        names.join(" | ")
                    }
                    None => "any".into(),
                }
            }
        }
    }

    /// Looks through `$ref`, single-element `allOf` and `null` alternatives
    /// (`Option<T>`); keywords next to them (description, default) win.
    fn resolve(&self, schema: &Value) -> Resolved {
        let mut schema = schema.clone();
        let mut definition = None;
        // Bounded: a `$ref` chain longer than this is not a schema a derive produces.
        for _ in 0..8 {
            let Some(object) = schema.as_object_mut() else {
                break;
            };
            let target = if let Some(reference) = object.remove("$ref") {
                let name = reference
                    .as_str()
                    .and_then(|r| r.strip_prefix("#/$defs/"))
                    .unwrap_or_default()
                    .to_string();
                let target = self.definitions.and_then(|defs| defs.get(&name)).cloned();
                definition = Some(name);
                target
            } else if let Some(inner) = single_branch(object, "allOf")
                .or_else(|| non_null_branch(object, "anyOf"))
                .or_else(|| non_null_branch(object, "oneOf"))
            {
                Some(inner)
            } else {
                break;
            };
            let Some(Value::Object(mut merged)) = target else {
                break;
            };
            merged.extend(std::mem::take(object));
            schema = Value::Object(merged);
        }
        if let Some(object) = schema.as_object_mut() {
            drop_null_type(object);
        }
        Resolved { schema, definition }
    }
}

/// Removes `key: [X]` from `object` and returns `X`.
fn single_branch(object: &mut Map<String, Value>, key: &str) -> Option<Value> {
    match object.get(key).and_then(Value::as_array).map(Vec::as_slice) {
        Some([_]) => match object.remove(key) {
            Some(Value::Array(mut branches)) => branches.pop(),
            _ => None,
        },
        _ => None,
    }
}

/// Removes `key: [X, {type: null}]` (either order) from `object` and returns `X`.
fn non_null_branch(object: &mut Map<String, Value>, key: &str) -> Option<Value> {
    let branches = object.get(key).and_then(Value::as_array)?;
    let is_null = |branch: &Value| branch.get("type") == Some(&Value::from("null"));
    let [a, b] = branches.as_slice() else {
        return None;
    };
    let inner = match (is_null(a), is_null(b)) {
        (false, true) => a.clone(),
        (true, false) => b.clone(),
        _ => return None,
    };
    object.remove(key);
    Some(inner)
}

/// `type: [T, "null"]` -> `type: T`; `null` leaves `enum`.
fn drop_null_type(object: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = object.get_mut("type") {
        types.retain(|t| t != "null");
        if let [single] = types.as_slice() {
            let single = single.clone();
            object.insert("type".into(), single);
        }
    }
    if let Some(Value::Array(values)) = object.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
}

/// The allowed values of an enum and the doc text, followed by the docs of single values.
fn allowed_and_doc(schema: &Value) -> (Vec<String>, String) {
    let (allowed, value_docs) = enum_values(schema);
    let doc = std::iter::once(one_line(&text_of(schema, "description")))
        .chain(value_docs)
        .filter(|text| !text.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    (allowed, doc)
}

/// The allowed values of an enum (`enum`, `const`, or `oneOf`/`anyOf` of those) and, for
/// values with their own doc text, "`Value`: text." sentences.
fn enum_values(schema: &Value) -> (Vec<String>, Vec<String>) {
    let plain = |value: &Value| match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return (values.iter().map(plain).collect(), Vec::new());
    }
    if let Some(value) = schema.get("const") {
        return (vec![plain(value)], Vec::new());
    }
    let branches = ["oneOf", "anyOf"]
        .iter()
        .find_map(|key| schema.get(*key).and_then(Value::as_array));
    let Some(branches) = branches else {
        return (Vec::new(), Vec::new());
    };
    let mut allowed = Vec::new();
    let mut docs = Vec::new();
    for branch in branches {
        let (values, _) = enum_values(branch);
        if values.is_empty() {
            return (Vec::new(), Vec::new());
        }
        let description = one_line(&text_of(branch, "description"));
        if let ([value], false) = (values.as_slice(), description.is_empty()) {
            docs.push(format!("`{value}`: {description}"));
        }
        allowed.extend(values);
    }
    (allowed, docs)
}

/// The CEL rules in an args schema, each with the path of the field it is on. Follows
/// properties, list items (`[]`), map values (`*`) and `anyOf`/`oneOf`/`allOf` branches;
/// recursive types, which stay `$ref`s, are not followed (an args type with one cannot be
/// a CRD anyway, see `crate::schema::crd`).
fn rules_of(schema: &Value) -> Vec<RuleDoc> {
    let mut rules = Vec::new();
    collect_rules(schema, "", &mut rules);
    rules
}

fn collect_rules(schema: &Value, path: &str, rules: &mut Vec<RuleDoc>) {
    let validations = schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for rule in validations {
        rules.push(RuleDoc {
            path: path.to_string(),
            rule: one_line(&text_of(rule, "rule")),
            message: one_line(&text_of(rule, "message")),
            field_path: text_of(rule, "fieldPath"),
        });
    }
    let join = |child: &str| match path {
        "" => child.to_string(),
        _ => format!("{path}.{child}"),
    };
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            collect_rules(property, &join(name), rules);
        }
    }
    if let Some(items) = schema.get("items") {
        collect_rules(items, &format!("{path}[]"), rules);
    }
    if let Some(values) = schema.get("additionalProperties") {
        collect_rules(values, &join("*"), rules);
    }
    for junctor in ["anyOf", "oneOf", "allOf"] {
        for branch in schema
            .get(junctor)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            collect_rules(branch, path, rules);
        }
    }
}

/// Bounds and CEL rule messages: `1..100`, `>= 1`, `items: <= 10`, `length: 1..63`, `pattern: ...`,
/// and the messages of CEL rules.
fn constraints(schema: &Value) -> Vec<String> {
    let number = |key: &str| {
        schema
            .get(key)
            .filter(|v| v.is_number())
            .map(Value::to_string)
    };
    let mut constraints = Vec::new();
    let mut range = |min: Option<String>, max: Option<String>, unit: &str| {
        let text = match (min, max) {
            (Some(min), Some(max)) => format!("{unit}{min}..{max}"),
            (Some(min), None) => format!("{unit}>= {min}"),
            (None, Some(max)) => format!("{unit}<= {max}"),
            (None, None) => return,
        };
        constraints.push(text);
    };
    range(number("minimum"), number("maximum"), "");
    range(number("minLength"), number("maxLength"), "length: ");
    range(number("minItems"), number("maxItems"), "items: ");
    range(
        number("minProperties"),
        number("maxProperties"),
        "entries: ",
    );
    if let Some(min) = number("exclusiveMinimum") {
        constraints.push(format!("> {min}"));
    }
    if let Some(max) = number("exclusiveMaximum") {
        constraints.push(format!("< {max}"));
    }
    if schema.get("uniqueItems") == Some(&Value::Bool(true)) {
        constraints.push("unique items".into());
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
        constraints.push(format!("pattern: `{pattern}`"));
    }
    let rules = schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for rule in rules {
        let message = text_of(rule, "message");
        let text = if message.is_empty() {
            text_of(rule, "rule")
        } else {
            message
        };
        if !text.is_empty() {
            constraints.push(one_line(&text));
        }
    }
    constraints
}

fn text_of(schema: &Value, key: &str) -> String {
    schema
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The first paragraph of `text`, on one line.
fn summary(text: &str) -> String {
    one_line(text.split("\n\n").next().unwrap_or_default())
}

/// Doc comments wrap at the source's line width; the reference puts them on one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

mod render;

pub use render::{
    render_list_text, render_markdown, render_plugin_markdown, render_plugin_text, wrap,
};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn paths(schema: &Value, defaults: &Value) -> Vec<(String, String, String)> {
        FieldWalker::new(schema)
            .fields(schema, defaults)
            .into_iter()
            .map(|f| {
                (
                    f.path.clone(),
                    f.type_name.clone(),
                    f.default_text().to_string(),
                )
            })
            .collect()
    }

    fn row(path: &str, type_name: &str, default: &str) -> (String, String, String) {
        (path.into(), type_name.into(), default.into())
    }

    #[test]
    fn recursive_types_are_expanded_once() {
        // What schemars emits for `struct Tree { name: String, children: Vec<Tree> }`.
        let schema = json!({
            "$ref": "#/$defs/Tree",
            "$defs": {"Tree": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}
            }}}
        });
        assert_eq!(
            paths(&schema, &json!({"children": []})),
            vec![
                row("children", "[]object", "[]"),
                row("name", "string", "required")
            ]
        );
    }

    #[test]
    fn optional_values_and_maps_are_looked_through() {
        let schema = json!({"type": "object", "properties": {
            "limit": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}],
                      "description": "At least 1."},
            "mode": {"type": ["string", "null"], "enum": ["A", "B", null]},
            "weights": {"type": "object", "additionalProperties": {"type": "integer"}},
            "routes": {"type": "object", "additionalProperties": {"type": "object",
                       "properties": {"port": {"type": "integer", "default": 80}}}}
        }});
        let fields = FieldWalker::new(&schema).fields(&schema, &json!({"limit": null}));
        let limit = &fields[0];
        assert_eq!(
            (
                limit.path.as_str(),
                limit.type_name.as_str(),
                limit.default_text()
            ),
            ("limit", "integer", "null")
        );
        assert_eq!(limit.constraints, vec![">= 1"]);
        assert_eq!(limit.doc, "At least 1.");
        assert_eq!(fields[1].allowed, vec!["A", "B"]);
        assert_eq!(fields[1].type_name, "string");
        assert_eq!(
            paths(&schema, &json!({}))[2..],
            [
                row("routes", "map[string]object", "-"),
                row("routes.*.port", "integer", "80"),
                row("weights", "map[string]integer", "-"),
            ]
        );
    }

    #[test]
    fn rules_are_listed_with_the_field_they_are_on() {
        let rule = |rule: &str, message: &str, field_path: &str| json!({"rule": rule, "message": message, "fieldPath": field_path});
        // The places an args schema carries `x-kubernetes-validations`: the args object,
        // a property, a list item, a map value and an `Option`'s non-null branch.
        let schema = json!({
            "type": "object",
            "x-kubernetes-validations": [rule("self.a <= self.b", "a after b", ".a")],
            "properties": {
                "groups": {
                    "type": "array",
                    "x-kubernetes-validations": [rule("size(self) < 3", "at most 2", "")],
                    "items": {
                        "type": "object",
                        "x-kubernetes-validations": [{"rule": "has(self.name)"}],
                    },
                },
                "routes": {
                    "type": "object",
                    "additionalProperties": {
                        "x-kubernetes-validations": [rule("self > 0", "positive", "")],
                    },
                },
                "limit": {"anyOf": [
                    {"type": "integer", "x-kubernetes-validations": [rule("self != 7", "not 7", "")]},
                    {"type": "null"},
                ]},
            },
        });
        let got: Vec<(String, String, String, String)> = rules_of(&schema)
            .into_iter()
            .map(|r| (r.path, r.rule, r.message, r.field_path))
            .collect();
        let want = [
            ("", "self.a <= self.b", "a after b", ".a"),
            ("groups", "size(self) < 3", "at most 2", ""),
            ("groups[]", "has(self.name)", "", ""),
            ("limit", "self != 7", "not 7", ""),
            ("routes.*", "self > 0", "positive", ""),
        ]
        .map(|(path, rule, message, field_path)| {
            (path.into(), rule.into(), message.into(), field_path.into())
        });
        assert_eq!(got, want);
    }
}
