//! Upstream's `csi_test.go` TestCSILimits table, with its fixtures: for each driver `D`
//! of a case, claims and volumes `csi-D-0..3` (a CSI volume of `D` whose handle is its
//! name; an in-tree EBS volume for `kubernetes.io/aws-ebs`, a hostPath for
//! `kubernetes.io/hostpath`), the unbound claim `csi-4` of class `csi-sc` (provisioned by
//! the case's first driver), `csi-5` without a class, `csi-6` bound to a volume that does
//! not exist; `vaCount` VolumeAttachments per driver; and a CSINode listing every driver
//! (with or without a limit) that marks `kubernetes.io/aws-ebs` migrated. Upstream's
//! `migrationEnabled` and `ephemeralEnabled` flags are left out: both features are GA and
//! the cases behave as they do with them on.

use k8s_openapi::api::core::v1::{
    AWSElasticBlockStoreVolumeSource, CSIPersistentVolumeSource, ConfigMapVolumeSource,
    EphemeralVolumeSource, HostPathVolumeSource, PersistentVolumeClaimSpec,
    PersistentVolumeClaimVolumeSource, PersistentVolumeSpec, SecretVolumeSource,
};
use k8s_openapi::api::storage::v1::{
    CSINodeDriver, CSINodeSpec, StorageClass, VolumeAttachment, VolumeAttachmentSource,
    VolumeAttachmentSpec, VolumeNodeResources,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::*;
use crate::framework::Plugin;
use crate::helpers::csi_translation::MIGRATED_PLUGINS_ANNOTATION;
use crate::testing::{PodWrapper, make_node, make_pod, moves_on, node_info, pod_info};

const NODE: &str = "node-for-max-pd-test-1";
const EBS: &str = "ebs.csi.aws.com";
const GCE: &str = "pd.csi.storage.gke.io";
const IN_TREE_EBS: &str = "kubernetes.io/aws-ebs";
const HOSTPATH: &str = "kubernetes.io/hostpath";
const CLASS: &str = "csi-sc";

/// Where the node's limits come from (upstream `limitSource`).
#[derive(Debug, Clone, Copy)]
enum LimitSource {
    /// A CSINode listing every driver with `allocatable.count` = the case's maximum.
    CsiNode,
    /// A CSINode listing every driver without a limit.
    CsiNodeWithNoLimit,
    /// No CSINode.
    Absent,
}

/// One row of TestCSILimits.
struct Case {
    name: &'static str,
    new_pod: Pod,
    existing_pods: Vec<Pod>,
    extra_claims: Vec<PersistentVolumeClaim>,
    max_vols: i32,
    va_count: usize,
    drivers: &'static [&'static str],
    limit_source: LimitSource,
    /// Filter's status; upstream runs Filter only when PreFilter does not skip.
    want: Status,
    /// PreFilter's status.
    want_pre_filter: Status,
}

impl Case {
    fn new(name: &'static str, new_pod: &Pod, drivers: &'static [&'static str]) -> Self {
        Case {
            name,
            new_pod: new_pod.clone(),
            existing_pods: Vec::new(),
            extra_claims: Vec::new(),
            max_vols: 0,
            va_count: 0,
            drivers,
            limit_source: LimitSource::Absent,
            want: Status::success(),
            want_pre_filter: Status::success(),
        }
    }

    fn existing(mut self, pods: &[&Pod]) -> Self {
        self.existing_pods = pods.iter().map(|p| (*p).clone()).collect();
        self
    }

    fn limit(mut self, source: LimitSource, max_vols: i32) -> Self {
        self.limit_source = source;
        self.max_vols = max_vols;
        self
    }

    fn attachments(mut self, va_count: usize) -> Self {
        self.va_count = va_count;
        self
    }

    fn claims(mut self, claims: &[&PersistentVolumeClaim]) -> Self {
        self.extra_claims = claims.iter().map(|c| (*c).clone()).collect();
        self
    }

    fn want(mut self, status: Status) -> Self {
        self.want = status;
        self
    }

    fn want_pre_filter(mut self, status: Status) -> Self {
        self.want_pre_filter = status;
        self
    }
}

fn named(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        ..ObjectMeta::default()
    }
}

fn claim(name: &str, class: Option<&str>, volume: Option<&str>) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: named(name),
        spec: Some(PersistentVolumeClaimSpec {
            storage_class_name: class.map(str::to_string),
            volume_name: volume.map(str::to_string),
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    }
}

/// Volume `name` of `driver`, as upstream's `getFakeCSIPVLister` writes it.
fn volume(name: &str, driver: &str) -> PersistentVolume {
    let mut spec = PersistentVolumeSpec::default();
    match driver {
        IN_TREE_EBS => {
            spec.aws_elastic_block_store = Some(AWSElasticBlockStoreVolumeSource {
                volume_id: name.into(),
                ..Default::default()
            });
        }
        HOSTPATH => {
            spec.host_path = Some(HostPathVolumeSource {
                path: "/tmp".into(),
                ..Default::default()
            });
        }
        _ => {
            spec.csi = Some(CSIPersistentVolumeSource {
                driver: driver.into(),
                volume_handle: name.into(),
                ..Default::default()
            });
        }
    }
    PersistentVolume {
        metadata: named(name),
        spec: Some(spec),
        ..PersistentVolume::default()
    }
}

fn attachment(name: &str, node: &str, attacher: &str, volume: Option<&str>) -> VolumeAttachment {
    VolumeAttachment {
        metadata: named(name),
        spec: VolumeAttachmentSpec {
            attacher: attacher.into(),
            node_name: node.into(),
            source: VolumeAttachmentSource {
                persistent_volume_name: volume.map(str::to_string),
                ..Default::default()
            },
        },
        ..Default::default()
    }
}

fn csi_node(drivers: &[&str], limit: Option<i32>) -> CSINode {
    CSINode {
        metadata: ObjectMeta {
            name: Some(NODE.into()),
            annotations: Some(crate::testing::labels(&[(
                MIGRATED_PLUGINS_ANNOTATION,
                IN_TREE_EBS,
            )])),
            ..ObjectMeta::default()
        },
        spec: CSINodeSpec {
            drivers: drivers
                .iter()
                .map(|driver| CSINodeDriver {
                    name: driver.to_string(),
                    node_id: NODE.into(),
                    allocatable: limit.map(|count| VolumeNodeResources { count: Some(count) }),
                    ..Default::default()
                })
                .collect(),
        },
        status: None,
    }
}

/// The lister contents of a case (upstream's `getFake*Lister`s).
fn fixture_volumes(case: &Case) -> Volumes {
    let volumes = Volumes::new();
    for driver in case.drivers {
        for j in 0..4 {
            let name = format!("csi-{driver}-{j}");
            volumes.apply_volume(volume(&name, driver));
            volumes.apply_claim(claim(&name, None, Some(&name)));
        }
        for j in 0..case.va_count {
            volumes.apply_attachment(attachment(
                &format!("va-{driver}-{j}"),
                NODE,
                driver,
                Some(&format!("csi-{driver}-{j}")),
            ));
        }
    }
    volumes.apply_claim(claim("csi-4", Some(CLASS), None));
    volumes.apply_claim(claim("csi-5", None, None));
    volumes.apply_claim(claim("csi-6", Some(CLASS), Some("missing-in-action")));
    for extra in &case.extra_claims {
        volumes.apply_claim(extra.clone());
    }
    volumes.apply_class(StorageClass {
        metadata: named(CLASS),
        provisioner: case.drivers[0].into(),
        ..StorageClass::default()
    });
    match case.limit_source {
        LimitSource::CsiNode => volumes.apply_csi_node(csi_node(case.drivers, Some(case.max_vols))),
        LimitSource::CsiNodeWithNoLimit => volumes.apply_csi_node(csi_node(case.drivers, None)),
        LimitSource::Absent => {}
    }
    volumes
}

fn plugin(volumes: Volumes) -> NodeVolumeLimits {
    let handle = Handle::builder().volumes(Arc::new(volumes)).build();
    <NodeVolumeLimits as crate::framework::PluginFactory>::build(NoArgs {}, &handle)
        .expect("NodeVolumeLimits builds")
}

/// PreFilter's status, and Filter's against the case's node when PreFilter did not skip.
fn run(plugin: &NodeVolumeLimits, pod: &Pod, existing: &[Pod]) -> (Status, Option<Status>) {
    let pod = pod_info(pod.clone());
    let mut state = CycleState::default();
    let (_, pre) = crate::testing::executor::complete(plugin.pre_filter(
        &mut state,
        &pod,
        &Snapshot::default(),
    ));
    let node = node_info(make_node().name(NODE).obj(), existing.iter().cloned());
    let filter = (!pre.is_skip()).then(|| plugin.filter(&state, &pod, &node));
    (pre, filter)
}

fn with_volumes(pod: PodWrapper, volumes: Vec<Volume>) -> Pod {
    let mut pod = pod.obj();
    if let Some(spec) = pod.spec.as_mut() {
        spec.volumes.get_or_insert_with(Vec::new).extend(volumes);
    }
    pod
}

fn ephemeral(name: &str) -> Volume {
    Volume {
        name: name.into(),
        ephemeral: Some(EphemeralVolumeSource::default()),
        ..Volume::default()
    }
}

fn inline_ebs(volume_id: &str) -> Volume {
    Volume {
        aws_elastic_block_store: Some(AWSElasticBlockStoreVolumeSource {
            volume_id: volume_id.into(),
            ..Default::default()
        }),
        ..Volume::default()
    }
}

fn config_map_and_secret() -> Vec<Volume> {
    vec![
        Volume {
            config_map: Some(ConfigMapVolumeSource::default()),
            ..Volume::default()
        },
        Volume {
            secret: Some(SecretVolumeSource::default()),
            ..Volume::default()
        },
    ]
}

/// A claim in `test` of class `csi-sc`, controlled by the pod with `owner_uid` when given.
fn ephemeral_claim(name: &str, owner_uid: Option<&str>) -> PersistentVolumeClaim {
    let mut claim = claim(name, Some(CLASS), None);
    claim.metadata.namespace = Some("test".into());
    claim.metadata.owner_references = owner_uid.map(|uid| {
        vec![OwnerReference {
            kind: "Pod".into(),
            name: "abc".into(),
            uid: uid.into(),
            controller: Some(true),
            ..OwnerReference::default()
        }]
    });
    claim
}

fn exceed() -> Status {
    Status::unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
}

/// Upstream's fake lister spells the resource `persistentvolumeclaims`; a real
/// informer's lister, which berth's matches, spells it `persistentvolumeclaim`.
fn abc_xyz_missing() -> Status {
    Status::unresolvable("looking up PVC test/abc-xyz: persistentvolumeclaim \"abc-xyz\" not found")
}

#[test]
fn csi_limits() {
    use LimitSource::{Absent, CsiNode, CsiNodeWithNoLimit};

    let running_pod = make_pod().pvc("csi-ebs.csi.aws.com-3").obj();
    let pending_volume_pod = make_pod().pvc("csi-4").obj();
    // A different pod than pending_volume_pod, using the same unbound claim.
    let unbound_pvc_pod2 = make_pod().pvc("csi-4").obj();
    let missing_pv_pod = make_pod().pvc("csi-6").obj();
    let no_sc_pvc_pod = make_pod().pvc("csi-5").obj();
    let gce_two_vol_pod = make_pod()
        .pvc("csi-pd.csi.storage.gke.io-1")
        .pvc("csi-pd.csi.storage.gke.io-2")
        .obj();
    let in_tree_one_vol_pod = make_pod().pvc("csi-kubernetes.io/aws-ebs-0").obj();
    let in_tree_two_vol_pod = make_pod()
        .pvc("csi-kubernetes.io/aws-ebs-1")
        .pvc("csi-kubernetes.io/aws-ebs-2")
        .obj();
    let csi_ebs_one_vol_pod = make_pod().pvc("csi-ebs.csi.aws.com-0").obj();
    let csi_ebs_two_vol_pod = make_pod()
        .pvc("csi-ebs.csi.aws.com-1")
        .pvc("csi-ebs.csi.aws.com-2")
        .obj();
    let in_tree_non_migratable_one_vol_pod = make_pod().pvc("csi-kubernetes.io/hostpath-0").obj();
    let abc = || make_pod().name("abc").namespace("test");
    let ephemeral_volume_pod = with_volumes(abc().uid("12345"), vec![ephemeral("xyz")]);
    let ephemeral_claim_xyz = ephemeral_claim("abc-xyz", Some("12345"));
    let conflicting_claim = ephemeral_claim("abc-xyz", None);
    let ephemeral_two_volume_pod =
        with_volumes(abc().uid("12345II"), vec![ephemeral("x"), ephemeral("y")]);
    let ephemeral_claim_x = ephemeral_claim("abc-x", Some("12345II"));
    let ephemeral_claim_y = ephemeral_claim("abc-y", Some("12345II"));
    let in_tree_inline_vol_pod = with_volumes(make_pod(), vec![inline_ebs("aws-inline1")]);
    let in_tree_inline_vol_pod_with_same_csi_volume_id =
        with_volumes(make_pod(), vec![inline_ebs("csi-ebs.csi.aws.com-1")]);
    let only_configmap_and_secret_vol_pod = with_volumes(make_pod(), config_map_and_secret());
    let pvc_pod_with_configmap_and_secret = with_volumes(
        make_pod(),
        [
            config_map_and_secret(),
            vec![Volume {
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: "csi-ebs.csi.aws.com-0".into(),
                    read_only: None,
                }),
                ..Volume::default()
            }],
        ]
        .concat(),
    );
    let ephemeral_pod_with_configmap_and_secret = with_volumes(
        abc(),
        [config_map_and_secret(), vec![ephemeral("xyz")]].concat(),
    );
    let inline_migratable_pod_with_configmap_and_secret = with_volumes(
        make_pod(),
        [config_map_and_secret(), vec![inline_ebs("aws-inline1")]].concat(),
    );

    const EBS_ONLY: &[&str] = &[EBS];
    const EBS_AND_GCE: &[&str] = &[EBS, GCE];
    const MIGRATED_EBS: &[&str] = &[IN_TREE_EBS, EBS];
    const HOSTPATH_AND_EBS: &[&str] = &[HOSTPATH, EBS];

    let cases = vec![
        Case::new(
            "should count VolumeAttachments towards volume limit when no pods exist",
            &csi_ebs_one_vol_pod,
            EBS_ONLY,
        )
        .limit(CsiNode, 2)
        .attachments(2)
        .want(exceed()),
        Case::new(
            "should schedule pod when VolumeAttachments count does not exceed limit",
            &csi_ebs_one_vol_pod,
            EBS_ONLY,
        )
        .limit(CsiNode, 2)
        .attachments(1),
        Case::new(
            "fits when node volume limit >= new pods CSI volume",
            &csi_ebs_one_vol_pod,
            EBS_ONLY,
        )
        .existing(&[&running_pod, &csi_ebs_two_vol_pod])
        .limit(CsiNode, 4),
        Case::new(
            "doesn't when node volume limit <= pods CSI volume",
            &csi_ebs_one_vol_pod,
            EBS_ONLY,
        )
        .existing(&[&running_pod, &csi_ebs_two_vol_pod])
        .limit(CsiNode, 2)
        .want(exceed()),
        Case::new(
            "should when driver does not support volume limits",
            &csi_ebs_one_vol_pod,
            EBS_ONLY,
        )
        .existing(&[&running_pod, &csi_ebs_two_vol_pod])
        .limit(CsiNodeWithNoLimit, 2),
        Case::new(
            "count pending PVCs towards volume limit <= pods CSI volume",
            &csi_ebs_one_vol_pod,
            EBS_ONLY,
        )
        .existing(&[&pending_volume_pod, &csi_ebs_two_vol_pod])
        .limit(CsiNode, 2)
        .want(exceed()),
        Case::new(
            "count multiple pending pvcs towards volume limit >= pods CSI volume",
            &csi_ebs_one_vol_pod,
            EBS_ONLY,
        )
        .existing(&[&pending_volume_pod, &unbound_pvc_pod2, &csi_ebs_two_vol_pod])
        .limit(CsiNode, 4),
        Case::new(
            "should count PVCs with invalid PV name but valid SC",
            &csi_ebs_one_vol_pod,
            EBS_ONLY,
        )
        .existing(&[&missing_pv_pod, &csi_ebs_two_vol_pod])
        .limit(CsiNode, 2)
        .want(exceed()),
        Case::new(
            "don't count pvcs with missing SC towards volume limit",
            &csi_ebs_one_vol_pod,
            EBS_ONLY,
        )
        .existing(&[&running_pod, &no_sc_pvc_pod])
        .limit(CsiNode, 2),
        Case::new(
            "count pvcs with the same type towards volume limit",
            &csi_ebs_one_vol_pod,
            EBS_AND_GCE,
        )
        .existing(&[&gce_two_vol_pod, &csi_ebs_two_vol_pod])
        .limit(CsiNode, 2)
        .want(exceed()),
        Case::new(
            "don't count pvcs with different type towards volume limit",
            &gce_two_vol_pod,
            EBS_AND_GCE,
        )
        .existing(&[&csi_ebs_two_vol_pod, &running_pod])
        .limit(CsiNode, 2),
        Case::new(
            "should count in-tree volumes if migration is enabled",
            &in_tree_one_vol_pod,
            MIGRATED_EBS,
        )
        .existing(&[&in_tree_two_vol_pod])
        .limit(CsiNode, 2)
        .want(exceed()),
        Case::new("nil csi node", &in_tree_inline_vol_pod, MIGRATED_EBS)
            .existing(&[&in_tree_two_vol_pod])
            .limit(Absent, 0),
        Case::new(
            "should count unbound in-tree volumes if migration is enabled",
            &pending_volume_pod,
            MIGRATED_EBS,
        )
        .existing(&[&in_tree_two_vol_pod])
        .limit(CsiNode, 2)
        .want(exceed()),
        Case::new(
            "should not limit pod if volume used does not report limits",
            &in_tree_one_vol_pod,
            MIGRATED_EBS,
        )
        .existing(&[&in_tree_two_vol_pod])
        .limit(CsiNodeWithNoLimit, 2),
        Case::new(
            "should not count non-migratable in-tree volumes",
            &in_tree_non_migratable_one_vol_pod,
            HOSTPATH_AND_EBS,
        )
        .existing(&[&csi_ebs_two_vol_pod])
        .limit(CsiNode, 2),
        Case::new(
            "should count in-tree inline volumes if migration is enabled",
            &in_tree_inline_vol_pod,
            MIGRATED_EBS,
        )
        .existing(&[&in_tree_two_vol_pod])
        .limit(CsiNode, 2)
        .want(exceed()),
        Case::new(
            "should count in-tree and csi volumes if migration is enabled (when scheduling in-tree volumes)",
            &in_tree_one_vol_pod,
            MIGRATED_EBS,
        )
        .existing(&[&csi_ebs_two_vol_pod])
        .limit(CsiNode, 2)
        .want(exceed()),
        Case::new(
            "should count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)",
            &in_tree_inline_vol_pod,
            MIGRATED_EBS,
        )
        .existing(&[&csi_ebs_two_vol_pod, &in_tree_one_vol_pod])
        .limit(CsiNode, 3)
        .want(exceed()),
        Case::new(
            "should not count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)",
            &in_tree_inline_vol_pod_with_same_csi_volume_id,
            MIGRATED_EBS,
        )
        .existing(&[&csi_ebs_two_vol_pod, &in_tree_one_vol_pod])
        .limit(CsiNode, 3),
        Case::new(
            "should count in-tree and csi volumes if migration is enabled (when scheduling csi volumes)",
            &csi_ebs_one_vol_pod,
            MIGRATED_EBS,
        )
        .existing(&[&in_tree_two_vol_pod])
        .limit(CsiNode, 2)
        .want(exceed()),
        Case::new("ephemeral volume missing", &ephemeral_volume_pod, EBS_ONLY)
            .limit(CsiNodeWithNoLimit, 0)
            .want(abc_xyz_missing()),
        Case::new("ephemeral volume not owned", &ephemeral_volume_pod, EBS_ONLY)
            .claims(&[&conflicting_claim])
            .limit(CsiNodeWithNoLimit, 0)
            .want(Status::error(
                "PVC test/abc-xyz was not created for pod test/abc (pod is not owner)",
            )),
        Case::new("ephemeral volume unbound", &ephemeral_volume_pod, EBS_ONLY)
            .claims(&[&ephemeral_claim_xyz])
            .limit(CsiNodeWithNoLimit, 0),
        Case::new(
            "ephemeral doesn't when node volume limit <= pods CSI volume",
            &ephemeral_volume_pod,
            EBS_ONLY,
        )
        .claims(&[&ephemeral_claim_xyz])
        .existing(&[&running_pod, &csi_ebs_two_vol_pod])
        .limit(CsiNode, 2)
        .want(exceed()),
        Case::new(
            "ephemeral doesn't when node volume limit <= pods ephemeral CSI volume",
            &csi_ebs_one_vol_pod,
            EBS_ONLY,
        )
        .claims(&[&ephemeral_claim_x, &ephemeral_claim_y])
        .existing(&[&running_pod, &ephemeral_two_volume_pod])
        .limit(CsiNode, 2)
        .want(exceed()),
        Case::new(
            "persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent volume, ephemeral disabled",
            &csi_ebs_one_vol_pod,
            EBS_ONLY,
        )
        .claims(&[&ephemeral_claim_xyz])
        .existing(&[&running_pod, &ephemeral_volume_pod, &csi_ebs_two_vol_pod])
        .limit(CsiNode, 3)
        .want(exceed()),
        Case::new(
            "persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent volume",
            &csi_ebs_one_vol_pod,
            EBS_ONLY,
        )
        .claims(&[&ephemeral_claim_xyz])
        .existing(&[&running_pod, &ephemeral_volume_pod, &csi_ebs_two_vol_pod])
        .limit(CsiNode, 3)
        .want(exceed()),
        Case::new(
            "persistent okay when node volume limit > pods ephemeral CSI volume + persistent volume",
            &csi_ebs_one_vol_pod,
            EBS_ONLY,
        )
        .claims(&[&ephemeral_claim_xyz])
        .existing(&[&running_pod, &ephemeral_volume_pod, &csi_ebs_two_vol_pod])
        .limit(CsiNode, 5),
        Case::new(
            "skip Filter when the pod only uses secrets and configmaps",
            &only_configmap_and_secret_vol_pod,
            EBS_ONLY,
        )
        .limit(CsiNode, 2)
        .want_pre_filter(Status::skip()),
        Case::new(
            "don't skip Filter when the pod has pvcs",
            &pvc_pod_with_configmap_and_secret,
            EBS_ONLY,
        )
        .limit(CsiNode, 2),
        Case::new(
            "don't skip Filter when the pod has ephemeral volumes",
            &ephemeral_pod_with_configmap_and_secret,
            EBS_ONLY,
        )
        .limit(CsiNodeWithNoLimit, 0)
        .want(abc_xyz_missing()),
        Case::new(
            "don't skip Filter when the pod has inline migratable volumes",
            &inline_migratable_pod_with_configmap_and_secret,
            MIGRATED_EBS,
        )
        .existing(&[&in_tree_two_vol_pod])
        .limit(CsiNode, 2)
        .want(exceed()),
    ];
    assert_eq!(cases.len(), 33, "upstream's table has 33 cases");
    for case in cases {
        let plugin = plugin(fixture_volumes(&case));
        let (pre, filter) = run(&plugin, &case.new_pod, &case.existing_pods);
        assert_eq!(pre, case.want_pre_filter, "{}: PreFilter", case.name);
        if let Some(filter) = filter {
            assert_eq!(filter, case.want, "{}: Filter", case.name);
        }
    }
}

/// A row: case, pending pod, pods on the node, attachments, the CSINode's limit, Filter.
type AttachmentCase = (
    &'static str,
    Pod,
    Vec<Pod>,
    Vec<VolumeAttachment>,
    i32,
    Status,
);

/// The VolumeAttachment rules TestCSILimits' two attachment cases leave out, and a claim
/// not bound yet shared by the pending pod and a pod on the node: the fixtures of
/// TestCSILimits for `kubernetes.io/aws-ebs` and `ebs.csi.aws.com`, a CSINode allowing
/// `max` volumes of each, and the row's attachments.
#[test]
fn attachments_and_shared_claims() {
    let one = |claim: &str| make_pod().pvc(claim).obj();
    let on_node = |name: &str, volume: &str| attachment(name, NODE, EBS, Some(volume));
    let cases: Vec<AttachmentCase> = vec![
        (
            "an attachment of a volume a pod on the node uses counts once",
            one("csi-ebs.csi.aws.com-0"),
            vec![one("csi-ebs.csi.aws.com-1")],
            vec![on_node("va-1", "csi-ebs.csi.aws.com-1")],
            2,
            Status::success(),
        ),
        (
            "an attachment to another node does not count",
            one("csi-ebs.csi.aws.com-0"),
            vec![],
            vec![attachment(
                "va-1",
                "other-node",
                EBS,
                Some("csi-ebs.csi.aws.com-1"),
            )],
            1,
            Status::success(),
        ),
        (
            "an attachment of an inline volume does not count",
            one("csi-ebs.csi.aws.com-0"),
            vec![],
            vec![attachment("va-1", NODE, EBS, None)],
            1,
            Status::success(),
        ),
        (
            "an attachment of a volume that does not exist does not count",
            one("csi-ebs.csi.aws.com-0"),
            vec![],
            vec![on_node("va-1", "gone")],
            1,
            Status::success(),
        ),
        (
            "an attachment without an attacher does not count",
            one("csi-ebs.csi.aws.com-0"),
            vec![],
            vec![attachment("va-1", NODE, "", Some("csi-ebs.csi.aws.com-1"))],
            1,
            Status::success(),
        ),
        (
            "an attachment counts against its attacher's limit",
            one("csi-ebs.csi.aws.com-0"),
            vec![],
            vec![on_node("va-1", "csi-ebs.csi.aws.com-1")],
            1,
            exceed(),
        ),
        (
            "an attachment of an in-tree volume counts as its CSI form",
            one("csi-ebs.csi.aws.com-0"),
            vec![],
            vec![on_node("va-1", "csi-kubernetes.io/aws-ebs-1")],
            1,
            exceed(),
        ),
        (
            "an attachment of an in-tree volume a pod on the node uses counts once",
            one("csi-ebs.csi.aws.com-0"),
            vec![one("csi-kubernetes.io/aws-ebs-1")],
            vec![on_node("va-1", "csi-kubernetes.io/aws-ebs-1")],
            2,
            Status::success(),
        ),
        (
            "a claim not bound yet that a pod on the node uses counts once",
            one("csi-4"),
            vec![make_pod().pvc("csi-4").pvc("csi-ebs.csi.aws.com-1").obj()],
            vec![],
            2,
            Status::success(),
        ),
        (
            "a claim not bound yet counts for the driver of its class",
            one("csi-4"),
            vec![one("csi-ebs.csi.aws.com-1"), one("csi-ebs.csi.aws.com-2")],
            vec![],
            2,
            exceed(),
        ),
    ];
    for (name, pod, existing, attachments, max, want) in cases {
        let case = Case::new(name, &pod, &[IN_TREE_EBS, EBS]).limit(LimitSource::CsiNode, max);
        let volumes = fixture_volumes(&case);
        attachments
            .into_iter()
            .for_each(|a| volumes.apply_attachment(a));
        let (pre, filter) = run(&plugin(volumes), &pod, &existing);
        assert_eq!(pre, Status::success(), "{name}: PreFilter");
        assert_eq!(filter, Some(want), "{name}: Filter");
    }
}

#[test]
fn a_pod_on_the_node_with_a_foreign_ephemeral_claim_fails_filter() {
    // Upstream returns the error of any pod on the node whose volumes cannot be listed,
    // except a claim that does not exist.
    let case = Case::new("", &make_pod().obj(), &[EBS])
        .claims(&[&ephemeral_claim("abc-xyz", None)])
        .limit(LimitSource::CsiNode, 2);
    let plugin = plugin(fixture_volumes(&case));
    let placed = with_volumes(
        make_pod().name("abc").namespace("test").uid("12345"),
        vec![ephemeral("xyz")],
    );
    let missing = with_volumes(
        make_pod().name("def").namespace("test").uid("6789"),
        vec![ephemeral("xyz")],
    );
    let pending = make_pod().pvc("csi-ebs.csi.aws.com-0").obj();
    assert_eq!(
        run(&plugin, &pending, &[placed]).1,
        Some(Status::error(
            "PVC test/abc-xyz was not created for pod test/abc (pod is not owner)"
        ))
    );
    assert_eq!(
        run(&plugin, &pending, &[missing]).1,
        Some(Status::success()),
        "a missing claim of a placed pod is skipped"
    );
}

#[test]
fn pods_are_retried_when_attachments_can_free_up() {
    let events = plugin(Volumes::new())
        .events_to_register()
        .unwrap_or_default();
    let cases = [
        (
            "CSINode added",
            EventResource::CSINode,
            ActionType::ADD,
            true,
        ),
        (
            "CSINode updated",
            EventResource::CSINode,
            ActionType::UPDATE_OTHER,
            true,
        ),
        (
            "assigned pod deleted",
            EventResource::AssignedPod,
            ActionType::DELETE,
            true,
        ),
        (
            "unscheduled pod deleted",
            EventResource::UnscheduledPod,
            ActionType::DELETE,
            false,
        ),
        (
            "claim added",
            EventResource::PersistentVolumeClaim,
            ActionType::ADD,
            true,
        ),
        (
            "claim updated",
            EventResource::PersistentVolumeClaim,
            ActionType::UPDATE_OTHER,
            false,
        ),
        (
            "VolumeAttachment deleted",
            EventResource::VolumeAttachment,
            ActionType::DELETE,
            true,
        ),
        (
            "VolumeAttachment added",
            EventResource::VolumeAttachment,
            ActionType::ADD,
            false,
        ),
        ("node added", EventResource::Node, ActionType::ADD, false),
    ];
    for (name, resource, action, want) in cases {
        assert_eq!(moves_on(&events, resource, action), want, "{name}");
    }
}
