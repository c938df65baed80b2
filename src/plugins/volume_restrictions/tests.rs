//! Upstream's `volume_restrictions_test.go` tables: the four in-tree disk conflict tables
//! and TestAccessModeConflicts.

use k8s_openapi::api::core::v1::{
    AWSElasticBlockStoreVolumeSource, GCEPersistentDiskVolumeSource, ISCSIVolumeSource,
    PersistentVolumeClaim, PersistentVolumeClaimSpec, RBDVolumeSource,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;

/// A table row: case, pending pod, pods placed on the node (and in the cluster), claims,
/// PreFilter status, Filter status.
type AccessModeCase = (
    &'static str,
    Pod,
    Vec<Pod>,
    Vec<PersistentVolumeClaim>,
    Status,
    Option<Status>,
);
/// A table row: case, the pod's volumes, pods on the node, PreFilter and Filter status.
type DiskCase = (&'static str, Vec<Volume>, Vec<Pod>, Status, Option<Status>);
use crate::testing::{make_node, make_pod, node_info, pod_info, snapshot};

fn plugin(claims: Vec<PersistentVolumeClaim>) -> VolumeRestrictions {
    let volumes = Volumes::new();
    claims.into_iter().for_each(|c| volumes.apply_claim(c));
    let handle = Handle::builder().volumes(Arc::new(volumes)).build();
    <VolumeRestrictions as crate::framework::PluginFactory>::build(NoArgs {}, &handle)
        .expect("VolumeRestrictions builds")
}

fn with_volumes(volumes: Vec<Volume>) -> Pod {
    let mut pod = make_pod().name("pod").namespace("default").obj();
    if let Some(spec) = pod.spec.as_mut() {
        spec.volumes = (!volumes.is_empty()).then_some(volumes);
    }
    pod
}

/// PreFilter's status, and Filter's when PreFilter succeeded (upstream runs Filter only
/// then), against a node running `on_node`; `placed` are every placed pod of the cluster.
fn run(
    plugin: &VolumeRestrictions,
    pod: Pod,
    on_node: Vec<Pod>,
    placed: Vec<Pod>,
) -> (Status, Option<Status>) {
    let pod = pod_info(pod);
    let mut state = CycleState::default();
    let cluster = snapshot(vec![make_node().name("node-1").obj()], placed);
    let (_, pre) =
        crate::testing::executor::complete(plugin.pre_filter(&mut state, &pod, &cluster));
    let node = node_info(make_node().name("node-1").obj(), on_node);
    let filter = pre.is_success().then(|| plugin.filter(&state, &pod, &node));
    (pre, filter)
}

/// The four cases every in-tree disk table has, for a disk `same` and another `other`.
fn disk_table(kind: &str, same: Volume, other: Volume) {
    let plugin = plugin(vec![]);
    let conflict = || Some(Status::unschedulable(ERR_REASON_DISK_CONFLICT));
    let cases: Vec<DiskCase> = vec![
        ("nothing", vec![], vec![], Status::skip(), None),
        (
            "one state",
            vec![],
            vec![with_volumes(vec![same.clone()])],
            Status::skip(),
            None,
        ),
        (
            "same state",
            vec![same.clone()],
            vec![with_volumes(vec![same.clone()])],
            Status::success(),
            conflict(),
        ),
        (
            "different state",
            vec![other],
            vec![with_volumes(vec![same])],
            Status::success(),
            Some(Status::success()),
        ),
    ];
    for (name, volumes, on_node, want_pre, want_filter) in cases {
        let (pre, filter) = run(&plugin, with_volumes(volumes), on_node, vec![]);
        assert_eq!(pre, want_pre, "{kind} {name}: PreFilter");
        assert_eq!(filter, want_filter, "{kind} {name}: Filter");
    }
}

fn volume(name: &str) -> Volume {
    Volume {
        name: name.into(),
        ..Volume::default()
    }
}

#[test]
fn gce_disk_conflicts() {
    let gce = |pd: &str| Volume {
        gce_persistent_disk: Some(GCEPersistentDiskVolumeSource {
            pd_name: pd.into(),
            ..GCEPersistentDiskVolumeSource::default()
        }),
        ..volume("v")
    };
    disk_table("GCE", gce("foo"), gce("bar"));
    // A volume without any of the four sources needs no check.
    let (pre, filter) = run(
        &plugin(vec![]),
        with_volumes(vec![volume("volume with no restriction")]),
        vec![],
        vec![],
    );
    assert_eq!((pre, filter), (Status::skip(), None));
}

#[test]
fn aws_disk_conflicts() {
    let ebs = |id: &str| Volume {
        aws_elastic_block_store: Some(AWSElasticBlockStoreVolumeSource {
            volume_id: id.into(),
            ..AWSElasticBlockStoreVolumeSource::default()
        }),
        ..volume("v")
    };
    disk_table("AWS", ebs("foo"), ebs("bar"));
}

#[test]
fn rbd_disk_conflicts() {
    let rbd = |monitors: [&str; 2]| Volume {
        rbd: Some(RBDVolumeSource {
            monitors: monitors.iter().map(|m| m.to_string()).collect(),
            pool: Some("foo".into()),
            image: "bar".into(),
            fs_type: Some("ext4".into()),
            ..RBDVolumeSource::default()
        }),
        ..volume("v")
    };
    disk_table("RBD", rbd(["a", "b"]), rbd(["c", "d"]));
}

#[test]
fn iscsi_disk_conflicts() {
    let iscsi = |iqn: &str| Volume {
        iscsi: Some(ISCSIVolumeSource {
            target_portal: "127.0.0.1:3260".into(),
            iqn: iqn.into(),
            lun: 0,
            fs_type: Some("ext4".into()),
            ..ISCSIVolumeSource::default()
        }),
        ..volume("v")
    };
    disk_table(
        "iSCSI",
        iscsi("iqn.2016-12.server:storage.target01"),
        iscsi("iqn.2017-12.server:storage.target01"),
    );
}

#[test]
fn access_mode_conflicts() {
    let claim = |name: &str, mode: &str| PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec![mode.into()]),
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    };
    let rwop_1 = || claim("claim-with-rwop-1", READ_WRITE_ONCE_POD);
    let rwop_2 = || claim("claim-with-rwop-2", READ_WRITE_ONCE_POD);
    let rwx = || claim("claim-with-rwx", "ReadWriteMany");
    let pod = |name: &str, claims: &[&str]| {
        claims
            .iter()
            .fold(
                make_pod().name(name).namespace("default").node("node-1"),
                |pod, c| pod.pvc(c),
            )
            .obj()
    };
    let with_one_pvc = || pod("pod-with-one-pvc", &["claim-with-rwop-1"]);
    let with_two_pvcs = || {
        pod(
            "pod-with-two-pvcs",
            &["claim-with-rwop-1", "claim-with-rwop-2"],
        )
    };
    let with_one_conflict = || pod("pod-with-one-conflict", &["claim-with-rwop-1"]);
    let with_two_conflicts = || {
        pod(
            "pod-with-two-conflicts",
            &["claim-with-rwop-1", "claim-with-rwop-2"],
        )
    };
    let with_rwx = || pod("pod-with-rwx", &["claim-with-rwx"]);
    let rwop_conflict = || Some(Status::unschedulable(ERR_REASON_RWOP_CONFLICT));
    let cases: Vec<AccessModeCase> = vec![
        (
            "nothing",
            make_pod().obj(),
            vec![],
            vec![],
            Status::skip(),
            None,
        ),
        (
            "failed to get PVC",
            with_one_pvc(),
            vec![],
            vec![],
            Status::unresolvable("persistentvolumeclaim \"claim-with-rwop-1\" not found"),
            None,
        ),
        (
            "no access mode conflict",
            with_one_pvc(),
            vec![with_rwx()],
            vec![rwop_1(), rwx()],
            Status::skip(),
            None,
        ),
        (
            "access mode conflict, unschedulable",
            with_one_conflict(),
            vec![with_one_pvc(), with_rwx()],
            vec![rwop_1(), rwx()],
            Status::success(),
            rwop_conflict(),
        ),
        (
            "two conflicts, unschedulable",
            with_two_conflicts(),
            vec![with_two_pvcs(), with_rwx()],
            vec![rwop_1(), rwop_2(), rwx()],
            Status::success(),
            rwop_conflict(),
        ),
    ];
    for (name, pending, existing, claims, want_pre, want_filter) in cases {
        let plugin = plugin(claims);
        let (pre, filter) = run(&plugin, pending, existing.clone(), existing);
        assert_eq!(pre, want_pre, "{name}: PreFilter");
        assert_eq!(filter, want_filter, "{name}: Filter");
    }
}
