//! Upstream's `binder_test.go` tables, run against the binder's functions.
//!
//! The fixtures mirror upstream's: claims in namespace `testns` with uid `pvc-uid`,
//! volumes with node affinity `nodeKey In [<node>]`, the four storage classes of the
//! upstream test binder. "Fails" means an `Err`: from [`find_pod_volumes`], or, as
//! upstream's test helper does, from [`get_pod_volume_claims`] or from an unbound
//! Immediate claim. The in-tree→CSI migration tables are not here: the binder checks an
//! in-tree volume's own node affinity and does not translate it. Upstream's rows with nil
//! binding or provisioning lists have no counterpart: [`PodVolumes`] holds lists, never
//! nil.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{
    EmptyDirVolumeSource, EphemeralVolumeSource, NodeSelector, NodeSelectorRequirement,
    NodeSelectorTerm, PersistentVolumeClaimSpec, PersistentVolumeClaimVolumeSource,
    PersistentVolumeSpec, PersistentVolumeStatus, PodSpec, TopologySelectorLabelRequirement,
    TopologySelectorTerm, VolumeNodeAffinity, VolumeResourceRequirements,
};
use k8s_openapi::api::storage::v1::{CSIDriver, CSIDriverSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::*;
use crate::helpers::volumes::BIND_COMPLETED_ANNOTATION;
use crate::testing::executor::complete;

const NAMESPACE: &str = "testns";
const NODE_KEY: &str = "nodeKey";
const PROVISIONER: &str = "test-provisioner";
const POD_UID: &str = "test-pod-uid";

const WAIT_CLASS: &str = "waitClass";
const IMMEDIATE_CLASS: &str = "immediateClass";
const WAIT_CLASS_WITH_PROVISIONER: &str = "waitClassWithProvisioner";
const TOPO_MISMATCH_CLASS: &str = "topoMismatchClass";

// ---------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------

/// How far a fixture claim is bound.
enum ClaimState<'a> {
    Unbound,
    /// `spec.volumeName` set, binding not completed.
    Prebound(&'a str),
    /// `spec.volumeName` set and `pv.kubernetes.io/bind-completed: yes`.
    Bound(&'a str),
    /// Unbound, with the selected-node annotation.
    SelectedNode(&'a str),
}

fn make_claim(
    name: &str,
    request: &str,
    state: ClaimState,
    version: &str,
    class: &str,
) -> PersistentVolumeClaim {
    let mut claim = PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NAMESPACE.into()),
            uid: Some("pvc-uid".into()),
            resource_version: Some(version.into()),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            storage_class_name: Some(class.into()),
            volume_mode: Some("Filesystem".into()),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_string(),
                    Quantity(request.into()),
                )])),
                ..VolumeResourceRequirements::default()
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    };
    match state {
        ClaimState::Unbound => {}
        ClaimState::Prebound(volume) => {
            claim.spec.get_or_insert_default().volume_name = Some(volume.into());
        }
        ClaimState::Bound(volume) => {
            claim.spec.get_or_insert_default().volume_name = Some(volume.into());
            claim = with_annotation(claim, BIND_COMPLETED_ANNOTATION, "yes");
        }
        ClaimState::SelectedNode(node) => {
            claim = with_annotation(claim, SELECTED_NODE_ANNOTATION, node);
        }
    }
    claim
}

fn with_annotation(
    mut claim: PersistentVolumeClaim,
    key: &str,
    value: &str,
) -> PersistentVolumeClaim {
    claim
        .metadata
        .annotations
        .get_or_insert_default()
        .insert(key.into(), value.into());
    claim
}

/// Upstream `addProvisionAnn`: the claim as Reserve assumes it for provisioning on node1.
fn with_selected_node(claim: PersistentVolumeClaim) -> PersistentVolumeClaim {
    with_annotation(claim, SELECTED_NODE_ANNOTATION, "node1")
}

fn unbound_pvc() -> PersistentVolumeClaim {
    make_claim("unbound-pvc", "1G", ClaimState::Unbound, "1", WAIT_CLASS)
}
fn unbound_pvc2() -> PersistentVolumeClaim {
    make_claim("unbound-pvc2", "5G", ClaimState::Unbound, "1", WAIT_CLASS)
}
fn prebound_pvc() -> PersistentVolumeClaim {
    make_claim(
        "prebound-pvc",
        "1G",
        ClaimState::Prebound("pv-node1a"),
        "1",
        WAIT_CLASS,
    )
}
fn prebound_pvc_node1a() -> PersistentVolumeClaim {
    make_claim(
        "unbound-pvc",
        "1G",
        ClaimState::Prebound("pv-node1a"),
        "1",
        WAIT_CLASS,
    )
}
fn bound_pvc() -> PersistentVolumeClaim {
    make_claim(
        "bound-pvc",
        "1G",
        ClaimState::Bound("pv-bound"),
        "1",
        WAIT_CLASS,
    )
}
fn bound_pvc_node1a() -> PersistentVolumeClaim {
    make_claim(
        "unbound-pvc",
        "1G",
        ClaimState::Bound("pv-node1a"),
        "1",
        WAIT_CLASS,
    )
}
fn immediate_unbound_pvc() -> PersistentVolumeClaim {
    make_claim(
        "immediate-unbound-pvc",
        "1G",
        ClaimState::Unbound,
        "1",
        IMMEDIATE_CLASS,
    )
}
fn immediate_bound_pvc() -> PersistentVolumeClaim {
    let state = ClaimState::Bound("pv-bound-immediate");
    make_claim("immediate-bound-pvc", "1G", state, "1", IMMEDIATE_CLASS)
}
fn provisioned_pvc() -> PersistentVolumeClaim {
    let class = WAIT_CLASS_WITH_PROVISIONER;
    make_claim("provisioned-pvc", "1Gi", ClaimState::Unbound, "1", class)
}
fn provisioned_pvc2() -> PersistentVolumeClaim {
    let class = WAIT_CLASS_WITH_PROVISIONER;
    make_claim("provisioned-pvc2", "1Gi", ClaimState::Unbound, "1", class)
}
fn provisioned_pvc_higher_version() -> PersistentVolumeClaim {
    let class = WAIT_CLASS_WITH_PROVISIONER;
    make_claim("provisioned-pvc2", "1Gi", ClaimState::Unbound, "2", class)
}
fn provisioned_pvc_bound() -> PersistentVolumeClaim {
    let class = WAIT_CLASS_WITH_PROVISIONER;
    make_claim(
        "provisioned-pvc",
        "1Gi",
        ClaimState::Bound("pv-bound"),
        "1",
        class,
    )
}
fn no_provisioner_pvc() -> PersistentVolumeClaim {
    make_claim(
        "no-provisioner-pvc",
        "1Gi",
        ClaimState::Unbound,
        "1",
        WAIT_CLASS,
    )
}
fn topo_mismatch_pvc() -> PersistentVolumeClaim {
    make_claim(
        "topo-mismatch-pvc",
        "1Gi",
        ClaimState::Unbound,
        "1",
        TOPO_MISMATCH_CLASS,
    )
}
fn selected_node_pvc() -> PersistentVolumeClaim {
    let state = ClaimState::SelectedNode("node1");
    make_claim(
        "provisioned-pvc",
        "1Gi",
        state,
        "1",
        WAIT_CLASS_WITH_PROVISIONER,
    )
}

/// The claim of test-pod's generic ephemeral volume `test-volume`, created for the pod
/// (`owned`) or not.
fn generic_pvc(owned: bool) -> PersistentVolumeClaim {
    let state = ClaimState::Bound("pv-bound");
    let mut claim = make_claim("test-pod-test-volume", "1G", state, "1", IMMEDIATE_CLASS);
    if owned {
        claim.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "v1".into(),
            kind: "Pod".into(),
            name: "test-pod".into(),
            uid: POD_UID.into(),
            controller: Some(true),
            ..OwnerReference::default()
        }]);
    }
    claim
}

/// A volume; `node` "" for no node affinity; `bound_to` sets the claimRef (and the
/// bound-by-controller annotation) the way upstream's `makeTestPV` does.
fn make_volume(
    name: &str,
    node: &str,
    capacity: &str,
    version: &str,
    bound_to: Option<&PersistentVolumeClaim>,
    class: &str,
) -> PersistentVolume {
    let node_affinity = (!node.is_empty()).then(|| VolumeNodeAffinity {
        required: Some(NodeSelector {
            node_selector_terms: vec![NodeSelectorTerm {
                match_expressions: Some(vec![NodeSelectorRequirement {
                    key: NODE_KEY.into(),
                    operator: "In".into(),
                    values: Some(vec![node.into()]),
                }]),
                match_fields: None,
            }],
        }),
    });
    let mut volume = PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name.into()),
            resource_version: Some(version.into()),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeSpec {
            capacity: Some(BTreeMap::from([(
                "storage".to_string(),
                Quantity(capacity.into()),
            )])),
            storage_class_name: Some(class.into()),
            volume_mode: Some("Filesystem".into()),
            node_affinity,
            ..PersistentVolumeSpec::default()
        }),
        status: Some(PersistentVolumeStatus {
            phase: Some("Available".into()),
            ..PersistentVolumeStatus::default()
        }),
    };
    if let Some(claim) = bound_to {
        volume.spec.get_or_insert_default().claim_ref = Some(ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("PersistentVolumeClaim".into()),
            name: claim.metadata.name.clone(),
            namespace: claim.metadata.namespace.clone(),
            uid: claim.metadata.uid.clone(),
            resource_version: claim.metadata.resource_version.clone(),
            field_path: None,
        });
        volume
            .metadata
            .annotations
            .get_or_insert_default()
            .insert(BOUND_BY_CONTROLLER_ANNOTATION.into(), "yes".into());
    }
    volume
}

fn pv_node1a() -> PersistentVolume {
    make_volume("pv-node1a", "node1", "5G", "1", None, WAIT_CLASS)
}
fn pv_node1b() -> PersistentVolume {
    make_volume("pv-node1b", "node1", "10G", "1", None, WAIT_CLASS)
}
/// Named pv-node1b, but as small as pv-node1a.
fn pv_node1c() -> PersistentVolume {
    make_volume("pv-node1b", "node1", "5G", "1", None, WAIT_CLASS)
}
fn pv_node2() -> PersistentVolume {
    make_volume("pv-node2", "node2", "1G", "1", None, WAIT_CLASS)
}
fn pv_bound() -> PersistentVolume {
    make_volume(
        "pv-bound",
        "node1",
        "1G",
        "1",
        Some(&bound_pvc()),
        WAIT_CLASS,
    )
}
fn pv_node1a_bound() -> PersistentVolume {
    make_volume(
        "pv-node1a",
        "node1",
        "5G",
        "1",
        Some(&unbound_pvc()),
        WAIT_CLASS,
    )
}
fn pv_node1b_bound() -> PersistentVolume {
    make_volume(
        "pv-node1b",
        "node1",
        "10G",
        "1",
        Some(&unbound_pvc2()),
        WAIT_CLASS,
    )
}
fn pv_node1b_bound_higher_version() -> PersistentVolume {
    make_volume(
        "pv-node1b",
        "node1",
        "10G",
        "2",
        Some(&unbound_pvc2()),
        WAIT_CLASS,
    )
}
fn pv_bound_immediate(node: &str) -> PersistentVolume {
    let claim = immediate_bound_pvc();
    make_volume(
        "pv-bound-immediate",
        node,
        "1G",
        "1",
        Some(&claim),
        IMMEDIATE_CLASS,
    )
}
fn pv_bound_generic() -> PersistentVolume {
    make_volume(
        "pv-bound",
        "node1",
        "1G",
        "1",
        Some(&generic_pvc(true)),
        WAIT_CLASS,
    )
}

fn storage_class(name: &str, mode: &str, provisioner: &str, topology: &[&str]) -> StorageClass {
    StorageClass {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        provisioner: provisioner.into(),
        volume_binding_mode: Some(mode.into()),
        allowed_topologies: (!topology.is_empty()).then(|| {
            vec![TopologySelectorTerm {
                match_label_expressions: Some(vec![TopologySelectorLabelRequirement {
                    key: NODE_KEY.into(),
                    values: topology.iter().map(|v| v.to_string()).collect(),
                }]),
            }]
        }),
        ..StorageClass::default()
    }
}

/// The storage lister of upstream's test binder: its four classes, `claims` and
/// `volumes` as the API server sent them.
fn cluster(claims: &[PersistentVolumeClaim], volumes: &[PersistentVolume]) -> Volumes {
    let cluster = Volumes::new();
    let wait = "WaitForFirstConsumer";
    cluster.apply_class(storage_class(
        WAIT_CLASS_WITH_PROVISIONER,
        wait,
        PROVISIONER,
        &["node1", "reference-value"],
    ));
    cluster.apply_class(storage_class(IMMEDIATE_CLASS, "Immediate", "", &[]));
    let no_provisioner = "kubernetes.io/no-provisioner";
    cluster.apply_class(storage_class(WAIT_CLASS, wait, no_provisioner, &[]));
    cluster.apply_class(storage_class(
        TOPO_MISMATCH_CLASS,
        wait,
        PROVISIONER,
        &["reference-value"],
    ));
    for claim in claims {
        cluster.apply_claim(claim.clone());
    }
    for volume in volumes {
        cluster.apply_volume(volume.clone());
    }
    cluster
}

/// How the CSIDriver of `test-provisioner` is set up (upstream runs the find tables once
/// per variant).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Driver {
    Absent,
    TracksCapacity,
    DoesNotTrackCapacity,
}

const DRIVERS: [Driver; 3] = [
    Driver::Absent,
    Driver::TracksCapacity,
    Driver::DoesNotTrackCapacity,
];

fn add_driver(cluster: &Volumes, driver: Driver) {
    let storage_capacity = match driver {
        Driver::Absent => return,
        Driver::TracksCapacity => true,
        Driver::DoesNotTrackCapacity => false,
    };
    cluster.apply_csi_driver(CSIDriver {
        metadata: ObjectMeta {
            name: Some(PROVISIONER.into()),
            ..ObjectMeta::default()
        },
        spec: CSIDriverSpec {
            storage_capacity: Some(storage_capacity),
            ..CSIDriverSpec::default()
        },
    });
}

fn node_labels(node: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(NODE_KEY.to_string(), node.to_string())])
}

fn claim_volume(claim: &str) -> Volume {
    Volume {
        name: claim.into(),
        persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
            claim_name: claim.into(),
            read_only: None,
        }),
        ..Volume::default()
    }
}

fn ephemeral_volume(name: &str) -> Volume {
    Volume {
        name: name.into(),
        ephemeral: Some(EphemeralVolumeSource::default()),
        ..Volume::default()
    }
}

fn empty_dir_volume() -> Volume {
    Volume {
        name: "scratch".into(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Volume::default()
    }
}

/// Pod `test-pod` in testns on node1 with `volumes`.
fn test_pod(volumes: Vec<Volume>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("test-pod".into()),
            namespace: Some(NAMESPACE.into()),
            uid: Some(POD_UID.into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            node_name: Some("node1".into()),
            volumes: Some(volumes),
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

/// test-pod with one volume per claim.
fn pod_with(claims: &[PersistentVolumeClaim]) -> Pod {
    test_pod(
        claims
            .iter()
            .map(|c| claim_volume(c.metadata.name.as_deref().unwrap_or_default()))
            .collect(),
    )
}

fn name_of<K: kube::ResourceExt>(object: &K) -> String {
    object.name_any()
}

/// Upstream's `findPodVolumes` test helper on node1.
fn find_on(cluster: &Volumes, pod: &Pod, node: &str) -> Result<NodeVerdict, String> {
    let claims = get_pod_volume_claims(cluster, pod)?;
    if !claims.unbound_immediate.is_empty() {
        return Err("pod has unbound immediate PersistentVolumeClaims".into());
    }
    find_pod_volumes(cluster, &claims, node, &node_labels(node))
}

fn find(cluster: &Volumes, pod: &Pod) -> Result<NodeVerdict, String> {
    find_on(cluster, pod, "node1")
}

/// What FindPodVolumes should conclude on node1.
#[derive(Debug, Clone, PartialEq)]
struct Found {
    /// claim → volume, in order.
    bindings: Vec<(String, String)>,
    provisions: Vec<String>,
    reasons: BTreeSet<ConflictReason>,
}

fn found(
    bindings: &[(&str, &str)],
    provisions: &[&str],
    reasons: &[ConflictReason],
) -> Option<Found> {
    Some(Found {
        bindings: bindings
            .iter()
            .map(|(c, v)| (c.to_string(), v.to_string()))
            .collect(),
        provisions: provisions.iter().map(|p| p.to_string()).collect(),
        reasons: reasons.iter().copied().collect(),
    })
}

fn none_found() -> Option<Found> {
    found(&[], &[], &[])
}

fn summary(verdict: &NodeVerdict) -> Found {
    let names = |b: &Binding| (name_of(b.claim.as_ref()), name_of(&b.volume));
    Found {
        bindings: verdict
            .pod_volumes
            .static_bindings
            .iter()
            .map(names)
            .collect(),
        provisions: verdict
            .pod_volumes
            .dynamic_provisions
            .iter()
            .map(|p| name_of(&p.claim))
            .collect(),
        reasons: verdict.reasons.iter().copied().collect(),
    }
}

// ---------------------------------------------------------------------------------------
// TestFindPodVolumesWithoutProvisioning
// ---------------------------------------------------------------------------------------

struct FindCase {
    name: &'static str,
    pod: Pod,
    claims: Vec<PersistentVolumeClaim>,
    volumes: Vec<PersistentVolume>,
    /// `None`: the call fails.
    expect: Option<Found>,
}

#[test]
fn find_pod_volumes_without_provisioning() {
    use ConflictReason::*;
    let cases = vec![
        FindCase {
            name: "no-volumes",
            pod: test_pod(Vec::new()),
            claims: vec![],
            volumes: vec![],
            expect: none_found(),
        },
        FindCase {
            name: "no-pvcs",
            pod: test_pod(vec![empty_dir_volume()]),
            claims: vec![],
            volumes: vec![],
            expect: none_found(),
        },
        FindCase {
            name: "pvc-not-found",
            pod: pod_with(&[bound_pvc()]),
            claims: vec![],
            volumes: vec![],
            expect: None,
        },
        FindCase {
            name: "bound-pvc",
            pod: pod_with(&[bound_pvc()]),
            claims: vec![bound_pvc()],
            volumes: vec![pv_bound()],
            expect: none_found(),
        },
        FindCase {
            name: "bound-pvc,pv-not-exists",
            pod: pod_with(&[bound_pvc()]),
            claims: vec![bound_pvc()],
            volumes: vec![],
            expect: found(&[], &[], &[PvNotExist]),
        },
        FindCase {
            name: "prebound-pvc",
            pod: pod_with(&[prebound_pvc()]),
            claims: vec![prebound_pvc()],
            volumes: vec![pv_node1a_bound()],
            expect: None,
        },
        FindCase {
            name: "unbound-pvc,pv-same-node",
            pod: pod_with(&[unbound_pvc()]),
            claims: vec![unbound_pvc()],
            volumes: vec![pv_node2(), pv_node1a(), pv_node1b()],
            expect: found(&[("unbound-pvc", "pv-node1a")], &[], &[]),
        },
        FindCase {
            name: "unbound-pvc,pv-different-node",
            pod: pod_with(&[unbound_pvc()]),
            claims: vec![unbound_pvc()],
            volumes: vec![pv_node2()],
            expect: found(&[], &[], &[BindConflict]),
        },
        FindCase {
            name: "two-unbound-pvcs",
            pod: pod_with(&[unbound_pvc(), unbound_pvc2()]),
            claims: vec![unbound_pvc(), unbound_pvc2()],
            volumes: vec![pv_node1a(), pv_node1b()],
            expect: found(
                &[("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")],
                &[],
                &[],
            ),
        },
        FindCase {
            name: "two-unbound-pvcs,order-by-size",
            pod: pod_with(&[unbound_pvc2(), unbound_pvc()]),
            claims: vec![unbound_pvc(), unbound_pvc2()],
            volumes: vec![pv_node1a(), pv_node1b()],
            expect: found(
                &[("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")],
                &[],
                &[],
            ),
        },
        FindCase {
            name: "two-unbound-pvcs,partial-match",
            pod: pod_with(&[unbound_pvc(), unbound_pvc2()]),
            claims: vec![unbound_pvc(), unbound_pvc2()],
            volumes: vec![pv_node1a()],
            expect: found(&[("unbound-pvc", "pv-node1a")], &[], &[BindConflict]),
        },
        FindCase {
            name: "one-bound,one-unbound",
            pod: pod_with(&[unbound_pvc(), bound_pvc()]),
            claims: vec![unbound_pvc(), bound_pvc()],
            volumes: vec![pv_bound(), pv_node1a()],
            expect: found(&[("unbound-pvc", "pv-node1a")], &[], &[]),
        },
        FindCase {
            name: "one-bound,one-unbound,no-match",
            pod: pod_with(&[unbound_pvc(), bound_pvc()]),
            claims: vec![unbound_pvc(), bound_pvc()],
            volumes: vec![pv_bound(), pv_node2()],
            expect: found(&[], &[], &[BindConflict]),
        },
        FindCase {
            name: "one-prebound,one-unbound",
            pod: pod_with(&[unbound_pvc(), prebound_pvc()]),
            claims: vec![unbound_pvc(), prebound_pvc()],
            volumes: vec![pv_node1a(), pv_node1b()],
            expect: None,
        },
        FindCase {
            name: "immediate-bound-pvc",
            pod: pod_with(&[immediate_bound_pvc()]),
            claims: vec![immediate_bound_pvc()],
            volumes: vec![pv_bound_immediate("node1")],
            expect: none_found(),
        },
        FindCase {
            name: "immediate-bound-pvc-wrong-node",
            pod: pod_with(&[immediate_bound_pvc()]),
            claims: vec![immediate_bound_pvc()],
            volumes: vec![pv_bound_immediate("node2")],
            expect: found(&[], &[], &[NodeConflict]),
        },
        FindCase {
            name: "immediate-unbound-pvc",
            pod: pod_with(&[immediate_unbound_pvc()]),
            claims: vec![immediate_unbound_pvc()],
            volumes: vec![],
            expect: None,
        },
        FindCase {
            name: "immediate-unbound-pvc,delayed-mode-bound",
            pod: pod_with(&[immediate_unbound_pvc(), bound_pvc()]),
            claims: vec![immediate_unbound_pvc(), bound_pvc()],
            volumes: vec![pv_bound()],
            expect: None,
        },
        FindCase {
            name: "immediate-unbound-pvc,delayed-mode-unbound",
            pod: pod_with(&[immediate_unbound_pvc(), unbound_pvc()]),
            claims: vec![immediate_unbound_pvc(), unbound_pvc()],
            volumes: vec![],
            expect: None,
        },
        FindCase {
            name: "generic-ephemeral,no-pvc",
            pod: test_pod(vec![ephemeral_volume("no-such-pvc")]),
            claims: vec![],
            volumes: vec![],
            expect: None,
        },
        FindCase {
            name: "generic-ephemeral,with-pvc",
            pod: test_pod(vec![ephemeral_volume("test-volume")]),
            claims: vec![generic_pvc(true)],
            volumes: vec![pv_bound_generic()],
            expect: none_found(),
        },
        FindCase {
            name: "generic-ephemeral,wrong-pvc",
            pod: test_pod(vec![ephemeral_volume("test-volume")]),
            claims: vec![generic_pvc(false)],
            volumes: vec![pv_bound_generic()],
            expect: None,
        },
    ];
    for case in cases {
        for driver in DRIVERS {
            let cluster = cluster(&case.claims, &case.volumes);
            add_driver(&cluster, driver);
            let result = find(&cluster, &case.pod);
            assert_eq!(
                result.as_ref().ok().map(summary),
                case.expect,
                "{} ({driver:?}): {result:?}",
                case.name
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// TestFindPodVolumesWithProvisioning
// ---------------------------------------------------------------------------------------

struct ProvisionCase {
    find: FindCase,
    /// With a CSIDriver that tracks capacity and no CSIStorageCapacity, provisioning is
    /// blocked: NotEnoughSpace and no provisions.
    needs_capacity: bool,
}

#[test]
fn find_pod_volumes_with_provisioning() {
    use ConflictReason::*;
    let case =
        |name, claims: Vec<PersistentVolumeClaim>, volumes, expect, needs_capacity| ProvisionCase {
            find: FindCase {
                name,
                pod: pod_with(&claims),
                claims,
                volumes,
                expect,
            },
            needs_capacity,
        };
    let cases = vec![
        case(
            "one-provisioned",
            vec![provisioned_pvc()],
            vec![],
            found(&[], &["provisioned-pvc"], &[]),
            true,
        ),
        case(
            "two-unbound-pvcs,one-matched,one-provisioned",
            vec![unbound_pvc(), provisioned_pvc()],
            vec![pv_node1a()],
            found(&[("unbound-pvc", "pv-node1a")], &["provisioned-pvc"], &[]),
            true,
        ),
        case(
            "one-bound,one-provisioned",
            vec![bound_pvc(), provisioned_pvc()],
            vec![pv_bound()],
            found(&[], &["provisioned-pvc"], &[]),
            true,
        ),
        case(
            "one-binding,one-selected-node",
            vec![bound_pvc(), selected_node_pvc()],
            vec![pv_bound()],
            found(&[], &["provisioned-pvc"], &[]),
            true,
        ),
        case(
            "immediate-unbound-pvc",
            vec![immediate_unbound_pvc()],
            vec![],
            None,
            false,
        ),
        case(
            "one-immediate-bound,one-provisioned",
            vec![immediate_bound_pvc(), provisioned_pvc()],
            vec![pv_bound_immediate("node1")],
            found(&[], &["provisioned-pvc"], &[]),
            true,
        ),
        case(
            "invalid-provisioner",
            vec![no_provisioner_pvc()],
            vec![],
            found(&[], &[], &[BindConflict]),
            false,
        ),
        case(
            "volume-topology-unsatisfied",
            vec![topo_mismatch_pvc()],
            vec![],
            found(&[], &[], &[BindConflict]),
            false,
        ),
    ];
    for ProvisionCase {
        find: case,
        needs_capacity,
    } in cases
    {
        for driver in DRIVERS {
            let cluster = cluster(&case.claims, &case.volumes);
            add_driver(&cluster, driver);
            let mut expect = case.expect.clone();
            if needs_capacity
                && driver == Driver::TracksCapacity
                && let Some(expect) = expect.as_mut()
            {
                expect.provisions.clear();
                expect.reasons.insert(NotEnoughSpace);
            }
            let result = find(&cluster, &case.pod);
            assert_eq!(
                result.as_ref().ok().map(summary),
                expect,
                "{} ({driver:?}): {result:?}",
                case.name
            );
        }
    }
}

/// The selected-node annotation pins a waiting claim: every other node conflicts.
#[test]
fn a_selected_node_claim_conflicts_on_other_nodes() {
    let cluster = cluster(&[bound_pvc(), selected_node_pvc()], &[pv_bound()]);
    let pod = pod_with(&[bound_pvc(), selected_node_pvc()]);
    let verdict = find_on(&cluster, &pod, "node2").map(|v| summary(&v));
    // pv-bound's affinity is node1 too: both reasons, and nothing to bind or provision.
    let expect = found(
        &[],
        &[],
        &[ConflictReason::NodeConflict, ConflictReason::BindConflict],
    );
    assert_eq!(verdict.ok(), expect);
}

// ---------------------------------------------------------------------------------------
// TestAssumePodVolumes, TestRevertAssumedPodVolumes
// ---------------------------------------------------------------------------------------

fn binding(claim: PersistentVolumeClaim, volume: PersistentVolume) -> Binding {
    Binding {
        claim: Arc::new(claim),
        volume,
    }
}

fn provision(claim: PersistentVolumeClaim) -> Provision {
    Provision {
        claim,
        capacity: None,
    }
}

struct AssumeCase {
    name: &'static str,
    claims: Vec<PersistentVolumeClaim>,
    volumes: Vec<PersistentVolume>,
    /// The pod's claims, when they differ from `claims`.
    pod_claims: Option<Vec<PersistentVolumeClaim>>,
    bindings: Vec<Binding>,
    provisions: Vec<PersistentVolumeClaim>,
    /// `Err(())`: the call fails and nothing stays assumed; `Ok(all_bound, bindings,
    /// provisions)` otherwise, with the volumes and claims of the result assumed.
    expect: Result<(bool, Vec<Binding>, Vec<PersistentVolumeClaim>), ()>,
}

#[test]
fn assume_pod_volumes_table() {
    let cases = vec![
        AssumeCase {
            name: "all-bound",
            claims: vec![bound_pvc()],
            volumes: vec![pv_bound()],
            pod_claims: None,
            bindings: vec![],
            provisions: vec![],
            expect: Ok((true, vec![], vec![])),
        },
        AssumeCase {
            name: "one-binding",
            claims: vec![unbound_pvc()],
            volumes: vec![pv_node1a()],
            pod_claims: None,
            bindings: vec![binding(unbound_pvc(), pv_node1a())],
            provisions: vec![],
            expect: Ok((
                false,
                vec![binding(unbound_pvc(), pv_node1a_bound())],
                vec![],
            )),
        },
        AssumeCase {
            name: "two-bindings",
            claims: vec![unbound_pvc(), unbound_pvc2()],
            volumes: vec![pv_node1a(), pv_node1b()],
            pod_claims: None,
            bindings: vec![
                binding(unbound_pvc(), pv_node1a()),
                binding(unbound_pvc2(), pv_node1b()),
            ],
            provisions: vec![],
            expect: Ok((
                false,
                vec![
                    binding(unbound_pvc(), pv_node1a_bound()),
                    binding(unbound_pvc2(), pv_node1b_bound()),
                ],
                vec![],
            )),
        },
        AssumeCase {
            name: "pv-already-bound",
            claims: vec![unbound_pvc()],
            volumes: vec![pv_node1a_bound()],
            pod_claims: None,
            bindings: vec![binding(unbound_pvc(), pv_node1a_bound())],
            provisions: vec![],
            expect: Ok((
                false,
                vec![binding(unbound_pvc(), pv_node1a_bound())],
                vec![],
            )),
        },
        AssumeCase {
            name: "tmpupdate-failed",
            claims: vec![unbound_pvc()],
            volumes: vec![pv_node1a()],
            pod_claims: None,
            bindings: vec![
                binding(unbound_pvc(), pv_node1a()),
                binding(unbound_pvc2(), pv_node1b()),
            ],
            provisions: vec![],
            expect: Err(()),
        },
        AssumeCase {
            name: "one-binding, one-pvc-provisioned",
            claims: vec![unbound_pvc(), provisioned_pvc()],
            volumes: vec![pv_node1a()],
            pod_claims: None,
            bindings: vec![binding(unbound_pvc(), pv_node1a())],
            provisions: vec![provisioned_pvc()],
            expect: Ok((
                false,
                vec![binding(unbound_pvc(), pv_node1a_bound())],
                vec![selected_node_pvc()],
            )),
        },
        AssumeCase {
            name: "one-binding, one-provision-tmpupdate-failed",
            claims: vec![unbound_pvc(), provisioned_pvc_higher_version()],
            volumes: vec![pv_node1a()],
            pod_claims: Some(vec![unbound_pvc(), provisioned_pvc2()]),
            bindings: vec![binding(unbound_pvc(), pv_node1a())],
            provisions: vec![provisioned_pvc2()],
            expect: Err(()),
        },
    ];
    for case in cases {
        let cluster = cluster(&case.claims, &case.volumes);
        let pod = pod_with(case.pod_claims.as_ref().unwrap_or(&case.claims));
        let mut pod_volumes = PodVolumes {
            static_bindings: case.bindings,
            dynamic_provisions: case.provisions.into_iter().map(provision).collect(),
        };
        let before = pod_volumes.clone();
        let result = assume_pod_volumes(&cluster, &pod, "node1", &mut pod_volumes);
        match case.expect {
            Ok((all_bound, bindings, provisions)) => {
                assert_eq!(result, Ok(all_bound), "{}", case.name);
                let expect = PodVolumes {
                    static_bindings: bindings,
                    dynamic_provisions: provisions.into_iter().map(provision).collect(),
                };
                let expect = if all_bound { before } else { expect };
                assert_eq!(pod_volumes, expect, "{}", case.name);
                for binding in &expect.static_bindings {
                    let cached = cluster.volume(&name_of(&binding.volume));
                    assert_eq!(cached.as_deref(), Some(&binding.volume), "{}", case.name);
                }
                for provision in &expect.dynamic_provisions {
                    let cached = cluster.claim(NAMESPACE, &name_of(&provision.claim));
                    assert_eq!(cached.as_deref(), Some(&provision.claim), "{}", case.name);
                }
            }
            Err(()) => {
                assert!(result.is_err(), "{}: {result:?}", case.name);
                assert_nothing_assumed(&cluster, case.name);
            }
        }
    }
}

/// Every claim and volume of `cluster` is as the API server sent it.
fn assert_nothing_assumed(cluster: &Volumes, case: &str) {
    for volume in cluster.volumes() {
        let name = name_of(volume.as_ref());
        assert_eq!(Some(volume), cluster.api_volume(&name), "{case}: {name}");
    }
    for claim in cluster.claims() {
        let name = name_of(claim.as_ref());
        assert_eq!(
            Some(claim),
            cluster.api_claim(NAMESPACE, &name),
            "{case}: {name}"
        );
    }
}

#[test]
fn revert_assumed_pod_volumes() {
    let cluster = cluster(&[unbound_pvc(), provisioned_pvc()], &[pv_node1a()]);
    let pod = pod_with(&[unbound_pvc(), provisioned_pvc()]);
    let mut pod_volumes = PodVolumes {
        static_bindings: vec![binding(unbound_pvc(), pv_node1a())],
        dynamic_provisions: vec![provision(provisioned_pvc())],
    };
    assert_eq!(
        assume_pod_volumes(&cluster, &pod, "node1", &mut pod_volumes),
        Ok(false)
    );
    revert_assumed(&cluster, &pod_volumes);
    assert_eq!(cluster.volume("pv-node1a").as_deref(), Some(&pv_node1a()));
    let claim = cluster.claim(NAMESPACE, "provisioned-pvc");
    assert_eq!(claim.as_deref().and_then(selected_node), None);
    assert_nothing_assumed(&cluster, "revert");
}

/// Upstream TestFindAssumeVolumes: once a volume is assumed for the claim, every later
/// Find returns that same volume, though another one of the same size is available.
#[test]
fn find_after_assume_returns_the_assumed_volume() {
    let cluster = cluster(&[unbound_pvc()], &[pv_node2(), pv_node1a(), pv_node1c()]);
    let pod = pod_with(&[unbound_pvc()]);
    let Ok(mut verdict) = find(&cluster, &pod) else {
        panic!("find failed");
    };
    assert_eq!(verdict.reasons, vec![]);
    assert_eq!(verdict.pod_volumes.static_bindings.len(), 1);
    let assumed = assume_pod_volumes(&cluster, &pod, "node1", &mut verdict.pod_volumes);
    assert_eq!(assumed, Ok(false));
    let chosen = verdict.pod_volumes.static_bindings.clone();
    for _ in 0..50 {
        let again = find(&cluster, &pod).map(|v| v.pod_volumes.static_bindings);
        assert_eq!(again.as_ref(), Ok(&chosen));
    }
}

// ---------------------------------------------------------------------------------------
// TestBindAPIUpdate, TestCheckBindings, TestBindPodVolumes
// ---------------------------------------------------------------------------------------

/// A stand-in for the API server: PUTs succeed only with the stored resourceVersion
/// (else a conflict, as the API server answers a stale write), store the object with the
/// version bumped and deliver it to the storage lister, as a watch would.
struct ApiServer {
    volumes: Mutex<BTreeMap<String, PersistentVolume>>,
    claims: Mutex<BTreeMap<String, PersistentVolumeClaim>>,
    watch: Arc<Volumes>,
}

impl ApiServer {
    fn new(
        watch: Arc<Volumes>,
        claims: &[PersistentVolumeClaim],
        volumes: &[PersistentVolume],
    ) -> Self {
        Self {
            volumes: Mutex::new(volumes.iter().map(|v| (name_of(v), v.clone())).collect()),
            claims: Mutex::new(claims.iter().map(|c| (name_of(c), c.clone())).collect()),
            watch,
        }
    }

    fn volume(&self, name: &str) -> Option<PersistentVolume> {
        self.volumes.lock().ok()?.get(name).cloned()
    }

    fn claim(&self, name: &str) -> Option<PersistentVolumeClaim> {
        self.claims.lock().ok()?.get(name).cloned()
    }

    /// A PUT: `Ok` with the stored object, or the API server's error.
    fn put<K: kube::ResourceExt + Clone>(
        store: &Mutex<BTreeMap<String, K>>,
        kind: &str,
        object: &K,
    ) -> Result<K, String> {
        let mut store = store.lock().map_err(|e| e.to_string())?;
        let name = name_of(object);
        let Some(stored) = store.get(&name) else {
            return Err(format!("{kind} \"{name}\" not found"));
        };
        if resource_version(stored) != resource_version(object) {
            return Err(format!(
                "Operation cannot be fulfilled on {kind} \"{name}\": the object has been modified; please apply your changes to the latest version and try again"
            ));
        }
        let mut written = object.clone();
        let version = resource_version(object) + 1;
        written.meta_mut().resource_version = Some(version.to_string());
        store.insert(name, written.clone());
        Ok(written)
    }

    /// A POST of a new volume.
    fn create_volume(&self, volume: PersistentVolume) {
        if let Ok(mut store) = self.volumes.lock() {
            store.insert(name_of(&volume), volume.clone());
        }
        self.watch.apply_volume(volume);
    }
}

#[async_trait]
impl VolumeWriter for ApiServer {
    async fn update_volume(&self, volume: &PersistentVolume) -> Result<PersistentVolume, String> {
        let written = Self::put(&self.volumes, "persistentvolumes", volume)?;
        self.watch.apply_volume(written.clone());
        Ok(written)
    }

    async fn update_claim(
        &self,
        claim: &PersistentVolumeClaim,
    ) -> Result<PersistentVolumeClaim, String> {
        let written = Self::put(&self.claims, "persistentvolumeclaims", claim)?;
        self.watch.apply_claim(written.clone());
        Ok(written)
    }
}

/// `object` without its resourceVersion, which the write bumps (upstream compares the
/// cache and the API objects ignoring it).
fn unversioned<K: kube::ResourceExt + Clone>(object: &K) -> K {
    let mut object = object.clone();
    object.meta_mut().resource_version = None;
    object
}

/// Assumes the objects of `pod_volumes` as Reserve left them.
fn assume_all(cluster: &Volumes, pod_volumes: &PodVolumes) {
    for binding in &pod_volumes.static_bindings {
        assert_eq!(cluster.assume_volume(binding.volume.clone()), Ok(()));
    }
    for provision in &pod_volumes.dynamic_provisions {
        assert_eq!(cluster.assume_claim(provision.claim.clone()), Ok(()));
    }
}

#[derive(Default)]
struct BindCase {
    name: &'static str,
    bindings: Vec<Binding>,
    cached_volumes: Vec<PersistentVolume>,
    /// What the API server holds, when it differs from the cache.
    api_volumes: Option<Vec<PersistentVolume>>,
    provisions: Vec<PersistentVolumeClaim>,
    cached_claims: Vec<PersistentVolumeClaim>,
    api_claims: Option<Vec<PersistentVolumeClaim>>,
    fails: bool,
    /// Volumes and claims the cache shows afterwards (assumed copies included).
    expect_cached_volumes: Vec<PersistentVolume>,
    expect_cached_claims: Vec<PersistentVolumeClaim>,
    /// What the API server holds afterwards.
    expect_api_volumes: Vec<PersistentVolume>,
    expect_api_claims: Vec<PersistentVolumeClaim>,
}

#[test]
fn bind_api_update_table() {
    let two_provisions = || {
        vec![
            with_selected_node(provisioned_pvc()),
            with_selected_node(provisioned_pvc2()),
        ]
    };
    let provisioned_after_conflict =
        || vec![with_selected_node(provisioned_pvc()), provisioned_pvc2()];
    let api_after_conflict = || {
        vec![
            with_selected_node(provisioned_pvc()),
            provisioned_pvc_higher_version(),
        ]
    };
    let cases = vec![
        BindCase {
            name: "nothing-to-bind-empty",
            ..BindCase::default()
        },
        BindCase {
            name: "one-binding",
            bindings: vec![binding(unbound_pvc(), pv_node1a_bound())],
            cached_volumes: vec![pv_node1a()],
            expect_cached_volumes: vec![pv_node1a_bound()],
            expect_api_volumes: vec![pv_node1a_bound()],
            ..BindCase::default()
        },
        BindCase {
            name: "two-bindings",
            bindings: vec![
                binding(unbound_pvc(), pv_node1a_bound()),
                binding(unbound_pvc2(), pv_node1b_bound()),
            ],
            cached_volumes: vec![pv_node1a(), pv_node1b()],
            expect_cached_volumes: vec![pv_node1a_bound(), pv_node1b_bound()],
            expect_api_volumes: vec![pv_node1a_bound(), pv_node1b_bound()],
            ..BindCase::default()
        },
        BindCase {
            name: "api-already-updated",
            bindings: vec![binding(unbound_pvc(), pv_node1a_bound())],
            cached_volumes: vec![pv_node1a_bound()],
            expect_cached_volumes: vec![pv_node1a_bound()],
            expect_api_volumes: vec![pv_node1a_bound()],
            ..BindCase::default()
        },
        BindCase {
            name: "api-update-failed",
            bindings: vec![
                binding(unbound_pvc(), pv_node1a_bound()),
                binding(unbound_pvc2(), pv_node1b_bound()),
            ],
            cached_volumes: vec![pv_node1a(), pv_node1b()],
            api_volumes: Some(vec![pv_node1a(), pv_node1b_bound_higher_version()]),
            fails: true,
            expect_cached_volumes: vec![pv_node1a_bound(), pv_node1b()],
            expect_api_volumes: vec![pv_node1a_bound(), pv_node1b_bound_higher_version()],
            ..BindCase::default()
        },
        BindCase {
            name: "one-provisioned-pvc",
            provisions: vec![with_selected_node(provisioned_pvc())],
            cached_claims: vec![provisioned_pvc()],
            expect_cached_claims: vec![with_selected_node(provisioned_pvc())],
            expect_api_claims: vec![with_selected_node(provisioned_pvc())],
            ..BindCase::default()
        },
        BindCase {
            name: "provision-api-update-failed",
            provisions: two_provisions(),
            cached_claims: vec![provisioned_pvc(), provisioned_pvc2()],
            api_claims: Some(vec![provisioned_pvc(), provisioned_pvc_higher_version()]),
            fails: true,
            expect_cached_claims: provisioned_after_conflict(),
            expect_api_claims: api_after_conflict(),
            ..BindCase::default()
        },
        BindCase {
            name: "binding-succeed, provision-api-update-failed",
            bindings: vec![binding(unbound_pvc(), pv_node1a_bound())],
            cached_volumes: vec![pv_node1a()],
            provisions: two_provisions(),
            cached_claims: vec![provisioned_pvc(), provisioned_pvc2()],
            api_claims: Some(vec![provisioned_pvc(), provisioned_pvc_higher_version()]),
            fails: true,
            expect_cached_volumes: vec![pv_node1a_bound()],
            expect_api_volumes: vec![pv_node1a_bound()],
            expect_cached_claims: provisioned_after_conflict(),
            expect_api_claims: api_after_conflict(),
            ..BindCase::default()
        },
    ];
    for case in cases {
        let name = case.name;
        let cache = Arc::new(cluster(&case.cached_claims, &case.cached_volumes));
        let api = ApiServer::new(
            cache.clone(),
            case.api_claims.as_ref().unwrap_or(&case.cached_claims),
            case.api_volumes.as_ref().unwrap_or(&case.cached_volumes),
        );
        let mut pod_volumes = PodVolumes {
            static_bindings: case.bindings,
            dynamic_provisions: case.provisions.into_iter().map(provision).collect(),
        };
        assume_all(&cache, &pod_volumes);
        let result = complete(bind_api_update(&cache, &api, &mut pod_volumes));
        assert_eq!(result.is_err(), case.fails, "{name}: {result:?}");
        for expected in &case.expect_cached_volumes {
            let cached = cache.volume(&name_of(expected));
            let cached = cached.as_deref().map(unversioned);
            assert_eq!(cached, Some(unversioned(expected)), "{name}: cached volume");
        }
        for expected in &case.expect_api_volumes {
            let stored = api.volume(&name_of(expected)).map(|v| unversioned(&v));
            assert_eq!(stored, Some(unversioned(expected)), "{name}: API volume");
        }
        for expected in &case.expect_cached_claims {
            let cached = cache.claim(NAMESPACE, &name_of(expected));
            let cached = cached.as_deref().map(unversioned);
            assert_eq!(cached, Some(unversioned(expected)), "{name}: cached claim");
        }
        for expected in &case.expect_api_claims {
            let stored = api.claim(&name_of(expected)).map(|c| unversioned(&c));
            assert_eq!(stored, Some(unversioned(expected)), "{name}: API claim");
        }
    }
}

/// A copy of `claim` with `annotations` replaced.
fn with_annotations(
    mut claim: PersistentVolumeClaim,
    annotations: Option<BTreeMap<String, String>>,
) -> PersistentVolumeClaim {
    claim.metadata.annotations = annotations;
    claim
}

/// pv-node1a bound to unbound-pvc with the claimRef's uid emptied.
fn pv_node1a_bound_without_uid() -> PersistentVolume {
    let mut volume = pv_node1a_bound();
    if let Some(reference) = volume.spec.as_mut().and_then(|s| s.claim_ref.as_mut()) {
        reference.uid = Some(String::new());
    }
    volume
}

struct CheckCase {
    name: &'static str,
    bindings: Vec<Binding>,
    provisions: Vec<PersistentVolumeClaim>,
    volumes: Vec<PersistentVolume>,
    claims: Vec<PersistentVolumeClaim>,
    /// Written through the API before the check.
    api_volumes: Vec<PersistentVolume>,
    api_claims: Vec<PersistentVolumeClaim>,
    /// Deleted (from the lister) before the check.
    delete_volumes: bool,
    delete_claims: bool,
    /// `None`: the check fails.
    expect: Option<bool>,
}

impl Default for CheckCase {
    fn default() -> Self {
        Self {
            name: "",
            bindings: vec![],
            provisions: vec![],
            volumes: vec![],
            claims: vec![],
            api_volumes: vec![],
            api_claims: vec![],
            delete_volumes: false,
            delete_claims: false,
            expect: Some(true),
        }
    }
}

#[test]
fn check_bindings_table() {
    let static_binding = || vec![binding(unbound_pvc(), pv_node1a_bound())];
    let provisioning = || vec![with_selected_node(provisioned_pvc())];
    let cases = vec![
        CheckCase {
            name: "nothing-to-bind",
            ..CheckCase::default()
        },
        CheckCase {
            name: "binding-bound",
            bindings: static_binding(),
            volumes: vec![pv_node1a_bound()],
            claims: vec![bound_pvc_node1a()],
            ..CheckCase::default()
        },
        CheckCase {
            name: "binding-prebound",
            bindings: static_binding(),
            volumes: vec![pv_node1a_bound()],
            claims: vec![prebound_pvc_node1a()],
            expect: Some(false),
            ..CheckCase::default()
        },
        CheckCase {
            name: "binding-unbound",
            bindings: static_binding(),
            volumes: vec![pv_node1a_bound()],
            claims: vec![unbound_pvc()],
            expect: Some(false),
            ..CheckCase::default()
        },
        CheckCase {
            name: "binding-pvc-not-exists",
            bindings: static_binding(),
            volumes: vec![pv_node1a_bound()],
            expect: None,
            ..CheckCase::default()
        },
        CheckCase {
            name: "binding-pv-not-exists",
            bindings: static_binding(),
            volumes: vec![pv_node1a_bound()],
            claims: vec![bound_pvc_node1a()],
            delete_volumes: true,
            expect: None,
            ..CheckCase::default()
        },
        CheckCase {
            name: "binding-claimref-nil",
            bindings: static_binding(),
            volumes: vec![pv_node1a()],
            claims: vec![bound_pvc_node1a()],
            api_volumes: vec![pv_node1a()],
            expect: None,
            ..CheckCase::default()
        },
        CheckCase {
            name: "binding-claimref-uid-empty",
            bindings: static_binding(),
            volumes: vec![pv_node1a_bound()],
            claims: vec![bound_pvc_node1a()],
            api_volumes: vec![pv_node1a_bound_without_uid()],
            expect: None,
            ..CheckCase::default()
        },
        CheckCase {
            name: "binding-one-bound,one-unbound",
            bindings: vec![
                binding(unbound_pvc(), pv_node1a_bound()),
                binding(unbound_pvc2(), pv_node1b_bound()),
            ],
            volumes: vec![pv_node1a_bound(), pv_node1b_bound()],
            claims: vec![bound_pvc_node1a(), unbound_pvc2()],
            expect: Some(false),
            ..CheckCase::default()
        },
        CheckCase {
            name: "provisioning-pvc-bound",
            provisions: provisioning(),
            volumes: vec![pv_bound()],
            claims: vec![provisioned_pvc_bound()],
            api_claims: vec![with_selected_node(provisioned_pvc_bound())],
            ..CheckCase::default()
        },
        CheckCase {
            name: "provisioning-pvc-unbound",
            provisions: provisioning(),
            claims: vec![with_selected_node(provisioned_pvc())],
            expect: Some(false),
            ..CheckCase::default()
        },
        CheckCase {
            name: "provisioning-pvc-not-exists",
            provisions: provisioning(),
            claims: vec![provisioned_pvc()],
            delete_claims: true,
            expect: None,
            ..CheckCase::default()
        },
        CheckCase {
            name: "provisioning-pvc-annotations-nil",
            provisions: provisioning(),
            claims: vec![provisioned_pvc()],
            api_claims: vec![provisioned_pvc()],
            expect: None,
            ..CheckCase::default()
        },
        CheckCase {
            name: "provisioning-pvc-selected-node-dropped",
            provisions: provisioning(),
            claims: vec![provisioned_pvc()],
            api_claims: vec![with_annotations(provisioned_pvc(), Some(BTreeMap::new()))],
            expect: None,
            ..CheckCase::default()
        },
        CheckCase {
            name: "provisioning-pvc-selected-node-wrong-node",
            provisions: provisioning(),
            claims: vec![provisioned_pvc()],
            api_claims: vec![with_annotation(
                provisioned_pvc(),
                SELECTED_NODE_ANNOTATION,
                "wrong-node",
            )],
            expect: None,
            ..CheckCase::default()
        },
        CheckCase {
            name: "binding-bound-provisioning-unbound",
            bindings: static_binding(),
            provisions: provisioning(),
            volumes: vec![pv_node1a_bound()],
            claims: vec![bound_pvc_node1a(), with_selected_node(provisioned_pvc())],
            expect: Some(false),
            ..CheckCase::default()
        },
        CheckCase {
            name: "tolerate-provisioning-pvc-bound-pv-not-found",
            provisions: provisioning(),
            volumes: vec![pv_node1a()],
            claims: vec![provisioned_pvc()],
            api_claims: vec![with_selected_node(provisioned_pvc_bound())],
            delete_volumes: true,
            expect: Some(false),
            ..CheckCase::default()
        },
    ];
    for case in cases {
        let name = case.name;
        let cache = Arc::new(cluster(&case.claims, &case.volumes));
        let api = ApiServer::new(cache.clone(), &case.claims, &case.volumes);
        let pod_volumes = PodVolumes {
            static_bindings: case.bindings,
            dynamic_provisions: case.provisions.into_iter().map(provision).collect(),
        };
        assume_all(&cache, &pod_volumes);
        if case.delete_volumes {
            case.volumes.iter().for_each(|v| cache.delete_volume(v));
        }
        for volume in &case.api_volumes {
            let written = complete(api.update_volume(volume));
            assert!(written.is_ok(), "{name}: {written:?}");
        }
        if case.delete_claims {
            case.claims.iter().for_each(|c| cache.delete_claim(c));
        }
        for claim in &case.api_claims {
            let written = complete(api.update_claim(claim));
            assert!(written.is_ok(), "{name}: {written:?}");
        }
        let result = check_bindings(&cache, "node1", &node_labels("node1"), &pod_volumes);
        assert_eq!(
            result.as_ref().ok().copied(),
            case.expect,
            "{name}: {result:?}"
        );
    }
}

/// What the PreBind loop makes of the checks before and after a change in the cluster.
#[derive(Debug, PartialEq)]
enum Outcome {
    Bound,
    Fails,
    /// Still in progress after the change: the loop would time out.
    Waits,
}

/// A change the PV controller or a provisioner makes while PreBind waits.
type DuringWait = fn(&ApiServer);

/// The PV controller completes the binding of `claim` to `volume`: the claim (as the API
/// server holds it) gets the volume name and bind-completed.
fn complete_binding(api: &ApiServer, claim: &str, volume: &str) {
    let Some(mut claim) = api.claim(claim) else {
        panic!("claim {claim} not in the API");
    };
    claim.spec.get_or_insert_default().volume_name = Some(volume.into());
    let claim = with_annotation(claim, BIND_COMPLETED_ANNOTATION, "yes");
    let written = complete(api.update_claim(&claim));
    assert!(written.is_ok(), "{written:?}");
}

struct BindPodCase {
    name: &'static str,
    volumes: Vec<PersistentVolume>,
    claims: Vec<PersistentVolumeClaim>,
    binding: Option<Binding>,
    provision: Option<PersistentVolumeClaim>,
    /// Written through the API after Reserve, before PreBind.
    api_volume: Option<PersistentVolume>,
    api_claim: Option<PersistentVolumeClaim>,
    during_wait: Option<DuringWait>,
    /// node1's labels.
    labels: BTreeMap<String, String>,
    expect: Outcome,
}

impl Default for BindPodCase {
    fn default() -> Self {
        Self {
            name: "",
            volumes: vec![],
            claims: vec![],
            binding: None,
            provision: None,
            api_volume: None,
            api_claim: None,
            during_wait: None,
            labels: node_labels("node1"),
            expect: Outcome::Bound,
        }
    }
}

/// Upstream TestBindPodVolumes, as the binder's part of PreBind: the writes, then a
/// check before and after what happens while PreBind waits. The timeout itself, and the
/// pod being deleted while waiting, are the PreBind loop's.
#[test]
fn bind_pod_volumes_table() {
    let cases = vec![
        BindPodCase {
            name: "nothing-to-bind-empty",
            ..BindPodCase::default()
        },
        BindPodCase {
            name: "already-bound",
            volumes: vec![pv_node1a_bound()],
            claims: vec![bound_pvc_node1a()],
            binding: Some(binding(unbound_pvc(), pv_node1a_bound())),
            ..BindPodCase::default()
        },
        BindPodCase {
            name: "binding-static-pv-succeeds-after-time",
            volumes: vec![pv_node1a()],
            claims: vec![unbound_pvc()],
            binding: Some(binding(unbound_pvc(), pv_node1a_bound())),
            during_wait: Some(|api| complete_binding(api, "unbound-pvc", "pv-node1a")),
            ..BindPodCase::default()
        },
        BindPodCase {
            name: "binding-dynamic-pv-succeeds-after-time",
            claims: vec![provisioned_pvc()],
            provision: Some(with_selected_node(provisioned_pvc())),
            during_wait: Some(|api| {
                let Some(claim) = api.claim("provisioned-pvc") else {
                    panic!("provisioned-pvc not in the API");
                };
                let volume =
                    make_volume("dynamic-pv", "node1", "1G", "1", Some(&claim), WAIT_CLASS);
                api.create_volume(volume);
                complete_binding(api, "provisioned-pvc", "dynamic-pv");
            }),
            ..BindPodCase::default()
        },
        BindPodCase {
            name: "bound-by-pv-controller-before-bind",
            volumes: vec![pv_node1a()],
            claims: vec![unbound_pvc()],
            binding: Some(binding(unbound_pvc(), pv_node1a_bound())),
            api_volume: Some(pv_node1a_bound()),
            api_claim: Some(bound_pvc_node1a()),
            expect: Outcome::Fails,
            ..BindPodCase::default()
        },
        BindPodCase {
            name: "binding-times-out",
            volumes: vec![pv_node1a()],
            claims: vec![unbound_pvc()],
            binding: Some(binding(unbound_pvc(), pv_node1a_bound())),
            expect: Outcome::Waits,
            ..BindPodCase::default()
        },
        BindPodCase {
            name: "binding-fails",
            volumes: vec![pv_node1b()],
            claims: vec![unbound_pvc2()],
            binding: Some(binding(unbound_pvc2(), pv_node1b_bound())),
            expect: Outcome::Waits,
            ..BindPodCase::default()
        },
        BindPodCase {
            name: "check-fails",
            volumes: vec![pv_node1a()],
            claims: vec![unbound_pvc()],
            binding: Some(binding(unbound_pvc(), pv_node1a_bound())),
            during_wait: Some(|api| api.watch.delete_claim(&unbound_pvc())),
            expect: Outcome::Fails,
            ..BindPodCase::default()
        },
        BindPodCase {
            name: "node-affinity-fails",
            volumes: vec![pv_node1a_bound()],
            claims: vec![bound_pvc_node1a()],
            binding: Some(binding(unbound_pvc(), pv_node1a_bound())),
            labels: BTreeMap::new(),
            expect: Outcome::Fails,
            ..BindPodCase::default()
        },
        BindPodCase {
            name: "node-affinity-fails-dynamic-provisioning",
            volumes: vec![pv_node1a(), pv_node2()],
            claims: vec![selected_node_pvc()],
            provision: Some(selected_node_pvc()),
            during_wait: Some(|api| complete_binding(api, "provisioned-pvc", "pv-node2")),
            expect: Outcome::Fails,
            ..BindPodCase::default()
        },
    ];
    for case in cases {
        let name = case.name;
        let cache = Arc::new(cluster(&case.claims, &case.volumes));
        let api = ApiServer::new(cache.clone(), &case.claims, &case.volumes);
        let mut pod_volumes = PodVolumes {
            static_bindings: case.binding.into_iter().collect(),
            dynamic_provisions: case.provision.into_iter().map(provision).collect(),
        };
        assume_all(&cache, &pod_volumes);
        if let Some(volume) = &case.api_volume {
            assert!(complete(api.update_volume(volume)).is_ok(), "{name}");
        }
        if let Some(claim) = &case.api_claim {
            assert!(complete(api.update_claim(claim)).is_ok(), "{name}");
        }
        let check =
            |pod_volumes: &PodVolumes| check_bindings(&cache, "node1", &case.labels, pod_volumes);
        let outcome = match complete(bind_api_update(&cache, &api, &mut pod_volumes)) {
            Err(_) => Outcome::Fails,
            Ok(()) => match check(&pod_volumes) {
                Ok(true) => Outcome::Bound,
                Err(_) => Outcome::Fails,
                Ok(false) => {
                    if let Some(change) = case.during_wait {
                        change(&api);
                    }
                    match check(&pod_volumes) {
                        Ok(true) => Outcome::Bound,
                        Ok(false) => Outcome::Waits,
                        Err(_) => Outcome::Fails,
                    }
                }
            },
        };
        assert_eq!(outcome, case.expect, "{name}");
    }
}

// ---------------------------------------------------------------------------------------
// TestCapacity
// ---------------------------------------------------------------------------------------

/// Upstream `makeCapacity`: named "net", for `class`, reachable from every node (`node`
/// "") or from nodes with `nodeKey: node`; "" leaves a size unset.
fn make_capacity(class: &str, node: &str, capacity: &str, maximum: &str) -> CSIStorageCapacity {
    let quantity = |q: &str| (!q.is_empty()).then(|| Quantity(q.into()));
    CSIStorageCapacity {
        metadata: ObjectMeta {
            name: Some("net".into()),
            ..ObjectMeta::default()
        },
        storage_class_name: class.into(),
        node_topology: Some(LabelSelector {
            match_labels: (!node.is_empty()).then(|| node_labels(node)),
            match_expressions: None,
        }),
        capacity: quantity(capacity),
        maximum_volume_size: quantity(maximum),
    }
}

#[test]
fn capacity_table() {
    let class = WAIT_CLASS_WITH_PROVISIONER;
    // (scenario, capacity objects in the order added, the one provisioning uses; `None`
    // for NotEnoughSpace)
    type CapacityCase = (
        &'static str,
        Vec<CSIStorageCapacity>,
        Option<CSIStorageCapacity>,
    );
    let cases: Vec<CapacityCase> = vec![
        (
            "network-attached",
            vec![make_capacity(class, "", "1Gi", "")],
            Some(make_capacity(class, "", "1Gi", "")),
        ),
        (
            "local-storage",
            vec![make_capacity(class, "node1", "1Gi", "")],
            Some(make_capacity(class, "node1", "1Gi", "")),
        ),
        (
            "multiple",
            vec![
                make_capacity(class, "", "1Gi", ""),
                make_capacity(class, "node2", "1Gi", ""),
                make_capacity(class, "node1", "1Gi", ""),
            ],
            Some(make_capacity(class, "node1", "1Gi", "")),
        ),
        ("no-storage", vec![], None),
        (
            "wrong-node",
            vec![make_capacity(class, "node2", "1Gi", "")],
            None,
        ),
        (
            "wrong-storage-class",
            vec![make_capacity(WAIT_CLASS, "node1", "1Gi", "")],
            None,
        ),
        (
            "insufficient-storage",
            vec![make_capacity(class, "node1", "1Mi", "")],
            None,
        ),
        (
            "insufficient-volume-size",
            vec![make_capacity(class, "node1", "1Gi", "1Mi")],
            None,
        ),
        (
            "zero-storage",
            vec![make_capacity(class, "node1", "0Mi", "")],
            None,
        ),
        (
            "zero-volume-size",
            vec![make_capacity(class, "node1", "", "0Mi")],
            None,
        ),
        (
            "nil-storage",
            vec![make_capacity(class, "node1", "", "")],
            None,
        ),
    ];
    for (name, capacities, used) in cases {
        for driver in [Driver::TracksCapacity, Driver::DoesNotTrackCapacity] {
            let cluster = cluster(&[provisioned_pvc()], &[]);
            add_driver(&cluster, driver);
            capacities
                .iter()
                .for_each(|c| cluster.apply_capacity(c.clone()));
            let pod = pod_with(&[provisioned_pvc()]);
            let verdict = find(&cluster, &pod);
            let expect = match (driver, &used) {
                (Driver::TracksCapacity, None) => NodeVerdict {
                    pod_volumes: PodVolumes::default(),
                    reasons: vec![ConflictReason::NotEnoughSpace],
                },
                (Driver::TracksCapacity, Some(capacity)) => NodeVerdict {
                    pod_volumes: PodVolumes {
                        static_bindings: vec![],
                        dynamic_provisions: vec![Provision {
                            claim: provisioned_pvc(),
                            capacity: Some(Arc::new(capacity.clone())),
                        }],
                    },
                    reasons: vec![],
                },
                _ => NodeVerdict {
                    pod_volumes: PodVolumes {
                        static_bindings: vec![],
                        dynamic_provisions: vec![provision(provisioned_pvc())],
                    },
                    reasons: vec![],
                },
            };
            assert_eq!(verdict, Ok(expect), "{name} ({driver:?})");
        }
    }
}
