//! NetworkTraffic: prefers nodes that receive little network traffic, measured by
//! Prometheus, in the manner of the scheduler-plugins NetworkTraffic sample
//! plugin, with one query for all nodes instead of one per node.
//!
//! - **PreScore** runs [`DEFAULT_QUERY`] (or the `query` override) once for the cycle:
//!   node_exporter's receive byte rate on `networkInterface` over `timeRangeSeconds`,
//!   joined to node names through `node_uname_info`'s `nodename`. The answer is read by
//!   `nodeLabel` and kept in the `CycleState`.
//! - **Score** is the node's bandwidth in bytes per second, truncated to an integer, as
//!   the sample plugin's `int64(value)`.
//! - **NormalizeScore** is the sample plugin's `100 - score * 100 / max` with integer
//!   division (upstream `DefaultNormalizeScore` reversed): the busiest node gets 0, a node
//!   without traffic 100; when every node is at 0, every node gets 100.
//!
//! A feasible node without a sample is scored as if it received the mean bandwidth of the
//! feasible nodes that have one: it ranks between the quietest and the busiest, never
//! first (or last) merely for lacking data. When no feasible node has a sample, or the
//! query fails, every node gets [`NEUTRAL_SCORE`] (50) and the plugin reports itself
//! degraded (see the [module documentation](super)).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cluster::{NodeInfo, PodInfo};
use crate::framework::{
    Coupling, CycleState, FieldError, Handle, MAX_NODE_SCORE, PluginArgs, PluginError,
    PreScorePlugin, ScoreExtensions, ScorePlugin, Status,
};
use crate::helpers::score::default_normalize_score;

use super::args::{EXAMPLE_ADDRESS, PrometheusArgs};
use super::client::{NodeValues, PrometheusClient};
use super::{HealthReporter, LABEL_NAME_PATTERN, NEUTRAL_SCORE, is_label_name, no_sample_problem};

/// The query NetworkTraffic runs unless `query` replaces it, with the placeholders
/// `${networkInterface}` and `${timeRangeSeconds}` standing for those args: the receive
/// byte rate of the interface on each node_exporter target, given the target's `nodename`
/// from `node_uname_info` and summed per node name.
pub const DEFAULT_QUERY: &str = r#"sum by (nodename) (rate(node_network_receive_bytes_total{device="${networkInterface}"}[${timeRangeSeconds}s]) * on(instance) group_left(nodename) node_uname_info)"#;

/// The placeholders a NetworkTraffic query may hold.
pub const QUERY_PLACEHOLDERS: [&str; 2] = ["${networkInterface}", "${timeRangeSeconds}"];

/// The label carrying the node name in the answer to [`DEFAULT_QUERY`].
pub const DEFAULT_NODE_LABEL: &str = "nodename";

/// What `networkInterface` may be: an interface name as the `device` label shows it.
const INTERFACE_PATTERN: &str = "^[A-Za-z0-9_.:-]+$";
const INTERFACE_MAX_LENGTH: usize = 64;
/// The highest raw score: 1 PB/s, beyond any interface, and small enough that
/// NormalizeScore's `score * 100` cannot overflow.
const MAX_BYTES_PER_SECOND: f64 = 1e15;
/// One day: a longer range ranks nodes by history rather than by current load.
const MAX_TIME_RANGE_SECONDS: i64 = 86_400;

/// Args of NetworkTraffic: where Prometheus is (`prometheusAddress` is required) and what
/// to measure; docs/metrics-plugins.md explains each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct NetworkTrafficArgs {
    #[serde(flatten)]
    pub prometheus: PrometheusArgs,
    /// The network interface whose received bytes count: node_exporter's `device` label
    /// (default `eth0`).
    #[schemars(length(min = 1, max = INTERFACE_MAX_LENGTH), regex(pattern = INTERFACE_PATTERN))]
    pub network_interface: String,
    /// The window the receive rate is averaged over, in seconds (default 60; at least two
    /// scrape intervals, so that the window holds two samples).
    #[schemars(range(min = 1, max = MAX_TIME_RANGE_SECONDS))]
    pub time_range_seconds: i64,
    /// A PromQL instant-vector query replacing the default, for exporters labelled
    /// differently: one series per node, its value the node's bandwidth. It may use the
    /// placeholders `${networkInterface}` and `${timeRangeSeconds}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// The label of the answer's series that holds the node name (default `nodename`).
    /// Set `query` too when changing it: the default query keeps only `nodename`.
    #[schemars(regex(pattern = LABEL_NAME_PATTERN))]
    pub node_label: String,
}

impl Default for NetworkTrafficArgs {
    fn default() -> Self {
        NetworkTrafficArgs {
            prometheus: PrometheusArgs::default(),
            network_interface: "eth0".to_string(),
            time_range_seconds: 60,
            query: None,
            node_label: DEFAULT_NODE_LABEL.to_string(),
        }
    }
}

impl NetworkTrafficArgs {
    /// The query to run: `query` or [`DEFAULT_QUERY`], placeholders filled in.
    pub fn effective_query(&self) -> String {
        self.query
            .as_deref()
            .unwrap_or(DEFAULT_QUERY)
            .replace("${networkInterface}", &self.network_interface)
            .replace("${timeRangeSeconds}", &self.time_range_seconds.to_string())
    }
}

impl PluginArgs for NetworkTrafficArgs {
    /// The defaults with a Prometheus address, the one field without a default.
    fn example() -> Self {
        NetworkTrafficArgs {
            prometheus: PrometheusArgs::for_address(EXAMPLE_ADDRESS),
            ..NetworkTrafficArgs::default()
        }
    }

    fn validate(&self, path: &str) -> Vec<FieldError> {
        let mut errors = self.prometheus.validate(path);
        let interface = &self.network_interface;
        let interface_ok = !interface.is_empty()
            && interface.len() <= INTERFACE_MAX_LENGTH
            && interface
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.:-".contains(c));
        if !interface_ok {
            errors.push(FieldError::invalid(
                format!("{path}.networkInterface"),
                &interface.as_str().into(),
                format!("must be an interface name as node_exporter's device label shows it: 1 to {INTERFACE_MAX_LENGTH} letters, digits, '_', '.', ':' or '-' (e.g. eth0, ens5)"),
            ));
        }
        if !(1..=MAX_TIME_RANGE_SECONDS).contains(&self.time_range_seconds) {
            errors.push(FieldError::new(
                format!("{path}.timeRangeSeconds"),
                self.time_range_seconds,
                format!("must be between 1 and {MAX_TIME_RANGE_SECONDS}"),
            ));
        }
        if let Some(query) = &self.query {
            errors.extend(check_query(query, &format!("{path}.query")));
        }
        if !is_label_name(&self.node_label) {
            errors.push(FieldError::invalid(
                format!("{path}.nodeLabel"),
                &self.node_label.as_str().into(),
                "must be a Prometheus label name: a letter or '_', then letters, digits or '_'",
            ));
        } else if self.query.is_none() && self.node_label != DEFAULT_NODE_LABEL {
            errors.push(FieldError::invalid(
                format!("{path}.nodeLabel"),
                &self.node_label.as_str().into(),
                format!("the default query returns only the {DEFAULT_NODE_LABEL:?} label; set query to one whose series carry this label"),
            ));
        }
        errors
    }
}

/// Problems of a `query` override: empty, or a `${...}` that is not a placeholder.
fn check_query(query: &str, path: &str) -> Vec<FieldError> {
    if query.trim().is_empty() {
        return vec![FieldError::required(
            path,
            "a PromQL instant-vector query with one series per node; omit the field for the default query",
        )];
    }
    let mut rest = query;
    while let Some(start) = rest.find("${") {
        let candidate = &rest[start..];
        let end = candidate.find('}').map_or(candidate.len(), |i| i + 1);
        let placeholder = &candidate[..end];
        if !QUERY_PLACEHOLDERS.contains(&placeholder) {
            return vec![FieldError::invalid(
                path,
                &query.into(),
                format!(
                    "unknown placeholder {placeholder}; the placeholders are {}",
                    QUERY_PLACEHOLDERS.join(" and ")
                ),
            )];
        }
        rest = &candidate[end..];
    }
    Vec::new()
}

/// What PreScore leaves for Score and NormalizeScore: each feasible node's raw score.
#[derive(Debug, Clone, PartialEq)]
struct Bandwidth {
    /// Bytes per second, truncated; the mean for a node without a sample.
    raw: HashMap<String, i64>,
    /// False when no feasible node had a sample (or the query failed): every node then
    /// gets the neutral score.
    measured: bool,
}

impl Bandwidth {
    fn unmeasured() -> Self {
        Bandwidth {
            raw: HashMap::new(),
            measured: false,
        }
    }

    /// The raw scores of `nodes` from the answer `values`.
    fn of(values: &NodeValues, nodes: &[Arc<NodeInfo>]) -> Self {
        // A negative rate (a counter reset seen by a custom query) is no traffic; the cap
        // keeps `score * 100` of NormalizeScore within i64.
        let bytes_per_second = |v: f64| v.clamp(0.0, MAX_BYTES_PER_SECOND);
        let sampled: Vec<f64> = nodes
            .iter()
            .filter_map(|n| values.get(n.name()))
            .map(bytes_per_second)
            .collect();
        if sampled.is_empty() {
            return Bandwidth::unmeasured();
        }
        let mean = sampled.iter().sum::<f64>() / sampled.len() as f64;
        let raw = nodes
            .iter()
            .map(|n| {
                let value = values.get(n.name()).map_or(mean, bytes_per_second);
                // Truncation toward zero, as the sample plugin's int64(value).
                (n.name().to_string(), value as i64)
            })
            .collect();
        Bandwidth {
            raw,
            measured: true,
        }
    }
}

/// The NetworkTraffic plugin.
pub struct NetworkTraffic {
    client: PrometheusClient,
    query: String,
    node_label: String,
    health: HealthReporter,
}

impl NetworkTraffic {
    /// The Prometheus client, e.g. for its query count.
    pub fn client(&self) -> &PrometheusClient {
        &self.client
    }

    /// The query run in each cycle, placeholders filled in.
    pub fn query(&self) -> &str {
        &self.query
    }
}

crate::plugin! {
    NetworkTraffic {
        name: "NetworkTraffic",
        points: [PreScore, Score],
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str = "Prefers nodes receiving little network traffic, as Prometheus measures it from node_exporter (busiest node 0, idle node 100); scores every node equally when Prometheus is unavailable.";
        // Score reads the receive rates PreScore fetched; without them every node would
        // score the same.
        const COUPLINGS: &'static [Coupling] = &[Coupling::ScoreNeedsPreScore];
        type Args = NetworkTrafficArgs;

        fn build(args: NetworkTrafficArgs, handle: &Handle) -> Result<Self, PluginError> {
            let client = super::plugin_client(args.prometheus.client_config(), handle, Self::NAME)?;
            Ok(NetworkTraffic {
                client,
                query: args.effective_query(),
                node_label: args.node_label,
                health: HealthReporter::new(Self::NAME, handle.health.clone()),
            })
        }
    }
}

#[async_trait]
impl PreScorePlugin for NetworkTraffic {
    async fn pre_score(
        &self,
        state: &mut CycleState,
        _pod: &PodInfo,
        nodes: &[Arc<NodeInfo>],
    ) -> Status {
        let bandwidth = match self.client.node_values(&self.query, &self.node_label).await {
            Ok(values) => {
                let bandwidth = Bandwidth::of(&values, nodes);
                if bandwidth.measured {
                    self.health.healthy();
                } else {
                    self.health.degraded(&no_sample_problem(
                        &values,
                        &self.node_label,
                        nodes.len(),
                    ));
                }
                bandwidth
            }
            Err(error) => {
                self.health.degraded(&error.to_string());
                Bandwidth::unmeasured()
            }
        };
        state.write(bandwidth);
        Status::success()
    }
}

impl ScorePlugin for NetworkTraffic {
    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(state
            .read::<Bandwidth>()
            .and_then(|b| b.raw.get(node.name()).copied())
            .unwrap_or(0))
    }

    fn score_extensions(&self) -> Option<&dyn ScoreExtensions> {
        Some(self)
    }
}

impl ScoreExtensions for NetworkTraffic {
    fn normalize_score(
        &self,
        state: &CycleState,
        _pod: &PodInfo,
        _nodes: &[Arc<NodeInfo>],
        scores: &mut [i64],
    ) -> Status {
        // Resolution runs PreScore wherever Score runs (`COUPLINGS`), so only an
        // unanswered query leaves the rates unmeasured.
        if state.read::<Bandwidth>().is_some_and(|b| b.measured) {
            return default_normalize_score(MAX_NODE_SCORE, true, scores);
        }
        scores.fill(NEUTRAL_SCORE);
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::decode_args;
    use crate::plugins::prometheus::test_nodes as nodes;
    use k8s_openapi::api::core::v1::Pod;

    /// Raw scores of `nodes` from `samples`, then NormalizeScore, in node order.
    fn normalized(samples: &[(&str, f64)], names: &[&str]) -> Vec<i64> {
        let values: NodeValues = samples.iter().map(|(n, v)| (*n, *v)).collect();
        let nodes = nodes(names);
        let mut state = CycleState::new();
        state.write(Bandwidth::of(&values, &nodes));
        let plugin = NetworkTraffic {
            client: PrometheusClient::new(super::super::ClientConfig::new("http://127.0.0.1:9"))
                .expect("client for a valid address"),
            query: DEFAULT_QUERY.to_string(),
            node_label: DEFAULT_NODE_LABEL.to_string(),
            health: HealthReporter::new("NetworkTraffic", Default::default()),
        };
        let pod = PodInfo::new(Pod::default()).expect("an empty pod");
        let mut scores: Vec<i64> = nodes
            .iter()
            .map(|n| plugin.score(&state, &pod, n).unwrap_or(-1))
            .collect();
        let status = plugin.normalize_score(&state, &pod, &nodes, &mut scores);
        assert!(status.is_success(), "{status}");
        scores
    }

    #[test]
    fn normalization_follows_the_issue_formula() {
        struct Case {
            name: &'static str,
            samples: &'static [(&'static str, f64)],
            want: [i64; 3],
        }
        let cases = [
            Case {
                name: "max 200000: a node at 140000 scores 30, an idle one 100",
                samples: &[("a", 200_000.0), ("b", 140_000.0), ("c", 0.0)],
                want: [0, 30, 100],
            },
            Case {
                name: "every node at zero: 100 everywhere",
                samples: &[("a", 0.0), ("b", 0.0), ("c", 0.0)],
                want: [100, 100, 100],
            },
            Case {
                name: "integer division truncates before subtracting (200/3 = 66 -> 34)",
                samples: &[("a", 3.0), ("b", 2.0), ("c", 1.0)],
                want: [0, 34, 67],
            },
            Case {
                name: "fractions of a byte are truncated first, as int64(value)",
                samples: &[("a", 1000.9), ("b", 500.9), ("c", 0.9)],
                want: [0, 50, 100],
            },
            Case {
                name: "equal traffic everywhere: every node is the busiest",
                samples: &[("a", 5000.0), ("b", 5000.0), ("c", 5000.0)],
                want: [0, 0, 0],
            },
        ];
        for case in cases {
            assert_eq!(
                normalized(case.samples, &["a", "b", "c"]),
                case.want,
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn a_node_without_a_sample_is_scored_as_the_mean_of_the_others() {
        // Mean of 200000 and 0 is 100000: 100 - 100000 * 100 / 200000 = 50.
        assert_eq!(
            normalized(&[("a", 200_000.0), ("b", 0.0)], &["a", "b", "c"]),
            [0, 100, 50]
        );
        // Not the quietest merely for lacking data: it ties the others.
        assert_eq!(
            normalized(&[("a", 80_000.0), ("b", 80_000.0)], &["a", "b", "c"]),
            [0, 0, 0]
        );
        // A sample for a node that is not feasible takes no part.
        assert_eq!(
            normalized(&[("a", 100.0), ("b", 50.0), ("z", 1e12)], &["a", "b", "c"]),
            [0, 50, 25]
        );
    }

    #[test]
    fn no_sample_at_all_scores_every_node_neutrally() {
        assert_eq!(
            normalized(&[("elsewhere", 1.0)], &["a", "b", "c"]),
            [50, 50, 50]
        );
        assert_eq!(normalized(&[], &["a", "b"]), [50, 50]);
    }

    #[test]
    fn negative_and_huge_values_stay_in_range() {
        assert_eq!(
            normalized(&[("a", -5.0), ("b", 1e300), ("c", 0.0)], &["a", "b", "c"]),
            [100, 0, 100]
        );
    }

    #[test]
    fn the_default_query_joins_node_names_through_node_uname_info() {
        let args = NetworkTrafficArgs {
            network_interface: "ens5".into(),
            time_range_seconds: 120,
            ..NetworkTrafficArgs::default()
        };
        assert_eq!(
            args.effective_query(),
            r#"sum by (nodename) (rate(node_network_receive_bytes_total{device="ens5"}[120s]) * on(instance) group_left(nodename) node_uname_info)"#
        );
        let custom = NetworkTrafficArgs {
            query: Some(
                r#"sum by (node) (irate(node_network_receive_bytes_total{device="${networkInterface}"}[${timeRangeSeconds}s]))"#.into(),
            ),
            node_label: "node".into(),
            ..NetworkTrafficArgs::default()
        };
        assert_eq!(
            custom.effective_query(),
            r#"sum by (node) (irate(node_network_receive_bytes_total{device="eth0"}[60s]))"#
        );
    }

    #[test]
    fn defaults_are_the_issue_defaults() {
        let args: NetworkTrafficArgs = decode_args(
            Some(&serde_json::json!({"prometheusAddress": "http://prometheus:9090"})),
            "args",
        )
        .unwrap_or_default();
        assert_eq!(args.network_interface, "eth0");
        assert_eq!(args.time_range_seconds, 60);
        assert_eq!(args.node_label, "nodename");
        assert_eq!(args.query, None);
        assert_eq!(args.prometheus.query_timeout_seconds, 2);
        assert_eq!(args.prometheus.cache_ttl_seconds, 5);
        assert_eq!(
            args.prometheus.prometheus_address.as_deref(),
            Some("http://prometheus:9090")
        );
    }

    #[test]
    fn a_profile_enabling_it_without_args_names_the_missing_address() {
        let registry = crate::plugins::default_registry();
        let validator =
            crate::schema::ProfileValidator::new(&registry).unwrap_or_else(|e| panic!("{e}"));
        let profile = serde_json::json!({
            "apiVersion": "berth.dev/v1alpha1",
            "kind": "SchedulerProfile",
            "metadata": {"name": "network-aware"},
            "spec": {"plugins": {"multiPoint": {"enabled": [{"name": "NetworkTraffic"}]}}},
        });
        let errors: Vec<String> = validator
            .validate(&profile)
            .errors
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errors,
            [
                "spec.pluginConfig.networkTraffic.prometheusAddress: Required value: the http or https URL of the Prometheus HTTP API, e.g. http://prometheus-operated.monitoring.svc:9090"
            ]
        );
    }

    #[test]
    fn invalid_args_name_field_and_value() {
        let path = "spec.pluginConfig.networkTraffic";
        let cases: Vec<(&str, serde_json::Value, Vec<String>)> = vec![
            (
                "no address",
                serde_json::json!({}),
                vec![format!(
                    "{path}.prometheusAddress: Required value: the http or https URL of the Prometheus HTTP API, e.g. http://prometheus-operated.monitoring.svc:9090"
                )],
            ),
            (
                "an interface that would break out of the PromQL string",
                serde_json::json!({"prometheusAddress": "http://p:9090", "networkInterface": "eth0\"} or vector(1) #"}),
                vec![format!(
                    "{path}.networkInterface: Invalid value: \"eth0\\\"}} or vector(1) #\": must be an interface name as node_exporter's device label shows it: 1 to 64 letters, digits, '_', '.', ':' or '-' (e.g. eth0, ens5)"
                )],
            ),
            (
                "a zero range",
                serde_json::json!({"prometheusAddress": "http://p:9090", "timeRangeSeconds": 0}),
                vec![format!(
                    "{path}.timeRangeSeconds: Invalid value: 0: must be between 1 and 86400"
                )],
            ),
            (
                "an empty query",
                serde_json::json!({"prometheusAddress": "http://p:9090", "query": " "}),
                vec![format!(
                    "{path}.query: Required value: a PromQL instant-vector query with one series per node; omit the field for the default query"
                )],
            ),
            (
                "an unknown placeholder",
                serde_json::json!({"prometheusAddress": "http://p:9090", "query": "rate(x{device=\"${device}\"}[1m])"}),
                vec![format!(
                    "{path}.query: Invalid value: \"rate(x{{device=\\\"${{device}}\\\"}}[1m])\": unknown placeholder ${{device}}; the placeholders are ${{networkInterface}} and ${{timeRangeSeconds}}"
                )],
            ),
            (
                "a node label that is not a label name",
                serde_json::json!({"prometheusAddress": "http://p:9090", "query": "x", "nodeLabel": "node-name"}),
                vec![format!(
                    "{path}.nodeLabel: Invalid value: \"node-name\": must be a Prometheus label name: a letter or '_', then letters, digits or '_'"
                )],
            ),
            (
                "another node label with the default query",
                serde_json::json!({"prometheusAddress": "http://p:9090", "nodeLabel": "instance"}),
                vec![format!(
                    "{path}.nodeLabel: Invalid value: \"instance\": the default query returns only the \"nodename\" label; set query to one whose series carry this label"
                )],
            ),
        ];
        for (name, value, want) in cases {
            let errors = decode_args::<NetworkTrafficArgs>(Some(&value), path)
                .err()
                .unwrap_or_default();
            let got: Vec<String> = errors.iter().map(ToString::to_string).collect();
            assert_eq!(got, want, "{name}");
        }
    }
}
