//! `x-kubernetes-list-type: set|map` uniqueness, as apiextensions'
//! `pkg/apiserver/schema/listtype/validation.go` (`ValidateListSetsAndMaps`).

use serde_json::{Map, Value, json};

use super::field::{FieldError, GoValue};
use super::path;
use super::structural::{additional, items, properties};

pub(crate) fn validate(s: &Value, obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Value::Object(map) = obj {
        validate_map("", s, map, &mut errs);
    }
    errs
}

fn validate_map(fld: &str, s: &Value, obj: &Map<String, Value>, errs: &mut Vec<FieldError>) {
    if let Some(Some(add)) = additional(s) {
        for (k, v) in obj {
            validate_value(&path::key(fld, k), add, v, errs);
        }
    }
    if let Some(props) = properties(s) {
        for (k, v) in obj {
            if let Some(sub) = props.get(k) {
                validate_value(&path::child(fld, k), sub, v, errs);
            }
        }
    }
}

fn validate_value(fld: &str, s: &Value, obj: &Value, errs: &mut Vec<FieldError>) {
    match obj {
        Value::Array(list) => validate_array(fld, s, list, errs),
        Value::Object(map) => validate_map(fld, s, map, errs),
        _ => {}
    }
}

fn validate_array(fld: &str, s: &Value, list: &[Value], errs: &mut Vec<FieldError>) {
    match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => {
            for i in non_unique(list) {
                errs.push(FieldError::duplicate(
                    &path::index(fld, i),
                    GoValue::from_json(&list[i]),
                ));
            }
        }
        Some("map") => validate_list_map(fld, s, list, errs),
        _ => {}
    }
    if let Some(item_schema) = items(s) {
        for (i, item) in list.iter().enumerate() {
            validate_value(&path::index(fld, i), item_schema, item, errs);
        }
    }
}

/// `validateListSet`: the index of the second appearance of every repeated element.
fn non_unique(list: &[Value]) -> Vec<usize> {
    let mut out = Vec::new();
    for (i, x) in list.iter().enumerate() {
        let seen = list[..i].iter().filter(|y| *y == x).count();
        if seen == 1 {
            out.push(i);
        }
    }
    out
}

fn validate_list_map(fld: &str, s: &Value, list: &[Value], errs: &mut Vec<FieldError>) {
    for (i, x) in list.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            errs.push(FieldError::invalid(
                &path::index(fld, i),
                GoValue::from_json(x),
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    if list.len() <= 1 {
        return;
    }
    let key_fields: Vec<&str> = s
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|k| k.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if key_fields.len() == 1 {
        let key_field = key_fields[0];
        // `None` is the unspecified key (a nil item or a missing key field).
        let keys: Vec<Option<&Value>> = list.iter().map(|x| x.get(key_field)).collect();
        for i in non_unique_keys(&keys) {
            let shown = match keys[i] {
                None => json!({}),
                Some(k) => json!({ key_field: k }),
            };
            errs.push(FieldError::duplicate(
                &path::index(fld, i),
                GoValue::Json(shown),
            ));
        }
        return;
    }
    let keys: Vec<Value> = list
        .iter()
        .map(|x| {
            let mut key = Map::new();
            for k in &key_fields {
                if let Some(v) = x.get(*k) {
                    key.insert((*k).to_string(), v.clone());
                }
            }
            Value::Object(key)
        })
        .collect();
    for i in non_unique(&keys) {
        errs.push(FieldError::duplicate(
            &path::index(fld, i),
            GoValue::Json(keys[i].clone()),
        ));
    }
}

fn non_unique_keys(keys: &[Option<&Value>]) -> Vec<usize> {
    let mut out = Vec::new();
    for (i, x) in keys.iter().enumerate() {
        if keys[..i].iter().filter(|y| *y == x).count() == 1 {
            out.push(i);
        }
    }
    out
}
