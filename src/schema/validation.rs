//! Local validation of berth's custom resources: what the API server does with a
//! `SchedulerProfile` or a `PodGroup` at `kubectl apply` time with berth's generated CRDs
//! installed ([`CrdValidator`], stages 1 to 3 below), followed for profiles by what berth
//! does before it instantiates one ([`ProfileValidator`], stage 4). `berth simulate` and
//! the operator both go through here, so an object the simulator accepts is one the
//! cluster accepts.
//!
//! The stages, in the API server's order, against the CRDs generated from the registry
//! ([`crds`]):
//!
//! 1. **Request handling.** `status` is dropped (the status subresource ignores it on
//!    create); fields the schema does not declare are pruned and reported as strict field
//!    validation reports them (`unknown field "spec.foo"`); `null`s of non-nullable fields
//!    are dropped; schema `default`s are applied (`kube::core::cel::apply_defaults`).
//! 2. **Structural schema**: types, enums, bounds, lengths, sizes, patterns, `required`,
//!    `nullable`, `x-kubernetes-int-or-string`, evaluated with the `jsonschema` crate after
//!    a translation of the OpenAPI subset to JSON Schema draft 4 ([`to_json_schema`]).
//! 3. **CEL**: every `x-kubernetes-validations` rule through kube's `cel` feature, with
//!    its `fieldPath`, `message`/`messageExpression` and `reason`. Like the API server,
//!    the rules are skipped (with a warning) when stage 2 found a type, enum, required or
//!    size error, because they would run on data of the wrong shape.
//! 4. **Semantics** ([`resolve`]): what needs the registry and the merged plugin lists
//!    (exactly one QueueSort, at least one Bind, each plugin's own args validation, ...).
//!    An error whose path already has a schema or CEL error at it or below it is left out:
//!    it would only repeat what the user has been told.
//!
//! Errors are collected from every stage, never first-only, and read like apimachinery
//! field errors ([`FieldError`]): `spec.plugins.score.enabled[0].weight: Invalid value: 0:
//! must be between 1 and 100`. A rule that does not compile or cannot be evaluated is
//! berth's bug and is reported as an `Internal error`.

use std::collections::HashMap;
use std::sync::OnceLock;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use kube::core::cel::{
    CompiledSchema, ErrorKind, RootContext, ValidationError as CelError, Validator as CelValidator,
    apply_defaults, compile_schema,
};
use serde_json::{Map, Value, json};

use super::crd::pod_group_crd;
use super::{CrdError, crds};
use crate::api::{FieldError, FieldErrorKind, GROUP, SchedulerProfile, VERSION};
use crate::framework::{Registry, ResolvedProfile, resolve};

/// The outcome of [`validate_profile`].
#[derive(Debug, Clone, Default)]
pub struct ProfileValidation {
    /// Every problem found, in stage order; empty when the profile is valid.
    pub errors: Vec<FieldError>,
    /// Non-fatal findings, e.g. args for a plugin that is not enabled.
    pub warnings: Vec<String>,
    /// The profile as the API server would store it (unknown fields pruned, defaults
    /// applied), when it could be decoded at all.
    pub profile: Option<SchedulerProfile>,
    /// The resolved plugin lists; `Some` only when there are no errors.
    pub resolved: Option<ResolvedProfile>,
}

impl ProfileValidation {
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }
}

/// Why a validator could not be built from a CRD: berth's bug, not the user's.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error(transparent)]
    Crd(#[from] CrdError),
    #[error("the {0} CRD has no openAPIV3Schema")]
    MissingSchema(String),
    #[error("the {kind} schema is not valid JSON Schema once translated: {detail}")]
    JsonSchema { kind: String, detail: String },
}

/// Validates `raw` (one SchedulerProfile document as JSON) as the API server and berth
/// would. Builds a [`ProfileValidator`] each call; keep one to validate many profiles.
pub fn validate_profile(raw: &Value, registry: &Registry) -> ProfileValidation {
    match ProfileValidator::new(registry) {
        Ok(validator) => validator.validate(raw),
        Err(error) => ProfileValidation {
            errors: vec![FieldError::internal("<schema>", error.to_string())],
            ..Default::default()
        },
    }
}

/// The errors the API server returns when `raw` (one PodGroup document as JSON) is
/// created with berth's PodGroup CRD installed: stages 1 to 3 of the module docs. The
/// validator is built once per process; a CRD berth cannot compile is an `Internal error`.
pub fn validate_pod_group(raw: &Value) -> Vec<FieldError> {
    static VALIDATOR: OnceLock<Result<CrdValidator, String>> = OnceLock::new();
    let validator = VALIDATOR.get_or_init(|| {
        pod_group_crd()
            .map_err(SchemaError::from)
            .and_then(|crd| CrdValidator::new(&crd))
            .map_err(|error| error.to_string())
    });
    match validator {
        Ok(validator) => validator.admission_errors(raw),
        Err(error) => vec![FieldError::internal("<schema>", error.clone())],
    }
}

/// The schema of one of berth's CRDs, compiled once for JSON Schema and CEL: what the API
/// server checks on create (stages 1 to 3 of the module docs) for any kind berth defines.
pub struct CrdValidator {
    /// `kind` of the CRD, as CEL's `apiVersion`/`kind` context and in messages.
    kind: String,
    /// `openAPIV3Schema` as the API server reads it, plus the implicit root fields.
    openapi: Value,
    /// The same schema translated to JSON Schema draft 4.
    structural: Value,
    json_schema: jsonschema::Validator,
    cel_rules: CompiledSchema,
    cel: CelValidator,
    /// The `type` of the schema node each rule sits on, by rule text: the API server
    /// shows it as the bad value of a failed rule (`Invalid value: "object": ...`).
    rule_types: HashMap<String, String>,
}

impl CrdValidator {
    /// Compiles the schema of `crd`'s first version.
    pub fn new(crd: &CustomResourceDefinition) -> Result<Self, SchemaError> {
        let kind = crd.spec.names.kind.clone();
        let schema = crd
            .spec
            .versions
            .first()
            .and_then(|version| version.schema.as_ref())
            .and_then(|validation| validation.open_api_v3_schema.as_ref())
            .ok_or_else(|| SchemaError::MissingSchema(kind.clone()))?;
        let json_error = |detail: String| SchemaError::JsonSchema {
            kind: kind.clone(),
            detail,
        };
        let mut openapi =
            serde_json::to_value(schema).map_err(|error| json_error(error.to_string()))?;
        add_implicit_root_fields(&mut openapi);
        let structural = to_json_schema(&openapi);
        let json_schema = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft4)
            .should_validate_formats(true)
            .build(&structural)
            .map_err(|error| json_error(error.to_string()))?;
        let mut rule_types = HashMap::new();
        collect_rule_types(&openapi, &mut rule_types);
        Ok(CrdValidator {
            kind,
            cel_rules: compile_schema(&openapi),
            openapi,
            structural,
            json_schema,
            cel: CelValidator::new(),
            rule_types,
        })
    }

    /// CEL rules of the schema that do not compile, as `<rule>: <error>`. Always empty
    /// for a correct CRD; the test suite asserts it.
    pub fn rule_compilation_errors(&self) -> Vec<String> {
        let mut errors = Vec::new();
        collect_compilation_errors(&self.cel_rules, &mut errors);
        errors
    }

    /// The errors the API server itself would return for `raw` at `kubectl apply` time.
    pub fn admission_errors(&self, raw: &Value) -> Vec<FieldError> {
        self.admit(raw).errors
    }

    fn admit(&self, raw: &Value) -> Admission {
        let mut errors = Vec::new();
        let mut object = raw.clone();
        if let Value::Object(map) = &mut object {
            map.remove("status");
        }
        prune(&self.openapi, &mut object, "", &mut errors);
        let object = apply_defaults(&self.openapi, &object);

        let blocking = self.check_schema(&object, &mut errors);
        let mut warnings = Vec::new();
        if !blocking {
            self.check_rules(&object, &mut errors);
        } else if !self.rule_types.is_empty() {
            // The API server's own words for the rules it skipped.
            warnings.push(
                "some validation rules were not checked because the object was invalid; \
                 correct the existing errors to complete validation"
                    .to_string(),
            );
        }
        Admission {
            object,
            errors,
            warnings,
        }
    }
    /// Stage 2; returns whether an error blocks the CEL rules, as the API server's
    /// `hasBlockingErr` decides (unsupported, required, too long, too many, wrong type).
    fn check_schema(&self, object: &Value, errors: &mut Vec<FieldError>) -> bool {
        let mut blocking = false;
        for error in self.json_schema.iter_errors(object) {
            let path = field_path(error.instance_path().as_str(), object);
            let node = schema_node(&self.structural, error.schema_path().as_str());
            let field_error = schema_field_error(error.kind(), path, error.instance(), node);
            blocking |= matches!(
                field_error.kind,
                FieldErrorKind::NotSupported
                    | FieldErrorKind::Required
                    | FieldErrorKind::TooLong
                    | FieldErrorKind::TooMany
            ) || matches!(
                error.kind(),
                jsonschema::error::ValidationErrorKind::Type { .. }
            );
            push_unique(errors, field_error);
        }
        blocking
    }

    /// Stage 3.
    fn check_rules(&self, object: &Value, errors: &mut Vec<FieldError>) {
        let root = RootContext {
            api_version: format!("{GROUP}/{VERSION}"),
            api_group: GROUP.to_string(),
            kind: self.kind.clone(),
        };
        let Err(failures) =
            self.cel
                .validate_compiled_with_context(&self.cel_rules, object, None, Some(&root))
        else {
            return;
        };
        for failure in failures.iter() {
            push_unique(errors, self.rule_error(failure));
        }
    }

    /// A failed rule as the API server reports it (`fieldErrorForReason`): the bad value
    /// is the type of the node the rule sits on.
    fn rule_error(&self, failure: &CelError) -> FieldError {
        let path = failure.field_path.trim_start_matches('.').to_string();
        let node_type = self
            .rule_types
            .get(&failure.rule)
            .map_or("object", String::as_str);
        let message = failure.message.clone();
        match failure.kind {
            ErrorKind::ValidationFailure => match failure.reason.as_deref() {
                Some("FieldValueForbidden") => FieldError::forbidden(path, message),
                Some("FieldValueRequired") => FieldError::required(path, message),
                Some("FieldValueDuplicate") => {
                    FieldError::duplicate(path, &Value::from(node_type), message)
                }
                _ => FieldError::invalid(path, &Value::from(node_type), message),
            },
            _ => FieldError::internal(path, format!("CEL rule {:?}: {message}", failure.rule)),
        }
    }
}

/// The SchedulerProfile schema of one registry ([`CrdValidator`]) and berth's semantic
/// checks on top of it (stage 4).
pub struct ProfileValidator<'r> {
    registry: &'r Registry,
    crd: CrdValidator,
}

impl<'r> ProfileValidator<'r> {
    pub fn new(registry: &'r Registry) -> Result<Self, SchemaError> {
        let crd = crds(registry)?
            .into_iter()
            .next()
            .ok_or_else(|| SchemaError::MissingSchema("SchedulerProfile".to_string()))?;
        Ok(ProfileValidator {
            registry,
            crd: CrdValidator::new(&crd)?,
        })
    }

    /// CEL rules of the schema that do not compile, as `<rule>: <error>`. Always empty
    /// for a correct CRD; the test suite asserts it.
    pub fn rule_compilation_errors(&self) -> Vec<String> {
        self.crd.rule_compilation_errors()
    }

    /// Validates one SchedulerProfile document; see the module docs for the stages.
    pub fn validate(&self, raw: &Value) -> ProfileValidation {
        let admission = self.crd.admit(raw);
        let mut validation = self.check_semantics(admission.object, admission.errors);
        validation.warnings.splice(0..0, admission.warnings);
        validation
    }

    /// Stages 1 to 3 only: the errors the API server itself would return for `raw` at
    /// `kubectl apply` time (berth's semantic checks left out).
    pub fn admission_errors(&self, raw: &Value) -> Vec<FieldError> {
        self.crd.admission_errors(raw)
    }

    /// Stage 4: decode, resolve, and keep the errors no earlier stage explains.
    fn check_semantics(&self, object: Value, mut errors: Vec<FieldError>) -> ProfileValidation {
        let profile = match serde_path_to_error::deserialize::<_, SchedulerProfile>(object) {
            Ok(profile) => profile,
            Err(error) => {
                // The schema accepted what the Rust type cannot hold: the two disagree.
                if errors.is_empty() {
                    errors.push(FieldError::internal(
                        error.path().to_string(),
                        format!(
                            "the schema accepts a value SchedulerProfile cannot decode: {}",
                            error.inner()
                        ),
                    ));
                }
                return ProfileValidation {
                    errors,
                    ..Default::default()
                };
            }
        };
        let explained: Vec<String> = errors.iter().map(|e| e.path.clone()).collect();
        let mut warnings = Vec::new();
        let mut resolved = None;
        match resolve(&profile.spec, self.registry) {
            Ok(profile) => {
                warnings.extend(profile.warnings.iter().cloned());
                resolved = Some(profile);
            }
            Err(semantic) => {
                for error in semantic {
                    if !explained.iter().any(|path| covers(&error.path, path)) {
                        push_unique(&mut errors, error);
                    }
                }
            }
        }
        ProfileValidation {
            resolved: resolved.filter(|_| errors.is_empty()),
            errors,
            warnings,
            profile: Some(profile),
        }
    }
}

/// What the API server makes of a request: the object it would store and its errors.
struct Admission {
    object: Value,
    errors: Vec<FieldError>,
    warnings: Vec<String>,
}

/// Whether an error at `explained` already tells the user what an error at `path` would:
/// it is at `path`, inside it (`spec.plugins.queueSort.enabled` explains
/// `spec.plugins.queueSort`), or on the list or object that holds it (a CEL rule on
/// `...shape` explains `...shape[1].utilization`). An error on the whole object or on
/// `spec` explains nothing finer.
fn covers(path: &str, explained: &str) -> bool {
    let within = |inner: &str, outer: &str| {
        inner == outer
            || inner
                .strip_prefix(outer)
                .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
    };
    within(explained, path) || (!matches!(explained, "" | "spec") && within(path, explained))
}

fn push_unique(errors: &mut Vec<FieldError>, error: FieldError) {
    let text = error.to_string();
    if !errors.iter().any(|e| e.to_string() == text) {
        errors.push(error);
    }
}

// ---------------------------------------------------------------------------------------
// Request handling

/// `apiVersion`, `kind` and `metadata` are accepted on every object without being in the
/// CRD schema; metadata is validated by the API server's own ObjectMeta rules, not here.
fn add_implicit_root_fields(schema: &mut Value) {
    let Some(root) = schema.as_object_mut() else {
        return;
    };
    let properties = root
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(properties) = properties {
        properties.insert("apiVersion".into(), json!({"type": "string"}));
        properties.insert("kind".into(), json!({"type": "string"}));
        properties.insert(
            "metadata".into(),
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        );
    }
}

fn flag(schema: &Value, key: &str) -> bool {
    schema.get(key) == Some(&Value::Bool(true))
}

/// Structural pruning and null handling, as the API server does before defaulting:
/// fields the schema does not declare are removed (each reported as strict field
/// validation does), `null`s of fields that are not `nullable` are removed so that their
/// default applies or `required` reports them.
fn prune(schema: &Value, value: &mut Value, path: &str, errors: &mut Vec<FieldError>) {
    match value {
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            let preserve = flag(schema, "x-kubernetes-preserve-unknown-fields");
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                let child_path = join_path(path, &key);
                let child_schema = properties.and_then(|p| p.get(&key)).or(additional);
                match child_schema {
                    None if preserve => {}
                    None => {
                        map.remove(&key);
                        errors.push(FieldError::unknown_field(child_path));
                    }
                    Some(child) => {
                        if map.get(&key).is_some_and(Value::is_null) && !flag(child, "nullable") {
                            map.remove(&key);
                        } else if let Some(child_value) = map.get_mut(&key) {
                            prune(child, child_value, &child_path, errors);
                        }
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    prune(item_schema, item, &format!("{path}[{i}]"), errors);
                }
            }
        }
        _ => {}
    }
}

fn join_path(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

// ---------------------------------------------------------------------------------------
// The structural schema as JSON Schema

/// Formats the API server checks that JSON Schema checks the same way. (`uri` is left
/// out: the API server accepts anything Go's `url.Parse` does.)
const CHECKED_FORMATS: [&str; 5] = ["date-time", "date", "uuid", "ipv4", "ipv6"];

/// Keywords whose meaning is the same in OpenAPI v3.0 and JSON Schema draft 4.
const SHARED_KEYWORDS: [&str; 14] = [
    "enum",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "pattern",
    "required",
    "uniqueItems",
];

/// Translates an OpenAPI v3.0 structural schema to JSON Schema draft 4: `nullable` becomes
/// a `null` member of `type` (and `enum`), `x-kubernetes-int-or-string` becomes
/// `type: [integer, string]`, descriptions, defaults and Kubernetes extensions are dropped.
/// Unknown fields need no `additionalProperties: false` here: they are pruned (and
/// reported) before this schema runs.
pub fn to_json_schema(schema: &Value) -> Value {
    let Some(node) = schema.as_object() else {
        return schema.clone();
    };
    let nullable = flag(schema, "nullable");
    let int_or_string = flag(schema, "x-kubernetes-int-or-string");
    let mut out = Map::new();
    for (key, value) in node {
        match key.as_str() {
            "properties" => {
                let properties = value
                    .as_object()
                    .map(|p| {
                        p.iter()
                            .map(|(name, child)| (name.clone(), to_json_schema(child)))
                            .collect::<Map<_, _>>()
                    })
                    .unwrap_or_default();
                out.insert(key.clone(), Value::Object(properties));
            }
            "items" | "additionalProperties" | "not" if value.is_object() => {
                out.insert(key.clone(), to_json_schema(value));
            }
            "allOf" | "anyOf" | "oneOf" if !int_or_string => {
                let branches = value
                    .as_array()
                    .map(|b| b.iter().map(to_json_schema).collect())
                    .unwrap_or_default();
                out.insert(key.clone(), Value::Array(branches));
            }
            "enum" if nullable => {
                let mut options = value.as_array().cloned().unwrap_or_default();
                options.push(Value::Null);
                out.insert(key.clone(), Value::Array(options));
            }
            "format" if value.as_str().is_some_and(|f| CHECKED_FORMATS.contains(&f)) => {
                out.insert(key.clone(), value.clone());
            }
            key if SHARED_KEYWORDS.contains(&key) => {
                out.insert(key.to_string(), value.clone());
            }
            _ => {}
        }
    }
    let types: Vec<Value> = if int_or_string {
        vec![json!("integer"), json!("string")]
    } else {
        node.get("type").cloned().into_iter().collect()
    };
    if !types.is_empty() {
        let mut types = types;
        if nullable {
            types.push(json!("null"));
        }
        let value = match types.as_slice() {
            [single] => single.clone(),
            _ => Value::Array(types),
        };
        out.insert("type".into(), value);
    }
    Value::Object(out)
}

/// A JSON pointer into the instance as a Kubernetes field path
/// (`/spec/plugins/score/enabled/0/weight` -> `spec.plugins.score.enabled[0].weight`).
fn field_path(pointer: &str, instance: &Value) -> String {
    let mut path = String::new();
    let mut value = Some(instance);
    for raw in pointer.split('/').skip(1) {
        let segment = raw.replace("~1", "/").replace("~0", "~");
        match value {
            Some(Value::Array(items)) => {
                path.push_str(&format!("[{segment}]"));
                value = segment.parse::<usize>().ok().and_then(|i| items.get(i));
            }
            _ => {
                value = value.and_then(|v| v.get(&segment));
                path = join_path(&path, &segment);
            }
        }
    }
    path
}

/// The schema node holding the keyword an error comes from (the pointer minus its last
/// segment).
fn schema_node<'a>(schema: &'a Value, keyword_pointer: &str) -> &'a Value {
    let node = keyword_pointer
        .rsplit_once('/')
        .map_or("", |(parent, _)| parent);
    schema.pointer(node).unwrap_or(&Value::Null)
}

/// One JSON Schema error as the API server words it.
fn schema_field_error(
    kind: &jsonschema::error::ValidationErrorKind,
    path: String,
    value: &Value,
    node: &Value,
) -> FieldError {
    use jsonschema::error::ValidationErrorKind as Kind;
    match kind {
        Kind::Type { .. } => FieldError::invalid(
            path,
            value,
            format!("must be of type {}", expected_types(node)),
        ),
        Kind::Enum { options } => {
            let supported: Vec<String> = options
                .as_array()
                .into_iter()
                .flatten()
                .filter(|option| !option.is_null())
                .map(|option| match option {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            FieldError::not_supported(path, value, &supported)
        }
        Kind::Required { property } => {
            let field = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_string);
            FieldError::required(join_path(&path, &field), "")
        }
        Kind::Minimum { .. } | Kind::ExclusiveMinimum { .. } => {
            FieldError::invalid(path, value, range_message(node, Bound::Lower))
        }
        Kind::Maximum { .. } | Kind::ExclusiveMaximum { .. } => {
            FieldError::invalid(path, value, range_message(node, Bound::Upper))
        }
        Kind::MaxItems { limit } => {
            FieldError::too_many(path, value.as_array().map_or(0, Vec::len), *limit)
        }
        Kind::MinItems { limit } => {
            FieldError::invalid(path, value, format!("must have at least {limit} items"))
        }
        Kind::MaxLength { limit } => FieldError::too_long(path, *limit),
        Kind::MinLength { limit } => FieldError::invalid(
            path,
            value,
            format!("must be at least {limit} characters long"),
        ),
        Kind::Pattern { pattern } => FieldError::invalid(
            path,
            value,
            format!("must match the regular expression '{pattern}'"),
        ),
        Kind::Format { format } => {
            FieldError::invalid(path, value, format!("must be a valid {format}"))
        }
        Kind::MaxProperties { limit } => {
            FieldError::too_many(path, value.as_object().map_or(0, Map::len), *limit)
        }
        Kind::MinProperties { limit } => FieldError::invalid(
            path,
            value,
            format!("must have at least {limit} properties"),
        ),
        Kind::UniqueItems => FieldError::invalid(path, value, "must not contain duplicate items"),
        other => FieldError::invalid(
            path,
            value,
            format!("does not match the schema ({other:?})"),
        ),
    }
}

fn expected_types(node: &Value) -> String {
    let types: Vec<&str> = match node.get("type") {
        Some(Value::String(single)) => vec![single.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let types: Vec<&str> = types.into_iter().filter(|t| *t != "null").collect();
    types.join(" or ")
}

#[derive(Clone, Copy)]
enum Bound {
    Lower,
    Upper,
}

/// `must be between A and B` when the field has both inclusive bounds, else the one
/// bound that was crossed.
fn range_message(node: &Value, crossed: Bound) -> String {
    let min = node.get("minimum").and_then(format_number);
    let max = node.get("maximum").and_then(format_number);
    let exclusive_min = flag(node, "exclusiveMinimum");
    let exclusive_max = flag(node, "exclusiveMaximum");
    match (min, max, crossed) {
        (Some(min), Some(max), _) if !exclusive_min && !exclusive_max => {
            format!("must be between {min} and {max}")
        }
        (Some(min), _, Bound::Lower) if exclusive_min => format!("must be greater than {min}"),
        (Some(min), _, Bound::Lower) => format!("must be greater than or equal to {min}"),
        (_, Some(max), Bound::Upper) if exclusive_max => format!("must be less than {max}"),
        (_, Some(max), Bound::Upper) => format!("must be less than or equal to {max}"),
        _ => "out of range".to_string(),
    }
}

/// Schema bounds are floats after the round trip through `JSONSchemaProps` (`1.0`); show
/// whole numbers without the fraction, as the user wrote them.
fn format_number(value: &Value) -> Option<String> {
    if let Some(int) = value.as_i64() {
        return Some(int.to_string());
    }
    let float = value.as_f64()?;
    if float.fract() == 0.0 && float.abs() < 1e15 {
        Some(format!("{}", float as i64))
    } else {
        Some(float.to_string())
    }
}

// ---------------------------------------------------------------------------------------
// CEL helpers

fn collect_rule_types(schema: &Value, types: &mut HashMap<String, String>) {
    let Some(node) = schema.as_object() else {
        return;
    };
    let node_type = node
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("object")
        .to_string();
    for rule in node
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(text) = rule.get("rule").and_then(Value::as_str) {
            types.insert(text.to_string(), node_type.clone());
        }
    }
    for (key, value) in node {
        match (key.as_str(), value) {
            ("properties", Value::Object(properties)) => properties
                .values()
                .for_each(|child| collect_rule_types(child, types)),
            ("items" | "additionalProperties", child) => collect_rule_types(child, types),
            ("allOf" | "anyOf" | "oneOf", Value::Array(branches)) => branches
                .iter()
                .for_each(|child| collect_rule_types(child, types)),
            _ => {}
        }
    }
}

fn collect_compilation_errors(schema: &CompiledSchema, errors: &mut Vec<String>) {
    errors.extend(
        schema
            .compilation_errors()
            .iter()
            .map(|error| error.to_string()),
    );
    let children = schema
        .properties
        .values()
        .chain(schema.items.as_deref())
        .chain(schema.additional_properties.as_deref())
        .chain(&schema.all_of)
        .chain(&schema.one_of)
        .chain(&schema.any_of);
    for child in children {
        collect_compilation_errors(child, errors);
    }
}

#[cfg(test)]
mod tests;
