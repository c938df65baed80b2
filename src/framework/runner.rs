//! The Framework runner: the plugins of one profile, instantiated, and the functions that
//! call them at each extension point with upstream's status semantics.
//!
//! Filter and Score run per node on the scheduler's [`Parallelizer`](super::Parallelizer),
//! which the [`Handle`] carries ([`parallel`](super::parallel)).
//! Everything else runs on the caller's task.

mod nominated;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cluster::{NodeInfo, PodInfo, Snapshot};

use super::observer::Observer;
use super::profile::ResolvedProfile;
use super::types::{NodeScoreDetail, PreFilterOutcome, ScoredNode};
use super::{
    ClusterEvent, Code, CycleState, ExtensionPoint, FilterPlugin, Handle, MAX_NODE_SCORE,
    MIN_NODE_SCORE, NodeToStatus, PlacementProgress, Plugin, PluginError, PostFilterResult,
    Registry, Signature, Status,
};

/// Normalized scores of the active Score plugins, plugin-major: `scores[j * nodes + i]`
/// is plugin `j`'s score of node `i`.
struct ScoreMatrix<'a> {
    /// Each active plugin's index among the profile's Score plugins, the plugin, its
    /// weight.
    plugins: Vec<(usize, &'a Arc<dyn Plugin>, i64)>,
    nodes: usize,
    scores: Vec<i64>,
}

impl ScoreMatrix<'_> {
    fn get(&self, plugin: usize, node: usize) -> i64 {
        self.scores[plugin * self.nodes + node]
    }

    /// The weighted sum over the plugins for node `node`.
    fn total(&self, node: usize) -> i64 {
        self.plugins
            .iter()
            .enumerate()
            .map(|(j, (_, _, weight))| self.get(j, node) * weight)
            .sum()
    }
}

/// Each node's scores before NormalizeScore, one entry per Score plugin of the profile
/// (0 for a plugin PreScore skipped), in the order of the nodes scored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawScores(pub Vec<Vec<i64>>);

/// What [`Framework::run_score_keeping_raw`] returns: each node's weighted total, the
/// per-plugin details when asked for, and the raw scores.
#[derive(Debug)]
pub struct KeptScores {
    pub totals: Vec<i64>,
    pub details: Option<Vec<ScoredNode>>,
    pub raw: RawScores,
}

/// The instantiated plugins of one profile.
pub struct Framework {
    profile_name: String,
    resolved: ResolvedProfile,
    handle: Handle,
    by_point: HashMap<ExtensionPoint, Vec<Arc<dyn Plugin>>>,
    score_weights: Vec<i64>,
    /// Every PreFilter, Filter, PreScore and Score plugin, each once, when the profile
    /// batches and all of them can sign pods; `None` otherwise.
    signers: Option<Vec<Arc<dyn Plugin>>>,
    observer: Option<Arc<dyn Observer>>,
}

impl std::fmt::Debug for Framework {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Framework")
            .field("profile_name", &self.profile_name)
            .field("resolved", &self.resolved)
            .finish()
    }
}

/// A plugin's non-success status as the framework reports it: a rejection keeps its code
/// and names the plugin; anything else becomes an Error naming the point and the plugin.
fn plugin_failure(point: &str, plugin: &str, status: Status) -> Status {
    if status.is_rejected() {
        status.with_plugin(plugin)
    } else {
        wrap_error(point, plugin, &status)
    }
}

fn wrap_error(point: &str, plugin: &str, status: &Status) -> Status {
    Status::error(format!(
        "running {point} plugin {plugin:?}: {}",
        status.message()
    ))
    .with_plugin(plugin)
}

impl Framework {
    /// Instantiates every plugin of `resolved` once (a plugin at several points is one
    /// instance).
    pub fn new(
        profile_name: &str,
        resolved: ResolvedProfile,
        registry: &Registry,
        handle: Handle,
    ) -> Result<Framework, PluginError> {
        let mut instances: HashMap<String, Arc<dyn Plugin>> = HashMap::new();
        for name in resolved.all_plugins() {
            let entry = registry.get(&name).ok_or_else(|| PluginError::Init {
                plugin: name.clone(),
                message: "not registered".into(),
            })?;
            let path = format!("spec.pluginConfig.{}", entry.config_field());
            let plugin = entry.build(resolved.args.get(&name), &path, &handle)?;
            instances.insert(name, plugin);
        }
        let mut by_point = HashMap::new();
        for point in ExtensionPoint::ALL {
            let plugins: Vec<Arc<dyn Plugin>> = resolved
                .plugins_at(point)
                .iter()
                .filter_map(|n| instances.get(n).cloned())
                .collect();
            for plugin in &plugins {
                if !implements(plugin.as_ref(), point) {
                    return Err(PluginError::Init {
                        plugin: plugin.name().to_string(),
                        message: format!("does not implement {point}"),
                    });
                }
            }
            by_point.insert(point, plugins);
        }
        let score_weights = resolved
            .plugins_at(ExtensionPoint::Score)
            .iter()
            .map(|n| i64::from(resolved.score_weights.get(n).copied().unwrap_or(1)))
            .collect();
        let signers = resolved
            .opportunistic_batching
            .then(|| signers(&by_point))
            .flatten();
        Ok(Framework {
            profile_name: profile_name.to_string(),
            resolved,
            handle,
            by_point,
            score_weights,
            signers,
            observer: None,
        })
    }

    // Timed entry points: each records its extension point's duration and status code
    // with the profile's [`Observer`] (upstream's
    // `scheduler_framework_extension_point_duration_seconds`).

    /// PreFilter: the first rejection or error ends the cycle; Skip disables the
    /// plugin's Filter; results narrow the nodes to filter.
    pub async fn run_pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> PreFilterOutcome {
        let start = Instant::now();
        let out = self.run_pre_filter_unobserved(state, pod, snapshot).await;
        self.observe(ExtensionPoint::PreFilter, out.status.code(), start);
        out
    }

    /// Filter on one node: the first non-success status wins.
    pub fn run_filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let start = Instant::now();
        let status = self.run_filter_unobserved(state, pod, node);
        self.observe(ExtensionPoint::Filter, status.code(), start);
        status
    }

    /// PostFilter: plugins in order until one succeeds or errors.
    pub async fn run_post_filter(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        statuses: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        let start = Instant::now();
        let out = self
            .run_post_filter_unobserved(state, pod, snapshot, statuses)
            .await;
        self.observe(ExtensionPoint::PostFilter, out.1.code(), start);
        out
    }

    /// PreScore: Skip disables the plugin's Score; anything else but Success aborts.
    pub async fn run_pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
    ) -> Status {
        let start = Instant::now();
        let status = self.run_pre_score_unobserved(state, pod, nodes).await;
        self.observe(ExtensionPoint::PreScore, status.code(), start);
        status
    }

    /// Score, NormalizeScore and weights over the feasible `nodes`. Scores outside
    /// 0..=100 after normalization fail the cycle, as upstream.
    pub fn run_score(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
    ) -> Result<Vec<ScoredNode>, Status> {
        let start = Instant::now();
        let out = self.run_score_unobserved(state, pod, nodes);
        let code = out
            .as_ref()
            .map(|_| Code::Success)
            .unwrap_or_else(|s| s.code());
        self.observe(ExtensionPoint::Score, code, start);
        out
    }

    /// Reserve, in order; the first failure is returned (the caller then runs
    /// [`Framework::run_unreserve`]).
    pub async fn run_reserve(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        node_name: &str,
    ) -> Status {
        let start = Instant::now();
        let status = self.run_reserve_unobserved(state, pod, node_name).await;
        self.observe(ExtensionPoint::Reserve, status.code(), start);
        status
    }

    /// Unreserve on every Reserve plugin, in reverse order.
    pub async fn run_unreserve(&self, state: &mut CycleState, pod: &PodInfo, node_name: &str) {
        let start = Instant::now();
        self.run_unreserve_unobserved(state, pod, node_name).await;
        self.observe(ExtensionPoint::Reserve, Code::Success, start);
    }

    /// Permit: a rejection returns at once; waits register the pod in
    /// [`super::WaitingPods`] and return `Wait`.
    pub async fn run_permit(
        &self,
        state: &mut CycleState,
        pod: &Arc<PodInfo>,
        node_name: &str,
    ) -> Status {
        let start = Instant::now();
        let status = self.run_permit_unobserved(state, pod, node_name).await;
        self.observe(ExtensionPoint::Permit, status.code(), start);
        status
    }

    /// PreBind, in order; the first failure is returned.
    pub async fn run_pre_bind(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        node_name: &str,
    ) -> Status {
        let start = Instant::now();
        let status = self.run_pre_bind_unobserved(state, pod, node_name).await;
        self.observe(ExtensionPoint::PreBind, status.code(), start);
        status
    }

    /// Bind: binders in order until one does not Skip. Skip from all of them is an error.
    pub async fn run_bind(&self, state: &mut CycleState, pod: &PodInfo, node_name: &str) -> Status {
        let start = Instant::now();
        let status = self.run_bind_unobserved(state, pod, node_name).await;
        self.observe(ExtensionPoint::Bind, status.code(), start);
        status
    }

    /// PostBind, informational.
    pub async fn run_post_bind(&self, state: &CycleState, pod: &PodInfo, node_name: &str) {
        let start = Instant::now();
        self.run_post_bind_unobserved(state, pod, node_name).await;
        self.observe(ExtensionPoint::PostBind, Code::Success, start);
    }

    fn observe(&self, point: ExtensionPoint, code: Code, start: Instant) {
        if let Some(observer) = &self.observer {
            observer.extension_point(&self.profile_name, point, code, start.elapsed());
        }
    }

    /// [`Framework::observe`] for a start taken only when there is an observer: per-node
    /// calls read no clock unless someone records them.
    fn observe_since(&self, point: ExtensionPoint, code: Code, start: Option<Instant>) {
        if let (Some(observer), Some(start)) = (&self.observer, start) {
            observer.extension_point(&self.profile_name, point, code, start.elapsed());
        }
    }

    /// Records this profile's extension-point timings with `observer` (metrics).
    pub fn with_observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observer = Some(observer);
        self
    }

    pub fn profile_name(&self) -> &str {
        &self.profile_name
    }

    pub fn resolved(&self) -> &ResolvedProfile {
        &self.resolved
    }

    /// `spec.percentageOfNodesToScore` (None or 0 = adaptive).
    pub fn percentage_of_nodes_to_score(&self) -> Option<i32> {
        self.resolved.percentage_of_nodes_to_score
    }

    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// The plugins at `point`, in call order.
    pub fn plugins(&self, point: ExtensionPoint) -> &[Arc<dyn Plugin>] {
        self.by_point.get(&point).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The profile's QueueSort plugin (resolution guarantees exactly one).
    pub fn queue_sort(&self) -> Option<Arc<dyn Plugin>> {
        self.plugins(ExtensionPoint::QueueSort).first().cloned()
    }

    /// Every plugin's registered events, for the queue (`None` = any event).
    pub fn plugin_events(&self) -> HashMap<String, Option<Vec<ClusterEvent>>> {
        ExtensionPoint::ALL
            .iter()
            .flat_map(|p| self.plugins(*p).iter())
            .map(|p| (p.name().to_string(), p.events_to_register()))
            .collect()
    }

    /// Upstream `RunPlacementFeasiblePlugins`: the first Unschedulable or error ends the
    /// run (an error is wrapped, as is any code but Success, Wait and Unschedulable); a
    /// Wait is kept while the others run. Success when no plugin takes part.
    pub fn run_placement_feasible(
        &self,
        key: &crate::cluster::GroupKey,
        group: &k8s_openapi::api::scheduling::v1beta1::PodGroup,
        progress: PlacementProgress,
    ) -> Status {
        let mut seen = HashSet::new();
        let mut result = Status::success();
        let plugins = ExtensionPoint::ALL
            .iter()
            .flat_map(|p| self.plugins(*p).iter())
            .filter(|p| seen.insert(p.name().to_string()));
        for plugin in plugins {
            let Some(feasible) = plugin.as_placement_feasible() else {
                continue;
            };
            let status = feasible.placement_feasible(key, group, progress);
            match status.code() {
                Code::Success => {}
                Code::Wait => result = status.with_plugin(plugin.name()),
                Code::Unschedulable => return status.with_plugin(plugin.name()),
                Code::Error => {
                    return Status::error(format!(
                        "running PlacementFeasible plugin: {}",
                        status.message()
                    ))
                    .with_plugin(plugin.name());
                }
                code => {
                    return Status::error(format!(
                        "unexpected status from PlacementFeasible plugin: {code:?}"
                    ))
                    .with_plugin(plugin.name());
                }
            }
        }
        result
    }

    pub fn has_post_filter_plugins(&self) -> bool {
        !self.plugins(ExtensionPoint::PostFilter).is_empty()
    }

    async fn run_pre_filter_unobserved(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> PreFilterOutcome {
        let mut outcome = PreFilterOutcome {
            result: None,
            status: Status::success(),
            narrowing: BTreeSet::new(),
        };
        for plugin in self.plugins(ExtensionPoint::PreFilter) {
            let Some(pf) = plugin.as_pre_filter() else {
                continue;
            };
            let (r, status) = pf.pre_filter(state, pod, snapshot).await;
            if status.is_skip() {
                state.skip_filter_plugins.insert(plugin.name().to_string());
                continue;
            }
            if status.code() == Code::Unschedulable {
                // Upstream runs the remaining PreFilter plugins (preemption may follow in
                // this cycle and reads their state); the last such status is returned.
                outcome.status = status.with_plugin(plugin.name());
                continue;
            }
            if !status.is_success() {
                outcome.result = None;
                outcome.status = plugin_failure("PreFilter", plugin.name(), status);
                return outcome;
            }
            let Some(r) = r.filter(|r| r.node_names.is_some()) else {
                continue;
            };
            outcome.narrowing.insert(plugin.name().to_string());
            let merged = match outcome.result.take() {
                None => r,
                Some(prev) => prev.merge(&r),
            };
            let none_left = merged.node_names.as_ref().is_some_and(|n| n.is_empty());
            outcome.result = Some(merged);
            if none_left {
                let message = if outcome.narrowing.len() == 1 {
                    format!("node(s) didn't satisfy plugin {}", plugin.name())
                } else {
                    format!(
                        "node(s) didn't satisfy plugin(s) {} simultaneously",
                        outcome.narrowing_list()
                    )
                };
                outcome.status = Status::unresolvable(message).with_plugin(plugin.name());
                return outcome;
            }
        }
        outcome
    }

    fn run_filter_unobserved(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        self.filter_with_nominated_pods(&self.active_filters(state), state, pod, node)
    }

    /// The Filter plugins of this cycle, in order: those whose PreFilter said Skip are
    /// left out once per cycle rather than looked up on every node.
    fn active_filters(&self, state: &CycleState) -> Vec<(&str, &dyn FilterPlugin)> {
        self.plugins(ExtensionPoint::Filter)
            .iter()
            .filter(|plugin| !state.skips_filter(plugin.name()))
            .filter_map(|plugin| Some((plugin.name(), plugin.as_filter()?)))
            .collect()
    }

    /// Filter over `nodes` in rotation order from index `start`, in parallel batches,
    /// until `wanted` nodes passed or every node was tried. Returns the statuses in
    /// rotation order, up to and including the `wanted`-th feasible node: which nodes
    /// are tried past it depends on the batch, but they are not reported, so the result
    /// is the same for every degree of parallelism.
    pub fn run_filter_in_rotation(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
        start: usize,
        wanted: usize,
    ) -> Vec<Status> {
        let n = nodes.len();
        let mut statuses = Vec::with_capacity(wanted.min(n));
        if n == 0 {
            return statuses;
        }
        let mut feasible = 0;
        let filters = self.active_filters(state);
        let filter = |node: &NodeInfo| {
            let start = self.observer.is_some().then(Instant::now);
            let status = self.filter_with_nominated_pods(&filters, state, pod, node);
            self.observe_since(ExtensionPoint::Filter, status.code(), start);
            status
        };
        let parallelizer = &self.handle.parallelizer;
        parallelizer.run(|| {
            let mut offset = 0;
            while offset < n && feasible < wanted {
                // Enough nodes to reach `wanted` if all pass, never a tiny batch.
                let batch = (wanted - feasible).max(FILTER_BATCH).min(n - offset);
                let results =
                    parallelizer.map_range(batch, |i| filter(&nodes[(start + offset + i) % n]));
                offset += batch;
                for status in results {
                    let passed = status.is_success();
                    statuses.push(status);
                    if passed {
                        feasible += 1;
                        if feasible == wanted {
                            break;
                        }
                    }
                }
            }
        });
        statuses
    }

    async fn run_post_filter_unobserved(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        statuses: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        let mut reasons = Vec::new();
        // A rejecting plugin may still decide the nomination (preemption clears it when
        // no node can be made to fit), as upstream keeps a result that is not a no-op.
        let mut decided = None;
        for plugin in self.plugins(ExtensionPoint::PostFilter) {
            let Some(pf) = plugin.as_post_filter() else {
                continue;
            };
            let (result, status) = pf.post_filter(self, state, pod, snapshot, statuses).await;
            if status.is_success() || status.code() == Code::UnschedulableAndUnresolvable {
                return (result, status.with_plugin(plugin.name()));
            }
            if !status.is_rejected() {
                // Upstream passes a PostFilter error on as it is, only naming the plugin:
                // it becomes the fit error's PostFilter message.
                return (
                    None,
                    Status::error(status.message()).with_plugin(plugin.name()),
                );
            }
            if result
                .as_ref()
                .is_some_and(|r| r.nominated_node_name.is_some())
            {
                decided = result;
            }
            // A rejection without a message adds no reason (upstream's status has none).
            reasons.extend(status.reasons().iter().filter(|r| !r.is_empty()).cloned());
        }
        (decided, Status::with_reasons(Code::Unschedulable, reasons))
    }

    async fn run_pre_score_unobserved(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
    ) -> Status {
        for plugin in self.plugins(ExtensionPoint::PreScore) {
            let Some(ps) = plugin.as_pre_score() else {
                continue;
            };
            let status = ps.pre_score(state, pod, nodes).await;
            if status.is_skip() {
                state.skip_score_plugins.insert(plugin.name().to_string());
            } else if !status.is_success() {
                return wrap_error("PreScore", plugin.name(), &status);
            }
        }
        Status::success()
    }

    fn run_score_unobserved(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
    ) -> Result<Vec<ScoredNode>, Status> {
        let (scores, _) = self.score_matrix(state, pod, nodes, false)?;
        Ok(self.details(&scores, nodes))
    }

    /// Each node's per-plugin scores and total.
    fn details(&self, scores: &ScoreMatrix<'_>, nodes: &[Arc<NodeInfo>]) -> Vec<ScoredNode> {
        nodes
            .iter()
            .enumerate()
            .map(|(i, node)| {
                let details: Vec<NodeScoreDetail> = scores
                    .plugins
                    .iter()
                    .enumerate()
                    .map(|(j, (_, plugin, weight))| NodeScoreDetail {
                        plugin: plugin.name().to_string(),
                        score: scores.get(j, i),
                        weight: *weight,
                    })
                    .collect();
                ScoredNode {
                    node: node.clone(),
                    scores: details,
                    total: scores.total(i),
                }
            })
            .collect()
    }

    /// Score, NormalizeScore and weights over the feasible `nodes`, as
    /// [`Framework::run_score`], but only the weighted total of each node, in order: what
    /// the cycle needs to pick a host when nobody asked for the per-plugin details.
    pub fn run_score_totals(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
    ) -> Result<Vec<i64>, Status> {
        let start = Instant::now();
        let out = self
            .score_matrix(state, pod, nodes, false)
            .map(|(scores, _)| (0..nodes.len()).map(|i| scores.total(i)).collect());
        let code = out
            .as_ref()
            .map(|_| Code::Success)
            .unwrap_or_else(|s: &Status| s.code());
        self.observe(ExtensionPoint::Score, code, start);
        out
    }

    /// Every active Score plugin on every node in one parallel pass, then NormalizeScore
    /// and the range check plugin by plugin, in order. A plugin's Score error wins over
    /// anything a later plugin reports, as when plugins run one after another; among its
    /// nodes the first node's error is reported. With `keep_raw`, the scores before
    /// NormalizeScore are kept too.
    fn score_matrix(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
        keep_raw: bool,
    ) -> Result<(ScoreMatrix<'_>, Option<Vec<i64>>), Status> {
        let plugins = self.active_scorers(state);
        let n = nodes.len();
        let raw = self.handle.parallelizer.map_range(n * plugins.len(), |k| {
            let (_, plugin, _) = plugins[k / n];
            match plugin.as_score() {
                Some(scorer) => scorer.score(state, pod, &nodes[k % n]),
                None => Ok(0),
            }
        });
        let mut scores = Vec::with_capacity(raw.len());
        let mut first_error: Option<(usize, Status)> = None;
        for (k, result) in raw.into_iter().enumerate() {
            match result {
                Ok(score) => scores.push(score),
                Err(status) => {
                    scores.push(0);
                    if first_error.is_none() {
                        first_error = Some((k / n, status));
                    }
                }
            }
        }
        if let Some((at, status)) = first_error {
            // Plugins before the failing one normalize first, as upstream runs them.
            let before = ScoreMatrix {
                plugins: plugins[..at].to_vec(),
                nodes: n,
                scores: scores[..at * n].to_vec(),
            };
            self.normalize(state, pod, nodes, before)?;
            return Err(wrap_error("Score", plugins[at].1.name(), &status));
        }
        let kept = keep_raw.then(|| scores.clone());
        let matrix = ScoreMatrix {
            plugins,
            nodes: n,
            scores,
        };
        Ok((self.normalize(state, pod, nodes, matrix)?, kept))
    }

    /// The Score plugins this cycle runs (PreScore did not skip them), with their index
    /// among the profile's Score plugins and their weight.
    fn active_scorers(&self, state: &CycleState) -> Vec<(usize, &Arc<dyn Plugin>, i64)> {
        self.plugins(ExtensionPoint::Score)
            .iter()
            .zip(self.score_weights.iter().copied())
            .enumerate()
            .filter(|(_, (p, _))| !state.skips_score(p.name()) && p.as_score().is_some())
            .map(|(j, (p, w))| (j, p, w))
            .collect()
    }

    /// NormalizeScore and the range check over raw scores, plugin by plugin, in order.
    fn normalize<'a>(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
        mut matrix: ScoreMatrix<'a>,
    ) -> Result<ScoreMatrix<'a>, Status> {
        let n = matrix.nodes;
        for (j, (_, plugin, _)) in matrix.plugins.iter().enumerate() {
            let Some(scorer) = plugin.as_score() else {
                continue;
            };
            let row = &mut matrix.scores[j * n..(j + 1) * n];
            if let Some(ext) = scorer.score_extensions() {
                let status = ext.normalize_score(state, pod, nodes, row);
                if !status.is_success() {
                    return Err(wrap_error("NormalizeScore", plugin.name(), &status));
                }
            }
            if let Some(bad) = row
                .iter()
                .find(|s| !(MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(*s))
            {
                return Err(Status::error(format!(
                    "plugin {:?} returns an invalid score {bad}, it should be in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                    plugin.name()
                ))
                .with_plugin(plugin.name()));
            }
        }
        Ok(matrix)
    }

    /// Score, NormalizeScore and weights over the feasible `nodes`, as
    /// [`Framework::run_score_totals`] (or, with `detailed`, [`Framework::run_score`]),
    /// keeping each node's scores before NormalizeScore for a batch to renormalize later
    /// ([`Framework::renormalize`]).
    pub fn run_score_keeping_raw(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
        detailed: bool,
    ) -> Result<KeptScores, Status> {
        let start = Instant::now();
        let out = self.score_matrix(state, pod, nodes, true);
        let code = out
            .as_ref()
            .map(|_| Code::Success)
            .unwrap_or_else(|s: &Status| s.code());
        self.observe(ExtensionPoint::Score, code, start);
        let (matrix, raw) = out?;
        let width = self.plugins(ExtensionPoint::Score).len();
        let raw = raw.unwrap_or_default();
        let mut per_node = vec![vec![0; width]; nodes.len()];
        for (j, (index, _, _)) in matrix.plugins.iter().enumerate() {
            for (i, scores) in per_node.iter_mut().enumerate() {
                scores[*index] = raw[j * nodes.len() + i];
            }
        }
        let totals = (0..nodes.len()).map(|i| matrix.total(i)).collect();
        let details = detailed.then(|| self.details(&matrix, nodes));
        Ok(KeptScores {
            totals,
            details,
            raw: RawScores(per_node),
        })
    }

    /// The active Score plugins' raw scores of one node (upstream's `RunRawScorePlugins`),
    /// one entry per Score plugin of the profile (0 for a plugin PreScore skipped).
    pub fn raw_scores(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Result<Vec<i64>, Status> {
        let mut out = vec![0; self.plugins(ExtensionPoint::Score).len()];
        for (index, plugin, _) in self.active_scorers(state) {
            if let Some(scorer) = plugin.as_score() {
                out[index] = scorer
                    .score(state, pod, node)
                    .map_err(|s| wrap_error("Score", plugin.name(), &s))?;
            }
        }
        Ok(out)
    }

    /// NormalizeScore and weights again over raw scores kept from earlier
    /// (`raw[i]` belongs to `nodes[i]`, as [`Framework::raw_scores`] gives them), with the
    /// plugins `state` leaves active: the weighted total of each node (upstream's
    /// `NormalizeScores`).
    pub fn renormalize(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
        raw: &[Vec<i64>],
    ) -> Result<Vec<i64>, Status> {
        let plugins = self.active_scorers(state);
        let n = nodes.len();
        let mut scores = Vec::with_capacity(plugins.len() * n);
        for (index, _, _) in &plugins {
            scores.extend(raw.iter().map(|r| r.get(*index).copied().unwrap_or(0)));
        }
        let matrix = self.normalize(
            state,
            pod,
            nodes,
            ScoreMatrix {
                plugins,
                nodes: n,
                scores,
            },
        )?;
        Ok((0..n).map(|i| matrix.total(i)).collect())
    }

    /// Filter on one node without the pods nominated to it (upstream's
    /// `RunFilterPlugins`): the first non-success status wins.
    pub fn run_filter_plugins(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let start = Instant::now();
        let status = filter_with(&self.active_filters(state), state, pod, node);
        self.observe(ExtensionPoint::Filter, status.code(), start);
        status
    }

    /// Whether this profile batches (`spec.opportunisticBatching`, on by default) and
    /// every PreFilter, Filter, PreScore and Score plugin of it can sign pods.
    pub fn batches(&self) -> bool {
        self.signers.is_some()
    }

    /// `pod`'s scheduling signature under this profile, or `None` when the profile does
    /// not batch or a plugin cannot sign this pod ([`signature`](super::signature)).
    pub fn sign_pod(&self, pod: &PodInfo) -> Option<Signature> {
        let signers = self.signers.as_ref()?;
        super::signature::sign(signers.iter().filter_map(|p| p.as_sign()), pod)
    }

    async fn run_reserve_unobserved(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        node_name: &str,
    ) -> Status {
        for plugin in self.plugins(ExtensionPoint::Reserve) {
            let Some(r) = plugin.as_reserve() else {
                continue;
            };
            let status = r.reserve(state, pod, node_name).await;
            if !status.is_success() {
                return plugin_failure("Reserve", plugin.name(), status);
            }
        }
        Status::success()
    }

    async fn run_unreserve_unobserved(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        node_name: &str,
    ) {
        for plugin in self.plugins(ExtensionPoint::Reserve).iter().rev() {
            if let Some(r) = plugin.as_reserve() {
                r.unreserve(state, pod, node_name).await;
            }
        }
    }

    async fn run_permit_unobserved(
        &self,
        state: &mut CycleState,
        pod: &Arc<PodInfo>,
        node_name: &str,
    ) -> Status {
        let mut waits: Vec<(String, Duration)> = Vec::new();
        for plugin in self.plugins(ExtensionPoint::Permit) {
            let Some(p) = plugin.as_permit() else {
                continue;
            };
            let (status, timeout) = p.permit(state, pod, node_name).await;
            match status.code() {
                Code::Success => {}
                Code::Wait => {
                    waits.push((plugin.name().to_string(), timeout.min(MAX_PERMIT_TIMEOUT)))
                }
                _ => return plugin_failure("Permit", plugin.name(), status),
            }
        }
        if waits.is_empty() {
            return Status::success();
        }
        self.handle.waiting_pods.add(pod.clone(), node_name, waits);
        Status::wait()
    }

    /// Waits until a pod held at Permit is allowed or rejected; Success when it was not
    /// held.
    pub async fn wait_on_permit(&self, pod: &PodInfo) -> Status {
        let Some(waiting) = self.handle.waiting_pods.get(pod.key()) else {
            return Status::success();
        };
        let status = waiting.wait().await;
        self.handle.waiting_pods.remove(pod.key());
        status
    }

    async fn run_pre_bind_unobserved(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        node_name: &str,
    ) -> Status {
        for plugin in self.plugins(ExtensionPoint::PreBind) {
            let Some(p) = plugin.as_pre_bind() else {
                continue;
            };
            let status = p.pre_bind(state, pod, node_name).await;
            if !status.is_success() {
                return plugin_failure("PreBind", plugin.name(), status);
            }
        }
        Status::success()
    }

    async fn run_bind_unobserved(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        node_name: &str,
    ) -> Status {
        for plugin in self.plugins(ExtensionPoint::Bind) {
            let Some(b) = plugin.as_bind() else { continue };
            let status = b.bind(state, pod, node_name).await;
            if status.is_skip() {
                continue;
            }
            if !status.is_success() {
                return plugin_failure("Bind", plugin.name(), status);
            }
            return status.with_plugin(plugin.name());
        }
        Status::error("no Bind plugin bound the pod: every binder returned Skip")
    }

    async fn run_post_bind_unobserved(&self, state: &CycleState, pod: &PodInfo, node_name: &str) {
        for plugin in self.plugins(ExtensionPoint::PostBind) {
            if let Some(p) = plugin.as_post_bind() {
                p.post_bind(state, pod, node_name).await;
            }
        }
    }
}

/// Filter on one node with the cycle's active Filter plugins: the first non-success
/// status wins.
fn filter_with(
    filters: &[(&str, &dyn FilterPlugin)],
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
) -> Status {
    for (name, filter) in filters {
        let status = filter.filter(state, pod, node);
        if status.is_rejected() {
            return status.with_plugin(name);
        }
        if !status.is_success() {
            // Upstream's wording for Filter alone.
            return Status::error(format!(
                "running {name:?} filter plugin: {}",
                status.message()
            ))
            .with_plugin(name);
        }
    }
    Status::success()
}

/// The plugins whose signatures make a pod's: those at PreFilter, Filter, PreScore and
/// Score, each once, in that order; `None` when one of them cannot sign (upstream's
/// `computeBatchablePlugins`).
fn signers(
    by_point: &HashMap<ExtensionPoint, Vec<Arc<dyn Plugin>>>,
) -> Option<Vec<Arc<dyn Plugin>>> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for point in [
        ExtensionPoint::PreFilter,
        ExtensionPoint::Filter,
        ExtensionPoint::PreScore,
        ExtensionPoint::Score,
    ] {
        for plugin in by_point.get(&point).into_iter().flatten() {
            if seen.insert(plugin.name().to_string()) {
                plugin.as_sign()?;
                out.push(plugin.clone());
            }
        }
    }
    Some(out)
}

/// The fewest nodes filtered per parallel batch.
const FILTER_BATCH: usize = 64;

/// Upstream caps a Permit wait at 15 minutes.
pub const MAX_PERMIT_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Whether `plugin` returns an implementation for `point`.
pub fn implements(plugin: &dyn Plugin, point: ExtensionPoint) -> bool {
    match point {
        ExtensionPoint::PreEnqueue => plugin.as_pre_enqueue().is_some(),
        ExtensionPoint::QueueSort => plugin.as_queue_sort().is_some(),
        ExtensionPoint::PreFilter => plugin.as_pre_filter().is_some(),
        ExtensionPoint::Filter => plugin.as_filter().is_some(),
        ExtensionPoint::PostFilter => plugin.as_post_filter().is_some(),
        ExtensionPoint::PreScore => plugin.as_pre_score().is_some(),
        ExtensionPoint::Score => plugin.as_score().is_some(),
        ExtensionPoint::Reserve => plugin.as_reserve().is_some(),
        ExtensionPoint::Permit => plugin.as_permit().is_some(),
        ExtensionPoint::PreBind => plugin.as_pre_bind().is_some(),
        ExtensionPoint::Bind => plugin.as_bind().is_some(),
        ExtensionPoint::PostBind => plugin.as_post_bind().is_some(),
    }
}
