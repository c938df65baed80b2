//! The pods the workload controllers would create: Deployments, ReplicaSets,
//! StatefulSets, Jobs and DaemonSets of the input become ordinary Pods (and the
//! ReplicaSets and PVCs their controllers create), so a `kubectl get -o yaml` snapshot
//! simulates as the cluster would run it.
//!
//! Each controller is matched as a reader of the cluster would see it act once:
//!
//! - **Deployment** (upstream `deployment` controller): a Deployment that controls no
//!   ReplicaSet of the input gets one, `<deployment>-<pod-template-hash>`, with the
//!   Deployment's replicas; a Deployment whose ReplicaSets are in the input is left to
//!   them (their `spec.replicas` already say how many pods it wants).
//! - **ReplicaSet** (`replicaset` controller): `spec.replicas` (default 1) active pods
//!   named `<replicaset>-<5 characters>`; active pods it already controls count.
//! - **StatefulSet** (`statefulset` controller): pods `<set>-<ordinal>` for the ordinals
//!   from `spec.ordinals.start`, with hostname and subdomain, the identity labels and a
//!   PVC `<template>-<set>-<ordinal>` per volumeClaimTemplate; all ordinals are created at
//!   once, as if each earlier one became Ready (`OrderedReady` waits for that).
//! - **Job** (`job` controller, `manageJob`): `parallelism` (default 1) active pods,
//!   capped by `completions` minus the succeeded ones; none for a suspended or finished
//!   Job. Indexed Jobs create the lowest missing completion indexes.
//! - **DaemonSet** (`daemon` controller): one pod for every node the controller's
//!   `NodeShouldRunDaemonPod` predicate accepts (the template's nodeName, nodeSelector
//!   and required node affinity; NoSchedule and NoExecute taints against the template's
//!   tolerations plus the DaemonSet tolerations), pinned to that node with upstream's
//!   `matchFields: metadata.name` node affinity and then scheduled by the scheduler.
//!
//! Pods are counted as their controller counts them: a pod belongs to a workload when
//! its controller ownerReference names the workload's kind and its uid or name;
//! finished pods (`Succeeded`/`Failed`) are not active. Names are deterministic: the
//! 5-character suffixes come from a hash of the pod's key, in the API server's
//! `generateName` alphabet. The `pod-template-hash` and `controller-revision-hash`
//! values are hashes of the template in upstream's alphabet, not upstream's values
//! (which hash Go's in-memory representation).

use std::collections::{BTreeMap, HashSet};
use std::ops::Range;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    Affinity, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, PodSpec, PodTemplateSpec,
    Toleration, Volume,
};
use k8s_openapi::api::scheduling::v1beta1::{PodGroup as SchedulingPodGroup, Workload};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::framework::FieldError;
use crate::helpers::node_affinity::RequiredNodeAffinity;
use crate::helpers::taints::{find_untolerated_taint, node_taints};

use super::input::{ClusterInput, DEFAULT_NAMESPACE, is_finished};

mod daemon_set;
mod job;
mod job_workload;
mod stateful_set_storage;

use daemon_set::*;
use job::*;
pub use job_workload::GROUP_TEMPLATE_NAME_ANNOTATION;
use job_workload::{JobWorkloads, SchedulingObjects, apply_patches, join_group};
use stateful_set_storage::*;

/// Pods one workload may ask for: more is refused rather than built in memory.
pub const MAX_PODS_PER_WORKLOAD: i64 = 10_000;
/// Pods all workloads of the input may ask for together.
pub const MAX_CREATED_PODS: usize = 100_000;

/// The label the Deployment controller puts on its ReplicaSets and their pods.
pub const POD_TEMPLATE_HASH_LABEL: &str = "pod-template-hash";
/// The label of StatefulSet and DaemonSet pods naming their ControllerRevision.
pub const CONTROLLER_REVISION_HASH_LABEL: &str = "controller-revision-hash";
pub const STATEFUL_SET_POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";
pub const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";
pub const LEGACY_JOB_NAME_LABEL: &str = "job-name";
pub const CONTROLLER_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";
pub const LEGACY_CONTROLLER_UID_LABEL: &str = "controller-uid";
/// Annotation (and, since Kubernetes 1.28, label) of an Indexed Job's pods.
pub const JOB_COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
/// The DaemonSet pods' template generation label.
pub const DAEMON_SET_TEMPLATE_GENERATION_LABEL: &str = "pod-template-generation";

/// The field key of a node's name in node selector `matchFields`.
const NODE_NAME_FIELD: &str = "metadata.name";

/// A workload of the input, to say which one an error or a created object comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WorkloadRef {
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for WorkloadRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
    }
}

/// A workload whose spec the controller would not act on (or berth will not expand).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadError {
    pub workload: WorkloadRef,
    pub error: Box<FieldError>,
}

/// What the controllers create, each object with the workload it comes from.
#[derive(Debug, Clone, Default)]
pub struct Expansion {
    /// ReplicaSets created for Deployments (their pods are in `pods`).
    pub replica_sets: Vec<(WorkloadRef, ReplicaSet)>,
    pub pods: Vec<(WorkloadRef, Pod)>,
    pub claims: Vec<(WorkloadRef, PersistentVolumeClaim)>,
    /// The Workload API objects the Job controller creates (WorkloadWithJob).
    pub workloads: Vec<(WorkloadRef, Workload)>,
    pub scheduling_pod_groups: Vec<(WorkloadRef, SchedulingPodGroup)>,
}

/// The controllers' feature gates that change what they create. All default to off, as
/// upstream's alpha gates do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ControllerOptions {
    /// WorkloadWithJob (alpha since 1.36): the Job controller gives Jobs a Workload and a
    /// PodGroup and puts their pods in it (see `controllers/job_workload.rs`).
    pub workload_with_job: bool,
}

/// The objects the controllers of `input`'s workloads would create. Workloads without a
/// uid get a deterministic one first (the API server sets one on create), since the Job
/// selector and the pods' ownerReferences carry it.
pub fn expand(
    input: &mut ClusterInput,
    options: &ControllerOptions,
) -> Result<Expansion, WorkloadError> {
    assign_uids(input);
    let mut expander = Expander::new(input);
    if options.workload_with_job {
        expander.job_workloads = Some(JobWorkloads::default());
    }
    let mut expansion = Expansion::default();
    for deployment in input.deployments.iter().filter(|d| !deleting(&d.metadata)) {
        if let Some(replica_set) = expander.deployment(deployment, &input.replica_sets)? {
            expansion.replica_sets.push((
                workload_ref("Deployment", &deployment.metadata),
                replica_set,
            ));
        }
    }
    let created_sets = expansion.replica_sets.iter().map(|(_, rs)| rs);
    let replica_sets = input.replica_sets.iter().chain(created_sets);
    for replica_set in replica_sets.filter(|rs| !deleting(&rs.metadata)) {
        expander.replica_set(replica_set, &input.pods)?;
    }
    for set in input
        .stateful_sets
        .iter()
        .filter(|s| !deleting(&s.metadata))
    {
        expander.stateful_set(set, &input.pvcs)?;
    }
    let existing = SchedulingObjects {
        workloads: &input.scheduling_workloads,
        pod_groups: &input.scheduling_pod_groups,
    };
    for job in input.jobs.iter().filter(|j| !deleting(&j.metadata)) {
        expander.job(job, &input.pods, &existing)?;
    }
    for daemon_set in input.daemon_sets.iter().filter(|d| !deleting(&d.metadata)) {
        expander.daemon_set(daemon_set, &input.pods, &input.nodes)?;
    }
    expansion.pods = expander.pods;
    expansion.claims = expander.claims;
    if let Some(created) = expander.job_workloads {
        apply_patches(&created.patches, input);
        expansion.workloads = created.workloads;
        expansion.scheduling_pod_groups = created.pod_groups;
    }
    Ok(expansion)
}

/// A workload being deleted creates nothing (its controller skips it).
fn deleting(meta: &ObjectMeta) -> bool {
    meta.deletion_timestamp.is_some()
}

fn assign_uids(input: &mut ClusterInput) {
    let metas = input
        .deployments
        .iter_mut()
        .map(|o| ("Deployment", &mut o.metadata))
        .chain(
            input
                .replica_sets
                .iter_mut()
                .map(|o| ("ReplicaSet", &mut o.metadata)),
        )
        .chain(
            input
                .stateful_sets
                .iter_mut()
                .map(|o| ("StatefulSet", &mut o.metadata)),
        )
        .chain(input.jobs.iter_mut().map(|o| ("Job", &mut o.metadata)))
        .chain(
            input
                .daemon_sets
                .iter_mut()
                .map(|o| ("DaemonSet", &mut o.metadata)),
        );
    for (kind, meta) in metas {
        if meta.uid.as_deref().is_none_or(str::is_empty) {
            let r = workload_ref(kind, meta);
            meta.uid = Some(super::input::deterministic_uid(&format!(
                "{}/{}/{}",
                r.kind, r.namespace, r.name
            )));
        }
    }
}

fn workload_ref(kind: &'static str, meta: &ObjectMeta) -> WorkloadRef {
    WorkloadRef {
        kind,
        namespace: namespace_of(meta),
        name: meta.name.clone().unwrap_or_default(),
    }
}

fn namespace_of(meta: &ObjectMeta) -> String {
    meta.namespace
        .clone()
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| DEFAULT_NAMESPACE.to_string())
}

/// Creates pods and claims, keeping names unique and the total bounded.
struct Expander {
    /// (namespace, name) of every pod, existing or created.
    pod_names: HashSet<(String, String)>,
    pods: Vec<(WorkloadRef, Pod)>,
    claims: Vec<(WorkloadRef, PersistentVolumeClaim)>,
    /// The Job controller's Workload API objects, with WorkloadWithJob on.
    job_workloads: Option<JobWorkloads>,
}

impl Expander {
    fn new(input: &ClusterInput) -> Self {
        let pod_names = input
            .pods
            .iter()
            .map(|pod| {
                (
                    namespace_of(&pod.metadata),
                    pod.metadata.name.clone().unwrap_or_default(),
                )
            })
            .collect();
        Expander {
            pod_names,
            pods: Vec::new(),
            claims: Vec::new(),
            job_workloads: None,
        }
    }

    /// The ReplicaSet a Deployment's controller creates, unless it controls one already.
    fn deployment(
        &mut self,
        deployment: &Deployment,
        replica_sets: &[ReplicaSet],
    ) -> Result<Option<ReplicaSet>, WorkloadError> {
        let meta = &deployment.metadata;
        let owner = workload_ref("Deployment", meta);
        let has_replica_set = replica_sets
            .iter()
            .any(|rs| controlled_by(&rs.metadata, "Deployment", meta));
        if has_replica_set {
            return Ok(None);
        }
        let spec = &deployment.spec;
        let replicas = replicas(&owner, spec.replicas)?;
        let hash = template_hash(&spec.template);
        let name = format!("{}-{hash}", owner.name);
        let mut template = spec.template.clone();
        insert_label(&mut template.metadata, POD_TEMPLATE_HASH_LABEL, &hash);
        let mut selector = spec.selector.clone();
        selector
            .match_labels
            .get_or_insert_with(BTreeMap::new)
            .insert(POD_TEMPLATE_HASH_LABEL.to_string(), hash.clone());
        let labels = template
            .metadata
            .as_ref()
            .and_then(|m| m.labels.clone())
            .unwrap_or_default();
        let uid =
            super::input::deterministic_uid(&format!("ReplicaSet/{}/{name}", owner.namespace));
        Ok(Some(ReplicaSet {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: Some(owner.namespace.clone()),
                uid: Some(uid),
                labels: Some(labels),
                owner_references: Some(vec![controller_ref("apps/v1", "Deployment", meta)]),
                ..ObjectMeta::default()
            },
            spec: k8s_openapi::api::apps::v1::ReplicaSetSpec {
                replicas: Some(replicas),
                min_ready_seconds: spec.min_ready_seconds,
                selector,
                template: Some(template),
            },
            status: None,
        }))
    }

    fn replica_set(&mut self, set: &ReplicaSet, pods: &[Pod]) -> Result<(), WorkloadError> {
        let meta = &set.metadata;
        let owner = workload_ref("ReplicaSet", meta);
        let spec = &set.spec;
        let wanted = replicas(&owner, spec.replicas)?;
        let active = owned_pods(pods, "ReplicaSet", meta)
            .filter(|pod| is_active(pod))
            .count();
        let template = spec.template.clone().unwrap_or_default();
        let controller = controller_ref("apps/v1", "ReplicaSet", meta);
        for index in missing(wanted, active) {
            let name = self.generated_name(&owner, &format!("{}-", owner.name), index);
            let pod = pod_from_template(&template, &owner, name, controller.clone());
            self.push_pod(&owner, pod, "spec.replicas", wanted)?;
        }
        Ok(())
    }

    fn stateful_set(
        &mut self,
        set: &StatefulSet,
        claims: &[PersistentVolumeClaim],
    ) -> Result<(), WorkloadError> {
        let meta = &set.metadata;
        let owner = workload_ref("StatefulSet", meta);
        let spec = &set.spec;
        let wanted = replicas(&owner, spec.replicas)?;
        let start = spec.ordinals.as_ref().and_then(|o| o.start).unwrap_or(0);
        if start < 0 {
            return Err(invalid(
                &owner,
                "spec.ordinals.start",
                start,
                "must be greater than or equal to 0",
            ));
        }
        let revision = format!("{}-{}", owner.name, template_hash(&spec.template));
        let controller = controller_ref("apps/v1", "StatefulSet", meta);
        let existing_claims: HashSet<(String, String)> = claims
            .iter()
            .map(|c| {
                (
                    namespace_of(&c.metadata),
                    c.metadata.name.clone().unwrap_or_default(),
                )
            })
            .collect();
        for ordinal in (0..wanted).map(|i| i64::from(start) + i64::from(i)) {
            let name = format!("{}-{ordinal}", owner.name);
            for claim in stateful_set_claims(set, &owner, ordinal) {
                let key = (
                    owner.namespace.clone(),
                    claim.metadata.name.clone().unwrap_or_default(),
                );
                if !existing_claims.contains(&key) {
                    self.claims.push((owner.clone(), claim));
                }
            }
            // An ordinal whose pod exists (in any phase) is not created again.
            if self
                .pod_names
                .contains(&(owner.namespace.clone(), name.clone()))
            {
                continue;
            }
            let mut pod =
                pod_from_template(&spec.template, &owner, name.clone(), controller.clone());
            let labels = pod.metadata.labels.get_or_insert_with(BTreeMap::new);
            labels.insert(CONTROLLER_REVISION_HASH_LABEL.to_string(), revision.clone());
            labels.insert(STATEFUL_SET_POD_NAME_LABEL.to_string(), name.clone());
            labels.insert(POD_INDEX_LABEL.to_string(), ordinal.to_string());
            let pod_spec = pod.spec.get_or_insert_with(PodSpec::default);
            pod_spec.hostname = Some(name.clone());
            pod_spec.subdomain = spec.service_name.clone().filter(|s| !s.is_empty());
            attach_claims(pod_spec, set, &owner, ordinal);
            self.push_pod(&owner, pod, "spec.replicas", wanted)?;
        }
        Ok(())
    }

    fn job(
        &mut self,
        job: &Job,
        pods: &[Pod],
        existing: &SchedulingObjects,
    ) -> Result<(), WorkloadError> {
        let meta = &job.metadata;
        let owner = workload_ref("Job", meta);
        let Some(spec) = job.spec.as_ref() else {
            return Ok(());
        };
        if job_finished(job) {
            return Ok(());
        }
        let owned: Vec<&Pod> = owned_pods(pods, "Job", meta).collect();
        // Before the pods, whether or not the Job is suspended, as `syncJob` orders it.
        let group = match self.job_workloads.as_mut() {
            Some(created) => created.ensure(job, &owned, existing)?,
            None => None,
        };
        if spec.suspend == Some(true) {
            return Ok(());
        }
        let parallelism = non_negative(&owner, "spec.parallelism", spec.parallelism.unwrap_or(1))?;
        let completions = spec
            .completions
            .map(|c| non_negative(&owner, "spec.completions", c))
            .transpose()?;
        let active = owned.iter().filter(|pod| is_active(pod)).count();
        let succeeded = job_succeeded(job, &owned, completions);
        let want_active = job_want_active(parallelism, completions, succeeded, active);
        let to_create = want_active.saturating_sub(active);
        if i64::try_from(to_create).map_or(true, |n| n > MAX_PODS_PER_WORKLOAD) {
            return Err(invalid(
                &owner,
                "spec.parallelism",
                parallelism,
                &format!(
                    "berth simulate creates at most {MAX_PODS_PER_WORKLOAD} pods per workload"
                ),
            ));
        }
        let indexed = spec.completion_mode.as_deref() == Some("Indexed");
        let template = job_template(job, &spec.template);
        let controller = controller_ref("batch/v1", "Job", meta);
        let indexes: Vec<Option<i64>> = if indexed {
            let taken = job_taken_indexes(job, &owned);
            let completions = i64::from(completions.unwrap_or(0));
            free_indexes(completions, taken, to_create)
                .into_iter()
                .map(Some)
                .collect()
        } else {
            vec![None; to_create]
        };
        for (n, index) in indexes.into_iter().enumerate() {
            let base = match index {
                Some(i) => format!("{}-{i}-", owner.name),
                None => format!("{}-", owner.name),
            };
            let name = self.generated_name(&owner, &base, n);
            let mut pod = pod_from_template(&template, &owner, name, controller.clone());
            if let Some(i) = index {
                pod.metadata
                    .annotations
                    .get_or_insert_with(BTreeMap::new)
                    .insert(JOB_COMPLETION_INDEX.to_string(), i.to_string());
                pod.metadata
                    .labels
                    .get_or_insert_with(BTreeMap::new)
                    .insert(JOB_COMPLETION_INDEX.to_string(), i.to_string());
                let pod_spec = pod.spec.get_or_insert_with(PodSpec::default);
                pod_spec
                    .hostname
                    .get_or_insert_with(|| format!("{}-{i}", owner.name));
            }
            if let Some(group) = &group {
                join_group(&mut pod, group);
            }
            self.push_pod(&owner, pod, "spec.parallelism", parallelism)?;
        }
        Ok(())
    }

    fn daemon_set(
        &mut self,
        daemon_set: &DaemonSet,
        pods: &[Pod],
        nodes: &[Node],
    ) -> Result<(), WorkloadError> {
        let meta = &daemon_set.metadata;
        let owner = workload_ref("DaemonSet", meta);
        let spec = &daemon_set.spec;
        let mut template = spec.template.clone();
        add_daemon_tolerations(template.spec.get_or_insert_with(PodSpec::default));
        let revision = template_hash(&spec.template);
        let generation = meta.generation.unwrap_or(1).to_string();
        let served: HashSet<String> = owned_pods(pods, "DaemonSet", meta)
            .filter(|pod| is_active(pod))
            .filter_map(target_node_name)
            .collect();
        let controller = controller_ref("apps/v1", "DaemonSet", meta);
        for (index, node) in nodes.iter().enumerate() {
            let node_name = node.metadata.name.clone().unwrap_or_default();
            if served.contains(&node_name) || !should_run_daemon_pod(&template, node) {
                continue;
            }
            let name = self.generated_name(&owner, &format!("{}-", owner.name), index);
            let mut pod = pod_from_template(&template, &owner, name, controller.clone());
            let labels = pod.metadata.labels.get_or_insert_with(BTreeMap::new);
            labels.insert(CONTROLLER_REVISION_HASH_LABEL.to_string(), revision.clone());
            labels.insert(
                DAEMON_SET_TEMPLATE_GENERATION_LABEL.to_string(),
                generation.clone(),
            );
            let pod_spec = pod.spec.get_or_insert_with(PodSpec::default);
            pod_spec.affinity = Some(pin_to_node(pod_spec.affinity.take(), &node_name));
            self.push_pod(&owner, pod, "spec.template", nodes.len() as i64)?;
        }
        Ok(())
    }

    /// `<base><5 characters>`, unique in the namespace; the key makes it deterministic.
    fn generated_name(&self, owner: &WorkloadRef, base: &str, index: usize) -> String {
        (0..)
            .map(|attempt| {
                let key = format!("{owner}/{index}/{attempt}");
                format!("{base}{}", super::input::name_suffix(&key))
            })
            .find(|name| {
                !self
                    .pod_names
                    .contains(&(owner.namespace.clone(), name.clone()))
            })
            .unwrap_or_default()
    }

    fn push_pod(
        &mut self,
        owner: &WorkloadRef,
        pod: Pod,
        field: &str,
        asked: impl Into<i64>,
    ) -> Result<(), WorkloadError> {
        if self.pods.len() >= MAX_CREATED_PODS {
            return Err(invalid(
                owner,
                field,
                asked.into(),
                &format!(
                    "the workloads of the input would create more than {MAX_CREATED_PODS} pods, the most berth simulate creates"
                ),
            ));
        }
        let name = pod.metadata.name.clone().unwrap_or_default();
        self.pod_names.insert((owner.namespace.clone(), name));
        self.pods.push((owner.clone(), pod));
        Ok(())
    }
}

/// `spec.replicas`, default 1, within [0, MAX_PODS_PER_WORKLOAD].
fn replicas(owner: &WorkloadRef, replicas: Option<i32>) -> Result<i32, WorkloadError> {
    let replicas = non_negative(owner, "spec.replicas", replicas.unwrap_or(1))?;
    if i64::from(replicas) > MAX_PODS_PER_WORKLOAD {
        return Err(invalid(
            owner,
            "spec.replicas",
            replicas,
            &format!("berth simulate creates at most {MAX_PODS_PER_WORKLOAD} pods per workload"),
        ));
    }
    Ok(replicas)
}

fn non_negative(owner: &WorkloadRef, field: &str, value: i32) -> Result<i32, WorkloadError> {
    if value < 0 {
        return Err(invalid(
            owner,
            field,
            value,
            "must be greater than or equal to 0",
        ));
    }
    Ok(value)
}

fn invalid(
    owner: &WorkloadRef,
    field: &str,
    value: impl Into<serde_json::Value>,
    message: &str,
) -> WorkloadError {
    WorkloadError {
        workload: owner.clone(),
        error: Box::new(FieldError::new(field, value.into(), message)),
    }
}

/// The 0-based indexes of the pods to create: `wanted - active` of them, if positive.
fn missing(wanted: i32, active: usize) -> std::ops::Range<usize> {
    0..usize::try_from(wanted).unwrap_or(0).saturating_sub(active)
}

fn phase(pod: &Pod) -> Option<&str> {
    pod.status.as_ref().and_then(|s| s.phase.as_deref())
}

/// Upstream `controller.IsPodActive`: not finished and not being deleted.
fn is_active(pod: &Pod) -> bool {
    !is_finished(pod) && pod.metadata.deletion_timestamp.is_none()
}

/// Whether `meta`'s controller ownerReference points at the `kind` object `owner` (by
/// uid or by name).
fn controlled_by(meta: &ObjectMeta, kind: &str, owner: &ObjectMeta) -> bool {
    if namespace_of(meta) != namespace_of(owner) {
        return false;
    }
    meta.owner_references.iter().flatten().any(|reference| {
        reference.controller == Some(true)
            && reference.kind == kind
            && (owner.uid.as_deref() == Some(reference.uid.as_str())
                || owner.name.as_deref() == Some(reference.name.as_str()))
    })
}

fn owned_pods<'a>(
    pods: &'a [Pod],
    kind: &'a str,
    owner: &'a ObjectMeta,
) -> impl Iterator<Item = &'a Pod> {
    pods.iter()
        .filter(move |pod| controlled_by(&pod.metadata, kind, owner))
}

/// The ownerReference a controller sets on what it creates (`metav1.NewControllerRef`).
fn controller_ref(api_version: &str, kind: &str, owner: &ObjectMeta) -> OwnerReference {
    OwnerReference {
        api_version: api_version.to_string(),
        kind: kind.to_string(),
        name: owner.name.clone().unwrap_or_default(),
        uid: owner.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// Upstream `controller.GetPodFromTemplate`: the template's labels, annotations,
/// finalizers and spec, in the workload's namespace, controlled by it.
fn pod_from_template(
    template: &PodTemplateSpec,
    owner: &WorkloadRef,
    name: String,
    controller: OwnerReference,
) -> Pod {
    let template_meta = template.metadata.clone().unwrap_or_default();
    Pod {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(owner.namespace.clone()),
            labels: template_meta.labels,
            annotations: template_meta.annotations,
            finalizers: template_meta.finalizers,
            owner_references: Some(vec![controller]),
            ..ObjectMeta::default()
        },
        spec: Some(template.spec.clone().unwrap_or_default()),
        status: None,
    }
}

fn insert_label(meta: &mut Option<ObjectMeta>, key: &str, value: &str) {
    meta.get_or_insert_with(ObjectMeta::default)
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(key.to_string(), value.to_string());
}

/// A hash of a pod template in the shape of upstream's `pod-template-hash`: the decimal
/// 32-bit FNV-1a hash of the template, each digit mapped into the `generateName` alphabet
/// (`rand.SafeEncodeString`).
pub fn template_hash(template: &PodTemplateSpec) -> String {
    let bytes = serde_json::to_vec(template).unwrap_or_default();
    safe_encode(&fnv32a(&bytes).to_string())
}

/// 32-bit FNV-1a (Go's `hash/fnv.New32a`), which upstream's controllers hash names with.
fn fnv32a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(*byte)).wrapping_mul(0x0100_0193)
    })
}

/// apimachinery's `rand.SafeEncodeString`: each byte mapped into the alphabet without
/// vowels and look-alike characters, so the result can never spell a word.
fn safe_encode(s: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    s.bytes()
        .map(|b| char::from(ALPHABET[usize::from(b) % ALPHABET.len()]))
        .collect()
}

#[cfg(test)]
mod tests;
