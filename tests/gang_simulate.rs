//! Gang scheduling (Coscheduling) in the simulator, on the YAML in `examples/gang/`.
//!
//! The simulation runs in-process on a paused tokio clock, so Permit timeouts and group
//! backoffs elapse virtually; the registry is the default one plus Coscheduling.

use std::path::PathBuf;

use berth::plugins::coscheduling::Coscheduling;
use berth::simulate::input::load_files;
use berth::simulate::report::{PodReport, PodResult, Report};
use berth::simulate::run::{SimulateOptions, simulate};

fn registry() -> berth::framework::Registry {
    let mut registry = berth::plugins::default_registry();
    if !registry.entries().any(|e| e.name == "Coscheduling") {
        registry.register::<Coscheduling>();
    }
    registry
}

async fn run(files: &[&str], seed: u64) -> Report {
    let paths: Vec<PathBuf> = files
        .iter()
        .map(|f| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("examples/gang")
                .join(f)
        })
        .collect();
    let (input, _warnings) = load_files(&paths).expect("input loads");
    simulate(
        input,
        &registry(),
        SimulateOptions {
            explain: false,
            seed,
            parallelism: 2,
        },
    )
    .await
    .expect("simulation runs")
}

fn members<'a>(report: &'a Report, prefix: &str) -> Vec<&'a PodReport> {
    report
        .pods
        .iter()
        .filter(|p| p.name.starts_with(prefix))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn group_of_four_on_room_for_three_binds_nothing() {
    let report = run(&["group-of-4-room-for-3.yaml"], 0).await;
    let train = members(&report, "train-");
    assert_eq!(train.len(), 4, "{report:#?}");
    for pod in &train {
        assert_ne!(pod.result, PodResult::Scheduled, "{report:#?}");
        assert!(pod.node.is_none(), "{report:#?}");
    }
    // Every member says why, and at least one names the group or the plugin.
    assert!(train.iter().all(|p| !p.message.is_empty()), "{report:#?}");
    assert!(
        train
            .iter()
            .any(|p| p.message.contains("Coscheduling") || p.message.contains("default/train")),
        "{report:#?}"
    );
}

#[tokio::test(start_paused = true)]
async fn adding_a_node_that_fits_binds_all_four() {
    let report = run(&["group-of-4-room-for-3.yaml", "extra-node.yaml"], 0).await;
    let train = members(&report, "train-");
    assert_eq!(train.len(), 4);
    for pod in train {
        assert_eq!(pod.result, PodResult::Scheduled, "{report:#?}");
    }
}

#[tokio::test(start_paused = true)]
async fn two_groups_competing_for_room_for_one_bind_one_fully() {
    for seed in 0..5 {
        let report = run(&["two-groups.yaml"], seed).await;
        let bound = |prefix: &str| {
            members(&report, prefix)
                .iter()
                .filter(|p| p.result == PodResult::Scheduled)
                .count()
        };
        assert_eq!(bound("alpha-"), 4, "seed {seed}: {report:#?}");
        assert_eq!(bound("beta-"), 0, "seed {seed}: {report:#?}");
    }
}

#[tokio::test(start_paused = true)]
async fn permit_timeout_releases_reservations_for_a_pod_without_a_group() {
    let report = run(&["permit-timeout.yaml"], 0).await;
    for pod in members(&report, "job-") {
        assert_ne!(pod.result, PodResult::Scheduled, "{report:#?}");
    }
    // job-0 was held at Permit and let go at the timeout (a second attempt); it then
    // finds the node taken by the loner's 2 cpus.
    let waited = members(&report, "job-0");
    assert!(
        waited[0].attempts >= 2 && waited[0].message.contains("1 Insufficient cpu"),
        "{report:#?}"
    );
    // The loner first found the room reserved by the waiting members, then took it.
    let loner = members(&report, "loner");
    assert_eq!(loner[0].result, PodResult::Scheduled, "{report:#?}");
    assert!(loner[0].attempts >= 2, "{report:#?}");
}

/// A group that cannot complete (two of its three members exist) does not preempt:
/// Coscheduling's PreFilter rejects its members as unresolvable, so DefaultPreemption finds
/// no node where evicting would help.
#[tokio::test(start_paused = true)]
async fn an_incomplete_group_evicts_nothing() {
    let report = run(&["preemption-incomplete-group.yaml"], 0).await;
    assert!(report.evicted.is_empty(), "{report:#?}");
    let jobs = members(&report, "job-");
    assert_eq!(jobs.len(), 2, "{report:#?}");
    for pod in jobs {
        assert_eq!(pod.result, PodResult::Unschedulable, "{report:#?}");
        assert_eq!(
            pod.message,
            format!(
                "0/2 nodes are available: pre-filter pod {} cannot find enough sibling pods, \
                 current pods number: 2, minMember of group: 3. \
                 preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
                pod.name
            )
        );
        assert!(pod.victims.is_empty(), "{report:#?}");
    }
}

/// With all its members, the group's members each preempt for themselves (upstream's
/// order: the batch pod that started latest first, the room a nominated sibling holds is
/// its own), wait at Permit for each other and bind together.
#[tokio::test(start_paused = true)]
async fn a_complete_group_preempts_member_by_member_and_binds() {
    let report = run(&["preemption-complete-group.yaml"], 0).await;
    let evicted: Vec<(&str, &str, &str)> = report
        .evicted
        .iter()
        .map(|e| (e.pod.as_str(), e.node.as_str(), e.preemptor.as_str()))
        .collect();
    assert_eq!(
        evicted,
        [
            ("default/batch-b2", "node-b", "default/job-0"),
            ("default/batch-b1", "node-b", "default/job-1"),
            ("default/batch-a2", "node-a", "default/job-2"),
        ]
    );
    let placed: Vec<(&str, Option<&str>)> = members(&report, "job-")
        .iter()
        .map(|p| (p.name.as_str(), p.node.as_deref()))
        .collect();
    assert_eq!(
        placed,
        [
            ("job-0", Some("node-b")),
            ("job-1", Some("node-b")),
            ("job-2", Some("node-a")),
        ]
    );
}
