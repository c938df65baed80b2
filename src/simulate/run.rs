//! The simulation driver: builds profiles from the input, feeds the cluster to the
//! scheduler core, runs scheduling and binding cycles until no pod can make progress, and
//! reports every pending pod's fate and every Workload API pod group's
//! ([`super::pod_groups`]).
//!
//! Time is the simulator's [`VirtualClock`]: when nothing can run but a wait, the driver
//! moves the clock to the next deadline, so backoff and Permit timeouts elapse virtually
//! and instantly. The simulation ends when no activeQ
//! holds a pod, no binding cycle is in flight and no pod is backing off. Unschedulable
//! pods are not flushed after 5 minutes (the cluster is static: nothing would change).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Pod;
use tokio::task::JoinSet;

use crate::api::SchedulerProfile;
use crate::cluster::{GroupKey, PodGroups, Volumes, pod_key};
use crate::framework::{
    BindError, Binder, Clock, FieldError, Parallelizer, PluginHealth, Registry, ResolvedProfile,
};
use crate::scheduler::{
    AttemptReport, BindingCycle, BindingResult, CycleOutput, Outcome, PodGroupReport,
    ProfileServices, Scheduler, SchedulerOptions,
};
use crate::schema::ProfileValidator;

use super::budgets::SimulatedBudgets;
use super::claims::{self, InMemoryClaimWriter};
use super::clock::VirtualClock;
use super::input::{ClusterInput, InputWarning, ProfileDocument, Source};
use super::listers::{node_labels, volumes, workloads};
use super::outcomes::build_report;
use super::pod_groups::{self, SimulatedTime, WantedConditions};
use super::preemption::Preemptions;
use super::report::{DegradedPlugin, Report};
use super::storage::{InMemoryVolumeWriter, StorageEvents};

/// The scheduler name pods get when they name none.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";
/// A pod that failed this many times is left unscheduled (guards against a plugin that
/// errors forever).
const MAX_ATTEMPTS: u32 = 25;

/// Options of one simulation.
#[derive(Debug, Clone)]
pub struct SimulateOptions {
    /// Keep per-node verdicts and scores in the report.
    pub explain: bool,
    /// Seed of the tie-break among equally scored nodes.
    pub seed: u64,
    /// Threads for Filter and Score.
    pub parallelism: usize,
}

/// Why a simulation could not run.
#[derive(Debug)]
pub enum SimulateError {
    /// Profiles in the input are invalid (exit code 2): every error of every one.
    InvalidProfiles(Vec<InvalidProfile>),
    /// An object in the input cannot be used (exit code 2).
    InvalidObject {
        kind: &'static str,
        name: String,
        message: String,
    },
    /// A failure inside berth (exit code 1).
    Internal(String),
}

impl std::fmt::Display for SimulateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimulateError::InvalidProfiles(profiles) => {
                let lines: Vec<String> = profiles
                    .iter()
                    .flat_map(|profile| profile.lines())
                    .collect();
                f.write_str(&lines.join("\n"))
            }
            SimulateError::InvalidObject {
                kind,
                name,
                message,
            } => write!(f, "invalid {kind} {name}: {message}"),
            SimulateError::Internal(message) => write!(f, "internal error: {message}"),
        }
    }
}

// Implemented by hand: thiserror would treat the `source` field as the error's cause.
impl std::error::Error for SimulateError {}

impl SimulateError {
    /// Whether the input is at fault (exit 2) rather than berth (exit 1).
    pub fn is_input_error(&self) -> bool {
        !matches!(self, SimulateError::Internal(_))
    }
}

/// A profile document that failed validation, with all its errors.
#[derive(Debug, Clone)]
pub struct InvalidProfile {
    pub source: Source,
    pub errors: Vec<FieldError>,
}

impl InvalidProfile {
    /// One `<file>: document <n>: <field error>` line per error.
    pub fn lines(&self) -> Vec<String> {
        if self.errors.is_empty() {
            return vec![format!("{}: invalid SchedulerProfile", self.source)];
        }
        self.errors
            .iter()
            .map(|error| format!("{}: {error}", self.source))
            .collect()
    }
}

/// A profile that passed validation, ready to instantiate.
#[derive(Debug, Clone)]
pub struct ValidProfile {
    pub profile: SchedulerProfile,
    pub resolved: ResolvedProfile,
    pub source: Source,
}

/// The profiles of the input after validation.
#[derive(Debug, Clone, Default)]
pub struct CheckedProfiles {
    /// Profiles to run, in input order; the implicit `default-scheduler` profile last
    /// when the input defines none.
    pub valid: Vec<ValidProfile>,
    pub invalid: Vec<InvalidProfile>,
    /// Non-fatal findings, e.g. args given for a plugin that is not enabled.
    pub warnings: Vec<InputWarning>,
}

/// Validates every profile document as the API server and berth would
/// ([`ProfileValidator`]), collecting all errors of all profiles; a second profile
/// claiming a scheduler name is rejected, as the operator rejects it.
pub fn check_profiles(profiles: &[ProfileDocument], registry: &Registry) -> CheckedProfiles {
    let mut checked = CheckedProfiles::default();
    let validator = match ProfileValidator::new(registry) {
        Ok(validator) => validator,
        Err(error) => {
            checked.invalid.push(InvalidProfile {
                source: Source::builtin(),
                errors: vec![FieldError::internal("<schema>", error.to_string())],
            });
            return checked;
        }
    };
    let mut documents = profiles.to_vec();
    if documents
        .iter()
        .all(|document| document.scheduler_name() != DEFAULT_SCHEDULER_NAME)
    {
        let implicit = SchedulerProfile::new(DEFAULT_SCHEDULER_NAME, Default::default());
        documents.push(ProfileDocument {
            raw: serde_json::to_value(&implicit).unwrap_or_default(),
            source: Source::builtin(),
        });
    }
    let mut owners: HashMap<String, Source> = HashMap::new();
    for document in documents {
        let source = document.source.clone();
        let validation = validator.validate(&document.raw);
        checked
            .warnings
            .extend(validation.warnings.iter().map(|message| InputWarning {
                source: source.clone(),
                message: message.clone(),
            }));
        let mut errors = validation.errors;
        let name = document.scheduler_name();
        match owners.get(&name) {
            Some(owner) => errors.push(FieldError::duplicate(
                "spec.schedulerName",
                &serde_json::Value::from(name.as_str()),
                format!("scheduler name already served by the profile at {owner}"),
            )),
            None => {
                owners.insert(name, source.clone());
            }
        }
        match (validation.profile, validation.resolved) {
            (Some(profile), Some(resolved)) if errors.is_empty() => {
                checked.valid.push(ValidProfile {
                    profile,
                    resolved,
                    source,
                });
            }
            _ => checked.invalid.push(InvalidProfile { source, errors }),
        }
    }
    checked
}

/// Records bindings in memory; the driver replays them as pod updates, as an informer
/// would.
#[derive(Default)]
pub struct InMemoryBinder {
    bound: Mutex<HashMap<String, String>>,
}

#[async_trait]
impl Binder for InMemoryBinder {
    async fn bind(&self, pod: &Pod, node_name: &str) -> Result<(), BindError> {
        let key = pod_key(pod);
        let mut bound = self.bound.lock().unwrap_or_else(|p| p.into_inner());
        match bound.get(&key) {
            Some(node) if node != node_name => Err(BindError::AlreadyBound {
                pod: key,
                node: node.clone(),
            }),
            _ => {
                bound.insert(key, node_name.to_string());
                Ok(())
            }
        }
    }
}

/// Runs the simulation; invalid profiles are an error, profile warnings are logged
/// (`berth simulate` prints them itself, see [`check_profiles`]).
pub async fn simulate(
    input: ClusterInput,
    registry: &Registry,
    options: SimulateOptions,
) -> Result<Report, SimulateError> {
    simulate_with_storage(input, registry, options)
        .await
        .map(|(report, _)| report)
}

/// [`simulate`], also returning the storage objects as the simulation left them: the
/// claims it bound and the volumes it provisioned (see [`super::storage`]).
pub async fn simulate_with_storage(
    input: ClusterInput,
    registry: &Registry,
    options: SimulateOptions,
) -> Result<(Report, Arc<Volumes>), SimulateError> {
    let checked = check_profiles(&input.profiles, registry);
    for warning in &checked.warnings {
        tracing::warn!("{warning}");
    }
    if !checked.invalid.is_empty() {
        return Err(SimulateError::InvalidProfiles(checked.invalid));
    }
    let parallelizer = start_workers(options.parallelism)?;
    simulate_on(input, checked.valid, registry, options, parallelizer).await
}

/// Runs the simulation with profiles already validated by [`check_profiles`]
/// (`input.profiles` is not looked at), on the calling task.
pub async fn simulate_checked(
    input: ClusterInput,
    profiles: Vec<ValidProfile>,
    registry: &Registry,
    options: SimulateOptions,
) -> Result<Report, SimulateError> {
    let parallelizer = start_workers(options.parallelism)?;
    simulate_on(input, profiles, registry, options, parallelizer)
        .await
        .map(|(report, _)| report)
}

/// [`simulate_checked`] with the whole driver loop on one of the scheduler's worker
/// threads, so that Filter and Score split their nodes with the other workers in place
/// (see [`parallel`](crate::framework::parallel)); `runtime` is the command line's.
pub fn simulate_on_workers(
    runtime: &tokio::runtime::Runtime,
    input: ClusterInput,
    profiles: Vec<ValidProfile>,
    registry: &Registry,
    options: SimulateOptions,
) -> Result<Report, SimulateError> {
    let parallelizer = start_workers(options.parallelism)?;
    let workers = parallelizer.clone();
    parallelizer
        .run(move || runtime.block_on(simulate_on(input, profiles, registry, options, workers)))
        .map(|(report, _)| report)
}

/// The scheduler's worker threads for `parallelism`.
pub fn start_workers(parallelism: usize) -> Result<Arc<Parallelizer>, SimulateError> {
    Parallelizer::new(parallelism)
        .map(Arc::new)
        .map_err(SimulateError::Internal)
}

async fn simulate_on(
    input: ClusterInput,
    profiles: Vec<ValidProfile>,
    registry: &Registry,
    options: SimulateOptions,
    parallelizer: Arc<Parallelizer>,
) -> Result<(Report, Arc<Volumes>), SimulateError> {
    let binder: Arc<InMemoryBinder> = Arc::new(InMemoryBinder::default());
    let pod_groups = Arc::new(PodGroups::new());
    input.pod_groups.iter().for_each(|g| pod_groups.apply(g));
    input
        .scheduler_plugins_pod_groups
        .iter()
        .for_each(|g| pod_groups.apply_scheduler_plugins(g));
    let clock = VirtualClock::new();
    let mut scheduler = Scheduler::new(SchedulerOptions {
        seed: options.seed,
        record_diagnosis: options.explain,
        parallelizer,
        clock: Arc::new(clock.clone()),
        nominator: Default::default(),
        pod_group_states: Default::default(),
        legacy_workloads: Default::default(),
    });
    // A YAML cluster serves Kubernetes 1.35's Workloads as it serves everything: pods
    // with `spec.workloadRef` are gang-scheduled as 1.35 does, from the input's Workloads.
    let legacy = scheduler.legacy_workloads();
    if !input.legacy_workloads_not_served {
        legacy.set_served();
    }
    for workload in &input.legacy_workloads {
        legacy.apply_workload(workload.clone());
    }
    // Before any profile and pod: members of pod groups are then queued as groups.
    if !input.pod_groups_not_served {
        scheduler
            .serve_pod_groups()
            .map_err(|e| SimulateError::Internal(e.to_string()))?;
    }
    let volumes = Arc::new(volumes(&input));
    let budgets = SimulatedBudgets::new(&input.pdbs, input.running_pods());
    let volume_writer = InMemoryVolumeWriter::new(volumes.clone(), node_labels(&input));
    let storage_events = volume_writer.events();
    let device_resources = claims::device_resources(&input);
    let mut input = input;
    claims::make_template_claims(&mut input, &device_resources);
    let claim_writer = InMemoryClaimWriter::new(device_resources.clone(), storage_events.clone());
    let services = ProfileServices {
        binder,
        volume_writer: Arc::new(volume_writer),
        parallelizer: scheduler.parallelizer().clone(),
        clock: scheduler.clock().clone(),
        nominator: scheduler.nominator().clone(),
        workloads: Arc::new(workloads(&input)),
        pod_groups: pod_groups.clone(),
        pod_group_states: scheduler.pod_group_states().clone(),
        legacy_workloads: scheduler.legacy_workloads().clone(),
        volumes: volumes.clone(),
        disruption_budgets: budgets.lister(),
        device_resources: device_resources.clone(),
        claim_writer: Arc::new(claim_writer),
        observer: None,
    };
    let health = add_profiles(&mut scheduler, profiles, registry, &services)?;
    let served: Vec<String> = scheduler
        .profiles()
        .iter()
        .map(|p| p.scheduler_name.clone())
        .collect();

    for namespace in &input.namespaces {
        scheduler.on_namespace_apply(namespace);
    }
    for node in &input.nodes {
        let name = node.metadata.name.clone().unwrap_or_default();
        scheduler
            .on_node_add(node.clone())
            .map_err(|e| SimulateError::InvalidObject {
                kind: "Node",
                name,
                message: e.to_string(),
            })?;
    }
    if !input.pod_groups_not_served {
        for group in &input.scheduling_pod_groups {
            scheduler.on_scheduling_group_apply(group.clone());
        }
    }
    // berth's and scheduler-plugins' PodGroups, each name once (berth's own first).
    let coscheduling: BTreeSet<(String, String)> = input
        .pod_groups
        .iter()
        .map(|g| (g.metadata.namespace.clone(), g.metadata.name.clone()))
        .chain(
            input
                .scheduler_plugins_pod_groups
                .iter()
                .map(|g| (g.metadata.namespace.clone(), g.metadata.name.clone())),
        )
        .map(|(namespace, name)| {
            let namespace = namespace.unwrap_or_else(|| "default".into());
            (namespace, name.unwrap_or_default())
        })
        .collect();
    for (namespace, name) in &coscheduling {
        let group = pod_groups.get(namespace, name);
        scheduler.on_coscheduling_group_change(namespace, name, group.as_ref());
    }
    // Finished pods are left out altogether, as `berth run` drops them from its cache.
    let running: Vec<&Pod> = input.running_pods().collect();
    let pending: Vec<&Pod> = input.pending_pods().collect();
    for pod in running.iter().chain(pending.iter()) {
        scheduler
            .on_pod_add((*pod).clone())
            .map_err(|e| SimulateError::InvalidObject {
                kind: "Pod",
                name: pod_key(pod),
                message: e.to_string(),
            })?;
    }

    let time = SimulatedTime::after_input(&input, clock.now());
    let simulated =
        run_with_storage(&mut scheduler, &clock, &mut (), &storage_events, budgets).await?;
    let mut report = build_report(
        &pending,
        &served,
        &simulated.reports,
        &simulated.preemptions,
        options.explain,
    );
    report.degraded = degraded_plugins(&health);
    pod_groups::explain_held_members(
        &mut report,
        &pending,
        scheduler.pod_group_states(),
        scheduler.legacy_workloads(),
    );
    report.pod_groups = pod_groups::group_results(
        &input,
        &report,
        &simulated.pod_group_conditions,
        &simulated.pod_groups,
        &time,
    );
    let by_key: HashMap<String, &Pod> = pending
        .iter()
        .map(|p| {
            let namespace = p.metadata.namespace.as_deref().unwrap_or_default();
            let name = p.metadata.name.as_deref().unwrap_or_default();
            (format!("{namespace}/{name}"), *p)
        })
        .collect();
    for row in report.pods.iter_mut() {
        if let Some(pod) = by_key.get(&format!("{}/{}", row.namespace, row.name)) {
            row.devices = claims::pod_devices(&device_resources, pod);
        }
    }
    Ok((report, volumes))
}

/// Instantiates every validated profile with `services` (whose worker threads and clock
/// are the scheduler's); returns each profile's plugin health, by scheduler name.
pub fn add_profiles(
    scheduler: &mut Scheduler,
    profiles: Vec<ValidProfile>,
    registry: &Registry,
    services: &ProfileServices,
) -> Result<Vec<(String, Arc<PluginHealth>)>, SimulateError> {
    let mut healths = Vec::new();
    for ValidProfile {
        profile,
        resolved,
        source,
    } in profiles
    {
        let name = profile.scheduler_name();
        let health = Arc::new(PluginHealth::new());
        healths.push((name.clone(), health.clone()));
        let framework = services
            .instantiate(&name, resolved, registry, health)
            .map_err(|e| {
                SimulateError::InvalidProfiles(vec![InvalidProfile {
                    source: source.clone(),
                    errors: vec![FieldError::new("spec.pluginConfig", "", e.to_string())],
                }])
            })?;
        scheduler
            .add_profile(&name, Arc::new(framework))
            .map_err(|e| SimulateError::Internal(e.to_string()))?;
    }
    Ok(healths)
}

/// The plugins degraded when the simulation ended, profile by profile.
fn degraded_plugins(health: &[(String, Arc<PluginHealth>)]) -> Vec<DegradedPlugin> {
    health
        .iter()
        .flat_map(|(scheduler_name, health)| {
            health.degraded().into_iter().map(|d| DegradedPlugin {
                scheduler_name: scheduler_name.clone(),
                plugin: d.plugin,
                reason: d.reason,
                message: d.message,
            })
        })
        .collect()
}

/// Watches the driver loop: `berth bench` times every scheduling cycle through it and
/// plays the objects upstream's workloads create or delete while pods are scheduled
/// ([`CycleObserver::between`]); `berth simulate` passes `()`.
pub trait CycleObserver {
    /// A scheduling cycle ran and took `elapsed`; `output` says whether it ended the
    /// attempt or assumed the pod on a node and handed it to binding.
    fn scheduling_cycle(&mut self, _elapsed: std::time::Duration, _output: &CycleOutput) {}

    /// A binding cycle finished (the pod is bound, or binding failed).
    fn binding_cycle(&mut self, _result: &BindingResult) {}

    /// Asked before each turn of the driver loop, cheaply: whether to call
    /// [`CycleObserver::between`] now.
    fn wants_turn(&mut self) -> bool {
        false
    }

    /// Called when [`CycleObserver::wants_turn`] said so, once the binds done so far are
    /// applied (as an informer would have delivered them): the cluster may change here
    /// (objects created or deleted, as watch events would deliver them). [`Turn::Stop`]
    /// ends the run at once, with whatever is still queued left in the queue.
    fn between(&mut self, _scheduler: &mut Scheduler) -> Result<Turn, SimulateError> {
        Ok(Turn::Go)
    }
}

/// Whether the driver goes on ([`CycleObserver::between`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    Go,
    Stop,
}

impl CycleObserver for () {}

/// Scheduling and binding cycles until nothing can progress; the last attempt of each pod.
/// A pod that failed [`MAX_ATTEMPTS`] times is deleted from the scheduler. `clock` is the
/// scheduler's: the driver moves it when nothing but a wait is left.
///
/// Binding cycles held at Permit run as tasks local to the driver's thread, which run only
/// while the driver waits, on any runtime: what the driver sees when it decides that only
/// time can move things on does not depend on other threads.
pub async fn run_to_completion(
    scheduler: &mut Scheduler,
    clock: &VirtualClock,
    observer: &mut dyn CycleObserver,
) -> Result<HashMap<String, AttemptReport>, SimulateError> {
    let storage = StorageEvents::default();
    let budgets = SimulatedBudgets::default();
    run_with_storage(scheduler, clock, observer, &storage, budgets)
        .await
        .map(|simulated| simulated.reports)
}

/// What the driver leaves: the last attempt of each pod, and what the simulated cluster
/// did besides binding (see [`super::preemption`]).
#[derive(Default)]
pub struct Simulated {
    pub reports: HashMap<String, AttemptReport>,
    /// The last pod-group cycle of each Workload API pod group.
    pub pod_groups: BTreeMap<GroupKey, PodGroupReport>,
    /// The condition each pod-group cycle wanted for its PodGroup, in order, with when.
    pub pod_group_conditions: WantedConditions,
    pub preemptions: Preemptions,
    /// The PodDisruptionBudgets the preemptions read, kept current.
    budgets: SimulatedBudgets,
}

/// [`run_to_completion`] for a cluster whose storage changes while it runs: the changes
/// `storage` records (the simulated PV controller and provisioners at work, see
/// [`super::storage`]) reach the scheduler as the storage events a watch would deliver,
/// before each scheduling cycle. Preemptions are carried out as they are decided, over
/// the PodDisruptionBudgets of `budgets` (whose lister the profiles' Handle reads).
pub async fn run_with_storage(
    scheduler: &mut Scheduler,
    clock: &VirtualClock,
    observer: &mut dyn CycleObserver,
    storage: &StorageEvents,
    budgets: SimulatedBudgets,
) -> Result<Simulated, SimulateError> {
    tokio::task::LocalSet::new()
        .run_until(drive(scheduler, clock, observer, storage, budgets))
        .await
}

async fn drive(
    scheduler: &mut Scheduler,
    clock: &VirtualClock,
    observer: &mut dyn CycleObserver,
    storage: &StorageEvents,
    budgets: SimulatedBudgets,
) -> Result<Simulated, SimulateError> {
    let mut simulated = Simulated {
        budgets,
        ..Simulated::default()
    };
    let mut bindings = WaitingBindings::default();
    // Binding cycles that did not wait at Permit, run at once so that their cycle state
    // is released with the pod bound; their results are applied when the queues run dry,
    // where a spawned binding cycle's result would be.
    let mut bound: Vec<BindingResult> = Vec::new();
    loop {
        if observer.wants_turn() {
            for result in std::mem::take(&mut bound) {
                complete(scheduler, result, &mut simulated)?;
            }
            if observer.between(scheduler)? == Turn::Stop {
                break;
            }
        }
        for (resource, action) in storage.drain() {
            scheduler.on_storage_change(resource, action);
        }
        while let Some(done) = bindings.tasks.try_join_next() {
            let result = joined(done)?;
            observer.binding_cycle(&result);
            complete(scheduler, result, &mut simulated)?;
        }
        let started = std::time::Instant::now();
        if let Some(output) = scheduler.schedule_one().await {
            observer.scheduling_cycle(started.elapsed(), &output);
            match output {
                CycleOutput::Done(report) => record(scheduler, report, &mut simulated),
                CycleOutput::PodGroup(report) => {
                    if let Some(condition) = &report.condition {
                        simulated
                            .pod_group_conditions
                            .entry(report.group.clone())
                            .or_default()
                            .push((clock.now(), condition.clone()));
                    }
                    simulated.pod_groups.insert(report.group.clone(), report);
                    // The members held at Permit were allowed in the group's cycle: their
                    // binding cycles run now, not when the queues run dry.
                    tokio::task::yield_now().await;
                }
                CycleOutput::Binding(cycle) if cycle.is_waiting() => bindings.spawn(cycle),
                CycleOutput::Binding(cycle) => {
                    // A cycle that waits (PreBind polling a volume binding on the clock)
                    // joins the cycles held at Permit, whose waits the driver ends.
                    if let Some(result) = bindings.run_or_spawn(cycle).await {
                        observer.binding_cycle(&result);
                        bound.push(result);
                    }
                }
            }
            continue;
        }
        if !bound.is_empty() {
            for result in std::mem::take(&mut bound) {
                complete(scheduler, result, &mut simulated)?;
            }
            continue;
        }
        if let Some(done) = bindings.next(clock).await {
            let result = joined(done)?;
            observer.binding_cycle(&result);
            complete(scheduler, result, &mut simulated)?;
            continue;
        }
        match scheduler.next_backoff_expiry() {
            Some(at) => {
                clock.advance_to(at);
                scheduler.flush_queues(clock.now(), false);
            }
            None => break,
        }
    }
    Ok(simulated)
}

fn joined(
    done: Result<BindingResult, tokio::task::JoinError>,
) -> Result<BindingResult, SimulateError> {
    done.map_err(|e| SimulateError::Internal(format!("binding cycle panicked: {e}")))
}

/// The binding cycles held at Permit, each its own local task, and how often they were
/// polled.
#[derive(Default)]
struct WaitingBindings {
    tasks: JoinSet<BindingResult>,
    polls: Arc<AtomicU64>,
}

impl WaitingBindings {
    fn spawn(&mut self, cycle: Box<BindingCycle>) {
        self.spawn_started(Box::pin(cycle.run()));
    }

    fn spawn_started(&mut self, mut run: Pin<Box<dyn Future<Output = BindingResult>>>) {
        let polls = self.polls.clone();
        self.tasks.spawn_local(std::future::poll_fn(move |cx| {
            polls.fetch_add(1, Ordering::Relaxed);
            run.as_mut().poll(cx)
        }));
    }

    /// Runs `cycle` on the driver's task as far as it goes without waiting: its result
    /// if it finished, else `None`, the cycle now being one of the waiting ones.
    async fn run_or_spawn(&mut self, cycle: Box<BindingCycle>) -> Option<BindingResult> {
        let mut run: Pin<Box<dyn Future<Output = BindingResult>>> = Box::pin(cycle.run());
        match std::future::poll_fn(|cx| Poll::Ready(run.as_mut().poll(cx))).await {
            Poll::Ready(result) => Some(result),
            Poll::Pending => {
                self.spawn_started(run);
                None
            }
        }
    }

    /// The next binding cycle to finish, `None` when none is in flight. When every cycle
    /// waits on the clock (a yield to the runtime polled none of them and each holds a
    /// wait), the clock moves to the earliest deadline.
    async fn next(
        &mut self,
        clock: &VirtualClock,
    ) -> Option<Result<BindingResult, tokio::task::JoinError>> {
        loop {
            if self.tasks.is_empty() {
                return None;
            }
            let polls = self.polls.load(Ordering::Relaxed);
            tokio::task::yield_now().await;
            if let Some(done) = self.tasks.try_join_next() {
                return Some(done);
            }
            let idle = self.polls.load(Ordering::Relaxed) == polls;
            match clock.next_deadline() {
                Some(at) if idle && clock.sleepers() >= self.tasks.len() => clock.advance_to(at),
                Some(_) if idle => {
                    // A cycle waits on something besides the clock (I/O): let it finish.
                    tokio::select! {
                        done = self.tasks.join_next() => return done,
                        _ = tokio::time::sleep(IO_RECHECK) => {}
                    }
                }
                Some(_) => {}
                None => return self.tasks.join_next().await,
            }
        }
    }
}

/// How often the driver looks again while a binding cycle waits on I/O.
const IO_RECHECK: std::time::Duration = std::time::Duration::from_millis(1);

fn complete(
    scheduler: &mut Scheduler,
    result: BindingResult,
    simulated: &mut Simulated,
) -> Result<(), SimulateError> {
    let mut report = scheduler.complete_binding(result);
    let evicted = simulated
        .preemptions
        .eviction_of(report.pod.key())
        .is_some();
    // A pod evicted while its binding was in flight stays deleted: its binding is not
    // replayed (the cluster deletes the pod whether the bind lands before or after).
    if let (Outcome::Scheduled { node }, false) = (&report.outcome, evicted) {
        // Replay the binding as the pod update an informer would deliver.
        let old = report.pod.pod.as_ref();
        let mut bound = old.clone();
        if let Some(spec) = bound.spec.as_mut() {
            spec.node_name = Some(node.clone());
        }
        scheduler.on_pod_update(old, bound).map_err(|e| {
            SimulateError::Internal(format!("recording binding of {}: {e}", report.pod.key()))
        })?;
        // The report keeps the bound pod the cache holds rather than a second copy of
        // the pending one.
        if let Some(bound) = scheduler.cache().get_pod(report.pod.key()) {
            simulated.budgets.bound(&bound.pod);
            report.pod = bound;
        }
    }
    record(scheduler, report, simulated);
    Ok(())
}

/// Keeps the latest report of the pod and carries out the preemption it decided; a pod
/// that failed its last allowed attempt is deleted so that nothing requeues it.
fn record(scheduler: &mut Scheduler, report: AttemptReport, simulated: &mut Simulated) {
    simulated
        .preemptions
        .apply(scheduler, &mut simulated.budgets, &report);
    let key = report.pod.key().to_string();
    let gave_up =
        report.attempts >= MAX_ATTEMPTS && !matches!(report.outcome, Outcome::Scheduled { .. });
    if gave_up {
        let pod = report.pod.clone();
        scheduler.on_pod_delete(&pod.pod);
    }
    simulated.reports.insert(key, report);
}
