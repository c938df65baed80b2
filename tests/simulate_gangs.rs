//! Workload API gang scheduling through `berth simulate`: `scheduling.k8s.io/v1beta1`
//! PodGroups and the pods naming them in `spec.schedulingGroup`, placed as kube-scheduler
//! 1.37 places them with the GenericWorkload gate on (GangScheduling and the pod-group
//! cycle), and each group's outcome in the report.
//!
//! The expected values follow from upstream's semantics, not from berth's output: a gang
//! is placed all-or-nothing, at least `minCount` members at once; its members are not
//! tried before `minCount` of them exist and their PodGroup does; the
//! `PodGroupInitiallyScheduled` condition is True/Scheduled after a cycle that placed the
//! group, False/Unschedulable after one that could not, and a True condition is never
//! turned back (`updatePodGroupCondition`).

mod support;

use std::path::{Path, PathBuf};

use berth::scheduler::unsupported::SCHEDULING_GROUP_MESSAGE;
use berth::simulate::controllers::ControllerOptions;
use berth::simulate::input::{ClusterInput, load_files, load_str, load_str_with};
use berth::simulate::report::{GroupPolicy, PodGroupResult, PodResult, Report};
use support::simulate::{pod, simulate_default};

fn example() -> ClusterInput {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/gangs.yaml");
    load_files(&[path]).expect("the example loads").0
}

fn inline(yaml: &str) -> ClusterInput {
    load_str(Path::new("gangs.yaml"), yaml)
        .expect("the input loads")
        .0
}

fn group<'a>(report: &'a Report, name: &str) -> &'a PodGroupResult {
    report
        .pod_groups
        .iter()
        .find(|g| g.name == name)
        .unwrap_or_else(|| panic!("pod group {name} is reported: {report:#?}"))
}

/// (status, reason) of the group's `PodGroupInitiallyScheduled` condition.
fn condition(group: &PodGroupResult) -> Option<(&str, &str)> {
    group
        .condition
        .as_ref()
        .map(|c| (c.status.as_str(), c.reason.as_str()))
}

#[tokio::test]
async fn the_example_places_each_gang_all_or_nothing() {
    let report = simulate_default(example()).await;

    // train: one 3-cpu member per 4-cpu node, all three bound.
    let mut nodes: Vec<&str> = (0..3)
        .map(|i| {
            let member = pod(&report, &format!("train-{i}"));
            assert_eq!(member.result, PodResult::Scheduled, "{member:#?}");
            assert_eq!(member.pod_group.as_deref(), Some("train"));
            member.node.as_deref().unwrap_or_default()
        })
        .collect();
    nodes.sort_unstable();
    assert_eq!(nodes, ["node-a", "node-b", "node-c"]);

    // big: three of four would fit, so none is bound.
    for i in 0..4 {
        let member = pod(&report, &format!("big-{i}"));
        assert_eq!(member.result, PodResult::Unschedulable, "{member:#?}");
        assert_eq!(member.node, None, "{member:#?}");
        assert_eq!(member.pod_group.as_deref(), Some("big"));
    }
    // web: a basic group, both bound.
    for i in 0..2 {
        let member = pod(&report, &format!("web-{i}"));
        assert_eq!(member.result, PodResult::Scheduled, "{member:#?}");
    }

    let rows: Vec<_> = report
        .pod_groups
        .iter()
        .map(|g| {
            (
                g.name.as_str(),
                g.policy,
                g.min_count,
                g.bound,
                g.members,
                condition(g),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (
                "train",
                GroupPolicy::Gang,
                Some(3),
                3,
                3,
                Some(("True", "Scheduled"))
            ),
            (
                "big",
                GroupPolicy::Gang,
                Some(4),
                0,
                4,
                Some(("False", "Unschedulable"))
            ),
            (
                "web",
                GroupPolicy::Basic,
                None,
                2,
                2,
                Some(("True", "Scheduled"))
            ),
        ]
    );
    // A placed group's condition carries no message (a successful status has none).
    assert_eq!(
        group(&report, "train")
            .condition
            .as_ref()
            .map(|c| c.message.as_str()),
        Some("")
    );
}

/// The messages of a gang that cannot reach `minCount`, as upstream builds them: the
/// group's status is GangScheduling's PlacementFeasible rejection after the last member
/// (not wrapped in `pod group is unschedulable`: only a rejection before the first member
/// or a gang left waiting is), followed by the reason of PodGroupPostFilter (no pod of
/// lower priority to preempt); the members that fitted are rejected with `pod group is
/// unschedulable, <group message>`, the member that did not fit with its own reason. The
/// real kube-scheduler 1.37 words it the same (the differential run, which gives it this
/// example).
#[tokio::test]
async fn a_gang_short_of_min_count_says_why_in_upstreams_words() {
    let report = simulate_default(example()).await;
    let group_message = "minCount (4) cannot be satisfied: 3 scheduled, 0 remaining, \
                         pod group preemption: No preemption victims found for incoming preemptor";
    assert_eq!(
        group(&report, "big")
            .condition
            .as_ref()
            .map(|c| c.message.as_str()),
        Some(group_message)
    );
    let mut messages: Vec<String> = (0..4)
        .map(|i| pod(&report, &format!("big-{i}")).message.clone())
        .collect();
    messages.sort();
    let fitted = format!("pod group is unschedulable, {group_message}");
    assert_eq!(
        messages,
        [
            "0/3 nodes are available: 3 Insufficient cpu.".to_string(),
            fitted.clone(),
            fitted.clone(),
            fitted,
        ]
    );
}

#[tokio::test]
async fn the_condition_time_is_the_simulated_start() {
    let report = simulate_default(example()).await;
    // 16 documents: the newest object is created at 2024-01-01T00:00:15Z, and the
    // scheduler starts one second later; both gangs' first cycles run at once.
    for name in ["train", "big"] {
        let time = group(&report, name)
            .condition
            .as_ref()
            .map(|c| c.last_transition_time.0.to_string());
        assert_eq!(time.as_deref(), Some("2024-01-01T00:00:16Z"), "{name}");
    }
}

const NODE: &str = "apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
status:
  allocatable: {cpu: \"4\", memory: 8Gi, pods: \"110\"}
  capacity: {cpu: \"4\", memory: 8Gi, pods: \"110\"}
";

fn member(name: &str, group: &str, extra: &str) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  schedulingGroup: {{podGroupName: {group}}}
{extra}  containers:
  - name: main
    image: registry.k8s.io/pause:3.9
    resources: {{requests: {{cpu: 500m}}}}
"
    )
}

#[tokio::test]
async fn members_of_a_missing_or_short_group_never_reach_a_cycle() {
    let yaml = [
        NODE.to_string(),
        // No PodGroup "ghost": PreEnqueue waits for it.
        member("orphan", "ghost", ""),
        // A gang of 2 with one member: PreEnqueue waits for minCount members.
        "apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: pair}
spec: {schedulingPolicy: {gang: {minCount: 2}}}
"
        .to_string(),
        member("alone", "pair", ""),
    ]
    .join("---\n");
    let report = simulate_default(inline(&yaml)).await;
    for (name, mentions) in [("orphan", "default/ghost"), ("alone", "1 of 2")] {
        let held = pod(&report, name);
        assert_eq!(held.result, PodResult::Unschedulable, "{held:#?}");
        assert_eq!(held.attempts, 0, "{held:#?}");
        assert_eq!(held.node, None);
        assert!(held.message.contains(mentions), "{name}: {}", held.message);
    }
    // No cycle ran for the pair: no condition, nothing bound.
    let pair = group(&report, "pair");
    assert_eq!((pair.members, pair.bound, condition(pair)), (1, 0, None));
    assert_eq!(
        report.pod_groups.len(),
        1,
        "only PodGroups of the input have rows"
    );
}

#[tokio::test]
async fn a_scheduled_gang_stays_scheduled_when_an_extra_member_does_not_fit() {
    // A gang of 2 bound earlier (its PodGroup says so, as a snapshot would show it), and a
    // third member asking for more than the node has left.
    let running = |name: &str| member(name, "pair", "  nodeName: n1\n");
    let yaml = [
        NODE.to_string(),
        "apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: pair, resourceVersion: \"7\"}
spec: {priority: 0, schedulingPolicy: {gang: {minCount: 2}}}
status:
  conditions:
  - {type: PodGroupInitiallyScheduled, status: \"True\", reason: Scheduled, message: \"\", lastTransitionTime: \"2023-06-01T00:00:00Z\"}
"
        .to_string(),
        running("pair-0"),
        running("pair-1"),
        "apiVersion: v1
kind: Pod
metadata: {name: pair-2}
spec:
  schedulingGroup: {podGroupName: pair}
  containers:
  - name: main
    image: registry.k8s.io/pause:3.9
    resources: {requests: {cpu: \"8\"}}
"
        .to_string(),
    ]
    .join("---\n");
    let report = simulate_default(inline(&yaml)).await;
    let extra = pod(&report, "pair-2");
    assert_eq!(extra.result, PodResult::Unschedulable, "{extra:#?}");
    assert_eq!(
        extra.message,
        "0/1 nodes are available: 1 Insufficient cpu."
    );
    let pair = group(&report, "pair");
    assert_eq!((pair.members, pair.bound), (3, 2));
    // The cycle wanted False; a True condition is kept, time and all.
    let kept = pair.condition.as_ref().map(|c| {
        (
            c.status.as_str(),
            c.reason.as_str(),
            c.last_transition_time.0.to_string(),
        )
    });
    assert_eq!(
        kept,
        Some(("True", "Scheduled", "2023-06-01T00:00:00Z".to_string()))
    );
}

#[tokio::test]
async fn without_the_api_served_members_are_refused() {
    let mut input = example();
    input.pod_groups_not_served = true;
    let report = simulate_default(input).await;
    let refused = pod(&report, "train-0");
    assert_eq!(refused.result, PodResult::Unschedulable, "{refused:#?}");
    assert_eq!(
        refused.message,
        format!("0/3 nodes are available: {SCHEDULING_GROUP_MESSAGE}.")
    );
    for row in &report.pod_groups {
        assert_eq!((row.bound, condition(row)), (0, None), "{row:#?}");
    }
}

/// A Job of 3 pods of 1500m on a 4-cpu node: room for 2.
const GANG_JOB: &str = "apiVersion: batch/v1
kind: Job
metadata: {name: train}
spec:
  parallelism: 3
  scheduling: {schedulingPolicy: {gang: {}}}
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: registry.k8s.io/pause:3.9
        resources: {requests: {cpu: 1500m}}
";

#[tokio::test]
async fn with_workload_with_job_a_gang_job_is_placed_all_or_nothing() {
    let yaml = format!("{NODE}---\n{GANG_JOB}");
    let gates = ControllerOptions {
        workload_with_job: true,
    };
    let (input, _) = load_str_with(Path::new("job.yaml"), &yaml, gates).expect("loads");
    let report = simulate_default(input).await;
    // The Job controller's PodGroup: a gang of minCount = parallelism = 3.
    let [row] = &report.pod_groups[..] else {
        panic!("one PodGroup: {report:#?}");
    };
    assert_eq!(
        (
            row.policy,
            row.min_count,
            row.members,
            row.bound,
            condition(row)
        ),
        (
            GroupPolicy::Gang,
            Some(3),
            3,
            0,
            Some(("False", "Unschedulable"))
        )
    );
    assert!(
        report.pods.iter().all(|p| p.result != PodResult::Scheduled),
        "{report:#?}"
    );

    // Without the gate the same Job's pods are scheduled one by one: two fit.
    let report = simulate_default(inline(&yaml)).await;
    assert!(report.pod_groups.is_empty());
    let bound = report
        .pods
        .iter()
        .filter(|p| p.result == PodResult::Scheduled)
        .count();
    assert_eq!(bound, 2, "{report:#?}");
}

/// Kubernetes 1.35 gangs (`spec.workloadRef` and a `scheduling.k8s.io/v1alpha1`
/// Workload), as kube-scheduler 1.35's GangScheduling holds them: `nodes`
/// of `cpu` each, Workload `train` with pod group `workers` (gang, `min_count`), and the
/// pods `(name, replica key)` of one cpu each.
fn legacy_gang(nodes: &[&str], cpu: &str, min_count: u32, pods: &[(&str, &str)]) -> ClusterInput {
    let mut docs: Vec<String> = nodes
        .iter()
        .map(|n| {
            format!(
                "apiVersion: v1\nkind: Node\nmetadata: {{name: {n}}}\nstatus:\n  allocatable: {{cpu: \"{cpu}\", memory: 8Gi, pods: \"110\"}}\n"
            )
        })
        .collect();
    docs.push(format!(
        "apiVersion: scheduling.k8s.io/v1alpha1\nkind: Workload\nmetadata: {{name: train}}\nspec:\n  podGroups: [{{name: workers, policy: {{gang: {{minCount: {min_count}}}}}}}]\n"
    ));
    for (name, replica) in pods {
        docs.push(format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  workloadRef: {{name: train, podGroup: workers, podGroupReplicaKey: \"{replica}\"}}\n  containers:\n  - name: c\n    image: i\n    resources: {{requests: {{cpu: \"1\"}}}}\n"
        ));
    }
    inline(&docs.join("---\n"))
}

#[tokio::test]
async fn a_1_35_gang_binds_whole_or_not_at_all() {
    let three = [("w-0", ""), ("w-1", ""), ("w-2", "")];
    // Room for all three: all bound.
    let report = simulate_default(legacy_gang(&["n1", "n2"], "2", 3, &three)).await;
    for (name, _) in three {
        let member = pod(&report, name);
        assert_eq!(member.result, PodResult::Scheduled, "{member:#?}");
    }
    // Room for two of three: none bound (two wait at Permit for a third that never fits).
    let report = simulate_default(legacy_gang(&["n1", "n2"], "1", 3, &three)).await;
    for (name, _) in three {
        let member = pod(&report, name);
        assert_ne!(member.result, PodResult::Scheduled, "{member:#?}");
        assert_eq!(member.node, None, "{member:#?}");
    }
}

#[tokio::test]
async fn a_1_35_gang_is_one_replica_of_its_pod_group() {
    // Replica keys split the pod group into gangs of one, each short of minCount 2: no
    // pod is tried, and the report says what each waits for.
    let report =
        simulate_default(legacy_gang(&["n1"], "4", 2, &[("r-0", "0"), ("r-1", "1")])).await;
    for name in ["r-0", "r-1"] {
        let held = pod(&report, name);
        assert_eq!(held.attempts, 0, "{held:#?}");
        assert_eq!(held.node, None, "{held:#?}");
        assert!(
            held.message.starts_with(
                "waiting for the gang of Workload default/train pod group \"workers\" to have minCount pods: 1 of 2 exist"
            ),
            "{name}: {}",
            held.message
        );
    }
}
