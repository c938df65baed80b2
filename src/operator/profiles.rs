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
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, watch};
use tracing::Instrument;

use super::conditions::{self, ACCEPTED, DEGRADED, DesiredCondition, READY, reason};
use super::types::{LoopMessage, OperatorState, ProfileCommand};
use crate::api::{SchedulerProfile, SchedulerProfileStatus};
use crate::framework::{
    Binder, Clock, ExtensionPoint, FieldError, FieldErrorKind, Framework, Observer, Parallelizer,
    PluginError, PluginHealth, Registry, ResolvedProfile,
};
use crate::scheduler::ProfileServices;
use crate::schema::ProfileValidator;

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
        changes(ctx.state.leader.clone()),
        changes(ctx.state.caches_synced.clone()),
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
            parallelizer: self.ctx.parallelizer.clone(),
            clock: self.ctx.clock.clone(),
            workloads: self.ctx.state.workloads.clone(),
            pod_groups: self.ctx.state.pod_groups.clone(),
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
                "waiting for the node and pod caches to complete their first list".to_string(),
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

/// Validates one profile object (admission as the API server does it, then berth's
/// semantic checks).
fn validate(validator: &ProfileValidator<'_>, object: &DynamicObject, id: &Identity) -> Verdict {
    let mut raw = serde_json::to_value(object).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut raw {
        // List items may come without their type.
        map.insert(
            "apiVersion".into(),
            Value::from(format!("{}/{}", crate::api::GROUP, crate::api::VERSION)),
        );
        map.insert("kind".into(), Value::from("SchedulerProfile"));
    }
    let validation = validator.validate(&raw);
    let scheduler_name = match &validation.profile {
        Some(profile) => profile.scheduler_name(),
        None => raw
            .pointer("/spec/schedulerName")
            .and_then(Value::as_str)
            .unwrap_or(&id.name)
            .to_string(),
    };
    let outcome = match validation.resolved {
        Some(resolved) if validation.errors.is_empty() => Ok(Valid {
            resolved,
            warnings: validation.warnings,
        }),
        _ if validation.errors.is_empty() => Err(Rejection {
            reason: reason::INVALID_PLUGIN_CONFIG,
            message: "the profile could not be resolved".to_string(),
        }),
        _ => Err(rejection(&validation.errors)),
    };
    Verdict {
        generation: id.generation,
        scheduler_name,
        outcome,
    }
}

/// Refuses a valid profile serving [`RESERVED_SCHEDULER_NAME`]; see the module docs.
fn reserve_default_scheduler(verdict: &mut Verdict, object: &DynamicObject) {
    if verdict.scheduler_name != RESERVED_SCHEDULER_NAME || verdict.outcome.is_err() {
        return;
    }
    let path = if object.data.pointer("/spec/schedulerName").is_some() {
        "spec.schedulerName"
    } else {
        "metadata.name"
    };
    verdict.outcome = Err(Rejection {
        reason: reason::RESERVED_SCHEDULER_NAME,
        message: format!(
            "{path}: Forbidden: {RESERVED_SCHEDULER_NAME:?} is served by the cluster's own \
             kube-scheduler, and two schedulers binding the same pods overcommit nodes; set \
             spec.schedulerName to a name of berth's own (and the same schedulerName in the \
             pods berth should schedule), or, if the cluster's kube-scheduler is disabled, \
             run berth with --serve-default-scheduler (Helm value serveDefaultScheduler: true)"
        ),
    });
}

/// `UnknownPlugin` when any error is about a plugin name (an unsupported value at
/// `spec.plugins.<point>.enabled[i].name` or `disabled[i].name`), else
/// `InvalidPluginConfig`; the message lists every error.
fn rejection(errors: &[FieldError]) -> Rejection {
    let names_a_plugin = |error: &FieldError| {
        error.kind == FieldErrorKind::NotSupported
            && error.path.starts_with("spec.plugins.")
            && error.path.ends_with(".name")
            && (error.path.contains(".enabled[") || error.path.contains(".disabled["))
    };
    Rejection {
        reason: if errors.iter().any(names_a_plugin) {
            reason::UNKNOWN_PLUGIN
        } else {
            reason::INVALID_PLUGIN_CONFIG
        },
        message: join_errors(errors.iter().map(ToString::to_string)),
    }
}

fn join_errors(errors: impl Iterator<Item = String>) -> String {
    errors.collect::<Vec<_>>().join("; ")
}

fn plugin_error_message(error: &PluginError) -> String {
    match error {
        PluginError::InvalidArgs { plugin, errors } => format!(
            "invalid args for plugin {plugin}: {}",
            join_errors(errors.iter().map(ToString::to_string))
        ),
        PluginError::Init { .. } => error.to_string(),
    }
}

fn accepted_condition(
    scheduler_name: &str,
    accepted: &Result<&Valid, Rejection>,
) -> DesiredCondition {
    match accepted {
        Ok(valid) => {
            let mut message =
                format!("the profile is valid and serves scheduler name {scheduler_name:?}");
            if !valid.warnings.is_empty() {
                message.push_str("; warnings: ");
                message.push_str(&valid.warnings.join("; "));
            }
            DesiredCondition::new(ACCEPTED, true, reason::VALID, message)
        }
        Err(rejection) => {
            DesiredCondition::new(ACCEPTED, false, rejection.reason, rejection.message.clone())
        }
    }
}

/// The Degraded condition, from what the instance's plugins report through their
/// [`PluginHealth`] (a metrics plugin whose Prometheus is down scores
/// neutrally and says so). Every report's change retriggers a reconcile, so the condition
/// follows the plugins within one reconcile. Several degraded plugins: the first one's
/// reason, every message.
fn degraded_condition(health: Option<&PluginHealth>) -> DesiredCondition {
    let degraded = health.map(PluginHealth::degraded).unwrap_or_default();
    match degraded.first() {
        None => DesiredCondition::new(
            DEGRADED,
            false,
            reason::AS_EXPECTED,
            "every plugin runs as configured".to_string(),
        ),
        Some(first) => DesiredCondition::new(
            DEGRADED,
            true,
            match first.reason.as_str() {
                reason::METRICS_UNAVAILABLE => reason::METRICS_UNAVAILABLE,
                _ => reason::PLUGIN_DEGRADED,
            },
            degraded
                .iter()
                .map(|d| d.message.as_str())
                .collect::<Vec<_>>()
                .join("; "),
        ),
    }
}

/// The status to compare with and merge into: our last write while the store has not
/// caught up with it, else the stored status.
fn current_status(
    memory: &Memory,
    object: &DynamicObject,
    id: &Identity,
) -> SchedulerProfileStatus {
    if let Some(written) = memory
        .written
        .get(&id.uid)
        .filter(|written| written.over.is_some() && written.over == id.resource_version)
    {
        return written.status.clone();
    }
    object
        .data
        .get("status")
        .and_then(|status| serde_json::from_value(status.clone()).ok())
        .unwrap_or_default()
}

/// The I/O half of a reconcile: status patch and events, by the leader only.
struct StatusWriter {
    ctx: Arc<ProfileContext>,
    api: Api<DynamicObject>,
    recorder: Recorder,
    memory: Arc<Mutex<Memory>>,
}

impl StatusWriter {
    fn apply(&self, plan: Plan) -> BoxFuture<'static, Result<Action, ReconcileError>> {
        let ctx = self.ctx.clone();
        let api = self.api.clone();
        let recorder = self.recorder.clone();
        let memory = self.memory.clone();
        async move {
            if !ctx.state.is_leader() {
                return Ok(Action::requeue(plan.requeue));
            }
            if !same_status(&plan.current, &plan.desired) {
                api.patch_status(&plan.name, &PatchParams::default(), &Patch::Merge(status_patch(&plan.desired)))
                    .await
                    .map_err(|source| ReconcileError::PatchStatus {
                        profile: plan.name.clone(),
                        source,
                    })?;
                lock(&memory).written.insert(
                    plan.uid.clone(),
                    Written {
                        over: plan.resource_version.clone(),
                        status: plan.desired.clone(),
                    },
                );
                tracing::debug!(profile = %plan.name, "status patched");
            }
            for event in transition_events(&plan.current, &plan.desired) {
                if let Err(error) = recorder.publish(&event, &plan.reference).await {
                    tracing::warn!(profile = %plan.name, reason = %event.reason, %error, "cannot publish event");
                }
            }
            lock(&memory).failures.remove(&plan.name);
            Ok(Action::requeue(plan.requeue))
        }
        .boxed()
    }
}

fn same_status(a: &SchedulerProfileStatus, b: &SchedulerProfileStatus) -> bool {
    serde_json::to_value(a).ok() == serde_json::to_value(b).ok()
}

/// A merge patch that makes the stored status equal to `status` whatever it was: fields
/// `status` leaves out are sent as `null` (a merge patch keeps what it does not name).
fn status_patch(status: &SchedulerProfileStatus) -> Value {
    let mut body = serde_json::to_value(status).unwrap_or_else(|_| Value::Object(Map::new()));
    if let Value::Object(fields) = &mut body {
        for field in [
            "observedGeneration",
            "schedulerName",
            "conditions",
            "plugins",
        ] {
            fields.entry(field).or_insert(Value::Null);
        }
        if let Some(Value::Object(plugins)) = fields.get_mut("plugins") {
            for point in ExtensionPoint::ALL {
                plugins.entry(point.field_name()).or_insert(Value::Null);
            }
        }
    }
    serde_json::json!({ "status": body })
}

/// Events for the transitions from `current` to `desired`: `Accepted` when the profile
/// becomes accepted, `Reloaded` when an accepted profile is accepted at a new generation
/// (its instance was hot-swapped), `Rejected` when it becomes not accepted or is rejected
/// for a new reason.
fn transition_events(
    current: &SchedulerProfileStatus,
    desired: &SchedulerProfileStatus,
) -> Vec<Event> {
    let (Some(now), before) = (
        conditions::find(&desired.conditions, ACCEPTED),
        conditions::find(&current.conditions, ACCEPTED),
    ) else {
        return Vec::new();
    };
    let was = before.map(|c| c.status.as_str());
    let event = |type_, reason: &str, action: &str, note: String| Event {
        type_,
        reason: reason.to_string(),
        note: Some(note),
        action: action.to_string(),
        secondary: None,
    };
    let scheduler = desired.scheduler_name.as_deref().unwrap_or_default();
    let generation = desired.observed_generation.unwrap_or_default();
    match now.status.as_str() {
        "True" if was != Some("True") => vec![event(
            EventType::Normal,
            "Accepted",
            "Start",
            format!("serving scheduler name {scheduler:?} (generation {generation})"),
        )],
        "True" if current.observed_generation != desired.observed_generation => vec![event(
            EventType::Normal,
            "Reloaded",
            "Reload",
            format!("generation {generation} now serves scheduler name {scheduler:?}"),
        )],
        "False"
            if was != Some("False")
                || before.is_some_and(|c| c.reason != now.reason || c.message != now.message) =>
        {
            vec![event(
                EventType::Warning,
                "Rejected",
                "Validate",
                format!("{}: {}", now.reason, now.message),
            )]
        }
        _ => Vec::new(),
    }
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
    watcher(api, watcher::Config::default())
        .default_backoff()
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

/// A stream that yields once per change of `receiver`'s value (sent values count as
/// changes even when equal).
fn changes(receiver: watch::Receiver<bool>) -> BoxStream<'static, ()> {
    futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.changed().await.ok().map(|()| ((), receiver))
    })
    .boxed()
}

fn requests(receiver: mpsc::UnboundedReceiver<()>) -> BoxStream<'static, ()> {
    futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|()| ((), receiver))
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::EffectivePlugins;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

    #[test]
    fn default_scheduler_is_reserved_table() {
        struct Case {
            name: &'static str,
            metadata_name: &'static str,
            spec: Value,
            valid: bool,
            want: Option<&'static str>,
        }
        let cases = [
            Case {
                name: "named after it",
                metadata_name: "default-scheduler",
                spec: serde_json::json!({}),
                valid: true,
                want: Some("metadata.name: Forbidden: \"default-scheduler\""),
            },
            Case {
                name: "claimed in spec.schedulerName",
                metadata_name: "converted",
                spec: serde_json::json!({"schedulerName": "default-scheduler"}),
                valid: true,
                want: Some("spec.schedulerName: Forbidden: \"default-scheduler\""),
            },
            Case {
                name: "another name",
                metadata_name: "default-scheduler",
                spec: serde_json::json!({"schedulerName": "berth"}),
                valid: true,
                want: None,
            },
            Case {
                name: "an invalid profile keeps its own rejection",
                metadata_name: "default-scheduler",
                spec: serde_json::json!({}),
                valid: false,
                want: None,
            },
        ];
        for case in cases {
            let mut object = DynamicObject::new(
                case.metadata_name,
                &ApiResource::erase::<SchedulerProfile>(&()),
            );
            object.data = serde_json::json!({"spec": case.spec});
            let scheduler_name = case.spec["schedulerName"]
                .as_str()
                .unwrap_or(case.metadata_name);
            let mut verdict = Verdict {
                generation: 1,
                scheduler_name: scheduler_name.to_string(),
                outcome: if case.valid {
                    Ok(Valid {
                        resolved: ResolvedProfile::default(),
                        warnings: Vec::new(),
                    })
                } else {
                    Err(Rejection {
                        reason: reason::INVALID_PLUGIN_CONFIG,
                        message: "bad".into(),
                    })
                },
            };
            reserve_default_scheduler(&mut verdict, &object);
            match (case.want, &verdict.outcome) {
                (None, Ok(_)) => assert!(case.valid, "{}", case.name),
                (None, Err(rejection)) => {
                    assert!(!case.valid, "{}: {}", case.name, rejection.message);
                    assert_eq!(rejection.reason, reason::INVALID_PLUGIN_CONFIG);
                }
                (Some(prefix), Err(rejection)) => {
                    assert_eq!(
                        rejection.reason,
                        reason::RESERVED_SCHEDULER_NAME,
                        "{}",
                        case.name
                    );
                    assert!(
                        rejection.message.starts_with(prefix),
                        "{}: {}",
                        case.name,
                        rejection.message
                    );
                    assert!(
                        rejection.message.contains("--serve-default-scheduler")
                            && rejection.message.contains("serveDefaultScheduler"),
                        "{}: the message says how to opt in: {}",
                        case.name,
                        rejection.message
                    );
                }
                (Some(_), Ok(_)) => panic!("{}: accepted", case.name),
            }
        }
    }

    #[test]
    fn degraded_follows_the_plugins_reports() {
        let health = PluginHealth::new();
        let healthy = degraded_condition(Some(&health));
        assert_eq!(
            (healthy.status, healthy.reason),
            (false, reason::AS_EXPECTED)
        );
        assert!(!degraded_condition(None).status);

        health.set_degraded(
            "NetworkTraffic",
            reason::METRICS_UNAVAILABLE,
            "NetworkTraffic: Prometheus at http://127.0.0.1:9 is unavailable: connection refused",
        );
        health.set_degraded("Custom", "CacheCold", "Custom: cache is cold");
        let degraded = degraded_condition(Some(&health));
        assert!(degraded.status);
        // The first plugin by name decides the reason; every message is shown.
        assert_eq!(degraded.reason, reason::PLUGIN_DEGRADED);
        assert_eq!(
            degraded.message,
            "Custom: cache is cold; NetworkTraffic: Prometheus at http://127.0.0.1:9 is unavailable: connection refused"
        );

        health.set_healthy("Custom");
        let degraded = degraded_condition(Some(&health));
        assert_eq!(
            (degraded.status, degraded.reason),
            (true, reason::METRICS_UNAVAILABLE)
        );
        health.set_healthy("NetworkTraffic");
        assert!(!degraded_condition(Some(&health)).status);
    }

    fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            observed_generation: Some(1),
            last_transition_time: conditions::now(),
        }
    }

    fn status(generation: i64, accepted: Option<(&str, &str, &str)>) -> SchedulerProfileStatus {
        SchedulerProfileStatus {
            observed_generation: Some(generation),
            scheduler_name: Some("batch".into()),
            conditions: accepted
                .map(|(status, reason, message)| vec![condition(ACCEPTED, status, reason, message)])
                .unwrap_or_default(),
            plugins: None,
        }
    }

    #[test]
    fn events_follow_the_accepted_transitions() {
        let valid = Some(("True", reason::VALID, "ok"));
        let unknown = Some((
            "False",
            reason::UNKNOWN_PLUGIN,
            "spec.plugins.filter.enabled[0].name: Unsupported value: \"Foo\"",
        ));
        let invalid = Some((
            "False",
            reason::INVALID_PLUGIN_CONFIG,
            "spec.plugins.bind: Required value",
        ));
        let cases = [
            (
                "first acceptance",
                status(0, None),
                status(1, valid),
                vec!["Accepted"],
            ),
            ("unchanged", status(1, valid), status(1, valid), vec![]),
            (
                "new generation hot-swapped",
                status(1, valid),
                status(2, valid),
                vec!["Reloaded"],
            ),
            (
                "becomes rejected",
                status(1, valid),
                status(2, unknown),
                vec!["Rejected"],
            ),
            (
                "first seen rejected",
                status(0, None),
                status(1, unknown),
                vec!["Rejected"],
            ),
            (
                "rejected for a new reason",
                status(1, unknown),
                status(2, invalid),
                vec!["Rejected"],
            ),
            (
                "still rejected alike",
                status(1, unknown),
                status(2, unknown),
                vec![],
            ),
            (
                "fixed",
                status(2, invalid),
                status(3, valid),
                vec!["Accepted"],
            ),
        ];
        for (name, current, desired, want) in cases {
            let got: Vec<String> = transition_events(&current, &desired)
                .into_iter()
                .map(|event| event.reason)
                .collect();
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn plugin_name_errors_are_unknown_plugin_and_others_invalid_config() {
        let unknown = FieldError::not_supported(
            "spec.plugins.score.enabled[1].name",
            &Value::from("Nope"),
            &["NodeResourcesFit"],
        );
        let weight = FieldError::new(
            "spec.plugins.score.enabled[0].weight",
            0,
            "must be between 1 and 100",
        );
        let strategy = FieldError::not_supported(
            "spec.pluginConfig.nodeResourcesFit.scoringStrategy.type",
            &Value::from("Most"),
            &["MostAllocated"],
        );
        let both = rejection(&[weight.clone(), unknown]);
        assert_eq!(both.reason, reason::UNKNOWN_PLUGIN);
        assert!(
            both.message
                .contains("; spec.plugins.score.enabled[1].name: Unsupported value: \"Nope\""),
            "{}",
            both.message
        );
        assert_eq!(
            rejection(&[weight, strategy]).reason,
            reason::INVALID_PLUGIN_CONFIG
        );
    }

    #[test]
    fn the_status_patch_clears_what_the_status_leaves_out() {
        let status = SchedulerProfileStatus {
            observed_generation: Some(2),
            scheduler_name: Some("batch".into()),
            conditions: Vec::new(),
            plugins: Some(EffectivePlugins {
                bind: vec!["DefaultBinder".into()],
                ..Default::default()
            }),
        };
        let patch = status_patch(&status);
        assert_eq!(patch["status"]["conditions"], Value::Null);
        assert_eq!(
            patch["status"]["plugins"]["bind"],
            serde_json::json!(["DefaultBinder"])
        );
        assert!(
            patch["status"]["plugins"]
                .get("filter")
                .is_some_and(Value::is_null)
        );
        let rejected = SchedulerProfileStatus {
            plugins: None,
            ..status
        };
        assert!(
            status_patch(&rejected)["status"]
                .get("plugins")
                .is_some_and(Value::is_null)
        );
    }
}
