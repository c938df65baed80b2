//! The I/O half of a reconcile, run by the leader only: the status patch (skipped when
//! nothing changed) and the events of condition transitions.

use super::*;

/// The I/O half of a reconcile: status patch and events, by the leader only.
pub(super) struct StatusWriter {
    pub(super) ctx: Arc<ProfileContext>,
    pub(super) api: Api<DynamicObject>,
    pub(super) recorder: Recorder,
    pub(super) memory: Arc<Mutex<Memory>>,
}

impl StatusWriter {
    pub(super) fn apply(&self, plan: Plan) -> BoxFuture<'static, Result<Action, ReconcileError>> {
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

pub(super) fn same_status(a: &SchedulerProfileStatus, b: &SchedulerProfileStatus) -> bool {
    serde_json::to_value(a).ok() == serde_json::to_value(b).ok()
}

/// A merge patch that makes the stored status equal to `status` whatever it was: fields
/// `status` leaves out are sent as `null` (a merge patch keeps what it does not name).
pub(super) fn status_patch(status: &SchedulerProfileStatus) -> Value {
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
pub(super) fn transition_events(
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
