//! Upstream's `batch_test.go` tables (TestBatchBasic, TestBatchRescore,
//! TestBatchRescoreChain), with test plugins that behave as upstream's: `batchTest`
//! holds one "blocking" pod per node, `configurableScore` scores every node with the
//! pod's `score` label and fails where the pod's labels say, and NormalizeScore checks
//! that PreScore saw the node.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Node, Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;
use crate::api::{PluginRef, PluginSet, Plugins, SchedulerProfileSpec};
use crate::cluster::{NodeInfo, PodInfo, Snapshot};
use crate::framework::{
    CycleState, FilterPlugin, Framework, Handle, NoArgs, PluginError, PreScorePlugin,
    ScoreExtensions, ScorePlugin, Signature, Status, resolve,
};
use crate::testing::executor::complete;

/// Upstream's `batchTest`: a node holds at most one pod whose uid starts with `b`.
struct BatchTest;

crate::plugin! {
    BatchTest {
        name: "batchTest",
        points: [Filter],
    }

    impl PluginFactory {
        type Args = NoArgs;

        fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
            Ok(BatchTest)
        }
    }
}

fn blocking(pod: &Pod) -> bool {
    pod.metadata
        .uid
        .as_deref()
        .is_some_and(|u| u.starts_with('b'))
}

impl FilterPlugin for BatchTest {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if blocking(&pod.pod) && node.pods.iter().any(|p| blocking(&p.pod)) {
            Status::unschedulable("unsched")
        } else {
            Status::success()
        }
    }
}

fn label(pod: &PodInfo, key: &str) -> Option<String> {
    pod.pod.metadata.labels.as_ref()?.get(key).cloned()
}

/// Upstream's `configurableFilter`: an error when the pod is labelled `filterErr`.
struct ConfigurableFilter;

crate::plugin! {
    ConfigurableFilter {
        name: "configurableFilter",
        points: [Filter],
    }

    impl PluginFactory {
        type Args = NoArgs;

        fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
            Ok(ConfigurableFilter)
        }
    }
}

impl FilterPlugin for ConfigurableFilter {
    fn filter(&self, _: &CycleState, pod: &PodInfo, _: &NodeInfo) -> Status {
        match label(pod, "filterErr") {
            Some(_) => Status::error("injected filter error"),
            None => Status::success(),
        }
    }
}

/// Upstream's `configurableScore`.
struct ConfigurableScore;

crate::plugin! {
    ConfigurableScore {
        name: "configurableScore",
        points: [PreScore, Score],
    }

    impl PluginFactory {
        type Args = NoArgs;

        fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
            Ok(ConfigurableScore)
        }
    }
}

#[derive(Clone)]
struct SeenNodes(HashSet<String>);

#[async_trait]
impl PreScorePlugin for ConfigurableScore {
    async fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
    ) -> Status {
        if label(pod, "preScoreErr").is_some() {
            return Status::error("injected prescore error");
        }
        state.write(SeenNodes(
            nodes.iter().map(|n| n.name().to_string()).collect(),
        ));
        Status::success()
    }
}

impl ScorePlugin for ConfigurableScore {
    fn score(&self, _: &CycleState, pod: &PodInfo, _: &NodeInfo) -> Result<i64, Status> {
        if label(pod, "scoreErr").is_some() {
            return Err(Status::error("injected score error"));
        }
        Ok(label(pod, "score")
            .and_then(|s| s.parse().ok())
            .unwrap_or(0))
    }

    fn score_extensions(&self) -> Option<&dyn ScoreExtensions> {
        Some(self)
    }
}

impl ScoreExtensions for ConfigurableScore {
    fn normalize_score(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
        _: &mut [i64],
    ) -> Status {
        if label(pod, "normErr").is_some() {
            return Status::error("injected normalize error");
        }
        let Some(seen) = state.read::<SeenNodes>() else {
            return Status::error("NormalizeScore: missing PreScore state");
        };
        match nodes.iter().find(|n| !seen.0.contains(n.name())) {
            Some(n) => Status::error(format!(
                "NormalizeScore called for node {:?} which was not passed to PreScore",
                n.name()
            )),
            None => Status::success(),
        }
    }
}

fn framework(scoring: bool) -> Framework {
    let mut registry = crate::plugins::default_registry();
    registry.register::<BatchTest>();
    registry.register::<ConfigurableFilter>();
    registry.register::<ConfigurableScore>();
    let named = |names: &[&str]| {
        Some(PluginSet {
            enabled: names.iter().map(|n| PluginRef::named(n)).collect(),
            disabled: vec![],
        })
    };
    let all_off = Some(PluginSet {
        enabled: vec![],
        disabled: vec![PluginRef::named("*")],
    });
    let spec = SchedulerProfileSpec {
        plugins: Some(Plugins {
            multi_point: all_off,
            queue_sort: named(&["PrioritySort"]),
            bind: named(&["DefaultBinder"]),
            filter: if scoring {
                named(&["batchTest", "configurableFilter"])
            } else {
                named(&["batchTest"])
            },
            pre_score: if scoring {
                named(&["configurableScore"])
            } else {
                None
            },
            score: if scoring {
                named(&["configurableScore"])
            } else {
                None
            },
            ..Plugins::default()
        }),
        ..SchedulerProfileSpec::default()
    };
    let resolved = resolve(&spec, &registry).expect("valid profile");
    Framework::new(
        "default-scheduler",
        resolved,
        &registry,
        Handle::builder().build(),
    )
    .expect("plugins build")
}

fn pod(name: &str, uid: &str, labels: &[(&str, &str)]) -> PodInfo {
    pod_nominated(name, uid, labels, None)
}

fn pod_nominated(
    name: &str,
    uid: &str,
    labels: &[(&str, &str)],
    nominated: Option<&str>,
) -> PodInfo {
    PodInfo::new(Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(uid.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<BTreeMap<_, _>>(),
            ),
            ..Default::default()
        },
        spec: Some(PodSpec::default()),
        status: nominated.map(|n| PodStatus {
            nominated_node_name: Some(n.into()),
            ..Default::default()
        }),
    })
    .expect("a valid pod")
}

/// Node `name` holding `pods`.
fn node(name: &str, pods: &[&PodInfo]) -> NodeInfo {
    let mut info = NodeInfo::new(Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    })
    .expect("a valid node");
    for pod in pods {
        info.add_pod(Arc::new(pod.with_node_name(name)));
    }
    info
}

fn sig(s: &str) -> Signature {
    Signature::from_bytes(s)
}

fn candidate(name: &str, total: i64, raw: i64) -> Candidate {
    Candidate {
        name: name.to_string(),
        total,
        tie: 0,
        raw: vec![raw],
    }
}

/// The batch's hint for `pod`, not nominated, of signature `signature` in cycle `cycle`,
/// on a fresh cycle state.
fn hint_for(
    batch: &mut Batch,
    fwk: &Framework,
    pod: &PodInfo,
    snapshot: &Snapshot,
    signature: &str,
    cycle: u64,
    now: Instant,
) -> Option<String> {
    let state = CycleState::new();
    complete(batch.node_hint(
        fwk,
        &state,
        pod,
        snapshot,
        Some(&sig(signature)),
        false,
        cycle,
        now,
    ))
}

/// The names left in the state, best first.
fn remaining(batch: &Batch) -> Option<Vec<String>> {
    let state = batch.state.as_ref()?;
    Some(
        state
            .candidates
            .iter()
            .rev()
            .map(|c| c.name.clone())
            .collect(),
    )
}

struct Basic {
    name: &'static str,
    first_uid: &'static str,
    first_sig: &'static str,
    first_scheduled: bool,
    first_chosen: &'static str,
    /// Best first; `None` for upstream's nil list.
    first_others: Option<Vec<&'static str>>,
    skip_pod: bool,
    same_cycle: bool,
    second_uid: &'static str,
    second_nominated: Option<&'static str>,
    second_sig: &'static str,
    second_chosen: &'static str,
    expected_hint: Option<&'static str>,
    expected_state: Option<Vec<&'static str>>,
}

const BASIC: Basic = Basic {
    name: "",
    first_uid: "b-1",
    first_sig: "sig",
    first_scheduled: true,
    first_chosen: "n3",
    first_others: None,
    skip_pod: false,
    same_cycle: false,
    second_uid: "b-2",
    second_nominated: None,
    second_sig: "sig",
    second_chosen: "n1",
    expected_hint: None,
    expected_state: None,
};

#[test]
fn batch_basic() {
    let cases = [
        Basic {
            name: "a second pod with the same signature gets a hint",
            first_others: Some(vec!["n1"]),
            expected_hint: Some("n1"),
            ..BASIC
        },
        Basic {
            name: "a second pod with a different signature doesn't get a hint",
            first_uid: "a-1",
            first_others: Some(vec!["n1"]),
            second_uid: "a-2",
            second_sig: "sig2",
            ..BASIC
        },
        Basic {
            name: "pod doesn't get hint if previous pod didn't scheduled",
            first_scheduled: false,
            first_others: Some(vec!["n1"]),
            ..BASIC
        },
        Basic {
            name: "empty list",
            first_others: Some(vec![]),
            second_chosen: "n4",
            ..BASIC
        },
        Basic {
            name: "nil list",
            first_others: None,
            second_chosen: "n4",
            ..BASIC
        },
        Basic {
            name: "pod doesn't get hint because the previous pod is to a different profile",
            first_others: Some(vec!["n1"]),
            skip_pod: true,
            ..BASIC
        },
        Basic {
            name: "pod doesn't use batch from preceding pod when they are from the same cycle state, but GenericWorkload is disabled",
            first_others: Some(vec!["n1"]),
            same_cycle: true,
            ..BASIC
        },
        Basic {
            name: "pod uses batch from preceding pod and leaves remaining batch to next pod",
            first_others: Some(vec!["n1", "n2"]),
            expected_hint: Some("n1"),
            expected_state: Some(vec!["n2"]),
            ..BASIC
        },
        Basic {
            name: "a second pod with a nominated node does not get a hint",
            first_others: Some(vec!["n1"]),
            second_nominated: Some("n1"),
            ..BASIC
        },
    ];
    let fwk = framework(false);
    assert!(
        !fwk.batches(),
        "batchTest cannot sign pods, so a scheduler would never call the batch"
    );
    let now = Instant::now();
    for case in cases {
        let mut batch = Batch::new(0);
        let first = pod("pod", case.first_uid, &[]);
        let state = CycleState::new();
        let empty = Snapshot::default();
        let hint = hint_for(&mut batch, &fwk, &first, &empty, case.first_sig, 1, now);
        assert_eq!(hint, None, "{}: the first pod gets no hint", case.name);
        if case.first_scheduled {
            // Best first in the table; the state keeps the best last.
            let others = case.first_others.map(|names| {
                let n = names.len() as i64;
                names
                    .iter()
                    .enumerate()
                    .map(|(i, name)| candidate(name, n - i as i64, 0))
                    .collect()
            });
            batch.store(
                Some(sig(case.first_sig)),
                None,
                case.first_chosen,
                others,
                1,
                now,
            );
        }
        let cycle = if case.skip_pod {
            3
        } else if case.same_cycle {
            1
        } else {
            2
        };
        let second = pod_nominated("pod2", case.second_uid, &[], case.second_nominated);
        let snapshot = Snapshot::new(vec![node(case.first_chosen, &[&first])]);
        let hint = complete(batch.node_hint(
            &fwk,
            &state,
            &second,
            &snapshot,
            Some(&sig(case.second_sig)),
            case.second_nominated.is_some(),
            cycle,
            now,
        ));
        assert_eq!(hint.as_deref(), case.expected_hint, "{}", case.name);
        batch.store(
            Some(sig(case.second_sig)),
            hint.as_deref(),
            case.second_chosen,
            None,
            cycle,
            now,
        );
        let left = remaining(&batch).filter(|l| !l.is_empty());
        let expected = case
            .expected_state
            .clone()
            .map(|names| names.iter().map(|n| n.to_string()).collect::<Vec<_>>());
        assert_eq!(left, expected, "{}", case.name);
        if case.expected_state.is_some() {
            assert_eq!(
                batch.state.as_ref().map(|s| &s.signature),
                Some(&sig("sig")),
                "{}",
                case.name
            );
        }
    }
}

/// A batch older than upstream's `maxBatchAge` is not used; one just younger is.
#[test]
fn a_batch_expires_after_500_milliseconds() {
    let fwk = framework(false);
    let first = pod("pod", "b-1", &[]);
    let snapshot = Snapshot::new(vec![node("n3", &[&first])]);
    for (age, expected) in [
        (MAX_BATCH_AGE, Some("n1")),
        (MAX_BATCH_AGE + Duration::from_millis(1), None),
    ] {
        let start = Instant::now();
        let mut batch = Batch::new(0);
        batch.store(
            Some(sig("sig")),
            None,
            "n3",
            Some(vec![candidate("n1", 1, 0)]),
            1,
            start,
        );
        let second = pod("pod2", "b-2", &[]);
        let hint = hint_for(&mut batch, &fwk, &second, &snapshot, "sig", 2, start + age);
        assert_eq!(hint.as_deref(), expected, "after {age:?}");
    }
}

struct Rescore {
    name: &'static str,
    /// Labels of the second pod: its fresh score and the injected errors.
    labels: &'static [(&'static str, &'static str)],
    chosen_node_missing: bool,
    cached_node_missing: bool,
    expected_hint: Option<&'static str>,
    expected_remaining: Vec<&'static str>,
}

#[test]
fn batch_rescore() {
    const N1_CACHED_SCORE: i64 = 50;
    let cases = [
        Rescore {
            name: "rescored node wins",
            labels: &[("score", "100")],
            chosen_node_missing: false,
            cached_node_missing: false,
            expected_hint: Some("n2"),
            expected_remaining: vec!["n1"],
        },
        Rescore {
            name: "rescored node loses",
            labels: &[("score", "10")],
            chosen_node_missing: false,
            cached_node_missing: false,
            expected_hint: Some("n1"),
            expected_remaining: vec!["n2"],
        },
        Rescore {
            name: "filter error gives no hint",
            labels: &[("score", "100"), ("filterErr", "1")],
            chosen_node_missing: false,
            cached_node_missing: false,
            expected_hint: None,
            expected_remaining: vec!["n1"],
        },
        Rescore {
            name: "prescore error gives no hint",
            labels: &[("preScoreErr", "1")],
            chosen_node_missing: false,
            cached_node_missing: false,
            expected_hint: None,
            expected_remaining: vec!["n1"],
        },
        Rescore {
            name: "score error gives no hint",
            labels: &[("scoreErr", "1")],
            chosen_node_missing: false,
            cached_node_missing: false,
            expected_hint: None,
            expected_remaining: vec!["n1"],
        },
        Rescore {
            name: "normalize error gives no hint",
            labels: &[("normErr", "1")],
            chosen_node_missing: false,
            cached_node_missing: false,
            expected_hint: None,
            expected_remaining: vec!["n1"],
        },
        Rescore {
            name: "chosen node missing from lister gives no hint",
            labels: &[],
            chosen_node_missing: true,
            cached_node_missing: false,
            expected_hint: None,
            expected_remaining: vec!["n1"],
        },
        Rescore {
            name: "cached node missing from lister gives no hint",
            labels: &[("score", "100")],
            chosen_node_missing: false,
            cached_node_missing: true,
            expected_hint: None,
            expected_remaining: vec!["n1"],
        },
    ];
    let fwk = framework(true);
    let now = Instant::now();
    for case in cases {
        let mut batch = Batch::new(0);
        let first = pod("pod1", "a-1", &[]);
        batch.store(
            Some(sig("sig")),
            None,
            "n2",
            Some(vec![candidate("n1", N1_CACHED_SCORE, N1_CACHED_SCORE)]),
            1,
            now,
        );
        let mut nodes = Vec::new();
        if !case.chosen_node_missing {
            if !case.cached_node_missing {
                nodes.push(node("n1", &[]));
            }
            nodes.push(node("n2", &[&first]));
        }
        let snapshot = Snapshot::new(nodes);
        let second = pod("pod2", "a-2", case.labels);
        let hint = hint_for(&mut batch, &fwk, &second, &snapshot, "sig", 2, now);
        assert_eq!(hint.as_deref(), case.expected_hint, "{}", case.name);
        let expected: Vec<String> = case
            .expected_remaining
            .iter()
            .map(|n| n.to_string())
            .collect();
        assert_eq!(remaining(&batch), Some(expected), "{}", case.name);
    }
}

/// The rescored node taken by one pod is rescored again for the next.
#[test]
fn batch_rescore_chain() {
    let fwk = framework(true);
    let now = Instant::now();
    let mut batch = Batch::new(0);
    let first = pod("pod1", "a-1", &[]);
    batch.store(
        Some(sig("sig")),
        None,
        "n2",
        Some(vec![candidate("n1", 50, 50)]),
        1,
        now,
    );
    let snapshot = Snapshot::new(vec![node("n1", &[]), node("n2", &[&first])]);
    let labels = [("score", "100")];
    let second = pod("pod2", "a-2", &labels);
    let hint2 = hint_for(&mut batch, &fwk, &second, &snapshot, "sig", 2, now);
    assert_eq!(hint2.as_deref(), Some("n2"), "pod2");
    batch.store(Some(sig("sig")), hint2.as_deref(), "n2", None, 2, now);
    let third = pod("pod3", "a-3", &labels);
    let hint3 = hint_for(&mut batch, &fwk, &third, &snapshot, "sig", 3, now);
    assert_eq!(hint3.as_deref(), Some("n2"), "pod3");
    assert_eq!(remaining(&batch), Some(vec!["n1".to_string()]));
    assert_eq!(batch.batched, 1, "pod2 took its hint");
}
