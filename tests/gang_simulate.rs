//! Gang scheduling (Coscheduling) in the simulator, on the YAML in `examples/gang/`, and
//! on scheduler-plugins' PodGroups (`scheduling.x-k8s.io/v1alpha1`).
//!
//! The simulation runs in-process on a paused tokio clock, so Permit timeouts and group
//! backoffs elapse virtually; the registry is the default one plus Coscheduling.

use std::path::{Path, PathBuf};

use berth::plugins::coscheduling::Coscheduling;
use berth::simulate::input::{load_files, load_str};
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
    simulate_input(input, seed).await
}

async fn simulate_input(input: berth::simulate::input::ClusterInput, seed: u64) -> Report {
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

/// The report's pod-group table has a row for berth's PodGroup: a gang of minMember 4 of
/// which none is bound, with its last cycle's message (three members placed, the fourth
/// fits nowhere; no pod to preempt) and no condition.
#[tokio::test(start_paused = true)]
async fn the_report_shows_the_berth_groups_outcome() {
    let report = run(&["group-of-4-room-for-3.yaml"], 0).await;
    let [group] = &report.pod_groups[..] else {
        panic!("one pod group: {:#?}", report.pod_groups);
    };
    assert_eq!(
        (
            group.name.as_str(),
            group.api_version.as_deref(),
            group.min_count,
            group.members,
            group.bound,
        ),
        ("train", Some("berth.dev/v1alpha1"), Some(4), 4, 0)
    );
    assert_eq!(
        group.message,
        "pod group default/train cannot reach minMember (4): 3 scheduled, 0 remaining, \
         pod group preemption: No preemption victims found for incoming preemptor"
    );
    assert_eq!(group.condition, None);
    assert!(
        members(&report, "train-")
            .iter()
            .all(|p| p.pod_group.as_deref() == Some("train")),
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

/// The pod-group cycle tries the whole group and reserves nothing when it cannot complete
/// (the third member fits no node), so the lower-priority pod without a group never finds
/// room held for the gang: it binds at its first attempt.
#[tokio::test(start_paused = true)]
async fn a_group_that_cannot_complete_reserves_nothing() {
    let report = run(&["gang-cannot-complete.yaml"], 0).await;
    for pod in members(&report, "job-") {
        assert_ne!(pod.result, PodResult::Scheduled, "{report:#?}");
    }
    let loner = members(&report, "loner");
    assert_eq!(loner[0].result, PodResult::Scheduled, "{report:#?}");
    assert_eq!(loner[0].attempts, 1, "{report:#?}");
}

/// A group that cannot complete (two of its three members exist) does not preempt:
/// Coscheduling's PreEnqueue holds it out of activeQ until minMember members exist, so it
/// is never tried, and the report says what it waits for.
#[tokio::test(start_paused = true)]
async fn an_incomplete_group_evicts_nothing() {
    let report = run(&["preemption-incomplete-group.yaml"], 0).await;
    assert!(report.evicted.is_empty(), "{report:#?}");
    let jobs = members(&report, "job-");
    assert_eq!(jobs.len(), 2, "{report:#?}");
    for pod in jobs {
        assert_eq!(pod.result, PodResult::Unschedulable, "{report:#?}");
        assert_eq!(pod.attempts, 0, "{report:#?}");
        assert_eq!(
            pod.message,
            "waiting for the gang of PodGroup default/job (pod-group label) to have minMember \
             members: 2 of 3 exist"
        );
        assert!(pod.victims.is_empty(), "{report:#?}");
    }
}

/// With all its members, the group preempts as a unit (workload-aware preemption): every
/// lower-priority pod is set aside, the group is placed (two members share a node, the
/// third takes the other), and the victims are given back most important first (the
/// earlier start) where the placed members still fit: only the first-started pod of the
/// node holding one member survives. The group's first member is the preemptor; all
/// three bind.
#[tokio::test(start_paused = true)]
async fn a_complete_group_preempts_as_a_unit_and_binds() {
    let report = run(&["preemption-complete-group.yaml"], 0).await;
    let placed: Vec<(&str, &str)> = members(&report, "job-")
        .iter()
        .map(|p| {
            (
                p.name.as_str(),
                p.node.as_deref().expect("every member binds"),
            )
        })
        .collect();
    assert_eq!(placed.len(), 3, "{report:#?}");
    let on = |node: &str| placed.iter().filter(|(_, n)| *n == node).count();
    let (full, shared) = if on("node-a") == 2 {
        ("node-a", "node-b")
    } else {
        ("node-b", "node-a")
    };
    assert_eq!((on(full), on(shared)), (2, 1), "{report:#?}");
    let batch = |node: &str, i: u8| format!("default/batch-{}{i}", &node[5..]);
    let mut want = vec![batch(full, 1), batch(full, 2), batch(shared, 2)];
    want.sort();
    let mut evicted: Vec<String> = report.evicted.iter().map(|e| e.pod.clone()).collect();
    evicted.sort();
    assert_eq!(evicted, want, "{report:#?}");
    assert!(
        report
            .evicted
            .iter()
            .all(|e| e.preemptor == "default/job-0"),
        "{report:#?}"
    );
}

/// A cluster with scheduler-plugins' gang: the `gang` profile, one node per entry of
/// `node_cpus` (cpus each), `extra` documents, and three 1-cpu pods labelled
/// `scheduling.x-k8s.io/pod-group: mpi`.
fn scheduler_plugins_cluster(node_cpus: &[u32], extra: &[&str]) -> String {
    let profile = "apiVersion: berth.dev/v1alpha1\nkind: SchedulerProfile\nmetadata: {name: gang}\nspec:\n  plugins:\n    multiPoint: {enabled: [{name: Coscheduling}]}\n    queueSort: {enabled: [{name: Coscheduling}], disabled: [{name: \"*\"}]}\n  pluginConfig:\n    coscheduling: {permitWaitingTimeSeconds: 60, podGroupBackoffSeconds: 0}\n".to_string();
    let nodes = node_cpus.iter().enumerate().map(|(i, cpu)| {
        format!(
            "apiVersion: v1\nkind: Node\nmetadata: {{name: node-{i}, labels: {{kubernetes.io/hostname: node-{i}}}}}\nstatus:\n  allocatable: {{cpu: \"{cpu}\", memory: 16Gi, pods: \"110\"}}\n  capacity: {{cpu: \"{cpu}\", memory: 16Gi, pods: \"110\"}}\n"
        )
    });
    let pods = (0..3).map(|i| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: mpi-{i}, namespace: default, labels: {{scheduling.x-k8s.io/pod-group: mpi}}}}\nspec:\n  schedulerName: gang\n  containers:\n  - {{name: main, image: busybox, resources: {{requests: {{cpu: \"1\"}}}}}}\n"
        )
    });
    std::iter::once(profile)
        .chain(nodes)
        .chain(extra.iter().map(|d| d.to_string()))
        .chain(pods)
        .collect::<Vec<_>>()
        .join("---\n")
}

/// A scheduler-plugins PodGroup `mpi` with `spec`.
fn scheduler_plugins_group(spec: &str) -> String {
    format!(
        "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {{name: mpi, namespace: default}}\nspec: {spec}\n"
    )
}

async fn run_text(text: &str, seed: u64) -> Report {
    let (input, _warnings) =
        load_str(Path::new("scheduler-plugins.yaml"), text).expect("input loads");
    simulate_input(input, seed).await
}

/// The members bound to a node, by name.
fn bound(report: &Report, prefix: &str) -> Vec<String> {
    members(report, prefix)
        .iter()
        .filter(|p| p.result == PodResult::Scheduled && p.node.is_some())
        .map(|p| p.name.clone())
        .collect()
}

/// scheduler-plugins' gang (a `scheduling.x-k8s.io/v1alpha1` PodGroup of minMember 3,
/// members labelled `scheduling.x-k8s.io/pod-group`) is all-or-nothing: room for its
/// three members binds all three, room for two binds none.
#[tokio::test(start_paused = true)]
async fn a_scheduler_plugins_gang_binds_whole_or_not_at_all() {
    let group = scheduler_plugins_group("{minMember: 3}");
    for seed in 0..3 {
        let room_for_three = scheduler_plugins_cluster(&[2, 1], &[&group]);
        let report = run_text(&room_for_three, seed).await;
        assert_eq!(members(&report, "mpi-").len(), 3, "{report:#?}");
        assert_eq!(
            bound(&report, "mpi-"),
            ["mpi-0", "mpi-1", "mpi-2"],
            "seed {seed}: {report:#?}"
        );

        let room_for_two = scheduler_plugins_cluster(&[1, 1], &[&group]);
        let report = run_text(&room_for_two, seed).await;
        assert_eq!(members(&report, "mpi-").len(), 3, "{report:#?}");
        assert_eq!(
            bound(&report, "mpi-"),
            Vec::<String>::new(),
            "seed {seed}: {report:#?}"
        );
        for pod in members(&report, "mpi-") {
            assert!(pod.node.is_none(), "seed {seed}: {report:#?}");
        }
    }
}

/// The example binds its gang of three on room for three.
#[tokio::test(start_paused = true)]
async fn the_scheduler_plugins_example_binds_its_gang() {
    let report = run(&["scheduler-plugins.yaml"], 0).await;
    assert_eq!(
        bound(&report, "mpi-"),
        ["mpi-0", "mpi-1", "mpi-2"],
        "{report:#?}"
    );
}

/// A scheduler-plugins group without `minMember` has no quorum (scheduler-plugins reads
/// zero as one): each member is placed on its own, as far as room goes.
#[tokio::test(start_paused = true)]
async fn a_scheduler_plugins_group_without_min_member_places_members_one_by_one() {
    let group = scheduler_plugins_group("{}");
    let report = run_text(&scheduler_plugins_cluster(&[1, 1], &[&group]), 0).await;
    assert_eq!(bound(&report, "mpi-").len(), 2, "{report:#?}");
}

/// Where berth.dev and scheduler-plugins both define `default/mpi`, berth's own is the
/// group the label names: its minMember 4 cannot be met by three members, so none is
/// bound although scheduler-plugins' minMember 3 fits.
#[tokio::test(start_paused = true)]
async fn a_berth_pod_group_of_the_same_name_is_the_group() {
    let group = scheduler_plugins_group("{minMember: 3}");
    let berth_group = "apiVersion: berth.dev/v1alpha1\nkind: PodGroup\nmetadata: {name: mpi, namespace: default}\nspec: {minMember: 4}\n";
    let report = run_text(
        &scheduler_plugins_cluster(&[2, 1], &[&group, berth_group]),
        0,
    )
    .await;
    assert_eq!(bound(&report, "mpi-"), Vec::<String>::new(), "{report:#?}");
}
