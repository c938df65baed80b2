//! Two real Kubernetes 1.37 clusters: one scheduled by the real kube-scheduler, one by
//! `berth run`; both given the same objects, and each pending pod's decision read back.
//!
//! Both clusters run etcd, kube-apiserver, kube-controller-manager (PDB status, PV
//! binding, the taint manager, garbage collection; not the workload controllers: a
//! scenario's workloads are objects whose pods the scenario gives one at a time) and
//! kwok (pods run, deleted pods go away). The
//! `TaintNodesByCondition` admission plugin is off and every node is created Ready, so
//! no `not-ready` taint comes and goes while pods are scheduled.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::core::{ApiResource, GroupVersionKind};
use kube_cluster::{KubeCluster, Options};
use serde_json::{Value, json};

use crate::support;

/// How long one side may take to decide one pod.
const DECIDE: Duration = Duration::from_secs(30);
/// How long an unschedulable verdict must stand (no nomination, no binding) to count.
const SETTLE: Duration = Duration::from_millis(100);

/// Kinds without a namespace.
pub const CLUSTER_SCOPED: &[&str] = &[
    "Namespace",
    "Node",
    "PersistentVolume",
    "StorageClass",
    "CSINode",
    "PriorityClass",
    "SchedulerProfile",
    "DeviceClass",
    "ResourceSlice",
    "DeviceTaintRule",
];

/// One of the two clusters.
pub struct Side {
    /// `kube-scheduler` or `berth`.
    pub label: &'static str,
    pub cluster: KubeCluster,
    pub client: kube::Client,
}

/// What one scheduler decided for one pod.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decision {
    /// The node it was bound to.
    pub node: Option<String>,
    /// `status.nominatedNodeName`, when a preemption nominated one.
    pub nominated: Option<String>,
    /// The first PodScheduled=False condition's message (reason and message).
    pub failure: Option<String>,
    /// Pods deleted while the pod was being decided, `namespace/name`.
    pub victims: BTreeSet<String>,
    /// Set when the side did not decide within [`DECIDE`]: what it was waiting on.
    pub undecided: Option<String>,
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.node {
            Some(node) => write!(f, "bound to {node}")?,
            None => write!(f, "not bound")?,
        }
        if let Some(nominated) = &self.nominated {
            write!(f, ", nominated {nominated}")?;
        }
        if !self.victims.is_empty() {
            write!(f, ", victims {:?}", self.victims)?;
        }
        if let Some(failure) = &self.failure {
            write!(f, ", failure \"{failure}\"")?;
        }
        if let Some(undecided) = &self.undecided {
            write!(f, ", UNDECIDED: {undecided}")?;
        }
        Ok(())
    }
}

impl Side {
    async fn start(label: &'static str) -> Option<Side> {
        // GenericWorkload on both sides, as berth's default profile has GangScheduling:
        // the Workload API's PodGroups served, and kube-scheduler's default set and
        // pod-group cycle as 1.37 has them with the gate.
        let options = Options {
            apiserver_args: vec![
                "--disable-admission-plugins=TaintNodesByCondition".into(),
                "--feature-gates=GenericWorkload=true".into(),
                "--runtime-config=scheduling.k8s.io/v1beta1=true".into(),
            ],
            scheduler_args: vec!["--feature-gates=GenericWorkload=true".into()],
            // The scenario creates the workloads' pods itself, one at a time.
            controller_manager_args: vec![
                "--controllers=*,-replicaset,-deployment,-statefulset,-job,-daemonset,-cronjob,-replicationcontroller".into(),
                // Its PodGroup protection controller lifts the finalizer the API server
                // puts on PodGroups, so a scenario's PodGroups can be deleted.
                "--feature-gates=GenericWorkload=true".into(),
            ],
            ..Options::default()
        };
        let cluster = support::kube::start_or_skip(&support::kube::test_name(), options).await?;
        let client = cluster
            .admin_client()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        Some(Side {
            label,
            cluster,
            client,
        })
    }

    fn api(&self, object: &Value) -> Api<DynamicObject> {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let kind = object["kind"].as_str().unwrap_or_default();
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
        if CLUSTER_SCOPED.contains(&kind) {
            Api::all_with(self.client.clone(), &resource)
        } else {
            let namespace = object["metadata"]["namespace"]
                .as_str()
                .unwrap_or("default");
            Api::namespaced_with(self.client.clone(), namespace, &resource)
        }
    }

    /// Creates `object`; an existing Namespace or PriorityClass of the same name is fine.
    /// Owner references are pointed at the owners' uids in this cluster (an owner that
    /// does not exist is dropped, or the garbage collector would delete the object).
    pub async fn create(&self, object: &Value) -> Result<(), String> {
        let api = self.api(object);
        let mut object = object.clone();
        if let Some(references) = object["metadata"]["ownerReferences"].as_array().cloned() {
            let mut kept = Vec::new();
            for mut reference in references {
                let owner = json!({
                    "apiVersion": reference["apiVersion"], "kind": reference["kind"],
                    "metadata": {"name": reference["name"], "namespace": object["metadata"]["namespace"]},
                });
                if let Some(found) = self.get(&owner).await {
                    reference["uid"] = found["metadata"]["uid"].clone();
                    kept.push(reference);
                }
            }
            object["metadata"]["ownerReferences"] = Value::Array(kept);
        }
        let dynamic: DynamicObject =
            serde_json::from_value(object.clone()).map_err(|e| e.to_string())?;
        match api.create(&PostParams::default(), &dynamic).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e))
                if e.code == 409
                    && ["Namespace", "PriorityClass"]
                        .contains(&object["kind"].as_str().unwrap_or_default()) =>
            {
                Ok(())
            }
            Err(e) => Err(format!(
                "{}: creating {} {}: {e}",
                self.label,
                object["kind"],
                name_of(&object)
            )),
        }
    }

    /// Deletes `object` at once (grace period 0, finalizers removed); gone is fine.
    pub async fn delete(&self, object: &Value) -> Result<(), String> {
        let api = self.api(object);
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let kind = object["kind"].as_str().unwrap_or_default();
        if ["PersistentVolume", "PersistentVolumeClaim", "ResourceClaim"].contains(&kind) {
            let patch = json!({"metadata": {"finalizers": null}});
            let _ = api
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await;
        }
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            ..DeleteParams::default()
        };
        match api.delete(name, &params).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(e) => Err(format!("{}: deleting {kind} {name}: {e}", self.label)),
        }
    }

    pub async fn get(&self, object: &Value) -> Option<Value> {
        let api = self.api(object);
        let name = object["metadata"]["name"].as_str()?;
        let found = api.get_opt(name).await.ok()??;
        serde_json::to_value(found).ok()
    }

    /// Every pod of `namespaces`: `namespace/name` -> the pod.
    pub async fn pods(&self, namespaces: &BTreeSet<String>) -> BTreeMap<String, Pod> {
        let mut all = BTreeMap::new();
        for namespace in namespaces {
            let pods: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
            let list = pods
                .list(&ListParams::default())
                .await
                .unwrap_or_else(|e| panic!("{}: listing pods of {namespace}: {e}", self.label));
            for pod in list {
                let name = pod.metadata.name.clone().unwrap_or_default();
                all.insert(format!("{namespace}/{name}"), pod);
            }
        }
        all
    }

    /// A watch of pod `key` (`namespace/name`) from now on, to start before the pod is
    /// created: it sees every state the pod goes through, also a failure overwritten by
    /// the binding a few milliseconds later.
    pub async fn watch(&self, key: &str) -> PodWatch {
        let (namespace, name) = key.split_once('/').expect("namespace/name");
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let list = pods
            .list_metadata(&ListParams::default().limit(1))
            .await
            .unwrap_or_else(|e| panic!("{}: listing pods of {namespace}: {e}", self.label));
        let version = list.metadata.resource_version.unwrap_or_default();
        let params = WatchParams::default()
            .fields(&format!("metadata.name={name}"))
            .timeout(DECIDE.as_secs() as u32 + 5);
        let stream = pods
            .watch(&params, &version)
            .await
            .unwrap_or_else(|e| panic!("{}: watching pod {key}: {e}", self.label));
        PodWatch {
            stream: stream.boxed(),
        }
    }

    /// Follows `watch` until the pod is decided; see [`Decision`]. `before` is every pod
    /// of `namespaces` before the pod was created (for the victims).
    pub async fn decide(
        &self,
        key: &str,
        mut watch: PodWatch,
        before: &BTreeMap<String, Pod>,
        namespaces: &BTreeSet<String>,
    ) -> Decision {
        let deadline = Instant::now() + DECIDE;
        let mut decision = Decision::default();
        // Set while the pod stands unschedulable without a nomination.
        let mut unschedulable_since: Option<Instant> = None;
        loop {
            let wait = match unschedulable_since {
                Some(since) => (since + SETTLE).saturating_duration_since(Instant::now()),
                None => deadline.saturating_duration_since(Instant::now()),
            };
            let event = match tokio::time::timeout(wait, watch.stream.next()).await {
                Err(_) if unschedulable_since.is_some() => break,
                Err(_) => {
                    decision.undecided = Some(match &decision.nominated {
                        Some(node) => {
                            format!("nominated to {node} but not bound within {DECIDE:?}")
                        }
                        None => format!("neither bound nor unschedulable within {DECIDE:?}"),
                    });
                    break;
                }
                Ok(None) => {
                    decision.undecided = Some("the watch ended".into());
                    break;
                }
                Ok(Some(Err(e))) => panic!("{}: watching pod {key}: {e}", self.label),
                Ok(Some(Ok(event))) => event,
            };
            let pod = match event {
                WatchEvent::Added(pod) | WatchEvent::Modified(pod) => pod,
                WatchEvent::Deleted(_) => {
                    decision.undecided = Some("the pod was deleted".into());
                    break;
                }
                WatchEvent::Bookmark(_) => continue,
                WatchEvent::Error(e) => panic!("{}: watching pod {key}: {e:?}", self.label),
            };
            let status = pod.status.clone().unwrap_or_default();
            if let Some(nominated) = status.nominated_node_name.filter(|n| !n.is_empty()) {
                decision.nominated = Some(nominated);
            }
            let failed = status
                .conditions
                .unwrap_or_default()
                .into_iter()
                .find(|c| c.type_ == "PodScheduled" && c.status == "False");
            if let Some(condition) = &failed
                && decision.failure.is_none()
            {
                decision.failure = Some(format!(
                    "{}: {}",
                    condition.reason.clone().unwrap_or_default(),
                    condition.message.clone().unwrap_or_default()
                ));
            }
            if let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) {
                decision.node = Some(node);
                break;
            }
            unschedulable_since = if failed.is_some() && decision.nominated.is_none() {
                unschedulable_since.or(Some(Instant::now()))
            } else {
                None
            };
        }
        let after = self.pods(namespaces).await;
        decision.victims = before
            .keys()
            .filter(|k| k.as_str() != key)
            .filter(|k| {
                after
                    .get(*k)
                    .is_none_or(|p| p.metadata.deletion_timestamp.is_some())
            })
            .cloned()
            .collect();
        decision
    }
}

/// The events of one pod (see [`Side::watch`]).
pub struct PodWatch {
    stream: futures::stream::BoxStream<'static, kube::Result<WatchEvent<Pod>>>,
}

/// Plays the external provisioner of every StorageClass in `provisioners`, as a CSI
/// provisioner with topology does: a claim the scheduler chose a node for (the
/// `volume.kubernetes.io/selected-node` annotation) gets a PersistentVolume of its size,
/// pre-bound to it, reachable from the node's values of the topology keys its CSINode
/// lists for the driver. Runs until aborted.
pub async fn provision(
    client: kube::Client,
    provisioners: BTreeMap<String, String>,
    namespaces: BTreeSet<String>,
) {
    use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim};
    use k8s_openapi::api::storage::v1::CSINode;
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let nodes: Api<Node> = Api::all(client.clone());
    let csi_nodes: Api<CSINode> = Api::all(client.clone());
    loop {
        for namespace in &namespaces {
            let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), namespace);
            let Ok(list) = claims.list(&ListParams::default()).await else {
                continue;
            };
            for claim in list {
                let value = serde_json::to_value(&claim).unwrap_or_default();
                let class = value["spec"]["storageClassName"]
                    .as_str()
                    .unwrap_or_default();
                let Some(driver) = provisioners.get(class) else {
                    continue;
                };
                let Some(node) =
                    value["metadata"]["annotations"]["volume.kubernetes.io/selected-node"].as_str()
                else {
                    continue;
                };
                if value["spec"]["volumeName"]
                    .as_str()
                    .is_some_and(|v| !v.is_empty())
                {
                    continue;
                }
                let uid = value["metadata"]["uid"].as_str().unwrap_or_default();
                let name = format!("pvc-{uid}");
                if volumes.get_opt(&name).await.ok().flatten().is_some() {
                    continue;
                }
                let labels = nodes
                    .get_opt(node)
                    .await
                    .ok()
                    .flatten()
                    .and_then(|n| n.metadata.labels)
                    .unwrap_or_default();
                let keys: Vec<String> = csi_nodes
                    .get_opt(node)
                    .await
                    .ok()
                    .flatten()
                    .and_then(|c| c.spec.drivers.into_iter().find(|d| d.name == *driver))
                    .and_then(|d| d.topology_keys)
                    .unwrap_or_default();
                let expressions: Vec<Value> = keys
                    .iter()
                    .filter_map(|k| {
                        Some(json!({"key": k, "operator": "In", "values": [labels.get(k)?]}))
                    })
                    .collect();
                let mut volume = json!({
                    "apiVersion": "v1", "kind": "PersistentVolume",
                    "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": driver}},
                    "spec": {
                        "capacity": {"storage": value["spec"]["resources"]["requests"]["storage"]},
                        "accessModes": value["spec"]["accessModes"],
                        "persistentVolumeReclaimPolicy": "Delete",
                        "storageClassName": class,
                        "claimRef": {"namespace": namespace, "name": value["metadata"]["name"], "uid": uid},
                    },
                });
                // A CSI driver's volume, or a host path for a provisioner that is not one
                // (`rancher.io/local-path` is no valid CSI driver name).
                if driver.contains('/') {
                    volume["spec"]["hostPath"] = json!({"path": format!("/var/lib/{name}")});
                } else {
                    volume["spec"]["csi"] = json!({"driver": driver, "volumeHandle": name});
                }
                if !expressions.is_empty() {
                    volume["spec"]["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [{"matchExpressions": expressions}]}});
                }
                if let Ok(volume) = serde_json::from_value::<PersistentVolume>(volume)
                    && let Err(e) = volumes.create(&PostParams::default(), &volume).await
                {
                    eprintln!(
                        "differential: provisioning a volume for {namespace}/{}: {e}",
                        value["metadata"]["name"]
                    );
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The two clusters, and berth's process.
pub struct Pair {
    pub upstream: Side,
    pub berth: Side,
    berth_process: Child,
    berth_log: PathBuf,
    /// The configuration both run now.
    config: Option<Value>,
    /// berth's profiles, from `berth convert` of `config`.
    pub profiles: Vec<Value>,
}

impl Drop for Pair {
    fn drop(&mut self) {
        let _ = self.berth_process.kill();
        let _ = self.berth_process.wait();
    }
}

impl Pair {
    /// Both clusters, berth's CRDs in its own, `berth run` started; `None` after a loud
    /// skip on a machine without Go.
    pub async fn start() -> Option<Pair> {
        let (upstream, berth) = tokio::join!(Side::start("kube-scheduler"), Side::start("berth"));
        let (upstream, berth) = (upstream?, berth?);
        support::kube::install_crds(&berth.client).await;
        let berth_log = berth.cluster.dir().join("berth.log");
        let log = std::fs::File::create(&berth_log).expect("berth's log file");
        let metrics = support::http::free_address();
        let berth_process = Command::new(env!("CARGO_BIN_EXE_berth"))
            .arg("run")
            .arg("--kubeconfig")
            .arg(berth.cluster.admin_kubeconfig())
            .args([
                "--serve-default-scheduler",
                "--metrics-insecure",
                "--identity",
                "differential",
            ])
            .arg("--metrics-bind-address")
            .arg(metrics.to_string())
            .env(
                "RUST_LOG",
                std::env::var("BERTH_DIFF_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .env("NO_COLOR", "1")
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("a log handle"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting berth: {e}"));
        Some(Pair {
            upstream,
            berth,
            berth_process,
            berth_log,
            config: None,
            profiles: Vec::new(),
        })
    }

    pub fn sides(&self) -> [&Side; 2] {
        [&self.upstream, &self.berth]
    }

    /// The end of berth's and kube-scheduler's logs, for a failure.
    pub fn logs(&self) -> String {
        let berth = std::fs::read_to_string(&self.berth_log).unwrap_or_default();
        let lines: Vec<&str> = berth.lines().collect();
        format!(
            "--- berth ({}):\n{}\n{}",
            self.berth_log.display(),
            lines[lines.len().saturating_sub(40)..].join("\n"),
            self.upstream.cluster.logs_tail(20)
        )
    }

    /// Makes both run `config`: kube-scheduler restarted with it, berth's profiles
    /// replaced by `berth convert`'s output. Returns that output.
    pub async fn configure(&mut self, config: &Value, scratch: &Path) -> Result<(), String> {
        if self.config.as_ref() == Some(config) {
            return Ok(());
        }
        self.upstream
            .cluster
            .start_scheduler(config)
            .await
            .map_err(|e| format!("kube-scheduler refused the configuration: {e}"))?;
        let profiles = convert(config, scratch)?;
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(
            "berth.dev",
            "v1alpha1",
            "SchedulerProfile",
        ));
        let api: Api<DynamicObject> = Api::all_with(self.berth.client.clone(), &resource);
        for old in api
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?
        {
            let name = old.metadata.name.clone().unwrap_or_default();
            api.delete(&name, &DeleteParams::default())
                .await
                .map_err(|e| e.to_string())?;
        }
        for profile in &profiles {
            self.berth.create(profile).await?;
        }
        for profile in &profiles {
            let name = name_of(profile);
            support::kube::eventually(&format!("berth's profile {name} is Ready"), || async {
                let object = api.get(&name).await.map_err(|e| e.to_string())?;
                let value = serde_json::to_value(object).map_err(|e| e.to_string())?;
                let ready = value["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True");
                if ready {
                    Ok(())
                } else {
                    Err(value["status"].to_string())
                }
            })
            .await;
        }
        self.config = Some(config.clone());
        self.profiles = profiles;
        Ok(())
    }
}

/// `berth convert -o json` of `config`: the SchedulerProfiles.
fn convert(config: &Value, scratch: &Path) -> Result<Vec<Value>, String> {
    let path = scratch.join("kube-scheduler-config.json");
    std::fs::write(&path, config.to_string()).map_err(|e| e.to_string())?;
    let output = Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(["convert", "-o", "json", "-f"])
        .arg(&path)
        .output()
        .map_err(|e| format!("running berth convert: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "berth convert failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let list: Value = serde_json::from_slice(&output.stdout).map_err(|e| e.to_string())?;
    Ok(list["items"].as_array().cloned().unwrap_or_default())
}

/// `namespace/name`, or `name` for a cluster-scoped object.
pub fn name_of(object: &Value) -> String {
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    match object["metadata"]["namespace"].as_str() {
        Some(namespace) if object["kind"] != "Namespace" => format!("{namespace}/{name}"),
        _ => name.to_string(),
    }
}
