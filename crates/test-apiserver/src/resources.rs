//! The resources the server serves: the built-in ones berth uses (with the create-only
//! TokenReview and SubjectAccessReview), and those of every established
//! CustomResourceDefinition. Discovery documents and request routing both
//! read this registry.

use std::collections::BTreeMap;

use crate::access::Review;

/// One served resource at one group/version, as discovery describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceDef {
    pub group: String,
    pub version: String,
    /// The plural, e.g. `pods`.
    pub resource: String,
    pub kind: String,
    pub list_kind: String,
    pub singular: String,
    pub namespaced: bool,
    pub verbs: Vec<String>,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    /// Has the `status` subresource (status and spec are written separately).
    pub has_status: bool,
    /// Has the `binding` subresource (pods).
    pub has_binding: bool,
}

impl ResourceDef {
    /// `v1` or `group/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Objects of every version of a group/resource share one storage.
    pub fn storage_key(&self) -> (String, String) {
        (self.group.clone(), self.resource.clone())
    }
}

const ALL_VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

struct Builtin {
    group: &'static str,
    resource: &'static str,
    kind: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
    has_status: bool,
}

/// The built-in resources, in the order the real server lists them.
const BUILTINS: [Builtin; 20] = [
    Builtin {
        group: "",
        resource: "namespaces",
        kind: "Namespace",
        namespaced: false,
        short_names: &["ns"],
        categories: &[],
        has_status: true,
    },
    Builtin {
        group: "",
        resource: "nodes",
        kind: "Node",
        namespaced: false,
        short_names: &["no"],
        categories: &[],
        has_status: true,
    },
    Builtin {
        group: "",
        resource: "pods",
        kind: "Pod",
        namespaced: true,
        short_names: &["po"],
        categories: &["all"],
        has_status: true,
    },
    Builtin {
        group: "",
        resource: "events",
        kind: "Event",
        namespaced: true,
        short_names: &["ev"],
        categories: &[],
        has_status: false,
    },
    Builtin {
        group: "",
        resource: "persistentvolumeclaims",
        kind: "PersistentVolumeClaim",
        namespaced: true,
        short_names: &["pvc"],
        categories: &[],
        has_status: true,
    },
    Builtin {
        group: "",
        resource: "persistentvolumes",
        kind: "PersistentVolume",
        namespaced: false,
        short_names: &["pv"],
        categories: &[],
        has_status: true,
    },
    Builtin {
        group: "apiextensions.k8s.io",
        resource: "customresourcedefinitions",
        kind: "CustomResourceDefinition",
        namespaced: false,
        short_names: &["crd", "crds"],
        categories: &["api-extensions"],
        has_status: true,
    },
    Builtin {
        group: "events.k8s.io",
        resource: "events",
        kind: "Event",
        namespaced: true,
        short_names: &["ev"],
        categories: &[],
        has_status: false,
    },
    Builtin {
        group: "",
        resource: "services",
        kind: "Service",
        namespaced: true,
        short_names: &["svc"],
        categories: &["all"],
        has_status: true,
    },
    Builtin {
        group: "",
        resource: "replicationcontrollers",
        kind: "ReplicationController",
        namespaced: true,
        short_names: &["rc"],
        categories: &["all"],
        has_status: true,
    },
    Builtin {
        group: "apps",
        resource: "replicasets",
        kind: "ReplicaSet",
        namespaced: true,
        short_names: &["rs"],
        categories: &["all"],
        has_status: true,
    },
    Builtin {
        group: "apps",
        resource: "statefulsets",
        kind: "StatefulSet",
        namespaced: true,
        short_names: &["sts"],
        categories: &["all"],
        has_status: true,
    },
    Builtin {
        group: "policy",
        resource: "poddisruptionbudgets",
        kind: "PodDisruptionBudget",
        namespaced: true,
        short_names: &["pdb"],
        categories: &[],
        has_status: true,
    },
    Builtin {
        group: "storage.k8s.io",
        resource: "storageclasses",
        kind: "StorageClass",
        namespaced: false,
        short_names: &["sc"],
        categories: &[],
        has_status: false,
    },
    Builtin {
        group: "storage.k8s.io",
        resource: "csinodes",
        kind: "CSINode",
        namespaced: false,
        short_names: &[],
        categories: &[],
        has_status: false,
    },
    Builtin {
        group: "storage.k8s.io",
        resource: "csidrivers",
        kind: "CSIDriver",
        namespaced: false,
        short_names: &[],
        categories: &[],
        has_status: false,
    },
    Builtin {
        group: "storage.k8s.io",
        resource: "csistoragecapacities",
        kind: "CSIStorageCapacity",
        namespaced: true,
        short_names: &[],
        categories: &[],
        has_status: false,
    },
    Builtin {
        group: "storage.k8s.io",
        resource: "volumeattachments",
        kind: "VolumeAttachment",
        namespaced: false,
        short_names: &[],
        categories: &[],
        has_status: true,
    },
    Builtin {
        group: "scheduling.k8s.io",
        resource: "priorityclasses",
        kind: "PriorityClass",
        namespaced: false,
        short_names: &["pc"],
        categories: &[],
        has_status: false,
    },
    Builtin {
        group: "coordination.k8s.io",
        resource: "leases",
        kind: "Lease",
        namespaced: true,
        short_names: &[],
        categories: &[],
        has_status: false,
    },
];

/// Every served resource, keyed by (group, version, plural), plus the order groups appear
/// in `/apis`.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    defs: BTreeMap<(String, String, String), ResourceDef>,
    group_order: Vec<String>,
}

impl Registry {
    /// The built-in resources.
    pub fn builtin() -> Registry {
        let mut registry = Registry::default();
        for b in &BUILTINS {
            let verbs = ALL_VERBS
                .iter()
                .filter(|v| b.resource != "namespaces" || **v != "deletecollection")
                .map(|v| v.to_string())
                .collect();
            registry.insert(ResourceDef {
                group: b.group.to_string(),
                version: "v1".to_string(),
                resource: b.resource.to_string(),
                kind: b.kind.to_string(),
                list_kind: format!("{}List", b.kind),
                singular: b.kind.to_ascii_lowercase(),
                namespaced: b.namespaced,
                verbs,
                short_names: b.short_names.iter().map(|s| s.to_string()).collect(),
                categories: b.categories.iter().map(|s| s.to_string()).collect(),
                has_status: b.has_status,
                has_binding: b.resource == "pods",
            });
        }
        // The reviews are answered on create and never stored (see `access`); like the
        // real server, discovery lists them with `create` as their only verb.
        for review in Review::ALL {
            registry.insert(ResourceDef {
                group: review.group().to_string(),
                version: "v1".to_string(),
                resource: review.resource().to_string(),
                kind: review.kind().to_string(),
                list_kind: format!("{}List", review.kind()),
                singular: review.kind().to_ascii_lowercase(),
                namespaced: false,
                verbs: vec!["create".to_string()],
                short_names: Vec::new(),
                categories: Vec::new(),
                has_status: false,
                has_binding: false,
            });
        }
        registry
    }

    pub fn insert(&mut self, def: ResourceDef) {
        if !self.group_order.contains(&def.group) {
            self.group_order.push(def.group.clone());
        }
        self.defs.insert(
            (def.group.clone(), def.version.clone(), def.resource.clone()),
            def,
        );
    }

    /// Stops serving every version of `group`/`resource`.
    pub fn remove(&mut self, group: &str, resource: &str) {
        self.defs
            .retain(|(g, _, r), _| !(g == group && r == resource));
        let still_served = self.defs.keys().any(|(g, _, _)| g == group);
        if !still_served {
            self.group_order.retain(|g| g != group);
        }
    }

    pub fn get(&self, group: &str, version: &str, resource: &str) -> Option<&ResourceDef> {
        self.defs
            .get(&(group.to_string(), version.to_string(), resource.to_string()))
    }

    pub fn all(&self) -> impl Iterator<Item = &ResourceDef> {
        self.defs.values()
    }

    /// Served resources of one group/version, sorted by plural.
    pub fn resources_of(&self, group: &str, version: &str) -> Vec<&ResourceDef> {
        self.defs
            .values()
            .filter(|d| d.group == group && d.version == version)
            .collect()
    }

    /// Served versions of `group`, preferred first (kube-aware version order).
    pub fn versions_of(&self, group: &str) -> Vec<String> {
        let mut versions: Vec<String> = self
            .defs
            .keys()
            .filter(|(g, _, _)| g == group)
            .map(|(_, v, _)| v.clone())
            .collect();
        versions.dedup();
        versions.sort_by(|a, b| {
            version_priority(b)
                .cmp(&version_priority(a))
                .then_with(|| a.cmp(b))
        });
        versions.dedup();
        versions
    }

    /// Non-core groups in `/apis` order.
    pub fn groups(&self) -> Vec<String> {
        self.group_order
            .iter()
            .filter(|g| !g.is_empty())
            .cloned()
            .collect()
    }
}

/// Orders versions as Kubernetes does: GA > beta > alpha, higher numbers first
/// (`v2 > v1 > v1beta2 > v1beta1 > v1alpha1`); non-Kubernetes versions sort last.
pub fn version_priority(version: &str) -> (u8, u64, u64) {
    let Some(rest) = version.strip_prefix('v') else {
        return (0, 0, 0);
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let Ok(major) = digits.parse::<u64>() else {
        return (0, 0, 0);
    };
    let suffix = &rest[digits.len()..];
    let (level, minor) = if suffix.is_empty() {
        (3, 0)
    } else if let Some(n) = suffix.strip_prefix("beta") {
        (2, n.parse().unwrap_or(0))
    } else if let Some(n) = suffix.strip_prefix("alpha") {
        (1, n.parse().unwrap_or(0))
    } else {
        return (0, 0, 0);
    };
    (level, major, minor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_in_kubernetes_priority_order() {
        let mut versions = vec!["v1alpha1", "v1beta1", "v2", "v1", "v1beta2", "foo"];
        versions.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
        assert_eq!(
            versions,
            ["v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]
        );
    }

    #[test]
    fn builtin_registry_serves_pods_with_status_and_binding() {
        let registry = Registry::builtin();
        let pods = registry.get("", "v1", "pods").expect("pods are built in");
        assert!(pods.namespaced && pods.has_status && pods.has_binding);
        assert_eq!(registry.groups()[0], "apiextensions.k8s.io");
        assert!(
            registry
                .get("", "v1", "namespaces")
                .is_some_and(|ns| !ns.verbs.contains(&"deletecollection".to_string()))
        );
    }

    #[test]
    fn reviews_are_cluster_scoped_and_create_only() {
        let registry = Registry::builtin();
        for (group, resource, kind) in [
            ("authentication.k8s.io", "tokenreviews", "TokenReview"),
            (
                "authorization.k8s.io",
                "subjectaccessreviews",
                "SubjectAccessReview",
            ),
        ] {
            let def = registry
                .get(group, "v1", resource)
                .unwrap_or_else(|| panic!("{resource} are served"));
            assert_eq!(def.kind, kind);
            assert!(!def.namespaced, "{resource}");
            assert_eq!(def.verbs, ["create"], "{resource}");
            assert_eq!(Review::of(def).map(Review::kind), Some(kind));
        }
        let pods = registry.get("", "v1", "pods").expect("pods are built in");
        assert_eq!(Review::of(pods), None);
    }
}
