//! What the micro-benchmarks share: the cluster they run against, built from upstream
//! scheduler_perf's node and pod templates (`berth::bench::workload`), and the default
//! profile's plugins.

use std::sync::Arc;

use berth::api::SchedulerProfileSpec;
use berth::bench::workload::{PodTemplate, Workload};
use berth::cluster::{Cache, Volumes};
use berth::framework::{Framework, Handle, Parallelizer, resolve};
use k8s_openapi::api::core::v1::{
    CSIPersistentVolumeSource, PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimSpec,
    PersistentVolumeSpec, Pod,
};
use k8s_openapi::api::storage::v1::{CSINode, CSINodeDriver, CSINodeSpec, VolumeNodeResources};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The scheduler name of every pod (the default profile's).
pub const SCHEDULER_NAME: &str = "default-scheduler";

/// The workload whose measured pods are of `template`: its zones, its init pods and its
/// namespaces are the context the template's pods are scheduled in upstream.
pub fn workload_of(template: PodTemplate) -> Workload {
    Workload::all()
        .find(|w| w.phases().1.template == template)
        .unwrap_or(Workload::SchedulingBasic)
}

/// A measured pod of `template`, named `name`, in the namespace its workload measures in.
pub fn measured_pod(template: PodTemplate, name: String) -> Pod {
    let (_, measure) = workload_of(template).phases();
    template.pod(measure.namespace, name, 0, SCHEDULER_NAME)
}

/// A cache holding `nodes` node-default nodes of `workload` (its zone labels), each bound
/// `pods_per_node` pods. Odd nodes carry the workload's init pods, even nodes pod-default
/// pods (in the init namespace): the measured pod's terms match pods somewhere in the
/// cluster, while node 0, the node per-node benchmarks use, fits the measured pod as most
/// nodes of upstream's runs do.
pub fn cluster(workload: Workload, nodes: u64, pods_per_node: u64) -> Cache {
    let (init, _) = workload.phases();
    let mut cache = Cache::new(None);
    for index in 0..nodes {
        let node = berth::bench::workload::node(index, workload.zones());
        let node_name = node.metadata.name.clone().unwrap_or_default();
        cache.add_node(node).expect("a node-default node is valid");
        let template = if index % 2 == 1 {
            init.template
        } else {
            PodTemplate::Default
        };
        for slot in 0..pods_per_node {
            let name = format!("init-{index:05}-{slot:02}");
            let mut pod = template.pod(init.namespace, name, slot, SCHEDULER_NAME);
            if let Some(spec) = pod.spec.as_mut() {
                spec.node_name = Some(node_name.clone());
            }
            cache.add_pod(pod).expect("a template pod is valid");
        }
    }
    cache
}

/// The default profile (`spec: {}`) instantiated as the scheduler does, with
/// `parallelism` workers for per-node Filter and Score.
pub fn default_framework(parallelism: usize) -> Framework {
    let registry = berth::plugins::default_registry();
    let resolved =
        resolve(&SchedulerProfileSpec::default(), &registry).expect("the default profile resolves");
    let workers = Parallelizer::new(parallelism).expect("worker threads start");
    let handle = Handle::builder()
        .parallelizer(Arc::new(workers))
        .volumes(Arc::new(storage()))
        .build();
    Framework::new(SCHEDULER_NAME, resolved, &registry, handle)
        .expect("the default profile's plugins build")
}

/// The claim of the measured pod that uses volumes, in `namespace`.
pub const CLAIM: &str = "measured-claim";
/// The CSI driver of its volume, which node 0's CSINode limits.
const DRIVER: &str = "ebs.csi.aws.com";
const ZONE: &str = "topology.kubernetes.io/zone";

/// The storage the volume plugins read: the measured claim, bound (as the PV controller
/// leaves it) to a CSI volume in node 0's zone, and a CSINode for every node with an
/// attach limit for the driver. A cluster of upstream's SchedulingCSIPVs kind, reduced to
/// the one claim the measured pod uses.
pub fn storage() -> Volumes {
    let volumes = Volumes::new();
    let (_, measure) = workload_of(PodTemplate::Default).phases();
    volumes.apply_claim(PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(CLAIM.into()),
            namespace: Some(measure.namespace.to_string()),
            uid: Some("measured-claim-uid".into()),
            annotations: Some(
                [(
                    "pv.kubernetes.io/bind-completed".to_string(),
                    "yes".to_string(),
                )]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            volume_name: Some("measured-volume".into()),
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    });
    let node_zero = berth::bench::workload::node(0, workload_of(PodTemplate::Default).zones());
    volumes.apply_volume(PersistentVolume {
        metadata: ObjectMeta {
            name: Some("measured-volume".into()),
            // node 0's zone; the default workload's nodes have none, where VolumeZone
            // passes every node (a single-zone cluster).
            labels: Some(
                [(
                    ZONE.to_string(),
                    node_zero
                        .metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(ZONE))
                        .cloned()
                        .unwrap_or_else(|| "zone-a".into()),
                )]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeSpec {
            csi: Some(CSIPersistentVolumeSource {
                driver: DRIVER.into(),
                volume_handle: "vol-measured".into(),
                ..CSIPersistentVolumeSource::default()
            }),
            ..PersistentVolumeSpec::default()
        }),
        ..PersistentVolume::default()
    });
    volumes.apply_csi_node(CSINode {
        metadata: ObjectMeta {
            name: node_zero.metadata.name.clone(),
            ..ObjectMeta::default()
        },
        spec: CSINodeSpec {
            drivers: vec![CSINodeDriver {
                name: DRIVER.into(),
                node_id: "node-0".into(),
                allocatable: Some(VolumeNodeResources { count: Some(39) }),
                topology_keys: None,
            }],
        },
        status: None,
    });
    volumes
}
