//! Upstream's `volume_zone_test.go` tables: TestSingleZone, TestMultiZone and
//! TestWithBinding, with their objects and expected statuses.

use k8s_openapi::api::core::v1::{
    Node, PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimSpec, Pod,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;
use crate::testing::{labels, make_node, make_pod, node_info, pod_info};

const USELESS: (&str, &str) = ("uselessLabel", "none");

/// A node's labels in a table row.
type NodeLabels = Vec<(&'static str, &'static str)>;

fn pv(name: &str, pairs: &[(&str, &str)]) -> PersistentVolume {
    PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(labels(pairs)),
            ..ObjectMeta::default()
        },
        ..PersistentVolume::default()
    }
}

/// A claim in `default`, bound to `volume` when it is not empty, of `class` when given.
fn pvc(name: &str, volume: &str, class: Option<&str>) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            volume_name: (!volume.is_empty()).then(|| volume.into()),
            storage_class_name: class.map(str::to_string),
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    }
}

fn class(name: &str, mode: Option<&str>) -> StorageClass {
    StorageClass {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        volume_binding_mode: mode.map(str::to_string),
        ..StorageClass::default()
    }
}

fn plugin(
    pvs: Vec<PersistentVolume>,
    pvcs: Vec<PersistentVolumeClaim>,
    classes: Vec<StorageClass>,
) -> VolumeZone {
    let volumes = Volumes::new();
    pvs.into_iter().for_each(|v| volumes.apply_volume(v));
    pvcs.into_iter().for_each(|c| volumes.apply_claim(c));
    classes.into_iter().for_each(|c| volumes.apply_class(c));
    let handle = Handle::builder().volumes(Arc::new(volumes)).build();
    <VolumeZone as crate::framework::PluginFactory>::build(NoArgs {}, &handle)
        .expect("VolumeZone builds")
}

/// `pod_1` in `default` mounting `claim` (no volume at all when `None`).
fn pod(claim: Option<&str>) -> Pod {
    let pod = make_pod().name("pod_1").namespace("default");
    match claim {
        Some(claim) => pod.pvc(claim).obj(),
        None => pod.obj(),
    }
}

fn node(pairs: &[(&str, &str)]) -> Node {
    make_node().name("host1").labels(pairs).obj()
}

/// PreFilter's and Filter's statuses, Filter run with whatever state PreFilter left, as
/// upstream's tests do.
fn run(plugin: &VolumeZone, pod: Pod, node: Node) -> (Status, Status) {
    let pod = pod_info(pod);
    let mut state = CycleState::default();
    let (_, pre) = crate::testing::executor::complete(plugin.pre_filter(
        &mut state,
        &pod,
        &Snapshot::default(),
    ));
    let filter = plugin.filter(&state, &pod, &node_info(node, []));
    (pre, filter)
}

fn conflict() -> Status {
    Status::unresolvable(ERR_REASON_CONFLICT)
}

#[test]
fn single_zone() {
    let pvs = vec![
        pv("Vol_1", &[(BETA_ZONE, "us-west1-a")]),
        pv("Vol_2", &[(BETA_REGION, "us-west1"), USELESS]),
        pv("Vol_3", &[(BETA_REGION, "us-west1")]),
        pv("Vol_Stable_1", &[(ZONE, "us-west1-a")]),
        pv("Vol_Stable_2", &[(REGION, "us-west1"), USELESS]),
        pv(
            "Vol_Stable_3",
            &[(ZONE, "us-west1-a"), (REGION, "us-west1-a")],
        ),
    ];
    let pvcs = vec![
        pvc("PVC_1", "Vol_1", None),
        pvc("PVC_2", "Vol_2", None),
        pvc("PVC_3", "Vol_3", None),
        pvc("PVC_4", "Vol_not_exist", None),
        pvc("PVC_Stable_1", "Vol_Stable_1", None),
        pvc("PVC_Stable_2", "Vol_Stable_2", None),
        pvc("PVC_Stable_3", "Vol_Stable_3", None),
    ];
    let plugin = plugin(pvs, pvcs, vec![]);
    let ok = Status::success;
    let cases: Vec<(&str, Option<&str>, NodeLabels, Status, Status)> = vec![
        (
            "pod without volume",
            None,
            vec![(BETA_ZONE, "us-west1-a")],
            Status::skip(),
            ok(),
        ),
        ("node without labels", Some("PVC_1"), vec![], ok(), ok()),
        (
            "beta zone label matched",
            Some("PVC_1"),
            vec![(BETA_ZONE, "us-west1-a"), USELESS],
            ok(),
            ok(),
        ),
        (
            "beta region label matched",
            Some("PVC_2"),
            vec![(BETA_REGION, "us-west1"), USELESS],
            ok(),
            ok(),
        ),
        (
            "beta region label doesn't match",
            Some("PVC_2"),
            vec![(BETA_REGION, "no_us-west1"), USELESS],
            ok(),
            conflict(),
        ),
        (
            "beta zone label doesn't match",
            Some("PVC_1"),
            vec![(BETA_ZONE, "no_us-west1-a"), USELESS],
            ok(),
            conflict(),
        ),
        (
            "zone label matched",
            Some("PVC_Stable_1"),
            vec![(ZONE, "us-west1-a"), USELESS],
            ok(),
            ok(),
        ),
        (
            "region label matched",
            Some("PVC_Stable_2"),
            vec![(REGION, "us-west1"), USELESS],
            ok(),
            ok(),
        ),
        (
            "region label doesn't match",
            Some("PVC_Stable_2"),
            vec![(REGION, "no_us-west1"), USELESS],
            ok(),
            conflict(),
        ),
        (
            "zone label doesn't match",
            Some("PVC_Stable_1"),
            vec![(ZONE, "no_us-west1-a"), USELESS],
            ok(),
            conflict(),
        ),
        (
            "pv with zone and region, node with only zone",
            Some("PVC_Stable_3"),
            vec![(ZONE, "us-west1-a")],
            ok(),
            conflict(),
        ),
        (
            "pv with zone,node with beta zone",
            Some("PVC_Stable_1"),
            vec![(BETA_ZONE, "us-west1-a")],
            ok(),
            conflict(),
        ),
        (
            "pv with beta label,node with ga label, matched",
            Some("PVC_1"),
            vec![(ZONE, "us-west1-a")],
            ok(),
            ok(),
        ),
        (
            "pv with beta label,node with ga label, don't match",
            Some("PVC_1"),
            vec![(ZONE, "us-west1-b")],
            ok(),
            conflict(),
        ),
    ];
    for (name, claim, node_labels, want_pre, want_filter) in cases {
        let (pre, filter) = run(&plugin, pod(claim), node(&node_labels));
        assert_eq!(pre, want_pre, "{name}: PreFilter");
        assert_eq!(filter, want_filter, "{name}: Filter");
    }
}

#[test]
fn multi_zone() {
    let pvs = vec![
        pv("Vol_1", &[(BETA_ZONE, "us-west1-a")]),
        pv("Vol_2", &[(BETA_ZONE, "us-west1-b"), USELESS]),
        pv("Vol_3", &[(BETA_ZONE, "us-west1-c__us-west1-a")]),
        pv("Vol_Stable_1", &[(ZONE, "us-west1-a")]),
        pv("Vol_Stable_2", &[(ZONE, "us-west1-c__us-west1-a")]),
    ];
    let pvcs = vec![
        pvc("PVC_1", "Vol_1", None),
        pvc("PVC_2", "Vol_2", None),
        pvc("PVC_3", "Vol_3", None),
        pvc("PVC_4", "Vol_not_exist", None),
        pvc("PVC_Stable_1", "Vol_Stable_1", None),
        pvc("PVC_Stable_2", "Vol_Stable_2", None),
    ];
    let plugin = plugin(pvs, pvcs, vec![]);
    let ok = Status::success;
    let cases: Vec<(&str, &str, NodeLabels, Status)> = vec![
        ("node without labels", "PVC_3", vec![], ok()),
        (
            "beta zone label matched",
            "PVC_3",
            vec![(BETA_ZONE, "us-west1-a"), USELESS],
            ok(),
        ),
        (
            "beta zone label doesn't match",
            "PVC_1",
            vec![(BETA_ZONE, "us-west1-b"), USELESS],
            conflict(),
        ),
        (
            "zone label matched",
            "PVC_Stable_2",
            vec![(ZONE, "us-west1-a"), USELESS],
            ok(),
        ),
        (
            "zone label doesn't match",
            "PVC_Stable_1",
            vec![(ZONE, "us-west1-b"), USELESS],
            conflict(),
        ),
    ];
    for (name, claim, node_labels, want_filter) in cases {
        let (pre, filter) = run(&plugin, pod(Some(claim)), node(&node_labels));
        assert_eq!(pre, ok(), "{name}: PreFilter");
        assert_eq!(filter, want_filter, "{name}: Filter");
    }
}

#[test]
fn with_binding() {
    let plugin = plugin(
        vec![pv("Vol_1", &[(BETA_ZONE, "us-west1-a")])],
        vec![
            pvc("PVC_1", "Vol_1", None),
            pvc("PVC_NoSC", "", Some("Class_0")),
            pvc("PVC_EmptySC", "", None),
            pvc("PVC_WaitSC", "", Some("Class_Wait")),
            pvc("PVC_ImmediateSC", "", Some("Class_Immediate")),
        ],
        vec![
            class("Class_Immediate", None),
            class("Class_Wait", Some(WAIT_FOR_FIRST_CONSUMER)),
        ],
    );
    let host = || node(&[(BETA_ZONE, "us-west1-a"), USELESS]);
    let uu = |reason: &str| Status::unresolvable(reason);
    let cases: Vec<(&str, &str, Status, Status)> = vec![
        (
            "label zone failure domain matched",
            "PVC_1",
            Status::success(),
            Status::success(),
        ),
        (
            "unbound volume empty storage class",
            "PVC_EmptySC",
            uu("PersistentVolumeClaim had no pv name and storageClass name"),
            uu("PersistentVolumeClaim had no pv name and storageClass name"),
        ),
        (
            "unbound volume no storage class",
            "PVC_NoSC",
            uu("storageclasses.storage.k8s.io \"Class_0\" not found"),
            uu("storageclasses.storage.k8s.io \"Class_0\" not found"),
        ),
        (
            "unbound volume immediate binding mode",
            "PVC_ImmediateSC",
            uu("VolumeBindingMode not set for StorageClass \"Class_Immediate\""),
            uu("VolumeBindingMode not set for StorageClass \"Class_Immediate\""),
        ),
        (
            "unbound volume wait binding mode",
            "PVC_WaitSC",
            Status::skip(),
            Status::success(),
        ),
    ];
    for (name, claim, want_pre, want_filter) in cases {
        let (pre, filter) = run(&plugin, pod(Some(claim)), host());
        assert_eq!(pre, want_pre, "{name}: PreFilter");
        assert_eq!(filter, want_filter, "{name}: Filter");
    }
}
