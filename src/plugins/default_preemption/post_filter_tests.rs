//! upstream's TestPostFilter (defaultpreemption) through berth's framework: the default
//! profile's Filter plugins with DefaultPreemption as its PostFilter, the Filter statuses
//! handed to PostFilter as the table gives them, and the nominated node or the message
//! PostFilter returns. upstream's "test-plugin", a PreFilter plugin whose AddPod and
//! RemovePod fail on nodes labelled `error: "true"`, is registered for the rows about
//! errors in the dry run; the rows with extenders or PodGroup features are upstream
//! machinery berth does not have. Nodes of "nodeRes" also allow 110 pods, so that cpu is
//! what they lack, as the expected messages say.

use std::collections::HashMap;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::{
    PodDisruptionBudget, PodDisruptionBudgetSpec, PodDisruptionBudgetStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::*;
use crate::api::{PluginRef, PluginSet, Plugins, SchedulerProfileSpec};
use crate::cluster::Cache;
use crate::framework::{
    Framework, NoArgs, PluginFactory, PreFilterExtensions, PreFilterPlugin, PreFilterResult,
    resolve,
};
use crate::testing::executor::complete;
use crate::testing::{make_node, make_pod};

fn one_pod_node(name: &str) -> Node {
    make_node()
        .name(name)
        .allocatable(&[("cpu", "100"), ("memory", "100Gi"), ("pods", "1")])
        .obj()
}

fn cpu_node(name: &str) -> Node {
    make_node()
        .name(name)
        .allocatable(&[("cpu", "200m"), ("memory", "400"), ("pods", "110")])
        .obj()
}

fn pod(name: &str, priority: i32, node: Option<&str>) -> Pod {
    let mut pod = make_pod()
        .name(name)
        .namespace("default")
        .uid(name)
        .priority(priority);
    if let Some(node) = node {
        pod = pod.node(node);
    }
    pod.obj()
}

/// The preemptor of the cpu rows (upstream's largeRes): 300m, more than a 200m node holds.
fn large(name: &str, priority: i32) -> Pod {
    make_pod()
        .name(name)
        .namespace("default")
        .uid(name)
        .priority(priority)
        .req(&[("cpu", "300m"), ("memory", "300")])
        .obj()
}

/// A node of upstream's largeRes (300m, 300 memory), labelled `error: "true"` when
/// `error`, so that TestPlugin fails there.
fn large_node(name: &str, error: bool) -> Node {
    let mut node = make_node().name(name);
    if error {
        node = node.label("error", "true");
    }
    node.capacity(&[("cpu", "300m"), ("memory", "300"), ("pods", "32")])
        .obj()
}

fn labelled(mut pod: Pod, label: &str) -> Pod {
    pod.metadata.labels = Some([(label.to_string(), String::new())].into());
    pod
}

pub(super) fn budget(name: &str, label: &str, allowed: i32) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodDisruptionBudgetSpec {
            selector: Some(LabelSelector {
                match_labels: Some([(label.to_string(), String::new())].into()),
                ..LabelSelector::default()
            }),
            min_available: Some(IntOrString::String("100%".into())),
            ..PodDisruptionBudgetSpec::default()
        }),
        status: Some(PodDisruptionBudgetStatus {
            disruptions_allowed: Some(allowed),
            ..PodDisruptionBudgetStatus::default()
        }),
    }
}

/// upstream's TestPlugin: PreFilter does nothing; AddPod and RemovePod fail on nodes
/// labelled `error: "true"`, naming the pod being scheduled.
struct TestPlugin;

crate::plugin! {
    TestPlugin {
        name: "test-plugin",
        points: [PreFilter],
    }

    impl PluginFactory {
        type Args = NoArgs;

        fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
            Ok(TestPlugin)
        }
    }
}

#[async_trait]
impl PreFilterPlugin for TestPlugin {
    async fn pre_filter(
        &self,
        _: &mut CycleState,
        _: &PodInfo,
        _: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        (None, Status::success())
    }

    fn pre_filter_extensions(&self) -> Option<&dyn PreFilterExtensions> {
        Some(self)
    }
}

impl PreFilterExtensions for TestPlugin {
    fn add_pod(
        &self,
        _: &mut CycleState,
        pod: &PodInfo,
        _: &PodInfo,
        node: &crate::cluster::NodeInfo,
    ) -> Status {
        fails_on_error_nodes(node, "add", pod)
    }

    fn remove_pod(
        &self,
        _: &mut CycleState,
        pod: &PodInfo,
        _: &PodInfo,
        node: &crate::cluster::NodeInfo,
    ) -> Status {
        fails_on_error_nodes(node, "remove", pod)
    }
}

fn fails_on_error_nodes(node: &crate::cluster::NodeInfo, action: &str, pod: &PodInfo) -> Status {
    let labelled = node
        .node()
        .and_then(|n| n.metadata.labels.as_ref())
        .and_then(|labels| labels.get("error"))
        .is_some_and(|value| value == "true");
    if labelled {
        let name = pod.pod.metadata.name.as_deref().unwrap_or_default();
        Status::error(format!("failed to {action} pod: {name}"))
    } else {
        Status::success()
    }
}

/// The default profile with DefaultPreemption as PostFilter.
pub(super) fn framework(budgets: Vec<PodDisruptionBudget>) -> Framework {
    build_framework(budgets, false)
}

/// The default profile with DefaultPreemption as PostFilter and, when `test_plugin`,
/// upstream's TestPlugin at PreFilter.
fn build_framework(budgets: Vec<PodDisruptionBudget>, test_plugin: bool) -> Framework {
    let mut registry = crate::plugins::default_registry();
    registry.register::<DefaultPreemption>();
    registry.register::<TestPlugin>();
    let pre_filter = test_plugin.then(|| PluginSet {
        enabled: vec![PluginRef::named("test-plugin")],
        disabled: vec![],
    });
    let spec = SchedulerProfileSpec {
        plugins: Some(Plugins {
            pre_filter,
            post_filter: Some(PluginSet {
                enabled: vec![PluginRef::named("DefaultPreemption")],
                disabled: vec![],
            }),
            ..Plugins::default()
        }),
        ..SchedulerProfileSpec::default()
    };
    let resolved = resolve(&spec, &registry).expect("valid profile");
    let lister = Arc::new(DisruptionBudgets::new());
    budgets.into_iter().for_each(|b| lister.apply(b));
    let handle = Handle::builder().disruption_budgets(lister).build();
    Framework::new("default-scheduler", resolved, &registry, handle).expect("plugins build")
}

/// Filter statuses as the table gives them: node -> code; `absent` for the others.
enum Given {
    Unschedulable,
    Unresolvable,
}

struct Case {
    name: &'static str,
    preemptor: Pod,
    pods: Vec<Pod>,
    nodes: Vec<Node>,
    statuses: Vec<(&'static str, Given)>,
    budgets: Vec<PodDisruptionBudget>,
    want_node: Option<&'static str>,
    want: Status,
}

/// DefaultPreemption on its own: upstream's TestPostFilter calls the plugin's PostFilter
/// (with the framework for its Filter and PreFilter extensions), not the framework's.
fn plugin(budgets: Vec<PodDisruptionBudget>) -> DefaultPreemption {
    let lister = Arc::new(DisruptionBudgets::new());
    budgets.into_iter().for_each(|b| lister.apply(b));
    let handle = Handle::builder().disruption_budgets(lister).build();
    DefaultPreemption::build(DefaultPreemptionArgs::default(), &handle).expect("plugin builds")
}

fn run(case: Case) -> (Option<String>, Status) {
    let framework = build_framework(case.budgets.clone(), true);
    let plugin = plugin(case.budgets);
    let mut cache = Cache::new(None);
    for node in case.nodes {
        cache.add_node(node).expect("node");
    }
    for pod in case.pods {
        cache.add_pod(pod).expect("pod");
    }
    let mut snapshot = Snapshot::default();
    cache.update_snapshot(&mut snapshot);
    let pod = PodInfo::new(case.preemptor).expect("pod");
    let mut state = CycleState::new();
    state.set_node_count(snapshot.len());
    let pre = complete(framework.run_pre_filter(&mut state, &pod, &snapshot));
    assert!(
        pre.status.is_success(),
        "{}: PreFilter {:?}",
        case.name,
        pre.status
    );
    let statuses = NodeToStatus {
        statuses: case
            .statuses
            .into_iter()
            .map(|(node, given)| {
                let status = match given {
                    Given::Unschedulable => Status::unschedulable("rejected"),
                    Given::Unresolvable => Status::unresolvable("rejected"),
                };
                (node.to_string(), status)
            })
            .collect::<HashMap<_, _>>(),
        absent: Some(Status::unresolvable("rejected")),
    };
    let (result, status) =
        complete(plugin.post_filter(&framework, &state, &pod, &snapshot, &statuses));
    (result.and_then(|r| r.nominated_node_name), status)
}

#[test]
fn post_filter_table() {
    use Given::*;
    let cases = vec![
        Case {
            name: "pod with higher priority can be made schedulable",
            preemptor: pod("p", 1000, None),
            pods: vec![pod("p1", 0, Some("node1"))],
            nodes: vec![one_pod_node("node1")],
            statuses: vec![("node1", Unschedulable)],
            budgets: vec![],
            want_node: Some("node1"),
            want: found_placement("node1", 1),
        },
        Case {
            name: "pod with tied priority is still unschedulable",
            preemptor: pod("p", 0, None),
            pods: vec![pod("p1", 0, Some("node1"))],
            nodes: vec![one_pod_node("node1")],
            statuses: vec![("node1", Unschedulable)],
            budgets: vec![],
            want_node: Some(""),
            want: Status::unschedulable(
                "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
            ),
        },
        Case {
            name: "preemption should respect filteredNodesStatuses",
            preemptor: pod("p", 1000, None),
            pods: vec![pod("p1", 0, Some("node1"))],
            nodes: vec![one_pod_node("node1")],
            statuses: vec![("node1", Unresolvable)],
            budgets: vec![],
            want_node: Some(""),
            want: Status::unschedulable(
                "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
            ),
        },
        Case {
            name: "preemption should respect absent NodeToStatusReader entry meaning UnschedulableAndUnresolvable",
            preemptor: pod("p", 1000, None),
            pods: vec![pod("p1", 0, Some("node1"))],
            nodes: vec![one_pod_node("node1")],
            statuses: vec![],
            budgets: vec![],
            want_node: Some(""),
            want: Status::unschedulable(
                "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
            ),
        },
        Case {
            name: "pod can be made schedulable on one node",
            preemptor: pod("p", 100, None),
            pods: vec![pod("p1", 1000, Some("node1")), pod("p2", 0, Some("node2"))],
            nodes: vec![one_pod_node("node1"), one_pod_node("node2")],
            statuses: vec![("node1", Unschedulable), ("node2", Unschedulable)],
            budgets: vec![],
            want_node: Some("node2"),
            want: found_placement("node2", 1),
        },
        Case {
            name: "pod can be made schedulable on minHighestPriority node",
            preemptor: pod("p", 10000, None),
            pods: vec![
                labelled(pod("p1", 1000, Some("node1")), "non-violating"),
                labelled(pod("p2", 0, Some("node1")), "violating"),
                labelled(pod("p3", 100, Some("node2")), "violating"),
            ],
            nodes: vec![one_pod_node("node1"), one_pod_node("node2")],
            statuses: vec![("node1", Unschedulable), ("node2", Unschedulable)],
            budgets: vec![
                budget("violating-pdb", "violating", 0),
                budget("non-violating-pdb", "non-violating", i32::MAX),
            ],
            want_node: Some("node2"),
            want: found_placement("node2", 1),
        },
        Case {
            name: "no candidate nodes found, no enough resource after removing low priority pods",
            preemptor: large("p", 1000),
            pods: vec![pod("p1", 0, Some("node1")), pod("p2", 0, Some("node2"))],
            nodes: vec![cpu_node("node1"), cpu_node("node2")],
            statuses: vec![("node1", Unschedulable), ("node2", Unschedulable)],
            budgets: vec![],
            want_node: Some(""),
            want: Status::unschedulable("preemption: 0/2 nodes are available: 2 Insufficient cpu."),
        },
        Case {
            name: "no candidate nodes found with mixed reasons, no lower priority pod and no enough CPU resource",
            preemptor: large("p", 1000),
            pods: vec![
                pod("p1", 1000, Some("node1")),
                pod("p2", 0, Some("node2")),
                pod("p3", 1000, Some("node3")),
            ],
            nodes: vec![
                one_pod_node("node1"),
                cpu_node("node2"),
                one_pod_node("node3"),
            ],
            statuses: vec![
                ("node1", Unschedulable),
                ("node2", Unschedulable),
                ("node3", Unschedulable),
            ],
            budgets: vec![],
            want_node: Some(""),
            want: Status::unschedulable(
                "preemption: 0/3 nodes are available: 1 Insufficient cpu, 2 No preemption victims found for incoming pod.",
            ),
        },
        Case {
            name: "no candidate nodes found with mixed reason, 2 UnschedulableAndUnresolvable nodes and 2 nodes don't have enough CPU resource",
            preemptor: large("p", 1000),
            pods: vec![pod("p1", 0, Some("node1")), pod("p2", 0, Some("node2"))],
            nodes: vec![
                cpu_node("node1"),
                cpu_node("node2"),
                cpu_node("node3"),
                cpu_node("node4"),
            ],
            statuses: vec![
                ("node1", Unschedulable),
                ("node2", Unschedulable),
                ("node4", Unresolvable),
            ],
            budgets: vec![],
            want_node: Some(""),
            want: Status::unschedulable(
                "preemption: 0/4 nodes are available: 2 Insufficient cpu, 2 Preemption is not helpful for scheduling.",
            ),
        },
        Case {
            name: "only one node but failed with TestPlugin",
            preemptor: large("p", 1000),
            pods: vec![pod("p1", 0, Some("node1"))],
            nodes: vec![large_node("node1", true)],
            statuses: vec![("node1", Unschedulable)],
            budgets: vec![],
            want_node: None,
            want: Status::error(
                "preemption: running RemovePod on PreFilter plugin \"test-plugin\": failed to remove pod: p",
            ),
        },
        Case {
            name: "one failed with TestPlugin and the other pass",
            preemptor: large("p", 1000),
            pods: vec![
                pod("p1", 0, Some("node1")),
                make_pod()
                    .name("p2")
                    .namespace("default")
                    .uid("p2")
                    .req(&[("cpu", "200m"), ("memory", "200")])
                    .node("node2")
                    .obj(),
            ],
            nodes: vec![large_node("node1", true), large_node("node2", false)],
            statuses: vec![("node1", Unschedulable), ("node2", Unschedulable)],
            budgets: vec![],
            want_node: Some("node2"),
            want: found_placement("node2", 1),
        },
    ];
    for case in cases {
        let name = case.name;
        let want_node = case.want_node.map(str::to_string);
        let want = case.want.clone();
        let (node, status) = run(case);
        assert_eq!(node, want_node, "{name}: nominated node");
        assert_eq!(
            (status.code(), status.message()),
            (want.code(), want.message()),
            "{name}: status"
        );
    }
}

/// upstream's status of a successful preemption (the evaluator's message, prefixed by
/// DefaultPreemption's PostFilter).
fn found_placement(node: &str, victims: usize) -> Status {
    Status::new(
        Code::Success,
        format!(
            "preemption: found a potential placement for pod on node {node}, preempting {victims} victims"
        ),
    )
}
