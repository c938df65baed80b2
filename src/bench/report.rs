//! What a run measured, summarised as scheduler_perf summarises it, and printed as a
//! table or JSON.
//!
//! SchedulingThroughput follows upstream's `throughputCollector`: pods scheduled per
//! one-second window, averaged and taken at nearest-rank percentiles (`ceil(n*p/100)`-th
//! smallest sample). In memory a window is cut from the times pods were scheduled
//! afterwards rather than by a ticker; the last, shorter window counts at its own length, so that a run of under
//! a second still has one sample. Attempt durations are the wall time of each scheduling
//! cycle of a measured pod, exact rather than from histogram buckets.

use std::time::Duration;

use serde::Serialize;

use super::check::Check;
use crate::simulate::render::align;

/// The results of one `berth bench` invocation.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BenchReport {
    /// Whether every workload's check passed.
    pub passed: bool,
    pub workloads: Vec<WorkloadReport>,
}

/// One workload's run.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadReport {
    pub workload: String,
    /// Upstream's size name, with `(custom)` appended when `--nodes` or `--pods` changed it.
    pub size: String,
    pub nodes: u64,
    pub init_pods: u64,
    /// Claims allocated without a pod before the measurement (the DRA workloads).
    pub init_claims: u64,
    /// Workload API PodGroups created before the measured pods (the `podgroup/`
    /// workloads).
    pub pod_groups: u64,
    /// Gated pods, or pods with a finalizer, created besides the init and measured pods
    /// (SchedulingWhileGated, SchedulingDeletedPodsWithFinalizers).
    pub side_pods: u64,
    /// Measured pods; in a steady-state run, the pods bound within the window.
    pub measure_pods: u64,
    /// What the workload's churn or deletePods op did while the measured pods were
    /// scheduled; `None` for a workload without one.
    pub background: Option<BackgroundOps>,
    /// `None` unless the run is a steady-state one.
    pub steady_state: Option<SteadyState>,
    pub scheduler_name: String,
    /// Whether the profile batches: `spec.opportunisticBatching` on and every plugin
    /// able to sign pods (docs/performance.md, "Opportunistic batching").
    pub opportunistic_batching: bool,
    /// Pods of the run (init pods included) placed on a batch's hint, without
    /// filtering and scoring the cluster.
    pub batched_pods: u64,
    pub parallelism: usize,
    pub seed: u64,
    /// Seconds from adding the first measured pod to binding the last; in a
    /// steady-state run, the window (less if the run stalled).
    pub duration_seconds: f64,
    /// Seconds spent allocating the init claims and scheduling the init pods (not
    /// measured).
    pub init_duration_seconds: f64,
    pub scheduling_throughput: Throughput,
    pub attempt_duration_seconds: Percentiles,
    /// The process's peak resident set (VmHWM) during this workload, or `None` where the
    /// platform does not report it.
    pub peak_rss_bytes: Option<u64>,
    /// `None` where upstream sets no threshold.
    pub upstream_threshold: Option<UpstreamThreshold>,
    pub check: Check,
}

/// How a steady-state run went.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SteadyState {
    /// The window pods kept coming for.
    pub seconds: f64,
    /// Pods kept pending (upstream's `measurePods` of these workloads).
    pub pending_pods: u64,
    /// Pods created in all, the bound ones and those still pending at the end.
    pub created_pods: u64,
}

/// The objects a background op created and deleted within the measured window.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackgroundOps {
    /// Upstream's opcode: `churn` or `deletePods`.
    pub op: String,
    pub created: u64,
    pub deleted: u64,
    /// Pods deleted while they were still pending (never scheduled afterwards).
    pub deleted_pending: u64,
}

/// Upstream's CI threshold for the workload, at the size upstream sets it for.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpstreamThreshold {
    pub size: String,
    pub pods_per_second: f64,
}

/// scheduler_perf's SchedulingThroughput, pods/s.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Throughput {
    pub average: f64,
    pub perc50: f64,
    pub perc90: f64,
    pub perc95: f64,
    pub perc99: f64,
    /// Measured pods scheduled divided by the whole duration.
    pub overall: f64,
    /// How many one-second samples the percentiles are taken from.
    pub samples: usize,
}

/// Percentiles of a duration, in seconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Percentiles {
    pub perc50: f64,
    pub perc90: f64,
    pub perc95: f64,
    pub perc99: f64,
    pub max: f64,
}

/// The nearest-rank percentile `p` of sorted `values` (upstream's
/// `values[ceil(len*p/100)-1]`); 0 for no values.
fn nearest_rank(sorted: &[f64], p: usize) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (sorted.len() * p).div_ceil(100).max(1);
    sorted[rank - 1]
}

/// Throughput from the times (since the measurement started) at which measured pods were
/// scheduled, over a measurement that lasted `total`.
pub fn throughput(scheduled_at: &[Duration], total: Duration) -> Throughput {
    let window = Duration::from_secs(1);
    let mut windows = total.as_nanos().div_ceil(window.as_nanos()).max(1) as usize;
    // A bind exactly at the end of the last window belongs to it, never to one past it.
    let mut counts = vec![0u64; windows];
    for at in scheduled_at {
        let index = (at.as_nanos() / window.as_nanos()) as usize;
        counts[index.min(windows - 1)] += 1;
    }
    let mut samples: Vec<f64> = counts
        .iter()
        .enumerate()
        .map(|(i, count)| {
            let start = window * i as u32;
            let length = total.saturating_sub(start).min(window).as_secs_f64();
            if length > 0.0 {
                *count as f64 / length
            } else {
                0.0
            }
        })
        .collect();
    if total.is_zero() {
        samples = vec![0.0];
        windows = 1;
    }
    samples.sort_by(f64::total_cmp);
    let seconds = total.as_secs_f64();
    Throughput {
        average: samples.iter().sum::<f64>() / windows as f64,
        perc50: nearest_rank(&samples, 50),
        perc90: nearest_rank(&samples, 90),
        perc95: nearest_rank(&samples, 95),
        perc99: nearest_rank(&samples, 99),
        overall: if seconds > 0.0 {
            scheduled_at.len() as f64 / seconds
        } else {
            0.0
        },
        samples: windows,
    }
}

/// Percentiles of `durations`.
pub fn percentiles(durations: &[Duration]) -> Percentiles {
    let mut seconds: Vec<f64> = durations.iter().map(Duration::as_secs_f64).collect();
    seconds.sort_by(f64::total_cmp);
    Percentiles {
        perc50: nearest_rank(&seconds, 50),
        perc90: nearest_rank(&seconds, 90),
        perc95: nearest_rank(&seconds, 95),
        perc99: nearest_rank(&seconds, 99),
        max: seconds.last().copied().unwrap_or(0.0),
    }
}

/// The report as aligned columns: one row per workload, then one line per check failure.
pub fn render_table(report: &BenchReport) -> String {
    let header = [
        "WORKLOAD",
        "SIZE",
        "NODES",
        "PODS",
        "PODS/S AVG",
        "P50",
        "P90",
        "P95",
        "P99",
        "ATTEMPT P50",
        "ATTEMPT P99",
        "PEAK RSS",
        "BATCHED",
        "UPSTREAM THRESHOLD",
        "CHECK",
    ]
    .map(String::from);
    let rows = report.workloads.iter().map(|w| {
        let t = &w.scheduling_throughput;
        let a = &w.attempt_duration_seconds;
        [
            w.workload.clone(),
            w.size.clone(),
            w.nodes.to_string(),
            pods_column(w),
            format!("{:.1}", t.average),
            format!("{:.1}", t.perc50),
            format!("{:.1}", t.perc90),
            format!("{:.1}", t.perc95),
            format!("{:.1}", t.perc99),
            milliseconds(a.perc50),
            milliseconds(a.perc99),
            w.peak_rss_bytes
                .map_or_else(|| "unavailable".to_string(), mebibytes),
            if w.opportunistic_batching {
                w.batched_pods.to_string()
            } else {
                "off".to_string()
            },
            w.upstream_threshold.as_ref().map_or_else(
                || "none".to_string(),
                |t| format!("{} pods/s at {}", t.pods_per_second, t.size),
            ),
            if w.check.passed { "passed" } else { "FAILED" }.to_string(),
        ]
    });
    let mut out = align(std::iter::once(header).chain(rows), "");
    for w in &report.workloads {
        for failure in &w.check.failures {
            out.push_str(&format!("{} {}: {failure}\n", w.workload, w.size));
        }
    }
    out
}

/// Init and measured pods, `init+measured`, with the init claims or the pod groups in
/// place of the init pods where the run has them (`2500 claims+2500`, `3 groups+9`), and
/// the side pods after them (`20000+20000 (+10000 side)`).
fn pods_column(w: &WorkloadReport) -> String {
    let pods = match (w.init_claims, w.pod_groups) {
        (0, 0) => format!("{}+{}", w.init_pods, w.measure_pods),
        (0, groups) => format!("{groups} groups+{}", w.measure_pods),
        (claims, _) => format!("{claims} claims+{}", w.measure_pods),
    };
    match w.side_pods {
        0 => pods,
        side => format!("{pods} (+{side} side)"),
    }
}

/// Rows as aligned columns, for reports of other drivers of the same workloads (the
/// benchmark of the live path through the API prints its own columns).
pub fn render_columns<const N: usize>(rows: impl Iterator<Item = [String; N]>) -> String {
    align(rows, "")
}

/// Seconds as milliseconds with two decimals, as the table shows durations.
pub fn milliseconds(seconds: f64) -> String {
    format!("{:.2}ms", seconds * 1000.0)
}

/// Bytes in MiB, as the table shows memory.
pub fn mebibytes(bytes: u64) -> String {
    format!("{:.0}MiB", bytes as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn throughput_is_sampled_per_second() {
        struct Case {
            name: &'static str,
            scheduled_at: Vec<Duration>,
            total: Duration,
            samples: usize,
            average: f64,
            perc50: f64,
            perc99: f64,
        }
        let cases = [
            Case {
                name: "steady 10 pods/s over 3 s",
                scheduled_at: (0..30).map(|i| ms(i * 100)).collect(),
                total: ms(3000),
                samples: 3,
                average: 10.0,
                perc50: 10.0,
                perc99: 10.0,
            },
            Case {
                // Windows of 4, 0 and 2 pods: sorted 0, 4, 4 (the last half-second
                // window holds 2 pods, 4 pods/s).
                name: "uneven with a short last window",
                scheduled_at: vec![ms(10), ms(20), ms(30), ms(40), ms(2100), ms(2400)],
                total: ms(2500),
                samples: 3,
                average: 8.0 / 3.0,
                perc50: 4.0,
                perc99: 4.0,
            },
            Case {
                name: "under a second is one sample",
                scheduled_at: vec![ms(100), ms(200)],
                total: ms(500),
                samples: 1,
                average: 4.0,
                perc50: 4.0,
                perc99: 4.0,
            },
            Case {
                name: "nothing measured",
                scheduled_at: vec![],
                total: Duration::ZERO,
                samples: 1,
                average: 0.0,
                perc50: 0.0,
                perc99: 0.0,
            },
        ];
        for case in cases {
            let got = throughput(&case.scheduled_at, case.total);
            assert_eq!(got.samples, case.samples, "{}", case.name);
            assert!(
                (got.average - case.average).abs() < 1e-9,
                "{}: {got:?}",
                case.name
            );
            assert!(
                (got.perc50 - case.perc50).abs() < 1e-9,
                "{}: {got:?}",
                case.name
            );
            assert!(
                (got.perc99 - case.perc99).abs() < 1e-9,
                "{}: {got:?}",
                case.name
            );
        }
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        // 1..=100 ms: the p-th percentile is p ms.
        let durations: Vec<Duration> = (1..=100).rev().map(ms).collect();
        let got = percentiles(&durations);
        assert_eq!(
            (got.perc50, got.perc90, got.perc95, got.perc99, got.max),
            (0.05, 0.09, 0.095, 0.099, 0.1)
        );
        // Of four values the 50th percentile is the 2nd, the 90th the 4th.
        let got = percentiles(&[ms(4), ms(1), ms(3), ms(2)]);
        assert_eq!((got.perc50, got.perc90), (0.002, 0.004));
    }
}
