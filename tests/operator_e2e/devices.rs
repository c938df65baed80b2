//! DynamicResources live (issue 30, "Done when"): GPUs allocated by `berth run` on a real
//! Kubernetes 1.37 cluster, where the test publishes each node's ResourceSlice as a DRA
//! driver's kubelet plugin does (one pool per node, owned by the Node) and the real
//! resourceclaim controller makes the claims of templates.
//!
//! Expected from the specification, not from berth: each allocated claim gets distinct
//! devices of its class from the pool of the node its pod is bound to, is reserved for
//! that pod and carries upstream's finalizer; a template's claim is the controller's, an
//! extended resource's claim the scheduler's; a claim no node can satisfy fails with
//! upstream 1.37's message; a pod whose template does not exist is held back by
//! DynamicResources' PreEnqueue (no attempt, no event), as upstream does. The placements
//! are the simulator's on the same objects (the scenario's nodes differ in size, so no
//! placement is a tie).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use berth::cluster::{allocated_devices, is_allocated};
use futures::future::join_all;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::resource::v1::{
    DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
};
use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};

use crate::harness::{
    Berth, BerthOptions, Cluster, WAIT, condition, eventually, node, pod, profile,
    simulated_placements, within,
};

const SCHEDULER: &str = "berth-gpus";
const SEED: u64 = 11;
const DRIVER: &str = "gpu.example.com";
/// Upstream's finalizer on a claim the scheduler allocated.
const FINALIZER: &str = "resource.kubernetes.io/delete-protection";
const TRAINER: &str = "0/2 nodes are available: 2 cannot allocate all claims. preemption: \
     0/2 nodes are available: 2 Preemption is not helpful for scheduling.";

/// `object` as a client creates it: without what the simulator's loader set for it
/// (uid, creation time) and, but for a node, without status.
fn to_json<T: serde::Serialize>(object: &T) -> Value {
    let mut object = serde_json::to_value(object).expect("an object as JSON");
    if let Some(metadata) = object["metadata"].as_object_mut() {
        for field in ["uid", "resourceVersion", "creationTimestamp", "generation"] {
            metadata.remove(field);
        }
    }
    if object["kind"] != "Node"
        && let Some(o) = object.as_object_mut()
    {
        o.remove("status");
    }
    object
}

/// `object` through [`to_json`], typed again.
fn cleaned<K: serde::Serialize + serde::de::DeserializeOwned>(object: &K) -> K {
    serde_json::from_value(to_json(object)).expect("the object again")
}

/// Creates `object` through `api`.
async fn create<K>(api: &Api<K>, object: &K) -> K
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    within(
        "creating an object",
        WAIT,
        api.create(&PostParams::default(), object),
    )
    .await
    .unwrap_or_else(|e| panic!("creating {}: {e}", object.name_any()))
}

/// Publishes `slice` as a driver's kubelet plugin does: owned by its node.
async fn publish(cluster: &Cluster, mut slice: ResourceSlice) {
    let node_name = slice.spec.node_name.clone().expect("a per-node slice");
    let uid = cluster
        .nodes()
        .get(&node_name)
        .await
        .unwrap_or_else(|e| panic!("reading node {node_name}: {e}"))
        .metadata
        .uid;
    slice.metadata.owner_references = Some(vec![
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Node", "name": node_name, "uid": uid,
            "controller": true,
        }))
        .expect("an owner reference"),
    ]);
    create(&Api::all(cluster.client.clone()), &slice).await;
}

/// Every device allocated to a claim in `default`: `driver/pool/device` -> claims.
async fn claimed_devices(cluster: &Cluster) -> BTreeMap<String, Vec<String>> {
    let claims: Api<ResourceClaim> = Api::namespaced(cluster.client.clone(), "default");
    let list = within("listing claims", WAIT, claims.list(&ListParams::default()))
        .await
        .unwrap_or_else(|e| panic!("listing claims: {e}"));
    let mut devices: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for claim in list.items {
        for result in allocated_devices(&claim) {
            devices
                .entry(format!(
                    "{}/{}/{}",
                    result.driver, result.pool, result.device
                ))
                .or_default()
                .push(claim.name_any());
        }
    }
    devices
}

/// The devices allocated to claim `name` as `driver/pool/device`, checked against
/// upstream's contract for a pod bound to `node`: reserved for the pod, finalizer set,
/// every device from `node`'s pool.
async fn claim_of_bound_pod(cluster: &Cluster, name: &str, pod: &Pod, node: &str) -> Vec<String> {
    let claims: Api<ResourceClaim> = Api::namespaced(cluster.client.clone(), "default");
    let claim = claims
        .get(name)
        .await
        .unwrap_or_else(|e| panic!("reading claim {name}: {e}"));
    let status = claim.status.clone().unwrap_or_default();
    let reserved: Vec<String> = status
        .reserved_for
        .iter()
        .flatten()
        .map(|r| r.uid.clone())
        .collect();
    assert_eq!(
        reserved,
        vec![pod.uid().expect("a uid")],
        "claim {name} is reserved for its pod only"
    );
    assert!(
        claim.finalizers().iter().any(|f| f == FINALIZER),
        "claim {name} has upstream's finalizer: {:?}",
        claim.finalizers()
    );
    assert!(is_allocated(&claim), "claim {name} is allocated");
    allocated_devices(&claim)
        .iter()
        .map(|r| {
            assert_eq!(r.driver, DRIVER, "claim {name}: {r:?}");
            assert_eq!(
                r.pool, node,
                "claim {name}: a device of the pod's node: {r:?}"
            );
            format!("{}/{}/{}", r.driver, r.pool, r.device)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gpus_are_allocated_live_as_upstream_allocates_them() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    let path = crate::harness::repo_root().join("examples/scenarios/gpus.yaml");
    let text = std::fs::read_to_string(&path).expect("the scenario");
    let (input, _) = berth::simulate::input::load_str(Path::new("gpus.yaml"), &text)
        .unwrap_or_else(|e| panic!("{e}"));

    for class in &input.device_classes {
        create(
            &Api::<DeviceClass>::all(cluster.client.clone()),
            &cleaned(class),
        )
        .await;
    }
    for n in &input.nodes {
        cluster.create_node(to_json(n)).await;
    }
    for slice in &input.resource_slices {
        publish(&cluster, cleaned(slice)).await;
    }
    let templates: Api<ResourceClaimTemplate> = Api::namespaced(cluster.client.clone(), "default");
    for template in &input.resource_claim_templates {
        create(&templates, &cleaned(template)).await;
    }
    let claims: Api<ResourceClaim> = Api::namespaced(cluster.client.clone(), "default");
    for claim in &input.resource_claims {
        create(&claims, &cleaned(claim)).await;
    }

    let mut berth = Berth::spawn(&cluster, BerthOptions::seed(SEED));
    berth.wait_ready().await;
    let the_profile = profile(SCHEDULER, json!({}));
    cluster.create_profile(the_profile.clone()).await;
    cluster.wait_profile_ready(SCHEDULER, WAIT).await;

    let pending: Vec<Value> = input
        .pending_pods()
        .map(|p| {
            let mut p = to_json(p);
            p["spec"]["schedulerName"] = json!(SCHEDULER);
            p
        })
        .collect();
    let mut objects: Vec<Value> = input
        .device_classes
        .iter()
        .map(to_json)
        .chain(input.nodes.iter().map(to_json))
        .chain(input.resource_slices.iter().map(to_json))
        .chain(input.resource_claim_templates.iter().map(to_json))
        .chain(input.resource_claims.iter().map(to_json))
        .collect();
    objects.push(the_profile);
    objects.extend(pending.iter().cloned());
    let expected = simulated_placements(&objects, SEED).await;
    assert_eq!(
        expected.keys().collect::<Vec<_>>(),
        ["inference", "pair", "render"],
        "the simulator places all but the trainer: {expected:?}"
    );

    // One pod at a time, each after the previous one is bound: the order the simulator
    // schedules them in.
    let mut live = BTreeMap::new();
    for p in &pending {
        let name = p["metadata"]["name"].as_str().expect("a name").to_string();
        cluster.create_pod(p.clone()).await;
        if expected.contains_key(&name) {
            live.extend(cluster.wait_bound(&[name.as_str()], WAIT).await);
        }
    }
    assert_eq!(live, expected, "live placements (left), simulated (right)");

    // inference: the resourceclaim controller made its claim from the template.
    let inference = cluster.pod("inference").await;
    let statuses = inference
        .status
        .as_ref()
        .and_then(|s| s.resource_claim_statuses.clone())
        .unwrap_or_default();
    let made = statuses
        .first()
        .and_then(|s| s.resource_claim_name.clone())
        .expect("the controller named the template's claim in the pod's status");
    let mut taken = claim_of_bound_pod(&cluster, &made, &inference, &live["inference"]).await;
    assert_eq!(taken.len(), 1, "inference: one GPU: {taken:?}");

    // render: berth made the claim of its extended resource and named it in the status.
    let render = cluster.pod("render").await;
    let extended = render
        .status
        .as_ref()
        .and_then(|s| s.extended_resource_claim_status.clone())
        .expect("render's status names its extended-resource claim");
    assert!(
        extended
            .request_mappings
            .iter()
            .all(|m| m.container_name == "app" && m.resource_name == "example.com/gpu"),
        "{extended:?}"
    );
    let render_devices = claim_of_bound_pod(
        &cluster,
        &extended.resource_claim_name,
        &render,
        &live["render"],
    )
    .await;
    assert_eq!(
        render_devices.len(),
        2,
        "render: two GPUs: {render_devices:?}"
    );
    taken.extend(render_devices);

    // pair: two GPUs on one PCIe root.
    let pair = cluster.pod("pair").await;
    let pair_devices = claim_of_bound_pod(&cluster, "pair-gpus", &pair, &live["pair"]).await;
    assert_eq!(pair_devices.len(), 2, "pair: two GPUs: {pair_devices:?}");
    let roots: BTreeSet<String> = input
        .resource_slices
        .iter()
        .flat_map(|s| {
            let pool = s.spec.pool.name.clone();
            s.spec.devices.iter().flatten().map(move |d| {
                let root = d
                    .attributes
                    .as_ref()
                    .and_then(|a| a.get("pcieRoot"))
                    .and_then(|v| v.string.clone())
                    .unwrap_or_default();
                (format!("{DRIVER}/{pool}/{}", d.name), root)
            })
        })
        .filter(|(device, _)| pair_devices.contains(device))
        .map(|(_, root)| root)
        .collect();
    assert_eq!(roots.len(), 1, "pair: one PCIe root: {pair_devices:?}");
    taken.extend(pair_devices);
    let distinct: BTreeSet<&String> = taken.iter().collect();
    assert_eq!(
        distinct.len(),
        taken.len(),
        "a GPU allocated twice: {taken:?}"
    );

    // trainer: no node has three GPUs on one root.
    let trainer_message = eventually("trainer is reported unschedulable", WAIT, || async {
        let trainer = serde_json::to_value(cluster.pod("trainer").await).expect("JSON");
        match condition(&trainer, "PodScheduled") {
            Some(c) if c["status"] == "False" => {
                Ok(c["message"].as_str().unwrap_or("").to_string())
            }
            other => Err(format!("PodScheduled: {other:?}")),
        }
    })
    .await;
    assert_eq!(trainer_message, TRAINER);
    let notes: Vec<String> = cluster
        .events_for("trainer")
        .await
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("FailedScheduling"))
        .filter_map(|e| e.note)
        .collect();
    assert!(notes.iter().any(|n| n == TRAINER), "{notes:?}");

    // A pod whose template does not exist waits at PreEnqueue: never attempted.
    let mut orphan = pod("gpu-job", SCHEDULER, "1", "1Gi");
    orphan["spec"]["resourceClaims"] =
        json!([{"name": "gpu", "resourceClaimTemplateName": "no-such-template"}]);
    orphan["spec"]["containers"][0]["resources"]["claims"] = json!([{"name": "gpu"}]);
    cluster.create_pod(orphan).await;
    cluster
        .assert_stay_unbound(&["gpu-job", "trainer"], Duration::from_secs(2))
        .await;
    let attempted: Vec<_> = cluster
        .events_for("gpu-job")
        .await
        .into_iter()
        .filter(|e| e.reporting_controller.as_deref() == Some("berth"))
        .collect();
    assert!(
        attempted.is_empty(),
        "berth reported on gpu-job: {attempted:?}"
    );

    berth.assert_running();
    berth.terminate_cleanly().await;
}

/// Pods and GPUs of the 1,000-pod run: more pods than GPUs, so the last pods compete
/// for devices that are being allocated.
const MANY_PODS: usize = 1_000;
const GPU_NODES: usize = 10;
const GPUS_PER_NODE: usize = 90;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_device_is_allocated_twice_in_a_1000_pod_run() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    let class: DeviceClass = serde_json::from_value(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": DRIVER},
        "spec": {"selectors": [{"cel": {"expression": format!("device.driver == \"{DRIVER}\"")}}]},
    }))
    .expect("a DeviceClass");
    create(&Api::all(cluster.client.clone()), &class).await;
    for i in 0..GPU_NODES {
        let name = format!("gpu-node-{i}");
        cluster.create_node(node(&name, "64", "256Gi")).await;
        let devices: Vec<Value> = (0..GPUS_PER_NODE)
            .map(|d| json!({"name": format!("gpu-{d}")}))
            .collect();
        let slice: ResourceSlice = serde_json::from_value(json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": format!("{name}-{DRIVER}")},
            "spec": {
                "driver": DRIVER, "nodeName": name,
                "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            },
        }))
        .expect("a ResourceSlice");
        publish(&cluster, slice).await;
    }
    let claims: Api<ResourceClaim> = Api::namespaced(cluster.client.clone(), "default");
    let names: Vec<String> = (0..MANY_PODS).map(|i| format!("worker-{i:04}")).collect();
    for chunk in names.chunks(50) {
        join_all(chunk.iter().map(|name| {
            let claim: ResourceClaim = serde_json::from_value(json!({
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}},
            }))
            .expect("a ResourceClaim");
            let claims = claims.clone();
            async move { create(&claims, &claim).await }
        }))
        .await;
    }

    let mut berth = Berth::spawn(&cluster, BerthOptions::seed(SEED));
    berth.wait_ready().await;
    cluster.create_profile(profile(SCHEDULER, json!({}))).await;
    cluster.wait_profile_ready(SCHEDULER, WAIT).await;

    for chunk in names.chunks(50) {
        join_all(chunk.iter().map(|name| {
            let mut p = pod(name, SCHEDULER, "10m", "16Mi");
            p["spec"]["resourceClaims"] = json!([{"name": "gpu", "resourceClaimName": name}]);
            p["spec"]["containers"][0]["resources"]["claims"] = json!([{"name": "gpu"}]);
            cluster.create_pod(p)
        }))
        .await;
    }

    let gpus = GPU_NODES * GPUS_PER_NODE;
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), "default");
    let bound: BTreeMap<String, String> =
        eventually("every GPU is taken", Duration::from_secs(600), || async {
            // A list of every pod is heavy: once a second, not at the harness's pace.
            tokio::time::sleep(Duration::from_secs(1)).await;
            let list = pods
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?;
            let bound: BTreeMap<String, String> = list
                .items
                .iter()
                .filter_map(|p| Some((p.name_any(), p.spec.as_ref()?.node_name.clone()?)))
                .collect();
            let refused = list
                .items
                .iter()
                .filter(|p| {
                    let value = serde_json::to_value(p).unwrap_or_default();
                    condition(&value, "PodScheduled").is_some_and(|c| {
                        c["status"] == "False"
                            && c["message"]
                                .as_str()
                                .is_some_and(|m| m.contains("cannot allocate all claims"))
                    })
                })
                .count();
            if bound.len() == gpus && refused == MANY_PODS - gpus {
                Ok(bound)
            } else {
                Err(format!(
                    "{} bound, {refused} refused for want of a GPU",
                    bound.len()
                ))
            }
        })
        .await;

    let devices = claimed_devices(&cluster).await;
    let twice: Vec<_> = devices.iter().filter(|(_, c)| c.len() > 1).collect();
    assert!(
        twice.is_empty(),
        "devices allocated to two claims: {twice:?}"
    );
    assert_eq!(devices.len(), gpus, "every GPU allocated once");
    for (device, claims) in &devices {
        let pool = device.split('/').nth(1).unwrap_or_default();
        assert_eq!(
            bound.get(&claims[0]).map(String::as_str),
            Some(pool),
            "{device} is allocated to {claims:?}, whose pod is bound elsewhere"
        );
    }
    berth.assert_running();
    berth.terminate_cleanly().await;
}
