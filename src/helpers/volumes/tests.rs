use k8s_openapi::api::core::v1::{
    EphemeralVolumeSource, NodeSelector as NodeSelectorSpec, NodeSelectorRequirement,
    NodeSelectorTerm, PersistentVolumeClaimSpec, PersistentVolumeClaimVolumeSource,
    PersistentVolumeSpec, VolumeNodeAffinity,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use super::*;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn pinned(key: &str, operator: &str, values: &[&str]) -> PersistentVolume {
    PersistentVolume {
        spec: Some(PersistentVolumeSpec {
            node_affinity: Some(VolumeNodeAffinity {
                required: Some(NodeSelectorSpec {
                    node_selector_terms: vec![NodeSelectorTerm {
                        match_expressions: Some(vec![NodeSelectorRequirement {
                            key: key.into(),
                            operator: operator.into(),
                            values: Some(values.iter().map(|v| v.to_string()).collect()),
                        }]),
                        match_fields: None,
                    }],
                }),
            }),
            ..PersistentVolumeSpec::default()
        }),
        ..PersistentVolume::default()
    }
}

#[test]
fn volume_node_affinity_is_matched_against_the_labels() {
    let zone_a = labels(&[("topology.kubernetes.io/zone", "a")]);
    let cases = [
        (
            "no affinity admits every node",
            PersistentVolume::default(),
            true,
        ),
        (
            "In the node's zone",
            pinned("topology.kubernetes.io/zone", "In", &["a", "b"]),
            true,
        ),
        (
            "In another zone",
            pinned("topology.kubernetes.io/zone", "In", &["b"]),
            false,
        ),
        (
            "NotIn the node's zone",
            pinned("topology.kubernetes.io/zone", "NotIn", &["a"]),
            false,
        ),
        (
            "Exists on a missing label",
            pinned("kubernetes.io/hostname", "Exists", &[]),
            false,
        ),
    ];
    for (name, volume, want) in cases {
        assert_eq!(volume_admits(&volume, &zone_a), want, "{name}");
    }
}

fn claim(
    annotations: &[(&str, &str)],
    class: Option<&str>,
    volume: Option<&str>,
) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some("data".into()),
            annotations: Some(labels(annotations)),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            storage_class_name: class.map(str::to_string),
            volume_name: volume.map(str::to_string),
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    }
}

#[test]
fn the_beta_class_annotation_takes_precedence() {
    assert_eq!(claim_class(&claim(&[], Some("fast"), None)), "fast");
    assert_eq!(
        claim_class(&claim(
            &[(BETA_STORAGE_CLASS_ANNOTATION, "slow")],
            Some("fast"),
            None
        )),
        "slow"
    );
    assert_eq!(claim_class(&claim(&[], None, None)), "");
}

#[test]
fn a_claim_is_fully_bound_with_a_volume_name_and_the_completed_annotation() {
    assert!(is_fully_bound(&claim(
        &[(BIND_COMPLETED_ANNOTATION, "yes")],
        None,
        Some("pv-1")
    )));
    assert!(!is_fully_bound(&claim(&[], None, Some("pv-1"))));
    assert!(!is_fully_bound(&claim(
        &[(BIND_COMPLETED_ANNOTATION, "yes")],
        None,
        None
    )));
}

fn pod_with(volume: Volume) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("web-0".into()),
            namespace: Some("shop".into()),
            uid: Some("uid-1".into()),
            ..ObjectMeta::default()
        },
        spec: Some(k8s_openapi::api::core::v1::PodSpec {
            volumes: Some(vec![volume.clone()]),
            ..Default::default()
        }),
        ..Pod::default()
    }
}

#[test]
fn claim_names_of_persistent_and_ephemeral_volumes() {
    let persistent = Volume {
        name: "v".into(),
        persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
            claim_name: "data".into(),
            read_only: None,
        }),
        ..Volume::default()
    };
    let ephemeral = Volume {
        name: "scratch".into(),
        ephemeral: Some(EphemeralVolumeSource::default()),
        ..Volume::default()
    };
    let empty_dir = Volume {
        name: "tmp".into(),
        empty_dir: Some(Default::default()),
        ..Volume::default()
    };
    assert_eq!(
        claim_name(&pod_with(persistent.clone()), &persistent).as_deref(),
        Some("data")
    );
    assert_eq!(
        claim_name(&pod_with(ephemeral.clone()), &ephemeral).as_deref(),
        Some("web-0-scratch")
    );
    assert_eq!(claim_name(&pod_with(empty_dir.clone()), &empty_dir), None);
}

#[test]
fn an_ephemeral_claim_must_be_controlled_by_the_pod() {
    let pod = pod_with(Volume::default());
    let mut owned = claim(&[], None, None);
    owned.metadata.name = Some("web-0-scratch".into());
    owned.metadata.owner_references = Some(vec![OwnerReference {
        controller: Some(true),
        uid: "uid-1".into(),
        ..OwnerReference::default()
    }]);
    assert_eq!(ephemeral_claim_owned_by(&owned, &pod), Ok(()));
    let mut foreign = owned.clone();
    foreign.metadata.owner_references = None;
    assert_eq!(
        ephemeral_claim_owned_by(&foreign, &pod),
        Err("PVC shop/web-0-scratch was not created for pod shop/web-0 (pod is not owner)".into())
    );
}
