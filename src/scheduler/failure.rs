//! Why an attempt failed, and upstream's failure message format.
//!
//! `FitError::message` reproduces upstream's `FitError.Error()`:
//! `0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint(s).`
//! — a histogram of node rejection reasons, each `"<count> <reason>"`, sorted as strings,
//! after the PreFilter message if PreFilter rejected the pod, followed by the PostFilter
//! message when PostFilter plugins ran.

use std::collections::HashSet;

use crate::framework::{Code, NodeToStatus, Preemption, Status};

use super::{CycleDiagnosis, Outcome};

/// Upstream `ErrNoNodesAvailable`.
pub const NO_NODES_AVAILABLE: &str = "no nodes available to schedule pods";

/// No node fits the pod.
#[derive(Debug, Clone, Default)]
pub struct FitError {
    pub num_all_nodes: usize,
    /// Rejection per node; `absent` covers nodes without an entry.
    pub statuses: NodeToStatus,
    /// The message of the PreFilter plugin that rejected the pod, if one did.
    pub pre_filter_msg: Option<String>,
    /// The message of PostFilter (e.g. preemption), if PostFilter plugins ran.
    pub post_filter_msg: Option<String>,
}

impl FitError {
    pub fn message(&self) -> String {
        let mut msg = format!("0/{} nodes are available:", self.num_all_nodes);
        match &self.pre_filter_msg {
            Some(pre) => msg.push_str(&format!(" {pre}.")),
            None => {
                let histogram = self.statuses.reason_histogram(self.num_all_nodes);
                if !histogram.is_empty() {
                    msg.push_str(&format!(" {}.", histogram.join(", ")));
                }
            }
        }
        if let Some(post) = self.post_filter_msg.as_ref().filter(|m| !m.is_empty()) {
            msg.push(' ');
            msg.push_str(post);
        }
        msg
    }
}

/// A failed attempt: what to report and how to requeue.
#[derive(Debug, Clone)]
pub struct Failure {
    pub message: String,
    /// Error (retried with backoff) rather than a rejection.
    pub is_error: bool,
    /// Plugins that rejected the pod; only their events requeue it.
    pub unschedulable_plugins: HashSet<String>,
    /// Plugins that returned Pending.
    pub pending_plugins: HashSet<String>,
    pub diagnosis: Option<CycleDiagnosis>,
    /// A plugin asked for a timed retry ([`crate::framework::RetryAfterBackoff`]): requeue
    /// to backoffQ.
    pub retry_after_backoff: bool,
    /// What PostFilter decided about the pod's nomination: a node (preemption made room
    /// there), "" (clear it), or `None` to leave it as it is.
    pub nominating: Option<String>,
    /// The evictions PostFilter decided, for the adapter to carry out.
    pub preemption: Option<Preemption>,
}

impl Failure {
    /// An internal error: backoff, no rejecting plugins.
    pub fn error(status: &Status) -> Self {
        Failure {
            message: status.message(),
            is_error: true,
            unschedulable_plugins: HashSet::new(),
            pending_plugins: HashSet::new(),
            diagnosis: None,
            retry_after_backoff: false,
            nominating: None,
            preemption: None,
        }
    }

    /// No node fits.
    /// No node in the snapshot (upstream's `ErrNoNodesAvailable`): an
    /// UnschedulableAndUnresolvable status, so the pod is reported Unschedulable, not a
    /// SchedulerError, and waits for a node to be added.
    pub fn no_nodes() -> Self {
        Failure {
            is_error: false,
            ..Failure::error(&Status::unschedulable(NO_NODES_AVAILABLE))
        }
    }

    pub fn fit(fit: &FitError) -> Self {
        let mut unschedulable = HashSet::new();
        let mut pending = HashSet::new();
        let statuses = fit
            .statuses
            .statuses
            .values()
            .chain(fit.statuses.absent.as_ref());
        for status in statuses {
            if let Some(plugin) = status.plugin() {
                if status.code() == Code::Pending {
                    pending.insert(plugin.to_string());
                } else {
                    unschedulable.insert(plugin.to_string());
                }
            }
        }
        Failure {
            message: fit.message(),
            is_error: false,
            unschedulable_plugins: unschedulable,
            pending_plugins: pending,
            diagnosis: None,
            retry_after_backoff: false,
            nominating: None,
            preemption: None,
        }
    }

    /// A member of a rejected pod group (upstream's `errPodGroupUnschedulable` path): no
    /// rejecting plugin is recorded, the group's requeue decides.
    pub fn group_rejected(message: String) -> Self {
        Failure {
            is_error: false,
            ..Failure::error(&Status::unschedulable(message))
        }
    }

    /// A rejection after a node was chosen (Reserve, Permit, PreBind, Bind): upstream
    /// reports it as a fit error over that one node.
    pub fn rejected_on(node: &str, status: Status) -> Self {
        if !status.is_rejected() {
            return Failure::error(&status);
        }
        let mut statuses = NodeToStatus::default();
        statuses.statuses.insert(node.to_string(), status);
        Failure::fit(&FitError {
            num_all_nodes: 1,
            statuses,
            pre_filter_msg: None,
            post_filter_msg: None,
        })
    }

    pub fn with_diagnosis(mut self, diagnosis: Option<CycleDiagnosis>) -> Self {
        if self.diagnosis.is_none() {
            self.diagnosis = diagnosis;
        }
        self
    }

    pub fn outcome(&self) -> Outcome {
        if self.is_error {
            Outcome::Error {
                message: self.message.clone(),
            }
        } else {
            Outcome::Unschedulable {
                message: self.message.clone(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rejected(reasons: &[&str], plugin: &str) -> Status {
        Status::with_reasons(
            Code::Unschedulable,
            reasons.iter().map(|r| r.to_string()).collect(),
        )
        .with_plugin(plugin)
    }

    #[test]
    fn fit_error_messages_follow_upstream_format() {
        // Upstream `FitError.Error()`'s message shape (docs/architecture.md §4).
        let mut statuses = NodeToStatus::default();
        for n in ["a", "b"] {
            statuses.statuses.insert(
                n.into(),
                rejected(&["Insufficient cpu"], "NodeResourcesFit"),
            );
        }
        for n in ["c", "d", "e"] {
            statuses.statuses.insert(
                n.into(),
                rejected(&["node(s) had untolerated taint(s)"], "TaintToleration"),
            );
        }
        let fit = FitError {
            num_all_nodes: 5,
            statuses,
            pre_filter_msg: None,
            post_filter_msg: Some(
                "preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling."
                    .into(),
            ),
        };
        assert_eq!(
            fit.message(),
            "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint(s). \
             preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling."
        );
        let failure = Failure::fit(&fit);
        assert_eq!(
            failure.unschedulable_plugins,
            HashSet::from([
                "NodeResourcesFit".to_string(),
                "TaintToleration".to_string()
            ])
        );
    }

    #[test]
    fn one_node_with_two_reasons_counts_each() {
        // Upstream TestFitError-style: a node rejected for cpu and memory contributes to
        // both counts; absent nodes take the absent status.
        let mut statuses = NodeToStatus::default();
        statuses.statuses.insert(
            "a".into(),
            rejected(
                &["Insufficient cpu", "Insufficient memory"],
                "NodeResourcesFit",
            ),
        );
        statuses.absent = Some(Status::unresolvable(
            "node(s) didn't satisfy plugin NodeAffinity",
        ));
        let fit = FitError {
            num_all_nodes: 3,
            statuses,
            ..Default::default()
        };
        assert_eq!(
            fit.message(),
            "0/3 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 2 node(s) didn't satisfy plugin NodeAffinity."
        );
    }

    #[test]
    fn pre_filter_rejection_reports_only_its_message() {
        let fit = FitError {
            num_all_nodes: 4,
            statuses: NodeToStatus {
                statuses: Default::default(),
                absent: Some(
                    Status::unresolvable("pod group ml/train not found")
                        .with_plugin("Coscheduling"),
                ),
            },
            pre_filter_msg: Some("pod group ml/train not found".into()),
            post_filter_msg: None,
        };
        assert_eq!(
            fit.message(),
            "0/4 nodes are available: pod group ml/train not found."
        );
    }
}
