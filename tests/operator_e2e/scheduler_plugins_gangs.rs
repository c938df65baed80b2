//! scheduler-plugins' gangs live (issue 31, "Done when"): `scheduling.x-k8s.io/v1alpha1`
//! PodGroups and the `scheduling.x-k8s.io/pod-group` label on a real Kubernetes 1.37,
//! with the CRD installed before berth starts, as in a cluster that ran scheduler-plugins.
//! The CRD is the one `berth::api::scheduler_plugins::crd()` gives, which has
//! scheduler-plugins' group, names, fields and status subresource.
//!
//! Expected from the specification (scheduler-plugins' Coscheduling and PodGroup
//! controller): a gang of 8 that fits only whole binds whole or not at all; the group's
//! status goes `Scheduling` (8 members exist) and then `Running`/`Finished` with
//! `occupiedBy` naming the Job; two gangs competing for room for one never deadlock.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::gang::{
    GangDialect, a_gang_preempts_as_a_unit, binds_whole_once_the_blocker_leaves,
    blocked_job_of_eight, gang_profile, member_bindings, start_gang_with,
};
use crate::harness::{
    BerthOptions, Cluster, WAIT, conditions_summary, eventually, node, pod, within,
};

const GROUPS: &str = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups";

/// Installs scheduler-plugins' PodGroup CRD and waits until it is established.
async fn install_crd(cluster: &Cluster) {
    let crd = berth::api::scheduler_plugins::crd();
    let name = crd.metadata.name.clone().unwrap_or_default();
    let api: Api<CustomResourceDefinition> = Api::all(cluster.client.clone());
    within(
        "creating a CRD",
        WAIT,
        api.create(&PostParams::default(), &crd),
    )
    .await
    .unwrap_or_else(|e| panic!("creating CRD {name}: {e}"));
    kube_cluster::wait_crds_established(&cluster.client, &[name], WAIT)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

async fn create_group(cluster: &Cluster, name: &str, spec: Value) {
    let group = json!({
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    });
    let (code, answer) = cluster.raw("POST", GROUPS, &group).await;
    assert_eq!(code, 201, "creating PodGroup {name}: {answer}");
}

async fn group_status(cluster: &Cluster, name: &str) -> Value {
    let path = format!("{GROUPS}/{name}");
    let (code, group) = cluster.raw("GET", &path, &Value::Null).await;
    assert_eq!(code, 200, "GET {path}: {group}");
    group
}

/// A 1-cpu pod of the gang profile labelled into scheduler-plugins' `group`.
fn member(name: &str, group: &str) -> Value {
    let mut p = pod(name, "gang", "1", "128Mi");
    p["metadata"]["labels"] = json!({"scheduling.x-k8s.io/pod-group": group});
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_scheduler_plugins_gang_of_eight_binds_whole_or_not_at_all() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    install_crd(&cluster).await;
    for n in ["n1", "n2", "n3", "n4"] {
        cluster.create_node(node(n, "2", "8Gi")).await;
    }
    let mut berth = start_gang_with(&cluster, BerthOptions::default(), gang_profile()).await;

    // One cpu taken: 7 free, the gang of 8 one-cpu pods does not fit.
    create_group(&cluster, "train", json!({"minMember": 8})).await;
    let members = blocked_job_of_eight(&cluster, &member("ignored", "train")).await;
    // 8 members exist: the controller moves the group from Pending to Scheduling and
    // records the Job as its occupant.
    let group = eventually("PodGroup train is Scheduling", WAIT, || async {
        let group = group_status(&cluster, "train").await;
        if group["status"]["phase"] == "Scheduling" {
            Ok(group)
        } else {
            Err(conditions_summary(&group))
        }
    })
    .await;
    assert_eq!(group["status"]["occupiedBy"], "default/train", "{group}");

    let names: Vec<&str> = members.iter().map(String::as_str).collect();
    // The blocker leaves: the whole gang binds, each member once, two per node.
    binds_whole_once_the_blocker_leaves(&cluster, &names).await;
    // kwok runs the members (and ends them, Job pods): Running, then possibly Finished.
    eventually("PodGroup train runs", WAIT, || async {
        let group = group_status(&cluster, "train").await;
        if matches!(
            group["status"]["phase"].as_str(),
            Some("Running" | "Finished")
        ) {
            Ok(())
        } else {
            Err(conditions_summary(&group))
        }
    })
    .await;
    berth.terminate_cleanly().await;
}

/// Two scheduler-plugins gangs of 4 one-cpu members and room for 4, arriving
/// interleaved: one is bound whole, the other binds nothing and holds nothing, and is
/// bound whole once the first is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_scheduler_plugins_gangs_competing_for_room_for_one_never_deadlock() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    install_crd(&cluster).await;
    for n in ["n1", "n2"] {
        cluster.create_node(node(n, "2", "8Gi")).await;
    }
    let mut berth = start_gang_with(&cluster, BerthOptions::default(), gang_profile()).await;
    create_group(&cluster, "a", json!({"minMember": 4})).await;
    create_group(&cluster, "b", json!({"minMember": 4})).await;
    let names = |group: &str| (0..4).map(|i| format!("{group}-{i}")).collect::<Vec<_>>();
    for i in 0..4 {
        for group in ["b", "a"] {
            cluster
                .create_pod(member(&format!("{group}-{i}"), group))
                .await;
        }
    }
    let (winner, loser) = cluster.one_whole_gang(["a", "b"], 4).await;
    let losers = names(loser);
    let losing: Vec<&str> = losers.iter().map(String::as_str).collect();
    cluster
        .assert_stay_unbound(&losing, Duration::from_secs(2))
        .await;
    assert!(
        member_bindings(&cluster, &losing)
            .iter()
            .all(|(_, n)| *n == 0),
        "a member of the losing gang was bound"
    );

    for name in names(winner) {
        cluster.delete_pod(&name).await;
    }
    cluster.wait_bound(&losing, WAIT).await;
    let bound = member_bindings(&cluster, &losing);
    assert!(
        bound.iter().all(|(_, n)| *n == 1),
        "successful bindings per member of gang {loser}: {bound:?}"
    );
    berth.terminate_cleanly().await;
}

/// The CRD installed after berth started (scheduler-plugins deployed later, or its CRD
/// re-created): berth finds it by asking again, then watches its PodGroups and keeps
/// their status, so a gang labelled into one is scheduled as a gang.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_installed_after_berth_started_is_served() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    cluster.create_node(node("n1", "2", "8Gi")).await;
    let mut berth = start_gang_with(&cluster, BerthOptions::default(), gang_profile()).await;
    install_crd(&cluster).await;
    create_group(&cluster, "late", json!({"minMember": 2})).await;
    // One member: held at Permit until the second exists, which needs the PodGroup.
    cluster.create_pod(member("late-0", "late")).await;
    cluster
        .assert_stay_unbound(&["late-0"], Duration::from_secs(2))
        .await;
    cluster.create_pod(member("late-1", "late")).await;
    cluster.wait_bound(&["late-0", "late-1"], WAIT).await;
    eventually("PodGroup late has a phase past Pending", WAIT, || async {
        let group = group_status(&cluster, "late").await;
        if matches!(
            group["status"]["phase"].as_str(),
            Some("Scheduling" | "Running" | "Finished")
        ) {
            Ok(())
        } else {
            Err(conditions_summary(&group))
        }
    })
    .await;
    berth.terminate_cleanly().await;
}

/// The gang of scheduler-plugins' PodGroup and label preempts as a unit, through the same
/// pod-group cycle as the Workload API's (the victims' events name the
/// `scheduling.x-k8s.io/v1alpha1` PodGroup).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduler_plugins_gang_preempts_as_a_unit() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    install_crd(&cluster).await;
    let dialect = GangDialect {
        label: "scheduling.x-k8s.io/pod-group",
        api_version: "scheduling.x-k8s.io/v1alpha1",
    };
    a_gang_preempts_as_a_unit(&cluster, dialect, async |cluster: &Cluster| {
        create_group(cluster, "train", json!({"minMember": 3})).await;
        group_status(cluster, "train").await["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    })
    .await;
}
