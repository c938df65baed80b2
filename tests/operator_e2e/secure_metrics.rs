//! The metrics port of `berth run` secure by default (issue 20), end to end against the
//! test API server, whose TokenReview and SubjectAccessReview answer from the harness's
//! tokens and rules ([`metrics_access`](crate::harness::metrics_access)):
//!
//! - over HTTPS with a self-signed certificate and with certificate files replaced while
//!   berth runs: no token → 401, a token without the permission → 403, the metrics
//!   reader → 200, the probes without a token → 200;
//! - a revoked permission is refused once the cached answer expires (10 s);
//! - under a flood of slow, malformed and unauthenticated connections, scheduling goes on
//!   and `/readyz` answers; the scheduling throughput with and without the flood is
//!   measured and written to the test's output (not asserted: a timing on a shared
//!   2-core machine proves nothing).

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{
    Berth, BerthOptions, Cluster, MetricsPort, NOSY, WAIT, eventually, node, pod, profile,
};
use crate::support::http;
use crate::support::https::{self, Issued, Trust};
use crate::support::temp::TempDir;

/// The four answers the issue names, and the reviews that were made for them.
async fn assert_the_four_cases(cluster: &Cluster, berth: &Berth) {
    let (status, body) = berth
        .get_with_token("/metrics", None)
        .await
        .expect("answers");
    assert_eq!(status, 401, "no token: {body}");
    let status_body: Value = serde_json::from_str(&body).expect("a Status");
    assert_eq!(status_body["reason"], "Unauthorized");

    let (status, body) = berth
        .get_with_token("/metrics", Some(&cluster.nosy_token))
        .await
        .expect("answers");
    assert_eq!(status, 403, "a token without the permission: {body}");
    let status_body: Value = serde_json::from_str(&body).expect("a Status");
    assert_eq!(
        status_body["message"],
        format!("forbidden: User \"{NOSY}\" cannot get path \"/metrics\"")
    );

    let (status, body) = berth
        .get_with_token("/metrics", Some(&cluster.metrics_token))
        .await
        .expect("answers");
    assert_eq!(status, 200, "the metrics reader: {body}");
    assert!(
        body.lines().any(|l| l.starts_with("berth_leader ")),
        "{body}"
    );

    for probe in ["/healthz", "/readyz"] {
        let (status, body) = berth.get_with_token(probe, None).await.expect("answers");
        assert_eq!(status, 200, "{probe} without a token: {body}");
    }

    let reviews: Vec<(String, String)> = cluster
        .requests()
        .into_iter()
        .filter(|r| r.resource == "tokenreviews" || r.resource == "subjectaccessreviews")
        .map(|r| (r.verb, r.resource))
        .collect();
    for resource in ["tokenreviews", "subjectaccessreviews"] {
        assert!(
            reviews.contains(&("create".to_string(), resource.to_string())),
            "berth created {resource}: {reviews:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn self_signed_https_answers_401_403_200_and_leaves_the_probes_open() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    let mut berth = Berth::spawn(&cluster, BerthOptions::default());
    berth.wait_ready().await;
    assert_the_four_cases(&cluster, &berth).await;

    // The certificate is berth's own and names localhost.
    let address = berth.metrics;
    let certificate = tokio::task::spawn_blocking(move || https::presented_certificate(address))
        .await
        .expect("client")
        .expect("a certificate");
    assert!(!certificate.is_empty());
    // Plain HTTP is not served on the HTTPS port.
    let plain = tokio::task::spawn_blocking(move || http::get(address, "/metrics"))
        .await
        .expect("client");
    assert!(
        plain.as_ref().map(|r| r.status) != Ok(200),
        "plain HTTP answered {plain:?}"
    );
    berth.terminate_cleanly().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insecure_port_serves_plain_http_without_reviews() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    let mut berth = Berth::spawn(
        &cluster,
        BerthOptions {
            metrics: MetricsPort::Insecure,
            ..BerthOptions::default()
        },
    );
    berth.wait_ready().await;
    let (status, _) = berth
        .get_with_token("/metrics", None)
        .await
        .expect("answers");
    assert_eq!(status, 200, "--metrics-insecure: /metrics for anyone");
    assert!(
        !cluster
            .requests()
            .iter()
            .any(|r| r.resource == "tokenreviews"),
        "no review without security"
    );
    berth.terminate_cleanly().await;
}

async fn verified_status(
    address: SocketAddr,
    ca: &Issued,
    token: Option<&str>,
) -> Result<u16, String> {
    let root = ca.ca.clone();
    let header = token.map(|t| format!("Bearer {t}"));
    tokio::task::spawn_blocking(move || {
        let headers: Vec<(&str, &str)> = header
            .as_deref()
            .map(|h| ("Authorization", h))
            .into_iter()
            .collect();
        https::get(
            address,
            "localhost",
            "/metrics",
            &headers,
            &Trust::Root(root),
        )
        .map(|exchange| exchange.response.status)
    })
    .await
    .map_err(|e| e.to_string())?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificate_files_replaced_while_berth_runs_are_served_without_a_restart() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    let dir = TempDir::new("e2e-metrics-tls");
    let first = Issued::new("first CA");
    let (cert, key) = first.install(&dir);
    let mut berth = Berth::spawn(
        &cluster,
        BerthOptions {
            metrics: MetricsPort::CertificateFiles { cert, key },
            ..BerthOptions::default()
        },
    );
    berth.wait_ready().await;
    let pid = berth.pid();
    assert_eq!(
        verified_status(berth.metrics, &first, Some(&cluster.metrics_token)).await,
        Ok(200),
        "a client trusting the first CA"
    );
    assert_the_four_cases(&cluster, &berth).await;

    let second = Issued::new("second CA");
    second.install(&dir);
    let address = berth.metrics;
    let leaf = second.leaf.clone();
    tokio::task::spawn_blocking(move || {
        https::wait_for_certificate(address, &leaf, Duration::from_secs(10))
    })
    .await
    .expect("client")
    .unwrap_or_else(|e| panic!("{e}\n{}", berth.logs()));
    berth.assert_running();
    assert_eq!(berth.pid(), pid, "the same process");
    assert_eq!(
        verified_status(berth.metrics, &second, Some(&cluster.metrics_token)).await,
        Ok(200),
        "a client trusting the second CA"
    );
    assert_eq!(
        verified_status(berth.metrics, &second, None).await,
        Ok(401),
        "the new certificate guards /metrics as the first did"
    );
    assert!(
        verified_status(berth.metrics, &first, Some(&cluster.metrics_token))
            .await
            .is_err(),
        "the first CA no longer verifies what is served"
    );
    assert_the_four_cases(&cluster, &berth).await;
    berth.terminate_cleanly().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_permission_is_refused_once_the_cached_answer_expires() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    let mut berth = Berth::spawn(&cluster, BerthOptions::default());
    berth.wait_ready().await;
    let (status, _) = berth.get("/metrics").await.expect("answers");
    assert_eq!(status, 200);
    // The revocation: the chart's binding of the metrics reader goes (real RBAC acts on it
    // at once; berth's cached answer does not).
    let revoked_at = Instant::now();
    let bindings: kube::Api<k8s_openapi::api::rbac::v1::ClusterRoleBinding> =
        kube::Api::all(cluster.client.clone());
    bindings
        .delete("berth-metrics-reader", &Default::default())
        .await
        .expect("the chart's metrics-reader binding is deleted");
    let (status, _) = berth.get("/metrics").await.expect("answers");
    assert_eq!(status, 200, "the allowed answer is cached for a while");
    eventually("/metrics is refused after the revocation", WAIT, || async {
        match berth.get("/metrics").await? {
            (403, _) => Ok(()),
            (status, _) => Err(format!("{status}")),
        }
    })
    .await;
    assert!(
        revoked_at.elapsed() >= Duration::from_secs(5),
        "the answer came from the cache at first (refused after {:?})",
        revoked_at.elapsed()
    );
    berth.terminate_cleanly().await;
}

// ---------------------------------------------------------------------------------------
// Abuse

/// How hard the flood hits the port, each part bounded in count and time.
const SLOW_CONNECTIONS: usize = 100;
const MALFORMED_CONNECTIONS: usize = 1_500;
const UNAUTHENTICATED_REQUESTS: usize = 300;
const FLOOD_SECONDS: u64 = 20;
/// Pods scheduled in each phase.
const PODS: usize = 400;
/// Rounds of a quiet batch and a flooded one; the ratio reported is their median.
const ROUNDS: usize = 3;
/// The margin docs/operator.md states: during the flood, scheduling keeps at least half
/// its throughput. On the 2-core machines the flood's clients, the test API server and
/// berth share the cores, so part of the loss is the clients' own CPU. Reported, not
/// asserted.
const STATED_MARGIN: f64 = 0.5;

/// Writes a line to the test's output even when cargo test captures `println!`.
fn report(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Creates `count` pods for the scheduler `name`, which no profile serves yet.
async fn create_pending(cluster: &Cluster, name: &str, count: usize) {
    for i in 0..count {
        cluster
            .create_pod(pod(&format!("{name}-{i}"), name, "10m", "16Mi"))
            .await;
    }
}

/// Creates the profile `name` and waits until `count` more pods are bound; returns the
/// pods per second from the profile's creation to the last binding (pod creation, the
/// test's own work, is not timed).
async fn time_scheduling(cluster: &Cluster, name: &str, count: usize) -> f64 {
    let bound_before = cluster.successful_bindings().len();
    let started = Instant::now();
    cluster.create_profile(profile(name, json!({}))).await;
    eventually(
        &format!("{count} {name} pods are bound"),
        Duration::from_secs(120),
        || async {
            let bound = cluster.successful_bindings().len() - bound_before;
            if bound >= count {
                Ok(())
            } else {
                Err(format!("{bound}/{count} bound"))
            }
        },
    )
    .await;
    count as f64 / started.elapsed().as_secs_f64()
}

/// Whether the server still holds `stream` open (a non-blocking stream with nothing to
/// read).
fn still_open(stream: &std::net::TcpStream) -> bool {
    let mut byte = [0u8; 1];
    matches!(stream.peek(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

/// The flood's threads, stopped on drop.
struct Flood {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
    pub malformed: Arc<AtomicUsize>,
    pub unauthenticated: Arc<AtomicUsize>,
    pub refused: Arc<AtomicUsize>,
}

impl Flood {
    fn start(address: SocketAddr) -> Flood {
        let stop = Arc::new(AtomicBool::new(false));
        let malformed = Arc::new(AtomicUsize::new(0));
        let unauthenticated = Arc::new(AtomicUsize::new(0));
        let refused = Arc::new(AtomicUsize::new(0));
        let deadline = Instant::now() + Duration::from_secs(FLOOD_SECONDS);
        let mut threads = Vec::new();
        // Slow connections: each opens, sends part of a TLS record and then nothing,
        // and opens again once the server closes it.
        {
            let stop = stop.clone();
            threads.push(std::thread::spawn(move || {
                let mut held = Vec::new();
                while !stop.load(Ordering::SeqCst) && Instant::now() < deadline {
                    held.retain(still_open);
                    while held.len() < SLOW_CONNECTIONS {
                        match http::connect(address, Duration::from_secs(1)) {
                            Ok(mut stream) => {
                                let _ = stream.write_all(b"\x16\x03\x01\x02\x00\x01");
                                let _ = stream.set_nonblocking(true);
                                held.push(stream);
                            }
                            Err(_) => break,
                        }
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
            }));
        }
        // Malformed connections: garbage, then closed.
        for payload in [
            &b"\x00\x01garbage\r\n\r\n"[..],
            b"GET /metrics HTTP/1.1\r\n\r\n",
        ] {
            let stop = stop.clone();
            let malformed = malformed.clone();
            threads.push(std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst)
                    && Instant::now() < deadline
                    && malformed.load(Ordering::SeqCst) < MALFORMED_CONNECTIONS
                {
                    if let Ok(mut stream) = http::connect(address, Duration::from_secs(1)) {
                        let _ = stream.write_all(payload);
                        malformed.fetch_add(1, Ordering::SeqCst);
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            }));
        }
        // Requests with made-up tokens: each one costs berth a TokenReview.
        {
            let stop = stop.clone();
            let unauthenticated = unauthenticated.clone();
            let refused = refused.clone();
            threads.push(std::thread::spawn(move || {
                let mut i = 0usize;
                while !stop.load(Ordering::SeqCst)
                    && Instant::now() < deadline
                    && i < UNAUTHENTICATED_REQUESTS
                {
                    let token = format!("Bearer made-up-{i}");
                    if let Ok(exchange) = https::get(
                        address,
                        "localhost",
                        "/metrics",
                        &[("Authorization", &token)],
                        &Trust::Any,
                    ) {
                        unauthenticated.fetch_add(1, Ordering::SeqCst);
                        if exchange.response.status == 401 {
                            refused.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    i += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
            }));
        }
        Flood {
            stop,
            threads,
            malformed,
            unauthenticated,
            refused,
        }
    }

    fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// One round's measurement.
struct Round {
    quiet: f64,
    flooded: f64,
    malformed: usize,
    unauthenticated: usize,
    refused: usize,
    probes: Vec<Result<u16, String>>,
}

/// Schedules a batch without the flood, then one with it (created before it starts, so
/// only scheduling runs under it), probing `/readyz` during the flood.
async fn round(cluster: &Cluster, berth: &Berth, index: usize) -> Round {
    let (quiet_name, flooded_name) = (format!("quiet-{index}"), format!("flooded-{index}"));
    create_pending(cluster, &quiet_name, PODS).await;
    let quiet = time_scheduling(cluster, &quiet_name, PODS).await;

    create_pending(cluster, &flooded_name, PODS).await;
    let flood = Flood::start(berth.metrics);
    // Let the slow connections take their slots before measuring.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let probes = {
        let address = berth.metrics;
        let stop = flood.stop.clone();
        tokio::task::spawn_blocking(move || {
            let mut answers = Vec::new();
            while !stop.load(Ordering::SeqCst) && answers.len() < 200 {
                let answer = https::get(address, "localhost", "/readyz", &[], &Trust::Any)
                    .map(|exchange| exchange.response.status);
                answers.push(answer);
                std::thread::sleep(Duration::from_millis(100));
            }
            answers
        })
    };
    let flooded = time_scheduling(cluster, &flooded_name, PODS).await;
    let (malformed, unauthenticated, refused) = (
        flood.malformed.load(Ordering::SeqCst),
        flood.unauthenticated.load(Ordering::SeqCst),
        flood.refused.load(Ordering::SeqCst),
    );
    flood.stop();
    Round {
        quiet,
        flooded,
        malformed,
        unauthenticated,
        refused,
        probes: probes.await.expect("probe thread"),
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_a_flood_of_slow_and_malformed_connections_scheduling_goes_on_and_readyz_answers() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    // Room for every batch: 110 pods a node.
    let nodes = (2 * ROUNDS * PODS).div_ceil(110) + 1;
    for i in 0..nodes {
        cluster
            .create_node(node(&format!("node-{i}"), "64", "128Gi"))
            .await;
    }
    let mut berth = Berth::spawn(&cluster, BerthOptions::default());
    berth.wait_ready().await;

    let mut rounds = Vec::new();
    for index in 0..ROUNDS {
        rounds.push(round(&cluster, &berth, index).await);
        berth.assert_running();
    }

    let probes: Vec<&Result<u16, String>> = rounds.iter().flat_map(|r| &r.probes).collect();
    let failed: Vec<_> = probes.iter().filter(|a| ***a != Ok(200)).collect();
    assert!(!probes.is_empty(), "/readyz was probed during the flood");
    assert!(
        failed.is_empty(),
        "/readyz during the flood: {} of {} probes failed: {failed:?}",
        failed.len(),
        probes.len()
    );
    for (i, round) in rounds.iter().enumerate() {
        assert!(
            round.malformed > 0 && round.unauthenticated > 0,
            "round {i}: the flood ran"
        );
        assert_eq!(
            round.refused, round.unauthenticated,
            "round {i}: every made-up token was answered 401"
        );
    }
    // After the flood the port serves its reader as before.
    let (status, _) = berth.get("/metrics").await.expect("answers");
    assert_eq!(status, 200);

    let ratios: Vec<f64> = rounds.iter().map(|r| r.flooded / r.quiet).collect();
    let median_ratio = median(ratios.clone());
    report(&format!(
        "metrics port abuse: scheduling throughput during a flood / without it, {ROUNDS} rounds \
         of {PODS} pods: median {median_ratio:.2} ({}), {} the stated margin (at least \
         {STATED_MARGIN}); pods/s without: {}; during: {}; per flood: \
         {SLOW_CONNECTIONS} slow connections held, about {} malformed connections and {} \
         requests with made-up tokens (all 401); /readyz answered {} of {} probes with 200",
        ratios
            .iter()
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(", "),
        if median_ratio >= STATED_MARGIN {
            "within"
        } else {
            "OUTSIDE"
        },
        rounds
            .iter()
            .map(|r| format!("{:.0}", r.quiet))
            .collect::<Vec<_>>()
            .join(", "),
        rounds
            .iter()
            .map(|r| format!("{:.0}", r.flooded))
            .collect::<Vec<_>>()
            .join(", "),
        rounds.iter().map(|r| r.malformed).sum::<usize>() / ROUNDS,
        rounds.iter().map(|r| r.unauthenticated).sum::<usize>() / ROUNDS,
        probes.len() - failed.len(),
        probes.len()
    ));
    berth.terminate_cleanly().await;
}
