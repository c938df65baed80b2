//! InterPodAffinity: places pods relative to other pods by their labels, within topology
//! domains (nodes sharing a label value), as upstream's `plugins/interpodaffinity`.
//!
//! - `terms` parses a pod's (anti-)affinity terms once: label selectors and namespaces
//!   (`namespaces`, `namespaceSelector`).
//! - `filtering`: PreFilter counts matching pods per topology pair; Filter rejects a
//!   node whose domains break the incoming pod's required affinity or anti-affinity, or an
//!   existing pod's required anti-affinity; AddPod/RemovePod update the counts.
//! - `scoring`: PreScore sums preferred terms (both directions) and existing pods'
//!   required affinity (weighted by `hardPodAffinityWeight`) per topology pair; Score reads
//!   the node's pairs; NormalizeScore maps min-max onto 0..=100.
//!
//! The args keep upstream's `InterPodAffinityArgs` field names, defaults and validation.

mod filtering;
mod scoring;
mod terms;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cluster::{NodeInfo, PodInfo, Snapshot};
use crate::framework::{
    ActionType, ClusterEvent, Coupling, CycleState, EventResource, FieldError, FilterPlugin,
    Handle, PluginArgs, PluginError, PreFilterExtensions, PreFilterPlugin, PreFilterResult,
    PreScorePlugin, ScoreExtensions, ScorePlugin, Status,
};

pub use filtering::{
    ERR_REASON_AFFINITY_RULES_NOT_MATCH, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
};

use filtering::namespace_labels_of;
use scoring::ScoringInput;
use terms::PodAffinityTerms;

/// The default `hardPodAffinityWeight`.
pub const DEFAULT_HARD_POD_AFFINITY_WEIGHT: i32 = 1;
/// The lowest `hardPodAffinityWeight` (0 turns the symmetric scoring off).
pub const MIN_HARD_POD_AFFINITY_WEIGHT: i32 = 0;
/// The highest `hardPodAffinityWeight`.
pub const MAX_HARD_POD_AFFINITY_WEIGHT: i32 = 100;

/// Args of InterPodAffinity (upstream `InterPodAffinityArgs`, v1 defaults).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct InterPodAffinityArgs {
    /// Score weight of an existing pod's required affinity term that selects the incoming
    /// pod, 0..=100 (0 ignores such terms when scoring).
    #[schemars(range(min = MIN_HARD_POD_AFFINITY_WEIGHT, max = MAX_HARD_POD_AFFINITY_WEIGHT))]
    pub hard_pod_affinity_weight: i32,
    /// When true, an incoming pod without preferred (anti-)affinity terms is not scored
    /// at all, and existing pods' terms do not attract or repel it.
    pub ignore_preferred_terms_of_existing_pods: bool,
}

impl Default for InterPodAffinityArgs {
    fn default() -> Self {
        InterPodAffinityArgs {
            hard_pod_affinity_weight: DEFAULT_HARD_POD_AFFINITY_WEIGHT,
            ignore_preferred_terms_of_existing_pods: false,
        }
    }
}

impl PluginArgs for InterPodAffinityArgs {
    /// Upstream `ValidateInterPodAffinityArgs`.
    fn validate(&self, path: &str) -> Vec<FieldError> {
        let weight = self.hard_pod_affinity_weight;
        if (MIN_HARD_POD_AFFINITY_WEIGHT..=MAX_HARD_POD_AFFINITY_WEIGHT).contains(&weight) {
            return Vec::new();
        }
        vec![FieldError::new(
            format!("{path}.hardPodAffinityWeight"),
            weight,
            format!(
                "not in valid range [{MIN_HARD_POD_AFFINITY_WEIGHT}-{MAX_HARD_POD_AFFINITY_WEIGHT}]"
            ),
        )]
    }
}

/// The InterPodAffinity plugin. Per-cycle data lives in [`CycleState`].
#[derive(Debug, Clone, Default)]
pub struct InterPodAffinity {
    args: InterPodAffinityArgs,
    /// Topology scores kept across cycles (see [`scoring::KeptScores`]).
    kept: scoring::KeptScores,
    /// PreFilter's counts kept across cycles (see [`filtering::KeptCounts`]).
    kept_counts: filtering::KeptCounts,
}

impl InterPodAffinity {
    pub fn new(args: InterPodAffinityArgs) -> Self {
        InterPodAffinity {
            args,
            kept: scoring::KeptScores::default(),
            kept_counts: filtering::KeptCounts::default(),
        }
    }

    pub fn args(&self) -> &InterPodAffinityArgs {
        &self.args
    }
}

crate::plugin! {
    InterPodAffinity {
        name: "InterPodAffinity",
        points: [PreFilter, Filter, PreScore, Score],
    }

    impl Plugin {
        fn as_sign(&self) -> Option<&dyn crate::framework::SignPlugin> {
            Some(self)
        }

        /// Upstream's registration with queueing hints enabled: an assigned pod is added or
        /// deleted or its labels change (it may now satisfy affinity or stop violating
        /// anti-affinity), or a node is added or relabelled (a topology domain appears). As
        /// for TaintToleration, berth has no pre-check that could drop a Node/Add, so
        /// upstream's UpdateNodeTaint workaround is not registered.
        fn events_to_register(&self) -> Option<Vec<ClusterEvent>> {
            Some(vec![
                ClusterEvent::new(
                    EventResource::Pod,
                    ActionType::ADD | ActionType::UPDATE_POD_LABEL | ActionType::DELETE,
                ),
                ClusterEvent::new(
                    EventResource::Node,
                    ActionType::ADD | ActionType::UPDATE_NODE_LABEL,
                ),
            ])
        }
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str = "Enforces required pod affinity and anti-affinity (the incoming pod's and existing pods') within topology domains, and prefers nodes by preferred terms.";
        // Filter and Score read the topology counts their pre-points computed (an error
        // without them).
        const COUPLINGS: &'static [Coupling] =
            &[Coupling::FilterNeedsPreFilter, Coupling::ScoreNeedsPreScore];
        type Args = InterPodAffinityArgs;

        fn build(args: InterPodAffinityArgs, _: &Handle) -> Result<Self, PluginError> {
            Ok(InterPodAffinity::new(args))
        }
    }
}

#[async_trait]
impl PreFilterPlugin for InterPodAffinity {
    /// Parses the incoming pod's terms (an invalid selector makes the pod
    /// UnschedulableAndUnresolvable, as upstream), counts matching pods per topology
    /// pair, and leaves PreScore its input. Skip when there is nothing to filter.
    async fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let (mut terms, error) = PodAffinityTerms::parse(&pod.pod);
        if let Some(error) = error {
            return (None, Status::unresolvable(format!("parsing pod: {error}")));
        }
        terms.resolve_namespace_selectors(snapshot.namespaces());
        let terms = Arc::new(terms);
        let namespace_labels = Arc::new(namespace_labels_of(&pod.pod, snapshot));
        let mut input = ScoringInput::new(terms.clone(), namespace_labels.clone());
        if !self.args.ignore_preferred_terms_of_existing_pods || terms.has_preferred() {
            let scores = self.kept.topology_score(&self.args, &input, pod, snapshot);
            input.topology_score = Some(scores);
        }
        state.write(input);
        let pre_filter =
            self.kept_counts
                .pre_filter_state(&pod.pod, terms, namespace_labels, snapshot);
        if pre_filter.is_trivial() {
            return (None, Status::skip());
        }
        state.write(pre_filter);
        (None, Status::success())
    }

    fn pre_filter_extensions(&self) -> Option<&dyn PreFilterExtensions> {
        Some(self)
    }
}

impl PreFilterExtensions for InterPodAffinity {
    fn add_pod(
        &self,
        state: &mut CycleState,
        pod_to_schedule: &PodInfo,
        pod_to_add: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        filtering::update_state(state, pod_to_schedule, pod_to_add, node, 1)
    }

    fn remove_pod(
        &self,
        state: &mut CycleState,
        pod_to_schedule: &PodInfo,
        pod_to_remove: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        filtering::update_state(state, pod_to_schedule, pod_to_remove, node, -1)
    }
}

impl FilterPlugin for InterPodAffinity {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        filtering::filter(state, pod, node)
    }
}

#[async_trait]
impl PreScorePlugin for InterPodAffinity {
    async fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
    ) -> Status {
        scoring::pre_score(&self.args, state, pod, nodes)
    }
}

impl ScorePlugin for InterPodAffinity {
    fn score(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        scoring::score(state, node)
    }

    fn score_extensions(&self) -> Option<&dyn ScoreExtensions> {
        Some(self)
    }
}

impl ScoreExtensions for InterPodAffinity {
    fn normalize_score(
        &self,
        state: &CycleState,
        _: &PodInfo,
        _: &[Arc<NodeInfo>],
        scores: &mut [i64],
    ) -> Status {
        scoring::normalize_score(state, scores)
    }
}

/// What of a pod this plugin reads, for opportunistic batching (upstream `SignPod`).
impl crate::framework::SignPlugin for InterPodAffinity {
    fn refusal(&self, pod: &crate::cluster::PodInfo) -> Option<String> {
        let affinity = pod.pod.spec.as_ref().and_then(|s| s.affinity.as_ref());
        affinity
            .is_some_and(|a| a.pod_affinity.is_some() || a.pod_anti_affinity.is_some())
            .then(|| "pods with InterPodAffinity are not signable".into())
    }

    fn fragments(&self, pod: &crate::cluster::PodInfo) -> Vec<crate::framework::SignFragment> {
        use crate::framework::signature;
        // Only pods with affinity terms of their own count when existing pods' preferred
        // terms are ignored; otherwise those terms may match this pod's labels.
        if self.args.ignore_preferred_terms_of_existing_pods {
            return Vec::new();
        }
        vec![signature::labels(&pod.pod)]
    }
}
