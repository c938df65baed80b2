//! MetricsScore: ranks nodes by any PromQL instant-vector queries, and optionally rejects
//! nodes whose value crosses a threshold.
//!
//! - **PreFilter** runs every metric's query once for the cycle when some metric has a
//!   threshold (`filterAbove`/`filterBelow`), and keeps the answers in the `CycleState`;
//!   otherwise it returns Skip and queries nothing.
//! - **Filter** rejects a node (Unschedulable) whose value is above `filterAbove` or below
//!   `filterBelow`, naming the metric, the value and the threshold. A node without a
//!   sample, or any node when the query failed, passes.
//! - **PreScore** reuses the answers of PreFilter, or runs the queries when PreFilter did
//!   not (one query per metric per cycle either way), and computes every feasible node's
//!   score.
//! - **Score** returns it: the weighted average, over the metrics, of each metric's
//!   normalized score, rounded to the nearest integer.
//!
//! A metric's normalized score is min-max over the feasible nodes that have a sample:
//! `LowerIsBetter` gives the node with the lowest value 100 and the highest 0,
//! `HigherIsBetter` the reverse, linearly in between. When those nodes all have the same
//! value, each gets 50. A feasible node without a sample is scored as if its value were
//! the mean of theirs; when no feasible node has one, or the query failed, every node gets
//! 50 for that metric (and the plugin reports itself degraded, see the
//! [module documentation](super)).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use futures::future::join_all;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cluster::{NodeInfo, PodInfo, Snapshot};
use crate::framework::{
    Coupling, CycleState, FieldError, FilterPlugin, Handle, MAX_NODE_SCORE, PluginArgs,
    PluginError, PreFilterPlugin, PreFilterResult, PreScorePlugin, ScorePlugin, Status,
};

use super::args::{EXAMPLE_ADDRESS, PrometheusArgs};
use super::client::{NodeValues, PrometheusClient, QueryError};
use super::{HealthReporter, LABEL_NAME_PATTERN, NEUTRAL_SCORE, is_label_name, no_sample_problem};

/// The most metrics one MetricsScore may have.
pub const MAX_METRICS: usize = 16;

/// Args of MetricsScore: where Prometheus is (`prometheusAddress` is required) and the
/// metrics to rank nodes by; docs/metrics-plugins.md explains each.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct MetricsScoreArgs {
    #[serde(flatten)]
    pub prometheus: PrometheusArgs,
    /// The metrics nodes are ranked by (1 to 16, required); the plugin's score is their
    /// weighted average.
    // Not serialized when empty, so that the schema carries no `default: []`, which its
    // own `minItems: 1` would reject (the API server refuses a CRD with invalid defaults).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = MAX_METRICS))]
    pub metrics: Vec<Metric>,
}

/// One metric of MetricsScore.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Metric {
    /// What messages call the metric, e.g. `cpu-utilization` (default: the query).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A PromQL instant-vector query with one series per node (required), e.g.
    /// `node_load1 * on(instance) group_left(nodename) node_uname_info`.
    pub query: String,
    /// The label of the answer's series that holds the node name (default `nodename`).
    #[serde(default = "default_node_label")]
    #[schemars(regex(pattern = LABEL_NAME_PATTERN))]
    pub node_label: String,
    /// Whether a low value (`LowerIsBetter`, e.g. load) or a high one (`HigherIsBetter`,
    /// e.g. free memory) makes a node preferable (required).
    pub direction: Direction,
    /// The metric's weight in the plugin's score (1..100, default 1).
    #[serde(default = "default_weight")]
    #[schemars(range(min = 1, max = 100))]
    pub weight: i64,
    /// Filter rejects a node whose value is above this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter_above: Option<f64>,
    /// Filter rejects a node whose value is below this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter_below: Option<f64>,
}

fn default_node_label() -> String {
    "nodename".to_string()
}

fn default_weight() -> i64 {
    1
}

/// Which values make a node preferable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Direction {
    LowerIsBetter,
    HigherIsBetter,
}

impl Metric {
    /// The metric's name in messages: `name`, else the query.
    pub fn display_name(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.query)
    }

    fn has_threshold(&self) -> bool {
        self.filter_above.is_some() || self.filter_below.is_some()
    }

    /// Why a node with `value` is rejected, if it is.
    fn rejection(&self, value: f64) -> Option<String> {
        let name = self.display_name();
        if let Some(limit) = self.filter_above.filter(|limit| value > *limit) {
            return Some(format!(
                "metric {name:?} is {value}, above filterAbove {limit}"
            ));
        }
        if let Some(limit) = self.filter_below.filter(|limit| value < *limit) {
            return Some(format!(
                "metric {name:?} is {value}, below filterBelow {limit}"
            ));
        }
        None
    }

    fn validate(&self, path: &str) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if self.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
            errors.push(FieldError::invalid(
                format!("{path}.name"),
                &self.name.as_deref().unwrap_or_default().into(),
                "must not be empty; omit it to name the metric by its query",
            ));
        }
        if self.query.trim().is_empty() {
            errors.push(FieldError::required(
                format!("{path}.query"),
                "a PromQL instant-vector query with one series per node",
            ));
        }
        if !is_label_name(&self.node_label) {
            errors.push(FieldError::invalid(
                format!("{path}.nodeLabel"),
                &self.node_label.as_str().into(),
                "must be a Prometheus label name: a letter or '_', then letters, digits or '_'",
            ));
        }
        if !(1..=100).contains(&self.weight) {
            errors.push(FieldError::new(
                format!("{path}.weight"),
                self.weight,
                "must be between 1 and 100",
            ));
        }
        if let (Some(above), Some(below)) = (self.filter_above, self.filter_below)
            && above <= below
        {
            errors.push(FieldError::new(
                format!("{path}.filterAbove"),
                above,
                format!("must be greater than filterBelow ({below}): nodes pass when filterBelow <= value <= filterAbove"),
            ));
        }
        errors
    }
}

impl PluginArgs for MetricsScoreArgs {
    /// The fields without a default: a Prometheus address and one metric (node load).
    fn example() -> Self {
        MetricsScoreArgs {
            prometheus: PrometheusArgs::for_address(EXAMPLE_ADDRESS),
            metrics: vec![Metric {
                name: None,
                query: "node_load1".to_string(),
                node_label: default_node_label(),
                direction: Direction::LowerIsBetter,
                weight: default_weight(),
                filter_above: None,
                filter_below: None,
            }],
        }
    }

    fn validate(&self, path: &str) -> Vec<FieldError> {
        let mut errors = self.prometheus.validate(path);
        let metrics_path = format!("{path}.metrics");
        if self.metrics.is_empty() {
            errors.push(FieldError::required(
                &metrics_path,
                "at least one metric, each with a query and a direction",
            ));
        }
        if self.metrics.len() > MAX_METRICS {
            errors.push(FieldError::too_many(
                &metrics_path,
                self.metrics.len(),
                MAX_METRICS as u64,
            ));
        }
        let mut names: HashMap<&str, usize> = HashMap::new();
        for (i, metric) in self.metrics.iter().enumerate() {
            let item = format!("{metrics_path}[{i}]");
            errors.extend(metric.validate(&item));
            let Some(name) = metric.name.as_deref().filter(|n| !n.trim().is_empty()) else {
                continue;
            };
            match names.get(name) {
                Some(first) => errors.push(FieldError::duplicate(
                    format!("{item}.name"),
                    &name.into(),
                    format!("{metrics_path}[{first}] has this name already"),
                )),
                None => {
                    names.insert(name, i);
                }
            }
        }
        errors
    }
}

/// The answers of one cycle, one per metric in args order; written by whichever of
/// PreFilter and PreScore runs the queries first.
#[derive(Debug, Clone)]
struct MetricAnswers(Vec<Result<Arc<NodeValues>, QueryError>>);

/// PreScore's result: the score of each feasible node.
#[derive(Debug, Clone)]
struct NodeScores(HashMap<String, i64>);

/// The MetricsScore plugin.
pub struct MetricsScore {
    client: PrometheusClient,
    metrics: Vec<Metric>,
    health: HealthReporter,
}

impl MetricsScore {
    /// The Prometheus client, e.g. for its query count.
    pub fn client(&self) -> &PrometheusClient {
        &self.client
    }

    /// Runs every metric's query (concurrently), and reports the plugin's health: degraded
    /// when a query failed or sampled none of `nodes`.
    async fn query_all<'a>(&self, nodes: impl Iterator<Item = &'a str> + Clone) -> MetricAnswers {
        let answers: Vec<Result<Arc<NodeValues>, QueryError>> = join_all(
            self.metrics
                .iter()
                .map(|m| self.client.node_values(&m.query, &m.node_label)),
        )
        .await;
        let node_count = nodes.clone().count();
        let problems: Vec<(&Metric, String)> = self
            .metrics
            .iter()
            .zip(&answers)
            .filter_map(|(metric, answer)| {
                let problem = match answer {
                    Err(error) => error.to_string(),
                    Ok(values) if !nodes.clone().any(|n| values.get(n).is_some()) => {
                        no_sample_problem(values, &metric.node_label, node_count)
                    }
                    Ok(_) => return None,
                };
                Some((metric, problem))
            })
            .collect();
        match problems.as_slice() {
            [] => self.health.healthy(),
            // Prometheus down: one error, said once.
            [(_, first), rest @ ..]
                if problems.len() == self.metrics.len()
                    && problems.len() > 1
                    && rest.iter().all(|(_, p)| p == first) =>
            {
                self.health
                    .degraded(&format!("all {} metrics: {first}", problems.len()));
            }
            _ => {
                let listed: Vec<String> = problems
                    .iter()
                    .map(|(metric, problem)| {
                        format!("metric {:?}: {problem}", metric.display_name())
                    })
                    .collect();
                self.health.degraded(&listed.join("; "));
            }
        }
        MetricAnswers(answers)
    }
}

/// Each node's normalized score (0..=100) for one metric, in node order.
fn metric_scores(
    direction: Direction,
    answer: Option<&NodeValues>,
    nodes: &[Arc<NodeInfo>],
) -> Vec<f64> {
    let neutral = NEUTRAL_SCORE as f64;
    let values: Vec<Option<f64>> = nodes
        .iter()
        .map(|n| answer.and_then(|a| a.get(n.name())))
        .collect();
    let sampled: Vec<f64> = values.iter().flatten().copied().collect();
    if sampled.is_empty() {
        return vec![neutral; nodes.len()];
    }
    let min = sampled.iter().copied().fold(f64::INFINITY, f64::min);
    let max = sampled.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = sampled.iter().sum::<f64>() / sampled.len() as f64;
    let spread = max - min;
    let max_score = MAX_NODE_SCORE as f64;
    values
        .iter()
        .map(|value| {
            let value = value.unwrap_or(mean);
            if spread <= 0.0 || !spread.is_finite() {
                return neutral;
            }
            let score = match direction {
                Direction::LowerIsBetter => (max - value) / spread,
                Direction::HigherIsBetter => (value - min) / spread,
            } * max_score;
            score.clamp(0.0, max_score)
        })
        .collect()
}

/// The plugin's score of each node: the weighted average of the metrics' scores.
fn node_scores(
    metrics: &[Metric],
    answers: &MetricAnswers,
    nodes: &[Arc<NodeInfo>],
) -> HashMap<String, i64> {
    let total_weight: i64 = metrics.iter().map(|m| m.weight).sum();
    let mut weighted = vec![0.0; nodes.len()];
    for (metric, answer) in metrics.iter().zip(&answers.0) {
        let scores = metric_scores(metric.direction, answer.as_deref().ok(), nodes);
        for (sum, score) in weighted.iter_mut().zip(scores) {
            *sum += score * metric.weight as f64;
        }
    }
    nodes
        .iter()
        .zip(weighted)
        .map(|(node, sum)| {
            let score = if total_weight > 0 {
                (sum / total_weight as f64).round() as i64
            } else {
                NEUTRAL_SCORE
            };
            (node.name().to_string(), score.clamp(0, MAX_NODE_SCORE))
        })
        .collect()
}

crate::plugin! {
    MetricsScore {
        name: "MetricsScore",
        points: [PreFilter, Filter, PreScore, Score],
    }

    impl Plugin {
        /// A node rejected for a metric past its threshold may pass once the metric moves.
        /// No cluster event says so, hence no `events_to_register` either: any event (or
        /// the periodic flush) retries the pod.
        fn rejections_expire(&self) -> bool {
            true
        }
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str = "Ranks nodes by PromQL queries (each lower- or higher-is-better, weighted) and optionally rejects nodes whose value crosses a threshold; scores every node equally and rejects none when Prometheus is unavailable.";
        // Filter reads the answers PreFilter fetched, Score the scores PreScore computed;
        // without them no node is rejected and every node scores the same.
        const COUPLINGS: &'static [Coupling] =
            &[Coupling::FilterNeedsPreFilter, Coupling::ScoreNeedsPreScore];
        type Args = MetricsScoreArgs;

        fn build(args: MetricsScoreArgs, handle: &Handle) -> Result<Self, PluginError> {
            let client = super::plugin_client(args.prometheus.client_config(), handle, Self::NAME)?;
            Ok(MetricsScore {
                client,
                metrics: args.metrics,
                health: HealthReporter::new(Self::NAME, handle.health.clone()),
            })
        }
    }
}

#[async_trait]
impl PreFilterPlugin for MetricsScore {
    async fn pre_filter(
        &self,
        state: &mut CycleState,
        _pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        if !self.metrics.iter().any(Metric::has_threshold) {
            return (None, Status::skip());
        }
        let answers = self
            .query_all(snapshot.nodes().iter().map(|n| n.name()))
            .await;
        state.write(answers);
        (None, Status::success())
    }
}

impl FilterPlugin for MetricsScore {
    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        // PreFilter runs wherever Filter runs (`COUPLINGS`) and skips, taking Filter with
        // it, only without thresholds; no answers means nothing to reject.
        let Some(answers) = state.read::<MetricAnswers>() else {
            return Status::success();
        };
        let rejection = self
            .metrics
            .iter()
            .zip(&answers.0)
            .filter_map(|(metric, answer)| {
                let value = answer.as_ref().ok()?.get(node.name())?;
                metric.rejection(value)
            })
            .next();
        match rejection {
            Some(message) => Status::unschedulable(message),
            None => Status::success(),
        }
    }
}

#[async_trait]
impl PreScorePlugin for MetricsScore {
    async fn pre_score(
        &self,
        state: &mut CycleState,
        _pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
    ) -> Status {
        let answers = match state.read::<MetricAnswers>() {
            Some(answers) => answers.clone(),
            None => self.query_all(nodes.iter().map(|n| n.name())).await,
        };
        state.write(NodeScores(node_scores(&self.metrics, &answers, nodes)));
        Status::success()
    }
}

impl ScorePlugin for MetricsScore {
    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        // PreScore runs wherever Score runs (`COUPLINGS`) and always writes the scores.
        let Some(scores) = state.read::<NodeScores>() else {
            return Ok(NEUTRAL_SCORE);
        };
        Ok(scores.0.get(node.name()).copied().unwrap_or(NEUTRAL_SCORE))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Plugin;
    use crate::framework::{Code, decode_args};
    use crate::plugins::prometheus::test_nodes as nodes;
    use crate::testing::executor::complete;
    use k8s_openapi::api::core::v1::Pod;

    fn metric(name: &str, direction: Direction, weight: i64) -> Metric {
        Metric {
            name: Some(name.to_string()),
            query: format!("{name}_query"),
            node_label: "nodename".to_string(),
            direction,
            weight,
            filter_above: None,
            filter_below: None,
        }
    }

    fn answer(samples: &[(&str, f64)]) -> Result<Arc<NodeValues>, QueryError> {
        Ok(Arc::new(samples.iter().map(|(n, v)| (*n, *v)).collect()))
    }

    fn unreachable() -> Result<Arc<NodeValues>, QueryError> {
        Err(QueryError::Unreachable {
            address: "http://127.0.0.1:9".into(),
            detail: "connection refused".into(),
        })
    }

    fn plugin(metrics: Vec<Metric>) -> MetricsScore {
        MetricsScore {
            client: PrometheusClient::new(super::super::ClientConfig::new("http://127.0.0.1:9"))
                .expect("client for a valid address"),
            metrics,
            health: HealthReporter::new("MetricsScore", Default::default()),
        }
    }

    /// Score of each node after PreScore found `answers` in the cycle state (as PreFilter
    /// leaves them).
    fn scores(
        metrics: Vec<Metric>,
        answers: Vec<Result<Arc<NodeValues>, QueryError>>,
        names: &[&str],
    ) -> Vec<i64> {
        let plugin = plugin(metrics);
        let nodes = nodes(names);
        let pod = PodInfo::new(Pod::default()).expect("an empty pod");
        let mut state = CycleState::new();
        state.write(MetricAnswers(answers));
        let status = complete(plugin.pre_score(&mut state, &pod, &nodes));
        assert!(status.is_success(), "{status}");
        nodes
            .iter()
            .map(|n| plugin.score(&state, &pod, n).unwrap_or(-1))
            .collect()
    }

    #[test]
    fn one_metric_is_min_max_normalized_in_its_direction() {
        let samples = [("a", 0.2), ("b", 0.6), ("c", 1.0)];
        assert_eq!(
            scores(
                vec![metric("cpu", Direction::LowerIsBetter, 1)],
                vec![answer(&samples)],
                &["a", "b", "c"]
            ),
            [100, 50, 0]
        );
        assert_eq!(
            scores(
                vec![metric("cpu", Direction::HigherIsBetter, 1)],
                vec![answer(&samples)],
                &["a", "b", "c"]
            ),
            [0, 50, 100]
        );
        // 0 .. 8: 1 is an eighth of the way, 87.5 rounds to 88 (and 12.5 to 13).
        assert_eq!(
            scores(
                vec![metric("load", Direction::LowerIsBetter, 1)],
                vec![answer(&[("a", 0.0), ("b", 1.0), ("c", 8.0)])],
                &["a", "b", "c"]
            ),
            [100, 88, 0]
        );
        assert_eq!(
            scores(
                vec![metric("load", Direction::HigherIsBetter, 1)],
                vec![answer(&[("a", 0.0), ("b", 1.0), ("c", 8.0)])],
                &["a", "b", "c"]
            ),
            [0, 13, 100]
        );
    }

    #[test]
    fn the_plugin_score_is_the_weighted_average() {
        // cpu (weight 2, lower is better): a 100, b 50, c 0.
        // free memory (weight 1, higher is better): a 0, b 50, c 100.
        // a = (2*100 + 0) / 3 = 66.7 -> 67; b = 50; c = (0 + 100) / 3 = 33.3 -> 33.
        let got = scores(
            vec![
                metric("cpu", Direction::LowerIsBetter, 2),
                metric("free-memory", Direction::HigherIsBetter, 1),
            ],
            vec![
                answer(&[("a", 0.2), ("b", 0.6), ("c", 1.0)]),
                answer(&[("a", 1e9), ("b", 3e9), ("c", 5e9)]),
            ],
            &["a", "b", "c"],
        );
        assert_eq!(got, [67, 50, 33]);
    }

    #[test]
    fn missing_samples_and_failed_queries_score_neutrally() {
        let cpu = || metric("cpu", Direction::LowerIsBetter, 1);
        // c has no sample: scored as the mean 0.5 of a (0.2) and b (0.8), halfway.
        assert_eq!(
            scores(
                vec![cpu()],
                vec![answer(&[("a", 0.2), ("b", 0.8)])],
                &["a", "b", "c"]
            ),
            [100, 0, 50]
        );
        // Every sampled node equal: 50 for all, the unsampled one too.
        assert_eq!(
            scores(
                vec![cpu()],
                vec![answer(&[("a", 0.4), ("b", 0.4)])],
                &["a", "b", "c"]
            ),
            [50, 50, 50]
        );
        assert_eq!(
            scores(vec![cpu()], vec![answer(&[])], &["a", "b"]),
            [50, 50]
        );
        assert_eq!(
            scores(vec![cpu()], vec![unreachable()], &["a", "b"]),
            [50, 50]
        );
        // A failed metric contributes 50 to every node; the other still ranks them.
        // a = (100 + 50) / 2 = 75, b = (0 + 50) / 2 = 25.
        assert_eq!(
            scores(
                vec![cpu(), metric("load", Direction::LowerIsBetter, 1)],
                vec![answer(&[("a", 0.1), ("b", 0.9)]), unreachable()],
                &["a", "b"]
            ),
            [75, 25]
        );
    }

    #[test]
    fn its_rejections_expire_with_time() {
        assert!(plugin(vec![metric("cpu", Direction::LowerIsBetter, 1)]).rejections_expire());
    }

    #[test]
    fn filter_rejects_past_a_threshold_and_names_metric_value_and_limit() {
        let mut hot = metric("cpu-utilization", Direction::LowerIsBetter, 1);
        hot.filter_above = Some(0.85);
        let mut free = metric("free-memory-bytes", Direction::HigherIsBetter, 1);
        free.filter_below = Some(1e9);
        let plugin = plugin(vec![hot, free]);
        let mut state = CycleState::new();
        state.write(MetricAnswers(vec![
            answer(&[("hot", 0.93), ("ok", 0.85), ("tight", 0.2)]),
            answer(&[("hot", 8e9), ("ok", 1e9), ("tight", 5e8)]),
        ]));
        let pod = PodInfo::new(Pod::default()).expect("an empty pod");
        let cases = [
            (
                "hot",
                Some("metric \"cpu-utilization\" is 0.93, above filterAbove 0.85"),
            ),
            ("ok", None),
            (
                "tight",
                Some("metric \"free-memory-bytes\" is 500000000, below filterBelow 1000000000"),
            ),
            ("unsampled", None),
        ];
        for (name, want) in cases {
            let node = &nodes(&[name])[0];
            let status = plugin.filter(&state, &pod, node);
            match want {
                Some(message) => {
                    assert_eq!(status.code(), Code::Unschedulable, "{name}");
                    assert_eq!(status.message(), message, "{name}");
                }
                None => assert!(status.is_success(), "{name}: {status}"),
            }
        }
    }

    #[test]
    fn filter_never_rejects_when_the_query_failed() {
        let mut hot = metric("cpu", Direction::LowerIsBetter, 1);
        hot.filter_above = Some(0.0);
        let plugin = plugin(vec![hot]);
        let mut state = CycleState::new();
        state.write(MetricAnswers(vec![unreachable()]));
        let pod = PodInfo::new(Pod::default()).expect("an empty pod");
        assert!(plugin.filter(&state, &pod, &nodes(&["a"])[0]).is_success());
    }

    #[test]
    fn pre_filter_skips_and_queries_nothing_without_thresholds() {
        let plugin = plugin(vec![metric("cpu", Direction::LowerIsBetter, 1)]);
        let mut state = CycleState::new();
        let pod = PodInfo::new(Pod::default()).expect("an empty pod");
        let (_, status) = complete(plugin.pre_filter(&mut state, &pod, &Snapshot::default()));
        assert!(status.is_skip(), "{status}");
        assert_eq!(plugin.client().queries_issued(), 0);
    }

    #[test]
    fn args_decode_with_defaults() {
        let args: MetricsScoreArgs = decode_args(
            Some(&serde_json::json!({
                "prometheusAddress": "https://prometheus.example.com",
                "metrics": [{"query": "up", "direction": "HigherIsBetter"}],
            })),
            "args",
        )
        .unwrap_or_default();
        assert_eq!(
            args.metrics,
            [Metric {
                name: None,
                query: "up".into(),
                node_label: "nodename".into(),
                direction: Direction::HigherIsBetter,
                weight: 1,
                filter_above: None,
                filter_below: None,
            }]
        );
        assert_eq!(args.metrics[0].display_name(), "up");
    }

    #[test]
    fn invalid_args_name_field_and_value() {
        let path = "spec.pluginConfig.metricsScore";
        let address = "http://p:9090";
        let cases: Vec<(&str, serde_json::Value, Vec<String>)> = vec![
            (
                "no metrics",
                serde_json::json!({"prometheusAddress": address}),
                vec![format!(
                    "{path}.metrics: Required value: at least one metric, each with a query and a direction"
                )],
            ),
            (
                "empty query, bad label, zero weight",
                serde_json::json!({"prometheusAddress": address, "metrics": [
                    {"query": "", "nodeLabel": "1node", "direction": "LowerIsBetter", "weight": 0},
                ]}),
                vec![
                    format!(
                        "{path}.metrics[0].query: Required value: a PromQL instant-vector query with one series per node"
                    ),
                    format!(
                        "{path}.metrics[0].nodeLabel: Invalid value: \"1node\": must be a Prometheus label name: a letter or '_', then letters, digits or '_'"
                    ),
                    format!(
                        "{path}.metrics[0].weight: Invalid value: 0: must be between 1 and 100"
                    ),
                ],
            ),
            (
                "thresholds that leave no room",
                serde_json::json!({"prometheusAddress": address, "metrics": [
                    {"query": "x", "direction": "LowerIsBetter", "filterAbove": 0.5, "filterBelow": 0.8},
                ]}),
                vec![format!(
                    "{path}.metrics[0].filterAbove: Invalid value: 0.5: must be greater than filterBelow (0.8): nodes pass when filterBelow <= value <= filterAbove"
                )],
            ),
            (
                "two metrics with one name",
                serde_json::json!({"prometheusAddress": address, "metrics": [
                    {"name": "cpu", "query": "x", "direction": "LowerIsBetter"},
                    {"name": "cpu", "query": "y", "direction": "LowerIsBetter"},
                ]}),
                vec![format!(
                    "{path}.metrics[1].name: Duplicate value: \"cpu\": {path}.metrics[0] has this name already"
                )],
            ),
            (
                "an address that is not http",
                serde_json::json!({"prometheusAddress": "tcp://p:9090", "metrics": [
                    {"query": "x", "direction": "LowerIsBetter"},
                ]}),
                vec![format!(
                    "{path}.prometheusAddress: Invalid value: \"tcp://p:9090\": scheme \"tcp\" is not http or https; give the http or https URL of the Prometheus HTTP API, e.g. http://prometheus-operated.monitoring.svc:9090"
                )],
            ),
        ];
        for (name, value, want) in cases {
            let errors = decode_args::<MetricsScoreArgs>(Some(&value), path)
                .err()
                .unwrap_or_default();
            let got: Vec<String> = errors.iter().map(ToString::to_string).collect();
            assert_eq!(got, want, "{name}");
        }
        // A direction outside the enum does not decode.
        let bad_direction = serde_json::json!({"prometheusAddress": address, "metrics": [
            {"query": "x", "direction": "Sideways"},
        ]});
        let errors = decode_args::<MetricsScoreArgs>(Some(&bad_direction), path)
            .err()
            .unwrap_or_default();
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].to_string().contains("unknown variant `Sideways`"),
            "{}",
            errors[0]
        );
    }
}
