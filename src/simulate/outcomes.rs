//! From the driver's last attempt of each pod to the [`Report`]: one row per pending pod
//! of the input, with what the simulated cluster did to it (bound, evicted, nominated).

use std::collections::HashMap;

use k8s_openapi::api::core::v1::Pod;

use crate::cluster::{GroupKey, pod_key};
use crate::scheduler::{AttemptReport, Outcome};

use super::preemption::Preemptions;
use super::report::{EvictedPod, NodeReport, PluginScore, PodReport, PodResult, Report};
use super::run::DEFAULT_SCHEDULER_NAME;

/// One row per pending pod, in input order: a pod no profile serves is listed as
/// [`PodResult::NotServed`] rather than left out, so no pod of the input vanishes.
///
/// A pod a preemption evicted is [`PodResult::Preempted`], whatever its last attempt said.
pub(super) fn build_report(
    pending: &[&Pod],
    served: &[String],
    reports: &HashMap<String, AttemptReport>,
    preemptions: &Preemptions,
    explain: bool,
) -> Report {
    let mut pods: Vec<PodReport> = pending
        .iter()
        .map(|pod| {
            let scheduler_name = pod
                .spec
                .as_ref()
                .and_then(|s| s.scheduler_name.clone())
                .unwrap_or_else(|| DEFAULT_SCHEDULER_NAME.to_string());
            let namespace = pod
                .metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into());
            let name = pod.metadata.name.clone().unwrap_or_default();
            if !served.contains(&scheduler_name) {
                return PodReport {
                    namespace,
                    name,
                    message: format!("no profile serves schedulerName {scheduler_name:?}"),
                    scheduler_name,
                    pod_group: None,
                    result: PodResult::NotServed,
                    node: None,
                    attempts: 0,
                    nominated_node: None,
                    victims: Vec::new(),
                    devices: Vec::new(),
                    nodes: None,
                };
            }
            let key = pod_key(pod);
            match reports.get(&key) {
                Some(report) => {
                    let mut row = pod_report(namespace, name, scheduler_name, report, explain);
                    if let Some(eviction) = preemptions.eviction_of(&key) {
                        row.result = PodResult::Preempted;
                        row.node = None;
                        row.message = format!(
                            "preempted by {} on node {}",
                            eviction.preemptor, eviction.node
                        );
                    }
                    row.nominated_node = preemptions.nominated.get(&key).cloned();
                    row.victims = preemptions.victims_of(&key);
                    row
                }
                None => PodReport {
                    namespace,
                    name,
                    scheduler_name,
                    pod_group: None,
                    result: PodResult::Unschedulable,
                    node: None,
                    message: gated_message(pod),
                    attempts: 0,
                    nominated_node: None,
                    victims: Vec::new(),
                    devices: Vec::new(),
                    nodes: explain.then(Vec::new),
                },
            }
        })
        .collect();
    for (row, pod) in pods.iter_mut().zip(pending) {
        row.pod_group = GroupKey::member_of(pod).map(|key| key.name);
    }
    let evicted = preemptions
        .evictions
        .iter()
        .map(|e| EvictedPod {
            pod: e.pod.clone(),
            node: e.node.clone(),
            preemptor: e.preemptor.clone(),
        })
        .collect();
    Report {
        pods,
        degraded: Vec::new(),
        evicted,
        moved: Vec::new(),
        pod_groups: Vec::new(),
    }
}

/// A pod never attempted was kept out of the queue by a PreEnqueue plugin.
fn gated_message(pod: &Pod) -> String {
    let gates: Vec<String> = pod
        .spec
        .as_ref()
        .and_then(|s| s.scheduling_gates.as_ref())
        .map(|g| g.iter().map(|g| g.name.clone()).collect())
        .unwrap_or_default();
    if gates.is_empty() {
        "pod was not admitted to the scheduling queue by a PreEnqueue plugin".to_string()
    } else {
        format!(
            "pod is gated (SchedulingGated): waiting for scheduling gates: [{}]",
            gates.join(" ")
        )
    }
}

fn pod_report(
    namespace: String,
    name: String,
    scheduler_name: String,
    report: &AttemptReport,
    explain: bool,
) -> PodReport {
    let (result, node, message) = match &report.outcome {
        Outcome::Scheduled { node } => (PodResult::Scheduled, Some(node.clone()), String::new()),
        Outcome::Unschedulable { message } => (PodResult::Unschedulable, None, message.clone()),
        Outcome::Error { message } => (PodResult::Error, None, message.clone()),
    };
    let nodes = explain.then(|| {
        report
            .diagnosis
            .as_ref()
            .map(|d| {
                d.filtered
                    .iter()
                    .map(|(node_name, status)| {
                        let scored = d.scored.iter().find(|s| s.node.name() == node_name);
                        let scores: Vec<PluginScore> = scored
                            .map(|s| {
                                s.scores
                                    .iter()
                                    .map(|p| PluginScore {
                                        plugin: p.plugin.clone(),
                                        score: p.score,
                                        weight: p.weight,
                                        weighted: p.score * p.weight,
                                    })
                                    .collect()
                            })
                            .unwrap_or_default();
                        NodeReport {
                            name: node_name.clone(),
                            feasible: status.is_success(),
                            filter_reasons: status.reasons().to_vec(),
                            total_score: scores.iter().map(|s| s.weighted).sum(),
                            scores,
                        }
                    })
                    .collect()
            })
            .unwrap_or_default()
    });
    PodReport {
        namespace,
        name,
        scheduler_name,
        pod_group: None,
        result,
        node,
        message,
        attempts: report.attempts,
        nominated_node: None,
        victims: Vec::new(),
        devices: Vec::new(),
        nodes,
    }
}
