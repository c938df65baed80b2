use k8s_openapi::api::core::v1::{
    PersistentVolumeClaimSpec, TopologySelectorLabelRequirement, TopologySelectorTerm,
    VolumeResourceRequirements,
};
use k8s_openapi::api::storage::v1::{CSINode, CSINodeDriver, CSINodeSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::*;
use crate::helpers::volumes::{SELECTED_NODE_ANNOTATION, is_fully_bound};

const ZONE: &str = "topology.kubernetes.io/zone";
const DRIVER_ZONE: &str = "topology.csi.example.com/zone";
const CSI_DRIVER: &str = "csi.example.com";

fn meta(name: &str, version: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        resource_version: Some(version.into()),
        ..ObjectMeta::default()
    }
}

fn claim(class: &str, version: &str) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            namespace: Some("shop".into()),
            uid: Some("0b1c".into()),
            ..meta("data", version)
        },
        spec: Some(PersistentVolumeClaimSpec {
            storage_class_name: Some(class.into()),
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            volume_mode: Some("Filesystem".into()),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_string(),
                    Quantity("10Gi".into()),
                )])),
                ..VolumeResourceRequirements::default()
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        status: Some(PersistentVolumeClaimStatus {
            phase: Some("Pending".into()),
            ..PersistentVolumeClaimStatus::default()
        }),
    }
}

fn static_volume(version: &str) -> PersistentVolume {
    PersistentVolume {
        metadata: meta("pv-a", version),
        spec: Some(PersistentVolumeSpec {
            storage_class_name: Some("manual".into()),
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            capacity: Some(BTreeMap::from([(
                "storage".to_string(),
                Quantity("20Gi".into()),
            )])),
            ..PersistentVolumeSpec::default()
        }),
        status: Some(PersistentVolumeStatus {
            phase: Some("Available".into()),
            ..PersistentVolumeStatus::default()
        }),
    }
}

/// `volume` as the scheduler assumes it in Reserve (upstream `GetBindVolumeToClaim`).
fn bound_to_data(mut volume: PersistentVolume) -> PersistentVolume {
    volume
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(BOUND_BY_CONTROLLER_ANNOTATION.into(), "yes".into());
    volume.spec.get_or_insert_with(Default::default).claim_ref = Some(ObjectReference {
        kind: Some("PersistentVolumeClaim".into()),
        namespace: Some("shop".into()),
        name: Some("data".into()),
        uid: Some("0b1c".into()),
        ..ObjectReference::default()
    });
    volume
}

/// `claim` as the scheduler assumes it for provisioning on `node`.
fn selected(mut claim: PersistentVolumeClaim, node: &str) -> PersistentVolumeClaim {
    claim
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(SELECTED_NODE_ANNOTATION.into(), node.into());
    claim
}

fn class(name: &str, provisioner: &str, allowed_zones: &[&str]) -> StorageClass {
    StorageClass {
        metadata: meta(name, "1"),
        provisioner: provisioner.into(),
        volume_binding_mode: Some("WaitForFirstConsumer".into()),
        allowed_topologies: (!allowed_zones.is_empty()).then(|| {
            vec![TopologySelectorTerm {
                match_label_expressions: Some(vec![TopologySelectorLabelRequirement {
                    key: ZONE.into(),
                    values: allowed_zones.iter().map(|z| z.to_string()).collect(),
                }]),
            }]
        }),
        ..StorageClass::default()
    }
}

fn csi_node(node: &str, topology_keys: &[&str]) -> CSINode {
    CSINode {
        metadata: meta(node, "1"),
        spec: CSINodeSpec {
            drivers: vec![CSINodeDriver {
                name: CSI_DRIVER.into(),
                node_id: node.into(),
                topology_keys: Some(topology_keys.iter().map(|k| k.to_string()).collect()),
                ..CSINodeDriver::default()
            }],
        },
        status: None,
    }
}

/// Node `node-b` in zone b, whose CSI driver also labels it with its own zone key.
fn node_labels() -> NodeLabels {
    BTreeMap::from([(
        "node-b".to_string(),
        BTreeMap::from([
            (ZONE.to_string(), "b".to_string()),
            (DRIVER_ZONE.to_string(), "b-1".to_string()),
            ("kubernetes.io/hostname".to_string(), "node-b".to_string()),
        ]),
    )])
}

fn writer(volumes: &Arc<Volumes>) -> InMemoryVolumeWriter {
    InMemoryVolumeWriter::new(volumes.clone(), node_labels())
}

fn phase_of_volume(volume: &PersistentVolume) -> Option<&str> {
    volume.status.as_ref()?.phase.as_deref()
}

fn phase_of_claim(claim: &PersistentVolumeClaim) -> Option<&str> {
    claim.status.as_ref()?.phase.as_deref()
}

fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations.as_ref()?.get(key).map(String::as_str)
}

#[tokio::test]
async fn a_static_binding_is_completed_as_the_pv_controller_completes_it() {
    let volumes = Arc::new(Volumes::new());
    volumes.apply_claim(claim("manual", "3"));
    volumes.apply_volume(static_volume("5"));
    volumes
        .assume_volume(bound_to_data(static_volume("5")))
        .expect("Reserve assumes the volume");
    let writer = writer(&volumes);

    let written = writer
        .update_volume(&bound_to_data(static_volume("5")))
        .await
        .expect("the update is accepted");

    assert!(resource_version(&written) > 5, "{written:?}");
    let volume = volumes.api_volume("pv-a").expect("the volume is stored");
    assert_eq!(phase_of_volume(&volume), Some("Bound"));
    assert_eq!(
        annotation(&volume.metadata, BOUND_BY_CONTROLLER_ANNOTATION),
        Some("yes")
    );
    assert_eq!(
        volumes.volume("pv-a").as_deref(),
        Some(volume.as_ref()),
        "the write replaced the assumed copy"
    );
    let claim = volumes.api_claim("shop", "data").expect("the claim");
    assert!(is_fully_bound(&claim), "{claim:?}");
    assert_eq!(claim_volume_name(&claim), "pv-a");
    assert_eq!(phase_of_claim(&claim), Some("Bound"));
    for key in [BIND_COMPLETED_ANNOTATION, BOUND_BY_CONTROLLER_ANNOTATION] {
        assert_eq!(annotation(&claim.metadata, key), Some("yes"), "{key}");
    }
    let capacity = claim.status.as_ref().and_then(|s| s.capacity.as_ref());
    assert_eq!(
        capacity.and_then(|c| c.get("storage")),
        Some(&Quantity("20Gi".into())),
        "the claim's status has the volume's capacity"
    );
    let events = writer.events().drain();
    assert!(
        events.contains(&(EventResource::PersistentVolume, ActionType::UPDATE))
            && events.contains(&(EventResource::PersistentVolumeClaim, ActionType::UPDATE)),
        "{events:?}"
    );
    assert!(writer.events().drain().is_empty(), "drained once");
}

#[tokio::test]
async fn an_update_of_a_stale_resource_version_is_a_conflict_and_changes_nothing() {
    let volumes = Arc::new(Volumes::new());
    volumes.apply_claim(claim("manual", "3"));
    volumes.apply_volume(static_volume("7"));
    let writer = writer(&volumes);

    let result = writer
        .update_volume(&bound_to_data(static_volume("6")))
        .await;

    assert_eq!(
        result.map(|_| ()),
        Err(
            "Operation cannot be fulfilled on persistentvolumes \"pv-a\": the object has been \
             modified; please apply your changes to the latest version and try again"
                .to_string()
        )
    );
    let stale_claim = selected(claim("manual", "2"), "node-b");
    let claim_update = writer.update_claim(&stale_claim).await;
    assert!(claim_update.is_err(), "claims are checked alike");
    let volume = volumes.api_volume("pv-a").expect("the volume");
    assert_eq!(phase_of_volume(&volume), Some("Available"));
    assert_eq!(volume.spec.as_ref().and_then(|s| s.claim_ref.clone()), None);
    let claim = volumes.api_claim("shop", "data").expect("the claim");
    assert!(selected_node(&claim).is_none());
    assert!(writer.events().drain().is_empty());
}

#[tokio::test]
async fn updates_of_unknown_objects_are_not_found() {
    let volumes = Arc::new(Volumes::new());
    let writer = writer(&volumes);
    assert_eq!(
        writer.update_volume(&static_volume("1")).await.map(|_| ()),
        Err("persistentvolumes \"pv-a\" not found".to_string())
    );
    assert_eq!(
        writer.update_claim(&claim("fast", "1")).await.map(|_| ()),
        Err("persistentvolumeclaims \"data\" not found".to_string())
    );
}

/// The node affinity of a provisioned volume as (key, values) pairs of its one term.
fn affinity(volume: &PersistentVolume) -> Vec<(String, Vec<String>)> {
    let required = volume
        .spec
        .as_ref()
        .and_then(|s| s.node_affinity.as_ref())
        .and_then(|a| a.required.as_ref());
    required
        .into_iter()
        .flat_map(|r| r.node_selector_terms.iter())
        .flat_map(|t| t.match_expressions.iter().flatten())
        .map(|r| {
            assert_eq!(r.operator, "In");
            (r.key.clone(), r.values.clone().unwrap_or_default())
        })
        .collect()
}

#[tokio::test]
async fn a_claim_with_a_selected_node_is_provisioned_in_the_nodes_topology() {
    struct Case {
        name: &'static str,
        allowed_zones: &'static [&'static str],
        /// The topologyKeys of the driver in node-b's CSINode; `None`: no CSINode.
        topology_keys: Option<&'static [&'static str]>,
        affinity: Vec<(&'static str, &'static str)>,
    }
    let cases = [
        Case {
            name: "the CSI driver's topology keys, with the node's values",
            allowed_zones: &[],
            topology_keys: Some(&[ZONE]),
            affinity: vec![(ZONE, "b")],
        },
        Case {
            name: "the driver's own keys win over the class's allowedTopologies keys",
            allowed_zones: &["a", "b"],
            topology_keys: Some(&[DRIVER_ZONE]),
            affinity: vec![(DRIVER_ZONE, "b-1")],
        },
        Case {
            name: "without a CSINode entry, the keys allowedTopologies restricts",
            allowed_zones: &["a", "b"],
            topology_keys: None,
            affinity: vec![(ZONE, "b")],
        },
        Case {
            name: "a driver without topology and a class without allowedTopologies",
            allowed_zones: &[],
            topology_keys: Some(&[]),
            affinity: vec![],
        },
        Case {
            name: "no CSINode and no allowedTopologies",
            allowed_zones: &[],
            topology_keys: None,
            affinity: vec![],
        },
    ];
    for case in cases {
        let volumes = Arc::new(Volumes::new());
        volumes.apply_class(class("fast", CSI_DRIVER, case.allowed_zones));
        if let Some(keys) = case.topology_keys {
            volumes.apply_csi_node(csi_node("node-b", keys));
        }
        volumes.apply_claim(claim("fast", "3"));
        let writer = writer(&volumes);

        let written = writer
            .update_claim(&selected(claim("fast", "3"), "node-b"))
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));

        assert_eq!(selected_node(&written), Some("node-b"), "{}", case.name);
        let volume = volumes
            .api_volume("pvc-0b1c")
            .unwrap_or_else(|| panic!("{}: no volume pvc-<claim uid>", case.name));
        let expected: Vec<(String, Vec<String>)> = case
            .affinity
            .iter()
            .map(|(k, v)| (k.to_string(), vec![v.to_string()]))
            .collect();
        assert_eq!(affinity(&volume), expected, "{}", case.name);
        let spec = volume.spec.clone().unwrap_or_default();
        assert_eq!(spec.storage_class_name.as_deref(), Some("fast"));
        assert_eq!(
            spec.capacity.and_then(|c| c.get("storage").cloned()),
            Some(Quantity("10Gi".into())),
            "{}: capacity is the request",
            case.name
        );
        assert_eq!(spec.access_modes, Some(vec!["ReadWriteOnce".to_string()]));
        assert_eq!(spec.volume_mode.as_deref(), Some("Filesystem"));
        let claim_ref = spec.claim_ref.clone().unwrap_or_default();
        assert_eq!(
            (claim_ref.namespace.as_deref(), claim_ref.name.as_deref()),
            (Some("shop"), Some("data"))
        );
        assert_eq!(claim_ref.uid.as_deref(), Some("0b1c"));
        assert_eq!(
            spec.csi.map(|c| c.driver).as_deref(),
            Some(CSI_DRIVER),
            "{}",
            case.name
        );
        assert_eq!(
            annotation(&volume.metadata, PROVISIONED_BY_ANNOTATION),
            Some(CSI_DRIVER)
        );
        assert_eq!(phase_of_volume(&volume), Some("Bound"), "{}", case.name);
        let claim = volumes.api_claim("shop", "data").expect("the claim");
        assert!(is_fully_bound(&claim), "{}: {claim:?}", case.name);
        assert_eq!(claim_volume_name(&claim), "pvc-0b1c");
        assert_eq!(selected_node(&claim), Some("node-b"));
        let events = writer.events().drain();
        assert!(
            events.contains(&(EventResource::PersistentVolume, ActionType::ADD)),
            "{}: {events:?}",
            case.name
        );
    }
}

#[tokio::test]
async fn a_class_without_a_provisioner_leaves_the_claim_unbound() {
    for provisioner in [NO_PROVISIONER, ""] {
        let volumes = Arc::new(Volumes::new());
        volumes.apply_class(class("local", provisioner, &[]));
        volumes.apply_claim(claim("local", "3"));
        let writer = writer(&volumes);

        writer
            .update_claim(&selected(claim("local", "3"), "node-b"))
            .await
            .expect("the annotation is written");

        let claim = volumes.api_claim("shop", "data").expect("the claim");
        assert_eq!(selected_node(&claim), Some("node-b"), "{provisioner:?}");
        assert!(!is_fully_bound(&claim), "{provisioner:?}");
        assert!(volumes.volumes().is_empty(), "{provisioner:?}");
        assert_eq!(
            writer.events().drain(),
            vec![(EventResource::PersistentVolumeClaim, ActionType::UPDATE)]
        );
    }
}

#[tokio::test]
async fn a_claim_with_a_selected_node_replaces_its_assumed_copy() {
    let volumes = Arc::new(Volumes::new());
    volumes.apply_class(class("fast", CSI_DRIVER, &[]));
    volumes.apply_claim(claim("fast", "3"));
    volumes
        .assume_claim(selected(claim("fast", "3"), "node-b"))
        .expect("Reserve assumes the claim");
    let writer = writer(&volumes);

    writer
        .update_claim(&selected(claim("fast", "3"), "node-b"))
        .await
        .expect("the update is accepted");

    let latest = volumes.claim("shop", "data").expect("the claim");
    assert!(is_fully_bound(&latest), "{latest:?}");
    assert!(resource_version(latest.as_ref()) > 3);
}
