//! A real Prometheus for tests (issue 8): a TSDB built with `promtool tsdb
//! create-blocks-from openmetrics` from series the test describes, served by the
//! `prometheus` binary on 127.0.0.1 and a free port.
//!
//! A test crate reaches it as `support::prometheus` (see `tests/support/mod.rs`).
//!
//! The binaries come from Debian's `prometheus` package (2.42), which
//! `scripts/install-prometheus.sh` installs. A test starts with
//! `if !prometheus::installed_or_skip("my_test") { return; }`: without the binaries it
//! skips loudly, except on CI (`CI=true`), where it fails.
//!
//! ```ignore
//! let prom = Prometheus::start(&prometheus::network_traffic(&prometheus::EXAMPLE_RATES))
//!     .expect("start Prometheus");
//! // prom.address() == "http://127.0.0.1:PORT"; prom.stop(); prom.restart()?; ...
//! ```
//!
//! # Data at "now", and exact rates
//!
//! The plugins query at the current time, e.g. `rate(node_network_receive_bytes_total
//! {device="eth0"}[60s])`, and the tests need the exact configured rates back for as long
//! as they run. What was found with Prometheus 2.42.0 (Debian bookworm):
//!
//! - **Future-dated samples work.** The series are written from 15 minutes before the
//!   start until 60 minutes after it ([`Span::around_now`]), one sample every 5 s.
//!   `promtool tsdb create-blocks-from openmetrics` accepts timestamps in the future (it
//!   cuts blocks at 2 h boundaries, so a span may become two blocks), and Prometheus loads
//!   such blocks and answers queries at any time inside them ("Found healthy block",
//!   no warning). There is no "block in the future" check. The out-of-order limits apply
//!   only to appends to the head, and nothing is appended: the configuration has no
//!   scrape targets and no rules. Overlapping blocks are allowed by default since 2.39
//!   (`--storage.tsdb.allow-overlapping-blocks` is obsolete), though they do not occur here.
//! - **Retention** is measured from the newest block's end, not the wall clock
//!   (`BeyondTimeRetention`), so it never drops this data; `--storage.tsdb.retention.time`
//!   is set long anyway. `--storage.tsdb.max-block-duration=2h` turns off compaction of
//!   the loaded blocks, so nothing rewrites the data directory while a test runs.
//! - **`rate()` is exact.** A counter sample at time `t` has the value
//!   `rate * (t - from + 1 day)`, so it rises by exactly `rate * step` per step (integers
//!   for integer rates, exact in f64 far beyond these sizes). Prometheus 2.42's
//!   `extrapolatedRate` takes `last - first` over the samples in `[t - range, t]` and
//!   extrapolates to the range boundaries when the gap to a boundary is under 1.1 × the
//!   average sample interval, which holds at both ends whenever samples cover the window
//!   (gap < step). Then the extrapolated interval is the whole range, and the result is
//!   `slope * sampled / sampled * range / range = slope`. The "extrapolate to zero" limit
//!   (`first value / slope` < gap to the start) cannot trigger, because the counter starts
//!   at `rate * 1 day`. Only float rounding remains: queried every 0.777 s over a whole
//!   span (5561 query times, milliseconds all over), `rate()` returned the configured rate
//!   or the next float above it (relative error ≤ 2e-16), also across the boundary of two
//!   blocks (a 6 h span, every 2.001 s). Ranges up to the 15 minutes of history behave the
//!   same. `tests/prometheus_harness.rs` checks every 1.001 s from now to the span's end.
//! - **Valid window.** Instant queries at any time in `[from + range, to]` return the exact
//!   rates: with the default span, from when `start` returns until an hour later. After
//!   `to`, `rate()` goes empty (fewer than two samples in the window), and instant
//!   selectors of gauges go empty five minutes later (lookback delta).
//!
//! # Cost
//!
//! [`Prometheus::start`] with the standard fixture takes 0.1–0.2 s in all (writing the
//! OpenMetrics file and promtool included); Prometheus answers `/-/ready` ~40 ms after it
//! is spawned, and [`Prometheus::restart`] takes as long.
//!
//! # Other rules
//!
//! - [`Prometheus::stop`] kills the process (SIGKILL, like a crash) and waits for it; the
//!   port then refuses connections. [`Prometheus::restart`] starts it again on the same
//!   port with the same data directory. Drop kills it and removes the directory.
//! - Prometheus' stdout and stderr go to `prometheus.log` in the directory; errors and a
//!   failing test's output include its tail.
//! - Everything is blocking (std only, ~0.1 s per start); from a tokio test, call it
//!   directly or through `spawn_blocking`. HTTP goes through `support::http`.
//! - A test process killed outright (SIGKILL, not a panic) leaves its Prometheus running:
//!   nothing on stable std makes a child die with its parent.
//! - [`Prometheus::requests`] reads Prometheus' own `prometheus_http_requests_total`, to
//!   count the queries a plugin sent (it counts the harness's own queries too, and starts
//!   from zero after a restart).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::http::{self, free_port, loopback};
use super::temp::TempDir;

/// How long Prometheus may take to answer `/-/ready`.
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// The bound on one HTTP request of the harness.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(10);
/// The message of a test that skips because the binaries are missing.
pub const NOT_INSTALLED: &str = "prometheus not installed (run scripts/install-prometheus.sh)";

/// The rates of the issue's example, in bytes/second: the busiest node at 200000 and one
/// at 140000 (NetworkTraffic score `100 - 140000 * 100 / 200000 = 30`), a quiet one.
pub const EXAMPLE_RATES: [(&str, f64); 3] = [
    ("node-a", 200_000.0),
    ("node-b", 140_000.0),
    ("node-c", 20_000.0),
];

/// The PromQL that gives each node's eth0 receive rate over 60 s by `nodename`, in
/// node_exporter's conventions (what NetworkTraffic computes with its defaults).
pub const NETWORK_QUERY: &str = "sum by (nodename) (rate(node_network_receive_bytes_total{device=\"eth0\"}[60s]) * on(instance) group_left(nodename) node_uname_info)";

// ---------------------------------------------------------------------------------------
// Errors and skipping

/// A harness failure. Its `Debug` is the plain message (with Prometheus' log), so
/// `.expect("...")` prints it readably.
pub struct Error(pub String);

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

fn err<T>(message: impl Into<String>) -> Result<T> {
    Err(Error(message.into()))
}

/// Whether `prometheus` and `promtool` are on PATH and run (checked once per process).
pub fn installed() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(|| {
        ["prometheus", "promtool"].iter().all(|binary| {
            Command::new(binary)
                .arg("--version")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
        })
    })
}

/// For a test that needs Prometheus: `true` when it is installed; otherwise
/// [`skip_or_fail`] (a loud skip, or a panic on CI) and `false`.
pub fn installed_or_skip(test: &str) -> bool {
    if installed() {
        return true;
    }
    skip_or_fail(&format!("{test}: {NOT_INSTALLED}"));
    false
}

/// A test that cannot run: on CI (`CI=true`) a panic with `reason`; elsewhere a loud
/// "SKIPPED" on the real stderr, and the test should return.
pub fn skip_or_fail(reason: &str) {
    // Written to the real stderr, not through eprintln!, which the test harness captures
    // (and hides) for passing tests.
    skip_or_fail_on(
        std::env::var("CI").is_ok_and(|v| v == "true"),
        reason,
        &mut std::io::stderr(),
    );
}

/// [`skip_or_fail`] with the CI decision made by the caller, writing the message to `out`
/// (the real stderr in [`skip_or_fail`]).
pub fn skip_or_fail_on(ci: bool, reason: &str, out: &mut dyn Write) {
    if ci {
        panic!("{reason}. On CI (CI=true) the Prometheus tests must run.");
    }
    let _ = writeln!(
        out,
        "\n{bar}\n!!! SKIPPED: {reason}.\n!!! This test did NOT run.\n{bar}\n",
        bar = "!".repeat(100)
    );
}

// ---------------------------------------------------------------------------------------
// Series and the TSDB

/// The time range and sample interval of the generated series.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    /// The first sample.
    pub from: SystemTime,
    /// The last sample is at or before this.
    pub to: SystemTime,
    /// The interval between samples.
    pub step: Duration,
}

impl Span {
    /// 15 minutes before now until 60 minutes after, a sample every 5 s (aligned to whole
    /// steps). Rates over ranges up to 15 minutes are exact at "now" for the next hour.
    pub fn around_now() -> Span {
        Span::around(
            SystemTime::now(),
            Duration::from_secs(15 * 60),
            Duration::from_secs(60 * 60),
        )
    }

    /// `before` before `now` until `after` after it, a sample every 5 s.
    pub fn around(now: SystemTime, before: Duration, after: Duration) -> Span {
        let step = Duration::from_secs(5);
        let now_ms = millis(now);
        let step_ms = step.as_millis() as u64;
        let aligned = UNIX_EPOCH + Duration::from_millis(now_ms - now_ms % step_ms);
        Span {
            from: aligned - before,
            to: aligned + after,
            step,
        }
    }

    /// The sample timestamps, in milliseconds since the epoch.
    fn timestamps(&self) -> impl Iterator<Item = u64> {
        let (from, to) = (millis(self.from), millis(self.to));
        let step = (self.step.as_millis() as u64).max(1);
        (0..)
            .map(move |i| from + i * step)
            .take_while(move |t| *t <= to)
    }
}

fn millis(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .expect("time after the epoch")
        .as_millis() as u64
}

/// How a series' value evolves over the [`Span`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    /// A counter rising by `per_second` every second (so `rate()` is exactly
    /// `per_second`); it starts at `per_second * 86400`, as if the exporter had been up a
    /// day.
    Counter { per_second: f64 },
    /// A constant.
    Gauge { value: f64 },
}

/// One time series to write into the TSDB.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub shape: Shape,
}

impl Series {
    /// A counter `name{labels}` whose `rate()` is `per_second`.
    pub fn counter(name: &str, labels: &[(&str, &str)], per_second: f64) -> Series {
        Series::new(name, labels, Shape::Counter { per_second })
    }

    /// A gauge `name{labels}` with the constant `value`.
    pub fn gauge(name: &str, labels: &[(&str, &str)], value: f64) -> Series {
        Series::new(name, labels, Shape::Gauge { value })
    }

    fn new(name: &str, labels: &[(&str, &str)], shape: Shape) -> Series {
        assert!(is_metric_name(name), "not a metric name: {name:?}");
        for (label, _) in labels {
            assert!(
                is_label_name(label),
                "not a label name: {label:?} (in {name})"
            );
        }
        let value = match shape {
            Shape::Counter { per_second } => per_second,
            Shape::Gauge { value } => value,
        };
        assert!(
            value.is_finite(),
            "{name}: the value must be finite, not {value}"
        );
        Series {
            name: name.to_string(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            shape,
        }
    }

    /// The value at `t_ms` of a span starting at `from_ms`.
    fn value_at(&self, from_ms: u64, t_ms: u64) -> f64 {
        match self.shape {
            Shape::Counter { per_second } => {
                // Whole seconds and milliseconds separately, so integer rates and whole-second
                // steps give integer values, exact in f64.
                let elapsed_ms = t_ms - from_ms + 86_400_000;
                per_second * (elapsed_ms / 1000) as f64
                    + per_second * (elapsed_ms % 1000) as f64 / 1000.0
            }
            Shape::Gauge { value } => value,
        }
    }
}

fn is_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn is_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// node_exporter's `instance` label (the exporter's address) of the `index`-th node of
/// [`network_traffic`]: `10.0.0.<index+1>:9100`, deliberately not the node name.
pub fn exporter_instance(index: usize) -> String {
    format!("10.0.0.{}:9100", index + 1)
}

/// The standard fixture of issue 8 for `nodes` (name, eth0 receive bytes/second), in
/// node_exporter's conventions. For the node at `index`, with `instance` =
/// [`exporter_instance`]`(index)`:
///
/// - `node_network_receive_bytes_total{device="eth0", instance}` rising at its rate;
/// - `node_network_receive_bytes_total{device="lo", instance}` rising at
///   `3 * max - rate + 1000`: a different rate that must be ignored. It runs against the
///   eth0 order, and eth0 + lo is the same for every node, so a query that forgets the
///   device filter ranks all nodes equal;
/// - `node_uname_info{nodename, instance, sysname="Linux", ...}` = 1.
pub fn network_traffic(nodes: &[(&str, f64)]) -> Vec<Series> {
    let max = nodes.iter().map(|(_, rate)| *rate).fold(0.0, f64::max);
    let mut series = Vec::new();
    for (index, (node, rate)) in nodes.iter().enumerate() {
        let instance = exporter_instance(index);
        let instance = instance.as_str();
        series.push(Series::counter(
            "node_network_receive_bytes_total",
            &[("device", "eth0"), ("instance", instance)],
            *rate,
        ));
        series.push(Series::counter(
            "node_network_receive_bytes_total",
            &[("device", "lo"), ("instance", instance)],
            3.0 * max - rate + 1000.0,
        ));
        series.push(Series::gauge(
            "node_uname_info",
            &[
                ("domainname", "(none)"),
                ("instance", instance),
                ("machine", "x86_64"),
                ("nodename", node),
                ("release", "6.1.0-18-amd64"),
                ("sysname", "Linux"),
            ],
            1.0,
        ));
    }
    series
}

/// The OpenMetrics text of `series` over `span`: one family after another (in the order
/// of first appearance), each series' samples in time order, then `# EOF`.
pub fn openmetrics(series: &[Series], span: &Span) -> String {
    let mut families: Vec<&str> = Vec::new();
    for s in series {
        if !families.contains(&s.name.as_str()) {
            families.push(&s.name);
        }
    }
    let from = millis(span.from);
    let mut out = String::new();
    for family in families {
        let members: Vec<&Series> = series.iter().filter(|s| s.name == family).collect();
        // Metadata only; the TSDB does not keep it. A counter family is named without
        // `_total` in OpenMetrics.
        match members[0].shape {
            Shape::Counter { .. } => {
                let base = family.strip_suffix("_total").unwrap_or(family);
                out.push_str(&format!("# TYPE {base} counter\n"));
            }
            Shape::Gauge { .. } => out.push_str(&format!("# TYPE {family} gauge\n")),
        }
        for s in members {
            let labels = if s.labels.is_empty() {
                String::new()
            } else {
                let pairs = s
                    .labels
                    .iter()
                    .map(|(k, v)| format!("{k}=\"{}\"", escape_label_value(v)))
                    .collect::<Vec<_>>();
                format!("{{{}}}", pairs.join(","))
            };
            for t in span.timestamps() {
                let value = s.value_at(from, t);
                out.push_str(&format!(
                    "{}{labels} {value} {}.{:03}\n",
                    s.name,
                    t / 1000,
                    t % 1000
                ));
            }
        }
    }
    out.push_str("# EOF\n");
    out
}

fn escape_label_value(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Writes `series` over `span` as OpenMetrics to `file` and builds TSDB blocks from it in
/// `data_dir` with `promtool tsdb create-blocks-from openmetrics`. No series: an empty
/// data directory.
pub fn create_blocks(series: &[Series], span: &Span, file: &Path, data_dir: &Path) -> Result<()> {
    fs::create_dir_all(data_dir)
        .map_err(|e| Error(format!("creating {}: {e}", data_dir.display())))?;
    if series.is_empty() {
        return Ok(());
    }
    fs::write(file, openmetrics(series, span))
        .map_err(|e| Error(format!("writing {}: {e}", file.display())))?;
    let output = Command::new("promtool")
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(file)
        .arg(data_dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error(format!("running promtool: {e} ({NOT_INSTALLED}?)")))?;
    if !output.status.success() {
        return err(format!(
            "promtool tsdb create-blocks-from openmetrics {} {} failed ({}):\n{}{}",
            file.display(),
            data_dir.display(),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The server

/// A `prometheus` child process serving a TSDB built from [`Series`] (see the module
/// docs). Killed, and its directory removed, on drop.
pub struct Prometheus {
    dir: TempDir,
    port: u16,
    span: Span,
    child: Option<Child>,
    startup: Duration,
}

impl Prometheus {
    /// Builds the TSDB of `series` over [`Span::around_now`] and starts Prometheus on it.
    pub fn start(series: &[Series]) -> Result<Prometheus> {
        Prometheus::start_with(series, Span::around_now())
    }

    /// Builds the TSDB of `series` over `span` and starts Prometheus on it.
    pub fn start_with(series: &[Series], span: Span) -> Result<Prometheus> {
        let dir = TempDir::new("prometheus");
        let mut prometheus = Prometheus {
            dir,
            port: 0,
            span,
            child: None,
            startup: Duration::ZERO,
        };
        fs::write(
            prometheus.config_file(),
            "# berth test harness: no scrape targets, no rules.\nglobal:\n  evaluation_interval: 1h\nscrape_configs: []\n",
        )
        .map_err(|e| Error(format!("writing the configuration: {e}")))?;
        create_blocks(
            series,
            &span,
            &prometheus.dir.join("series.om"),
            &prometheus.data_dir(),
        )?;
        // A free port can be taken between probing and binding: then try another.
        let mut attempts = 0;
        loop {
            prometheus.port = free_port();
            attempts += 1;
            match prometheus.launch() {
                Ok(()) => return Ok(prometheus),
                Err(e) if attempts < 3 && e.0.contains("address already in use") => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn address(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The span the series cover.
    pub fn span(&self) -> Span {
        self.span
    }

    /// The directory with the configuration, the OpenMetrics file, `data/` and
    /// `prometheus.log`.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The TSDB directory (`--storage.tsdb.path`).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn config_file(&self) -> PathBuf {
        self.dir.join("prometheus.yml")
    }

    fn log_file(&self) -> PathBuf {
        self.dir.join("prometheus.log")
    }

    /// How long the last start or restart took from spawning until `/-/ready` answered.
    pub fn startup_time(&self) -> Duration {
        self.startup
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process is running (not stopped, not exited).
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// Kills Prometheus (SIGKILL) and waits for it. Idempotent.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts Prometheus again on the same port and data directory (stopping it first if
    /// it runs), and waits until it is ready.
    pub fn restart(&mut self) -> Result<()> {
        self.stop();
        self.launch()
    }

    /// Prometheus' stdout and stderr so far (all starts).
    pub fn log(&self) -> String {
        fs::read_to_string(self.log_file()).unwrap_or_default()
    }

    fn log_tail(&self) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    fn launch(&mut self) -> Result<()> {
        let mut log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_file())
            .map_err(|e| Error(format!("opening {}: {e}", self.log_file().display())))?;
        let _ = writeln!(
            log,
            "=== berth harness: starting on 127.0.0.1:{}",
            self.port
        );
        let log_err = log
            .try_clone()
            .map_err(|e| Error(format!("cloning the log file: {e}")))?;
        let started = Instant::now();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", self.config_file().display()))
            .arg(format!("--storage.tsdb.path={}", self.data_dir().display()))
            .arg(format!("--web.listen-address=127.0.0.1:{}", self.port))
            // Retention counts from the newest block, not the clock; long anyway.
            .arg("--storage.tsdb.retention.time=10y")
            // No compaction of the loaded blocks while a test runs.
            .arg("--storage.tsdb.max-block-duration=2h")
            .arg("--log.level=info")
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err))
            .spawn()
            .map_err(|e| Error(format!("starting prometheus: {e} ({NOT_INSTALLED}?)")))?;
        self.child = Some(child);
        let deadline = started + READY_TIMEOUT;
        let mut last;
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                self.child = None;
                return err(format!(
                    "prometheus on 127.0.0.1:{} exited ({status}) before it was ready; its log:\n{}",
                    self.port,
                    self.log_tail()
                ));
            }
            // A short timeout: whatever holds the port may accept and never answer.
            match http::get_within(loopback(self.port), "/-/ready", Duration::from_millis(500)) {
                Ok(response) if response.status == 200 => break,
                Ok(response) => {
                    last = format!("HTTP {}: {}", response.status, response.body.trim())
                }
                Err(e) => last = e,
            }
            if Instant::now() >= deadline {
                self.stop();
                return err(format!(
                    "prometheus on 127.0.0.1:{} was not ready within {READY_TIMEOUT:?} (last: {last}); its log:\n{}",
                    self.port,
                    self.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.startup = started.elapsed();
        Ok(())
    }

    // -----------------------------------------------------------------------------------
    // HTTP

    /// `GET path_and_query` (plain TCP): the status and the body.
    pub fn get(&self, path_and_query: &str) -> Result<(u16, String)> {
        http::get_within(loopback(self.port), path_and_query, HTTP_TIMEOUT)
            .map(|response| (response.status, response.body))
            .map_err(Error)
    }

    /// `/api/v1/query?query=promql` at the server's current time: the vector's samples.
    pub fn query(&self, promql: &str) -> Result<Vec<Sample>> {
        self.query_path(&format!("/api/v1/query?query={}", url_encode(promql)))
    }

    /// `/api/v1/query` at `time`.
    pub fn query_at(&self, promql: &str, time: SystemTime) -> Result<Vec<Sample>> {
        let t = millis(time);
        self.query_path(&format!(
            "/api/v1/query?query={}&time={}.{:03}",
            url_encode(promql),
            t / 1000,
            t % 1000
        ))
    }

    fn query_path(&self, path: &str) -> Result<Vec<Sample>> {
        let data = self.api(path)?;
        if data["resultType"] != "vector" {
            return err(format!("{path}: not a vector: {data}"));
        }
        let result = data["result"].as_array().cloned().unwrap_or_default();
        result
            .iter()
            .map(|sample| {
                Ok(Sample {
                    labels: metric_labels(sample),
                    value: parse_value(&sample["value"][1])?,
                })
            })
            .collect()
    }

    /// `/api/v1/query_range` from `start` to `end` every `step`: each series' labels and
    /// (unix seconds, value) points.
    pub fn query_range(
        &self,
        promql: &str,
        start: SystemTime,
        end: SystemTime,
        step: Duration,
    ) -> Result<Vec<RangeSeries>> {
        let (s, e) = (millis(start), millis(end));
        let data = self.api(&format!(
            "/api/v1/query_range?query={}&start={}.{:03}&end={}.{:03}&step={}",
            url_encode(promql),
            s / 1000,
            s % 1000,
            e / 1000,
            e % 1000,
            step.as_secs_f64()
        ))?;
        let result = data["result"].as_array().cloned().unwrap_or_default();
        result
            .iter()
            .map(|series| {
                let labels = metric_labels(series);
                let points = series["values"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .iter()
                    .map(|p| Ok((p[0].as_f64().unwrap_or(f64::NAN), parse_value(&p[1])?)))
                    .collect::<Result<Vec<_>>>()?;
                Ok((labels, points))
            })
            .collect()
    }

    /// A query's values keyed by the value of `label` (e.g. `nodename`); samples without
    /// it are an error, as are two with the same value.
    pub fn query_by(&self, promql: &str, label: &str) -> Result<BTreeMap<String, f64>> {
        let mut by = BTreeMap::new();
        for sample in self.query(promql)? {
            let Some(key) = sample.labels.get(label) else {
                return err(format!("{promql}: a sample without {label}: {sample:?}"));
            };
            if by.insert(key.clone(), sample.value).is_some() {
                return err(format!("{promql}: two samples with {label}={key}"));
            }
        }
        Ok(by)
    }

    /// The sum of Prometheus' own `prometheus_http_requests_total{handler}` (all codes),
    /// e.g. `handler = "/api/v1/query"`: the requests it has answered since it started.
    pub fn requests(&self, handler: &str) -> Result<u64> {
        let (status, body) = self.get("/metrics")?;
        if status != 200 {
            return err(format!("/metrics: HTTP {status}"));
        }
        let wanted = format!("handler=\"{handler}\"");
        let mut total = 0.0;
        for line in body.lines() {
            let Some(rest) = line.strip_prefix("prometheus_http_requests_total{") else {
                continue;
            };
            let Some((labels, value)) = rest.split_once("} ") else {
                continue;
            };
            if labels.split(',').any(|l| l == wanted) {
                total += value
                    .trim()
                    .parse::<f64>()
                    .map_err(|e| Error(format!("/metrics: {line}: {e}")))?;
            }
        }
        Ok(total as u64)
    }

    fn api(&self, path: &str) -> Result<serde_json::Value> {
        let (status, body) = self.get(path)?;
        let json: serde_json::Value = serde_json::from_str(&body)
            .map_err(|e| Error(format!("{path}: HTTP {status}, not JSON ({e}): {body}")))?;
        if status != 200 || json["status"] != "success" {
            return err(format!("{path}: HTTP {status}: {body}"));
        }
        Ok(json["data"].clone())
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        self.stop();
        if std::thread::panicking() {
            eprintln!(
                "---- prometheus on 127.0.0.1:{} ({}), last lines of its log:\n{}\n----",
                self.port,
                self.dir.path().display(),
                self.log_tail()
            );
        }
    }
}

/// One series of a range query: its labels and its (unix seconds, value) points.
pub type RangeSeries = (BTreeMap<String, String>, Vec<(f64, f64)>);

/// One sample of an instant vector.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

fn parse_value(value: &serde_json::Value) -> Result<f64> {
    let text = value
        .as_str()
        .ok_or_else(|| Error(format!("not a sample value: {value}")))?;
    match text {
        "NaN" => Ok(f64::NAN),
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        _ => text
            .parse()
            .map_err(|e| Error(format!("sample value {text:?}: {e}"))),
    }
}

/// The `metric` labels of one sample or series of a query result.
fn metric_labels(result: &serde_json::Value) -> BTreeMap<String, String> {
    result["metric"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub fn url_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}
