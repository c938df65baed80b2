//! `berth simulate`'s storage controllers at work behind VolumeBinding: its PreBind
//! annotates a WaitForFirstConsumer claim with the chosen node through the Handle's volume
//! writer, then polls the claim every second of the simulator's clock until the PV
//! controller has bound it; the in-memory provisioner and PV controller must answer it.
//! The expectations are what a cluster with a CSI provisioner does (kube-scheduler's
//! binder, external-provisioner and the PV controller): each StatefulSet claim gets a
//! volume in its pod's zone; and a change of a claim requeues the pods waiting for it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use berth::cluster::{PodInfo, Snapshot, Volumes};
use berth::framework::{
    ActionType, ClusterEvent, CycleState, EventResource, Handle, NoArgs, PluginError,
    PreFilterPlugin, PreFilterResult, Status,
};
use berth::helpers::volumes::{SELECTED_NODE_ANNOTATION, claim_volume_name, is_fully_bound};
use berth::simulate::report::PodResult;
use berth::simulate::run::{SimulateOptions, simulate_with_storage};

const ZONE: &str = "topology.kubernetes.io/zone";
const SCENARIO: &str = "examples/scenarios/statefulset-zonal-storage.yaml";

/// The namespace of the pod and the claims its volumes name.
fn claim_names(pod: &PodInfo) -> (String, Vec<String>) {
    let namespace = pod.pod.metadata.namespace.clone().unwrap_or_default();
    let names = pod
        .pod
        .spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .filter_map(|v| v.persistent_volume_claim.as_ref())
        .map(|c| c.claim_name.clone())
        .collect();
    (namespace, names)
}

fn scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(SCENARIO)
}

async fn simulate(
    registry: &berth::framework::Registry,
) -> (berth::simulate::report::Report, Arc<Volumes>) {
    let (input, _) = berth::simulate::input::load_files(&[scenario()]).expect("valid input");
    let options = SimulateOptions {
        explain: false,
        seed: 1,
        parallelism: 1,
    };
    let run = simulate_with_storage(input, registry, options);
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the simulation ends (a PreBind waiting on the clock must not hang it)")
        .expect("the simulation runs")
}

/// The zone of each node of the scenario (`node-a` is in `zone-a`, ...).
fn zone_of_node(node: &str) -> String {
    format!("zone-{}", node.trim_start_matches("node-"))
}

/// The values of the volume's node affinity for `key` (one term, `In`).
fn affinity_values(
    volume: &k8s_openapi::api::core::v1::PersistentVolume,
    key: &str,
) -> Vec<String> {
    volume
        .spec
        .iter()
        .filter_map(|s| s.node_affinity.as_ref()?.required.as_ref())
        .flat_map(|r| r.node_selector_terms.iter())
        .flat_map(|t| t.match_expressions.iter().flatten())
        .filter(|r| r.key == key && r.operator == "In")
        .flat_map(|r| r.values.clone().unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn each_stateful_set_claim_is_provisioned_in_its_pods_zone_and_bound_before_the_pod() {
    let registry = berth::plugins::default_registry();
    let (report, volumes) = simulate(&registry).await;

    assert_eq!(report.pods.len(), 3, "{report:?}");
    for pod in &report.pods {
        assert_eq!(pod.result, PodResult::Scheduled, "{pod:?}");
        let node = pod.node.clone().expect("a scheduled pod has a node");
        let claim_name = format!("data-{}", pod.name);
        let claim = volumes
            .api_claim("default", &claim_name)
            .unwrap_or_else(|| panic!("the StatefulSet controller created claim {claim_name}"));
        assert!(is_fully_bound(&claim), "{claim_name} is bound: {claim:?}");
        assert_eq!(
            claim
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(SELECTED_NODE_ANNOTATION))
                .map(String::as_str),
            Some(node.as_str()),
            "{claim_name} was provisioned for its pod's node"
        );
        let uid = claim.metadata.uid.clone().expect("the claim has a uid");
        assert_eq!(claim_volume_name(&claim), format!("pvc-{uid}"));
        let volume = volumes
            .api_volume(claim_volume_name(&claim))
            .expect("the provisioned volume exists");
        assert_eq!(
            affinity_values(&volume, ZONE),
            vec![zone_of_node(&node)],
            "{claim_name}'s volume is in the zone of {node}"
        );
        assert_eq!(
            volume.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Bound")
        );
    }
}

/// Keeps a pod labelled `wait-for-claims` out until its claims are bound, and asks to
/// be retried on claim updates, as VolumeBinding does for an unbound Immediate claim.
struct WaitForClaims(Handle);

berth::plugin! {
    WaitForClaims {
        name: "WaitForClaims",
        points: [PreFilter],
    }

    impl Plugin {
        fn events_to_register(&self) -> Option<Vec<ClusterEvent>> {
            Some(vec![ClusterEvent::new(
                EventResource::PersistentVolumeClaim,
                ActionType::UPDATE,
            )])
        }
    }

    impl PluginFactory {
        type Args = NoArgs;

        fn build(_: NoArgs, handle: &Handle) -> Result<Self, PluginError> {
            Ok(WaitForClaims(handle.clone()))
        }
    }
}

#[async_trait]
impl PreFilterPlugin for WaitForClaims {
    async fn pre_filter(
        &self,
        _: &mut CycleState,
        pod: &PodInfo,
        _: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let waits = pod
            .pod
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key("wait-for-claims"));
        let (namespace, names) = claim_names(pod);
        let unbound = names.iter().any(|name| {
            !self
                .0
                .volumes
                .api_claim(&namespace, name)
                .is_some_and(|c| is_fully_bound(&c))
        });
        if waits && unbound {
            return (None, Status::unresolvable("claims not bound yet"));
        }
        (None, Status::success())
    }
}

const SHARED_CLAIM: &str = "
apiVersion: v1
kind: Node
metadata: {name: node-a, labels: {topology.kubernetes.io/zone: zone-a}}
status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: shared}
provisioner: files.csi.example.com
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: shared}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: shared
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: reader, labels: {wait-for-claims: 'yes'}}
spec:
  containers: [{name: c, image: busybox}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: shared}}]
---
apiVersion: v1
kind: Pod
metadata: {name: writer}
spec:
  containers: [{name: c, image: busybox}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: shared}}]
";

#[tokio::test]
async fn a_pod_rejected_for_an_unbound_claim_is_retried_when_the_claim_is_bound() {
    let mut registry = berth::plugins::default_registry();
    registry.register_default::<WaitForClaims>();
    let (input, _) = berth::simulate::input::load_str(Path::new("shared.yaml"), SHARED_CLAIM)
        .expect("valid input");
    let options = SimulateOptions {
        explain: false,
        seed: 1,
        parallelism: 1,
    };
    let run = simulate_with_storage(input, &registry, options);
    let (report, volumes) = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the simulation ends")
        .expect("the simulation runs");

    let claim = volumes.api_claim("default", "shared").expect("the claim");
    assert!(is_fully_bound(&claim), "{claim:?}");
    let outcomes: BTreeMap<&str, (&PodResult, u32)> = report
        .pods
        .iter()
        .map(|p| (p.name.as_str(), (&p.result, p.attempts)))
        .collect();
    assert_eq!(
        outcomes,
        BTreeMap::from([
            ("reader", (&PodResult::Scheduled, 2)),
            ("writer", (&PodResult::Scheduled, 1)),
        ]),
        "the reader, rejected first, is retried once the writer's claim is bound"
    );
}
