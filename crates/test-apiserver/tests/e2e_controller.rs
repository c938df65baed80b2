//! A kube-runtime `Controller` over berth's SchedulerProfile reconciles objects created
//! through the test API server: it patches their status subresource, and generation /
//! observedGeneration behave as on a real server (status writes and metadata changes do
//! not bump generation; spec changes do).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use berth::api::{SchedulerProfile, SchedulerProfileSpec};
use common::*;
use futures::StreamExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use serde_json::json;

#[derive(Debug, thiserror::Error)]
#[error(transparent)]
struct ReconcileError(#[from] kube::Error);

struct Context {
    client: Client,
    reconciles: AtomicUsize,
}

/// Reports the profile as accepted for the generation it saw, like berth's operator.
async fn reconcile(
    profile: Arc<SchedulerProfile>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    ctx.reconciles.fetch_add(1, Ordering::SeqCst);
    let generation = profile.metadata.generation;
    let already = profile
        .status
        .as_ref()
        .is_some_and(|s| s.observed_generation == generation);
    if !already {
        let api: Api<SchedulerProfile> = Api::all(ctx.client.clone());
        let status = json!({
            "status": {
                "observedGeneration": generation,
                "schedulerName": profile.scheduler_name(),
                "conditions": [{
                    "type": "Accepted",
                    "status": "True",
                    "reason": "Valid",
                    "message": "the profile is valid",
                    "lastTransitionTime": "2025-01-01T00:00:00Z",
                    "observedGeneration": generation,
                }],
            }
        });
        api.patch_status(
            &profile.name_any(),
            &PatchParams::default(),
            &Patch::Merge(status),
        )
        .await?;
    }
    Ok(Action::await_change())
}

fn error_policy(_: Arc<SchedulerProfile>, error: &ReconcileError, _: Arc<Context>) -> Action {
    eprintln!("reconcile failed (retrying): {error}");
    Action::requeue(Duration::from_millis(100))
}

fn profile(name: &str, spec: SchedulerProfileSpec) -> SchedulerProfile {
    SchedulerProfile::new(name, spec)
}

/// Waits until the profile's status reports `generation`, returning the profile.
async fn observed(api: &Api<SchedulerProfile>, name: &str, generation: i64) -> SchedulerProfile {
    eventually(
        &format!("{name}'s status.observedGeneration becomes {generation}"),
        || async {
            let p = api.get(name).await.map_err(|e| e.to_string())?;
            let seen = p.status.as_ref().and_then(|s| s.observed_generation);
            if seen == Some(generation) {
                Ok(p)
            } else {
                Err(format!(
                    "generation {:?}, status {:?}",
                    p.metadata.generation, p.status
                ))
            }
        },
    )
    .await
}

#[tokio::test]
async fn controller_reconciles_scheduler_profiles() {
    let server = start_with_crds().await;
    let client = server.client().await;
    let api: Api<SchedulerProfile> = Api::all(client.clone());

    let ctx = Arc::new(Context {
        client: client.clone(),
        reconciles: AtomicUsize::new(0),
    });
    let controller = Controller::new(api.clone(), watcher::Config::default())
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|_| std::future::ready(()));
    let controller = tokio::spawn(controller);

    // Created before and after the controller starts: both are reconciled.
    let pp = PostParams::default();
    let created = api
        .create(&pp, &profile("batch", SchedulerProfileSpec::default()))
        .await
        .expect("create batch");
    assert_eq!(created.metadata.generation, Some(1), "{created:?}");
    assert!(
        created.status.is_none(),
        "a new object has no status: {created:?}"
    );
    let spec = SchedulerProfileSpec {
        scheduler_name: Some("gpu-scheduler".into()),
        percentage_of_nodes_to_score: Some(50),
        ..Default::default()
    };
    api.create(&pp, &profile("gpu", spec))
        .await
        .expect("create gpu");

    let batch = observed(&api, "batch", 1).await;
    let gpu = observed(&api, "gpu", 1).await;
    // The status patch did not bump the generation.
    assert_eq!(batch.metadata.generation, Some(1));
    assert_eq!(gpu.metadata.generation, Some(1));
    let status = gpu.status.clone().expect("status");
    assert_eq!(status.scheduler_name.as_deref(), Some("gpu-scheduler"));
    assert_eq!(status.conditions.len(), 1);
    assert_eq!(status.conditions[0].type_, "Accepted");
    assert!(
        gpu.resource_version() != Some(String::new()),
        "a resourceVersion is set"
    );

    // A metadata-only change leaves the generation alone.
    let labelled = api
        .patch(
            "gpu",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"team": "ml"}}})),
        )
        .await
        .expect("label gpu");
    assert_eq!(labelled.metadata.generation, Some(1));

    // A spec change bumps it, and the controller catches up.
    let changed = api
        .patch(
            "gpu",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"percentageOfNodesToScore": 70}})),
        )
        .await
        .expect("change gpu's spec");
    assert_eq!(changed.metadata.generation, Some(2));
    assert_eq!(
        changed.status.as_ref().and_then(|s| s.observed_generation),
        Some(1),
        "the spec change keeps the old status until the controller writes a new one"
    );
    let gpu = observed(&api, "gpu", 2).await;
    assert_eq!(gpu.metadata.generation, Some(2));
    assert_eq!(gpu.spec.percentage_of_nodes_to_score, Some(70));

    // A replace of the whole object with a different spec bumps it too.
    let mut replaced = gpu.clone();
    replaced.spec.pod_initial_backoff_seconds = Some(2);
    let replaced = api
        .replace("gpu", &pp, &replaced)
        .await
        .expect("replace gpu");
    assert_eq!(replaced.metadata.generation, Some(3));
    observed(&api, "gpu", 3).await;

    assert!(ctx.reconciles.load(Ordering::SeqCst) >= 4);
    api.delete("batch", &DeleteParams::default())
        .await
        .expect("delete batch");
    controller.abort();
    server.shutdown().await;
}

#[tokio::test]
async fn status_and_main_resource_ignore_each_others_fields() {
    let server = start_with_crds().await;
    let client = server.client().await;
    let api: Api<SchedulerProfile> = Api::all(client.clone());
    let pp = PostParams::default();

    // Status on create is dropped: the main resource ignores status.
    let mut with_status = profile("p", SchedulerProfileSpec::default());
    with_status.status = Some(berth::api::SchedulerProfileStatus {
        scheduler_name: Some("from-create".into()),
        ..Default::default()
    });
    let created = api.create(&pp, &with_status).await.expect("create");
    assert!(
        created.status.is_none(),
        "status given on create must be dropped: {:?}",
        created.status
    );

    // The status subresource writes status, ignores spec, and keeps the generation.
    let after_status = api
        .patch_status(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({
                "spec": {"percentageOfNodesToScore": 42},
                "status": {"schedulerName": "from-status", "observedGeneration": 1},
            })),
        )
        .await
        .expect("patch status");
    assert_eq!(after_status.spec.percentage_of_nodes_to_score, None);
    assert_eq!(
        after_status
            .status
            .as_ref()
            .and_then(|s| s.scheduler_name.as_deref()),
        Some("from-status")
    );
    assert_eq!(after_status.metadata.generation, Some(1));

    // The main resource writes spec, ignores status, and bumps the generation.
    let after_main = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({
                "spec": {"percentageOfNodesToScore": 42},
                "status": {"schedulerName": "from-main"},
            })),
        )
        .await
        .expect("patch main");
    assert_eq!(after_main.spec.percentage_of_nodes_to_score, Some(42));
    assert_eq!(
        after_main
            .status
            .as_ref()
            .and_then(|s| s.scheduler_name.as_deref()),
        Some("from-status")
    );
    assert_eq!(after_main.metadata.generation, Some(2));

    // replace_status with a stale resourceVersion conflicts, like any update.
    let mut stale = after_status.clone();
    stale.status.as_mut().expect("status").scheduler_name = Some("stale".into());
    assert_api_error(
        "replace_status from a stale object",
        api.replace_status("p", &pp, &stale).await,
        409,
        "Conflict",
    );
    let fresh = api.get_status("p").await.expect("get status");
    assert_eq!(
        fresh
            .status
            .as_ref()
            .and_then(|s| s.scheduler_name.as_deref()),
        Some("from-status")
    );
    server.shutdown().await;
}
