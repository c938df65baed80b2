//! The benchmark of the live path (`cargo bench --bench api`) at a tiny size, so that it
//! cannot rot: the same driver creates nodes, init and measured pods through the test API
//! server, the real `berth run` binds them, and the check of `berth bench` judges where
//! they went.

#[path = "../benches/api/live.rs"]
mod live;

use std::path::PathBuf;
use std::time::Duration;

use berth::bench::run::Plan;
use berth::bench::workload::{Counts, Workload};

use live::{LiveOptions, run_live};

/// One berth process and one server at a time: the machine may have two cores.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn options() -> LiveOptions {
    LiveOptions {
        berth: PathBuf::from(env!("CARGO_BIN_EXE_berth")),
        parallelism: Some(2),
        seed: 0,
        in_flight: 8,
        timeout: Duration::from_secs(30),
        log_filter: "warn".to_string(),
    }
}

fn plan(workload: Workload, nodes: u64, init_pods: u64, measure_pods: u64) -> Plan {
    Plan {
        workload,
        size: "tiny".to_string(),
        counts: Counts {
            nodes,
            init_pods,
            measure_pods,
        },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_measured_pod_is_bound_through_the_api_and_the_check_judges_placements() {
    let _serial = SERIAL.lock().await;
    struct Case {
        name: &'static str,
        plan: Plan,
        /// Measured pods the check counts as scheduled.
        scheduled: u64,
        passed: bool,
    }
    let cases = [
        Case {
            name: "SchedulingBasic: 20 nodes, 10 running and 20 measured pods",
            plan: plan(Workload::SchedulingBasic, 20, 10, 20),
            scheduled: 20,
            passed: true,
        },
        Case {
            name: "required anti-affinity: 14 pods fit 20 nodes, one per node",
            plan: plan(Workload::SchedulingPodAntiAffinity, 20, 4, 10),
            scheduled: 10,
            passed: true,
        },
        Case {
            // One pod per node: 4 running and 6 measured fill the 10 nodes; 4 stay
            // pending, which fails the check instead of waiting for them.
            name: "required anti-affinity: more pods than nodes",
            plan: plan(Workload::SchedulingPodAntiAffinity, 10, 4, 10),
            scheduled: 6,
            passed: false,
        },
    ];
    for case in cases {
        let report = run_live(&case.plan, &options())
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let check = &report.check;
        assert_eq!(
            check.measured, case.plan.counts.measure_pods,
            "{}",
            case.name
        );
        assert_eq!(
            check.scheduled, case.scheduled,
            "{}: {:?}",
            case.name, check.failures
        );
        assert_eq!(
            check.passed, case.passed,
            "{}: {:?}",
            case.name, check.failures
        );
        // Every bound measured pod is in the throughput and has a create-to-bound time.
        let throughput = &report.scheduling_throughput;
        let bound = throughput.overall * report.duration_seconds;
        assert!(
            (bound - case.scheduled as f64).abs() < 1e-6,
            "{}: {throughput:?} over {}s",
            case.name,
            report.duration_seconds
        );
        assert!(
            report.create_to_bound_seconds.perc50 > 0.0
                && report.create_to_bound_seconds.max <= report.duration_seconds,
            "{}: {:?}",
            case.name,
            report.create_to_bound_seconds
        );
    }
}
