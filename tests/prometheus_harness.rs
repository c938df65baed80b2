//! Tests of the real-Prometheus harness (`tests/support/prometheus.rs`) that the
//! NetworkTraffic and MetricsScore tests run on (issue 8): the TSDB built by promtool
//! gives the configured rates exactly at "now" and for the next hour, the data survives
//! a stop and a restart on the same port, and startup failures carry Prometheus' log.
//!
//! Without `prometheus` and `promtool` every test skips loudly, except on CI (`CI=true`),
//! where it fails; `scripts/install-prometheus.sh` installs them.

mod support;
use support::prometheus;

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, SystemTime};

use prometheus::{EXAMPLE_RATES, NETWORK_QUERY, Prometheus, Series, Span};

/// The tolerance for a rate that Prometheus computes exactly up to float rounding:
/// `(last - first) * (range / sampled) / range` is a handful of f64 operations on exact
/// integers, each off by at most half an ulp (1.1e-16 relative); measured error is
/// ≤ 2e-16. 1e-12 relative leaves four orders of magnitude for that and nothing else.
const RELATIVE_TOLERANCE: f64 = 1e-12;

fn assert_close(what: &str, actual: f64, expected: f64) {
    let tolerance = expected.abs() * RELATIVE_TOLERANCE;
    assert!(
        (actual - expected).abs() <= tolerance,
        "{what}: got {actual}, expected {expected} (± {tolerance})"
    );
}

fn expected_rates() -> BTreeMap<String, f64> {
    EXAMPLE_RATES
        .iter()
        .map(|(node, rate)| (node.to_string(), *rate))
        .collect()
}

fn assert_rates(what: &str, actual: &BTreeMap<String, f64>, expected: &BTreeMap<String, f64>) {
    assert_eq!(
        actual.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>(),
        "{what}: the nodes in {actual:?}"
    );
    for (node, rate) in expected {
        assert_close(&format!("{what}: {node}"), actual[node], *rate);
    }
}

fn start_example() -> Prometheus {
    let started = std::time::Instant::now();
    let prom = Prometheus::start(&prometheus::network_traffic(&EXAMPLE_RATES))
        .expect("starting Prometheus with the network fixture");
    println!(
        "prometheus {}: started in {:?} (ready {:?} after spawning)",
        prom.address(),
        started.elapsed(),
        prom.startup_time()
    );
    prom
}

fn connect(port: u16) -> std::io::Result<TcpStream> {
    TcpStream::connect_timeout(
        &SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_secs(2),
    )
}

#[test]
fn network_fixture_gives_the_configured_rates_by_nodename_at_now() {
    if !prometheus::installed_or_skip(
        "network_fixture_gives_the_configured_rates_by_nodename_at_now",
    ) {
        return;
    }
    let prom = start_example();
    assert!(
        prom.address().starts_with("http://127.0.0.1:"),
        "{}",
        prom.address()
    );

    let by_node = prom.query_by(NETWORK_QUERY, "nodename").unwrap();
    assert_rates("the issue's query at now", &by_node, &expected_rates());

    // The raw counters: eth0 at the configured rate under the exporter's instance, and a
    // loopback with a different rate next to it.
    let eth0 = prom
        .query_by(
            "rate(node_network_receive_bytes_total{device=\"eth0\"}[60s])",
            "instance",
        )
        .unwrap();
    let lo = prom
        .query_by(
            "rate(node_network_receive_bytes_total{device=\"lo\"}[60s])",
            "instance",
        )
        .unwrap();
    for (index, (node, rate)) in EXAMPLE_RATES.iter().enumerate() {
        let instance = prometheus::exporter_instance(index);
        assert_close(
            &format!("eth0 of {node} ({instance})"),
            eth0[&instance],
            *rate,
        );
        assert!(
            (lo[&instance] - rate).abs() > 1000.0,
            "lo of {node} must differ from eth0: {}",
            lo[&instance]
        );
    }

    // node_uname_info maps instances to node names, value 1.
    let uname = prom.query("node_uname_info").unwrap();
    let mut nodes: Vec<(String, String, f64)> = uname
        .iter()
        .map(|s| {
            (
                s.labels["instance"].clone(),
                s.labels["nodename"].clone(),
                s.value,
            )
        })
        .collect();
    nodes.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        nodes,
        vec![
            ("10.0.0.1:9100".to_string(), "node-a".to_string(), 1.0),
            ("10.0.0.2:9100".to_string(), "node-b".to_string(), 1.0),
            ("10.0.0.3:9100".to_string(), "node-c".to_string(), 1.0),
        ]
    );

    // Forgetting the device filter makes every node look the same: the fixture catches a
    // query that does not select the interface.
    let all_devices = prom
        .query_by(
            "sum by (nodename) (rate(node_network_receive_bytes_total[60s]) * on(instance) group_left(nodename) node_uname_info)",
            "nodename",
        )
        .unwrap();
    assert_eq!(all_devices.len(), 3, "{all_devices:?}");
    for (node, total) in &all_devices {
        assert_close(
            &format!("eth0 + lo of {node}"),
            *total,
            3.0 * 200_000.0 + 1000.0,
        );
    }
}

#[test]
fn rates_are_exact_at_every_moment_of_the_next_hour() {
    if !prometheus::installed_or_skip("rates_are_exact_at_every_moment_of_the_next_hour") {
        return;
    }
    let prom = start_example();
    let span = prom.span();
    let now = SystemTime::now();
    // Every 1.001 s (odd milliseconds) from now until the data ends: what a test that
    // queries "now" for the next hour sees. 3600 points, under the API's 11000.
    let end = span.to;
    assert!(
        end.duration_since(now).unwrap() >= Duration::from_secs(59 * 60),
        "the span must reach an hour ahead: {span:?}"
    );
    let series = prom
        .query_range(NETWORK_QUERY, now, end, Duration::from_millis(1001))
        .unwrap();
    let expected = expected_rates();
    assert_eq!(series.len(), 3, "{series:?}");
    for (labels, points) in &series {
        let node = &labels["nodename"];
        assert!(
            points.len() >= 3590,
            "{node}: only {} points between now and {end:?}",
            points.len()
        );
        for (t, value) in points {
            assert_close(&format!("{node} at {t}"), *value, expected[node]);
        }
    }

    // Instant queries in the past of the span, at now, and near its end.
    for at in [
        span.from + Duration::from_secs(61),
        now,
        span.to - Duration::from_millis(1),
    ] {
        let by_node = prom.query_at_by(NETWORK_QUERY, at, "nodename");
        assert_rates(&format!("at {at:?}"), &by_node, &expected);
    }

    // A longer range is exact too (15 minutes of history).
    let five_minutes = prom
        .query_by(&NETWORK_QUERY.replace("[60s]", "[5m]"), "nodename")
        .unwrap();
    assert_rates("rate over 5m", &five_minutes, &expected);

    // And past the end there is no data: the span is what bounds a test.
    let after = prom
        .query_at(NETWORK_QUERY, span.to + Duration::from_secs(120))
        .unwrap();
    assert!(after.is_empty(), "no rate after the span ends: {after:?}");
}

/// `query_at` keyed by a label, for the test above.
trait QueryAtBy {
    fn query_at_by(&self, promql: &str, at: SystemTime, label: &str) -> BTreeMap<String, f64>;
}

impl QueryAtBy for Prometheus {
    fn query_at_by(&self, promql: &str, at: SystemTime, label: &str) -> BTreeMap<String, f64> {
        self.query_at(promql, at)
            .unwrap()
            .into_iter()
            .map(|s| (s.labels[label].clone(), s.value))
            .collect()
    }
}

#[test]
fn stop_refuses_connections_and_restart_serves_the_same_data_on_the_same_port() {
    if !prometheus::installed_or_skip(
        "stop_refuses_connections_and_restart_serves_the_same_data_on_the_same_port",
    ) {
        return;
    }
    let mut prom = start_example();
    let address = prom.address();
    let port = prom.port();
    assert!(prom.is_running());
    assert_rates(
        "before stop",
        &prom.query_by(NETWORK_QUERY, "nodename").unwrap(),
        &expected_rates(),
    );

    prom.stop();
    assert!(!prom.is_running());
    assert_eq!(prom.pid(), None);
    let refused = connect(port).expect_err("the port must refuse connections after stop()");
    assert_eq!(refused.kind(), ErrorKind::ConnectionRefused, "{refused}");
    assert!(prom.query(NETWORK_QUERY).is_err());
    prom.stop(); // idempotent

    prom.restart().expect("restarting Prometheus");
    println!("prometheus restarted in {:?}", prom.startup_time());
    assert!(prom.is_running());
    assert_eq!(prom.address(), address, "restart keeps the address");
    assert_rates(
        "after restart",
        &prom.query_by(NETWORK_QUERY, "nodename").unwrap(),
        &expected_rates(),
    );

    // A restart while running is a stop and a start: a new process, same data.
    let pid = prom.pid().unwrap();
    prom.restart().expect("restarting a running Prometheus");
    assert_ne!(prom.pid().unwrap(), pid);
    assert_rates(
        "after the second restart",
        &prom.query_by(NETWORK_QUERY, "nodename").unwrap(),
        &expected_rates(),
    );
}

#[test]
fn drop_kills_prometheus_and_removes_its_directory() {
    if !prometheus::installed_or_skip("drop_kills_prometheus_and_removes_its_directory") {
        return;
    }
    let prom = start_example();
    let port = prom.port();
    let pid = prom.pid().unwrap();
    let dir = prom.dir().to_path_buf();
    assert!(prom.data_dir().is_dir());
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    drop(prom);
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "process {pid} survived the drop"
    );
    assert_eq!(
        connect(port)
            .expect_err("nothing listens after drop")
            .kind(),
        ErrorKind::ConnectionRefused
    );
    assert!(!dir.exists(), "{} survived the drop", dir.display());
}

#[test]
fn a_failed_restart_reports_prometheus_log_and_a_later_one_succeeds() {
    if !prometheus::installed_or_skip(
        "a_failed_restart_reports_prometheus_log_and_a_later_one_succeeds",
    ) {
        return;
    }
    let mut prom = start_example();
    prom.stop();
    // Someone else takes the port: Prometheus cannot listen and exits.
    let squatter = TcpListener::bind(("127.0.0.1", prom.port())).expect("taking the port");
    let error = prom
        .restart()
        .expect_err("a restart on a taken port must fail")
        .to_string();
    assert!(
        error.contains("exited") && error.contains("address already in use"),
        "the error must say that Prometheus exited and include its log: {error}"
    );
    assert!(!prom.is_running());
    drop(squatter);
    prom.restart().expect("restarting once the port is free");
    assert_rates(
        "after the failed restart",
        &prom.query_by(NETWORK_QUERY, "nodename").unwrap(),
        &expected_rates(),
    );
}

#[test]
fn generic_series_counters_gauges_and_escaped_labels() {
    if !prometheus::installed_or_skip("generic_series_counters_gauges_and_escaped_labels") {
        return;
    }
    let tricky = "a \"quoted\" \\ value\nwith a newline";
    let prom = Prometheus::start_with(
        &[
            Series::gauge("node_load1", &[("instance", "n1"), ("odd", tricky)], 0.75),
            Series::gauge("node_load1", &[("instance", "n2"), ("odd", "plain")], 3.5),
            Series::counter(
                "node_cpu_seconds_total",
                &[("instance", "n1"), ("mode", "idle")],
                1.5,
            ),
            Series::counter("berth:custom:total", &[], 0.001),
        ],
        Span::around(
            SystemTime::now(),
            Duration::from_secs(10 * 60),
            Duration::from_secs(10 * 60),
        ),
    )
    .expect("starting Prometheus with generic series");

    let load = prom.query("node_load1").unwrap();
    let by_instance: BTreeMap<&str, (&str, f64)> = load
        .iter()
        .map(|s| {
            (
                s.labels["instance"].as_str(),
                (s.labels["odd"].as_str(), s.value),
            )
        })
        .collect();
    assert_eq!(
        by_instance,
        BTreeMap::from([("n1", (tricky, 0.75)), ("n2", ("plain", 3.5))])
    );

    let cpu = prom
        .query_by(
            "rate(node_cpu_seconds_total{mode=\"idle\"}[2m])",
            "instance",
        )
        .unwrap();
    assert_close("cpu idle rate", cpu["n1"], 1.5);
    let custom = prom.query("rate(berth:custom:total[60s])").unwrap();
    assert_eq!(custom.len(), 1, "{custom:?}");
    assert_close("fractional rate", custom[0].value, 0.001);

    // Series that were not written are absent.
    assert!(
        prom.query("node_network_receive_bytes_total")
            .unwrap()
            .is_empty()
    );
}

#[test]
fn requests_counts_the_queries_prometheus_answered() {
    if !prometheus::installed_or_skip("requests_counts_the_queries_prometheus_answered") {
        return;
    }
    let prom = start_example();
    let before = prom.requests("/api/v1/query").unwrap();
    for _ in 0..3 {
        prom.query(NETWORK_QUERY).unwrap();
    }
    let (status, _) = prom.get("/api/v1/query?query=up").unwrap();
    assert_eq!(status, 200);
    assert_eq!(prom.requests("/api/v1/query").unwrap() - before, 4);
    // Other handlers are counted apart.
    prom.query_range(
        "node_uname_info",
        SystemTime::now() - Duration::from_secs(60),
        SystemTime::now(),
        Duration::from_secs(15),
    )
    .unwrap();
    assert_eq!(prom.requests("/api/v1/query").unwrap() - before, 4);
    assert_eq!(prom.requests("/api/v1/query_range").unwrap(), 1);
}

#[test]
fn an_empty_tsdb_answers_with_no_samples() {
    if !prometheus::installed_or_skip("an_empty_tsdb_answers_with_no_samples") {
        return;
    }
    let prom = Prometheus::start(&[]).expect("starting Prometheus without data");
    assert!(prom.query(NETWORK_QUERY).unwrap().is_empty());
    // A malformed query is an error with Prometheus' message.
    let error = prom.query("rate(").expect_err("a parse error").to_string();
    assert!(
        error.contains("400") && error.contains("parse error"),
        "{error}"
    );
}

#[test]
fn openmetrics_text_of_a_counter_rises_by_rate_times_step() {
    // No binaries needed: the generated text itself.
    let span = Span::around(
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000),
        Duration::from_secs(10),
        Duration::from_secs(5),
    );
    let text = prometheus::openmetrics(
        &[
            Series::counter("c_total", &[("l", "x")], 200_000.0),
            Series::gauge("g", &[], 1.0),
        ],
        &span,
    );
    let expected = "\
# TYPE c counter
c_total{l=\"x\"} 17280000000 999990.000
c_total{l=\"x\"} 17281000000 999995.000
c_total{l=\"x\"} 17282000000 1000000.000
c_total{l=\"x\"} 17283000000 1000005.000
# TYPE g gauge
g 1 999990.000
g 1 999995.000
g 1 1000000.000
g 1 1000005.000
# EOF
";
    assert_eq!(text, expected);
}

#[test]
fn skip_or_fail_prints_off_ci_and_panics_on_ci() {
    let mut out = Vec::new();
    prometheus::skip_or_fail_on(false, "t: prometheus not installed", &mut out);
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.contains("!!! SKIPPED: t: prometheus not installed.\n!!! This test did NOT run."),
        "{out}"
    );

    let on_ci = std::panic::catch_unwind(|| {
        prometheus::skip_or_fail_on(true, prometheus::NOT_INSTALLED, &mut Vec::new())
    })
    .expect_err("skip_or_fail must panic on CI");
    let message = on_ci.downcast_ref::<String>().cloned().unwrap_or_default();
    assert_eq!(
        message,
        "prometheus not installed (run scripts/install-prometheus.sh). \
         On CI (CI=true) the Prometheus tests must run."
    );
}
