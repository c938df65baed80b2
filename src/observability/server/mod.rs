//! The operator's HTTP endpoints, on one port:
//!
//! | path | answer |
//! |---|---|
//! | `GET /metrics` | 200, the metrics as OpenMetrics text; on the secure port only for callers the API server authenticates and authorizes ([`auth`]), else 401 or 403 |
//! | `GET /healthz` | 200 `ok` while the process serves HTTP (liveness); open to all |
//! | `GET /readyz` | 200 `ok` when the readiness check passes, else 503 with its reason; open to all |
//!
//! Any other path is 404, any other method 405.
//!
//! The port is HTTPS by default ([`Security::Secure`]): the certificate comes from files
//! or is self-signed at start ([`tls`]), and `/metrics` is guarded as kube-scheduler
//! guards it, since metric labels name profiles, plugins and failure reasons. The probes
//! stay open because the kubelet calls them without credentials. `berth run
//! --metrics-insecure` serves plain HTTP with no checks ([`Security::Insecure`]), for
//! local use. Either way [`connections`] bounds what one client can hold.

pub mod auth;
pub mod connections;
pub mod tls;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::sync::watch;

use self::auth::{DelegatedAccess, Verdict};
pub use self::connections::Limits;
use self::tls::ServingCertificate;
use super::Metrics;
use super::metrics::CONTENT_TYPE;

/// Decides readiness: `Err` carries the reason shown to whoever probes `/readyz`
/// (for `berth run`: caches not synced yet).
pub type Readiness = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// What the endpoints answer from.
#[derive(Clone)]
pub struct Endpoints {
    pub metrics: Arc<Metrics>,
    pub readiness: Readiness,
}

/// How the port is protected.
pub enum Security {
    /// Plain HTTP; `/metrics` for anyone who reaches the port.
    Insecure,
    /// HTTPS with `certificate`; `/metrics` only for callers `access` allows.
    Secure {
        certificate: Arc<ServingCertificate>,
        access: Arc<DelegatedAccess>,
    },
}

/// Serves the endpoints on `listener` until `shutdown` turns true; requests in progress
/// then finish (within a few seconds) before this returns. With certificate files, they
/// are followed for rotations meanwhile.
pub async fn serve(
    listener: tokio::net::TcpListener,
    endpoints: Endpoints,
    security: Security,
    limits: Limits,
    shutdown: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let (app, tls) = match security {
        Security::Insecure => (router(endpoints, None), None),
        Security::Secure {
            certificate,
            access,
        } => {
            let config = certificate
                .server_config()
                .map_err(|e| std::io::Error::other(format!("TLS configuration: {e}")))?;
            let mut stop = shutdown.clone();
            tokio::spawn(certificate.follow(async move {
                connections::stopped(&mut stop).await;
            }));
            (router(endpoints, Some(access)), Some(config))
        }
    };
    connections::serve(listener, app, tls, limits, shutdown).await
}

fn router(endpoints: Endpoints, access: Option<Arc<DelegatedAccess>>) -> Router {
    let metrics = get(metrics_text);
    let metrics = match access {
        Some(access) => metrics.route_layer(middleware::from_fn_with_state(access, authorize)),
        None => metrics,
    };
    Router::new()
        .route("/metrics", metrics)
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(endpoints)
}

/// Answers 413 (and closes the connection) for a request whose body is larger than
/// `max` bytes or of unknown length: no endpoint takes a body, and none is read.
pub(crate) fn bounded_body(app: Router, max: u64) -> Router {
    app.layer(middleware::from_fn(move |request: Request, next: Next| {
        let headers = request.headers();
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim().parse::<u64>().unwrap_or(u64::MAX));
        let too_large = headers.contains_key(header::TRANSFER_ENCODING)
            || declared.is_some_and(|length| length > max);
        async move {
            if too_large {
                let mut response = (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("request bodies are limited to {max} bytes\n"),
                )
                    .into_response();
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
                return response;
            }
            next.run(request).await
        }
    }))
}

/// Lets a request through to `/metrics` only when its token's user may `get` the path.
async fn authorize(
    State(access): State<Arc<DelegatedAccess>>,
    request: Request,
    next: Next,
) -> Response {
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(HeaderValue::as_bytes);
    let path = request.uri().path().to_string();
    match access.check(token, "get", &path).await {
        Verdict::Allowed(_) => next.run(request).await,
        Verdict::Unauthenticated => status_response(401, "Unauthorized", "Unauthorized"),
        Verdict::Forbidden(user) => status_response(
            403,
            "Forbidden",
            &format!(
                "forbidden: User {} cannot get path {}",
                go_quote(&user.name),
                go_quote(&path)
            ),
        ),
        Verdict::Failed(error) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain")],
            format!("Internal Server Error: {}: {error}", go_quote(&path)),
        )
            .into_response(),
    }
}

/// A `metav1.Status` failure, as the API server's filters answer 401 and 403.
fn status_response(code: u16, reason: &str, message: &str) -> Response {
    let mut body = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    });
    if code == 403 {
        body["details"] = serde_json::json!({});
    }
    (
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// `text` as Go's `%q` prints it (close enough for user names and paths: JSON's escaping
/// of quotes, backslashes and control characters).
fn go_quote(text: &str) -> String {
    serde_json::Value::from(text).to_string()
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
