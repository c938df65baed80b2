//! The benchmark of the live path (`cargo bench --bench api`), so that it cannot rot:
//! the same driver creates nodes, init and measured pods through an API server, a real
//! scheduler binds them, and the check of `berth bench` judges where they went.
//!
//! - At a tiny size through the test API server with `berth run`.
//! - Side by side in scheduler_perf's unmeasured test mode: the workloads of the
//!   comparison with kube-scheduler at 500Nodes through the real kube-apiserver 1.37, once
//!   with kube-scheduler 1.37 and once with berth (skipped loudly without Go, never on
//!   CI). Its figures are not judged: docs/performance.md has the measured ones.

mod support;

#[path = "../benches/api/live.rs"]
mod live;

use std::path::PathBuf;
use std::time::Duration;

use berth::bench::run::Plan;
use berth::bench::workload::{Counts, Size, Workload};

use live::{ApiServerKind, LiveOptions, SchedulerKind, run_live};

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
        apiserver: ApiServerKind::Test,
        scheduler: SchedulerKind::Berth,
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
            ..Counts::default()
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
            // Upstream's integration-test size: 4 low-priority pods fill 3.6 CPUs of each
            // node; each high-priority pod (3 CPUs) preempts 3 of them and is bound once
            // they are gone, one per node.
            name: "PreemptionBasic: 5 nodes, 20 running and 5 preempting pods",
            plan: plan(Workload::PreemptionBasic, 5, 20, 5),
            scheduled: 5,
            passed: true,
        },
        Case {
            // Pod i requests the extended resource only node i has.
            name: "SchedulingWithExtendedResource: 8 nodes, 8 pods, each on its node",
            plan: plan(Workload::SchedulingWithExtendedResource, 8, 0, 8),
            scheduled: 8,
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

#[tokio::test]
async fn dra_workloads_are_refused_through_the_api() {
    use berth::bench::workload::Utilization;
    for workload in [
        Workload::SchedulingWithResourceClaimTemplate,
        Workload::SteadyStateClusterResourceClaimTemplate(Utilization::Half),
    ] {
        let result = run_live(&plan(workload, 2, 0, 2), &options()).await;
        let error = result.err().unwrap_or_default();
        assert!(
            error.contains("is not supported through the API yet"),
            "{workload}: {error}"
        );
    }
}

/// The workloads berth is compared with kube-scheduler on (docs/performance.md).
const SIDE_BY_SIDE: [Workload; 5] = [
    Workload::SchedulingBasic,
    Workload::TopologySpreading,
    Workload::SchedulingPodAntiAffinity,
    Workload::SchedulingPreferredPodAffinity,
    Workload::PreemptionBasic,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_scheduler_and_berth_schedule_every_side_by_side_workload_through_the_real_api_server()
{
    let _serial = SERIAL.lock().await;
    let test = support::kube::test_name();
    let built = tokio::task::spawn_blocking(|| {
        kube_cluster::components::binaries(kube_cluster::Release::V1_37)
    })
    .await
    .expect("the build task");
    match built {
        Ok(_) => {}
        Err(kube_cluster::Error::NoGo) => {
            support::tools::skip(
                &test,
                "Go is not installed, so the real kube-apiserver and kube-scheduler cannot \
                 be built (scripts/kube-build.sh)",
            );
            return;
        }
        Err(e) => panic!("{test}: building the real components: {e}"),
    }
    for workload in SIDE_BY_SIDE {
        let counts = workload.counts(Size::Nodes500).expect("a 500Nodes size");
        let plan = Plan {
            workload,
            size: Size::Nodes500.name().to_string(),
            counts,
        };
        for scheduler in [SchedulerKind::KubeScheduler, SchedulerKind::Berth] {
            let options = LiveOptions {
                apiserver: ApiServerKind::Real,
                scheduler,
                in_flight: 32,
                parallelism: None,
                // kube-scheduler, on a 2-CPU machine beside the API server, has twice
                // left one PreemptionBasic preemptor pending past 120 s (its preemption
                // waits on the victims' deletion); the deadline is for a stuck run, not
                // a measure.
                timeout: Duration::from_secs(match scheduler {
                    SchedulerKind::KubeScheduler => 240,
                    _ => 120,
                }),
                ..options()
            };
            let name = format!("{workload} 500Nodes with {}", scheduler.name());
            let report = run_live(&plan, &options)
                .await
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let check = &report.check;
            assert!(check.passed, "{name}: {:?}", check.failures);
            assert_eq!(check.scheduled, counts.measure_pods, "{name}");
            // Every figure the comparison prints exists for both schedulers.
            let cpu = &report.cpu_seconds;
            assert!(
                cpu.scheduler.is_some_and(|s| s > 0.0) && cpu.apiserver.is_some_and(|s| s > 0.0),
                "{name}: {cpu:?}"
            );
            assert!(
                report.scheduler_peak_rss_bytes.is_some_and(|b| b > 0),
                "{name}: no peak RSS"
            );
            assert!(
                report.scheduling_throughput.average > 0.0,
                "{name}: {:?}",
                report.scheduling_throughput
            );
            eprintln!(
                "{name}: {:.0} pods/s, scheduler CPU {:.2}s, API server CPU {:.2}s",
                report.scheduling_throughput.average,
                cpu.scheduler.unwrap_or_default(),
                cpu.apiserver.unwrap_or_default()
            );
        }
    }
}
