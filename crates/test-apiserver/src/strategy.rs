//! Per-resource write rules, after the real server's registry strategies
//! (`PrepareForCreate`, `PrepareForUpdate`): what create resets, which half of an object
//! the main resource and the status subresource may write, and when generation moves.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value, json};

use crate::resources::ResourceDef;

/// Metadata the server owns: copied from the stored object on every update.
const SERVER_OWNED_METADATA: [&str; 5] = [
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
];

/// Now, as metav1.Time serialises it (`2025-01-02T03:04:05Z`).
pub fn now() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn random_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.finish()
}

/// A random version-4 style UID.
pub fn new_uid() -> String {
    let (a, b) = (random_u64(), random_u64());
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        (b >> 48) & 0x3fff | 0x8000,
        b & 0xffff_ffff_ffff
    )
}

/// The 5-character suffix `generateName` gets, from the real server's alphabet.
pub fn name_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut bits = random_u64();
    (0..5)
        .map(|_| {
            let c = ALPHABET[(bits % ALPHABET.len() as u64) as usize] as char;
            bits /= ALPHABET.len() as u64;
            c
        })
        .collect()
}

/// Metadata of `object` as a mutable map, created if missing or not an object.
pub fn metadata_mut(object: &mut Value) -> &mut Map<String, Value> {
    if !object.is_object() {
        *object = json!({});
    }
    if !object["metadata"].is_object() {
        object["metadata"] = json!({});
    }
    let metadata = &mut object["metadata"];
    if let Value::Object(map) = metadata {
        return map;
    }
    unreachable!("metadata was just made an object")
}

/// Sets what create owns: uid, creationTimestamp, generation 1; clears deletion fields
/// and, for resources with a status subresource, the status (with the initial phase
/// the real server sets for pods, namespaces and volumes; nodes keep theirs).
pub fn prepare_for_create(def: &ResourceDef, object: &mut Value) {
    object["apiVersion"] = json!(def.api_version());
    object["kind"] = json!(def.kind);
    let metadata = metadata_mut(object);
    metadata.insert("uid".into(), json!(new_uid()));
    metadata.insert("creationTimestamp".into(), json!(now()));
    metadata.insert("generation".into(), json!(1));
    metadata.remove("deletionTimestamp");
    metadata.remove("deletionGracePeriodSeconds");
    metadata.remove("resourceVersion");
    if !def.namespaced {
        metadata.remove("namespace");
    }
    if def.has_status && !(def.group.is_empty() && def.resource == "nodes") {
        remove_key(object, "status");
    }
    if def.group.is_empty() {
        match def.resource.as_str() {
            "pods" => default_pod(object),
            "namespaces" => {
                let name = object["metadata"]["name"].clone();
                set_in(
                    object,
                    &["metadata", "labels", "kubernetes.io/metadata.name"],
                    name,
                );
                object["status"] = json!({"phase": "Active"});
            }
            "persistentvolumeclaims" | "persistentvolumes" => {
                object["status"] = json!({"phase": "Pending"})
            }
            _ => {}
        }
    }
}

/// The pod defaults a scheduler reads; the rest of the real defaulting is not done.
fn default_pod(pod: &mut Value) {
    if !pod["spec"].is_object() {
        pod["spec"] = json!({});
    }
    if pod["spec"]["schedulerName"]
        .as_str()
        .is_none_or(str::is_empty)
    {
        pod["spec"]["schedulerName"] = json!("default-scheduler");
    }
    if pod["spec"]["priority"].is_null() {
        pod["spec"]["priority"] = json!(0);
    }
    pod["status"] = json!({"phase": "Pending"});
}

/// The object an update stores: `incoming` with the halves it may not write taken from
/// `existing` (status for the main resource of a resource with a status subresource;
/// everything but status for the status subresource) and server-owned metadata kept.
/// Generation moves when anything outside metadata and status changed.
pub fn prepare_for_update(
    def: &ResourceDef,
    incoming: Value,
    existing: &Value,
    status_subresource: bool,
) -> Value {
    let mut object = if status_subresource {
        let mut object = existing.clone();
        match incoming.get("status") {
            Some(status) => object["status"] = status.clone(),
            None => remove_key(&mut object, "status"),
        }
        if let Some(managed) = incoming["metadata"].get("managedFields") {
            object["metadata"]["managedFields"] = managed.clone();
        }
        object
    } else {
        let mut object = incoming;
        if def.has_status {
            match existing.get("status") {
                Some(status) => object["status"] = status.clone(),
                None => remove_key(&mut object, "status"),
            }
        }
        object
    };
    object["apiVersion"] = json!(def.api_version());
    object["kind"] = json!(def.kind);
    let metadata = metadata_mut(&mut object);
    for field in SERVER_OWNED_METADATA {
        match existing["metadata"].get(field) {
            Some(value) => metadata.insert(field.into(), value.clone()),
            None => metadata.remove(field),
        };
    }
    if spec_changed(&object, existing) {
        let generation = existing["metadata"]["generation"].as_i64().unwrap_or(0);
        object["metadata"]["generation"] = json!(generation + 1);
    }
    object
}

/// Whether anything but `apiVersion`, `kind`, `metadata` and `status` differs.
fn spec_changed(new: &Value, old: &Value) -> bool {
    let rest = |object: &Value| -> Map<String, Value> {
        object
            .as_object()
            .map(|map| {
                map.iter()
                    .filter(|(k, _)| {
                        !matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "status")
                    })
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default()
    };
    rest(new) != rest(old)
}

/// Whether two stored states are the same write (resourceVersion aside): the real server
/// does not write, bump the resourceVersion or emit an event for a no-op update.
pub fn same_state(a: &Value, b: &Value) -> bool {
    let strip = |object: &Value| {
        let mut object = object.clone();
        if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.remove("resourceVersion");
        }
        object
    };
    strip(a) == strip(b)
}

/// Sets `path` in `object`, turning whatever is on the way into objects (never panics,
/// unlike indexing into a non-object).
pub fn set_in(object: &mut Value, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut current = object;
    for key in parents {
        if !current.is_object() {
            *current = json!({});
        }
        current = &mut current[*key];
    }
    if !current.is_object() {
        *current = json!({});
    }
    current[*last] = value;
}

pub fn remove_key(object: &mut Value, key: &str) {
    if let Some(map) = object.as_object_mut() {
        map.remove(key);
    }
}

/// `metadata.finalizers` as strings.
pub fn finalizers(object: &Value) -> Vec<String> {
    object["metadata"]["finalizers"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

pub fn is_deleting(object: &Value) -> bool {
    !object["metadata"]["deletionTimestamp"].is_null()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;

    fn def(group: &str, resource: &str) -> ResourceDef {
        Registry::builtin()
            .get(group, "v1", resource)
            .cloned()
            .expect("built in")
    }

    #[test]
    fn the_main_resource_keeps_the_stored_status_and_bumps_generation_on_spec_change() {
        let pods = def("", "pods");
        let existing = json!({"metadata": {"name": "p", "generation": 1, "uid": "u"}, "spec": {"a": 1}, "status": {"phase": "Running"}});
        let incoming = json!({"metadata": {"name": "p", "uid": "other"}, "spec": {"a": 2}, "status": {"phase": "Failed"}});
        let stored = prepare_for_update(&pods, incoming, &existing, false);
        assert_eq!(stored["status"]["phase"], "Running");
        assert_eq!(stored["spec"]["a"], 2);
        assert_eq!(stored["metadata"]["generation"], 2);
        assert_eq!(stored["metadata"]["uid"], "u");
    }

    #[test]
    fn the_status_subresource_writes_only_status() {
        let nodes = def("", "nodes");
        let existing = json!({"metadata": {"name": "n", "generation": 3, "labels": {"a": "b"}}, "spec": {"unschedulable": false}});
        let incoming = json!({"metadata": {"name": "n", "labels": {}}, "spec": {"unschedulable": true}, "status": {"capacity": {"cpu": "4"}}});
        let stored = prepare_for_update(&nodes, incoming, &existing, true);
        assert_eq!(stored["spec"]["unschedulable"], false);
        assert_eq!(stored["metadata"]["labels"]["a"], "b");
        assert_eq!(stored["status"]["capacity"]["cpu"], "4");
        assert_eq!(stored["metadata"]["generation"], 3);
    }

    #[test]
    fn resources_without_status_subresource_write_everything() {
        let leases = def("coordination.k8s.io", "leases");
        let existing =
            json!({"metadata": {"name": "l", "generation": 1}, "spec": {"holderIdentity": "a"}});
        let incoming = json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "b"}});
        let stored = prepare_for_update(&leases, incoming, &existing, false);
        assert_eq!(stored["spec"]["holderIdentity"], "b");
        assert_eq!(stored["metadata"]["generation"], 2);
    }

    #[test]
    fn create_resets_pod_status_and_defaults_the_scheduler() {
        let mut pod = json!({"metadata": {"name": "p", "resourceVersion": "9"}, "spec": {}, "status": {"phase": "Running"}});
        prepare_for_create(&def("", "pods"), &mut pod);
        assert_eq!(pod["status"], json!({"phase": "Pending"}));
        assert_eq!(pod["spec"]["schedulerName"], "default-scheduler");
        assert_eq!(pod["metadata"]["generation"], 1);
        assert!(pod["metadata"]["resourceVersion"].is_null());
        assert_eq!(pod["metadata"]["uid"].as_str().map(str::len), Some(36));
    }
}
