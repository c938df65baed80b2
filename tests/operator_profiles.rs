//! The SchedulerProfile controller against a real kube-apiserver 1.37 with etcd
//! (`crates/kube-cluster`, berth's CRDs installed): what a cluster operator
//! sees (status conditions, events, the request log) and what the scheduling loop receives
//! (Upsert and Remove commands), for valid, invalid, edited, duplicated and deleted
//! profiles, as leader and as follower.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use berth::api::{SchedulerProfile, SchedulerProfileStatus};
use berth::framework::{BindError, Binder, RuntimeClock};
use berth::operator::profiles::{self, ProfileContext};
use berth::operator::types::{LoopMessage, OperatorState};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::events::Reporter;
use kube_cluster::KubeCluster;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot, watch};

mod support;
use support::api;
use support::temp::TempDir;

const WAIT: Duration = Duration::from_secs(10);

struct NoBinder;

#[async_trait]
impl Binder for NoBinder {
    async fn bind(&self, _: &Pod, _: &str) -> Result<(), BindError> {
        Ok(())
    }
}

/// A real API server with berth's CRDs and the profile controller running against it.
struct Harness {
    cluster: KubeCluster,
    profiles: Api<SchedulerProfile>,
    events: Api<Event>,
    commands: mpsc::UnboundedReceiver<LoopMessage>,
    leader: watch::Sender<bool>,
    synced: watch::Sender<Vec<&'static str>>,
    serving: Arc<RwLock<BTreeMap<String, String>>>,
    /// Reconciles finished so far (through the metrics hook).
    reconciles: Arc<AtomicUsize>,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Harness {
    /// `None` after a loud skip where Go is missing (never on CI).
    async fn start(leader: bool, synced: bool) -> Option<Harness> {
        Harness::start_with_crds(leader, synced, &api::berth_crds()).await
    }

    async fn start_with_crds(leader: bool, synced: bool, crds: &Path) -> Option<Harness> {
        let cluster = support::kube::start_apiserver_or_skip(&support::kube::test_name()).await?;
        let client = cluster.admin_client().await.expect("an admin client");
        support::kube::install_crds_from(&client, crds).await;
        let (loop_tx, commands) = mpsc::unbounded_channel();
        let (leader_tx, leader_rx) = watch::channel(leader);
        let unlisted = if synced {
            vec![]
        } else {
            vec!["nodes", "pods"]
        };
        let (synced_tx, synced_rx) = watch::channel(unlisted);
        let serving = Arc::new(RwLock::new(BTreeMap::new()));
        let reconciles = Arc::new(AtomicUsize::new(0));
        let counter = reconciles.clone();
        let ctx = Arc::new(ProfileContext {
            client: client.clone(),
            registry: Arc::new(berth::plugins::default_registry()),
            loop_tx,
            state: OperatorState {
                leader: leader_rx,
                unlisted: synced_rx,
                serving: serving.clone(),
                workloads: Default::default(),
                pod_groups: Default::default(),
                volumes: Default::default(),
                disruption_budgets: Default::default(),
                device_resources: Default::default(),
            },
            binder: Arc::new(NoBinder),
            observer: None,
            parallelizer: Default::default(),
            clock: RuntimeClock::shared(),
            nominator: Default::default(),
            pod_group_states: Default::default(),
            legacy_workloads: Default::default(),
            serve_default_scheduler: false,
            reporter: Reporter {
                controller: "berth".into(),
                instance: Some("test".into()),
            },
            on_reconcile: Some(Arc::new(move |_, _| {
                counter.fetch_add(1, Ordering::SeqCst);
            })),
            on_condition: None,
        });
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(profiles::run(ctx, async move {
            let _ = stopped.await;
        }));
        Some(Harness {
            cluster,
            profiles: Api::all(client.clone()),
            events: Api::namespaced(client, "default"),
            commands,
            leader: leader_tx,
            synced: synced_tx,
            serving,
            reconciles,
            stop: Some(stop),
            task,
        })
    }

    async fn create(&self, name: &str, spec: Value) -> SchedulerProfile {
        let profile: SchedulerProfile = serde_json::from_value(json!({
            "apiVersion": "berth.dev/v1alpha1",
            "kind": "SchedulerProfile",
            "metadata": {"name": name},
            "spec": spec,
        }))
        .expect("a SchedulerProfile");
        self.profiles
            .create(&PostParams::default(), &profile)
            .await
            .expect("the API server accepts the profile")
    }

    /// The next command sent to the scheduling loop, as `Upsert(name)` / `Remove(name)`.
    async fn next_command(&mut self) -> String {
        match tokio::time::timeout(WAIT, self.commands.recv()).await {
            Ok(Some(LoopMessage::Profile(command))) => format!("{command:?}"),
            Ok(Some(other)) => panic!("unexpected loop message {other:?}"),
            Ok(None) => panic!("the controller dropped the loop channel"),
            Err(_) => panic!("no profile command within {WAIT:?}"),
        }
    }

    /// Commands sent so far and not yet read.
    fn pending_commands(&mut self) -> Vec<String> {
        let mut commands = Vec::new();
        while let Ok(message) = self.commands.try_recv() {
            commands.push(format!("{message:?}"));
        }
        commands
    }

    /// Polls the profile until `check` holds for its status; returns that status.
    async fn wait_status(
        &self,
        name: &str,
        what: &str,
        check: impl Fn(&SchedulerProfileStatus) -> bool,
    ) -> SchedulerProfileStatus {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let status = self
                .profiles
                .get_status(name)
                .await
                .ok()
                .and_then(|p| p.status)
                .unwrap_or_default();
            if check(&status) {
                return status;
            }
            if tokio::time::Instant::now() > deadline {
                panic!("profile {name}: {what} not reached within {WAIT:?}; status: {status:#?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Reasons of the events regarding profile `name`, oldest first.
    async fn event_reasons(&self, name: &str) -> Vec<String> {
        let mut events: Vec<Event> = self
            .events
            .list(&ListParams::default())
            .await
            .expect("events list")
            .items
            .into_iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
            .collect();
        events.sort_by(|a, b| a.event_time.cmp(&b.event_time));
        events.into_iter().filter_map(|e| e.reason).collect()
    }

    async fn wait_event(&self, name: &str, reason: &str) -> Vec<String> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let reasons = self.event_reasons(name).await;
            if reasons.iter().any(|r| r == reason) {
                return reasons;
            }
            if tokio::time::Instant::now() > deadline {
                panic!("profile {name}: no {reason} event within {WAIT:?}; events: {reasons:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Status patches of SchedulerProfiles in the request log.
    fn status_writes(&self) -> usize {
        support::kube::requests(self.cluster.audit_log())
            .iter()
            .filter(|r| {
                r.resource == "schedulerprofiles"
                    && r.subresource.as_deref() == Some("status")
                    && matches!(r.verb.as_str(), "patch" | "update")
            })
            .count()
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = tokio::time::timeout(WAIT, &mut self.task).await;
    }
}

fn condition<'a>(status: &'a SchedulerProfileStatus, type_: &str) -> Option<&'a Condition> {
    status.conditions.iter().find(|c| c.type_ == type_)
}

fn has(status: &SchedulerProfileStatus, type_: &str, value: &str, reason: &str) -> bool {
    condition(status, type_).is_some_and(|c| c.status == value && c.reason == reason)
}

fn running(status: &SchedulerProfileStatus) -> bool {
    has(status, "Accepted", "True", "Valid") && has(status, "Ready", "True", "Running")
}

#[tokio::test]
async fn a_valid_profile_is_started_and_reports_its_effective_plugins() {
    let Some(mut h) = Harness::start(true, true).await else {
        return;
    };
    h.create("batch", json!({})).await;

    assert_eq!(h.next_command().await, "Upsert(batch)");
    let status = h.wait_status("batch", "Accepted and Ready", running).await;
    assert!(
        has(&status, "Degraded", "False", "AsExpected"),
        "{status:#?}"
    );
    assert_eq!(status.observed_generation, Some(1));
    assert_eq!(status.scheduler_name.as_deref(), Some("batch"));
    assert!(
        status
            .conditions
            .iter()
            .all(|c| c.observed_generation == Some(1))
    );
    let plugins = status.plugins.expect("effective plugins in the status");
    assert_eq!(plugins.bind, ["DefaultBinder"]);
    assert_eq!(plugins.queue_sort, ["PrioritySort"]);
    assert!(
        plugins
            .score
            .iter()
            .any(|p| p.name == "TaintToleration" && p.weight == 3),
        "{:?}",
        plugins.score
    );
    assert_eq!(
        h.serving.read().unwrap().get("batch").map(String::as_str),
        Some("batch")
    );
    assert_eq!(h.wait_event("batch", "Accepted").await, ["Accepted"]);
    h.stop().await;
}

#[tokio::test]
async fn a_profile_failing_semantic_validation_is_rejected_with_the_field_path() {
    let Some(mut h) = Harness::start(true, true).await else {
        return;
    };
    // Passes the CRD schema; fails berth's "at least one Bind plugin".
    h.create(
        "nobind",
        json!({"plugins": {"bind": {"disabled": [{"name": "*"}]}}}),
    )
    .await;

    let status = h
        .wait_status("nobind", "Accepted=False", |s| {
            has(s, "Accepted", "False", "InvalidPluginConfig")
        })
        .await;
    let accepted = condition(&status, "Accepted").expect("Accepted");
    assert!(
        accepted.message.contains("spec.plugins.bind"),
        "{}",
        accepted.message
    );
    assert!(has(&status, "Ready", "False", "NotAccepted"), "{status:#?}");
    assert_eq!(status.plugins, None);
    assert_eq!(h.wait_event("nobind", "Rejected").await, ["Rejected"]);
    assert_eq!(h.pending_commands(), Vec::<String>::new());
    assert!(h.serving.read().unwrap().is_empty());
    h.stop().await;
}

#[tokio::test]
async fn a_plugin_this_binary_does_not_know_is_reported_as_unknown_plugin() {
    // The CRD of another berth build (an out-of-tree plugin registered there) lets the
    // API server store a plugin name this binary's registry does not have.
    let Some(mut h) = Harness::start_with_crds(true, true, foreign_plugin_crds().path()).await
    else {
        return;
    };
    h.create(
        "gpu",
        json!({"plugins": {"filter": {"enabled": [{"name": "GpuTopology"}]}}}),
    )
    .await;

    let status = h
        .wait_status("gpu", "Accepted=False", |s| {
            has(s, "Accepted", "False", "UnknownPlugin")
        })
        .await;
    let message = &condition(&status, "Accepted").expect("Accepted").message;
    assert!(
        message.contains("spec.plugins.filter.enabled[0].name") && message.contains("GpuTopology"),
        "{message}"
    );
    assert_eq!(h.wait_event("gpu", "Rejected").await, ["Rejected"]);
    assert_eq!(h.pending_commands(), Vec::<String>::new());
    h.stop().await;
}

/// berth's CRDs as another build (with out-of-tree plugin `GpuTopology`) generates them:
/// that name accepted in `spec.plugins.filter.enabled`. Written to a
/// fresh directory.
fn foreign_plugin_crds() -> TempDir {
    let dir = TempDir::new("operator-profiles");
    let source = api::berth_crds().join("schedulerprofiles.berth.dev.yaml");
    let text = std::fs::read_to_string(source).expect("the checked-in CRD");
    let mut crd: Value = serde_saphyr::from_str(&text).expect("the CRD parses");
    let name = crd
        .pointer_mut(
            "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/plugins\
             /properties/filter/properties/enabled/items/properties/name",
        )
        .and_then(Value::as_object_mut)
        .expect("the filter plugin name schema");
    // As that build's generator would write it: its registry's names, this one's plus
    // the out-of-tree plugin (keeping maxLength, which the real API server's CEL cost
    // estimate of the list's rules needs).
    name.get_mut("enum")
        .and_then(Value::as_array_mut)
        .expect("the plugin name enum")
        .push(json!("GpuTopology"));
    // JSON is YAML.
    dir.write("schedulerprofiles.yaml", &crd.to_string());
    dir
}

#[tokio::test]
async fn a_spec_edit_hot_swaps_the_instance() {
    let Some(mut h) = Harness::start(true, true).await else {
        return;
    };
    h.create("batch", json!({})).await;
    assert_eq!(h.next_command().await, "Upsert(batch)");
    h.wait_status("batch", "running", running).await;

    let edit = json!({"spec": {"pluginConfig": {"nodeResourcesFit": {
        "scoringStrategy": {"type": "MostAllocated",
                            "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}}}}});
    h.profiles
        .patch("batch", &PatchParams::default(), &Patch::Merge(&edit))
        .await
        .expect("the edit is valid");

    assert_eq!(h.next_command().await, "Upsert(batch)");
    let status = h
        .wait_status("batch", "observedGeneration 2", |s| {
            s.observed_generation == Some(2) && running(s)
        })
        .await;
    assert!(
        status
            .conditions
            .iter()
            .all(|c| c.observed_generation == Some(2))
    );
    assert_eq!(
        h.wait_event("batch", "Reloaded").await,
        ["Accepted", "Reloaded"]
    );
    assert_eq!(h.pending_commands(), Vec::<String>::new());
    h.stop().await;
}

#[tokio::test]
async fn the_older_profile_keeps_a_duplicated_scheduler_name_until_it_is_deleted() {
    let Some(mut h) = Harness::start(true, true).await else {
        return;
    };
    // Names in the opposite order of age, so a tie-break by name would pick the wrong one.
    h.create("zeta", json!({"schedulerName": "shared"})).await;
    assert_eq!(h.next_command().await, "Upsert(shared)");
    h.wait_status("zeta", "running", running).await;
    // creationTimestamp has whole seconds.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    h.create("alpha", json!({"schedulerName": "shared"})).await;

    let status = h
        .wait_status("alpha", "DuplicateSchedulerName", |s| {
            has(s, "Accepted", "False", "DuplicateSchedulerName")
        })
        .await;
    let message = &condition(&status, "Accepted").expect("Accepted").message;
    assert!(message.contains("\"zeta\""), "{message}");
    assert!(has(&status, "Ready", "False", "NotAccepted"));
    assert_eq!(h.pending_commands(), Vec::<String>::new());
    assert!(running(
        &h.wait_status("zeta", "still running", running).await
    ));

    h.profiles
        .delete("zeta", &DeleteParams::default())
        .await
        .expect("delete");
    assert_eq!(h.next_command().await, "Remove(shared)");
    assert_eq!(h.next_command().await, "Upsert(shared)");
    h.wait_status("alpha", "takes over", running).await;
    assert_eq!(
        h.serving.read().unwrap().get("shared").map(String::as_str),
        Some("alpha")
    );
    h.wait_event("alpha", "Accepted").await;
    h.stop().await;
}

#[tokio::test]
async fn deleting_a_profile_stops_its_instance() {
    let Some(mut h) = Harness::start(true, true).await else {
        return;
    };
    h.create("batch", json!({})).await;
    assert_eq!(h.next_command().await, "Upsert(batch)");
    h.profiles
        .delete("batch", &DeleteParams::default())
        .await
        .expect("delete");
    assert_eq!(h.next_command().await, "Remove(batch)");
    assert!(h.serving.read().unwrap().is_empty());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(h.pending_commands(), Vec::<String>::new());
    h.stop().await;
}

#[tokio::test]
async fn a_follower_keeps_instances_warm_but_writes_nothing() {
    let Some(mut h) = Harness::start(false, true).await else {
        return;
    };
    h.create("batch", json!({})).await;
    assert_eq!(h.next_command().await, "Upsert(batch)");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(h.status_writes(), 0);
    let status = h.profiles.get_status("batch").await.expect("get").status;
    assert!(status.unwrap_or_default().conditions.is_empty());
    assert!(h.event_reasons("batch").await.is_empty());

    // Gaining the lease: the status is written, without a second instance.
    h.leader.send(true).expect("the controller listens");
    h.wait_status("batch", "running", running).await;
    assert_eq!(h.status_writes(), 1);
    assert_eq!(h.pending_commands(), Vec::<String>::new());
    h.stop().await;
}

#[tokio::test]
async fn an_unchanged_status_is_not_patched_again() {
    let Some(mut h) = Harness::start(true, true).await else {
        return;
    };
    h.create("batch", json!({})).await;
    assert_eq!(h.next_command().await, "Upsert(batch)");
    let first = h.wait_status("batch", "running", running).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(h.status_writes(), 1);

    // A no-op resync of every profile, a second later (a new lastTransitionTime would
    // differ from the stored one).
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let reconciles = h.reconciles.load(Ordering::SeqCst);
    h.leader.send(true).expect("the controller listens");
    h.synced.send(vec![]).expect("the controller listens");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(h.reconciles.load(Ordering::SeqCst) > reconciles);
    assert_eq!(h.status_writes(), 1);
    let after = h.wait_status("batch", "running", running).await;
    assert_eq!(after, first);
    assert_eq!(h.pending_commands(), Vec::<String>::new());
    h.stop().await;
}

#[tokio::test]
async fn transition_times_move_only_for_the_condition_that_flips() {
    let Some(mut h) = Harness::start(true, false).await else {
        return;
    };
    h.create("batch", json!({})).await;
    assert_eq!(h.next_command().await, "Upsert(batch)");
    let before = h
        .wait_status("batch", "Ready=False", |s| {
            has(s, "Accepted", "True", "Valid") && has(s, "Ready", "False", "CachesNotSynced")
        })
        .await;
    // The message names what berth still waits for (the harness's unlisted kinds).
    assert_eq!(
        condition(&before, "Ready").map(|c| c.message.as_str()),
        Some("waiting for the first list of nodes, pods")
    );
    // metav1.Time has whole seconds: make a new transition time distinguishable.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    h.synced.send(vec![]).expect("the controller listens");
    let after = h.wait_status("batch", "Ready=True", running).await;

    let time = |s: &SchedulerProfileStatus, t: &str| {
        condition(s, t)
            .map(|c| c.last_transition_time.clone())
            .expect(t)
    };
    assert_eq!(time(&after, "Accepted"), time(&before, "Accepted"));
    assert_eq!(time(&after, "Degraded"), time(&before, "Degraded"));
    assert!(time(&after, "Ready") > time(&before, "Ready"));
    assert_eq!(h.status_writes(), 2);
    h.stop().await;
}

/// Issue 13, item 1: the profile status shows the PreScore resolution couples to a
/// score-only plugin, a PreScore kept from its Score is a warning in the Accepted
/// message, and disabling a coupled PreScore by name is a rejection naming both entries.
#[tokio::test]
async fn coupled_pre_points_show_in_the_status() {
    let Some(mut h) = Harness::start(true, true).await else {
        return;
    };
    let network = json!({"prometheusAddress": "http://prometheus.monitoring:9090"});
    h.create(
        "score-only",
        json!({
            "plugins": {"score": {"enabled": [{"name": "NetworkTraffic", "weight": 10}], "disabled": [{"name": "*"}]}},
            "pluginConfig": {"networkTraffic": network},
        }),
    )
    .await;
    assert_eq!(h.next_command().await, "Upsert(score-only)");
    let status = h
        .wait_status("score-only", "Accepted and Ready", running)
        .await;
    let plugins = status.plugins.expect("effective plugins in the status");
    assert_eq!(plugins.score.len(), 1, "{:?}", plugins.score);
    assert_eq!(
        plugins.pre_score.last().map(String::as_str),
        Some("NetworkTraffic")
    );

    h.create(
        "unscored",
        json!({
            "plugins": {
                "multiPoint": {"enabled": [{"name": "NetworkTraffic"}]},
                "score": {"enabled": [{"name": "NodeResourcesFit"}], "disabled": [{"name": "*"}]},
            },
            "pluginConfig": {"networkTraffic": network},
        }),
    )
    .await;
    let status = h
        .wait_status("unscored", "Accepted and Ready", running)
        .await;
    let accepted = condition(&status, "Accepted").expect("Accepted");
    assert!(
        accepted.message.contains(
            "warnings: spec.plugins.score.disabled[0].name: NetworkTraffic runs at PreScore but not at Score"
        ),
        "{}",
        accepted.message
    );

    h.create(
        "contradiction",
        json!({
            "plugins": {
                "preScore": {"disabled": [{"name": "NetworkTraffic"}]},
                "score": {"enabled": [{"name": "NetworkTraffic"}]},
            },
            "pluginConfig": {"networkTraffic": network},
        }),
    )
    .await;
    let status = h
        .wait_status("contradiction", "Accepted=False", |s| {
            has(s, "Accepted", "False", "InvalidPluginConfig")
        })
        .await;
    let accepted = condition(&status, "Accepted").expect("Accepted");
    assert!(
        accepted.message.starts_with(
            "spec.plugins.preScore.disabled[0].name: Invalid value: \"NetworkTraffic\""
        ) && accepted
            .message
            .contains("spec.plugins.score.enabled[0].name"),
        "{}",
        accepted.message
    );
    h.stop().await;
}
