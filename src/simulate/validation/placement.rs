//! What places a pod: taints and tolerations, node and pod affinity, topology spread
//! constraints.

use super::*;

pub(super) const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// `validateTaintEffect`.
pub(super) fn taint_effect(effect: Option<&str>, allow_empty: bool, path: &str) -> Vec<FieldError> {
    match effect.unwrap_or_default() {
        "" if !allow_empty => vec![FieldError::required(path, "")],
        "" => Vec::new(),
        effect if TAINT_EFFECTS.contains(&effect) => Vec::new(),
        effect => vec![FieldError::not_supported(
            path,
            &string(effect),
            &TAINT_EFFECTS,
        )],
    }
}

/// `validateNodeTaints`.
pub(super) fn taints(taints: Option<&Vec<Taint>>, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, taint) in taints.into_iter().flatten().enumerate() {
        let at = index(path, i);
        errors.extend(label_name(&taint.key, &child(&at, "key")));
        let value = taint.value.as_deref().unwrap_or_default();
        let messages = label_value(value);
        if !messages.is_empty() {
            errors.push(FieldError::invalid(
                child(&at, "value"),
                &string(value),
                messages.join(";"),
            ));
        }
        errors.extend(taint_effect(
            Some(&taint.effect),
            false,
            &child(&at, "effect"),
        ));
        if !seen.insert((taint.key.as_str(), taint.effect.as_str())) {
            errors.push(FieldError::duplicate(
                &at,
                &string("taints must be unique by key and effect pair"),
                "",
            ));
        }
    }
    errors
}

/// `ValidateTolerations`.
pub fn tolerations(tolerations: Option<&Vec<Toleration>>, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, toleration) in tolerations.into_iter().flatten().enumerate() {
        let at = index(path, i);
        let key = toleration.key.as_deref().unwrap_or_default();
        let operator = toleration.operator.as_deref().unwrap_or_default();
        let value = toleration.value.as_deref().unwrap_or_default();
        let effect = toleration.effect.as_deref().unwrap_or_default();
        if !key.is_empty() {
            errors.extend(label_name(key, &child(&at, "key")));
        }
        if key.is_empty() && operator != "Exists" {
            errors.push(FieldError::invalid(
                child(&at, "operator"),
                &string(operator),
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        if toleration.toleration_seconds.is_some() && effect != "NoExecute" {
            errors.push(FieldError::invalid(
                child(&at, "effect"),
                &string(effect),
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        match operator {
            "Equal" | "" => {
                let messages = label_value(value);
                if !messages.is_empty() {
                    errors.push(FieldError::invalid(
                        child(&at, "operator"),
                        &string(value),
                        messages.join(";"),
                    ));
                }
            }
            "Exists" if !value.is_empty() => errors.push(FieldError::invalid(
                child(&at, "operator"),
                &serde_json::to_value(toleration).unwrap_or(Value::Null),
                "value must be empty when `operator` is 'Exists'",
            )),
            "Exists" => {}
            other => errors.push(FieldError::not_supported(
                child(&at, "operator"),
                &string(other),
                &["Equal", "Exists"],
            )),
        }
        errors.extend(taint_effect(Some(effect), true, &child(&at, "effect")));
    }
    errors
}

// ---------------------------------------------------------------------------------------
// Affinity

pub(super) const NODE_SELECTOR_TERMS_REQUIRED: &str = "must have at least one node selector term";
pub(super) const WEIGHT_RANGE: &str = "must be in the range 1-100";

/// `ValidateNodeSelector` (required node affinity, a PV's node affinity).
pub(super) fn node_selector(selector: &NodeSelector, path: &str) -> Vec<FieldError> {
    let terms_path = child(path, "nodeSelectorTerms");
    if selector.node_selector_terms.is_empty() {
        return vec![FieldError::required(
            terms_path,
            NODE_SELECTOR_TERMS_REQUIRED,
        )];
    }
    selector
        .node_selector_terms
        .iter()
        .enumerate()
        .flat_map(|(i, term)| node_selector_term(term, &index(&terms_path, i)))
        .collect()
}

/// `ValidateNodeSelectorTerm`.
pub(super) fn node_selector_term(term: &NodeSelectorTerm, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let expressions = child(path, "matchExpressions");
    for (j, requirement) in term.match_expressions.iter().flatten().enumerate() {
        errors.extend(node_selector_requirement(
            requirement,
            &index(&expressions, j),
        ));
    }
    let fields = child(path, "matchFields");
    for (j, requirement) in term.match_fields.iter().flatten().enumerate() {
        errors.extend(node_field_selector_requirement(
            requirement,
            &index(&fields, j),
        ));
    }
    errors
}

/// `ValidateNodeSelectorRequirement`. Like upstream, a `Gt`/`Lt` value that is not an
/// integer is not an error here: such a term matches no node.
pub(super) fn node_selector_requirement(
    requirement: &NodeSelectorRequirement,
    path: &str,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let values = requirement.values.as_deref().unwrap_or_default();
    let values_path = child(path, "values");
    match requirement.operator.as_str() {
        "In" | "NotIn" if values.is_empty() => errors.push(FieldError::required(
            &values_path,
            "must be specified when `operator` is 'In' or 'NotIn'",
        )),
        "Exists" | "DoesNotExist" if !values.is_empty() => errors.push(FieldError::forbidden(
            &values_path,
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )),
        "Gt" | "Lt" if values.len() != 1 => errors.push(FieldError::required(
            &values_path,
            "must be specified single value when `operator` is 'Lt' or 'Gt'",
        )),
        "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
        other => errors.push(FieldError::invalid(
            child(path, "operator"),
            &string(other),
            "not a valid selector operator",
        )),
    }
    errors.extend(label_name(&requirement.key, &child(path, "key")));
    errors
}

/// `ValidateNodeFieldSelectorRequirement`: only `metadata.name`, with `In`/`NotIn` and one
/// value.
pub(super) fn node_field_selector_requirement(
    requirement: &NodeSelectorRequirement,
    path: &str,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let values = requirement.values.as_deref().unwrap_or_default();
    match requirement.operator.as_str() {
        "In" | "NotIn" if values.len() != 1 => errors.push(FieldError::required(
            child(path, "values"),
            "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
        )),
        "In" | "NotIn" => {}
        other => errors.push(FieldError::invalid(
            child(path, "operator"),
            &string(other),
            "not a valid selector operator",
        )),
    }
    if requirement.key != "metadata.name" {
        errors.push(FieldError::invalid(
            child(path, "key"),
            &string(&requirement.key),
            "not a valid field selector key",
        ));
    } else {
        for (i, value) in values.iter().enumerate() {
            errors.extend(invalid_each(
                &index(&child(path, "values"), i),
                value,
                dns1123_subdomain(value),
            ));
        }
    }
    errors
}

/// `validatePodAffinityTerm`.
pub(super) fn pod_affinity_term(term: &PodAffinityTerm, path: &str) -> Vec<FieldError> {
    let mut errors = label_selector(term.label_selector.as_ref(), &child(path, "labelSelector"));
    errors.extend(label_selector(
        term.namespace_selector.as_ref(),
        &child(path, "namespaceSelector"),
    ));
    for namespace in term.namespaces.iter().flatten() {
        errors.extend(invalid_each(
            &child(path, "namespace"),
            namespace,
            dns1123_label(namespace),
        ));
    }
    errors.extend(match_label_keys(
        term.match_label_keys.as_deref(),
        term.label_selector.as_ref(),
        "matchLabelKeys",
        &child(path, "matchLabelKeys"),
    ));
    errors.extend(match_label_keys(
        term.mismatch_label_keys.as_deref(),
        term.label_selector.as_ref(),
        "mismatchLabelKeys",
        &child(path, "mismatchLabelKeys"),
    ));
    let topology_key = child(path, "topologyKey");
    if term.topology_key.is_empty() {
        errors.push(FieldError::required(topology_key, "can not be empty"));
    } else {
        errors.extend(label_name(&term.topology_key, &topology_key));
    }
    errors
}

/// The rules shared by `matchLabelKeys` (and `mismatchLabelKeys`) of affinity terms and
/// spread constraints: each a label key, not already a key of the label selector, and
/// only with a selector. `field` names the list in the message.
///
/// Since Kubernetes 1.33 the API server merges each such key into the pod's own
/// `labelSelector` on create, as a `key In [value]` expression, so a pod read back from a
/// cluster (`kubectl get -o yaml`) carries both; that merged form is not a conflict.
pub(super) fn match_label_keys(
    keys: Option<&[String]>,
    selector: Option<&LabelSelector>,
    field: &str,
    path: &str,
) -> Vec<FieldError> {
    let keys = keys.unwrap_or_default();
    if keys.is_empty() {
        return Vec::new();
    }
    let Some(selector) = selector else {
        return vec![FieldError::forbidden(
            path,
            "must not be specified when labelSelector is not set",
        )];
    };
    let merged = |e: &&LabelSelectorRequirement| {
        e.operator == "In" && e.values.as_ref().is_some_and(|v| v.len() == 1)
    };
    let selector_keys: BTreeSet<&str> = selector
        .match_labels
        .iter()
        .flatten()
        .map(|(k, _)| k.as_str())
        .chain(
            selector
                .match_expressions
                .iter()
                .flatten()
                .filter(|e| !merged(e))
                .map(|e| e.key.as_str()),
        )
        .collect();
    let mut errors = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let at = index(path, i);
        errors.extend(label_name(k, &at));
        if selector_keys.contains(k.as_str()) {
            errors.push(FieldError::invalid(
                at,
                &string(k),
                format!("exists in both {field} and labelSelector"),
            ));
        }
    }
    errors
}

/// `validateAffinity`: node affinity, pod affinity and anti-affinity.
pub(super) fn affinity(affinity: Option<&Affinity>, path: &str) -> Vec<FieldError> {
    let Some(affinity) = affinity else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    if let Some(node) = &affinity.node_affinity {
        let at = child(path, "nodeAffinity");
        if let Some(required) = &node.required_during_scheduling_ignored_during_execution {
            errors.extend(node_selector(
                required,
                &child(&at, "requiredDuringSchedulingIgnoredDuringExecution"),
            ));
        }
        let preferred = child(&at, "preferredDuringSchedulingIgnoredDuringExecution");
        for (i, term) in node
            .preferred_during_scheduling_ignored_during_execution
            .iter()
            .flatten()
            .enumerate()
        {
            let term_path = index(&preferred, i);
            if !(1..=100).contains(&term.weight) {
                errors.push(FieldError::invalid(
                    child(&term_path, "weight"),
                    &Value::from(term.weight),
                    WEIGHT_RANGE,
                ));
            }
            errors.extend(node_selector_term(
                &term.preference,
                &child(&term_path, "preference"),
            ));
        }
    }
    let pod_terms = [
        (
            "podAffinity",
            affinity.pod_affinity.as_ref().map(|a| {
                (
                    &a.required_during_scheduling_ignored_during_execution,
                    &a.preferred_during_scheduling_ignored_during_execution,
                )
            }),
        ),
        (
            "podAntiAffinity",
            affinity.pod_anti_affinity.as_ref().map(|a| {
                (
                    &a.required_during_scheduling_ignored_during_execution,
                    &a.preferred_during_scheduling_ignored_during_execution,
                )
            }),
        ),
    ];
    for (field, terms) in pod_terms {
        let Some((required, preferred)) = terms else {
            continue;
        };
        let at = child(path, field);
        let required_path = child(&at, "requiredDuringSchedulingIgnoredDuringExecution");
        for (i, term) in required.iter().flatten().enumerate() {
            errors.extend(pod_affinity_term(term, &index(&required_path, i)));
        }
        let preferred_path = child(&at, "preferredDuringSchedulingIgnoredDuringExecution");
        for (i, term) in preferred.iter().flatten().enumerate() {
            let term_path = index(&preferred_path, i);
            if !(1..=100).contains(&term.weight) {
                errors.push(FieldError::invalid(
                    child(&term_path, "weight"),
                    &Value::from(term.weight),
                    WEIGHT_RANGE,
                ));
            }
            errors.extend(pod_affinity_term(
                &term.pod_affinity_term,
                &child(&term_path, "podAffinityTerm"),
            ));
        }
    }
    errors
}

// ---------------------------------------------------------------------------------------
// Topology spread constraints

pub(super) const WHEN_UNSATISFIABLE: [&str; 2] = ["DoNotSchedule", "ScheduleAnyway"];
pub(super) const INCLUSION_POLICIES: [&str; 2] = ["Honor", "Ignore"];

/// `validateTopologySpreadConstraints`.
pub(super) fn topology_spread_constraints(
    constraints: Option<&Vec<TopologySpreadConstraint>>,
    path: &str,
) -> Vec<FieldError> {
    let constraints = constraints.map(Vec::as_slice).unwrap_or_default();
    let mut errors = Vec::new();
    for (i, constraint) in constraints.iter().enumerate() {
        let at = index(path, i);
        if constraint.max_skew <= 0 {
            errors.push(FieldError::invalid(
                child(&at, "maxSkew"),
                &Value::from(constraint.max_skew),
                NOT_POSITIVE,
            ));
        }
        if constraint.topology_key.is_empty() {
            errors.push(FieldError::required(
                child(&at, "topologyKey"),
                "can not be empty",
            ));
        } else {
            errors.extend(label_name(
                &constraint.topology_key,
                &child(&at, "topologyKey"),
            ));
        }
        let action = constraint.when_unsatisfiable.as_str();
        if !WHEN_UNSATISFIABLE.contains(&action) {
            errors.push(FieldError::not_supported(
                child(&at, "whenUnsatisfiable"),
                &string(action),
                &WHEN_UNSATISFIABLE,
            ));
        }
        let repeated = constraints[i + 1..].iter().any(|later| {
            later.topology_key == constraint.topology_key
                && later.when_unsatisfiable == constraint.when_unsatisfiable
        });
        if repeated {
            errors.push(FieldError::duplicate(
                child(&at, "{topologyKey, whenUnsatisfiable}"),
                &string(&format!("{{{}, {}}}", constraint.topology_key, action)),
                "",
            ));
        }
        if let Some(min_domains) = constraint.min_domains {
            let min_path = child(&at, "minDomains");
            if min_domains <= 0 {
                errors.push(FieldError::invalid(
                    &min_path,
                    &Value::from(min_domains),
                    NOT_POSITIVE,
                ));
            }
            if action != "DoNotSchedule" {
                errors.push(FieldError::invalid(
                    &min_path,
                    &Value::from(min_domains),
                    format!(
                        "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"
                    ),
                ));
            }
        }
        for (field, policy) in [
            ("nodeAffinityPolicy", &constraint.node_affinity_policy),
            ("nodeTaintsPolicy", &constraint.node_taints_policy),
        ] {
            if let Some(policy) = policy.as_deref()
                && !INCLUSION_POLICIES.contains(&policy)
            {
                errors.push(FieldError::not_supported(
                    child(&at, field),
                    &string(policy),
                    &INCLUSION_POLICIES,
                ));
            }
        }
        errors.extend(match_label_keys(
            constraint.match_label_keys.as_deref(),
            constraint.label_selector.as_ref(),
            "matchLabelKeys",
            &child(&at, "matchLabelKeys"),
        ));
        errors.extend(label_selector(
            constraint.label_selector.as_ref(),
            &child(&at, "labelSelector"),
        ));
    }
    errors
}
