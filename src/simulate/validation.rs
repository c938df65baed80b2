//! The API server's validation of the objects `berth simulate` reads, for the fields the
//! scheduler reads.
//!
//! A live cluster never holds a pod with `cpu: "-5"`, a label key `a/b/c` or a toleration
//! with `operator: Foo`: the API server refuses them on create. The simulator must refuse
//! them too, or it schedules input no cluster could hold (a negative request makes room on
//! a node; a 65,000-character name breaks the report). This module mirrors
//! `pkg/apis/core/validation` (and apimachinery's `ValidateObjectMeta`,
//! `ValidateLabelSelector`, `IsQualifiedName`, ...) for what scheduling depends on: names,
//! namespaces, labels and annotations, resource names and quantities, taints and
//! tolerations, node and pod affinity, topology spread constraints, container ports,
//! scheduling gates, workload selectors and templates, volume claims and volumes. Fields
//! the scheduler never looks at (container images, probes, env, ...) are left alone.
//!
//! Each error reads as the API server words it (`spec.tolerations[0].operator:
//! Unsupported value: "Foo": supported values: "Equal", "Exists"`), with the path from the
//! object root; [`check`] turns the first one into an [`InputError`] that also names the
//! file and document (and the `items[i].` of a List). The rules run after the defaults the
//! API server applies before validating (`requests` copied from `limits`, default
//! tolerations), as they do upstream.
//!
//! Workload kinds that carry a pod template reuse [`object_meta`] and
//! [`pod_template_spec`] with their own path prefix (`spec.template`, or
//! `spec.jobTemplate.spec.template`).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    Affinity, Container, ContainerPort, Namespace, Node, NodeSelector, NodeSelectorRequirement,
    NodeSelectorTerm, PersistentVolume, PersistentVolumeClaim, Pod, PodAffinityTerm, PodSpec,
    PodTemplateSpec, ReplicationController, ResourceRequirements, Service, Taint, Toleration,
    TopologySpreadConstraint,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

use super::input::{InputError, Source};
use crate::api::PodGroup;
use crate::cluster::{is_extended_resource_name, parse_milli_value};
use crate::framework::FieldError;

/// `errors`, if any, as an input error at `at` naming every field, as the API server
/// lists them all; `prefix` is the object's path in its document (`items[3].` in a List,
/// else empty).
pub fn check(mut errors: Vec<FieldError>, at: &Source, prefix: &str) -> Result<(), InputError> {
    for error in &mut errors {
        error.path = format!("{prefix}{}", error.path);
    }
    let at = at.clone();
    match errors.len() {
        0 => Ok(()),
        1 => Err(InputError::Field {
            at,
            error: errors.remove(0),
        }),
        _ => Err(InputError::Fields { at, errors }),
    }
}

// ---------------------------------------------------------------------------------------
// Paths

fn child(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

fn key(path: &str, key: &str) -> String {
    format!("{path}[{key}]")
}

fn string(value: &str) -> Value {
    Value::from(value)
}

// ---------------------------------------------------------------------------------------
// Names (apimachinery `util/validation`)

const DNS1123_LABEL_MAX: usize = 63;
const DNS1123_SUBDOMAIN_MAX: usize = 253;
const QUALIFIED_NAME_MAX: usize = 63;
const LABEL_VALUE_MAX: usize = 63;
/// `TotalAnnotationSizeLimitB`: 256 KiB for all annotation keys and values together.
const ANNOTATIONS_MAX_BYTES: usize = 256 * 1024;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// apimachinery's `RegexError`: the message, the examples and the pattern.
fn regex_error(message: &str, pattern: &str, examples: &[&str]) -> String {
    let examples: String = examples
        .iter()
        .map(|e| format!("'{e}', "))
        .collect::<Vec<_>>()
        .join(" or ");
    if examples.is_empty() {
        format!("{message} (regex used for validation is '{pattern}')")
    } else {
        format!("{message} (e.g. {examples}regex used for validation is '{pattern}')")
    }
}

fn max_len_error(max: usize) -> String {
    format!("must be no more than {max} characters")
}

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

fn is_dns1123_label_text(value: &str) -> bool {
    let bytes = value.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => {
            is_lower_alnum(first)
                && is_lower_alnum(last)
                && bytes.iter().all(|&b| is_lower_alnum(b) || b == b'-')
        }
        _ => false,
    }
}

/// `IsDNS1123Label`: names of namespaces, StatefulSets, containers.
pub fn dns1123_label(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > DNS1123_LABEL_MAX {
        errors.push(max_len_error(DNS1123_LABEL_MAX));
    }
    if !is_dns1123_label_text(value) {
        errors.push(regex_error(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
            DNS1123_LABEL_FMT,
            &["my-name", "123-abc"],
        ));
    }
    errors
}

/// `IsDNS1123Subdomain`: names of most objects (pods, nodes, workloads, ...).
pub fn dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX {
        errors.push(max_len_error(DNS1123_SUBDOMAIN_MAX));
    }
    if !value.split('.').all(is_dns1123_label_text) {
        errors.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            &format!("{DNS1123_LABEL_FMT}(\\.{DNS1123_LABEL_FMT})*"),
            &["example.com"],
        ));
    }
    errors
}

/// `IsDNS1035Label`: names of Services.
pub fn dns1035_label(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > DNS1123_LABEL_MAX {
        errors.push(max_len_error(DNS1123_LABEL_MAX));
    }
    let starts_alpha = value.as_bytes().first().is_some_and(u8::is_ascii_lowercase);
    if !(starts_alpha && is_dns1123_label_text(value)) {
        errors.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errors
}

fn is_qualified_name_text(value: &str) -> bool {
    let bytes = value.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `IsQualifiedName`: label and annotation keys, taint and toleration keys, topology
/// keys, scheduling gate names: `[prefix/]name`, the prefix a DNS subdomain.
pub fn qualified_name(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_string());
            } else {
                errors.extend(
                    dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|message| format!("prefix part {message}")),
                );
            }
            name
        }
        _ => {
            errors.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errors;
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_string());
    } else if name.len() > QUALIFIED_NAME_MAX {
        errors.push(format!("name part {}", max_len_error(QUALIFIED_NAME_MAX)));
    }
    if !is_qualified_name_text(name) {
        errors.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errors
}

/// `IsValidLabelValue`: empty, or a qualified name part of at most 63 characters.
pub fn label_value(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > LABEL_VALUE_MAX {
        errors.push(max_len_error(LABEL_VALUE_MAX));
    }
    if !value.is_empty() && !is_qualified_name_text(value) {
        errors.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            &format!("({QUALIFIED_NAME_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

/// Each message of a name rule as an `Invalid value` error at `path`.
fn invalid_each(path: &str, value: &str, messages: Vec<String>) -> Vec<FieldError> {
    messages
        .into_iter()
        .map(|message| FieldError::invalid(path, &string(value), message))
        .collect()
}

/// `ValidateLabelName`.
fn label_name(value: &str, path: &str) -> Vec<FieldError> {
    invalid_each(path, value, qualified_name(value))
}

/// `ValidateLabels`: keys are qualified names, values label values; errors sit on the
/// map itself, as upstream reports them.
pub fn labels(labels: Option<&BTreeMap<String, String>>, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (k, v) in labels.into_iter().flatten() {
        errors.extend(label_name(k, path));
        errors.extend(invalid_each(path, v, label_value(v)));
    }
    errors
}

fn annotations(annotations: Option<&BTreeMap<String, String>>, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut total = 0usize;
    for (k, v) in annotations.into_iter().flatten() {
        errors.extend(invalid_each(path, k, qualified_name(&k.to_lowercase())));
        total = total.saturating_add(k.len()).saturating_add(v.len());
    }
    if total > ANNOTATIONS_MAX_BYTES {
        errors.push(FieldError::too_long(path, ANNOTATIONS_MAX_BYTES as u64));
    }
    errors
}

/// How a kind's names are checked (`ValidateObjectMeta`'s `nameFn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// `NameIsDNSSubdomain`: at most 253 characters, lowercase, dots allowed.
    DnsSubdomain,
    /// `NameIsDNSLabel`: at most 63 characters, no dots (Namespaces, StatefulSets).
    DnsLabel,
    /// `NameIsDNS1035Label`: a DNS label that starts with a letter (Services).
    Dns1035Label,
}

/// `ValidateObjectMeta` for what the scheduler reads: the name by `rule`, the namespace
/// (a DNS label) of namespaced kinds, labels, annotations. `path` is `metadata` or a
/// template's (`spec.template.metadata`), whose name and namespace are not checked.
pub fn object_meta(meta: &ObjectMeta, rule: NameRule, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if let Some(name) = meta.name.as_deref().filter(|n| !n.is_empty()) {
        let messages = match rule {
            NameRule::DnsSubdomain => dns1123_subdomain(name),
            NameRule::DnsLabel => dns1123_label(name),
            NameRule::Dns1035Label => dns1035_label(name),
        };
        errors.extend(invalid_each(&child(path, "name"), name, messages));
    }
    if let Some(namespace) = meta.namespace.as_deref().filter(|n| !n.is_empty()) {
        errors.extend(invalid_each(
            &child(path, "namespace"),
            namespace,
            dns1123_label(namespace),
        ));
    }
    errors.extend(labels(meta.labels.as_ref(), &child(path, "labels")));
    errors.extend(annotations(
        meta.annotations.as_ref(),
        &child(path, "annotations"),
    ));
    errors
}

/// `ValidateLabelSelector`: matchLabels as labels, each expression's key, operator and
/// values.
pub fn label_selector(selector: Option<&LabelSelector>, path: &str) -> Vec<FieldError> {
    let Some(selector) = selector else {
        return Vec::new();
    };
    let mut errors = labels(selector.match_labels.as_ref(), &child(path, "matchLabels"));
    let expressions_path = child(path, "matchExpressions");
    for (i, expression) in selector.match_expressions.iter().flatten().enumerate() {
        let at = index(&expressions_path, i);
        let values = expression.values.as_deref().unwrap_or_default();
        match expression.operator.as_str() {
            "In" | "NotIn" if values.is_empty() => errors.push(FieldError::required(
                child(&at, "values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => errors.push(FieldError::forbidden(
                child(&at, "values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errors.push(FieldError::invalid(
                child(&at, "operator"),
                &string(other),
                "not a valid selector operator",
            )),
        }
        errors.extend(label_name(&expression.key, &child(&at, "key")));
        for (j, value) in values.iter().enumerate() {
            errors.extend(invalid_each(
                &index(&child(&at, "values"), j),
                value,
                label_value(value),
            ));
        }
    }
    errors
}

// ---------------------------------------------------------------------------------------
// Resources and quantities

/// apimachinery's grammar for quantities, shown when one does not parse.
const QUANTITY_REGEX_ERROR: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const NEGATIVE: &str = "must be greater than or equal to 0";
const NOT_POSITIVE: &str = "must be greater than zero";

/// The quantity in thousandths, or the error a decode of it gives.
fn milli(resource: &str, quantity: &Quantity, path: &str) -> Result<i64, FieldError> {
    parse_milli_value(resource, quantity)
        .map_err(|_| FieldError::invalid(path, &string(&quantity.0), QUANTITY_REGEX_ERROR))
}

/// Resources counted in whole units: `pods` and extended resources (`IsIntegerResourceName`).
fn is_integer_resource(name: &str) -> bool {
    name == "pods" || is_extended_resource_name(name)
}

/// `ValidateResourceQuantityValue`: parses, is not negative, whole for integer resources.
fn quantity_value(resource: &str, quantity: &Quantity, path: &str) -> Vec<FieldError> {
    match milli(resource, quantity, path) {
        Err(error) => vec![error],
        Ok(value) if value < 0 => vec![FieldError::invalid(path, &string(&quantity.0), NEGATIVE)],
        Ok(value) if is_integer_resource(resource) && value % 1000 != 0 => {
            vec![FieldError::invalid(
                path,
                &string(&quantity.0),
                "must be an integer",
            )]
        }
        Ok(_) => Vec::new(),
    }
}

/// `ValidatePositiveQuantityValue`.
fn positive_quantity(resource: &str, quantity: &Quantity, path: &str) -> Vec<FieldError> {
    match milli(resource, quantity, path) {
        Err(error) => vec![error],
        Ok(value) if value <= 0 => {
            vec![FieldError::invalid(
                path,
                &string(&quantity.0),
                NOT_POSITIVE,
            )]
        }
        Ok(_) => Vec::new(),
    }
}

fn is_standard_container_resource(name: &str) -> bool {
    matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-")
}

/// `validateContainerResourceName`.
fn container_resource_name(name: &str, path: &str) -> Vec<FieldError> {
    let mut errors = invalid_each(path, name, qualified_name(name));
    if !errors.is_empty() {
        return errors;
    }
    if !name.contains('/') {
        if !is_standard_container_resource(name) {
            errors.push(FieldError::invalid(
                path,
                &string(name),
                "must be a standard resource for containers",
            ));
        }
    } else if !name.contains("kubernetes.io/") && !is_extended_resource_name(name) {
        errors.push(FieldError::invalid(
            path,
            &string(name),
            "doesn't follow extended resource name standard",
        ));
    }
    errors
}

/// Native resources may be overcommitted (request below limit); hugepages and extended
/// resources may not (`IsOvercommitAllowed`).
fn overcommit_allowed(name: &str) -> bool {
    (!name.contains('/') || name.contains("kubernetes.io/")) && !name.starts_with("hugepages-")
}

/// `ValidateResourceRequirements` of a container (or of the pod, `spec.resources`).
pub fn resource_requirements(
    resources: Option<&ResourceRequirements>,
    path: &str,
) -> Vec<FieldError> {
    let Some(resources) = resources else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    let limits_path = child(path, "limits");
    let requests_path = child(path, "requests");
    let empty = BTreeMap::new();
    let limits = resources.limits.as_ref().unwrap_or(&empty);
    for (name, quantity) in limits {
        let at = key(&limits_path, name);
        errors.extend(container_resource_name(name, &at));
        errors.extend(quantity_value(name, quantity, &at));
    }
    for (name, quantity) in resources.requests.iter().flatten() {
        let at = key(&requests_path, name);
        errors.extend(container_resource_name(name, &at));
        let quantity_errors = quantity_value(name, quantity, &at);
        let parsed = quantity_errors.is_empty();
        errors.extend(quantity_errors);
        match limits.get(name) {
            Some(limit) if parsed => {
                let (Ok(request), Ok(limit_value)) =
                    (milli(name, quantity, &at), milli(name, limit, &at))
                else {
                    continue;
                };
                if request != limit_value && !overcommit_allowed(name) {
                    errors.push(FieldError::invalid(
                        &requests_path,
                        &string(&quantity.0),
                        format!("must be equal to {name} limit of {}", limit.0),
                    ));
                } else if request > limit_value {
                    errors.push(FieldError::invalid(
                        &requests_path,
                        &string(&quantity.0),
                        format!("must be less than or equal to {name} limit of {}", limit.0),
                    ));
                }
            }
            None if !overcommit_allowed(name) => errors.push(FieldError::required(
                &limits_path,
                "Limit must be set for non overcommitable resources",
            )),
            _ => {}
        }
    }
    errors
}

/// A node's capacity or allocatable: quantities valid and not negative, keyed as
/// `status.capacity.cpu` (upstream checks only the quantities here: resource names of
/// nodes come from device plugins and CSI drivers, and may be long).
fn resource_list(list: Option<&BTreeMap<String, Quantity>>, path: &str) -> Vec<FieldError> {
    list.into_iter()
        .flatten()
        .flat_map(|(name, quantity)| quantity_value(name, quantity, &child(path, name)))
        .collect()
}

// ---------------------------------------------------------------------------------------
// Taints and tolerations

const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// `validateTaintEffect`.
fn taint_effect(effect: Option<&str>, allow_empty: bool, path: &str) -> Vec<FieldError> {
    match effect.unwrap_or_default() {
        "" if !allow_empty => vec![FieldError::required(path, "")],
        "" => Vec::new(),
        effect if TAINT_EFFECTS.contains(&effect) => Vec::new(),
        effect => vec![FieldError::not_supported(
            path,
            &string(effect),
            &TAINT_EFFECTS,
        )],
    }
}

/// `validateNodeTaints`.
fn taints(taints: Option<&Vec<Taint>>, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, taint) in taints.into_iter().flatten().enumerate() {
        let at = index(path, i);
        errors.extend(label_name(&taint.key, &child(&at, "key")));
        let value = taint.value.as_deref().unwrap_or_default();
        let messages = label_value(value);
        if !messages.is_empty() {
            errors.push(FieldError::invalid(
                child(&at, "value"),
                &string(value),
                messages.join(";"),
            ));
        }
        errors.extend(taint_effect(
            Some(&taint.effect),
            false,
            &child(&at, "effect"),
        ));
        if !seen.insert((taint.key.as_str(), taint.effect.as_str())) {
            errors.push(FieldError::duplicate(
                &at,
                &string("taints must be unique by key and effect pair"),
                "",
            ));
        }
    }
    errors
}

/// `ValidateTolerations`.
pub fn tolerations(tolerations: Option<&Vec<Toleration>>, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, toleration) in tolerations.into_iter().flatten().enumerate() {
        let at = index(path, i);
        let key = toleration.key.as_deref().unwrap_or_default();
        let operator = toleration.operator.as_deref().unwrap_or_default();
        let value = toleration.value.as_deref().unwrap_or_default();
        let effect = toleration.effect.as_deref().unwrap_or_default();
        if !key.is_empty() {
            errors.extend(label_name(key, &child(&at, "key")));
        }
        if key.is_empty() && operator != "Exists" {
            errors.push(FieldError::invalid(
                child(&at, "operator"),
                &string(operator),
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        if toleration.toleration_seconds.is_some() && effect != "NoExecute" {
            errors.push(FieldError::invalid(
                child(&at, "effect"),
                &string(effect),
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        match operator {
            "Equal" | "" => {
                let messages = label_value(value);
                if !messages.is_empty() {
                    errors.push(FieldError::invalid(
                        child(&at, "operator"),
                        &string(value),
                        messages.join(";"),
                    ));
                }
            }
            "Exists" if !value.is_empty() => errors.push(FieldError::invalid(
                child(&at, "operator"),
                &serde_json::to_value(toleration).unwrap_or(Value::Null),
                "value must be empty when `operator` is 'Exists'",
            )),
            "Exists" => {}
            other => errors.push(FieldError::not_supported(
                child(&at, "operator"),
                &string(other),
                &["Equal", "Exists"],
            )),
        }
        errors.extend(taint_effect(Some(effect), true, &child(&at, "effect")));
    }
    errors
}

// ---------------------------------------------------------------------------------------
// Affinity

const NODE_SELECTOR_TERMS_REQUIRED: &str = "must have at least one node selector term";
const WEIGHT_RANGE: &str = "must be in the range 1-100";

/// `ValidateNodeSelector` (required node affinity, a PV's node affinity).
fn node_selector(selector: &NodeSelector, path: &str) -> Vec<FieldError> {
    let terms_path = child(path, "nodeSelectorTerms");
    if selector.node_selector_terms.is_empty() {
        return vec![FieldError::required(
            terms_path,
            NODE_SELECTOR_TERMS_REQUIRED,
        )];
    }
    selector
        .node_selector_terms
        .iter()
        .enumerate()
        .flat_map(|(i, term)| node_selector_term(term, &index(&terms_path, i)))
        .collect()
}

/// `ValidateNodeSelectorTerm`.
fn node_selector_term(term: &NodeSelectorTerm, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let expressions = child(path, "matchExpressions");
    for (j, requirement) in term.match_expressions.iter().flatten().enumerate() {
        errors.extend(node_selector_requirement(
            requirement,
            &index(&expressions, j),
        ));
    }
    let fields = child(path, "matchFields");
    for (j, requirement) in term.match_fields.iter().flatten().enumerate() {
        errors.extend(node_field_selector_requirement(
            requirement,
            &index(&fields, j),
        ));
    }
    errors
}

/// `ValidateNodeSelectorRequirement`. Like upstream, a `Gt`/`Lt` value that is not an
/// integer is not an error here: such a term matches no node.
fn node_selector_requirement(requirement: &NodeSelectorRequirement, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let values = requirement.values.as_deref().unwrap_or_default();
    let values_path = child(path, "values");
    match requirement.operator.as_str() {
        "In" | "NotIn" if values.is_empty() => errors.push(FieldError::required(
            &values_path,
            "must be specified when `operator` is 'In' or 'NotIn'",
        )),
        "Exists" | "DoesNotExist" if !values.is_empty() => errors.push(FieldError::forbidden(
            &values_path,
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )),
        "Gt" | "Lt" if values.len() != 1 => errors.push(FieldError::required(
            &values_path,
            "must be specified single value when `operator` is 'Lt' or 'Gt'",
        )),
        "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
        other => errors.push(FieldError::invalid(
            child(path, "operator"),
            &string(other),
            "not a valid selector operator",
        )),
    }
    errors.extend(label_name(&requirement.key, &child(path, "key")));
    errors
}

/// `ValidateNodeFieldSelectorRequirement`: only `metadata.name`, with `In`/`NotIn` and one
/// value.
fn node_field_selector_requirement(
    requirement: &NodeSelectorRequirement,
    path: &str,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let values = requirement.values.as_deref().unwrap_or_default();
    match requirement.operator.as_str() {
        "In" | "NotIn" if values.len() != 1 => errors.push(FieldError::required(
            child(path, "values"),
            "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
        )),
        "In" | "NotIn" => {}
        other => errors.push(FieldError::invalid(
            child(path, "operator"),
            &string(other),
            "not a valid selector operator",
        )),
    }
    if requirement.key != "metadata.name" {
        errors.push(FieldError::invalid(
            child(path, "key"),
            &string(&requirement.key),
            "not a valid field selector key",
        ));
    } else {
        for (i, value) in values.iter().enumerate() {
            errors.extend(invalid_each(
                &index(&child(path, "values"), i),
                value,
                dns1123_subdomain(value),
            ));
        }
    }
    errors
}

/// `validatePodAffinityTerm`.
fn pod_affinity_term(term: &PodAffinityTerm, path: &str) -> Vec<FieldError> {
    let mut errors = label_selector(term.label_selector.as_ref(), &child(path, "labelSelector"));
    errors.extend(label_selector(
        term.namespace_selector.as_ref(),
        &child(path, "namespaceSelector"),
    ));
    for namespace in term.namespaces.iter().flatten() {
        errors.extend(invalid_each(
            &child(path, "namespace"),
            namespace,
            dns1123_label(namespace),
        ));
    }
    errors.extend(match_label_keys(
        term.match_label_keys.as_deref(),
        term.label_selector.as_ref(),
        "matchLabelKeys",
        &child(path, "matchLabelKeys"),
    ));
    errors.extend(match_label_keys(
        term.mismatch_label_keys.as_deref(),
        term.label_selector.as_ref(),
        "mismatchLabelKeys",
        &child(path, "mismatchLabelKeys"),
    ));
    let topology_key = child(path, "topologyKey");
    if term.topology_key.is_empty() {
        errors.push(FieldError::required(topology_key, "can not be empty"));
    } else {
        errors.extend(label_name(&term.topology_key, &topology_key));
    }
    errors
}

/// The rules shared by `matchLabelKeys` (and `mismatchLabelKeys`) of affinity terms and
/// spread constraints: each a label key, not already a key of the label selector, and
/// only with a selector. `field` names the list in the message.
///
/// Since Kubernetes 1.33 the API server merges each such key into the pod's own
/// `labelSelector` on create, as a `key In [value]` expression, so a pod read back from a
/// cluster (`kubectl get -o yaml`) carries both; that merged form is not a conflict.
fn match_label_keys(
    keys: Option<&[String]>,
    selector: Option<&LabelSelector>,
    field: &str,
    path: &str,
) -> Vec<FieldError> {
    let keys = keys.unwrap_or_default();
    if keys.is_empty() {
        return Vec::new();
    }
    let Some(selector) = selector else {
        return vec![FieldError::forbidden(
            path,
            "must not be specified when labelSelector is not set",
        )];
    };
    let merged = |e: &&LabelSelectorRequirement| {
        e.operator == "In" && e.values.as_ref().is_some_and(|v| v.len() == 1)
    };
    let selector_keys: BTreeSet<&str> = selector
        .match_labels
        .iter()
        .flatten()
        .map(|(k, _)| k.as_str())
        .chain(
            selector
                .match_expressions
                .iter()
                .flatten()
                .filter(|e| !merged(e))
                .map(|e| e.key.as_str()),
        )
        .collect();
    let mut errors = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let at = index(path, i);
        errors.extend(label_name(k, &at));
        if selector_keys.contains(k.as_str()) {
            errors.push(FieldError::invalid(
                at,
                &string(k),
                format!("exists in both {field} and labelSelector"),
            ));
        }
    }
    errors
}

/// `validateAffinity`: node affinity, pod affinity and anti-affinity.
fn affinity(affinity: Option<&Affinity>, path: &str) -> Vec<FieldError> {
    let Some(affinity) = affinity else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    if let Some(node) = &affinity.node_affinity {
        let at = child(path, "nodeAffinity");
        if let Some(required) = &node.required_during_scheduling_ignored_during_execution {
            errors.extend(node_selector(
                required,
                &child(&at, "requiredDuringSchedulingIgnoredDuringExecution"),
            ));
        }
        let preferred = child(&at, "preferredDuringSchedulingIgnoredDuringExecution");
        for (i, term) in node
            .preferred_during_scheduling_ignored_during_execution
            .iter()
            .flatten()
            .enumerate()
        {
            let term_path = index(&preferred, i);
            if !(1..=100).contains(&term.weight) {
                errors.push(FieldError::invalid(
                    child(&term_path, "weight"),
                    &Value::from(term.weight),
                    WEIGHT_RANGE,
                ));
            }
            errors.extend(node_selector_term(
                &term.preference,
                &child(&term_path, "preference"),
            ));
        }
    }
    let pod_terms = [
        (
            "podAffinity",
            affinity.pod_affinity.as_ref().map(|a| {
                (
                    &a.required_during_scheduling_ignored_during_execution,
                    &a.preferred_during_scheduling_ignored_during_execution,
                )
            }),
        ),
        (
            "podAntiAffinity",
            affinity.pod_anti_affinity.as_ref().map(|a| {
                (
                    &a.required_during_scheduling_ignored_during_execution,
                    &a.preferred_during_scheduling_ignored_during_execution,
                )
            }),
        ),
    ];
    for (field, terms) in pod_terms {
        let Some((required, preferred)) = terms else {
            continue;
        };
        let at = child(path, field);
        let required_path = child(&at, "requiredDuringSchedulingIgnoredDuringExecution");
        for (i, term) in required.iter().flatten().enumerate() {
            errors.extend(pod_affinity_term(term, &index(&required_path, i)));
        }
        let preferred_path = child(&at, "preferredDuringSchedulingIgnoredDuringExecution");
        for (i, term) in preferred.iter().flatten().enumerate() {
            let term_path = index(&preferred_path, i);
            if !(1..=100).contains(&term.weight) {
                errors.push(FieldError::invalid(
                    child(&term_path, "weight"),
                    &Value::from(term.weight),
                    WEIGHT_RANGE,
                ));
            }
            errors.extend(pod_affinity_term(
                &term.pod_affinity_term,
                &child(&term_path, "podAffinityTerm"),
            ));
        }
    }
    errors
}

// ---------------------------------------------------------------------------------------
// Topology spread constraints

const WHEN_UNSATISFIABLE: [&str; 2] = ["DoNotSchedule", "ScheduleAnyway"];
const INCLUSION_POLICIES: [&str; 2] = ["Honor", "Ignore"];

/// `validateTopologySpreadConstraints`.
fn topology_spread_constraints(
    constraints: Option<&Vec<TopologySpreadConstraint>>,
    path: &str,
) -> Vec<FieldError> {
    let constraints = constraints.map(Vec::as_slice).unwrap_or_default();
    let mut errors = Vec::new();
    for (i, constraint) in constraints.iter().enumerate() {
        let at = index(path, i);
        if constraint.max_skew <= 0 {
            errors.push(FieldError::invalid(
                child(&at, "maxSkew"),
                &Value::from(constraint.max_skew),
                NOT_POSITIVE,
            ));
        }
        if constraint.topology_key.is_empty() {
            errors.push(FieldError::required(
                child(&at, "topologyKey"),
                "can not be empty",
            ));
        } else {
            errors.extend(label_name(
                &constraint.topology_key,
                &child(&at, "topologyKey"),
            ));
        }
        let action = constraint.when_unsatisfiable.as_str();
        if !WHEN_UNSATISFIABLE.contains(&action) {
            errors.push(FieldError::not_supported(
                child(&at, "whenUnsatisfiable"),
                &string(action),
                &WHEN_UNSATISFIABLE,
            ));
        }
        let repeated = constraints[i + 1..].iter().any(|later| {
            later.topology_key == constraint.topology_key
                && later.when_unsatisfiable == constraint.when_unsatisfiable
        });
        if repeated {
            errors.push(FieldError::duplicate(
                child(&at, "{topologyKey, whenUnsatisfiable}"),
                &string(&format!("{{{}, {}}}", constraint.topology_key, action)),
                "",
            ));
        }
        if let Some(min_domains) = constraint.min_domains {
            let min_path = child(&at, "minDomains");
            if min_domains <= 0 {
                errors.push(FieldError::invalid(
                    &min_path,
                    &Value::from(min_domains),
                    NOT_POSITIVE,
                ));
            }
            if action != "DoNotSchedule" {
                errors.push(FieldError::invalid(
                    &min_path,
                    &Value::from(min_domains),
                    format!(
                        "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"
                    ),
                ));
            }
        }
        for (field, policy) in [
            ("nodeAffinityPolicy", &constraint.node_affinity_policy),
            ("nodeTaintsPolicy", &constraint.node_taints_policy),
        ] {
            if let Some(policy) = policy.as_deref()
                && !INCLUSION_POLICIES.contains(&policy)
            {
                errors.push(FieldError::not_supported(
                    child(&at, field),
                    &string(policy),
                    &INCLUSION_POLICIES,
                ));
            }
        }
        errors.extend(match_label_keys(
            constraint.match_label_keys.as_deref(),
            constraint.label_selector.as_ref(),
            "matchLabelKeys",
            &child(&at, "matchLabelKeys"),
        ));
        errors.extend(label_selector(
            constraint.label_selector.as_ref(),
            &child(&at, "labelSelector"),
        ));
    }
    errors
}

// ---------------------------------------------------------------------------------------
// Pods

const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];
const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

/// `validateContainerPorts` for what the scheduler reads: the port numbers and protocol.
fn container_ports(ports: Option<&Vec<ContainerPort>>, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, port) in ports.into_iter().flatten().enumerate() {
        let at = index(path, i);
        if port.container_port == 0 {
            errors.push(FieldError::required(child(&at, "containerPort"), ""));
        } else if !(1..=65535).contains(&port.container_port) {
            errors.push(FieldError::invalid(
                child(&at, "containerPort"),
                &Value::from(port.container_port),
                PORT_RANGE,
            ));
        }
        if let Some(host_port) = port.host_port.filter(|p| *p != 0)
            && !(1..=65535).contains(&host_port)
        {
            errors.push(FieldError::invalid(
                child(&at, "hostPort"),
                &Value::from(host_port),
                PORT_RANGE,
            ));
        }
        if let Some(protocol) = port.protocol.as_deref()
            && !PROTOCOLS.contains(&protocol)
        {
            errors.push(FieldError::not_supported(
                child(&at, "protocol"),
                &string(protocol),
                &PROTOCOLS,
            ));
        }
    }
    errors
}

fn container(container: &Container, path: &str) -> Vec<FieldError> {
    let mut errors = resource_requirements(container.resources.as_ref(), &child(path, "resources"));
    errors.extend(container_ports(
        container.ports.as_ref(),
        &child(path, "ports"),
    ));
    errors
}

/// `ValidatePodSpec` for the fields the scheduler reads. `path` is `spec` for a pod,
/// `spec.template.spec` for a workload.
pub fn pod_spec(spec: &PodSpec, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (field, containers) in [
        ("containers", Some(&spec.containers)),
        ("initContainers", spec.init_containers.as_ref()),
    ] {
        let at = child(path, field);
        for (i, c) in containers.into_iter().flatten().enumerate() {
            errors.extend(container(c, &index(&at, i)));
        }
    }
    errors.extend(resource_requirements(
        spec.resources.as_ref(),
        &child(path, "resources"),
    ));
    // Upstream validates the overhead as the limits of a resource requirement.
    let overhead = ResourceRequirements {
        limits: spec.overhead.clone(),
        ..Default::default()
    };
    errors.extend(resource_requirements(
        Some(&overhead),
        &child(path, "overhead"),
    ));
    errors.extend(labels(
        spec.node_selector.as_ref(),
        &child(path, "nodeSelector"),
    ));
    errors.extend(affinity(spec.affinity.as_ref(), &child(path, "affinity")));
    errors.extend(tolerations(
        spec.tolerations.as_ref(),
        &child(path, "tolerations"),
    ));
    errors.extend(topology_spread_constraints(
        spec.topology_spread_constraints.as_ref(),
        &child(path, "topologySpreadConstraints"),
    ));
    let gates = child(path, "schedulingGates");
    let mut seen = BTreeSet::new();
    for (i, gate) in spec.scheduling_gates.iter().flatten().enumerate() {
        let at = index(&gates, i);
        errors.extend(invalid_each(
            &child(&at, "name"),
            &gate.name,
            qualified_name(&gate.name),
        ));
        if !seen.insert(gate.name.as_str()) {
            errors.push(FieldError::duplicate(&at, &string(&gate.name), ""));
        }
    }
    // Names of other objects the pod refers to: a node, its scheduler (the report's
    // PROFILE column), its PriorityClass.
    for (field, name) in [
        ("nodeName", &spec.node_name),
        ("schedulerName", &spec.scheduler_name),
        ("priorityClassName", &spec.priority_class_name),
    ] {
        if let Some(name) = name.as_deref().filter(|n| !n.is_empty()) {
            errors.extend(invalid_each(
                &child(path, field),
                name,
                dns1123_subdomain(name),
            ));
        }
    }
    errors
}

/// `ValidatePodTemplateSpec`: the template's labels and annotations, and its pod spec.
/// `path` is the template's (`spec.template`).
pub fn pod_template_spec(template: Option<&PodTemplateSpec>, path: &str) -> Vec<FieldError> {
    let Some(template) = template else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    if let Some(meta) = &template.metadata {
        let meta_path = child(path, "metadata");
        errors.extend(labels(meta.labels.as_ref(), &child(&meta_path, "labels")));
        errors.extend(annotations(
            meta.annotations.as_ref(),
            &child(&meta_path, "annotations"),
        ));
    }
    if let Some(spec) = &template.spec {
        errors.extend(pod_spec(spec, &child(path, "spec")));
    }
    errors
}

pub fn pod(pod: &Pod) -> Vec<FieldError> {
    let mut errors = object_meta(&pod.metadata, NameRule::DnsSubdomain, "metadata");
    if let Some(spec) = &pod.spec {
        errors.extend(pod_spec(spec, "spec"));
    }
    errors
}

// ---------------------------------------------------------------------------------------
// Nodes

pub fn node(node: &Node) -> Vec<FieldError> {
    let mut errors = object_meta(&node.metadata, NameRule::DnsSubdomain, "metadata");
    if let Some(spec) = &node.spec {
        errors.extend(taints(spec.taints.as_ref(), "spec.taints"));
    }
    if let Some(status) = &node.status {
        errors.extend(resource_list(status.capacity.as_ref(), "status.capacity"));
        errors.extend(resource_list(
            status.allocatable.as_ref(),
            "status.allocatable",
        ));
    }
    errors
}

pub fn csi_node(csi_node: &CSINode) -> Vec<FieldError> {
    let mut errors = object_meta(&csi_node.metadata, NameRule::DnsSubdomain, "metadata");
    for (i, driver) in csi_node.spec.drivers.iter().enumerate() {
        let count = driver.allocatable.as_ref().and_then(|a| a.count);
        if let Some(count) = count.filter(|c| *c < 0) {
            errors.push(FieldError::invalid(
                format!("spec.drivers[{i}].allocatable.count"),
                &Value::from(count),
                NEGATIVE,
            ));
        }
    }
    errors
}

// ---------------------------------------------------------------------------------------
// PodGroups

/// A PodGroup as the API server validates it with berth's CRD (schema, bounds, unknown
/// fields; [`crate::schema::validate_pod_group`]) plus its metadata, as for any custom
/// resource. `raw` is the document before decoding.
pub fn pod_group_document(raw: &Value) -> Vec<FieldError> {
    crate::schema::validate_pod_group(raw)
}

pub fn pod_group(group: &PodGroup) -> Vec<FieldError> {
    object_meta(&group.metadata, NameRule::DnsSubdomain, "metadata")
}

/// A SchedulerProfile document's metadata (admitted); the rest is validated against its
/// CRD later, with the plugin registry.
pub fn profile_document(raw: &Value) -> Vec<FieldError> {
    let meta: ObjectMeta = raw
        .get("metadata")
        .and_then(|meta| serde_json::from_value(meta.clone()).ok())
        .unwrap_or_default();
    object_meta(&meta, NameRule::DnsSubdomain, "metadata")
}

// ---------------------------------------------------------------------------------------
// Volumes

const ACCESS_MODES: [&str; 4] = [
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];

fn access_modes(modes: Option<&Vec<String>>, path: &str, required: &str) -> Vec<FieldError> {
    let modes = modes.map(Vec::as_slice).unwrap_or_default();
    if modes.is_empty() {
        return vec![FieldError::required(path, required)];
    }
    modes
        .iter()
        .filter(|mode| !ACCESS_MODES.contains(&mode.as_str()))
        .map(|mode| FieldError::not_supported(path, &string(mode), &ACCESS_MODES))
        .collect()
}

pub fn persistent_volume_claim(claim: &PersistentVolumeClaim) -> Vec<FieldError> {
    let mut errors = object_meta(&claim.metadata, NameRule::DnsSubdomain, "metadata");
    let Some(spec) = &claim.spec else {
        return errors;
    };
    errors.extend(access_modes(
        spec.access_modes.as_ref(),
        "spec.accessModes",
        "at least 1 access mode is required",
    ));
    let storage = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"));
    match storage {
        None if spec.data_source.is_none() && spec.data_source_ref.is_none() => {
            errors.push(FieldError::required("spec.resources[storage]", ""));
        }
        None => {}
        Some(quantity) => errors.extend(positive_quantity(
            "storage",
            quantity,
            "spec.resources[storage]",
        )),
    }
    errors.extend(label_selector(spec.selector.as_ref(), "spec.selector"));
    errors
}

pub fn persistent_volume(volume: &PersistentVolume) -> Vec<FieldError> {
    let mut errors = object_meta(&volume.metadata, NameRule::DnsSubdomain, "metadata");
    let Some(spec) = &volume.spec else {
        return errors;
    };
    errors.extend(access_modes(
        spec.access_modes.as_ref(),
        "spec.accessModes",
        "must specify at least 1 access mode",
    ));
    let capacity = spec.capacity.as_ref().filter(|c| !c.is_empty());
    match capacity {
        None => errors.push(FieldError::required("spec.capacity", "")),
        Some(capacity) => {
            if !capacity.contains_key("storage") || capacity.len() > 1 {
                let names: Vec<&String> = capacity.keys().collect();
                errors.push(FieldError::not_supported(
                    "spec.capacity",
                    &serde_json::to_value(names).unwrap_or(Value::Null),
                    &["storage"],
                ));
            }
            for (name, quantity) in capacity {
                errors.extend(positive_quantity(
                    name,
                    quantity,
                    &key("spec.capacity", name),
                ));
            }
        }
    }
    if let Some(required) = spec
        .node_affinity
        .as_ref()
        .and_then(|a| a.required.as_ref())
    {
        errors.extend(node_selector(required, "spec.nodeAffinity.required"));
    }
    errors
}

pub fn storage_class(class: &StorageClass) -> Vec<FieldError> {
    let mut errors = object_meta(&class.metadata, NameRule::DnsSubdomain, "metadata");
    const MODES: [&str; 2] = ["Immediate", "WaitForFirstConsumer"];
    if let Some(mode) = class.volume_binding_mode.as_deref()
        && !MODES.contains(&mode)
    {
        errors.push(FieldError::not_supported(
            "volumeBindingMode",
            &string(mode),
            &MODES,
        ));
    }
    errors
}

// ---------------------------------------------------------------------------------------
// Cluster-wide kinds

pub fn namespace(namespace: &Namespace) -> Vec<FieldError> {
    object_meta(&namespace.metadata, NameRule::DnsLabel, "metadata")
}

/// `HighestUserDefinablePriority`.
const HIGHEST_USER_PRIORITY: i32 = 1_000_000_000;

pub fn priority_class(class: &PriorityClass) -> Vec<FieldError> {
    let mut errors = object_meta(&class.metadata, NameRule::DnsSubdomain, "metadata");
    // Names with the `system-` prefix are reserved (the built-in classes); only user classes
    // are bounded.
    let name = class.metadata.name.as_deref().unwrap_or_default();
    if !name.starts_with("system-") && class.value > HIGHEST_USER_PRIORITY {
        errors.push(FieldError::forbidden(
            "value",
            format!("maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}"),
        ));
    }
    errors
}

// ---------------------------------------------------------------------------------------
// Workloads

/// `ValidateNonnegativeField` of a count (replicas, parallelism, completions).
fn replicas(replicas: Option<i32>, path: &str) -> Vec<FieldError> {
    match replicas {
        Some(n) if n < 0 => vec![FieldError::invalid(path, &Value::from(n), NEGATIVE)],
        _ => Vec::new(),
    }
}

pub fn pod_disruption_budget(budget: &PodDisruptionBudget) -> Vec<FieldError> {
    let mut errors = object_meta(&budget.metadata, NameRule::DnsSubdomain, "metadata");
    let Some(spec) = &budget.spec else {
        return errors;
    };
    if spec.min_available.is_some() && spec.max_unavailable.is_some() {
        errors.push(FieldError::invalid(
            "spec",
            &serde_json::to_value(spec).unwrap_or(Value::Null),
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for (field, value) in [
        ("spec.minAvailable", &spec.min_available),
        ("spec.maxUnavailable", &spec.max_unavailable),
    ] {
        if let Some(value) = value {
            errors.extend(positive_int_or_percent(value, field));
        }
    }
    errors.extend(label_selector(spec.selector.as_ref(), "spec.selector"));
    errors
}

/// `ValidatePositiveIntOrPercent` and `IsNotMoreThan100Percent`.
fn positive_int_or_percent(value: &IntOrString, path: &str) -> Vec<FieldError> {
    match value {
        IntOrString::Int(n) if *n < 0 => {
            vec![FieldError::invalid(path, &Value::from(*n), NEGATIVE)]
        }
        IntOrString::Int(_) => Vec::new(),
        IntOrString::String(s) => {
            let percent = s
                .strip_suffix('%')
                .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
            match percent {
                None => vec![FieldError::invalid(
                    path,
                    &string(s),
                    regex_error(
                        "a valid percent string must be a numeric string followed by an ending '%'",
                        "[0-9]+%",
                        &["1%", "93%"],
                    ),
                )],
                Some(digits)
                    if digits.len() > 3 || digits.parse::<u32>().is_ok_and(|p| p > 100) =>
                {
                    vec![FieldError::invalid(
                        path,
                        &string(s),
                        "must not be greater than 100%",
                    )]
                }
                Some(_) => Vec::new(),
            }
        }
    }
}

pub fn service(service: &Service) -> Vec<FieldError> {
    let mut errors = object_meta(&service.metadata, NameRule::Dns1035Label, "metadata");
    if let Some(spec) = &service.spec {
        errors.extend(labels(spec.selector.as_ref(), "spec.selector"));
    }
    errors
}

pub fn replication_controller(rc: &ReplicationController) -> Vec<FieldError> {
    let mut errors = object_meta(&rc.metadata, NameRule::DnsSubdomain, "metadata");
    if let Some(spec) = &rc.spec {
        errors.extend(replicas(spec.replicas, "spec.replicas"));
        errors.extend(labels(spec.selector.as_ref(), "spec.selector"));
        errors.extend(pod_template_spec(spec.template.as_ref(), "spec.template"));
    }
    errors
}

pub fn replica_set(rs: &ReplicaSet) -> Vec<FieldError> {
    let mut errors = object_meta(&rs.metadata, NameRule::DnsSubdomain, "metadata");
    if let Some(spec) = &rs.spec {
        errors.extend(replicas(spec.replicas, "spec.replicas"));
        errors.extend(label_selector(Some(&spec.selector), "spec.selector"));
        errors.extend(pod_template_spec(spec.template.as_ref(), "spec.template"));
    }
    errors
}

pub fn stateful_set(ss: &StatefulSet) -> Vec<FieldError> {
    let mut errors = object_meta(&ss.metadata, NameRule::DnsLabel, "metadata");
    if let Some(spec) = &ss.spec {
        errors.extend(replicas(spec.replicas, "spec.replicas"));
        errors.extend(label_selector(Some(&spec.selector), "spec.selector"));
        errors.extend(pod_template_spec(Some(&spec.template), "spec.template"));
    }
    errors
}

pub fn deployment(deployment: &Deployment) -> Vec<FieldError> {
    let mut errors = object_meta(&deployment.metadata, NameRule::DnsSubdomain, "metadata");
    if let Some(spec) = &deployment.spec {
        errors.extend(replicas(spec.replicas, "spec.replicas"));
        errors.extend(label_selector(Some(&spec.selector), "spec.selector"));
        errors.extend(pod_template_spec(Some(&spec.template), "spec.template"));
    }
    errors
}

pub fn daemon_set(daemon_set: &DaemonSet) -> Vec<FieldError> {
    let mut errors = object_meta(&daemon_set.metadata, NameRule::DnsSubdomain, "metadata");
    if let Some(spec) = &daemon_set.spec {
        errors.extend(label_selector(Some(&spec.selector), "spec.selector"));
        errors.extend(pod_template_spec(Some(&spec.template), "spec.template"));
    }
    errors
}

pub fn job(job: &Job) -> Vec<FieldError> {
    let mut errors = object_meta(&job.metadata, NameRule::DnsSubdomain, "metadata");
    if let Some(spec) = &job.spec {
        errors.extend(replicas(spec.parallelism, "spec.parallelism"));
        errors.extend(replicas(spec.completions, "spec.completions"));
        errors.extend(label_selector(spec.selector.as_ref(), "spec.selector"));
        errors.extend(pod_template_spec(Some(&spec.template), "spec.template"));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    /// apimachinery's own tables (`validation_test.go`) for the name rules.
    #[test]
    fn name_rules_follow_apimachinery() {
        type Rule = fn(&str) -> Vec<String>;
        let cases: [(&str, Rule, &str, bool); 16] = [
            ("label: simple", dns1123_label, "my-name", true),
            ("label: digits first", dns1123_label, "123-abc", true),
            ("label: 63 chars", dns1123_label, &"a".repeat(63), true),
            ("label: 64 chars", dns1123_label, &"a".repeat(64), false),
            ("label: dot", dns1123_label, "a.b", false),
            ("label: upper case", dns1123_label, "A", false),
            ("subdomain: dots", dns1123_subdomain, "example.com", true),
            (
                "subdomain: 253 chars",
                dns1123_subdomain,
                &"a".repeat(253),
                true,
            ),
            (
                "subdomain: 254 chars",
                dns1123_subdomain,
                &"a".repeat(254),
                false,
            ),
            ("subdomain: empty part", dns1123_subdomain, "a..b", false),
            ("1035: digit first", dns1035_label, "1abc", false),
            ("1035: letter first", dns1035_label, "abc-123", true),
            (
                "qualified: prefix",
                qualified_name,
                "example.com/MyName",
                true,
            ),
            ("qualified: two slashes", qualified_name, "a/b/c", false),
            ("qualified: empty prefix", qualified_name, "/a", false),
            (
                "qualified: underscore inside",
                qualified_name,
                "my_name",
                true,
            ),
        ];
        for (name, rule, value, valid) in cases {
            assert_eq!(rule(value).is_empty(), valid, "{name}: {:?}", rule(value));
        }
    }

    #[test]
    fn regex_errors_list_examples_as_apimachinery_does() {
        assert_eq!(
            qualified_name("a/b/c"),
            vec![
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ]
        );
    }

    /// The workloads other Kind arms load use the same template rules, at their own path.
    #[test]
    fn workload_templates_are_validated_at_their_path() {
        let template: PodTemplateSpec = serde_json::from_value(serde_json::json!({
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "-1"}}}]}
        }))
        .expect("template");
        let web = Deployment {
            metadata: ObjectMeta {
                name: Some("web".into()),
                ..Default::default()
            },
            spec: Some(k8s_openapi::api::apps::v1::DeploymentSpec {
                template: template.clone(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let batch = Job {
            metadata: ObjectMeta {
                name: Some("batch".into()),
                ..Default::default()
            },
            spec: Some(k8s_openapi::api::batch::v1::JobSpec {
                parallelism: Some(-2),
                template,
                ..Default::default()
            }),
            ..Default::default()
        };
        let first = |errors: Vec<FieldError>| errors.first().map(ToString::to_string);
        assert_eq!(
            first(deployment(&web)).as_deref(),
            Some(
                "spec.template.spec.containers[0].resources.requests[cpu]: Invalid value: \"-1\": must be greater than or equal to 0"
            )
        );
        assert_eq!(
            first(job(&batch)).as_deref(),
            Some("spec.parallelism: Invalid value: -2: must be greater than or equal to 0")
        );
    }
}
