//! Rendering a [`Report`] for people (`-o table`, aligned like `kubectl get`) and for
//! programs (`-o json`, the stable interface documented in `docs/simulate.md`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use super::report::{NodeReport, PodGroupResult, PodReport, Report};

/// Columns are separated by three spaces, as kubectl's tabwriter does.
const COLUMN_GAP: usize = 3;

/// One line per pod: POD (namespace/name), PROFILE, RESULT, NODE (`-` when none),
/// MESSAGE. The Workload API pod groups, if any, follow in a second table (POD GROUP,
/// POLICY, BOUND, SCHEDULED, REASON, MESSAGE: the PodGroup's `PodGroupInitiallyScheduled`
/// condition), then degraded plugins (PROFILE, DEGRADED PLUGIN, REASON, MESSAGE). When
/// the report carries per-node detail (`--explain`), a block per pod follows.
pub fn render_table(report: &Report) -> String {
    let header = ["POD", "PROFILE", "RESULT", "NODE", "MESSAGE"].map(String::from);
    let rows: Vec<[String; 5]> = report
        .pods
        .iter()
        .map(|pod| {
            [
                format!("{}/{}", pod.namespace, pod.name),
                pod.scheduler_name.clone(),
                pod.result.to_string(),
                pod.node
                    .clone()
                    .filter(|n| !n.is_empty())
                    .unwrap_or_else(|| "-".to_string()),
                message_with_victims(pod),
            ]
        })
        .collect();
    let mut out = align(std::iter::once(header).chain(rows), "");
    if report.pods.iter().any(|p| !p.devices.is_empty()) {
        let header = ["POD", "CLAIM", "REQUEST", "DEVICE"].map(String::from);
        let rows = report.pods.iter().flat_map(|pod| {
            pod.devices.iter().map(move |d| {
                [
                    format!("{}/{}", pod.namespace, pod.name),
                    d.claim.clone(),
                    d.request.clone(),
                    d.device.clone(),
                ]
            })
        });
        out.push('\n');
        out.push_str(&align(std::iter::once(header).chain(rows), ""));
    }
    if !report.pod_groups.is_empty() {
        out.push('\n');
        out.push_str(&render_pod_groups(&report.pod_groups));
    }
    if !report.degraded.is_empty() {
        let header = ["PROFILE", "DEGRADED PLUGIN", "REASON", "MESSAGE"].map(String::from);
        let rows = report.degraded.iter().map(|d| {
            [
                d.scheduler_name.clone(),
                d.plugin.clone(),
                d.reason.clone(),
                d.message.clone(),
            ]
        });
        out.push('\n');
        out.push_str(&align(std::iter::once(header).chain(rows), ""));
    }
    if !report.moved.is_empty() {
        let header = ["MOVED POD", "FROM", "TO"].map(String::from);
        let rows = report
            .moved
            .iter()
            .map(|m| [m.pod.clone(), m.from.clone(), m.to.clone()]);
        out.push('\n');
        out.push_str(&align(std::iter::once(header).chain(rows), ""));
    }
    for pod in &report.pods {
        if let Some(nodes) = &pod.nodes {
            out.push('\n');
            out.push_str(&render_explanation(pod, nodes));
        }
    }
    out
}

/// One line per pod group: its policy, members bound out of all, and its condition
/// (`-` where no pod-group cycle set one, and for berth's and scheduler-plugins'
/// PodGroups, whose message is their last cycle's).
fn render_pod_groups(groups: &[PodGroupResult]) -> String {
    let header = [
        "POD GROUP",
        "POLICY",
        "BOUND",
        "SCHEDULED",
        "REASON",
        "MESSAGE",
    ]
    .map(String::from);
    let rows = groups.iter().map(|group| {
        let condition = group.condition.as_ref();
        let field = |f: fn(&Condition) -> &String| {
            condition
                .map(f)
                .filter(|v| !v.is_empty())
                .cloned()
                .unwrap_or_else(|| "-".to_string())
        };
        [
            format!("{}/{}", group.namespace, group.name),
            group.policy_text(),
            format!("{}/{}", group.bound, group.members),
            field(|c| &c.status),
            field(|c| &c.reason),
            condition
                .map(|c| c.message.clone())
                .unwrap_or_else(|| group.message.clone()),
        ]
    });
    align(std::iter::once(header).chain(rows), "")
}

/// The pod's message, followed by the pods its preemptions evicted, e.g.
/// `(evicted default/a, default/b)`.
fn message_with_victims(pod: &PodReport) -> String {
    if pod.victims.is_empty() {
        return pod.message.clone();
    }
    let evicted = format!("(evicted {})", pod.victims.join(", "));
    if pod.message.is_empty() {
        evicted
    } else {
        format!("{} {evicted}", pod.message)
    }
}

/// The per-node verdicts of one pod: feasibility, weighted scores, filter reasons.
fn render_explanation(pod: &PodReport, nodes: &[NodeReport]) -> String {
    let placement = match &pod.node {
        Some(node) => format!("{} on {node}", pod.result),
        None => pod.result.to_string(),
    };
    let mut out = format!(
        "{}/{} ({}): {placement}\n",
        pod.namespace, pod.name, pod.scheduler_name
    );
    if nodes.is_empty() {
        out.push_str("  no nodes were evaluated\n");
        return out;
    }
    let header = ["NODE", "FEASIBLE", "SCORE", "DETAILS"].map(String::from);
    let rows = nodes.iter().map(|node| {
        let details = if node.feasible {
            node.scores
                .iter()
                .map(|s| format!("{} {}x{}={}", s.plugin, s.score, s.weight, s.weighted))
                .collect::<Vec<_>>()
                .join(", ")
        } else {
            node.filter_reasons.join("; ")
        };
        [
            node.name.clone(),
            if node.feasible { "yes" } else { "no" }.to_string(),
            if node.feasible {
                node.total_score.to_string()
            } else {
                "-".to_string()
            },
            details,
        ]
    });
    out.push_str(&align(std::iter::once(header).chain(rows), "  "));
    out
}

/// Pads every column but the last to its widest cell; trailing spaces are trimmed.
pub(crate) fn align<const N: usize>(
    rows: impl Iterator<Item = [String; N]>,
    indent: &str,
) -> String {
    let rows: Vec<[String; N]> = rows.collect();
    let mut widths = [0usize; N];
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let mut line = String::from(indent);
        for (column, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if column + 1 < N {
                // Padded by hand: `{:<width$}` panics on widths above u16::MAX.
                let pad = widths[column] + COLUMN_GAP - cell.chars().count();
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The report as pretty-printed JSON (no trailing newline).
pub fn render_json(report: &Report) -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate::report::{DegradedPlugin, EvictedPod, PluginScore, PodResult};

    fn pod(name: &str, result: PodResult, node: Option<&str>, message: &str) -> PodReport {
        PodReport {
            namespace: "default".to_string(),
            name: name.to_string(),
            scheduler_name: "default-scheduler".to_string(),
            pod_group: None,
            result,
            node: node.map(String::from),
            message: message.to_string(),
            attempts: 1,
            nominated_node: None,
            victims: Vec::new(),
            devices: Vec::new(),
            nodes: None,
        }
    }

    #[test]
    fn table_aligns_columns_like_kubectl() {
        let report = Report {
            pods: vec![
                pod("web-1", PodResult::Scheduled, Some("node-a"), ""),
                pod(
                    "huge",
                    PodResult::Unschedulable,
                    None,
                    "0/1 nodes are available: 1 Insufficient cpu.",
                ),
            ],
            ..Report::default()
        };
        let want = "\
POD             PROFILE             RESULT          NODE     MESSAGE
default/web-1   default-scheduler   Scheduled       node-a
default/huge    default-scheduler   Unschedulable   -        0/1 nodes are available: 1 Insufficient cpu.
";
        pretty_assertions::assert_eq!(render_table(&report), want);
    }

    /// `{:<width$}` panics above u16::MAX; a name that long is refused on input, and the
    /// table pads it all the same.
    #[test]
    fn columns_wider_than_u16_max_are_padded() {
        let long = "n".repeat(70_000);
        let report = Report {
            pods: vec![pod(&long, PodResult::Scheduled, Some("node-a"), "")],
            ..Report::default()
        };
        let table = render_table(&report);
        let row = table.lines().nth(1).expect("a pod row");
        assert_eq!(
            row,
            format!("default/{long}   default-scheduler   Scheduled   node-a")
        );
    }

    #[test]
    fn table_of_no_pods_is_just_the_header() {
        assert_eq!(
            render_table(&Report::default()),
            "POD   PROFILE   RESULT   NODE   MESSAGE\n"
        );
    }

    #[test]
    fn explain_adds_a_block_per_pod() {
        let mut scheduled = pod("web-1", PodResult::Scheduled, Some("node-a"), "");
        scheduled.nodes = Some(vec![
            NodeReport {
                name: "node-a".to_string(),
                feasible: true,
                filter_reasons: vec![],
                scores: vec![PluginScore {
                    plugin: "NodeResourcesFit".to_string(),
                    score: 37,
                    weight: 1,
                    weighted: 37,
                }],
                total_score: 37,
            },
            NodeReport {
                name: "node-b".to_string(),
                feasible: false,
                filter_reasons: vec!["Insufficient cpu".to_string()],
                scores: vec![],
                total_score: 0,
            },
        ]);
        let table = render_table(&Report {
            pods: vec![scheduled],
            ..Report::default()
        });
        let explanation = table.split_once("\n\n").map(|(_, e)| e).unwrap_or_default();
        let want = "\
default/web-1 (default-scheduler): Scheduled on node-a
  NODE     FEASIBLE   SCORE   DETAILS
  node-a   yes        37      NodeResourcesFit 37x1=37
  node-b   no         -       Insufficient cpu
";
        pretty_assertions::assert_eq!(explanation, want);
    }

    #[test]
    fn json_uses_the_documented_field_names() {
        let report = Report {
            pods: vec![pod("web-1", PodResult::Scheduled, Some("node-a"), "")],
            ..Report::default()
        };
        let json: serde_json::Value = render_json(&report)
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default();
        let want = serde_json::json!({"pods": [{
            "namespace": "default", "name": "web-1", "schedulerName": "default-scheduler",
            "result": "Scheduled", "node": "node-a", "message": "", "attempts": 1}]});
        assert_eq!(json, want);
    }

    #[test]
    fn a_pod_no_profile_serves_has_a_row_and_a_warning() {
        let report = Report {
            pods: vec![
                PodReport {
                    scheduler_name: "my-scheduler".to_string(),
                    ..pod(
                        "custom",
                        PodResult::NotServed,
                        None,
                        "no profile serves schedulerName \"my-scheduler\"",
                    )
                },
                pod("web-1", PodResult::Scheduled, Some("node-a"), ""),
            ],
            ..Report::default()
        };
        let want = "\
POD              PROFILE             RESULT      NODE     MESSAGE
default/custom   my-scheduler        NotServed   -        no profile serves schedulerName \"my-scheduler\"
default/web-1    default-scheduler   Scheduled   node-a
";
        pretty_assertions::assert_eq!(render_table(&report), want);
        assert_eq!(
            report.warnings(),
            vec![
                "pod default/custom: no profile serves schedulerName \"my-scheduler\"; the pod is not scheduled"
            ]
        );
        let json: serde_json::Value = render_json(&report)
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default();
        assert_eq!(json["pods"][0]["result"], "NotServed");
    }

    fn degraded_report() -> Report {
        Report {
            pods: vec![pod("web-1", PodResult::Scheduled, Some("node-a"), "")],
            degraded: vec![DegradedPlugin {
                scheduler_name: "network-aware".to_string(),
                plugin: "NetworkTraffic".to_string(),
                reason: "MetricsUnavailable".to_string(),
                message: "NetworkTraffic: cannot reach Prometheus at http://127.0.0.1:9: connection refused".to_string(),
            }],
            ..Report::default()
        }
    }

    /// spec §7 example 1 as the report shows it: the preemptor bound on its nominated
    /// node, the victim it evicted.
    fn preemption_report() -> Report {
        let preemptor = PodReport {
            nominated_node: Some("node-b".to_string()),
            victims: vec!["default/low-b2".to_string(), "default/low-b1".to_string()],
            ..pod("critical", PodResult::Scheduled, Some("node-b"), "")
        };
        let victim = pod(
            "low-b2",
            PodResult::Preempted,
            None,
            "preempted by default/critical on node node-b",
        );
        Report {
            pods: vec![preemptor, victim],
            evicted: vec![EvictedPod {
                pod: "default/low-b2".to_string(),
                node: "node-b".to_string(),
                preemptor: "default/critical".to_string(),
            }],
            ..Report::default()
        }
    }

    #[test]
    fn table_names_the_victims_in_the_message_column() {
        let want = "\
POD                PROFILE             RESULT      NODE     MESSAGE
default/critical   default-scheduler   Scheduled   node-b   (evicted default/low-b2, default/low-b1)
default/low-b2     default-scheduler   Preempted   -        preempted by default/critical on node node-b
";
        pretty_assertions::assert_eq!(render_table(&preemption_report()), want);
    }

    #[test]
    fn json_carries_nominations_victims_and_evictions() {
        let json: serde_json::Value = render_json(&preemption_report())
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default();
        assert_eq!(json["pods"][0]["nominatedNode"], "node-b");
        assert_eq!(
            json["pods"][0]["victims"],
            serde_json::json!(["default/low-b2", "default/low-b1"])
        );
        assert_eq!(json["pods"][1]["result"], "Preempted");
        assert!(json["pods"][1].get("victims").is_none(), "{json}");
        assert!(json["pods"][1].get("nominatedNode").is_none(), "{json}");
        assert_eq!(
            json["evicted"],
            serde_json::json!([{"pod": "default/low-b2", "node": "node-b",
                "preemptor": "default/critical"}])
        );
    }

    #[test]
    fn degraded_plugins_follow_the_pod_table() {
        let want = "\
POD             PROFILE             RESULT      NODE     MESSAGE
default/web-1   default-scheduler   Scheduled   node-a

PROFILE         DEGRADED PLUGIN   REASON               MESSAGE
network-aware   NetworkTraffic    MetricsUnavailable   NetworkTraffic: cannot reach Prometheus at http://127.0.0.1:9: connection refused
";
        pretty_assertions::assert_eq!(render_table(&degraded_report()), want);
    }

    #[test]
    fn pod_groups_follow_the_pod_table_with_their_condition() {
        use crate::simulate::report::{GroupPolicy, PodGroupResult};
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let condition = |status: &str, reason: &str, message: &str| Condition {
            type_: "PodGroupInitiallyScheduled".to_string(),
            status: status.to_string(),
            reason: reason.to_string(),
            message: message.to_string(),
            observed_generation: None,
            last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
        };
        let group = |name: &str, min_count: Option<i32>, bound, condition| PodGroupResult {
            namespace: "default".to_string(),
            name: name.to_string(),
            policy: if min_count.is_some() {
                GroupPolicy::Gang
            } else {
                GroupPolicy::Basic
            },
            min_count,
            members: 4,
            bound,
            condition,
            api_version: None,
            message: String::new(),
        };
        let report = Report {
            pods: vec![pod(
                "big-0",
                PodResult::Unschedulable,
                None,
                "pod group is unschedulable",
            )],
            pod_groups: vec![
                group(
                    "big",
                    Some(4),
                    0,
                    Some(condition(
                        "False",
                        "Unschedulable",
                        "minCount (4) cannot be satisfied",
                    )),
                ),
                group("web", None, 4, Some(condition("True", "Scheduled", ""))),
                group("held", Some(2), 0, None),
                PodGroupResult {
                    api_version: Some("scheduling.x-k8s.io/v1alpha1".to_string()),
                    message:
                        "pod group default/mpi cannot reach minMember (3): 2 scheduled, 0 remaining"
                            .to_string(),
                    ..group("mpi", Some(3), 0, None)
                },
            ],
            ..Report::default()
        };
        let want = "\
POD             PROFILE             RESULT          NODE   MESSAGE
default/big-0   default-scheduler   Unschedulable   -      pod group is unschedulable

POD GROUP      POLICY               BOUND   SCHEDULED   REASON          MESSAGE
default/big    gang (min 4)         0/4     False       Unschedulable   minCount (4) cannot be satisfied
default/web    basic                4/4     True        Scheduled
default/held   gang (min 2)         0/4     -           -
default/mpi    gang (minMember 3)   0/4     -           -               pod group default/mpi cannot reach minMember (3): 2 scheduled, 0 remaining
";
        pretty_assertions::assert_eq!(render_table(&report), want);
        let json: serde_json::Value = render_json(&report)
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default();
        assert_eq!(
            json["podGroups"][0],
            serde_json::json!({"namespace": "default", "name": "big", "policy": "Gang",
                "minCount": 4, "members": 4, "bound": 0,
                "condition": {"type": "PodGroupInitiallyScheduled", "status": "False",
                    "reason": "Unschedulable", "message": "minCount (4) cannot be satisfied",
                    "lastTransitionTime": "1970-01-01T00:00:00Z"}})
        );
        assert!(json["podGroups"][1].get("minCount").is_none(), "{json}");
        assert!(json["podGroups"][2].get("condition").is_none(), "{json}");
        assert!(json["podGroups"][2].get("apiVersion").is_none(), "{json}");
        assert_eq!(
            json["podGroups"][3]["apiVersion"], "scheduling.x-k8s.io/v1alpha1",
            "{json}"
        );
        assert_eq!(
            json["podGroups"][3]["message"],
            "pod group default/mpi cannot reach minMember (3): 2 scheduled, 0 remaining"
        );
    }

    #[test]
    fn degraded_plugins_are_warnings_too() {
        assert_eq!(
            degraded_report().warnings(),
            vec![
                "profile network-aware: plugin NetworkTraffic is degraded (MetricsUnavailable): NetworkTraffic: cannot reach Prometheus at http://127.0.0.1:9: connection refused"
            ]
        );
    }

    #[test]
    fn json_lists_degraded_plugins_by_profile() {
        let json: serde_json::Value = render_json(&degraded_report())
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default();
        let want = serde_json::json!([{
            "schedulerName": "network-aware", "plugin": "NetworkTraffic",
            "reason": "MetricsUnavailable",
            "message": "NetworkTraffic: cannot reach Prometheus at http://127.0.0.1:9: connection refused"}]);
        assert_eq!(json["degraded"], want);
    }
}
