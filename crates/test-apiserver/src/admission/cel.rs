//! CEL `x-kubernetes-validations`, walked as apiextensions' `schema/cel/validation.go`
//! (`Validator.validate`): rules of a node run on its non-null value, then its allOf rules, then
//! additionalProperties values, properties and items. Each rule is evaluated by kube-cel
//! (`kube::core::cel::Validator`); paths, messages and reasons are built here as the real
//! server builds them (`fieldErrorForReason`, `ruleMessageOrDefault`).

use serde_json::{Map, Value};

use kube::core::cel::{ErrorKind, Validator};

use super::field::{FieldError, GoValue};
use super::path;
use super::structural::{additional, items, properties};

const RULES: &str = "x-kubernetes-validations";

/// Whether any node of the schema has CEL rules (the server builds a CEL validator only then).
pub(crate) fn has_rules(s: &Value) -> bool {
    match s {
        Value::Object(map) => {
            map.get(RULES)
                .and_then(Value::as_array)
                .is_some_and(|r| !r.is_empty())
                || map.iter().any(|(k, v)| match k.as_str() {
                    "properties" => v.as_object().is_some_and(|p| p.values().any(has_rules)),
                    "items" | "additionalProperties" | "not" => has_rules(v),
                    "allOf" | "anyOf" | "oneOf" => {
                        v.as_array().is_some_and(|a| a.iter().any(has_rules))
                    }
                    _ => false,
                })
        }
        _ => false,
    }
}

pub(crate) fn validate(schema: &Value, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    thread_local! {
        // Registering the Kubernetes CEL library is not free; do it once per thread.
        static VALIDATOR: Validator = Validator::new();
    }
    let mut errs = Vec::new();
    VALIDATOR.with(|validator| walk(validator, schema, obj, old, "", &mut errs));
    errs
}

fn walk(
    v: &Validator,
    s: &Value,
    obj: &Value,
    old: Option<&Value>,
    fld: &str,
    errs: &mut Vec<FieldError>,
) {
    if obj.is_null() {
        return;
    }
    let old = old.filter(|o| !o.is_null());
    for rule in s.get(RULES).and_then(Value::as_array).into_iter().flatten() {
        eval_rule(v, s, rule, obj, old, fld, errs);
    }
    for branch in s
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for rule in branch
            .get(RULES)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            eval_rule(v, s, rule, obj, old, fld, errs);
        }
    }
    match obj {
        Value::Object(map) => {
            let correlatable =
                s.get("x-kubernetes-map-type").and_then(Value::as_str) != Some("atomic");
            let old_of = |k: &str| {
                if correlatable {
                    old.and_then(|o| o.get(k))
                } else {
                    None
                }
            };
            if let Some(Some(add)) = additional(s) {
                for (k, value) in map {
                    walk(v, add, value, old_of(k), &path::key(fld, k), errs);
                }
            }
            if let Some(props) = properties(s) {
                for (k, value) in map {
                    if let Some(sub) = props.get(k) {
                        walk(v, sub, value, old_of(k), &path::child(fld, k), errs);
                    }
                }
            }
        }
        Value::Array(list) => {
            if let Some(item_schema) = items(s) {
                for (i, item) in list.iter().enumerate() {
                    let old_item = correlated_item(s, item, old);
                    walk(v, item_schema, item, old_item, &path::index(fld, i), errs);
                }
            }
        }
        _ => {}
    }
}

/// Only `x-kubernetes-list-type: map` items correlate with an old item (by their keys).
fn correlated_item<'a>(s: &Value, item: &Value, old: Option<&'a Value>) -> Option<&'a Value> {
    if s.get("x-kubernetes-list-type").and_then(Value::as_str) != Some("map") {
        return None;
    }
    let keys: Vec<&str> = s
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|k| k.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    old?.as_array()?
        .iter()
        .find(|o| o.is_object() && keys.iter().all(|k| o.get(*k) == item.get(*k)))
}

/// A copy of the node schema without the rules of its descendants, carrying only `rule`.
fn single_rule_schema(s: &Value, rule: &Value) -> Value {
    let mut copy = strip_rules(s);
    if let Value::Object(map) = &mut copy {
        map.insert(RULES.into(), Value::Array(vec![rule.clone()]));
    }
    copy
}

fn strip_rules(s: &Value) -> Value {
    match s {
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                match k.as_str() {
                    RULES => {}
                    "properties" => {
                        let props = v
                            .as_object()
                            .map(|p| p.iter().map(|(k, v)| (k.clone(), strip_rules(v))).collect())
                            .unwrap_or_default();
                        out.insert(k.clone(), Value::Object(props));
                    }
                    "items" | "additionalProperties" | "not" => {
                        out.insert(k.clone(), strip_rules(v));
                    }
                    "allOf" | "anyOf" | "oneOf" => {
                        let branches = v
                            .as_array()
                            .map(|a| a.iter().map(strip_rules).collect())
                            .unwrap_or_default();
                        out.insert(k.clone(), Value::Array(branches));
                    }
                    _ => {
                        out.insert(k.clone(), v.clone());
                    }
                }
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

fn text<'a>(rule: &'a Value, key: &str) -> Option<&'a str> {
    rule.get(key).and_then(Value::as_str)
}

fn eval_rule(
    v: &Validator,
    s: &Value,
    rule: &Value,
    obj: &Value,
    old: Option<&Value>,
    fld: &str,
    errs: &mut Vec<FieldError>,
) {
    let schema = single_rule_schema(s, rule);
    let Err(failures) = v.validate(&schema, obj, old) else {
        return;
    };
    let sts_type = GoValue::Str(
        s.get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    );
    let rule_src = text(rule, "rule").unwrap_or("");
    let message = text(rule, "message").unwrap_or("");
    // ruleErrorString / ruleMessageOrDefault
    let error_string = if message.is_empty() {
        rule_src.trim()
    } else {
        message.trim()
    };
    let default_detail = if message.is_empty() {
        format!("failed rule: {}", rule_src.trim())
    } else {
        message.trim().to_string()
    };
    for failure in failures.into_iter() {
        if failure.kind != ErrorKind::ValidationFailure {
            // Compilation and evaluation errors are reported at the rule's node.
            let detail = format!("{} evaluating rule: {error_string}", failure.message);
            errs.push(FieldError::invalid(fld, sts_type.clone(), detail));
            continue;
        }
        let current = match text(rule, "fieldPath").map(|fp| normalize_field_path(fp, s)) {
            Some(Some(normalized)) if !normalized.is_empty() => path::child(fld, &normalized),
            _ => fld.to_string(),
        };
        let detail = if text(rule, "messageExpression").is_some_and(|m| !m.is_empty()) {
            // kube-cel falls back to `message` or its own default when messageExpression fails.
            let m = failure.message.trim();
            if m.is_empty() || m == format!("failed rule: {rule_src}") || m == message.trim() {
                default_detail.clone()
            } else {
                m.to_string()
            }
        } else {
            default_detail.clone()
        };
        let e = match text(rule, "reason") {
            Some("FieldValueForbidden") => FieldError::forbidden(&current, detail),
            Some("FieldValueRequired") => FieldError::required(&current, detail),
            Some("FieldValueDuplicate") => FieldError::duplicate(&current, sts_type.clone()),
            _ => FieldError::invalid(&current, sts_type.clone(), detail),
        };
        errs.push(e);
    }
}

/// `ValidFieldPath(rule.fieldPath, schema).String()`: `.a.b`, `['a.b']` and `[key]` for maps.
/// `None` when the path does not parse.
fn normalize_field_path(field_path: &str, schema: &Value) -> Option<String> {
    let mut out = String::new();
    let mut node = Some(schema);
    let mut chars = field_path.chars().peekable();
    let mut append = |name: String, node: &mut Option<&Value>| {
        let named = node.is_some_and(|n| properties(n).is_some());
        if named || node.is_none() {
            out = path::child(&out, &name);
            *node = node.and_then(|n| properties(n)).and_then(|p| p.get(&name));
        } else {
            out = path::key(&out, &name);
            *node = node.and_then(|n| additional(n).flatten());
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '.' => {
                let mut name = String::new();
                while let Some(&n) = chars.peek() {
                    if n == '.' || n == '[' || n == ']' {
                        break;
                    }
                    name.push(n);
                    chars.next();
                }
                if name.is_empty() {
                    return None;
                }
                append(name, &mut node);
            }
            '[' => {
                if chars.next()? != '\'' {
                    return None;
                }
                let mut name = String::new();
                loop {
                    match chars.next()? {
                        '\\' => name.push(chars.next()?),
                        '\'' => break,
                        other => name.push(other),
                    }
                }
                if chars.next()? != ']' {
                    return None;
                }
                append(name, &mut node);
            }
            _ => return None,
        }
    }
    Some(out)
}
