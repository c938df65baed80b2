//! NodeName: a pod that names its node in `spec.nodeName` fits only that node (upstream
//! `plugins/nodename`).

use k8s_openapi::api::core::v1::Pod;

use crate::cluster::{NodeInfo, PodInfo};
use crate::framework::{
    ActionType, ClusterEvent, CycleState, EventResource, FilterPlugin, Handle, NoArgs, PluginError,
    Status,
};

/// The Filter reason when the node is not the requested one (upstream `ErrReason`).
pub const ERR_REASON: &str = "node(s) didn't match the requested node name";

/// The NodeName plugin. Stateless.
#[derive(Debug, Clone, Copy, Default)]
pub struct NodeName;

/// Whether `pod` may run on the node named `node_name`: it requests no node, or this one
/// (upstream `nodename.Fits`).
pub fn fits(pod: &Pod, node_name: &str) -> bool {
    match pod.spec.as_ref().and_then(|spec| spec.node_name.as_deref()) {
        None | Some("") => true,
        Some(requested) => requested == node_name,
    }
}

crate::plugin! {
    NodeName {
        name: "NodeName",
        points: [Filter],
    }

    impl Plugin {
        fn as_sign(&self) -> Option<&dyn crate::framework::SignPlugin> {
            Some(self)
        }

        /// Upstream's registration with queueing hints enabled (the default since v1.32): only
        /// a new node can be the requested one. berth has no pre-check that could drop a
        /// Node/Add, so upstream's extra taint/label update interest is not registered.
        fn events_to_register(&self) -> Option<Vec<ClusterEvent>> {
            Some(vec![ClusterEvent::new(
                EventResource::Node,
                ActionType::ADD,
            )])
        }
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str =
            "Rejects every node except the one the pod names in `spec.nodeName`, when it names one.";
        type Args = NoArgs;

        fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
            Ok(NodeName)
        }
    }
}

impl FilterPlugin for NodeName {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(node) = node.node() else {
            return Status::error("node not found");
        };
        if fits(&pod.pod, node.metadata.name.as_deref().unwrap_or_default()) {
            Status::success()
        } else {
            Status::unresolvable(ERR_REASON)
        }
    }
}

/// What of a pod this plugin reads, for opportunistic batching (upstream `SignPod`).
impl crate::framework::SignPlugin for NodeName {
    fn fragments(&self, pod: &crate::cluster::PodInfo) -> Vec<crate::framework::SignFragment> {
        use crate::framework::signature;
        vec![signature::node_name(&pod.pod)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::framework::{ExtensionPoint, Plugin, PluginFactory};
    use crate::testing::{make_node, make_pod};

    #[test]
    fn filter_matches_upstream_table() {
        // Upstream `TestNodeName`, in order; `None` is a Success status.
        let cases = [
            (
                "no host specified",
                make_pod().info(),
                make_node().info(),
                None,
            ),
            (
                "host matches",
                make_pod().node("foo").info(),
                make_node().name("foo").info(),
                None,
            ),
            (
                "host doesn't match",
                make_pod().node("bar").info(),
                make_node().name("foo").info(),
                Some(Status::unresolvable(
                    "node(s) didn't match the requested node name",
                )),
            ),
        ];
        for (name, pod, node, want) in cases {
            let got = NodeName.filter(&CycleState::new(), &pod, &node);
            assert_eq!(got, want.unwrap_or_default(), "case {name}");
        }
    }

    #[test]
    fn registry_points_match_the_accessors_and_events() {
        let plugin = NodeName;
        assert!(plugin.as_filter().is_some());
        assert_eq!(NodeName::POINTS, &[ExtensionPoint::Filter]);
        let events = plugin.events_to_register().expect("registers events");
        let node_added = ClusterEvent::new(EventResource::Node, ActionType::ADD);
        let node_relabelled = ClusterEvent::new(EventResource::Node, ActionType::UPDATE_NODE_LABEL);
        assert!(events.iter().any(|e| e.matches(&node_added)));
        assert!(!events.iter().any(|e| e.matches(&node_relabelled)));
    }

    #[test]
    fn filter_without_node_object_is_an_error() {
        let got = NodeName.filter(
            &CycleState::new(),
            &make_pod().node("foo").info(),
            &NodeInfo::default(),
        );
        assert_eq!(got.code(), Code::Error);
    }
}
