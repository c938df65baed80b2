//! What `berth run` tells the people operating it: Prometheus metrics, the HTTP endpoints
//! that serve them with the health probes, and log setup.
//!
//! - [`metrics`] — the upstream kube-scheduler metrics (`scheduler_*`, each with a
//!   `profile` label) plus berth's own (`berth_*`: profile reconciles, profile conditions,
//!   leadership). [`Metrics`] also implements [`crate::framework::Observer`], so a
//!   framework built with it reports its extension-point latencies.
//! - [`server`] — `/metrics`, `/healthz` and `/readyz` on one listener.
//! - [`logging`] — `tracing` on stderr, human-readable or JSON, filtered by `RUST_LOG`.

pub mod logging;
pub mod metrics;
pub mod server;

pub use metrics::{AttemptResult, Metrics};
