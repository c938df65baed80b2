//! The API server's validation of the objects `berth simulate` reads, for the fields the
//! scheduler reads.
//!
//! A live cluster never holds a pod with `cpu: "-5"`, a label key `a/b/c` or a toleration
//! with `operator: Foo`: the API server refuses them on create. The simulator must refuse
//! them too, or it schedules input no cluster could hold (a negative request makes room on
//! a node; a 65,000-character name breaks the report). This module mirrors
//! `pkg/apis/core/validation` (and apimachinery's `ValidateObjectMeta`,
//! `ValidateLabelSelector`, `IsQualifiedName`, ...) for what scheduling depends on: names,
//! namespaces, labels and annotations, resource names and quantities, taints and
//! tolerations, node and pod affinity, topology spread constraints, container ports,
//! scheduling gates, workload selectors and templates, volume claims and volumes. Fields
//! the scheduler never looks at (container images, probes, env, ...) are left alone.
//!
//! Each error reads as the API server words it (`spec.tolerations[0].operator:
//! Unsupported value: "Foo": supported values: "Equal", "Exists"`), with the path from the
//! object root; [`check`] turns the first one into an [`InputError`] that also names the
//! file and document (and the `items[i].` of a List). The rules run after the defaults the
//! API server applies before validating (`requests` copied from `limits`, default
//! tolerations), as they do upstream.
//!
//! Workload kinds that carry a pod template reuse [`object_meta`] and
//! [`pod_template_spec`] with their own path prefix (`spec.template`, or
//! `spec.jobTemplate.spec.template`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    Affinity, Container, ContainerPort, Namespace, Node, NodeSelector, NodeSelectorRequirement,
    NodeSelectorTerm, PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimSpec, Pod,
    PodAffinityTerm, PodSpec, PodTemplateSpec, ReplicationController, ResourceRequirements,
    Service, Taint, Toleration, TopologySelectorTerm, TopologySpreadConstraint,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

use super::input::{InputError, Source};
use crate::api::{PodGroup, scheduler_plugins};
use crate::cluster::{is_extended_resource_name, parse_milli_value};
use crate::framework::FieldError;
use crate::schema::CrdValidator;

mod names;
mod placement;
mod resources;
mod workload_api;

pub use names::*;
pub use placement::*;
pub use resources::*;
pub use workload_api::*;

/// `errors`, if any, as an input error at `at` naming every field, as the API server
/// lists them all; `prefix` is the object's path in its document (`items[3].` in a List,
/// else empty).
pub fn check(mut errors: Vec<FieldError>, at: &Source, prefix: &str) -> Result<(), InputError> {
    for error in &mut errors {
        error.path = format!("{prefix}{}", error.path);
    }
    let at = at.clone();
    match errors.len() {
        0 => Ok(()),
        1 => Err(InputError::Field {
            at,
            error: errors.remove(0),
        }),
        _ => Err(InputError::Fields { at, errors }),
    }
}

// ---------------------------------------------------------------------------------------
// Paths

fn child(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

fn key(path: &str, key: &str) -> String {
    format!("{path}[{key}]")
}

fn string(value: &str) -> Value {
    Value::from(value)
}

// ---------------------------------------------------------------------------------------
// Pods

const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];
const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

/// `validateContainerPorts` for what the scheduler reads: the port numbers and protocol.
fn container_ports(ports: Option<&Vec<ContainerPort>>, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, port) in ports.into_iter().flatten().enumerate() {
        let at = index(path, i);
        if port.container_port == 0 {
            errors.push(FieldError::required(child(&at, "containerPort"), ""));
        } else if !(1..=65535).contains(&port.container_port) {
            errors.push(FieldError::invalid(
                child(&at, "containerPort"),
                &Value::from(port.container_port),
                PORT_RANGE,
            ));
        }
        if let Some(host_port) = port.host_port.filter(|p| *p != 0)
            && !(1..=65535).contains(&host_port)
        {
            errors.push(FieldError::invalid(
                child(&at, "hostPort"),
                &Value::from(host_port),
                PORT_RANGE,
            ));
        }
        if let Some(protocol) = port.protocol.as_deref()
            && !PROTOCOLS.contains(&protocol)
        {
            errors.push(FieldError::not_supported(
                child(&at, "protocol"),
                &string(protocol),
                &PROTOCOLS,
            ));
        }
    }
    errors
}

fn container(container: &Container, path: &str) -> Vec<FieldError> {
    let mut errors = resource_requirements(container.resources.as_ref(), &child(path, "resources"));
    errors.extend(container_ports(
        container.ports.as_ref(),
        &child(path, "ports"),
    ));
    errors
}

/// `ValidatePodSpec` for the fields the scheduler reads. `path` is `spec` for a pod,
/// `spec.template.spec` for a workload.
pub fn pod_spec(spec: &PodSpec, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (field, containers) in [
        ("containers", Some(&spec.containers)),
        ("initContainers", spec.init_containers.as_ref()),
    ] {
        let at = child(path, field);
        for (i, c) in containers.into_iter().flatten().enumerate() {
            errors.extend(container(c, &index(&at, i)));
        }
    }
    errors.extend(resource_requirements(
        spec.resources.as_ref(),
        &child(path, "resources"),
    ));
    // Upstream validates the overhead as the limits of a resource requirement.
    let overhead = ResourceRequirements {
        limits: spec.overhead.clone(),
        ..Default::default()
    };
    errors.extend(resource_requirements(
        Some(&overhead),
        &child(path, "overhead"),
    ));
    errors.extend(labels(
        spec.node_selector.as_ref(),
        &child(path, "nodeSelector"),
    ));
    errors.extend(affinity(spec.affinity.as_ref(), &child(path, "affinity")));
    errors.extend(tolerations(
        spec.tolerations.as_ref(),
        &child(path, "tolerations"),
    ));
    errors.extend(topology_spread_constraints(
        spec.topology_spread_constraints.as_ref(),
        &child(path, "topologySpreadConstraints"),
    ));
    let gates = child(path, "schedulingGates");
    let mut seen = BTreeSet::new();
    for (i, gate) in spec.scheduling_gates.iter().flatten().enumerate() {
        let at = index(&gates, i);
        errors.extend(invalid_each(
            &child(&at, "name"),
            &gate.name,
            qualified_name(&gate.name),
        ));
        if !seen.insert(gate.name.as_str()) {
            errors.push(FieldError::duplicate(&at, &string(&gate.name), ""));
        }
    }
    if let Some(group) = &spec.scheduling_group {
        let at = child(&child(path, "schedulingGroup"), "podGroupName");
        match group.pod_group_name.as_deref() {
            // A one-of with a single member so far.
            None => errors.push(FieldError::invalid(
                at,
                &Value::Null,
                "must specify one of: `podGroupName`",
            )),
            Some(name) => errors.extend(invalid_each(&at, name, dns1123_subdomain(name))),
        }
    }
    // Names of other objects the pod refers to: a node, its scheduler (the report's
    // PROFILE column), its PriorityClass.
    for (field, name) in [
        ("nodeName", &spec.node_name),
        ("schedulerName", &spec.scheduler_name),
        ("priorityClassName", &spec.priority_class_name),
    ] {
        if let Some(name) = name.as_deref().filter(|n| !n.is_empty()) {
            errors.extend(invalid_each(
                &child(path, field),
                name,
                dns1123_subdomain(name),
            ));
        }
    }
    errors
}

/// `ValidatePodTemplateSpec`: the template's labels and annotations, and its pod spec.
/// `path` is the template's (`spec.template`).
pub fn pod_template_spec(template: Option<&PodTemplateSpec>, path: &str) -> Vec<FieldError> {
    let Some(template) = template else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    if let Some(meta) = &template.metadata {
        let meta_path = child(path, "metadata");
        errors.extend(labels(meta.labels.as_ref(), &child(&meta_path, "labels")));
        errors.extend(annotations(
            meta.annotations.as_ref(),
            &child(&meta_path, "annotations"),
        ));
    }
    if let Some(spec) = &template.spec {
        errors.extend(pod_spec(spec, &child(path, "spec")));
    }
    errors
}

pub fn pod(pod: &Pod) -> Vec<FieldError> {
    let mut errors = object_meta(&pod.metadata, NameRule::DnsSubdomain, "metadata");
    if let Some(spec) = &pod.spec {
        errors.extend(pod_spec(spec, "spec"));
    }
    errors
}

// ---------------------------------------------------------------------------------------
// Nodes

pub fn node(node: &Node) -> Vec<FieldError> {
    let mut errors = object_meta(&node.metadata, NameRule::DnsSubdomain, "metadata");
    if let Some(spec) = &node.spec {
        errors.extend(taints(spec.taints.as_ref(), "spec.taints"));
    }
    if let Some(status) = &node.status {
        errors.extend(resource_list(status.capacity.as_ref(), "status.capacity"));
        errors.extend(resource_list(
            status.allocatable.as_ref(),
            "status.allocatable",
        ));
    }
    errors
}

/// The longest `spec.drivers[].nodeID` (`csiNodeIDMaxLength`).
const CSI_NODE_ID_MAX_LENGTH: usize = 192;

/// `ValidateCSINode`: each driver named as a CSI driver, once, with a node ID, a
/// non-negative volume limit and distinct, qualified topology keys (whose errors sit on
/// the driver, as upstream reports them).
pub fn csi_node(csi_node: &CSINode) -> Vec<FieldError> {
    let mut errors = object_meta(&csi_node.metadata, NameRule::DnsSubdomain, "metadata");
    let mut names = BTreeSet::new();
    for (i, driver) in csi_node.spec.drivers.iter().enumerate() {
        let path = index("spec.drivers", i);
        errors.extend(csi_driver_name(&driver.name, &child(&path, "name")));
        if !names.insert(driver.name.as_str()) {
            errors.push(FieldError::duplicate(
                child(&path, "name"),
                &string(&driver.name),
                "",
            ));
        }
        if driver.node_id.is_empty() {
            errors.push(FieldError::required(child(&path, "nodeID"), ""));
        } else if driver.node_id.len() > CSI_NODE_ID_MAX_LENGTH {
            errors.push(FieldError::invalid(
                child(&path, "nodeID"),
                &string(&driver.node_id),
                format!("must be {CSI_NODE_ID_MAX_LENGTH} characters or less"),
            ));
        }
        let count = driver.allocatable.as_ref().and_then(|a| a.count);
        if let Some(count) = count.filter(|c| *c < 0) {
            errors.push(FieldError::invalid(
                format!("{path}.allocatable.count"),
                &Value::from(count),
                NEGATIVE,
            ));
        }
        let mut keys = BTreeSet::new();
        for key in driver.topology_keys.iter().flatten() {
            if key.is_empty() {
                errors.push(FieldError::required(path.as_str(), ""));
                continue;
            }
            if !keys.insert(key.as_str()) {
                errors.push(FieldError::duplicate(path.as_str(), &string(key), ""));
            }
            errors.extend(invalid_each(&path, key, qualified_name(key)));
        }
    }
    errors
}

/// `ValidateCSIDriverName`: a DNS subdomain (case aside) of at most 63 characters.
fn csi_driver_name(name: &str, path: &str) -> Vec<FieldError> {
    if name.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let mut errors = Vec::new();
    if name.len() > 63 {
        errors.push(FieldError::too_long(path, 63));
    }
    errors.extend(invalid_each(
        path,
        name,
        dns1123_subdomain(&name.to_lowercase()),
    ));
    errors
}

// ---------------------------------------------------------------------------------------
// PodGroups

/// A PodGroup as the API server validates it with berth's CRD (schema, bounds, unknown
/// fields; [`crate::schema::validate_pod_group`]) plus its metadata, as for any custom
/// resource. `raw` is the document before decoding.
pub fn pod_group_document(raw: &Value) -> Vec<FieldError> {
    crate::schema::validate_pod_group(raw)
}

pub fn pod_group(group: &PodGroup) -> Vec<FieldError> {
    object_meta(&group.metadata, NameRule::DnsSubdomain, "metadata")
}

/// A scheduler-plugins PodGroup (`scheduling.x-k8s.io/v1alpha1`) as the API server
/// validates it with that CRD: its structural schema only (types, unknown fields), which
/// sets no bound on any field (`minMember` may be zero or negative) and requires none,
/// `spec` included. `raw` is the document before decoding.
pub fn scheduler_plugins_pod_group_document(raw: &Value) -> Vec<FieldError> {
    static VALIDATOR: OnceLock<Result<CrdValidator, String>> = OnceLock::new();
    let validator = VALIDATOR.get_or_init(|| {
        CrdValidator::new(&scheduler_plugins::crd()).map_err(|error| error.to_string())
    });
    match validator {
        Ok(validator) => validator.admission_errors(raw),
        Err(error) => vec![FieldError::internal("<schema>", error.clone())],
    }
}

/// A scheduler-plugins PodGroup's metadata, as for any custom resource.
pub fn scheduler_plugins_pod_group(group: &scheduler_plugins::PodGroup) -> Vec<FieldError> {
    object_meta(&group.metadata, NameRule::DnsSubdomain, "metadata")
}

/// A SchedulerProfile document's metadata (admitted); the rest is validated against its
/// CRD later, with the plugin registry.
pub fn profile_document(raw: &Value) -> Vec<FieldError> {
    let meta: ObjectMeta = raw
        .get("metadata")
        .and_then(|meta| serde_json::from_value(meta.clone()).ok())
        .unwrap_or_default();
    object_meta(&meta, NameRule::DnsSubdomain, "metadata")
}

// ---------------------------------------------------------------------------------------
// Volumes

const ACCESS_MODES: [&str; 4] = [
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];

fn access_modes(modes: Option<&Vec<String>>, path: &str, required: &str) -> Vec<FieldError> {
    let modes = modes.map(Vec::as_slice).unwrap_or_default();
    if modes.is_empty() {
        return vec![FieldError::required(path, required)];
    }
    modes
        .iter()
        .filter(|mode| !ACCESS_MODES.contains(&mode.as_str()))
        .map(|mode| FieldError::not_supported(path, &string(mode), &ACCESS_MODES))
        .collect()
}

pub fn persistent_volume_claim(claim: &PersistentVolumeClaim) -> Vec<FieldError> {
    let mut errors = object_meta(&claim.metadata, NameRule::DnsSubdomain, "metadata");
    if let Some(spec) = &claim.spec {
        errors.extend(claim_spec(spec, "spec"));
    }
    errors
}

/// `ValidatePersistentVolumeClaimSpec` for what binding and provisioning read.
fn claim_spec(spec: &PersistentVolumeClaimSpec, path: &str) -> Vec<FieldError> {
    let mut errors = access_modes(
        spec.access_modes.as_ref(),
        &child(path, "accessModes"),
        "at least 1 access mode is required",
    );
    let storage = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"));
    let storage_path = format!("{path}.resources[storage]");
    match storage {
        None if spec.data_source.is_none() && spec.data_source_ref.is_none() => {
            errors.push(FieldError::required(storage_path, ""));
        }
        None => {}
        Some(quantity) => errors.extend(positive_quantity("storage", quantity, &storage_path)),
    }
    errors.extend(label_selector(
        spec.selector.as_ref(),
        &child(path, "selector"),
    ));
    errors.extend(class_name(
        spec.storage_class_name.as_deref(),
        &child(path, "storageClassName"),
    ));
    errors.extend(volume_mode(
        spec.volume_mode.as_deref(),
        &child(path, "volumeMode"),
    ));
    errors
}

/// `ValidateClassName` of a non-empty `storageClassName` ("" asks for no class).
fn class_name(name: Option<&str>, path: &str) -> Vec<FieldError> {
    match name.filter(|n| !n.is_empty()) {
        Some(name) => invalid_each(path, name, dns1123_subdomain(name)),
        None => Vec::new(),
    }
}

fn volume_mode(mode: Option<&str>, path: &str) -> Vec<FieldError> {
    const MODES: [&str; 2] = ["Block", "Filesystem"];
    match mode {
        Some(mode) if !MODES.contains(&mode) => {
            vec![FieldError::not_supported(path, &string(mode), &MODES)]
        }
        _ => Vec::new(),
    }
}

/// The claims a StatefulSet's controller creates from its `volumeClaimTemplates`, which
/// the API server validates as claims: a template without a name, or with a spec no
/// claim may have, would leave every pod of the set uncreated.
fn volume_claim_templates(templates: &[PersistentVolumeClaim]) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, template) in templates.iter().enumerate() {
        let path = index("spec.volumeClaimTemplates", i);
        let metadata = child(&path, "metadata");
        if template.metadata.name.as_deref().is_none_or(str::is_empty) {
            errors.push(FieldError::required(child(&metadata, "name"), ""));
        }
        errors.extend(object_meta(
            &template.metadata,
            NameRule::DnsSubdomain,
            &metadata,
        ));
        match &template.spec {
            Some(spec) => errors.extend(claim_spec(spec, &child(&path, "spec"))),
            None => errors.push(FieldError::required(child(&path, "spec"), "")),
        }
    }
    errors
}

pub fn persistent_volume(volume: &PersistentVolume) -> Vec<FieldError> {
    let mut errors = object_meta(&volume.metadata, NameRule::DnsSubdomain, "metadata");
    let Some(spec) = &volume.spec else {
        return errors;
    };
    errors.extend(access_modes(
        spec.access_modes.as_ref(),
        "spec.accessModes",
        "must specify at least 1 access mode",
    ));
    let capacity = spec.capacity.as_ref().filter(|c| !c.is_empty());
    match capacity {
        None => errors.push(FieldError::required("spec.capacity", "")),
        Some(capacity) => {
            if !capacity.contains_key("storage") || capacity.len() > 1 {
                let names: Vec<&String> = capacity.keys().collect();
                errors.push(FieldError::not_supported(
                    "spec.capacity",
                    &serde_json::to_value(names).unwrap_or(Value::Null),
                    &["storage"],
                ));
            }
            for (name, quantity) in capacity {
                errors.extend(positive_quantity(
                    name,
                    quantity,
                    &key("spec.capacity", name),
                ));
            }
        }
    }
    if let Some(required) = spec
        .node_affinity
        .as_ref()
        .and_then(|a| a.required.as_ref())
    {
        errors.extend(node_selector(required, "spec.nodeAffinity.required"));
    }
    errors.extend(class_name(
        spec.storage_class_name.as_deref(),
        "spec.storageClassName",
    ));
    errors.extend(volume_mode(spec.volume_mode.as_deref(), "spec.volumeMode"));
    errors
}

/// `ValidateStorageClass` for what provisioning and binding read: a provisioner named
/// as a qualified name, the reclaim policy and binding mode enums, and allowedTopologies
/// terms whose requirements have distinct keys and distinct, present values.
pub fn storage_class(class: &StorageClass) -> Vec<FieldError> {
    let mut errors = object_meta(&class.metadata, NameRule::DnsSubdomain, "metadata");
    if class.provisioner.is_empty() {
        errors.push(FieldError::required("provisioner", ""));
    } else {
        let lower = class.provisioner.to_lowercase();
        errors.extend(invalid_each("provisioner", &lower, qualified_name(&lower)));
    }
    const RECLAIM_POLICIES: [&str; 2] = ["Delete", "Retain"];
    if let Some(policy) = class.reclaim_policy.as_deref()
        && !RECLAIM_POLICIES.contains(&policy)
    {
        errors.push(FieldError::not_supported(
            "reclaimPolicy",
            &string(policy),
            &RECLAIM_POLICIES,
        ));
    }
    const MODES: [&str; 2] = ["Immediate", "WaitForFirstConsumer"];
    if let Some(mode) = class.volume_binding_mode.as_deref()
        && !MODES.contains(&mode)
    {
        errors.push(FieldError::not_supported(
            "volumeBindingMode",
            &string(mode),
            &MODES,
        ));
    }
    for (i, term) in class.allowed_topologies.iter().flatten().enumerate() {
        errors.extend(topology_selector_term(term, &index("allowedTopologies", i)));
    }
    errors
}

/// `ValidateTopologySelectorTerm`.
fn topology_selector_term(term: &TopologySelectorTerm, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut keys = BTreeSet::new();
    let requirements = term.match_label_expressions.iter().flatten();
    for (i, requirement) in requirements.enumerate() {
        let path = index(&child(path, "matchLabelExpressions"), i);
        let values_path = child(&path, "values");
        if requirement.values.is_empty() {
            errors.push(FieldError::required(values_path.as_str(), ""));
        }
        let mut values = BTreeSet::new();
        for (j, value) in requirement.values.iter().enumerate() {
            if !values.insert(value.as_str()) {
                errors.push(FieldError::duplicate(
                    index(&values_path, j),
                    &string(value),
                    "",
                ));
            }
        }
        errors.extend(label_name(&requirement.key, &child(&path, "key")));
        if !keys.insert(requirement.key.as_str()) {
            errors.push(FieldError::duplicate(
                child(&path, "key"),
                &string(&requirement.key),
                "",
            ));
        }
    }
    errors
}

// ---------------------------------------------------------------------------------------
// Cluster-wide kinds

pub fn namespace(namespace: &Namespace) -> Vec<FieldError> {
    object_meta(&namespace.metadata, NameRule::DnsLabel, "metadata")
}

/// `HighestUserDefinablePriority`.
const HIGHEST_USER_PRIORITY: i32 = 1_000_000_000;

pub fn priority_class(class: &PriorityClass) -> Vec<FieldError> {
    let mut errors = object_meta(&class.metadata, NameRule::DnsSubdomain, "metadata");
    // Names with the `system-` prefix are reserved (the built-in classes); only user classes
    // are bounded.
    let name = class.metadata.name.as_deref().unwrap_or_default();
    if !name.starts_with("system-") && class.value.unwrap_or(0) > HIGHEST_USER_PRIORITY {
        errors.push(FieldError::forbidden(
            "value",
            format!("maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}"),
        ));
    }
    errors
}

// ---------------------------------------------------------------------------------------
// Workloads

/// `ValidateNonnegativeField` of a count (replicas, parallelism, completions).
fn replicas(replicas: Option<i32>, path: &str) -> Vec<FieldError> {
    match replicas {
        Some(n) if n < 0 => vec![FieldError::invalid(path, &Value::from(n), NEGATIVE)],
        _ => Vec::new(),
    }
}

pub fn pod_disruption_budget(budget: &PodDisruptionBudget) -> Vec<FieldError> {
    let mut errors = object_meta(&budget.metadata, NameRule::DnsSubdomain, "metadata");
    let Some(spec) = &budget.spec else {
        return errors;
    };
    if spec.min_available.is_some() && spec.max_unavailable.is_some() {
        errors.push(FieldError::invalid(
            "spec",
            &serde_json::to_value(spec).unwrap_or(Value::Null),
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for (field, value) in [
        ("spec.minAvailable", &spec.min_available),
        ("spec.maxUnavailable", &spec.max_unavailable),
    ] {
        if let Some(value) = value {
            errors.extend(positive_int_or_percent(value, field));
        }
    }
    errors.extend(label_selector(spec.selector.as_ref(), "spec.selector"));
    errors
}

/// `ValidatePositiveIntOrPercent` and `IsNotMoreThan100Percent`.
fn positive_int_or_percent(value: &IntOrString, path: &str) -> Vec<FieldError> {
    match value {
        IntOrString::Int(n) if *n < 0 => {
            vec![FieldError::invalid(path, &Value::from(*n), NEGATIVE)]
        }
        IntOrString::Int(_) => Vec::new(),
        IntOrString::String(s) => {
            let percent = s
                .strip_suffix('%')
                .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
            match percent {
                None => vec![FieldError::invalid(
                    path,
                    &string(s),
                    regex_error(
                        "a valid percent string must be a numeric string followed by an ending '%'",
                        "[0-9]+%",
                        &["1%", "93%"],
                    ),
                )],
                Some(digits)
                    if digits.len() > 3 || digits.parse::<u32>().is_ok_and(|p| p > 100) =>
                {
                    vec![FieldError::invalid(
                        path,
                        &string(s),
                        "must not be greater than 100%",
                    )]
                }
                Some(_) => Vec::new(),
            }
        }
    }
}

pub fn service(service: &Service) -> Vec<FieldError> {
    let mut errors = object_meta(&service.metadata, NameRule::Dns1035Label, "metadata");
    if let Some(spec) = &service.spec {
        errors.extend(labels(spec.selector.as_ref(), "spec.selector"));
    }
    errors
}

pub fn replication_controller(rc: &ReplicationController) -> Vec<FieldError> {
    let mut errors = object_meta(&rc.metadata, NameRule::DnsSubdomain, "metadata");
    if let Some(spec) = &rc.spec {
        errors.extend(replicas(spec.replicas, "spec.replicas"));
        errors.extend(labels(spec.selector.as_ref(), "spec.selector"));
        errors.extend(pod_template_spec(spec.template.as_ref(), "spec.template"));
    }
    errors
}

pub fn replica_set(rs: &ReplicaSet) -> Vec<FieldError> {
    let mut errors = object_meta(&rs.metadata, NameRule::DnsSubdomain, "metadata");
    let spec = &rs.spec;
    errors.extend(replicas(spec.replicas, "spec.replicas"));
    errors.extend(label_selector(Some(&spec.selector), "spec.selector"));
    errors.extend(pod_template_spec(spec.template.as_ref(), "spec.template"));
    errors
}

pub fn stateful_set(ss: &StatefulSet) -> Vec<FieldError> {
    let mut errors = object_meta(&ss.metadata, NameRule::DnsLabel, "metadata");
    let spec = &ss.spec;
    errors.extend(replicas(spec.replicas, "spec.replicas"));
    errors.extend(label_selector(Some(&spec.selector), "spec.selector"));
    errors.extend(pod_template_spec(Some(&spec.template), "spec.template"));
    errors.extend(volume_claim_templates(
        spec.volume_claim_templates.as_deref().unwrap_or_default(),
    ));
    errors
}

pub fn deployment(deployment: &Deployment) -> Vec<FieldError> {
    let mut errors = object_meta(&deployment.metadata, NameRule::DnsSubdomain, "metadata");
    let spec = &deployment.spec;
    errors.extend(replicas(spec.replicas, "spec.replicas"));
    errors.extend(label_selector(Some(&spec.selector), "spec.selector"));
    errors.extend(pod_template_spec(Some(&spec.template), "spec.template"));
    errors
}

pub fn daemon_set(daemon_set: &DaemonSet) -> Vec<FieldError> {
    let mut errors = object_meta(&daemon_set.metadata, NameRule::DnsSubdomain, "metadata");
    let spec = &daemon_set.spec;
    errors.extend(label_selector(Some(&spec.selector), "spec.selector"));
    errors.extend(pod_template_spec(Some(&spec.template), "spec.template"));
    errors
}

pub fn job(job: &Job) -> Vec<FieldError> {
    let mut errors = object_meta(&job.metadata, NameRule::DnsSubdomain, "metadata");
    if let Some(spec) = &job.spec {
        errors.extend(replicas(spec.parallelism, "spec.parallelism"));
        errors.extend(replicas(spec.completions, "spec.completions"));
        errors.extend(label_selector(spec.selector.as_ref(), "spec.selector"));
        errors.extend(pod_template_spec(Some(&spec.template), "spec.template"));
    }
    errors
}

#[cfg(test)]
mod tests;
