//! The harness of the operator's end-to-end tests: a cluster with berth's CRDs
//! ([`Cluster`]) and the real `berth run` binary as a child process ([`Berth`]).
//!
//! A cluster is real unless a test needs a fault only the test API server makes:
//! [`Cluster::start`] starts etcd, kube-apiserver, kube-controller-manager and kwok
//! (`crates/kube-cluster`, 1.37; [`Cluster::start_reporting`] for 1.35), installs the
//! chart with `helm install` (CRDs included, the Deployment scaled to 0) and hands berth
//! a kubeconfig with a token of the chart's ServiceAccount, so berth has exactly the
//! chart's permissions. [`Cluster::start_test_server`] starts the in-process test API
//! server (`crates/test-apiserver`) for the fault tests. The request log of either (the
//! real API server's audit log, read back as [`RequestRecord`]s) feeds the same
//! assertions and the chart's RBAC replay.
//!
//! Rules every test follows:
//!
//! - **Serial.** Each test holds [`SERIAL`] for its whole run (2 cores; a berth process and
//!   a server per test), so liveness bounds such as "Accepted within 2 s" are not eaten by
//!   a neighbouring test.
//! - **Bounded.** Every wait polls (every 50–100 ms) with a deadline and fails with the
//!   last state it saw.
//! - **No survivors.** [`Berth`] kills its process on drop; on a failing test it prints
//!   the process's log and the tail of the server's request log into the test output.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube_cluster::{KubeCluster, Release};
use serde_json::{Value, json};
use test_apiserver::{RequestRecord, TestApiServer};
use tokio::time::Instant;

pub use crate::support::api::repo_root;
pub use crate::support::wait::within;
use crate::support::{self, api, http, https};

/// One test at a time (see the module docs).
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The bound on waits the issue gives no number for.
pub const WAIT: Duration = Duration::from_secs(15);
/// How often waits poll the test server.
pub const POLL: Duration = Duration::from_millis(50);

/// Polls `check` every [`POLL`] until it returns `Ok`, failing the test after `timeout`
/// with `what` and the last state `check` described.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + timeout;
    let mut last = String::from("(never checked)");
    loop {
        match tokio::time::timeout_at(deadline, check()).await {
            Ok(Ok(value)) => return value,
            Ok(Err(state)) => last = state,
            Err(_) => {}
        }
        if Instant::now() >= deadline {
            panic!("timed out after {timeout:?} waiting until {what}; last state: {last}");
        }
        tokio::time::sleep(POLL).await;
    }
}

// ---------------------------------------------------------------------------------------
// Objects

/// A node with `cpu` and `memory` allocatable (and capacity), 110 pods.
pub fn node(name: &str, cpu: &str, memory: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {},
        "status": {
            "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
        },
    })
}

/// A pending pod in `default` for `scheduler` requesting `cpu` and `memory`.
pub fn pod(name: &str, scheduler: &str, cpu: &str, memory: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{
                "name": "main",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu, "memory": memory}},
            }],
        },
    })
}

/// A SchedulerProfile named `name` with `spec`.
pub fn profile(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "SchedulerProfile",
        "metadata": {"name": name},
        "spec": spec,
    })
}

/// `spec.pluginConfig` selecting NodeResourcesFit's scoring strategy (`LeastAllocated`
/// or `MostAllocated`) over cpu and memory.
pub fn fit_strategy(strategy: &str) -> Value {
    json!({
        "nodeResourcesFit": {
            "scoringStrategy": {
                "type": strategy,
                "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
            }
        }
    })
}

/// The condition of `type_` in a profile's (or pod's) `status.conditions`.
pub fn condition<'a>(object: &'a Value, type_: &str) -> Option<&'a Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// `status.conditions` rendered for failure messages.
pub fn conditions_summary(object: &Value) -> String {
    serde_json::to_string(&object["status"]).unwrap_or_default()
}

// ---------------------------------------------------------------------------------------
// The cluster

/// Where a test's cluster runs.
pub enum Backend {
    /// etcd, kube-apiserver, kube-controller-manager and kwok, with the chart installed.
    Real(Box<Real>),
    /// The in-process test API server with `crds/` installed.
    TestServer(TestApiServer),
}

/// A real cluster and berth's identity in it.
pub struct Real {
    pub kube: KubeCluster,
    /// A kubeconfig with a token of the chart's ServiceAccount.
    pub berth_kubeconfig: PathBuf,
}

/// The namespace the chart is installed into (its Lease and ServiceAccount live there).
pub const RELEASE_NAMESPACE: &str = "berth-system";
/// The chart's release name (its ServiceAccount and ClusterRole are named after it).
pub const RELEASE: &str = "berth";

/// A cluster with berth's CRDs, and an admin's client for it. Holds [`SERIAL`].
pub struct Cluster {
    pub backend: Backend,
    pub client: kube::Client,
    /// A bearer token of [`METRICS_READER`], who may `get` `/metrics`.
    pub metrics_token: String,
    /// A bearer token of [`NOSY`], who may not.
    pub nosy_token: String,
    _serial: tokio::sync::MutexGuard<'static, ()>,
}

/// The name of the running test, for skip messages.
fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("an end-to-end test")
        .to_string()
}

impl Cluster {
    /// A real Kubernetes 1.37 cluster with the chart installed, or `None` after a loud skip
    /// on a machine without Go (see the module docs).
    pub async fn start() -> Option<Cluster> {
        Cluster::start_real(kube_cluster::Options::release(Release::V1_37)).await
    }

    /// [`Cluster::start`] with the real Kubernetes 1.`minor` (37 or 35).
    pub async fn start_reporting(minor: u32) -> Option<Cluster> {
        Cluster::start_reporting_with(minor, &[]).await
    }

    /// [`Cluster::start_reporting`] with extra kube-apiserver flags (`--feature-gates=...`).
    pub async fn start_reporting_with(minor: u32, apiserver_args: &[&str]) -> Option<Cluster> {
        let release = match minor {
            37 => Release::V1_37,
            35 => Release::V1_35,
            other => panic!("no real Kubernetes 1.{other} is built (1.37 and 1.35 are)"),
        };
        let options = kube_cluster::Options {
            apiserver_args: apiserver_args.iter().map(|a| a.to_string()).collect(),
            ..kube_cluster::Options::release(release)
        };
        Cluster::start_real(options).await
    }

    async fn start_real(options: kube_cluster::Options) -> Option<Cluster> {
        let serial = SERIAL.lock().await;
        let kube = support::kube::start_or_skip(&test_name(), options).await?;
        let client = kube.admin_client().await.unwrap_or_else(|e| panic!("{e}"));
        let helm = crate::support::tools::helm_or_skip(&test_name())?;
        install_chart(&helm, &kube, &client).await;
        let berth_kubeconfig = within(
            "a token for berth's ServiceAccount",
            WAIT,
            kube.service_account_kubeconfig(RELEASE_NAMESPACE, RELEASE, Duration::from_secs(3600)),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        let metrics_token = service_account_token(&client, "monitoring", "prometheus").await;
        let nosy_token = service_account_token(&client, "default", "nosy").await;
        Some(Cluster {
            backend: Backend::Real(Box::new(Real {
                kube,
                berth_kubeconfig,
            })),
            client,
            metrics_token,
            nosy_token,
            _serial: serial,
        })
    }

    /// The in-process test API server with `crds/`, for faults a real component cannot
    /// be made to produce on demand (`crates/test-apiserver/README.md` lists them).
    pub async fn start_test_server() -> Cluster {
        let serial = SERIAL.lock().await;
        let server = api::start_with(test_apiserver::Config {
            access: metrics_access(),
            ..test_apiserver::Config::default()
        })
        .await;
        let dir = api::berth_crds();
        let installed = server
            .install_crds_from_dir(&dir)
            .unwrap_or_else(|e| panic!("installing {}: {e:?}", dir.display()));
        for crd in ["schedulerprofiles.berth.dev", "podgroups.berth.dev"] {
            assert!(
                installed.iter().any(|name| name == crd),
                "installing crds/ created {installed:?}, not {crd}"
            );
        }
        let client = server.client().await;
        Cluster {
            backend: Backend::TestServer(server),
            client,
            metrics_token: METRICS_READER_TOKEN.to_string(),
            nosy_token: NOSY_TOKEN.to_string(),
            _serial: serial,
        }
    }

    /// The test API server; fails the test on a real cluster.
    pub fn server(&self) -> &TestApiServer {
        match &self.backend {
            Backend::TestServer(server) => server,
            Backend::Real(_) => {
                panic!("this test needs the test API server (Cluster::start_test_server)")
            }
        }
    }

    /// The real cluster, if this is one.
    pub fn real(&self) -> Option<&Real> {
        match &self.backend {
            Backend::Real(real) => Some(real),
            Backend::TestServer(_) => None,
        }
    }

    /// Every request the API server answered: the test server's log, or the real API
    /// server's audit log.
    pub fn requests(&self) -> Vec<RequestRecord> {
        match &self.backend {
            Backend::TestServer(server) => server.requests(),
            Backend::Real(real) => support::kube::requests(real.kube.audit_log()),
        }
    }

    /// The namespace berth's Lease goes into (the chart's, on a real cluster).
    pub fn lease_namespace(&self) -> &'static str {
        match &self.backend {
            Backend::TestServer(_) => "default",
            Backend::Real(_) => RELEASE_NAMESPACE,
        }
    }

    /// The kubeconfig berth runs with: the chart's ServiceAccount on a real cluster.
    pub fn kubeconfig(&self) -> &Path {
        match &self.backend {
            Backend::TestServer(server) => server.kubeconfig_path(),
            Backend::Real(real) => &real.berth_kubeconfig,
        }
    }

    pub fn profiles(&self) -> Api<DynamicObject> {
        let gvk = GroupVersionKind::gvk("berth.dev", "v1alpha1", "SchedulerProfile");
        let resource = ApiResource::from_gvk_with_plural(&gvk, "schedulerprofiles");
        Api::all_with(self.client.clone(), &resource)
    }

    pub fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), "default")
    }

    pub fn nodes(&self) -> Api<Node> {
        Api::all(self.client.clone())
    }

    pub async fn create_node(&self, node: Value) {
        let node: Node = serde_json::from_value(node).expect("a Node");
        within(
            "creating a node",
            WAIT,
            self.nodes().create(&PostParams::default(), &node),
        )
        .await
        .unwrap_or_else(|e| panic!("creating node {:?}: {e}", node.metadata.name));
        if self.real().is_some() {
            let name = node.metadata.name.clone().unwrap_or_default();
            self.wait_node_ready(&name).await;
        }
    }

    /// Waits until kwok reports node `name` Ready and the node lifecycle controller has
    /// no `not-ready`/`unreachable` taint on it (a real cluster's new node has both for a
    /// moment).
    pub async fn wait_node_ready(&self, name: &str) {
        eventually(
            &format!("node {name} is Ready and untainted"),
            WAIT,
            || async {
                let node = self.nodes().get(name).await.map_err(|e| e.to_string())?;
                let ready = node
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
                let lifecycle_taints: Vec<String> = node
                    .spec
                    .as_ref()
                    .and_then(|s| s.taints.as_ref())
                    .into_iter()
                    .flatten()
                    .filter(|t| {
                        t.key == "node.kubernetes.io/not-ready"
                            || t.key == "node.kubernetes.io/unreachable"
                    })
                    .map(|t| format!("{}:{}", t.key, t.effect))
                    .collect();
                if ready && lifecycle_taints.is_empty() {
                    Ok(())
                } else {
                    Err(format!("ready {ready}, taints {lifecycle_taints:?}"))
                }
            },
        )
        .await;
    }

    /// Deletes pod `name` (gracefully, as a user would); a failure fails the test.
    pub async fn delete_pod(&self, name: &str) {
        within(
            &format!("deleting pod {name}"),
            WAIT,
            self.pods()
                .delete(name, &kube::api::DeleteParams::default()),
        )
        .await
        .unwrap_or_else(|e| panic!("deleting pod {name}: {e}"));
    }

    /// Creates a pod. On a real cluster a pod written with `spec.priority` N gets
    /// `spec.priorityClassName: priority-N` instead, with that PriorityClass created on
    /// first use: the Priority admission plugin refuses an integer priority that no
    /// class gives, as on any real cluster.
    pub async fn create_pod(&self, mut pod: Value) -> Pod {
        if self.real().is_some()
            && let Some(priority) = pod["spec"]["priority"].as_i64()
        {
            let class = self.ensure_priority_class(priority).await;
            if let Some(spec) = pod["spec"].as_object_mut() {
                spec.remove("priority");
                spec.insert("priorityClassName".into(), json!(class));
            }
        }
        let pod: Pod = serde_json::from_value(pod).expect("a Pod");
        // Priority admission reads PriorityClasses from its informer: a class created a
        // moment ago may not be in it yet (403 "no PriorityClass with name ...").
        let mut attempts = 0;
        loop {
            let created = within(
                "creating a pod",
                WAIT,
                self.pods().create(&PostParams::default(), &pod),
            )
            .await;
            match created {
                Err(kube::Error::Api(e))
                    if e.code == 403 && e.message.contains("no PriorityClass") && attempts < 50 =>
                {
                    attempts += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                other => {
                    return other
                        .unwrap_or_else(|e| panic!("creating pod {:?}: {e}", pod.metadata.name));
                }
            }
        }
    }

    /// PriorityClass `priority-<value>` with `value`, created when missing; its name.
    pub async fn ensure_priority_class(&self, value: i64) -> String {
        use k8s_openapi::api::scheduling::v1::PriorityClass;
        let name = format!("priority-{value}");
        let classes: Api<PriorityClass> = Api::all(self.client.clone());
        let class: PriorityClass = serde_json::from_value(json!({
            "metadata": {"name": name},
            "value": value,
            "preemptionPolicy": "PreemptLowerPriority",
        }))
        .expect("a PriorityClass");
        match within(
            "creating a PriorityClass",
            WAIT,
            classes.create(&PostParams::default(), &class),
        )
        .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => panic!("creating PriorityClass {name}: {e}"),
        }
        name
    }

    /// Creates a profile and returns the instant the server answered.
    pub async fn create_profile(&self, profile: Value) -> Instant {
        let name = profile["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let object: DynamicObject = serde_json::from_value(profile).expect("a SchedulerProfile");
        within(
            "creating a profile",
            WAIT,
            self.profiles().create(&PostParams::default(), &object),
        )
        .await
        .unwrap_or_else(|e| panic!("creating profile {name}: {e}"));
        Instant::now()
    }

    /// Merge-patches a profile's spec.
    pub async fn patch_profile_spec(&self, name: &str, spec: Value) {
        within(
            "patching a profile",
            WAIT,
            self.profiles().patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": spec})),
            ),
        )
        .await
        .unwrap_or_else(|e| panic!("patching profile {name}: {e}"));
    }

    pub async fn delete_profile(&self, name: &str) {
        within(
            "deleting a profile",
            WAIT,
            self.profiles().delete(name, &DeleteParams::default()),
        )
        .await
        .unwrap_or_else(|e| panic!("deleting profile {name}: {e}"));
    }

    /// The profile as JSON (Null when it does not exist).
    pub async fn profile(&self, name: &str) -> Value {
        match within("reading a profile", WAIT, self.profiles().get_opt(name)).await {
            Ok(Some(object)) => serde_json::to_value(object).expect("JSON"),
            Ok(None) => Value::Null,
            Err(e) => panic!("reading profile {name}: {e}"),
        }
    }

    /// Waits (at most `timeout`) until the profile has condition `type_` with `status`
    /// (and `reason`, when given); returns the profile.
    pub async fn wait_profile_condition(
        &self,
        name: &str,
        type_: &str,
        status: &str,
        reason: Option<&str>,
        timeout: Duration,
    ) -> Value {
        eventually(
            &format!("profile {name} has {type_}={status} (reason {reason:?})"),
            timeout,
            || async {
                let profile = self.profile(name).await;
                match condition(&profile, type_) {
                    Some(c) if c["status"] == status && reason.is_none_or(|r| c["reason"] == r) => {
                        Ok(profile)
                    }
                    _ => Err(conditions_summary(&profile)),
                }
            },
        )
        .await
    }

    /// Waits until the profile reports Accepted=True and Ready=True, within `timeout`.
    pub async fn wait_profile_ready(&self, name: &str, timeout: Duration) -> Value {
        eventually(
            &format!("profile {name} is Accepted and Ready"),
            timeout,
            || async {
                let profile = self.profile(name).await;
                let is_true = |t| condition(&profile, t).is_some_and(|c| c["status"] == "True");
                if is_true("Accepted") && is_true("Ready") {
                    Ok(profile)
                } else {
                    Err(conditions_summary(&profile))
                }
            },
        )
        .await
    }

    pub async fn pod(&self, name: &str) -> Pod {
        within("reading a pod", WAIT, self.pods().get(name))
            .await
            .unwrap_or_else(|e| panic!("reading pod {name}: {e}"))
    }

    /// The node a pod is bound to, if any.
    pub async fn node_of(&self, name: &str) -> Option<String> {
        self.pod(name)
            .await
            .spec
            .and_then(|s| s.node_name)
            .filter(|n| !n.is_empty())
    }

    /// Creates Job `default/<name>` that runs `count` copies of `pod` at once (its
    /// metadata without the name, its spec with `restartPolicy: Never`); returns the Job
    /// as created.
    pub async fn create_job(&self, name: &str, pod: &Value, count: u32) -> Value {
        let mut template = pod.clone();
        if let Some(metadata) = template["metadata"].as_object_mut() {
            metadata.remove("name");
        }
        template["spec"]["restartPolicy"] = json!("Never");
        let job = json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"parallelism": count, "completions": count, "template": template},
        });
        let (code, answer) = self
            .raw("POST", "/apis/batch/v1/namespaces/default/jobs", &job)
            .await;
        assert_eq!(code, 201, "creating Job {name}: {answer}");
        answer
    }

    /// The node of every pod of Job `job` in `default` (None while pending).
    pub async fn job_pods(&self, job: &str) -> BTreeMap<String, Option<String>> {
        let params =
            kube::api::ListParams::default().labels(&format!("batch.kubernetes.io/job-name={job}"));
        within("listing a Job's pods", WAIT, self.pods().list(&params))
            .await
            .unwrap_or_else(|e| panic!("listing the pods of Job {job}: {e}"))
            .items
            .into_iter()
            .map(|p| {
                let name = p.metadata.name.clone().unwrap_or_default();
                let node = p.spec.and_then(|s| s.node_name).filter(|n| !n.is_empty());
                (name, node)
            })
            .collect()
    }

    /// Waits until exactly one of two gangs (`default/<group>-0` .. `-<size - 1>`) is
    /// bound whole while the other has nothing bound; returns (winner, loser). A gang
    /// bound in part is an error to wait out (it must not last).
    pub async fn one_whole_gang<'g>(&self, gangs: [&'g str; 2], size: usize) -> (&'g str, &'g str) {
        eventually("one gang is bound whole", WAIT, || async {
            let mut whole = Vec::new();
            for group in gangs {
                let mut bound = 0;
                for i in 0..size {
                    bound += usize::from(self.node_of(&format!("{group}-{i}")).await.is_some());
                }
                if bound == size {
                    whole.push(group);
                } else if bound > 0 {
                    return Err(format!("gang {group} is partly bound ({bound} of {size})"));
                }
            }
            match whole[..] {
                [winner] if winner == gangs[0] => Ok((gangs[0], gangs[1])),
                [_] => Ok((gangs[1], gangs[0])),
                _ => Err(format!("whole gangs: {whole:?}")),
            }
        })
        .await
    }

    /// Waits until every pod in `names` is bound; returns pod -> node.
    pub async fn wait_bound(&self, names: &[&str], timeout: Duration) -> BTreeMap<String, String> {
        eventually(&format!("pods {names:?} are bound"), timeout, || async {
            let mut bound = BTreeMap::new();
            let mut unbound = Vec::new();
            for name in names {
                match self.node_of(name).await {
                    Some(node) => {
                        bound.insert(name.to_string(), node);
                    }
                    None => unbound.push(*name),
                }
            }
            if unbound.is_empty() {
                Ok(bound)
            } else {
                Err(format!("unbound: {unbound:?}; bound: {bound:?}"))
            }
        })
        .await
    }

    /// Checks for `duration` that none of `names` gets bound.
    pub async fn assert_stay_unbound(&self, names: &[&str], duration: Duration) {
        let deadline = Instant::now() + duration;
        while Instant::now() < deadline {
            for name in names {
                if let Some(node) = self.node_of(name).await {
                    panic!("pod {name} was bound to {node}, but it must stay pending");
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Every `POST pods/<name>/binding` in the request log (any status).
    pub fn binding_requests(&self) -> Vec<RequestRecord> {
        self.requests()
            .into_iter()
            .filter(|r| {
                r.verb == "create"
                    && r.resource == "pods"
                    && r.subresource.as_deref() == Some("binding")
            })
            .collect()
    }

    /// `namespace/name` -> number of successful (201) Binding POSTs.
    pub fn successful_bindings(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for r in self
            .binding_requests()
            .into_iter()
            .filter(|r| r.status == 201)
        {
            let key = format!(
                "{}/{}",
                r.namespace.as_deref().unwrap_or_default(),
                r.name.as_deref().unwrap_or_default()
            );
            *counts.entry(key).or_insert(0) += 1;
        }
        counts
    }

    /// Binding POSTs (any status) for pod `default/<name>`.
    pub fn binding_requests_for(&self, name: &str) -> Vec<RequestRecord> {
        self.binding_requests()
            .into_iter()
            .filter(|r| {
                r.namespace.as_deref() == Some("default") && r.name.as_deref() == Some(name)
            })
            .collect()
    }

    /// events.k8s.io/v1 Events about pod `default/<name>`.
    pub async fn events_for(&self, name: &str) -> Vec<Event> {
        self.events_about("Pod", name).await
    }

    /// The `Preempted` event on pod `default/<name>`, once there is one.
    pub async fn preempted_event(&self, name: &str) -> Event {
        eventually(&format!("a Preempted event on {name}"), WAIT, || async {
            let events = self.events_for(name).await;
            events
                .iter()
                .find(|e| e.reason.as_deref() == Some("Preempted"))
                .cloned()
                .ok_or_else(|| format!("{events:?}"))
        })
        .await
    }

    /// events.k8s.io/v1 Events (any namespace) whose `regarding` is `kind` `name`.
    pub async fn events_about(&self, kind: &str, name: &str) -> Vec<Event> {
        let events: Api<Event> = Api::all(self.client.clone());
        within("listing events", WAIT, events.list(&Default::default()))
            .await
            .unwrap_or_else(|e| panic!("listing events.k8s.io events: {e}"))
            .items
            .into_iter()
            .filter(|e| {
                let regarding = e.regarding.as_ref();
                regarding.and_then(|r| r.name.as_deref()) == Some(name)
                    && regarding.and_then(|r| r.kind.as_deref()) == Some(kind)
            })
            .collect()
    }

    /// PATCHes and PUTs of `schedulerprofiles/<name>/status` in the request log.
    pub fn profile_status_writes(&self, name: &str) -> usize {
        self.requests()
            .into_iter()
            .filter(|r| {
                r.resource == "schedulerprofiles"
                    && r.subresource.as_deref() == Some("status")
                    && r.name.as_deref() == Some(name)
                    && (r.verb == "patch" || r.verb == "update")
            })
            .count()
    }

    /// The holder of Lease `default/<name>`.
    pub async fn lease_holder(&self, name: &str) -> Option<String> {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), self.lease_namespace());
        within("reading a lease", WAIT, leases.get_opt(name))
            .await
            .unwrap_or_else(|e| panic!("reading lease {name}: {e}"))
            .and_then(|l| l.spec)
            .and_then(|s| s.holder_identity)
            .filter(|h| !h.is_empty())
    }

    /// Sends a raw request (for query parameters kube-rs does not expose); returns the
    /// status and the body as JSON (Null when not JSON).
    pub async fn raw(&self, method: &str, path_and_query: &str, body: &Value) -> (u16, Value) {
        use axum::http;
        let request = http::Request::builder()
            .method(method)
            .uri(path_and_query)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json")
            .body(serde_json::to_vec(body).expect("JSON"))
            .expect("a request");
        let response = within(
            "a raw request",
            WAIT,
            self.client.send(request.map(kube::client::Body::from)),
        )
        .await
        .unwrap_or_else(|e| panic!("{method} {path_and_query}: {e}"));
        let status = response.status().as_u16();
        let bytes = within(
            "a response body",
            WAIT,
            response.into_body().collect_bytes(),
        )
        .await
        .unwrap_or_else(|e| panic!("{method} {path_and_query}: reading the body: {e}"));
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// The last `n` requests of the log, one per line.
    pub fn request_log_tail(&self, n: usize) -> String {
        let log = self.requests();
        let skip = log.len().saturating_sub(n);
        log[skip..]
            .iter()
            .map(|r| {
                format!(
                    "\n  {} {} {}?{} (verb {}, agent {:?})",
                    r.status, r.method, r.path, r.query, r.verb, r.user_agent
                )
            })
            .collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "---- API server request log (last 150) ----{}",
                self.request_log_tail(150)
            );
            if let Some(real) = self.real() {
                eprintln!(
                    "---- the components' logs ----\n{}",
                    real.kube.logs_tail(40)
                );
            }
        }
        save_berth_requests(self.requests());
    }
}

/// A token of ServiceAccount `namespace/name` (created when missing), valid for an hour.
async fn service_account_token(client: &kube::Client, namespace: &str, name: &str) -> String {
    within(
        "a token request",
        WAIT,
        kube_cluster::service_account_token(client, namespace, name, Duration::from_secs(3600)),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"))
}

/// `helm install` of the chart into [`RELEASE_NAMESPACE`] (its CRDs included), with the
/// Deployment scaled to 0 (the tests run berth themselves), and the CRDs established.
async fn install_chart(helm: &Path, kube: &KubeCluster, client: &kube::Client) {
    let chart = repo_root().join("charts/berth");
    let output = Command::new(helm)
        .arg("install")
        .arg(RELEASE)
        .arg(&chart)
        .args([
            "--namespace",
            RELEASE_NAMESPACE,
            "--create-namespace",
            "--wait=false",
        ])
        .args(["--set", "leaderElection.leaseName=berth"])
        // The tests create the profiles they need.
        .args(["--set", "profiles=null"])
        .args(["--set", "metrics.reader.subjects[0].kind=ServiceAccount"])
        .args(["--set", "metrics.reader.subjects[0].name=prometheus"])
        .args(["--set", "metrics.reader.subjects[0].namespace=monitoring"])
        .arg("--kubeconfig")
        .arg(kube.admin_kubeconfig())
        .env("HELM_CACHE_HOME", kube.dir().join("helm/cache"))
        .env("HELM_CONFIG_HOME", kube.dir().join("helm/config"))
        .env("HELM_DATA_HOME", kube.dir().join("helm/data"))
        .stdin(Stdio::null())
        .output()
        .expect("running helm");
    assert!(
        output.status.success(),
        "helm install failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(client.clone(), RELEASE_NAMESPACE);
    within(
        "scaling the chart's Deployment to 0",
        WAIT,
        deployments.patch(
            RELEASE,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 0}})),
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("scaling deployment {RELEASE_NAMESPACE}/{RELEASE} to 0: {e}"));
    let names = ["schedulerprofiles.berth.dev", "podgroups.berth.dev"].map(String::from);
    kube_cluster::wait_crds_established(client, &names, WAIT)
        .await
        .unwrap_or_else(|e| panic!("the chart's CRDs: {e}"));
    // Pods need their namespace's default ServiceAccount (admission).
    eventually("namespace default has its ServiceAccount", WAIT, || {
        kube_cluster::default_service_account(client, "default")
    })
    .await;
}

/// With `BERTH_E2E_REQUEST_LOG_DIR` set, writes the requests berth made (told apart by
/// its `User-Agent`) as a JSON array of `RequestRecord`s to
/// `<dir>/<test>-<pid>-<n>.json`, for the chart's RBAC replay (`rbac_replay` in
/// tests/chart.rs). `scripts/test.sh` sets it.
fn save_berth_requests(requests: Vec<RequestRecord>) {
    static SAVED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let Some(dir) = std::env::var_os("BERTH_E2E_REQUEST_LOG_DIR").map(PathBuf::from) else {
        return;
    };
    let requests: Vec<RequestRecord> = requests
        .into_iter()
        .filter(|r| r.user_agent.as_deref() == Some(berth::operator::USER_AGENT))
        .collect();
    let test = std::thread::current()
        .name()
        .unwrap_or("unnamed")
        .replace("::", "-");
    let n = SAVED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = dir.join(format!("{test}-{}-{n}.json", std::process::id()));
    let written = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&path, serde_json::to_vec(&requests).expect("JSON")));
    if let Err(error) = written {
        // A second panic while unwinding would abort the test binary.
        if std::thread::panicking() {
            eprintln!("cannot write {}: {error}", path.display());
        } else {
            panic!("cannot write {}: {error}", path.display());
        }
    }
}

// ---------------------------------------------------------------------------------------
// The berth process

/// How to start `berth run`.
#[derive(Debug, Clone, Default)]
pub struct BerthOptions {
    /// `--leader-elect` with this identity (Lease `default/berth`, 4 s).
    pub leader_identity: Option<String>,
    pub seed: u64,
    /// `--serve-default-scheduler`: accept profiles serving `default-scheduler`.
    pub serve_default_scheduler: bool,
    /// How the metrics port is served: berth's default, HTTPS with a self-signed
    /// certificate, unless said otherwise.
    pub metrics: MetricsPort,
}

/// The metrics port's flags.
#[derive(Debug, Clone, Default)]
pub enum MetricsPort {
    /// No flag: HTTPS, self-signed.
    #[default]
    SelfSigned,
    /// `--tls-cert-file` and `--tls-private-key-file`.
    CertificateFiles { cert: PathBuf, key: PathBuf },
    /// `--metrics-insecure`.
    Insecure,
}

/// The bearer token every test cluster's TokenReview knows as [`METRICS_READER`], whom its
/// SubjectAccessReview lets `get` `/metrics` (what binding Prometheus's service account to
/// the chart's `<fullname>-metrics-reader` ClusterRole does).
pub const METRICS_READER_TOKEN: &str = "e2e-metrics-reader-token";
pub const METRICS_READER: &str = "system:serviceaccount:monitoring:prometheus";
/// A token the clusters know for a user with no permission on `/metrics`.
pub const NOSY_TOKEN: &str = "e2e-nosy-token";
pub const NOSY: &str = "system:serviceaccount:default:nosy";

/// The test clusters' tokens and rules (see [`METRICS_READER_TOKEN`]).
pub fn metrics_access() -> test_apiserver::Access {
    let user = |name: &str| test_apiserver::UserInfo {
        username: name.to_string(),
        uid: format!("uid-{name}"),
        groups: vec!["system:serviceaccounts".to_string()],
    };
    test_apiserver::Access {
        tokens: BTreeMap::from([
            (METRICS_READER_TOKEN.to_string(), user(METRICS_READER)),
            (NOSY_TOKEN.to_string(), user(NOSY)),
        ]),
        rules: vec![test_apiserver::AccessRule {
            name: "metrics-reader".to_string(),
            users: vec![METRICS_READER.to_string()],
            verbs: vec!["get".to_string()],
            non_resource_urls: vec!["/metrics".to_string()],
            ..Default::default()
        }],
    }
}

impl BerthOptions {
    pub fn seed(seed: u64) -> BerthOptions {
        BerthOptions {
            seed,
            ..Default::default()
        }
    }

    pub fn leader(identity: &str) -> BerthOptions {
        BerthOptions {
            leader_identity: Some(identity.to_string()),
            ..Default::default()
        }
    }
}

/// One read of `/metrics` ([`Berth::scrape`]).
pub struct Scraped(String);

impl Scraped {
    /// The value of `series` (its name and labels as exposed); fails the test when absent.
    pub fn value(&self, series: &str) -> f64 {
        self.0
            .lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {series} in /metrics"))
    }
}

/// A running `berth run`; killed on drop.
pub struct Berth {
    child: Child,
    name: String,
    pub metrics: SocketAddr,
    /// Whether the metrics port speaks HTTPS.
    pub https: bool,
    logs: Arc<Mutex<Vec<String>>>,
    exited: Option<ExitStatus>,
    /// The cluster's metrics reader token ([`Cluster::metrics_token`]).
    metrics_token: String,
}

/// The Lease both replicas of the leader-election test campaign for.
pub const LEASE_NAME: &str = "berth";

impl Berth {
    /// Starts `berth run` against `cluster`. Its stderr and stdout are collected (see
    /// [`Berth::logs`]). `RUST_LOG` comes from `BERTH_E2E_LOG` (default
    /// `warn,berth=debug`).
    pub fn spawn(cluster: &Cluster, options: BerthOptions) -> Berth {
        let metrics = http::free_address();
        let mut command = Command::new(env!("CARGO_BIN_EXE_berth"));
        command
            .arg("run")
            .arg("--kubeconfig")
            .arg(cluster.kubeconfig())
            .arg("--metrics-bind-address")
            .arg(metrics.to_string())
            .arg("--seed")
            .arg(options.seed.to_string())
            .arg("--parallelism")
            .arg("2");
        if options.serve_default_scheduler {
            command.arg("--serve-default-scheduler");
        }
        match &options.metrics {
            MetricsPort::SelfSigned => {}
            MetricsPort::CertificateFiles { cert, key } => {
                command
                    .arg("--tls-cert-file")
                    .arg(cert)
                    .arg("--tls-private-key-file")
                    .arg(key);
            }
            MetricsPort::Insecure => {
                command.arg("--metrics-insecure");
            }
        }
        let name = match &options.leader_identity {
            Some(identity) => {
                command
                    .arg("--leader-elect")
                    .args(["--lease-namespace", cluster.lease_namespace()])
                    .args(["--lease-name", LEASE_NAME])
                    .args(["--identity", identity])
                    .args(["--lease-duration-seconds", "4"]);
                format!("berth[{identity}]")
            }
            None => {
                command.args(["--identity", "e2e"]);
                "berth".to_string()
            }
        };
        let log_filter =
            std::env::var("BERTH_E2E_LOG").unwrap_or_else(|_| "warn,berth=debug".to_string());
        command
            .env("RUST_LOG", log_filter)
            .env("NO_COLOR", "1")
            .env_remove("KUBECONFIG")
            .env_remove("POD_NAME")
            .env_remove("POD_NAMESPACE")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", env!("CARGO_BIN_EXE_berth")));
        let logs = Arc::new(Mutex::new(Vec::new()));
        collect_lines(child.stderr.take(), logs.clone(), "");
        collect_lines(child.stdout.take(), logs.clone(), "stdout: ");
        Berth {
            child,
            name,
            metrics,
            https: !matches!(options.metrics, MetricsPort::Insecure),
            logs,
            exited: None,
            metrics_token: cluster.metrics_token.clone(),
        }
    }

    /// SIGKILL, at once (no graceful shutdown, no Lease release).
    pub fn kill(&mut self) {
        if self.exited.is_none() {
            let _ = self.child.kill();
            self.exited = self.child.wait().ok();
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the process wrote so far.
    pub fn logs(&self) -> String {
        self.logs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .join("\n")
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        if self.exited.is_some() {
            return false;
        }
        match self.child.try_wait() {
            Ok(Some(status)) => {
                self.exited = Some(status);
                false
            }
            Ok(None) => true,
            Err(_) => false,
        }
    }

    /// Fails the test (with the logs) if the process has exited.
    pub fn assert_running(&mut self) {
        if !self.is_running() {
            panic!("{} exited unexpectedly ({:?})", self.name, self.exited);
        }
    }

    /// `/metrics` as the metrics reader sees it now.
    pub async fn scrape(&self) -> Scraped {
        let (status, body) = self.get("/metrics").await.expect("/metrics");
        assert_eq!(status, 200, "{body}");
        Scraped(body)
    }

    /// GET on the metrics address as the metrics reader ([`Cluster::metrics_token`]):
    /// status code and body.
    pub async fn get(&self, path: &str) -> Result<(u16, String), String> {
        self.get_with_token(path, Some(&self.metrics_token)).await
    }

    /// GET on the metrics address with `token` as bearer token (none: no
    /// `Authorization` header), over HTTPS unless the port is insecure, trusting any
    /// certificate.
    pub async fn get_with_token(
        &self,
        path: &str,
        token: Option<&str>,
    ) -> Result<(u16, String), String> {
        let address = self.metrics;
        let path = path.to_string();
        let https = self.https;
        let authorization = token.map(|token| format!("Bearer {token}"));
        within(
            "a GET on the metrics address",
            Duration::from_secs(5),
            tokio::task::spawn_blocking(move || {
                let headers: Vec<(&str, &str)> = authorization
                    .as_deref()
                    .map(|value| ("Authorization", value))
                    .into_iter()
                    .collect();
                let response = match https {
                    true => https::get(address, "localhost", &path, &headers, &https::Trust::Any)
                        .map(|exchange| exchange.response)?,
                    false => http::get(address, &path)?,
                };
                Ok((response.status, response.body))
            }),
        )
        .await
        .map_err(|e| e.to_string())?
    }

    /// Waits until `/readyz` answers 200 (caches synced); returns every status code seen
    /// before, in order (connection failures as 0).
    pub async fn wait_ready(&mut self) -> Vec<u16> {
        let deadline = Instant::now() + WAIT;
        let mut seen = Vec::new();
        loop {
            self.assert_running();
            // As the kubelet probes: no token.
            match self.get_with_token("/readyz", None).await {
                Ok((200, _)) => return seen,
                Ok((status, _)) => seen.push(status),
                Err(_) => seen.push(0),
            }
            if Instant::now() >= deadline {
                panic!(
                    "{}: /readyz did not answer 200 within {WAIT:?}; seen {seen:?}",
                    self.name
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Sends SIGTERM and waits (at most [`WAIT`]) for the exit status.
    pub async fn terminate(&mut self) -> ExitStatus {
        if let Some(status) = self.exited {
            return status;
        }
        let sent = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status()
            .expect("running kill");
        assert!(sent.success(), "kill -TERM {} failed", self.child.id());
        let deadline = Instant::now() + WAIT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.exited = Some(status);
                return status;
            }
            if Instant::now() >= deadline {
                panic!("{} did not exit within {WAIT:?} of SIGTERM", self.name);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Sends SIGTERM and asserts the process exits 0.
    pub async fn terminate_cleanly(&mut self) {
        let status = self.terminate().await;
        assert!(
            status.success(),
            "{} exited with {status} after SIGTERM",
            self.name
        );
    }
}

impl Drop for Berth {
    fn drop(&mut self) {
        if self.exited.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if std::thread::panicking() {
            // Give the reader threads a moment to take the last lines.
            std::thread::sleep(Duration::from_millis(100));
            eprintln!(
                "---- {} (pid {}) log ----\n{}\n---- end of {} log ----",
                self.name,
                self.child.id(),
                self.logs(),
                self.name
            );
        }
    }
}

/// Reads `stream` line by line into `logs` on a thread of its own.
fn collect_lines(
    stream: Option<impl Read + Send + 'static>,
    logs: Arc<Mutex<Vec<String>>>,
    prefix: &'static str,
) {
    let Some(stream) = stream else { return };
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if std::env::var_os("BERTH_E2E_ECHO").is_some() {
                eprintln!("{prefix}{line}");
            }
            logs.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(format!("{prefix}{line}"));
        }
    });
}

// ---------------------------------------------------------------------------------------
// The simulator as the oracle

/// `berth simulate` on `objects` (YAML/JSON documents: nodes, pods, profiles) with
/// `seed`.
pub async fn simulate(objects: &[Value], seed: u64) -> berth::simulate::report::Report {
    // JSON is YAML: the documents go through the simulator's own loader, which applies
    // the API server's defaults (namespace, schedulerName, creation order).
    let text: String = objects
        .iter()
        .map(|o| format!("---\n{}\n", serde_json::to_string(o).expect("JSON")))
        .collect();
    let (input, _warnings) =
        berth::simulate::input::load_str(Path::new("operator-e2e.yaml"), &text)
            .unwrap_or_else(|e| panic!("the simulator rejects the test's objects: {e}"));
    let registry = berth::plugins::default_registry();
    let options = berth::simulate::run::SimulateOptions {
        explain: false,
        seed,
        parallelism: 1,
    };
    within(
        "simulating",
        WAIT,
        berth::simulate::run::simulate(input, &registry, options),
    )
    .await
    .unwrap_or_else(|e| panic!("the simulation failed: {e}"))
}

/// Where `berth simulate` puts every pending pod of `objects` with `seed`: pod name ->
/// node, for scheduled pods only.
pub async fn simulated_placements(objects: &[Value], seed: u64) -> BTreeMap<String, String> {
    simulate(objects, seed)
        .await
        .pods
        .into_iter()
        .filter(|p| p.result == berth::simulate::report::PodResult::Scheduled)
        .filter_map(|p| p.node.map(|node| (p.name, node)))
        .collect()
}
