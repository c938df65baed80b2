//! Reading a live cluster into the documents `berth simulate -f` takes.
//!
//! The simulation must see what the scheduler sees, so every object is kept exactly as
//! the API server returned it (server-set fields and status included) and as raw JSON:
//! decoding pods into the 1.37 types would drop a 1.35 server's `spec.workloadRef`,
//! which the input loader reads. Each kind is read with paginated lists (`limit` and
//! `continue`, the continue token holding the first page's resourceVersion, so a kind
//! is one consistent read); a kind the user may not list, or that the server does not
//! serve (berth's CRDs not installed), is a [`KindGap`] saying what its absence means
//! for the result, not a failure. The Workload API's kinds, which most 1.37 clusters do
//! not serve (a beta API off by default), and scheduler-plugins' PodGroups, whose CRD
//! only clusters that ran scheduler-plugins have, are read where served and otherwise
//! only noted ([`ClusterRead::not_served`]). Nothing is written to the cluster.
//!
//! [`scrub`] removes what a snapshot shared in a bug report should not carry, and
//! [`to_yaml`] writes the documents as the multi-document YAML `berth simulate -f` reads.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use kube::api::ListParams;
use kube::core::Request;
use serde_json::Value;

use crate::kubeconfig;

mod scrub;
mod yaml;

pub use scrub::scrub;
pub use yaml::to_yaml;

/// Objects per list page unless [`ReadOptions::page_size`] says otherwise (kubectl's
/// `--chunk-size` default).
pub const DEFAULT_PAGE_SIZE: u32 = 500;

/// The most objects [`read_cluster`] keeps, over all kinds; a larger cluster is an error
/// rather than unbounded memory.
pub const MAX_OBJECTS: usize = 1_000_000;

/// How [`read_cluster`] reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOptions {
    /// `limit` of each list request.
    pub page_size: u32,
    /// The read fails once more objects than this have been listed.
    pub max_objects: usize,
    /// What messages call the API server (its URL, see [`Connection::server`]).
    pub server: String,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            page_size: DEFAULT_PAGE_SIZE,
            max_objects: MAX_OBJECTS,
            server: "the API server".to_string(),
        }
    }
}

/// One kind berth reads: where it is listed and what the simulation loses without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindSpec {
    pub kind: &'static str,
    pub api_version: &'static str,
    /// The cluster-wide list path, e.g. `/api/v1/pods`.
    pub path: &'static str,
    /// One sentence: what the result means when this kind could not be read.
    pub consequence: &'static str,
}

/// The Workload API's group version: served from 1.37 with the GenericWorkload gate on
/// (beta, off by default), so most clusters answer 404 for its kinds. Such a 404 is not
/// a gap: the cluster has no such objects, and its scheduler refuses the members of pod
/// groups (see [`ClusterRead::serves_scheduling_pod_groups`]).
pub const SCHEDULING_V1BETA1: &str = "scheduling.k8s.io/v1beta1";

/// scheduler-plugins' group version (its Coscheduling PodGroup), served only where its
/// CRD is installed. Its 404 is not a gap either: without the CRD there are no such
/// PodGroups, and pods labelled `scheduling.x-k8s.io/pod-group` can only name berth.dev
/// ones, in the cluster as in the simulation.
pub const SCHEDULER_PLUGINS_V1ALPHA1: &str = "scheduling.x-k8s.io/v1alpha1";

/// Kubernetes 1.35's Workload API (`Workload` with `podGroups`), served only by 1.35
/// with the GenericWorkload gate on and the API enabled. Its 404 is not a gap: the
/// cluster's scheduler then refuses pods with `spec.workloadRef` (see
/// [`ClusterRead::serves_legacy_workloads`]).
pub const SCHEDULING_V1ALPHA1: &str = "scheduling.k8s.io/v1alpha1";

/// Group versions a cluster may not serve without anything missing from the read.
const OPTIONAL_API_VERSIONS: [&str; 3] = [
    SCHEDULING_V1BETA1,
    SCHEDULER_PLUGINS_V1ALPHA1,
    SCHEDULING_V1ALPHA1,
];

/// The kinds read, in the order their documents are written.
pub const KINDS: &[KindSpec] = &[
    KindSpec {
        kind: "Node",
        api_version: "v1",
        path: "/api/v1/nodes",
        consequence: "without nodes every pending pod is unschedulable and the simulation says nothing about the cluster",
    },
    KindSpec {
        kind: "Pod",
        api_version: "v1",
        path: "/api/v1/pods",
        consequence: "without pods nothing is pending and no node holds anything, so the simulation is empty",
    },
    KindSpec {
        kind: "Namespace",
        api_version: "v1",
        path: "/api/v1/namespaces",
        consequence: "namespaces get only their kubernetes.io/metadata.name label, so affinity namespaceSelectors see no other namespace label",
    },
    KindSpec {
        kind: "PersistentVolumeClaim",
        api_version: "v1",
        path: "/api/v1/persistentvolumeclaims",
        consequence: "pods that mount a claim are unschedulable, their claims not found",
    },
    KindSpec {
        kind: "PersistentVolume",
        api_version: "v1",
        path: "/api/v1/persistentvolumes",
        consequence: "claims find no volume, so pods with bound or pre-provisioned claims are not placed as in the cluster",
    },
    KindSpec {
        kind: "StorageClass",
        api_version: "storage.k8s.io/v1",
        path: "/apis/storage.k8s.io/v1/storageclasses",
        consequence: "claims are judged without their storage class (no delayed binding, no provisioning)",
    },
    KindSpec {
        kind: "CSINode",
        api_version: "storage.k8s.io/v1",
        path: "/apis/storage.k8s.io/v1/csinodes",
        consequence: "CSI drivers' per-node volume limits are not checked",
    },
    KindSpec {
        kind: "DeviceClass",
        api_version: "resource.k8s.io/v1",
        path: "/apis/resource.k8s.io/v1/deviceclasses",
        consequence: "claims find no device class, so pods with claims or DRA-backed extended resources are unschedulable",
    },
    KindSpec {
        kind: "ResourceSlice",
        api_version: "resource.k8s.io/v1",
        path: "/apis/resource.k8s.io/v1/resourceslices",
        consequence: "no node has devices, so pods with claims are unschedulable",
    },
    KindSpec {
        kind: "ResourceClaim",
        api_version: "resource.k8s.io/v1",
        path: "/apis/resource.k8s.io/v1/resourceclaims",
        consequence: "no device counts as allocated, and pods naming a claim wait for it",
    },
    KindSpec {
        kind: "ResourceClaimTemplate",
        api_version: "resource.k8s.io/v1",
        path: "/apis/resource.k8s.io/v1/resourceclaimtemplates",
        consequence: "pods whose template claim is not made yet wait for it",
    },
    KindSpec {
        kind: "DeviceTaintRule",
        api_version: "resource.k8s.io/v1",
        path: "/apis/resource.k8s.io/v1/devicetaintrules",
        consequence: "devices are judged without the taints DeviceTaintRules add",
    },
    KindSpec {
        kind: "PriorityClass",
        api_version: "scheduling.k8s.io/v1",
        path: "/apis/scheduling.k8s.io/v1/priorityclasses",
        consequence: "pods keep the spec.priority the API server gave them",
    },
    KindSpec {
        kind: "PodDisruptionBudget",
        api_version: "policy/v1",
        path: "/apis/policy/v1/poddisruptionbudgets",
        consequence: "preemption ignores disruption budgets",
    },
    KindSpec {
        kind: "Service",
        api_version: "v1",
        path: "/api/v1/services",
        consequence: "default topology spreading ignores services' selectors",
    },
    KindSpec {
        kind: "ReplicaSet",
        api_version: "apps/v1",
        path: "/apis/apps/v1/replicasets",
        consequence: "default topology spreading ignores ReplicaSets and their missing replicas are not simulated",
    },
    KindSpec {
        kind: "StatefulSet",
        api_version: "apps/v1",
        path: "/apis/apps/v1/statefulsets",
        consequence: "default topology spreading ignores StatefulSets and their missing replicas are not simulated",
    },
    KindSpec {
        kind: "ReplicationController",
        api_version: "v1",
        path: "/api/v1/replicationcontrollers",
        consequence: "default topology spreading ignores ReplicationControllers",
    },
    KindSpec {
        kind: "PodGroup",
        api_version: "berth.dev/v1alpha1",
        path: "/apis/berth.dev/v1alpha1/podgroups",
        consequence: "pods that name a PodGroup find none (only berth.dev/min-member annotations make implicit groups)",
    },
    KindSpec {
        kind: "PodGroup",
        api_version: SCHEDULER_PLUGINS_V1ALPHA1,
        path: "/apis/scheduling.x-k8s.io/v1alpha1/podgroups",
        consequence: "pods labelled scheduling.x-k8s.io/pod-group find only berth.dev PodGroups",
    },
    KindSpec {
        kind: "PodGroup",
        api_version: SCHEDULING_V1BETA1,
        path: "/apis/scheduling.k8s.io/v1beta1/podgroups",
        consequence: "pods in Workload API pod groups (spec.schedulingGroup) are held as if their PodGroup did not exist",
    },
    KindSpec {
        kind: "Workload",
        api_version: SCHEDULING_V1BETA1,
        path: "/apis/scheduling.k8s.io/v1beta1/workloads",
        consequence: "Workloads are left out (the scheduler reads only their PodGroups)",
    },
    KindSpec {
        kind: "Workload",
        api_version: SCHEDULING_V1ALPHA1,
        path: "/apis/scheduling.k8s.io/v1alpha1/workloads",
        consequence: "pods with spec.workloadRef (Kubernetes 1.35) are held as if their Workload did not exist",
    },
    KindSpec {
        kind: "SchedulerProfile",
        api_version: "berth.dev/v1alpha1",
        path: "/apis/berth.dev/v1alpha1/schedulerprofiles",
        consequence: "only the built-in default-scheduler profile is simulated, so pods of other scheduler names stay pending",
    },
];

impl KindSpec {
    /// The kind's name, with its apiVersion when another kind of [`KINDS`] has the same
    /// name (`PodGroup (scheduling.k8s.io/v1beta1)`).
    pub fn label(&self) -> String {
        label(self.kind, self.api_version)
    }
}

fn label(kind: &str, api_version: &str) -> String {
    let shared = KINDS
        .iter()
        .any(|other| other.kind == kind && other.api_version != api_version);
    if shared {
        format!("{kind} ({api_version})")
    } else {
        kind.to_string()
    }
}

/// The cluster as read: one document per object, plus what could not be read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterRead {
    /// Every object with `apiVersion` and `kind` set, in [`KINDS`] order, then by
    /// namespace and name.
    pub documents: Vec<Value>,
    /// The kinds that could not be listed, in [`KINDS`] order.
    pub gaps: Vec<KindGap>,
    /// The resourceVersion each read kind was listed at, by [`KindSpec::label`].
    pub resource_versions: BTreeMap<String, String>,
    /// The kinds of an optional API version ([`SCHEDULING_V1BETA1`],
    /// [`SCHEDULER_PLUGINS_V1ALPHA1`], [`SCHEDULING_V1ALPHA1`]) the server does not serve
    /// (a 404), in [`KINDS`] order; not gaps.
    pub not_served: Vec<&'static KindSpec>,
}

impl ClusterRead {
    /// Whether the server serves the Workload API's PodGroups (a 403 means served but
    /// not readable).
    pub fn serves_scheduling_pod_groups(&self) -> bool {
        !self
            .not_served
            .iter()
            .any(|spec| spec.kind == "PodGroup" && spec.api_version == SCHEDULING_V1BETA1)
    }

    /// Whether the server serves Kubernetes 1.35's Workloads (a 403 means served but not
    /// readable).
    pub fn serves_legacy_workloads(&self) -> bool {
        !self
            .not_served
            .iter()
            .any(|spec| spec.api_version == SCHEDULING_V1ALPHA1)
    }
}

/// A kind the server refused to list (403) or does not serve (404).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindGap {
    pub kind: &'static str,
    pub api_version: &'static str,
    /// The HTTP status of the refused list.
    pub status: u16,
    /// The server's message.
    pub message: String,
    /// What the absence means for the result ([`KindSpec::consequence`]).
    pub consequence: &'static str,
}

impl fmt::Display for KindGap {
    /// `<kind>: <message>; <consequence>`, the `berth snapshot` warning (the kind with
    /// its apiVersion where the name is shared, see [`KindSpec::label`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = label(self.kind, self.api_version);
        write!(f, "{kind}: {}; {}", self.message, self.consequence)
    }
}

/// Why the cluster could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// No client: the kubeconfig is missing, unreadable or invalid, or names no such
    /// context. The user's input is at fault.
    #[error(transparent)]
    Client(#[from] kubeconfig::ClientError),
    /// A list failed otherwise than forbidden or not found (connection refused, server
    /// errors after retries, a response that is not a list).
    #[error("cannot list {kind} from {server}: {message}")]
    List {
        kind: String,
        server: String,
        message: String,
    },
    /// The cluster holds more objects than [`ReadOptions::max_objects`].
    #[error(
        "{server} holds more than {limit} objects of the kinds berth reads (at {kind}); the read was stopped"
    )]
    TooManyObjects {
        kind: String,
        server: String,
        limit: usize,
    },
}

impl LiveError {
    /// True when the user's kubeconfig or context is at fault (exit code 2), false when
    /// the cluster could not be read (exit code 1).
    pub fn is_invalid_input(&self) -> bool {
        matches!(self, LiveError::Client(_))
    }
}

/// A client for the cluster, and the server URL messages name.
#[derive(Clone)]
pub struct Connection {
    pub client: kube::Client,
    /// The API server's URL, from the kubeconfig.
    pub server: String,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// Connects as kubectl would with `--kubeconfig` and `--context` (see
/// [`crate::kubeconfig`]): nothing is requested from the server yet.
pub async fn connect(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<Connection, LiveError> {
    let config = kubeconfig::config(kubeconfig, context).await?;
    let server = config.cluster_url.to_string();
    let client = kube::Client::try_from(config)
        .map_err(|e| kubeconfig::ClientError(format!("{server}: {e}")))?;
    Ok(Connection { client, server })
}

/// Reads every kind of [`KINDS`]; see the module documentation.
pub async fn read_cluster(
    client: &kube::Client,
    options: &ReadOptions,
) -> Result<ClusterRead, LiveError> {
    let mut read = ClusterRead::default();
    for spec in KINDS {
        let budget = options.max_objects.saturating_sub(read.documents.len());
        match list_kind(client, spec, options, budget).await? {
            Listed::Objects {
                mut documents,
                resource_version,
            } => {
                documents.sort_by(|a, b| object_key(a).cmp(&object_key(b)));
                read.documents.append(&mut documents);
                read.resource_versions
                    .insert(spec.label(), resource_version);
            }
            Listed::Gap(gap)
                if gap.status == 404 && OPTIONAL_API_VERSIONS.contains(&spec.api_version) =>
            {
                read.not_served.push(spec);
            }
            Listed::Gap(gap) => read.gaps.push(gap),
        }
    }
    Ok(read)
}

enum Listed {
    Objects {
        documents: Vec<Value>,
        resource_version: String,
    },
    Gap(KindGap),
}

/// Lists one kind page by page, at most `budget` objects. A continued list whose
/// resourceVersion has been compacted away (410 Expired) is restarted once from the
/// first page, at a fresh resourceVersion: client-go's pager falls back to one unpaged
/// list there instead, which would hold a whole large kind in one response.
async fn list_kind(
    client: &kube::Client,
    spec: &KindSpec,
    options: &ReadOptions,
    budget: usize,
) -> Result<Listed, LiveError> {
    let mut restarted = false;
    'list: loop {
        let mut documents = Vec::new();
        let mut resource_version = None;
        let mut token: Option<String> = None;
        loop {
            let mut params = ListParams::default().limit(options.page_size.max(1));
            if let Some(token) = &token {
                params = params.continue_token(token);
            }
            let request = Request::new(spec.path)
                .list(&params)
                .map_err(|e| list_error(spec, options, e.to_string()))?;
            let page = match client.request::<Value>(request).await {
                Ok(page) => page,
                Err(kube::Error::Api(status)) => match status.code {
                    403 | 404 => {
                        return Ok(Listed::Gap(KindGap {
                            kind: spec.kind,
                            api_version: spec.api_version,
                            status: status.code,
                            message: status_message(&status),
                            consequence: spec.consequence,
                        }));
                    }
                    410 if token.is_some() && !restarted => {
                        restarted = true;
                        continue 'list;
                    }
                    _ => return Err(list_error(spec, options, status_message(&status))),
                },
                Err(error) => return Err(list_error(spec, options, error.to_string())),
            };
            let Page {
                items,
                resource_version: page_version,
                continue_token,
            } = Page::read(page).map_err(|message| list_error(spec, options, message))?;
            if documents.len() + items.len() > budget {
                return Err(LiveError::TooManyObjects {
                    kind: spec.label(),
                    server: options.server.clone(),
                    limit: options.max_objects,
                });
            }
            documents.extend(items.into_iter().map(|item| typed(item, spec)));
            resource_version.get_or_insert(page_version);
            match continue_token {
                Some(next) => token = Some(next),
                None => {
                    return Ok(Listed::Objects {
                        documents,
                        resource_version: resource_version.unwrap_or_default(),
                    });
                }
            }
        }
    }
}

fn list_error(spec: &KindSpec, options: &ReadOptions, message: String) -> LiveError {
    LiveError::List {
        kind: spec.label(),
        server: options.server.clone(),
        message,
    }
}

/// The server's message, else its reason, else the status code.
fn status_message(status: &kube::core::Status) -> String {
    if !status.message.is_empty() {
        status.message.clone()
    } else if !status.reason.is_empty() {
        status.reason.clone()
    } else {
        format!("HTTP status {}", status.code)
    }
}

/// One page of a list response.
struct Page {
    items: Vec<Value>,
    resource_version: String,
    continue_token: Option<String>,
}

impl Page {
    fn read(mut list: Value) -> Result<Page, String> {
        let items = match list.get_mut("items").map(Value::take) {
            Some(Value::Array(items)) => items,
            // An empty list may come with `items: null`.
            Some(Value::Null) => Vec::new(),
            _ => return Err("the response is not a list (no items)".to_string()),
        };
        let metadata = |field: &str| {
            list.pointer(&format!("/metadata/{field}"))
                .and_then(Value::as_str)
                .filter(|value| !value.is_empty())
                .map(str::to_string)
        };
        Ok(Page {
            items,
            resource_version: metadata("resourceVersion").unwrap_or_default(),
            continue_token: metadata("continue"),
        })
    }
}

/// The item with `apiVersion` and `kind` first (list items usually carry neither).
fn typed(item: Value, spec: &KindSpec) -> Value {
    let mut document = serde_json::Map::new();
    document.insert("apiVersion".into(), spec.api_version.into());
    document.insert("kind".into(), spec.kind.into());
    if let Value::Object(fields) = item {
        for (key, value) in fields {
            if key != "apiVersion" && key != "kind" {
                document.insert(key, value);
            }
        }
    }
    Value::Object(document)
}

fn object_key(document: &Value) -> (&str, &str) {
    let field = |name: &str| {
        document
            .pointer(&format!("/metadata/{name}"))
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    (field("namespace"), field("name"))
}

#[cfg(test)]
mod tests;
