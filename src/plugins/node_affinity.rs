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
//! Matching rules: terms are ORed, the requirements of a term ANDed. A term with neither
//! `matchExpressions` nor `matchFields` matches nothing; so does a term that does not
//! parse (unknown operator, invalid key or value, `Gt`/`Lt` without one integer).
//! `matchExpressions` look at node labels (`In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`,
//! `Lt`); `matchFields` look at node fields, of which only `metadata.name` exists (`In`,
//! `NotIn`, exactly one value each).
//!
//! Other plugins (PodTopologySpread's `nodeAffinityPolicy: Honor`) use
//! [`RequiredNodeAffinity`] to ask the same question Filter asks.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{
    Node, NodeSelector as NodeSelectorSpec, NodeSelectorRequirement, NodeSelectorTerm, Pod,
    PreferredSchedulingTerm,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cluster::{NodeInfo, PodInfo, Snapshot};
use crate::framework::{
    ActionType, ClusterEvent, CycleState, EventResource, ExtensionPoint, FieldError, FilterPlugin,
    Handle, MAX_NODE_SCORE, Plugin, PluginArgs, PluginError, PluginFactory, PreFilterPlugin,
    PreFilterResult, PreScorePlugin, ScoreExtensions, ScorePlugin, Status,
};
use crate::plugins::helper::{default_normalize_score, qualified_name_errors};

/// The only node field `matchFields` can name (upstream `metav1.ObjectNameField`).
pub const OBJECT_NAME_FIELD: &str = "metadata.name";

/// Filter's reason when the pod's node affinity or `nodeSelector` rejects a node
/// (upstream `ErrReasonPod`).
pub const ERR_REASON_POD: &str = "node(s) didn't match Pod's node affinity/selector";
/// Filter's reason when the profile's `addedAffinity` rejects a node.
pub const ERR_REASON_ENFORCED: &str = "node(s) didn't match scheduler-enforced node affinity";
/// PreFilter's reason when the pod's `metadata.name` requirements exclude every node.
pub const ERR_REASON_CONFLICT: &str = "pod affinity terms conflict";

/// The longest label value (upstream `LabelValueMaxLength`).
const LABEL_VALUE_MAX_LENGTH: usize = 63;

/// What is wrong with `value` as a label value: at most 63 alphanumerics, `-`, `_` or `.`,
/// starting and ending alphanumeric, or empty (upstream `IsValidLabelValue`). Empty when
/// valid.
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errors.push(format!(
            "must be no more than {LABEL_VALUE_MAX_LENGTH} characters"
        ));
    }
    let chars_ok = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let ends_ok = value.is_empty()
        || (value.starts_with(|c: char| c.is_ascii_alphanumeric())
            && value.ends_with(|c: char| c.is_ascii_alphanumeric()));
    if !(chars_ok && ends_ok) {
        errors.push(
            "a label value must be empty or consist of alphanumeric characters, '-', '_' or '.', \
             and must start and end with an alphanumeric character (e.g. 'MyValue', 'my_value', '12345')"
                .to_string(),
        );
    }
    errors
}

/// A string value rendered as JSON, as `FieldError.value` expects.
fn quoted(value: &str) -> String {
    serde_json::Value::from(value).to_string()
}

/// A parsed `matchExpressions` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LabelRequirement {
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
    Gt(String, i64),
    Lt(String, i64),
}

impl LabelRequirement {
    /// Upstream `labels.Requirement.Matches`. `Gt`/`Lt` need the label to be present and
    /// to parse as a base-10 integer.
    fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        let label = |key: &str| labels.and_then(|l| l.get(key)).map(String::as_str);
        match self {
            LabelRequirement::In(key, values) => {
                label(key).is_some_and(|v| values.iter().any(|w| w == v))
            }
            LabelRequirement::NotIn(key, values) => {
                label(key).is_none_or(|v| values.iter().all(|w| w != v))
            }
            LabelRequirement::Exists(key) => label(key).is_some(),
            LabelRequirement::DoesNotExist(key) => label(key).is_none(),
            LabelRequirement::Gt(key, bound) => {
                label(key).is_some_and(|v| v.parse::<i64>().is_ok_and(|n| n > *bound))
            }
            LabelRequirement::Lt(key, bound) => {
                label(key).is_some_and(|v| v.parse::<i64>().is_ok_and(|n| n < *bound))
            }
        }
    }

    /// Upstream `nodeSelectorRequirementsAsSelector` + `labels.NewRequirement`: the
    /// operator must be known, the key a qualified name, the values label values, `In` and
    /// `NotIn` need values, `Exists` and `DoesNotExist` none, `Gt` and `Lt` one integer.
    fn parse(req: &NodeSelectorRequirement, path: &str) -> Result<Self, Vec<FieldError>> {
        const OPERATORS: [&str; 6] = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"];
        let values = req.values.as_deref().unwrap_or_default();
        let values_path = format!("{path}.values");
        let mut errors: Vec<FieldError> = qualified_name_errors(&req.key)
            .into_iter()
            .map(|message| FieldError::new(format!("{path}.key"), quoted(&req.key), message))
            .collect();
        let invalid_values =
            |message: &str| FieldError::invalid(&values_path, &serde_json::json!(values), message);
        match req.operator.as_str() {
            "In" | "NotIn" if values.is_empty() => {
                errors.push(invalid_values("In and NotIn need at least one value"))
            }
            "Exists" | "DoesNotExist" if !values.is_empty() => {
                errors.push(invalid_values("Exists and DoesNotExist take no values"))
            }
            "Gt" | "Lt" => {
                if values.len() != 1 {
                    errors.push(invalid_values("Gt and Lt need exactly one value"));
                }
                for (i, value) in values.iter().enumerate() {
                    if value.parse::<i64>().is_err() {
                        errors.push(FieldError::new(
                            format!("{values_path}[{i}]"),
                            quoted(value),
                            "Gt and Lt compare integers, so the value must be a base-10 integer (e.g. '3')",
                        ));
                    }
                }
            }
            op if !OPERATORS.contains(&op) => {
                // As upstream, an unknown operator is the only error reported for it.
                return Err(vec![FieldError::not_supported(
                    format!("{path}.operator"),
                    &serde_json::Value::from(op),
                    &OPERATORS,
                )]);
            }
            _ => {}
        }
        for (i, value) in values.iter().enumerate() {
            errors.extend(label_value_errors(value).into_iter().map(|message| {
                FieldError::new(format!("{values_path}[{i}]"), quoted(value), message)
            }));
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let key = req.key.clone();
        let bound = || {
            values
                .first()
                .and_then(|v| v.parse::<i64>().ok())
                .unwrap_or(0)
        };
        Ok(match req.operator.as_str() {
            "In" => LabelRequirement::In(key, values.to_vec()),
            "NotIn" => LabelRequirement::NotIn(key, values.to_vec()),
            "Exists" => LabelRequirement::Exists(key),
            "DoesNotExist" => LabelRequirement::DoesNotExist(key),
            "Gt" => LabelRequirement::Gt(key, bound()),
            _ => LabelRequirement::Lt(key, bound()),
        })
    }
}

/// A parsed `matchFields` entry: the field equals (`In`) or differs from (`NotIn`) one
/// value.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldRequirement {
    key: String,
    value: String,
    equal: bool,
}

impl FieldRequirement {
    /// Upstream's field selector: a field the node does not have reads as empty.
    fn matches(&self, node_name: &str) -> bool {
        let field = if self.key == OBJECT_NAME_FIELD {
            node_name
        } else {
            ""
        };
        (field == self.value) == self.equal
    }

    /// Upstream `nodeSelectorRequirementsAsFieldSelector`: `In` or `NotIn` with exactly
    /// one value.
    fn parse(req: &NodeSelectorRequirement, path: &str) -> Result<Self, FieldError> {
        let values = req.values.as_deref().unwrap_or_default();
        let equal = match req.operator.as_str() {
            "In" => true,
            "NotIn" => false,
            op => {
                return Err(FieldError::not_supported(
                    format!("{path}.operator"),
                    &serde_json::Value::from(op),
                    &["In", "NotIn"],
                ));
            }
        };
        match values {
            [value] => Ok(FieldRequirement {
                key: req.key.clone(),
                value: value.clone(),
                equal,
            }),
            _ => Err(FieldError::invalid(
                format!("{path}.values"),
                &serde_json::json!(values),
                "matchFields take exactly one value",
            )),
        }
    }
}

/// A parsed node selector term: label and field requirements, all of which must match.
/// A term that failed to parse matches nothing (upstream's lazy parse errors).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct ParsedTerm {
    labels: Vec<LabelRequirement>,
    fields: Vec<FieldRequirement>,
    invalid: bool,
}

impl ParsedTerm {
    /// Parses a non-empty term; errors name fields under `path`.
    fn parse(term: &NodeSelectorTerm, path: &str) -> (ParsedTerm, Vec<FieldError>) {
        let mut errors = Vec::new();
        let mut parsed = ParsedTerm::default();
        for (i, req) in term.match_expressions.iter().flatten().enumerate() {
            match LabelRequirement::parse(req, &format!("{path}.matchExpressions[{i}]")) {
                Ok(r) => parsed.labels.push(r),
                Err(e) => errors.extend(e),
            }
        }
        for (i, req) in term.match_fields.iter().flatten().enumerate() {
            match FieldRequirement::parse(req, &format!("{path}.matchFields[{i}]")) {
                Ok(r) => parsed.fields.push(r),
                Err(e) => errors.push(e),
            }
        }
        parsed.invalid = !errors.is_empty();
        (parsed, errors)
    }

    fn matches(&self, node: &Node) -> bool {
        if self.invalid {
            return false;
        }
        let labels = node.metadata.labels.as_ref();
        if !self.labels.iter().all(|r| r.matches(labels)) {
            return false;
        }
        // Upstream checks matchFields only against a node that has a name (its field set
        // is empty otherwise).
        let name = node.metadata.name.as_deref().unwrap_or_default();
        name.is_empty() || self.fields.iter().all(|r| r.matches(name))
    }
}

/// Upstream `isEmptyNodeSelectorTerm`: such a term selects nothing.
fn is_empty_term(term: &NodeSelectorTerm) -> bool {
    term.match_expressions.as_ref().is_none_or(Vec::is_empty)
        && term.match_fields.as_ref().is_none_or(Vec::is_empty)
}

/// Whether `node` matches one node selector term (upstream semantics: an empty or invalid
/// term matches nothing). Parses the term on every call; keep a [`NodeSelector`] or
/// [`RequiredNodeAffinity`] for repeated use.
pub fn node_selector_term_matches(term: &NodeSelectorTerm, node: &Node) -> bool {
    !is_empty_term(term) && ParsedTerm::parse(term, "").0.matches(node)
}

/// A parsed `v1.NodeSelector`: its terms, ORed (upstream `LazyErrorNodeSelector`). Terms
/// that are empty or do not parse never match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeSelector {
    terms: Vec<ParsedTerm>,
}

impl NodeSelector {
    /// Parses `selector`, tolerating invalid terms (they match nothing), as the scheduler
    /// treats pods.
    pub fn new(selector: &NodeSelectorSpec) -> Self {
        Self::parse_with_errors(selector, "").0
    }

    /// Parses `selector` strictly (upstream `NewNodeSelector`): every parse error, with
    /// field paths under `path`.
    pub fn parse(selector: &NodeSelectorSpec, path: &str) -> Result<Self, Vec<FieldError>> {
        match Self::parse_with_errors(selector, path) {
            (parsed, errors) if errors.is_empty() => Ok(parsed),
            (_, errors) => Err(errors),
        }
    }

    fn parse_with_errors(selector: &NodeSelectorSpec, path: &str) -> (Self, Vec<FieldError>) {
        let mut errors = Vec::new();
        let terms = selector
            .node_selector_terms
            .iter()
            .enumerate()
            .filter(|(_, term)| !is_empty_term(term))
            .map(|(i, term)| {
                let (parsed, term_errors) =
                    ParsedTerm::parse(term, &format!("{path}.nodeSelectorTerms[{i}]"));
                errors.extend(term_errors);
                parsed
            })
            .collect();
        (NodeSelector { terms }, errors)
    }

    /// Whether any term matches `node`.
    pub fn matches(&self, node: &Node) -> bool {
        self.terms.iter().any(|term| term.matches(node))
    }
}

/// Parsed preferred scheduling terms (upstream `PreferredSchedulingTerms`): terms with
/// weight 0 or without requirements are dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreferredSchedulingTerms {
    terms: Vec<(ParsedTerm, i64)>,
}

impl PreferredSchedulingTerms {
    /// Parses `terms` strictly; errors name fields under `path` (the list itself).
    pub fn parse(terms: &[PreferredSchedulingTerm], path: &str) -> Result<Self, Vec<FieldError>> {
        let mut errors = Vec::new();
        let mut parsed = Vec::new();
        for (i, term) in terms.iter().enumerate() {
            if term.weight == 0 || is_empty_term(&term.preference) {
                continue;
            }
            let (term_parsed, term_errors) =
                ParsedTerm::parse(&term.preference, &format!("{path}[{i}].preference"));
            if term_errors.is_empty() {
                parsed.push((term_parsed, i64::from(term.weight)));
            }
            errors.extend(term_errors);
        }
        if errors.is_empty() {
            Ok(PreferredSchedulingTerms { terms: parsed })
        } else {
            Err(errors)
        }
    }

    /// The sum of the weights of the terms `node` matches.
    pub fn score(&self, node: &Node) -> i64 {
        self.terms
            .iter()
            .filter(|(term, _)| term.matches(node))
            .map(|(_, weight)| weight)
            .sum()
    }
}

/// A pod's hard node constraints, parsed once: its `nodeSelector` and its
/// `requiredDuringSchedulingIgnoredDuringExecution` node affinity (upstream
/// `GetRequiredNodeAffinity`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequiredNodeAffinity {
    /// `spec.nodeSelector`, when non-empty: every label must be present with that value.
    node_selector: Option<BTreeMap<String, String>>,
    /// The required node affinity, when the pod has one.
    affinity: Option<NodeSelector>,
}

impl RequiredNodeAffinity {
    /// Parses the pod's `nodeSelector` and required node affinity.
    pub fn new(pod: &Pod) -> RequiredNodeAffinity {
        let spec = pod.spec.as_ref();
        let node_selector = spec
            .and_then(|s| s.node_selector.as_ref())
            .filter(|selector| !selector.is_empty())
            .cloned();
        let affinity = spec
            .and_then(|s| s.affinity.as_ref())
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|na| {
                na.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .map(NodeSelector::new);
        RequiredNodeAffinity {
            node_selector,
            affinity,
        }
    }

    /// Whether the pod may run on `node` as far as its node selector and required node
    /// affinity go (upstream `RequiredNodeAffinity.Match`, parse errors counting as no
    /// match).
    pub fn matches(&self, node: &Node) -> bool {
        if let Some(selector) = &self.node_selector {
            let labels = node.metadata.labels.as_ref();
            let all_present = selector
                .iter()
                .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v));
            if !all_present {
                return false;
            }
        }
        self.affinity
            .as_ref()
            .is_none_or(|affinity| affinity.matches(node))
    }
}

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

impl Plugin for NodeAffinity {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }

    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }

    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }

    fn as_score(&self) -> Option<&dyn ScorePlugin> {
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

impl PluginFactory for NodeAffinity {
    const NAME: &'static str = "NodeAffinity";
    const DESCRIPTION: &'static str = "Keeps pods on nodes matching their nodeSelector and required node affinity (plus the profile's addedAffinity), and prefers nodes matching their preferred node affinity.";
    const POINTS: &'static [ExtensionPoint] = &[
        ExtensionPoint::PreFilter,
        ExtensionPoint::Filter,
        ExtensionPoint::PreScore,
        ExtensionPoint::Score,
    ];
    type Args = NodeAffinityArgs;

    fn build(args: NodeAffinityArgs, _: &Handle) -> Result<Self, PluginError> {
        NodeAffinity::new(&args).map_err(|errors| PluginError::InvalidArgs {
            plugin: Self::NAME.to_string(),
            errors,
        })
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
mod tests {
    use k8s_openapi::api::core::v1::NodeAffinity as NodeAffinitySpec;

    use super::*;
    use crate::framework::{Code, decode_args};
    use crate::testing::{make_node, make_pod};

    const PATH: &str = "spec.pluginConfig.nodeAffinity";

    fn req(key: &str, operator: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.to_string(),
            operator: operator.to_string(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
        }
    }

    /// A term; an empty list leaves the field unset.
    fn term(
        expressions: Vec<NodeSelectorRequirement>,
        fields: Vec<NodeSelectorRequirement>,
    ) -> NodeSelectorTerm {
        NodeSelectorTerm {
            match_expressions: (!expressions.is_empty()).then_some(expressions),
            match_fields: (!fields.is_empty()).then_some(fields),
        }
    }

    fn expressions(reqs: Vec<NodeSelectorRequirement>) -> NodeSelectorTerm {
        term(reqs, vec![])
    }

    fn name_in(names: &[&str]) -> NodeSelectorRequirement {
        req(OBJECT_NAME_FIELD, "In", names)
    }

    fn required(terms: Vec<NodeSelectorTerm>) -> NodeAffinitySpec {
        NodeAffinitySpec {
            required_during_scheduling_ignored_during_execution: Some(NodeSelectorSpec {
                node_selector_terms: terms,
            }),
            ..NodeAffinitySpec::default()
        }
    }

    fn preferred(terms: Vec<(i32, NodeSelectorTerm)>) -> NodeAffinitySpec {
        NodeAffinitySpec {
            preferred_during_scheduling_ignored_during_execution: Some(
                terms
                    .into_iter()
                    .map(|(weight, preference)| PreferredSchedulingTerm { weight, preference })
                    .collect(),
            ),
            ..NodeAffinitySpec::default()
        }
    }

    fn pod(node_selector: &[(&str, &str)], affinity: Option<NodeAffinitySpec>) -> Pod {
        let pod = node_selector.iter().fold(
            make_pod().name("pod").namespace("default"),
            |pod, (k, v)| pod.node_selector(k, v),
        );
        match affinity {
            Some(affinity) => pod.node_affinity(affinity).obj(),
            None => pod.obj(),
        }
    }

    fn with_required(terms: Vec<NodeSelectorTerm>) -> Pod {
        pod(&[], Some(required(terms)))
    }

    /// A node named `name` (nameless when empty) labelled `node_labels`.
    fn node(name: &str, node_labels: &[(&str, &str)]) -> Node {
        let node = match name {
            "" => make_node(),
            name => make_node().name(name),
        };
        node_labels
            .iter()
            .fold(node, |node, (k, v)| node.label(k, v))
            .obj()
    }

    fn plugin(added: Option<NodeAffinitySpec>) -> NodeAffinity {
        NodeAffinity::new(&NodeAffinityArgs {
            added_affinity: added,
        })
        .expect("test args are valid")
    }

    /// One case of upstream `TestNodeAffinity`.
    #[derive(Default)]
    struct FilterCase {
        name: &'static str,
        pod: Pod,
        node_name: &'static str,
        labels: Vec<(&'static str, &'static str)>,
        added: Option<NodeAffinitySpec>,
        skip_pre_filter: bool,
        want_pre_filter: Status,
        want_pre_filter_nodes: Option<Vec<&'static str>>,
        want_filter: Status,
    }

    fn filter_cases() -> Vec<FilterCase> {
        let rejected = || Status::unresolvable(ERR_REASON_POD);
        let foo_bar = vec![("foo", "bar")];
        vec![
            FilterCase {
                name: "missing labels",
                pod: pod(&[("foo", "bar")], None),
                want_filter: rejected(),
                ..FilterCase::default()
            },
            FilterCase {
                name: "same labels",
                pod: pod(&[("foo", "bar")], None),
                labels: foo_bar.clone(),
                ..FilterCase::default()
            },
            FilterCase {
                name: "node labels are superset",
                pod: pod(&[("foo", "bar")], None),
                labels: vec![("foo", "bar"), ("baz", "blah")],
                ..FilterCase::default()
            },
            FilterCase {
                name: "node labels are subset",
                pod: pod(&[("foo", "bar"), ("baz", "blah")], None),
                labels: foo_bar.clone(),
                want_filter: rejected(),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with matchExpressions using In operator that matches the existing node",
                pod: with_required(vec![expressions(vec![req(
                    "foo",
                    "In",
                    &["bar", "value2"],
                )])]),
                labels: foo_bar.clone(),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with matchExpressions using Gt operator that matches the existing node",
                pod: with_required(vec![expressions(vec![req(
                    "kernel-version",
                    "Gt",
                    &["0204"],
                )])]),
                labels: vec![("kernel-version", "0206")],
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with matchExpressions using NotIn operator that matches the existing node",
                pod: with_required(vec![expressions(vec![req(
                    "mem-type",
                    "NotIn",
                    &["DDR", "DDR2"],
                )])]),
                labels: vec![("mem-type", "DDR3")],
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with matchExpressions using Exists operator that matches the existing node",
                pod: with_required(vec![expressions(vec![req("GPU", "Exists", &[])])]),
                labels: vec![("GPU", "NVIDIA-GRID-K1")],
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with affinity that don't match node's labels won't schedule onto the node",
                pod: with_required(vec![expressions(vec![req(
                    "foo",
                    "In",
                    &["value1", "value2"],
                )])]),
                labels: foo_bar.clone(),
                want_filter: rejected(),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto the node",
                pod: with_required(vec![NodeSelectorTerm {
                    match_expressions: Some(vec![]),
                    match_fields: None,
                }]),
                labels: foo_bar.clone(),
                want_filter: rejected(),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with no Affinity will schedule onto a node",
                pod: pod(&[], None),
                labels: foo_bar.clone(),
                want_pre_filter: Status::skip(),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with Affinity but nil NodeSelector will schedule onto a node",
                pod: pod(&[], Some(NodeAffinitySpec::default())),
                labels: foo_bar.clone(),
                want_pre_filter: Status::skip(),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with multiple matchExpressions ANDed that matches the existing node",
                pod: with_required(vec![expressions(vec![
                    req("GPU", "Exists", &[]),
                    req("GPU", "NotIn", &["AMD", "INTER"]),
                ])]),
                labels: vec![("GPU", "NVIDIA-GRID-K1")],
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
                pod: with_required(vec![expressions(vec![
                    req("GPU", "Exists", &[]),
                    req("GPU", "In", &["AMD", "INTER"]),
                ])]),
                labels: vec![("GPU", "NVIDIA-GRID-K1")],
                want_filter: rejected(),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule onto the node",
                pod: with_required(vec![
                    expressions(vec![req("foo", "In", &["bar", "value2"])]),
                    expressions(vec![req("diffkey", "In", &["wrong", "value2"])]),
                ]),
                labels: foo_bar.clone(),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) both are satisfied, will schedule onto the node",
                pod: pod(
                    &[("foo", "bar")],
                    Some(required(vec![expressions(vec![req("foo", "Exists", &[])])])),
                ),
                labels: foo_bar.clone(),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing that we are deprecating) is not satisfied, won't schedule onto the node",
                pod: pod(
                    &[("foo", "bar")],
                    Some(required(vec![expressions(vec![req("foo", "Exists", &[])])])),
                ),
                labels: vec![("foo", "barrrrrr")],
                want_filter: rejected(),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with an invalid value in Affinity term won't be scheduled onto the node",
                pod: with_required(vec![expressions(vec![req(
                    "foo",
                    "NotIn",
                    &["invalid value: ___@#$%^"],
                )])]),
                labels: foo_bar.clone(),
                want_filter: rejected(),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with matchFields using In operator that matches the existing node",
                pod: with_required(vec![term(vec![], vec![name_in(&["node1"])])]),
                node_name: "node1",
                want_pre_filter_nodes: Some(vec!["node1"]),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with matchFields using In operator that does not match the existing node",
                pod: with_required(vec![term(vec![], vec![name_in(&["node1"])])]),
                node_name: "node2",
                want_pre_filter_nodes: Some(vec!["node1"]),
                want_filter: rejected(),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with two terms: matchFields does not match, but matchExpressions matches",
                pod: with_required(vec![
                    term(vec![], vec![name_in(&["node1"]), name_in(&["node2"])]),
                    expressions(vec![req("foo", "In", &["bar"])]),
                ]),
                node_name: "node2",
                labels: foo_bar.clone(),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with one term: matchFields does not match, but matchExpressions matches",
                pod: with_required(vec![term(
                    vec![req("foo", "In", &["bar"])],
                    vec![name_in(&["node1"])],
                )]),
                node_name: "node2",
                labels: foo_bar.clone(),
                want_pre_filter_nodes: Some(vec!["node1"]),
                want_filter: rejected(),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with one term: both matchFields and matchExpressions match",
                pod: with_required(vec![term(
                    vec![req("foo", "In", &["bar"])],
                    vec![name_in(&["node1"])],
                )]),
                node_name: "node1",
                labels: foo_bar.clone(),
                want_pre_filter_nodes: Some(vec!["node1"]),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with two terms: both matchFields and matchExpressions do not match",
                pod: with_required(vec![
                    term(vec![], vec![name_in(&["node1"])]),
                    expressions(vec![req("foo", "In", &["not-match-to-bar"])]),
                ]),
                node_name: "node2",
                labels: foo_bar.clone(),
                want_filter: rejected(),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with two terms of node.Name affinity",
                pod: with_required(vec![
                    term(vec![], vec![name_in(&["node1"])]),
                    term(vec![], vec![name_in(&["node2"])]),
                ]),
                node_name: "node2",
                want_pre_filter_nodes: Some(vec!["node1", "node2"]),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Pod with two conflicting mach field requirements",
                pod: with_required(vec![term(
                    vec![],
                    vec![name_in(&["node1"]), name_in(&["node2"])],
                )]),
                node_name: "node2",
                labels: foo_bar.clone(),
                want_pre_filter: Status::unresolvable(ERR_REASON_CONFLICT),
                want_filter: rejected(),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Matches added affinity and Pod's node affinity",
                pod: with_required(vec![expressions(vec![req("zone", "In", &["foo"])])]),
                node_name: "node2",
                labels: vec![("zone", "foo")],
                added: Some(required(vec![term(vec![], vec![name_in(&["node2"])])])),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Matches added affinity but not Pod's node affinity",
                pod: with_required(vec![expressions(vec![req("zone", "In", &["bar"])])]),
                node_name: "node2",
                labels: vec![("zone", "foo")],
                added: Some(required(vec![term(vec![], vec![name_in(&["node2"])])])),
                want_filter: rejected(),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Doesn't match added affinity",
                pod: pod(&[], None),
                node_name: "node2",
                labels: vec![("zone", "foo")],
                added: Some(required(vec![expressions(vec![req(
                    "zone",
                    "In",
                    &["bar"],
                )])])),
                want_filter: Status::unresolvable(ERR_REASON_ENFORCED),
                ..FilterCase::default()
            },
            FilterCase {
                name: "Matches node selector correctly even if PreFilter is not called",
                pod: pod(&[("foo", "bar")], None),
                labels: vec![("foo", "bar"), ("baz", "blah")],
                skip_pre_filter: true,
                ..FilterCase::default()
            },
            FilterCase {
                name: "Matches node affinity correctly even if PreFilter is not called",
                pod: with_required(vec![expressions(vec![
                    req("GPU", "Exists", &[]),
                    req("GPU", "NotIn", &["AMD", "INTER"]),
                ])]),
                labels: vec![("GPU", "NVIDIA-GRID-K1")],
                skip_pre_filter: true,
                ..FilterCase::default()
            },
        ]
    }

    #[tokio::test]
    async fn pre_filter_and_filter_match_upstream_table() {
        // Every case of upstream `TestNodeAffinity`, in order: PreFilter (unless the case
        // skips it), then Filter regardless of the PreFilter status, as upstream's loop.
        let snapshot = Snapshot::new(vec![]);
        for case in filter_cases() {
            let name = case.name;
            let plugin = plugin(case.added);
            let pod = PodInfo::new(case.pod).expect("test pod is valid");
            let node = NodeInfo::new(node(case.node_name, &case.labels)).expect("valid node");
            let mut state = CycleState::new();
            if !case.skip_pre_filter {
                let (result, status) = plugin.pre_filter(&mut state, &pod, &snapshot).await;
                assert_eq!(
                    status, case.want_pre_filter,
                    "case {name}: PreFilter status"
                );
                let want_result = case.want_pre_filter_nodes.map(|names| PreFilterResult {
                    node_names: Some(names.into_iter().map(String::from).collect()),
                });
                assert_eq!(result, want_result, "case {name}: PreFilterResult");
            }
            let got = plugin.filter(&state, &pod, &node);
            assert_eq!(got, case.want_filter, "case {name}: Filter");
        }
    }

    #[test]
    fn filter_without_node_object_is_an_error() {
        let pod = PodInfo::new(pod(&[("foo", "bar")], None)).expect("valid pod");
        let got = plugin(None).filter(&CycleState::new(), &pod, &NodeInfo::default());
        assert_eq!(got.code(), Code::Error);
    }

    #[tokio::test]
    async fn score_and_normalize_match_upstream_table() {
        // Upstream `TestNodeAffinityPriority`, in order: PreScore (unless the case skips
        // it), Score on every node, NormalizeScore; the expected scores are upstream's.
        let label1 = [("foo", "bar")];
        let label2 = [("key", "value")];
        let label3 = [("az", "az1")];
        let label4 = [("abc", "az11"), ("def", "az22")];
        let label5 = [("foo", "bar"), ("key", "value"), ("az", "az1")];
        let affinity1 = || preferred(vec![(2, expressions(vec![req("foo", "In", &["bar"])]))]);
        let affinity2 = || {
            preferred(vec![
                (2, expressions(vec![req("foo", "In", &["bar"])])),
                (4, expressions(vec![req("key", "In", &["value"])])),
                (
                    5,
                    expressions(vec![
                        req("foo", "In", &["bar"]),
                        req("key", "In", &["value"]),
                        req("az", "In", &["az1"]),
                    ]),
                ),
            ])
        };
        // (case, pod affinity, added affinity, nodes, run PreScore, expected PreScore
        // status, expected normalized scores)
        type Case<'a> = (
            &'static str,
            Option<NodeAffinitySpec>,
            Option<NodeAffinitySpec>,
            Vec<(&'static str, &'a [(&'static str, &'static str)])>,
            bool,
            Code,
            Vec<i64>,
        );
        let cases: Vec<Case> = vec![
            (
                // Upstream's PreScore returns Skip here; Score, if called anyway, gives 0.
                "all nodes are same priority as NodeAffinity is nil",
                None,
                None,
                vec![("node1", &label1), ("node2", &label2), ("node3", &label3)],
                true,
                Code::Skip,
                vec![0, 0, 0],
            ),
            (
                "no node matches preferred scheduling requirements in NodeAffinity of pod so all nodes' priority is zero",
                Some(affinity1()),
                None,
                vec![("node1", &label4), ("node2", &label2), ("node3", &label3)],
                true,
                Code::Success,
                vec![0, 0, 0],
            ),
            (
                "only node1 matches the preferred scheduling requirements of pod",
                Some(affinity1()),
                None,
                vec![("node1", &label1), ("node2", &label2), ("node3", &label3)],
                true,
                Code::Success,
                vec![MAX_NODE_SCORE, 0, 0],
            ),
            (
                "all nodes matches the preferred scheduling requirements of pod but with different priorities",
                Some(affinity2()),
                None,
                vec![("node1", &label1), ("node5", &label5), ("node2", &label2)],
                true,
                Code::Success,
                vec![18, MAX_NODE_SCORE, 36],
            ),
            (
                "added affinity",
                None,
                Some(affinity1()),
                vec![("node1", &label1), ("node2", &label2)],
                true,
                Code::Success,
                vec![MAX_NODE_SCORE, 0],
            ),
            (
                "added affinity and pod has default affinity",
                Some(affinity1()),
                Some(preferred(vec![(
                    3,
                    expressions(vec![req("key", "In", &["value"])]),
                )])),
                vec![("node1", &label1), ("node2", &label2), ("node3", &label5)],
                true,
                Code::Success,
                vec![40, 60, MAX_NODE_SCORE],
            ),
            (
                "calculate the priorities correctly even if PreScore is not called",
                Some(affinity2()),
                None,
                vec![("node1", &label1), ("node5", &label5), ("node2", &label2)],
                false,
                Code::Success,
                vec![18, MAX_NODE_SCORE, 36],
            ),
        ];
        for (name, affinity, added, nodes, run_pre_score, want_pre_score, want) in cases {
            let plugin = plugin(added);
            let pod = PodInfo::new(pod(&[], affinity)).expect("valid pod");
            let nodes: Vec<Arc<NodeInfo>> = nodes
                .into_iter()
                .map(|(n, l)| Arc::new(NodeInfo::new(node(n, l)).expect("valid node")))
                .collect();
            let mut state = CycleState::new();
            if run_pre_score {
                let status = plugin.pre_score(&mut state, &pod, &nodes).await;
                assert_eq!(status.code(), want_pre_score, "case {name}: PreScore");
            }
            let mut scores = nodes
                .iter()
                .map(|node| plugin.score(&state, &pod, node))
                .collect::<Result<Vec<i64>, Status>>()
                .unwrap_or_else(|status| panic!("case {name}: Score returned {status}"));
            let status = plugin.normalize_score(&state, &pod, &nodes, &mut scores);
            assert!(status.is_success(), "case {name}: NormalizeScore {status}");
            assert_eq!(scores, want, "case {name}");
        }
    }

    #[tokio::test]
    async fn pre_score_rejects_unparsable_preferred_terms() {
        // Upstream PreScore returns the parse error of the pod's preferred terms.
        let bad = preferred(vec![(1, expressions(vec![req("foo", "Gt", &["x"])]))]);
        let pod = PodInfo::new(pod(&[], Some(bad))).expect("valid pod");
        let status = plugin(None)
            .pre_score(&mut CycleState::new(), &pod, &[])
            .await;
        assert_eq!(status.code(), Code::Error);
    }

    #[test]
    fn matching_rules_follow_component_helpers() {
        // berth cases for the rules of component-helpers `nodeaffinity` that upstream's
        // plugin table does not reach: Lt, non-integer labels under Gt/Lt, DoesNotExist,
        // matchFields NotIn and unknown field keys, nameless nodes, invalid operators.
        let n = node("node-a", &[("gen", "7"), ("zone", "z1"), ("rev", "v2")]);
        let cases = [
            (
                "Lt matches a smaller integer",
                req("gen", "Lt", &["8"]),
                true,
            ),
            (
                "Lt rejects an equal integer",
                req("gen", "Lt", &["7"]),
                false,
            ),
            (
                "Gt rejects a label that is not an integer",
                req("rev", "Gt", &["1"]),
                false,
            ),
            (
                "Gt rejects a missing label",
                req("missing", "Gt", &["1"]),
                false,
            ),
            (
                "Gt with a bound that is no label value ('+6') matches nothing",
                req("gen", "Gt", &["+6"]),
                false,
            ),
            (
                "DoesNotExist matches a missing label",
                req("gpu", "DoesNotExist", &[]),
                true,
            ),
            (
                "DoesNotExist rejects a present label",
                req("zone", "DoesNotExist", &[]),
                false,
            ),
            (
                "NotIn matches a missing label",
                req("gpu", "NotIn", &["a"]),
                true,
            ),
            (
                "unknown operator matches nothing",
                req("zone", "Equals", &["z1"]),
                false,
            ),
            (
                "Gt with two values matches nothing",
                req("gen", "Gt", &["1", "2"]),
                false,
            ),
            (
                "In without values matches nothing",
                req("zone", "In", &[]),
                false,
            ),
        ];
        for (name, requirement, want) in cases {
            let t = expressions(vec![requirement]);
            assert_eq!(node_selector_term_matches(&t, &n), want, "case {name}");
        }
        let field_cases = [
            (
                "metadata.name NotIn another name",
                req(OBJECT_NAME_FIELD, "NotIn", &["b"]),
                true,
            ),
            (
                "metadata.name NotIn its name",
                req(OBJECT_NAME_FIELD, "NotIn", &["node-a"]),
                false,
            ),
            (
                "an unknown field reads as empty",
                req("metadata.uid", "In", &["node-a"]),
                false,
            ),
            (
                "matchFields In with two values is invalid",
                name_in(&["node-a", "b"]),
                false,
            ),
            (
                "matchFields Exists is invalid",
                req(OBJECT_NAME_FIELD, "Exists", &[]),
                false,
            ),
        ];
        for (name, requirement, want) in field_cases {
            let t = term(vec![], vec![requirement]);
            assert_eq!(node_selector_term_matches(&t, &n), want, "case {name}");
        }
        // A node without a name has no fields; upstream skips matchFields for it.
        let nameless = node("", &[]);
        assert!(node_selector_term_matches(
            &term(vec![], vec![name_in(&["x"])]),
            &nameless
        ));
        assert!(!node_selector_term_matches(&term(vec![], vec![]), &n));
    }

    #[test]
    fn required_node_affinity_combines_selector_and_terms() {
        // The public API other plugins use (upstream `GetRequiredNodeAffinity(pod).Match`).
        let p = pod(
            &[("disk", "ssd")],
            Some(required(vec![
                expressions(vec![req("zone", "In", &["z1"])]),
                term(vec![], vec![name_in(&["special"])]),
            ])),
        );
        let affinity = RequiredNodeAffinity::new(&p);
        assert!(affinity.matches(&node("a", &[("disk", "ssd"), ("zone", "z1")])));
        assert!(affinity.matches(&node("special", &[("disk", "ssd")])));
        assert!(!affinity.matches(&node("a", &[("zone", "z1")])));
        assert!(!affinity.matches(&node("a", &[("disk", "ssd"), ("zone", "z2")])));
        // No selector and no required terms: every node matches.
        assert!(RequiredNodeAffinity::new(&pod(&[], None)).matches(&node("a", &[])));
        // Required terms that are all empty: no node matches.
        let empty = with_required(vec![NodeSelectorTerm::default()]);
        assert!(!RequiredNodeAffinity::new(&empty).matches(&node("a", &[])));
    }

    fn errors_of(args: serde_json::Value) -> Vec<String> {
        match decode_args::<NodeAffinityArgs>(Some(&args), PATH) {
            Ok(_) => Vec::new(),
            Err(errors) => errors.into_iter().map(|e| e.path).collect(),
        }
    }

    #[test]
    fn args_validation_matches_upstream_table() {
        use serde_json::json;
        let added = format!("{PATH}.addedAffinity");
        let cases: Vec<(&str, serde_json::Value, Vec<String>)> = vec![
            // upstream TestValidateNodeAffinityArgs "empty"
            ("empty", json!({}), vec![]),
            // upstream "valid added affinity"
            (
                "valid added affinity",
                json!({"addedAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "label-1", "operator": "In", "values": ["label-1-val"]}]}
                    ]},
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 1, "preference": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}}
                    ]
                }}),
                vec![],
            ),
            // upstream "invalid added affinity" (berth's preferred path includes
            // `.preference`, the real field)
            (
                "invalid added affinity",
                json!({"addedAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "invalid/label/key", "operator": "In", "values": ["label-1-val"]}]}
                    ]},
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 1, "preference": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1", "node-2"]}]}}
                    ]
                }}),
                vec![
                    format!(
                        "{added}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key"
                    ),
                    format!(
                        "{added}.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchFields[0].values"
                    ),
                ],
            ),
            // berth: weights are 1..=100, as the API server requires of pods
            (
                "preferred weights out of range",
                json!({"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 0, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}},
                    {"weight": 101, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}
                ]}}),
                vec![
                    format!("{added}.preferredDuringSchedulingIgnoredDuringExecution[0].weight"),
                    format!("{added}.preferredDuringSchedulingIgnoredDuringExecution[1].weight"),
                ],
            ),
            // berth: the requirement rules of labels.NewRequirement, one per kind
            (
                "operator and values errors",
                json!({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [
                        {"key": "a", "operator": "Equals", "values": ["x"]},
                        {"key": "a", "operator": "Gt", "values": ["x"]},
                        {"key": "a", "operator": "Exists", "values": ["x"]}
                    ]}
                ]}}}),
                vec![
                    format!(
                        "{added}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator"
                    ),
                    format!(
                        "{added}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].values[0]"
                    ),
                    format!(
                        "{added}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[2].values"
                    ),
                ],
            ),
        ];
        for (name, args, want) in cases {
            assert_eq!(errors_of(args), want, "case {name}");
        }
    }

    #[test]
    fn args_schema_carries_the_node_affinity_type() {
        let entry = crate::framework::PluginEntry::of::<NodeAffinity>();
        let schema = entry.args.expect("NodeAffinity has args").schema_json();
        let added = &schema["properties"]["addedAffinity"];
        assert!(
            added
                .to_string()
                .contains("requiredDuringSchedulingIgnoredDuringExecution"),
            "addedAffinity schema is k8s-openapi's NodeAffinity: {added}"
        );
    }

    #[test]
    fn args_default_to_no_added_affinity() {
        let args = decode_args::<NodeAffinityArgs>(None, PATH).expect("defaults are valid");
        assert_eq!(args, NodeAffinityArgs::default());
        assert_eq!(
            serde_json::to_value(&args).expect("serializable"),
            serde_json::json!({})
        );
    }

    #[test]
    fn registry_points_match_the_accessors_and_events() {
        let plugin = plugin(None);
        assert!(plugin.as_pre_filter().is_some());
        assert!(plugin.as_filter().is_some());
        assert!(plugin.as_pre_score().is_some());
        assert!(
            plugin
                .as_score()
                .is_some_and(|s| s.score_extensions().is_some())
        );
        assert_eq!(NodeAffinity::POINTS.len(), 4);
        let events = plugin.events_to_register().expect("registers events");
        let moves_on = |resource, action| {
            let incoming = ClusterEvent::new(resource, action);
            events.iter().any(|e| e.matches(&incoming))
        };
        assert!(moves_on(EventResource::Node, ActionType::ADD));
        assert!(moves_on(EventResource::Node, ActionType::UPDATE_NODE_LABEL));
        assert!(!moves_on(
            EventResource::Node,
            ActionType::UPDATE_NODE_TAINT
        ));
        assert!(!moves_on(EventResource::AssignedPod, ActionType::DELETE));
    }
}
