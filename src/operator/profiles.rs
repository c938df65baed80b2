//! The SchedulerProfile controller: every profile is validated as the API
//! server and `berth simulate` validate it, resolved, instantiated as a [`Framework`] and
//! handed to the scheduling loop ([`ProfileCommand::Upsert`], a hot swap when the
//! scheduler name is already served); profiles that are rejected, renamed or deleted are
//! stopped ([`ProfileCommand::Remove`]). Status (`Accepted`, `Ready`, `Degraded`, the
//! effective plugins) is patched when it changes, and only by the leader; so are the
//! `Accepted`, `Rejected` and `Reloaded` events.
//!
//! # Decisions look at every profile
//!
//! Who serves a scheduler name depends on the other profiles claiming it (the oldest
//! valid one keeps it), so a reconcile reads the controller's store of all profiles, and
//! the decisions (validate, pick the holder, start or stop instances) are made one
//! profile at a time, under one lock, when kube-runtime hands the object to the
//! reconciler. Only the API writes (status, events) run concurrently afterwards.
//!
//! # Triggers
//!
//! Besides the controller's own watch (every change of a profile reconciles it), all
//! profiles are reconciled ([`Controller::reconcile_all_on`]) when
//! - this replica gains or loses the lease ([`OperatorState::leader`]), or the caches
//!   become synced ([`OperatorState::caches_synced`]): `Ready` depends on both;
//! - a profile is deleted: a second, small watch on SchedulerProfiles (the deletion
//!   watch) sees the `DELETED` event, stops the deleted profile's instance at once, and
//!   asks for a reconcile of all, so that a profile waiting for the deleted one's
//!   scheduler name takes it over. kube-runtime never reconciles a deleted object, and
//!   finalizers would need a write by every replica before the delete goes through, so
//!   the design stays finalizer-free. Deletions missed while the deletion watch was
//!   down are caught by its relist (instances of profiles absent from the list stop);
//! - one profile's decision changes which profile serves a scheduler name (a takeover,
//!   a rename, a rejection), so the other claimants update their status.
//!
//! # `default-scheduler` is reserved
//!
//! A profile serving `default-scheduler` (what `berth convert` makes of an ordinary
//! KubeSchedulerConfiguration) would have berth bind the pods kube-scheduler binds, each
//! scheduler blind to the other's placements, so it is refused (`ReservedSchedulerName`)
//! unless berth runs with `--serve-default-scheduler`, for clusters whose own
//! kube-scheduler is disabled. `berth simulate` has no second scheduler and serves it.
//!
//! Because the two watches are independent, a deleted profile may still be in the
//! controller's store for a moment; the deletion watch leaves a short-lived tombstone
//! (by uid) that makes reconciles ignore it, so it is neither restarted nor counted as
//! the holder of its scheduler name.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use futures::future::{BoxFuture, Shared};
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tracing::Instrument;

use super::conditions::{self, ACCEPTED, DEGRADED, DesiredCondition, READY, reason};
use super::types::{LoopMessage, OperatorState, ProfileCommand};
use crate::api::{SchedulerProfile, SchedulerProfileStatus};
use crate::framework::{
    Binder, Clock, ExtensionPoint, FieldError, FieldErrorKind, Framework, Nominator, Observer,
    Parallelizer, PluginError, PluginHealth, Registry, ResolvedProfile,
};
use crate::scheduler::ProfileServices;
use crate::schema::ProfileValidator;

mod status_writer;
mod verdict;

use status_writer::*;
use verdict::*;

/// How often an unchanged profile is reconciled anyway (kube-runtime's advice for
/// eventual consistency when a watch event is missed).
const RESYNC: Duration = Duration::from_secs(300);
/// Retry interval of a profile whose plugins failed to initialise: the cause (a plugin's
/// dependency) may go away without the profile changing.
const PLUGIN_INIT_RETRY: Duration = Duration::from_secs(30);
/// The scheduler name kube-scheduler serves; see the module docs.
pub const RESERVED_SCHEDULER_NAME: &str = "default-scheduler";
/// Error backoff: 1 s doubling to this.
const MAX_ERROR_BACKOFF: Duration = Duration::from_secs(60);
/// How long a deleted profile's uid is remembered (see the module docs).
const TOMBSTONE_TTL: Duration = Duration::from_secs(600);

/// Metrics hook of a finished reconcile: whether it succeeded, and how long it took.
pub type ReconcileHook = Arc<dyn Fn(bool, Duration) + Send + Sync>;
/// Metrics hook of a computed condition: profile name, condition type, status.
pub type ConditionHook = Arc<dyn Fn(&str, &str, &str) + Send + Sync>;

/// What the profile controller needs from the rest of the operator.
pub struct ProfileContext {
    pub client: kube::Client,
    /// Plugins profiles may name; validation and instantiation both use it.
    pub registry: Arc<Registry>,
    /// The scheduling loop, which receives [`ProfileCommand`]s.
    pub loop_tx: mpsc::UnboundedSender<LoopMessage>,
    pub state: OperatorState,
    /// Binds pods for DefaultBinder in every instance.
    pub binder: Arc<dyn Binder>,
    /// Framework timings, installed on every instance.
    pub observer: Option<Arc<dyn Observer>>,
    /// The scheduler's worker threads, shared by every instance.
    pub parallelizer: Arc<Parallelizer>,
    /// The scheduler's time, shared by every instance.
    pub clock: Arc<dyn Clock>,
    /// The scheduler's nominations, shared by every instance.
    pub nominator: Arc<Nominator>,
    /// The scheduler's Workload API pod groups, for GangScheduling.
    pub pod_group_states: Arc<crate::cluster::PodGroupStates>,
    /// The scheduler's 1.35 Workloads and gangs, for GangScheduling.
    pub legacy_workloads: Arc<crate::cluster::LegacyWorkloads>,
    /// Accept profiles serving [`RESERVED_SCHEDULER_NAME`] (`--serve-default-scheduler`).
    pub serve_default_scheduler: bool,
    /// The controller name (and replica) events are reported as.
    pub reporter: Reporter,
    /// Metrics hook: called after every reconcile with whether it succeeded and how long
    /// it took.
    pub on_reconcile: Option<ReconcileHook>,
    /// Metrics hook: called on every reconcile with (profile, condition type, status) for
    /// each condition the controller owns.
    pub on_condition: Option<ConditionHook>,
}

/// Why a reconcile failed; the profile is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("cannot patch the status of SchedulerProfile {profile:?}: {source}")]
    PatchStatus {
        profile: String,
        #[source]
        source: kube::Error,
    },
}

/// Runs the controller until `shutdown` resolves; reconciles in flight then finish.
pub async fn run(
    ctx: Arc<ProfileContext>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let validator = match ProfileValidator::new(&ctx.registry) {
        Ok(validator) => validator,
        Err(error) => {
            // berth's own bug (the registry yields an invalid CRD schema): no profile
            // could ever be accepted.
            tracing::error!(%error, "cannot build the SchedulerProfile validator; no profile will be served");
            shutdown.await;
            return;
        }
    };
    let shutdown: Shared<BoxFuture<'static, ()>> = shutdown.boxed().shared();
    let resource = ApiResource::erase::<SchedulerProfile>(&());
    // Dynamic objects, not typed ones: a profile that does not decode (a CRD newer than
    // this binary) must be reported on, not stall the watch of all profiles.
    let api: Api<DynamicObject> = Api::all_with(ctx.client.clone(), &resource);
    let memory = Arc::new(Mutex::new(Memory::default()));
    let (retrigger, retriggers) = mpsc::unbounded_channel();

    let controller =
        Controller::new_with(api.clone(), watcher::Config::default(), resource.clone());
    let planner = Planner {
        validator,
        ctx: ctx.clone(),
        memory: memory.clone(),
        store: controller.store(),
        retrigger: retrigger.clone(),
    };
    let writer = StatusWriter {
        ctx: ctx.clone(),
        api: api.clone(),
        recorder: Recorder::new(ctx.client.clone(), ctx.reporter.clone()),
        memory: memory.clone(),
    };
    let triggers = futures::stream::select_all([
        super::watches::changes(ctx.state.leader.clone()),
        super::watches::changes(ctx.state.unlisted.clone()),
        requests(retriggers),
    ]);
    let error_memory = memory.clone();
    let reconciles = controller
        .reconcile_all_on(triggers)
        .graceful_shutdown_on(shutdown.clone())
        .run(
            |object, _| reconcile(&planner, &writer, &object),
            move |object, error, _| error_backoff(&error_memory, &object, error),
            ctx.clone(),
        )
        .for_each(|result| async move {
            match result {
                Ok(_) => {}
                // A bulk reconcile races with deletions; nothing to do for those.
                Err(kube::runtime::controller::Error::ObjectNotFound(object)) => {
                    tracing::debug!(%object, "profile gone before its reconcile");
                }
                Err(error) => tracing::warn!(%error, "SchedulerProfile controller"),
            }
        });
    let deletions = watch_deletions(api, ctx.clone(), memory, retrigger)
        .take_until(shutdown)
        .for_each(|()| async {});
    futures::join!(reconciles, deletions);
}

/// A running instance, by profile name.
#[derive(Debug, Clone)]
struct Instance {
    uid: String,
    generation: i64,
    scheduler_name: String,
    /// What the instance's plugins report about their fallbacks (the Degraded condition).
    health: Arc<PluginHealth>,
}

/// The validation outcome of one generation of a profile.
struct Verdict {
    generation: i64,
    scheduler_name: String,
    outcome: Result<Valid, Rejection>,
}

struct Valid {
    resolved: ResolvedProfile,
    warnings: Vec<String>,
}

/// Why a profile is not accepted: an `Accepted=False` reason and its message.
#[derive(Debug, Clone)]
struct Rejection {
    reason: &'static str,
    message: String,
}

/// The last status written to a profile, and the resourceVersion it was written over: as
/// long as the store still shows that version, the write is newer than the store.
struct Written {
    over: Option<String>,
    status: SchedulerProfileStatus,
}

/// What the controller remembers between reconciles.
#[derive(Default)]
struct Memory {
    /// Instances sent to the scheduling loop, by profile name.
    instances: BTreeMap<String, Instance>,
    /// Validation outcomes by uid; valid for the generation they name.
    verdicts: HashMap<String, Arc<Verdict>>,
    /// Deleted profiles by uid, with when the deletion was seen.
    tombstones: HashMap<String, Instant>,
    written: HashMap<String, Written>,
    /// Consecutive failed reconciles by profile name.
    failures: HashMap<String, u32>,
}

fn lock(memory: &Mutex<Memory>) -> MutexGuard<'_, Memory> {
    memory.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The identity of a profile object, as far as decisions go.
struct Identity {
    name: String,
    uid: String,
    generation: i64,
    resource_version: Option<String>,
    created: Option<Timestamp>,
}

impl Identity {
    fn of(object: &DynamicObject) -> Option<Identity> {
        let meta = &object.metadata;
        Some(Identity {
            name: meta.name.clone()?,
            uid: meta.uid.clone()?,
            generation: meta.generation.unwrap_or(0),
            resource_version: meta.resource_version.clone(),
            created: meta.creation_timestamp.as_ref().map(|time| time.0),
        })
    }
}

/// The decision half of a reconcile; see the module docs.
struct Planner<'r> {
    validator: ProfileValidator<'r>,
    ctx: Arc<ProfileContext>,
    memory: Arc<Mutex<Memory>>,
    store: Store<DynamicObject>,
    retrigger: mpsc::UnboundedSender<()>,
}

/// What one reconcile decided; carried out by [`StatusWriter`].
struct Plan {
    name: String,
    uid: String,
    resource_version: Option<String>,
    reference: ObjectReference,
    current: SchedulerProfileStatus,
    desired: SchedulerProfileStatus,
    requeue: Duration,
}

impl Planner<'_> {
    /// Validates `object`, starts, swaps or stops its instance, and computes its status.
    /// `None` for objects that are not (or no longer) profiles to act on.
    fn plan(&self, object: &DynamicObject, reference: ObjectReference) -> Option<Plan> {
        let id = Identity::of(object)?;
        let mut memory = lock(&self.memory);
        memory
            .tombstones
            .retain(|_, seen| seen.elapsed() < TOMBSTONE_TTL);
        if memory.tombstones.contains_key(&id.uid) {
            return None;
        }
        let verdict = self.verdict(&mut memory, object, &id);
        let scheduler_name = verdict.scheduler_name.as_str();
        let (accepted, serving_changed) = match self.holds_name(&mut memory, &id, &verdict) {
            Err(rejection) => (Err(rejection), self.stop(&mut memory, &id.name)),
            Ok(valid) => match self.start(&mut memory, &id, scheduler_name, valid) {
                Ok(changed) => (Ok(valid), changed),
                Err(rejection) => (Err(rejection), self.stop(&mut memory, &id.name)),
            },
        };
        if serving_changed {
            // The other claimants of the names involved must update their status.
            let _ = self.retrigger.send(());
        }
        let current = current_status(&memory, object, &id);
        let health = accepted
            .is_ok()
            .then(|| memory.instances.get(&id.name).map(|i| i.health.clone()))
            .flatten();
        drop(memory);

        let desired = self.status(&id, scheduler_name, &accepted, &current, health.as_deref());
        let requeue = match &accepted {
            Err(rejection) if rejection.reason == reason::PLUGIN_INIT_FAILED => PLUGIN_INIT_RETRY,
            _ => RESYNC,
        };
        Some(Plan {
            name: id.name,
            uid: id.uid,
            resource_version: id.resource_version,
            reference,
            current,
            desired,
            requeue,
        })
    }

    /// The validation verdict of the object's current generation (cached per uid).
    fn verdict(&self, memory: &mut Memory, object: &DynamicObject, id: &Identity) -> Arc<Verdict> {
        if let Some(verdict) = memory
            .verdicts
            .get(&id.uid)
            .filter(|verdict| verdict.generation == id.generation)
        {
            return verdict.clone();
        }
        let mut verdict = validate(&self.validator, object, id);
        if !self.ctx.serve_default_scheduler {
            reserve_default_scheduler(&mut verdict, object);
        }
        let verdict = Arc::new(verdict);
        memory.verdicts.insert(id.uid.clone(), verdict.clone());
        verdict
    }

    /// The profile's valid configuration if it is valid and the oldest valid profile
    /// claiming its scheduler name (creationTimestamp, then name).
    fn holds_name<'v>(
        &self,
        memory: &mut Memory,
        id: &Identity,
        verdict: &'v Verdict,
    ) -> Result<&'v Valid, Rejection> {
        let valid = verdict.outcome.as_ref().map_err(Clone::clone)?;
        let mut claimants = Vec::new();
        for other in self.store.state() {
            let Some(other_id) = Identity::of(&other) else {
                continue;
            };
            if memory.tombstones.contains_key(&other_id.uid) {
                continue;
            }
            let other_verdict = self.verdict(memory, &other, &other_id);
            if other_verdict.outcome.is_ok()
                && other_verdict.scheduler_name == verdict.scheduler_name
            {
                // Objects without a creationTimestamp (never from a real server) last.
                claimants.push((other_id.created.is_none(), other_id.created, other_id.name));
            }
        }
        match claimants.into_iter().min() {
            Some((_, _, holder)) if holder != id.name => Err(Rejection {
                reason: reason::DUPLICATE_SCHEDULER_NAME,
                message: format!(
                    "spec.schedulerName: Duplicate value: {:?}: already served by SchedulerProfile {holder:?}, \
                     the oldest valid profile claiming it; choose another schedulerName or delete {holder:?}",
                    verdict.scheduler_name
                ),
            }),
            _ => Ok(valid),
        }
    }

    /// Makes sure an instance of the profile's current generation serves
    /// `scheduler_name`. Returns whether who serves which name changed.
    fn start(
        &self,
        memory: &mut Memory,
        id: &Identity,
        scheduler_name: &str,
        valid: &Valid,
    ) -> Result<bool, Rejection> {
        let current = memory.instances.get(&id.name).cloned();
        if current.as_ref().is_some_and(|instance| {
            instance.uid == id.uid
                && instance.generation == id.generation
                && instance.scheduler_name == scheduler_name
        }) {
            return Ok(false);
        }
        let framework = self.instantiate(scheduler_name, valid)?;
        let health = framework.handle().health.clone();
        let mut changed = false;
        if let Some(old) = current
            .as_ref()
            .filter(|instance| instance.scheduler_name != scheduler_name)
        {
            stop_instance(&self.ctx, memory, &id.name, old);
            changed = true;
        }
        let hot_swap = current.is_some_and(|instance| instance.scheduler_name == scheduler_name);
        // A takeover: whoever served the name before is replaced by the Upsert below.
        memory
            .instances
            .retain(|name, instance| name == &id.name || instance.scheduler_name != scheduler_name);
        let sent = self.send(ProfileCommand::Upsert {
            scheduler_name: scheduler_name.to_string(),
            framework,
        });
        let mut serving = self
            .ctx
            .state
            .serving
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if !sent {
            memory.instances.remove(&id.name);
            serving.remove(scheduler_name);
            return Ok(changed);
        }
        serving.insert(scheduler_name.to_string(), id.name.clone());
        memory.instances.insert(
            id.name.clone(),
            Instance {
                uid: id.uid.clone(),
                generation: id.generation,
                scheduler_name: scheduler_name.to_string(),
                health,
            },
        );
        tracing::info!(profile = %id.name, scheduler = %scheduler_name, generation = id.generation, hot_swap, "profile instance started");
        Ok(changed || !hot_swap)
    }

    fn instantiate(
        &self,
        scheduler_name: &str,
        valid: &Valid,
    ) -> Result<Arc<Framework>, Rejection> {
        let services = ProfileServices {
            binder: self.ctx.binder.clone(),
            volume_writer: Arc::new(super::volume_writer::KubeVolumeWriter::new(
                self.ctx.client.clone(),
            )),
            parallelizer: self.ctx.parallelizer.clone(),
            clock: self.ctx.clock.clone(),
            nominator: self.ctx.nominator.clone(),
            workloads: self.ctx.state.workloads.clone(),
            pod_groups: self.ctx.state.pod_groups.clone(),
            pod_group_states: self.ctx.pod_group_states.clone(),
            legacy_workloads: self.ctx.legacy_workloads.clone(),
            volumes: self.ctx.state.volumes.clone(),
            disruption_budgets: self.ctx.state.disruption_budgets.clone(),
            device_resources: self.ctx.state.device_resources.clone(),
            claim_writer: Arc::new(super::claim_writer::KubeClaimWriter::new(
                self.ctx.client.clone(),
            )),
            observer: self.ctx.observer.clone(),
        };
        // A change of plugin health is a change of the profile's status.
        let health = Arc::new(PluginHealth::with_listener(Arc::new({
            let retrigger = self.retrigger.clone();
            move || {
                let _ = retrigger.send(());
            }
        })));
        let framework = services
            .instantiate(
                scheduler_name,
                valid.resolved.clone(),
                &self.ctx.registry,
                health,
            )
            .map_err(|error| Rejection {
                reason: reason::PLUGIN_INIT_FAILED,
                message: plugin_error_message(&error),
            })?;
        Ok(Arc::new(framework))
    }

    /// Stops the profile's instance, if it has one. Returns whether it had.
    fn stop(&self, memory: &mut Memory, profile: &str) -> bool {
        match memory.instances.get(profile).cloned() {
            Some(instance) => {
                stop_instance(&self.ctx, memory, profile, &instance);
                true
            }
            None => false,
        }
    }

    fn send(&self, command: ProfileCommand) -> bool {
        let sent = self.ctx.loop_tx.send(LoopMessage::Profile(command)).is_ok();
        if !sent {
            tracing::warn!("the scheduling loop is gone; profile commands are dropped");
        }
        sent
    }

    fn status(
        &self,
        id: &Identity,
        scheduler_name: &str,
        accepted: &Result<&Valid, Rejection>,
        current: &SchedulerProfileStatus,
        health: Option<&PluginHealth>,
    ) -> SchedulerProfileStatus {
        let desired = [
            accepted_condition(scheduler_name, accepted),
            self.ready_condition(&id.name, scheduler_name, accepted.is_ok()),
            degraded_condition(health),
        ];
        if let Some(hook) = &self.ctx.on_condition {
            for condition in &desired {
                hook(
                    &id.name,
                    condition.type_,
                    if condition.status { "True" } else { "False" },
                );
            }
        }
        let now = conditions::now();
        SchedulerProfileStatus {
            observed_generation: Some(id.generation),
            scheduler_name: Some(scheduler_name.to_string()),
            conditions: conditions::merge(&current.conditions, &desired, Some(id.generation), &now),
            plugins: accepted
                .as_ref()
                .ok()
                .map(|valid| valid.resolved.effective()),
        }
    }

    fn ready_condition(
        &self,
        profile: &str,
        scheduler_name: &str,
        accepted: bool,
    ) -> DesiredCondition {
        let serving = self
            .ctx
            .state
            .serving
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(scheduler_name)
            .is_some_and(|holder| holder == profile);
        let (status, why, message) = if !accepted {
            (
                false,
                reason::NOT_ACCEPTED,
                "the profile is not accepted; see the Accepted condition".to_string(),
            )
        } else if !serving {
            (
                false,
                reason::STOPPED,
                format!(
                    "no scheduler instance runs for {scheduler_name:?}: the scheduling loop has stopped"
                ),
            )
        } else if !self.ctx.state.is_leader() {
            (
                false,
                reason::NOT_LEADER,
                "this replica does not hold the lease; only the leader schedules".to_string(),
            )
        } else if !self.ctx.state.caches_synced() {
            (
                false,
                reason::CACHES_NOT_SYNCED,
                format!(
                    "waiting for the first list of {}",
                    self.ctx.state.unlisted_kinds().join(", ")
                ),
            )
        } else {
            (
                true,
                reason::RUNNING,
                format!("scheduling pods with spec.schedulerName {scheduler_name:?}"),
            )
        };
        DesiredCondition::new(READY, status, why, message)
    }
}

/// Sends `Remove` for `instance` (owned by `profile`) and forgets it.
fn stop_instance(ctx: &ProfileContext, memory: &mut Memory, profile: &str, instance: &Instance) {
    memory.instances.remove(profile);
    let mut serving = ctx
        .state
        .serving
        .write()
        .unwrap_or_else(PoisonError::into_inner);
    if serving
        .get(&instance.scheduler_name)
        .is_some_and(|holder| holder == profile)
    {
        serving.remove(&instance.scheduler_name);
    }
    drop(serving);
    let command = ProfileCommand::Remove {
        scheduler_name: instance.scheduler_name.clone(),
    };
    if ctx.loop_tx.send(LoopMessage::Profile(command)).is_err() {
        tracing::warn!("the scheduling loop is gone; profile commands are dropped");
    }
    tracing::info!(profile, scheduler = %instance.scheduler_name, "profile instance stopped");
}

/// One reconcile: the decisions now, the writes in the returned future.
fn reconcile(
    planner: &Planner<'_>,
    writer: &StatusWriter,
    object: &DynamicObject,
) -> BoxFuture<'static, Result<Action, ReconcileError>> {
    let started = Instant::now();
    let name = object.name_any();
    let span = tracing::info_span!("reconcile_profile", profile = %name);
    let reference = object.object_ref(&ApiResource::erase::<SchedulerProfile>(&()));
    let plan = span.in_scope(|| planner.plan(object, reference));
    let on_reconcile = writer.ctx.on_reconcile.clone();
    let work = match plan {
        Some(plan) => writer.apply(plan),
        None => futures::future::ready(Ok(Action::await_change())).boxed(),
    };
    async move {
        let result = work.await;
        if let Some(hook) = on_reconcile {
            hook(result.is_ok(), started.elapsed());
        }
        result
    }
    .instrument(span)
    .boxed()
}

fn error_backoff(memory: &Mutex<Memory>, object: &DynamicObject, error: &ReconcileError) -> Action {
    let mut memory = lock(memory);
    let failures = memory.failures.entry(object.name_any()).or_default();
    *failures = failures.saturating_add(1);
    let delay = Duration::from_secs(1)
        .saturating_mul(1u32 << (*failures - 1).min(6))
        .min(MAX_ERROR_BACKOFF);
    tracing::warn!(profile = %object.name_any(), %error, retry_in = ?delay, "reconcile failed");
    Action::requeue(delay)
}

/// The deletion watch (see the module docs). Yields `()` per event handled, so it can be
/// cut short with `take_until`.
fn watch_deletions(
    api: Api<DynamicObject>,
    ctx: Arc<ProfileContext>,
    memory: Arc<Mutex<Memory>>,
    retrigger: mpsc::UnboundedSender<()>,
) -> BoxStream<'static, ()> {
    let mut listed: HashSet<String> = HashSet::new();
    super::backoff::reflector_backoff(watcher(api, watcher::Config::default()))
        .map(move |event| match event {
            Ok(watcher::Event::Delete(object)) => {
                if let Some(id) = Identity::of(&object) {
                    forget(&ctx, &mut lock(&memory), &id.uid);
                    let _ = retrigger.send(());
                }
            }
            Ok(watcher::Event::Init) => listed.clear(),
            Ok(watcher::Event::InitApply(object)) => {
                listed.extend(object.metadata.uid.clone());
            }
            Ok(watcher::Event::InitDone) => {
                let mut memory = lock(&memory);
                let gone: Vec<(String, Instance)> = memory
                    .instances
                    .iter()
                    .filter(|(_, instance)| !listed.contains(&instance.uid))
                    .map(|(name, instance)| (name.clone(), instance.clone()))
                    .collect();
                for (profile, instance) in gone {
                    stop_instance(&ctx, &mut memory, &profile, &instance);
                }
                // Profiles deleted unseen; a profile created since the list is simply
                // validated again.
                memory.verdicts.retain(|uid, _| listed.contains(uid));
                memory.written.retain(|uid, _| listed.contains(uid));
                drop(memory);
                let _ = retrigger.send(());
            }
            Ok(watcher::Event::Apply(_)) => {}
            Err(error) => tracing::warn!(%error, "SchedulerProfile deletion watch"),
        })
        .boxed()
}

/// Forgets a deleted profile: stops its instance and leaves a tombstone.
fn forget(ctx: &ProfileContext, memory: &mut Memory, uid: &str) {
    memory.tombstones.insert(uid.to_string(), Instant::now());
    memory.verdicts.remove(uid);
    memory.written.remove(uid);
    let owned: Vec<(String, Instance)> = memory
        .instances
        .iter()
        .filter(|(_, instance)| instance.uid == uid)
        .map(|(name, instance)| (name.clone(), instance.clone()))
        .collect();
    for (profile, instance) in owned {
        memory.failures.remove(&profile);
        stop_instance(ctx, memory, &profile, &instance);
    }
}

fn requests(receiver: mpsc::UnboundedReceiver<()>) -> BoxStream<'static, ()> {
    futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|()| ((), receiver))
    })
    .boxed()
}

#[cfg(test)]
mod tests;
