//! berth side by side with the real kube-scheduler 1.37 (docs/testing.md, "The
//! differential run"): the same cluster and the same pending pods, given to both on real
//! API servers, and every decision compared.
//!
//! - The profile is a KubeSchedulerConfiguration: kube-scheduler runs it, berth runs
//!   what `berth convert` makes of it.
//! - Pending pods are given one at a time, to both at once. A placement agrees when it is
//!   the same node, or when berth's explanation of the same state (the upstream
//!   cluster's, read as `berth simulate --from-cluster` reads it) scores both nodes
//!   equal and highest: a tie upstream broke its own way. berth's pod is then moved to
//!   upstream's node, so one tie does not cascade. An unschedulable pod agrees when the
//!   PodScheduled condition (reason and message) is identical, text for text; it is then
//!   deleted on both sides, so no later event can race it into a node. A preemption
//!   agrees when the nominated node, the victims and the failure message are identical.
//! - The members of a Workload API pod group (`spec.schedulingGroup`) are given together,
//!   as a controller creates them, since the group is decided as one (both sides run
//!   with the GenericWorkload gate on). Each member's decision and the PodGroup's
//!   `PodGroupInitiallyScheduled` condition must agree; alike members (the same spec) may
//!   swap nodes, a tie.
//! - Identical pods a controller creates in bulk (`tests/differential/batched/`, on
//!   upstream's scheduler_perf batching profile) are given at once, in order, so both
//!   schedulers take them back to back and opportunistic batching (on by default in
//!   1.37) applies; each pod must land on the same node on both sides.
//! - A disagreement ends its scenario. It is printed with both decisions and berth's
//!   per-plugin explanation, and the state is written as a YAML file for `berth
//!   simulate -f` (the path is printed).
//!
//! Scenarios: the examples kube-scheduler can run (the others are listed with the
//! reason), the fixed regressions under `tests/differential/regressions/`, and random
//! clusters from seeds 0..200 (`BERTH_DIFF_SCENARIOS=N` runs N; `BERTH_DIFF_SEED=S`,
//! `A..B` or a list of both, `S,A..B`, runs those seeds alone, without the examples;
//! `BERTH_DIFF_ONLY=TEXT` runs the examples and regressions whose name contains TEXT).

mod support;

#[path = "differential/generator.rs"]
mod generator;
#[path = "differential/pair.rs"]
mod pair;
#[path = "differential/scenario.rs"]
mod scenario;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::future::join_all;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use pair::{Decision, Pair, Side, name_of};
use scenario::{Scenario, config_file, repo, to_json};
use serde_json::{Value, json};

/// The random scenarios the suite runs.
const SUITE_SCENARIOS: u64 = 200;

/// Examples kube-scheduler cannot be given, and why.
const NOT_FOR_KUBE_SCHEDULER: &[(&str, &str)] = &[
    (
        "examples/bad-profile.yaml",
        "a profile that is invalid on purpose",
    ),
    (
        "examples/load-aware.yaml",
        "berth's Prometheus plugins, which kube-scheduler has not",
    ),
    (
        "examples/network-aware.yaml",
        "berth's Prometheus plugins, which kube-scheduler has not",
    ),
    (
        "examples/gang",
        "berth's Coscheduling and its PodGroups (berth.dev and scheduler-plugins' \
         scheduling.x-k8s.io), which kube-scheduler has not",
    ),
    (
        "examples/custom-plugin",
        "plugins of its own, compiled into berth",
    ),
    ("examples/values-ha.yaml", "Helm values, not a cluster"),
    ("examples/values-metrics.yaml", "Helm values, not a cluster"),
    (
        "examples/scenarios/unsupported-pods.yaml",
        "pods of a PodGroup that does not exist, which neither scheduler ever tries: no \
         decision to compare",
    ),
];

/// What a run found.
#[derive(Default)]
struct Tally {
    scenarios: usize,
    pods: usize,
    same_node: usize,
    ties: usize,
    unschedulable: usize,
    preemptions: usize,
    /// Agreed preemptions after which one side bound the pod elsewhere than nominated.
    rebound: usize,
    /// Pending pods of a scheduler name no profile of the configuration has.
    not_served: usize,
    /// Pod groups whose members were given together.
    gangs: usize,
    disagreements: Vec<String>,
    /// Where the time went: setting scenarios up, giving pods, cleaning up.
    setup: Duration,
    steps: Duration,
    teardown: Duration,
}

impl Tally {
    fn summary(&self) -> String {
        format!(
            "{} scenarios, {} pods ({} pod groups given whole): {} on the same node, {} ties, \
             {} unschedulable with the same message, {} preemptions ({} bound elsewhere than \
             nominated on one side), {} served by neither; {} disagreements",
            self.scenarios,
            self.pods,
            self.gangs,
            self.same_node,
            self.ties,
            self.unschedulable,
            self.preemptions,
            self.rebound,
            self.not_served,
            self.disagreements.len()
        )
    }
}

/// Where disagreements are written.
fn scratch() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("differential");
    std::fs::create_dir_all(&dir).expect("the scratch directory");
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn berth_decides_as_kube_scheduler_does() {
    let Some(mut pair) = Pair::start().await else {
        return;
    };
    let scratch = scratch();
    let mut tally = Tally::default();
    let started = Instant::now();

    let only_seeds = std::env::var("BERTH_DIFF_SEED").ok().map(|s| {
        let number = |n: &str| {
            n.trim().parse::<u64>().unwrap_or_else(|_| {
                panic!("BERTH_DIFF_SEED={s}: {n} is neither N nor A..B (a list: N,A..B,...)")
            })
        };
        s.split(',')
            .flat_map(|part| match part.split_once("..") {
                Some((a, b)) => (number(a)..number(b)).collect::<Vec<u64>>(),
                None => vec![number(part)],
            })
            .collect::<Vec<u64>>()
    });
    let only = std::env::var("BERTH_DIFF_ONLY").unwrap_or_default();
    if only_seeds.is_none() {
        for scenario in batched()
            .into_iter()
            .chain(examples())
            .chain(regressions())
            .filter(|s| s.name.contains(&only))
        {
            run(&mut pair, &scenario, &scratch, &mut tally).await;
        }
        eprintln!(
            "differential: examples and regressions: {}",
            tally.summary()
        );
    }
    let seeds: Vec<u64> = match only_seeds {
        Some(seeds) => seeds,
        None => {
            let count = std::env::var("BERTH_DIFF_SCENARIOS")
                .ok()
                .map(|s| {
                    s.parse::<u64>()
                        .unwrap_or_else(|_| panic!("BERTH_DIFF_SCENARIOS={s} is not a number"))
                })
                .unwrap_or(SUITE_SCENARIOS);
            (0..count).collect()
        }
    };
    for seed in seeds {
        run(&mut pair, &generator::scenario(seed), &scratch, &mut tally).await;
    }
    eprintln!(
        "differential: {} in {:.0} s (setting up {:.0} s, pods {:.0} s, cleaning up {:.0} s)",
        tally.summary(),
        started.elapsed().as_secs_f64(),
        tally.setup.as_secs_f64(),
        tally.steps.as_secs_f64(),
        tally.teardown.as_secs_f64()
    );
    assert!(
        tally.disagreements.is_empty(),
        "berth and kube-scheduler disagree ({}):\n\n{}",
        tally.summary(),
        tally.disagreements.join("\n\n")
    );
}

/// The examples kube-scheduler can run, each with its profile as a
/// KubeSchedulerConfiguration.
fn examples() -> Vec<Scenario> {
    let root = repo();
    let default = Scenario::default_config();
    let configs = root.join("tests/differential/configs");
    let mut files: Vec<PathBuf> = ["examples", "examples/scenarios"]
        .iter()
        .flat_map(|dir| {
            std::fs::read_dir(root.join(dir))
                .expect("examples/")
                .flatten()
        })
        .map(|entry| entry.path())
        .collect();
    files.sort();
    let mut scenarios = Vec::new();
    for path in files {
        let name = path
            .strip_prefix(&root)
            .expect("under the repository")
            .display()
            .to_string();
        if path.is_dir() && name != "examples/scenarios" {
            assert!(
                NOT_FOR_KUBE_SCHEDULER.iter().any(|(n, _)| *n == name),
                "{name}: a new example directory; give it to the differential run or say why not"
            );
            continue;
        }
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        if let Some((_, why)) = NOT_FOR_KUBE_SCHEDULER.iter().find(|(n, _)| *n == name) {
            eprintln!("differential: {name} is not given to kube-scheduler: {why}");
            continue;
        }
        let stem = path
            .file_stem()
            .expect("a file name")
            .to_string_lossy()
            .to_string();
        let fixture = configs.join(format!("{stem}.yaml"));
        let (config, cluster) = if name == "examples/kube-scheduler-config.yaml" {
            // The configuration example, on the cluster its docs convert it for.
            (config_file(&path), root.join("tests/convert/cluster.yaml"))
        } else if fixture.exists() {
            (config_file(&fixture), path.clone())
        } else {
            (default.clone(), path.clone())
        };
        let scenario = Scenario::from_file(&name, &cluster, config)
            .unwrap_or_else(|why| panic!("{name} cannot be given to kube-scheduler: {why}"));
        check_profiles_convert(&path, &scenario);
        scenarios.push(scenario);
    }
    scenarios
}

/// An example's own SchedulerProfiles are what `berth convert` makes of the
/// configuration the run gives kube-scheduler instead (so both run the same profile).
fn check_profiles_convert(path: &Path, scenario: &Scenario) {
    let text = std::fs::read_to_string(path).expect("the example");
    let own: BTreeMap<String, Value> = serde_saphyr::from_multiple::<Value>(&text)
        .expect("the example's YAML")
        .into_iter()
        .filter(|d| d["kind"] == "SchedulerProfile")
        .map(|d| (name_of(&d), d["spec"].clone()))
        .collect();
    if own.is_empty() {
        return;
    }
    let converted: BTreeMap<String, Value> = convert_in_process(&scenario.config)
        .into_iter()
        .map(|d| (name_of(&d), d["spec"].clone()))
        .collect();
    assert_eq!(
        own,
        converted,
        "{}: the example's profiles are not what `berth convert` makes of the configuration \
         the differential run gives kube-scheduler (tests/differential/configs/)",
        path.display()
    );
}

fn convert_in_process(config: &Value) -> Vec<Value> {
    let registry = berth::plugins::default_registry();
    let conversion = berth::convert::convert(config, &registry, &Default::default())
        .unwrap_or_else(|e| panic!("berth convert refuses the configuration: {e:?}"));
    serde_json::to_value(&conversion.profiles)
        .expect("profiles as JSON")
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The fixed regressions: scenarios that once showed a difference.
fn regressions() -> Vec<Scenario> {
    scenarios_in(
        "tests/differential/regressions",
        &Scenario::default_config(),
    )
}

/// Identical pods given in bulk (`tests/differential/batched/`), on upstream's
/// scheduler_perf profile for opportunistic batching.
fn batched() -> Vec<Scenario> {
    let dir = "tests/differential/batched";
    let config = config_file(&repo().join(dir).join("no-topology.yaml"));
    scenarios_in(dir, &config)
        .into_iter()
        .map(|mut scenario| {
            scenario.bulk = true;
            scenario
        })
        .collect()
}

/// The scenario files of `dir` (under the repository), in name order, each on `config`;
/// `no-topology.yaml`, a configuration, is not one.
fn scenarios_in(dir: &str, config: &Value) -> Vec<Scenario> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join(dir))
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .filter(|p| !p.ends_with("no-topology.yaml"))
        .map(|path| {
            let name = path
                .strip_prefix(repo())
                .expect("in the repository")
                .display()
                .to_string();
            Scenario::from_file(&name, &path, config.clone())
                .unwrap_or_else(|why| panic!("{name}: {why}"))
        })
        .collect()
}

/// Runs one scenario on both sides and cleans up after it.
async fn run(pair: &mut Pair, scenario: &Scenario, scratch: &Path, tally: &mut Tally) {
    tally.scenarios += 1;
    if let Err(e) = pair.configure(&scenario.config, scratch).await {
        tally.disagreements.push(format!("{}: {e}", scenario.name));
        return;
    }
    let namespaces = namespaces(scenario);
    // Classes whose volumes an external provisioner would create: played by the run.
    let provisioners: BTreeMap<String, String> = scenario
        .objects
        .iter()
        .filter(|o| o["kind"] == "StorageClass")
        .filter_map(|o| {
            let provisioner = o["provisioner"].as_str()?;
            (provisioner != "kubernetes.io/no-provisioner")
                .then(|| (name_of(o), provisioner.to_string()))
        })
        .collect();
    let provisioning: Vec<_> = if provisioners.is_empty() {
        Vec::new()
    } else {
        pair.sides()
            .iter()
            .map(|side| {
                tokio::spawn(pair::provision(
                    side.client.clone(),
                    provisioners.clone(),
                    namespaces.clone(),
                ))
            })
            .collect()
    };
    let result = async {
        let started = Instant::now();
        setup(pair, scenario, &namespaces).await?;
        tally.setup += started.elapsed();
        let started = Instant::now();
        let served = scenario.scheduler_names();
        if scenario.bulk {
            bulk_step(pair, scenario, &namespaces, tally).await?;
            tally.steps += started.elapsed();
            return Ok(());
        }
        let mut next = 0;
        while let Some(pending) = scenario.pending.get(next) {
            let scheduler = pending["spec"]["schedulerName"]
                .as_str()
                .unwrap_or("default-scheduler");
            if !served.iter().any(|s| s == scheduler) {
                // Neither scheduler serves it: it would stay pending on both sides.
                tally.not_served += 1;
                next += 1;
                continue;
            }
            if let Some(group) = pod_group_of(pending) {
                // The members of one pod group, given together.
                let members: Vec<&Value> = scenario.pending[next..]
                    .iter()
                    .take_while(|p| pod_group_of(p).as_deref() == Some(group.as_str()))
                    .collect();
                next += members.len();
                gang_step(pair, scenario, &group, &members, &namespaces, tally).await?;
                continue;
            }
            step(pair, scenario, pending, &namespaces, scratch, tally).await?;
            next += 1;
        }
        tally.steps += started.elapsed();
        Ok::<(), String>(())
    }
    .await;
    if let Err(e) = result {
        tally.disagreements.push(format!("{}: {e}", scenario.name));
    }
    provisioning.iter().for_each(|task| task.abort());
    let started = Instant::now();
    teardown(pair, scenario, &namespaces).await;
    tally.teardown += started.elapsed();
}

fn namespaces(scenario: &Scenario) -> BTreeSet<String> {
    scenario
        .objects
        .iter()
        .chain(&scenario.pending)
        .filter(|o| !pair::CLUSTER_SCOPED.contains(&o["kind"].as_str().unwrap_or_default()))
        .map(|o| {
            o["metadata"]["namespace"]
                .as_str()
                .unwrap_or("default")
                .to_string()
        })
        .chain(std::iter::once("default".to_string()))
        .collect()
}

/// A node as created: Ready from the start (see [`pair`]).
fn prepared(object: &Value) -> Value {
    let mut object = object.clone();
    if object["kind"] == "Node" {
        let status = object
            .as_object_mut()
            .expect("an object")
            .entry("status")
            .or_insert_with(|| json!({}));
        let has_ready = status["conditions"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready"));
        if !has_ready {
            status["conditions"] =
                json!([{"type": "Ready", "status": "True", "reason": "KubeletReady"}]);
        }
    }
    object
}

async fn setup(
    pair: &Pair,
    scenario: &Scenario,
    namespaces: &BTreeSet<String>,
) -> Result<(), String> {
    // Kind by kind (owners before what they own), the objects of one kind at once.
    let objects: Vec<Value> = scenario.objects.iter().map(prepared).collect();
    for group in objects.chunk_by(|a, b| a["kind"] == b["kind"]) {
        let creates = group
            .iter()
            .flat_map(|object| pair.sides().map(|side| side.create(object)));
        for result in join_all(creates).await {
            result?;
        }
        if group[0]["kind"] == "Node" {
            let names: Vec<String> = group.iter().map(name_of).collect();
            for side in pair.sides() {
                wait_leases(side, &names).await?;
            }
        }
    }
    let budgets = scenario
        .objects
        .iter()
        .any(|o| o["kind"] == "PodDisruptionBudget");
    for side in pair.sides() {
        wait_running(side, namespaces).await?;
        if budgets {
            wait_budgets(side, namespaces).await?;
        }
    }
    if let Some(last) = scenario.objects.iter().rev().find(|o| o["kind"] == "Node") {
        let scheduler = scenario
            .scheduler_names()
            .into_iter()
            .next()
            .unwrap_or_default();
        let node = name_of(last);
        let nodes = scenario
            .objects
            .iter()
            .filter(|o| o["kind"] == "Node")
            .count();
        let (a, b) = tokio::join!(
            barrier(&pair.upstream, &node, nodes, &scheduler),
            barrier(&pair.berth, &node, nodes, &scheduler)
        );
        a?;
        b?;
    }
    Ok(())
}

/// Waits until kwok holds every node's Lease, as a kubelet registers before pods come.
///
/// kwok starts a pod bound to a node only while it holds that node's Lease in its own
/// cache. A pod it saw before then is left to a list of the node's pods that kwok runs
/// once the Lease is created, and that list is skipped too when kwok's Lease watch lags:
/// such a pod never started (seen once in thousands of scenarios). Pods created after
/// the Lease is visible here reach kwok after the Lease does.
async fn wait_leases(side: &Side, nodes: &[String]) -> Result<(), String> {
    use k8s_openapi::api::coordination::v1::Lease;
    let leases: Api<Lease> = Api::namespaced(side.client.clone(), "kube-node-lease");
    let deadline = Instant::now() + Duration::from_secs(30);
    for node in nodes {
        loop {
            let held = leases
                .get_opt(node)
                .await
                .map_err(|e| format!("{}: reading node {node}'s Lease: {e}", side.label))?
                .is_some_and(|lease| lease.spec.is_some_and(|s| s.holder_identity.is_some()));
            if held {
                break;
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "{}: kwok did not take node {node}'s Lease within 30 s",
                    side.label
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    Ok(())
}

/// Waits until every bound pod runs and is Ready (kwok), so that budgets count them.
async fn wait_running(side: &Side, namespaces: &BTreeSet<String>) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let pods = side.pods(namespaces).await;
        let waiting: Vec<&String> = pods
            .iter()
            .filter(|(_, p)| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some())
            .filter(|(_, p)| !is_ready(p))
            .map(|(k, _)| k)
            .collect();
        if waiting.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            // What kwok, which makes them Ready, did last.
            let states: Vec<String> = waiting
                .iter()
                .map(|key| {
                    let status = pods[*key].status.as_ref();
                    let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("none");
                    let conditions: Vec<String> = status
                        .and_then(|s| s.conditions.as_ref())
                        .into_iter()
                        .flatten()
                        .map(|c| format!("{}={}", c.type_, c.status))
                        .collect();
                    format!("{key} (phase {phase}, conditions {conditions:?})")
                })
                .collect();
            let log = std::fs::read_to_string(side.cluster.dir().join("kwok.log"))
                .unwrap_or_else(|e| format!("(kwok.log unreadable: {e})"));
            let lines: Vec<&str> = log.lines().collect();
            return Err(format!(
                "{}: pods did not turn Ready within 30 s: {}\nkwok's log ends:\n{}",
                side.label,
                states.join(", "),
                lines[lines.len().saturating_sub(30)..].join("\n")
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Waits until the disruption controller has counted every budget's pods.
async fn wait_budgets(side: &Side, namespaces: &BTreeSet<String>) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let pods = side.pods(namespaces).await;
        let mut behind = Vec::new();
        for namespace in namespaces {
            let api: Api<k8s_openapi::api::policy::v1::PodDisruptionBudget> =
                Api::namespaced(side.client.clone(), namespace);
            for budget in api
                .list(&Default::default())
                .await
                .map_err(|e| e.to_string())?
            {
                let value = serde_json::to_value(&budget).expect("JSON");
                let labels = value["spec"]["selector"]["matchLabels"]
                    .as_object()
                    .cloned()
                    .unwrap_or_default();
                let healthy = pods
                    .iter()
                    .filter(|(k, _)| k.starts_with(&format!("{namespace}/")))
                    .filter(|(_, p)| {
                        let pod_labels = p.metadata.labels.clone().unwrap_or_default();
                        labels
                            .iter()
                            .all(|(k, v)| pod_labels.get(k).map(String::as_str) == v.as_str())
                    })
                    .filter(|(_, p)| is_ready(p))
                    .count() as i64;
                let status = &value["status"];
                let current = status["currentHealthy"].as_i64().unwrap_or(-1);
                let observed = status["observedGeneration"].as_i64()
                    == value["metadata"]["generation"].as_i64();
                if !observed || current != healthy {
                    behind.push(format!("{}: {status}", name_of(&value)));
                }
            }
        }
        if behind.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!("{}: budgets not counted: {behind:?}", side.label));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Schedules a probe pod that only the scenario's last node fits, then deletes it: once
/// it is bound, the scheduler has seen every node (one watch delivers them in order).
/// When the running pods left no room on that node, the probe stays pending; a
/// FailedScheduling message counting all `nodes` (`0/N nodes are available`) shows the
/// same, since it judged the last node with its pods.
async fn barrier(side: &Side, node: &str, nodes: usize, scheduler: &str) -> Result<(), String> {
    let judged_all = format!("0/{nodes} nodes are available");
    let probe = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "differential-barrier", "namespace": "default"},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "probe", "image": "registry.example/probe:1"}],
            "tolerations": [{"operator": "Exists"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
            }}},
        },
    });
    side.create(&probe).await?;
    let pods: Api<Pod> = Api::namespaced(side.client.clone(), "default");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let pod = pods
            .get("differential-barrier")
            .await
            .map_err(|e| e.to_string())?;
        if pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_ref())
            .is_some()
        {
            break;
        }
        let unschedulable_on_every_node = pod
            .status
            .iter()
            .flat_map(|s| s.conditions.iter().flatten())
            .any(|c| {
                c.type_ == "PodScheduled"
                    && c.status == "False"
                    && c.message
                        .as_deref()
                        .is_some_and(|m| m.starts_with(&judged_all))
            });
        if unschedulable_on_every_node {
            break;
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "{}: the barrier pod was not bound to {node} within 30 s: {:?}",
                side.label, pod.status
            ));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    side.delete(&probe).await
}

/// Gives `pod` to both; compares; makes both sides equal again.
async fn step(
    pair: &Pair,
    scenario: &Scenario,
    pod: &Value,
    namespaces: &BTreeSet<String>,
    scratch: &Path,
    tally: &mut Tally,
) -> Result<(), String> {
    tally.pods += 1;
    let key = name_of(pod);
    let (pods, before) = tokio::join!(
        aligned_pods(pair, namespaces),
        Before::read(&pair.upstream.client, scenario, pod)
    );
    let (before_up, before_berth) = pods?;
    let (watch_up, watch_berth) = tokio::join!(pair.upstream.watch(&key), pair.berth.watch(&key));
    let (a, b) = tokio::join!(pair.upstream.create(pod), pair.berth.create(pod));
    a?;
    b?;
    let (up, berth) = tokio::join!(
        timed(pair.upstream.decide(&key, watch_up, &before_up, namespaces)),
        timed(
            pair.berth
                .decide(&key, watch_berth, &before_berth, namespaces)
        )
    );
    if std::env::var_os("BERTH_DIFF_TIMES").is_some() {
        eprintln!(
            "differential: {key}: kube-scheduler {:?}, berth {:?}",
            up.1, berth.1
        );
    }
    let (up, berth) = (up.0, berth.0);
    let context = Context {
        pair,
        scenario,
        pod,
        scratch,
    };
    let same_failure = up.failure == berth.failure;
    let same_victims = up.victims == berth.victims;
    let decided = up.undecided.is_none() && berth.undecided.is_none();
    let preempted = !up.victims.is_empty();
    match (&up.node, &berth.node) {
        (Some(a), Some(b)) if decided && same_failure && same_victims && (a == b || !preempted) => {
            if preempted {
                tally.preemptions += 1;
            }
            if a == b {
                tally.same_node += 1;
                return converge_claims(pair, scenario, pod, a).await;
            }
            let state = state_before(&pair.upstream.client, namespaces, &before_up, &before).await;
            let explanation = explain(pair, &state, pod).await;
            if is_tie(&explanation, a, b) {
                tally.ties += 1;
                return move_pod(pair, scenario, pod, a).await;
            }
            Err(disagreement(&context, &up, &berth, &state).await)
        }
        (Some(a), Some(b))
            if decided
                && same_failure
                && same_victims
                && up.nominated == berth.nominated
                && (up.nominated.as_ref() == Some(a) || berth.nominated.as_ref() == Some(b)) =>
        {
            // The same preemption, then one side bound the pod elsewhere than the
            // nominated node. That second cycle runs while the victims terminate, at a
            // moment neither scheduler controls: a terminating pod no longer counts for
            // topology spread or affinity but still holds its resources, so another node
            // can fit before the nominated one does (seeds 1467 and 1685).
            tally.preemptions += 1;
            tally.rebound += 1;
            move_pod(pair, scenario, pod, a).await
        }
        (Some(a), Some(b)) if decided && (a != b || !same_victims) && preempted => {
            let state = state_before(&pair.upstream.client, namespaces, &before_up, &before).await;
            if preemption_tie(&state, &up, &berth) {
                tally.preemptions += 1;
                tally.ties += 1;
                return converge_preemption(pair, scenario, &state, pod, &up, &berth).await;
            }
            Err(disagreement(&context, &up, &berth, &state).await)
        }
        (None, None)
            if decided && same_failure && same_victims && up.nominated == berth.nominated =>
        {
            tally.unschedulable += 1;
            let (a, b) = tokio::join!(pair.upstream.delete(pod), pair.berth.delete(pod));
            a.and(b)
        }
        _ => {
            let state = state_before(&pair.upstream.client, namespaces, &before_up, &before).await;
            Err(disagreement(&context, &up, &berth, &state).await)
        }
    }
}

/// The pending pods of a bulk scenario, given at once: each side creates them one after
/// the other, in order, as a controller would, so both schedulers take them in the same
/// order and, being identical and quick, back to back (opportunistic batching's case).
/// Each pod must land on the same node on both sides; the scenarios have no ties.
async fn bulk_step(
    pair: &Pair,
    scenario: &Scenario,
    namespaces: &BTreeSet<String>,
    tally: &mut Tally,
) -> Result<(), String> {
    let (before_up, before_berth) = aligned_pods(pair, namespaces).await?;
    let keys: Vec<String> = scenario.pending.iter().map(name_of).collect();
    let mut watches = Vec::new();
    for key in &keys {
        watches.push(tokio::join!(
            pair.upstream.watch(key),
            pair.berth.watch(key)
        ));
    }
    let create_all = |side: &'static str| async move {
        let side = if side == "upstream" {
            &pair.upstream
        } else {
            &pair.berth
        };
        for pod in &scenario.pending {
            side.create(pod).await?;
        }
        Ok::<(), String>(())
    };
    let (a, b) = tokio::join!(create_all("upstream"), create_all("berth"));
    a?;
    b?;
    let mut differ = Vec::new();
    for ((key, pod), (watch_up, watch_berth)) in keys.iter().zip(&scenario.pending).zip(watches) {
        tally.pods += 1;
        let (up, berth) = tokio::join!(
            pair.upstream.decide(key, watch_up, &before_up, namespaces),
            pair.berth
                .decide(key, watch_berth, &before_berth, namespaces)
        );
        // The node the scenario's comment works out, where it names one: agreeing on
        // another would mean neither side batched.
        let expected = pod["metadata"]["annotations"][EXPECTED_NODE].as_str();
        eprintln!(
            "differential: {}: {key}: kube-scheduler {up}; berth {berth}; expected {}",
            scenario.name,
            expected.unwrap_or("any")
        );
        let as_expected = expected.is_none_or(|e| up.node.as_deref() == Some(e));
        if up == berth && up.node.is_some() && as_expected {
            tally.same_node += 1;
        } else {
            differ.push(format!(
                "  {key}: kube-scheduler {up}; berth {berth}; the scenario expects {}",
                expected.unwrap_or("the same node on both sides")
            ));
        }
    }
    if differ.is_empty() {
        return Ok(());
    }
    Err(format!(
        "identical pods given at once were placed differently:\n{}\n{}",
        differ.join("\n"),
        pair.logs()
    ))
}

/// The annotation by which a bulk scenario's pod names the node upstream's algorithm
/// gives it.
const EXPECTED_NODE: &str = "differential.berth.dev/expected-node";

/// `namespace/name` of the Workload API PodGroup `pod` names in `spec.schedulingGroup`.
fn pod_group_of(pod: &Value) -> Option<String> {
    let name = pod["spec"]["schedulingGroup"]["podGroupName"].as_str()?;
    let namespace = pod["metadata"]["namespace"].as_str().unwrap_or("default");
    Some(format!("{namespace}/{name}"))
}

/// Gives the members of pod group `group` to both at once (created together, as a
/// controller creates them) and compares every member's decision and the PodGroup's
/// `PodGroupInitiallyScheduled` condition. A placement agrees when each member is on the
/// same node, or, for members that are alike (the same spec), when the same nodes are
/// used as many times: which of two alike members took which node is a tie. Members left
/// unbound are then deleted on both sides, as a lone unschedulable pod is.
async fn gang_step(
    pair: &Pair,
    scenario: &Scenario,
    group: &str,
    members: &[&Value],
    namespaces: &BTreeSet<String>,
    tally: &mut Tally,
) -> Result<(), String> {
    tally.pods += members.len();
    tally.gangs += 1;
    let (before_up, before_berth) = aligned_pods(pair, namespaces).await?;
    let keys: Vec<String> = members.iter().map(|p| name_of(p)).collect();
    let mut watches = (Vec::new(), Vec::new());
    for key in &keys {
        let (up, berth) = tokio::join!(pair.upstream.watch(key), pair.berth.watch(key));
        watches.0.push(up);
        watches.1.push(berth);
    }
    let creates = members
        .iter()
        .flat_map(|pod| pair.sides().map(|side| side.create(pod)));
    for result in join_all(creates).await {
        result?;
    }
    let decide_all = |side: &'static str, watches: Vec<pair::PodWatch>| {
        let (side, before) = match side {
            "upstream" => (&pair.upstream, &before_up),
            _ => (&pair.berth, &before_berth),
        };
        join_all(
            keys.iter()
                .zip(watches)
                .map(move |(key, watch)| side.decide(key, watch, before, namespaces)),
        )
    };
    let (up, berth) = tokio::join!(
        decide_all("upstream", watches.0),
        decide_all("berth", watches.1)
    );
    let (up_condition, berth_condition) = tokio::join!(
        group_condition(&pair.upstream, group),
        group_condition(&pair.berth, group)
    );
    let decided = up.iter().chain(&berth).all(|d| d.undecided.is_none());
    // What is compared of a member: bound or not, where, the failure, victims, and the
    // nomination of an unbound one (kube-scheduler also nominates a member's node while
    // it waits at Permit, NominatedNodeNameForExpectation, which berth does not).
    let outcome = |d: &Decision| {
        (
            d.node.clone(),
            d.failure.clone(),
            d.victims.clone(),
            d.node.is_none().then(|| d.nominated.clone()),
        )
    };
    let same_nodes = up.iter().zip(&berth).all(|(a, b)| outcome(a) == outcome(b));
    // Alike members are interchangeable: which of them the queue tried first, so which
    // one was left over, is timing (members of equal priority and attempts go by the
    // time each joined the queue).
    let alike = members.iter().all(|m| m["spec"] == members[0]["spec"]);
    let sorted = |decisions: &[Decision]| {
        let mut outcomes: Vec<_> = decisions.iter().map(outcome).collect();
        outcomes.sort();
        outcomes
    };
    let swapped = alike && sorted(&up) == sorted(&berth);
    let without_node = |d: &Decision| {
        let (node, failure, victims, nominated) = outcome(d);
        (node.is_some(), failure, victims, nominated)
    };
    let same_but_nodes = up
        .iter()
        .zip(&berth)
        .all(|(a, b)| without_node(a) == without_node(b));
    let agreed = decided && up_condition == berth_condition;
    let mut moves = Vec::new();
    let tie = agreed
        && !same_nodes
        && (swapped
            || (same_but_nodes
                && match tied_members(pair, scenario, members, &up, &berth, namespaces, &before_up)
                    .await
                {
                    Some(tied) => {
                        moves = tied;
                        true
                    }
                    None => false,
                }));
    if agreed && (same_nodes || tie) {
        if same_nodes {
            tally.same_node += up.iter().filter(|d| d.node.is_some()).count();
        } else {
            tally.ties += 1;
        }
        for (member, node) in moves {
            move_pod(pair, scenario, member, &node).await?;
        }
        tally.unschedulable += up.iter().filter(|d| d.node.is_none()).count();
        let unbound = members
            .iter()
            .zip(&up)
            .filter(|(_, d)| d.node.is_none())
            .flat_map(|(pod, _)| pair.sides().map(|side| side.delete(pod)));
        for result in join_all(unbound).await {
            result?;
        }
        return Ok(());
    }
    let mut text = format!("pod group {group}\n");
    for ((key, a), b) in keys.iter().zip(&up).zip(&berth) {
        let _ = writeln!(
            text,
            "  {key}\n    kube-scheduler: {a}\n    berth:          {b}"
        );
    }
    let _ = writeln!(
        text,
        "  PodGroupInitiallyScheduled\n    kube-scheduler: {up_condition:?}\n    berth:          {berth_condition:?}"
    );
    if !decided {
        text.push_str(&pair.logs());
    }
    Err(text)
}

/// The members a gang's two sides bound to different nodes, each with upstream's node,
/// when every such difference is a tie: berth's explanation of the member on upstream's
/// state (before the step, plus the members upstream placed before it) scores upstream's
/// node highest. berth's own choice was the best on berth's state, which differs from
/// upstream's once an earlier member went elsewhere, so it is not held against that
/// state. The member is explained alone (without its `schedulingGroup`): the pod-group
/// cycle filters and scores each member as a lone pod. `None` when one difference is not
/// a tie.
async fn tied_members<'a>(
    pair: &Pair,
    scenario: &Scenario,
    members: &[&'a Value],
    up: &[Decision],
    berth: &[Decision],
    namespaces: &BTreeSet<String>,
    before_up: &BTreeMap<String, Pod>,
) -> Option<Vec<(&'a Value, String)>> {
    let before = Before::read(&pair.upstream.client, scenario, members.first()?).await;
    let mut state = state_before(&pair.upstream.client, namespaces, before_up, &before).await;
    let mut moves = Vec::new();
    for ((member, a), b) in members.iter().zip(up).zip(berth) {
        if let (Some(a), Some(b)) = (&a.node, &b.node)
            && a != b
        {
            let mut alone = (*member).clone();
            if let Some(spec) = alone["spec"].as_object_mut() {
                spec.remove("schedulingGroup");
            }
            let explanation = explain(pair, &state, &alone).await;
            if !is_tie(&explanation, a, a) {
                return None;
            }
            moves.push((*member, a.clone()));
        }
        if let Some(a) = &a.node {
            let mut placed = (*member).clone();
            placed["spec"]["nodeName"] = json!(a);
            state.push(placed);
        }
    }
    Some(moves)
}

/// The PodGroup's `PodGroupInitiallyScheduled` condition as `status reason: message`,
/// once it has one (written after the group's cycle; `None` after 10 s without).
async fn group_condition(side: &Side, group: &str) -> Option<String> {
    let (namespace, name) = group.split_once('/')?;
    let object = json!({
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let found = side.get(&object).await.and_then(|group| {
            group["status"]["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "PodGroupInitiallyScheduled")
                .map(|c| {
                    format!(
                        "{} {}: {}",
                        c["status"].as_str().unwrap_or_default(),
                        c["reason"].as_str().unwrap_or_default(),
                        c["message"].as_str().unwrap_or_default()
                    )
                })
        });
        if found.is_some() || Instant::now() >= deadline {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `future`'s output and how long it took.
async fn timed<F: std::future::Future>(future: F) -> (F::Output, Duration) {
    let started = Instant::now();
    let output = future.await;
    (output, started.elapsed())
}

/// The objects besides pods that a step changes, read from the upstream cluster before
/// it, for the kinds the scenario has: claims and volumes (binding the pod binds them)
/// and PodDisruptionBudgets (a preemption spends them).
struct Before {
    /// Kind -> every object of that kind.
    objects: BTreeMap<&'static str, Vec<Value>>,
}

impl Before {
    async fn read(client: &kube::Client, scenario: &Scenario, pod: &Value) -> Before {
        use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
        use k8s_openapi::api::policy::v1::PodDisruptionBudget;
        let has = |kind: &str| scenario.objects.iter().any(|o| o["kind"] == kind);
        let volumes = has("PersistentVolumeClaim") || pod["spec"]["volumes"].is_array();
        let budgets = has("PodDisruptionBudget");
        let (claims, pvs, pdbs) = tokio::join!(
            list::<PersistentVolumeClaim>(client, volumes),
            list::<PersistentVolume>(client, volumes),
            list::<PodDisruptionBudget>(client, budgets)
        );
        let mut objects = BTreeMap::new();
        for (kind, items) in [
            ("PersistentVolumeClaim", claims),
            ("PersistentVolume", pvs),
            ("PodDisruptionBudget", pdbs),
        ] {
            if let Some(items) = items {
                objects.insert(kind, items);
            }
        }
        Before { objects }
    }

    fn has(&self, kind: &str) -> bool {
        self.objects.contains_key(kind)
    }

    fn all(&self) -> impl Iterator<Item = &Value> {
        self.objects.values().flatten()
    }
}

/// Every object of kind `K` in the cluster, when `wanted`.
async fn list<K>(client: &kube::Client, wanted: bool) -> Option<Vec<Value>>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    if !wanted {
        return None;
    }
    let api: Api<K> = Api::all(client.clone());
    let list = api.list(&Default::default()).await.ok()?;
    Some(list.items.iter().map(to_json).collect())
}

/// Every pod of both sides, once each bound pod runs on both, with berth's start times
/// set to upstream's. kwok stamps `status.startTime` with its own clock when it runs a
/// pod, so the same pod can start a second apart on the two sides; preemption prefers
/// the node whose most important victims started last, so that second alone picked
/// another node (seeds 364 and 821 of a 2,000-scenario run). berth sees the new start
/// times before the step's pod: they come first on its one watch of pods.
async fn aligned_pods(
    pair: &Pair,
    namespaces: &BTreeSet<String>,
) -> Result<(BTreeMap<String, Pod>, BTreeMap<String, Pod>), String> {
    let started = |p: &Pod| p.status.as_ref().and_then(|s| s.start_time.clone());
    let starting = |p: &Pod| {
        p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some()
            && p.metadata.deletion_timestamp.is_none()
            && started(p).is_none()
    };
    let (up, mut berth) = poll(|| async {
        let (up, berth) = tokio::join!(pair.upstream.pods(namespaces), pair.berth.pods(namespaces));
        let waiting: Vec<&String> = up
            .iter()
            .chain(&berth)
            .filter(|(_, p)| starting(p))
            .map(|(k, _)| k)
            .collect();
        if waiting.is_empty() {
            Ok((up, berth))
        } else {
            Err(format!(
                "pods {waiting:?} are bound but have not started after 30 s"
            ))
        }
    })
    .await?;
    for (key, pod) in &up {
        let Some(start) = started(pod) else { continue };
        let Some(theirs) = berth.get_mut(key) else {
            continue;
        };
        if started(theirs).is_none_or(|t| t == start) {
            continue;
        }
        let (namespace, name) = key.split_once('/').expect("namespace/name");
        let api: Api<Pod> = Api::namespaced(pair.berth.client.clone(), namespace);
        let patch = json!({"status": {"startTime": start}});
        api.patch_status(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .map_err(|e| format!("berth: setting {key}'s start time: {e}"))?;
        if let Some(status) = theirs.status.as_mut() {
            status.start_time = Some(start);
        }
    }
    Ok((up, berth))
}

/// The upstream cluster before the step, as `berth simulate --from-cluster` reads it:
/// read now, with the pods (and the claims, volumes and budgets) listed before the step
/// instead of their current state. Read only when a decision needs explaining: the rest
/// of the cluster does not change while a pod is scheduled.
async fn state_before(
    client: &kube::Client,
    namespaces: &BTreeSet<String>,
    pods: &BTreeMap<String, Pod>,
    before: &Before,
) -> Vec<Value> {
    let read = berth::simulate::live::read_cluster(client, &Default::default())
        .await
        .unwrap_or_else(|e| panic!("reading the upstream cluster: {e}"));
    let replaced = |d: &Value| {
        let kind = d["kind"].as_str().unwrap_or_default();
        (kind == "Pod"
            && namespaces.contains(d["metadata"]["namespace"].as_str().unwrap_or_default()))
            || before.has(kind)
    };
    let mut documents: Vec<Value> = read
        .documents
        .into_iter()
        .filter(|d| !replaced(d))
        .collect();
    documents.extend(pods.values().map(|p| {
        let mut value = serde_json::to_value(p).expect("a pod as JSON");
        value["apiVersion"] = json!("v1");
        value["kind"] = json!("Pod");
        value
    }));
    documents.extend(before.all().cloned());
    documents
}

/// The documents of the state before `pod`, with `pod` pending and berth's profiles.
fn state_with(pair: &Pair, state: &[Value], pod: &Value) -> Vec<Value> {
    let mut documents: Vec<Value> = pair.profiles.clone();
    documents.extend(state.iter().cloned());
    documents.push(pod.clone());
    documents
}

/// berth's explanation of `pod` on `state`: its report, with every node's verdict.
async fn explain(
    pair: &Pair,
    state: &[Value],
    pod: &Value,
) -> Result<berth::simulate::report::PodReport, String> {
    let text: String = state_with(pair, state, pod)
        .iter()
        .map(|d| format!("---\n{d}\n"))
        .collect();
    let (input, _) = berth::simulate::input::load_str(Path::new("differential.yaml"), &text)
        .map_err(|e| format!("berth simulate refuses the state: {e}"))?;
    let registry = berth::plugins::default_registry();
    let options = berth::simulate::run::SimulateOptions {
        explain: true,
        seed: 0,
        parallelism: 1,
    };
    let report = berth::simulate::run::simulate(input, &registry, options)
        .await
        .map_err(|e| format!("berth simulate failed: {e}"))?;
    let key = name_of(pod);
    report
        .pods
        .into_iter()
        .find(|p| format!("{}/{}", p.namespace, p.name) == key)
        .ok_or_else(|| format!("the simulation has no pod {key}"))
}

/// Whether berth's explanation scores `a` and `b` equal and highest among the feasible.
fn is_tie(
    explanation: &Result<berth::simulate::report::PodReport, String>,
    a: &str,
    b: &str,
) -> bool {
    let Ok(report) = explanation else {
        return false;
    };
    let Some(nodes) = &report.nodes else {
        return false;
    };
    let score = |name: &str| {
        nodes
            .iter()
            .find(|n| n.name == name && n.feasible)
            .map(|n| n.total_score)
    };
    let best = nodes
        .iter()
        .filter(|n| n.feasible)
        .map(|n| n.total_score)
        .max();
    matches!((score(a), score(b), best), (Some(x), Some(y), Some(m)) if x == y && y == m)
}

/// Whether two preemptions that differ are a tie upstream broke its own way, judged by
/// upstream's rules on the state before (berth's explanation names only the candidate it
/// chose): across nodes, the same number of PodDisruptionBudget violations, highest
/// victim priority, sum of priorities, number of victims and earliest start among the
/// highest-priority victims (`pickOneNodeForPreemption` then takes the first of the
/// candidates in a map's order, which Go randomises); and victims that pair up by
/// priority and start time, which `MoreImportantPod` cannot order (start times have
/// whole seconds, and pods started in one second are alike to it). Each side's failure
/// message differs only by the node it names.
fn preemption_tie(state: &[Value], up: &Decision, berth: &Decision) -> bool {
    let pods: BTreeMap<String, &Value> = state
        .iter()
        .filter(|d| d["kind"] == "Pod")
        .map(|d| (name_of(d), d))
        .collect();
    let budgets: Vec<&Value> = state
        .iter()
        .filter(|d| d["kind"] == "PodDisruptionBudget")
        .collect();
    let priority = |v: &Value| v["spec"]["priority"].as_i64().unwrap_or(0);
    let start = |v: &Value| {
        v["status"]["startTime"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    // Each victim's (priority, start): equal lists are victims upstream's
    // `MoreImportantPod` cannot tell apart (start times have whole seconds).
    type Rank = (i64, i64, i64, usize, String, Vec<(i64, String)>);
    let rank = |victims: &BTreeSet<String>| -> Option<Rank> {
        let mut victims: Vec<&Value> = victims
            .iter()
            .map(|v| pods.get(v).copied())
            .collect::<Option<_>>()?;
        // Most important first, as the dry run gives them to the budget count.
        victims.sort_by_key(|v| (-priority(v), start(v)));
        let violations = pdb_violations(&victims, &budgets)?;
        let highest = victims.iter().map(|v| priority(v)).max()?;
        let sum = victims.iter().map(|v| priority(v)).sum();
        let earliest = victims
            .iter()
            .filter(|v| priority(v) == highest)
            .map(|v| start(v))
            .filter(|s| !s.is_empty())
            .min()?;
        let mut each: Vec<(i64, String)> =
            victims.iter().map(|v| (priority(v), start(v))).collect();
        each.sort();
        Some((violations, highest, sum, victims.len(), earliest, each))
    };
    let same_message = match (&up.failure, &berth.failure, &up.node, &berth.node) {
        (Some(a), Some(b), Some(x), Some(y)) => {
            a.replace(x.as_str(), "") == b.replace(y.as_str(), "")
        }
        _ => false,
    };
    same_message && up.nominated == up.node && berth.nominated == berth.node && {
        let (a, b) = (rank(&up.victims), rank(&berth.victims));
        a.is_some() && a == b
    }
}

/// How many of `victims` (most important first) evicting would violate a budget, counted
/// as upstream's `filterPodsWithPDBViolation` counts: each victim a budget of its
/// namespace selects (and has not already counted as disrupted) spends one of the
/// budget's allowed disruptions, and violates it once none is left. `None` for a budget
/// whose selector this harness does not evaluate (anything but `matchLabels`). Written
/// here from upstream's code rather than calling berth's own count: the judge of a
/// difference must not be the code under test.
fn pdb_violations(victims: &[&Value], budgets: &[&Value]) -> Option<i64> {
    let mut allowed: Vec<i64> = budgets
        .iter()
        .map(|b| b["status"]["disruptionsAllowed"].as_i64().unwrap_or(0))
        .collect();
    let mut violations = 0;
    for victim in victims {
        let mut violated = false;
        for (budget, allowed) in budgets.iter().zip(allowed.iter_mut()) {
            if budget["metadata"]["namespace"] != victim["metadata"]["namespace"] {
                continue;
            }
            let selector = budget["spec"]["selector"].as_object();
            if selector.is_some_and(|s| s.keys().any(|k| k != "matchLabels")) {
                return None;
            }
            let labels = selector
                .and_then(|s| s.get("matchLabels"))
                .and_then(Value::as_object)
                .filter(|labels| !labels.is_empty());
            // An empty selector selects nothing.
            let Some(labels) = labels else { continue };
            if !labels
                .iter()
                .all(|(k, l)| victim["metadata"]["labels"][k] == *l)
            {
                continue;
            }
            let name = victim["metadata"]["name"].as_str().unwrap_or_default();
            if !budget["status"]["disruptedPods"][name].is_null() {
                continue;
            }
            *allowed -= 1;
            violated |= *allowed < 0;
        }
        violations += i64::from(violated);
    }
    Some(violations)
}

/// After a preemption tie: berth's side gets upstream's outcome (its own victims back,
/// upstream's victims gone, the pod on upstream's node).
async fn converge_preemption(
    pair: &Pair,
    scenario: &Scenario,
    state: &[Value],
    pod: &Value,
    up: &Decision,
    berth: &Decision,
) -> Result<(), String> {
    for victim in berth.victims.difference(&up.victims) {
        let Some(original) = state
            .iter()
            .find(|d| d["kind"] == "Pod" && name_of(d) == *victim)
        else {
            return Err(format!(
                "berth's victim {victim} is not in the state read before"
            ));
        };
        let mut again = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": original["metadata"]["name"],
                "namespace": original["metadata"]["namespace"],
                "labels": original["metadata"]["labels"],
            },
            "spec": original["spec"],
        });
        if let Some(spec) = again["spec"].as_object_mut() {
            // Admission sets the priority from the class again.
            spec.remove("priority");
            spec.remove("preemptionPolicy");
        }
        pair.berth.create(&again).await?;
    }
    for victim in up.victims.difference(&berth.victims) {
        let (namespace, name) = victim.split_once('/').expect("namespace/name");
        pair.berth
            .delete(&json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}}))
            .await?;
    }
    move_pod(pair, scenario, pod, up.node.as_deref().unwrap_or_default()).await
}

/// Replaces berth's placement of `pod` with upstream's: the pod on upstream's `node`,
/// its claims bound to the volumes upstream's are bound to.
async fn move_pod(pair: &Pair, scenario: &Scenario, pod: &Value, node: &str) -> Result<(), String> {
    let rebinds = rebinds(pair, scenario, pod).await?;
    replace_pod(pair, scenario, pod, node, rebinds).await
}

/// On berth's side: `pod` deleted, its claims rebound as `rebinds` says, and `pod` made
/// again bound to `node`.
async fn replace_pod(
    pair: &Pair,
    scenario: &Scenario,
    pod: &Value,
    node: &str,
    rebinds: Vec<Rebind>,
) -> Result<(), String> {
    let side = &pair.berth;
    remove(side, pod).await?;
    rebind_claims(side, scenario, rebinds).await?;
    let mut bound = pod.clone();
    bound["spec"]["nodeName"] = json!(node);
    side.create(&bound).await
}

/// After both sides bound `pod` to `node`: when a claim of it is bound to another static
/// volume on berth's side, berth's side gets upstream's binding. Among the smallest
/// volumes that fit, upstream's binder takes the first of a set in Go's map order, so two
/// equal volumes are a tie it breaks at random; volumes that differ only in name are
/// not alike when their node affinities differ, and the next pod would see that (seeds
/// 352, 622 and 974).
async fn converge_claims(
    pair: &Pair,
    scenario: &Scenario,
    pod: &Value,
    node: &str,
) -> Result<(), String> {
    let rebinds = rebinds(pair, scenario, pod).await?;
    if rebinds.is_empty() {
        return Ok(());
    }
    replace_pod(pair, scenario, pod, node, rebinds).await
}

/// A claim (as the scenario has it) that berth's side bound to another volume than
/// upstream's: upstream's volume, and berth's (if any).
struct Rebind {
    claim: Value,
    volume: String,
    theirs: Option<String>,
}

/// `pod`'s claims that berth's side bound to another static volume than upstream's:
/// (claim, upstream's volume, berth's volume). Waits for upstream's claims to be bound
/// (a bound pod's are, or are about to be). A dynamically provisioned volume is named
/// after its claim's uid, which differs between the sides: those are alike.
async fn rebinds(pair: &Pair, scenario: &Scenario, pod: &Value) -> Result<Vec<Rebind>, String> {
    let namespace = pod["metadata"]["namespace"].as_str().unwrap_or("default");
    let claims: Vec<&str> = pod["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["persistentVolumeClaim"]["claimName"].as_str())
        .collect();
    let statics: BTreeSet<String> = scenario
        .objects
        .iter()
        .filter(|o| o["kind"] == "PersistentVolume")
        .map(name_of)
        .collect();
    let mut rebinds = Vec::new();
    for claim in claims {
        let object = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim, "namespace": namespace}});
        let unbound = || {
            format!(
                "kube-scheduler: claim {namespace}/{claim} of bound pod {} is not bound",
                name_of(pod)
            )
        };
        // A claim that is gone fails at once (the inner error); an unbound one is
        // waited for.
        let upstream = poll(|| async {
            let Some(found) = pair.upstream.get(&object).await else {
                return Ok(Err(unbound()));
            };
            (found["status"]["phase"] == "Bound")
                .then(|| found["spec"]["volumeName"].as_str().map(String::from))
                .flatten()
                .map(Ok)
                .ok_or_else(unbound)
        })
        .await??;
        let theirs = pair
            .berth
            .get(&object)
            .await
            .and_then(|c| c["spec"]["volumeName"].as_str().map(String::from));
        if statics.contains(&upstream) && theirs.as_ref() != Some(&upstream) {
            let original = scenario
                .objects
                .iter()
                .find(|o| {
                    o["kind"] == "PersistentVolumeClaim"
                        && o["metadata"]["name"] == claim
                        && o["metadata"]["namespace"].as_str().unwrap_or("default") == namespace
                })
                .cloned()
                .ok_or_else(|| format!("claim {namespace}/{claim} is not in the scenario"))?;
            rebinds.push(Rebind {
                claim: original,
                volume: upstream,
                theirs,
            });
        }
    }
    Ok(rebinds)
}

/// On berth's side, with the claims' pod gone: each claim upstream bound to another
/// static volume is made again, bound to upstream's volume, and the volume berth had
/// bound it to is made again as the scenario has it (free).
async fn rebind_claims(
    side: &Side,
    scenario: &Scenario,
    rebinds: Vec<Rebind>,
) -> Result<(), String> {
    for Rebind {
        claim,
        volume,
        theirs,
    } in rebinds
    {
        remove(side, &claim).await?;
        if let Some(theirs) = theirs {
            let original = scenario
                .objects
                .iter()
                .find(|o| o["kind"] == "PersistentVolume" && name_of(o) == theirs);
            if let Some(original) = original {
                remove(side, original).await?;
                side.create(original).await?;
            }
        }
        let mut bound = claim.clone();
        bound["spec"]["volumeName"] = json!(volume);
        side.create(&bound).await?;
        poll(|| async {
            match side.get(&bound).await {
                Some(c) if c["status"]["phase"] == "Bound" => Ok(()),
                _ => Err(format!(
                    "berth: claim {} was not bound to {volume} within 30 s",
                    name_of(&bound)
                )),
            }
        })
        .await?;
    }
    Ok(())
}

/// Deletes `object` on `side` and waits until it is gone.
async fn remove(side: &Side, object: &Value) -> Result<(), String> {
    side.delete(object).await?;
    poll(|| async {
        match side.get(object).await {
            None => Ok(()),
            Some(_) => Err(format!(
                "{}: {} {} is not gone after 30 s",
                side.label,
                object["kind"],
                name_of(object)
            )),
        }
    })
    .await
}

/// Calls `check` every 10 ms until it gives `Ok`, for up to 30 s; past that, its last
/// error (what it still waits for).
async fn poll<T, F, Fut>(mut check: F) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match check().await {
            Ok(done) => return Ok(done),
            Err(waiting) if Instant::now() >= deadline => return Err(waiting),
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

/// What a disagreement is reported with.
struct Context<'a> {
    pair: &'a Pair,
    scenario: &'a Scenario,
    pod: &'a Value,
    scratch: &'a Path,
}

/// The report of a disagreement on `state` (the state before the pod), with berth's
/// explanation; the state is written for `berth simulate`.
async fn disagreement(
    context: &Context<'_>,
    up: &Decision,
    berth: &Decision,
    state: &[Value],
) -> String {
    let Context {
        pair,
        scenario,
        pod,
        scratch,
    } = *context;
    let explanation = explain(pair, state, pod).await;
    let key = name_of(pod);
    let file = scratch.join(format!(
        "{}-{}.yaml",
        scenario.name.replace(['/', ' '], "_"),
        key.replace('/', "_")
    ));
    let yaml: String = state_with(pair, state, pod)
        .iter()
        .map(|d| format!("---\n{}", serde_saphyr::to_string(d).unwrap_or_default()))
        .collect();
    let _ = std::fs::write(&file, yaml);
    let mut text = format!(
        "{}: pod {key}\n  kube-scheduler: {up}\n  berth:          {berth}\n  rerun: berth simulate --explain -f {}\n",
        scenario.name,
        file.display()
    );
    match &explanation {
        Ok(report) => {
            let _ = writeln!(
                text,
                "  berth's explanation ({}, node {:?}, message {:?}):",
                report.result, report.node, report.message
            );
            for node in report.nodes.iter().flatten() {
                let scores: Vec<String> = node
                    .scores
                    .iter()
                    .map(|s| format!("{}={}x{}", s.plugin, s.score, s.weight))
                    .collect();
                let _ = writeln!(
                    text,
                    "    {}: {} total {} [{}] {}",
                    node.name,
                    if node.feasible {
                        "feasible"
                    } else {
                        "infeasible"
                    },
                    node.total_score,
                    scores.join(" "),
                    node.filter_reasons.join("; ")
                );
            }
        }
        Err(e) => {
            let _ = writeln!(text, "  berth's explanation: {e}");
        }
    }
    if up.undecided.is_some() || berth.undecided.is_some() {
        text.push_str(&pair.logs());
    }
    text
}

/// Deletes what the scenario made, on both sides, and waits until its cluster-scoped
/// objects are gone (an example's node names come back in the next example).
async fn teardown(pair: &Pair, scenario: &Scenario, namespaces: &BTreeSet<String>) {
    let mut doomed: Vec<(&Side, Value)> = Vec::new();
    for side in pair.sides() {
        for pod in side.pods(namespaces).await.into_values() {
            let object = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": pod.metadata.name, "namespace": pod.metadata.namespace}});
            doomed.push((side, object));
        }
        let volumes: Api<k8s_openapi::api::core::v1::PersistentVolume> =
            Api::all(side.client.clone());
        for volume in volumes
            .list(&Default::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default()
        {
            let value = serde_json::to_value(&volume).expect("JSON");
            if value["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"].is_string() {
                doomed.push((side, value));
            }
        }
        for object in scenario.objects.iter().rev() {
            if object["kind"] != "Namespace" && object["kind"] != "Pod" {
                doomed.push((side, object.clone()));
            }
        }
    }
    // Gone before the next scenario, which may use the same names (examples do).
    for result in join_all(doomed.iter().map(|(side, object)| remove(side, object))).await {
        if let Err(e) = result {
            eprintln!("differential: {e}");
        }
    }
}
