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
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::framework::FieldError;
use crate::helpers::node_affinity::RequiredNodeAffinity;
use crate::helpers::taints::{find_untolerated_taint, node_taints};

use super::input::{ClusterInput, DEFAULT_NAMESPACE, is_finished};

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
}

/// The objects the controllers of `input`'s workloads would create. Workloads without a
/// uid get a deterministic one first (the API server sets one on create), since the Job
/// selector and the pods' ownerReferences carry it.
pub fn expand(input: &mut ClusterInput) -> Result<Expansion, WorkloadError> {
    assign_uids(input);
    let mut expander = Expander::new(input);
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
    for job in input.jobs.iter().filter(|j| !deleting(&j.metadata)) {
        expander.job(job, &input.pods)?;
    }
    for daemon_set in input.daemon_sets.iter().filter(|d| !deleting(&d.metadata)) {
        expander.daemon_set(daemon_set, &input.pods, &input.nodes)?;
    }
    expansion.pods = expander.pods;
    expansion.claims = expander.claims;
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
        let Some(spec) = deployment.spec.as_ref().filter(|_| !has_replica_set) else {
            return Ok(None);
        };
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
            spec: Some(k8s_openapi::api::apps::v1::ReplicaSetSpec {
                replicas: Some(replicas),
                min_ready_seconds: spec.min_ready_seconds,
                selector,
                template: Some(template),
            }),
            status: None,
        }))
    }

    fn replica_set(&mut self, set: &ReplicaSet, pods: &[Pod]) -> Result<(), WorkloadError> {
        let meta = &set.metadata;
        let owner = workload_ref("ReplicaSet", meta);
        let Some(spec) = set.spec.as_ref() else {
            return Ok(());
        };
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
        let Some(spec) = set.spec.as_ref() else {
            return Ok(());
        };
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

    fn job(&mut self, job: &Job, pods: &[Pod]) -> Result<(), WorkloadError> {
        let meta = &job.metadata;
        let owner = workload_ref("Job", meta);
        let Some(spec) = job.spec.as_ref() else {
            return Ok(());
        };
        if spec.suspend == Some(true) || job_finished(job) {
            return Ok(());
        }
        let parallelism = non_negative(&owner, "spec.parallelism", spec.parallelism.unwrap_or(1))?;
        let completions = spec
            .completions
            .map(|c| non_negative(&owner, "spec.completions", c))
            .transpose()?;
        let owned: Vec<&Pod> = owned_pods(pods, "Job", meta).collect();
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
        let Some(spec) = daemon_set.spec.as_ref() else {
            return Ok(());
        };
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
    let hash = bytes.iter().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(*byte)).wrapping_mul(0x0100_0193)
    });
    safe_encode(&hash.to_string())
}

/// apimachinery's `rand.SafeEncodeString`: each byte mapped into the alphabet without
/// vowels and look-alike characters, so the result can never spell a word.
fn safe_encode(s: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    s.bytes()
        .map(|b| char::from(ALPHABET[usize::from(b) % ALPHABET.len()]))
        .collect()
}

// ---------------------------------------------------------------------------------------
// StatefulSet storage

/// The claims of one ordinal (upstream `getPersistentVolumeClaims`): each template named
/// `<template>-<set>-<ordinal>`, labelled with the set's selector matchLabels.
fn stateful_set_claims(
    set: &StatefulSet,
    owner: &WorkloadRef,
    ordinal: i64,
) -> Vec<PersistentVolumeClaim> {
    let Some(spec) = set.spec.as_ref() else {
        return Vec::new();
    };
    let selector_labels = spec.selector.match_labels.clone().unwrap_or_default();
    spec.volume_claim_templates
        .iter()
        .flatten()
        .map(|template| {
            let mut claim = template.clone();
            let template_name = template.metadata.name.clone().unwrap_or_default();
            claim.metadata.name = Some(claim_name(&template_name, &owner.name, ordinal));
            claim.metadata.namespace = Some(owner.namespace.clone());
            claim
                .metadata
                .labels
                .get_or_insert_with(BTreeMap::new)
                .extend(selector_labels.clone());
            claim.status = None;
            claim
        })
        .collect()
}

fn claim_name(template: &str, set: &str, ordinal: i64) -> String {
    format!("{template}-{set}-{ordinal}")
}

/// Upstream `updateStorage`: a volume per claim template, named after the template and
/// referring to the ordinal's claim, replacing a template volume of the same name.
fn attach_claims(pod_spec: &mut PodSpec, set: &StatefulSet, owner: &WorkloadRef, ordinal: i64) {
    let templates = set
        .spec
        .as_ref()
        .and_then(|s| s.volume_claim_templates.as_ref());
    for template in templates.into_iter().flatten() {
        let template_name = template.metadata.name.clone().unwrap_or_default();
        let volume = Volume {
            name: template_name.clone(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim_name(&template_name, &owner.name, ordinal),
                read_only: None,
            }),
            ..Volume::default()
        };
        let volumes = pod_spec.volumes.get_or_insert_with(Vec::new);
        match volumes.iter_mut().find(|v| v.name == template_name) {
            Some(existing) => *existing = volume,
            None => volumes.push(volume),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Job

/// A Job with a `Complete` or `Failed` condition that is True creates nothing more.
fn job_finished(job: &Job) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
}

/// Upstream `manageJob`: without completions, `parallelism` until one pod succeeded
/// (then only the active ones keep running); with completions, `parallelism` capped by
/// the completions left.
fn job_want_active(
    parallelism: i32,
    completions: Option<i32>,
    succeeded: usize,
    active: usize,
) -> usize {
    let parallelism = usize::try_from(parallelism).unwrap_or(0);
    match completions {
        None if succeeded > 0 => active,
        None => parallelism,
        Some(completions) => usize::try_from(completions)
            .unwrap_or(0)
            .saturating_sub(succeeded)
            .min(parallelism),
    }
}

/// The completions a Job has: the most of `status.succeeded`, its Succeeded pods and
/// (Indexed) its completed indexes below `completions`.
fn job_succeeded(job: &Job, owned: &[&Pod], completions: Option<i32>) -> usize {
    let pods = owned
        .iter()
        .filter(|pod| phase(pod) == Some("Succeeded"))
        .count();
    let status = job
        .status
        .as_ref()
        .and_then(|s| s.succeeded)
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0);
    let limit = i64::from(completions.unwrap_or(0));
    let indexes: i64 = completed_indexes(job)
        .iter()
        .map(|range| range.end.min(limit) - range.start)
        .filter(|n| *n > 0)
        .sum();
    pods.max(status).max(usize::try_from(indexes).unwrap_or(0))
}

/// The template as the API server stores it (`generateSelector`): unless
/// `manualSelector` is true, the job-name and controller-uid labels, legacy and
/// `batch.kubernetes.io/` ones, each kept when the template sets it already.
fn job_template(job: &Job, template: &PodTemplateSpec) -> PodTemplateSpec {
    let mut template = template.clone();
    if job.spec.as_ref().and_then(|s| s.manual_selector) == Some(true) {
        return template;
    }
    let name = job.metadata.name.clone().unwrap_or_default();
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let labels = template
        .metadata
        .get_or_insert_with(ObjectMeta::default)
        .labels
        .get_or_insert_with(BTreeMap::new);
    for (key, value) in [
        (LEGACY_JOB_NAME_LABEL, &name),
        (JOB_NAME_LABEL, &name),
        (LEGACY_CONTROLLER_UID_LABEL, &uid),
        (CONTROLLER_UID_LABEL, &uid),
    ] {
        labels
            .entry(key.to_string())
            .or_insert_with(|| value.clone());
    }
    template
}

/// Completion indexes an Indexed Job need not create, as ranges: those of its active and
/// succeeded pods and those in `status.completedIndexes` (`"1,3-5"`). Kept as ranges so
/// a long `completedIndexes` range costs nothing.
fn job_taken_indexes(job: &Job, owned: &[&Pod]) -> Vec<Range<i64>> {
    let from_pods = owned
        .iter()
        .filter(|pod| is_active(pod) || phase(pod) == Some("Succeeded"))
        .filter_map(|pod| {
            let annotations = pod.metadata.annotations.as_ref()?;
            let index = annotations.get(JOB_COMPLETION_INDEX)?.parse::<i64>().ok()?;
            Some(index..index.saturating_add(1))
        });
    from_pods.chain(completed_indexes(job)).collect()
}

/// `status.completedIndexes` as ranges; unreadable parts are ignored.
fn completed_indexes(job: &Job) -> Vec<Range<i64>> {
    let completed = job
        .status
        .as_ref()
        .and_then(|s| s.completed_indexes.as_deref())
        .unwrap_or_default();
    completed
        .split(',')
        .filter_map(|part| {
            let (first, last) = part
                .trim()
                .split_once('-')
                .unwrap_or((part.trim(), part.trim()));
            let first = first.parse::<i64>().ok()?;
            let last = last.parse::<i64>().ok()?;
            Some(first.max(0)..last.saturating_add(1))
        })
        .collect()
}

/// The `count` lowest indexes below `completions` that no range of `taken` holds; the
/// walk jumps over the ranges, so it takes at most `count + taken.len()` steps.
fn free_indexes(completions: i64, mut taken: Vec<Range<i64>>, count: usize) -> Vec<i64> {
    taken.sort_by_key(|range| range.start);
    let mut ranges = taken.into_iter().peekable();
    let mut free = Vec::new();
    let mut next = 0;
    while free.len() < count && next < completions {
        match ranges.peek() {
            Some(range) if range.start <= next => {
                next = next.max(range.end);
                ranges.next();
            }
            upcoming => {
                let stop = upcoming.map_or(completions, |r| r.start.min(completions));
                while next < stop && free.len() < count {
                    free.push(next);
                    next += 1;
                }
            }
        }
    }
    free
}

// ---------------------------------------------------------------------------------------
// DaemonSet

/// Upstream `AddOrUpdateDaemonPodTolerations`: daemon pods tolerate the node conditions
/// that would otherwise keep them off a node, and network-unavailable with hostNetwork.
fn add_daemon_tolerations(spec: &mut PodSpec) {
    let mut added = vec![
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ];
    if spec.host_network == Some(true) {
        added.push(("node.kubernetes.io/network-unavailable", "NoSchedule"));
    }
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    for (key, effect) in added {
        let toleration = Toleration {
            key: Some(key.to_string()),
            operator: Some("Exists".to_string()),
            effect: Some(effect.to_string()),
            value: None,
            toleration_seconds: None,
        };
        // `AddOrUpdateTolerationInPodSpec`: an identical toleration is not added twice.
        if !tolerations.contains(&toleration) {
            tolerations.push(toleration);
        }
    }
}

/// Upstream `NodeShouldRunDaemonPod` (the "should run" answer): the template's nodeName,
/// nodeSelector and required node affinity admit the node, and its tolerations (with the
/// daemon tolerations) tolerate every NoSchedule and NoExecute taint.
fn should_run_daemon_pod(template: &PodTemplateSpec, node: &Node) -> bool {
    let node_name = node.metadata.name.as_deref().unwrap_or_default();
    let spec = template.spec.clone().unwrap_or_default();
    if spec
        .node_name
        .as_deref()
        .is_some_and(|n| !n.is_empty() && n != node_name)
    {
        return false;
    }
    let tolerations = spec.tolerations.clone().unwrap_or_default();
    let pod = Pod {
        spec: Some(spec),
        ..Pod::default()
    };
    let untolerated = find_untolerated_taint(node_taints(node), &tolerations, |t| {
        t.effect == "NoSchedule" || t.effect == "NoExecute"
    });
    RequiredNodeAffinity::new(&pod).matches(node) && untolerated.is_none()
}

/// Upstream `ReplaceDaemonSetPodNodeNameNodeAffinity`: the required node selector becomes
/// the single term `matchFields: [{key: metadata.name, operator: In, values: [node]}]`
/// (the controller checked the template's own terms against the node already); preferred
/// terms are kept.
fn pin_to_node(affinity: Option<Affinity>, node_name: &str) -> Affinity {
    let selector = NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![NodeSelectorRequirement {
                key: NODE_NAME_FIELD.to_string(),
                operator: "In".to_string(),
                values: Some(vec![node_name.to_string()]),
            }]),
        }],
    };
    let mut affinity = affinity.unwrap_or_default();
    affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default)
        .required_during_scheduling_ignored_during_execution = Some(selector);
    affinity
}

/// Upstream `GetTargetNodeName`: the node a daemon pod runs on or is pinned to.
fn target_node_name(pod: &Pod) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    if let Some(name) = spec.node_name.as_ref().filter(|n| !n.is_empty()) {
        return Some(name.clone());
    }
    let terms = &spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    terms
        .iter()
        .flat_map(|term| term.match_fields.iter().flatten())
        .find(|r| r.key == NODE_NAME_FIELD && r.operator == "In")
        .and_then(|r| match r.values.as_deref() {
            Some([only]) => Some(only.clone()),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::simulate::input::load_str;

    /// The input loaded (which expands its workloads), or the error's text.
    fn load(text: &str) -> Result<ClusterInput, String> {
        load_str(Path::new("test.yaml"), text)
            .map(|(input, _)| input)
            .map_err(|e| e.to_string())
    }

    fn pod_names(input: &ClusterInput) -> Vec<String> {
        input
            .pods
            .iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect()
    }

    fn labels(pod: &Pod) -> BTreeMap<String, String> {
        pod.metadata.labels.clone().unwrap_or_default()
    }

    fn controller_of(pod: &Pod) -> (String, String) {
        let owners = pod.metadata.owner_references.clone().unwrap_or_default();
        let owner = owners
            .iter()
            .find(|o| o.controller == Some(true))
            .cloned()
            .unwrap_or_default();
        (owner.kind, owner.name)
    }

    /// A suffix of `generateName`: 5 characters of apimachinery's `rand.String` alphabet.
    fn is_generated_suffix(suffix: &str) -> bool {
        suffix.len() == 5
            && suffix
                .chars()
                .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c))
    }

    const NODES: &str = "\
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {disk: ssd}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
spec: {taints: [{key: dedicated, value: gpu, effect: NoSchedule}]}
---
apiVersion: v1
kind: Node
metadata: {name: n3}
spec:
  unschedulable: true
  taints: [{key: node.kubernetes.io/unschedulable, effect: NoSchedule}]
---
";

    #[test]
    fn replica_counts_follow_the_controllers() {
        // (case, workload document, existing pods, pods the controller creates)
        let owned = |kind: &str, name: &str, phase: &str| {
            format!(
                "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}-old, ownerReferences: [{{apiVersion: apps/v1, kind: {kind}, name: {name}, uid: other, controller: true}}]}}\nspec: {{containers: []}}\nstatus: {{phase: {phase}}}\n"
            )
        };
        let rs = |replicas: &str| {
            format!(
                "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {{name: rs}}\nspec: {{{replicas}selector: {{matchLabels: {{a: b}}}}, template: {{metadata: {{labels: {{a: b}}}}, spec: {{containers: []}}}}}}\n"
            )
        };
        let job = |spec: &str| {
            format!(
                "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: job}}\nspec: {{{spec}template: {{spec: {{containers: [], restartPolicy: Never}}}}}}\n"
            )
        };
        let cases: Vec<(&str, String, String, usize)> = vec![
            ("replicas default to 1", rs(""), String::new(), 1),
            ("replicas: 3", rs("replicas: 3, "), String::new(), 3),
            ("replicas: 0", rs("replicas: 0, "), String::new(), 0),
            (
                "a running owned pod counts",
                rs("replicas: 3, "),
                owned("ReplicaSet", "rs", "Running"),
                2,
            ),
            (
                "a finished owned pod does not count",
                rs("replicas: 3, "),
                owned("ReplicaSet", "rs", "Failed"),
                3,
            ),
            (
                "a pod another kind controls does not count",
                rs("replicas: 3, "),
                owned("StatefulSet", "rs", "Running"),
                3,
            ),
            ("parallelism defaults to 1", job(""), String::new(), 1),
            ("parallelism", job("parallelism: 4, "), String::new(), 4),
            (
                "capped by completions",
                job("parallelism: 4, completions: 2, "),
                String::new(),
                2,
            ),
            (
                "capped by completions left",
                job("parallelism: 4, completions: 5, "),
                owned("Job", "job", "Succeeded"),
                4,
            ),
            (
                "completions left counts status.succeeded",
                format!(
                    "{}status: {{succeeded: 4}}\n",
                    job("parallelism: 4, completions: 5, ")
                ),
                String::new(),
                1,
            ),
            (
                "active pods count toward parallelism",
                job("parallelism: 3, "),
                owned("Job", "job", "Running"),
                2,
            ),
            (
                "no completions: nothing new once one succeeded",
                job("parallelism: 3, "),
                owned("Job", "job", "Succeeded"),
                0,
            ),
            (
                "suspended",
                job("parallelism: 3, suspend: true, "),
                String::new(),
                0,
            ),
            (
                "indexed: completed indexes count as succeeded",
                format!(
                    "{}status: {{completedIndexes: \"0-1999999997\"}}\n",
                    job("completionMode: Indexed, parallelism: 5, completions: 2000000000, ")
                ),
                String::new(),
                2,
            ),
            (
                "being deleted",
                job("parallelism: 3, ").replace(
                    "metadata: {name: job}",
                    "metadata: {name: job, deletionTimestamp: \"2024-01-01T00:00:00Z\"}",
                ),
                String::new(),
                0,
            ),
            (
                "complete",
                format!(
                    "{}status: {{conditions: [{{type: Complete, status: \"True\"}}]}}\n",
                    job("parallelism: 3, ")
                ),
                String::new(),
                0,
            ),
        ];
        for (name, workload, existing, want) in cases {
            let text = format!("{workload}{existing}");
            let input = load(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            let created = pod_names(&input)
                .into_iter()
                .filter(|pod| !pod.ends_with("-old"))
                .count();
            assert_eq!(created, want, "{name}: {:?}", pod_names(&input));
        }
    }

    #[test]
    fn deployment_creates_a_replica_set_and_its_pods() {
        let text = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx}]}
";
        let input = load(text).expect("valid input");
        let [rs] = &input.replica_sets[..] else {
            panic!("one ReplicaSet, got {:?}", input.replica_sets);
        };
        let rs_name = rs.metadata.name.clone().unwrap_or_default();
        let hash = rs_name
            .strip_prefix("web-")
            .expect("named <deployment>-<hash>");
        assert!(
            !hash.is_empty()
                && hash
                    .chars()
                    .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c))
        );
        assert_eq!(rs.metadata.namespace.as_deref(), Some("shop"));
        let rs_owner = rs.metadata.owner_references.clone().unwrap_or_default();
        assert_eq!(
            (
                rs_owner[0].kind.as_str(),
                rs_owner[0].name.as_str(),
                rs_owner[0].controller
            ),
            ("Deployment", "web", Some(true))
        );
        let spec = rs.spec.clone().unwrap_or_default();
        assert_eq!(spec.replicas, Some(2));
        let selector = spec.selector.match_labels.unwrap_or_default();
        assert_eq!(
            selector.get(POD_TEMPLATE_HASH_LABEL).map(String::as_str),
            Some(hash)
        );
        assert_eq!(input.pods.len(), 2);
        for pod in &input.pods {
            let name = pod.metadata.name.clone().unwrap_or_default();
            let suffix = name
                .strip_prefix(&format!("{rs_name}-"))
                .expect("named <replicaset>-<suffix>");
            assert!(is_generated_suffix(suffix), "{name}");
            assert_eq!(pod.metadata.namespace.as_deref(), Some("shop"));
            let labels = labels(pod);
            assert_eq!(labels.get("app").map(String::as_str), Some("web"));
            assert_eq!(
                labels.get(POD_TEMPLATE_HASH_LABEL).map(String::as_str),
                Some(hash)
            );
            assert_eq!(controller_of(pod), ("ReplicaSet".into(), rs_name.clone()));
        }
        assert_ne!(input.pods[0].metadata.name, input.pods[1].metadata.name);
        let again = load(text).expect("valid input");
        assert_eq!(
            pod_names(&again),
            pod_names(&input),
            "names are deterministic"
        );
    }

    #[test]
    fn deployment_with_its_replica_set_in_the_input_is_left_to_it() {
        let text = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, uid: d-uid}
spec:
  replicas: 5
  selector: {matchLabels: {app: web}}
  template: {metadata: {labels: {app: web}}, spec: {containers: []}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-abc
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: d-uid, controller: true}]
spec:
  replicas: 2
  selector: {matchLabels: {app: web, pod-template-hash: abc}}
  template: {metadata: {labels: {app: web, pod-template-hash: abc}}, spec: {containers: []}}
";
        let input = load(text).expect("valid input");
        assert_eq!(input.replica_sets.len(), 1);
        assert_eq!(input.pods.len(), 2, "{:?}", pod_names(&input));
    }

    #[test]
    fn stateful_set_pods_have_ordinals_identity_and_claims() {
        let text = "\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 3
  serviceName: db-headless
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: c, image: pg}]
      volumes: [{name: data, emptyDir: {}}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: Pod
metadata:
  name: db-1
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: db, uid: u, controller: true}]
spec: {nodeName: n1, containers: []}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-db-1}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
";
        let input = load(text).expect("valid input");
        assert_eq!(pod_names(&input), vec!["db-1", "db-0", "db-2"]);
        let claims: Vec<String> = input
            .pvcs
            .iter()
            .map(|c| c.metadata.name.clone().unwrap_or_default())
            .collect();
        assert_eq!(claims, vec!["data-db-1", "data-db-0", "data-db-2"]);
        let created_claim = &input.pvcs[1];
        assert_eq!(
            created_claim
                .metadata
                .labels
                .clone()
                .unwrap_or_default()
                .get("app")
                .map(String::as_str),
            Some("db"),
            "claims carry the set's selector labels"
        );
        let db2 = &input.pods[2];
        let labels = labels(db2);
        assert_eq!(
            labels.get(STATEFUL_SET_POD_NAME_LABEL).map(String::as_str),
            Some("db-2")
        );
        assert_eq!(labels.get(POD_INDEX_LABEL).map(String::as_str), Some("2"));
        let revision = labels
            .get(CONTROLLER_REVISION_HASH_LABEL)
            .cloned()
            .unwrap_or_default();
        assert!(revision.starts_with("db-"), "{revision}");
        let spec = db2.spec.clone().unwrap_or_default();
        assert_eq!(spec.hostname.as_deref(), Some("db-2"));
        assert_eq!(spec.subdomain.as_deref(), Some("db-headless"));
        let volumes = spec.volumes.unwrap_or_default();
        assert_eq!(
            volumes.len(),
            1,
            "the template volume of the same name is replaced"
        );
        assert_eq!(
            volumes[0]
                .persistent_volume_claim
                .as_ref()
                .map(|c| c.claim_name.as_str()),
            Some("data-db-2")
        );
        assert_eq!(controller_of(db2), ("StatefulSet".into(), "db".into()));
    }

    #[test]
    fn job_pods_carry_the_job_labels_and_indexes() {
        let text = "\
apiVersion: batch/v1
kind: Job
metadata: {name: train, uid: job-uid}
spec:
  parallelism: 2
  completions: 4
  completionMode: Indexed
  template:
    metadata: {labels: {team: ml}}
    spec: {containers: [], restartPolicy: Never}
status: {completedIndexes: \"0\"}
";
        let input = load(text).expect("valid input");
        assert_eq!(input.pods.len(), 2);
        let want = [
            (JOB_NAME_LABEL, "train"),
            (LEGACY_JOB_NAME_LABEL, "train"),
            (CONTROLLER_UID_LABEL, "job-uid"),
            (LEGACY_CONTROLLER_UID_LABEL, "job-uid"),
            ("team", "ml"),
        ];
        for (pod, index) in input.pods.iter().zip(["1", "2"]) {
            let name = pod.metadata.name.clone().unwrap_or_default();
            let suffix = name
                .strip_prefix(&format!("train-{index}-"))
                .expect("named <job>-<index>-<suffix>");
            assert!(is_generated_suffix(suffix), "{name}");
            let labels = labels(pod);
            for (key, value) in want {
                assert_eq!(labels.get(key).map(String::as_str), Some(value), "{key}");
            }
            let annotations = pod.metadata.annotations.clone().unwrap_or_default();
            assert_eq!(
                annotations.get(JOB_COMPLETION_INDEX).map(String::as_str),
                Some(index)
            );
            assert_eq!(controller_of(pod), ("Job".into(), "train".into()));
        }
    }

    #[test]
    fn daemon_set_runs_where_its_controller_would_and_is_pinned_there() {
        // (case, template spec, nodes that get a pod)
        let cases = [
            (
                "every node whose taints are tolerated",
                "{containers: []}",
                vec!["n1", "n3"],
            ),
            (
                "a toleration admits the tainted node",
                "{containers: [], tolerations: [{key: dedicated, operator: Exists}]}",
                vec!["n1", "n2", "n3"],
            ),
            (
                "nodeSelector",
                "{containers: [], nodeSelector: {disk: ssd}}",
                vec!["n1"],
            ),
            (
                "required node affinity",
                "{containers: [], affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: disk, operator: DoesNotExist}]}]}}}}",
                vec!["n3"],
            ),
        ];
        for (name, spec, want) in cases {
            let text = format!(
                "{NODES}apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: agent}}\nspec: {{selector: {{matchLabels: {{a: b}}}}, template: {{metadata: {{labels: {{a: b}}}}, spec: {spec}}}}}\n"
            );
            let input = load(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            let pinned: Vec<String> = input.pods.iter().filter_map(target_node_name).collect();
            assert_eq!(pinned, want, "{name}");
            for pod in &input.pods {
                let name = pod.metadata.name.clone().unwrap_or_default();
                assert!(is_generated_suffix(
                    name.strip_prefix("agent-").unwrap_or_default()
                ));
                let spec = pod.spec.clone().unwrap_or_default();
                assert_eq!(spec.node_name, None, "scheduled by the scheduler");
                let terms = spec
                    .affinity
                    .and_then(|a| a.node_affinity)
                    .and_then(|n| n.required_during_scheduling_ignored_during_execution)
                    .map(|s| s.node_selector_terms)
                    .unwrap_or_default();
                assert_eq!(terms.len(), 1, "one matchFields term");
                let tolerations = spec.tolerations.unwrap_or_default();
                for key in [
                    "node.kubernetes.io/not-ready",
                    "node.kubernetes.io/unreachable",
                    "node.kubernetes.io/disk-pressure",
                    "node.kubernetes.io/memory-pressure",
                    "node.kubernetes.io/pid-pressure",
                    "node.kubernetes.io/unschedulable",
                ] {
                    assert!(
                        tolerations.iter().any(|t| t.key.as_deref() == Some(key)),
                        "{name}: tolerates {key}"
                    );
                }
                assert!(!tolerations.iter().any(|t| t.key.as_deref()
                    == Some("node.kubernetes.io/network-unavailable")));
            }
        }
    }

    #[test]
    fn daemon_set_pod_already_on_a_node_is_not_created_again() {
        let text = format!(
            "{NODES}apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: agent}}\nspec: {{selector: {{matchLabels: {{a: b}}}}, template: {{metadata: {{labels: {{a: b}}}}, spec: {{containers: []}}}}}}\n---\napiVersion: v1\nkind: Pod\nmetadata: {{name: agent-old, ownerReferences: [{{apiVersion: apps/v1, kind: DaemonSet, name: agent, uid: u, controller: true}}]}}\nspec: {{nodeName: n1, containers: []}}\n"
        );
        let input = load(&text).expect("valid input");
        let pinned: Vec<String> = input.pods.iter().filter_map(target_node_name).collect();
        assert_eq!(
            pinned,
            vec!["n1", "n3"],
            "the existing pod on n1, a new one on n3"
        );
    }

    #[test]
    fn pin_to_node_replaces_the_required_terms_and_keeps_the_rest() {
        let affinity: Affinity = serde_json::from_value(serde_json::json!({
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["old"]}]}
                ]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": {"matchExpressions": [{"key": "z", "operator": "Exists"}]}}
                ]
            }
        }))
        .expect("valid affinity");
        let pinned = serde_json::to_value(pin_to_node(Some(affinity), "n7")).unwrap_or_default();
        assert_eq!(
            pinned["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"],
            serde_json::json!({"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n7"]}]}
            ]})
        );
        assert_eq!(
            pinned["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"],
            1
        );
        let from_nothing = serde_json::to_value(pin_to_node(None, "n1")).unwrap_or_default();
        assert_eq!(
            from_nothing["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
                [0]["matchFields"][0]["values"],
            serde_json::json!(["n1"])
        );
    }

    #[test]
    fn free_indexes_skip_taken_ranges() {
        // (case, completions, taken ranges as (start, end), count, want)
        type Case = (
            &'static str,
            i64,
            &'static [(i64, i64)],
            usize,
            &'static [i64],
        );
        let cases: &[Case] = &[
            ("nothing taken", 5, &[], 3, &[0, 1, 2]),
            ("holes", 6, &[(0, 1), (2, 4)], 3, &[1, 4, 5]),
            (
                "unsorted, overlapping",
                6,
                &[(3, 5), (0, 2), (1, 4)],
                5,
                &[5],
            ),
            ("capped by completions", 3, &[(1, 2)], 5, &[0, 2]),
            (
                "a huge taken range is jumped",
                2_000_000_000,
                &[(0, 1_999_999_998)],
                5,
                &[1_999_999_998, 1_999_999_999],
            ),
        ];
        for (name, completions, taken, count, want) in cases {
            let taken = taken.iter().map(|(start, end)| *start..*end).collect();
            assert_eq!(free_indexes(*completions, taken, *count), *want, "{name}");
        }
    }

    #[test]
    fn host_network_daemon_pods_tolerate_network_unavailable() {
        let mut spec = PodSpec {
            host_network: Some(true),
            ..PodSpec::default()
        };
        add_daemon_tolerations(&mut spec);
        add_daemon_tolerations(&mut spec);
        let tolerations = spec.tolerations.unwrap_or_default();
        assert_eq!(tolerations.len(), 7, "added once: {tolerations:?}");
        assert!(tolerations.iter().any(|t| t.key.as_deref()
            == Some("node.kubernetes.io/network-unavailable")
            && t.effect.as_deref() == Some("NoSchedule")));
    }

    #[test]
    fn unreasonable_counts_are_errors_naming_the_field() {
        // (case, workload, expected error start)
        let cases = [
            (
                "negative replicas",
                "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs}\nspec: {replicas: -1, selector: {}, template: {}}\n",
                "test.yaml: document 0: spec.replicas: Invalid value: -1: must be greater than or equal to 0",
            ),
            (
                "too many replicas",
                "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec: {replicas: 2000000000, selector: {}, template: {}, serviceName: s}\n",
                "test.yaml: document 0: spec.replicas: Invalid value: 2000000000: berth simulate creates at most 10000 pods per workload",
            ),
            (
                "too much parallelism",
                "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {parallelism: 2000000000, template: {}}\n",
                "test.yaml: document 0: spec.parallelism: Invalid value: 2000000000: berth simulate creates at most 10000 pods per workload",
            ),
            (
                "negative parallelism",
                "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {parallelism: -2, template: {}}\n",
                "test.yaml: document 0: spec.parallelism: Invalid value: -2: must be greater than or equal to 0",
            ),
        ];
        for (name, text, want) in cases {
            let error = load(text).expect_err(name);
            assert!(error.starts_with(want), "{name}: {error}");
        }
        let list = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: node-a}}\n- {apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: -3, selector: {}, template: {}}}\n";
        let error = load(list).expect_err("negative replicas in a List");
        assert!(
            error.starts_with("test.yaml: document 0: items[1].spec.replicas: Invalid value: -3"),
            "{error}"
        );
    }

    #[test]
    fn annotated_pods_get_their_implicit_pod_group() {
        let text = "\
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: ml}
spec:
  parallelism: 3
  template:
    metadata:
      labels: {berth.dev/pod-group: train}
      annotations: {berth.dev/min-member: \"3\"}
    spec: {containers: [], restartPolicy: Never}
---
apiVersion: v1
kind: Pod
metadata: {name: bad, labels: {berth.dev/pod-group: other}, annotations: {berth.dev/min-member: \"x\"}}
spec: {containers: []}
";
        let (input, warnings) = load_str(Path::new("test.yaml"), text).expect("valid input");
        let [group] = &input.pod_groups[..] else {
            panic!("one implicit group: {:?}", input.pod_groups);
        };
        assert_eq!(group.metadata.namespace.as_deref(), Some("ml"));
        assert_eq!(group.metadata.name.as_deref(), Some("train"));
        assert_eq!(group.spec.min_member, 3);
        let owners = group.metadata.owner_references.clone().unwrap_or_default();
        assert_eq!(
            (owners[0].kind.as_str(), owners[0].name.as_str()),
            ("Job", "train")
        );
        let [warning] = &warnings[..] else {
            panic!("one warning for the invalid annotation: {warnings:?}");
        };
        let warning = warning.to_string();
        assert!(
            warning.starts_with("test.yaml: document 1: pod default/bad: annotation berth.dev/min-member: invalid value \"x\""),
            "{warning}"
        );
    }

    #[test]
    fn an_existing_pod_group_is_not_replaced() {
        let text = "\
apiVersion: berth.dev/v1alpha1
kind: PodGroup
metadata: {name: g}
spec: {minMember: 5}
---
apiVersion: v1
kind: Pod
metadata: {name: p, labels: {berth.dev/pod-group: g}, annotations: {berth.dev/min-member: \"2\"}}
spec: {containers: []}
";
        let input = load(text).expect("valid input");
        let mins: Vec<i32> = input.pod_groups.iter().map(|g| g.spec.min_member).collect();
        assert_eq!(mins, vec![5]);
    }
}
