//! Pod scheduling signatures, for opportunistic batching (upstream 1.35+'s
//! `SignPod`, KEP-5598).
//!
//! A signature is what the profile's PreFilter, Filter, PreScore and Score plugins read of
//! a pod, each plugin contributing fragments ([`SignPlugin`]). Two pods with equal
//! signatures get the same verdicts and scores on the same nodes, so the scheduler may
//! place the second from the first one's sorted candidates
//! ([`crate::scheduler`]'s batch). The fragments are keyed by upstream's signer names
//! and compared as canonical JSON bytes; a plugin that reads the same part of a pod as
//! another (the tolerations, the volumes) writes the same key and value.
//!
//! The helpers below canonicalize what upstream's common signers canonicalize: sorted
//! tolerations, volume sources other than ConfigMap and Secret (which every pod names
//! differently and no plugin reads), sorted unique host ports, node-affinity terms with
//! sorted values.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm, Pod};
use serde_json::{Value, json};

use crate::cluster::{PodInfo, Resource};

use super::SignPlugin;

/// Upstream's signer names, the keys of a signature's fragments.
pub const SCHEDULER_NAME: &str = "v1.Pod.Spec.SchedulerName";
pub const IMAGE_NAMES: &str = "v1.Pod.Spec.CanonicalImageNames()";
pub const LABELS: &str = "v1.Pod.Labels";
pub const NODE_NAME: &str = "v1.Pod.Spec.NodeName";
pub const NODE_AFFINITY: &str = "v1.Pod.Spec.Affinity.NodeAffinity";
pub const NODE_SELECTOR: &str = "v1.Pod.Spec.Affinity.NodeSelector";
pub const HOST_PORTS: &str = "v1.Pod.Spec.HostPorts()";
pub const RESOURCES: &str = "v1.Pod.Spec.ContainerRequestsAndOverheads()";
pub const TOLERATIONS: &str = "v1.Pod.Spec.Tolerations";
pub const VOLUMES: &str = "v1.Pod.Spec.Volumes.NonSyntheticSources()";

/// One part of a pod's signature: a signer name and the canonical value.
#[derive(Debug, Clone, PartialEq)]
pub struct SignFragment {
    pub key: &'static str,
    pub value: Value,
}

impl SignFragment {
    pub fn new(key: &'static str, value: Value) -> Self {
        SignFragment { key, value }
    }
}

/// A pod's signature: equal bytes, interchangeable pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature(Vec<u8>);

impl Signature {
    /// A signature of the given bytes (upstream's `PodSignature` is bytes too).
    pub fn from_bytes(bytes: impl Into<Vec<u8>>) -> Self {
        Signature(bytes.into())
    }
}

/// The signature of `pod` from `signers` (every PreFilter, Filter, PreScore and Score
/// plugin of the profile, each once), or `None` when one of them refuses this pod.
pub fn sign<'a>(
    signers: impl Iterator<Item = &'a dyn SignPlugin> + Clone,
    pod: &PodInfo,
) -> Option<Signature> {
    if signers.clone().any(|s| s.refusal(pod).is_some()) {
        return None;
    }
    let mut fragments: BTreeMap<&'static str, Value> = BTreeMap::new();
    fragments.insert(SCHEDULER_NAME, json!(pod.scheduler_name()));
    for signer in signers {
        for fragment in signer.fragments(pod) {
            fragments.insert(fragment.key, fragment.value);
        }
    }
    serde_json::to_vec(&fragments).ok().map(Signature)
}

/// The pod's requests as NodeResourcesFit's Filter compares them (pod-level requests and
/// overhead included).
pub fn resources(pod: &PodInfo) -> SignFragment {
    let r: &Resource = &pod.filter_requests;
    SignFragment::new(
        RESOURCES,
        json!({
            "cpu": r.milli_cpu,
            "memory": r.memory,
            "ephemeralStorage": r.ephemeral_storage,
            "scalar": r.scalar_resources,
        }),
    )
}

/// The tolerations, sorted.
pub fn tolerations(pod: &Pod) -> SignFragment {
    let mut all: Vec<String> = spec_items(pod, |s| s.tolerations.as_deref())
        .iter()
        .filter_map(|t| serde_json::to_string(t).ok())
        .collect();
    all.sort();
    SignFragment::new(TOLERATIONS, json!(all))
}

/// The volume sources other than ConfigMap and Secret, sorted (the volumes' names are
/// left out: two pods mounting the same claim under different names are alike).
pub fn volumes(pod: &Pod) -> SignFragment {
    let mut all: Vec<String> = spec_items(pod, |s| s.volumes.as_deref())
        .iter()
        .filter(|v| v.config_map.is_none() && v.secret.is_none())
        .filter_map(|v| {
            let mut value = serde_json::to_value(v).ok()?;
            value.as_object_mut()?.remove("name");
            serde_json::to_string(&value).ok()
        })
        .collect();
    all.sort();
    SignFragment::new(VOLUMES, json!(all))
}

/// The host ports the containers and init containers ask for, sorted and unique.
pub fn host_ports(pod: &Pod) -> SignFragment {
    let spec = pod.spec.as_ref();
    let ports: BTreeSet<i32> = spec
        .into_iter()
        .flat_map(|s| {
            s.containers
                .iter()
                .chain(s.init_containers.iter().flatten())
        })
        .flat_map(|c| c.ports.iter().flatten())
        .filter_map(|p| p.host_port.filter(|&port| port != 0))
        .collect();
    SignFragment::new(HOST_PORTS, json!(ports))
}

/// The node affinity (required and preferred terms, each canonical and sorted) and the
/// node selector.
pub fn node_affinity(pod: &Pod) -> Vec<SignFragment> {
    let spec = pod.spec.as_ref();
    let affinity = spec
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .map(|n| {
            let mut required: Vec<String> = n
                .required_during_scheduling_ignored_during_execution
                .iter()
                .flat_map(|r| r.node_selector_terms.iter())
                .map(|t| term(t).to_string())
                .collect();
            required.sort();
            let mut preferred: Vec<String> = n
                .preferred_during_scheduling_ignored_during_execution
                .iter()
                .flatten()
                .map(|p| json!({"weight": p.weight, "preference": term(&p.preference)}).to_string())
                .collect();
            preferred.sort();
            json!({"required": required, "preferred": preferred})
        })
        .unwrap_or(Value::Null);
    let selector = spec
        .and_then(|s| s.node_selector.as_ref())
        .map(|s| json!(s))
        .unwrap_or(Value::Null);
    vec![
        SignFragment::new(NODE_AFFINITY, affinity),
        SignFragment::new(NODE_SELECTOR, selector),
    ]
}

/// `spec.nodeName`.
pub fn node_name(pod: &Pod) -> SignFragment {
    let name = pod.spec.as_ref().and_then(|s| s.node_name.clone());
    SignFragment::new(NODE_NAME, json!(name.unwrap_or_default()))
}

/// The pod's labels.
pub fn labels(pod: &Pod) -> SignFragment {
    SignFragment::new(LABELS, json!(pod.metadata.labels))
}

/// The normalized image names of the containers and init containers, sorted and unique.
pub fn image_names(pod: &PodInfo) -> SignFragment {
    let names: BTreeSet<&str> = pod.images.iter().map(String::as_str).collect();
    SignFragment::new(IMAGE_NAMES, json!(names))
}

/// A node selector term with its requirements canonical and sorted.
fn term(t: &NodeSelectorTerm) -> Value {
    json!({
        "matchExpressions": requirements(t.match_expressions.as_deref()),
        "matchFields": requirements(t.match_fields.as_deref()),
    })
}

fn requirements(reqs: Option<&[NodeSelectorRequirement]>) -> Vec<String> {
    let mut all: Vec<String> = reqs
        .unwrap_or_default()
        .iter()
        .map(|r| {
            let mut values = r.values.clone().unwrap_or_default();
            values.sort();
            json!({"key": r.key, "operator": r.operator, "values": values}).to_string()
        })
        .collect();
    all.sort();
    all
}

fn spec_items<T>(
    pod: &Pod,
    items: impl Fn(&k8s_openapi::api::core::v1::PodSpec) -> Option<&[T]>,
) -> &[T] {
    pod.spec.as_ref().and_then(items).unwrap_or_default()
}

#[cfg(test)]
mod tests;
