//! Reading the simulated cluster from multi-document YAML.
//!
//! `berth simulate` takes what `kubectl apply -f` would take. Each document is parsed to
//! JSON, dispatched on `apiVersion`/`kind`, decoded into its k8s-openapi (or berth) type
//! with errors that name the field path, and then given the defaults the API server and
//! its default admission plugins would apply (namespace, scheduler name, priority,
//! default storage class, ...). The scheduling core therefore sees exactly the objects it
//! would see in a live cluster. `docs/simulate.md` lists every default.
//!
//! Documents are numbered from 0 in file order. Every `---` line opens a new document,
//! except one that opens the file (only comments or directives before it), so a user
//! counting separators finds the document an error names.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    Container, Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, PodStatus,
    ReplicationController, Service, Toleration,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::resource::v1::{
    DeviceClass, DeviceTaintRule, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::scheduling::v1beta1::{PodGroup as SchedulingPodGroup, Workload};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::api::{PodGroup, scheduler_plugins};
use crate::cluster::{
    LegacyWorkload, WorkloadReference, default_pod_level_requests, implicit_group, pod_group_of,
};
use crate::files;
use crate::framework::FieldError;
use crate::simulate::validation;

use super::controllers::{self, ControllerOptions, WorkloadRef};

mod defaults;
mod documents;
mod identity;
mod loader;

pub(crate) use defaults::default_claim_spec;
use defaults::{
    PREEMPT_LOWER_PRIORITY, add_missing_namespaces, add_system_priority_classes, default_claim,
    default_node, default_pod, default_scheduling_pod_group, default_storage_classes,
    label_namespace, resolve_pod_group_priority, resolve_priority,
};
pub(crate) use documents::{RawDocument, parse_document, split_documents};
pub(crate) use identity::{deterministic_uid, name_suffix};
use loader::{Loader, creation_time};

/// `creationTimestamp` given to the first object that has none (2024-01-01T00:00:00Z);
/// each later object gets one second more, so queue order follows document order.
pub const CREATION_EPOCH_SECONDS: i64 = 1_704_067_200;

/// The scheduler name the API server gives pods that name none.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// The namespace the API server gives namespaced objects that name none.
pub const DEFAULT_NAMESPACE: &str = "default";

/// Where an object came from: a file (`-` is stdin) and a 0-based document index.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Source {
    pub file: PathBuf,
    pub document: usize,
}

/// The file name of [`Source::builtin`].
const BUILTIN_FILE: &str = "<built-in>";

impl Source {
    /// The source of objects berth adds itself, such as the implicit `default-scheduler`
    /// profile with the upstream defaults when the input defines none.
    pub fn builtin() -> Source {
        Source {
            file: PathBuf::from(BUILTIN_FILE),
            document: 0,
        }
    }

    pub fn is_builtin(&self) -> bool {
        self.file == Path::new(BUILTIN_FILE)
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_builtin() {
            return f.write_str(BUILTIN_FILE);
        }
        write!(
            f,
            "{}: document {}",
            display_file(&self.file),
            self.document
        )
    }
}

fn display_file(file: &Path) -> String {
    if file == Path::new("-") {
        "<stdin>".to_string()
    } else {
        file.display().to_string()
    }
}

/// The cluster described by the input files, with API-server defaults applied.
///
/// A SchedulerProfile document of the input, kept as JSON: validating the raw document
/// reports every schema error (a typed decode would stop at the first), and it is what
/// the API server would validate.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileDocument {
    /// The document with `metadata` as the API server sets it on create (name,
    /// creationTimestamp).
    pub raw: Value,
    pub source: Source,
}

impl ProfileDocument {
    /// The profile's `metadata.name`.
    pub fn name(&self) -> Option<&str> {
        self.raw.pointer("/metadata/name").and_then(Value::as_str)
    }

    /// The scheduler name the profile claims: `spec.schedulerName`, else `metadata.name`.
    pub fn scheduler_name(&self) -> String {
        let explicit = self
            .raw
            .pointer("/spec/schedulerName")
            .and_then(Value::as_str);
        let name = self.raw.pointer("/metadata/name").and_then(Value::as_str);
        explicit.or(name).unwrap_or_default().to_string()
    }
}

/// Pods with `spec.nodeName` are running pods (they occupy their node); the others are
/// pending and are scheduled by the profile their `spec.schedulerName` names. Finished
/// pods (phase `Succeeded` or `Failed`) are neither: they hold no resources, as in
/// `berth run` and upstream's scheduler cache, and are not scheduled.
#[derive(Debug, Clone, Default)]
pub struct ClusterInput {
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    /// berth's own `berth.dev/v1alpha1` PodGroups (Coscheduling).
    pub pod_groups: Vec<PodGroup>,
    /// scheduler-plugins' `scheduling.x-k8s.io/v1alpha1` PodGroups, which Coscheduling
    /// reads too ([`crate::cluster::PodGroups::apply_scheduler_plugins`]); a berth.dev
    /// PodGroup of the same namespace and name wins over one of these.
    pub scheduler_plugins_pod_groups: Vec<scheduler_plugins::PodGroup>,
    /// The Workload API's `scheduling.k8s.io/v1beta1` PodGroups: the pods naming one in
    /// `spec.schedulingGroup` are placed together by the pod-group cycle.
    pub scheduling_pod_groups: Vec<SchedulingPodGroup>,
    /// The Workload API's `scheduling.k8s.io/v1beta1` Workloads. The scheduler reads
    /// only PodGroups; a Workload is where a controller's PodGroups come from.
    pub scheduling_workloads: Vec<Workload>,
    /// Kubernetes 1.35's `scheduling.k8s.io/v1alpha1` Workloads, which GangScheduling
    /// reads for pods with `spec.workloadRef` ([`crate::cluster::LegacyWorkloads`]).
    pub legacy_workloads: Vec<LegacyWorkload>,
    /// Set when the cluster was read from an API server that does not serve
    /// `scheduling.k8s.io/v1beta1` PodGroups (the GenericWorkload gate is off by default
    /// in 1.37): members of pod groups are then refused, as the live scheduler would
    /// refuse them, instead of waiting for a PodGroup that cannot exist.
    pub pod_groups_not_served: bool,
    /// The cluster read (`--from-cluster`) does not serve Kubernetes 1.35's
    /// `scheduling.k8s.io/v1alpha1` Workloads: pods with `spec.workloadRef` are refused,
    /// as the cluster's scheduler refuses them.
    pub legacy_workloads_not_served: bool,
    /// SchedulerProfile documents as written (metadata admitted), validated later with
    /// [`validate_profile`](crate::schema::validate_profile), as the API server would.
    pub profiles: Vec<ProfileDocument>,
    pub pvcs: Vec<PersistentVolumeClaim>,
    pub pvs: Vec<PersistentVolume>,
    pub storage_classes: Vec<StorageClass>,
    pub csi_nodes: Vec<CSINode>,
    pub namespaces: Vec<Namespace>,
    pub priority_classes: Vec<PriorityClass>,
    pub pdbs: Vec<PodDisruptionBudget>,
    /// Workloads whose selectors define default spreading (PodTopologySpread).
    pub services: Vec<Service>,
    pub replication_controllers: Vec<ReplicationController>,
    pub replica_sets: Vec<ReplicaSet>,
    pub stateful_sets: Vec<StatefulSet>,
    /// Workloads expanded into the pods their controllers would create
    /// ([`super::controllers`]), as are ReplicaSets and StatefulSets.
    pub deployments: Vec<Deployment>,
    pub jobs: Vec<Job>,
    pub daemon_sets: Vec<DaemonSet>,
    /// The resource.k8s.io objects DynamicResources reads; template claims are made for
    /// the pending pods as the resourceclaim controller makes them ([`super::claims`]).
    pub resource_slices: Vec<ResourceSlice>,
    pub device_classes: Vec<DeviceClass>,
    pub resource_claims: Vec<ResourceClaim>,
    pub resource_claim_templates: Vec<ResourceClaimTemplate>,
    pub device_taint_rules: Vec<DeviceTaintRule>,
}

impl ClusterInput {
    /// Pods bound to a node and not finished.
    pub fn running_pods(&self) -> impl Iterator<Item = &Pod> {
        self.pods
            .iter()
            .filter(|pod| is_bound(pod) && !is_finished(pod))
    }

    /// Pods waiting for a scheduler, in input order.
    pub fn pending_pods(&self) -> impl Iterator<Item = &Pod> {
        self.pods
            .iter()
            .filter(|pod| !is_bound(pod) && !is_finished(pod))
    }
}

/// A pod in phase `Succeeded` or `Failed`: its containers have terminated for good.
pub fn is_finished(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

fn is_bound(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|spec| spec.node_name.as_deref())
        .is_some_and(|name| !name.is_empty())
}

/// Something in the input that was ignored, with where it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputWarning {
    pub source: Source,
    pub message: String,
}

impl fmt::Display for InputWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.source, self.message)
    }
}

/// Why the input could not be read. Every variant is invalid input (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file could not be read (missing, unreadable, not UTF-8).
    #[error("{}: cannot read file: {error}", display_file(file))]
    Read {
        file: PathBuf,
        #[source]
        error: std::io::Error,
    },
    /// The file holds more than [`files::MANIFEST_LIMIT`] bytes (or stdin never ends).
    #[error("{}: {error}", display_file(file))]
    TooLarge {
        file: PathBuf,
        #[source]
        error: files::ReadError,
    },
    /// The document is not well-formed YAML.
    #[error("{at}: malformed YAML: {message}")]
    Syntax { at: Source, message: String },
    /// The document is YAML but not a valid object; `error.path` names the field.
    #[error("{at}: {error}")]
    Field { at: Source, error: FieldError },
    /// The object is invalid in several fields; as the API server, every one is listed,
    /// one per line.
    #[error("{}", fields_lines(at, errors).join("\n"))]
    Fields { at: Source, errors: Vec<FieldError> },
    /// Two objects of one kind share a namespace and name.
    #[error(
        "{at}: metadata.name: Duplicate value: \"{name}\": {kind} {name} is already defined at {first}"
    )]
    Duplicate {
        at: Source,
        kind: &'static str,
        name: String,
        first: Source,
    },
}

/// `file: document N: <field error>` for each error.
fn fields_lines(at: &Source, errors: &[FieldError]) -> Vec<String> {
    errors
        .iter()
        .map(|error| format!("{at}: {error}"))
        .collect()
}

impl InputError {
    /// The error as the lines `berth simulate` prints after `error: `: one per field
    /// error, else one.
    pub fn lines(&self) -> Vec<String> {
        match self {
            InputError::Fields { at, errors } => fields_lines(at, errors),
            other => vec![other.to_string()],
        }
    }

    fn field(at: &Source, error: FieldError) -> Self {
        InputError::Field {
            at: at.clone(),
            error,
        }
    }
}

/// Reads every file (`-` is stdin) in order and returns the cluster they describe, plus
/// warnings about documents that were skipped.
pub fn load_files(paths: &[PathBuf]) -> Result<(ClusterInput, Vec<InputWarning>), InputError> {
    load_files_with(paths, ControllerOptions::default())
}

/// [`load_files`] with the simulated controllers' feature gates `controllers`.
pub fn load_files_with(
    paths: &[PathBuf],
    controllers: ControllerOptions,
) -> Result<(ClusterInput, Vec<InputWarning>), InputError> {
    let mut loader = Loader::default();
    loader.controllers = controllers;
    for path in paths {
        let text = read_file(path)?;
        loader.load_text(path, &text)?;
    }
    loader.finish()
}

/// Like [`load_files`], for text already in memory; `file` only names it in messages.
pub fn load_str(file: &Path, text: &str) -> Result<(ClusterInput, Vec<InputWarning>), InputError> {
    load_str_with(file, text, ControllerOptions::default())
}

/// [`load_str`] with the simulated controllers' feature gates `controllers`.
pub fn load_str_with(
    file: &Path,
    text: &str,
    controllers: ControllerOptions,
) -> Result<(ClusterInput, Vec<InputWarning>), InputError> {
    let mut loader = Loader::default();
    loader.controllers = controllers;
    loader.load_text(file, text)?;
    loader.finish()
}

/// The file name [`load_cluster`] gives objects read from the API server.
pub const CLUSTER_SOURCE: &str = "<cluster>";

/// A cluster read from an API server (one JSON object per entry, as the server returned
/// it), with the objects of `overlays` on top: an overlay object of the same kind,
/// namespace and name replaces the cluster's, any other is added. Cluster objects are
/// loaded exactly as `berth simulate -f` loads the same objects written as YAML, except
/// that a pod keeps the `spec.priority` the API server admitted it with, and that an
/// added object without a `creationTimestamp` is created after the cluster's newest
/// object (a pending pod added on top queues behind the cluster's, as a new pod would).
pub fn load_cluster(
    cluster: Vec<Value>,
    overlays: &[PathBuf],
) -> Result<(ClusterInput, Vec<InputWarning>), InputError> {
    let mut documents: Vec<(Source, String, Value)> = cluster
        .into_iter()
        .enumerate()
        .map(|(index, value)| {
            let at = Source {
                file: PathBuf::from(CLUSTER_SOURCE),
                document: index,
            };
            (at, String::new(), value)
        })
        .collect();
    let latest = documents
        .iter()
        .filter_map(|(_, _, value)| value.pointer("/metadata/creationTimestamp")?.as_str())
        .filter_map(|text| text.parse::<Timestamp>().ok())
        .map(|time| time.as_second())
        .max()
        .unwrap_or(CREATION_EPOCH_SECONDS);
    let mut index: HashMap<(String, String, String), usize> = documents
        .iter()
        .enumerate()
        .filter_map(|(position, (_, _, value))| Some((object_key(value)?, position)))
        .collect();
    for path in overlays {
        let text = read_file(path)?;
        for (number, document) in split_documents(&text).iter().enumerate() {
            if !document.has_content {
                continue;
            }
            let at = Source {
                file: path.clone(),
                document: number,
            };
            let value = parse_document(document, &at)?;
            for (prefix, item) in list_items(value) {
                match object_key(&item).and_then(|key| index.get(&key).copied()) {
                    Some(position) => documents[position] = (at.clone(), prefix, item),
                    None => {
                        if let Some(key) = object_key(&item) {
                            index.insert(key, documents.len());
                        }
                        documents.push((at.clone(), prefix, item));
                    }
                }
            }
        }
    }
    let mut loader = Loader::after_cluster(latest);
    for (at, prefix, value) in documents {
        loader.load_value(value, &at, &prefix)?;
    }
    loader.finish()
}

/// The objects of a document: the items of a `List` (with their path), or the document.
fn list_items(value: Value) -> Vec<(String, Value)> {
    let is_list = value
        .get("kind")
        .and_then(Value::as_str)
        .is_some_and(|kind| {
            kind == "List" || (kind.ends_with("List") && value.get("items").is_some())
        });
    if !is_list {
        return vec![(String::new(), value)];
    }
    match value.get("items") {
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(index, item)| (format!("items[{index}]."), item.clone()))
            .collect(),
        _ => Vec::new(),
    }
}

/// (group/kind, namespace, name) of an object as the loader admits it: a namespaced kind
/// without a namespace is in `default`. `None` for objects without a name. The API group
/// keeps apart kinds of one name (berth's PodGroup, the Workload API's and
/// scheduler-plugins').
fn object_key(value: &Value) -> Option<(String, String, String)> {
    let kind = value.get("kind")?.as_str()?;
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    let name = value.pointer("/metadata/name")?.as_str()?.to_string();
    let namespaced = loader::Kind::lookup(api_version, kind)
        .ok()
        .or_else(|| loader::Kind::from_kind(kind))
        .is_some_and(loader::Kind::namespaced);
    let kind = format!("{group}/{kind}");
    let namespace = match value.pointer("/metadata/namespace").and_then(Value::as_str) {
        _ if !namespaced => String::new(),
        Some(namespace) if !namespace.is_empty() => namespace.to_string(),
        _ => DEFAULT_NAMESPACE.to_string(),
    };
    Some((kind, namespace, name))
}

/// The text of `path` (`-` is stdin), at most [`files::MANIFEST_LIMIT`] bytes of it.
fn read_file(path: &Path) -> Result<String, InputError> {
    files::read_to_string(path, files::MANIFEST_LIMIT).map_err(|error| match error {
        files::ReadError::Io(error) => InputError::Read {
            file: path.to_path_buf(),
            error,
        },
        too_large @ files::ReadError::TooLarge { .. } => InputError::TooLarge {
            file: path.to_path_buf(),
            error: too_large,
        },
    })
}

#[cfg(test)]
mod tests;
