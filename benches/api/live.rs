//! scheduler_perf's workloads through the API: the test API server (in this process) and
//! the real `berth run` binary (a child process), so that the binder, the watches and the
//! status reporting are measured on top of the core `berth bench` measures.
//!
//! One run follows scheduler_perf's op list: the nodes are created, `berth run` starts
//! and a SchedulerProfile with the default plugin set becomes Ready, the init pods are
//! created and waited for until bound (not timed), then the measured pods are created
//! and each is timed from the moment its create request is sent to the moment a watch
//! of this process sees it bound (`spec.nodeName` set). SchedulingThroughput is cut
//! from those bind observations as upstream's `throughputCollector` cuts it from its
//! informer's, one-second windows from the first measured create to the last bind.
//!
//! Creates run with a bounded number of requests in flight, so that setup neither
//! dominates the run nor opens a connection per object.

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
use berth::bench::workload::{Phase, node};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::watcher;
use serde::Serialize;
use serde_json::json;
use test_apiserver::{Config, TestApiServer};

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
    /// Peak resident set of the berth process, where the platform reports it.
    pub berth_peak_rss_bytes: Option<u64>,
    /// Peak resident set of this process (test API server and client).
    pub bench_peak_rss_bytes: Option<u64>,
    pub check: Check,
}

/// Where the CPU went while the measured pods were scheduled.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuSeconds {
    /// The `berth run` process: informers, queue, scheduling cycles, binder, status.
    pub berth: Option<f64>,
    /// This process: the test API server, the creating client and the watch of binds.
    pub bench: Option<f64>,
}

/// Runs `plan` through a fresh test API server and a fresh `berth run`.
pub async fn run_live(plan: &Plan, options: &LiveOptions) -> Result<LiveReport, String> {
    let setup_started = Instant::now();
    // Every object of the run and every bind stays resumable for the watches.
    let window = plan.counts.nodes + 4 * (plan.counts.init_pods + plan.counts.measure_pods);
    let config = Config {
        history_window: usize::try_from(window).unwrap_or(usize::MAX).max(10_000),
        ..Config::default()
    };
    let server = TestApiServer::start(config)
        .await
        .map_err(|e| format!("starting the test API server: {e}"))?;
    let crds = Path::new(env!("CARGO_MANIFEST_DIR")).join("crds");
    server
        .install_crds_from_dir(&crds)
        .map_err(|e| format!("installing {}: {e:?}", crds.display()))?;
    let client = server.client().await;
    let binds = BindWatch::start(client.clone()).await?;

    let (init, measure) = plan.workload.phases();
    for namespace in [init.namespace, measure.namespace] {
        create_namespace(&client, namespace).await?;
    }
    let zones = plan.workload.zones();
    let nodes: Vec<Node> = (0..plan.counts.nodes).map(|i| node(i, zones)).collect();
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
    let mut berth = BerthProcess::spawn(server.kubeconfig_path(), options)?;
    let scheduler_name = create_profile(&client, &mut berth, options.timeout).await?;
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
    binds
        .wait(&init_created, options.timeout, &mut berth, "init")
        .await?;
    let init_duration = init_started.elapsed();

    let cpu_before = (cpu_time(berth.pid()), cpu_time_of_self());
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
        .wait(&measure_created, options.timeout, &mut berth, "measured")
        .await?;
    let cpu_after = (cpu_time(berth.pid()), cpu_time_of_self());
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
        scheduler_name,
        setup_seconds,
        init_duration_seconds: init_duration.as_secs_f64(),
        duration_seconds: duration.as_secs_f64(),
        create_seconds,
        scheduling_throughput: throughput(&bound_at, duration),
        create_to_bound_seconds: percentiles(&create_to_bound),
        cpu_seconds: CpuSeconds {
            berth: cpu_before.0.zip(cpu_after.0).map(|(b, a)| a - b),
            bench: cpu_before.1.zip(cpu_after.1).map(|(b, a)| a - b),
        },
        berth_peak_rss_bytes: peak_rss_of(berth.pid()),
        bench_peak_rss_bytes: peak_rss(),
        check: check(plan.workload, &placements, &node_labels),
    };
    berth.stop();
    binds.stop();
    server.shutdown().await;
    Ok(report)
}

async fn create_namespace(client: &kube::Client, name: &str) -> Result<(), String> {
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
        phase
            .template
            .pod(phase.namespace, format!("pod-{i:05}"), scheduler_name)
    });
    let mut created = create_all(pods, options.in_flight, |pod| {
        let api = api.clone();
        async move {
            let name = pod.metadata.name.clone().unwrap_or_default();
            let at = Instant::now();
            api.create(&PostParams::default(), &pod)
                .await
                .map_err(|e| format!("creating pod {}/{name}: {e}", phase.namespace))?;
            Ok(Created {
                key: format!("{}/{name}", phase.namespace),
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
                    // The watcher retries on errors by itself; deletes do not happen.
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
    async fn wait(
        &self,
        created: &[Created],
        timeout: Duration,
        berth: &mut BerthProcess,
        phase: &str,
    ) -> Result<Vec<Option<Bound>>, String> {
        let deadline = Instant::now() + timeout;
        loop {
            let pending = {
                let outcomes = lock(&self.outcomes);
                created
                    .iter()
                    .filter(|c| !outcomes.contains_key(&c.key))
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
            berth.check_running()?;
            if Instant::now() >= deadline {
                return Err(format!(
                    "{pending} of {} {phase} pods neither bound nor unschedulable within \
                     {timeout:?}{}",
                    created.len(),
                    berth.log_tail()
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
