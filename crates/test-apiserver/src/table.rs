//! `meta.k8s.io/v1` Table responses for custom resources, as kubectl asks for them
//! (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`): a Name column, then the
//! version's `additionalPrinterColumns` evaluated with their JSONPath (the real server's
//! customresource tableconvertor). Built-in resources answer plain JSON instead.

use serde_json::{Value, json};

/// Whether the `Accept` header asks for a Table.
pub fn wanted(accept: &str) -> bool {
    accept.split(',').any(|media| media.contains("as=Table"))
}

/// The printer columns of a CRD version; the real server defaults an Age column when a
/// CRD declares none.
pub fn printer_columns(version: &Value) -> Vec<Value> {
    match version["additionalPrinterColumns"].as_array() {
        Some(columns) if !columns.is_empty() => columns.clone(),
        _ => {
            vec![json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})]
        }
    }
}

/// A Table of `objects`; `list_metadata` is the list's metadata (resourceVersion, continue).
pub fn table(columns: &[Value], objects: &[Value], list_metadata: Value) -> Value {
    let mut definitions = vec![json!({
        "name": "Name",
        "type": "string",
        "format": "name",
        "description": "Name must be unique within a namespace.",
        "priority": 0,
    })];
    definitions.extend(columns.iter().map(|c| {
        json!({
            "name": c["name"],
            "type": c["type"],
            "format": c["format"].as_str().unwrap_or_default(),
            "description": c["description"].as_str().unwrap_or_default(),
            "priority": c["priority"].as_i64().unwrap_or(0),
        })
    }));
    let rows: Vec<Value> = objects.iter().map(|object| row(columns, object)).collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_metadata,
        "columnDefinitions": definitions,
        "rows": rows,
    })
}

fn row(columns: &[Value], object: &Value) -> Value {
    let mut cells = vec![object["metadata"]["name"].clone()];
    for column in columns {
        let path = column["jsonPath"].as_str().unwrap_or_default();
        let cell = match first_result(object, path) {
            None => Value::Null,
            Some(value) => cell(column["type"].as_str().unwrap_or("string"), value),
        };
        cells.push(cell);
    }
    json!({
        "cells": cells,
        "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": object["metadata"]},
    })
}

fn cell(column_type: &str, value: &Value) -> Value {
    match (column_type, value) {
        ("date", Value::String(timestamp)) => json!(age(timestamp)),
        ("string", Value::String(text)) => json!(text),
        ("string", other) => json!(other.to_string()),
        (_, other) => other.clone(),
    }
}

/// kubectl's `HumanDuration` of the time since `timestamp`.
fn age(timestamp: &str) -> String {
    let Ok(then) = timestamp.parse::<k8s_openapi::jiff::Timestamp>() else {
        return "<invalid>".into();
    };
    let seconds = k8s_openapi::jiff::Timestamp::now().as_second() - then.as_second();
    human_duration(seconds)
}

fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    let seconds = seconds.max(0);
    let (minutes, hours, days) = (seconds / 60, seconds / 3600, seconds / 86_400);
    match () {
        _ if seconds < 120 => format!("{seconds}s"),
        _ if minutes < 10 && seconds % 60 != 0 => format!("{minutes}m{}s", seconds % 60),
        _ if minutes < 180 => format!("{minutes}m"),
        _ if hours < 8 && minutes % 60 != 0 => format!("{hours}h{}m", minutes % 60),
        _ if hours < 48 => format!("{hours}h"),
        _ if hours < 192 && hours % 24 != 0 => format!("{days}d{}h", hours % 24),
        _ if days < 730 => format!("{days}d"),
        _ if days < 2920 && days % 365 != 0 => format!("{}y{}d", days / 365, days % 365),
        _ => format!("{}y", days / 365),
    }
}

/// The first result of a printer column's JSONPath: `.a.b`, `[N]`, `[*]` and
/// `[?(@.field=="value")]` steps (what CRD printer columns use).
fn first_result<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    let path = path
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim_start_matches('$');
    let mut current: Vec<&Value> = vec![object];
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            let selector = &after[..end];
            rest = &after[end + 1..];
            current = current
                .into_iter()
                .flat_map(|v| select(v, selector))
                .collect();
        } else if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let key = &after[..end];
            rest = &after[end..];
            current = current.into_iter().filter_map(|v| v.get(key)).collect();
        } else {
            return None;
        }
    }
    current.into_iter().next()
}

fn select<'a>(value: &'a Value, selector: &str) -> Vec<&'a Value> {
    let Some(items) = value.as_array() else {
        return Vec::new();
    };
    if selector == "*" {
        return items.iter().collect();
    }
    if let Ok(index) = selector.parse::<usize>() {
        return items.get(index).into_iter().collect();
    }
    let Some(filter) = selector
        .strip_prefix("?(@")
        .and_then(|f| f.strip_suffix(')'))
    else {
        return Vec::new();
    };
    let Some((field_path, wanted)) = filter.split_once("==") else {
        return Vec::new();
    };
    let wanted = wanted.trim().trim_matches(|c| c == '"' || c == '\'');
    items
        .iter()
        .filter(|item| {
            first_result(item, field_path.trim()).is_some_and(|v| match v {
                Value::String(s) => s == wanted,
                Value::Bool(b) => wanted.parse::<bool>() == Ok(*b),
                Value::Number(n) => wanted.parse::<serde_json::Number>().is_ok_and(|w| &w == n),
                _ => false,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_paths_of_printer_columns() {
        let object = json!({"status": {"schedulerName": "s", "conditions": [
            {"type": "Accepted", "status": "True"}, {"type": "Ready", "status": "False"}]}});
        assert_eq!(
            first_result(&object, ".status.schedulerName"),
            Some(&json!("s"))
        );
        assert_eq!(
            first_result(&object, r#".status.conditions[?(@.type=="Ready")].status"#),
            Some(&json!("False"))
        );
        assert_eq!(
            first_result(&object, ".status.conditions[0].type"),
            Some(&json!("Accepted"))
        );
        assert_eq!(first_result(&object, ".status.missing"), None);
    }

    #[test]
    fn ages_read_as_kubectl_prints_them() {
        let cases = [
            (5, "5s"),
            (130, "2m10s"),
            (600, "10m"),
            (3 * 3600 + 60, "3h1m"),
            (30 * 3600, "30h"),
            (3 * 86_400, "3d"),
            (800 * 86_400, "2y70d"),
        ];
        for (seconds, expected) in cases {
            assert_eq!(human_duration(seconds), expected, "{seconds}s");
        }
    }
}
