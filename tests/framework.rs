//! Framework semantics, end to end through the scheduler core, with probe plugins whose
//! behaviour each test sets through plugin args (the same path real plugin args take).
//!
//! Each case asserts a rule of upstream's framework: what a status code means at each
//! extension point, Permit waiting, Unreserve order, CycleState flowing from the
//! scheduling cycle into the binding cycle.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use berth::api::{PluginRef, PluginSet, Plugins, SchedulerProfileSpec};
use berth::cluster::{NodeInfo, PodInfo, Snapshot};
use berth::framework::*;
use berth::scheduler::{AttemptReport, CycleOutput, Outcome, Scheduler, SchedulerOptions};
use berth::testing::{make_node, make_pod};
use k8s_openapi::api::core::v1::{Node, Pod};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Calls made by probe plugins, per test (keyed by `ProbeArgs::test`).
static LOG: Mutex<BTreeMap<String, Vec<String>>> = Mutex::new(BTreeMap::new());

fn log(test: &str, entry: String) {
    LOG.lock()
        .unwrap()
        .entry(test.to_string())
        .or_default()
        .push(entry);
}

fn calls(test: &str) -> Vec<String> {
    LOG.lock().unwrap().get(test).cloned().unwrap_or_default()
}

/// What a probe returns at each point: a status code name ("Success" when absent).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, rename_all = "camelCase")]
struct ProbeArgs {
    test: String,
    pre_filter: Option<String>,
    /// The nodes PreFilter's PreFilterResult keeps (all nodes when absent).
    pre_filter_nodes: Option<Vec<String>>,
    /// Nodes Filter rejects (Unschedulable).
    reject_nodes: Vec<String>,
    post_filter: Option<String>,
    pre_score: Option<String>,
    /// Raw score per node (0 when absent).
    scores: HashMap<String, i64>,
    reserve: Option<String>,
    permit: Option<String>,
    permit_timeout_seconds: u64,
    pre_bind: Option<String>,
    bind: Option<String>,
    /// What `rejections_expire` says.
    rejections_expire: bool,
}

impl PluginArgs for ProbeArgs {}

#[derive(Clone, Debug)]
struct ReservedOn(String);

fn status(code: &Option<String>, what: &str) -> Status {
    match code.as_deref().unwrap_or("Success") {
        "Success" => Status::success(),
        "Error" => Status::error(format!("{what} failed")),
        "Skip" => Status::skip(),
        "Wait" => Status::wait(),
        "Unschedulable" => Status::unschedulable(format!("{what} rejected")),
        // Rejects without a message, as Coscheduling's PostFilter does for a group it
        // leaves alone.
        "Quiet" => Status::unschedulable(""),
        "UnschedulableAndUnresolvable" => Status::unresolvable(format!("{what} rejected")),
        other => Status::error(format!("unknown code {other}")),
    }
}

macro_rules! probe {
    ($ty:ident) => {
        struct $ty(ProbeArgs);

        impl $ty {
            fn log(&self, point: &str) {
                log(&self.0.test, format!("{}.{point}", stringify!($ty)));
            }
        }

        impl Plugin for $ty {
            fn name(&self) -> &str {
                stringify!($ty)
            }
            fn rejections_expire(&self) -> bool {
                self.0.rejections_expire
            }
            fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
                Some(self)
            }
            fn as_filter(&self) -> Option<&dyn FilterPlugin> {
                Some(self)
            }
            fn as_post_filter(&self) -> Option<&dyn PostFilterPlugin> {
                Some(self)
            }
            fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
                Some(self)
            }
            fn as_score(&self) -> Option<&dyn ScorePlugin> {
                Some(self)
            }
            fn as_reserve(&self) -> Option<&dyn ReservePlugin> {
                Some(self)
            }
            fn as_permit(&self) -> Option<&dyn PermitPlugin> {
                Some(self)
            }
            fn as_pre_bind(&self) -> Option<&dyn PreBindPlugin> {
                Some(self)
            }
            fn as_bind(&self) -> Option<&dyn BindPlugin> {
                Some(self)
            }
        }

        impl PluginFactory for $ty {
            const NAME: &'static str = stringify!($ty);
            const POINTS: &'static [ExtensionPoint] = &[
                ExtensionPoint::PreFilter,
                ExtensionPoint::Filter,
                ExtensionPoint::PostFilter,
                ExtensionPoint::PreScore,
                ExtensionPoint::Score,
                ExtensionPoint::Reserve,
                ExtensionPoint::Permit,
                ExtensionPoint::PreBind,
                ExtensionPoint::Bind,
            ];
            type Args = ProbeArgs;
            fn build(args: ProbeArgs, _: &Handle) -> Result<Self, PluginError> {
                Ok($ty(args))
            }
        }

        #[async_trait]
        impl PreFilterPlugin for $ty {
            async fn pre_filter(
                &self,
                _: &mut CycleState,
                _: &PodInfo,
                _: &Snapshot,
            ) -> (Option<PreFilterResult>, Status) {
                self.log("PreFilter");
                let result = self
                    .0
                    .pre_filter_nodes
                    .as_ref()
                    .map(|nodes| PreFilterResult {
                        node_names: Some(nodes.iter().cloned().collect()),
                    });
                (result, status(&self.0.pre_filter, "PreFilter"))
            }
        }

        impl FilterPlugin for $ty {
            fn filter(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
                self.log(&format!("Filter({})", node.name()));
                if self.0.reject_nodes.iter().any(|n| n == node.name()) {
                    Status::unschedulable(format!("{} says no", stringify!($ty)))
                } else {
                    Status::success()
                }
            }
        }

        #[async_trait]
        impl PostFilterPlugin for $ty {
            async fn post_filter(
                &self,
                _: &dyn FilterRunner,
                _: &CycleState,
                _: &PodInfo,
                _: &Snapshot,
                _: &NodeToStatus,
            ) -> (Option<PostFilterResult>, Status) {
                self.log("PostFilter");
                (None, status(&self.0.post_filter, "PostFilter"))
            }
        }

        #[async_trait]
        impl PreScorePlugin for $ty {
            async fn pre_score(
                &self,
                _: &mut CycleState,
                _: &PodInfo,
                _: &[Arc<NodeInfo>],
            ) -> Status {
                self.log("PreScore");
                status(&self.0.pre_score, "PreScore")
            }
        }

        impl ScorePlugin for $ty {
            fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
                self.log("Score");
                Ok(self.0.scores.get(node.name()).copied().unwrap_or(0))
            }
        }

        #[async_trait]
        impl ReservePlugin for $ty {
            async fn reserve(&self, state: &mut CycleState, _: &PodInfo, node: &str) -> Status {
                self.log("Reserve");
                state.write(ReservedOn(node.to_string()));
                status(&self.0.reserve, "Reserve")
            }
            async fn unreserve(&self, _: &mut CycleState, _: &PodInfo, _: &str) {
                self.log("Unreserve");
            }
        }

        #[async_trait]
        impl PermitPlugin for $ty {
            async fn permit(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> (Status, Duration) {
                self.log("Permit");
                (
                    status(&self.0.permit, "Permit"),
                    Duration::from_secs(self.0.permit_timeout_seconds),
                )
            }
        }

        #[async_trait]
        impl PreBindPlugin for $ty {
            async fn pre_bind(&self, state: &mut CycleState, _: &PodInfo, _: &str) -> Status {
                let seen = state
                    .read::<ReservedOn>()
                    .map(|r| r.0.clone())
                    .unwrap_or_default();
                self.log(&format!("PreBind(state={seen})"));
                status(&self.0.pre_bind, "PreBind")
            }
        }

        #[async_trait]
        impl BindPlugin for $ty {
            async fn bind(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> Status {
                self.log("Bind");
                status(&self.0.bind, "Bind")
            }
        }
    };
}

probe!(Probe1);
probe!(Probe2);

/// A node with 4 cpu, 8Gi memory and 110 pod slots allocatable.
fn node(name: &str) -> Node {
    make_node()
        .name(name)
        .allocatable(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")])
        .obj()
}

/// A pod of profile `probe`, in `default`, whose uid is `uid-<name>`.
fn pod(name: &str) -> Pod {
    make_pod()
        .name(name)
        .namespace("default")
        .uid(&format!("uid-{name}"))
        .scheduler_name("probe")
        .obj()
}

fn registry() -> Registry {
    let mut registry = berth::plugins::default_registry();
    registry.register::<Probe1>().register::<Probe2>();
    registry
}

/// A scheduler with profile `probe`: PrioritySort, DefaultBinder-less (the probes bind),
/// and the probes at every point, in order Probe1, Probe2.
fn scheduler(
    test: &str,
    probe1: serde_json::Value,
    probe2: serde_json::Value,
    nodes: &[&str],
) -> (Scheduler, Arc<Framework>) {
    let mut p1 = probe1;
    let mut p2 = probe2;
    p1["test"] = test.into();
    p2["test"] = test.into();
    let spec = SchedulerProfileSpec {
        plugins: Some(Plugins {
            multi_point: Some(PluginSet {
                enabled: vec![PluginRef::named("Probe1"), PluginRef::named("Probe2")],
                disabled: vec![PluginRef::named("*")],
            }),
            queue_sort: Some(PluginSet {
                enabled: vec![PluginRef::named("PrioritySort")],
                disabled: vec![],
            }),
            ..Default::default()
        }),
        plugin_config: BTreeMap::from([("probe1".to_string(), p1), ("probe2".to_string(), p2)]),
        ..Default::default()
    };
    let registry = registry();
    let resolved = resolve(&spec, &registry).expect("valid probe profile");
    let mut scheduler = Scheduler::new(SchedulerOptions {
        seed: 1,
        record_diagnosis: true,
        parallelizer: Arc::new(Parallelizer::new(2).expect("worker threads start")),
        ..SchedulerOptions::default()
    });
    let handle = Handle::builder()
        .parallelizer(scheduler.parallelizer().clone())
        .clock(scheduler.clock().clone())
        .build();
    let framework =
        Arc::new(Framework::new("probe", resolved, &registry, handle).expect("plugins build"));
    scheduler
        .add_profile("probe", framework.clone())
        .expect("profile added");
    for n in nodes {
        scheduler.on_node_add(node(n)).expect("node added");
    }
    scheduler.on_pod_add(pod("p")).expect("pod added");
    (scheduler, framework)
}

/// Runs one scheduling cycle and, if it reaches binding, the binding cycle.
async fn attempt(scheduler: &mut Scheduler) -> AttemptReport {
    match scheduler.schedule_one().await.expect("a pod is queued") {
        CycleOutput::Done(report) => report,
        CycleOutput::PodGroup(report) => panic!("no pod group here: {report:?}"),
        CycleOutput::Binding(cycle) => {
            let result = cycle.run().await;
            scheduler.complete_binding(result)
        }
    }
}

fn has(calls: &[String], prefix: &str) -> bool {
    calls.iter().any(|c| c.starts_with(prefix))
}

#[tokio::test]
async fn prefilter_error_aborts_the_cycle() {
    let (mut s, _) = scheduler(
        "pf-error",
        serde_json::json!({"preFilter": "Error"}),
        serde_json::json!({}),
        &["n1", "n2"],
    );
    let report = attempt(&mut s).await;
    match &report.outcome {
        Outcome::Error { message } => assert!(message.contains("PreFilter failed"), "{message}"),
        other => panic!("expected an error, got {other:?}"),
    }
    let calls = calls("pf-error");
    assert!(
        !has(&calls, "Probe2.PreFilter"),
        "PreFilter stops at the first error: {calls:?}"
    );
    assert!(
        !has(&calls, "Probe1.Filter"),
        "no Filter after a PreFilter error: {calls:?}"
    );
}

#[tokio::test]
async fn filter_unschedulable_excludes_only_that_node() {
    let (mut s, _) = scheduler(
        "filter",
        serde_json::json!({"rejectNodes": ["n1", "n3"]}),
        serde_json::json!({}),
        &["n1", "n2", "n3"],
    );
    let report = attempt(&mut s).await;
    assert_eq!(report.outcome, Outcome::Scheduled { node: "n2".into() });
    let diagnosis = report.diagnosis.expect("recorded");
    let infeasible: Vec<&str> = diagnosis
        .filtered
        .iter()
        .filter(|(_, s)| !s.is_success())
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(infeasible.len(), 2);
    assert!(infeasible.contains(&"n1") && infeasible.contains(&"n3"));
}

/// A pod rejected by a plugin whose rejections expire with time goes to backoffQ (it
/// has a backoff expiry); rejected by any other plugin, it waits in the unschedulable
/// set for a cluster event (no expiry).
#[tokio::test(start_paused = true)]
async fn a_rejection_that_expires_with_time_is_retried_after_backoff() {
    for (expires, backing_off) in [(true, true), (false, false)] {
        let (mut s, _) = scheduler(
            &format!("rejections-expire-{expires}"),
            serde_json::json!({"rejectNodes": ["n1"], "rejectionsExpire": expires}),
            serde_json::json!({}),
            &["n1"],
        );
        let report = attempt(&mut s).await;
        assert!(
            matches!(report.outcome, Outcome::Unschedulable { .. }),
            "{:?}",
            report.outcome
        );
        assert_eq!(
            s.next_backoff_expiry().is_some(),
            backing_off,
            "rejections_expire = {expires}"
        );
    }
}

#[tokio::test]
async fn all_nodes_rejected_gives_the_upstream_message() {
    let (mut s, _) = scheduler(
        "all-rejected",
        serde_json::json!({"rejectNodes": ["n1", "n2"]}),
        serde_json::json!({}),
        &["n1", "n2"],
    );
    let report = attempt(&mut s).await;
    assert_eq!(
        report.outcome,
        Outcome::Unschedulable {
            message: "0/2 nodes are available: 2 Probe1 says no.".into()
        }
    );
}

/// upstream's RunPostFilterPlugins: an Unschedulable plugin lets the next one try and
/// adds its reasons; Success, UnschedulableAndUnresolvable and Error end PostFilter, and
/// an error's message is passed on as it is.
#[tokio::test]
async fn postfilter_plugins_run_until_one_decides() {
    let cases = [
        (
            "Unschedulable",
            true,
            " PostFilter rejected, PostFilter rejected",
        ),
        (
            "UnschedulableAndUnresolvable",
            false,
            " PostFilter rejected",
        ),
        ("Error", false, " PostFilter failed"),
        ("Success", false, ""),
    ];
    for (first, second_runs, suffix) in cases {
        let test = format!("post-filter-{first}");
        let (mut s, _) = scheduler(
            &test,
            serde_json::json!({"rejectNodes": ["n1"], "postFilter": first}),
            serde_json::json!({"postFilter": "Unschedulable"}),
            &["n1"],
        );
        let report = attempt(&mut s).await;
        assert_eq!(
            report.outcome,
            Outcome::Unschedulable {
                message: format!("0/1 nodes are available: 1 Probe1 says no.{suffix}")
            },
            "{first}"
        );
        assert_eq!(
            has(&calls(&test), "Probe2.PostFilter"),
            second_runs,
            "{first}"
        );
    }
}

/// Each node of the attempt's diagnosis with its reasons, in diagnosis order.
fn verdicts(report: &AttemptReport) -> Vec<(String, Vec<String>)> {
    let diagnosis = report.diagnosis.as_ref().expect("diagnosis recorded");
    diagnosis
        .filtered
        .iter()
        .map(|(node, status)| (node.clone(), status.reasons().to_vec()))
        .collect()
}

fn verdict(node: &str, reason: &str) -> (String, Vec<String>) {
    (node.to_string(), vec![reason.to_string()])
}

/// Upstream `TestSchedulerSchedulePod` "test prefilter plugin returning Unschedulable
/// status": every node shares the PreFilter's verdict, so every node is explained.
#[tokio::test]
async fn a_prefilter_rejection_explains_every_node() {
    let (mut s, _) = scheduler(
        "pf-rejects-all",
        serde_json::json!({"preFilter": "UnschedulableAndUnresolvable"}),
        serde_json::json!({}),
        &["n1", "n2"],
    );
    let report = attempt(&mut s).await;
    assert_eq!(
        report.outcome,
        Outcome::Unschedulable {
            message: "0/2 nodes are available: PreFilter rejected.".into()
        }
    );
    assert_eq!(
        verdicts(&report),
        vec![
            verdict("n1", "PreFilter rejected"),
            verdict("n2", "PreFilter rejected")
        ]
    );
}

/// Upstream "test prefilter plugin returning non-intersecting nodes": the merged
/// PreFilterResult is empty, the message names the narrowing plugins sorted, and every
/// node carries it.
#[tokio::test]
async fn non_intersecting_prefilter_results_name_both_plugins_on_every_node() {
    let (mut s, _) = scheduler(
        "pf-disjoint",
        serde_json::json!({"preFilterNodes": ["n2"]}),
        serde_json::json!({"preFilterNodes": ["n1"]}),
        &["n1", "n2", "n3"],
    );
    let report = attempt(&mut s).await;
    let reason = "node(s) didn't satisfy plugin(s) [Probe1 Probe2] simultaneously";
    assert_eq!(
        report.outcome,
        Outcome::Unschedulable {
            message: format!("0/3 nodes are available: {reason}.")
        }
    );
    assert_eq!(
        verdicts(&report),
        vec![
            verdict("n1", reason),
            verdict("n2", reason),
            verdict("n3", reason)
        ]
    );
}

/// Upstream "test prefilter plugin returning empty node set": one narrowing plugin is
/// named alone.
#[tokio::test]
async fn an_empty_prefilter_result_names_its_plugin() {
    let (mut s, _) = scheduler(
        "pf-empty",
        serde_json::json!({}),
        serde_json::json!({"preFilterNodes": []}),
        &["n1"],
    );
    let report = attempt(&mut s).await;
    assert_eq!(
        report.outcome,
        Outcome::Unschedulable {
            message: "0/1 nodes are available: node(s) didn't satisfy plugin Probe2.".into()
        }
    );
    assert_eq!(
        verdicts(&report),
        vec![verdict("n1", "node(s) didn't satisfy plugin Probe2")]
    );
}

/// Upstream "test some nodes are filtered out by prefilter plugin and other are filtered
/// out by filter plugin": a node left out of the PreFilterResult is explained with the
/// plugins that narrowed (only those, not every PreFilter plugin that ran), the others
/// with their Filter verdict.
#[tokio::test]
async fn nodes_left_out_by_a_prefilter_result_name_only_the_narrowing_plugin() {
    let (mut s, _) = scheduler(
        "pf-narrowed",
        serde_json::json!({"preFilterNodes": ["n2"]}),
        serde_json::json!({"rejectNodes": ["n2"]}),
        &["n1", "n2"],
    );
    let report = attempt(&mut s).await;
    assert_eq!(
        report.outcome,
        Outcome::Unschedulable {
            message: "0/2 nodes are available: 1 Probe2 says no, 1 node(s) didn't satisfy plugin(s) [Probe1].".into()
        }
    );
    assert_eq!(
        verdicts(&report),
        vec![
            verdict("n1", "node(s) didn't satisfy plugin(s) [Probe1]"),
            verdict("n2", "Probe2 says no")
        ]
    );
}

#[tokio::test]
async fn prefilter_skip_skips_only_the_coupled_filter() {
    let (mut s, _) = scheduler(
        "pf-skip",
        serde_json::json!({"preFilter": "Skip", "rejectNodes": ["n1", "n2", "n3"]}),
        serde_json::json!({"rejectNodes": ["n1"]}),
        &["n1", "n2", "n3"],
    );
    let report = attempt(&mut s).await;
    assert!(
        matches!(report.outcome, Outcome::Scheduled { ref node } if node != "n1"),
        "{:?}",
        report.outcome
    );
    let calls = calls("pf-skip");
    assert!(!has(&calls, "Probe1.Filter"), "{calls:?}");
    assert!(has(&calls, "Probe2.Filter"), "{calls:?}");
}

#[tokio::test]
async fn prescore_skip_skips_the_coupled_score() {
    // A raw score of 1000 without NormalizeScore is out of range: calling Score would fail
    // the cycle, so success proves Score was skipped.
    let scores = serde_json::json!({"n1": 1000, "n2": 1000});
    let (mut s, _) = scheduler(
        "ps-skip",
        serde_json::json!({"preScore": "Skip", "scores": scores}),
        serde_json::json!({}),
        &["n1", "n2"],
    );
    let report = attempt(&mut s).await;
    assert!(
        matches!(report.outcome, Outcome::Scheduled { .. }),
        "{:?}",
        report.outcome
    );
    assert!(!has(&calls("ps-skip"), "Probe1.Score"));

    let (mut s, _) = scheduler(
        "ps-noskip",
        serde_json::json!({"scores": scores}),
        serde_json::json!({}),
        &["n1", "n2"],
    );
    let report = attempt(&mut s).await;
    match report.outcome {
        Outcome::Error { message } => assert!(message.contains("invalid score 1000"), "{message}"),
        other => panic!("an out-of-range score must fail the cycle, got {other:?}"),
    }
}

#[tokio::test]
async fn scores_pick_the_best_node() {
    let (mut s, _) = scheduler(
        "score",
        serde_json::json!({"scores": {"n1": 10, "n2": 90, "n3": 50}}),
        serde_json::json!({"scores": {"n1": 60, "n2": 0, "n3": 30}}),
        &["n1", "n2", "n3"],
    );
    // Totals (weight 1 each): n1 70, n2 90, n3 80.
    assert_eq!(
        attempt(&mut s).await.outcome,
        Outcome::Scheduled { node: "n2".into() }
    );
}

#[tokio::test]
async fn bind_skip_falls_through_to_the_next_binder() {
    let (mut s, _) = scheduler(
        "bind-skip",
        serde_json::json!({"bind": "Skip"}),
        serde_json::json!({}),
        &["n1"],
    );
    let report = attempt(&mut s).await;
    assert_eq!(report.outcome, Outcome::Scheduled { node: "n1".into() });
    let calls = calls("bind-skip");
    let binds: Vec<&String> = calls.iter().filter(|c| c.ends_with(".Bind")).collect();
    assert_eq!(binds, ["Probe1.Bind", "Probe2.Bind"]);
}

#[tokio::test]
async fn unreserve_runs_in_reverse_order_after_a_prebind_failure() {
    let (mut s, _) = scheduler(
        "prebind-fail",
        serde_json::json!({}),
        serde_json::json!({"preBind": "Error"}),
        &["n1"],
    );
    let report = attempt(&mut s).await;
    assert!(
        matches!(report.outcome, Outcome::Error { .. }),
        "{:?}",
        report.outcome
    );
    let calls = calls("prebind-fail");
    let reserve: Vec<&str> = calls
        .iter()
        .map(String::as_str)
        .filter(|c| c.contains("reserve") || c.contains("Reserve"))
        .collect();
    assert_eq!(
        reserve,
        [
            "Probe1.Reserve",
            "Probe2.Reserve",
            "Probe2.Unreserve",
            "Probe1.Unreserve"
        ]
    );
    assert!(
        !has(&calls, "Probe1.Bind"),
        "no Bind after a PreBind failure: {calls:?}"
    );
    assert!(
        s.cache().get_pod("uid-p").is_none(),
        "the assumed pod is forgotten"
    );
}

#[tokio::test]
async fn cycle_state_written_at_reserve_is_read_at_prebind() {
    let (mut s, _) = scheduler(
        "state",
        serde_json::json!({}),
        serde_json::json!({}),
        &["n1"],
    );
    attempt(&mut s).await;
    assert!(
        calls("state").contains(&"Probe1.PreBind(state=n1)".to_string()),
        "{:?}",
        calls("state")
    );
}

#[tokio::test(start_paused = true)]
async fn permit_wait_then_allow() {
    let (mut s, framework) = scheduler(
        "permit-allow",
        serde_json::json!({"permit": "Wait", "permitTimeoutSeconds": 30}),
        serde_json::json!({}),
        &["n1"],
    );
    let Some(CycleOutput::Binding(cycle)) = s.schedule_one().await else {
        panic!("expected a binding cycle")
    };
    assert!(cycle.is_waiting());
    let binding = tokio::spawn(cycle.run());
    tokio::time::sleep(Duration::from_secs(5)).await;
    let waiting = framework
        .handle()
        .waiting_pods
        .get("uid-p")
        .expect("pod waits at Permit");
    assert_eq!(waiting.pending_plugins(), ["Probe1"]);
    waiting.allow("Probe1");
    let report = s.complete_binding(binding.await.unwrap());
    assert_eq!(report.outcome, Outcome::Scheduled { node: "n1".into() });
}

#[tokio::test(start_paused = true)]
async fn permit_wait_then_reject() {
    let (mut s, framework) = scheduler(
        "permit-reject",
        serde_json::json!({"permit": "Wait", "permitTimeoutSeconds": 30}),
        serde_json::json!({}),
        &["n1"],
    );
    let Some(CycleOutput::Binding(cycle)) = s.schedule_one().await else {
        panic!("expected a binding cycle")
    };
    let binding = tokio::spawn(cycle.run());
    tokio::time::sleep(Duration::from_secs(1)).await;
    framework
        .handle()
        .waiting_pods
        .get("uid-p")
        .expect("waiting")
        .reject("Probe1", "group rejected");
    let report = s.complete_binding(binding.await.unwrap());
    assert_eq!(
        report.outcome,
        Outcome::Unschedulable {
            message: "0/1 nodes are available: 1 group rejected.".into()
        }
    );
    assert!(has(&calls("permit-reject"), "Probe1.Unreserve"));
}

#[tokio::test(start_paused = true)]
async fn permit_wait_times_out() {
    let (mut s, _) = scheduler(
        "permit-timeout",
        serde_json::json!({"permit": "Wait", "permitTimeoutSeconds": 10}),
        serde_json::json!({}),
        &["n1"],
    );
    let Some(CycleOutput::Binding(cycle)) = s.schedule_one().await else {
        panic!("expected a binding cycle")
    };
    let report = s.complete_binding(cycle.run().await);
    assert_eq!(
        report.outcome,
        Outcome::Unschedulable {
            message: "0/1 nodes are available: 1 rejected due to timeout after waiting 10s at plugin Probe1.".into()
        }
    );
}

#[tokio::test]
async fn permit_reject_unreserves_at_once() {
    let (mut s, _) = scheduler(
        "permit-no",
        serde_json::json!({"permit": "Unschedulable"}),
        serde_json::json!({}),
        &["n1"],
    );
    let report = attempt(&mut s).await;
    assert_eq!(
        report.outcome,
        Outcome::Unschedulable {
            message: "0/1 nodes are available: 1 Permit rejected.".into()
        }
    );
    let calls = calls("permit-no");
    assert!(
        has(&calls, "Probe2.Unreserve") && has(&calls, "Probe1.Unreserve"),
        "{calls:?}"
    );
    assert!(
        !has(&calls, "Probe2.Permit"),
        "Permit stops at the first rejection: {calls:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn hot_swap_keeps_the_queue_and_uses_the_new_framework() {
    // The first framework rejects every node; the pod waits unschedulable. Swapping in a
    // framework that accepts n2 keeps the pod queued (it is not lost), and the next node
    // event lets the new framework place it.
    let (mut s, _) = scheduler(
        "swap-old",
        serde_json::json!({"rejectNodes": ["n1", "n2"]}),
        serde_json::json!({}),
        &["n1", "n2"],
    );
    let report = attempt(&mut s).await;
    assert!(
        matches!(report.outcome, Outcome::Unschedulable { .. }),
        "{:?}",
        report.outcome
    );

    let (_, new_framework) = scheduler(
        "swap-new",
        serde_json::json!({"rejectNodes": ["n1"]}),
        serde_json::json!({}),
        &[],
    );
    s.add_profile("probe", new_framework).expect("hot swap");
    assert_eq!(
        s.profiles().len(),
        1,
        "a swap replaces the instance, it does not add one"
    );
    assert_eq!(
        s.profiles()[0].queue.pending_counts().unschedulable,
        1,
        "the pod survives the swap"
    );

    s.on_node_add(node("n3")).expect("node added");
    // The node event moves the pod to backoffQ (1 s after its first failure).
    tokio::time::sleep(Duration::from_secs(2)).await;
    s.flush_queues(s.clock().now(), false);
    let report = attempt(&mut s).await;
    assert!(
        matches!(report.outcome, Outcome::Scheduled { ref node } if node != "n1"),
        "{:?}",
        report.outcome
    );
    assert!(
        has(&calls("swap-new"), "Probe1.Filter"),
        "the new framework ran"
    );
}

#[tokio::test]
async fn removing_a_profile_stops_scheduling_its_pods() {
    let (mut s, _) = scheduler(
        "remove",
        serde_json::json!({}),
        serde_json::json!({}),
        &["n1"],
    );
    assert!(s.remove_profile("probe"));
    assert!(
        s.schedule_one().await.is_none(),
        "no profile, no scheduling"
    );
    assert!(!s.serves("probe"));
}
