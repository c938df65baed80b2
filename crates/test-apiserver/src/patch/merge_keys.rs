//! The strategic-merge-patch list strategies the test server knows, in one table.
//!
//! The real API server reads them from the Go struct tags of the built-in types
//! (`patchStrategy:"merge" patchMergeKey:"..."` in `k8s.io/api`). This table copies the
//! tags of the lists that matter for the kinds the test server serves (Kubernetes 1.33).
//! Every list **not** listed here is *atomic*: a strategic merge patch replaces it
//! as a whole, exactly as the real server does for lists without a patch strategy.
//! Maps (objects) are always merged key by key; `null` deletes a key.
//!
//! | Kind | Field path (`[]` = each list item) | Strategy |
//! | --- | --- | --- |
//! | every built-in kind | `metadata.finalizers` | merge, primitive list (union) |
//! | every built-in kind | `metadata.ownerReferences` | merge by `uid` |
//! | Pod | `spec.containers`, `spec.initContainers`, `spec.ephemeralContainers` | merge by `name` |
//! | Pod | `spec.<containers\|initContainers\|ephemeralContainers>[].ports` | merge by `containerPort` |
//! | Pod | `spec.<…>[].env` | merge by `name` |
//! | Pod | `spec.<…>[].volumeMounts` | merge by `mountPath` |
//! | Pod | `spec.<…>[].volumeDevices` | merge by `devicePath` |
//! | Pod | `spec.volumes` | merge by `name` (upstream: `merge,retainKeys`) |
//! | Pod | `spec.imagePullSecrets` | merge by `name` |
//! | Pod | `spec.hostAliases` | merge by `ip` |
//! | Pod | `spec.topologySpreadConstraints` | merge by `topologyKey` |
//! | Pod | `spec.schedulingGates` | merge by `name` |
//! | Pod | `spec.resourceClaims` | merge by `name` (upstream: `merge,retainKeys`) |
//! | Pod | `status.conditions` | merge by `type` |
//! | Pod | `status.podIPs`, `status.hostIPs` | merge by `ip` |
//! | Pod | `status.resourceClaimStatuses` | merge by `name` |
//! | Node | `spec.podCIDRs` | merge, primitive list (union) |
//! | Node | `status.conditions` | merge by `type` |
//! | Node | `status.addresses` | merge by `type` |
//! | Namespace | `status.conditions` | merge by `type` |
//! | PersistentVolumeClaim | `status.conditions` | merge by `type` |
//! | PodDisruptionBudget | `status.conditions` | merge by `type` |
//! | CSINode | `spec.drivers` | merge by `name` |
//!
//! Atomic on purpose, because upstream has no patch strategy for them: Pod
//! `spec.tolerations`, `spec.readinessGates`, containers' `command`, `args`, `envFrom`,
//! `resizePolicy`, `status.containerStatuses` (and the init/ephemeral variants); Node
//! `spec.taints`, `status.images`, `status.volumesAttached`, `status.volumesInUse`;
//! CustomResourceDefinition `spec.versions` and `status.conditions`; every list of Event
//! (core and `events.k8s.io`), Lease, StorageClass, PriorityClass, PersistentVolume.
//!
//! `$retainKeys` is honoured wherever a patch sends it (upstream applies it regardless of
//! the field's strategy on the server side).
//!
//! Custom resources: the real server rejects strategic merge patch for them (415, see
//! [`supports_strategic_merge`]).

/// How a list is patched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListStrategy {
    /// Replaced as a whole (no patch strategy upstream).
    Atomic,
    /// `patchStrategy:"merge"` with `patchMergeKey:"<key>"`: a list of objects merged by key.
    MergeByKey(&'static str),
    /// `patchStrategy:"merge"` on a list of scalars: an ordered set (union).
    MergePrimitive,
}

impl ListStrategy {
    /// Whether the list is merged rather than replaced.
    pub fn is_merge(self) -> bool {
        !matches!(self, ListStrategy::Atomic)
    }

    /// The merge key, if the list is merged by key.
    pub fn merge_key(self) -> Option<&'static str> {
        match self {
            ListStrategy::MergeByKey(key) => Some(key),
            _ => None,
        }
    }
}

/// One row of the table: the kinds it applies to (`*` = every built-in kind), the field
/// path with `[]` marking list items, and the strategy.
#[derive(Debug, Clone, Copy)]
pub struct MergeRule {
    pub kinds: &'static [&'static str],
    pub path: &'static str,
    pub strategy: ListStrategy,
}

const ALL: &[&str] = &["*"];
const POD: &[&str] = &["Pod"];

use ListStrategy::{MergeByKey, MergePrimitive};

/// The strategic-merge-patch table (see the module documentation).
pub const STRATEGIC_MERGE_RULES: &[MergeRule] = &[
    rule(ALL, "metadata.finalizers", MergePrimitive),
    rule(ALL, "metadata.ownerReferences", MergeByKey("uid")),
    // Pod spec.
    rule(POD, "spec.containers", MergeByKey("name")),
    rule(POD, "spec.initContainers", MergeByKey("name")),
    rule(POD, "spec.ephemeralContainers", MergeByKey("name")),
    rule(POD, "spec.containers[].ports", MergeByKey("containerPort")),
    rule(
        POD,
        "spec.initContainers[].ports",
        MergeByKey("containerPort"),
    ),
    rule(
        POD,
        "spec.ephemeralContainers[].ports",
        MergeByKey("containerPort"),
    ),
    rule(POD, "spec.containers[].env", MergeByKey("name")),
    rule(POD, "spec.initContainers[].env", MergeByKey("name")),
    rule(POD, "spec.ephemeralContainers[].env", MergeByKey("name")),
    rule(
        POD,
        "spec.containers[].volumeMounts",
        MergeByKey("mountPath"),
    ),
    rule(
        POD,
        "spec.initContainers[].volumeMounts",
        MergeByKey("mountPath"),
    ),
    rule(
        POD,
        "spec.ephemeralContainers[].volumeMounts",
        MergeByKey("mountPath"),
    ),
    rule(
        POD,
        "spec.containers[].volumeDevices",
        MergeByKey("devicePath"),
    ),
    rule(
        POD,
        "spec.initContainers[].volumeDevices",
        MergeByKey("devicePath"),
    ),
    rule(
        POD,
        "spec.ephemeralContainers[].volumeDevices",
        MergeByKey("devicePath"),
    ),
    rule(POD, "spec.volumes", MergeByKey("name")),
    rule(POD, "spec.imagePullSecrets", MergeByKey("name")),
    rule(POD, "spec.hostAliases", MergeByKey("ip")),
    rule(
        POD,
        "spec.topologySpreadConstraints",
        MergeByKey("topologyKey"),
    ),
    rule(POD, "spec.schedulingGates", MergeByKey("name")),
    rule(POD, "spec.resourceClaims", MergeByKey("name")),
    // Pod status.
    rule(POD, "status.conditions", MergeByKey("type")),
    rule(POD, "status.podIPs", MergeByKey("ip")),
    rule(POD, "status.hostIPs", MergeByKey("ip")),
    rule(POD, "status.resourceClaimStatuses", MergeByKey("name")),
    // Node.
    rule(&["Node"], "spec.podCIDRs", MergePrimitive),
    rule(&["Node"], "status.conditions", MergeByKey("type")),
    rule(&["Node"], "status.addresses", MergeByKey("type")),
    // Others.
    rule(&["Namespace"], "status.conditions", MergeByKey("type")),
    rule(
        &["PersistentVolumeClaim"],
        "status.conditions",
        MergeByKey("type"),
    ),
    rule(
        &["PodDisruptionBudget"],
        "status.conditions",
        MergeByKey("type"),
    ),
    rule(&["CSINode"], "spec.drivers", MergeByKey("name")),
];

const fn rule(
    kinds: &'static [&'static str],
    path: &'static str,
    strategy: ListStrategy,
) -> MergeRule {
    MergeRule {
        kinds,
        path,
        strategy,
    }
}

/// The built-in kinds: the real server accepts strategic merge patch for them (it has Go
/// structs with patch tags). Everything else is treated as a custom resource.
pub const BUILT_IN_KINDS: &[&str] = &[
    // core/v1
    "Pod",
    "Node",
    "Namespace",
    "Event",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "ConfigMap",
    "Secret",
    "Service",
    "ServiceAccount",
    "Endpoints",
    "LimitRange",
    "ResourceQuota",
    "ReplicationController",
    "PodTemplate",
    "Binding",
    // other groups the test server serves
    "Lease",
    "StorageClass",
    "CSINode",
    "CSIDriver",
    "VolumeAttachment",
    "PodDisruptionBudget",
    "PriorityClass",
    "CustomResourceDefinition",
];

/// Whether the real API server accepts `application/strategic-merge-patch+json` for `kind`:
/// true for built-in kinds, false for custom resources (the real server answers 415
/// UnsupportedMediaType for those).
pub fn supports_strategic_merge(kind: &str) -> bool {
    BUILT_IN_KINDS.contains(&kind)
}

/// The list strategy of the field at `path` (field names, `[]` for list items) of `kind`
/// in `rules`.
pub fn lookup(rules: &[MergeRule], kind: &str, path: &str) -> ListStrategy {
    rules
        .iter()
        .find(|r| r.path == path && r.kinds.iter().any(|k| *k == "*" || *k == kind))
        .map(|r| r.strategy)
        .unwrap_or(ListStrategy::Atomic)
}

/// Joins path segments (field names and `[]` for list items) into the table's notation:
/// `["spec", "containers", "[]", "ports"]` -> `spec.containers[].ports`.
pub fn join_path(path: &[String]) -> String {
    let mut out = String::new();
    for segment in path {
        if segment != "[]" && !out.is_empty() {
            out.push('.');
        }
        out.push_str(segment);
    }
    out
}
