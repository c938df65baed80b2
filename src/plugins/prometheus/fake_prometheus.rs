//! A stand-in for the Prometheus HTTP API, for tests: an axum server on 127.0.0.1 that
//! answers `/api/v1/query` with the JSON shapes Prometheus gives (instant vectors, range
//! vectors, `"status": "error"` bodies) or with what a proxy in front of it might give,
//! and records every request it receives.
//!
//! Like a real Prometheus it runs apart from the code under test, on a thread and runtime
//! of its own with real time, and takes [`LATENCY`] to answer: a client whose requests
//! waited on a paused test clock would see them time out, as they would against a real
//! server.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

/// How long every answer takes, as a network round trip and query evaluation would.
pub const LATENCY: Duration = Duration::from_millis(20);

/// The evaluation time every sample carries.
const SAMPLE_TIME: f64 = 1_732_000_000.5;

/// How the fake answers a query.
#[derive(Debug, Clone)]
pub enum Answer {
    /// `resultType: vector`: one series per entry, its labels and its value as Prometheus
    /// writes it (a string: `"140000"`, `"NaN"`, `"+Inf"`).
    Vector(Vec<(Vec<(String, String)>, String)>),
    /// `resultType: matrix`, as a range query or a query ending in `[5m]` gives.
    Matrix,
    /// `"status": "error"` with an HTTP status, as Prometheus reports a bad query (400,
    /// `bad_data`) or a failed evaluation (422, 503).
    Error {
        status: u16,
        error_type: &'static str,
        message: &'static str,
    },
    /// A plain-text body with an HTTP status, as a proxy or load balancer answers.
    Text { status: u16, body: &'static str },
    /// `answer`, after a delay.
    Slow(Duration, Box<Answer>),
}

impl Answer {
    /// A vector with one series per `(node, value)`, the node in label `label`.
    pub fn nodes(label: &str, samples: &[(&str, &str)]) -> Answer {
        Answer::Vector(
            samples
                .iter()
                .map(|(node, value)| {
                    (
                        vec![(label.to_string(), node.to_string())],
                        value.to_string(),
                    )
                })
                .collect(),
        )
    }
}

/// One request the fake received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub query: String,
    /// The evaluation timeout the client asked for (`timeout` parameter).
    pub timeout: Option<String>,
    pub authorization: Option<String>,
}

#[derive(Default)]
struct FakeState {
    /// Answers by query; other queries get `default`.
    by_query: Mutex<HashMap<String, Answer>>,
    default: Mutex<Option<Answer>>,
    requests: Mutex<Vec<Request>>,
}

/// A running fake; the server stops when this is dropped.
pub struct FakePrometheus {
    address: String,
    state: Arc<FakeState>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl FakePrometheus {
    /// Starts a fake on a free port of 127.0.0.1 that answers every query with `answer`.
    pub fn start(answer: Answer) -> FakePrometheus {
        let state = Arc::new(FakeState::default());
        *lock(&state.default) = Some(answer);
        let app = Router::new()
            .route("/api/v1/query", get(query).post(query))
            .with_state(state.clone());
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").expect("a free port on 127.0.0.1");
        let address = format!(
            "http://{}",
            listener.local_addr().expect("the listener's address")
        );
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("the fake's runtime");
            runtime.block_on(async move {
                let listener =
                    tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
                let serve = axum::serve(listener, app);
                tokio::select! {
                    _ = serve => {}
                    _ = stopped => {}
                }
            });
        });
        FakePrometheus {
            address,
            state,
            shutdown: Some(shutdown),
        }
    }

    /// The base URL to give as `prometheusAddress`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Answer every query without an answer of its own with `answer` from now on.
    pub fn answer(&self, answer: Answer) {
        *lock(&self.state.default) = Some(answer);
    }

    /// Answer `query` with `answer` from now on.
    pub fn answer_query(&self, query: &str, answer: Answer) {
        lock(&self.state.by_query).insert(query.to_string(), answer);
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        lock(&self.state.requests).clone()
    }
}

impl Drop for FakePrometheus {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

async fn query(
    State(state): State<Arc<FakeState>>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let query = params.get("query").cloned().unwrap_or_default();
    lock(&state.requests).push(Request {
        query: query.clone(),
        timeout: params.get("timeout").cloned(),
        authorization: headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(String::from),
    });
    let answer = lock(&state.by_query)
        .get(&query)
        .cloned()
        .or_else(|| lock(&state.default).clone());
    match answer {
        Some(answer) => respond(answer).await,
        None => (StatusCode::INTERNAL_SERVER_ERROR, "no answer configured").into_response(),
    }
}

async fn respond(answer: Answer) -> Response {
    tokio::time::sleep(LATENCY).await;
    answer_now(answer).await
}

async fn answer_now(answer: Answer) -> Response {
    match answer {
        Answer::Slow(delay, inner) => {
            tokio::time::sleep(delay).await;
            Box::pin(answer_now(*inner)).await
        }
        Answer::Vector(series) => {
            let result: Vec<Value> = series
                .into_iter()
                .map(|(labels, value)| {
                    let metric: serde_json::Map<String, Value> = labels
                        .into_iter()
                        .map(|(k, v)| (k, Value::String(v)))
                        .collect();
                    json!({"metric": metric, "value": [SAMPLE_TIME, value]})
                })
                .collect();
            prometheus_json(
                StatusCode::OK,
                json!({"status": "success", "data": {"resultType": "vector", "result": result}}),
            )
        }
        Answer::Matrix => prometheus_json(
            StatusCode::OK,
            json!({"status": "success", "data": {"resultType": "matrix", "result": [
                {"metric": {"nodename": "a"}, "values": [[SAMPLE_TIME, "1"], [SAMPLE_TIME + 15.0, "2"]]},
            ]}}),
        ),
        Answer::Error {
            status,
            error_type,
            message,
        } => prometheus_json(
            StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
            json!({"status": "error", "errorType": error_type, "error": message}),
        ),
        Answer::Text { status, body } => (
            StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY),
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            body,
        )
            .into_response(),
    }
}

fn prometheus_json(status: StatusCode, body: Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}
