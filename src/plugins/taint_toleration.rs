//! TaintToleration: keeps pods off nodes whose taints they do not tolerate, and prefers
//! nodes with fewer untolerated `PreferNoSchedule` taints (upstream
//! `plugins/tainttoleration`).
//!
//! - Filter rejects a node on its first `NoSchedule` or `NoExecute` taint that no toleration
//!   of the pod matches, as UnschedulableAndUnresolvable (preemption cannot remove taints).
//! - PreScore keeps the pod's tolerations that can match `PreferNoSchedule` taints; Score
//!   counts the node's `PreferNoSchedule` taints none of them tolerates; NormalizeScore
//!   reverses the counts onto 0..=100, so the node with the most untolerated taints gets 0.
//!
//! The matching rules (upstream `Toleration.ToleratesTaint` and component-helpers
//! `scheduling/corev1`) live in [`crate::helpers::taints`], shared with NodeUnschedulable,
//! PodTopologySpread and the simulator's DaemonSet controller.

use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Toleration;

use crate::cluster::{NodeInfo, PodInfo};
use crate::framework::{
    ActionType, ClusterEvent, Coupling, CycleState, EventResource, FilterPlugin, Handle,
    MAX_NODE_SCORE, NoArgs, PluginError, PreScorePlugin, ScoreExtensions, ScorePlugin, Status,
};
use crate::helpers::score::default_normalize_score;
use crate::helpers::taints::{
    TAINT_EFFECT_PREFER_NO_SCHEDULE, find_untolerated_taint, is_do_not_schedule_taint, node_taints,
    pod_tolerations, tolerations_tolerate_taint,
};

/// The TaintToleration plugin. Stateless; per-cycle data lives in [`CycleState`].
#[derive(Debug, Clone, Copy, Default)]
pub struct TaintToleration;

/// What PreScore hands to Score: the pod's tolerations that can match a
/// `PreferNoSchedule` taint.
#[derive(Debug, Clone)]
struct PreScoreState {
    tolerations_prefer_no_schedule: Vec<Toleration>,
}

crate::plugin! {
    TaintToleration {
        name: "TaintToleration",
        points: [Filter, PreScore, Score],
    }

    impl Plugin {
        fn as_sign(&self) -> Option<&dyn crate::framework::SignPlugin> {
            Some(self)
        }

        /// Upstream's registration with queueing hints enabled (the default since v1.32): a
        /// node is added or its taints change, or a pod's tolerations change. berth has no
        /// pre-check that could drop a Node/Add, so upstream's extra UpdateNodeLabel interest
        /// (needed only without queueing hints) is not registered.
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
        const DESCRIPTION: &'static str = "Rejects nodes with `NoSchedule`/`NoExecute` taints the pod does not tolerate, and prefers nodes with fewer untolerated `PreferNoSchedule` taints.";
        // Score reads the PreferNoSchedule tolerations PreScore collected (an error without
        // them); Filter reads nothing.
        const COUPLINGS: &'static [Coupling] = &[Coupling::ScoreNeedsPreScore];
        type Args = NoArgs;

        fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
            Ok(TaintToleration)
        }
    }
}

/// Filter's reason for a node with a taint the pod does not tolerate, upstream's
/// text since 1.35.
pub const REASON_UNTOLERATED: &str = "node(s) had untolerated taint(s)";

impl FilterPlugin for TaintToleration {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(node) = node.node() else {
            return Status::error("node not found");
        };
        match find_untolerated_taint(
            node_taints(node),
            pod_tolerations(&pod.pod),
            is_do_not_schedule_taint,
        ) {
            None => Status::success(),
            // Since 1.35 (kubernetes#134740) upstream names no taint: a taint's key
            // and value may be sensitive, and the message goes into pod status.
            Some(_) => Status::unresolvable(REASON_UNTOLERATED),
        }
    }
}

#[async_trait]
impl PreScorePlugin for TaintToleration {
    async fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &[Arc<NodeInfo>],
    ) -> Status {
        // An empty effect matches every effect, PreferNoSchedule included.
        let tolerations_prefer_no_schedule = pod_tolerations(&pod.pod)
            .iter()
            .filter(|t| {
                matches!(
                    t.effect.as_deref(),
                    None | Some("") | Some(TAINT_EFFECT_PREFER_NO_SCHEDULE)
                )
            })
            .cloned()
            .collect();
        state.write(PreScoreState {
            tolerations_prefer_no_schedule,
        });
        Status::success()
    }
}

impl ScorePlugin for TaintToleration {
    fn score(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let Some(node) = node.node() else {
            return Err(Status::error("node not found"));
        };
        let Some(pre_score) = state.read::<PreScoreState>() else {
            return Err(Status::error(
                "failed to read \"PreScoreTaintToleration\" from cycleState: not found",
            ));
        };
        let untolerated = node_taints(node)
            .iter()
            .filter(|taint| taint.effect == TAINT_EFFECT_PREFER_NO_SCHEDULE)
            .filter(|taint| {
                !tolerations_tolerate_taint(&pre_score.tolerations_prefer_no_schedule, taint)
            })
            .count();
        Ok(i64::try_from(untolerated).unwrap_or(i64::MAX))
    }

    fn score_extensions(&self) -> Option<&dyn ScoreExtensions> {
        Some(self)
    }
}

impl ScoreExtensions for TaintToleration {
    fn normalize_score(
        &self,
        _: &CycleState,
        _: &PodInfo,
        _: &[Arc<NodeInfo>],
        scores: &mut [i64],
    ) -> Status {
        default_normalize_score(MAX_NODE_SCORE, true, scores)
    }
}

/// What of a pod this plugin reads, for opportunistic batching (upstream `SignPod`).
impl crate::framework::SignPlugin for TaintToleration {
    fn fragments(&self, pod: &crate::cluster::PodInfo) -> Vec<crate::framework::SignFragment> {
        use crate::framework::signature;
        vec![signature::tolerations(&pod.pod)]
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Taint;

    use super::*;
    use crate::framework::{Code, Plugin, PluginFactory};
    use crate::helpers::taints::tolerates_taint;
    use crate::testing::moves_on;
    use crate::testing::{make_node, make_pod, taint, toleration};

    #[test]
    fn tolerates_taint_matches_upstream_table() {
        // Upstream k8s.io/api core/v1 `TestTolerationToleratesTaint`, in order.
        let cases = [
            (
                "same key and effect, Exists, taint has no value",
                toleration("foo", "Exists", "", "NoSchedule"),
                taint("foo", "", "NoSchedule"),
                true,
            ),
            (
                "same key and effect, Exists, taint has some value",
                toleration("foo", "Exists", "", "NoSchedule"),
                taint("foo", "bar", "NoSchedule"),
                true,
            ),
            (
                "same effect, empty key with Exists matches all taints",
                toleration("", "Exists", "", "NoSchedule"),
                taint("foo", "bar", "NoSchedule"),
                true,
            ),
            (
                "same key, effect and value, Equal",
                toleration("foo", "Equal", "bar", "NoSchedule"),
                taint("foo", "bar", "NoSchedule"),
                true,
            ),
            (
                "same key and effect, different values, Equal",
                toleration("foo", "Equal", "value1", "NoSchedule"),
                taint("foo", "value2", "NoSchedule"),
                false,
            ),
            (
                "same key and value, different effects, Equal",
                toleration("foo", "Equal", "bar", "NoSchedule"),
                taint("foo", "bar", "NoExecute"),
                false,
            ),
        ];
        for (name, toleration, taint, want) in cases {
            assert_eq!(tolerates_taint(&toleration, &taint), want, "case {name}");
        }
    }

    #[test]
    fn filter_matches_upstream_table() {
        // Upstream `TestTaintTolerationFilter`, in order; `None` is a Success status.
        let untolerated = || Some(Status::unresolvable(REASON_UNTOLERATED));
        let cases = [
            (
                "A pod having no tolerations can't be scheduled onto a node with nonempty taints",
                vec![],
                vec![taint("dedicated", "user1", "NoSchedule")],
                untolerated(),
            ),
            (
                "A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
                vec![toleration("dedicated", "", "user1", "NoSchedule")],
                vec![taint("dedicated", "user1", "NoSchedule")],
                None,
            ),
            (
                "A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
                vec![toleration("dedicated", "Equal", "user2", "NoSchedule")],
                vec![taint("dedicated", "user1", "NoSchedule")],
                untolerated(),
            ),
            (
                "A pod can be scheduled onto the node, with a toleration uses operator Exists that tolerates the taints on the node",
                vec![toleration("foo", "Exists", "", "NoSchedule")],
                vec![taint("foo", "bar", "NoSchedule")],
                None,
            ),
            (
                "A pod has multiple tolerations, node has multiple taints, all the taints are tolerated, pod can be scheduled onto the node",
                vec![
                    toleration("dedicated", "Equal", "user2", "NoSchedule"),
                    toleration("foo", "Exists", "", "NoSchedule"),
                ],
                vec![
                    taint("dedicated", "user2", "NoSchedule"),
                    taint("foo", "bar", "NoSchedule"),
                ],
                None,
            ),
            (
                "A pod has a toleration that keys and values match the taint on the node, but (non-empty) effect doesn't match, can't be scheduled onto the node",
                vec![toleration("foo", "Equal", "bar", "PreferNoSchedule")],
                vec![taint("foo", "bar", "NoSchedule")],
                untolerated(),
            ),
            (
                "The pod has a toleration that keys and values match the taint on the node, the effect of toleration is empty, and the effect of taint is NoSchedule. Pod can be scheduled onto the node",
                vec![toleration("foo", "Equal", "bar", "")],
                vec![taint("foo", "bar", "NoSchedule")],
                None,
            ),
            (
                "The pod has a toleration that key and value don't match the taint on the node, but the effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
                vec![toleration("dedicated", "Equal", "user2", "NoSchedule")],
                vec![taint("dedicated", "user1", "PreferNoSchedule")],
                None,
            ),
            (
                "The pod has no toleration, but the effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
                vec![],
                vec![taint("dedicated", "user1", "PreferNoSchedule")],
                None,
            ),
        ];
        for (name, tolerations, taints, want) in cases {
            let pod = make_pod()
                .name("pod1")
                .namespace("default")
                .tolerations(tolerations)
                .info();
            let node = make_node().name("nodeA").taints(taints).info();
            let got = TaintToleration.filter(&CycleState::new(), &pod, &node);
            assert_eq!(got, want.unwrap_or_default(), "case {name}");
        }
    }

    #[test]
    fn filter_without_node_object_is_an_error() {
        let pod = make_pod()
            .name("pod1")
            .namespace("default")
            .tolerations(vec![])
            .info();
        let got = TaintToleration.filter(&CycleState::new(), &pod, &NodeInfo::default());
        assert_eq!(got.code(), Code::Error);
    }

    #[tokio::test]
    async fn score_and_normalize_match_upstream_table() {
        // Upstream `TestTaintTolerationScore`, in order: PreScore, Score on every node,
        // then NormalizeScore; the expected scores are upstream's.
        let prefer = |key: &str, value: &str| taint(key, value, "PreferNoSchedule");
        // (case, pod tolerations, nodes with their taints, expected normalized scores)
        type Case = (
            &'static str,
            Vec<Toleration>,
            Vec<(&'static str, Vec<Taint>)>,
            Vec<i64>,
        );
        let cases: Vec<Case> = vec![
            (
                "node with taints tolerated by the pod, gets a higher score than those node with intolerable taints",
                vec![toleration("foo", "Equal", "bar", "PreferNoSchedule")],
                vec![
                    ("nodeA", vec![prefer("foo", "bar")]),
                    ("nodeB", vec![prefer("foo", "blah")]),
                ],
                vec![MAX_NODE_SCORE, 0],
            ),
            (
                "the nodes that all of their taints are tolerated by the pod, get the same score, no matter how many tolerable taints a node has",
                vec![
                    toleration("cpu-type", "Equal", "arm64", "PreferNoSchedule"),
                    toleration("disk-type", "Equal", "ssd", "PreferNoSchedule"),
                ],
                vec![
                    ("nodeA", vec![]),
                    ("nodeB", vec![prefer("cpu-type", "arm64")]),
                    (
                        "nodeC",
                        vec![prefer("cpu-type", "arm64"), prefer("disk-type", "ssd")],
                    ),
                ],
                vec![MAX_NODE_SCORE, MAX_NODE_SCORE, MAX_NODE_SCORE],
            ),
            (
                "the more intolerable taints a node has, the lower score it gets.",
                vec![toleration("foo", "Equal", "bar", "PreferNoSchedule")],
                vec![
                    ("nodeA", vec![]),
                    ("nodeB", vec![prefer("cpu-type", "arm64")]),
                    (
                        "nodeC",
                        vec![prefer("cpu-type", "arm64"), prefer("disk-type", "ssd")],
                    ),
                ],
                vec![MAX_NODE_SCORE, 50, 0],
            ),
            (
                "only taints and tolerations that have effect PreferNoSchedule are checked by taints-tolerations priority function",
                vec![
                    toleration("cpu-type", "Equal", "arm64", "NoSchedule"),
                    toleration("disk-type", "Equal", "ssd", "NoSchedule"),
                ],
                vec![
                    ("nodeA", vec![]),
                    ("nodeB", vec![taint("cpu-type", "arm64", "NoSchedule")]),
                    (
                        "nodeC",
                        vec![prefer("cpu-type", "arm64"), prefer("disk-type", "ssd")],
                    ),
                ],
                vec![MAX_NODE_SCORE, MAX_NODE_SCORE, 0],
            ),
            (
                "Default behaviour No taints and tolerations, lands on node with no taints",
                vec![],
                vec![
                    ("nodeA", vec![]),
                    ("nodeB", vec![prefer("cpu-type", "arm64")]),
                ],
                vec![MAX_NODE_SCORE, 0],
            ),
        ];
        for (name, tolerations, nodes, want) in cases {
            let pod = make_pod()
                .name("pod1")
                .namespace("default")
                .tolerations(tolerations)
                .info();
            let nodes: Vec<Arc<NodeInfo>> = nodes
                .into_iter()
                .map(|(node, taints)| Arc::new(make_node().name(node).taints(taints).info()))
                .collect();
            let mut state = CycleState::new();
            let status = TaintToleration.pre_score(&mut state, &pod, &nodes).await;
            assert!(
                status.is_success(),
                "case {name}: PreScore returned {status}"
            );
            let mut scores = nodes
                .iter()
                .map(|node| TaintToleration.score(&state, &pod, node))
                .collect::<Result<Vec<i64>, Status>>()
                .unwrap_or_else(|status| panic!("case {name}: Score returned {status}"));
            let status = TaintToleration.normalize_score(&state, &pod, &nodes, &mut scores);
            assert!(
                status.is_success(),
                "case {name}: NormalizeScore returned {status}"
            );
            assert_eq!(scores, want, "case {name}");
        }
    }

    #[test]
    fn registry_points_match_the_accessors_and_events() {
        let plugin = TaintToleration;
        assert!(plugin.as_filter().is_some());
        assert!(plugin.as_pre_score().is_some());
        assert!(
            plugin
                .as_score()
                .is_some_and(|s| s.score_extensions().is_some())
        );
        assert!(plugin.as_pre_filter().is_none());
        assert_eq!(TaintToleration::POINTS.len(), 3);
        let events = plugin.events_to_register().expect("registers events");
        assert!(moves_on(&events, EventResource::Node, ActionType::ADD));
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
            EventResource::Node,
            ActionType::UPDATE_NODE_ALLOCATABLE
        ));
    }

    #[test]
    fn score_without_pre_score_is_an_error() {
        let pod = make_pod()
            .name("pod1")
            .namespace("default")
            .tolerations(vec![])
            .info();
        let node = make_node().name("nodeA").taints(vec![]).info();
        let got = TaintToleration.score(&CycleState::new(), &pod, &node);
        assert_eq!(got.map_err(|s| s.code()), Err(Code::Error));
    }
}
