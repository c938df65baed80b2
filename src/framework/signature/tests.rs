//! What makes two pods' signatures equal, as upstream's signers and `SignPod`
//! implementations decide it.

use k8s_openapi::api::core::v1::{
    Affinity, ConfigMapVolumeSource, Container, ContainerPort, NodeAffinity, NodeSelector,
    NodeSelectorRequirement, NodeSelectorTerm, PersistentVolumeClaimVolumeSource, Pod, PodAffinity,
    PodSpec, SecretVolumeSource, Toleration, TopologySpreadConstraint, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;
use crate::framework::Registry;
use crate::framework::{Framework, Handle, resolve};

fn pod(edit: impl FnOnce(&mut Pod)) -> PodInfo {
    let mut pod = Pod {
        metadata: ObjectMeta {
            name: Some("p".into()),
            namespace: Some("default".into()),
            labels: Some([("app".to_string(), "web".to_string())].into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                image: Some("nginx".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    edit(&mut pod);
    PodInfo::new(pod).expect("a valid pod")
}

fn spec(pod: &mut Pod) -> &mut PodSpec {
    pod.spec.as_mut().expect("a spec")
}

/// The default plugins, with PodTopologySpread's defaulting as `args` says.
fn framework(pod_topology_spread: serde_json::Value, ignore_preferred: bool) -> Framework {
    let registry: Registry = crate::plugins::default_registry();
    let spec = crate::api::SchedulerProfileSpec {
        plugin_config: [
            ("podTopologySpread".to_string(), pod_topology_spread),
            (
                "interPodAffinity".to_string(),
                serde_json::json!({"ignorePreferredTermsOfExistingPods": ignore_preferred}),
            ),
        ]
        .into(),
        ..Default::default()
    };
    let resolved = resolve(&spec, &registry).expect("valid profile");
    Framework::new(
        "default-scheduler",
        resolved,
        &registry,
        Handle::builder().build(),
    )
    .expect("plugins build")
}

fn no_topology() -> Framework {
    framework(
        serde_json::json!({"defaultingType": "List", "defaultConstraints": []}),
        false,
    )
}

#[test]
fn the_default_profile_signs_no_pod_for_its_system_default_spreading() {
    let fwk = framework(serde_json::json!({"defaultingType": "System"}), false);
    assert!(fwk.batches(), "every default plugin can sign");
    assert_eq!(fwk.sign_pod(&pod(|_| {})), None);
}

#[test]
fn alike_pods_sign_alike() {
    let fwk = no_topology();
    let a = fwk.sign_pod(&pod(|_| {})).expect("signable");
    let b = fwk.sign_pod(&pod(|p| p.metadata.name = Some("other".into())));
    assert_eq!(Some(a), b, "the name is not read by any plugin");
}

#[test]
fn what_plugins_read_tells_pods_apart() {
    let fwk = no_topology();
    let base = fwk.sign_pod(&pod(|_| {})).expect("signable");
    let differing: Vec<(&str, PodInfo)> = vec![
        (
            "labels",
            pod(|p| p.metadata.labels = Some([("app".to_string(), "db".to_string())].into())),
        ),
        (
            "host port",
            pod(|p| {
                spec(p).containers[0].ports = Some(vec![ContainerPort {
                    container_port: 80,
                    host_port: Some(80),
                    ..Default::default()
                }])
            }),
        ),
        (
            "node selector",
            pod(|p| spec(p).node_selector = Some([("zone".to_string(), "a".to_string())].into())),
        ),
        (
            "toleration",
            pod(|p| {
                spec(p).tolerations = Some(vec![Toleration {
                    key: Some("k".into()),
                    operator: Some("Exists".into()),
                    ..Default::default()
                }])
            }),
        ),
        (
            "image",
            pod(|p| spec(p).containers[0].image = Some("redis".into())),
        ),
        (
            "claim",
            pod(|p| {
                spec(p).volumes = Some(vec![Volume {
                    name: "v".into(),
                    persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                        claim_name: "data".into(),
                        ..Default::default()
                    }),
                    ..Default::default()
                }])
            }),
        ),
        (
            "scheduler name",
            pod(|p| spec(p).scheduler_name = Some("other".into())),
        ),
    ];
    for (what, other) in differing {
        assert_ne!(fwk.sign_pod(&other), Some(base.clone()), "{what}");
        assert!(fwk.sign_pod(&other).is_some(), "{what}: still signable");
    }
}

#[test]
fn labels_do_not_count_when_existing_pods_preferred_terms_are_ignored() {
    let fwk = framework(
        serde_json::json!({"defaultingType": "List", "defaultConstraints": []}),
        true,
    );
    let a = fwk.sign_pod(&pod(|_| {}));
    let b = fwk.sign_pod(&pod(|p| p.metadata.labels = None));
    assert!(a.is_some());
    assert_eq!(a, b);
}

#[test]
fn canonical_forms_ignore_order_and_per_pod_volumes() {
    let fwk = no_topology();
    let toleration = |key: &str| Toleration {
        key: Some(key.into()),
        operator: Some("Exists".into()),
        ..Default::default()
    };
    let requirement = |values: &[&str]| NodeSelectorRequirement {
        key: "zone".into(),
        operator: "In".into(),
        values: Some(values.iter().map(|v| v.to_string()).collect()),
    };
    let affinity = |values: &[&str]| {
        Some(Affinity {
            node_affinity: Some(NodeAffinity {
                required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                    node_selector_terms: vec![NodeSelectorTerm {
                        match_expressions: Some(vec![requirement(values)]),
                        ..Default::default()
                    }],
                }),
                ..Default::default()
            }),
            ..Default::default()
        })
    };
    let a = pod(|p| {
        let s = spec(p);
        s.tolerations = Some(vec![toleration("a"), toleration("b")]);
        s.affinity = affinity(&["x", "y"]);
        s.volumes = Some(vec![Volume {
            name: "config".into(),
            config_map: Some(ConfigMapVolumeSource {
                name: "app-1".into(),
                ..Default::default()
            }),
            ..Default::default()
        }]);
    });
    let b = pod(|p| {
        let s = spec(p);
        s.tolerations = Some(vec![toleration("b"), toleration("a")]);
        s.affinity = affinity(&["y", "x"]);
        s.volumes = Some(vec![Volume {
            name: "token".into(),
            secret: Some(SecretVolumeSource {
                secret_name: Some("app-2".into()),
                ..Default::default()
            }),
            ..Default::default()
        }]);
    });
    assert!(fwk.sign_pod(&a).is_some());
    assert_eq!(fwk.sign_pod(&a), fwk.sign_pod(&b));
}

#[test]
fn pods_with_inter_pod_affinity_or_spreading_are_not_signed() {
    let fwk = no_topology();
    let affine = pod(|p| {
        spec(p).affinity = Some(Affinity {
            pod_affinity: Some(PodAffinity::default()),
            ..Default::default()
        })
    });
    let spread = pod(|p| {
        spec(p).topology_spread_constraints = Some(vec![TopologySpreadConstraint {
            max_skew: 1,
            topology_key: "zone".into(),
            when_unsatisfiable: "DoNotSchedule".into(),
            ..Default::default()
        }])
    });
    assert_eq!(fwk.sign_pod(&affine), None);
    assert_eq!(fwk.sign_pod(&spread), None);
}

#[test]
fn a_profile_with_batching_turned_off_never_batches() {
    let registry = crate::plugins::default_registry();
    let off = crate::api::SchedulerProfileSpec {
        opportunistic_batching: Some(false),
        ..Default::default()
    };
    let resolved = resolve(&off, &registry).expect("valid profile");
    let fwk = Framework::new(
        "default-scheduler",
        resolved,
        &registry,
        Handle::builder().build(),
    )
    .expect("plugins build");
    assert!(!fwk.batches());
    assert_eq!(fwk.sign_pod(&pod(|_| {})), None);
}
