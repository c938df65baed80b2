//! Issue "Real Kubernetes in the loop", item 3: pods created by the real controllers from
//! Deployments, StatefulSets, Jobs and DaemonSets are scheduled by berth, bound, and
//! started by kwok (Job pods finish); a pod nothing can fit gets FailedScheduling and
//! PodScheduled=False as `kubectl describe` shows them. Real clusters only.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};

use crate::harness::{Berth, BerthOptions, Cluster, WAIT, eventually, node, profile};
use crate::support::tools::kubectl_or_skip;

const SCHEDULER: &str = "workloads";
const NAMESPACE: &str = "default";

fn template(app: &str, cpu: &str) -> Value {
    json!({
        "metadata": {"labels": {"app": app}},
        "spec": {
            "schedulerName": SCHEDULER,
            "containers": [{
                "name": "main",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
            }],
        },
    })
}

async fn create(cluster: &Cluster, group: &str, version: &str, plural: &str, object: Value) {
    let path = format!("/apis/{group}/{version}/namespaces/{NAMESPACE}/{plural}");
    let (status, body) = cluster.raw("POST", &path, &object).await;
    assert_eq!(status, 201, "creating {plural}: {body}");
}

fn selector(app: &str) -> Value {
    json!({"matchLabels": {"app": app}})
}

/// The pods of `app`: name -> (node, phase).
async fn pods_of(cluster: &Cluster, app: &str) -> BTreeMap<String, (String, String)> {
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    pods.list(&ListParams::default().labels(&format!("app={app}")))
        .await
        .unwrap_or_else(|e| panic!("listing pods of {app}: {e}"))
        .items
        .into_iter()
        .map(|p| {
            let name = p.metadata.name.clone().unwrap_or_default();
            let node = p.spec.and_then(|s| s.node_name).unwrap_or_default();
            let phase = p.status.and_then(|s| s.phase).unwrap_or_default();
            (name, (node, phase))
        })
        .collect()
}

/// Waits until `app` has `count` pods, all bound and in `phase`.
async fn wait_pods(
    cluster: &Cluster,
    app: &str,
    count: usize,
    phase: &str,
) -> BTreeMap<String, (String, String)> {
    eventually(
        &format!("{count} pods of {app} bound and {phase}"),
        WAIT * 2,
        || async {
            let pods = pods_of(cluster, app).await;
            let done = pods
                .values()
                .filter(|(node, p)| !node.is_empty() && p == phase)
                .count();
            if pods.len() == count && done == count {
                Ok(pods)
            } else {
                Err(format!("{pods:?}"))
            }
        },
    )
    .await
}

/// A real cluster with `nodes` of `cpu` and `memory`, and berth serving [`SCHEDULER`].
async fn start(nodes: &[&str], cpu: &str, memory: &str) -> Option<(Cluster, Berth)> {
    let cluster = Cluster::start().await?;
    for name in nodes {
        cluster.create_node(node(name, cpu, memory)).await;
    }
    let mut berth = Berth::spawn(&cluster, BerthOptions::default());
    berth.wait_ready().await;
    cluster.create_profile(profile(SCHEDULER, json!({}))).await;
    cluster.wait_profile_ready(SCHEDULER, WAIT).await;
    Some((cluster, berth))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controllers_pods_are_scheduled_bound_and_started() {
    let nodes = ["node-a", "node-b", "node-c"];
    let Some((cluster, mut berth)) = start(&nodes, "4", "8Gi").await else {
        return;
    };

    create(&cluster, "apps", "v1", "deployments", json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 3, "selector": selector("web"), "template": template("web", "100m")},
    }))
    .await;
    create(&cluster, "apps", "v1", "statefulsets", json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {"replicas": 2, "serviceName": "db", "selector": selector("db"), "template": template("db", "200m")},
    }))
    .await;
    let mut job_template = template("batch", "100m");
    job_template["spec"]["restartPolicy"] = json!("Never");
    create(
        &cluster,
        "batch",
        "v1",
        "jobs",
        json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "batch"},
            "spec": {"completions": 2, "parallelism": 2, "template": job_template},
        }),
    )
    .await;
    create(
        &cluster,
        "apps",
        "v1",
        "daemonsets",
        json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent"},
            "spec": {"selector": selector("agent"), "template": template("agent", "50m")},
        }),
    )
    .await;

    // Started by kwok once bound; the StatefulSet's second pod exists only after the
    // first is Running and Ready, so all of them running shows the whole chain.
    wait_pods(&cluster, "web", 3, "Running").await;
    wait_pods(&cluster, "db", 2, "Running").await;
    let agents = wait_pods(&cluster, "agent", 3, "Running").await;
    let agent_nodes: BTreeSet<&str> = agents.values().map(|(node, _)| node.as_str()).collect();
    assert_eq!(
        agent_nodes,
        BTreeSet::from(nodes),
        "one DaemonSet pod on each node"
    );

    // The Job's pods ran and finished: the Job controller counts them.
    let jobs: Api<Job> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    eventually("the Job completes", WAIT * 2, || async {
        let job = jobs.get("batch").await.map_err(|e| e.to_string())?;
        let succeeded = job.status.as_ref().and_then(|s| s.succeeded).unwrap_or(0);
        if succeeded == 2 {
            Ok(())
        } else {
            Err(format!("{:?}", job.status))
        }
    })
    .await;

    // Every pod was bound once, by berth, and carries PodScheduled=True.
    let bindings = cluster.successful_bindings();
    assert_eq!(bindings.len(), 3 + 2 + 2 + 3, "{bindings:?}");
    assert!(bindings.values().all(|&n| n == 1), "{bindings:?}");
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    for pod in pods.list(&ListParams::default()).await.expect("pods").items {
        let scheduled = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "PodScheduled"))
            .map(|c| c.status.clone());
        assert_eq!(
            scheduled.as_deref(),
            Some("True"),
            "{:?}",
            pod.metadata.name
        );
    }
    berth.assert_running();
    berth.terminate_cleanly().await;
}

/// A Deployment's pod that fits nowhere: `kubectl describe pod` shows berth's
/// FailedScheduling event with upstream's message and PodScheduled False/Unschedulable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unschedulable_deployment_pod_is_described_as_kube_scheduler_describes_it() {
    let Some(kubectl) = kubectl_or_skip(
        "an_unschedulable_deployment_pod_is_described_as_kube_scheduler_describes_it",
    ) else {
        return;
    };
    let Some((cluster, mut berth)) = start(&["node-a", "node-b", "node-c"], "2", "4Gi").await
    else {
        return;
    };
    create(&cluster, "apps", "v1", "deployments", json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "huge"},
        "spec": {"replicas": 1, "selector": selector("huge"), "template": template("huge", "3")},
    }))
    .await;
    let pod_name = eventually("the ReplicaSet creates the pod", WAIT, || async {
        pods_of(&cluster, "huge")
            .await
            .into_keys()
            .next()
            .ok_or_else(|| "no pod yet".to_string())
    })
    .await;
    // Upstream's message for three nodes short of cpu (kube-scheduler's FitError and
    // DefaultPreemption's, 1.37): the request exceeds every node's whole allocatable, which
    // 1.37's NodeResourcesFit marks UnschedulableAndUnresolvable, so preemption says it
    // cannot help rather than that it found no victims.
    let want = "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.";
    let admin = cluster
        .real()
        .expect("a real cluster")
        .kube
        .admin_kubeconfig()
        .to_path_buf();
    let described = eventually(
        "kubectl describe shows the FailedScheduling event",
        WAIT,
        || {
            let kubectl = kubectl.clone();
            let admin = admin.clone();
            let pod_name = pod_name.clone();
            async move {
                let out = Command::new(&kubectl)
                    .args(["describe", "pod", &pod_name, "--namespace", NAMESPACE])
                    .arg("--kubeconfig")
                    .arg(&admin)
                    .output()
                    .map_err(|e| e.to_string())?;
                let text = String::from_utf8_lossy(&out.stdout).to_string();
                if text.contains("FailedScheduling") {
                    Ok(text)
                } else {
                    Err(text)
                }
            }
        },
    )
    .await;
    let event = described
        .lines()
        .find(|l| l.contains("FailedScheduling"))
        .expect("the event line");
    assert!(event.contains("Warning"), "{event}");
    assert!(
        event.contains(SCHEDULER),
        "the event's source is the profile's scheduler name: {event}"
    );
    assert!(event.contains(want), "{event}\nwant {want}");
    let scheduled = described
        .lines()
        .skip_while(|l| !l.starts_with("Conditions:"))
        .find(|l| l.trim_start().starts_with("PodScheduled"))
        .unwrap_or_default();
    assert!(scheduled.contains("False"), "{described}");
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    let pod = pods.get(&pod_name).await.expect("the pod");
    let condition = pod
        .status
        .and_then(|s| s.conditions)
        .and_then(|cs| cs.into_iter().find(|c| c.type_ == "PodScheduled"))
        .expect("PodScheduled");
    assert_eq!(condition.reason.as_deref(), Some("Unschedulable"));
    assert_eq!(condition.message.as_deref(), Some(want));
    berth.terminate_cleanly().await;
}
