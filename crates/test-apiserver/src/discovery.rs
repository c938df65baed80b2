//! Discovery documents in their legacy JSON forms: `/version`, `/api`, `/api/v1`, `/apis`,
//! `/apis/<group>`, `/apis/<group>/<version>`. Clients asking for aggregated discovery
//! (`as=APIGroupDiscoveryList`) get these too, with `Content-Type: application/json`,
//! which client-go and kube-rs take as "no aggregated discovery" and fall back.

use serde_json::{Value, json};

use crate::resources::{Registry, ResourceDef};

/// What a kube-apiserver of Kubernetes 1.`minor`.0 answers at `/version` (the build
/// fields are placeholders of the right shape).
pub fn version(minor: u32) -> Value {
    json!({
        "major": "1",
        "minor": minor.to_string(),
        "gitVersion": format!("v1.{minor}.0"),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

pub fn core_versions(address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    })
}

fn group(registry: &Registry, name: &str) -> Option<Value> {
    let versions = registry.versions_of(name);
    let preferred = versions.first()?;
    let entry = |v: &String| json!({"groupVersion": format!("{name}/{v}"), "version": v});
    Some(json!({
        "name": name,
        "versions": versions.iter().map(entry).collect::<Vec<_>>(),
        "preferredVersion": entry(preferred),
    }))
}

pub fn group_list(registry: &Registry) -> Value {
    let groups: Vec<Value> = registry
        .groups()
        .iter()
        .filter_map(|g| group(registry, g))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/<group>`, or None for a group that is not served.
pub fn api_group(registry: &Registry, name: &str) -> Option<Value> {
    let mut group = group(registry, name)?;
    group["kind"] = json!("APIGroup");
    group["apiVersion"] = json!("v1");
    Some(group)
}

fn resource_entries(def: &ResourceDef) -> Vec<Value> {
    let mut main = json!({
        "name": def.resource,
        "singularName": def.singular,
        "namespaced": def.namespaced,
        "kind": def.kind,
        "verbs": def.verbs,
    });
    if !def.short_names.is_empty() {
        main["shortNames"] = json!(def.short_names);
    }
    if !def.categories.is_empty() {
        main["categories"] = json!(def.categories);
    }
    let mut entries = vec![main];
    if def.has_status {
        entries.push(json!({
            "name": format!("{}/status", def.resource),
            "singularName": "",
            "namespaced": def.namespaced,
            "kind": def.kind,
            "verbs": ["get", "patch", "update"],
        }));
    }
    if def.has_binding {
        entries.push(json!({
            "name": format!("{}/binding", def.resource),
            "singularName": "",
            "namespaced": def.namespaced,
            "kind": "Binding",
            "verbs": ["create"],
        }));
    }
    entries
}

/// `/api/v1` or `/apis/<group>/<version>`, or None for a version that is not served.
pub fn resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let defs = registry.resources_of(group, version);
    if defs.is_empty() {
        return None;
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let resources: Vec<Value> = defs.into_iter().flat_map(resource_entries).collect();
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_v1_lists_pods_with_their_subresources() {
        let list = resource_list(&Registry::builtin(), "", "v1").expect("core is served");
        let names: Vec<&str> = list["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["name"].as_str())
            .collect();
        for expected in [
            "pods",
            "pods/status",
            "pods/binding",
            "nodes",
            "nodes/status",
            "namespaces",
            "events",
        ] {
            assert!(
                names.contains(&expected),
                "{expected} missing from {names:?}"
            );
        }
        let binding = list["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["name"] == "pods/binding");
        assert_eq!(binding.map(|b| b["kind"].clone()), Some(json!("Binding")));
    }

    #[test]
    fn groups_name_their_preferred_version() {
        let list = group_list(&Registry::builtin());
        let coordination = list["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|g| g["name"] == "coordination.k8s.io");
        assert_eq!(
            coordination.map(|g| g["preferredVersion"]["groupVersion"].clone()),
            Some(json!("coordination.k8s.io/v1"))
        );
        assert!(resource_list(&Registry::builtin(), "nope.example.com", "v1").is_none());
    }
}
