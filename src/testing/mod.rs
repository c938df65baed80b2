//! Builders for the objects tests schedule, after upstream's scheduler testing wrappers
//! (`pkg/scheduler/testing/wrappers.go`): `make_pod().name("p").req(&[("cpu", "1")])
//! .node("n").obj()` and `make_node().name("n").capacity(&[("cpu", "4")]).obj()`.
//!
//! A test states only the fields its case is about, so a table row reads as the
//! specification it checks; everything else keeps the API's zero value, as upstream's
//! `MakePod()` and `MakeNode()` do. The module is public (not `#[cfg(test)]`) so that the
//! unit tests, the integration tests under `tests/` and the benchmarks share one copy.

/// The metadata setters both wrappers share (upstream's `Name`, `UID`, `Label`, `Labels`);
/// expanded inside `impl PodWrapper` and `impl NodeWrapper`, whose field `0` is the object.
macro_rules! metadata_setters {
    () => {
        pub fn name(mut self, name: &str) -> Self {
            self.0.metadata.name = Some(name.into());
            self
        }

        pub fn uid(mut self, uid: &str) -> Self {
            self.0.metadata.uid = Some(uid.into());
            self
        }

        pub fn label(self, key: &str, value: &str) -> Self {
            self.labels(&[(key, value)])
        }

        /// Adds every pair to the labels (upstream `Labels`).
        pub fn labels(mut self, pairs: &[(&str, &str)]) -> Self {
            self.0
                .metadata
                .labels
                .get_or_insert_with(Default::default)
                .extend(super::labels(pairs));
            self
        }
    };
}

mod corpus;
pub mod executor;
mod node;
mod pod;

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::cluster::{NodeInfo, PodInfo, Snapshot};
use crate::framework::{ActionType, ClusterEvent, EventResource};

pub use corpus::{profile_corpus, read_yaml};
pub use node::{NodeWrapper, make_node, taint};
pub use pod::{PodWrapper, make_pod, spread_constraint, toleration};

/// A label (or selector, or annotation) map from `(key, value)` pairs.
pub fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A resource list from `(name, quantity)` pairs, e.g. `[("cpu", "500m")]`.
pub fn quantities<K: AsRef<str>, V: AsRef<str>>(pairs: &[(K, V)]) -> BTreeMap<String, Quantity> {
    pairs
        .iter()
        .map(|(k, v)| (k.as_ref().to_string(), Quantity(v.as_ref().to_string())))
        .collect()
}

/// The `PodInfo` of a test pod; panics on a quantity the test wrote wrong.
pub fn pod_info(pod: Pod) -> PodInfo {
    PodInfo::new(pod).expect("test pod quantities are valid")
}

/// The `NodeInfo` of `node` running `pods`, aggregated by the cache's own code.
pub fn node_info(node: Node, pods: impl IntoIterator<Item = Pod>) -> NodeInfo {
    let mut info = NodeInfo::new(node).expect("test node quantities are valid");
    for pod in pods {
        info.add_pod(Arc::new(pod_info(pod)));
    }
    info
}

/// The snapshot a cycle reads: `pods` with `spec.nodeName` sit on their node.
pub fn snapshot(nodes: Vec<Node>, pods: Vec<Pod>) -> Snapshot {
    Snapshot::from_objects(nodes, pods).expect("test objects are valid")
}

/// Whether an event of `resource` with `action` is one of `events` (a plugin's
/// registration), i.e. moves a pod the plugin rejected back to the active queue.
pub fn moves_on(events: &[ClusterEvent], resource: EventResource, action: ActionType) -> bool {
    let incoming = ClusterEvent::new(resource, action);
    events.iter().any(|event| event.matches(&incoming))
}
