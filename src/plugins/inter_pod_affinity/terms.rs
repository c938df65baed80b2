//! Pod (anti-)affinity terms parsed once per pod: label selectors compiled to
//! [`Selector`]s, namespaces resolved (upstream `framework.AffinityTerm`,
//! `WeightedAffinityTerm` and the term parsing of `framework.NewPodInfo`).
//!
//! A term matches a pod when the pod's namespace is among the term's namespaces or its
//! namespace's labels match the term's namespace selector, and the pod's labels match the
//! term's label selector. As in the API:
//!
//! - no `namespaces` and no `namespaceSelector`: the namespace of the pod owning the term;
//! - a `namespaceSelector` of `{}`: every namespace;
//! - a missing `labelSelector` matches no pod, an empty one every pod.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Pod, PodAffinityTerm, WeightedPodAffinityTerm};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use kube::core::{Expression, Selector, SelectorExt};

use crate::cluster::{Memo, NamespaceLabels, PodInfo};
use crate::helpers::validation::qualified_name_errors;

/// The labels of an object with none.
static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

/// `metadata.labels` of a pod; empty when absent.
pub(super) fn pod_labels(pod: &Pod) -> &BTreeMap<String, String> {
    pod.metadata.labels.as_ref().unwrap_or(&NO_LABELS)
}

/// `metadata.namespace` of a pod, `default` when unset (as the API server defaults it).
pub(super) fn pod_namespace(pod: &Pod) -> &str {
    pod.metadata
        .namespace
        .as_deref()
        .filter(|ns| !ns.is_empty())
        .unwrap_or("default")
}

/// A parsed `PodAffinityTerm`.
#[derive(Debug, Clone)]
pub(super) struct AffinityTerm {
    /// Namespaces named by the term (or the owner's namespace when it names none).
    pub namespaces: BTreeSet<String>,
    /// `None` for a missing label selector, which matches nothing.
    pub selector: Option<Selector>,
    /// `None` for a missing namespace selector, which matches nothing; `Some` with no
    /// expressions (from `{}`) matches every namespace.
    pub namespace_selector: Option<Selector>,
    pub topology_key: String,
}

impl AffinityTerm {
    /// Upstream `AffinityTerm.Matches`: whether `pod` (whose namespace has
    /// `namespace_labels`) is selected by this term.
    pub fn matches(&self, pod: &Pod, namespace_labels: &BTreeMap<String, String>) -> bool {
        let in_namespace = self.namespaces.contains(pod_namespace(pod))
            || self
                .namespace_selector
                .as_ref()
                .is_some_and(|s| s.matches(namespace_labels));
        in_namespace
            && self
                .selector
                .as_ref()
                .is_some_and(|s| s.matches(pod_labels(pod)))
    }

    /// Upstream `mergeAffinityTermNamespacesIfNotEmpty`, for the incoming pod's terms: a
    /// namespace selector with requirements is replaced by the namespaces it selects now,
    /// so matching existing pods needs no namespace lookup. `{}` (every namespace) stays.
    pub fn resolve_namespace_selector(&mut self, namespaces: &NamespaceLabels) {
        let Some(selector) = &self.namespace_selector else {
            return;
        };
        if selector.selects_all() {
            return;
        }
        self.namespaces.extend(
            namespaces
                .iter()
                .filter(|(_, labels)| selector.matches(labels))
                .map(|(name, _)| name.clone()),
        );
        self.namespace_selector = None;
    }
}

/// A parsed `WeightedPodAffinityTerm`.
#[derive(Debug, Clone)]
pub(super) struct WeightedAffinityTerm {
    pub term: AffinityTerm,
    pub weight: i64,
}

/// Every (anti-)affinity term of one pod, parsed.
#[derive(Debug, Clone, Default)]
pub(super) struct PodAffinityTerms {
    pub required_affinity: Vec<AffinityTerm>,
    pub required_anti_affinity: Vec<AffinityTerm>,
    pub preferred_affinity: Vec<WeightedAffinityTerm>,
    pub preferred_anti_affinity: Vec<WeightedAffinityTerm>,
}

impl PodAffinityTerms {
    /// The terms of a pod already in the cluster, parsed once per pod (kept in its
    /// [`PodInfo`]); parse errors leave the faulty group empty, as [`Self::parse`].
    pub fn of_existing(pod: &PodInfo) -> Memo<'_, Self> {
        pod.memo(|pod| Self::parse(pod).0)
    }

    /// Parses the terms of `pod`. A list with an invalid term is left empty and its error
    /// reported, the other lists are still parsed (as upstream `PodInfo.Update`). The
    /// error reads like upstream's aggregate: one error alone, several as `[a, b]`.
    pub fn parse(pod: &Pod) -> (Self, Option<String>) {
        let affinity = pod.spec.as_ref().and_then(|s| s.affinity.as_ref());
        let pod_affinity = affinity.and_then(|a| a.pod_affinity.as_ref());
        let pod_anti_affinity = affinity.and_then(|a| a.pod_anti_affinity.as_ref());
        let mut errors = Vec::new();
        let terms = PodAffinityTerms {
            required_affinity: collect_terms(
                &mut errors,
                "requiredAffinityTerms",
                parse_terms(
                    pod,
                    pod_affinity.and_then(|a| {
                        a.required_during_scheduling_ignored_during_execution
                            .as_deref()
                    }),
                ),
            ),
            required_anti_affinity: collect_terms(
                &mut errors,
                "requiredAntiAffinityTerms",
                parse_terms(
                    pod,
                    pod_anti_affinity.and_then(|a| {
                        a.required_during_scheduling_ignored_during_execution
                            .as_deref()
                    }),
                ),
            ),
            preferred_affinity: collect_terms(
                &mut errors,
                "preferredAffinityTerms",
                parse_weighted_terms(
                    pod,
                    pod_affinity.and_then(|a| {
                        a.preferred_during_scheduling_ignored_during_execution
                            .as_deref()
                    }),
                ),
            ),
            preferred_anti_affinity: collect_terms(
                &mut errors,
                "preferredAntiAffinityTerms",
                parse_weighted_terms(
                    pod,
                    pod_anti_affinity.and_then(|a| {
                        a.preferred_during_scheduling_ignored_during_execution
                            .as_deref()
                    }),
                ),
            ),
        };
        let error = match errors.len() {
            0 => None,
            1 => errors.pop(),
            _ => Some(format!("[{}]", errors.join(", "))),
        };
        (terms, error)
    }

    /// Resolves the namespace selectors of every term (for the incoming pod).
    pub fn resolve_namespace_selectors(&mut self, namespaces: &NamespaceLabels) {
        let plain = self
            .required_affinity
            .iter_mut()
            .chain(self.required_anti_affinity.iter_mut());
        let weighted = self
            .preferred_affinity
            .iter_mut()
            .chain(self.preferred_anti_affinity.iter_mut())
            .map(|w| &mut w.term);
        for term in plain.chain(weighted) {
            term.resolve_namespace_selector(namespaces);
        }
    }

    /// Whether the pod has preferred affinity or anti-affinity terms (upstream
    /// `hasConstraints` in PreScore).
    pub fn has_preferred(&self) -> bool {
        !self.preferred_affinity.is_empty() || !self.preferred_anti_affinity.is_empty()
    }
}

/// The parsed terms, or none (recording the error) when one of them is invalid.
fn collect_terms<T>(
    errors: &mut Vec<String>,
    what: &str,
    parsed: Result<Vec<T>, String>,
) -> Vec<T> {
    parsed.unwrap_or_else(|e| {
        errors.push(format!("{what}: {e}"));
        Vec::new()
    })
}

/// Upstream `podMatchesAllAffinityTerms` for the incoming pod's terms (namespace selectors
/// already resolved): false when there are no terms.
pub(super) fn pod_matches_all_terms(terms: &[AffinityTerm], pod: &Pod) -> bool {
    !terms.is_empty() && terms.iter().all(|t| t.matches(pod, &NO_LABELS))
}

fn parse_terms(
    owner: &Pod,
    terms: Option<&[PodAffinityTerm]>,
) -> Result<Vec<AffinityTerm>, String> {
    terms
        .unwrap_or_default()
        .iter()
        .map(|term| parse_term(owner, term))
        .collect()
}

fn parse_weighted_terms(
    owner: &Pod,
    terms: Option<&[WeightedPodAffinityTerm]>,
) -> Result<Vec<WeightedAffinityTerm>, String> {
    terms
        .unwrap_or_default()
        .iter()
        .map(|w| {
            Ok(WeightedAffinityTerm {
                term: parse_term(owner, &w.pod_affinity_term)?,
                weight: i64::from(w.weight),
            })
        })
        .collect()
}

/// Upstream `newAffinityTerm`.
fn parse_term(owner: &Pod, term: &PodAffinityTerm) -> Result<AffinityTerm, String> {
    let named = term.namespaces.as_deref().unwrap_or_default();
    let namespaces = if named.is_empty() && term.namespace_selector.is_none() {
        BTreeSet::from([pod_namespace(owner).to_owned()])
    } else {
        named.iter().cloned().collect()
    };
    Ok(AffinityTerm {
        namespaces,
        selector: term
            .label_selector
            .as_ref()
            .map(parse_selector)
            .transpose()?,
        namespace_selector: term
            .namespace_selector
            .as_ref()
            .map(parse_selector)
            .transpose()?,
        topology_key: term.topology_key.clone(),
    })
}

/// Upstream `metav1.LabelSelectorAsSelector` for a present selector, with its validation:
/// known operators, values only with `In`/`NotIn` (and then at least one), valid label
/// keys and values. kube's `Selector` conversion alone accepts more.
pub(super) fn parse_selector(selector: &LabelSelector) -> Result<Selector, String> {
    let mut expressions = Vec::new();
    for (key, value) in selector.match_labels.iter().flatten() {
        validate_key(key)?;
        validate_value(key, 0, value)?;
        expressions.push(Expression::Equal(key.clone(), value.clone()));
    }
    for requirement in selector.match_expressions.iter().flatten() {
        expressions.push(parse_requirement(requirement)?);
    }
    Ok(expressions.into_iter().collect())
}

fn parse_requirement(requirement: &LabelSelectorRequirement) -> Result<Expression, String> {
    let key = &requirement.key;
    validate_key(key)?;
    let values = requirement.values.as_deref().unwrap_or_default();
    for (i, value) in values.iter().enumerate() {
        validate_value(key, i, value)?;
    }
    let set = || values.iter().cloned().collect::<BTreeSet<_>>();
    match requirement.operator.as_str() {
        "In" | "NotIn" if values.is_empty() => Err(
            "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
                .into(),
        ),
        "In" => Ok(Expression::In(key.clone(), set())),
        "NotIn" => Ok(Expression::NotIn(key.clone(), set())),
        "Exists" | "DoesNotExist" if !values.is_empty() => Err(format!(
            "values: Invalid value: {values:?}: values set must be empty for exists and does not exist"
        )),
        "Exists" => Ok(Expression::Exists(key.clone())),
        "DoesNotExist" => Ok(Expression::DoesNotExist(key.clone())),
        other => Err(format!("{other:?} is not a valid label selector operator")),
    }
}

fn validate_key(key: &str) -> Result<(), String> {
    let errors = qualified_name_errors(key);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "key: Invalid value: {key:?}: {}",
            errors.join("; ")
        ))
    }
}

/// apimachinery `IsValidLabelValue`, worded as upstream so parse errors read the same.
fn validate_value(key: &str, index: usize, value: &str) -> Result<(), String> {
    const MAX_LENGTH: usize = 63;
    let mut errors = Vec::new();
    if value.len() > MAX_LENGTH {
        errors.push(format!("must be no more than {MAX_LENGTH} characters"));
    }
    let inner_ok = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let ends_ok = value.is_empty()
        || (value.starts_with(|c: char| c.is_ascii_alphanumeric())
            && value.ends_with(|c: char| c.is_ascii_alphanumeric()));
    if !(inner_ok && ends_ok) {
        errors.push(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' \
             or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or \
             'my_value',  or '12345', regex used for validation is \
             '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
                .to_string(),
        );
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "values[{index}][{key}]: Invalid value: {value:?}: {}",
            errors.join("; ")
        ))
    }
}
