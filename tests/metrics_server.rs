//! The metrics port as its clients meet it (issue 20): HTTPS by default with a
//! self-signed or file-based certificate that is followed for rotations, `/metrics`
//! guarded by delegated authentication and authorization (401, 403 and 200 as upstream
//! answers them), the probes open, plain HTTP only when asked for, and a server that
//! holds against slow, malformed and oversized requests and too many connections.
//!
//! The server runs in-process on its own runtime; clients are blocking, as a kubelet or
//! a scraper would be. The API server's reviews are answered by a table ([`Reviews`]);
//! end to end against the test API server, tests/operator_e2e/secure_metrics.rs.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use berth::observability::server::auth::{AccessReviewer, DelegatedAccess, ReviewError, User};
use berth::observability::server::tls::ServingCertificate;
use berth::observability::server::{Endpoints, Limits, Security, serve};
use berth::observability::{AttemptResult, Metrics};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

mod support;
use support::https::{self, Issued, Trust};
use support::{http, temp::TempDir};

const READER: &str = "system:serviceaccount:monitoring:prometheus";
const NOSY: &str = "system:serviceaccount:default:nosy";

/// The API server's answers: two tokens, one of them bound to the metrics reader.
#[derive(Default)]
struct Reviews {
    calls: AtomicUsize,
}

#[async_trait]
impl AccessReviewer for Reviews {
    async fn review_token(&self, token: &str) -> Result<Option<User>, ReviewError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let name = match token {
            "reader-token" => READER,
            "nosy-token" => NOSY,
            _ => return Ok(None),
        };
        Ok(Some(User {
            name: name.to_string(),
            groups: vec![
                "system:serviceaccounts".into(),
                "system:authenticated".into(),
            ],
            ..User::default()
        }))
    }

    async fn review_access(
        &self,
        user: &User,
        verb: &str,
        path: &str,
    ) -> Result<bool, ReviewError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(user.name == READER && verb == "get" && path == "/metrics")
    }
}

enum Mode {
    Insecure,
    SelfSigned,
    Files(std::path::PathBuf, std::path::PathBuf),
}

/// A server under test on its own runtime; stopped (and awaited) on drop.
struct Server {
    runtime: tokio::runtime::Runtime,
    address: SocketAddr,
    stop: tokio::sync::watch::Sender<bool>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    synced: Arc<AtomicBool>,
}

impl Server {
    fn start(mode: Mode, limits: Limits) -> Server {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let address = listener.local_addr().expect("local addr");
        let metrics = Metrics::new();
        metrics.schedule_attempt("batch", AttemptResult::Scheduled, Duration::from_millis(1));
        let synced = Arc::new(AtomicBool::new(false));
        let readiness = {
            let synced = synced.clone();
            Arc::new(move || match synced.load(Ordering::SeqCst) {
                true => Ok(()),
                false => Err("caches not synced: pods".to_string()),
            })
        };
        let certificate = match mode {
            Mode::Insecure => None,
            Mode::SelfSigned => Some(ServingCertificate::self_signed(&[]).expect("self-signed")),
            Mode::Files(cert, key) => {
                Some(ServingCertificate::from_files(&cert, &key).expect("certificate files"))
            }
        };
        let security = match certificate {
            None => Security::Insecure,
            Some(certificate) => Security::Secure {
                certificate,
                access: Arc::new(DelegatedAccess::new(Arc::new(Reviews::default()))),
            },
        };
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let endpoints = Endpoints { metrics, readiness };
        let task = runtime.spawn(serve(listener, endpoints, security, limits, stopped));
        Server {
            runtime,
            address,
            stop,
            task: Some(task),
            synced,
        }
    }

    fn get(&self, path: &str, headers: &[(&str, &str)]) -> http::Response {
        https::get(self.address, "localhost", path, headers, &Trust::Any)
            .unwrap_or_else(|e| panic!("{e}"))
            .response
    }

    /// Stops the server and waits for it (at most 10 s).
    fn shut_down(&mut self) -> std::io::Result<()> {
        let _ = self.stop.send(true);
        let task = self.task.take().expect("running");
        self.runtime
            .block_on(async { tokio::time::timeout(Duration::from_secs(10), task).await })
            .expect("the server stops after shutdown")
            .expect("the server task")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.task.is_some() {
            let _ = self.shut_down();
        }
    }
}

/// The metrics text carries the attempt [`Server::start`] recorded.
#[track_caller]
fn assert_counts_the_attempt(body: &str) {
    assert!(
        body.contains(r#"scheduler_schedule_attempts_total{result="scheduled",profile="batch"} 1"#),
        "{body}"
    );
}

fn body_json(response: &http::Response) -> Value {
    serde_json::from_str(&response.body)
        .unwrap_or_else(|e| panic!("{e}: not JSON: {:?}", response.body))
}

#[test]
fn insecure_server_answers_probes_and_metrics_to_anyone_and_stops_on_shutdown() {
    let mut server = Server::start(Mode::Insecure, Limits::default());
    let get = |path: &str| http::get(server.address, path).unwrap_or_else(|e| panic!("{e}"));

    let healthz = get("/healthz");
    assert_eq!((healthz.status, healthz.body.as_str()), (200, "ok"));
    let readyz = get("/readyz");
    assert_eq!(
        (readyz.status, readyz.body.as_str()),
        (503, "caches not synced: pods")
    );
    server.synced.store(true, Ordering::SeqCst);
    let readyz = get("/readyz");
    assert_eq!((readyz.status, readyz.body.as_str()), (200, "ok"));

    let metrics = get("/metrics");
    assert_eq!(metrics.status, 200);
    assert_eq!(
        metrics.header("content-type"),
        Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
    );
    assert_counts_the_attempt(&metrics.body);
    assert_eq!(get("/nothing-here").status, 404);

    let address = server.address;
    assert!(server.shut_down().is_ok());
    assert!(
        TcpStream::connect(address).is_err(),
        "nothing listens after shutdown"
    );
}

#[test]
fn secure_server_guards_metrics_and_leaves_the_probes_open() {
    let server = Server::start(Mode::SelfSigned, Limits::default());
    server.synced.store(true, Ordering::SeqCst);
    let unauthorized = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Unauthorized", "reason": "Unauthorized", "code": 401,
    });
    struct Case {
        name: &'static str,
        path: &'static str,
        authorization: Option<&'static str>,
        status: u16,
        /// The JSON body expected, when the answer is a Status.
        status_body: Option<Value>,
    }
    let cases = [
        Case {
            name: "probes need no token: liveness",
            path: "/healthz",
            authorization: None,
            status: 200,
            status_body: None,
        },
        Case {
            name: "probes need no token: readiness",
            path: "/readyz",
            authorization: None,
            status: 200,
            status_body: None,
        },
        Case {
            name: "metrics without a token",
            path: "/metrics",
            authorization: None,
            status: 401,
            status_body: Some(unauthorized.clone()),
        },
        Case {
            name: "metrics with another scheme",
            path: "/metrics",
            authorization: Some("Basic cHJvbTpwcm9t"),
            status: 401,
            status_body: Some(unauthorized.clone()),
        },
        Case {
            name: "metrics with a token nobody issued",
            path: "/metrics",
            authorization: Some("Bearer made-up"),
            status: 401,
            status_body: Some(unauthorized.clone()),
        },
        Case {
            name: "metrics for a user without the permission",
            path: "/metrics",
            authorization: Some("Bearer nosy-token"),
            status: 403,
            status_body: Some(json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": format!("forbidden: User \"{NOSY}\" cannot get path \"/metrics\""),
                "reason": "Forbidden", "details": {}, "code": 403,
            })),
        },
        Case {
            name: "metrics for the metrics reader",
            path: "/metrics",
            authorization: Some("Bearer reader-token"),
            status: 200,
            status_body: None,
        },
        Case {
            name: "an unknown path",
            path: "/debug/pprof",
            authorization: Some("Bearer reader-token"),
            status: 404,
            status_body: None,
        },
    ];
    for case in cases {
        let headers: Vec<(&str, &str)> = case
            .authorization
            .map(|value| ("Authorization", value))
            .into_iter()
            .collect();
        let response = server.get(case.path, &headers);
        assert_eq!(
            response.status, case.status,
            "{}: {}",
            case.name, response.body
        );
        if let Some(expected) = case.status_body {
            assert_eq!(
                response.header("content-type"),
                Some("application/json"),
                "{}",
                case.name
            );
            assert_eq!(body_json(&response), expected, "{}", case.name);
        }
    }
    let metrics = server.get("/metrics", &[("Authorization", "Bearer reader-token")]);
    assert_counts_the_attempt(&metrics.body);
    // Plain HTTP on the HTTPS port is no way around it: the handshake fails.
    assert!(
        http::get(server.address, "/metrics").map(|r| r.status) != Ok(200),
        "plain HTTP must not be answered with metrics"
    );
}

#[test]
fn certificate_files_are_served_and_a_rotation_is_picked_up_without_a_restart() {
    let dir = TempDir::new("metrics-tls");
    let first = Issued::new("first CA");
    let (cert, key) = first.install(&dir);
    let server = Server::start(Mode::Files(cert, key), Limits::default());

    // A client with the CA bundle verifies the chain and the name.
    let exchange = https::get(
        server.address,
        "localhost",
        "/healthz",
        &[],
        &Trust::Root(first.ca.clone()),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(exchange.response.status, 200);
    assert_eq!(exchange.certificate, first.leaf);

    // cert-manager renews: both files are replaced while the server runs.
    let second = Issued::new("second CA");
    second.install(&dir);
    https::wait_for_certificate(server.address, &second.leaf, Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}"));
    let exchange = https::get(
        server.address,
        "localhost",
        "/metrics",
        &[("Authorization", "Bearer reader-token")],
        &Trust::Root(second.ca.clone()),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(exchange.response.status, 200);
    assert!(
        https::get(
            server.address,
            "localhost",
            "/healthz",
            &[],
            &Trust::Root(first.ca)
        )
        .is_err(),
        "the old CA no longer verifies the served certificate"
    );
}

/// Limits small enough for a test to cross them quickly.
fn tight_limits() -> Limits {
    Limits {
        max_connections: 4,
        handshake_timeout: Duration::from_secs(1),
        header_timeout: Duration::from_secs(1),
        stall_timeout: Duration::from_secs(1),
        max_header_bytes: 16 * 1024,
        max_body_bytes: 1024,
    }
}

/// Reads until the peer closes or errs; returns what was read and whether it closed
/// within `within`.
fn read_until_closed(stream: &mut impl Read, within: Duration) -> (Vec<u8>, bool) {
    let deadline = Instant::now() + within;
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 4096];
    while Instant::now() < deadline {
        match stream.read(&mut buffer) {
            Ok(0) => return (bytes, true),
            Ok(n) => bytes.extend_from_slice(&buffer[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return (bytes, true),
        }
    }
    (bytes, false)
}

#[test]
fn slow_silent_and_malformed_clients_are_closed_and_nothing_panics() {
    let server = Server::start(Mode::SelfSigned, tight_limits());
    server.synced.store(true, Ordering::SeqCst);
    let bound = Duration::from_secs(10);

    // Connects and never says hello: closed at the handshake timeout.
    let mut silent = http::connect(server.address, Duration::from_secs(3)).expect("connect");
    let (_, closed) = read_until_closed(&mut silent, bound);
    assert!(closed, "a client that never starts the handshake is closed");

    // Slowloris: half a request line, then nothing.
    let mut slow = https::connect(server.address).expect("connect");
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .expect("write");
    let (answer, closed) = read_until_closed(&mut slow, bound);
    assert!(closed, "a request whose headers never end is closed");
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        !answer.contains("200 OK"),
        "no answer to an unfinished request: {answer}"
    );

    // Not TLS at all on the HTTPS port.
    let mut garbage = http::connect(server.address, Duration::from_secs(3)).expect("connect");
    garbage
        .write_all(b"\x00\x01\x02 definitely not a ClientHello \r\n\r\n")
        .expect("write");
    let (_, closed) = read_until_closed(&mut garbage, bound);
    assert!(closed, "bytes that are not TLS end the connection");

    // Malformed HTTP inside TLS: hyper answers 400.
    for request in [
        &b"NOT-HTTP\r\n\r\n"[..],
        b"GET /metrics HTTP/9.9\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
    ] {
        let mut stream = https::connect(server.address).expect("connect");
        stream.write_all(request).expect("write");
        let (answer, _) = read_until_closed(&mut stream, bound);
        let answer = String::from_utf8_lossy(&answer);
        assert!(
            answer.starts_with("HTTP/1.1 400") || answer.is_empty(),
            "{:?} -> {answer}",
            String::from_utf8_lossy(request)
        );
    }

    // Oversized headers and bodies.
    // Far more than the server reads before it answers, so that bytes are left unread.
    let huge = "x".repeat(256 * 1024);
    let mut stream = https::connect(server.address).expect("connect");
    write!(
        stream,
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Huge: {huge}\r\n\r\n"
    )
    .expect("write");
    // Read late, as a slow client would: the server has answered and closed by now, and
    // had it closed with our surplus header bytes unread, the reset its kernel sends
    // would make ours drop the answer.
    std::thread::sleep(Duration::from_millis(300));
    let (answer, _) = read_until_closed(&mut stream, bound);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");

    let sent = "y".repeat(256 * 1024);
    let sent_length = format!("Content-Length: {}\r\n", sent.len());
    for (name, head, body) in [
        (
            "a declared body over the limit",
            "Content-Length: 1000000\r\n",
            "",
        ),
        (
            "a body of unknown length",
            "Transfer-Encoding: chunked\r\n",
            "",
        ),
        (
            "a body over the limit, sent",
            sent_length.as_str(),
            sent.as_str(),
        ),
    ] {
        let mut stream = https::connect(server.address).expect("connect");
        write!(
            stream,
            "POST /metrics HTTP/1.1\r\nHost: x\r\n{head}\r\n{body}"
        )
        .expect("write");
        std::thread::sleep(Duration::from_millis(300));
        let (answer, closed) = read_until_closed(&mut stream, bound);
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 413"), "{name}: {answer}");
        assert!(closed, "{name}: the connection is closed after 413");
    }

    // After all that the server still answers.
    assert_eq!(server.get("/readyz", &[]).status, 200);
    assert_eq!(
        server
            .get("/metrics", &[("Authorization", "Bearer reader-token")])
            .status,
        200
    );
}

#[test]
fn past_the_connection_limit_clients_wait_until_a_slot_frees() {
    let server = Server::start(Mode::Insecure, tight_limits());
    server.synced.store(true, Ordering::SeqCst);
    // Four clients hold every slot, each mid-request.
    let mut holders: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut stream =
                http::connect(server.address, Duration::from_secs(3)).expect("connect");
            stream
                .write_all(b"GET /healthz HTTP/1.1\r\n")
                .expect("write");
            stream
        })
        .collect();
    // Let the server accept them all before the fifth comes.
    std::thread::sleep(Duration::from_millis(300));
    let waiting = std::thread::spawn({
        let address = server.address;
        move || {
            let started = Instant::now();
            let answer = http::get_within(address, "/readyz", Duration::from_secs(15));
            (answer.map(|r| r.status), started.elapsed())
        }
    });
    // The holders time out at the header timeout (1 s), which frees their slots.
    let (status, waited) = waiting.join().expect("client thread");
    assert_eq!(
        status,
        Ok(200),
        "the fifth client is answered once a slot frees"
    );
    assert!(
        waited >= Duration::from_millis(500),
        "the fifth client waited for a slot (answered after {waited:?})"
    );
    for holder in &mut holders {
        let (_, closed) = read_until_closed(holder, Duration::from_secs(10));
        assert!(closed);
    }
}

#[test]
fn a_malformed_flood_leaves_the_server_answering() {
    let server = Server::start(Mode::SelfSigned, Limits::default());
    server.synced.store(true, Ordering::SeqCst);
    let malformed: [&[u8]; 4] = [
        b"\x16\x03\x01\x00\x05hello",
        b"GET / HTTP/1.1\r\n\r\n",
        &[0xff; 512],
        b"\x16\x03\x03\xff\xff",
    ];
    let stop = Arc::new(AtomicBool::new(false));
    let flooders: Vec<_> = (0..4)
        .map(|i| {
            let address = server.address;
            let stop = stop.clone();
            let payload = malformed[i % malformed.len()].to_vec();
            std::thread::spawn(move || {
                let mut sent = 0usize;
                let deadline = Instant::now() + Duration::from_secs(3);
                while !stop.load(Ordering::SeqCst) && Instant::now() < deadline && sent < 2_000 {
                    if let Ok(mut stream) = http::connect(address, Duration::from_millis(500)) {
                        let _ = stream.write_all(&payload);
                        sent += 1;
                    }
                }
                sent
            })
        })
        .collect();
    let mut answered = BTreeMap::new();
    for _ in 0..10 {
        let status = server.get("/readyz", &[]).status;
        *answered.entry(status).or_insert(0) += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::SeqCst);
    let sent: usize = flooders
        .into_iter()
        .map(|f| f.join().expect("flooder"))
        .sum();
    assert!(sent > 0);
    assert_eq!(
        answered,
        BTreeMap::from([(200, 10)]),
        "/readyz during the flood"
    );
}
