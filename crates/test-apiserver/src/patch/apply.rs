//! Server-side apply, simplified: the applied configuration is merged into the live object
//! (strategic-merge semantics with [`STRATEGIC_MERGE_RULES`] for built-in kinds, JSON merge
//! patch semantics plus [`CUSTOM_RESOURCE_APPLY_RULES`] for custom resources), and the
//! field manager's `Apply` entry in `metadata.managedFields` is replaced by one listing the
//! applied fields in the real `FieldsV1` format (`f:<field>`, `k:{"<key>":…}` for items of
//! keyed lists with `.` for the item itself, `v:<json>` for items of set lists).
//!
//! Fields the same manager applied before and no longer applies are removed, unless
//! another manager's entry lists them — the core of the real ownership model. Not
//! modelled: conflicts between managers (no 409 Conflict, `force` is not needed), the
//! `Update` entries the real server records for other write operations, listType
//! information from OpenAPI schemas (the merge-key table stands in for it), and the
//! reset of status fields on the main resource (the server core strips them).
//!
//! [`STRATEGIC_MERGE_RULES`]: super::merge_keys::STRATEGIC_MERGE_RULES
//! [`CUSTOM_RESOURCE_APPLY_RULES`]: super::merge_keys::CUSTOM_RESOURCE_APPLY_RULES

use std::collections::BTreeSet;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use super::merge_keys::{
    CUSTOM_RESOURCE_APPLY_RULES, ListStrategy, STRATEGIC_MERGE_RULES, lookup,
    supports_strategic_merge,
};
use super::strategic::{Schema, strategic_merge};

/// The longest field manager name the real server accepts.
const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// Fields the real server strips from managed field sets (`stripmeta.go`).
const STRIPPED: &[&[&str]] = &[
    &["apiVersion"],
    &["kind"],
    &["metadata", "name"],
    &["metadata", "namespace"],
    &["metadata", "creationTimestamp"],
    &["metadata", "selfLink"],
    &["metadata", "uid"],
    &["metadata", "clusterName"],
    &["metadata", "generation"],
    &["metadata", "managedFields"],
    &["metadata", "resourceVersion"],
];

/// Validates the `fieldManager` of an apply request as `ValidatePatchOptions` does and
/// returns it.
pub(crate) fn validate_field_manager(field_manager: Option<&str>) -> Result<&str, String> {
    let manager = field_manager.unwrap_or_default();
    let mut errors = Vec::new();
    if manager.is_empty() {
        errors.push("fieldManager: Required value: is required for apply patch".to_string());
    }
    if manager.len() > FIELD_MANAGER_MAX_LENGTH {
        errors.push(format!(
            "fieldManager: Too long: may not be more than {FIELD_MANAGER_MAX_LENGTH} bytes"
        ));
    }
    if manager.chars().any(|c| c.is_control()) {
        errors.push(format!(
            "fieldManager: Invalid value: {manager:?}: must only contain printable characters"
        ));
    }
    match errors.len() {
        0 => Ok(manager),
        1 => Err(format!(
            "PatchOptions.meta.k8s.io \"\" is invalid: {}",
            errors[0]
        )),
        _ => Err(format!(
            "PatchOptions.meta.k8s.io \"\" is invalid: [{}]",
            errors.join(", ")
        )),
    }
}

/// Parses an apply body: JSON, or YAML (a single document).
pub(crate) fn parse_apply_body(body: &[u8]) -> Result<Value, String> {
    let value: Value = match serde_json::from_slice(body) {
        Ok(value) => value,
        Err(_) => {
            let text =
                std::str::from_utf8(body).map_err(|e| format!("error decoding YAML: {e}"))?;
            serde_saphyr::from_str(text).map_err(|e| format!("error decoding YAML: {e}"))?
        }
    };
    if !value.is_object() {
        return Err("error decoding YAML: the apply configuration must be an object".to_string());
    }
    Ok(value)
}

/// Applies `body` to `live` (or to nothing, when creating).
pub(crate) fn server_side_apply(
    live: Option<&Value>,
    body: &[u8],
    kind: &str,
    field_manager: Option<&str>,
) -> Result<Value, String> {
    let manager = validate_field_manager(field_manager)?;
    let applied = parse_apply_body(body)?;
    if applied.pointer("/metadata/managedFields").is_some() {
        return Err("metadata.managedFields must be nil".to_string());
    }
    let applied_version = applied
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if let Some(live_version) = live
        .and_then(|l| l.get("apiVersion"))
        .and_then(Value::as_str)
        && !applied_version.is_empty()
        && applied_version != live_version
    {
        return Err(format!(
            "Incorrect version specified in apply patch. Specified patch version: {applied_version}, expected: {live_version}"
        ));
    }
    let rules = if supports_strategic_merge(kind) {
        STRATEGIC_MERGE_RULES
    } else {
        CUSTOM_RESOURCE_APPLY_RULES
    };
    let schema = Schema { kind, rules };

    let mut base = live.cloned().unwrap_or_else(|| Value::Object(Map::new()));
    let mut managed: Vec<Value> = match base.pointer_mut("/metadata/managedFields").map(Value::take)
    {
        Some(Value::Array(entries)) => entries,
        _ => Vec::new(),
    };
    if let Some(meta) = base.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }

    let new_set = field_set(&applied, kind, rules);
    let previous = managed.iter().position(|e| is_apply_entry_of(e, manager));
    if let Some(index) = previous {
        let old_set = flatten(managed[index].get("fieldsV1").unwrap_or(&Value::Null));
        let others: Vec<Vec<String>> = managed
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != index)
            .flat_map(|(_, e)| flatten(e.get("fieldsV1").unwrap_or(&Value::Null)))
            .collect();
        let new_paths = flatten(&new_set);
        for path in old_set.difference(&new_paths) {
            let owned_elsewhere = others
                .iter()
                .any(|o| o.starts_with(path) || path.starts_with(o));
            if !owned_elsewhere {
                remove_path(&mut base, path);
            }
        }
    }

    let mut merged = strategic_merge(base, applied, schema)?;
    let api_version = if applied_version.is_empty() {
        merged
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    } else {
        applied_version
    };
    let entry = json!({
        "manager": manager,
        "operation": "Apply",
        "apiVersion": api_version,
        "time": now_rfc3339(),
        "fieldsType": "FieldsV1",
        "fieldsV1": new_set,
    });
    match previous {
        Some(index) => managed[index] = entry,
        None => managed.push(entry),
    }
    if let Some(root) = merged.as_object_mut() {
        let meta = root
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("managedFields".to_string(), Value::Array(managed));
        }
    }
    Ok(merged)
}

fn is_apply_entry_of(entry: &Value, manager: &str) -> bool {
    entry.get("manager").and_then(Value::as_str) == Some(manager)
        && entry.get("operation").and_then(Value::as_str) == Some("Apply")
        && entry
            .get("subresource")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .is_empty()
}

/// The `FieldsV1` set of the fields in `applied`.
pub(crate) fn field_set(
    applied: &Value,
    kind: &str,
    rules: &[super::merge_keys::MergeRule],
) -> Value {
    let mut path = Vec::new();
    match applied {
        Value::Object(map) => Value::Object(object_fields(map, kind, rules, &mut path)),
        _ => Value::Object(Map::new()),
    }
}

fn object_fields(
    map: &Map<String, Value>,
    kind: &str,
    rules: &[super::merge_keys::MergeRule],
    path: &mut Vec<String>,
) -> Map<String, Value> {
    let mut out = Map::new();
    for (key, value) in map {
        path.push(key.clone());
        let stripped = STRIPPED
            .iter()
            .any(|s| s.iter().copied().eq(path.iter().map(String::as_str)));
        if !stripped {
            let node = value_fields(value, kind, rules, path);
            if !(key == "metadata"
                && node.as_object().is_some_and(Map::is_empty)
                && value.as_object().is_some_and(|m| !m.is_empty()))
            {
                out.insert(format!("f:{key}"), node);
            }
        }
        path.pop();
    }
    out
}

fn value_fields(
    value: &Value,
    kind: &str,
    rules: &[super::merge_keys::MergeRule],
    path: &mut Vec<String>,
) -> Value {
    match value {
        Value::Object(map) if !map.is_empty() => {
            Value::Object(object_fields(map, kind, rules, path))
        }
        Value::Array(items) if !items.is_empty() => {
            match lookup(rules, kind, &super::merge_keys::join_path(path)) {
                ListStrategy::Atomic => json!({}),
                ListStrategy::MergePrimitive => {
                    let mut node = Map::new();
                    for item in items {
                        node.insert(
                            format!("v:{}", serde_json::to_string(item).unwrap_or_default()),
                            json!({}),
                        );
                    }
                    Value::Object(node)
                }
                ListStrategy::MergeByKey(key) => {
                    let mut node = Map::new();
                    path.push("[]".to_string());
                    for item in items {
                        let Some(item_map) = item.as_object() else {
                            continue;
                        };
                        let Some(key_value) = item_map.get(key) else {
                            continue;
                        };
                        let mut key_obj = Map::new();
                        key_obj.insert(key.to_string(), key_value.clone());
                        let mut child = object_fields(item_map, kind, rules, path);
                        child.insert(".".to_string(), json!({}));
                        node.insert(
                            format!(
                                "k:{}",
                                serde_json::to_string(&Value::Object(key_obj)).unwrap_or_default()
                            ),
                            Value::Object(child),
                        );
                    }
                    path.pop();
                    Value::Object(node)
                }
            }
        }
        _ => json!({}),
    }
}

/// The member paths of a `FieldsV1` tree.
fn flatten(fields: &Value) -> BTreeSet<Vec<String>> {
    fn walk(node: &Value, prefix: &mut Vec<String>, out: &mut BTreeSet<Vec<String>>) {
        let Some(map) = node.as_object() else { return };
        if (map.is_empty() || map.contains_key(".")) && !prefix.is_empty() {
            out.insert(prefix.clone());
        }
        for (key, child) in map {
            if key == "." {
                continue;
            }
            prefix.push(key.clone());
            walk(child, prefix, out);
            prefix.pop();
        }
    }
    let mut out = BTreeSet::new();
    walk(fields, &mut Vec::new(), &mut out);
    out
}

/// Removes the field or list item at a `FieldsV1` path from `object`, if present.
fn remove_path(object: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut current = object;
    for element in parents {
        let Some(next) = step(current, element) else {
            return;
        };
        current = next;
    }
    if let Some(field) = last.strip_prefix("f:") {
        if let Some(map) = current.as_object_mut() {
            map.remove(field);
        }
    } else if let Some(items) = current.as_array_mut()
        && let Some(index) = items.iter().position(|item| item_matches(item, last))
    {
        items.remove(index);
    }
}

fn step<'a>(value: &'a mut Value, element: &str) -> Option<&'a mut Value> {
    if let Some(field) = element.strip_prefix("f:") {
        return value.as_object_mut()?.get_mut(field);
    }
    let items = value.as_array_mut()?;
    items.iter_mut().find(|item| item_matches(item, element))
}

fn item_matches(item: &Value, element: &str) -> bool {
    if let Some(key) = element.strip_prefix("k:") {
        let Ok(Value::Object(key)) = serde_json::from_str::<Value>(key) else {
            return false;
        };
        return key.iter().all(|(k, v)| item.get(k) == Some(v));
    }
    if let Some(value) = element.strip_prefix("v:") {
        return serde_json::from_str::<Value>(value).is_ok_and(|v| &v == item);
    }
    false
}

/// The current time as RFC 3339 in UTC with second precision (`metav1.Time`).
pub(crate) fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}
