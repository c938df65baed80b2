//! One workload run: the cluster is built in memory, the init pods are scheduled
//! (not timed), then the measured pods are added and scheduled under the clock, through
//! the same driver loop as `berth simulate` ([`run_with_storage`]).
//!
//! A measured pod counts as scheduled when its binding cycle bound it (see
//! [`Measurement`]); the measured duration runs until the last pod is bound.
//!
//! The `podgroup/` workloads run with GenericWorkload on, as upstream's test cases do: the
//! scheduler serves Workload API PodGroups, which are created before their pods, and the
//! core places each group's members in one pod-group cycle. A gang's members wait at
//! Permit until the last is placed; the driver completes their binding cycles when the
//! queue has run dry, as it completes every cycle held at Permit.
//!
//! The DRA workloads get the resource.k8s.io objects of [`super::dra`] and their init
//! claims, allocated before the clock starts; the claims of the measured pods are made
//! as `berth simulate`'s resourceclaim controller makes them, before a pod reaches the
//! scheduler, and DynamicResources writes its allocations through simulate's in-memory
//! claim writer, whose changes reach the queues as watch events would. Upstream's
//! controller runs apart from the scheduler and its latency falls inside the measured
//! window; here it is synchronous and costs the window only its own work.
//!
//! A steady-state run ([`run_steady`]) keeps `measure_pods` pods pending for the
//! workload's window. Upstream's `createPodsSteadily` deletes each pod as soon as its
//! informer sees it bound and creates a new one; berth does the same at the point its
//! driver sees binds, which is when the queue has run dry: each pass schedules the
//! pending pods, then every pod bound in it is deleted (grace period 0) with the claims
//! made for it, the devices freed at once, and replaced. The pass under way when the
//! window closes is finished; SchedulingThroughput is cut from the binds within the
//! window, over the window.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use super::cases::{Background, ChurnObject, churn_node};
use super::check::{Held, Placement, check, check_devices};
use super::dra;
use super::report::{
    BackgroundOps, SteadyState, UpstreamThreshold, WorkloadReport, percentiles, throughput,
};
use super::workload::{Counts, INIT_NAMESPACE, Phase, Workload};
use crate::cluster::{
    DeviceResources, GroupKey, PodGroups, Volumes, Workloads, allocated_devices, is_allocated,
    pod_key, reserved_for,
};
use crate::dra::allocator::DeviceId;
use crate::framework::{ActionType, EventResource, Parallelizer, Registry};
use crate::scheduler::{
    AttemptReport, BindingResult, CycleOutput, Outcome, ProfileServices, Scheduler,
    SchedulerOptions,
};
use crate::simulate::budgets::SimulatedBudgets;
use crate::simulate::claims::{self, InMemoryClaimWriter};
use crate::simulate::clock::VirtualClock;
use crate::simulate::input::deterministic_uid;
use crate::simulate::run::{
    CycleObserver, InMemoryBinder, SimulateError, Turn, ValidProfile, add_profiles,
    run_with_storage,
};
use crate::simulate::storage::StorageEvents;

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

/// The cluster a run schedules into, besides the scheduler's own state.
struct Cluster {
    clock: VirtualClock,
    resources: Arc<DeviceResources>,
    /// Claim changes the writer made, for the driver to deliver.
    storage: Arc<StorageEvents>,
    scheduler_name: String,
    /// The node of each pool, by driver and pool name, for the check.
    pool_nodes: PoolNodes,
}

/// Nodes by driver and pool name.
type PoolNodes = HashMap<(String, String), String>;

/// Runs `plan` with `profile`; the report's check says whether the placements keep the
/// workload's promises.
pub async fn run_workload(
    plan: &Plan,
    profile: &ValidProfile,
    registry: &Registry,
    options: &RunOptions,
) -> Result<WorkloadReport, SimulateError> {
    reset_peak_rss();
    let (mut scheduler, cluster) = start(plan, profile, registry, options)?;
    let pod_groups = plan.workload.pod_groups();

    let mut node_labels: HashMap<String, BTreeMap<String, String>> = HashMap::new();
    // allocResourceClaims picks among the nodes; no other workload needs them kept.
    let mut claim_nodes: Vec<Node> = Vec::new();
    for index in 0..plan.counts.nodes {
        let node = plan.workload.node(index);
        let name = node.metadata.name.clone().unwrap_or_default();
        node_labels.insert(
            name.clone(),
            node.metadata.labels.clone().unwrap_or_default(),
        );
        if plan.counts.init_claims > 0 {
            claim_nodes.push(node.clone());
        }
        scheduler
            .on_node_add(node)
            .map_err(|e| invalid("Node", name, e))?;
    }
    let init_started = Instant::now();
    if plan.counts.init_claims > 0 {
        dra::create_init_claims(&cluster.resources, INIT_NAMESPACE, plan.counts.init_claims);
        dra::alloc_resource_claims(
            &cluster.resources,
            INIT_NAMESPACE,
            &claim_nodes,
            options.seed,
        )?;
        drop(claim_nodes);
    }

    // createPodGroups: one per `per_group` measured pods, known to the scheduler before
    // the pods (upstream waits for its informer to list them).
    let groups = match pod_groups {
        Some((policy, per_group)) => {
            let count = plan.counts.measure_pods / per_group.max(1);
            for index in 0..count {
                let mut group = policy.pod_group(index, per_group);
                group.metadata.uid = Some(deterministic_uid(&format!(
                    "PodGroup/{}/{}",
                    policy.namespace(),
                    policy.group_name(index)
                )));
                scheduler.on_scheduling_group_apply(group);
            }
            count
        }
        None => 0,
    };

    let (init, measure) = plan.workload.phases();
    let side = match plan.workload {
        Workload::Case(w) => w.side(),
        _ => None,
    };
    let side_phase = side.map(|side| Phase {
        template: side.template,
        namespace: side.namespace,
    });
    // The side pods created at `first` (see `cases::Side`), or none.
    let add_side = |scheduler: &mut Scheduler, first: bool| match (side, side_phase) {
        (Some(side), Some(phase)) if side.first == first => {
            add_pods(scheduler, &cluster, phase, &mut 0, plan.counts.side_pods)
        }
        _ => Ok(Vec::new()),
    };
    // Gated pods come first; upstream's barrier waits until the scheduler attempted
    // them, which here is one run of the driver (they never leave the queue).
    let mut side_keys = add_side(&mut scheduler, true)?;
    if !side_keys.is_empty() {
        run(&mut scheduler, &cluster, &mut ()).await?;
    }
    let mut init_progress = Progress::new(
        options.progress,
        plan,
        "init",
        plan.counts.init_pods as usize,
    );
    let mut next = 0;
    let init_keys = add_pods(
        &mut scheduler,
        &cluster,
        init,
        &mut next,
        plan.counts.init_pods,
    )?;
    let init_reports = run(&mut scheduler, &cluster, &mut init_progress).await?;
    let init_duration = init_started.elapsed();
    init_progress.finish();
    let init_placements: Vec<Placement> =
        placements(init, &init_keys, &init_reports, false).collect();

    let (measured, duration, steady_state) = match plan.counts.steady_state {
        None => {
            let count = plan.counts.measure_pods as usize;
            // Pods with a finalizer, created just before the measured ones and not waited
            // for: scheduled in the window, among the measured pods.
            if side.is_some_and(|s| !s.first) {
                side_keys = add_side(&mut scheduler, false)?;
            }
            let background = match plan.workload {
                Workload::Case(w) => w.background(),
                _ => None,
            };
            let timeline = background.map(|op| {
                // deletePods lists the pods of its namespace when it starts: the init or
                // the side pods.
                let mut victims: Vec<Pod> = Vec::new();
                if let Background::DeletePods { namespace, .. } = op {
                    let listed = std::iter::once((init, &init_keys))
                        .chain(side_phase.map(|phase| (phase, &side_keys)));
                    for (phase, keys) in listed.filter(|(p, _)| p.namespace == namespace) {
                        victims.extend(
                            keys.iter()
                                .map(|(_, index)| make_pod(&cluster, phase, *index)),
                        );
                    }
                }
                Timeline::new(op, shuffled(victims, options.seed), &cluster.scheduler_name)
            });
            let mut measurement = Measurement::new(
                Progress::new(options.progress, plan, "measure", count),
                count,
            )
            .counting(measure.namespace, count, timeline);
            let mut next = 0;
            let keys = add_pods(
                &mut scheduler,
                &cluster,
                measure,
                &mut next,
                plan.counts.measure_pods,
            )?;
            let reports = run(&mut scheduler, &cluster, &mut measurement).await?;
            // Until the last measured pod was bound: the run may go on past it where the
            // driver only learns of the bind when the queue runs dry.
            let duration = measurement
                .bound_at
                .iter()
                .max()
                .copied()
                .unwrap_or_else(|| measurement.started.elapsed());
            measurement.progress.finish();
            let mut leaked = Vec::new();
            let mut side_placements = Vec::new();
            if let Some(phase) = side_phase {
                side_placements = placements(phase, &side_keys, &reports, false).collect();
                if side.is_some_and(|s| !s.first) {
                    let deleted = measurement.timeline.as_ref().map(|t| &t.deleted_pending);
                    leaked.extend(left_pending(&side_keys, &side_placements, deleted));
                }
            }
            let measured = Measured {
                placements: placements(measure, &keys, &reports, true)
                    .chain(side_placements)
                    .collect(),
                held: vec![bound_claims(&cluster, &keys, &reports)],
                leaked,
                measurement,
            };
            (measured, duration, None)
        }
        Some(window) => {
            let mut measurement =
                Measurement::new(Progress::new(options.progress, plan, "steady", 0), 0);
            let outcome = run_steady(
                &mut scheduler,
                &cluster,
                measure,
                plan.counts,
                window,
                &mut measurement,
            )
            .await?;
            // The window, or less where the run stalled. The last pass runs past the
            // window; its binds after the window are left out, as upstream's collector
            // stops with the window.
            let duration = measurement.started.elapsed().min(window);
            measurement.bound_at.retain(|at| *at <= duration);
            measurement.progress.finish();
            let steady_state = SteadyState {
                seconds: window.as_secs_f64(),
                pending_pods: plan.counts.measure_pods,
                created_pods: outcome.created,
            };
            let measured = Measured {
                placements: outcome.placements,
                held: outcome.held,
                leaked: outcome.leaked,
                measurement,
            };
            (measured, duration, Some(steady_state))
        }
    };

    let placements: Vec<Placement> = init_placements
        .into_iter()
        .chain(measured.placements)
        .collect();
    let mut check = check(plan.workload, &placements, &node_labels);
    if plan.workload.uses_claims() {
        let fixed = init_claims(&cluster);
        check = check.with_failures(check_devices(&fixed, &measured.held));
    }
    check = check.with_failures(measured.leaked);
    let measurement = measured.measurement;
    let background = measurement.timeline.as_ref().map(Timeline::report);
    Ok(WorkloadReport {
        workload: plan.workload.name().to_string(),
        size: plan.size.clone(),
        nodes: plan.counts.nodes,
        init_pods: plan.counts.init_pods,
        init_claims: plan.counts.init_claims,
        pod_groups: groups,
        side_pods: plan.counts.side_pods,
        background,
        measure_pods: match steady_state {
            Some(_) => measurement.bound_at.len() as u64,
            None => plan.counts.measure_pods,
        },
        steady_state,
        scheduler_name: cluster.scheduler_name.clone(),
        opportunistic_batching: scheduler
            .profiles()
            .first()
            .is_some_and(|p| p.framework.batches()),
        batched_pods: scheduler.profiles().first().map_or(0, |p| p.batch.batched),
        parallelism: options.parallelizer.parallelism(),
        seed: options.seed,
        duration_seconds: duration.as_secs_f64(),
        init_duration_seconds: init_duration.as_secs_f64(),
        scheduling_throughput: throughput(&measurement.bound_at, duration),
        attempt_duration_seconds: percentiles(&measurement.cycles),
        peak_rss_bytes: peak_rss(),
        upstream_threshold: plan.workload.upstream_threshold_at(&plan.size).map(
            |(size, threshold)| UpstreamThreshold {
                size: size.to_string(),
                pods_per_second: threshold,
            },
        ),
        check,
    })
}

/// The scheduler with `profile`, serving what `plan`'s workload needs, and the cluster
/// around it (no nodes yet).
fn start(
    plan: &Plan,
    profile: &ValidProfile,
    registry: &Registry,
    options: &RunOptions,
) -> Result<(Scheduler, Cluster), SimulateError> {
    let clock = VirtualClock::new();
    let mut scheduler = Scheduler::new(SchedulerOptions {
        seed: options.seed,
        record_diagnosis: false,
        parallelizer: options.parallelizer.clone(),
        clock: Arc::new(clock.clone()),
        nominator: Default::default(),
        pod_group_states: Default::default(),
        legacy_workloads: Default::default(),
    });
    // The `podgroup/` test cases turn GenericWorkload on (beta, off by default in 1.37):
    // their pods are then queued as groups. Before any pod is added.
    let pod_groups = plan.workload.pod_groups();
    if pod_groups.is_some() {
        scheduler
            .serve_pod_groups()
            .map_err(|e| SimulateError::Internal(e.to_string()))?;
    }
    // Upstream runs every workload with DynamicResourceAllocation on (GA in 1.37): the
    // lister is served, empty but for the DRA workloads. The generated cluster has no
    // workload controllers, scheduler-plugins PodGroups or storage.
    let resources = Arc::new(DeviceResources::new());
    if plan.workload.uses_claims() {
        dra::publish(&resources, plan.counts.nodes);
    }
    resources.set_served();
    let storage = Arc::new(StorageEvents::default());
    let services = ProfileServices {
        binder: Arc::new(InMemoryBinder::default()),
        volume_writer: Arc::new(crate::framework::NoVolumeWriter),
        parallelizer: scheduler.parallelizer().clone(),
        clock: scheduler.clock().clone(),
        nominator: scheduler.nominator().clone(),
        workloads: Arc::new(Workloads::new()),
        pod_groups: Arc::new(PodGroups::new()),
        pod_group_states: scheduler.pod_group_states().clone(),
        legacy_workloads: scheduler.legacy_workloads().clone(),
        volumes: Arc::new(Volumes::new()),
        disruption_budgets: Default::default(),
        device_resources: resources.clone(),
        claim_writer: Arc::new(InMemoryClaimWriter::new(resources.clone(), storage.clone())),
        observer: None,
    };
    add_profiles(&mut scheduler, vec![profile.clone()], registry, &services)?;
    let pool_nodes = resources
        .slices()
        .iter()
        .filter_map(|slice| {
            let node = slice.spec.node_name.clone()?;
            Some((
                (slice.spec.driver.clone(), slice.spec.pool.name.clone()),
                node,
            ))
        })
        .collect();
    let cluster = Cluster {
        clock,
        resources,
        storage,
        scheduler_name: profile.profile.scheduler_name(),
        pool_nodes,
    };
    Ok((scheduler, cluster))
}

/// What the measured phase left for the report and the check.
struct Measured {
    placements: Vec<Placement>,
    /// The claims of the bound pods, in batches that held their devices together.
    held: Vec<Vec<Held>>,
    /// Claims or allocations a steady-state run should have freed and did not.
    leaked: Vec<String>,
    measurement: Measurement,
}

/// Schedules until nothing can progress, the claim writer's changes delivered as watch
/// events; the last attempt of each pod.
async fn run(
    scheduler: &mut Scheduler,
    cluster: &Cluster,
    observer: &mut dyn CycleObserver,
) -> Result<HashMap<String, AttemptReport>, SimulateError> {
    run_with_storage(
        scheduler,
        &cluster.clock,
        observer,
        &cluster.storage,
        SimulatedBudgets::default(),
    )
    .await
    .map(|simulated| simulated.reports)
}

/// Adds `count` pods of `phase`, named after upstream's name or generateName prefix and
/// indexed from `*next` on, to the scheduler's queue, each with a UID (the API server's)
/// and the claims the resourceclaim controller makes for it; returns their keys. The
/// scheduler holds the only copy of each pod, as a scheduler fed by an informer would.
fn add_pods(
    scheduler: &mut Scheduler,
    cluster: &Cluster,
    phase: Phase,
    next: &mut u64,
    count: u64,
) -> Result<Vec<(String, u64)>, SimulateError> {
    let mut keys = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let index = *next;
        *next += 1;
        let mut pod = make_pod(cluster, phase, index);
        // The UID: the scheduler's key of a pod that has one.
        let key = pod_key(&pod);
        claims::make_pod_template_claims(&mut pod, &cluster.resources);
        scheduler
            .on_pod_add(pod)
            .map_err(|e| invalid("Pod", key.clone(), e))?;
        keys.push((key, index));
    }
    Ok(keys)
}

/// Pod `index` of `phase`'s `createPods`, named after upstream's name or generateName
/// prefix, with a UID (the API server's), as [`add_pods`] creates it.
fn make_pod(cluster: &Cluster, phase: Phase, index: u64) -> Pod {
    let name = phase.template.pod_name(index);
    let mut pod = phase
        .template
        .pod(phase.namespace, name, index, &cluster.scheduler_name);
    pod.metadata.uid = Some(deterministic_uid(&format!(
        "Pod/{}/{}",
        phase.namespace,
        pod.name_any()
    )));
    pod
}

/// `pods` in an order fixed by `seed`: upstream's deletePods deletes pods in the order
/// its lister returns them, which is none in particular.
fn shuffled(mut pods: Vec<Pod>, seed: u64) -> Vec<Pod> {
    // xorshift64*, seeded away from zero; Fisher-Yates.
    let mut state = seed ^ 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    for i in (1..pods.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        pods.swap(i, j);
    }
    pods
}

/// The side pods created beside the measured ones (pods with a finalizer) that were
/// neither bound nor deleted before they were scheduled: the scheduler left them
/// pending.
fn left_pending(
    keys: &[(String, u64)],
    placements: &[Placement],
    deleted_pending: Option<&HashSet<String>>,
) -> Option<String> {
    let deleted = |key: &String| deleted_pending.is_some_and(|d| d.contains(key));
    let pending = keys
        .iter()
        .zip(placements)
        .filter(|((key, _), p)| p.node.is_none() && !deleted(key))
        .count();
    (pending > 0).then(|| {
        format!(
            "{pending} of {} pods with a finalizer were neither scheduled nor deleted while \
             pending",
            keys.len()
        )
    })
}

/// What a steady-state run left.
struct SteadyOutcome {
    /// Every pod bound in the window, then those still pending.
    placements: Vec<Placement>,
    created: u64,
    held: Vec<Vec<Held>>,
    leaked: Vec<String>,
}

/// upstream's `createPodsSteadily` (see the module documentation): `counts.measure_pods`
/// pods of `phase` pending at the start of every pass until `window` has passed.
async fn run_steady(
    scheduler: &mut Scheduler,
    cluster: &Cluster,
    phase: Phase,
    counts: Counts,
    window: Duration,
    measurement: &mut Measurement,
) -> Result<SteadyOutcome, SimulateError> {
    let mut next = 0;
    let mut pending: BTreeMap<String, u64> = BTreeMap::new();
    let mut placements = Vec::new();
    let mut held = Vec::new();
    let mut leaked = Vec::new();
    measurement.started = Instant::now();
    let mut replace = counts.measure_pods;
    while measurement.started.elapsed() < window {
        pending.extend(add_pods(scheduler, cluster, phase, &mut next, replace)?);
        let reports = run(scheduler, cluster, measurement).await?;
        let mut batch = Vec::new();
        for (key, report) in reports {
            let Outcome::Scheduled { node } = &report.outcome else {
                continue;
            };
            let Some(index) = pending.remove(&key) else {
                continue;
            };
            let pod = &report.pod.pod;
            batch.push(pod_claim(cluster, pod, node));
            // Deleted with grace period 0, and its claims with it.
            scheduler.on_pod_delete(pod);
            if claims::delete_pod_claims(&cluster.resources, pod) {
                scheduler.on_storage_change(EventResource::ResourceClaim, ActionType::DELETE);
            }
            placements.push(Placement {
                template: phase.template,
                measured: true,
                index,
                node: Some(node.clone()),
            });
        }
        if batch.is_empty() {
            // Nothing was bound and nothing will change: the pending pods are stuck.
            leaked.push(format!(
                "the steady state stalled: {} pods pending could not be scheduled after \
                 {} were",
                pending.len(),
                placements.len()
            ));
            break;
        }
        replace = batch.len() as u64;
        held.push(batch);
    }
    // Every bound pod was deleted with its claim: only the init claims and the pending
    // pods' claims are left, and only the init claims are allocated.
    let allocated = cluster.resources.allocated_claims().len() as u64;
    if allocated != counts.init_claims {
        leaked.push(format!(
            "{allocated} claims are allocated after the run, {} expected (the init claims)",
            counts.init_claims
        ));
    }
    let claims = cluster.resources.claims().len() as u64;
    let expected = counts.init_claims + pending.len() as u64;
    if claims != expected {
        leaked.push(format!(
            "{claims} claims exist after the run, {expected} expected (the init claims and \
             one per pending pod)"
        ));
    }
    placements.extend(pending.into_values().map(|index| Placement {
        template: phase.template,
        measured: true,
        index,
        node: None,
    }));
    Ok(SteadyOutcome {
        placements,
        created: next,
        held,
        leaked,
    })
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
    keys: &'a [(String, u64)],
    reports: &'a HashMap<String, AttemptReport>,
    measured: bool,
) -> impl Iterator<Item = Placement> + 'a {
    keys.iter().map(move |(key, index)| Placement {
        template: phase.template,
        measured,
        index: *index,
        node: reports.get(key).and_then(|report| match &report.outcome {
            Outcome::Scheduled { node } => Some(node.clone()),
            _ => None,
        }),
    })
}

/// The claims of the pods of `keys` that were bound, for the check.
fn bound_claims(
    cluster: &Cluster,
    keys: &[(String, u64)],
    reports: &HashMap<String, AttemptReport>,
) -> Vec<Held> {
    keys.iter()
        .filter_map(|(key, _)| {
            let report = reports.get(key)?;
            let Outcome::Scheduled { node } = &report.outcome else {
                return None;
            };
            let has_claims = report
                .pod
                .pod
                .spec
                .as_ref()
                .and_then(|s| s.resource_claims.as_ref())
                .is_some_and(|c| !c.is_empty());
            has_claims.then(|| pod_claim(cluster, &report.pod.pod, node))
        })
        .collect()
}

/// What the claim made for `pod` (bound to `node`) holds.
fn pod_claim(cluster: &Cluster, pod: &Pod, node: &str) -> Held {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let name = pod
        .status
        .as_ref()
        .and_then(|s| s.resource_claim_statuses.as_ref())
        .and_then(|s| s.first())
        .and_then(|s| s.resource_claim_name.clone());
    let claim = name
        .as_deref()
        .and_then(|name| cluster.resources.claim(namespace, name));
    let label = match &name {
        Some(name) => format!("{namespace}/{name}"),
        None => pod_key(pod),
    };
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    let problem = match &claim {
        None => Some("the pod's claim does not exist".to_string()),
        Some(claim) if !is_allocated(claim) => Some("not allocated".to_string()),
        Some(claim) => (!reserved_for(claim, uid)).then(|| "not reserved for its pod".to_string()),
    };
    Held {
        claim: label,
        pod_node: Some(node.to_string()),
        problem,
        devices: claim
            .map(|c| devices(&cluster.pool_nodes, &c))
            .unwrap_or_default(),
    }
}

/// What the init claims hold, for the check.
fn init_claims(cluster: &Cluster) -> Vec<Held> {
    cluster
        .resources
        .claims()
        .iter()
        .filter(|c| c.metadata.namespace.as_deref() == Some(INIT_NAMESPACE))
        .map(|claim| Held {
            claim: format!("{INIT_NAMESPACE}/{}", claim.name_any()),
            pod_node: None,
            problem: (!is_allocated(claim)).then(|| "not allocated".to_string()),
            devices: devices(&cluster.pool_nodes, claim),
        })
        .collect()
}

/// The devices `claim`'s allocation holds, each with the node of the slice of its pool.
fn devices(
    pool_nodes: &PoolNodes,
    claim: &k8s_openapi::api::resource::v1::ResourceClaim,
) -> Vec<(DeviceId, Option<String>)> {
    allocated_devices(claim)
        .iter()
        .map(|r| {
            let node = pool_nodes.get(&(r.driver.clone(), r.pool.clone())).cloned();
            let id = DeviceId {
                driver: r.driver.clone(),
                pool: r.pool.clone(),
                device: r.device.clone(),
            };
            (id, node)
        })
        .collect()
}

/// The clock of the measured phase.
struct Measurement {
    started: Instant,
    /// When each measured pod was bound, since `started`.
    bound_at: Vec<Duration>,
    /// The namespace of the measured pods, whose binds alone count; `None`: every bind.
    namespace: Option<&'static str>,
    /// The run stops once this many measured pods are bound, as upstream's op stops
    /// waiting (0: when nothing can progress).
    target: usize,
    /// The op played while the measured pods are scheduled.
    timeline: Option<Timeline>,
    /// Every pod's scheduling cycle's wall time; a member of a pod group gets an equal
    /// share of its group's cycle.
    cycles: Vec<Duration>,
    /// The pod-group cycle under way: the member outputs handed out so far, and the wall
    /// time of the calls that handed them out (the first ran the whole cycle).
    group_cycle: (u32, Duration),
    progress: Progress,
}

impl Measurement {
    /// Started now, with room for `pods` pods.
    fn new(progress: Progress, pods: usize) -> Measurement {
        Measurement {
            started: Instant::now(),
            bound_at: Vec::with_capacity(pods),
            namespace: None,
            target: 0,
            timeline: None,
            cycles: Vec::with_capacity(pods),
            group_cycle: (0, Duration::ZERO),
            progress,
        }
    }

    /// Counting only the binds of pods in `namespace`, stopping at `target` of them, with
    /// `timeline` played meanwhile.
    fn counting(
        self,
        namespace: &'static str,
        target: usize,
        timeline: Option<Timeline>,
    ) -> Measurement {
        Measurement {
            namespace: Some(namespace),
            target,
            timeline,
            ..self
        }
    }

    fn done(&self) -> bool {
        self.target > 0 && self.bound_at.len() >= self.target
    }
}

impl CycleObserver for Measurement {
    /// A pod's cycle is one attempt. A pod-group cycle places its members in one call and
    /// hands out their outputs, then the group's ([`CycleOutput::PodGroup`]), one per
    /// call: its wall time is shared equally by its members, the nearest in-memory
    /// equivalent of upstream's per-member attempt durations, and the group's output is
    /// no attempt of its own.
    fn scheduling_cycle(&mut self, elapsed: Duration, output: &CycleOutput) {
        self.progress.scheduling_cycle(elapsed, output);
        match output {
            CycleOutput::PodGroup(_) => {
                let (members, took) = std::mem::take(&mut self.group_cycle);
                if members > 0 {
                    let each = (took + elapsed) / members;
                    self.cycles
                        .extend(std::iter::repeat_n(each, members as usize));
                }
            }
            output if is_group_member(output) => {
                self.group_cycle.0 += 1;
                self.group_cycle.1 += elapsed;
            }
            _ => self.cycles.push(elapsed),
        }
    }

    /// A pod counts as scheduled when it is bound, as upstream counts pods bound; only
    /// the measured namespace's, as upstream's collector watches that namespace.
    fn binding_cycle(&mut self, result: &BindingResult) {
        let counted = self
            .namespace
            .is_none_or(|namespace| result.pod().namespace() == namespace);
        if result.is_success() && counted {
            self.bound_at.push(self.started.elapsed());
        }
    }

    fn wants_turn(&mut self) -> bool {
        self.done() || self.timeline.as_ref().is_some_and(Timeline::due)
    }

    fn between(&mut self, scheduler: &mut Scheduler) -> Result<Turn, SimulateError> {
        if self.done() {
            return Ok(Turn::Stop);
        }
        if let Some(timeline) = &mut self.timeline {
            timeline.play(scheduler)?;
        }
        Ok(Turn::Go)
    }
}

/// A background op ([`Background`]) played on the wall clock from the start of the
/// measured phase: its tick `n` falls at `n` intervals after it, and the ticks due are
/// played between two turns of the driver.
struct Timeline {
    op: Background,
    started: Instant,
    interval: Duration,
    /// Ticks played.
    ticks: u64,
    /// churn in `recreate` mode: per object of the op, the objects alive in its slots.
    slots: Vec<Vec<Option<Churned>>>,
    /// deletePods: the pods to delete, in order.
    victims: Vec<Pod>,
    scheduler_name: String,
    created: u64,
    deleted: u64,
    /// Keys of the pods deleted while pending.
    deleted_pending: HashSet<String>,
}

/// An object churn created.
enum Churned {
    Node(String),
    Pod(Box<Pod>),
    Service,
}

impl Timeline {
    fn new(op: Background, victims: Vec<Pod>, scheduler_name: &str) -> Timeline {
        let (interval, slots) = match op {
            Background::Churn {
                interval,
                recreate,
                objects,
                ..
            } => {
                let number = recreate.unwrap_or(0) as usize;
                let slots = objects
                    .iter()
                    .map(|_| (0..number).map(|_| None).collect())
                    .collect();
                (interval, slots)
            }
            Background::DeletePods { per_second, .. } => (
                Duration::from_secs(1) / per_second.max(1) as u32,
                Vec::new(),
            ),
        };
        Timeline {
            op,
            started: Instant::now(),
            interval,
            ticks: 0,
            slots,
            victims,
            scheduler_name: scheduler_name.to_string(),
            created: 0,
            deleted: 0,
            deleted_pending: HashSet::new(),
        }
    }

    /// Whether a tick is due: the next one's time has come, and the op has work left.
    fn due(&self) -> bool {
        let left = match self.op {
            Background::DeletePods { .. } => (self.ticks as usize) < self.victims.len(),
            Background::Churn { .. } => true,
        };
        left && self.started.elapsed() >= self.interval * (self.ticks as u32 + 1)
    }

    /// Plays every tick due.
    fn play(&mut self, scheduler: &mut Scheduler) -> Result<(), SimulateError> {
        while self.due() {
            let tick = self.ticks;
            self.ticks += 1;
            match self.op {
                Background::DeletePods { .. } => {
                    let pod = self.victims[tick as usize].clone();
                    self.delete_pod(scheduler, &pod);
                }
                Background::Churn {
                    namespace,
                    recreate,
                    objects,
                    ..
                } => {
                    for (i, object) in objects.iter().enumerate() {
                        let slot = recreate.map(|number| (tick % number.max(1)) as usize);
                        let alive = slot.and_then(|s| self.slots[i][s].take());
                        match alive {
                            Some(churned) => self.delete(scheduler, churned),
                            None => {
                                let churned = self.create(scheduler, namespace, *object, tick)?;
                                if let Some(s) = slot {
                                    self.slots[i][s] = Some(churned);
                                }
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn create(
        &mut self,
        scheduler: &mut Scheduler,
        namespace: &str,
        object: ChurnObject,
        tick: u64,
    ) -> Result<Churned, SimulateError> {
        self.created += 1;
        Ok(match object {
            ChurnObject::Node => {
                let node = churn_node(tick);
                let name = node.name_any();
                scheduler
                    .on_node_add(node)
                    .map_err(|e| invalid("Node", name.clone(), e))?;
                Churned::Node(name)
            }
            ChurnObject::Pod(template) => {
                let name = template.pod_name(tick);
                let mut pod = template.pod(namespace, name, tick, &self.scheduler_name);
                pod.metadata.uid = Some(deterministic_uid(&format!(
                    "Pod/{namespace}/{}",
                    pod.name_any()
                )));
                scheduler
                    .on_pod_add(pod.clone())
                    .map_err(|e| invalid("Pod", pod_key(&pod), e))?;
                Churned::Pod(Box::new(pod))
            }
            ChurnObject::Service => Churned::Service,
        })
    }

    fn delete(&mut self, scheduler: &mut Scheduler, churned: Churned) {
        match churned {
            Churned::Node(name) => scheduler.on_node_delete(&name),
            // Counted there.
            Churned::Pod(pod) => return self.delete_pod(scheduler, &pod),
            Churned::Service => {}
        }
        self.deleted += 1;
    }

    /// Deletes `pod` as the API server would: a bound pod with a finalizer gets a
    /// deletionTimestamp and stays on its node; any other bound pod goes; a pending
    /// pod leaves the queue (with a finalizer, it is not scheduled any more).
    fn delete_pod(&mut self, scheduler: &mut Scheduler, pod: &Pod) {
        self.deleted += 1;
        let key = pod_key(pod);
        let Some(bound) = scheduler.cache().get_pod(&key) else {
            scheduler.on_pod_delete(pod);
            self.deleted_pending.insert(key);
            return;
        };
        let current: &Pod = &bound.pod;
        if current
            .metadata
            .finalizers
            .as_ref()
            .is_some_and(|f| !f.is_empty())
        {
            let mut deleting = current.clone();
            deleting.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
            // The pod was valid when added; so is a copy with a deletion timestamp.
            let _ = scheduler.on_pod_update(current, deleting);
        } else {
            scheduler.on_pod_delete(current);
        }
    }

    fn report(&self) -> BackgroundOps {
        BackgroundOps {
            op: match self.op {
                Background::Churn { .. } => "churn",
                Background::DeletePods { .. } => "deletePods",
            }
            .to_string(),
            created: self.created,
            deleted: self.deleted,
            deleted_pending: self.deleted_pending.len() as u64,
        }
    }
}

/// Whether `output` is a pod's that names a pod group: with pod groups served, such a
/// pod is only ever tried in its group's cycle.
fn is_group_member(output: &CycleOutput) -> bool {
    let pod = match output {
        CycleOutput::Done(report) => &report.pod,
        CycleOutput::Binding(cycle) => cycle.pod(),
        CycleOutput::PodGroup(_) => return false,
    };
    GroupKey::of_pod(&pod.pod).is_some()
}

/// A one-line progress indicator on stderr (pods assumed so far, of `total` when it is
/// known), redrawn at most ten times a second; silent when stderr is not a terminal.
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
            let _ = if self.total > 0 {
                write!(
                    stderr,
                    "\r\x1b[2K{}: {}/{} pods scheduled",
                    self.label, self.assumed, self.total
                )
            } else {
                write!(
                    stderr,
                    "\r\x1b[2K{}: {} pods scheduled",
                    self.label, self.assumed
                )
            };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::workload::{Size, Utilization};
    use crate::simulate::run::check_profiles;

    /// `workload` at `nodes` nodes (and `pods` measured or pending pods), with the
    /// default profile; a steady-state run lasts `window`.
    async fn bench(
        workload: Workload,
        nodes: u64,
        pods: Option<u64>,
        window: Option<Duration>,
    ) -> WorkloadReport {
        let registry = crate::plugins::default_registry();
        let mut checked = check_profiles(&[], &registry);
        let profile = checked.valid.remove(0);
        let counts = workload
            .counts(Size::Nodes500)
            .unwrap_or_else(|| panic!("{workload} has a 500Nodes size"));
        let mut counts = workload.overridden(counts, Some(nodes), pods);
        if counts.steady_state.is_some() {
            counts.steady_state = window;
        }
        let plan = Plan {
            workload,
            size: "test".to_string(),
            counts,
        };
        let parallelizer = Parallelizer::new(1).unwrap_or_else(|e| panic!("{e}"));
        let options = RunOptions {
            seed: 0,
            parallelizer: Arc::new(parallelizer),
            progress: false,
        };
        run_workload(&plan, &profile, &registry, &options)
            .await
            .unwrap_or_else(|e| panic!("{workload}: {e}"))
    }

    #[tokio::test]
    async fn the_burst_fills_the_devices_left_after_the_init_claims() {
        // Three nodes of ten devices: 15 init claims, then 15 pods fill the rest.
        let report = bench(Workload::SchedulingWithResourceClaimTemplate, 3, None, None).await;
        assert_eq!((report.init_claims, report.measure_pods), (15, 15));
        assert!(report.check.passed, "{:?}", report.check.failures);
        assert_eq!(report.check.scheduled, 15);

        // One pod more than there are devices: it is left pending.
        let report = bench(
            Workload::SchedulingWithResourceClaimTemplate,
            3,
            Some(16),
            None,
        )
        .await;
        assert_eq!(report.check.scheduled, 15);
        assert_eq!(
            report.check.failures,
            ["1 of 16 measured pods were not scheduled"]
        );
    }

    #[tokio::test]
    async fn a_full_cluster_in_steady_state_frees_every_bound_pods_device() {
        // Two nodes, 20 devices: 10 held by init claims, 10 for the pending pods, so a
        // pod can only be bound once an earlier one's device was freed.
        let window = Duration::from_millis(200);
        let report = bench(
            Workload::SteadyStateClusterResourceClaimTemplate(Utilization::Full),
            2,
            None,
            Some(window),
        )
        .await;
        assert_eq!(report.init_claims, 10);
        assert!(report.check.passed, "{:?}", report.check.failures);
        let steady = report
            .steady_state
            .clone()
            .unwrap_or_else(|| panic!("steady"));
        assert_eq!(steady.pending_pods, 10);
        // More pods were bound than there are free devices: devices were reused.
        assert!(report.measure_pods > 10, "{}", report.measure_pods);
        // The check also counts the binds of the last pass after the window.
        assert!(report.check.scheduled >= report.measure_pods);
        let still_pending = steady.created_pods - report.check.scheduled;
        assert!(still_pending <= 10, "{still_pending}");
        assert_eq!(report.duration_seconds, window.as_secs_f64());
    }

    #[tokio::test]
    async fn gangs_are_bound_whole_and_throughput_counts_pods() {
        use crate::bench::workload::GroupScale;
        for workload in [
            Workload::GangScheduling(GroupScale::Nodes10),
            Workload::BasicScheduling(GroupScale::Nodes10),
        ] {
            let counts = workload.own_counts().unwrap_or_default();
            let plan = Plan {
                workload,
                size: "test".to_string(),
                counts,
            };
            let registry = crate::plugins::default_registry();
            let profile = check_profiles(&[], &registry).valid.remove(0);
            let parallelizer = Parallelizer::new(1).unwrap_or_else(|e| panic!("{e}"));
            let options = RunOptions {
                seed: 0,
                parallelizer: Arc::new(parallelizer),
                progress: false,
            };
            let report = run_workload(&plan, &profile, &registry, &options)
                .await
                .unwrap_or_else(|e| panic!("{workload}: {e}"));
            assert!(
                report.check.passed,
                "{workload}: {:?}",
                report.check.failures
            );
            assert_eq!(
                (report.pod_groups, report.check.scheduled),
                (3, 9),
                "{workload}"
            );
            // Nine pods bound over the run, not nine pods and three groups.
            let bound = report.scheduling_throughput.overall * report.duration_seconds;
            assert!((bound - 9.0).abs() < 1e-6, "{workload}: {bound}");
        }
    }

    fn done(pod: Pod) -> CycleOutput {
        let pod = crate::cluster::PodInfo::new(pod).unwrap_or_else(|e| panic!("{e}"));
        CycleOutput::Done(AttemptReport {
            pod: Arc::new(pod),
            scheduler_name: "s".to_string(),
            attempts: 1,
            outcome: Outcome::Unschedulable {
                message: String::new(),
            },
            diagnosis: None,
            nominating: None,
            preemption: None,
        })
    }

    #[test]
    fn a_group_cycle_is_shared_by_its_members_and_is_no_attempt_itself() {
        use crate::bench::workload::{GroupPolicy, PodTemplate};
        let member = |index| {
            let template = PodTemplate::GroupMember {
                policy: GroupPolicy::Gang,
                per_group: 3,
            };
            done(template.pod("gang-ns-0", template.pod_name(index), index, "s"))
        };
        let lone = done(PodTemplate::Default.pod("ns", "pod-0".to_string(), 0, "s"));
        let group = CycleOutput::PodGroup(crate::scheduler::PodGroupReport {
            group: GroupKey::new("gang-ns-0", "gang-0"),
            scheduler_name: "s".to_string(),
            condition: None,
            message: String::new(),
            placed: 3,
            members: 3,
            attempt: None,
            preemption: None,
        });
        let plan = Plan {
            workload: Workload::SchedulingBasic,
            size: "test".to_string(),
            counts: Counts::default(),
        };
        let mut measurement = Measurement::new(Progress::new(false, &plan, "test", 0), 4);
        let ms = Duration::from_millis;
        // The first member's call ran the group's cycle; the rest were handed out.
        measurement.scheduling_cycle(ms(7), &member(0));
        measurement.scheduling_cycle(ms(1), &member(1));
        measurement.scheduling_cycle(ms(0), &member(2));
        measurement.scheduling_cycle(ms(1), &group);
        measurement.scheduling_cycle(ms(5), &lone);
        assert_eq!(measurement.cycles, [ms(3), ms(3), ms(3), ms(5)]);
    }

    /// A scheduler with the default profile and `nodes` nodes of `workload`, as a run
    /// starts it, and the plan's namespaces' pods made as the run makes them.
    fn started(workload: Workload, nodes: u64) -> (Scheduler, Cluster) {
        let registry = crate::plugins::default_registry();
        let profile = check_profiles(&[], &registry).valid.remove(0);
        let plan = Plan {
            workload,
            size: "test".to_string(),
            counts: Counts {
                nodes,
                ..Counts::default()
            },
        };
        let options = RunOptions {
            seed: 0,
            parallelizer: Arc::new(Parallelizer::new(1).unwrap_or_else(|e| panic!("{e}"))),
            progress: false,
        };
        let (mut scheduler, cluster) =
            start(&plan, &profile, &registry, &options).unwrap_or_else(|e| panic!("{e}"));
        for index in 0..nodes {
            scheduler
                .on_node_add(workload.node(index))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        (scheduler, cluster)
    }

    /// The workload of that name, and its test case's description.
    fn case(name: &str) -> (Workload, &'static crate::bench::cases::CaseWorkload) {
        match Workload::parse(name)[..] {
            [workload @ Workload::Case(w)] => (workload, w),
            _ => panic!("{name} is not one workload of a test case"),
        }
    }

    #[tokio::test]
    async fn deleting_a_pod_with_a_finalizer_keeps_it_bound_or_takes_it_out_of_the_queue() {
        let (workload, w) = case("SchedulingDeletedPodsWithFinalizers/10Node_100DeletingPods");
        let (mut scheduler, cluster) = started(workload, 2);
        let side = w.side().unwrap_or_else(|| panic!("side pods"));
        let phase = Phase {
            template: side.template,
            namespace: side.namespace,
        };
        // Pod 0 is bound; pod 1 is still pending when both are deleted.
        let keys = add_pods(&mut scheduler, &cluster, phase, &mut 0, 1).unwrap_or_default();
        run(&mut scheduler, &cluster, &mut ())
            .await
            .unwrap_or_default();
        let more = add_pods(&mut scheduler, &cluster, phase, &mut 1, 1).unwrap_or_default();
        let victims = vec![make_pod(&cluster, phase, 0), make_pod(&cluster, phase, 1)];
        let op = Background::DeletePods {
            namespace: side.namespace,
            per_second: 100,
        };
        let mut timeline = Timeline::new(op, victims, &cluster.scheduler_name);
        timeline.started -= Duration::from_millis(25);
        timeline
            .play(&mut scheduler)
            .unwrap_or_else(|e| panic!("{e}"));

        let bound = scheduler.cache().get_pod(&keys[0].0);
        let bound = bound.unwrap_or_else(|| panic!("the bound pod stays"));
        assert!(bound.pod.metadata.deletion_timestamp.is_some());
        assert!(bound.node_name().is_some());
        assert_eq!(timeline.deleted_pending, HashSet::from([more[0].0.clone()]));
        // Nothing is left to schedule: the pending pod left the queue.
        let reports = run(&mut scheduler, &cluster, &mut ())
            .await
            .unwrap_or_default();
        assert!(!reports.contains_key(&more[0].0), "{reports:?}");
        assert_eq!(
            timeline.report(),
            BackgroundOps {
                op: "deletePods".to_string(),
                created: 0,
                deleted: 2,
                deleted_pending: 1,
            }
        );
        // Every victim deleted: no tick is due any more.
        timeline.started -= Duration::from_secs(60);
        assert!(!timeline.due());
    }

    #[tokio::test]
    async fn recreate_churn_creates_then_deletes_what_it_created() {
        let (workload, w) = case("SchedulingWithMixedChurn/10Nodes");
        let (mut scheduler, cluster) = started(workload, 1);
        let op = w.background().unwrap_or_else(|| panic!("churn"));
        let mut timeline = Timeline::new(op, Vec::new(), &cluster.scheduler_name);
        // Two ticks of one second: a node, a pod and a Service created, then deleted.
        timeline.started -= Duration::from_millis(2500);
        timeline
            .play(&mut scheduler)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(timeline.ticks, 2);
        assert_eq!(
            (timeline.created, timeline.deleted),
            (3, 3),
            "{:?}",
            timeline.report()
        );
        assert_eq!(scheduler.cache().node_count(), 1);
        // The third tick creates them anew: the churn node joins the cluster.
        timeline.started -= Duration::from_secs(1);
        timeline
            .play(&mut scheduler)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((timeline.created, timeline.deleted), (6, 3));
        assert_eq!(scheduler.cache().node_count(), 2);
        // Its pod of 9 CPUs fits nowhere, and is pending.
        let reports = run(&mut scheduler, &cluster, &mut ())
            .await
            .unwrap_or_default();
        assert!(
            reports
                .values()
                .all(|r| !matches!(r.outcome, Outcome::Scheduled { .. })),
            "{reports:?}"
        );
    }

    #[tokio::test]
    async fn extended_resource_pods_land_on_their_node() {
        let report = bench(Workload::SchedulingWithExtendedResource, 5, None, None).await;
        assert_eq!(report.measure_pods, 5);
        assert!(report.check.passed, "{:?}", report.check.failures);
        assert_eq!(report.check.scheduled, 5);
    }
}
