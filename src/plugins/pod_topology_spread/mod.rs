//! PodTopologySpread: spreads pods evenly over topology domains (zones, nodes, ...) as
//! their `topologySpreadConstraints` ask (upstream `plugins/podtopologyspread`).
//!
//! - PreFilter counts, per `DoNotSchedule` constraint, the matching pods in each domain of
//!   the eligible nodes and keeps the two least loaded domains ([`filtering`]); AddPod and
//!   RemovePod update those counts for preemption's "what if".
//! - Filter rejects a node lacking a constraint's topology key
//!   (UnschedulableAndUnresolvable) or where placing the pod would make
//!   `matching in the node's domain + self-match - global minimum` exceed `maxSkew`
//!   (Unschedulable); `minDomains` makes the global minimum 0 while there are fewer
//!   eligible domains.
//! - PreScore counts matching pods per domain for the `ScheduleAnyway` constraints over all
//!   nodes; Score sums `count * log(domains + 2) + maxSkew - 1` per constraint;
//!   NormalizeScore maps the fewest matching pods to 100 ([`scoring`]).
//!
//! A pod without constraints gets the default constraints of the args: upstream's system
//! defaults (hostname maxSkew 3, zone maxSkew 5, both `ScheduleAnyway`) or the `List`
//! given. Their selector is derived from the Services, ReplicationControllers,
//! ReplicaSets and StatefulSets that select the pod (upstream `helper.DefaultSelector`).
//! berth has no listers for those objects yet, so a plugin built by the registry derives
//! no selector and default constraints have no effect; an embedder that has the objects
//! supplies the derivation with [`PodTopologySpread::with_default_selector`].

mod common;
mod counts;
mod filtering;
mod scoring;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, TopologySpreadConstraint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::core::Selector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::framework::{
    ActionType, ClusterEvent, Coupling, EventResource, FieldError, Handle, PluginArgs, PluginError,
};
use crate::helpers::validation::{
    QUALIFIED_NAME_MAX_LENGTH, QUALIFIED_NAME_PATTERN, qualified_name_errors,
};

pub use common::{
    DO_NOT_SCHEDULE, LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE, NodeInclusionPolicy, PodSelector,
    SCHEDULE_ANYWAY, SpreadConstraint,
};
use common::{parse_constraints, pod_constraints, pod_labels};

/// Filter's reason when placing the pod on the node would exceed a `maxSkew`.
pub const ERR_REASON_CONSTRAINTS_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints";
/// Filter's reason when the node lacks a constraint's topology key.
pub const ERR_REASON_NODE_LABEL_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";
/// `maxItems` of `defaultConstraints`: a bound the API server needs to cost the CEL rule
/// that compares every pair of constraints.
pub const MAX_DEFAULT_CONSTRAINTS: u32 = 16;
/// `maxItems` of a default constraint's `matchLabelKeys`.
pub const MAX_MATCH_LABEL_KEYS: u32 = 16;

/// Args of PodTopologySpread (upstream `PodTopologySpreadArgs`, v1 defaults:
/// `defaultingType: System` and no `defaultConstraints`).
// Schema: enums for defaultingType/whenUnsatisfiable, maxSkew >= 1, a qualified-name
// topologyKey, maxItems on the lists; CEL: constraints only with `List`, no labelSelector
// in a default constraint, no repeated (topologyKey, whenUnsatisfiable). `validate`
// repeats them with upstream's paths (`ValidatePodTopologySpreadArgs`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!has(self.defaultConstraints) || size(self.defaultConstraints) == 0 || (has(self.defaultingType) && self.defaultingType == 'List')",
    "message": "defaultConstraints are only used with defaultingType: List; set defaultingType to List or remove defaultConstraints",
    "fieldPath": ".defaultingType",
    "reason": "FieldValueInvalid",
}]))]
pub struct PodTopologySpreadArgs {
    /// Constraints for pods that define none (with `defaultingType: List`); at most 16,
    /// no two with the same topologyKey and whenUnsatisfiable.
    #[schemars(
        length(max = MAX_DEFAULT_CONSTRAINTS),
        extend("x-kubernetes-validations" = [{
            "rule": "self.all(c, self.exists_one(d, d.topologyKey == c.topologyKey && d.whenUnsatisfiable == c.whenUnsatisfiable))",
            "message": "two default constraints have the same topologyKey and whenUnsatisfiable; keep one of them",
        }])
    )]
    pub default_constraints: Vec<DefaultConstraint>,
    /// Where the default constraints come from: `System` (hostname maxSkew 3 and zone
    /// maxSkew 5, ScheduleAnyway) or `List` (`defaultConstraints`, possibly empty to
    /// disable defaulting).
    pub defaulting_type: DefaultingType,
}

/// Where a pod without constraints gets its constraints from.
// Variants carry no doc comments so the schema is a plain string enum.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum DefaultingType {
    #[default]
    System,
    List,
}

/// What to do with a pod that does not satisfy a constraint: `DoNotSchedule` filters,
/// `ScheduleAnyway` only scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum WhenUnsatisfiable {
    DoNotSchedule,
    ScheduleAnyway,
}

impl WhenUnsatisfiable {
    fn as_str(self) -> &'static str {
        match self {
            WhenUnsatisfiable::DoNotSchedule => DO_NOT_SCHEDULE,
            WhenUnsatisfiable::ScheduleAnyway => SCHEDULE_ANYWAY,
        }
    }
}

/// Whether nodes the pod's node affinity or taints exclude count as spreading domains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum InclusionPolicy {
    Honor,
    Ignore,
}

/// A default spread constraint: core/v1 `TopologySpreadConstraint` with typed enums. The
/// selector is derived per pod, so `labelSelector` is forbidden.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!has(self.labelSelector)",
    "message": "a default constraint must not define a selector: it is derived for each pod from the workloads selecting it",
    "fieldPath": ".labelSelector",
    "reason": "FieldValueForbidden",
}]))]
pub struct DefaultConstraint {
    /// The largest allowed difference of matching pods between two domains, >= 1.
    #[schemars(range(min = 1))]
    pub max_skew: i32,
    /// The node label whose values are the domains, e.g. `topology.kubernetes.io/zone`.
    #[schemars(
        length(min = 1, max = QUALIFIED_NAME_MAX_LENGTH),
        regex(pattern = QUALIFIED_NAME_PATTERN)
    )]
    pub topology_key: String,
    pub when_unsatisfiable: WhenUnsatisfiable,
    /// Forbidden; present only so that a profile setting it gets a clear error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// The number of domains below which the global minimum is taken as 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub min_domains: Option<i32>,
    /// `Honor` (default) counts only nodes the pod's node affinity selects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_affinity_policy: Option<InclusionPolicy>,
    /// `Ignore` (default) counts tainted nodes too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_taints_policy: Option<InclusionPolicy>,
    /// Pod label keys whose values are added to the selector.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = MAX_MATCH_LABEL_KEYS),
        inner(length(min = 1, max = QUALIFIED_NAME_MAX_LENGTH))
    )]
    pub match_label_keys: Vec<String>,
}

impl DefaultConstraint {
    /// The constraint as core/v1 has it, so default and pod constraints parse alike.
    fn to_core(&self) -> TopologySpreadConstraint {
        let policy = |p: Option<InclusionPolicy>| {
            p.map(|p| match p {
                InclusionPolicy::Honor => "Honor".to_string(),
                InclusionPolicy::Ignore => "Ignore".to_string(),
            })
        };
        TopologySpreadConstraint {
            max_skew: self.max_skew,
            topology_key: self.topology_key.clone(),
            when_unsatisfiable: self.when_unsatisfiable.as_str().to_string(),
            label_selector: self.label_selector.clone(),
            min_domains: self.min_domains,
            node_affinity_policy: policy(self.node_affinity_policy),
            node_taints_policy: policy(self.node_taints_policy),
            match_label_keys: (!self.match_label_keys.is_empty())
                .then(|| self.match_label_keys.clone()),
        }
    }
}

impl PluginArgs for PodTopologySpreadArgs {
    /// Upstream `ValidatePodTopologySpreadArgs`. Unsupported `defaultingType` and
    /// `whenUnsatisfiable` values are rejected when decoding (they are enums here).
    fn validate(&self, path: &str) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if self.defaulting_type == DefaultingType::System && !self.default_constraints.is_empty() {
            errors.push(FieldError::invalid(
                format!("{path}.defaultingType"),
                &serde_json::json!("System"),
                "must be List when .defaultConstraints are not empty (System uses the built-in constraints)",
            ));
        }
        let list = format!("{path}.defaultConstraints");
        for (i, c) in self.default_constraints.iter().enumerate() {
            let item = format!("{list}[{i}]");
            if c.max_skew <= 0 {
                errors.push(FieldError::invalid(
                    format!("{item}.maxSkew"),
                    &c.max_skew.into(),
                    "not in valid range: must be at least 1",
                ));
            }
            let key_path = format!("{item}.topologyKey");
            if c.topology_key.is_empty() {
                errors.push(FieldError::required(key_path, "can not be empty"));
            } else {
                errors.extend(
                    qualified_name_errors(&c.topology_key)
                        .into_iter()
                        .map(|message| {
                            FieldError::invalid(&key_path, &c.topology_key.as_str().into(), message)
                        }),
                );
            }
            if c.label_selector.is_some() {
                errors.push(FieldError::forbidden(
                    format!("{item}.labelSelector"),
                    "constraint must not define a selector, as they deduced for each pod",
                ));
            }
            let repeated = self.default_constraints[..i].iter().any(|other| {
                other.topology_key == c.topology_key
                    && other.when_unsatisfiable == c.when_unsatisfiable
            });
            if repeated {
                errors.push(FieldError::duplicate(
                    &item,
                    &format!("{{{}, {}}}", c.topology_key, c.when_unsatisfiable.as_str()).into(),
                    "",
                ));
            }
        }
        errors
    }
}

/// Upstream's system default constraints.
pub fn system_default_constraints() -> Vec<TopologySpreadConstraint> {
    let constraint = |key: &str, max_skew| TopologySpreadConstraint {
        max_skew,
        topology_key: key.to_string(),
        when_unsatisfiable: SCHEDULE_ANYWAY.to_string(),
        ..TopologySpreadConstraint::default()
    };
    vec![
        constraint(LABEL_HOSTNAME, 3),
        constraint(LABEL_TOPOLOGY_ZONE, 5),
    ]
}

/// Derives the selector of a pod's default constraints (upstream
/// `helper.DefaultSelector`: the selectors of the Services, ReplicationControllers,
/// ReplicaSets and StatefulSets selecting the pod, ANDed). `None` or an empty selector
/// means the pod gets no default constraints.
pub type DefaultSelectorFn = Arc<dyn Fn(&Pod) -> Option<Selector> + Send + Sync>;

/// The PodTopologySpread plugin.
pub struct PodTopologySpread {
    default_constraints: Vec<TopologySpreadConstraint>,
    /// `defaultingType: System`: nodes missing the zone label still get hostname scoring.
    system_defaulted: bool,
    default_selector: Option<DefaultSelectorFn>,
    /// The scheduler's worker threads for per-node domain counting; `None` (a plugin
    /// built with [`PodTopologySpread::new`] alone, in tests) counts on the caller's
    /// thread.
    pool: Option<Arc<crate::framework::Parallelizer>>,
    /// Per-node counts kept across cycles (see [`counts`]).
    counts: counts::DomainCounts,
}

impl PodTopologySpread {
    /// Builds the plugin from validated args, without a default-selector source.
    pub fn new(args: PodTopologySpreadArgs) -> Self {
        let system_defaulted = args.defaulting_type == DefaultingType::System;
        let default_constraints = if system_defaulted {
            system_default_constraints()
        } else {
            args.default_constraints
                .iter()
                .map(DefaultConstraint::to_core)
                .collect()
        };
        PodTopologySpread {
            default_constraints,
            system_defaulted,
            default_selector: None,
            pool: None,
            counts: counts::DomainCounts::default(),
        }
    }

    /// Counts domains on the scheduler's worker threads (the [`Handle`]'s).
    pub fn with_parallelizer(mut self, parallelizer: Arc<crate::framework::Parallelizer>) -> Self {
        self.pool = Some(parallelizer);
        self
    }

    /// Supplies the derivation of default-constraint selectors (see [`DefaultSelectorFn`]).
    pub fn with_default_selector(mut self, source: DefaultSelectorFn) -> Self {
        self.default_selector = Some(source);
        self
    }

    /// Upstream `getConstraints` / the first half of `initPreScoreState`: the pod's own
    /// constraints with `whenUnsatisfiable == action`, or, when it has none, the defaults.
    fn constraints(&self, pod: &Pod, action: &str) -> Result<Vec<SpreadConstraint>, String> {
        let own = pod_constraints(pod);
        if !own.is_empty() {
            return parse_constraints(own, pod_labels(pod), action);
        }
        // Upstream `buildDefaultConstraints`.
        let mut constraints =
            parse_constraints(&self.default_constraints, pod_labels(pod), action)?;
        if constraints.is_empty() {
            return Ok(constraints);
        }
        let selector = self
            .default_selector
            .as_ref()
            .and_then(|derive| derive(pod))
            .filter(|s| !s.selects_all());
        let Some(selector) = selector else {
            return Ok(Vec::new());
        };
        for c in &mut constraints {
            c.selector = PodSelector::Matching(selector.clone());
        }
        Ok(constraints)
    }
}

crate::plugin! {
    PodTopologySpread {
        name: "PodTopologySpread",
        points: [PreFilter, Filter, PreScore, Score],
    }

    impl Plugin {
        fn as_sign(&self) -> Option<&dyn crate::framework::SignPlugin> {
            Some(self)
        }

        /// Upstream's registration with queueing hints enabled (the default since v1.32): an
        /// assigned pod added, deleted or relabelled changes the counts, a new toleration
        /// matters under `nodeTaintsPolicy: Honor`; a node added, deleted, relabelled or
        /// retainted changes the domains.
        fn events_to_register(&self) -> Option<Vec<ClusterEvent>> {
            Some(vec![
                ClusterEvent::new(
                    EventResource::Pod,
                    ActionType::ADD
                        | ActionType::UPDATE_POD_LABEL
                        | ActionType::UPDATE_POD_TOLERATIONS
                        | ActionType::DELETE,
                ),
                ClusterEvent::new(
                    EventResource::Node,
                    ActionType::ADD
                        | ActionType::DELETE
                        | ActionType::UPDATE_NODE_LABEL
                        | ActionType::UPDATE_NODE_TAINT,
                ),
            ])
        }
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str = "Spreads pods over topology domains as their topologySpreadConstraints ask: DoNotSchedule constraints filter, ScheduleAnyway constraints (and the default constraints) score.";
        // Filter and Score read the constraints and counts their pre-points computed (an
        // error without them).
        const COUPLINGS: &'static [Coupling] =
            &[Coupling::FilterNeedsPreFilter, Coupling::ScoreNeedsPreScore];
        type Args = PodTopologySpreadArgs;

        fn build(args: PodTopologySpreadArgs, handle: &Handle) -> Result<Self, PluginError> {
            let workloads = handle.workloads.clone();
            Ok(PodTopologySpread::new(args)
                .with_default_selector(Arc::new(move |pod| Some(workloads.default_selector(pod))))
                .with_parallelizer(handle.parallelizer.clone()))
        }
    }
}

/// What of a pod this plugin reads, for opportunistic batching (upstream `SignPod`).
impl crate::framework::SignPlugin for PodTopologySpread {
    fn refusal(&self, pod: &crate::cluster::PodInfo) -> Option<String> {
        let constrained = pod
            .pod
            .spec
            .as_ref()
            .and_then(|s| s.topology_spread_constraints.as_ref())
            .is_some_and(|c| !c.is_empty());
        if constrained {
            return Some("pods with topology constraints are not signable".into());
        }
        (!self.default_constraints.is_empty())
            .then(|| "pods with default topology constraints are not signable".into())
    }

    fn fragments(&self, _: &crate::cluster::PodInfo) -> Vec<crate::framework::SignFragment> {
        Vec::new()
    }
}
