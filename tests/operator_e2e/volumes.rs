//! Volume-aware scheduling live (issue 16, "Done when"): the storage objects berth
//! watches, and the writes of VolumeBinding's PreBind against the test API server.
//!
//! The test API server runs no PV controller and no external provisioner: the tests play
//! them, as upstream's integration tests (test/integration/volumescheduling) run a fake
//! provisioner. Playing the PV controller means what kube-controller-manager does once a
//! claim and a volume belong together: the claim gets `spec.volumeName` and the
//! `pv.kubernetes.io/bind-completed` annotation, the volume a `claimRef` with the claim's
//! uid, and both the phase `Bound`. Playing the provisioner means creating a volume for a
//! claim annotated with `volume.kubernetes.io/selected-node`, in that node's topology.

use std::time::Duration;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::harness::{Berth, BerthOptions, Cluster, WAIT, eventually, node, pod, profile, within};

const ZONE: &str = "topology.kubernetes.io/zone";
const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
const BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
const BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";

// ---------------------------------------------------------------------------------------
// Objects

/// A node in `zone`.
fn zoned_node(name: &str, zone: &str) -> Value {
    let mut node = node(name, "4", "8Gi");
    node["metadata"]["labels"][ZONE] = json!(zone);
    node
}

/// A pending pod for `scheduler` mounting claim `claim`.
fn pod_with_claim(name: &str, scheduler: &str, claim: &str) -> Value {
    let mut pod = pod(name, scheduler, "100m", "128Mi");
    pod["spec"]["volumes"] =
        json!([{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]);
    pod
}

/// A StorageClass; `provisioner` `kubernetes.io/no-provisioner` is the one of local
/// static volumes.
fn storage_class(name: &str, provisioner: &str, binding_mode: &str) -> Value {
    json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": binding_mode,
    })
}

/// An unbound 1Gi ReadWriteOnce claim in `default` of class `class`.
fn claim(name: &str, class: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "storageClassName": class,
        },
    })
}

/// An unbound 1Gi ReadWriteOnce volume of class `class`, usable only on `node` (node
/// affinity on `kubernetes.io/hostname`, as local volumes have).
fn local_volume(name: &str, class: &str, node: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": class,
            "local": {"path": "/mnt/disks/a"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]},
            ]}]}},
        },
    })
}

/// A 1Gi ReadWriteOnce CSI volume of class `class` labelled with `zone`, as a zonal disk's
/// provisioner labels it (no node affinity: only the label pins it).
fn zonal_volume(name: &str, class: &str, zone: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": {ZONE: zone}},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": class,
            "csi": {"driver": "pd.csi.storage.gke.io", "volumeHandle": name},
        },
    })
}

/// A CSINode for `node` with one driver.
fn csi_node(node: &str) -> Value {
    json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": node},
        "spec": {"drivers": [{
            "name": "pd.csi.storage.gke.io",
            "nodeID": node,
            "topologyKeys": [ZONE],
            "allocatable": {"count": 16},
        }]},
    })
}

// ---------------------------------------------------------------------------------------
// The cluster's storage

fn claims(cluster: &Cluster) -> Api<PersistentVolumeClaim> {
    Api::namespaced(cluster.client.clone(), "default")
}

fn volumes(cluster: &Cluster) -> Api<PersistentVolume> {
    Api::all(cluster.client.clone())
}

async fn create<K>(api: &Api<K>, object: Value) -> K
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::Serialize + DeserializeOwned,
{
    let name = object["metadata"]["name"].clone();
    let object: K = serde_json::from_value(object).expect("a valid object");
    within(
        "creating an object",
        WAIT,
        api.create(&PostParams::default(), &object),
    )
    .await
    .unwrap_or_else(|e| panic!("creating {name}: {e}"))
}

async fn get<K>(api: &Api<K>, name: &str) -> K
where
    K: kube::Resource + Clone + std::fmt::Debug + DeserializeOwned,
{
    within("reading an object", WAIT, api.get(name))
        .await
        .unwrap_or_else(|e| panic!("reading {name}: {e}"))
}

async fn set_phase<K>(api: &Api<K>, name: &str, phase: &str)
where
    K: kube::Resource + Clone + std::fmt::Debug + DeserializeOwned,
{
    let patch = Patch::Merge(json!({"status": {"phase": phase}}));
    within(
        "patching a status",
        WAIT,
        api.patch_status(name, &PatchParams::default(), &patch),
    )
    .await
    .unwrap_or_else(|e| panic!("setting the phase of {name}: {e}"));
}

/// The PV controller's part: on a real cluster, waits until kube-controller-manager has
/// bound claim `claim` and volume `volume` to each other and marked both `Bound`; on the
/// test API server, plays it.
async fn complete_binding(cluster: &Cluster, claim: &str, volume: &str) {
    let claims = claims(cluster);
    let volumes = volumes(cluster);
    if cluster.real().is_some() {
        eventually(
            &format!("the PV controller binds {claim} and {volume}"),
            WAIT,
            || async {
                let pvc = get(&claims, claim).await;
                let pv = get(&volumes, volume).await;
                let pvc_done = pvc.spec.as_ref().and_then(|s| s.volume_name.as_deref())
                    == Some(volume)
                    && pvc.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound");
                let pv_done = pv
                    .spec
                    .as_ref()
                    .and_then(|s| s.claim_ref.as_ref())
                    .is_some_and(|r| r.name.as_deref() == Some(claim) && r.uid == pvc.metadata.uid)
                    && pv.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound");
                if pvc_done && pv_done {
                    Ok(())
                } else {
                    Err(format!("claim {:?}, volume {:?}", pvc.status, pv.status))
                }
            },
        )
        .await;
        return;
    }
    let mut pvc = get(&claims, claim).await;
    let mut pv = get(&volumes, volume).await;
    pv.spec.get_or_insert_default().claim_ref = Some(
        serde_json::from_value(json!({
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "namespace": "default",
            "name": claim,
            "uid": pvc.uid(),
        }))
        .expect("a claimRef"),
    );
    within(
        "updating the PV",
        WAIT,
        volumes.replace(volume, &PostParams::default(), &pv),
    )
    .await
    .unwrap_or_else(|e| panic!("binding PV {volume}: {e}"));
    set_phase(&volumes, volume, "Bound").await;
    pvc.spec.get_or_insert_default().volume_name = Some(volume.to_string());
    pvc.annotations_mut()
        .insert(BIND_COMPLETED.into(), "yes".into());
    pvc.annotations_mut()
        .insert(BOUND_BY_CONTROLLER.into(), "yes".into());
    within(
        "updating the PVC",
        WAIT,
        claims.replace(claim, &PostParams::default(), &pvc),
    )
    .await
    .unwrap_or_else(|e| panic!("binding PVC {claim}: {e}"));
    set_phase(&claims, claim, "Bound").await;
}

/// `volume` as an external provisioner creates it for `claim`: pre-bound to the claim
/// (`claimRef` with its uid), so the PV controller binds the two at once.
async fn provisioned_for(cluster: &Cluster, mut volume: Value, claim: &str) -> Value {
    let pvc = get(&claims(cluster), claim).await;
    volume["spec"]["claimRef"] = json!({
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "namespace": "default",
        "name": claim,
        "uid": pvc.uid(),
    });
    volume
}

/// The node the scheduler selected for claim `claim` (its selected-node annotation).
async fn selected_node(cluster: &Cluster, claim: &str) -> Result<String, String> {
    let pvc = get(&claims(cluster), claim).await;
    pvc.annotations()
        .get(SELECTED_NODE)
        .cloned()
        .ok_or_else(|| format!("annotations: {:?}", pvc.annotations()))
}

/// berth's PUTs of `resource` `name` (any status).
fn updates_of(cluster: &Cluster, resource: &str, name: &str) -> usize {
    cluster
        .requests()
        .into_iter()
        .filter(|r| {
            r.user_agent.as_deref() == Some(berth::operator::USER_AGENT)
                && r.verb == "update"
                && r.resource == resource
                && r.subresource.is_none()
                && r.name.as_deref() == Some(name)
        })
        .count()
}

// ---------------------------------------------------------------------------------------
// Storage watches

/// berth lists and watches, cluster-wide, every storage kind the volume plugins read, and
/// becomes ready and schedules with them listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn berth_lists_and_watches_every_storage_kind() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    cluster.create_node(node("node-a", "2", "4Gi")).await;
    let mut berth = Berth::spawn(&cluster, BerthOptions::default());
    berth.wait_ready().await;
    cluster.create_profile(profile("storage", json!({}))).await;
    cluster.wait_profile_ready("storage", WAIT).await;
    cluster
        .create_pod(pod("plain", "storage", "100m", "128Mi"))
        .await;
    cluster.wait_bound(&["plain"], WAIT).await;

    let requests = cluster.requests();
    let berth_requests: Vec<_> = requests
        .iter()
        .filter(|r| r.user_agent.as_deref() == Some(berth::operator::USER_AGENT))
        .collect();
    let cases = [
        ("", "persistentvolumeclaims"),
        ("", "persistentvolumes"),
        ("storage.k8s.io", "storageclasses"),
        ("storage.k8s.io", "csinodes"),
        ("storage.k8s.io", "csidrivers"),
        ("storage.k8s.io", "csistoragecapacities"),
        ("storage.k8s.io", "volumeattachments"),
    ];
    for (group, resource) in cases {
        for verb in ["list", "watch"] {
            let made = berth_requests.iter().find(|r| {
                r.group == group
                    && r.resource == resource
                    && r.verb == verb
                    && r.namespace.is_none()
            });
            match made {
                Some(r) => assert_eq!(r.status, 200, "{verb} {resource}: {r:?}"),
                None => panic!("berth made no cluster-wide {verb} of {group}/{resource}"),
            }
        }
    }
    berth.assert_running();
}

/// A pod whose claim is bound to a PersistentVolume in zone a is placed only in zone a
/// (VolumeZone, in the default set), and the storage objects reach berth through its
/// watches: created after berth started, and changed while a pod waits for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_follow_their_volumes_zone() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    cluster.create_node(zoned_node("node-a", "a")).await;
    cluster.create_node(zoned_node("node-b", "b")).await;
    let mut berth = Berth::spawn(&cluster, BerthOptions::seed(7));
    berth.wait_ready().await;
    cluster.create_profile(profile("zonal", json!({}))).await;
    cluster.wait_profile_ready("zonal", WAIT).await;

    // Created after berth listed: they reach it through the watches.
    let classes: Api<StorageClass> = Api::all(cluster.client.clone());
    create(
        &classes,
        storage_class("standard", "pd.csi.storage.gke.io", "Immediate"),
    )
    .await;
    let csi_nodes: Api<CSINode> = Api::all(cluster.client.clone());
    for name in ["node-a", "node-b"] {
        create(&csi_nodes, csi_node(name)).await;
    }
    create(
        &volumes(&cluster),
        zonal_volume("pv-zone-a", "standard", "a"),
    )
    .await;
    create(&claims(&cluster), claim("data", "standard")).await;
    complete_binding(&cluster, "data", "pv-zone-a").await;

    // Without the volume, half of these would land in zone b.
    let names = ["web-0", "web-1", "web-2", "web-3"];
    for name in names {
        cluster
            .create_pod(pod_with_claim(name, "zonal", "data"))
            .await;
    }
    let placed = cluster.wait_bound(&names, WAIT).await;
    for (pod, node) in &placed {
        assert_eq!(
            node, "node-a",
            "{pod} was placed outside its volume's zone: {placed:?}"
        );
    }

    // Pinned to zone b, a pod of the same claim fits nowhere, for upstream's reasons.
    let mut pinned = pod_with_claim("pinned-b", "zonal", "data");
    pinned["spec"]["nodeSelector"] = json!({ZONE: "b"});
    cluster.create_pod(pinned).await;
    let message = eventually("`pinned-b` has PodScheduled=False", WAIT, || async {
        let p = cluster.pod("pinned-b").await;
        let conditions = p.status.and_then(|s| s.conditions).unwrap_or_default();
        conditions
            .iter()
            .find(|c| c.type_ == "PodScheduled" && c.status == "False")
            .and_then(|c| c.message.clone())
            .ok_or_else(|| format!("{conditions:?}"))
    })
    .await;
    assert!(
        message.starts_with("0/2 nodes are available: ")
            && message.contains("1 node(s) didn't match Pod's node affinity/selector")
            && message.contains("1 node(s) had no available volume zone"),
        "{message:?}"
    );

    // The volume moves to zone b (relabelled): the watch's update requeues the pod
    // well before the 30 s flush of unschedulable pods would.
    let patch = Patch::Merge(json!({"metadata": {"labels": {ZONE: "b"}}}));
    within(
        "relabelling the PV",
        WAIT,
        volumes(&cluster).patch("pv-zone-a", &PatchParams::default(), &patch),
    )
    .await
    .expect("relabel the PV");
    let placed = cluster.wait_bound(&["pinned-b"], WAIT).await;
    assert_eq!(placed["pinned-b"], "node-b");
    berth.assert_running();
}

// ---------------------------------------------------------------------------------------
// VolumeBinding's PreBind

/// WaitForFirstConsumer with a provisioner: berth annotates the claim with the node it
/// chose and waits; the test plays the provisioner (a volume in that node's topology) and
/// the PV controller, and the pod binds to that node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_first_consumer_claim_is_provisioned_on_the_selected_node() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    cluster.create_node(zoned_node("node-a", "a")).await;
    cluster.create_node(zoned_node("node-b", "b")).await;
    let mut berth = Berth::spawn(&cluster, BerthOptions::default());
    berth.wait_ready().await;
    cluster.create_profile(profile("volumes", json!({}))).await;
    cluster.wait_profile_ready("volumes", WAIT).await;
    let classes: Api<StorageClass> = Api::all(cluster.client.clone());
    create(
        &classes,
        storage_class(
            "wait-provisioned",
            "example.com/provisioner",
            "WaitForFirstConsumer",
        ),
    )
    .await;
    create(&claims(&cluster), claim("dyn", "wait-provisioned")).await;
    cluster
        .create_pod(pod_with_claim("consumer", "volumes", "dyn"))
        .await;

    let node = eventually("claim `dyn` has a selected node", WAIT, || async {
        selected_node(&cluster, "dyn").await
    })
    .await;
    assert!(["node-a", "node-b"].contains(&node.as_str()), "{node}");
    assert_eq!(
        cluster.node_of("consumer").await,
        None,
        "the pod must wait in PreBind until its claim is bound"
    );
    assert!(updates_of(&cluster, "persistentvolumeclaims", "dyn") >= 1);

    // The provisioner creates the volume on the selected node; the PV controller binds.
    let mut provisioned = local_volume("pv-dyn", "wait-provisioned", &node);
    provisioned["metadata"]["annotations"] =
        json!({"pv.kubernetes.io/provisioned-by": "example.com/provisioner"});
    create(
        &volumes(&cluster),
        provisioned_for(&cluster, provisioned, "dyn").await,
    )
    .await;
    complete_binding(&cluster, "dyn", "pv-dyn").await;

    let placed = cluster.wait_bound(&["consumer"], WAIT).await;
    assert_eq!(
        placed["consumer"], node,
        "the pod goes where its volume was provisioned"
    );
    assert_eq!(
        cluster.successful_bindings().get("default/consumer"),
        Some(&1)
    );
    berth.assert_running();
}

/// A matching static volume: berth writes the volume's claimRef (and nothing on the
/// claim); the test plays the PV controller, and the pod binds to the only node the
/// volume can be used on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_volume_gets_its_claim_ref_and_the_pod_binds_where_the_volume_is() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    cluster.create_node(zoned_node("node-a", "a")).await;
    cluster.create_node(zoned_node("node-b", "b")).await;
    let mut berth = Berth::spawn(&cluster, BerthOptions::default());
    berth.wait_ready().await;
    cluster.create_profile(profile("volumes", json!({}))).await;
    cluster.wait_profile_ready("volumes", WAIT).await;
    let classes: Api<StorageClass> = Api::all(cluster.client.clone());
    create(
        &classes,
        storage_class(
            "local",
            "kubernetes.io/no-provisioner",
            "WaitForFirstConsumer",
        ),
    )
    .await;
    create(
        &volumes(&cluster),
        local_volume("pv-local-b", "local", "node-b"),
    )
    .await;
    set_phase(&volumes(&cluster), "pv-local-b", "Available").await;
    create(&claims(&cluster), claim("static", "local")).await;
    cluster
        .create_pod(pod_with_claim("user", "volumes", "static"))
        .await;

    let claim_ref = eventually("pv-local-b has a claimRef", WAIT, || async {
        let pv = get(&volumes(&cluster), "pv-local-b").await;
        pv.spec
            .and_then(|s| s.claim_ref)
            .ok_or_else(|| "no claimRef yet".to_string())
    })
    .await;
    assert_eq!(
        (claim_ref.namespace.as_deref(), claim_ref.name.as_deref()),
        (Some("default"), Some("static"))
    );
    // The scheduler never writes the claim (no volumeName from berth): the PV controller
    // completes the binding. On the test API server nothing else does, so the claim
    // still has no volumeName here.
    if cluster.real().is_none() {
        let pvc = get(&claims(&cluster), "static").await;
        assert_eq!(pvc.spec.and_then(|s| s.volume_name), None);
    }
    assert_eq!(updates_of(&cluster, "persistentvolumeclaims", "static"), 0);

    complete_binding(&cluster, "static", "pv-local-b").await;
    let placed = cluster.wait_bound(&["user"], WAIT).await;
    assert_eq!(placed["user"], "node-b");
    berth.assert_running();
}

/// A provisioner that never answers: PreBind gives up after the profile's
/// bindTimeoutSeconds, the pod gets a FailedScheduling event naming the timeout and is
/// retried, and berth leaves no half-bound claim (never a volumeName, never a PV). Once
/// the provisioner and the PV controller finally act, the next attempt binds the pod.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provisioner_that_never_answers_times_out_and_the_pod_is_retried() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    cluster.create_node(zoned_node("node-a", "a")).await;
    let mut berth = Berth::spawn(&cluster, BerthOptions::default());
    berth.wait_ready().await;
    let spec = json!({
        "podInitialBackoffSeconds": 1,
        "podMaxBackoffSeconds": 1,
        "pluginConfig": {"volumeBinding": {"bindTimeoutSeconds": 2}},
    });
    cluster.create_profile(profile("impatient", spec)).await;
    cluster.wait_profile_ready("impatient", WAIT).await;
    let classes: Api<StorageClass> = Api::all(cluster.client.clone());
    create(
        &classes,
        storage_class(
            "silent",
            "example.com/never-answers",
            "WaitForFirstConsumer",
        ),
    )
    .await;
    create(&claims(&cluster), claim("stuck", "silent")).await;
    cluster
        .create_pod(pod_with_claim("waiting", "impatient", "stuck"))
        .await;

    let failed = eventually("a FailedScheduling event for `waiting`", WAIT, || async {
        let events = cluster.events_for("waiting").await;
        events
            .iter()
            .find(|e| e.reason.as_deref() == Some("FailedScheduling"))
            .cloned()
            .ok_or_else(|| format!("{events:?}"))
    })
    .await;
    let note = failed.note.clone().unwrap_or_default();
    assert!(
        note.contains(
            "running PreBind plugin \"VolumeBinding\": binding volumes: context deadline exceeded"
        ),
        "the event should name the timeout: {note:?}"
    );
    // Retried: the claim is written again by a later attempt.
    eventually(
        "a second attempt writes the claim again",
        Duration::from_secs(20),
        || async {
            match updates_of(&cluster, "persistentvolumeclaims", "stuck") {
                n if n >= 2 => Ok(()),
                n => Err(format!("{n} update(s) of the claim")),
            }
        },
    )
    .await;
    assert_eq!(cluster.node_of("waiting").await, None);
    let pvc = get(&claims(&cluster), "stuck").await;
    assert_eq!(
        pvc.spec.as_ref().and_then(|s| s.volume_name.as_deref()),
        None,
        "berth must not leave the claim half-bound"
    );
    assert_eq!(
        pvc.annotations().get(SELECTED_NODE).map(String::as_str),
        Some("node-a"),
        "the selected node stays for the provisioner (no API rollback)"
    );
    let pvs = within(
        "listing PVs",
        WAIT,
        volumes(&cluster).list(&Default::default()),
    )
    .await
    .expect("list PVs");
    assert!(
        pvs.items.is_empty(),
        "berth never creates volumes: {:?}",
        pvs.items
    );

    // The provisioner finally answers: the next attempt finds the claim bound.
    let late = provisioned_for(
        &cluster,
        local_volume("pv-late", "silent", "node-a"),
        "stuck",
    )
    .await;
    create(&volumes(&cluster), late).await;
    complete_binding(&cluster, "stuck", "pv-late").await;
    let placed = cluster.wait_bound(&["waiting"], WAIT).await;
    assert_eq!(placed["waiting"], "node-a");
    berth.assert_running();
}
