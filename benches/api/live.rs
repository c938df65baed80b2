//! scheduler_perf's workloads through the API, so that the binder, the watches and the
//! status reporting are measured on top of the core `berth bench` measures.
//!
//! Two API servers: the test API server (in this process), or a real kube-apiserver
//! 1.37 with its etcd (`crates/kube-cluster`, no controllers, no kubelets, no audit log).
//! Two schedulers: the real `berth run` binary (a child process) or, on the real API
//! server only, the real kube-scheduler 1.37, configured as scheduler_perf configures it
//! (client QPS and burst 5,000, its default parallelism of 16, the default profile).
//! berth's client has no rate limit at all, so the two have the same client limits in
//! effect: none that a run reaches. Each run starts a fresh server, so two runs of one
//! workload start from identical clusters.
//!
//! One run follows scheduler_perf's op list: the nodes are created, the scheduler starts
//! (for berth, a SchedulerProfile with the default plugin set becomes Ready), the init
//! pods are created and waited for until bound (not timed), then the measured pods are
//! created and each is timed from the moment its create request is sent to the moment a
//! watch of this process sees it bound (`spec.nodeName` set). SchedulingThroughput is
//! cut from those bind observations as upstream's `throughputCollector` cuts it from its
//! informer's, one-second windows from the first measured create to the last bind. The
//! CPU seconds of the scheduler, of the API server (with etcd) and of this process are
//! read from `/proc` around the measured phase; the scheduler's peak RSS is its VmHWM.
//!
//! Creates run with a bounded number of requests in flight, so that setup neither
//! dominates the run nor opens a connection per object.
//!
//! The DRA workloads are not run this way yet ([`unsupported`]): they need the
//! resource.k8s.io objects created and the init claims allocated through the API, and a
//! resourceclaim controller making the pods' claims, which neither the test API server
//! nor a cluster without controllers provides. Nor are GangScheduling and
//! BasicScheduling, whose Workload API PodGroups this benchmark does not create.
//! SchedulingWithExtendedResource needs only nodes and pods and runs like the others.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use berth::bench::check::{Check, Placement, check};
use berth::bench::report::{Percentiles, Throughput, percentiles, throughput};
use berth::bench::run::{Plan, peak_rss, peak_rss_of};
use berth::bench::workload::{HIGH_PRIORITY, HIGH_PRIORITY_CLASS, Phase, Workload};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::watcher;
use kube_cluster::KubeCluster;
use serde::Serialize;
use serde_json::json;
use test_apiserver::{Config, TestApiServer};

/// The API server a run goes through (`--apiserver`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "camelCase")]
pub enum ApiServerKind {
    /// berth's test API server, in this process.
    Test,
    /// kube-apiserver 1.37 and etcd, as child processes, built from source on first use.
    Real,
}

/// The scheduler that binds the pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SchedulerKind {
    #[serde(rename = "berth")]
    Berth,
    /// kube-scheduler 1.37 (real API server only).
    #[serde(rename = "kube-scheduler")]
    KubeScheduler,
}

impl SchedulerKind {
    pub fn name(self) -> &'static str {
        match self {
            SchedulerKind::Berth => "berth",
            SchedulerKind::KubeScheduler => "kube-scheduler",
        }
    }
}

/// kube-scheduler's configuration in a run: scheduler_perf's client limits, everything
/// else (parallelism 16, the default profile with every default plugin) its default.
fn kube_scheduler_config() -> serde_json::Value {
    json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"qps": 5000, "burst": 5000},
        "profiles": [{"schedulerName": KUBE_SCHEDULER_NAME}],
    })
}

/// The scheduler name kube-scheduler serves in a run.
const KUBE_SCHEDULER_NAME: &str = "default-scheduler";

/// How to run the live path.
#[derive(Debug, Clone)]
pub struct LiveOptions {
    /// The `berth` binary to start as `berth run`.
    pub berth: PathBuf,
    /// `berth run --parallelism` (None: berth's default, the CPU count).
    pub parallelism: Option<u64>,
    pub seed: u64,
    /// Create requests in flight at once.
    pub in_flight: usize,
    /// The bound on every wait (the profile to become Ready, a phase's pods to be bound).
    pub timeout: Duration,
    /// `RUST_LOG` of the berth process.
    pub log_filter: String,
    pub apiserver: ApiServerKind,
    pub scheduler: SchedulerKind,
}

/// One workload's run through the API.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveReport {
    pub workload: String,
    pub size: String,
    pub nodes: u64,
    pub init_pods: u64,
    pub measure_pods: u64,
    pub apiserver: ApiServerKind,
    pub scheduler: SchedulerKind,
    pub scheduler_name: String,
    /// Seconds to create the nodes and namespaces and have the profile Ready (not
    /// measured).
    pub setup_seconds: f64,
    /// Seconds from the first init pod's create to the last one's bind (not measured).
    pub init_duration_seconds: f64,
    /// Seconds from the first measured pod's create request to the last one's bind.
    pub duration_seconds: f64,
    /// Seconds from the first measured pod's create request to the last one's answer:
    /// when it is much shorter than the duration, the client did not hold berth back.
    pub create_seconds: f64,
    /// scheduler_perf's SchedulingThroughput over the binds this process observed.
    pub scheduling_throughput: Throughput,
    /// From sending a measured pod's create request to observing it bound.
    pub create_to_bound_seconds: Percentiles,
    /// CPU time (user and system) spent during the measured phase.
    pub cpu_seconds: CpuSeconds,
    /// Peak resident set (VmHWM) of the scheduler process over the whole run, where the
    /// platform reports it.
    pub scheduler_peak_rss_bytes: Option<u64>,
    /// Peak resident set of this process (the client, and the test API server when it
    /// is the server).
    pub bench_peak_rss_bytes: Option<u64>,
    pub check: Check,
}

/// Where the CPU went while the measured pods were scheduled.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuSeconds {
    /// The scheduler process: informers, queue, scheduling cycles, binder, events.
    pub scheduler: Option<f64>,
    /// kube-apiserver and etcd (the real API server only).
    pub apiserver: Option<f64>,
    /// This process: the creating client and the watch of binds, and the test API
    /// server when it is the server.
    pub bench: Option<f64>,
}

impl CpuSeconds {
    /// The CPU used between `before` and this reading of the same processes.
    fn since(&self, before: &CpuSeconds) -> CpuSeconds {
        let delta = |after: Option<f64>, before: Option<f64>| Some(after? - before?);
        CpuSeconds {
            scheduler: delta(self.scheduler, before.scheduler),
            apiserver: delta(self.apiserver, before.apiserver),
            bench: delta(self.bench, before.bench),
        }
    }
}

/// Why `workload` cannot run through the API, if it cannot (see the module
/// documentation).
pub fn unsupported(workload: Workload) -> Option<String> {
    if let Workload::Case(w) = workload {
        return Some(format!(
            "{} is not supported through the API yet: this benchmark creates nodes and two \
             createPods ops only, not churn, deletions, gated pods or named nodes (run it \
             with `berth bench`)",
            w.full_name()
        ));
    }
    if workload.uses_claims() {
        return Some(format!(
            "{workload} is not supported through the API yet: it needs ResourceSlices, a \
             DeviceClass, claims allocated before the run and a resourceclaim controller \
             (run it with `berth bench`)"
        ));
    }
    workload.pod_groups().map(|_| {
        format!(
            "{workload} is not supported through the API yet: it needs scheduling.k8s.io/\
             v1beta1 PodGroups created before its pods, which this benchmark does not \
             create (run it with `berth bench`)"
        )
    })
}

/// Runs `plan` through a fresh API server and a fresh scheduler.
pub async fn run_live(plan: &Plan, options: &LiveOptions) -> Result<LiveReport, String> {
    if let Some(reason) = unsupported(plan.workload) {
        return Err(reason);
    }
    let setup_started = Instant::now();
    let mut cluster = Cluster::start(plan, options).await?;
    let client = cluster.server.client().await?;
    let binds = BindWatch::start(client.clone()).await?;

    let (init, measure) = plan.workload.phases();
    let mut namespaces = vec![init.namespace, measure.namespace];
    namespaces.dedup();
    for namespace in namespaces {
        create_namespace(&client, namespace, &cluster.server).await?;
    }
    if plan.workload == Workload::PreemptionBasic {
        create_priority_class(&client, &cluster.server).await?;
    }
    let nodes: Vec<Node> = (0..plan.counts.nodes)
        .map(|i| plan.workload.node(i))
        .collect();
    let node_labels: HashMap<String, BTreeMap<String, String>> = nodes
        .iter()
        .map(|n| {
            let name = n.metadata.name.clone().unwrap_or_default();
            (name, n.metadata.labels.clone().unwrap_or_default())
        })
        .collect();
    let node_api: Api<Node> = Api::all(client.clone());
    create_all(nodes, options.in_flight, |node| {
        let api = node_api.clone();
        async move {
            api.create(&PostParams::default(), &node)
                .await
                .map(|_| ())
                .map_err(|e| format!("creating node {:?}: {e}", node.metadata.name))
        }
    })
    .await?;

    // Started once the nodes exist, so that its first list holds the whole cluster.
    let scheduler_name = cluster.start_scheduler(&client, options).await?;
    let setup_seconds = setup_started.elapsed().as_secs_f64();

    let init_started = Instant::now();
    let init_created = create_pods(
        &client,
        init,
        plan.counts.init_pods,
        &scheduler_name,
        options,
    )
    .await?;
    let init_bound = binds
        .wait(&init_created, options.timeout, &mut cluster, "init", true)
        .await?;
    if let Some(index) = init_bound.iter().position(Option::is_none) {
        let unbound = init_bound.iter().filter(|b| b.is_none()).count();
        return Err(format!(
            "{unbound} init pods are unschedulable, {} among them{}",
            init_created[index].key,
            cluster.log_tail()
        ));
    }
    let init_duration = init_started.elapsed();

    let cpu_before = cluster.cpu_seconds();
    let started = Instant::now();
    let measure_created = create_pods(
        &client,
        measure,
        plan.counts.measure_pods,
        &scheduler_name,
        options,
    )
    .await?;
    let create_seconds = started.elapsed().as_secs_f64();
    let bound = binds
        .wait(
            &measure_created,
            options.timeout,
            &mut cluster,
            "measured",
            // A preemptor is reported Unschedulable before its nomination (kube-scheduler
            // writes the two apart): only a bind ends its wait.
            plan.workload != Workload::PreemptionBasic,
        )
        .await?;
    let cpu_after = cluster.cpu_seconds();
    let finished = bound
        .iter()
        .flatten()
        .map(|b| b.at)
        .max()
        .unwrap_or(started);
    let duration = finished.saturating_duration_since(started);
    let bound_at: Vec<Duration> = bound
        .iter()
        .flatten()
        .map(|b| b.at.saturating_duration_since(started))
        .collect();
    let create_to_bound: Vec<Duration> = measure_created
        .iter()
        .zip(&bound)
        .filter_map(|(created, b)| Some(b.as_ref()?.at.saturating_duration_since(created.at)))
        .collect();

    let placements: Vec<Placement> = binds
        .placements(init, &init_created, false)
        .into_iter()
        .chain(binds.placements(measure, &measure_created, true))
        .collect();
    let report = LiveReport {
        workload: plan.workload.name().to_string(),
        size: plan.size.clone(),
        nodes: plan.counts.nodes,
        init_pods: plan.counts.init_pods,
        measure_pods: plan.counts.measure_pods,
        apiserver: options.apiserver,
        scheduler: options.scheduler,
        scheduler_name,
        setup_seconds,
        init_duration_seconds: init_duration.as_secs_f64(),
        duration_seconds: duration.as_secs_f64(),
        create_seconds,
        scheduling_throughput: throughput(&bound_at, duration),
        create_to_bound_seconds: percentiles(&create_to_bound),
        cpu_seconds: cpu_after.since(&cpu_before),
        scheduler_peak_rss_bytes: cluster.scheduler_pid().and_then(peak_rss_of),
        bench_peak_rss_bytes: peak_rss(),
        check: check(plan.workload, &placements, &node_labels),
    };
    binds.stop();
    cluster.shutdown().await;
    Ok(report)
}

/// The API server of a run.
enum Server {
    Test(TestApiServer),
    Real(Box<KubeCluster>),
}

impl Server {
    async fn start(plan: &Plan, kind: ApiServerKind) -> Result<Server, String> {
        match kind {
            ApiServerKind::Test => {
                // Every object of the run and every bind stays resumable for the watches.
                let window =
                    plan.counts.nodes + 4 * (plan.counts.init_pods + plan.counts.measure_pods);
                let config = Config {
                    history_window: usize::try_from(window).unwrap_or(usize::MAX).max(10_000),
                    ..Config::default()
                };
                TestApiServer::start(config)
                    .await
                    .map(Server::Test)
                    .map_err(|e| format!("starting the test API server: {e}"))
            }
            ApiServerKind::Real => {
                let options = kube_cluster::Options {
                    controller_manager: false,
                    kwok: false,
                    audit: false,
                    // Admission would taint every new node not-ready until the node
                    // lifecycle controller, which does not run here, saw it Ready.
                    apiserver_args: vec![
                        "--disable-admission-plugins=TaintNodesByCondition".to_string(),
                    ],
                    ..kube_cluster::Options::default()
                };
                KubeCluster::start(options)
                    .await
                    .map(|cluster| Server::Real(Box::new(cluster)))
                    .map_err(|e| format!("starting kube-apiserver and etcd: {e}"))
            }
        }
    }

    fn kubeconfig(&self) -> &Path {
        match self {
            Server::Test(server) => server.kubeconfig_path(),
            Server::Real(cluster) => cluster.admin_kubeconfig(),
        }
    }

    async fn client(&self) -> Result<kube::Client, String> {
        match self {
            Server::Test(server) => Ok(server.client().await),
            Server::Real(cluster) => kube_cluster::client_from(cluster.admin_kubeconfig())
                .await
                .map_err(|e| format!("a client of the API server: {e}")),
        }
    }

    /// berth's CRDs, established.
    async fn install_crds(&self, client: &kube::Client, timeout: Duration) -> Result<(), String> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("crds");
        match self {
            Server::Test(server) => server
                .install_crds_from_dir(&dir)
                .map(|_| ())
                .map_err(|e| format!("installing {}: {e:?}", dir.display())),
            Server::Real(_) => kube_cluster::install_crds(client, &dir, timeout)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string()),
        }
    }

    /// kube-apiserver's and etcd's CPU seconds (None for the in-process test server).
    fn cpu_seconds(&self) -> Option<f64> {
        match self {
            Server::Test(_) => None,
            Server::Real(cluster) => {
                let apiserver = cpu_time(cluster.apiserver_pid()?)?;
                let etcd = cpu_time(cluster.etcd_pid()?)?;
                Some(apiserver + etcd)
            }
        }
    }

    async fn shutdown(self) {
        match self {
            Server::Test(server) => server.shutdown().await,
            Server::Real(mut cluster) => cluster.stop(),
        }
    }
}

/// A run's API server and its scheduler.
struct Cluster {
    server: Server,
    scheduler: SchedulerKind,
    /// The `berth run` process, once started (berth runs only).
    berth: Option<BerthProcess>,
}

impl Cluster {
    async fn start(plan: &Plan, options: &LiveOptions) -> Result<Cluster, String> {
        if options.scheduler == SchedulerKind::KubeScheduler
            && options.apiserver != ApiServerKind::Real
        {
            return Err("kube-scheduler runs against the real API server only".to_string());
        }
        let server = Server::start(plan, options.apiserver).await?;
        Ok(Cluster {
            server,
            scheduler: options.scheduler,
            berth: None,
        })
    }

    /// Starts the scheduler and returns the scheduler name its pods name: berth's once
    /// its SchedulerProfile is Ready, kube-scheduler's once its process runs (it lists
    /// the cluster before it schedules the first init pod).
    async fn start_scheduler(
        &mut self,
        client: &kube::Client,
        options: &LiveOptions,
    ) -> Result<String, String> {
        match self.scheduler {
            SchedulerKind::Berth => {
                self.server.install_crds(client, options.timeout).await?;
                let berth = self
                    .berth
                    .insert(BerthProcess::spawn(self.server.kubeconfig(), options)?);
                create_profile(client, berth, options.timeout).await
            }
            SchedulerKind::KubeScheduler => {
                let Server::Real(cluster) = &mut self.server else {
                    return Err("kube-scheduler needs the real API server".to_string());
                };
                cluster
                    .start_scheduler(&kube_scheduler_config())
                    .await
                    .map_err(|e| format!("starting kube-scheduler: {e}"))?;
                Ok(KUBE_SCHEDULER_NAME.to_string())
            }
        }
    }

    fn scheduler_pid(&self) -> Option<u32> {
        match (&self.berth, &self.server) {
            (Some(berth), _) => Some(berth.pid()),
            (None, Server::Real(cluster)) => cluster.scheduler_pid(),
            (None, Server::Test(_)) => None,
        }
    }

    fn check_running(&mut self) -> Result<(), String> {
        if let Some(berth) = self.berth.as_mut() {
            return berth.check_running();
        }
        match &mut self.server {
            Server::Real(cluster) => cluster
                .check_scheduler()
                .map_err(|e| format!("kube-scheduler: {e}\n{}", cluster.logs_tail(LOG_TAIL))),
            Server::Test(_) => Ok(()),
        }
    }

    fn log_tail(&self) -> String {
        match (&self.berth, &self.server) {
            (Some(berth), _) => berth.log_tail(),
            (None, Server::Real(cluster)) => format!(
                "\n---- the cluster's logs (last lines) ----\n{}",
                cluster.logs_tail(LOG_TAIL)
            ),
            (None, Server::Test(_)) => String::new(),
        }
    }

    /// The CPU seconds each process has used so far.
    fn cpu_seconds(&self) -> CpuSeconds {
        CpuSeconds {
            scheduler: self.scheduler_pid().and_then(cpu_time),
            apiserver: self.server.cpu_seconds(),
            bench: cpu_time_of_self(),
        }
    }

    async fn shutdown(mut self) {
        if let Some(mut berth) = self.berth.take() {
            berth.stop();
        }
        self.server.shutdown().await;
    }
}

/// The PriorityClass high-priority pods name (a real API server's Priority admission
/// requires it; berth and kube-scheduler read the pod's `priority`).
async fn create_priority_class(client: &kube::Client, server: &Server) -> Result<(), String> {
    if matches!(server, Server::Test(_)) {
        return Ok(());
    }
    let class = PriorityClass {
        metadata: ObjectMeta {
            name: Some(HIGH_PRIORITY_CLASS.to_string()),
            ..Default::default()
        },
        value: Some(HIGH_PRIORITY),
        ..Default::default()
    };
    Api::<PriorityClass>::all(client.clone())
        .create(&PostParams::default(), &class)
        .await
        .map(|_| ())
        .map_err(|e| format!("creating PriorityClass {HIGH_PRIORITY_CLASS}: {e}"))
}

/// Creates namespace `name`; on the real API server also its default ServiceAccount,
/// which admission requires of every pod and no controller creates here.
async fn create_namespace(
    client: &kube::Client,
    name: &str,
    server: &Server,
) -> Result<(), String> {
    if matches!(server, Server::Real(_)) {
        return kube_cluster::ensure_service_account(client, name, "default")
            .await
            .map_err(|e| format!("creating namespace {name} and its default account: {e}"));
    }
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .map(|_| ())
        .map_err(|e| format!("creating namespace {name}: {e}"))
}

/// Creates a SchedulerProfile with the default plugin set and waits until it is Ready;
/// returns the scheduler name it serves.
async fn create_profile(
    client: &kube::Client,
    berth: &mut BerthProcess,
    timeout: Duration,
) -> Result<String, String> {
    const NAME: &str = "berth-bench";
    let gvk = GroupVersionKind::gvk("berth.dev", "v1alpha1", "SchedulerProfile");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "schedulerprofiles");
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let profile: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "SchedulerProfile",
        "metadata": {"name": NAME},
        "spec": {},
    }))
    .map_err(|e| format!("the SchedulerProfile: {e}"))?;
    api.create(&PostParams::default(), &profile)
        .await
        .map_err(|e| format!("creating SchedulerProfile {NAME}: {e}"))?;
    let deadline = Instant::now() + timeout;
    loop {
        let status = api
            .get(NAME)
            .await
            .map_err(|e| format!("reading SchedulerProfile {NAME}: {e}"))?
            .data
            .get("status")
            .cloned()
            .unwrap_or_default();
        let ready = status["conditions"].as_array().is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        });
        if ready {
            return Ok(status["schedulerName"].as_str().unwrap_or(NAME).to_string());
        }
        berth.check_running()?;
        if Instant::now() >= deadline {
            return Err(format!(
                "SchedulerProfile {NAME} not Ready within {timeout:?}; status: {status}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A pod's create request, sent at `at`.
#[derive(Debug, Clone)]
pub struct Created {
    /// `namespace/name`.
    pub key: String,
    /// The pod's index in its `createPods` op.
    pub index: u64,
    pub at: Instant,
}

/// Creates `count` pods of `phase` for `scheduler_name`; returns them in name order.
async fn create_pods(
    client: &kube::Client,
    phase: Phase,
    count: u64,
    scheduler_name: &str,
    options: &LiveOptions,
) -> Result<Vec<Created>, String> {
    let api: Api<Pod> = Api::namespaced(client.clone(), phase.namespace);
    let pods = (0..count).map(|i| {
        let name = phase.template.pod_name(i);
        (
            i,
            phase.template.pod(phase.namespace, name, i, scheduler_name),
        )
    });
    let mut created = create_all(pods, options.in_flight, |(index, pod)| {
        let api = api.clone();
        async move {
            let name = pod.metadata.name.clone().unwrap_or_default();
            let at = Instant::now();
            api.create(&PostParams::default(), &pod)
                .await
                .map_err(|e| format!("creating pod {}/{name}: {e}", phase.namespace))?;
            Ok(Created {
                key: format!("{}/{name}", phase.namespace),
                index,
                at,
            })
        }
    })
    .await?;
    created.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(created)
}

/// Runs `create` on every object with at most `in_flight` at once; the first error wins.
async fn create_all<T, R, F, Fut>(
    objects: impl IntoIterator<Item = T>,
    in_flight: usize,
    create: F,
) -> Result<Vec<R>, String>
where
    F: FnMut(T) -> Fut,
    Fut: Future<Output = Result<R, String>>,
{
    futures::stream::iter(objects)
        .map(create)
        .buffer_unordered(in_flight.max(1))
        .try_collect()
        .await
}

/// A pod seen bound.
#[derive(Debug, Clone)]
pub struct Bound {
    pub node: String,
    pub at: Instant,
}

/// What the watch last saw of a pod that is done with scheduling.
#[derive(Debug, Clone)]
enum Outcome {
    /// First seen with `spec.nodeName`.
    Bound(Bound),
    /// Its `PodScheduled` condition is False with reason Unschedulable (a check failure
    /// rather than a wait until the timeout).
    Unschedulable,
}

/// A watch of every pod, keeping when each was first seen bound or last seen
/// unschedulable.
struct BindWatch {
    outcomes: Arc<Mutex<HashMap<String, Outcome>>>,
    task: tokio::task::JoinHandle<()>,
}

impl BindWatch {
    /// Starts the watch and returns once its initial list is done.
    async fn start(client: kube::Client) -> Result<BindWatch, String> {
        let outcomes: Arc<Mutex<HashMap<String, Outcome>>> = Arc::default();
        let (listed, is_listed) = tokio::sync::oneshot::channel();
        let seen = outcomes.clone();
        let task = tokio::spawn(async move {
            let mut listed = Some(listed);
            let stream = watcher(Api::<Pod>::all(client), watcher::Config::default());
            futures::pin_mut!(stream);
            while let Some(event) = stream.next().await {
                let pod = match event {
                    Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) => pod,
                    Ok(watcher::Event::InitDone) => {
                        if let Some(listed) = listed.take() {
                            let _ = listed.send(());
                        }
                        continue;
                    }
                    // The watcher retries on errors by itself; the only deletes are
                    // preemption's victims, whose bind was already seen.
                    _ => continue,
                };
                let at = Instant::now();
                let key = format!(
                    "{}/{}",
                    pod.metadata.namespace.as_deref().unwrap_or_default(),
                    pod.metadata.name.as_deref().unwrap_or_default()
                );
                let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
                let mut seen = lock(&seen);
                let first_bind = !matches!(seen.get(&key), Some(Outcome::Bound(_)));
                match node.filter(|n| !n.is_empty()) {
                    Some(node) if first_bind => {
                        seen.insert(key, Outcome::Bound(Bound { node, at }));
                    }
                    Some(_) => {}
                    None if is_unschedulable(&pod) => {
                        seen.insert(key, Outcome::Unschedulable);
                    }
                    None => {}
                }
            }
        });
        tokio::time::timeout(Duration::from_secs(15), is_listed)
            .await
            .map_err(|_| "the watch of pods did not list within 15s".to_string())?
            .map_err(|_| "the watch of pods ended before it listed".to_string())?;
        Ok(BindWatch { outcomes, task })
    }

    /// Waits until every pod of `created` was seen bound or unschedulable; returns the
    /// binds (None for an unschedulable pod) in `created`'s order.
    /// With `unschedulable_is_final` false, only binds end the wait.
    async fn wait(
        &self,
        created: &[Created],
        timeout: Duration,
        cluster: &mut Cluster,
        phase: &str,
        unschedulable_is_final: bool,
    ) -> Result<Vec<Option<Bound>>, String> {
        let deadline = Instant::now() + timeout;
        loop {
            let pending = {
                let outcomes = lock(&self.outcomes);
                created
                    .iter()
                    .filter(|c| match outcomes.get(&c.key) {
                        None => true,
                        Some(Outcome::Unschedulable) => !unschedulable_is_final,
                        Some(Outcome::Bound(_)) => false,
                    })
                    .count()
            };
            if pending == 0 {
                let outcomes = lock(&self.outcomes);
                return Ok(created
                    .iter()
                    .map(|c| match outcomes.get(&c.key) {
                        Some(Outcome::Bound(bound)) => Some(bound.clone()),
                        _ => None,
                    })
                    .collect());
            }
            cluster.check_running()?;
            if Instant::now() >= deadline {
                return Err(format!(
                    "{pending} of {} {phase} pods neither bound nor unschedulable within \
                     {timeout:?}{}",
                    created.len(),
                    cluster.log_tail()
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Where each pod of `created` went.
    fn placements(&self, phase: Phase, created: &[Created], measured: bool) -> Vec<Placement> {
        let outcomes = lock(&self.outcomes);
        created
            .iter()
            .map(|c| Placement {
                template: phase.template,
                measured,
                index: c.index,
                node: match outcomes.get(&c.key) {
                    Some(Outcome::Bound(bound)) => Some(bound.node.clone()),
                    _ => None,
                },
            })
            .collect()
    }

    fn stop(self) {
        self.task.abort();
    }
}

/// Whether the pod's `PodScheduled` condition says the scheduler found no node for it.
fn is_unschedulable(pod: &Pod) -> bool {
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.is_some_and(|conditions| {
        conditions.iter().any(|c| {
            c.type_ == "PodScheduled"
                && c.status == "False"
                && c.reason.as_deref() == Some("Unschedulable")
        })
    })
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How many lines of berth's output are kept for error messages.
const LOG_TAIL: usize = 60;

/// A running `berth run`, killed on drop.
struct BerthProcess {
    child: Child,
    logs: Arc<Mutex<VecDeque<String>>>,
}

impl BerthProcess {
    fn spawn(kubeconfig: &Path, options: &LiveOptions) -> Result<BerthProcess, String> {
        let metrics = free_address()?;
        let mut command = Command::new(&options.berth);
        command
            .arg("run")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--metrics-bind-address")
            .arg(metrics.to_string())
            .args(["--identity", "bench"])
            .arg("--seed")
            .arg(options.seed.to_string());
        if let Some(parallelism) = options.parallelism {
            command.arg("--parallelism").arg(parallelism.to_string());
        }
        command
            .env("RUST_LOG", &options.log_filter)
            .env("NO_COLOR", "1")
            .env_remove("KUBECONFIG")
            .env_remove("POD_NAME")
            .env_remove("POD_NAMESPACE")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .map_err(|e| format!("starting {}: {e}", options.berth.display()))?;
        let logs = Arc::new(Mutex::new(VecDeque::new()));
        keep_tail(child.stderr.take(), logs.clone());
        keep_tail(child.stdout.take(), logs.clone());
        Ok(BerthProcess { child, logs })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn check_running(&mut self) -> Result<(), String> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(format!("berth run exited ({status}){}", self.log_tail())),
            Err(e) => Err(format!("berth run: {e}")),
        }
    }

    fn log_tail(&self) -> String {
        let logs = lock(&self.logs);
        if logs.is_empty() {
            return String::new();
        }
        let lines: Vec<&str> = logs.iter().map(String::as_str).collect();
        format!("\n---- berth run (last lines) ----\n{}", lines.join("\n"))
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for BerthProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Keeps the last [`LOG_TAIL`] lines of `stream` in `logs`, read on a thread of its own.
fn keep_tail(stream: Option<impl Read + Send + 'static>, logs: Arc<Mutex<VecDeque<String>>>) {
    let Some(stream) = stream else { return };
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            let mut logs = lock(&logs);
            if logs.len() == LOG_TAIL {
                logs.pop_front();
            }
            logs.push_back(line);
        }
    });
}

/// A free 127.0.0.1 port (bound, then released for berth to take).
fn free_address() -> Result<SocketAddr, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map_err(|e| format!("finding a free port: {e}"))
}

/// Clock ticks per second of `/proc/<pid>/stat` (USER_HZ, 100 on Linux).
const USER_HZ: f64 = 100.0;

/// User plus system CPU seconds of process `pid` (all its threads), Linux only.
fn cpu_time(pid: u32) -> Option<f64> {
    cpu_time_in(&format!("/proc/{pid}/stat"))
}

fn cpu_time_of_self() -> Option<f64> {
    cpu_time_in("/proc/self/stat")
}

fn cpu_time_in(stat_path: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(stat_path).ok()?;
    // The command name may hold spaces; the fields after it are space-separated, utime
    // and stime being the 12th and 13th after the state.
    let (_, fields) = stat.rsplit_once(") ")?;
    let fields: Vec<&str> = fields.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / USER_HZ)
}
