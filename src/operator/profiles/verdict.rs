//! What a profile object is worth: admission as the API server does it, berth's semantic
//! checks, the reservation of `default-scheduler`, and the Accepted and Degraded
//! conditions that say so.

use super::*;

/// Validates one profile object (admission as the API server does it, then berth's
/// semantic checks).
pub(super) fn validate(
    validator: &ProfileValidator<'_>,
    object: &DynamicObject,
    id: &Identity,
) -> Verdict {
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
pub(super) fn reserve_default_scheduler(verdict: &mut Verdict, object: &DynamicObject) {
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
pub(super) fn rejection(errors: &[FieldError]) -> Rejection {
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

pub(super) fn join_errors(errors: impl Iterator<Item = String>) -> String {
    errors.collect::<Vec<_>>().join("; ")
}

pub(super) fn plugin_error_message(error: &PluginError) -> String {
    match error {
        PluginError::InvalidArgs { plugin, errors } => format!(
            "invalid args for plugin {plugin}: {}",
            join_errors(errors.iter().map(ToString::to_string))
        ),
        PluginError::Init { .. } => error.to_string(),
    }
}

pub(super) fn accepted_condition(
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
pub(super) fn degraded_condition(health: Option<&PluginHealth>) -> DesiredCondition {
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
pub(super) fn current_status(
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
