//! A stand-in for the Prometheus HTTP API, for tests: an axum server on 127.0.0.1 that
//! answers `/api/v1/query` with the JSON shapes Prometheus gives (instant vectors, range
//! vectors, `"status": "error"` bodies) or with what a proxy in front of it might give,
//! and records every request it receives.
//!
//! It serves plain http, or https with a certificate for 127.0.0.1 and localhost signed by
//! a CA made for the test ([`TestCa`]), on rustls' `ring` provider.
//!
//! Like a real Prometheus it runs apart from the code under test, on a thread and runtime
//! of its own with real time, and takes [`LATENCY`] to answer: a client whose requests
//! waited on a paused test clock would see them time out, as they would against a real
//! server.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

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
    /// Starts a fake on a free port of 127.0.0.1 that answers every query with `answer`,
    /// over http.
    pub fn start(answer: Answer) -> FakePrometheus {
        FakePrometheus::serve(answer, None)
    }

    /// Starts a fake like [`FakePrometheus::start`], over https with `ca`'s server
    /// certificate; its address is `https://127.0.0.1:<port>`.
    pub fn start_https(answer: Answer, ca: &TestCa) -> FakePrometheus {
        FakePrometheus::serve(answer, Some(ca.server_config.clone()))
    }

    fn serve(answer: Answer, tls: Option<Arc<rustls::ServerConfig>>) -> FakePrometheus {
        let state = Arc::new(FakeState::default());
        *lock(&state.default) = Some(answer);
        let app = Router::new()
            .route("/api/v1/query", get(query).post(query))
            .with_state(state.clone());
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").expect("a free port on 127.0.0.1");
        let scheme = if tls.is_some() { "https" } else { "http" };
        let address = format!(
            "{scheme}://{}",
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
                let tcp = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
                match tls {
                    None => tokio::select! {
                        _ = axum::serve(tcp, app) => {}
                        _ = stopped => {}
                    },
                    Some(config) => {
                        let listener = TlsListener {
                            tcp,
                            acceptor: TlsAcceptor::from(config),
                        };
                        tokio::select! {
                            _ = axum::serve(listener, app) => {}
                            _ = stopped => {}
                        }
                    }
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

/// A CA made for one test, the PEM file of its certificate (what a user gives as
/// `caFile`), and a server certificate it signed for 127.0.0.1 and localhost.
pub struct TestCa {
    pem_file: PathBuf,
    server_config: Arc<rustls::ServerConfig>,
}

impl TestCa {
    /// A new CA named `name`, its certificate written to `dir`/ca.pem.
    pub fn new(dir: &Path, name: &str) -> TestCa {
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.distinguished_name.push(DnType::CommonName, name);
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_key = KeyPair::generate().expect("a CA key");
        let ca = CertifiedIssuer::self_signed(ca_params, ca_key).expect("a CA certificate");

        let mut server_params =
            CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
                .expect("server params");
        server_params
            .distinguished_name
            .push(DnType::CommonName, "fake prometheus");
        server_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let server_key = KeyPair::generate().expect("a server key");
        let server_cert = server_params
            .signed_by(&server_key, &ca)
            .expect("a server certificate");

        let pem_file = dir.join("ca.pem");
        std::fs::write(&pem_file, ca.pem()).expect("the CA PEM written");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server_config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![server_cert.der().clone(), ca.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der())),
            )
            .expect("a server TLS config");
        TestCa {
            pem_file,
            server_config: Arc::new(server_config),
        }
    }

    /// The PEM file of the CA certificate.
    pub fn pem_file(&self) -> &Path {
        &self.pem_file
    }
}

/// Accepts TCP connections and completes a TLS handshake on each; a connection whose
/// handshake fails (the client distrusts the certificate) is dropped, as a server would.
struct TlsListener {
    tcp: tokio::net::TcpListener,
    acceptor: TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (tcp, peer) = axum::serve::Listener::accept(&mut self.tcp).await;
            if let Ok(tls) = self.acceptor.accept(tcp).await {
                return (tls, peer);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
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
