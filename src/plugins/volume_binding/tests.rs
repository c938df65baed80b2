//! Upstream's `volume_binding_test.go` table (TestVolumeBinding): PreFilter's status and
//! state, Filter's status per node, and the raw scores, as upstream 1.37 runs the plugin
//! (StorageCapacityScoring on, its default shape unless a row gives one). Upstream's rows
//! that turn the gate off expect PreScore to skip; with it on, as here, every pod whose
//! PreFilter succeeded is scored, 0 on a node where nothing is left to bind. Plus the
//! plugin-level paths of upstream's TestSchedulerWithVolumeBinding (Reserve, PreBind,
//! Unreserve) driven through a writer that plays the PV controller.

use std::collections::BTreeMap;
use std::sync::Mutex as StdMutex;

use k8s_openapi::api::core::v1::{
    Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PersistentVolume,
    PersistentVolumeClaim, PersistentVolumeClaimSpec, PersistentVolumeClaimStatus,
    PersistentVolumeSpec, PersistentVolumeStatus, Pod, VolumeNodeAffinity,
    VolumeResourceRequirements,
};
use k8s_openapi::api::storage::v1::{CSIDriver, CSIDriverSpec, CSIStorageCapacity, StorageClass};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use super::*;
use crate::helpers::volumes::BIND_COMPLETED_ANNOTATION;
use kube::ResourceExt;

use crate::testing::executor::complete;
use crate::testing::{make_node, make_pod, node_info, pod_info};

const HOSTNAME: &str = "kubernetes.io/hostname";
const REGION: &str = "topology.kubernetes.io/region";
const ZONE: &str = "topology.kubernetes.io/zone";

fn class(name: &str, mode: &str) -> StorageClass {
    StorageClass {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        volume_binding_mode: Some(mode.into()),
        ..StorageClass::default()
    }
}

/// upstream's classes: none has a provisioner.
fn classes() -> Vec<StorageClass> {
    vec![
        class("immediate-sc", "Immediate"),
        class("wait-sc", "WaitForFirstConsumer"),
        class("wait-hdd-sc", "WaitForFirstConsumer"),
    ]
}

fn node(name: &str, extra: &[(&str, &str)]) -> Node {
    let mut labels = vec![(HOSTNAME, name)];
    labels.extend_from_slice(extra);
    make_node().name(name).labels(&labels).obj()
}

fn pvc(name: &str, class: &str) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            storage_class_name: Some(class.into()),
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    }
}

/// upstream's `withBoundPV`: names the volume and carries the completed annotation.
fn bound_to(mut claim: PersistentVolumeClaim, volume: &str) -> PersistentVolumeClaim {
    claim.spec.get_or_insert_default().volume_name = Some(volume.into());
    claim
        .metadata
        .annotations
        .get_or_insert_default()
        .insert(BIND_COMPLETED_ANNOTATION.into(), "yes".into());
    claim
}

fn requesting(mut claim: PersistentVolumeClaim, storage: &str) -> PersistentVolumeClaim {
    claim.spec.get_or_insert_default().resources = Some(VolumeResourceRequirements {
        requests: Some(BTreeMap::from([(
            "storage".into(),
            Quantity(storage.into()),
        )])),
        ..VolumeResourceRequirements::default()
    });
    claim
}

fn pv(name: &str, class: &str) -> PersistentVolume {
    PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeSpec {
            storage_class_name: Some(class.into()),
            ..PersistentVolumeSpec::default()
        }),
        ..PersistentVolume::default()
    }
}

fn with_phase(mut volume: PersistentVolume, phase: &str) -> PersistentVolume {
    volume.status = Some(PersistentVolumeStatus {
        phase: Some(phase.into()),
        ..PersistentVolumeStatus::default()
    });
    volume
}

fn with_capacity(mut volume: PersistentVolume, storage: &str) -> PersistentVolume {
    volume.spec.get_or_insert_default().capacity = Some(BTreeMap::from([(
        "storage".into(),
        Quantity(storage.into()),
    )]));
    volume
}

/// Required node affinity of one term ANDing `key In [values]` expressions.
fn pinned(mut volume: PersistentVolume, expressions: &[(&str, &[&str])]) -> PersistentVolume {
    volume.spec.get_or_insert_default().node_affinity = Some(VolumeNodeAffinity {
        required: Some(NodeSelector {
            node_selector_terms: vec![NodeSelectorTerm {
                match_expressions: Some(
                    expressions
                        .iter()
                        .map(|(key, values)| NodeSelectorRequirement {
                            key: key.to_string(),
                            operator: "In".into(),
                            values: Some(values.iter().map(|v| v.to_string()).collect()),
                        })
                        .collect(),
                ),
                match_fields: None,
            }],
        }),
    });
    volume
}

fn pod(claims: &[&str]) -> Pod {
    claims
        .iter()
        .fold(make_pod().name("pod-a").namespace("default"), |p, c| {
            p.pvc(c)
        })
        .obj()
}

fn plugin_with(
    claims: Vec<PersistentVolumeClaim>,
    volumes: Vec<PersistentVolume>,
    args: VolumeBindingArgs,
) -> (VolumeBinding, Arc<Volumes>) {
    let lister = Arc::new(Volumes::new());
    classes().into_iter().for_each(|c| lister.apply_class(c));
    claims.into_iter().for_each(|c| lister.apply_claim(c));
    volumes.into_iter().for_each(|v| lister.apply_volume(v));
    let handle = Handle::builder().volumes(lister.clone()).build();
    let plugin = <VolumeBinding as crate::framework::PluginFactory>::build(args, &handle)
        .expect("VolumeBinding builds");
    (plugin, lister)
}

fn args_with_shape(shape: &[(i64, i64)]) -> VolumeBindingArgs {
    VolumeBindingArgs {
        bind_timeout_seconds: 300,
        shape: shape
            .iter()
            .map(|&(utilization, score)| UtilizationShapePoint { utilization, score })
            .collect(),
    }
}

/// The args of upstream's table: a 300 s timeout and, since 1.37, the default shape
/// (StorageCapacityScoring on), which prefers the node with the most free capacity.
fn default_args() -> VolumeBindingArgs {
    VolumeBindingArgs {
        bind_timeout_seconds: 300,
        ..VolumeBindingArgs::default()
    }
}

fn bind_conflict() -> Status {
    Status::unresolvable(binder::ConflictReason::BindConflict.message())
}

/// PreFilter's state as the table states it: bound claims, waiting claims, and the
/// volumes offered per class, by name.
type StateView = (Vec<String>, Vec<String>, BTreeMap<String, Vec<String>>);

fn names_of<T: kube::ResourceExt>(objects: &[Arc<T>]) -> Vec<String> {
    objects.iter().map(|o| o.name_any()).collect()
}

fn view(state: &CycleState) -> Option<StateView> {
    let state = state.read::<State>()?;
    Some((
        names_of(&state.claims.bound),
        names_of(&state.claims.unbound_delay_binding),
        state
            .claims
            .unbound_volumes_delay_binding
            .iter()
            .map(|(class, volumes)| (class.clone(), names_of(volumes)))
            .collect(),
    ))
}

struct Case {
    name: &'static str,
    pod: Pod,
    nodes: Vec<Node>,
    claims: Vec<PersistentVolumeClaim>,
    volumes: Vec<PersistentVolume>,
    args: VolumeBindingArgs,
    pre_filter: Status,
    state: Option<StateView>,
    filter: Vec<Status>,
    /// `None` when PreScore skips (or PreFilter failed).
    scores: Option<Vec<i64>>,
}

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

fn state(bound: &[&str], waiting: &[&str], offered: &[(&str, &[&str])]) -> Option<StateView> {
    Some((
        strings(bound),
        strings(waiting),
        offered
            .iter()
            .map(|(class, volumes)| (class.to_string(), strings(volumes)))
            .collect(),
    ))
}

fn local_volumes() -> Vec<PersistentVolume> {
    let make = |name: &str, class: &str, size: &str, node: &str| {
        pinned(
            with_capacity(with_phase(pv(name, class), "Available"), size),
            &[(HOSTNAME, &[node])],
        )
    };
    vec![
        make("pv-a-0", "wait-sc", "200Gi", "node-a"),
        make("pv-a-1", "wait-sc", "200Gi", "node-a"),
        make("pv-b-0", "wait-sc", "100Gi", "node-b"),
        make("pv-b-1", "wait-sc", "100Gi", "node-b"),
    ]
}

fn zonal_volumes() -> Vec<PersistentVolume> {
    let make = |name: &str, size: &str, region: &str, zone: &str| {
        pinned(
            with_capacity(with_phase(pv(name, "wait-sc"), "Available"), size),
            &[(REGION, &[region]), (ZONE, &[zone])],
        )
    };
    vec![
        make("pv-a-0", "200Gi", "region-a", "zone-a"),
        make("pv-a-1", "200Gi", "region-a", "zone-a"),
        make("pv-b-0", "100Gi", "region-b", "zone-b"),
        make("pv-b-1", "100Gi", "region-b", "zone-b"),
    ]
}

fn zonal_nodes() -> Vec<Node> {
    ["a", "b", "c"]
        .iter()
        .flat_map(|zone| {
            ["a", "b"].map(|n| {
                node(
                    &format!("zone-{zone}-node-{n}"),
                    &[
                        (REGION, format!("region-{zone}").as_str()),
                        (ZONE, format!("zone-{zone}").as_str()),
                    ],
                )
            })
        })
        .collect()
}

fn cases() -> Vec<Case> {
    let ok = Status::success;
    vec![
        Case {
            name: "pod has not pvcs",
            pod: make_pod().name("pod-a").namespace("default").obj(),
            nodes: vec![node("node-a", &[])],
            claims: vec![],
            volumes: vec![],
            args: default_args(),
            pre_filter: Status::skip(),
            state: None,
            filter: vec![],
            scores: None,
        },
        Case {
            name: "all bound",
            pod: pod(&["pvc-a"]),
            nodes: vec![node("node-a", &[])],
            claims: vec![bound_to(pvc("pvc-a", "wait-sc"), "pv-a")],
            volumes: vec![with_phase(pv("pv-a", "wait-sc"), "Available")],
            args: default_args(),
            pre_filter: ok(),
            state: state(&["pvc-a"], &[], &[]),
            filter: vec![ok()],
            scores: Some(vec![0]),
        },
        Case {
            name: "all bound with local volumes",
            pod: pod(&["pvc-a", "pvc-b"]),
            nodes: vec![node("node-a", &[])],
            claims: vec![
                bound_to(pvc("pvc-a", "wait-sc"), "pv-a"),
                bound_to(pvc("pvc-b", "wait-sc"), "pv-b"),
            ],
            volumes: vec![
                pinned(
                    with_phase(pv("pv-a", "wait-sc"), "Bound"),
                    &[(HOSTNAME, &["node-a"])],
                ),
                pinned(
                    with_phase(pv("pv-b", "wait-sc"), "Bound"),
                    &[(HOSTNAME, &["node-a"])],
                ),
            ],
            args: default_args(),
            pre_filter: ok(),
            state: state(&["pvc-a", "pvc-b"], &[], &[]),
            filter: vec![ok()],
            scores: Some(vec![0]),
        },
        Case {
            name: "PVC does not exist",
            pod: pod(&["pvc-a"]),
            nodes: vec![node("node-a", &[])],
            claims: vec![],
            volumes: vec![],
            args: default_args(),
            pre_filter: Status::unresolvable("persistentvolumeclaim \"pvc-a\" not found"),
            state: None,
            filter: vec![],
            scores: None,
        },
        Case {
            name: "Part of PVCs do not exist",
            pod: pod(&["pvc-a", "pvc-b"]),
            nodes: vec![node("node-a", &[])],
            claims: vec![bound_to(pvc("pvc-a", "wait-sc"), "pv-a")],
            volumes: vec![],
            args: default_args(),
            pre_filter: Status::unresolvable("persistentvolumeclaim \"pvc-b\" not found"),
            state: None,
            filter: vec![],
            scores: None,
        },
        Case {
            name: "immediate claims not bound",
            pod: pod(&["pvc-a"]),
            nodes: vec![node("node-a", &[])],
            claims: vec![pvc("pvc-a", "immediate-sc")],
            volumes: vec![],
            args: default_args(),
            pre_filter: Status::unresolvable(ERR_UNBOUND_IMMEDIATE),
            state: None,
            filter: vec![],
            scores: None,
        },
        Case {
            name: "unbound claims no matches",
            pod: pod(&["pvc-a"]),
            nodes: vec![node("node-a", &[])],
            claims: vec![pvc("pvc-a", "wait-sc")],
            volumes: vec![],
            args: default_args(),
            pre_filter: ok(),
            state: state(&[], &["pvc-a"], &[("wait-sc", &[])]),
            filter: vec![bind_conflict()],
            scores: Some(vec![0]),
        },
        Case {
            name: "bound and unbound unsatisfied",
            pod: pod(&["pvc-a", "pvc-b"]),
            nodes: vec![node("node-a", &[("foo", "barbar")])],
            claims: vec![
                bound_to(pvc("pvc-a", "wait-sc"), "pv-a"),
                pvc("pvc-b", "wait-sc"),
            ],
            volumes: vec![pinned(
                with_phase(pv("pv-a", "wait-sc"), "Available"),
                &[("foo", &["bar"])],
            )],
            args: default_args(),
            pre_filter: ok(),
            state: state(&["pvc-a"], &["pvc-b"], &[("wait-sc", &["pv-a"])]),
            filter: vec![Status::with_reasons(
                Code::UnschedulableAndUnresolvable,
                vec![
                    binder::ConflictReason::NodeConflict.message().into(),
                    binder::ConflictReason::BindConflict.message().into(),
                ],
            )],
            scores: Some(vec![0]),
        },
        Case {
            name: "pvc not found",
            pod: pod(&["pvc-a"]),
            nodes: vec![node("node-a", &[])],
            claims: vec![],
            volumes: vec![],
            args: default_args(),
            pre_filter: Status::unresolvable("persistentvolumeclaim \"pvc-a\" not found"),
            state: None,
            filter: vec![],
            scores: None,
        },
        Case {
            name: "pv not found",
            pod: pod(&["pvc-a"]),
            nodes: vec![node("node-a", &[])],
            claims: vec![bound_to(pvc("pvc-a", "wait-sc"), "pv-a")],
            volumes: vec![],
            args: default_args(),
            pre_filter: ok(),
            state: state(&["pvc-a"], &[], &[]),
            filter: vec![Status::unresolvable(
                "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)",
            )],
            scores: Some(vec![0]),
        },
        Case {
            name: "pv not found claim lost",
            pod: pod(&["pvc-a"]),
            nodes: vec![node("node-a", &[])],
            claims: vec![{
                let mut claim = bound_to(pvc("pvc-a", "wait-sc"), "pv-a");
                claim.status = Some(PersistentVolumeClaimStatus {
                    phase: Some("Lost".into()),
                    ..PersistentVolumeClaimStatus::default()
                });
                claim
            }],
            volumes: vec![],
            args: default_args(),
            pre_filter: Status::unresolvable(
                "persistentvolumeclaim \"pvc-a\" bound to non-existent persistentvolume \"pv-a\"",
            ),
            state: None,
            filter: vec![],
            scores: None,
        },
        Case {
            name: "local volumes with close capacity are preferred",
            pod: pod(&["pvc-a"]),
            nodes: vec![
                node("node-a", &[]),
                node("node-b", &[]),
                node("node-c", &[]),
            ],
            claims: vec![requesting(pvc("pvc-a", "wait-sc"), "50Gi")],
            volumes: local_volumes(),
            args: default_args(),
            pre_filter: ok(),
            state: state(
                &[],
                &["pvc-a"],
                &[("wait-sc", &["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"])],
            ),
            filter: vec![ok(), ok(), bind_conflict()],
            scores: Some(vec![75, 50, 0]),
        },
        Case {
            name: "local volumes with close capacity are preferred (multiple pvcs)",
            pod: pod(&["pvc-0", "pvc-1"]),
            nodes: vec![
                node("node-a", &[]),
                node("node-b", &[]),
                node("node-c", &[]),
            ],
            claims: vec![
                requesting(pvc("pvc-0", "wait-sc"), "50Gi"),
                requesting(pvc("pvc-1", "wait-hdd-sc"), "100Gi"),
            ],
            volumes: {
                let hdd = |name: &str, size: &str, node: &str| {
                    pinned(
                        with_capacity(with_phase(pv(name, "wait-hdd-sc"), "Available"), size),
                        &[(HOSTNAME, &[node])],
                    )
                };
                let mut volumes = local_volumes();
                volumes.extend([
                    hdd("pv-a-2", "200Gi", "node-a"),
                    hdd("pv-a-3", "200Gi", "node-a"),
                    hdd("pv-b-2", "100Gi", "node-b"),
                    hdd("pv-b-3", "100Gi", "node-b"),
                ]);
                volumes
            },
            args: default_args(),
            pre_filter: ok(),
            state: state(
                &[],
                &["pvc-0", "pvc-1"],
                &[
                    ("wait-hdd-sc", &["pv-a-2", "pv-a-3", "pv-b-2", "pv-b-3"]),
                    ("wait-sc", &["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"]),
                ],
            ),
            filter: vec![ok(), ok(), bind_conflict()],
            scores: Some(vec![63, 25, 0]),
        },
        Case {
            name: "zonal volumes with close capacity are preferred",
            pod: pod(&["pvc-a"]),
            nodes: zonal_nodes(),
            claims: vec![requesting(pvc("pvc-a", "wait-sc"), "50Gi")],
            volumes: zonal_volumes(),
            args: default_args(),
            pre_filter: ok(),
            state: state(
                &[],
                &["pvc-a"],
                &[("wait-sc", &["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"])],
            ),
            filter: vec![ok(), ok(), ok(), ok(), bind_conflict(), bind_conflict()],
            scores: Some(vec![75, 75, 50, 50, 0, 0]),
        },
        Case {
            name: "zonal volumes with close capacity are preferred (custom shape)",
            pod: pod(&["pvc-a"]),
            nodes: zonal_nodes(),
            claims: vec![requesting(pvc("pvc-a", "wait-sc"), "50Gi")],
            volumes: zonal_volumes(),
            args: args_with_shape(&[(0, 0), (50, 3), (100, 5)]),
            pre_filter: ok(),
            state: state(
                &[],
                &["pvc-a"],
                &[("wait-sc", &["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"])],
            ),
            filter: vec![ok(), ok(), ok(), ok(), bind_conflict(), bind_conflict()],
            scores: Some(vec![15, 15, 30, 30, 0, 0]),
        },
    ]
}

#[test]
fn volume_binding_table() {
    for case in cases() {
        let (plugin, _) = plugin_with(case.claims, case.volumes, case.args);
        let pod = pod_info(case.pod);
        let mut state = CycleState::default();
        let (result, pre) = complete(plugin.pre_filter(&mut state, &pod, &Snapshot::default()));
        assert_eq!(pre, case.pre_filter, "{}: PreFilter", case.name);
        assert!(result.is_none(), "{}: no PreFilterResult", case.name);
        assert_eq!(view(&state), case.state, "{}: PreFilter state", case.name);
        if !pre.is_success() {
            continue;
        }
        let infos: Vec<Arc<NodeInfo>> = case
            .nodes
            .into_iter()
            .map(|n| Arc::new(node_info(n, [])))
            .collect();
        let filtered: Vec<Status> = infos
            .iter()
            .map(|n| plugin.filter(&state, &pod, n))
            .collect();
        assert_eq!(filtered, case.filter, "{}: Filter", case.name);
        let pre_score = complete(plugin.pre_score(&mut state, &pod, &infos));
        match case.scores {
            None => assert!(pre_score.is_skip(), "{}: PreScore skips", case.name),
            Some(want) => {
                assert!(pre_score.is_success(), "{}: PreScore", case.name);
                let got: Vec<i64> = infos
                    .iter()
                    .map(|n| plugin.score(&state, &pod, n).expect("scores"))
                    .collect();
                assert_eq!(got, want, "{}: Score", case.name);
            }
        }
    }
}

/// upstream's `nodeLabelKey`: the label CSIStorageCapacity objects select nodes by.
const NODE_KEY: &str = "nodeKey";
/// upstream's `waitSCWithStorageCapacity` and its driver, which tracks storage capacity.
const CAPACITY_CLASS: &str = "wait-sc-with-storage-capacity";
const CAPACITY_DRIVER: &str = "driver-with-storage-capacity";

/// upstream's `makeCapacity`: `size` of CAPACITY_CLASS on the node labelled `node`.
fn capacity(node: &str, size: &str) -> CSIStorageCapacity {
    CSIStorageCapacity {
        metadata: ObjectMeta {
            name: Some(node.into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        storage_class_name: CAPACITY_CLASS.into(),
        node_topology: Some(LabelSelector {
            match_labels: Some(BTreeMap::from([(NODE_KEY.into(), node.into())])),
            match_expressions: None,
        }),
        capacity: Some(Quantity(size.into())),
        maximum_volume_size: None,
    }
}

struct CapacityCase {
    name: &'static str,
    claims: Vec<PersistentVolumeClaim>,
    volumes: Vec<PersistentVolume>,
    /// Capacity of CAPACITY_CLASS on node-a, node-b, node-c (those given).
    capacities: &'static [&'static str],
    args: VolumeBindingArgs,
    scores: Vec<i64>,
}

/// Upstream's TestVolumeBinding rows for dynamic provisioning by a driver that tracks
/// storage capacity: the score is the utilization of the node's CSIStorageCapacity by the
/// pod's claims of that class, through the shape.
#[test]
fn storage_capacity_scores() {
    let dynamic = |name: &str, size: &str| requesting(pvc(name, CAPACITY_CLASS), size);
    let static_volume = |name: &str, node: &str| {
        pinned(
            with_capacity(with_phase(pv(name, "wait-sc"), "Available"), "100Gi"),
            &[(HOSTNAME, &[node])],
        )
    };
    let cases = [
        CapacityCase {
            name: "storage capacity score",
            claims: vec![dynamic("pvc-dynamic", "10Gi")],
            volumes: vec![],
            capacities: &["100Gi", "50Gi", "10Gi"],
            args: default_args(),
            scores: vec![90, 80, 0],
        },
        CapacityCase {
            name: "storage capacity score with static binds",
            claims: vec![
                dynamic("pvc-dynamic", "10Gi"),
                requesting(pvc("pvc-static", "wait-sc"), "50Gi"),
            ],
            volumes: vec![
                static_volume("pv-static-a", "node-a"),
                static_volume("pv-static-b", "node-b"),
                static_volume("pv-static-c", "node-c"),
            ],
            capacities: &["100Gi", "50Gi", "10Gi"],
            args: default_args(),
            scores: vec![50, 50, 50],
        },
        CapacityCase {
            name: "dynamic provisioning with multiple PVCs of the same StorageClass",
            claims: vec![
                dynamic("pvc-dynamic-0", "50Gi"),
                dynamic("pvc-dynamic-1", "50Gi"),
            ],
            volumes: vec![],
            capacities: &["100Gi"],
            args: default_args(),
            scores: vec![0],
        },
        CapacityCase {
            name: "prefer node with least allocatable",
            claims: vec![dynamic("pvc-dynamic", "10Gi")],
            volumes: vec![],
            capacities: &["100Gi", "20Gi", "10Gi"],
            args: args_with_shape(&[(0, 0), (100, 10)]),
            scores: vec![10, 50, 100],
        },
        CapacityCase {
            name: "prefer node with maximum allocatable",
            claims: vec![dynamic("pvc-dynamic", "10Gi")],
            volumes: vec![],
            capacities: &["100Gi", "20Gi", "10Gi"],
            args: default_args(),
            scores: vec![90, 50, 0],
        },
    ];
    for case in cases {
        let claim_names: Vec<String> = case.claims.iter().map(|c| c.name_any()).collect();
        let claim_names: Vec<&str> = claim_names.iter().map(String::as_str).collect();
        let (plugin, lister) = plugin_with(case.claims, case.volumes, case.args);
        let mut class = class(CAPACITY_CLASS, "WaitForFirstConsumer");
        class.provisioner = CAPACITY_DRIVER.into();
        lister.apply_class(class);
        lister.apply_csi_driver(CSIDriver {
            metadata: ObjectMeta {
                name: Some(CAPACITY_DRIVER.into()),
                ..ObjectMeta::default()
            },
            spec: CSIDriverSpec {
                storage_capacity: Some(true),
                ..CSIDriverSpec::default()
            },
        });
        let nodes = ["node-a", "node-b", "node-c"];
        for (node, size) in nodes.iter().zip(case.capacities) {
            lister.apply_capacity(capacity(node, size));
        }
        let pod = pod_info(pod(&claim_names));
        let mut state = CycleState::default();
        let (_, pre) = complete(plugin.pre_filter(&mut state, &pod, &Snapshot::default()));
        assert!(pre.is_success(), "{}: PreFilter: {pre:?}", case.name);
        let infos: Vec<Arc<NodeInfo>> = nodes[..case.capacities.len()]
            .iter()
            .map(|name| Arc::new(node_info(node(name, &[(NODE_KEY, name)]), [])))
            .collect();
        for info in &infos {
            let status = plugin.filter(&state, &pod, info);
            assert!(status.is_success(), "{}: Filter: {status:?}", case.name);
        }
        let pre_score = complete(plugin.pre_score(&mut state, &pod, &infos));
        assert!(pre_score.is_success(), "{}: PreScore", case.name);
        let got: Vec<i64> = infos
            .iter()
            .map(|n| plugin.score(&state, &pod, n).expect("scores"))
            .collect();
        assert_eq!(got, case.scores, "{}: Score", case.name);
    }
}

#[test]
fn args_are_validated_as_upstream() {
    let cases = [
        ("defaults", VolumeBindingArgs::default(), vec![]),
        (
            "negative timeout",
            VolumeBindingArgs {
                bind_timeout_seconds: -10,
                ..VolumeBindingArgs::default()
            },
            vec![
                "args.bindTimeoutSeconds: Invalid value: -10: invalid BindTimeoutSeconds, should not be a negative value",
            ],
        ),
        (
            "zero timeout is kept",
            VolumeBindingArgs {
                bind_timeout_seconds: 0,
                ..VolumeBindingArgs::default()
            },
            vec![],
        ),
        (
            "empty shape",
            VolumeBindingArgs {
                bind_timeout_seconds: 600,
                shape: vec![],
            },
            vec!["args.shape: at least one point must be specified"],
        ),
    ];
    for (name, args, want) in cases {
        let got: Vec<String> = args
            .validate("args")
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(got, want, "{name}");
    }
    assert_eq!(VolumeBindingArgs::default().bind_timeout_seconds, 600);
}

#[test]
fn omitted_args_fields_take_upstream_1_37_defaults() {
    // v1 SetDefaults_VolumeBindingArgs with StorageCapacityScoring on (beta, default on
    // since 1.37): bindTimeoutSeconds 600 and the shape that favours free capacity.
    let cases = [
        ("no fields", serde_json::json!({})),
        (
            "timeout only",
            serde_json::json!({"bindTimeoutSeconds": 600}),
        ),
    ];
    let want = VolumeBindingArgs {
        bind_timeout_seconds: 600,
        shape: vec![
            UtilizationShapePoint {
                utilization: 0,
                score: 10,
            },
            UtilizationShapePoint {
                utilization: 100,
                score: 0,
            },
        ],
    };
    for (name, json) in cases {
        let args: VolumeBindingArgs = serde_json::from_value(json).expect("decodes");
        assert_eq!(args, want, "{name}");
    }
    let custom: VolumeBindingArgs = serde_json::from_value(serde_json::json!({
        "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
    }))
    .expect("decodes");
    assert_eq!(
        custom.shape[1].score, 10,
        "a given shape replaces the default"
    );
}

/// A writer that plays the API server and the PV controller: a volume written with a
/// claimRef completes the binding of its claim; a claim written with a selected node is
/// provisioned (a volume is created and bound) unless `provision` is off.
struct PvController {
    volumes: Arc<Volumes>,
    provision: bool,
    writes: StdMutex<Vec<String>>,
}

fn bump<K: kube::ResourceExt>(object: &mut K) {
    let next = crate::cluster::resource_version(object) + 1;
    *object.meta_mut().resource_version.get_or_insert_default() = next.to_string();
}

fn complete_binding(volumes: &Volumes, claim: &PersistentVolumeClaim, volume: &str) {
    let mut claim = claim.clone();
    claim.spec.get_or_insert_default().volume_name = Some(volume.into());
    claim
        .metadata
        .annotations
        .get_or_insert_default()
        .insert(BIND_COMPLETED_ANNOTATION.into(), "yes".into());
    bump(&mut claim);
    volumes.apply_claim(claim);
}

#[async_trait]
impl VolumeWriter for PvController {
    async fn update_volume(&self, volume: &PersistentVolume) -> Result<PersistentVolume, String> {
        let mut volume = volume.clone();
        bump(&mut volume);
        lock(&self.writes).push(format!("pv {}", volume.name_any()));
        self.volumes.apply_volume(volume.clone());
        let reference = volume
            .spec
            .as_ref()
            .and_then(|s| s.claim_ref.clone())
            .expect("a static binding names its claim");
        let claim = self
            .volumes
            .api_claim(
                reference.namespace.as_deref().unwrap_or_default(),
                reference.name.as_deref().unwrap_or_default(),
            )
            .expect("the claim exists");
        complete_binding(&self.volumes, &claim, &volume.name_any());
        Ok(volume)
    }

    async fn update_claim(
        &self,
        claim: &PersistentVolumeClaim,
    ) -> Result<PersistentVolumeClaim, String> {
        let mut claim = claim.clone();
        bump(&mut claim);
        lock(&self.writes).push(format!("pvc {}", claim.name_any()));
        self.volumes.apply_claim(claim.clone());
        if self.provision {
            let name = format!("pvc-{}", claim.name_any());
            let mut volume = pv(&name, "wait-sc");
            volume.metadata.resource_version = Some("1".into());
            self.volumes.apply_volume(volume);
            complete_binding(&self.volumes, &claim, &name);
        }
        Ok(claim)
    }
}

/// A clock whose sleeps return at once, having moved time to their deadline.
#[derive(Default)]
struct StepClock {
    elapsed: StdMutex<Duration>,
    start: std::sync::OnceLock<std::time::Instant>,
}

impl Clock for StepClock {
    fn now(&self) -> std::time::Instant {
        *self.start.get_or_init(std::time::Instant::now) + *lock(&self.elapsed)
    }

    fn sleep_until(
        &self,
        deadline: std::time::Instant,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        let start = *self.start.get_or_init(std::time::Instant::now);
        let mut elapsed = lock(&self.elapsed);
        *elapsed = (*elapsed).max(deadline.saturating_duration_since(start));
        Box::pin(std::future::ready(()))
    }
}

struct Scheduled {
    filter: Status,
    pre_bind: Status,
    volumes: Arc<Volumes>,
    writes: Vec<String>,
    /// Time PreBind spent waiting on the scheduler's clock.
    waited: Duration,
}

/// One scheduling of `pod-a` on `node-a` through PreFilter, Filter, Reserve and PreBind,
/// with a writer playing the PV controller.
fn schedule(
    claims: Vec<PersistentVolumeClaim>,
    volumes: Vec<PersistentVolume>,
    provision: bool,
    bind_timeout_seconds: i64,
) -> Scheduled {
    let lister = Arc::new(Volumes::new());
    let mut provisioning = class("wait-provisioned-sc", "WaitForFirstConsumer");
    provisioning.provisioner = "csi.example.com".into();
    classes()
        .into_iter()
        .chain([provisioning])
        .for_each(|c| lister.apply_class(c));
    claims.into_iter().for_each(|c| lister.apply_claim(c));
    volumes.into_iter().for_each(|v| lister.apply_volume(v));
    let writer = Arc::new(PvController {
        volumes: lister.clone(),
        provision,
        writes: StdMutex::default(),
    });
    let clock = Arc::new(StepClock::default());
    let handle = Handle::builder()
        .volumes(lister.clone())
        .volume_writer(writer.clone())
        .clock(clock.clone())
        .build();
    let plugin = <VolumeBinding as crate::framework::PluginFactory>::build(
        VolumeBindingArgs {
            bind_timeout_seconds,
            ..VolumeBindingArgs::default()
        },
        &handle,
    )
    .expect("VolumeBinding builds");
    let pod = pod_info(pod(&["pvc-a"]));
    let node = Arc::new(node_info(node("node-a", &[]), []));
    let mut state = CycleState::default();
    let (_, pre) = complete(plugin.pre_filter(&mut state, &pod, &Snapshot::default()));
    assert!(pre.is_success(), "PreFilter: {pre:?}");
    let filter = plugin.filter(&state, &pod, &node);
    if !filter.is_success() {
        return Scheduled {
            filter,
            pre_bind: Status::skip(),
            volumes: lister,
            writes: vec![],
            waited: Duration::ZERO,
        };
    }
    let reserve = complete(plugin.reserve(&mut state, &pod, "node-a"));
    assert!(reserve.is_success(), "Reserve: {reserve:?}");
    let pre_bind = complete(plugin.pre_bind(&mut state, &pod, "node-a"));
    if !pre_bind.is_success() {
        complete(plugin.unreserve(&mut state, &pod, "node-a"));
    }
    let writes = lock(&writer.writes).clone();
    let waited = *lock(&clock.elapsed);
    Scheduled {
        filter,
        pre_bind,
        volumes: lister,
        writes,
        waited,
    }
}

fn node_a_volume(name: &str) -> PersistentVolume {
    pinned(
        with_capacity(with_phase(pv(name, "wait-sc"), "Available"), "10Gi"),
        &[(HOSTNAME, &["node-a"])],
    )
}

/// The object as the API server would hold it: with a resourceVersion and a uid.
fn versioned<K: ResourceExt>(mut object: K) -> K {
    object.meta_mut().resource_version = Some("1".into());
    object.meta_mut().uid = Some(format!("uid-{}", object.name_any()));
    object
}

fn fully_bound_to(volumes: &Volumes, claim: &str) -> Option<String> {
    volumes
        .api_claim("default", claim)
        .filter(|c| crate::helpers::volumes::is_fully_bound(c))
        .and_then(|c| c.spec.as_ref()?.volume_name.clone())
}

#[test]
fn a_static_binding_is_written_and_awaited() {
    let got = schedule(
        vec![versioned(requesting(pvc("pvc-a", "wait-sc"), "1Gi"))],
        vec![versioned(node_a_volume("pv-a"))],
        true,
        600,
    );
    assert!(got.filter.is_success());
    assert_eq!(got.pre_bind, Status::success());
    assert_eq!(got.writes, ["pv pv-a"]);
    assert_eq!(
        fully_bound_to(&got.volumes, "pvc-a").as_deref(),
        Some("pv-a")
    );
    // upstream polls once a second, the first time after a second.
    assert_eq!(got.waited, Duration::from_secs(1));
}

#[test]
fn a_waiting_claim_without_a_volume_is_provisioned_on_the_node() {
    let got = schedule(
        vec![versioned(pvc("pvc-a", "wait-provisioned-sc"))],
        vec![],
        true,
        600,
    );
    assert_eq!(got.pre_bind, Status::success());
    assert_eq!(got.writes, ["pvc pvc-a"]);
    let claim = got.volumes.api_claim("default", "pvc-a").expect("claim");
    assert_eq!(
        crate::helpers::volumes::selected_node(&claim),
        Some("node-a")
    );
    assert_eq!(
        fully_bound_to(&got.volumes, "pvc-a").as_deref(),
        Some("pvc-pvc-a")
    );
}

#[test]
fn a_provisioner_that_never_answers_times_out_after_bind_timeout_seconds() {
    let got = schedule(
        vec![versioned(pvc("pvc-a", "wait-provisioned-sc"))],
        vec![],
        false,
        5,
    );
    assert_eq!(
        got.pre_bind,
        Status::error("binding volumes: context deadline exceeded")
    );
    assert_eq!(got.waited, Duration::from_secs(5));
    // The write is not rolled back (upstream has no API rollback); nothing stays assumed.
    let claim = got.volumes.claim("default", "pvc-a").expect("claim");
    assert_eq!(fully_bound_to(&got.volumes, "pvc-a"), None);
    assert_eq!(
        crate::helpers::volumes::selected_node(&claim),
        Some("node-a")
    );
}

#[test]
fn a_zero_bind_timeout_fails_at_once_when_there_is_something_to_wait_for() {
    let got = schedule(
        vec![versioned(pvc("pvc-a", "wait-provisioned-sc"))],
        vec![],
        true,
        0,
    );
    assert_eq!(
        got.pre_bind,
        Status::error("binding volumes: context deadline exceeded")
    );
    assert_eq!(got.waited, Duration::ZERO);
}

#[test]
fn bound_claims_need_no_writes() {
    let got = schedule(
        vec![versioned(bound_to(pvc("pvc-a", "wait-sc"), "pv-a"))],
        vec![versioned(node_a_volume("pv-a"))],
        true,
        600,
    );
    assert_eq!(got.pre_bind, Status::success());
    assert!(got.writes.is_empty());
    assert_eq!(got.waited, Duration::ZERO);
}

/// The assume cache at work: once the first pod reserved the only volume, the second
/// pod's claim finds none on the node, until the first is unreserved.
#[test]
fn a_reserved_volume_is_taken_for_the_next_pod_until_unreserved() {
    let (plugin, _) = plugin_with(
        vec![
            versioned(pvc("pvc-a", "wait-sc")),
            versioned(pvc("pvc-b", "wait-sc")),
        ],
        vec![versioned(node_a_volume("pv-a"))],
        default_args(),
    );
    let node = node_info(node("node-a", &[]), []);
    let first = pod_info(pod(&["pvc-a"]));
    let second = pod_info(
        make_pod()
            .name("pod-b")
            .namespace("default")
            .pvc("pvc-b")
            .obj(),
    );
    let filter = |pod: &PodInfo| {
        let mut state = CycleState::default();
        let (_, pre) = complete(plugin.pre_filter(&mut state, pod, &Snapshot::default()));
        assert!(pre.is_success());
        let status = plugin.filter(&state, pod, &node);
        (state, status)
    };
    let (mut state, status) = filter(&first);
    assert!(status.is_success());
    assert!(complete(plugin.reserve(&mut state, &first, "node-a")).is_success());
    assert_eq!(filter(&second).1, bind_conflict());
    complete(plugin.unreserve(&mut state, &first, "node-a"));
    assert!(filter(&second).1.is_success());
}

/// upstream's TestFindPodVolumesWithCSIMigration: a bound in-tree GCE PD volume with zone
/// labels and no node affinity is checked, on a node that migrated the plugin, with the
/// CSI driver's zone key.
#[test]
fn bound_in_tree_volumes_are_checked_with_their_csi_topology_on_migrated_nodes() {
    use k8s_openapi::api::core::v1::GCEPersistentDiskVolumeSource;
    use k8s_openapi::api::storage::v1::CSINode;

    let claim = bound_to(pvc("pvc-migration-bound", "wait-sc"), "pv-migration-bound");
    let mut volume = with_capacity(pv("pv-migration-bound", "wait-sc"), "1G");
    volume.metadata.labels = Some(BTreeMap::from([
        (
            "failure-domain.beta.kubernetes.io/zone".into(),
            "us-east-1".into(),
        ),
        (
            "failure-domain.beta.kubernetes.io/region".into(),
            "us-east-1a".into(),
        ),
    ]));
    volume.spec.get_or_insert_default().gce_persistent_disk = Some(GCEPersistentDiskVolumeSource {
        pd_name: "test-disk".into(),
        ..GCEPersistentDiskVolumeSource::default()
    });
    let csi_node = |migrated: &str| CSINode {
        metadata: ObjectMeta {
            name: Some("node1".into()),
            annotations: Some(BTreeMap::from([(
                "storage.alpha.kubernetes.io/migrated-plugins".into(),
                migrated.into(),
            )])),
            ..ObjectMeta::default()
        },
        ..CSINode::default()
    };
    let zone = |z: &str| {
        BTreeMap::from([
            (HOSTNAME.to_string(), "node1".to_string()),
            ("topology.gke.io/zone".to_string(), z.to_string()),
        ])
    };
    let cases = [
        (
            "pvc-bound",
            zone("us-east-1"),
            Some(csi_node("kubernetes.io/gce-pd")),
            vec![],
        ),
        (
            "pvc-bound,csinode-not-migrated",
            zone("us-east-1"),
            Some(csi_node("")),
            vec![],
        ),
        ("pvc-bound,missing-csinode", zone("us-east-1"), None, vec![]),
        (
            "pvc-bound,node-different-zone",
            zone("us-east-2"),
            Some(csi_node("kubernetes.io/gce-pd")),
            vec![binder::ConflictReason::NodeConflict],
        ),
    ];
    for (name, labels, csi_node, want) in cases {
        let (_, lister) = plugin_with(vec![claim.clone()], vec![volume.clone()], default_args());
        if let Some(csi_node) = csi_node {
            lister.apply_csi_node(csi_node);
        }
        let claims =
            binder::get_pod_volume_claims(&lister, &pod(&["pvc-migration-bound"])).expect("claims");
        let verdict = binder::find_pod_volumes(&lister, &claims, "node1", &labels).expect(name);
        assert_eq!(verdict.reasons, want, "{name}");
    }
}
