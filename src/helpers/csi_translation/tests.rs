//! Upstream's csi-translation-lib rules: TestKubernetesVolumeIDToEBSVolumeID's volume
//! ids, the GCE PD handle forms, the plugin and driver names, and the migrated-plugins
//! annotation as NodeVolumeLimits reads it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    AWSElasticBlockStoreVolumeSource, AzureDiskVolumeSource, AzureFileVolumeSource,
    CinderPersistentVolumeSource, CinderVolumeSource, ConfigMapVolumeSource,
    GCEPersistentDiskVolumeSource, HostPathVolumeSource, PersistentVolumeSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;

fn ebs_volume(volume_id: &str) -> PersistentVolume {
    PersistentVolume {
        spec: Some(PersistentVolumeSpec {
            aws_elastic_block_store: Some(AWSElasticBlockStoreVolumeSource {
                volume_id: volume_id.into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn gce_volume(pd_name: &str, labels: &[(&str, &str)]) -> PersistentVolume {
    PersistentVolume {
        metadata: ObjectMeta {
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
        spec: Some(PersistentVolumeSpec {
            gce_persistent_disk: Some(GCEPersistentDiskVolumeSource {
                pd_name: pd_name.into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn csi(driver: &str, handle: &str) -> CsiVolume {
    CsiVolume {
        driver: driver.into(),
        handle: handle.into(),
    }
}

#[test]
fn ebs_volume_ids_lose_their_aws_url_form() {
    let invalid = "failed to translate Kubernetes ID to EBS Volume ID Invalid format for AWS volume (aws://us-west-2a/02399794d890f9375)";
    let cases: [(&str, &str, Result<CsiVolume, String>); 4] = [
        (
            "Normal ID format",
            "vol-02399794d890f9375",
            Ok(csi("ebs.csi.aws.com", "vol-02399794d890f9375")),
        ),
        (
            "aws:///{volumeId} format",
            "aws:///vol-02399794d890f9375",
            Ok(csi("ebs.csi.aws.com", "vol-02399794d890f9375")),
        ),
        (
            "aws://{zone}/{volumeId} format",
            "aws://us-west-2a/vol-02399794d890f9375",
            Ok(csi("ebs.csi.aws.com", "vol-02399794d890f9375")),
        ),
        (
            "fails on invalid volume ID",
            "aws://us-west-2a/02399794d890f9375",
            Err(invalid.into()),
        ),
    ];
    for (name, volume_id, want) in cases {
        assert_eq!(
            InTreePlugin::AwsEbs.translate_volume(&ebs_volume(volume_id)),
            want,
            "{name}: persistent volume"
        );
        let inline = Volume {
            name: "volume".into(),
            aws_elastic_block_store: ebs_volume(volume_id)
                .spec
                .and_then(|s| s.aws_elastic_block_store),
            ..Default::default()
        };
        assert_eq!(
            InTreePlugin::AwsEbs.translate_inline(&inline),
            want,
            "{name}: inline volume"
        );
    }
}

#[test]
fn a_gce_pd_handle_names_its_zone_or_region() {
    let cases = [
        (
            "no zone label",
            gce_volume("pd", &[]),
            Ok(csi(
                "pd.csi.storage.gke.io",
                "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/pd",
            )),
        ),
        (
            "GA zone label",
            gce_volume("pd", &[(ZONE, "us-central1-a")]),
            Ok(csi(
                "pd.csi.storage.gke.io",
                "projects/UNSPECIFIED/zones/us-central1-a/disks/pd",
            )),
        ),
        (
            "the beta zone label wins over the GA one",
            gce_volume("pd", &[(BETA_ZONE, "us-east1-b"), (ZONE, "us-central1-a")]),
            Ok(csi(
                "pd.csi.storage.gke.io",
                "projects/UNSPECIFIED/zones/us-east1-b/disks/pd",
            )),
        ),
        (
            "regional disk",
            gce_volume("pd", &[(ZONE, "europe-west1-b__europe-west1-c")]),
            Ok(csi(
                "pd.csi.storage.gke.io",
                "projects/UNSPECIFIED/regions/europe-west1/disks/pd",
            )),
        ),
        (
            "zones of two regions",
            gce_volume("pd", &[(ZONE, "europe-west1-b__us-east1-c")]),
            Err(
                "failed to get region from zones: multiple or no regions gotten from zones, got: {\"europe-west1\", \"us-east1\"}"
                    .into(),
            ),
        ),
        (
            "a zone of the wrong form",
            gce_volume("pd", &[(ZONE, "europe-west1-b__west1")]),
            Err("failed to get region from zones: zone in unexpected format, expected: {locale}-{region}-{zone}, got: west1".into()),
        ),
    ];
    for (name, volume, want) in cases {
        assert_eq!(
            InTreePlugin::GcePd.translate_volume(&volume),
            want,
            "{name}"
        );
    }
    let inline = Volume {
        gce_persistent_disk: Some(GCEPersistentDiskVolumeSource {
            pd_name: "pd".into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_eq!(
        InTreePlugin::GcePd.translate_inline(&inline),
        Ok(csi(
            "pd.csi.storage.gke.io",
            "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/pd"
        )),
        "an inline disk names no zone"
    );
}

#[test]
fn azure_disks_and_cinder_volumes_keep_their_ids() {
    let uri = "/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/disks/d";
    let azure = PersistentVolume {
        spec: Some(PersistentVolumeSpec {
            azure_disk: Some(AzureDiskVolumeSource {
                disk_name: "d".into(),
                disk_uri: uri.into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_eq!(
        InTreePlugin::of_volume(&azure),
        Some(InTreePlugin::AzureDisk)
    );
    assert_eq!(
        InTreePlugin::AzureDisk.translate_volume(&azure),
        Ok(csi("disk.csi.azure.com", uri))
    );
    let cinder = PersistentVolume {
        spec: Some(PersistentVolumeSpec {
            cinder: Some(CinderPersistentVolumeSource {
                volume_id: "c-1".into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_eq!(InTreePlugin::of_volume(&cinder), Some(InTreePlugin::Cinder));
    assert_eq!(
        InTreePlugin::Cinder.translate_volume(&cinder),
        Ok(csi("cinder.csi.openstack.org", "c-1"))
    );
    let inline_cinder = Volume {
        cinder: Some(CinderVolumeSource {
            volume_id: "c-2".into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_eq!(
        InTreePlugin::of_inline(&inline_cinder),
        Some(InTreePlugin::Cinder)
    );
    assert_eq!(
        InTreePlugin::Cinder.translate_inline(&inline_cinder),
        Ok(csi("cinder.csi.openstack.org", "c-2"))
    );
    assert_eq!(
        InTreePlugin::Cinder.translate_volume(&ebs_volume("vol-1")),
        Err("pv is nil or Cinder not defined on pv".into()),
        "a volume of another plugin"
    );
}

#[test]
fn plugin_names_map_to_their_csi_drivers() {
    let cases = [
        ("kubernetes.io/aws-ebs", Some("ebs.csi.aws.com")),
        ("kubernetes.io/gce-pd", Some("pd.csi.storage.gke.io")),
        ("kubernetes.io/azure-disk", Some("disk.csi.azure.com")),
        ("kubernetes.io/cinder", Some("cinder.csi.openstack.org")),
        ("kubernetes.io/azure-file", None),
        ("ebs.csi.aws.com", None),
    ];
    for (name, driver) in cases {
        assert_eq!(
            InTreePlugin::from_name(name).map(InTreePlugin::csi_driver),
            driver,
            "{name}"
        );
    }
    assert!(is_migratable_plugin_name("kubernetes.io/azure-file"));
    assert!(is_migratable_plugin_name("kubernetes.io/gce-pd"));
    assert!(!is_migratable_plugin_name("kubernetes.io/hostpath"));
    assert!(!is_migratable_plugin_name("ebs.csi.aws.com"));
}

#[test]
fn inline_volumes_of_migratable_plugins() {
    let cases = [
        (
            "EBS",
            Volume {
                aws_elastic_block_store: Some(Default::default()),
                ..Default::default()
            },
            true,
        ),
        (
            "Azure File (migratable, never counted)",
            Volume {
                azure_file: Some(AzureFileVolumeSource::default()),
                ..Default::default()
            },
            true,
        ),
        (
            "hostPath",
            Volume {
                host_path: Some(HostPathVolumeSource::default()),
                ..Default::default()
            },
            false,
        ),
        (
            "configMap",
            Volume {
                config_map: Some(ConfigMapVolumeSource::default()),
                ..Default::default()
            },
            false,
        ),
    ];
    for (name, volume, want) in cases {
        assert_eq!(is_inline_migratable(&volume), want, "{name}");
    }
}

fn csi_node(annotation: Option<&str>) -> CSINode {
    CSINode {
        metadata: ObjectMeta {
            name: Some("node-1".into()),
            annotations: annotation.map(|value| {
                BTreeMap::from([(MIGRATED_PLUGINS_ANNOTATION.to_string(), value.to_string())])
            }),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[test]
fn migration_is_on_where_the_csi_node_lists_the_plugin() {
    let both = csi_node(Some("kubernetes.io/aws-ebs,kubernetes.io/gce-pd"));
    let cases = [
        ("no CSINode", None, InTreePlugin::AwsEbs, false),
        (
            "no annotation",
            Some(csi_node(None)),
            InTreePlugin::AwsEbs,
            false,
        ),
        (
            "listed first",
            Some(both.clone()),
            InTreePlugin::AwsEbs,
            true,
        ),
        ("listed second", Some(both), InTreePlugin::GcePd, true),
        (
            "not listed",
            Some(csi_node(Some("kubernetes.io/aws-ebs"))),
            InTreePlugin::Cinder,
            false,
        ),
        (
            "entries are not trimmed",
            Some(csi_node(Some(
                "kubernetes.io/aws-ebs, kubernetes.io/gce-pd",
            ))),
            InTreePlugin::GcePd,
            false,
        ),
    ];
    for (name, node, plugin, want) in cases {
        assert_eq!(migration_on(node.as_ref(), plugin), want, "{name}");
    }
}

#[test]
fn volume_topology_moves_to_the_csi_drivers_zone_key() {
    use k8s_openapi::api::core::v1::{
        NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PersistentVolumeSpec,
        VolumeNodeAffinity,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    let requirement = |key: &str, values: &[&str]| NodeSelectorRequirement {
        key: key.into(),
        operator: "In".into(),
        values: Some(values.iter().map(|v| v.to_string()).collect()),
    };
    let volume =
        |labels: &[(&str, &str)], terms: Vec<Vec<NodeSelectorRequirement>>| PersistentVolume {
            metadata: ObjectMeta {
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            spec: Some(PersistentVolumeSpec {
                node_affinity: (!terms.is_empty()).then(|| VolumeNodeAffinity {
                    required: Some(NodeSelector {
                        node_selector_terms: terms
                            .into_iter()
                            .map(|e| NodeSelectorTerm {
                                match_expressions: Some(e),
                                match_fields: None,
                            })
                            .collect(),
                    }),
                }),
                ..PersistentVolumeSpec::default()
            }),
            ..PersistentVolume::default()
        };
    let gke = "topology.gke.io/zone";
    let cases = [
        (
            "zone labels become a requirement, zones sorted and deduplicated",
            volume(&[(BETA_ZONE, "b__a__ b__")], vec![]),
            volume(
                &[(BETA_ZONE, "b__a__ b__")],
                vec![vec![requirement(gke, &["a", "b"])]],
            ),
        ),
        (
            "a GA zone key in the affinity is renamed, other keys stay",
            volume(
                &[],
                vec![vec![
                    requirement(ZONE, &["a"]),
                    requirement("rack", &["r1"]),
                ]],
            ),
            volume(
                &[],
                vec![vec![requirement(gke, &["a"]), requirement("rack", &["r1"])]],
            ),
        ),
        (
            "a beta zone key is renamed and its beta region key becomes GA",
            volume(
                &[],
                vec![vec![
                    requirement(BETA_ZONE, &["a"]),
                    requirement(BETA_REGION, &["r"]),
                ]],
            ),
            volume(
                &[],
                vec![vec![requirement(gke, &["a"]), requirement(REGION, &["r"])]],
            ),
        ),
        (
            "affinity wins over labels",
            volume(&[(ZONE, "z")], vec![vec![requirement(ZONE, &["a"])]]),
            volume(&[(ZONE, "z")], vec![vec![requirement(gke, &["a"])]]),
        ),
    ];
    for (name, input, want) in cases {
        assert_eq!(
            translate_volume_topology(&input, InTreePlugin::GcePd),
            want,
            "{name}"
        );
    }
}
