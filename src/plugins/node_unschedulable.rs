//! NodeUnschedulable: keeps pods off cordoned nodes (`spec.unschedulable: true`) unless
//! they tolerate the `node.kubernetes.io/unschedulable:NoSchedule` taint (upstream
//! `plugins/nodeunschedulable`).
//!
//! The toleration check is the same code TaintToleration uses
//! ([`tolerations_tolerate_taint`]), applied to the taint the node lifecycle controller
//! puts on cordoned nodes, so a pod that tolerates that taint also tolerates the cordon
//! itself, even before the taint appears.

use k8s_openapi::api::core::v1::Taint;

use crate::cluster::{NodeInfo, PodInfo};
use crate::framework::{
    ActionType, ClusterEvent, CycleState, EventResource, FilterPlugin, Handle, NoArgs, PluginError,
    Status,
};

use crate::helpers::taints::{
    TAINT_EFFECT_NO_SCHEDULE, pod_tolerations, tolerations_tolerate_taint,
};

/// The taint key of cordoned nodes (upstream `v1.TaintNodeUnschedulable`).
pub const TAINT_NODE_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";

/// The Filter reason for a cordoned node (upstream `ErrReasonUnschedulable`).
pub const ERR_REASON_UNSCHEDULABLE: &str = "node(s) were unschedulable";

/// The NodeUnschedulable plugin. Stateless.
#[derive(Debug, Clone, Copy, Default)]
pub struct NodeUnschedulable;

crate::plugin! {
    NodeUnschedulable {
        name: "NodeUnschedulable",
        points: [Filter],
    }

    impl Plugin {
        fn as_sign(&self) -> Option<&dyn crate::framework::SignPlugin> {
            Some(self)
        }

        /// Upstream's registration with queueing hints enabled (the default since v1.32): a
        /// node is added or updated in a way upstream classifies as a taint change (which
        /// includes a change of `spec.unschedulable`), or a pod's tolerations change.
        fn events_to_register(&self) -> Option<Vec<ClusterEvent>> {
            Some(vec![
                ClusterEvent::new(
                    EventResource::Node,
                    ActionType::ADD | ActionType::UPDATE_NODE_TAINT,
                ),
                ClusterEvent::new(EventResource::Pod, ActionType::UPDATE_POD_TOLERATIONS),
            ])
        }
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str = "Rejects cordoned nodes (`spec.unschedulable`) unless the pod tolerates the `node.kubernetes.io/unschedulable:NoSchedule` taint.";
        type Args = NoArgs;

        fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
            Ok(NodeUnschedulable)
        }
    }
}

impl FilterPlugin for NodeUnschedulable {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(node) = node.node() else {
            return Status::error("node not found");
        };
        let cordoned = node
            .spec
            .as_ref()
            .and_then(|spec| spec.unschedulable)
            .unwrap_or(false);
        if !cordoned {
            return Status::success();
        }
        // Built only for cordoned nodes, so the common path does not allocate.
        let unschedulable_taint = Taint {
            key: TAINT_NODE_UNSCHEDULABLE.to_string(),
            effect: TAINT_EFFECT_NO_SCHEDULE.to_string(),
            ..Taint::default()
        };
        if tolerations_tolerate_taint(pod_tolerations(&pod.pod), &unschedulable_taint) {
            Status::success()
        } else {
            Status::unresolvable(ERR_REASON_UNSCHEDULABLE)
        }
    }
}

/// What of a pod this plugin reads, for opportunistic batching (upstream `SignPod`).
impl crate::framework::SignPlugin for NodeUnschedulable {
    fn fragments(&self, pod: &crate::cluster::PodInfo) -> Vec<crate::framework::SignFragment> {
        use crate::framework::signature;
        vec![signature::tolerations(&pod.pod)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::framework::{ExtensionPoint, Plugin, PluginFactory};
    use crate::testing::moves_on;
    use crate::testing::{make_node, make_pod, toleration};

    #[test]
    fn filter_matches_upstream_table() {
        // Upstream `TestNodeUnschedulable`, in order; `None` is a Success status.
        let unschedulable_node = || make_node().name("node").unschedulable(true).info();
        let cases = [
            (
                "Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)",
                make_pod().info(),
                unschedulable_node(),
                Some(Status::unresolvable("node(s) were unschedulable")),
            ),
            (
                "Schedule pod to normal node",
                make_pod().info(),
                make_node().name("node").unschedulable(false).info(),
                None,
            ),
            (
                "Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)",
                make_pod()
                    .toleration(toleration(TAINT_NODE_UNSCHEDULABLE, "", "", "NoSchedule"))
                    .info(),
                unschedulable_node(),
                None,
            ),
        ];
        for (name, pod, node, want) in cases {
            let got = NodeUnschedulable.filter(&CycleState::new(), &pod, &node);
            assert_eq!(got, want.unwrap_or_default(), "case {name}");
        }
    }

    #[test]
    fn registry_points_match_the_accessors_and_events() {
        let plugin = NodeUnschedulable;
        assert!(plugin.as_filter().is_some());
        assert!(plugin.as_score().is_none());
        assert_eq!(NodeUnschedulable::POINTS, &[ExtensionPoint::Filter]);
        let events = plugin.events_to_register().expect("registers events");
        // An uncordon arrives as a taint-class node update, as upstream classifies it.
        assert!(moves_on(
            &events,
            EventResource::Node,
            ActionType::UPDATE_NODE_TAINT
        ));
        assert!(moves_on(
            &events,
            EventResource::UnscheduledPod,
            ActionType::UPDATE_POD_TOLERATIONS
        ));
        assert!(!moves_on(
            &events,
            EventResource::AssignedPod,
            ActionType::DELETE
        ));
    }

    #[test]
    fn filter_without_node_object_is_an_error() {
        let got =
            NodeUnschedulable.filter(&CycleState::new(), &make_pod().info(), &NodeInfo::default());
        assert_eq!(got.code(), Code::Error);
    }
}
