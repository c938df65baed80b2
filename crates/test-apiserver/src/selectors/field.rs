//! Field selectors: a port of `k8s.io/apimachinery/pkg/fields/selector.go` (`=`, `==`, `!=`,
//! comma-joined, `\,` `\=` `\\` escapes in values) plus the per-kind field label
//! conversions and `GetAttrs` functions of the real server.
//!
//! | Resource | Field labels (besides none) |
//! | --- | --- |
//! | pods | `metadata.name`, `metadata.namespace`, `spec.nodeName` (and its legacy alias `spec.host`), `spec.restartPolicy`, `spec.schedulerName`, `spec.serviceAccountName`, `spec.hostNetwork`, `status.phase`, `status.podIP`, `status.podIPs` (accepted but, as upstream, always compares as ""), `status.nominatedNodeName` |
//! | nodes | `metadata.name`, `spec.unschedulable` |
//! | namespaces | `metadata.name`, `status.phase` |
//! | events (core/v1) | `metadata.name`, `metadata.namespace`, `involvedObject.{kind,namespace,name,uid,apiVersion,resourceVersion,fieldPath}`, `reason`, `reportingComponent`, `source`, `type` |
//! | events.events.k8s.io | `metadata.name`, `metadata.namespace`, `regarding.{kind,namespace,name,uid,apiVersion,resourceVersion,fieldPath}`, `reason`, `reportingController`, `type` |
//! | secrets | `metadata.name`, `metadata.namespace`, `type` |
//! | services | `metadata.name`, `metadata.namespace`, `spec.clusterIP`, `spec.type` |
//! | other built-in resources | `metadata.name`, `metadata.namespace` (message: `"x" is not a known field selector: only "metadata.name", "metadata.namespace"`) |
//! | custom resources | `metadata.name`, `metadata.namespace` if namespaced, the CRD's `selectableFields` ([`FieldSelector::parse_custom`]); others: `field label not supported: x` |
//!
//! Missing values compare as "" (booleans as "false" where upstream formats a bool).

use serde_json::Value;

/// A field requirement's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldOperator {
    /// `=` or `==`
    Equals,
    /// `!=`
    NotEquals,
}

/// One term of a field selector, with the field label already converted to the name the
/// matcher understands (e.g. `spec.host` -> `spec.nodeName`, `regarding.kind` ->
/// `involvedObject.kind`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    pub field: String,
    pub operator: FieldOperator,
    pub value: String,
}

/// Which field labels a resource supports and how their values are read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum Scope {
    /// Built-in resources without their own conversion (`DefaultMetaV1FieldSelectorConversion`).
    #[default]
    Default,
    Pod,
    Node,
    Namespace,
    CoreEvent,
    EventsV1Event,
    Secret,
    Service,
    /// Custom resources: namespaced or not, plus `selectableFields` (without the leading dot).
    Custom {
        namespaced: bool,
        selectable: Vec<String>,
    },
}

/// A parsed `fieldSelector`: `field=value`, `field==value`, `field!=value`, comma-joined.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
    scope: Scope,
}

const KNOWN_DEFAULT_RESOURCES: &[&str] = &[
    "persistentvolumeclaims",
    "persistentvolumes",
    "configmaps",
    "serviceaccounts",
    "endpoints",
    "limitranges",
    "resourcequotas",
    "podtemplates",
    "bindings",
    "leases",
    "storageclasses",
    "csinodes",
    "csidrivers",
    "csistoragecapacities",
    "volumeattachments",
    "poddisruptionbudgets",
    "priorityclasses",
    "customresourcedefinitions",
];

fn scope_for(resource: &str) -> Scope {
    let resource = resource.to_ascii_lowercase();
    // Accept `<plural>`, `<plural>.<group>` and `<group>/<plural>` / `<group>/<version>/<plural>`.
    let (plural, group) = match resource.split_once('/') {
        Some((group, rest)) => (
            rest.rsplit('/').next().unwrap_or(rest).to_string(),
            group.to_string(),
        ),
        None => match resource.split_once('.') {
            Some((plural, group)) => (plural.to_string(), group.to_string()),
            None => (resource.clone(), String::new()),
        },
    };
    let core = group.is_empty() || group == "v1" || group == "core";
    match plural.as_str() {
        "pods" | "pod" | "po" if core => Scope::Pod,
        "nodes" | "node" | "no" if core => Scope::Node,
        "namespaces" | "namespace" | "ns" if core => Scope::Namespace,
        "events" | "event" | "ev" if core => Scope::CoreEvent,
        "events" | "event" | "ev" if group.starts_with("events.k8s.io") => Scope::EventsV1Event,
        "secrets" | "secret" if core => Scope::Secret,
        "services" | "service" | "svc" if core => Scope::Service,
        p if KNOWN_DEFAULT_RESOURCES.contains(&p) => Scope::Default,
        _ => Scope::Custom {
            namespaced: true,
            selectable: Vec::new(),
        },
    }
}

impl FieldSelector {
    /// Parses and checks the fields are supported for `resource` (the real server rejects
    /// unsupported field labels with 400). `resource` is the plural resource name (`pods`),
    /// optionally group-qualified (`events.events.k8s.io` or `events.k8s.io/events`); an
    /// unknown resource is taken to be a namespaced custom resource without selectable
    /// fields (use [`FieldSelector::parse_custom`] for the others).
    pub fn parse(text: &str, resource: &str) -> Result<FieldSelector, String> {
        Self::parse_with_scope(text, scope_for(resource))
    }

    /// Parses a selector for a custom resource: `metadata.name`, `metadata.namespace` when
    /// `namespaced`, and the CRD's `selectableFields` JSON paths (`.spec.color`).
    pub fn parse_custom(
        text: &str,
        namespaced: bool,
        selectable_fields: &[&str],
    ) -> Result<FieldSelector, String> {
        let selectable = selectable_fields
            .iter()
            .map(|p| p.strip_prefix('.').unwrap_or(p).to_string())
            .collect();
        Self::parse_with_scope(
            text,
            Scope::Custom {
                namespaced,
                selectable,
            },
        )
    }

    fn parse_with_scope(text: &str, scope: Scope) -> Result<FieldSelector, String> {
        let mut parts = split_terms(text);
        parts.sort();
        let mut parsed = Vec::new();
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let Some((lhs, operator, rhs)) = split_term(&part) else {
                return Err(format!(
                    "invalid selector: '{text}'; can't understand '{part}'"
                ));
            };
            parsed.push((lhs.to_string(), operator, unescape_value(rhs)?));
        }
        let mut requirements = Vec::with_capacity(parsed.len());
        for (field, operator, value) in parsed {
            let field = convert_field_label(&scope, &field)?;
            requirements.push(FieldRequirement {
                field,
                operator,
                value,
            });
        }
        Ok(FieldSelector {
            requirements,
            scope,
        })
    }

    /// The requirements, in upstream's (sorted) order.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// Whether the selector selects everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The value the selector requires for `field` with `=`, if any (like upstream's
    /// `RequiresExactMatch`).
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.operator == FieldOperator::Equals)
            .map(|r| r.value.as_str())
    }

    pub fn matches(&self, object: &Value) -> bool {
        self.requirements.iter().all(|r| {
            let actual = field_value(&self.scope, object, &r.field);
            match r.operator {
                FieldOperator::Equals => actual == r.value,
                FieldOperator::NotEquals => actual != r.value,
            }
        })
    }
}

/// `splitTerms`: splits on commas not preceded by a backslash escape.
fn split_terms(selector: &str) -> Vec<String> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in selector.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(selector[start..i].to_string());
            start = i + 1;
        }
    }
    terms.push(selector[start..].to_string());
    terms
}

/// `splitTerm`: the first `!=`, `==` or `=` splits the term.
fn split_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (op, operator) in [
            ("!=", FieldOperator::NotEquals),
            ("==", FieldOperator::Equals),
            ("=", FieldOperator::Equals),
        ] {
            if let Some(value) = rest.strip_prefix(op) {
                return Some((&term[..i], operator, value));
            }
        }
    }
    None
}

/// `UnescapeValue`.
fn unescape_value(s: &str) -> Result<String, String> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            match c {
                '\\' | ',' | '=' => out.push(c),
                _ => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{c}"
                    ));
                }
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            // Go prints the rune with %v: its code point.
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                ));
            }
            _ => out.push(c),
        }
    }
    if in_slash {
        return Err("invalid field selector: invalid escape sequence: \\".to_string());
    }
    Ok(out)
}

fn not_supported(label: &str) -> String {
    format!("field label not supported: {label}")
}

/// The field label conversion functions of the real server.
fn convert_field_label(scope: &Scope, label: &str) -> Result<String, String> {
    let ok = |l: &str| Ok(l.to_string());
    match scope {
        Scope::Default => match label {
            "metadata.name" | "metadata.namespace" => ok(label),
            _ => Err(format!(
                "\"{label}\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
            )),
        },
        Scope::Pod => match label {
            "metadata.name"
            | "metadata.namespace"
            | "spec.nodeName"
            | "spec.restartPolicy"
            | "spec.schedulerName"
            | "spec.serviceAccountName"
            | "spec.hostNetwork"
            | "status.phase"
            | "status.podIP"
            | "status.podIPs"
            | "status.nominatedNodeName" => ok(label),
            "spec.host" => ok("spec.nodeName"),
            _ => Err(not_supported(label)),
        },
        Scope::Node => match label {
            "metadata.name" | "spec.unschedulable" => ok(label),
            _ => Err(not_supported(label)),
        },
        Scope::Namespace => match label {
            "metadata.name" | "status.phase" => ok(label),
            _ => Err(not_supported(label)),
        },
        Scope::CoreEvent => match label {
            "involvedObject.kind"
            | "involvedObject.namespace"
            | "involvedObject.name"
            | "involvedObject.uid"
            | "involvedObject.apiVersion"
            | "involvedObject.resourceVersion"
            | "involvedObject.fieldPath"
            | "reason"
            | "reportingComponent"
            | "source"
            | "type"
            | "metadata.namespace"
            | "metadata.name" => ok(label),
            _ => Err(not_supported(label)),
        },
        Scope::EventsV1Event => match label {
            "reason" | "type" | "metadata.namespace" | "metadata.name" => ok(label),
            "reportingController" => ok("reportingComponent"),
            _ => match label.strip_prefix("regarding.") {
                Some(
                    rest @ ("kind" | "namespace" | "name" | "uid" | "apiVersion"
                    | "resourceVersion" | "fieldPath"),
                ) => Ok(format!("involvedObject.{rest}")),
                _ => Err(not_supported(label)),
            },
        },
        Scope::Secret => match label {
            "type" | "metadata.namespace" | "metadata.name" => ok(label),
            _ => Err(not_supported(label)),
        },
        Scope::Service => match label {
            "metadata.namespace" | "metadata.name" | "spec.clusterIP" | "spec.type" => ok(label),
            _ => Err(not_supported(label)),
        },
        Scope::Custom {
            namespaced,
            selectable,
        } => {
            if label == "metadata.name"
                || (*namespaced && label == "metadata.namespace")
                || selectable.iter().any(|s| s == label)
            {
                ok(label)
            } else {
                Err(not_supported(label))
            }
        }
    }
}

/// A scalar as the real server formats it into a field set ("" when missing).
fn scalar(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

fn at<'a>(object: &'a Value, dotted: &str) -> Option<&'a Value> {
    dotted.split('.').try_fold(object, |v, key| v.get(key))
}

fn boolean(value: Option<&Value>) -> String {
    value.and_then(Value::as_bool).unwrap_or(false).to_string()
}

/// The value of a (converted) field label of `object`, like the real `GetAttrs`.
fn field_value(scope: &Scope, object: &Value, field: &str) -> String {
    match (scope, field) {
        (_, "metadata.name" | "metadata.namespace") => scalar(at(object, field)),
        (Scope::Pod, "spec.hostNetwork") => boolean(at(object, field)),
        (Scope::Pod, "status.podIP") => {
            let first = object
                .pointer("/status/podIPs/0/ip")
                .or_else(|| object.pointer("/status/podIP"));
            scalar(first)
        }
        (Scope::Pod, "status.podIPs") => String::new(),
        (Scope::Node, "spec.unschedulable") => boolean(at(object, field)),
        (Scope::CoreEvent | Scope::EventsV1Event, _) => event_field(object, field),
        _ => scalar(at(object, field)),
    }
}

/// Event fields, from either the core/v1 shape or the events.k8s.io/v1 shape.
fn event_field(object: &Value, field: &str) -> String {
    if let Some(rest) = field.strip_prefix("involvedObject.") {
        let reference = object
            .get("involvedObject")
            .or_else(|| object.get("regarding"));
        return scalar(reference.and_then(|r| r.get(rest)));
    }
    let reporting = || {
        object
            .get("reportingComponent")
            .or_else(|| object.get("reportingController"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    match field {
        "reportingComponent" => reporting(),
        "source" => {
            let component = object
                .pointer("/source/component")
                .or_else(|| object.pointer("/deprecatedSource/component"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            if component.is_empty() {
                reporting()
            } else {
                component.to_string()
            }
        }
        _ => scalar(at(object, field)),
    }
}
