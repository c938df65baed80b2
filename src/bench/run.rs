//! One workload run: the cluster is built in memory, the init pods are scheduled
//! (not timed), then the measured pods are added and scheduled under the clock, through
//! the same driver loop as `berth simulate` ([`run_to_completion`]).
//!
//! A measured pod counts as scheduled when its binding cycle bound it (see
//! [`Measurement`]); the measured duration runs until the last pod is bound.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::check::{Placement, check};
use super::report::{UpstreamThreshold, WorkloadReport, percentiles, throughput};
use super::workload::{Counts, Phase, Workload, node};
use crate::cluster::{PodGroups, Volumes, Workloads, pod_key};
use crate::framework::{Parallelizer, Registry};
use crate::scheduler::{
    AttemptReport, BindingResult, CycleOutput, Outcome, ProfileServices, Scheduler,
    SchedulerOptions,
};
use crate::simulate::clock::VirtualClock;
use crate::simulate::run::{
    CycleObserver, InMemoryBinder, SimulateError, ValidProfile, add_profiles, run_to_completion,
};

/// How to run a workload.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub seed: u64,
    /// The worker threads of the scheduler; the caller runs the workload on one of them.
    pub parallelizer: Arc<Parallelizer>,
    /// Redraw a progress line on stderr (only when stderr is a terminal).
    pub progress: bool,
}

/// A workload at a size.
#[derive(Debug, Clone)]
pub struct Plan {
    pub workload: Workload,
    /// The size's name as reported.
    pub size: String,
    pub counts: Counts,
}

/// Runs `plan` with `profile`; the report's check says whether the placements keep the
/// workload's promises.
pub async fn run_workload(
    plan: &Plan,
    profile: &ValidProfile,
    registry: &Registry,
    options: &RunOptions,
) -> Result<WorkloadReport, SimulateError> {
    reset_peak_rss();
    let scheduler_name = profile.profile.scheduler_name();
    let clock = VirtualClock::new();
    let mut scheduler = Scheduler::new(SchedulerOptions {
        seed: options.seed,
        record_diagnosis: false,
        parallelizer: options.parallelizer.clone(),
        clock: Arc::new(clock.clone()),
        nominator: Default::default(),
    });
    // The generated cluster has no workload controllers, PodGroups, storage or devices.
    let services = ProfileServices {
        binder: Arc::new(InMemoryBinder::default()),
        volume_writer: Arc::new(crate::framework::NoVolumeWriter),
        parallelizer: scheduler.parallelizer().clone(),
        clock: scheduler.clock().clone(),
        nominator: scheduler.nominator().clone(),
        workloads: Arc::new(Workloads::new()),
        pod_groups: Arc::new(PodGroups::new()),
        volumes: Arc::new(Volumes::new()),
        disruption_budgets: Default::default(),
        device_resources: Default::default(),
        claim_writer: Arc::new(crate::framework::NoClaimWriter),
        observer: None,
    };
    add_profiles(&mut scheduler, vec![profile.clone()], registry, &services)?;

    let zones = plan.workload.zones();
    let mut node_labels: HashMap<String, BTreeMap<String, String>> = HashMap::new();
    for index in 0..plan.counts.nodes {
        let node = node(index, zones);
        let name = node.metadata.name.clone().unwrap_or_default();
        node_labels.insert(
            name.clone(),
            node.metadata.labels.clone().unwrap_or_default(),
        );
        scheduler
            .on_node_add(node)
            .map_err(|e| invalid("Node", name, e))?;
    }

    let (init, measure) = plan.workload.phases();
    let init_started = Instant::now();
    let mut init_progress = Progress::new(
        options.progress,
        plan,
        "init",
        plan.counts.init_pods as usize,
    );
    let init_keys = add_pods(&mut scheduler, init, plan.counts.init_pods, &scheduler_name)?;
    let init_reports = run_to_completion(&mut scheduler, &clock, &mut init_progress).await?;
    let init_duration = init_started.elapsed();
    init_progress.finish();

    let measure_count = plan.counts.measure_pods as usize;
    let mut measurement = Measurement {
        started: Instant::now(),
        bound_at: Vec::with_capacity(measure_count),
        cycles: Vec::with_capacity(measure_count),
        progress: Progress::new(options.progress, plan, "measure", measure_count),
    };
    let measure_keys = add_pods(
        &mut scheduler,
        measure,
        plan.counts.measure_pods,
        &scheduler_name,
    )?;
    let measure_reports = run_to_completion(&mut scheduler, &clock, &mut measurement).await?;
    let duration = measurement.started.elapsed();
    measurement.progress.finish();

    let placements: Vec<Placement> = placements(init, &init_keys, &init_reports, false)
        .chain(placements(measure, &measure_keys, &measure_reports, true))
        .collect();
    Ok(WorkloadReport {
        workload: plan.workload.name().to_string(),
        size: plan.size.clone(),
        nodes: plan.counts.nodes,
        init_pods: plan.counts.init_pods,
        measure_pods: plan.counts.measure_pods,
        scheduler_name,
        parallelism: options.parallelizer.parallelism(),
        seed: options.seed,
        duration_seconds: duration.as_secs_f64(),
        init_duration_seconds: init_duration.as_secs_f64(),
        scheduling_throughput: throughput(&measurement.bound_at, duration),
        attempt_duration_seconds: percentiles(&measurement.cycles),
        peak_rss_bytes: peak_rss(),
        upstream_threshold: plan.workload.upstream_threshold().map(|(size, threshold)| {
            UpstreamThreshold {
                size: size.to_string(),
                pods_per_second: threshold,
            }
        }),
        check: check(plan.workload, &placements, &node_labels),
    })
}

/// Adds `count` pods of `phase`, named after upstream's generateName prefixes, to the
/// scheduler's queue; returns their keys. The scheduler holds the only copy of each pod,
/// as a scheduler fed by an informer would.
fn add_pods(
    scheduler: &mut Scheduler,
    phase: Phase,
    count: u64,
    scheduler_name: &str,
) -> Result<Vec<String>, SimulateError> {
    let mut keys = Vec::with_capacity(count as usize);
    for i in 0..count {
        let pod = phase
            .template
            .pod(phase.namespace, format!("pod-{i:05}"), scheduler_name);
        let key = pod_key(&pod);
        scheduler
            .on_pod_add(pod)
            .map_err(|e| invalid("Pod", key.clone(), e))?;
        keys.push(key);
    }
    Ok(keys)
}

fn invalid(kind: &'static str, name: String, error: impl std::fmt::Display) -> SimulateError {
    SimulateError::InvalidObject {
        kind,
        name,
        message: error.to_string(),
    }
}

/// Where each pod of `keys` ended, from the driver's last report per pod.
fn placements<'a>(
    phase: Phase,
    keys: &'a [String],
    reports: &'a HashMap<String, AttemptReport>,
    measured: bool,
) -> impl Iterator<Item = Placement> + 'a {
    keys.iter().map(move |key| Placement {
        template: phase.template,
        measured,
        node: reports.get(key).and_then(|report| match &report.outcome {
            Outcome::Scheduled { node } => Some(node.clone()),
            _ => None,
        }),
    })
}

/// The clock of the measured phase.
struct Measurement {
    started: Instant,
    /// When each measured pod was bound, since `started`.
    bound_at: Vec<Duration>,
    /// Every scheduling cycle's wall time.
    cycles: Vec<Duration>,
    progress: Progress,
}

impl CycleObserver for Measurement {
    fn scheduling_cycle(&mut self, elapsed: Duration, output: &CycleOutput) {
        self.cycles.push(elapsed);
        self.progress.scheduling_cycle(elapsed, output);
    }

    /// A pod counts as scheduled when it is bound, as upstream counts pods bound.
    fn binding_cycle(&mut self, result: &BindingResult) {
        if result.is_success() {
            self.bound_at.push(self.started.elapsed());
        }
    }
}

/// A one-line progress indicator on stderr (pods assumed so far), redrawn at most ten
/// times a second; silent when stderr is not a terminal.
struct Progress {
    enabled: bool,
    label: String,
    total: usize,
    assumed: usize,
    drawn: Instant,
}

impl Progress {
    fn new(enabled: bool, plan: &Plan, phase: &str, total: usize) -> Progress {
        Progress {
            enabled,
            label: format!("{} {} {phase}", plan.workload, plan.size),
            total,
            assumed: 0,
            drawn: Instant::now(),
        }
    }

    fn finish(&self) {
        if self.enabled {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
        }
    }
}

impl CycleObserver for Progress {
    fn scheduling_cycle(&mut self, _elapsed: Duration, output: &CycleOutput) {
        if !matches!(output, CycleOutput::Binding(_)) {
            return;
        }
        self.assumed += 1;
        if self.enabled && self.drawn.elapsed() >= Duration::from_millis(100) {
            self.drawn = Instant::now();
            let mut stderr = std::io::stderr().lock();
            let _ = write!(
                stderr,
                "\r\x1b[2K{}: {}/{} pods scheduled",
                self.label, self.assumed, self.total
            );
            let _ = stderr.flush();
        }
    }
}

/// Peak resident set size of the process (`VmHWM` of `/proc/self/status`), Linux only.
pub fn peak_rss() -> Option<u64> {
    peak_rss_in("/proc/self/status")
}

/// Peak resident set size of process `pid` (say, a `berth run` child), Linux only.
pub fn peak_rss_of(pid: u32) -> Option<u64> {
    peak_rss_in(&format!("/proc/{pid}/status"))
}

fn peak_rss_in(status_path: &str) -> Option<u64> {
    let status = std::fs::read_to_string(status_path).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Resets the peak to the current resident set (writing 5 to `/proc/self/clear_refs`),
/// so that each workload of a run reports its own peak. Where this fails the peak is the
/// process's since it started.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}
