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
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::api::PodGroup;
use crate::cluster::{implicit_group, pod_group_of};
use crate::files;
use crate::framework::FieldError;
use crate::simulate::validation;

use super::controllers::{self, WorkloadRef};

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
    pub pod_groups: Vec<PodGroup>,
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
    let mut loader = Loader::default();
    for path in paths {
        let text = read_file(path)?;
        loader.load_text(path, &text)?;
    }
    loader.finish()
}

/// Like [`load_files`], for text already in memory; `file` only names it in messages.
pub fn load_str(file: &Path, text: &str) -> Result<(ClusterInput, Vec<InputWarning>), InputError> {
    let mut loader = Loader::default();
    loader.load_text(file, text)?;
    loader.finish()
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

// ---------------------------------------------------------------------------------------
// Splitting a stream into documents

/// One YAML document of a file: its text and the 1-based file line it starts on.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct RawDocument<'a> {
    pub(crate) text: &'a str,
    pub(crate) first_line: usize,
    pub(crate) has_content: bool,
}

/// Splits a YAML stream at document markers. A `---` or `...` at the start of a line is
/// always a marker in YAML (no scalar may contain one there), so this split agrees with
/// the parser while letting us count documents, including empty ones, ourselves.
pub(crate) fn split_documents(text: &str) -> Vec<RawDocument<'_>> {
    let mut documents = Vec::new();
    let mut start = 0;
    let mut first_line = 1;
    let mut has_content = false;
    let mut opened_by_marker = false;
    let mut offset = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let line_number = index + 1;
        let is_start = is_marker(line, "---");
        let is_end = is_marker(line, "...");
        if is_start && (has_content || opened_by_marker) {
            documents.push(RawDocument {
                text: &text[start..offset],
                first_line,
                has_content,
            });
            start = offset;
            first_line = line_number;
            has_content = false;
        }
        if is_start {
            opened_by_marker = true;
            // `--- {a: 1}` carries content on the marker line itself.
            has_content |= is_content(line[3..].trim_start());
        } else if is_end {
            offset += line.len();
            documents.push(RawDocument {
                text: &text[start..offset],
                first_line,
                has_content,
            });
            start = offset;
            first_line = line_number + 1;
            has_content = false;
            opened_by_marker = false;
            continue;
        } else if !line.starts_with('%') {
            has_content |= is_content(line.trim_start());
        }
        offset += line.len();
    }
    if has_content || opened_by_marker {
        documents.push(RawDocument {
            text: &text[start..],
            first_line,
            has_content,
        });
    }
    documents
}

fn is_marker(line: &str, marker: &str) -> bool {
    line.strip_prefix(marker)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']))
}

fn is_content(trimmed: &str) -> bool {
    !trimmed.is_empty() && !trimmed.starts_with('#')
}

pub(crate) fn parse_document(document: &RawDocument<'_>, at: &Source) -> Result<Value, InputError> {
    let options = serde_saphyr::options! { with_snippet: false };
    serde_saphyr::from_str_with_options::<Value>(document.text, options).map_err(|error| {
        let formatter = serde_saphyr::UserMessageFormatter;
        let render = serde_saphyr::render_options! {
            formatter: &formatter,
            snippets: serde_saphyr::SnippetMode::Off,
            line_offset: (document.first_line - 1) as u64,
        };
        InputError::Syntax {
            at: at.clone(),
            message: error.render_with_options(render),
        }
    })
}

// ---------------------------------------------------------------------------------------
// Dispatching documents to kinds

/// The kinds `berth simulate` models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Node,
    Pod,
    PodGroup,
    SchedulerProfile,
    PersistentVolumeClaim,
    PersistentVolume,
    StorageClass,
    CSINode,
    Namespace,
    PriorityClass,
    PodDisruptionBudget,
    Service,
    ReplicationController,
    ReplicaSet,
    StatefulSet,
    Deployment,
    Job,
    DaemonSet,
}

impl Kind {
    const ALL: [Kind; 18] = [
        Kind::Node,
        Kind::Pod,
        Kind::PodGroup,
        Kind::SchedulerProfile,
        Kind::PersistentVolumeClaim,
        Kind::PersistentVolume,
        Kind::StorageClass,
        Kind::CSINode,
        Kind::Namespace,
        Kind::PriorityClass,
        Kind::PodDisruptionBudget,
        Kind::Service,
        Kind::ReplicationController,
        Kind::ReplicaSet,
        Kind::StatefulSet,
        Kind::Deployment,
        Kind::Job,
        Kind::DaemonSet,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::Node => "Node",
            Kind::Pod => "Pod",
            Kind::PodGroup => "PodGroup",
            Kind::SchedulerProfile => "SchedulerProfile",
            Kind::PersistentVolumeClaim => "PersistentVolumeClaim",
            Kind::PersistentVolume => "PersistentVolume",
            Kind::StorageClass => "StorageClass",
            Kind::CSINode => "CSINode",
            Kind::Namespace => "Namespace",
            Kind::PriorityClass => "PriorityClass",
            Kind::PodDisruptionBudget => "PodDisruptionBudget",
            Kind::Service => "Service",
            Kind::ReplicationController => "ReplicationController",
            Kind::ReplicaSet => "ReplicaSet",
            Kind::StatefulSet => "StatefulSet",
            Kind::Deployment => "Deployment",
            Kind::Job => "Job",
            Kind::DaemonSet => "DaemonSet",
        }
    }

    fn api_version(self) -> &'static str {
        match self {
            Kind::Node
            | Kind::Pod
            | Kind::PersistentVolumeClaim
            | Kind::PersistentVolume
            | Kind::Namespace
            | Kind::Service
            | Kind::ReplicationController => "v1",
            Kind::ReplicaSet | Kind::StatefulSet | Kind::Deployment | Kind::DaemonSet => "apps/v1",
            Kind::Job => "batch/v1",
            Kind::PodGroup | Kind::SchedulerProfile => "berth.dev/v1alpha1",
            Kind::StorageClass | Kind::CSINode => "storage.k8s.io/v1",
            Kind::PriorityClass => "scheduling.k8s.io/v1",
            Kind::PodDisruptionBudget => "policy/v1",
        }
    }

    fn namespaced(self) -> bool {
        matches!(
            self,
            Kind::Pod
                | Kind::PodGroup
                | Kind::PersistentVolumeClaim
                | Kind::PodDisruptionBudget
                | Kind::Service
                | Kind::ReplicationController
                | Kind::ReplicaSet
                | Kind::StatefulSet
                | Kind::Deployment
                | Kind::Job
                | Kind::DaemonSet
        )
    }

    fn from_kind(kind: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == kind)
    }
}

/// Builds a [`ClusterInput`] document by document.
#[derive(Default)]
struct Loader {
    input: ClusterInput,
    warnings: Vec<InputWarning>,
    /// (kind, namespace, name) -> where it was first defined.
    seen: HashMap<(Kind, String, String), Source>,
    /// Where each pod and PVC came from, for errors raised after all files are read.
    pod_sources: Vec<Source>,
    /// Objects read so far; drives the deterministic `creationTimestamp`.
    objects: i64,
    /// The path of each workload read as a `List` item (`items[3].`), for errors found
    /// when its pods are created.
    workload_paths: HashMap<(Kind, String, String), String>,
}

impl Loader {
    fn load_text(&mut self, file: &Path, text: &str) -> Result<(), InputError> {
        for (index, document) in split_documents(text).iter().enumerate() {
            if !document.has_content {
                continue;
            }
            let at = Source {
                file: file.to_path_buf(),
                document: index,
            };
            let value = parse_document(document, &at)?;
            self.load_value(value, &at, "")?;
        }
        Ok(())
    }

    /// Loads one object (or the items of a `List`); `prefix` is the path of `value` in its
    /// document, for errors in list items.
    fn load_value(&mut self, value: Value, at: &Source, prefix: &str) -> Result<(), InputError> {
        let object = match value {
            Value::Null => return Ok(()),
            Value::Object(object) => object,
            other => {
                return Err(InputError::field(
                    at,
                    FieldError::new(
                        display_path(prefix),
                        other,
                        "expected a Kubernetes object: a mapping with apiVersion, kind and metadata",
                    ),
                ));
            }
        };
        let api_version = required_string(&object, "apiVersion", at, prefix)?;
        let kind = required_string(&object, "kind", at, prefix)?;
        if kind == "List" || (kind.ends_with("List") && object.contains_key("items")) {
            return self.load_list(object, at, prefix);
        }
        let Some(known) = Kind::from_kind(&kind) else {
            self.warn(
                at,
                format!("skipping {kind} ({api_version}): berth simulate does not model this kind"),
            );
            return Ok(());
        };
        if api_version != known.api_version() {
            self.warn(
                at,
                format!(
                    "skipping {kind} ({api_version}): unsupported apiVersion, berth simulate reads {kind} as {}",
                    known.api_version()
                ),
            );
            return Ok(());
        }
        self.load_object(known, Value::Object(object), at, prefix)
    }

    fn load_list(
        &mut self,
        mut object: serde_json::Map<String, Value>,
        at: &Source,
        prefix: &str,
    ) -> Result<(), InputError> {
        match object.remove("items") {
            None | Some(Value::Null) => Ok(()),
            Some(Value::Array(items)) => {
                for (index, item) in items.into_iter().enumerate() {
                    self.load_value(item, at, &format!("{prefix}items[{index}]."))?;
                }
                Ok(())
            }
            Some(other) => Err(InputError::field(
                at,
                FieldError::new(
                    format!("{prefix}items"),
                    other,
                    "expected a list of objects",
                ),
            )),
        }
    }

    fn load_object(
        &mut self,
        kind: Kind,
        value: Value,
        at: &Source,
        prefix: &str,
    ) -> Result<(), InputError> {
        self.objects += 1;
        let created = creation_time(self.objects - 1);
        match kind {
            Kind::Node => {
                let mut node: Node = decode(value, at, prefix)?;
                self.admit(kind, &mut node.metadata, created, at, prefix)?;
                // Before the kubelet-style default: the API server never sees a copied
                // allocatable, so an invalid capacity is one error, not two.
                validation::check(validation::node(&node), at, prefix)?;
                default_node(&mut node);
                self.input.nodes.push(node);
            }
            Kind::Pod => {
                let mut pod: Pod = decode(value, at, prefix)?;
                self.admit(kind, &mut pod.metadata, created, at, prefix)?;
                default_pod(&mut pod);
                validation::check(validation::pod(&pod), at, prefix)?;
                self.input.pods.push(pod);
                self.pod_sources.push(at.clone());
            }
            Kind::PodGroup => {
                validation::check(validation::pod_group_document(&value), at, prefix)?;
                let mut group: PodGroup = decode(value, at, prefix)?;
                self.admit(kind, &mut group.metadata, created, at, prefix)?;
                validation::check(validation::pod_group(&group), at, prefix)?;
                self.input.pod_groups.push(group);
            }
            Kind::SchedulerProfile => {
                let raw = self.admit_raw(kind, value, created, at, prefix)?;
                validation::check(validation::profile_document(&raw), at, prefix)?;
                self.input.profiles.push(ProfileDocument {
                    raw,
                    source: at.clone(),
                });
            }
            Kind::PersistentVolumeClaim => {
                let mut claim: PersistentVolumeClaim = decode(value, at, prefix)?;
                self.admit(kind, &mut claim.metadata, created, at, prefix)?;
                if let Some(spec) = claim.spec.as_mut() {
                    spec.volume_mode.get_or_insert_with(|| "Filesystem".into());
                }
                validation::check(validation::persistent_volume_claim(&claim), at, prefix)?;
                self.input.pvcs.push(claim);
            }
            Kind::PersistentVolume => {
                let mut volume: PersistentVolume = decode(value, at, prefix)?;
                self.admit(kind, &mut volume.metadata, created, at, prefix)?;
                if let Some(spec) = volume.spec.as_mut() {
                    spec.volume_mode.get_or_insert_with(|| "Filesystem".into());
                    spec.persistent_volume_reclaim_policy
                        .get_or_insert_with(|| "Retain".into());
                }
                validation::check(validation::persistent_volume(&volume), at, prefix)?;
                self.input.pvs.push(volume);
            }
            Kind::StorageClass => {
                let mut class: StorageClass = decode(value, at, prefix)?;
                self.admit(kind, &mut class.metadata, created, at, prefix)?;
                class.reclaim_policy.get_or_insert_with(|| "Delete".into());
                class
                    .volume_binding_mode
                    .get_or_insert_with(|| "Immediate".into());
                validation::check(validation::storage_class(&class), at, prefix)?;
                self.input.storage_classes.push(class);
            }
            Kind::CSINode => {
                let mut csi_node: CSINode = decode(value, at, prefix)?;
                self.admit(kind, &mut csi_node.metadata, created, at, prefix)?;
                validation::check(validation::csi_node(&csi_node), at, prefix)?;
                self.input.csi_nodes.push(csi_node);
            }
            Kind::Namespace => {
                let mut namespace: Namespace = decode(value, at, prefix)?;
                self.admit(kind, &mut namespace.metadata, created, at, prefix)?;
                label_namespace(&mut namespace);
                validation::check(validation::namespace(&namespace), at, prefix)?;
                self.input.namespaces.push(namespace);
            }
            Kind::PriorityClass => {
                let mut class: PriorityClass = decode(value, at, prefix)?;
                self.admit(kind, &mut class.metadata, created, at, prefix)?;
                class
                    .preemption_policy
                    .get_or_insert_with(|| PREEMPT_LOWER_PRIORITY.into());
                validation::check(validation::priority_class(&class), at, prefix)?;
                self.input.priority_classes.push(class);
            }
            Kind::PodDisruptionBudget => {
                let mut budget: PodDisruptionBudget = decode(value, at, prefix)?;
                self.admit(kind, &mut budget.metadata, created, at, prefix)?;
                validation::check(validation::pod_disruption_budget(&budget), at, prefix)?;
                self.input.pdbs.push(budget);
            }
            Kind::Service => {
                let mut service: Service = decode(value, at, prefix)?;
                self.admit(kind, &mut service.metadata, created, at, prefix)?;
                validation::check(validation::service(&service), at, prefix)?;
                self.input.services.push(service);
            }
            Kind::ReplicationController => {
                let mut rc: ReplicationController = decode(value, at, prefix)?;
                self.admit(kind, &mut rc.metadata, created, at, prefix)?;
                validation::check(validation::replication_controller(&rc), at, prefix)?;
                self.input.replication_controllers.push(rc);
            }
            Kind::ReplicaSet => {
                let mut rs: ReplicaSet = decode(value, at, prefix)?;
                self.admit(kind, &mut rs.metadata, created, at, prefix)?;
                self.remember_path(kind, &rs.metadata, prefix);
                validation::check(validation::replica_set(&rs), at, prefix)?;
                self.input.replica_sets.push(rs);
            }
            Kind::StatefulSet => {
                let mut ss: StatefulSet = decode(value, at, prefix)?;
                self.admit(kind, &mut ss.metadata, created, at, prefix)?;
                self.remember_path(kind, &ss.metadata, prefix);
                validation::check(validation::stateful_set(&ss), at, prefix)?;
                self.input.stateful_sets.push(ss);
            }
            Kind::Deployment => {
                let mut deployment: Deployment = decode(value, at, prefix)?;
                self.admit(kind, &mut deployment.metadata, created, at, prefix)?;
                self.remember_path(kind, &deployment.metadata, prefix);
                validation::check(validation::deployment(&deployment), at, prefix)?;
                self.input.deployments.push(deployment);
            }
            Kind::Job => {
                let mut job: Job = decode(value, at, prefix)?;
                self.admit(kind, &mut job.metadata, created, at, prefix)?;
                self.remember_path(kind, &job.metadata, prefix);
                validation::check(validation::job(&job), at, prefix)?;
                self.input.jobs.push(job);
            }
            Kind::DaemonSet => {
                let mut daemon_set: DaemonSet = decode(value, at, prefix)?;
                self.admit(kind, &mut daemon_set.metadata, created, at, prefix)?;
                self.remember_path(kind, &daemon_set.metadata, prefix);
                validation::check(validation::daemon_set(&daemon_set), at, prefix)?;
                self.input.daemon_sets.push(daemon_set);
            }
        }
        Ok(())
    }

    /// Metadata as the API server sets it on create: a name (from `generateName` if
    /// need be), the namespace, the creation time; rejects a second object of the same
    /// kind and name.
    fn admit(
        &mut self,
        kind: Kind,
        meta: &mut ObjectMeta,
        created: Time,
        at: &Source,
        prefix: &str,
    ) -> Result<(), InputError> {
        if kind.namespaced() {
            if meta.namespace.as_deref().is_none_or(str::is_empty) {
                meta.namespace = Some(DEFAULT_NAMESPACE.to_string());
            }
        } else {
            meta.namespace = None;
        }
        let namespace = meta.namespace.clone().unwrap_or_default();
        if meta.name.as_deref().is_none_or(str::is_empty) {
            match meta.generate_name.as_deref().filter(|g| !g.is_empty()) {
                Some(base) => {
                    let suffix = name_suffix(&format!("{at}/{prefix}/{}", self.objects));
                    meta.name = Some(format!("{base}{suffix}"));
                }
                None => {
                    return Err(InputError::field(
                        at,
                        FieldError::new(
                            format!("{prefix}metadata.name"),
                            "",
                            format!(
                                "Required value: {} needs a name or generateName",
                                kind.name()
                            ),
                        ),
                    ));
                }
            }
        }
        let name = meta.name.clone().unwrap_or_default();
        meta.creation_timestamp.get_or_insert(created);
        let key = (kind, namespace.clone(), name.clone());
        if let Some(first) = self.seen.get(&key) {
            let qualified = if namespace.is_empty() {
                name
            } else {
                format!("{namespace}/{name}")
            };
            return Err(InputError::Duplicate {
                at: at.clone(),
                kind: kind.name(),
                name: qualified,
                first: first.clone(),
            });
        }
        self.seen.insert(key, at.clone());
        Ok(())
    }

    /// [`Loader::admit`] for an object kept as JSON: only its `metadata` is decoded, and
    /// written back as admitted.
    fn admit_raw(
        &mut self,
        kind: Kind,
        mut value: Value,
        created: Time,
        at: &Source,
        prefix: &str,
    ) -> Result<Value, InputError> {
        /// Only the metadata of an object; the rest is ignored.
        #[derive(serde::Deserialize)]
        struct Metadata {
            #[serde(default)]
            metadata: Option<ObjectMeta>,
        }
        let Metadata { metadata } = decode(value.clone(), at, prefix)?;
        let mut meta = metadata.unwrap_or_default();
        self.admit(kind, &mut meta, created, at, prefix)?;
        let admitted = serde_json::to_value(&meta).map_err(|error| {
            InputError::field(
                at,
                FieldError::new(format!("{prefix}metadata"), "", error.to_string()),
            )
        })?;
        if let Value::Object(object) = &mut value {
            object.insert("metadata".to_string(), admitted);
        }
        Ok(value)
    }

    fn warn(&mut self, at: &Source, message: String) {
        self.warnings.push(InputWarning {
            source: at.clone(),
            message,
        });
    }

    /// Defaults that depend on objects anywhere in the input (priority classes, default
    /// storage class, namespaces), applied once everything is read.
    fn finish(mut self) -> Result<(ClusterInput, Vec<InputWarning>), InputError> {
        self.create_controlled_objects()?;
        self.create_implicit_pod_groups()?;
        add_system_priority_classes(&mut self.input.priority_classes);
        let classes = &self.input.priority_classes;
        for (pod, at) in self.input.pods.iter_mut().zip(&self.pod_sources) {
            resolve_priority(pod, classes).map_err(|error| InputError::field(at, error))?;
        }
        default_storage_classes(&mut self.input);
        add_missing_namespaces(&mut self.input);
        Ok((self.input, self.warnings))
    }
}

// ---------------------------------------------------------------------------------------
// Objects the cluster's controllers would create

impl Loader {
    fn remember_path(&mut self, kind: Kind, meta: &ObjectMeta, prefix: &str) {
        if !prefix.is_empty() {
            let namespace = meta.namespace.clone().unwrap_or_default();
            let name = meta.name.clone().unwrap_or_default();
            self.workload_paths
                .insert((kind, namespace, name), prefix.to_string());
        }
    }

    /// Where a workload was read, for errors about it and the objects made from it.
    fn workload_source(&self, workload: &WorkloadRef) -> Source {
        Kind::from_kind(workload.kind)
            .and_then(|kind| {
                self.seen
                    .get(&(kind, workload.namespace.clone(), workload.name.clone()))
            })
            .cloned()
            .unwrap_or_else(Source::builtin)
    }

    /// A field error about a workload, with the workload's place in its document.
    fn workload_error(&self, workload: &WorkloadRef, mut error: FieldError) -> InputError {
        let path = Kind::from_kind(workload.kind).and_then(|kind| {
            self.workload_paths
                .get(&(kind, workload.namespace.clone(), workload.name.clone()))
        });
        if let Some(prefix) = path {
            error.path = format!("{prefix}{}", error.path);
        }
        InputError::field(&self.workload_source(workload), error)
    }

    /// The ReplicaSets, Pods and PVCs the workload controllers would create
    /// ([`controllers::expand`]), admitted and defaulted as if read from the workload's
    /// document; after every object is read, so existing pods and nodes are known.
    fn create_controlled_objects(&mut self) -> Result<(), InputError> {
        let expansion = controllers::expand(&mut self.input)
            .map_err(|failure| self.workload_error(&failure.workload, *failure.error))?;
        for (owner, mut replica_set) in expansion.replica_sets {
            let at = self.workload_source(&owner);
            self.admit_created(Kind::ReplicaSet, &mut replica_set.metadata, &at)?;
            self.input.replica_sets.push(replica_set);
        }
        for (owner, mut claim) in expansion.claims {
            let at = self.workload_source(&owner);
            self.admit_created(Kind::PersistentVolumeClaim, &mut claim.metadata, &at)?;
            if let Some(spec) = claim.spec.as_mut() {
                spec.volume_mode.get_or_insert_with(|| "Filesystem".into());
            }
            self.input.pvcs.push(claim);
        }
        for (owner, mut pod) in expansion.pods {
            let at = self.workload_source(&owner);
            self.admit_created(Kind::Pod, &mut pod.metadata, &at)?;
            default_pod(&mut pod);
            self.input.pods.push(pod);
            self.pod_sources.push(at);
        }
        Ok(())
    }

    /// The PodGroups berth creates for pods annotated `berth.dev/min-member` whose group
    /// does not exist, as the operator does live; an invalid annotation is a warning (the
    /// operator's `InvalidMinMember` event) and creates nothing.
    fn create_implicit_pod_groups(&mut self) -> Result<(), InputError> {
        let mut groups = Vec::new();
        let mut warnings = Vec::new();
        let candidates = self.input.pods.iter().zip(&self.pod_sources);
        for (pod, at) in candidates.filter(|(pod, _)| !is_finished(pod)) {
            let Some((namespace, name)) = pod_group_of(pod) else {
                continue;
            };
            let key = (Kind::PodGroup, namespace.clone(), name.clone());
            if self.seen.contains_key(&key) || groups.iter().any(|(k, _, _)| *k == key) {
                continue;
            }
            match implicit_group(pod, &namespace, &name) {
                Ok(Some(group)) => groups.push((key, group, at.clone())),
                Ok(None) => {}
                Err(message) => warnings.push(InputWarning {
                    source: at.clone(),
                    message: format!("pod {namespace}/{}: {message}", pod_name(pod)),
                }),
            }
        }
        self.warnings.extend(warnings);
        for (_, mut group, at) in groups {
            self.admit_created(Kind::PodGroup, &mut group.metadata, &at)?;
            self.input.pod_groups.push(group);
        }
        Ok(())
    }

    /// [`Loader::admit`] for an object berth creates on the input's behalf.
    fn admit_created(
        &mut self,
        kind: Kind,
        meta: &mut ObjectMeta,
        at: &Source,
    ) -> Result<(), InputError> {
        self.objects += 1;
        let created = creation_time(self.objects - 1);
        self.admit(kind, meta, created, at, "")
    }
}

fn pod_name(pod: &Pod) -> &str {
    pod.metadata.name.as_deref().unwrap_or_default()
}

fn required_string(
    object: &serde_json::Map<String, Value>,
    field: &str,
    at: &Source,
    prefix: &str,
) -> Result<String, InputError> {
    match object.get(field) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(other) => Err(InputError::field(
            at,
            FieldError::new(
                format!("{prefix}{field}"),
                other,
                "expected a non-empty string",
            ),
        )),
        None => Err(InputError::field(
            at,
            FieldError::new(
                format!("{prefix}{field}"),
                "",
                "Required value: every document must be a Kubernetes object with apiVersion and kind",
            ),
        )),
    }
}

/// The path of an object inside its document: `<document>` or `items[3]`.
fn display_path(prefix: &str) -> String {
    match prefix.trim_end_matches('.') {
        "" => "<document>".to_string(),
        path => path.to_string(),
    }
}

/// Decodes a typed object; on failure the error names the field path serde reached.
fn decode<T: DeserializeOwned>(value: Value, at: &Source, prefix: &str) -> Result<T, InputError> {
    let kind = value
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    serde_path_to_error::deserialize::<_, T>(value).map_err(|error| {
        let path = error.path().to_string();
        let path = if path == "." { String::new() } else { path };
        let full = display_path(&format!("{prefix}{path}"));
        let inner = error.inner().to_string();
        // Kubernetes reads YAML 1.1 too, where a bare y/n/yes/no/on/off is a boolean.
        let hint = if inner.starts_with("invalid type: boolean") {
            " (YAML reads bare y, n, yes, no, on and off as booleans: quote the value)"
        } else {
            ""
        };
        InputError::field(
            at,
            FieldError::new(full, "", format!("cannot decode {kind}: {inner}{hint}")),
        )
    })
}

fn creation_time(index: i64) -> Time {
    let seconds = CREATION_EPOCH_SECONDS.saturating_add(index);
    Time(Timestamp::from_second(seconds).unwrap_or(Timestamp::UNIX_EPOCH))
}

// ---------------------------------------------------------------------------------------
// Per-kind defaults

/// `status.allocatable` defaults to `status.capacity`, as in the API server's
/// `SetDefaults_NodeStatus`.
fn default_node(node: &mut Node) {
    if let Some(status) = node.status.as_mut()
        && status.allocatable.is_none()
    {
        status.allocatable = status.capacity.clone();
    }
}

const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";
const UNREACHABLE_TAINT: &str = "node.kubernetes.io/unreachable";
/// DefaultTolerationSeconds admission: 300 s for not-ready and unreachable.
const DEFAULT_TOLERATION_SECONDS: i64 = 300;

/// The pod defaults of the API server (`SetDefaults_Pod`, `PrepareForCreate`) and of the
/// DefaultTolerationSeconds admission plugin. Priority is resolved in [`resolve_priority`]
/// once all PriorityClasses are known.
fn default_pod(pod: &mut Pod) {
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let name = pod.metadata.name.clone().unwrap_or_default();
    if pod.metadata.uid.as_deref().is_none_or(str::is_empty) {
        pod.metadata.uid = Some(deterministic_uid(&format!("{namespace}/{name}")));
    }
    let spec = pod.spec.get_or_insert_with(Default::default);
    if spec.scheduler_name.as_deref().is_none_or(str::is_empty) {
        spec.scheduler_name = Some(DEFAULT_SCHEDULER_NAME.to_string());
    }
    for container in spec
        .containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten())
    {
        default_requests_from_limits(container);
    }
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    for taint in [NOT_READY_TAINT, UNREACHABLE_TAINT] {
        if !tolerates_no_execute(tolerations, taint) {
            tolerations.push(Toleration {
                key: Some(taint.to_string()),
                operator: Some("Exists".to_string()),
                effect: Some("NoExecute".to_string()),
                toleration_seconds: Some(DEFAULT_TOLERATION_SECONDS),
                value: None,
            });
        }
    }
    let status = pod.status.get_or_insert_with(PodStatus::default);
    status.phase.get_or_insert_with(|| "Pending".to_string());
}

/// A container that sets a limit but no request for a resource requests the limit.
fn default_requests_from_limits(container: &mut Container) {
    let Some(resources) = container.resources.as_mut() else {
        return;
    };
    let Some(limits) = resources.limits.as_ref() else {
        return;
    };
    let requests = resources.requests.get_or_insert_with(BTreeMap::new);
    for (resource, quantity) in limits {
        requests
            .entry(resource.clone())
            .or_insert_with(|| quantity.clone());
    }
}

/// Upstream only adds a default toleration when none already tolerates the taint with
/// effect NoExecute (or any effect).
fn tolerates_no_execute(tolerations: &[Toleration], key: &str) -> bool {
    tolerations.iter().any(|t| {
        let key_matches = match t.key.as_deref() {
            None | Some("") => t.operator.as_deref() == Some("Exists"),
            Some(k) => k == key,
        };
        let effect_matches = matches!(t.effect.as_deref(), None | Some("") | Some("NoExecute"));
        key_matches && effect_matches
    })
}

const PREEMPT_LOWER_PRIORITY: &str = "PreemptLowerPriority";

/// The classes every cluster has, added when the input does not define them.
fn add_system_priority_classes(classes: &mut Vec<PriorityClass>) {
    for (name, value) in [
        ("system-node-critical", 2_000_001_000),
        ("system-cluster-critical", 2_000_000_000),
    ] {
        if classes
            .iter()
            .all(|c| c.metadata.name.as_deref() != Some(name))
        {
            classes.push(PriorityClass {
                metadata: ObjectMeta {
                    name: Some(name.to_string()),
                    creation_timestamp: Some(creation_time(0)),
                    ..Default::default()
                },
                value,
                preemption_policy: Some(PREEMPT_LOWER_PRIORITY.to_string()),
                description: Some("Built-in class of every cluster.".to_string()),
                global_default: Some(false),
            });
        }
    }
}

/// The Priority admission plugin: `spec.priority` and `spec.preemptionPolicy` come from
/// the named PriorityClass, or from the globalDefault class with the lowest value, or are
/// 0 and PreemptLowerPriority. An unknown class or a conflicting explicit priority is
/// rejected, as admission would.
fn resolve_priority(pod: &mut Pod, classes: &[PriorityClass]) -> Result<(), FieldError> {
    let pod_name = format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    );
    let spec = pod.spec.get_or_insert_with(Default::default);
    let (value, policy) = match spec
        .priority_class_name
        .as_deref()
        .filter(|n| !n.is_empty())
    {
        Some(name) => {
            let class = classes
                .iter()
                .find(|c| c.metadata.name.as_deref() == Some(name))
                .ok_or_else(|| {
                    FieldError::new(
                        "spec.priorityClassName",
                        format!("\"{name}\""),
                        format!("pod {pod_name} is forbidden: no PriorityClass with name {name} was found"),
                    )
                })?;
            (class.value, class.preemption_policy.clone())
        }
        None => {
            let default = classes
                .iter()
                .filter(|c| c.global_default == Some(true))
                .min_by_key(|c| c.value);
            if let Some(class) = default {
                spec.priority_class_name = class.metadata.name.clone();
            }
            (
                default.map_or(0, |c| c.value),
                default.and_then(|c| c.preemption_policy.clone()),
            )
        }
    };
    let policy = policy.unwrap_or_else(|| PREEMPT_LOWER_PRIORITY.to_string());
    if let Some(given) = spec.priority
        && given != value
    {
        return Err(FieldError::new(
            "spec.priority",
            given,
            format!(
                "pod {pod_name} is forbidden: the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name"
            ),
        ));
    }
    if let Some(given) = spec.preemption_policy.as_deref()
        && given != policy
    {
        return Err(FieldError::new(
            "spec.preemptionPolicy",
            format!("\"{given}\""),
            format!(
                "pod {pod_name} is forbidden: the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name"
            ),
        ));
    }
    spec.priority = Some(value);
    spec.preemption_policy = Some(policy);
    Ok(())
}

const DEFAULT_CLASS_ANNOTATIONS: [&str; 2] = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];

/// The DefaultStorageClass admission plugin: a claim that names no class (the field is
/// absent, not `""`) gets the default class; with several defaults, the newest wins.
fn default_storage_classes(input: &mut ClusterInput) {
    let default = input
        .storage_classes
        .iter()
        .filter(|class| {
            let annotations = class.metadata.annotations.as_ref();
            DEFAULT_CLASS_ANNOTATIONS.iter().any(|key| {
                annotations.and_then(|a| a.get(*key)).map(String::as_str) == Some("true")
            })
        })
        .max_by(|a, b| {
            a.metadata
                .creation_timestamp
                .cmp(&b.metadata.creation_timestamp)
                .then_with(|| b.metadata.name.cmp(&a.metadata.name))
        })
        .and_then(|class| class.metadata.name.clone());
    let Some(default) = default else {
        return;
    };
    for claim in &mut input.pvcs {
        if let Some(spec) = claim.spec.as_mut()
            && spec.storage_class_name.is_none()
        {
            spec.storage_class_name = Some(default.clone());
        }
    }
}

const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The API server labels every namespace with its own name.
fn label_namespace(namespace: &mut Namespace) {
    let name = namespace.metadata.name.clone().unwrap_or_default();
    namespace
        .metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(NAMESPACE_NAME_LABEL.to_string(), name);
}

/// A namespace that objects live in exists in a real cluster; namespaces the input uses
/// but does not define are created (labelled as the API server would) so namespace
/// selectors see them.
fn add_missing_namespaces(input: &mut ClusterInput) {
    let defined: HashSet<String> = input
        .namespaces
        .iter()
        .filter_map(|ns| ns.metadata.name.clone())
        .collect();
    let used = std::iter::once(DEFAULT_NAMESPACE.to_string())
        .chain(
            input
                .pods
                .iter()
                .filter_map(|o| o.metadata.namespace.clone()),
        )
        .chain(
            input
                .pod_groups
                .iter()
                .filter_map(|o| o.metadata.namespace.clone()),
        )
        .chain(
            input
                .pvcs
                .iter()
                .filter_map(|o| o.metadata.namespace.clone()),
        )
        .chain(
            input
                .pdbs
                .iter()
                .filter_map(|o| o.metadata.namespace.clone()),
        );
    let mut added = HashSet::new();
    for name in used {
        if defined.contains(&name) || !added.insert(name.clone()) {
            continue;
        }
        let mut namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(name),
                creation_timestamp: Some(creation_time(0)),
                ..Default::default()
            },
            ..Default::default()
        };
        label_namespace(&mut namespace);
        input.namespaces.push(namespace);
    }
}

// ---------------------------------------------------------------------------------------
// Deterministic identities

/// 64-bit FNV-1a: stable across Rust versions, unlike `DefaultHasher`.
fn fnv1a(bytes: &[u8], seed: u64) -> u64 {
    bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325 ^ seed, |hash, byte| {
            (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

/// A UUID-shaped (version 8, RFC 9562 "custom") identifier derived from `key`.
pub(crate) fn deterministic_uid(key: &str) -> String {
    let high = fnv1a(key.as_bytes(), 0);
    let low = fnv1a(key.as_bytes(), 0x9e37_79b9_7f4a_7c15);
    let bytes = ((u128::from(high) << 64) | u128::from(low)).to_be_bytes();
    let mut b = bytes;
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|byte| format!("{byte:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// The 5-character suffix of `generateName`, from the alphabet the API server uses.
pub(crate) fn name_suffix(key: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut hash = fnv1a(key.as_bytes(), 0);
    (0..5)
        .map(|_| {
            let index = (hash % ALPHABET.len() as u64) as usize;
            hash /= ALPHABET.len() as u64;
            char::from(ALPHABET[index])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<(ClusterInput, Vec<InputWarning>), InputError> {
        load_str(Path::new("test.yaml"), text)
    }

    fn documents(text: &str) -> Vec<(usize, bool)> {
        split_documents(text)
            .iter()
            .map(|d| (d.first_line, d.has_content))
            .collect()
    }

    #[test]
    fn splits_documents_as_a_user_counts_them() {
        // (name, text, (first line, has content) per document)
        type Case = (&'static str, &'static str, Vec<(usize, bool)>);
        let cases: &[Case] = &[
            ("one bare document", "a: 1\n", vec![(1, true)]),
            (
                "leading marker opens document 0",
                "---\na: 1\n",
                vec![(1, true)],
            ),
            (
                "comment before leading marker",
                "# c\n---\na: 1\n---\nb: 2\n",
                vec![(1, true), (4, true)],
            ),
            (
                "empty document in the middle counts",
                "a: 1\n---\n---\nb: 2\n",
                vec![(1, true), (2, false), (3, true)],
            ),
            (
                "content on the marker line",
                "--- {a: 1}\n",
                vec![(1, true)],
            ),
            (
                "end marker then next document",
                "a: 1\n...\n---\nb: 2\n",
                vec![(1, true), (3, true)],
            ),
            (
                "indented dashes are content",
                "a: |\n  ---\n",
                vec![(1, true)],
            ),
            (
                "no newline at end",
                "a: 1\n---\nb: 2",
                vec![(1, true), (2, true)],
            ),
        ];
        for (name, text, want) in cases {
            assert_eq!(&documents(text), want, "{name}");
        }
    }

    #[test]
    fn malformed_yaml_names_document_and_file_line() {
        let text = "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\n---\nkind: [unclosed\n";
        let error = load(text).expect_err("invalid input").to_string();
        assert!(
            error.starts_with("test.yaml: document 2: malformed YAML"),
            "{error}"
        );
        assert!(error.contains("line 6"), "{error}");
    }

    #[test]
    fn decode_error_names_field_path() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    ports: [{containerPort: http}]\n";
        let error = load(text).expect_err("invalid input").to_string();
        assert!(
            error.starts_with("test.yaml: document 0: spec.containers[0].ports[0].containerPort: "),
            "{error}"
        );
    }

    #[test]
    fn list_items_error_path_includes_index() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: a}\n- apiVersion: v1\n  kind: Node\n  metadata: {labels: [x]}\n";
        let error = load(text).expect_err("invalid input").to_string();
        assert!(
            error.starts_with("test.yaml: document 0: items[1].metadata.labels"),
            "{error}"
        );
    }

    #[test]
    fn unknown_kind_warns_and_is_skipped() {
        let text = "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: d}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: a}\n";
        let (input, warnings) = load(text).expect("valid input");
        assert_eq!(input.nodes.len(), 1);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0]
                .to_string()
                .starts_with("test.yaml: document 0: skipping CronJob")
        );
    }

    #[test]
    fn duplicate_names_are_rejected_per_kind_and_namespace() {
        let pod = |ns: &str| {
            format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: {ns}}}\n")
        };
        let ok = format!("{}---\n{}", pod("a"), pod("b"));
        assert!(load(&ok).is_ok());
        let dup = format!(
            "{}---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\n",
            pod("default")
        );
        let error = load(&dup).expect_err("invalid input").to_string();
        assert!(
            error.starts_with(
                "test.yaml: document 1: metadata.name: Duplicate value: \"default/p\""
            ),
            "{error}"
        );
        assert!(error.contains("test.yaml: document 0"), "{error}");
    }

    #[test]
    fn pods_get_api_server_defaults() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n  - name: c\n    resources: {limits: {cpu: 2}}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec: {containers: []}\n";
        let (input, _) = load(text).expect("valid input");
        let [a, b] = &input.pods[..] else {
            panic!("want two pods, got {}", input.pods.len());
        };
        let spec = a.spec.clone().unwrap_or_default();
        assert_eq!(a.metadata.namespace.as_deref(), Some("default"));
        assert_eq!(spec.scheduler_name.as_deref(), Some("default-scheduler"));
        assert_eq!(spec.priority, Some(0));
        let requests = spec.containers[0]
            .resources
            .clone()
            .unwrap_or_default()
            .requests;
        assert_eq!(
            requests.and_then(|r| r.get("cpu").cloned()).map(|q| q.0),
            Some("2".to_string())
        );
        assert!(a.metadata.creation_timestamp < b.metadata.creation_timestamp);
        assert_ne!(a.metadata.uid, b.metadata.uid);
        let (again, _) = load(text).expect("valid input");
        assert_eq!(
            again.pods[0].metadata.uid, a.metadata.uid,
            "uid is deterministic"
        );
    }

    #[test]
    fn priority_comes_from_class_or_global_default() {
        let classes = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: base}\nvalue: 10\nglobalDefault: true\n";
        let text = format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: a}}\nspec: {{priorityClassName: high, containers: []}}\n---\napiVersion: v1\nkind: Pod\nmetadata: {{name: b}}\nspec: {{containers: []}}\n---\n{classes}"
        );
        let (input, _) = load(&text).expect("valid input");
        let priorities: Vec<_> = input
            .pods
            .iter()
            .map(|p| p.spec.as_ref().and_then(|s| s.priority))
            .collect();
        assert_eq!(priorities, vec![Some(1000), Some(10)]);
    }

    #[test]
    fn unknown_priority_class_is_rejected_naming_the_pod() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: ml}\nspec: {priorityClassName: nope, containers: []}\n";
        let error = load(text).expect_err("invalid input").to_string();
        assert!(
            error.starts_with("test.yaml: document 0: spec.priorityClassName"),
            "{error}"
        );
        assert!(error.contains("pod ml/a"), "{error}");
        let system = text.replace("nope", "system-node-critical");
        assert!(load(&system).is_ok());
    }

    #[test]
    fn not_an_object_is_an_error() {
        for text in ["just a string\n", "- a\n- b\n", "kind: Node\n"] {
            assert!(
                matches!(load(text), Err(InputError::Field { .. })),
                "{text}"
            );
        }
    }
}
