//! Plugins that rank (and filter) nodes by what Prometheus measures on them, not by what
//! pods request: a node saturated by network traffic looks empty to NodeResourcesFit.
//! The user guide is `docs/metrics-plugins.md`.
//!
//! Data flows through these modules in this order:
//!
//! 1. [`args`]: the connection args both plugins share (`prometheusAddress`,
//!    `queryTimeoutSeconds`, `cacheTTLSeconds`, `bearerTokenFile`, `caFile`) and their
//!    checks.
//! 2. [`client`]: [`PrometheusClient`] runs one PromQL instant query for all nodes, maps
//!    each series to a node through a label ([`NodeValues`]), and caches the outcome for
//!    `cacheTTLSeconds`.
//! 3. The plugins fetch in their async points (PreFilter, PreScore), once per scheduling
//!    cycle, keep the values in `CycleState`, and answer Filter and Score from there
//!    without I/O: [`network_traffic::NetworkTraffic`] and
//!    [`metrics_score::MetricsScore`].
//!
//! ## Failure behaviour, common to both plugins
//!
//! A query that fails (Prometheus unreachable, timed out, a certificate berth does not
//! trust, an HTTP or PromQL error, an answer that is not an instant vector) never fails the
//! scheduling cycle: the plugin scores every node equally, its Filter rejects nothing, and
//! it reports itself degraded with reason [`METRICS_UNAVAILABLE`] through the profile's
//! [`PluginHealth`](crate::framework::PluginHealth). The next successful query reports it
//! healthy again. A query that succeeds but has a sample for none of the nodes it is asked
//! about (a wrong `nodeLabel` or interface, say) is reported the same way.
//!
//! Only what the plugin reads once, when it is built, can fail the profile instead: a
//! `caFile` that is missing or holds no usable CA certificate is a
//! [`PluginError::Init`](crate::framework::PluginError::Init) naming the file
//! (`PluginInitFailed`), since no query could succeed without it.
//!
//! Score and Filter answer from what PreScore and PreFilter fetched; the plugins declare
//! so ([`Coupling`](crate::framework::Coupling)), and profile resolution runs the
//! fetching point wherever the answering one runs.

pub mod args;
pub mod client;
pub mod metrics_score;
pub mod network_traffic;

/// Nodes with just these names, for the plugins' unit tests.
#[cfg(test)]
pub(crate) fn test_nodes(names: &[&str]) -> Vec<Arc<crate::cluster::NodeInfo>> {
    use k8s_openapi::api::core::v1::Node;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    names
        .iter()
        .map(|name| {
            let node = Node {
                metadata: ObjectMeta {
                    name: Some(name.to_string()),
                    ..Default::default()
                },
                ..Default::default()
            };
            Arc::new(crate::cluster::NodeInfo::new(node).expect("a node without quantities"))
        })
        .collect()
}

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::framework::{Handle, MAX_NODE_SCORE, PluginError, PluginHealth};

pub use args::PrometheusArgs;
pub use client::{ClientConfig, ClientError, NodeValues, PrometheusClient, QueryError};
pub use metrics_score::{MetricsScore, MetricsScoreArgs};
pub use network_traffic::{NetworkTraffic, NetworkTrafficArgs};

/// The reason a degraded metrics plugin reports, which becomes the reason of the profile's
/// `Degraded` condition.
pub const METRICS_UNAVAILABLE: &str = "MetricsUnavailable";

/// The client a metrics plugin queries through: `config`, its cache aged by the
/// scheduler's clock; a client that cannot be built fails the plugin (`PluginInitFailed`).
fn plugin_client(
    config: ClientConfig,
    handle: &Handle,
    plugin: &str,
) -> Result<PrometheusClient, PluginError> {
    PrometheusClient::with_clock(config, handle.clock.clone()).map_err(|e| PluginError::Init {
        plugin: plugin.to_string(),
        message: e.to_string(),
    })
}

/// The score every node gets from a metrics plugin that has nothing to compare: no
/// sample for any node, or no answer from Prometheus. The middle of the range, so the
/// plugin neither favours nor penalises any node.
pub const NEUTRAL_SCORE: i64 = MAX_NODE_SCORE / 2;

/// Reports a plugin's metrics as available or not to its profile's [`PluginHealth`], and
/// logs the transitions (the health report itself is level-triggered and may be repeated
/// every cycle).
struct HealthReporter {
    plugin: &'static str,
    health: Arc<PluginHealth>,
    degraded: AtomicBool,
}

impl HealthReporter {
    fn new(plugin: &'static str, health: Arc<PluginHealth>) -> Self {
        HealthReporter {
            plugin,
            health,
            degraded: AtomicBool::new(false),
        }
    }

    fn healthy(&self) {
        if self.degraded.swap(false, Ordering::SeqCst) {
            tracing::info!(plugin = self.plugin, "metrics available again");
        }
        self.health.set_healthy(self.plugin);
    }

    /// `problem` is what failed, with the source's error; the report reads
    /// `<plugin>: <problem>`.
    fn degraded(&self, problem: &str) {
        if !self.degraded.swap(true, Ordering::SeqCst) {
            tracing::warn!(
                plugin = self.plugin,
                problem,
                "metrics unavailable: scoring nodes neutrally"
            );
        }
        self.report(METRICS_UNAVAILABLE, problem);
    }

    fn report(&self, reason: &str, problem: &str) {
        self.health
            .set_degraded(self.plugin, reason, format!("{}: {problem}", self.plugin));
    }
}

/// The problem to report when a query succeeded but sampled none of `nodes`.
fn no_sample_problem(values: &NodeValues, node_label: &str, nodes: usize) -> String {
    format!(
        "the query returned {} series, none with a {node_label:?} label naming one of the {nodes} nodes considered; check the query and nodeLabel",
        values.series()
    )
}

/// A Prometheus label name, as `nodeLabel` must be (`[a-zA-Z_][a-zA-Z0-9_]*`).
fn is_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The CRD pattern of `nodeLabel`.
const LABEL_NAME_PATTERN: &str = "^[a-zA-Z_][a-zA-Z0-9_]*$";
