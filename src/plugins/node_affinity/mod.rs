//! NodeAffinity: keeps pods on the nodes their `nodeSelector` and required node affinity
//! allow, and prefers nodes matching their preferred node affinity terms (upstream
//! `plugins/nodeaffinity`, matching rules from component-helpers
//! `scheduling/corev1/nodeaffinity`).
//!
//! - PreFilter parses the pod's `nodeSelector` and required terms once
//!   ([`RequiredNodeAffinity`]); when every required term pins `metadata.name` with `In`,
//!   it narrows filtering to those nodes. It returns Skip when there is nothing to check.
//! - Filter rejects, as UnschedulableAndUnresolvable, a node outside the profile's
//!   `addedAffinity` or outside the pod's node affinity/selector.
//! - PreScore parses the pod's preferred terms once (Skip when neither the pod nor the
//!   args have any); Score sums the weights of the matching terms; NormalizeScore scales
//!   them onto 0..=100 (the best node gets 100).
//!
//! The matching rules (component-helpers' `nodeaffinity`) live in
//! [`crate::helpers::node_affinity`], where PodTopologySpread's `nodeAffinityPolicy:
//! Honor` and the simulator's DaemonSet controller ask the same question Filter asks.

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{NodeSelectorTerm, Pod};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cluster::{NodeInfo, PodInfo, Snapshot};
use crate::framework::{
    ActionType, ClusterEvent, CycleState, EventResource, FieldError, FilterPlugin, Handle,
    MAX_NODE_SCORE, PluginArgs, PluginError, PreFilterPlugin, PreFilterResult, PreScorePlugin,
    ScoreExtensions, ScorePlugin, Status,
};
use crate::helpers::node_affinity::{
    NodeSelector, OBJECT_NAME_FIELD, PreferredSchedulingTerms, RequiredNodeAffinity,
};
use crate::helpers::score::default_normalize_score;

/// Filter's reason when the pod's node affinity or `nodeSelector` rejects a node
/// (upstream `ErrReasonPod`).
pub const ERR_REASON_POD: &str = "node(s) didn't match Pod's node affinity/selector";
/// Filter's reason when the profile's `addedAffinity` rejects a node.
pub const ERR_REASON_ENFORCED: &str = "node(s) didn't match scheduler-enforced node affinity";
/// PreFilter's reason when the pod's `metadata.name` requirements exclude every node.
pub const ERR_REASON_CONFLICT: &str = "pod affinity terms conflict";

/// Args of NodeAffinity (upstream `NodeAffinityArgs`).
// The nested NodeAffinity schema is k8s-openapi's; the semantic checks of upstream's
// `ValidateNodeAffinityArgs` (and the 1..=100 weights the API server enforces on pods) run
// in `PluginArgs::validate`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeAffinityArgs {
    /// Node affinity applied to every pod of the profile, on top of the pod's own: its
    /// required terms filter nodes, its preferred terms add to every node's score.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added_affinity: Option<k8s_openapi::api::core::v1::NodeAffinity>,
}

/// The highest weight of a preferred term (as the API server enforces on pods).
pub const MAX_PREFERRED_WEIGHT: i32 = 100;

impl PluginArgs for NodeAffinityArgs {
    /// Upstream `ValidateNodeAffinityArgs`: the required terms and the preferred terms of
    /// `addedAffinity` must parse. Two deliberate differences: preferred weights must be
    /// 1..=100, as on pods (upstream silently ignores weight 0 here), and preferred-term
    /// errors name the real field, `...[i].preference.matchFields[j]`, where upstream
    /// leaves out `.preference`.
    fn validate(&self, path: &str) -> Vec<FieldError> {
        let Some(affinity) = &self.added_affinity else {
            return Vec::new();
        };
        let path = format!("{path}.addedAffinity");
        let mut errors = Vec::new();
        if let Some(required) = &affinity.required_during_scheduling_ignored_during_execution {
            let required_path = format!("{path}.requiredDuringSchedulingIgnoredDuringExecution");
            if let Err(e) = NodeSelector::parse(required, &required_path) {
                errors.extend(e);
            }
        }
        if let Some(preferred) = &affinity.preferred_during_scheduling_ignored_during_execution {
            let preferred_path = format!("{path}.preferredDuringSchedulingIgnoredDuringExecution");
            for (i, term) in preferred.iter().enumerate() {
                if !(1..=MAX_PREFERRED_WEIGHT).contains(&term.weight) {
                    errors.push(FieldError::new(
                        format!("{preferred_path}[{i}].weight"),
                        term.weight,
                        format!("must be between 1 and {MAX_PREFERRED_WEIGHT}"),
                    ));
                }
            }
            if let Err(e) = PreferredSchedulingTerms::parse(preferred, &preferred_path) {
                errors.extend(e);
            }
        }
        errors
    }
}

/// The NodeAffinity plugin, holding the parsed `addedAffinity` of its profile.
#[derive(Debug, Clone, Default)]
pub struct NodeAffinity {
    added_node_selector: Option<NodeSelector>,
    added_preferred_terms: Option<PreferredSchedulingTerms>,
}

impl NodeAffinity {
    /// Builds the plugin from args; errors are those of [`NodeAffinityArgs::validate`]
    /// about parsing.
    pub fn new(args: &NodeAffinityArgs) -> Result<Self, Vec<FieldError>> {
        let Some(affinity) = &args.added_affinity else {
            return Ok(NodeAffinity::default());
        };
        let added_node_selector = affinity
            .required_during_scheduling_ignored_during_execution
            .as_ref()
            .map(|ns| {
                NodeSelector::parse(
                    ns,
                    "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution",
                )
            })
            .transpose()?;
        let added_preferred_terms = affinity
            .preferred_during_scheduling_ignored_during_execution
            .as_deref()
            .filter(|terms| !terms.is_empty())
            .map(|terms| {
                PreferredSchedulingTerms::parse(
                    terms,
                    "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution",
                )
            })
            .transpose()?;
        Ok(NodeAffinity {
            added_node_selector,
            added_preferred_terms,
        })
    }
}

/// What PreFilter hands to Filter: the pod's parsed hard constraints.
#[derive(Debug, Clone)]
struct PreFilterState(Arc<RequiredNodeAffinity>);

/// What PreScore hands to Score: the pod's parsed preferred terms, if it has any.
#[derive(Debug, Clone)]
struct PreScoreState(Option<Arc<PreferredSchedulingTerms>>);

/// The pod's `preferredDuringSchedulingIgnoredDuringExecution` node affinity, parsed; `None`
/// when the pod has none (upstream `getPodPreferredNodeAffinity`).
fn pod_preferred_terms(pod: &Pod) -> Result<Option<PreferredSchedulingTerms>, Status> {
    let Some(terms) = pod
        .spec
        .as_ref()
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.preferred_during_scheduling_ignored_during_execution
                .as_ref()
        })
    else {
        return Ok(None);
    };
    let path = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution";
    PreferredSchedulingTerms::parse(terms, path)
        .map(Some)
        .map_err(|errors| {
            let reasons = errors.iter().map(ToString::to_string).collect::<Vec<_>>();
            Status::error(reasons.join("; "))
        })
}

/// The node names a pod's required terms pin with `metadata.name In`, if every term pins
/// some (upstream's PreFilter narrowing): the union over terms of the intersection within
/// a term. `None` when some term does not pin names, so every node stays a candidate.
fn pinned_node_names(terms: &[NodeSelectorTerm]) -> Option<BTreeSet<String>> {
    let mut names = BTreeSet::new();
    for term in terms {
        let mut term_names: Option<BTreeSet<String>> = None;
        let pins = term
            .match_fields
            .iter()
            .flatten()
            .filter(|r| r.key == OBJECT_NAME_FIELD && r.operator == "In");
        for requirement in pins {
            let values: BTreeSet<String> = requirement.values.iter().flatten().cloned().collect();
            term_names = Some(match term_names {
                None => values,
                Some(names) => names.intersection(&values).cloned().collect(),
            });
        }
        names.extend(term_names?);
    }
    Some(names)
}

crate::plugin! {
    NodeAffinity {
        name: "NodeAffinity",
        points: [PreFilter, Filter, PreScore, Score],
    }

    impl Plugin {
        fn as_sign(&self) -> Option<&dyn crate::framework::SignPlugin> {
            Some(self)
        }

        /// Upstream's registration with queueing hints enabled: only a new node or a change of
        /// node labels can make a node match. (Without hints upstream also registers
        /// UpdateNodeTaint, to cover Node/Add events its pre-check may drop; berth has no such
        /// pre-check.)
        fn events_to_register(&self) -> Option<Vec<ClusterEvent>> {
            Some(vec![ClusterEvent::new(
                EventResource::Node,
                ActionType::ADD | ActionType::UPDATE_NODE_LABEL,
            )])
        }
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str = "Keeps pods on nodes matching their nodeSelector and required node affinity (plus the profile's addedAffinity), and prefers nodes matching their preferred node affinity.";
        type Args = NodeAffinityArgs;

        fn build(args: NodeAffinityArgs, _: &Handle) -> Result<Self, PluginError> {
            NodeAffinity::new(&args).map_err(|errors| PluginError::InvalidArgs {
                plugin: Self::NAME.to_string(),
                errors,
            })
        }
    }
}

#[async_trait]
impl PreFilterPlugin for NodeAffinity {
    async fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let spec = pod.pod.spec.as_ref();
        let required_terms = spec
            .and_then(|s| s.affinity.as_ref())
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|na| {
                na.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .map(|ns| ns.node_selector_terms.as_slice());
        let has_node_selector = spec.is_some_and(|s| s.node_selector.is_some());
        if required_terms.is_none() && self.added_node_selector.is_none() && !has_node_selector {
            return (None, Status::skip());
        }
        state.write(PreFilterState(Arc::new(RequiredNodeAffinity::new(
            &pod.pod,
        ))));
        let Some(terms) = required_terms.filter(|terms| !terms.is_empty()) else {
            return (None, Status::success());
        };
        match pinned_node_names(terms) {
            Some(names) if names.is_empty() => (None, Status::unresolvable(ERR_REASON_CONFLICT)),
            Some(names) => (
                Some(PreFilterResult {
                    node_names: Some(names),
                }),
                Status::success(),
            ),
            None => (None, Status::success()),
        }
    }
}

impl FilterPlugin for NodeAffinity {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(node) = node.node() else {
            return Status::error("node not found");
        };
        if self
            .added_node_selector
            .as_ref()
            .is_some_and(|added| !added.matches(node))
        {
            return Status::unresolvable(ERR_REASON_ENFORCED);
        }
        let matches = match state.read::<PreFilterState>() {
            Some(PreFilterState(required)) => required.matches(node),
            // As upstream: without PreFilter (disabled, or Filter called alone), parse here.
            None => RequiredNodeAffinity::new(&pod.pod).matches(node),
        };
        if matches {
            Status::success()
        } else {
            Status::unresolvable(ERR_REASON_POD)
        }
    }
}

#[async_trait]
impl PreScorePlugin for NodeAffinity {
    async fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &[Arc<NodeInfo>],
    ) -> Status {
        let preferred = match pod_preferred_terms(&pod.pod) {
            Ok(preferred) => preferred,
            Err(status) => return status,
        };
        if preferred.is_none() && self.added_preferred_terms.is_none() {
            return Status::skip();
        }
        state.write(PreScoreState(preferred.map(Arc::new)));
        Status::success()
    }
}

impl ScorePlugin for NodeAffinity {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let Some(node) = node.node() else {
            return Err(Status::error("node not found"));
        };
        let added = self
            .added_preferred_terms
            .as_ref()
            .map_or(0, |terms| terms.score(node));
        let own = match state.read::<PreScoreState>() {
            Some(PreScoreState(preferred)) => preferred.as_ref().map_or(0, |t| t.score(node)),
            // As upstream: without PreScore, parse the pod's terms here.
            None => pod_preferred_terms(&pod.pod)?.map_or(0, |t| t.score(node)),
        };
        Ok(added + own)
    }

    fn score_extensions(&self) -> Option<&dyn ScoreExtensions> {
        Some(self)
    }
}

impl ScoreExtensions for NodeAffinity {
    fn normalize_score(
        &self,
        _: &CycleState,
        _: &PodInfo,
        _: &[Arc<NodeInfo>],
        scores: &mut [i64],
    ) -> Status {
        default_normalize_score(MAX_NODE_SCORE, false, scores)
    }
}

#[cfg(test)]
mod tests;

/// What of a pod this plugin reads, for opportunistic batching (upstream `SignPod`).
impl crate::framework::SignPlugin for NodeAffinity {
    fn fragments(&self, pod: &crate::cluster::PodInfo) -> Vec<crate::framework::SignFragment> {
        use crate::framework::signature;
        signature::node_affinity(&pod.pod)
    }
}
