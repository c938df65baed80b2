//! Pruning, null pruning and defaulting, as apiextensions-apiserver's
//! `pkg/apiserver/schema/pruning/algorithm.go` and `schema/defaulting/{prunenulls,algorithm}.go`.

use serde_json::{Map, Value};

/// `properties` of a schema node.
pub(crate) fn properties(s: &Value) -> Option<&Map<String, Value>> {
    s.get("properties").and_then(Value::as_object)
}

/// `items` of a schema node, when it is a schema.
pub(crate) fn items(s: &Value) -> Option<&Value> {
    s.get("items").filter(|i| i.is_object())
}

/// `additionalProperties`: `None` when absent or `false`, `Some(None)` for `true`,
/// `Some(Some(schema))` for a schema.
pub(crate) fn additional(s: &Value) -> Option<Option<&Value>> {
    match s.get("additionalProperties") {
        Some(Value::Object(_)) => Some(s.get("additionalProperties")),
        Some(Value::Bool(true)) => Some(None),
        _ => None,
    }
}

pub(crate) fn flag(s: &Value, name: &str) -> bool {
    s.get(name).and_then(Value::as_bool).unwrap_or(false)
}

fn is_meta_field(k: &str) -> bool {
    matches!(k, "apiVersion" | "kind" | "metadata")
}

/// The schema of field `k` of an object of schema `s` (`getSchemaForField`).
fn field_schema<'a>(s: Option<&'a Value>, k: &str) -> Option<&'a Value> {
    let s = s?;
    if let Some(p) = properties(s).and_then(|p| p.get(k)) {
        return Some(p);
    }
    additional(s).flatten()
}

struct Pruner {
    path: Vec<String>,
    unknown: Vec<String>,
}

impl Pruner {
    fn push_key(&mut self, key: &str) -> usize {
        let len = self.path.len();
        if !self.path.is_empty() {
            self.path.push(".".into());
        }
        self.path.push(key.into());
        len
    }

    fn push_index(&mut self, i: usize) -> usize {
        let len = self.path.len();
        self.path.push(format!("[{i}]"));
        len
    }

    fn record(&mut self, key: &str) {
        let len = self.push_key(key);
        self.unknown.push(self.path.concat());
        self.path.truncate(len);
    }

    /// `prune`; `embedded` is the node's `x-kubernetes-embedded-resource` (forced at the root).
    fn prune(&mut self, x: &mut Value, s: Option<&Value>, embedded: bool) {
        if let Some(s) = s
            && flag(s, "x-kubernetes-preserve-unknown-fields")
        {
            self.skip_prune(x, s, embedded);
            return;
        }
        match x {
            Value::Object(map) => {
                let Some(s) = s else {
                    let keys: Vec<String> = map.keys().cloned().collect();
                    for k in keys {
                        self.record(&k);
                    }
                    map.clear();
                    return;
                };
                let keys: Vec<String> = map.keys().cloned().collect();
                for k in keys {
                    if embedded && is_meta_field(&k) {
                        continue;
                    }
                    if let Some(prop) = properties(s).and_then(|p| p.get(&k)) {
                        let len = self.push_key(&k);
                        if let Some(v) = map.get_mut(&k) {
                            self.prune(v, Some(prop), flag(prop, "x-kubernetes-embedded-resource"));
                        }
                        self.path.truncate(len);
                    } else if let Some(add) = additional(s) {
                        let len = self.push_key(&k);
                        let embedded =
                            add.is_some_and(|a| flag(a, "x-kubernetes-embedded-resource"));
                        if let Some(v) = map.get_mut(&k) {
                            self.prune(v, add, embedded);
                        }
                        self.path.truncate(len);
                    } else {
                        if !is_meta_field(&k) || !self.path.is_empty() {
                            self.record(&k);
                        }
                        map.remove(&k);
                    }
                }
            }
            Value::Array(list) => {
                let item_schema = s.and_then(items);
                let embedded =
                    item_schema.is_some_and(|i| flag(i, "x-kubernetes-embedded-resource"));
                for (i, v) in list.iter_mut().enumerate() {
                    let len = self.push_index(i);
                    self.prune(v, item_schema, embedded);
                    self.path.truncate(len);
                }
            }
            _ => {}
        }
    }

    fn skip_prune(&mut self, x: &mut Value, s: &Value, embedded: bool) {
        match x {
            Value::Object(map) => {
                let keys: Vec<String> = map.keys().cloned().collect();
                for k in keys {
                    if embedded && is_meta_field(&k) {
                        continue;
                    }
                    let (sub, known) = if let Some(prop) = properties(s).and_then(|p| p.get(&k)) {
                        (Some(prop), true)
                    } else if let Some(add) = additional(s) {
                        (add, true)
                    } else {
                        (None, false)
                    };
                    if known {
                        let len = self.push_key(&k);
                        let embedded =
                            sub.is_some_and(|p| flag(p, "x-kubernetes-embedded-resource"));
                        if let Some(v) = map.get_mut(&k) {
                            self.prune(v, sub, embedded);
                        }
                        self.path.truncate(len);
                    }
                }
            }
            Value::Array(list) => {
                if let Some(item_schema) = items(s) {
                    let embedded = flag(item_schema, "x-kubernetes-embedded-resource");
                    for (i, v) in list.iter_mut().enumerate() {
                        let len = self.push_index(i);
                        self.skip_prune(v, item_schema, embedded);
                        self.path.truncate(len);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Prunes `x` (a whole resource) and returns the pruned paths, sorted, as
/// `PruneWithOptions(obj, s, isResourceRoot=true, TrackUnknownFieldPaths)` reports them.
pub(crate) fn prune(x: &mut Value, schema: &Value) -> Vec<String> {
    let mut pruner = Pruner {
        path: Vec::new(),
        unknown: Vec::new(),
    };
    pruner.prune(x, Some(schema), true);
    pruner.unknown.sort();
    pruner.unknown
}

fn nullable(s: &Value) -> bool {
    flag(s, "nullable")
}

fn default_of(s: &Value) -> Option<&Value> {
    s.get("default")
}

/// `PruneNonNullableNullsWithoutDefaults`.
pub(crate) fn prune_nulls(x: &mut Value, s: Option<&Value>) {
    match x {
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                let sub = field_schema(s, &k);
                let drop = map.get(&k).is_some_and(Value::is_null)
                    && sub.is_some_and(|sub| !nullable(sub) && default_of(sub).is_none());
                if drop {
                    map.remove(&k);
                } else if let Some(v) = map.get_mut(&k) {
                    prune_nulls(v, sub);
                }
            }
        }
        Value::Array(list) => {
            let sub = s.and_then(items);
            for v in list.iter_mut() {
                prune_nulls(v, sub);
            }
        }
        _ => {}
    }
}

fn is_non_nullable_null(x: &Value, s: Option<&Value>) -> bool {
    x.is_null() && s.is_some_and(|s| !nullable(s))
}

/// `defaulting.Default`: defaults absent fields and non-nullable nulls, recursively.
pub(crate) fn default(x: &mut Value, s: Option<&Value>) {
    let Some(s) = s else { return };
    match x {
        Value::Object(map) => {
            if let Some(props) = properties(s) {
                for (k, prop) in props {
                    let Some(def) = default_of(prop) else {
                        continue;
                    };
                    let missing = match map.get(k) {
                        None => true,
                        Some(v) => is_non_nullable_null(v, Some(prop)),
                    };
                    if missing {
                        map.insert(k.clone(), def.clone());
                    }
                }
            }
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                let Some(v) = map.get_mut(&k) else { continue };
                if let Some(prop) = properties(s).and_then(|p| p.get(&k)) {
                    default(v, Some(prop));
                } else if let Some(add) = additional(s) {
                    if is_non_nullable_null(v, add) {
                        *v = add.and_then(default_of).cloned().unwrap_or(Value::Null);
                    }
                    default(v, add);
                }
            }
        }
        Value::Array(list) => {
            let sub = items(s);
            for v in list.iter_mut() {
                if is_non_nullable_null(v, sub) {
                    *v = sub.and_then(default_of).cloned().unwrap_or(Value::Null);
                }
                default(v, sub);
            }
        }
        _ => {}
    }
}
