//! Names, labels, annotations, object metadata and label selectors, as apimachinery's
//! `util/validation` and `ValidateObjectMeta` check them.

use super::*;

pub(super) const DNS1123_LABEL_MAX: usize = 63;
pub(super) const DNS1123_SUBDOMAIN_MAX: usize = 253;
pub(super) const QUALIFIED_NAME_MAX: usize = 63;
pub(super) const LABEL_VALUE_MAX: usize = 63;
/// `TotalAnnotationSizeLimitB`: 256 KiB for all annotation keys and values together.
pub(super) const ANNOTATIONS_MAX_BYTES: usize = 256 * 1024;

pub(super) const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
pub(super) const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
pub(super) const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
pub(super) const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// apimachinery's `RegexError`: the message, the examples and the pattern.
pub(super) fn regex_error(message: &str, pattern: &str, examples: &[&str]) -> String {
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

pub(super) fn max_len_error(max: usize) -> String {
    format!("must be no more than {max} characters")
}

pub(super) fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

pub(super) fn is_dns1123_label_text(value: &str) -> bool {
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

pub(super) fn is_qualified_name_text(value: &str) -> bool {
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
pub(super) fn invalid_each(path: &str, value: &str, messages: Vec<String>) -> Vec<FieldError> {
    messages
        .into_iter()
        .map(|message| FieldError::invalid(path, &string(value), message))
        .collect()
}

/// `ValidateLabelName`.
pub(super) fn label_name(value: &str, path: &str) -> Vec<FieldError> {
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

pub(super) fn annotations(
    annotations: Option<&BTreeMap<String, String>>,
    path: &str,
) -> Vec<FieldError> {
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
