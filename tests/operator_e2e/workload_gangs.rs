//! Workload API gangs live (issue 31, "Done when"): `scheduling.k8s.io/v1beta1` PodGroups
//! on a real Kubernetes 1.37 API server with the GenericWorkload gate on and the API
//! version enabled, the members created by the real Job controller or by the test.
//!
//! Expected from the specification (kube-scheduler 1.37's pod-group cycle and
//! GangScheduling): a gang is bound whole or not at all; its PodGroup's
//! `PodGroupInitiallyScheduled` condition says which; two gangs competing for room for
//! one never both hold part of it; a gang that needs room preempts lower-priority pods,
//! a PodGroup with `disruptionMode: All` as one (PodGroupPostFilter). Node sizes make
//! every verdict follow from the pods' requests.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{
    Berth, BerthOptions, Cluster, WAIT, condition, eventually, node, pod, profile,
};

const SCHEDULER: &str = "berth";

/// A 1.37 cluster that serves the Workload API.
async fn cluster() -> Option<Cluster> {
    Cluster::start_reporting_with(
        37,
        &[
            "--feature-gates=GenericWorkload=true",
            "--runtime-config=scheduling.k8s.io/v1beta1=true",
        ],
    )
    .await
}

/// The cluster with 2-cpu `nodes`, and berth serving profile `berth` on it.
async fn start(nodes: &[&str]) -> Option<(Cluster, Berth)> {
    let cluster = cluster().await?;
    for n in nodes {
        cluster.create_node(node(n, "2", "8Gi")).await;
    }
    let mut berth = Berth::spawn(&cluster, BerthOptions::default());
    berth.wait_ready().await;
    cluster.create_profile(profile(SCHEDULER, json!({}))).await;
    cluster.wait_profile_ready(SCHEDULER, WAIT).await;
    Some((cluster, berth))
}

/// Creates the PodGroup `default/<name>` with a gang policy of `min_count`.
async fn create_pod_group(cluster: &Cluster, name: &str, min_count: i32) {
    let spec = json!({"schedulingPolicy": {"gang": {"minCount": min_count}}});
    post_pod_group(cluster, name, spec).await;
}

/// Creates the PodGroup `default/<name>` with `spec`; returns the created object.
async fn post_pod_group(cluster: &Cluster, name: &str, spec: Value) -> Value {
    let group = json!({
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    });
    let (code, answer) = cluster
        .raw(
            "POST",
            "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups",
            &group,
        )
        .await;
    assert_eq!(code, 201, "creating PodGroup {name}: {answer}");
    answer
}

/// The PodGroup's `PodGroupInitiallyScheduled` as (status, reason, message), once it has
/// one.
async fn initially_scheduled(
    cluster: &Cluster,
    name: &str,
    want: &str,
) -> (String, String, String) {
    let path = format!("/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups/{name}");
    eventually(
        &format!("PodGroup {name} has PodGroupInitiallyScheduled={want}"),
        WAIT,
        || async {
            let (code, group) = cluster.raw("GET", &path, &Value::Null).await;
            if code != 200 {
                return Err(format!("GET {path}: {code} {group}"));
            }
            match condition(&group, "PodGroupInitiallyScheduled") {
                Some(c) if c["status"] == want => Ok((
                    c["status"].as_str().unwrap_or_default().to_string(),
                    c["reason"].as_str().unwrap_or_default().to_string(),
                    c["message"].as_str().unwrap_or_default().to_string(),
                )),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await
}

/// A 1-cpu member of `group`.
fn member(name: &str, group: &str) -> Value {
    let mut p = pod(name, SCHEDULER, "1", "128Mi");
    p["spec"]["schedulingGroup"] = json!({"podGroupName": group});
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_gang_of_eight_binds_whole_or_not_at_all() {
    let Some((cluster, mut berth)) = start(&["n1", "n2", "n3", "n4"]).await else {
        return;
    };

    // One cpu taken: 7 free, the gang of 8 one-cpu pods does not fit.
    cluster
        .create_pod(pod("blocker", SCHEDULER, "1", "128Mi"))
        .await;
    cluster.wait_bound(&["blocker"], WAIT).await;
    create_pod_group(&cluster, "train", 8).await;
    let job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {
            "parallelism": 8,
            "completions": 8,
            "template": {
                "spec": {
                    "schedulerName": SCHEDULER,
                    "schedulingGroup": {"podGroupName": "train"},
                    "restartPolicy": "Never",
                    "containers": [{
                        "name": "main",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": "1", "memory": "128Mi"}},
                    }],
                },
            },
        },
    });
    let (code, answer) = cluster
        .raw("POST", "/apis/batch/v1/namespaces/default/jobs", &job)
        .await;
    assert_eq!(code, 201, "creating the Job: {answer}");
    eventually("the Job controller made 8 pods", WAIT, || async {
        let pods = cluster.job_pods("train").await;
        if pods.len() == 8 {
            Ok(())
        } else {
            Err(format!("{pods:?}"))
        }
    })
    .await;
    let (_, reason, message) = initially_scheduled(&cluster, "train", "False").await;
    assert_eq!(reason, "Unschedulable");
    assert!(
        message.starts_with("minCount (8) cannot be satisfied: 7 scheduled, 0 remaining"),
        "{message}"
    );
    // None of the gang is bound while it cannot be whole.
    for _ in 0..20 {
        let pods = cluster.job_pods("train").await;
        assert!(
            pods.values().all(Option::is_none),
            "part of the gang bound: {pods:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let members: Vec<String> = cluster.job_pods("train").await.into_keys().collect();
    assert!(
        members
            .iter()
            .all(|name| cluster.binding_requests_for(name).is_empty()),
        "berth asked to bind a member of a gang that does not fit"
    );

    // The blocker leaves: the whole gang binds, two per node.
    cluster.delete_pod("blocker").await;
    let names: Vec<&str> = members.iter().map(String::as_str).collect();
    let bound = cluster.wait_bound(&names, WAIT).await;
    let mut per_node: BTreeMap<&str, usize> = BTreeMap::new();
    for node in bound.values() {
        *per_node.entry(node).or_default() += 1;
    }
    assert_eq!(per_node.values().copied().collect::<Vec<_>>(), [2, 2, 2, 2]);
    let (_, reason, _) = initially_scheduled(&cluster, "train", "True").await;
    assert_eq!(reason, "Scheduled");
    // Upstream's pod-group metrics: at least one rejected cycle, then the one that placed
    // the gang.
    for (result, at_least) in [("unschedulable", 1.0), ("scheduled", 1.0)] {
        let count = metric(&berth, "scheduler_podgroup_schedule_attempts_total", result).await;
        assert!(count >= at_least, "{result}: {count}");
    }
    let scheduled = metric(
        &berth,
        "scheduler_podgroup_schedule_attempts_total",
        "scheduled",
    )
    .await;
    assert_eq!(scheduled, 1.0, "the gang was placed by one cycle");
    berth.terminate_cleanly().await;
}

/// The value of `name{result="<result>",profile="berth"}` on berth's `/metrics`, once
/// it is exported.
async fn metric(berth: &Berth, name: &str, result: &str) -> f64 {
    let prefix = format!("{name}{{result=\"{result}\",profile=\"{SCHEDULER}\"}} ");
    eventually(&format!("/metrics has {prefix}"), WAIT, || async {
        let (status, body) = berth.get("/metrics").await?;
        if status != 200 {
            return Err(format!("{status}: {body}"));
        }
        body.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .ok_or_else(|| {
                body.lines()
                    .filter(|l| l.contains("podgroup"))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gangs_competing_for_room_for_one_never_deadlock() {
    let Some((cluster, mut berth)) = start(&["n1", "n2"]).await else {
        return;
    };

    // Room for 4 one-cpu pods; two gangs of 4 arrive interleaved.
    create_pod_group(&cluster, "a", 4).await;
    create_pod_group(&cluster, "b", 4).await;
    let names = |group: &str| (0..4).map(|i| format!("{group}-{i}")).collect::<Vec<_>>();
    for i in 0..4 {
        for group in ["a", "b"] {
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
    let (_, reason, _) = initially_scheduled(&cluster, winner, "True").await;
    assert_eq!(reason, "Scheduled");
    let (_, reason, _) = initially_scheduled(&cluster, loser, "False").await;
    assert_eq!(reason, "Unschedulable");

    // The winner finishes: the other gang gets the room, whole.
    for name in names(winner) {
        cluster.delete_pod(&name).await;
    }
    cluster.wait_bound(&losing, WAIT).await;
    initially_scheduled(&cluster, loser, "True").await;
    berth.terminate_cleanly().await;
}

/// Creates `default/<name>` at PriorityClass `class`: a gang of `min_count`, or a basic
/// group whose pods are evicted together (`disruptionMode: All`) for `None`.
async fn create_prioritized_group(
    cluster: &Cluster,
    name: &str,
    class: &str,
    min_count: Option<i32>,
) -> Value {
    let policy = match min_count {
        Some(min_count) => json!({"gang": {"minCount": min_count}}),
        None => json!({"basic": {}}),
    };
    let mut spec = json!({"priorityClassName": class, "schedulingPolicy": policy});
    if min_count.is_none() {
        spec["disruptionMode"] = json!({"all": {}});
    }
    post_pod_group(cluster, name, spec).await
}

/// Workload-aware preemption live: a gang of two at high priority, with room for one,
/// preempts a low-priority PodGroup of two whose `disruptionMode` is All. One evicted pod
/// would make room, but the group goes as one: both are evicted, each told by a
/// `Preempted` event naming the PodGroup, and the gang binds whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gang_preempts_a_pod_group_as_a_unit() {
    let Some((cluster, mut berth)) = start(&["n1", "n2"]).await else {
        return;
    };
    let low = cluster.ensure_priority_class(10).await;
    let high = cluster.ensure_priority_class(1000).await;
    let at = |p: Value, class: &str| {
        let mut p = p;
        p["spec"]["priorityClassName"] = json!(class);
        p
    };

    // Three of four cpus taken: a high-priority pod of one, and the batch group of two.
    cluster
        .create_pod(at(pod("keeper", SCHEDULER, "1", "128Mi"), &high))
        .await;
    create_prioritized_group(&cluster, "batch", &low, None).await;
    for name in ["batch-0", "batch-1"] {
        cluster.create_pod(at(member(name, "batch"), &low)).await;
    }
    cluster
        .wait_bound(&["keeper", "batch-0", "batch-1"], WAIT)
        .await;

    let train = create_prioritized_group(&cluster, "train", &high, Some(2)).await;
    let uid = train["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    for name in ["train-0", "train-1"] {
        cluster.create_pod(at(member(name, "train"), &high)).await;
    }
    let bound = cluster.wait_bound(&["train-0", "train-1"], WAIT).await;
    assert_eq!(bound.len(), 2);
    for victim in ["batch-0", "batch-1"] {
        let preempted = cluster.preempted_event(victim).await;
        assert_eq!(
            preempted.note.as_deref(),
            Some(format!("Preempted by podgroup {uid} on node cluster").as_str()),
            "{victim}"
        );
        let related = preempted.related.expect("the preemptor");
        assert_eq!(
            (related.kind.as_deref(), related.name.as_deref()),
            (Some("PodGroup"), Some("train")),
            "{victim}"
        );
    }
    assert!(
        cluster
            .events_for("keeper")
            .await
            .iter()
            .all(|e| e.reason.as_deref() != Some("Preempted")),
        "the high-priority pod stays"
    );
    let (_, reason, _) = initially_scheduled(&cluster, "train", "True").await;
    assert_eq!(reason, "Scheduled");
    let waited = metric(
        &berth,
        "scheduler_podgroup_schedule_attempts_total",
        "waiting_on_preemption",
    )
    .await;
    assert!(waited >= 1.0, "{waited}");
    // Upstream's workload-preemption metrics: the run that chose the PodGroup's two pods
    // as one unit (its ongoing re-runs choose none).
    let scraped = berth.scrape().await;
    let value = |series: &str| scraped.value(series);
    let runs = value(r#"scheduler_workload_preemption_attempts_total{result="Success"}"#);
    assert!(runs >= 1.0, "{runs}");
    assert_eq!(value("scheduler_workload_preemption_victims_count"), 1.0);
    assert_eq!(value("scheduler_workload_preemption_victims_sum"), 2.0);
    assert_eq!(
        value(r#"scheduler_preemption_workload_disruptions_sum{preemptor="podgroup"}"#),
        1.0
    );
    assert_eq!(value("scheduler_preemption_victims_count"), 0.0);
    berth.terminate_cleanly().await;
}
