//! The PodGroup controller against a real kube-apiserver 1.37 with etcd
//! (`crates/kube-cluster`, berth's CRDs installed): status and phases follow the
//! member pods (bound through the binding subresource, phases written through the status
//! subresource as a kubelet would), events, implicit groups, and follower replicas that
//! write nothing.

use std::time::Duration;

use berth::api::{PodGroup, PodGroupPhase, PodGroupStatus};
use berth::operator::podgroups;
use berth::operator::types::OperatorState;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::events::Reporter;
use kube_cluster::KubeCluster;
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};

mod support;

const WAIT: Duration = Duration::from_secs(10);

struct Harness {
    cluster: KubeCluster,
    groups: Api<PodGroup>,
    pods: Api<Pod>,
    events: Api<Event>,
    _leader: watch::Sender<bool>,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Harness {
    /// `None` after a loud skip where Go is missing (never on CI).
    async fn start(leader: bool) -> Option<Harness> {
        let cluster = support::kube::start_apiserver_or_skip(&support::kube::test_name()).await?;
        let client = cluster.admin_client().await.expect("an admin client");
        support::kube::install_crds(&client).await;
        support::kube::create_default_service_account(&client, "default").await;
        let (leader_tx, leader_rx) = watch::channel(leader);
        let (_, synced_rx) = watch::channel(Vec::new());
        let state = OperatorState {
            leader: leader_rx,
            unlisted: synced_rx,
            serving: Default::default(),
            workloads: Default::default(),
            pod_groups: Default::default(),
            volumes: Default::default(),
            disruption_budgets: Default::default(),
            device_resources: Default::default(),
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(podgroups::run(
            client.clone(),
            state,
            Reporter {
                controller: "berth".into(),
                instance: Some("test".into()),
            },
            async move {
                let _ = stopped.await;
            },
        ));
        Some(Harness {
            cluster,
            groups: Api::namespaced(client.clone(), "default"),
            pods: Api::namespaced(client.clone(), "default"),
            events: Api::namespaced(client, "default"),
            _leader: leader_tx,
            stop: Some(stop),
            task,
        })
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = tokio::time::timeout(WAIT, self.task).await;
    }

    async fn create_group(&self, name: &str, min_member: i32, timeout: Option<i32>) {
        let mut spec = json!({"minMember": min_member});
        if let Some(seconds) = timeout {
            spec["scheduleTimeoutSeconds"] = json!(seconds);
        }
        let group: PodGroup = serde_json::from_value(json!({
            "apiVersion": "berth.dev/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": spec,
        }))
        .expect("a PodGroup");
        self.groups
            .create(&PostParams::default(), &group)
            .await
            .expect("the API server accepts the PodGroup");
    }

    async fn create_pod(&self, name: &str, metadata: Value) {
        let mut meta = metadata;
        meta["name"] = json!(name);
        meta["namespace"] = json!("default");
        let pod: Pod = serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": {"containers": [{"name": "main", "image": "busybox"}]},
        }))
        .expect("a Pod");
        self.pods
            .create(&PostParams::default(), &pod)
            .await
            .expect("the API server accepts the pod");
    }

    async fn member(&self, name: &str, group: &str) {
        self.create_pod(name, json!({"labels": {"berth.dev/pod-group": group}}))
            .await;
    }

    async fn bind(&self, pod: &str, node: &str) {
        let binding = json!({
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod, "namespace": "default"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        });
        self.pods
            .create_subresource::<Value, Value>("binding", pod, &PostParams::default(), &binding)
            .await
            .expect("the pod binds");
    }

    /// Writes the pod's phase through the status subresource, as a kubelet does.
    async fn set_phase(&self, pod: &str, phase: &str) {
        self.pods
            .patch_status(
                pod,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"phase": phase}})),
            )
            .await
            .expect("the pod status is patched");
    }

    async fn status(&self, group: &str) -> Option<PodGroupStatus> {
        self.groups
            .get_opt(group)
            .await
            .expect("the PodGroup can be read")
            .and_then(|g| g.status)
    }

    /// Waits until the group's status satisfies `check`; returns it.
    async fn wait_for(
        &self,
        group: &str,
        what: &str,
        check: impl Fn(&PodGroupStatus) -> bool,
    ) -> PodGroupStatus {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let status = self.status(group).await;
            if let Some(status) = status.as_ref().filter(|s| check(s)) {
                return status.clone();
            }
            if tokio::time::Instant::now() > deadline {
                panic!("PodGroup {group}: {what} not reached within {WAIT:?}; status {status:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn wait_phase(&self, group: &str, phase: PodGroupPhase) -> PodGroupStatus {
        self.wait_for(group, &format!("phase {phase:?}"), |s| {
            s.phase == Some(phase)
        })
        .await
    }

    async fn events_for(&self, name: &str, reason: &str) -> Vec<Event> {
        self.events
            .list(&ListParams::default())
            .await
            .expect("events can be listed")
            .items
            .into_iter()
            .filter(|e| {
                e.reason.as_deref() == Some(reason)
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
            })
            .collect()
    }

    async fn wait_event(&self, name: &str, reason: &str) -> Event {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Some(event) = self.events_for(name, reason).await.into_iter().next() {
                return event;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no {reason} event for {name} within {WAIT:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn scheduled_condition(status: &PodGroupStatus) -> (String, String, String) {
    let condition = status
        .conditions
        .iter()
        .find(|c| c.type_ == podgroups::SCHEDULED)
        .expect("a Scheduled condition");
    (
        condition.status.clone(),
        condition.reason.clone(),
        condition.message.clone(),
    )
}

#[tokio::test]
async fn phases_follow_member_pods_to_finished() {
    let Some(h) = Harness::start(true).await else {
        return;
    };
    h.create_group("train", 4, None).await;
    let status = h.wait_phase("train", PodGroupPhase::Pending).await;
    assert_eq!(status.observed_generation, Some(1));
    let (flag, reason, message) = scheduled_condition(&status);
    assert_eq!((flag.as_str(), reason.as_str()), ("False", "NotEnoughPods"));
    assert!(
        message.starts_with("0/4 pods scheduled; waiting for 4 more"),
        "{message}"
    );
    assert!(status.schedule_start_time.is_none(), "no member seen yet");

    for i in 0..4 {
        h.member(&format!("train-{i}"), "train").await;
    }
    let status = h
        .wait_for("train", "a start time", |s| s.schedule_start_time.is_some())
        .await;
    assert_eq!(status.phase, Some(PodGroupPhase::Pending));
    let started = status.schedule_start_time.clone();

    for i in 0..3 {
        h.bind(&format!("train-{i}"), "node-a").await;
    }
    let status = h
        .wait_for("train", "3 scheduled", |s| s.scheduled == 3)
        .await;
    assert_eq!(status.phase, Some(PodGroupPhase::Scheduling));
    let (flag, reason, message) = scheduled_condition(&status);
    assert_eq!((flag.as_str(), reason.as_str()), ("False", "NotEnoughPods"));
    assert_eq!(message, "3/4 pods scheduled; waiting for 1 more");
    assert!(h.events_for("train", "Scheduled").await.is_empty());

    h.bind("train-3", "node-b").await;
    let status = h.wait_phase("train", PodGroupPhase::Scheduled).await;
    assert_eq!(status.scheduled, 4);
    assert_eq!(
        status.schedule_start_time, started,
        "the start time is kept"
    );
    let (flag, reason, _) = scheduled_condition(&status);
    assert_eq!(
        (flag.as_str(), reason.as_str()),
        ("True", "MinMemberScheduled")
    );
    let event = h.wait_event("train", "Scheduled").await;
    assert_eq!(event.type_.as_deref(), Some("Normal"));

    for i in 0..4 {
        h.set_phase(&format!("train-{i}"), "Running").await;
    }
    let status = h.wait_phase("train", PodGroupPhase::Running).await;
    assert_eq!(status.running, 4);

    for i in 0..4 {
        h.set_phase(&format!("train-{i}"), "Succeeded").await;
    }
    let status = h.wait_phase("train", PodGroupPhase::Finished).await;
    assert_eq!((status.running, status.succeeded), (0, 4));
    assert_eq!(
        h.events_for("train", "Scheduled").await.len(),
        1,
        "one Scheduled event"
    );
    h.stop().await;
}

#[tokio::test]
async fn a_failed_member_fails_the_group() {
    let Some(h) = Harness::start(true).await else {
        return;
    };
    h.create_group("mpi", 2, None).await;
    // The compat label is honoured.
    for i in 0..2 {
        h.create_pod(
            &format!("mpi-{i}"),
            json!({"labels": {"scheduling.x-k8s.io/pod-group": "mpi"}}),
        )
        .await;
        h.bind(&format!("mpi-{i}"), "node-a").await;
        h.set_phase(&format!("mpi-{i}"), "Running").await;
    }
    h.wait_phase("mpi", PodGroupPhase::Running).await;
    h.set_phase("mpi-1", "Failed").await;
    let status = h.wait_phase("mpi", PodGroupPhase::Failed).await;
    assert_eq!((status.running, status.failed), (1, 1));
    h.stop().await;
}

#[tokio::test]
async fn the_condition_says_why_members_wait() {
    let Some(h) = Harness::start(true).await else {
        return;
    };
    h.create_group("gang", 3, Some(1)).await;
    h.member("gang-0", "gang").await;
    h.member("gang-1", "gang").await;
    h.bind("gang-0", "node-a").await;
    h.pods
        .patch_status(
            "gang-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": [{
                "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": "0/3 nodes are available: 3 Insufficient cpu.",
            }]}})),
        )
        .await
        .expect("the pod condition is patched");
    let status = h
        .wait_for("gang", "the scheduler's reason", |s| {
            scheduled_condition(s).2.contains("Insufficient cpu")
        })
        .await;
    assert_eq!(status.phase, Some(PodGroupPhase::Pending));
    assert_eq!(
        scheduled_condition(&status).2,
        "1/3 pods scheduled; waiting for 2 more; only 2 of 3 pods exist (1 missing): \
         pod gang-1: 0/3 nodes are available: 3 Insufficient cpu."
    );
    // scheduleTimeoutSeconds 1: the group times out.
    let event = h.wait_event("gang", "Timeout").await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    h.stop().await;
}

#[tokio::test]
async fn annotated_pods_get_an_implicit_group_owned_by_their_job() {
    let Some(h) = Harness::start(true).await else {
        return;
    };
    let owner = json!([{
        "apiVersion": "batch/v1", "kind": "Job", "name": "train",
        "uid": "0b6c1d3e-job", "controller": true, "blockOwnerDeletion": true,
    }]);
    for i in 0..3 {
        h.create_pod(
            &format!("train-{i}"),
            json!({
                "labels": {"berth.dev/pod-group": "train-job"},
                "annotations": {"berth.dev/min-member": "3"},
                "ownerReferences": owner,
            }),
        )
        .await;
    }
    let status = h.wait_phase("train-job", PodGroupPhase::Pending).await;
    assert_eq!(status.scheduled, 0);
    let group = h.groups.get("train-job").await.expect("the implicit group");
    assert_eq!(group.spec.min_member, 3);
    let owners = group.metadata.owner_references.unwrap_or_default();
    assert_eq!(owners.len(), 1);
    assert_eq!(
        (owners[0].kind.as_str(), owners[0].name.as_str()),
        ("Job", "train")
    );
    assert_eq!(owners[0].uid, "0b6c1d3e-job");

    // Without a controller owner: a group without owner.
    h.create_pod(
        "solo",
        json!({"labels": {"berth.dev/pod-group": "solo"},
               "annotations": {"berth.dev/min-member": "1"}}),
    )
    .await;
    h.wait_phase("solo", PodGroupPhase::Pending).await;
    let solo = h.groups.get("solo").await.expect("the implicit group");
    assert!(
        solo.metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    );

    // An invalid annotation: an event on the pod, no group.
    h.create_pod(
        "bad",
        json!({"labels": {"berth.dev/pod-group": "bad-group"},
               "annotations": {"berth.dev/min-member": "three"}}),
    )
    .await;
    let event = h.wait_event("bad", "InvalidMinMember").await;
    assert!(
        event.note.unwrap_or_default().contains("\"three\""),
        "the note names the value"
    );
    assert!(h.groups.get_opt("bad-group").await.expect("get").is_none());
    h.stop().await;
}

#[tokio::test]
async fn a_follower_writes_nothing() {
    let Some(h) = Harness::start(false).await else {
        return;
    };
    h.create_group("train", 1, None).await;
    h.create_pod(
        "implicit-0",
        json!({"labels": {"berth.dev/pod-group": "implicit"},
               "annotations": {"berth.dev/min-member": "1"}}),
    )
    .await;
    h.member("train-0", "train").await;
    h.bind("train-0", "node-a").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(h.status("train").await.is_none(), "no status written");
    assert!(h.groups.get_opt("implicit").await.expect("get").is_none());
    let writes: Vec<_> = support::kube::requests(h.cluster.audit_log())
        .into_iter()
        .filter(|r| {
            r.resource.starts_with("podgroups")
                && !["get", "list", "watch"].contains(&r.verb.as_str())
        })
        .collect();
    // The one podgroup create is the test's own.
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert!(h.events_for("train", "Scheduled").await.is_empty());
    h.stop().await;
}
