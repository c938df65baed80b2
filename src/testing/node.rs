//! `make_node()`, after upstream's `st.MakeNode()`.

use k8s_openapi::api::core::v1::{ContainerImage, Node, NodeSpec, NodeStatus, Taint};

use super::{node_info, quantities};
use crate::cluster::NodeInfo;

/// A node under construction; [`NodeWrapper::obj`] returns it.
#[derive(Clone, Debug, Default)]
pub struct NodeWrapper(Node);

/// An empty node (upstream `MakeNode()`).
pub fn make_node() -> NodeWrapper {
    NodeWrapper::default()
}

/// A taint; an empty value leaves the field unset, as Go's zero value.
pub fn taint(key: &str, value: &str, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        value: (!value.is_empty()).then(|| value.into()),
        effect: effect.into(),
        ..Taint::default()
    }
}

impl NodeWrapper {
    metadata_setters!();

    /// Capacity and allocatable both `resources` (upstream `Capacity`).
    pub fn capacity(mut self, resources: &[(&str, &str)]) -> Self {
        let status = self.status();
        status.capacity = Some(quantities(resources));
        status.allocatable = Some(quantities(resources));
        self
    }

    /// Allocatable alone, for the nodes whose capacity a test leaves unset.
    pub fn allocatable(mut self, resources: &[(&str, &str)]) -> Self {
        self.status().allocatable = Some(quantities(resources));
        self
    }

    /// One image known by `names` of `size_bytes` (upstream `Images`, one entry).
    pub fn image(mut self, names: &[&str], size_bytes: i64) -> Self {
        self.status()
            .images
            .get_or_insert_with(Vec::new)
            .push(ContainerImage {
                names: Some(names.iter().map(|n| n.to_string()).collect()),
                size_bytes: Some(size_bytes),
            });
        self
    }

    /// An image list present but empty, as a kubelet reports a node without images.
    pub fn no_images(mut self) -> Self {
        self.status().images = Some(Vec::new());
        self
    }

    /// Appends a taint (upstream `Taints`, one at a time).
    pub fn taint(mut self, taint: Taint) -> Self {
        self.spec().taints.get_or_insert_with(Vec::new).push(taint);
        self
    }

    /// `spec.taints` exactly `taints`, an empty list included.
    pub fn taints(mut self, taints: Vec<Taint>) -> Self {
        self.spec().taints = Some(taints);
        self
    }

    pub fn unschedulable(mut self, unschedulable: bool) -> Self {
        self.spec().unschedulable = Some(unschedulable);
        self
    }

    fn spec(&mut self) -> &mut NodeSpec {
        self.0.spec.get_or_insert_with(NodeSpec::default)
    }

    fn status(&mut self) -> &mut NodeStatus {
        self.0.status.get_or_insert_with(NodeStatus::default)
    }

    pub fn obj(self) -> Node {
        self.0
    }

    /// The node's `NodeInfo`, without pods.
    pub fn info(self) -> NodeInfo {
        node_info(self.0, [])
    }
}
