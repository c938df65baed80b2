//! The Workload API (`scheduling.k8s.io/v1beta1`): PodGroups and Workloads as the API
//! server validates them on create (`ValidatePodGroup`, `ValidateWorkload` and the
//! declarative rules of the v1beta1 types), with the feature gates of a 1.37 cluster
//! serving the API: GenericWorkload on, its alpha companions (CompositePodGroup,
//! TopologyAwareWorkloadScheduling, PodGroupPreemptionPolicy) off, so their fields are
//! refused. berth's pod-group cycle implements none of them, so refusing them also keeps
//! the simulation from placing a group as if they were not there.

use k8s_openapi::api::scheduling::v1beta1::{
    PodGroup, PodGroupSchedulingPolicy, PodGroupTemplate, Workload, WorkloadReference,
};

use super::*;
use crate::cluster::LegacyWorkload;

/// `WorkloadMaxPodGroupTemplates`.
const MAX_POD_GROUP_TEMPLATES: u64 = 8;
/// `+k8s:maximum` of the priorities (`HighestUserDefinablePriority`).
const MAX_PRIORITY: i32 = 1_000_000_000;

/// A field of an alpha gate that is off: `Forbidden`, as the declarative
/// `ifDisabled(...)=+k8s:forbidden` words it, with the gate named.
fn gated(path: &str, gate: &str) -> FieldError {
    FieldError::forbidden(
        path,
        format!("requires the {gate} feature gate (alpha, off in Kubernetes 1.37)"),
    )
}

/// A union with no member set, or more than one: `must specify one of` / `exactly one
/// of` the members, each in backquotes.
fn union(path: &str, members: &[&str], set: &[bool]) -> Vec<FieldError> {
    let all: Vec<String> = members.iter().map(|m| format!("`{m}`")).collect();
    let given: Vec<&str> = members
        .iter()
        .zip(set)
        .filter(|(_, set)| **set)
        .map(|(m, _)| *m)
        .collect();
    match given.len() {
        0 => vec![FieldError::invalid(
            path,
            &string(""),
            format!("must specify one of: {}", all.join(", ")),
        )],
        1 => Vec::new(),
        _ => vec![FieldError::invalid(
            path,
            &string(&format!("{{{}}}", given.join(", "))),
            format!("must specify exactly one of: {}", all.join(", ")),
        )],
    }
}

/// `PodGroupSchedulingPolicy`: exactly one of `basic` and `gang`; a gang's `minCount`
/// set (a zero is missing: the field is not a pointer) and at least 1.
fn scheduling_policy(policy: &PodGroupSchedulingPolicy, path: &str) -> Vec<FieldError> {
    let mut errors = union(
        path,
        &["basic", "gang"],
        &[policy.basic.is_some(), policy.gang.is_some()],
    );
    if let Some(gang) = &policy.gang {
        let at = child(&child(path, "gang"), "minCount");
        match gang.min_count {
            0 => errors.push(FieldError::required(at, "")),
            n if n < 1 => errors.push(FieldError::invalid(
                at,
                &Value::from(n),
                "must be greater than or equal to 1",
            )),
            _ => {}
        }
    }
    errors
}

/// A `priorityClassName` (a DNS subdomain) and `priority` (at most 1000000000).
fn priority(class: Option<&str>, priority: Option<i32>, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if let Some(name) = class.filter(|n| !n.is_empty()) {
        let at = child(path, "priorityClassName");
        errors.extend(invalid_each(&at, name, dns1123_subdomain(name)));
    }
    if let Some(value) = priority.filter(|p| *p > MAX_PRIORITY) {
        errors.push(FieldError::invalid(
            child(path, "priority"),
            &Value::from(value),
            format!("must be less than or equal to {MAX_PRIORITY}"),
        ));
    }
    errors
}

/// A name that must be set and be a DNS label (`+k8s:required`, `k8s-short-name`).
fn short_name(name: &str, path: &str) -> Vec<FieldError> {
    if name.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    invalid_each(path, name, dns1123_label(name))
}

/// A name that must be set and be a DNS subdomain (`+k8s:required`, `k8s-long-name`).
fn long_name(name: &str, path: &str) -> Vec<FieldError> {
    if name.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    invalid_each(path, name, dns1123_subdomain(name))
}

fn workload_ref(reference: &WorkloadReference, path: &str) -> Vec<FieldError> {
    let mut errors = long_name(&reference.workload_name, &child(path, "workloadName"));
    errors.extend(short_name(
        &reference.template_name,
        &child(path, "templateName"),
    ));
    errors
}

/// A `scheduling.k8s.io/v1beta1` PodGroup, after the API server's defaults.
pub fn scheduling_pod_group(group: &PodGroup) -> Vec<FieldError> {
    let mut errors = object_meta(&group.metadata, NameRule::DnsSubdomain, "metadata");
    let spec = &group.spec;
    errors.extend(scheduling_policy(
        &spec.scheduling_policy,
        "spec.schedulingPolicy",
    ));
    if let Some(reference) = &spec.workload_ref {
        errors.extend(workload_ref(reference, "spec.workloadRef"));
    }
    errors.extend(priority(
        spec.priority_class_name.as_deref(),
        spec.priority,
        "spec",
    ));
    if spec.parent_composite_pod_group_name.is_some() {
        errors.push(gated(
            "spec.parentCompositePodGroupName",
            "CompositePodGroup",
        ));
    }
    if spec.scheduling_constraints.is_some() {
        errors.push(gated(
            "spec.schedulingConstraints",
            "TopologyAwareWorkloadScheduling",
        ));
    }
    if spec.preemption_policy.is_some() {
        errors.push(gated("spec.preemptionPolicy", "PodGroupPreemptionPolicy"));
    }
    errors
}

fn pod_group_template(template: &PodGroupTemplate, path: &str) -> Vec<FieldError> {
    let mut errors = short_name(&template.name, &child(path, "name"));
    errors.extend(scheduling_policy(
        &template.scheduling_policy,
        &child(path, "schedulingPolicy"),
    ));
    errors.extend(priority(
        template.priority_class_name.as_deref(),
        template.priority,
        path,
    ));
    if template.scheduling_constraints.is_some() {
        errors.push(gated(
            &child(path, "schedulingConstraints"),
            "TopologyAwareWorkloadScheduling",
        ));
    }
    if template.preemption_policy.is_some() {
        errors.push(gated(
            &child(path, "preemptionPolicy"),
            "PodGroupPreemptionPolicy",
        ));
    }
    errors
}

/// A `scheduling.k8s.io/v1beta1` Workload: exactly one of `podGroupTemplates` and
/// `compositePodGroupTemplates` (the latter gated), at most 8 templates of distinct
/// names, each valid, all of one priority.
pub fn workload(workload: &Workload) -> Vec<FieldError> {
    let mut errors = object_meta(&workload.metadata, NameRule::DnsSubdomain, "metadata");
    let spec = &workload.spec;
    let templates = spec.pod_group_templates.as_deref().unwrap_or_default();
    let composite = spec
        .composite_pod_group_templates
        .as_ref()
        .is_some_and(|t| !t.is_empty());
    errors.extend(union(
        "spec",
        &["podGroupTemplates", "compositePodGroupTemplates"],
        &[!templates.is_empty(), composite],
    ));
    if composite {
        errors.push(gated(
            "spec.compositePodGroupTemplates",
            "CompositePodGroup",
        ));
    }
    if let Some(reference) = &spec.controller_ref {
        if reference.kind.is_empty() {
            errors.push(FieldError::required("spec.controllerRef.kind", ""));
        }
        if reference.name.is_empty() {
            errors.push(FieldError::required("spec.controllerRef.name", ""));
        }
    }
    if templates.len() as u64 > MAX_POD_GROUP_TEMPLATES {
        errors.push(FieldError::too_many(
            "spec.podGroupTemplates",
            templates.len(),
            MAX_POD_GROUP_TEMPLATES,
        ));
        return errors;
    }
    let mut names = BTreeSet::new();
    for (i, template) in templates.iter().enumerate() {
        let path = index("spec.podGroupTemplates", i);
        errors.extend(pod_group_template(template, &path));
        if !names.insert(template.name.as_str()) {
            errors.push(FieldError::duplicate(path, &string(&template.name), ""));
        }
    }
    let mut priorities = templates.iter().map(|t| {
        (
            t.priority_class_name.as_deref().unwrap_or_default(),
            t.priority,
        )
    });
    if let Some(first) = priorities.next()
        && priorities.any(|other| other != first)
    {
        errors.push(FieldError::invalid(
            "spec",
            &Value::Null,
            "detected multiple priority configurations",
        ));
    }
    errors
}

/// `WorkloadMaxPodGroups` of Kubernetes 1.35.
const MAX_LEGACY_POD_GROUPS: u64 = 8;

/// Kubernetes 1.35's `scheduling.k8s.io/v1alpha1` Workload (`ValidateWorkload` of 1.35):
/// one to eight pod groups with unique DNS-label names, each with exactly one of `basic`
/// and `gang`, a gang's `minCount` positive; a `controllerRef` names a kind and a name.
pub fn legacy_workload(workload: &LegacyWorkload) -> Vec<FieldError> {
    let mut errors = object_meta(&workload.metadata, NameRule::DnsSubdomain, "metadata");
    let spec = &workload.spec;
    if let Some(reference) = &spec.controller_ref {
        for field in ["kind", "name"] {
            if reference[field].as_str().is_none_or(str::is_empty) {
                errors.push(FieldError::required(
                    format!("spec.controllerRef.{field}"),
                    "",
                ));
            }
        }
    }
    let groups = &spec.pod_groups;
    if groups.is_empty() {
        errors.push(FieldError::required(
            "spec.podGroups",
            "must have at least one item",
        ));
        return errors;
    }
    if groups.len() as u64 > MAX_LEGACY_POD_GROUPS {
        errors.push(FieldError::too_many(
            "spec.podGroups",
            groups.len(),
            MAX_LEGACY_POD_GROUPS,
        ));
        return errors;
    }
    let mut names = BTreeSet::new();
    for (i, group) in groups.iter().enumerate() {
        let path = index("spec.podGroups", i);
        let name_path = child(&path, "name");
        errors.extend(invalid_each(
            &name_path,
            &group.name,
            dns1123_label(&group.name),
        ));
        if !names.insert(group.name.as_str()) {
            errors.push(FieldError::duplicate(name_path, &string(&group.name), ""));
        }
        let policy_path = child(&path, "policy");
        let policy = &group.policy;
        match (&policy.basic, &policy.gang) {
            (None, None) => errors.push(FieldError::required(
                policy_path,
                "exactly one of `basic`, `gang` is required",
            )),
            (Some(_), Some(_)) => errors.push(FieldError::invalid(
                policy_path,
                &string("{`basic`, `gang`}"),
                "exactly one of `basic`, `gang` is required, but multiple fields are set",
            )),
            (None, Some(gang)) if gang.min_count <= 0 => errors.push(FieldError::invalid(
                child(&child(&policy_path, "gang"), "minCount"),
                &Value::from(gang.min_count),
                "must be greater than 0",
            )),
            _ => {}
        }
    }
    errors
}
