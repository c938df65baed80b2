//! Node selectors and node affinity, matched as component-helpers
//! `scheduling/corev1/nodeaffinity`: NodeAffinity filters and scores with them,
//! PodTopologySpread's `nodeAffinityPolicy: Honor` counts only the nodes a pod's
//! [`RequiredNodeAffinity`] selects, and the simulator's DaemonSet controller places pods
//! with it, so all ask the question the same way.
//!
//! Terms are ORed, the requirements of a term ANDed. A term with neither
//! `matchExpressions` nor `matchFields` matches nothing; so does a term that does not
//! parse (unknown operator, invalid key or value, `Gt`/`Lt` without one integer).
//! `matchExpressions` look at node labels (`In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`,
//! `Lt`); `matchFields` look at node fields, of which only `metadata.name` exists (`In`,
//! `NotIn`, exactly one value each).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Node, NodeSelector as NodeSelectorSpec, NodeSelectorRequirement, NodeSelectorTerm, Pod,
    PreferredSchedulingTerm,
};

use crate::framework::FieldError;

use super::validation::{label_value_errors, qualified_name_errors};

/// The only node field `matchFields` can name (upstream `metav1.ObjectNameField`).
pub const OBJECT_NAME_FIELD: &str = "metadata.name";

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
