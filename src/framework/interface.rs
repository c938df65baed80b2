//! One trait per extension point, as upstream's `framework/interface.go`.
//!
//! A plugin is a type implementing [`Plugin`] plus the point traits it takes part in; its
//! `Plugin` impl returns `Some(self)` from the accessor of each point it implements. The
//! registry entry of the plugin lists the same points, and a test checks the two agree.
//!
//! Points on the hot path (PreEnqueue, QueueSort, Filter, Score, NormalizeScore) are
//! synchronous and are called once per node, in parallel: they must not block or do I/O
//! and should not allocate on success. Points that may need I/O are `async`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::cluster::{NodeInfo, PodInfo, Snapshot};

use super::events::ClusterEvent;
use super::{CycleState, NodeToStatus, PostFilterResult, PreFilterResult, QueuedPodInfo, Status};

/// The lowest score a Score plugin may return after normalization.
pub const MIN_NODE_SCORE: i64 = 0;
/// The highest score a Score plugin may return after normalization.
pub const MAX_NODE_SCORE: i64 = 100;

/// The common part of every plugin: its name and accessors for the points it implements.
pub trait Plugin: Send + Sync + 'static {
    /// The registry name of the plugin, e.g. `NodeResourcesFit`.
    fn name(&self) -> &str;

    fn as_pre_enqueue(&self) -> Option<&dyn PreEnqueuePlugin> {
        None
    }
    fn as_queue_sort(&self) -> Option<&dyn QueueSortPlugin> {
        None
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        None
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        None
    }
    fn as_post_filter(&self) -> Option<&dyn PostFilterPlugin> {
        None
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        None
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        None
    }
    fn as_reserve(&self) -> Option<&dyn ReservePlugin> {
        None
    }
    fn as_permit(&self) -> Option<&dyn PermitPlugin> {
        None
    }
    fn as_pre_bind(&self) -> Option<&dyn PreBindPlugin> {
        None
    }
    fn as_bind(&self) -> Option<&dyn BindPlugin> {
        None
    }
    fn as_post_bind(&self) -> Option<&dyn PostBindPlugin> {
        None
    }

    /// The cluster events after which a pod this plugin rejected may have become
    /// schedulable. `None` means "any event" (upstream's behaviour for plugins that do not
    /// implement `EnqueueExtensions`); an empty list means "never, until the periodic
    /// flush".
    fn events_to_register(&self) -> Option<Vec<ClusterEvent>> {
        None
    }

    /// True when this plugin's rejections can end with time alone, with no cluster event
    /// (a node too busy by a Prometheus metric may cool down). A pod such a plugin
    /// rejected is requeued to backoffQ and retried after its backoff, instead of waiting
    /// in the unschedulable set for an event (see [`super::RetryAfterBackoff`], the
    /// per-cycle form of the same request).
    fn rejections_expire(&self) -> bool {
        false
    }
}

/// PreEnqueue: called before a pod enters activeQ. Success admits the pod; any other status
/// keeps it out (the pod is "gated") until an event moves it again. Must be cheap.
pub trait PreEnqueuePlugin: Plugin {
    fn pre_enqueue(&self, pod: &PodInfo) -> Status;
}

/// QueueSort: orders activeQ. Exactly one QueueSort plugin is enabled per profile.
/// `less(a, b)` is true when `a` should be scheduled before `b`; it must be a strict weak
/// order.
pub trait QueueSortPlugin: Plugin {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool;
}

/// PreFilter: called once per cycle before filtering; computes per-cycle state and may
/// reject the pod outright.
///
/// - Success: go on; a `PreFilterResult` with node names restricts filtering to them.
/// - Unschedulable / UnschedulableAndUnresolvable: the pod is rejected on every node.
/// - Skip: this plugin's Filter is not called in this cycle.
/// - Error: the cycle is aborted and the pod goes to backoff.
#[async_trait]
pub trait PreFilterPlugin: Plugin {
    async fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status);

    /// Incremental updates of the PreFilter state, used when evaluating "what if" a pod
    /// were added to or removed from a node (preemption, nominated pods).
    fn pre_filter_extensions(&self) -> Option<&dyn PreFilterExtensions> {
        None
    }
}

/// Incremental PreFilter-state updates; see [`PreFilterPlugin::pre_filter_extensions`].
pub trait PreFilterExtensions: Send + Sync {
    fn add_pod(
        &self,
        state: &mut CycleState,
        pod_to_schedule: &PodInfo,
        pod_to_add: &PodInfo,
        node: &NodeInfo,
    ) -> Status;
    fn remove_pod(
        &self,
        state: &mut CycleState,
        pod_to_schedule: &PodInfo,
        pod_to_remove: &PodInfo,
        node: &NodeInfo,
    ) -> Status;
}

/// Filter: may the pod run on this node? Called per node, in parallel.
///
/// - Success: the node is feasible as far as this plugin is concerned.
/// - Unschedulable: the node is rejected; preemption might make it feasible.
/// - UnschedulableAndUnresolvable: the node is rejected and preemption cannot help.
/// - Error: the cycle is aborted.
pub trait FilterPlugin: Plugin {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status;
}

/// PostFilter: called when no node is feasible (typically preemption).
///
/// - Success with a nominated node: the pod is requeued to try that node.
/// - Unschedulable: this plugin could not help; the next PostFilter plugin is tried.
/// - Error: stop running PostFilter plugins.
#[async_trait]
pub trait PostFilterPlugin: Plugin {
    async fn post_filter(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        filtered_node_status: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status);
}

/// PreScore: called once per cycle with the feasible nodes, before scoring. Fetch remote
/// data here, once, never in Score.
///
/// - Success: go on.
/// - Skip: this plugin's Score is not called in this cycle.
/// - Error (or any other code): the cycle is aborted.
#[async_trait]
pub trait PreScorePlugin: Plugin {
    async fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
    ) -> Status;
}

/// Score: rank one feasible node. Called per node, in parallel. The raw score may be on
/// any scale if the plugin normalizes it; after NormalizeScore every score must be within
/// [`MIN_NODE_SCORE`]..=[`MAX_NODE_SCORE`] or the cycle fails. Err aborts the cycle.
pub trait ScorePlugin: Plugin {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status>;

    /// NormalizeScore, if the plugin's raw scores need mapping into 0..=100.
    fn score_extensions(&self) -> Option<&dyn ScoreExtensions> {
        None
    }
}

/// NormalizeScore: rewrite the scores of all feasible nodes at once. `scores[i]` belongs
/// to `nodes[i]`.
pub trait ScoreExtensions: Send + Sync {
    fn normalize_score(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
        scores: &mut [i64],
    ) -> Status;
}

/// Reserve: the pod has been assumed on `node_name`; update plugin-held state. A non-Success
/// status fails the cycle, and Unreserve then runs on every Reserve plugin, in reverse order.
/// Unreserve must be idempotent and must not fail.
#[async_trait]
pub trait ReservePlugin: Plugin {
    async fn reserve(&self, state: &mut CycleState, pod: &PodInfo, node_name: &str) -> Status;
    async fn unreserve(&self, state: &mut CycleState, pod: &PodInfo, node_name: &str);
}

/// Permit: the last say before binding.
///
/// - Success: allowed.
/// - Wait: hold the pod (the returned timeout bounds the wait) until this plugin allows it
///   through [`super::WaitingPods`], rejects it, or the timeout rejects it.
/// - Unschedulable / Unresolvable / Error: the pod is rejected and unreserved.
#[async_trait]
pub trait PermitPlugin: Plugin {
    async fn permit(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        node_name: &str,
    ) -> (Status, Duration);
}

/// PreBind: prepare the binding (e.g. provision volumes). Any non-Success status fails the
/// binding cycle: Unreserve runs and the pod is requeued.
#[async_trait]
pub trait PreBindPlugin: Plugin {
    async fn pre_bind(&self, state: &mut CycleState, pod: &PodInfo, node_name: &str) -> Status;
}

/// Bind: bind the pod to the node. Binders are called in order until one does not return
/// Skip; Success means bound, anything else fails the binding cycle.
#[async_trait]
pub trait BindPlugin: Plugin {
    async fn bind(&self, state: &mut CycleState, pod: &PodInfo, node_name: &str) -> Status;
}

/// PostBind: informational, after a successful bind. Cannot fail.
#[async_trait]
pub trait PostBindPlugin: Plugin {
    async fn post_bind(&self, state: &CycleState, pod: &PodInfo, node_name: &str);
}
