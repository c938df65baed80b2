use std::path::Path;

use super::*;
use crate::simulate::input::load_str;
use crate::simulate::report::{EvictedPod, PluginScore};
use crate::simulate::run::{SimulateOptions, simulate};

/// Seven nodes, four running pods, four pending pods. Every number the tests expect is
/// worked out from here by hand:
///
/// - node-a: 4 cpu, labels zone=z1 and disktype=ssd, runs run-a (3 cpu): 1 cpu free.
/// - node-b: 4 cpu, zone=z1, runs run-b (3500m): 500m free.
/// - node-c: 4 cpu, disktype=ssd, hostname node-c, runs run-c (2 cpu): 2 cpu free.
/// - node-d: 1 cpu in all, no pods.
/// - node-e: 4 cpu but room for 1 pod, runs run-e (100m): full.
/// - gpu-1: 16 cpu, zone=z1, disktype=ssd, tainted dedicated=gpu:NoSchedule (and a soft
///   PreferNoSchedule taint, which never keeps a pod off).
/// - gpu-2: 16 cpu, tainted dedicated=gpu:NoSchedule and team=ml:NoExecute.
///
/// Pending, in queue order (document order, equal priority):
///
/// - small (500m) selects hostname node-c: the only untainted node with that label, so it
///   binds there and node-c keeps 1500m free.
/// - tiny (100m) is scheduled by `affinity-only`, whose one Score plugin is NodeAffinity
///   (weight 1); it prefers zone=z1 (weight 80) and disktype=ssd (weight 20). The gpu
///   nodes are tainted and node-e is full; of the rest node-a matches both (100), node-b
///   the zone (80), node-c the disk (20), node-d nothing (0); normalized against the best
///   (100) the scores stay 100, 80, 20, 0. It binds on node-a, which keeps 900m free.
/// - big (2 cpu): the gpu nodes' taint; cpu on node-a (900m free), node-b (500m), node-c
///   (1500m) and node-d (1 of 1); node-e is full.
/// - picky (100m) selects disktype=hdd, which no node has: the gpu nodes' taint (Filter
///   checks taints before node affinity), the node selector on the other five.
const CLUSTER: &str = r#"
apiVersion: berth.dev/v1alpha1
kind: SchedulerProfile
metadata:
  name: affinity-only
spec:
  plugins:
    score:
      disabled:
      - name: "*"
      enabled:
      - name: NodeAffinity
        weight: 1
---
apiVersion: v1
kind: Node
metadata:
  name: node-a
  labels: {topology.kubernetes.io/zone: z1, disktype: ssd}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata:
  name: node-b
  labels: {topology.kubernetes.io/zone: z1}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata:
  name: node-c
  labels: {disktype: ssd, kubernetes.io/hostname: node-c}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata:
  name: node-d
status:
  allocatable: {cpu: "1", memory: 8Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata:
  name: node-e
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "1"}
---
apiVersion: v1
kind: Node
metadata:
  name: gpu-1
  labels: {topology.kubernetes.io/zone: z1, disktype: ssd}
spec:
  taints:
  - {key: dedicated, value: gpu, effect: NoSchedule}
  - {key: soft, value: "yes", effect: PreferNoSchedule}
status:
  allocatable: {cpu: "16", memory: 64Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata:
  name: gpu-2
spec:
  taints:
  - {key: dedicated, value: gpu, effect: NoSchedule}
  - {key: team, value: ml, effect: NoExecute}
status:
  allocatable: {cpu: "16", memory: 64Gi, pods: "110"}
---
apiVersion: v1
kind: Pod
metadata: {name: run-a}
spec:
  nodeName: node-a
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "3"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: run-b}
spec:
  nodeName: node-b
  containers: [{name: c, image: busybox, resources: {requests: {cpu: 3500m}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: run-c}
spec:
  nodeName: node-c
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "2"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: run-e}
spec:
  nodeName: node-e
  containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: small}
spec:
  nodeSelector: {kubernetes.io/hostname: node-c}
  containers: [{name: c, image: busybox, resources: {requests: {cpu: 500m}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: tiny}
spec:
  schedulerName: affinity-only
  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 80
        preference:
          matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [z1]}]
      - weight: 20
        preference:
          matchExpressions: [{key: disktype, operator: In, values: [ssd]}]
  containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: big}
spec:
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "2"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: picky}
spec:
  nodeSelector: {disktype: hdd}
  containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]
"#;

/// The cluster of [`CLUSTER`] and the report of its simulation with explain on.
async fn simulated() -> (ClusterInput, Report) {
    let (input, _) = load_str(Path::new("explain.yaml"), CLUSTER).expect("the cluster loads");
    let report = simulate(
        input.clone(),
        &crate::plugins::default_registry(),
        SimulateOptions {
            explain: true,
            seed: 0,
            parallelism: 1,
        },
    )
    .await
    .expect("the simulation runs");
    (input, report)
}

async fn explained(name: &str) -> String {
    let (input, report) = simulated().await;
    let pod = report
        .pods
        .iter()
        .find(|pod| pod.name == name)
        .unwrap_or_else(|| panic!("{name} is reported: {report:#?}"));
    explain_pod(&report, pod, &input)
}

/// The section of `text` whose first line starts with `heading`, up to the blank line.
fn section<'a>(text: &'a str, heading: &str) -> &'a str {
    text.split("\n\n")
        .find(|section| section.starts_with(heading))
        .unwrap_or_else(|| panic!("no section {heading:?} in:\n{text}"))
}

#[tokio::test]
async fn filtered_nodes_are_grouped_by_reason_most_frequent_first() {
    let text = explained("big").await;
    let want = "\
Filtered out: 7 of 7 nodes
  4  Insufficient cpu
       node-a, node-b, node-c, node-d
  2  node(s) had untolerated taint(s)
       gpu-1, gpu-2
  1  Too many pods
       node-e";
    pretty_assertions::assert_eq!(section(&text, "Filtered out:"), want);
    assert!(!text.contains("Best feasible nodes"), "{text}");
}

#[tokio::test]
async fn hints_name_the_taints_the_shortfalls_and_the_full_nodes() {
    let text = explained("big").await;
    // Shortfalls of the 2-cpu request at the end of the simulation: node-c 2 - 1500m,
    // node-d 2 - 1 (it has 1 cpu in all), node-a 2 - 900m; node-b (2 - 500m) is the
    // fourth closest. gpu-1's PreferNoSchedule taint needs no toleration; gpu-2 needs
    // both of its taints tolerated.
    let want = "\
What would make it fit, judged on the cluster at the end of the simulation:
  - Insufficient cpu on 4 nodes; the closest:
      node-c: cpu short by 500m (requests 2, free 1500m of 4)
      node-d: cpu short by 1 (requests 2, free 1 of 1; more than the node has)
      node-a: cpu short by 1100m (requests 2, free 900m of 4)
  - tolerate dedicated=gpu:NoSchedule (1 node: gpu-1)
  - tolerate dedicated=gpu:NoSchedule and team=ml:NoExecute (1 node: gpu-2)
  - Too many pods on 1 node, each at its pod capacity:
      node-e: holds 1 pod, allows 1
  Each hint lifts one reason. Filtering stops at a node's first failing plugin, so a node may still
  fail one that runs after it.
";
    pretty_assertions::assert_eq!(section(&text, "What would make it fit"), want);
}

#[tokio::test]
async fn the_header_carries_the_verdict_and_the_upstream_message() {
    let (input, report) = simulated().await;
    let big = report
        .pods
        .iter()
        .find(|pod| pod.name == "big")
        .expect("big is reported");
    let text = explain_pod(&report, big, &input);
    let header = text.split("\n\n").next().unwrap_or_default();
    assert!(
        header.starts_with(
            "Pod:            default/big\n\
             Profile:        default-scheduler\n\
             Result:         Unschedulable\n\
             Message:        0/7 nodes are available: "
        ),
        "{text}"
    );
    // The message is the report's, wrapped: its words are all there, in order.
    let message: Vec<&str> = header
        .split_once("Message:")
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    assert_eq!(message, big.message.split_whitespace().collect::<Vec<_>>());
    assert!(!header.contains("Node:"), "{header}");
}

#[tokio::test]
async fn a_node_selector_hint_names_the_labels_asked_for() {
    let text = explained("picky").await;
    let want = "\
Filtered out: 7 of 7 nodes
  5  node(s) didn't match Pod's node affinity/selector
       node-a, node-b, node-c, node-d, node-e
  2  node(s) had untolerated taint(s)
       gpu-1, gpu-2";
    pretty_assertions::assert_eq!(section(&text, "Filtered out:"), want);
    let hints = section(&text, "What would make it fit");
    assert!(
        hints.contains(
            "\n  - 5 nodes lack the labels the pod asks for (node-a, node-b, node-c, node-d, \
             node-e):\n      nodeSelector: disktype=hdd\n"
        ),
        "{hints}"
    );
}

#[tokio::test]
async fn a_scheduled_pod_shows_the_filtered_nodes_and_the_best_ones_without_hints() {
    let text = explained("tiny").await;
    assert!(text.starts_with("Pod:            default/tiny\nProfile:        affinity-only\nResult:         Scheduled\nNode:           node-a\n"), "{text}");
    let filtered = "\
Filtered out: 3 of 7 nodes
  2  node(s) had untolerated taint(s)
       gpu-1, gpu-2
  1  Too many pods
       node-e";
    pretty_assertions::assert_eq!(section(&text, "Filtered out:"), filtered);
    let best = "\
Best feasible nodes: 4 of 7 nodes passed filtering
  node-a  total 100  (chosen)
      NodeAffinity 100x1=100
  node-b  total  80
      NodeAffinity 80x1=80
  node-c  total  20
      NodeAffinity 20x1=20
";
    pretty_assertions::assert_eq!(section(&text, "Best feasible nodes:"), best);
    assert!(!text.contains("What would make it fit"), "{text}");
}

#[tokio::test]
async fn the_hint_rules_recognise_the_plugins_reasons() {
    let (_, report) = simulated().await;
    let reasons: BTreeSet<&str> = report
        .pods
        .iter()
        .filter(|pod| pod.name == "big" || pod.name == "picky")
        .flat_map(|pod| pod.nodes.iter().flatten())
        .flat_map(|node| node.filter_reasons.iter().map(String::as_str))
        .collect();
    let rules: Vec<(&str, Option<Rule>)> = reasons.iter().map(|r| (*r, rule_of(r))).collect();
    assert_eq!(
        rules,
        vec![
            ("Insufficient cpu", Some(Rule::Insufficient("cpu"))),
            ("Too many pods", Some(Rule::TooManyPods)),
            (
                "node(s) didn't match Pod's node affinity/selector",
                Some(Rule::NodeAffinity)
            ),
            ("node(s) had untolerated taint(s)", Some(Rule::Taint)),
        ]
    );
    assert_eq!(
        REASON_NODE_AFFINITY,
        crate::plugins::node_affinity::ERR_REASON_POD
    );
}

fn pod_report(name: &str, result: PodResult) -> PodReport {
    PodReport {
        namespace: "default".to_string(),
        name: name.to_string(),
        scheduler_name: "default-scheduler".to_string(),
        pod_group: None,
        result,
        node: None,
        message: String::new(),
        attempts: 1,
        nominated_node: None,
        victims: Vec::new(),
        devices: Vec::new(),
        nodes: Some(Vec::new()),
    }
}

fn feasible(name: &str, score: i64) -> NodeReport {
    NodeReport {
        name: name.to_string(),
        feasible: true,
        filter_reasons: Vec::new(),
        scores: vec![PluginScore {
            plugin: "NodeResourcesFit".to_string(),
            score,
            weight: 1,
            weighted: score,
        }],
        total_score: score,
    }
}

fn infeasible(name: &str, reasons: &[&str]) -> NodeReport {
    NodeReport {
        name: name.to_string(),
        feasible: false,
        filter_reasons: reasons.iter().map(|r| r.to_string()).collect(),
        scores: Vec::new(),
        total_score: 0,
    }
}

#[test]
fn the_header_names_the_nomination_and_the_victims() {
    let pod = PodReport {
        node: Some("node-b".to_string()),
        nominated_node: Some("node-b".to_string()),
        victims: vec!["default/low-2".to_string(), "default/low-1".to_string()],
        ..pod_report("critical", PodResult::Scheduled)
    };
    let text = explain_pod(&Report::default(), &pod, &ClusterInput::default());
    let want = "\
Pod:            default/critical
Profile:        default-scheduler
Result:         Scheduled
Node:           node-b
Nominated node: node-b
Victims:        default/low-2, default/low-1
";
    assert_eq!(
        text.split("\n\n").next().map(|h| format!("{h}\n")),
        Some(want.to_string())
    );
}

#[test]
fn best_nodes_break_ties_by_name_and_keep_a_chosen_node_ranked_lower() {
    // a and b tie at 70, c and d at 50: by name a, b, c are the top three; the seed's
    // tie-break chose d, which follows them.
    let pod = PodReport {
        node: Some("d".to_string()),
        nodes: Some(vec![
            feasible("d", 50),
            feasible("b", 70),
            feasible("c", 50),
            feasible("a", 70),
            infeasible("e", &["Insufficient cpu"]),
        ]),
        ..pod_report("web", PodResult::Scheduled)
    };
    let text = explain_pod(&Report::default(), &pod, &ClusterInput::default());
    let want = "\
Best feasible nodes: 4 of 5 nodes passed filtering
  a  total 70
      NodeResourcesFit 70x1=70
  b  total 70
      NodeResourcesFit 70x1=70
  c  total 50
      NodeResourcesFit 50x1=50
  d  total 50  (chosen)
      NodeResourcesFit 50x1=50
";
    pretty_assertions::assert_eq!(section(&text, "Best feasible nodes:"), want);
}

#[test]
fn a_group_lists_ten_names_then_how_many_more_and_a_node_is_under_each_reason() {
    let mut nodes: Vec<NodeReport> = (1..=12)
        .map(|i| infeasible(&format!("n{i:02}"), &["Insufficient cpu"]))
        .collect();
    nodes.push(infeasible(
        "both",
        &["Insufficient cpu", "Insufficient memory"],
    ));
    let pod = PodReport {
        nodes: Some(nodes),
        ..pod_report("web", PodResult::Unschedulable)
    };
    let text = explain_pod(&Report::default(), &pod, &ClusterInput::default());
    let want = "\
Filtered out: 13 of 13 nodes
  13  Insufficient cpu
        both, n01, n02, n03, n04, n05, n06, n07, n08, n09, and 3 more
   1  Insufficient memory
        both";
    pretty_assertions::assert_eq!(section(&text, "Filtered out:"), want);
    // The pod is not in the (empty) cluster: no rule can be checked, so no hint.
    assert!(
        text.ends_with(
            "What would make it fit: no hint; the pod is not among the pending pods of the \
             input.\n"
        ),
        "{text}"
    );
}

#[test]
fn results_without_verdicts_say_so_in_one_line() {
    let cases = [
        (
            "not served",
            PodReport {
                scheduler_name: "other".to_string(),
                nodes: None,
                ..pod_report("web", PodResult::NotServed)
            },
            "No profile of the simulation serves schedulerName \"other\": no scheduler \
             looked at the pod, so there are no per-node verdicts.",
        ),
        (
            "error",
            pod_report("web", PodResult::Error),
            "The last attempt ended in an error (the message above), not in a verdict on \
             the nodes: there is nothing to explain per node.",
        ),
        (
            "never attempted",
            PodReport {
                attempts: 0,
                ..pod_report("web", PodResult::Unschedulable)
            },
            "No node was evaluated: the pod never reached a scheduling cycle.",
        ),
        (
            "without explain",
            PodReport {
                nodes: None,
                ..pod_report("web", PodResult::Unschedulable)
            },
            "No per-node verdicts: the simulation ran without explain.",
        ),
    ];
    for (name, pod, want) in cases {
        let text = explain_pod(&Report::default(), &pod, &ClusterInput::default());
        let body: Vec<&str> = text.split("\n\n").skip(1).collect();
        let words: Vec<&str> = body.iter().flat_map(|s| s.split_whitespace()).collect();
        assert_eq!(
            words,
            want.split_whitespace().collect::<Vec<_>>(),
            "case {name}: {text}"
        );
    }
}

#[test]
fn a_preempted_pod_marks_the_node_it_was_evicted_from() {
    let pod = PodReport {
        message: "preempted by default/critical on node node-b".to_string(),
        nodes: Some(vec![feasible("node-a", 60), feasible("node-b", 80)]),
        ..pod_report("low", PodResult::Preempted)
    };
    let report = Report {
        evicted: vec![EvictedPod {
            pod: "default/low".to_string(),
            node: "node-b".to_string(),
            preemptor: "default/critical".to_string(),
        }],
        ..Report::default()
    };
    let text = explain_pod(&report, &pod, &ClusterInput::default());
    assert!(
        text.contains("\n\nThe pod was scheduled on node-b, then evicted by a preemption;"),
        "{text}"
    );
    assert!(text.contains("\n  node-b  total 80  (chosen)\n"), "{text}");
    assert!(!text.contains("What would make it fit"), "{text}");
}

#[test]
fn amounts_are_written_in_their_natural_unit() {
    const GI: i64 = 1 << 30;
    let cases = [
        ("whole cores", "cpu", 2000, "2"),
        ("millicores", "cpu", 1500, "1500m"),
        ("gibibytes", "memory", 2 * GI, "2Gi"),
        ("mebibytes", "memory", 1536 * MI, "1536Mi"),
        ("decimal gigabytes", "memory", 1_000_000_000, "1G"),
        ("no whole unit", "memory", GI + 1, "~1024.0Mi"),
        ("a few bytes", "ephemeral-storage", 1023, "1023"),
        ("hugepages", "hugepages-2Mi", 4 * MI, "4Mi"),
        ("devices", "nvidia.com/gpu", 2, "2"),
        ("nothing", "memory", 0, "0"),
    ];
    for (name, resource, amount, want) in cases {
        assert_eq!(format_amount(resource, amount), want, "case {name}");
    }
}

#[test]
fn long_text_is_wrapped_between_words() {
    let words = vec!["word"; 40].join(" ");
    let lines = wrap_words(&words, "Message:  ", "          ");
    assert!(lines.iter().all(|line| line.chars().count() <= WIDTH));
    assert!(lines[1].starts_with("          word"));
    let rejoined: Vec<&str> = lines.iter().flat_map(|l| l.split_whitespace()).collect();
    assert_eq!(rejoined.len(), 41);
}

#[tokio::test]
async fn a_single_feasible_node_is_not_scored() {
    // small selects hostname node-c, the only node with that label.
    let text = explained("small").await;
    let best = "\
Best feasible nodes: 1 of 7 nodes passed filtering
  node-c  total 0  (chosen)
      not scored: the only node that passed filtering
";
    pretty_assertions::assert_eq!(section(&text, "Best feasible nodes:"), best);
}

#[test]
fn required_node_affinity_terms_read_as_label_selectors() {
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web"},
        "spec": {
            "containers": [{"name": "c"}],
            "nodeSelector": {"disktype": "ssd"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [
                        {"key": "zone", "operator": "In", "values": ["z1", "z2"]},
                        {"key": "gpu", "operator": "DoesNotExist"}
                    ]},
                    {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["8"]}],
                     "matchFields": [
                        {"key": "metadata.name", "operator": "NotIn", "values": ["node-x"]}
                     ]}
                ]
            }}}
        }
    }))
    .expect("a pod");
    let group = ReasonGroup {
        reason: REASON_NODE_AFFINITY,
        nodes: vec!["node-a"],
    };
    let want = vec![
        "  - 1 node lacks the labels the pod asks for (node-a):",
        "      nodeSelector: disktype=ssd",
        "      required node affinity, one of:",
        "        zone in (z1, z2), !gpu",
        "        cores > 8, field metadata.name notin (node-x)",
    ];
    assert_eq!(affinity_hint(&pod, &group), want);
}

#[test]
fn a_reason_without_a_rule_gets_no_hint() {
    let input = r#"
apiVersion: v1
kind: Node
metadata: {name: node-a}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: c, image: nginx, ports: [{containerPort: 80, hostPort: 80}]}]
"#;
    let (cluster, _) = load_str(Path::new("ports.yaml"), input).expect("the cluster loads");
    let pod = PodReport {
        nodes: Some(vec![infeasible(
            "node-a",
            &["node(s) didn't have free ports for the requested pod ports"],
        )]),
        ..pod_report("web", PodResult::Unschedulable)
    };
    let text = explain_pod(&Report::default(), &pod, &cluster);
    assert!(
        text.ends_with("What would make it fit: no hint; no rule here covers the reasons above.\n"),
        "{text}"
    );
}
