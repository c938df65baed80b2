//! One pod's scheduling explained for people: what `berth simulate --pod NS/NAME` and
//! `kubectl berth why` print (the format is described in `docs/simulate.md`, "Explanation
//! of one pod").
//!
//! Upstream answers "why is my pod Pending?" with one line of counts in a FailedScheduling
//! event. The simulation with `explain` on knows more: every node's filter verdict and
//! every plugin's score. This module turns that into text a person reads top to bottom:
//! the verdict, the filtered nodes grouped by reason (upstream's counts, then the nodes of
//! each group), the best-scoring feasible nodes, and, where a rule says it plainly, what
//! would make the pod fit.
//!
//! The hints are judged on the cluster as the simulation left it (running pods, minus the
//! pods preemptions evicted, plus the pods it bound or reserved), with the scheduler's
//! own request accounting ([`PodInfo`], [`NodeInfo`]). They are keyed off the Filter
//! reasons' upstream texts; a reason without a rule gets no hint rather than a guess.
//! The explanation is a pure function of the simulation's input and report: no clock,
//! no colours, sorted wherever the report is not.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, Taint};

use crate::cluster::{NodeInfo, PodInfo};
use crate::helpers::taints::{
    is_do_not_schedule_taint, node_taints, pod_tolerations, tolerations_tolerate_taint,
};

use super::input::ClusterInput;
use super::report::{NodeReport, PodReport, PodResult, Report};

// The Filter reasons the hints are keyed off, in upstream's words. The plugins' modules
// are not visible up here (only the registry is), so the texts are mirrored; the tests
// tie each one to what the plugin reports.
/// TaintToleration's reason, upstream's text since 1.35: it names no taint, so the hint
/// reads the taints from the nodes. (The plugin's own constant is below this layer's
/// reach; the hint tests fail if the two differ.)
const REASON_UNTOLERATED_TAINT: &str = "node(s) had untolerated taint(s)";
/// NodeResourcesFit's reason, followed by the resource name.
const REASON_INSUFFICIENT: &str = "Insufficient ";
/// NodeResourcesFit's reason when the node holds as many pods as it allows.
const REASON_TOO_MANY_PODS: &str = "Too many pods";
/// NodeAffinity's reason for the pod's own `nodeSelector` and required node affinity
/// (upstream `ErrReasonPod`).
const REASON_NODE_AFFINITY: &str = "node(s) didn't match Pod's node affinity/selector";

/// Lines are wrapped at this many columns where the text allows it.
const WIDTH: usize = 100;
/// Node names listed per reason before "and N more".
const MAX_NAMES: usize = 10;
/// Feasible nodes shown with their scores.
const TOP_NODES: usize = 3;
/// Nodes shown per insufficient resource or full node hint.
const CLOSEST_NODES: usize = 3;
/// Labels of the header lines are padded to this width.
const LABEL_WIDTH: usize = 16;
/// The group of an infeasible node that carries no reason text.
const NO_REASON: &str = "(no reason given)";

/// The explanation of `pod` (one of `report.pods`, from a simulation of `cluster` with
/// `explain` on): lines ending in `\n`, sections separated by a blank line.
pub fn explain_pod(report: &Report, pod: &PodReport, cluster: &ClusterInput) -> String {
    let mut sections = vec![header(report, pod)];
    if let Some(note) = result_note(report, pod) {
        sections.push(wrap_words(&note, "", ""));
    }
    if matches!(
        pod.result,
        PodResult::Scheduled | PodResult::Unschedulable | PodResult::Waiting | PodResult::Preempted
    ) {
        sections.extend(node_sections(report, pod, cluster));
    }
    let mut out = String::new();
    for (index, section) in sections.iter().filter(|s| !s.is_empty()).enumerate() {
        if index > 0 {
            out.push('\n');
        }
        for line in section {
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    out
}

/// Pod, profile, pod group, result, message, node, nomination and victims.
fn header(report: &Report, pod: &PodReport) -> Vec<String> {
    let mut lines = Vec::new();
    let mut field = |label: &str, value: &str| {
        let first = pad(&format!("{label}:"), LABEL_WIDTH);
        lines.extend(wrap_words(value, &first, &" ".repeat(LABEL_WIDTH)));
    };
    field("Pod", &format!("{}/{}", pod.namespace, pod.name));
    field("Profile", &pod.scheduler_name);
    if let Some(group) = &pod.pod_group {
        field("Pod group", &group_line(report, &pod.namespace, group));
    }
    field("Result", &pod.result.to_string());
    if !pod.message.is_empty() {
        field("Message", &pod.message);
    }
    match (&pod.node, pod.result) {
        (Some(node), PodResult::Waiting) => field("Node", &format!("{node} (reserved)")),
        (Some(node), _) => field("Node", node),
        (None, _) => {}
    }
    if let Some(nominated) = &pod.nominated_node {
        field("Nominated node", nominated);
    }
    if !pod.victims.is_empty() {
        field("Victims", &pod.victims.join(", "));
    }
    lines
}

/// `<namespace>/<name>: gang (min 3), 0/4 bound, PodGroupInitiallyScheduled False
/// (Unschedulable)`, or that the PodGroup is not in the input.
fn group_line(report: &Report, namespace: &str, name: &str) -> String {
    let Some(group) = report
        .pod_groups
        .iter()
        .find(|g| g.namespace == namespace && g.name == name)
    else {
        return format!("{namespace}/{name} (no such PodGroup in the input)");
    };
    let mut line = format!(
        "{namespace}/{name}: {}, {}/{} bound",
        group.policy_text(),
        group.bound,
        group.members
    );
    if let Some(condition) = &group.condition {
        line.push_str(&format!(
            ", {} {} ({})",
            condition.type_, condition.status, condition.reason
        ));
    }
    line
}

/// A sentence for the results whose sections differ from a plain verdict.
fn result_note(report: &Report, pod: &PodReport) -> Option<String> {
    match pod.result {
        PodResult::Scheduled | PodResult::Unschedulable => None,
        PodResult::Waiting => Some(
            "The pod is reserved on its node but held at Permit (for example by a pod group \
             short of its minimum members): it is not bound. No hint applies."
                .to_string(),
        ),
        PodResult::Error => Some(
            "The last attempt ended in an error (the message above), not in a verdict on \
             the nodes: there is nothing to explain per node."
                .to_string(),
        ),
        PodResult::NotServed => Some(format!(
            "No profile of the simulation serves schedulerName {:?}: no scheduler looked at \
             the pod, so there are no per-node verdicts.",
            pod.scheduler_name
        )),
        PodResult::Preempted => Some(match chosen_node(report, pod) {
            Some(node) => format!(
                "The pod was scheduled on {node}, then evicted by a preemption; the verdicts \
                 below are those of the attempt that scheduled it."
            ),
            None => "The pod was scheduled, then evicted by a preemption; the verdicts below \
                     are those of the attempt that scheduled it."
                .to_string(),
        }),
    }
}

/// The node the verdicts chose: bound or reserved, or (for an evicted pod) the node it
/// was evicted from.
fn chosen_node<'a>(report: &'a Report, pod: &'a PodReport) -> Option<&'a str> {
    match pod.result {
        PodResult::Scheduled | PodResult::Waiting => pod.node.as_deref(),
        PodResult::Preempted => {
            let key = format!("{}/{}", pod.namespace, pod.name);
            report
                .evicted
                .iter()
                .find(|eviction| eviction.pod == key)
                .map(|eviction| eviction.node.as_str())
        }
        _ => None,
    }
}

/// Filtered nodes by reason, best feasible nodes, and (for an unschedulable pod) hints.
fn node_sections(report: &Report, pod: &PodReport, cluster: &ClusterInput) -> Vec<Vec<String>> {
    let nodes = match &pod.nodes {
        None => {
            return vec![vec![
                "No per-node verdicts: the simulation ran without explain.".to_string(),
            ]];
        }
        Some(nodes) if nodes.is_empty() && pod.attempts == 0 => {
            return vec![vec![
                "No node was evaluated: the pod never reached a scheduling cycle.".to_string(),
            ]];
        }
        Some(nodes) if nodes.is_empty() => {
            return vec![vec!["No node was evaluated.".to_string()]];
        }
        Some(nodes) => nodes,
    };
    let groups = reason_groups(nodes);
    let mut sections = Vec::new();
    if !groups.is_empty() {
        sections.push(filtered_section(nodes, &groups));
    }
    if nodes.iter().any(|node| node.feasible) {
        sections.push(best_section(nodes, chosen_node(report, pod)));
    }
    if pod.result == PodResult::Unschedulable && !groups.is_empty() {
        sections.push(hints_section(report, pod, cluster, &groups));
    }
    sections
}

/// The infeasible nodes that share one filter reason.
#[derive(Debug)]
struct ReasonGroup<'a> {
    reason: &'a str,
    /// Sorted by name.
    nodes: Vec<&'a str>,
}

/// One group per reason, most nodes first, ties by reason text; a node with several
/// reasons is in each of their groups.
fn reason_groups(nodes: &[NodeReport]) -> Vec<ReasonGroup<'_>> {
    let mut by_reason: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for node in nodes.iter().filter(|node| !node.feasible) {
        let reasons: Vec<&str> = if node.filter_reasons.is_empty() {
            vec![NO_REASON]
        } else {
            node.filter_reasons.iter().map(String::as_str).collect()
        };
        for reason in reasons {
            by_reason.entry(reason).or_default().insert(&node.name);
        }
    }
    let mut groups: Vec<ReasonGroup> = by_reason
        .into_iter()
        .map(|(reason, nodes)| ReasonGroup {
            reason,
            nodes: nodes.into_iter().collect(),
        })
        .collect();
    groups.sort_by(|a, b| {
        b.nodes
            .len()
            .cmp(&a.nodes.len())
            .then_with(|| a.reason.cmp(b.reason))
    });
    groups
}

fn filtered_section(nodes: &[NodeReport], groups: &[ReasonGroup]) -> Vec<String> {
    let filtered = nodes.iter().filter(|node| !node.feasible).count();
    let mut lines = vec![format!(
        "Filtered out: {filtered} of {}",
        count(nodes.len(), "node", "nodes")
    )];
    let count_width = groups
        .iter()
        .map(|group| group.nodes.len().to_string().len())
        .max()
        .unwrap_or(1);
    let reason_indent = " ".repeat(2 + count_width + 2);
    let names_indent = " ".repeat(2 + count_width + 4);
    for group in groups {
        let first = format!(
            "  {}  ",
            pad_left(&group.nodes.len().to_string(), count_width)
        );
        lines.extend(wrap_words(group.reason, &first, &reason_indent));
        lines.extend(wrap_list(
            &names(&group.nodes),
            &names_indent,
            &names_indent,
        ));
    }
    lines
}

/// The best [`TOP_NODES`] feasible nodes by total score (ties by name), and the chosen
/// node after them when a tie-break put it further down.
fn best_section(nodes: &[NodeReport], chosen: Option<&str>) -> Vec<String> {
    let mut feasible: Vec<&NodeReport> = nodes.iter().filter(|node| node.feasible).collect();
    feasible.sort_by(|a, b| {
        b.total_score
            .cmp(&a.total_score)
            .then_with(|| a.name.cmp(&b.name))
    });
    let mut shown: Vec<&NodeReport> = feasible.iter().take(TOP_NODES).copied().collect();
    if let Some(chosen) = feasible
        .iter()
        .skip(TOP_NODES)
        .find(|node| Some(node.name.as_str()) == chosen)
    {
        shown.push(chosen);
    }
    let mut lines = vec![format!(
        "Best feasible nodes: {} of {} passed filtering",
        feasible.len(),
        count(nodes.len(), "node", "nodes")
    )];
    let name_width = shown
        .iter()
        .map(|n| n.name.chars().count())
        .max()
        .unwrap_or(0);
    let total_width = shown
        .iter()
        .map(|n| n.total_score.to_string().len())
        .max()
        .unwrap_or(0);
    for node in shown {
        let mut line = format!(
            "  {}  total {}",
            pad(&node.name, name_width),
            pad_left(&node.total_score.to_string(), total_width)
        );
        if Some(node.name.as_str()) == chosen {
            line.push_str("  (chosen)");
        }
        lines.push(line);
        let scores: Vec<String> = node
            .scores
            .iter()
            .map(|s| format!("{} {}x{}={}", s.plugin, s.score, s.weight, s.weighted))
            .collect();
        if scores.is_empty() && feasible.len() == 1 {
            // Upstream skips scoring when a single node passed filtering.
            lines.push("      not scored: the only node that passed filtering".to_string());
        } else if scores.is_empty() {
            lines.push("      no Score plugin ran".to_string());
        } else {
            lines.extend(wrap_list(&scores, "      ", "      "));
        }
    }
    lines
}

/// The rule a filter reason's hint follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule<'a> {
    Taint,
    Insufficient(&'a str),
    TooManyPods,
    NodeAffinity,
}

fn rule_of(reason: &str) -> Option<Rule<'_>> {
    if reason == REASON_UNTOLERATED_TAINT {
        Some(Rule::Taint)
    } else if let Some(resource) = reason.strip_prefix(REASON_INSUFFICIENT) {
        Some(Rule::Insufficient(resource))
    } else if reason == REASON_TOO_MANY_PODS {
        Some(Rule::TooManyPods)
    } else if reason == REASON_NODE_AFFINITY {
        Some(Rule::NodeAffinity)
    } else {
        None
    }
}

/// What the hints are judged on: the pending pod as the input gives it, and every node
/// with the pods on it at the end of the simulation.
struct EndState<'a> {
    pod: &'a Pod,
    pod_info: Option<PodInfo>,
    nodes: BTreeMap<&'a str, &'a Node>,
    infos: BTreeMap<&'a str, NodeInfo>,
}

impl<'a> EndState<'a> {
    fn new(report: &Report, pod: &PodReport, cluster: &'a ClusterInput) -> Option<Self> {
        let spec = cluster
            .pending_pods()
            .find(|p| namespaced_name(p) == (pod.namespace.as_str(), pod.name.as_str()))?;
        let nodes: BTreeMap<&str, &Node> = cluster
            .nodes
            .iter()
            .filter_map(|node| Some((node.metadata.name.as_deref()?, node)))
            .collect();
        let mut infos: BTreeMap<&str, NodeInfo> = nodes
            .iter()
            .filter_map(|(name, node)| Some((*name, NodeInfo::new(Node::clone(node)).ok()?)))
            .collect();
        let evicted: HashSet<&str> = report.evicted.iter().map(|e| e.pod.as_str()).collect();
        let mut add = |pod: &Pod, node: &str| {
            if let (Some(info), Ok(pod_info)) = (infos.get_mut(node), PodInfo::new(pod.clone())) {
                info.add_pod(Arc::new(pod_info));
            }
        };
        for running in cluster.running_pods() {
            let (namespace, name) = namespaced_name(running);
            if evicted.contains(format!("{namespace}/{name}").as_str()) {
                continue;
            }
            if let Some(node) = running.spec.as_ref().and_then(|s| s.node_name.as_deref()) {
                add(running, node);
            }
        }
        let placed: HashMap<(&str, &str), &str> = report
            .pods
            .iter()
            .filter(|p| matches!(p.result, PodResult::Scheduled | PodResult::Waiting))
            .filter_map(|p| Some(((p.namespace.as_str(), p.name.as_str()), p.node.as_deref()?)))
            .collect();
        for pending in cluster.pending_pods() {
            if let Some(node) = placed.get(&namespaced_name(pending)) {
                add(pending, node);
            }
        }
        Some(EndState {
            pod: spec,
            pod_info: PodInfo::new(spec.clone()).ok(),
            nodes,
            infos,
        })
    }
}

/// A pod's namespace (the API server's default when absent) and name.
fn namespaced_name(pod: &Pod) -> (&str, &str) {
    (
        pod.metadata.namespace.as_deref().unwrap_or("default"),
        pod.metadata.name.as_deref().unwrap_or_default(),
    )
}

fn hints_section(
    report: &Report,
    pod: &PodReport,
    cluster: &ClusterInput,
    groups: &[ReasonGroup],
) -> Vec<String> {
    let Some(state) = EndState::new(report, pod, cluster) else {
        return vec![
            "What would make it fit: no hint; the pod is not among the pending pods of the \
             input."
                .to_string(),
        ];
    };
    let hints: Vec<String> = groups
        .iter()
        .filter_map(|group| Some((rule_of(group.reason)?, group)))
        .flat_map(|(rule, group)| match rule {
            Rule::Taint => taint_hints(&state, group),
            Rule::Insufficient(resource) => resource_hint(&state, group, resource),
            Rule::TooManyPods => pods_hint(&state, group),
            Rule::NodeAffinity => affinity_hint(state.pod, group),
        })
        .collect();
    if hints.is_empty() {
        return vec![
            "What would make it fit: no hint; no rule here covers the reasons above.".to_string(),
        ];
    }
    let mut lines =
        vec!["What would make it fit, judged on the cluster at the end of the simulation:".into()];
    lines.extend(hints);
    lines.extend(wrap_words(
        "Each hint lifts one reason. Filtering stops at a node's first failing plugin, so \
         a node may still fail one that runs after it.",
        "  ",
        "  ",
    ));
    lines
}

/// The `NoSchedule`/`NoExecute` taints the pod would have to tolerate on each node of a
/// taint group (all of them, not only the first one the reason names), nodes with the
/// same set together.
fn taint_hints(state: &EndState, group: &ReasonGroup) -> Vec<String> {
    let tolerations = pod_tolerations(state.pod);
    let mut by_taints: BTreeMap<Vec<String>, Vec<&str>> = BTreeMap::new();
    for name in &group.nodes {
        let Some(node) = state.nodes.get(name) else {
            continue;
        };
        let mut taints: Vec<String> = node_taints(node)
            .iter()
            .filter(|taint| is_do_not_schedule_taint(taint))
            .filter(|taint| !tolerations_tolerate_taint(tolerations, taint))
            .map(taint_text)
            .collect();
        taints.sort();
        taints.dedup();
        if !taints.is_empty() {
            by_taints.entry(taints).or_default().push(name);
        }
    }
    let mut sets: Vec<(Vec<String>, Vec<&str>)> = by_taints.into_iter().collect();
    sets.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
    sets.iter()
        .flat_map(|(taints, nodes)| {
            let text = format!(
                "- tolerate {} ({}: {})",
                taints.join(" and "),
                count(nodes.len(), "node", "nodes"),
                names(nodes).join(" ")
            );
            wrap_words(&text, "  ", "    ")
        })
        .collect()
}

/// `key=value:effect`, or `key:effect` for a taint without a value, as kubectl writes it.
fn taint_text(taint: &Taint) -> String {
    match taint.value.as_deref() {
        Some(value) if !value.is_empty() => format!("{}={value}:{}", taint.key, taint.effect),
        _ => format!("{}:{}", taint.key, taint.effect),
    }
}

/// The nodes of an `Insufficient <resource>` group closest to fitting: the pod's request
/// (what NodeResourcesFit compares) against the node's free room.
fn resource_hint(state: &EndState, group: &ReasonGroup, resource: &str) -> Vec<String> {
    let Some(pod_info) = &state.pod_info else {
        return Vec::new();
    };
    let request = pod_info.filter_requests.get(resource);
    let mut short: Vec<(i64, &str, i64, i64)> = group
        .nodes
        .iter()
        .filter_map(|name| {
            let info = state.infos.get(name)?;
            let allocatable = info.allocatable.get(resource);
            let free = allocatable.saturating_sub(info.requested.get(resource));
            let shortfall = request.saturating_sub(free);
            (shortfall > 0).then_some((shortfall, *name, free, allocatable))
        })
        .collect();
    if short.is_empty() {
        return Vec::new();
    }
    short.sort();
    let mut lines = vec![format!(
        "  - {REASON_INSUFFICIENT}{resource} on {}; the closest:",
        count(group.nodes.len(), "node", "nodes")
    )];
    for (shortfall, name, free, allocatable) in short.into_iter().take(CLOSEST_NODES) {
        let amount = |value: i64| format_amount(resource, value);
        let beyond = if request > allocatable {
            "; more than the node has"
        } else {
            ""
        };
        lines.push(format!(
            "      {name}: {resource} short by {} (requests {}, free {} of {}{beyond})",
            amount(shortfall),
            amount(request),
            amount(free),
            amount(allocatable)
        ));
    }
    lines
}

/// The nodes of a `Too many pods` group with their pod capacity.
fn pods_hint(state: &EndState, group: &ReasonGroup) -> Vec<String> {
    let full: Vec<(&str, usize, i64)> = group
        .nodes
        .iter()
        .filter_map(|name| {
            let info = state.infos.get(name)?;
            let capacity = info.allocatable.allowed_pod_number;
            (info.pods.len() as i64 >= capacity).then_some((*name, info.pods.len(), capacity))
        })
        .collect();
    if full.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "  - {REASON_TOO_MANY_PODS} on {}, each at its pod capacity:",
        count(group.nodes.len(), "node", "nodes")
    )];
    lines.extend(
        full.iter()
            .take(CLOSEST_NODES)
            .map(|(name, pods, capacity)| {
                format!(
                    "      {name}: holds {}, allows {capacity}",
                    count(*pods, "pod", "pods")
                )
            }),
    );
    if full.len() > CLOSEST_NODES {
        lines.push(format!("      and {} more", full.len() - CLOSEST_NODES));
    }
    lines
}

/// The node labels (and fields) the pod's `nodeSelector` and required node affinity ask
/// for.
fn affinity_hint(pod: &Pod, group: &ReasonGroup) -> Vec<String> {
    let spec = pod.spec.as_ref();
    let selector: Vec<String> = spec
        .and_then(|s| s.node_selector.as_ref())
        .into_iter()
        .flatten()
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    let terms: &[NodeSelectorTerm] = spec
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(|required| required.node_selector_terms.as_slice())
        .unwrap_or_default();
    if selector.is_empty() && terms.is_empty() {
        return Vec::new();
    }
    let text = format!(
        "- {} the labels the pod asks for ({}):",
        count(group.nodes.len(), "node lacks", "nodes lack"),
        names(&group.nodes).join(" ")
    );
    let mut lines = wrap_words(&text, "  ", "    ");
    if !selector.is_empty() {
        lines.extend(wrap_words(
            &format!("nodeSelector: {}", selector.join(", ")),
            "      ",
            "        ",
        ));
    }
    match terms {
        [] => {}
        [term] => lines.extend(wrap_words(
            &format!("required node affinity: {}", term_text(term)),
            "      ",
            "        ",
        )),
        terms => {
            lines.push("      required node affinity, one of:".to_string());
            for term in terms {
                lines.extend(wrap_words(&term_text(term), "        ", "          "));
            }
        }
    }
    lines
}

/// A node selector term as a label selector reads: its requirements, all of which must
/// hold, `, `-separated; fields are named as such.
fn term_text(term: &NodeSelectorTerm) -> String {
    let labels = term
        .match_expressions
        .iter()
        .flatten()
        .map(requirement_text);
    let fields = term
        .match_fields
        .iter()
        .flatten()
        .map(|r| format!("field {}", requirement_text(r)));
    let requirements: Vec<String> = labels.chain(fields).collect();
    if requirements.is_empty() {
        "(an empty term, which no node matches)".to_string()
    } else {
        requirements.join(", ")
    }
}

fn requirement_text(requirement: &NodeSelectorRequirement) -> String {
    let key = &requirement.key;
    let values = requirement.values.as_deref().unwrap_or_default().join(", ");
    match requirement.operator.as_str() {
        "In" => format!("{key} in ({values})"),
        "NotIn" => format!("{key} notin ({values})"),
        "Exists" => key.clone(),
        "DoesNotExist" => format!("!{key}"),
        "Gt" => format!("{key} > {values}"),
        "Lt" => format!("{key} < {values}"),
        other => format!("{key} {other} ({values})"),
    }
}

/// An amount of `resource` in its natural unit: cpu in cores or millicores, byte amounts
/// with the largest exact binary (else decimal) suffix, counts as numbers.
fn format_amount(resource: &str, amount: i64) -> String {
    match resource {
        "cpu" if amount % 1000 == 0 => (amount / 1000).to_string(),
        "cpu" => format!("{amount}m"),
        "memory" | "ephemeral-storage" => format_bytes(amount),
        _ if resource.starts_with("hugepages-") => format_bytes(amount),
        _ => amount.to_string(),
    }
}

const MI: i64 = 1 << 20;

fn format_bytes(bytes: i64) -> String {
    const SUFFIXES: [(&str, i64); 12] = [
        ("Ei", 1 << 60),
        ("Pi", 1 << 50),
        ("Ti", 1 << 40),
        ("Gi", 1 << 30),
        ("Mi", MI),
        ("Ki", 1 << 10),
        ("E", 1_000_000_000_000_000_000),
        ("P", 1_000_000_000_000_000),
        ("T", 1_000_000_000_000),
        ("G", 1_000_000_000),
        ("M", 1_000_000),
        ("k", 1_000),
    ];
    if bytes == 0 {
        return "0".to_string();
    }
    if let Some((suffix, unit)) = SUFFIXES.iter().find(|(_, unit)| bytes % unit == 0) {
        return format!("{}{suffix}", bytes / unit);
    }
    if bytes.unsigned_abs() >= MI as u64 {
        // Not a whole number of any unit: approximately, in Mi.
        format!("~{:.1}Mi", bytes as f64 / MI as f64)
    } else {
        bytes.to_string()
    }
}

/// `1 node`, `3 nodes`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Node names for a list: at most [`MAX_NAMES`], then `and N more`; commas included.
fn names(nodes: &[&str]) -> Vec<String> {
    let shown = nodes.len().min(MAX_NAMES);
    let mut items: Vec<String> = nodes[..shown]
        .iter()
        .enumerate()
        .map(|(i, name)| {
            if i + 1 < nodes.len() {
                format!("{name},")
            } else {
                name.to_string()
            }
        })
        .collect();
    if nodes.len() > shown {
        items.push(format!("and {} more", nodes.len() - shown));
    }
    items
}

/// Items separated by `, `, wrapped between items.
fn wrap_list(items: &[String], first: &str, rest: &str) -> Vec<String> {
    let pieces: Vec<String> = items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            if i + 1 < items.len() && !item.ends_with(',') {
                format!("{item},")
            } else {
                item.clone()
            }
        })
        .collect();
    fill(pieces.iter().map(String::as_str), first, rest)
}

/// `text` wrapped between words at [`WIDTH`] columns; the first line starts with
/// `first`, the others with `rest`.
fn wrap_words(text: &str, first: &str, rest: &str) -> Vec<String> {
    fill(text.split(' ').filter(|word| !word.is_empty()), first, rest)
}

/// Greedy filling: a piece longer than a line gets a line of its own.
fn fill<'a>(pieces: impl Iterator<Item = &'a str>, first: &str, rest: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = first.to_string();
    let mut empty = true;
    for piece in pieces {
        let width = line.chars().count() + usize::from(!empty) + piece.chars().count();
        if !empty && width > WIDTH {
            lines.push(std::mem::replace(&mut line, rest.to_string()));
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(piece);
        empty = false;
    }
    if !empty || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// `text` padded with spaces to `width` columns (by hand: `{:<width$}` panics on widths
/// above u16::MAX).
fn pad(text: &str, width: usize) -> String {
    let mut padded = text.to_string();
    padded.extend(std::iter::repeat_n(
        ' ',
        width.saturating_sub(text.chars().count()),
    ));
    padded
}

fn pad_left(text: &str, width: usize) -> String {
    let mut padded: String =
        std::iter::repeat_n(' ', width.saturating_sub(text.chars().count())).collect();
    padded.push_str(text);
    padded
}

#[cfg(test)]
mod tests;
