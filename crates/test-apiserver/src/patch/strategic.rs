//! Strategic merge patch, a port of the server-side half of
//! `k8s.io/apimachinery/pkg/util/strategicpatch/patch.go` (`StrategicMergeMapPatch` with
//! `MergeParallelList` and `IgnoreUnmatchedNulls`) onto `serde_json::Value`, with the
//! struct tags replaced by the table in [`super::merge_keys`].
//!
//! Deliberate differences (the real server decodes the result into Go structs, which drops
//! unknown keys and nulls; the test server stores JSON):
//! - a value the patch introduces (a key absent from the original) is itself run through
//!   the merge against an empty value, so `$patch` directives and nulls inside it are
//!   resolved instead of being stored verbatim;
//! - a field unknown to the table is merged like a map (objects) or replaced (lists) rather
//!   than failing with `unable to find api field in struct`.

use serde_json::{Map, Value};

use super::merge_keys::{ListStrategy, MergeRule, join_path, lookup};

const DIRECTIVE_MARKER: &str = "$patch";
const DELETE_DIRECTIVE: &str = "delete";
const REPLACE_DIRECTIVE: &str = "replace";
const MERGE_DIRECTIVE: &str = "merge";
const RETAIN_KEYS_DIRECTIVE: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST_PREFIX: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER_PREFIX: &str = "$setElementOrder";

const ERR_BAD_JSON_DOC: &str = "invalid JSON document";
const ERR_NO_LIST_OF_LISTS: &str = "lists of lists are not supported";
const ERR_BAD_PATCH_FORMAT_FOR_PRIMITIVE_LIST: &str = "invalid patch format of primitive list";
const ERR_BAD_PATCH_FORMAT_FOR_RETAIN_KEYS: &str = "invalid patch format of retainKeys";
const ERR_BAD_PATCH_FORMAT_FOR_SET_ELEMENT_ORDER: &str =
    "invalid patch format of setElementOrder list";

/// Which list strategies apply: a kind and a rule table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Schema<'a> {
    pub kind: &'a str,
    pub rules: &'a [MergeRule],
}

impl Schema<'_> {
    fn strategy(&self, path: &[String]) -> ListStrategy {
        lookup(self.rules, self.kind, &join_path(path))
    }
}

/// Applies the strategic merge patch `patch` to `original`.
pub(crate) fn strategic_merge(
    original: Value,
    patch: Value,
    schema: Schema<'_>,
) -> Result<Value, String> {
    let Value::Object(patch) = patch else {
        return Err(ERR_BAD_JSON_DOC.to_string());
    };
    let original = match original {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        _ => return Err(ERR_BAD_JSON_DOC.to_string()),
    };
    let mut path = Vec::new();
    merge_map(original, patch, schema, &mut path).map(Value::Object)
}

/// The Go type of a decoded JSON value, as `reflect.TypeOf` would tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    Bool,
    Number,
    String,
    Slice,
    Map,
}

fn kind_of(value: &Value) -> Kind {
    match value {
        Value::Null => Kind::Null,
        Value::Bool(_) => Kind::Bool,
        Value::Number(_) => Kind::Number,
        Value::String(_) => Kind::String,
        Value::Array(_) => Kind::Slice,
        Value::Object(_) => Kind::Map,
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Null => "invalid",
        Kind::Bool => "bool",
        Kind::Number => "float64",
        Kind::String => "string",
        Kind::Slice => "slice",
        Kind::Map => "map",
    }
}

/// Go's `==` on two decoded JSON scalars (numbers are all float64 in Go).
fn go_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// Go's `%v` of a decoded JSON value, for error messages.
pub(crate) fn go_fmt(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e21 => format!("{}", f as i128),
            Some(f) => format!("{f}"),
            None => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(go_fmt).collect::<Vec<_>>().join(" ")
        ),
        Value::Object(map) => go_fmt_map(map),
    }
}

fn go_fmt_map(map: &Map<String, Value>) -> String {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let parts: Vec<String> = entries
        .iter()
        .map(|(k, v)| format!("{k}:{}", go_fmt(v)))
        .collect();
    format!("map[{}]", parts.join(" "))
}

fn err_no_merge_key(map: &Map<String, Value>, key: &str) -> String {
    format!(
        "map: {} does not contain declared merge key: {key}",
        go_fmt_map(map)
    )
}

fn err_bad_arg_type(expected: &str, actual: &Value) -> String {
    format!(
        "expected a {expected}, but received a {}: {}",
        kind_name(kind_of(actual)),
        go_fmt(actual)
    )
}

fn err_bad_patch_type(directive: &Value, map: &Map<String, Value>) -> String {
    format!(
        "unknown patch type: {} in map: {}",
        go_fmt(directive),
        go_fmt_map(map)
    )
}

/// `extractKey`: the field name after `<prefix>/`.
fn extract_key(key: &str, prefix: &str) -> Result<String, String> {
    match key.split_once('/') {
        Some((head, rest)) if head == prefix => Ok(rest.to_string()),
        _ => Err(if prefix == DELETE_FROM_PRIMITIVE_LIST_PREFIX {
            ERR_BAD_PATCH_FORMAT_FOR_PRIMITIVE_LIST.to_string()
        } else {
            ERR_BAD_PATCH_FORMAT_FOR_SET_ELEMENT_ORDER.to_string()
        }),
    }
}

/// `mergeMap`.
fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: Schema<'_>,
    path: &mut Vec<String>,
) -> Result<Map<String, Value>, String> {
    if let Some(directive) = patch.get(DIRECTIVE_MARKER) {
        return match directive.as_str() {
            Some(REPLACE_DIRECTIVE) => {
                patch.remove(DIRECTIVE_MARKER);
                merge_map(Map::new(), patch, schema, path)
            }
            Some(DELETE_DIRECTIVE) => Ok(Map::new()),
            _ => Err(err_bad_patch_type(directive, &patch)),
        };
    }

    apply_retain_keys_directive(&mut original, &mut patch)?;
    merge_set_element_order(&mut original, &mut patch, schema, path)?;

    let keys: Vec<String> = patch.keys().cloned().collect();
    for key in keys {
        let Some(patch_value) = patch.remove(&key) else {
            continue;
        };
        let (field, is_delete_list) = if key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX) {
            (extract_key(&key, DELETE_FROM_PRIMITIVE_LIST_PREFIX)?, true)
        } else {
            (key, false)
        };
        if patch_value.is_null() {
            original.remove(&field);
            continue;
        }
        path.push(field.clone());
        let result = match (original.remove(&field), patch_value) {
            (None, _) if is_delete_list => None,
            (None, patch_value) => Some(fresh(patch_value, schema, path)?),
            (Some(Value::Object(orig)), Value::Object(patch_map)) => {
                Some(Value::Object(merge_map(orig, patch_map, schema, path)?))
            }
            (Some(Value::Array(orig)), Value::Array(patch_list)) => {
                let strategy = schema.strategy(path);
                Some(Value::Array(merge_slice_handler(
                    orig,
                    patch_list,
                    strategy,
                    is_delete_list,
                    schema,
                    path,
                )?))
            }
            (Some(_), patch_value) => Some(fresh(patch_value, schema, path)?),
        };
        path.pop();
        if let Some(value) = result {
            original.insert(field, value);
        }
    }
    Ok(original)
}

/// A value the patch introduces: resolved against nothing (see the module documentation).
fn fresh(value: Value, schema: Schema<'_>, path: &mut Vec<String>) -> Result<Value, String> {
    match value {
        Value::Object(map) => merge_map(Map::new(), map, schema, path).map(Value::Object),
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            path.push("[]".to_string());
            for item in items {
                match item {
                    Value::Object(map) => {
                        if map.contains_key(DIRECTIVE_MARKER) && map.len() <= 2 {
                            // `{"$patch": "replace"}` markers and `{"name": x, "$patch": "delete"}`
                            // entries have nothing to delete or replace in an absent list.
                            if matches!(
                                map.get(DIRECTIVE_MARKER).and_then(Value::as_str),
                                Some(DELETE_DIRECTIVE) | Some(REPLACE_DIRECTIVE)
                            ) {
                                continue;
                            }
                        }
                        out.push(Value::Object(merge_map(Map::new(), map, schema, path)?));
                    }
                    other => out.push(other),
                }
            }
            path.pop();
            Ok(Value::Array(out))
        }
        other => Ok(other),
    }
}

/// `applyRetainKeysDirective` with `MergeParallelList`.
fn apply_retain_keys_directive(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), String> {
    let Some(retain) = patch.remove(RETAIN_KEYS_DIRECTIVE) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(ERR_BAD_PATCH_FORMAT_FOR_RETAIN_KEYS.to_string());
    };
    let retained = |key: &str| retain.iter().any(|v| v.as_str() == Some(key));
    for (key, value) in patch.iter() {
        if value.is_null()
            || key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
            || key.starts_with(SET_ELEMENT_ORDER_PREFIX)
        {
            continue;
        }
        if !retained(key) {
            return Err(ERR_BAD_PATCH_FORMAT_FOR_RETAIN_KEYS.to_string());
        }
    }
    original.retain(|key, _| retained(key));
    Ok(())
}

/// `mergePatchIntoOriginal` with `MergeParallelList`: the `$setElementOrder/<field>`
/// directives.
fn merge_set_element_order(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    schema: Schema<'_>,
    path: &mut Vec<String>,
) -> Result<(), String> {
    let keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER_PREFIX))
        .cloned()
        .collect();
    for key in keys {
        let Some(order) = patch.remove(&key) else {
            continue;
        };
        let Value::Array(order) = order else {
            return Err(err_bad_arg_type("slice", &order));
        };
        let field = extract_key(&key, SET_ELEMENT_ORDER_PREFIX)?;
        let original_list = match original.get(&field) {
            None => None,
            Some(Value::Array(items)) => Some(items.clone()),
            Some(other) => return Err(err_bad_arg_type("slice", other)),
        };
        let patch_list = match patch.get(&field) {
            None => None,
            Some(Value::Array(items)) => Some(items.clone()),
            Some(other) => return Err(err_bad_arg_type("slice", other)),
        };
        path.push(field.clone());
        let strategy = schema.strategy(path);
        let merge_key = strategy.merge_key();
        validate_patch_with_set_order_list(
            patch_list.as_deref().unwrap_or(&[]),
            &order,
            merge_key,
        )?;
        let merged = match (original_list.clone(), patch_list) {
            (Some(orig), None) => orig,
            (None, Some(list)) => match fresh(Value::Array(list), schema, path)? {
                Value::Array(items) => items,
                _ => Vec::new(),
            },
            (Some(orig), Some(list)) => {
                merge_slice_handler(orig, list, strategy, false, schema, path)?
            }
            (None, None) => {
                path.pop();
                continue;
            }
        };
        path.pop();
        let original_items = original_list.unwrap_or_default();
        let ordered = if merged.is_empty() {
            merged
        } else {
            let kind = slice_element_kind(&[&merged])?;
            let (patch_items, server_only) = partition(merged, &order, merge_key)?;
            normalize_element_order(
                patch_items,
                server_only,
                &order,
                &original_items,
                merge_key,
                kind,
            )?
        };
        original.insert(field.clone(), Value::Array(ordered));
        patch.remove(&field);
    }
    Ok(())
}

/// `validatePatchWithSetOrderList`.
fn validate_patch_with_set_order_list(
    patch_list: &[Value],
    order: &[Value],
    merge_key: Option<&str>,
) -> Result<(), String> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let non_delete: Vec<&Value> = if merge_key.is_some() {
        let mut keep = Vec::new();
        for item in patch_list {
            let Value::Object(map) = item else {
                return Err(err_bad_arg_type("map", item));
            };
            if map.get(DIRECTIVE_MARKER).and_then(Value::as_str) != Some(DELETE_DIRECTIVE) {
                keep.push(item);
            }
        }
        keep
    } else {
        patch_list.iter().collect()
    };
    let (mut p, mut s) = (0, 0);
    while p < non_delete.len() && s < order.len() {
        if non_delete[p]
            .as_object()
            .is_some_and(|m| m.contains_key(DIRECTIVE_MARKER))
        {
            p += 1;
            continue;
        }
        if merge_key_value_equal(non_delete[p], &order[s], merge_key)? {
            p += 1;
        }
        s += 1;
    }
    if p < non_delete.len() && s >= order.len() {
        return Err(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER_PREFIX} list:\n{}\n",
            go_fmt(&Value::Array(patch_list.to_vec())),
            go_fmt(&Value::Array(order.to_vec()))
        ));
    }
    Ok(())
}

fn merge_key_value_equal(
    left: &Value,
    right: &Value,
    merge_key: Option<&str>,
) -> Result<bool, String> {
    let Some(key) = merge_key else {
        return Ok(go_eq(left, right));
    };
    let Value::Object(l) = left else {
        return Err(err_bad_arg_type("map", left));
    };
    let Value::Object(r) = right else {
        return Err(err_bad_arg_type("map", right));
    };
    let lv = l.get(key).ok_or_else(|| err_no_merge_key(l, key))?;
    let rv = r.get(key).ok_or_else(|| err_no_merge_key(r, key))?;
    Ok(go_eq(lv, rv))
}

/// `mergeSliceHandler`.
fn merge_slice_handler(
    original: Vec<Value>,
    patch: Vec<Value>,
    strategy: ListStrategy,
    is_delete_list: bool,
    schema: Schema<'_>,
    path: &mut Vec<String>,
) -> Result<Vec<Value>, String> {
    if strategy.is_merge() {
        merge_slice(
            original,
            patch,
            strategy.merge_key(),
            is_delete_list,
            schema,
            path,
        )
    } else {
        match fresh(Value::Array(patch), schema, path)? {
            Value::Array(items) => Ok(items),
            _ => Ok(Vec::new()),
        }
    }
}

/// `sliceElementType`: all elements of all slices must have the same type.
fn slice_element_kind(slices: &[&[Value]]) -> Result<Kind, String> {
    let mut previous: Option<Kind> = None;
    for slice in slices {
        for value in slice.iter() {
            let kind = kind_of(value);
            match previous {
                None => {
                    if kind == Kind::Slice {
                        return Err(ERR_NO_LIST_OF_LISTS.to_string());
                    }
                    previous = Some(kind);
                }
                Some(p) if p != kind => {
                    let all: Vec<String> = slices
                        .iter()
                        .map(|s| go_fmt(&Value::Array(s.to_vec())))
                        .collect();
                    return Err(format!(
                        "list element types are not identical: [{}]",
                        all.join(" ")
                    ));
                }
                Some(_) => {}
            }
        }
    }
    previous.ok_or_else(|| "no elements in any of the given slices".to_string())
}

/// `mergeSlice`.
fn merge_slice(
    original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: Option<&str>,
    is_delete_list: bool,
    schema: Schema<'_>,
    path: &mut Vec<String>,
) -> Result<Vec<Value>, String> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let kind = slice_element_kind(&[&original, &patch])?;
    let (original, patch, merged, key) = if kind != Kind::Map {
        if is_delete_list {
            return Ok(original
                .into_iter()
                .filter(|v| !patch.iter().any(|d| go_eq(v, d)))
                .collect());
        }
        let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
        for value in original.iter().chain(patch.iter()) {
            if !merged.iter().any(|m| go_eq(m, value)) {
                merged.push(value.clone());
            }
        }
        (original, patch, merged, None)
    } else {
        let Some(key) = merge_key else {
            return Err("cannot merge lists without merge key for type struct".to_string());
        };
        let (original, patch) =
            merge_slice_with_special_elements(original, patch, key, schema, path)?;
        let merged =
            merge_slice_without_special_elements(original.clone(), &patch, key, schema, path)?;
        (original, patch, merged, Some(key))
    };
    let (patch_items, server_only) = partition(merged, &patch, key)?;
    normalize_element_order(patch_items, server_only, &patch, &original, key, kind)
}

/// `mergeSliceWithSpecialElements`: `$patch: delete` and `$patch: replace` items.
fn merge_slice_with_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    key: &str,
    schema: Schema<'_>,
    path: &mut Vec<String>,
) -> Result<(Vec<Value>, Vec<Value>), String> {
    let mut without_special = Vec::new();
    let mut replace = false;
    for value in patch {
        let Value::Object(map) = &value else {
            return Err(err_bad_arg_type("map", &value));
        };
        match map.get(DIRECTIVE_MARKER) {
            None => without_special.push(value),
            Some(directive) => match directive.as_str() {
                Some(DELETE_DIRECTIVE) => {
                    let merge_value = map.get(key).ok_or_else(|| err_no_merge_key(map, key))?;
                    original = delete_matching_entries(original, key, merge_value)?;
                }
                Some(REPLACE_DIRECTIVE) => replace = true,
                Some(MERGE_DIRECTIVE) => {
                    return Err("merging lists cannot yet be specified in the patch".to_string());
                }
                _ => return Err(err_bad_patch_type(directive, map)),
            },
        }
    }
    if replace {
        let replaced = match fresh(Value::Array(without_special), schema, path)? {
            Value::Array(items) => items,
            _ => Vec::new(),
        };
        return Ok((replaced, Vec::new()));
    }
    Ok((original, without_special))
}

fn delete_matching_entries(
    original: Vec<Value>,
    key: &str,
    value: &Value,
) -> Result<Vec<Value>, String> {
    let mut kept = Vec::with_capacity(original.len());
    for (index, item) in original.into_iter().enumerate() {
        let Value::Object(map) = &item else {
            return Err(format!("value for key {index} is not a map."));
        };
        if !map.get(key).is_some_and(|v| go_eq(v, value)) {
            kept.push(item);
        }
    }
    Ok(kept)
}

/// `findMapInSliceBasedOnKeyValue`.
fn find_map_in_slice(list: &[Value], key: &str, value: &Value) -> Result<Option<usize>, String> {
    for (index, item) in list.iter().enumerate() {
        let Value::Object(map) = item else {
            return Err(format!("value for key {index} is not a map."));
        };
        if map.get(key).is_some_and(|v| go_eq(v, value)) {
            return Ok(Some(index));
        }
    }
    Ok(None)
}

/// `mergeSliceWithoutSpecialElements`: items with the same key are merged, new ones appended.
fn merge_slice_without_special_elements(
    original: Vec<Value>,
    patch: &[Value],
    key: &str,
    schema: Schema<'_>,
    path: &mut Vec<String>,
) -> Result<Vec<Value>, String> {
    path.push("[]".to_string());
    let result = merge_items_by_key(original, patch, key, schema, path);
    path.pop();
    result
}

fn merge_items_by_key(
    mut original: Vec<Value>,
    patch: &[Value],
    key: &str,
    schema: Schema<'_>,
    path: &mut Vec<String>,
) -> Result<Vec<Value>, String> {
    for value in patch {
        let Value::Object(map) = value else {
            return Err(err_bad_arg_type("map", value));
        };
        let merge_value = map.get(key).ok_or_else(|| err_no_merge_key(map, key))?;
        match find_map_in_slice(&original, key, merge_value)? {
            Some(index) => {
                let existing = match std::mem::take(&mut original[index]) {
                    Value::Object(existing) => existing,
                    _ => Map::new(),
                };
                original[index] = Value::Object(merge_map(existing, map.clone(), schema, path)?);
            }
            None => original.push(Value::Object(merge_map(
                Map::new(),
                map.clone(),
                schema,
                path,
            )?)),
        }
    }
    Ok(original)
}

/// `partitionMapsByPresentInList` / `partitionPrimitivesByPresentInList`: the items present
/// in `by`, and the others.
fn partition(
    items: Vec<Value>,
    by: &[Value],
    key: Option<&str>,
) -> Result<(Vec<Value>, Vec<Value>), String> {
    let mut present = Vec::new();
    let mut absent = Vec::new();
    for item in items {
        let found = match key {
            None => by.iter().any(|b| go_eq(b, &item)),
            Some(key) => {
                let Value::Object(map) = &item else {
                    return Err(err_bad_arg_type("map", &item));
                };
                let value = map.get(key).ok_or_else(|| err_no_merge_key(map, key))?;
                find_map_in_slice(by, key, value)?.is_some()
            }
        };
        if found {
            present.push(item);
        } else {
            absent.push(item);
        }
    }
    Ok((present, absent))
}

/// `index`: the position of `value` in `list` (by merge key for maps), or -1.
fn index_of(list: &[Value], value: &Value, key: Option<&str>, kind: Kind) -> isize {
    let get = |item: &Value| -> Option<Value> {
        if kind == Kind::Map {
            item.as_object()
                .and_then(|m| m.get(key.unwrap_or_default()))
                .cloned()
        } else {
            Some(item.clone())
        }
    };
    let wanted = get(value);
    for (i, item) in list.iter().enumerate() {
        let candidate = get(item);
        let equal = match (&wanted, &candidate) {
            (None, None) => true,
            (Some(a), Some(b)) => go_eq(a, b),
            _ => false,
        };
        if equal {
            return i as isize;
        }
    }
    -1
}

/// `normalizeSliceOrder`: sorts `to_sort` by the order of `order` (Go's stable insertion
/// sort with upstream's comparator), `$patch: delete` items last.
fn normalize_slice_order(
    to_sort: Vec<Value>,
    order: &[Value],
    key: Option<&str>,
    kind: Kind,
) -> Result<Vec<Value>, String> {
    let (mut to_sort, to_delete) = if kind == Kind::Map {
        let key = key.unwrap_or_default();
        for item in to_sort.iter().chain(order.iter()) {
            let Value::Object(map) = item else {
                return Err(err_bad_arg_type("map", item));
            };
            if !map.contains_key(key) {
                return Err(err_no_merge_key(map, key));
            }
        }
        to_sort.into_iter().partition(|v: &Value| {
            v.get(DIRECTIVE_MARKER).and_then(Value::as_str) != Some(DELETE_DIRECTIVE)
        })
    } else {
        (to_sort, Vec::new())
    };
    let less = |a: &Value, b: &Value| {
        let ia = index_of(order, a, key, kind);
        let ib = index_of(order, b, key, kind);
        if ia >= 0 && ib >= 0 { ia < ib } else { true }
    };
    for i in 1..to_sort.len() {
        let mut j = i;
        while j > 0 && less(&to_sort[j], &to_sort[j - 1]) {
            to_sort.swap(j, j - 1);
            j -= 1;
        }
    }
    to_sort.extend(to_delete);
    Ok(to_sort)
}

/// `normalizeElementOrder` + `mergeSortedSlice`: patch items in patch order, server-only
/// items in server order, interleaved by the server order where both are known.
fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    key: Option<&str>,
    kind: Kind,
) -> Result<Vec<Value>, String> {
    let right = normalize_slice_order(patch_items, patch_order, key, kind)?;
    let left = normalize_slice_order(server_only, server_order, key, kind)?;
    let mut out = Vec::with_capacity(left.len() + right.len());
    let (mut i, mut j) = (0, 0);
    while i < left.len() || j < right.len() {
        if i >= left.len() {
            out.push(right[j].clone());
            j += 1;
        } else if j >= right.len() {
            out.push(left[i].clone());
            i += 1;
        } else {
            let li = index_of(server_order, &left[i], key, kind);
            let ri = index_of(server_order, &right[j], key, kind);
            if li >= 0 && ri >= 0 && li < ri {
                out.push(left[i].clone());
                i += 1;
            } else {
                out.push(right[j].clone());
                j += 1;
            }
        }
    }
    Ok(out)
}
