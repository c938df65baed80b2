//! The operator's metrics as Prometheus scrapes them, and log setup (the HTTP endpoints
//! that serve them: tests/metrics_server.rs).
//!
//! Expected series are written out from upstream kube-scheduler's
//! `pkg/scheduler/metrics/metrics.go` (names, labels, help texts, buckets) and from the
//! berth_* metrics' specification, not computed by the code under test.

use std::sync::Arc;
use std::time::Duration;

use berth::framework::{Code, ExtensionPoint, Observer};
use berth::observability::logging::{self, LogFormat};
use berth::observability::{AttemptResult, Metrics};
use pretty_assertions::assert_eq;

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

/// The value of the one sample line for `series` (name and labels exactly as exported).
fn sample<'t>(text: &'t str, series: &str) -> Option<&'t str> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
}

#[track_caller]
fn assert_sample(text: &str, series: &str, expected: &str) {
    assert_eq!(sample(text, series), Some(expected), "{series} in\n{text}");
}

#[track_caller]
fn assert_no_series_with(text: &str, fragment: &str) {
    let found: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains(fragment))
        .collect();
    assert!(found.is_empty(), "unexpected series: {found:#?}");
}

/// The `le` bounds of `histogram`'s buckets whose other labels are `labels`, in order.
fn bucket_bounds(text: &str, histogram: &str, labels: &str) -> Vec<String> {
    let prefix = format!("{histogram}_bucket{{le=\"");
    let suffix = format!(",{labels}}} ");
    text.lines()
        .filter_map(|line| {
            let (bound, rest) = line.strip_prefix(&prefix)?.split_once('"')?;
            rest.starts_with(&suffix).then(|| bound.to_string())
        })
        .collect()
}

/// `bounds` plus the implicit `+Inf` bucket.
fn with_inf(bounds: &[&str]) -> Vec<String> {
    bounds
        .iter()
        .chain(&["+Inf"])
        .map(|b| b.to_string())
        .collect()
}

#[test]
fn schedule_attempts_count_and_time_each_result_per_profile() {
    let metrics = Metrics::new();
    metrics.schedule_attempt("batch", AttemptResult::Scheduled, ms(3));
    metrics.schedule_attempt("batch", AttemptResult::Scheduled, ms(20));
    metrics.schedule_attempt("batch", AttemptResult::Unschedulable, ms(1));
    metrics.schedule_attempt("web", AttemptResult::Error, ms(2));
    let text = metrics.encode();

    let cases = [
        (r#"result="scheduled",profile="batch""#, "2"),
        (r#"result="unschedulable",profile="batch""#, "1"),
        (r#"result="error",profile="web""#, "1"),
    ];
    for (labels, count) in cases {
        assert_sample(
            &text,
            &format!("scheduler_schedule_attempts_total{{{labels}}}"),
            count,
        );
        assert_sample(
            &text,
            &format!("scheduler_scheduling_attempt_duration_seconds_count{{{labels}}}"),
            count,
        );
    }
    assert_no_series_with(&text, r#"result="error",profile="batch""#);
    assert_sample(
        &text,
        r#"scheduler_scheduling_attempt_duration_seconds_sum{result="scheduled",profile="batch"}"#,
        "0.023",
    );
    // Cumulative buckets: 3ms is above 2ms and within 4ms; 20ms within 32ms.
    let bucket = |le: &str| {
        format!(
            r#"scheduler_scheduling_attempt_duration_seconds_bucket{{le="{le}",result="scheduled",profile="batch"}}"#
        )
    };
    assert_sample(&text, &bucket("0.002"), "0");
    assert_sample(&text, &bucket("0.004"), "1");
    assert_sample(&text, &bucket("0.016"), "1");
    assert_sample(&text, &bucket("0.032"), "2");
    assert_sample(&text, &bucket("+Inf"), "2");
}

#[test]
fn histograms_use_upstream_buckets() {
    let metrics = Metrics::new();
    metrics.schedule_attempt("p", AttemptResult::Scheduled, ms(1));
    metrics.pod_scheduling_sli("p", 1, ms(1));
    metrics.extension_point("p", ExtensionPoint::Filter, Code::Success, ms(1));
    metrics.binding("p", true, ms(1));
    let text = metrics.encode();

    let cases = [
        (
            "scheduler_scheduling_attempt_duration_seconds",
            r#"result="scheduled",profile="p""#,
            // ExponentialBuckets(0.001, 2, 15)
            with_inf(&[
                "0.001", "0.002", "0.004", "0.008", "0.016", "0.032", "0.064", "0.128", "0.256",
                "0.512", "1.024", "2.048", "4.096", "8.192", "16.384",
            ]),
        ),
        (
            "scheduler_pod_scheduling_sli_duration_seconds",
            r#"attempts="1",profile="p""#,
            // ExponentialBuckets(0.01, 2, 20)
            with_inf(&[
                "0.01", "0.02", "0.04", "0.08", "0.16", "0.32", "0.64", "1.28", "2.56", "5.12",
                "10.24", "20.48", "40.96", "81.92", "163.84", "327.68", "655.36", "1310.72",
                "2621.44", "5242.88",
            ]),
        ),
        (
            "scheduler_framework_extension_point_duration_seconds",
            r#"extension_point="Filter",status="Success",profile="p""#,
            // ExponentialBuckets(0.0001, 2, 12)
            with_inf(&[
                "0.0001", "0.0002", "0.0004", "0.0008", "0.0016", "0.0032", "0.0064", "0.0128",
                "0.0256", "0.0512", "0.1024", "0.2048",
            ]),
        ),
        (
            "berth_binding_duration_seconds",
            r#"profile="p",result="success""#,
            with_inf(&[
                "0.001", "0.002", "0.004", "0.008", "0.016", "0.032", "0.064", "0.128", "0.256",
                "0.512", "1.024", "2.048", "4.096", "8.192", "16.384",
            ]),
        ),
    ];
    for (histogram, labels, expected) in cases {
        assert_eq!(
            bucket_bounds(&text, histogram, labels),
            expected,
            "{histogram}"
        );
    }
}

#[test]
fn metadata_lines_carry_upstream_names_types_and_help() {
    let metrics = Metrics::new();
    // Families without series are not exported at all, as with upstream's client.
    assert_eq!(
        metrics.encode().matches("# TYPE").count(),
        6,
        "only the unlabelled ones"
    );
    metrics.schedule_attempt("p", AttemptResult::Scheduled, ms(1));
    metrics.set_pending_pods("p", "active", 1);
    metrics.pod_scheduling_sli("p", 1, ms(1));
    metrics.extension_point("p", ExtensionPoint::Filter, Code::Success, ms(1));
    metrics.binding("p", true, ms(1));
    metrics.reconcile(true, ms(1));
    metrics.set_profile_condition("p", "Ready", "True");
    metrics.pod_group_attempt("p", AttemptResult::Scheduled, ms(2), ms(1));
    metrics.workload_preemption(Code::Success, Some((2, 1)));
    let text = metrics.encode();
    let expected = [
        "# HELP scheduler_schedule_attempts Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem.",
        "# TYPE scheduler_schedule_attempts counter",
        // Upstream has no final period here; prometheus-client adds one to every help text.
        "# HELP scheduler_scheduling_attempt_duration_seconds Scheduling attempt latency in seconds (scheduling algorithm + binding).",
        "# TYPE scheduler_scheduling_attempt_duration_seconds histogram",
        // kube-scheduler 1.37's text (pkg/scheduler/metrics/metrics.go).
        "# HELP scheduler_pending_pods Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulableEntities that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never attempted to schedule because they are gated; 'incomplete' means number of pods in incompletePodGroupPods; 'pending' means number of pods in pendingPodGroupPods.",
        "# TYPE scheduler_pending_pods gauge",
        "# HELP scheduler_pod_scheduling_sli_duration_seconds E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and might involve multiple scheduling attempts.",
        "# TYPE scheduler_pod_scheduling_sli_duration_seconds histogram",
        "# HELP scheduler_framework_extension_point_duration_seconds Latency for running all plugins of a specific extension point.",
        "# TYPE scheduler_framework_extension_point_duration_seconds histogram",
        "# HELP scheduler_preemption_attempts Total preemption attempts in the cluster till now.",
        "# TYPE scheduler_preemption_attempts counter",
        "# HELP scheduler_preemption_victims Number of selected preemption victims.",
        "# TYPE scheduler_preemption_victims histogram",
        "# HELP scheduler_podgroup_schedule_attempts Number of attempts to schedule pod group, by the result. 'unschedulable' means a pod group could not be scheduled, while 'error' means an internal scheduler problem.",
        "# TYPE scheduler_podgroup_schedule_attempts counter",
        "# HELP scheduler_podgroup_scheduling_attempt_duration_seconds Pod group scheduling attempt latency in seconds.",
        "# TYPE scheduler_podgroup_scheduling_attempt_duration_seconds histogram",
        "# HELP scheduler_podgroup_scheduling_algorithm_duration_seconds Pod group scheduling algorithm latency in seconds.",
        "# TYPE scheduler_podgroup_scheduling_algorithm_duration_seconds histogram",
        "# HELP scheduler_workload_preemption_attempts Total preemption attempts initiated by workload (including pod groups) in the cluster till now.",
        "# TYPE scheduler_workload_preemption_attempts counter",
        "# HELP scheduler_workload_preemption_victims Number of pod preemption victims caused by workload preemption.",
        "# TYPE scheduler_workload_preemption_victims histogram",
        "# HELP scheduler_preemption_workload_disruptions Number of workload preemption units being preempted. A single preemption unit can be all pods in a pod group (in case of DisruptionMode=all), or a single pod (in case of DisruptionMode=single).",
        "# TYPE scheduler_preemption_workload_disruptions histogram",
        "# TYPE berth_binding_duration_seconds histogram",
        "# TYPE berth_profile_reconcile counter",
        "# TYPE berth_profile_reconcile_duration_seconds histogram",
        "# TYPE berth_profile_condition gauge",
        "# TYPE berth_leader gauge",
    ];
    for line in expected {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in\n{text}"
        );
    }
    assert!(text.ends_with("# EOF\n"), "OpenMetrics text ends in # EOF");
}

/// upstream counts a preemption attempt each time PostFilter runs, and observes the
/// number of victims of each preemption in buckets 1, 2, 4, ..., 64.
#[test]
fn preemption_attempts_and_victims() {
    let metrics = Metrics::new();
    metrics.extension_point("p", ExtensionPoint::PostFilter, Code::Success, ms(1));
    metrics.extension_point("p", ExtensionPoint::PostFilter, Code::Unschedulable, ms(1));
    metrics.extension_point("p", ExtensionPoint::Filter, Code::Unschedulable, ms(1));
    metrics.preemption_victims(3);
    let text = metrics.encode();
    assert_sample(&text, "scheduler_preemption_attempts_total", "2");
    assert_sample(&text, "scheduler_preemption_victims_count", "1");
    assert_sample(&text, "scheduler_preemption_victims_sum", "3.0");
    let bounds: Vec<String> = text
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("scheduler_preemption_victims_bucket{le=\"")?;
            Some(rest.split_once('"')?.0.to_string())
        })
        .collect();
    assert_eq!(
        bounds,
        with_inf(&["1.0", "2.0", "4.0", "8.0", "16.0", "32.0", "64.0"])
    );
}

#[test]
fn pending_pods_per_queue_and_profile() {
    let metrics = Metrics::new();
    metrics.set_pending_pods("batch", "active", 3);
    metrics.set_pending_pods("batch", "backoff", 1);
    metrics.set_pending_pods("batch", "unschedulable", 7);
    metrics.set_pending_pods("batch", "gated", 2);
    metrics.set_pending_pods("batch", "incomplete", 4);
    metrics.set_pending_pods("batch", "active", 0);
    metrics.set_pending_pods("web", "active", 5);
    metrics.set_pending_pods("web", "sideways", 9);
    let text = metrics.encode();

    let cases = [
        (r#"queue="active",profile="batch""#, "0"),
        (r#"queue="backoff",profile="batch""#, "1"),
        (r#"queue="unschedulable",profile="batch""#, "7"),
        (r#"queue="gated",profile="batch""#, "2"),
        (r#"queue="incomplete",profile="batch""#, "4"),
        (r#"queue="active",profile="web""#, "5"),
    ];
    for (labels, value) in cases {
        assert_sample(&text, &format!("scheduler_pending_pods{{{labels}}}"), value);
    }
    assert_no_series_with(&text, "sideways");
}

/// Upstream's pod-group attempt metrics: a counter and a latency histogram by result and
/// profile (1 ms .. ~16 s buckets), and the algorithm's latency without labels.
#[test]
fn pod_group_attempts_by_result_and_the_algorithms_latency() {
    let metrics = Metrics::new();
    metrics.pod_group_attempt("batch", AttemptResult::Scheduled, ms(30), ms(10));
    metrics.pod_group_attempt("batch", AttemptResult::Unschedulable, ms(20), ms(5));
    metrics.pod_group_attempt("batch", AttemptResult::Unschedulable, ms(20), ms(5));
    let text = metrics.encode();
    assert_sample(
        &text,
        r#"scheduler_podgroup_schedule_attempts_total{result="scheduled",profile="batch"}"#,
        "1",
    );
    assert_sample(
        &text,
        r#"scheduler_podgroup_schedule_attempts_total{result="unschedulable",profile="batch"}"#,
        "2",
    );
    assert_sample(
        &text,
        r#"scheduler_podgroup_scheduling_attempt_duration_seconds_count{result="unschedulable",profile="batch"}"#,
        "2",
    );
    assert_sample(
        &text,
        "scheduler_podgroup_scheduling_algorithm_duration_seconds_count",
        "3",
    );
    assert_sample(
        &text,
        "scheduler_podgroup_scheduling_algorithm_duration_seconds_sum",
        "0.02",
    );
    metrics.remove_profile("batch");
    assert_no_series_with(&metrics.encode(), "profile=\"batch\"");
}

/// Upstream's workload-preemption metrics: every PodGroupPostFilter run of
/// DefaultPreemption counted by its status code; a decided preemption's victims in
/// buckets 1 .. 1024, and the pod groups' units among them, labelled by the preemptor's
/// type, only when there are any.
#[test]
fn workload_preemption_attempts_victims_and_disruptions() {
    let metrics = Metrics::new();
    metrics.workload_preemption(Code::Success, Some((5, 2)));
    metrics.workload_preemption(Code::Success, None);
    metrics.workload_preemption(Code::Success, Some((1, 0)));
    metrics.workload_preemption(Code::UnschedulableAndUnresolvable, None);
    metrics.workload_preemption(Code::Unschedulable, None);
    let text = metrics.encode();
    let cases = [
        (
            r#"scheduler_workload_preemption_attempts_total{result="Success"}"#,
            "3",
        ),
        (
            r#"scheduler_workload_preemption_attempts_total{result="UnschedulableAndUnresolvable"}"#,
            "1",
        ),
        (
            r#"scheduler_workload_preemption_attempts_total{result="Unschedulable"}"#,
            "1",
        ),
        ("scheduler_workload_preemption_victims_count", "2"),
        ("scheduler_workload_preemption_victims_sum", "6.0"),
        (
            r#"scheduler_preemption_workload_disruptions_count{preemptor="podgroup"}"#,
            "1",
        ),
        (
            r#"scheduler_preemption_workload_disruptions_sum{preemptor="podgroup"}"#,
            "2.0",
        ),
        // A pod group's victims are not a lone pod's.
        ("scheduler_preemption_victims_count", "0"),
    ];
    for (series, value) in cases {
        assert_sample(&text, series, value);
    }
    let bounds: Vec<String> = text
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("scheduler_workload_preemption_victims_bucket{le=\"")?;
            Some(rest.split_once('"')?.0.to_string())
        })
        .collect();
    assert_eq!(
        bounds,
        with_inf(&[
            "1.0", "2.0", "4.0", "8.0", "16.0", "32.0", "64.0", "128.0", "256.0", "512.0", "1024.0"
        ])
    );
}

#[test]
fn sli_attempts_label_is_capped_at_15_plus() {
    let metrics = Metrics::new();
    for attempts in [1, 1, 14, 15, 40] {
        metrics.pod_scheduling_sli("batch", attempts, ms(50));
    }
    let text = metrics.encode();

    let expected = [("1", "2"), ("14", "1"), ("15+", "2")];
    for (label, count) in expected {
        assert_sample(
            &text,
            &format!(
                r#"scheduler_pod_scheduling_sli_duration_seconds_count{{attempts="{label}",profile="batch"}}"#
            ),
            count,
        );
    }
    assert_no_series_with(&text, r#"attempts="15""#);
    assert_no_series_with(&text, r#"attempts="40""#);
}

#[test]
fn observer_records_extension_points_by_status_and_profile() {
    let metrics = Metrics::new();
    let observer: Arc<dyn Observer> = metrics.clone();
    // Filter once per node: three nodes, one rejects.
    observer.extension_point("batch", ExtensionPoint::Filter, Code::Success, ms(1));
    observer.extension_point("batch", ExtensionPoint::Filter, Code::Success, ms(1));
    observer.extension_point("batch", ExtensionPoint::Filter, Code::Unschedulable, ms(1));
    observer.extension_point("batch", ExtensionPoint::PreFilter, Code::Skip, ms(1));
    observer.extension_point(
        "web",
        ExtensionPoint::Permit,
        Code::UnschedulableAndUnresolvable,
        ms(1),
    );
    let text = metrics.encode();

    let cases = [
        (
            r#"extension_point="Filter",status="Success",profile="batch""#,
            "2",
        ),
        (
            r#"extension_point="Filter",status="Unschedulable",profile="batch""#,
            "1",
        ),
        (
            r#"extension_point="PreFilter",status="Skip",profile="batch""#,
            "1",
        ),
        (
            r#"extension_point="Permit",status="UnschedulableAndUnresolvable",profile="web""#,
            "1",
        ),
    ];
    for (labels, count) in cases {
        assert_sample(
            &text,
            &format!("scheduler_framework_extension_point_duration_seconds_count{{{labels}}}"),
            count,
        );
    }
}

#[test]
fn binding_reconcile_and_leader() {
    let metrics = Metrics::new();
    metrics.binding("batch", true, ms(5));
    metrics.binding("batch", true, ms(5));
    metrics.binding("batch", false, ms(5));
    metrics.reconcile(true, ms(20));
    metrics.reconcile(true, ms(20));
    metrics.reconcile(false, ms(20));
    let text = metrics.encode();

    assert_sample(
        &text,
        r#"berth_binding_duration_seconds_count{profile="batch",result="success"}"#,
        "2",
    );
    assert_sample(
        &text,
        r#"berth_binding_duration_seconds_count{profile="batch",result="error"}"#,
        "1",
    );
    assert_sample(
        &text,
        r#"berth_profile_reconcile_total{result="success"}"#,
        "2",
    );
    assert_sample(
        &text,
        r#"berth_profile_reconcile_total{result="error"}"#,
        "1",
    );
    assert_sample(&text, "berth_profile_reconcile_duration_seconds_count", "3");
    assert_sample(&text, "berth_leader", "0");

    metrics.set_leader(true);
    assert_sample(&metrics.encode(), "berth_leader", "1");
    metrics.set_leader(false);
    assert_sample(&metrics.encode(), "berth_leader", "0");
}

#[test]
fn profile_condition_is_one_for_the_current_status_only() {
    let metrics = Metrics::new();
    let series = |condition: &str, status: &str| {
        format!(
            r#"berth_profile_condition{{profile="batch",type="{condition}",status="{status}"}}"#
        )
    };
    // (condition, status set, expected True/False/Unknown)
    let steps = [
        ("Accepted", "True", ["1", "0", "0"]),
        ("Ready", "Unknown", ["0", "0", "1"]),
        ("Accepted", "False", ["0", "1", "0"]),
        ("Ready", "True", ["1", "0", "0"]),
        ("Ready", "maybe", ["0", "0", "1"]),
    ];
    for (condition, status, expected) in steps {
        metrics.set_profile_condition("batch", condition, status);
        let text = metrics.encode();
        for (status, value) in ["True", "False", "Unknown"].into_iter().zip(expected) {
            assert_sample(&text, &series(condition, status), value);
        }
    }
    let text = metrics.encode();
    assert_sample(&text, &series("Accepted", "False"), "1");
    assert_no_series_with(&text, "maybe");
}

#[test]
fn remove_profile_forgets_its_series_only() {
    let metrics = Metrics::new();
    for profile in ["gone", "kept"] {
        metrics.schedule_attempt(profile, AttemptResult::Scheduled, ms(1));
        metrics.schedule_attempt(profile, AttemptResult::Unschedulable, ms(1));
        metrics.set_pending_pods(profile, "active", 1);
        metrics.set_pending_pods(profile, "gated", 1);
        metrics.pod_scheduling_sli(profile, 3, ms(1));
        metrics.pod_scheduling_sli(profile, 30, ms(1));
        metrics.extension_point(profile, ExtensionPoint::Filter, Code::Success, ms(1));
        metrics.extension_point(profile, ExtensionPoint::Bind, Code::Error, ms(1));
        metrics.binding(profile, false, ms(1));
        metrics.set_profile_condition(profile, "Accepted", "True");
        metrics.set_profile_condition(profile, "Ready", "False");
    }
    metrics.reconcile(true, ms(1));
    metrics.set_leader(true);

    metrics.remove_profile("gone");
    let text = metrics.encode();

    assert_no_series_with(&text, r#"profile="gone""#);
    let kept = [
        r#"scheduler_schedule_attempts_total{result="unschedulable",profile="kept"}"#,
        r#"scheduler_pending_pods{queue="gated",profile="kept"}"#,
        r#"scheduler_pod_scheduling_sli_duration_seconds_count{attempts="15+",profile="kept"}"#,
        r#"scheduler_framework_extension_point_duration_seconds_count{extension_point="Bind",status="Error",profile="kept"}"#,
        r#"berth_binding_duration_seconds_count{profile="kept",result="error"}"#,
        r#"berth_profile_condition{profile="kept",type="Ready",status="False"}"#,
        r#"berth_profile_reconcile_total{result="success"}"#,
        "berth_leader",
    ];
    for series in kept {
        assert_sample(&text, series, "1");
    }

    // A profile of the same name that comes back starts from zero.
    metrics.extension_point("gone", ExtensionPoint::Filter, Code::Success, ms(1));
    assert_sample(
        &metrics.encode(),
        r#"scheduler_framework_extension_point_duration_seconds_count{extension_point="Filter",status="Success",profile="gone"}"#,
        "1",
    );
    metrics.remove_profile("never-seen");
}

#[test]
fn logging_init_twice_does_not_panic() {
    logging::init(LogFormat::Json);
    logging::init(LogFormat::Text);
    tracing::info!("logging works after two inits");
}

#[test]
fn log_format_parses_from_the_command_line() {
    use clap::ValueEnum;
    assert_eq!(LogFormat::from_str("text", false), Ok(LogFormat::Text));
    assert_eq!(LogFormat::from_str("json", false), Ok(LogFormat::Json));
    assert!(LogFormat::from_str("yaml", false).is_err());
    assert_eq!(LogFormat::default(), LogFormat::Text);
}
