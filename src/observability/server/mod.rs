//! The operator's HTTP endpoints, on one listener:
//!
//! | path | answer |
//! |---|---|
//! | `GET /metrics` | 200, the metrics as OpenMetrics text |
//! | `GET /healthz` | 200 `ok` while the process serves HTTP (liveness) |
//! | `GET /readyz` | 200 `ok` when the readiness check passes, else 503 with its reason |
//!
//! Any other path is 404.

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::Metrics;
use super::metrics::CONTENT_TYPE;

/// Decides readiness: `Err` carries the reason shown to whoever probes `/readyz`
/// (for `berth run`: caches not synced yet).
pub type Readiness = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

#[derive(Clone)]
struct Endpoints {
    metrics: Arc<Metrics>,
    readiness: Readiness,
}

/// Serves the endpoints on `listener` until `shutdown` completes; requests in progress
/// then finish before this returns.
pub async fn serve(
    listener: tokio::net::TcpListener,
    metrics: Arc<Metrics>,
    readiness: Readiness,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = Router::new()
        .route("/metrics", get(metrics_text))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(Endpoints { metrics, readiness });
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

async fn metrics_text(State(endpoints): State<Endpoints>) -> Response {
    (
        [(header::CONTENT_TYPE, CONTENT_TYPE)],
        endpoints.metrics.encode(),
    )
        .into_response()
}

async fn healthz() -> &'static str {
    "ok"
}

async fn readyz(State(endpoints): State<Endpoints>) -> Response {
    match (endpoints.readiness)() {
        Ok(()) => "ok".into_response(),
        Err(reason) => (StatusCode::SERVICE_UNAVAILABLE, reason).into_response(),
    }
}
