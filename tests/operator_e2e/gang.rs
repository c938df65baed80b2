//! Gang scheduling end to end (issue 7, "Done when"): the Coscheduling plugin and the
//! PodGroup controller through `berth run`.

use std::time::Duration;

use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use crate::harness::{
    Berth, BerthOptions, Cluster, WAIT, condition, conditions_summary, eventually, node, pod,
    profile, within,
};

/// The gang profile of `examples/gang`, with a calm group backoff.
fn gang_profile() -> Value {
    profile(
        "gang",
        json!({
            "plugins": {
                "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                "queueSort": {
                    "enabled": [{"name": "Coscheduling"}],
                    "disabled": [{"name": "*"}],
                },
            },
            "pluginConfig": {
                "coscheduling": {"permitWaitingTimeSeconds": 60, "podGroupBackoffSeconds": 1},
            },
        }),
    )
}

/// A 1-cpu pod for the gang profile in group `group`.
fn member(name: &str, group: &str) -> Value {
    let mut p = pod(name, "gang", "1", "128Mi");
    p["metadata"]["labels"] = json!({"berth.dev/pod-group": group});
    p
}

fn pod_groups(cluster: &Cluster) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("berth.dev", "v1alpha1", "PodGroup");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "podgroups");
    Api::namespaced_with(cluster.client.clone(), "default", &resource)
}

/// The PodGroup `default/<name>` as JSON (Null when it does not exist).
async fn pod_group(cluster: &Cluster, name: &str) -> Value {
    match within(
        "reading a PodGroup",
        WAIT,
        pod_groups(cluster).get_opt(name),
    )
    .await
    {
        Ok(Some(object)) => serde_json::to_value(object).expect("JSON"),
        Ok(None) => Value::Null,
        Err(e) => panic!("reading PodGroup {name}: {e}"),
    }
}

/// Successful bindings of pods `default/<name>` for `names`.
fn member_bindings(cluster: &Cluster, names: &[&str]) -> Vec<(String, usize)> {
    let counts = cluster.successful_bindings();
    names
        .iter()
        .map(|n| {
            let count = counts.get(&format!("default/{n}")).copied().unwrap_or(0);
            (n.to_string(), count)
        })
        .collect()
}

async fn start_gang(cluster: &Cluster) -> Berth {
    let mut berth = Berth::spawn(cluster, BerthOptions::default());
    berth.wait_ready().await;
    cluster.create_profile(gang_profile()).await;
    cluster.wait_profile_ready("gang", WAIT).await;
    berth
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gang_of_4_with_room_for_3_binds_nothing_until_a_node_fits() {
    let cluster = Cluster::start().await;
    cluster.create_node(node("node-a", "3", "16Gi")).await;
    let mut berth = start_gang(&cluster).await;

    let group: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {"minMember": 4, "scheduleTimeoutSeconds": 2},
    }))
    .expect("a PodGroup");
    within(
        "creating a PodGroup",
        WAIT,
        pod_groups(&cluster).create(&PostParams::default(), &group),
    )
    .await
    .expect("creating PodGroup train");
    let names = ["train-0", "train-1", "train-2", "train-3"];
    for name in names {
        cluster.create_pod(member(name, "train")).await;
    }

    // Past the timeout (and a few backoff rounds), nothing is bound.
    cluster
        .assert_stay_unbound(&names, Duration::from_secs(4))
        .await;
    let bound = member_bindings(&cluster, &names);
    assert!(
        bound.iter().all(|(_, n)| *n == 0),
        "successful bindings before the group fits: {bound:?}"
    );
    let status = eventually(
        "PodGroup train is Pending/Scheduling with Scheduled=False",
        WAIT,
        || async {
            let pg = pod_group(&cluster, "train").await;
            let phase = pg["status"]["phase"].as_str().unwrap_or_default();
            let scheduled = condition(&pg, "Scheduled");
            if matches!(phase, "Pending" | "Scheduling")
                && scheduled.is_some_and(|c| c["status"] == "False")
            {
                Ok(pg)
            } else {
                Err(conditions_summary(&pg))
            }
        },
    )
    .await;
    assert_eq!(status["status"]["scheduled"], 0, "{status}");
    let message = condition(&status, "Scheduled").expect("the Scheduled condition")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.starts_with("0/4 pods scheduled; waiting for 4 more"),
        "Scheduled condition message: {message:?}"
    );

    // A node with room for the 4th: the whole group is bound, once each.
    cluster.create_node(node("node-b", "2", "16Gi")).await;
    cluster.wait_bound(&names, WAIT).await;
    let bound = member_bindings(&cluster, &names);
    assert!(
        bound.iter().all(|(_, n)| *n == 1),
        "successful bindings per member: {bound:?}"
    );
    eventually("PodGroup train reaches phase Scheduled", WAIT, || async {
        let pg = pod_group(&cluster, "train").await;
        if pg["status"]["phase"] == "Scheduled"
            && condition(&pg, "Scheduled").is_some_and(|c| c["status"] == "True")
        {
            Ok(())
        } else {
            Err(conditions_summary(&pg))
        }
    })
    .await;
    berth.terminate_cleanly().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gang_job_pods_get_an_implicit_pod_group_owned_by_the_job_and_are_bound() {
    let cluster = Cluster::start().await;
    cluster.create_node(node("node-a", "4", "16Gi")).await;
    let mut berth = start_gang(&cluster).await;

    let job_uid = "6f1c2a7e-0000-4000-8000-00000000a001";
    let names = ["job-a-0", "job-a-1", "job-a-2"];
    for name in names {
        let mut p = member(name, "job-a");
        p["metadata"]["annotations"] = json!({"berth.dev/min-member": "3"});
        p["metadata"]["ownerReferences"] = json!([{
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "job-a",
            "uid": job_uid,
            "controller": true,
            "blockOwnerDeletion": true,
        }]);
        cluster.create_pod(p).await;
    }

    let group = eventually("PodGroup job-a is created", WAIT, || async {
        let pg = pod_group(&cluster, "job-a").await;
        if pg.is_null() {
            Err("no PodGroup job-a".to_string())
        } else {
            Ok(pg)
        }
    })
    .await;
    assert_eq!(group["spec"]["minMember"], 3, "{group}");
    let owners = group["metadata"]["ownerReferences"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        owners.iter().any(|o| o["apiVersion"] == "batch/v1"
            && o["kind"] == "Job"
            && o["name"] == "job-a"
            && o["uid"] == job_uid),
        "PodGroup job-a is not owned by Job job-a: {owners:?}"
    );

    cluster.wait_bound(&names, WAIT).await;
    let bound = member_bindings(&cluster, &names);
    assert!(
        bound.iter().all(|(_, n)| *n == 1),
        "successful bindings per member: {bound:?}"
    );
    eventually("PodGroup job-a reaches phase Scheduled", WAIT, || async {
        let pg = pod_group(&cluster, "job-a").await;
        if pg["status"]["phase"] == "Scheduled" {
            Ok(())
        } else {
            Err(conditions_summary(&pg))
        }
    })
    .await;
    berth.terminate_cleanly().await;
}
