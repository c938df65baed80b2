//! Gang scheduling end to end (issue 7, "Done when"): the Coscheduling plugin and the
//! PodGroup controller through `berth run`.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use crate::harness::{
    Berth, BerthOptions, Cluster, LEASE_NAME, WAIT, condition, conditions_summary, eventually,
    node, pod, profile, within,
};

/// The gang profile of `examples/gang`, with a calm group backoff.
pub(crate) fn gang_profile() -> Value {
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
pub(crate) fn member_bindings(cluster: &Cluster, names: &[&str]) -> Vec<(String, usize)> {
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
    start_gang_with(cluster, BerthOptions::default(), gang_profile()).await
}

pub(crate) async fn start_gang_with(
    cluster: &Cluster,
    options: BerthOptions,
    profile: Value,
) -> Berth {
    let mut berth = Berth::spawn(cluster, options);
    berth.wait_ready().await;
    cluster.create_profile(profile).await;
    cluster.wait_profile_ready("gang", WAIT).await;
    berth
}

/// Creates PodGroup `default/<name>` with `spec`.
async fn create_pod_group(cluster: &Cluster, name: &str, spec: Value) {
    let group: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }))
    .expect("a PodGroup");
    within(
        "creating a PodGroup",
        WAIT,
        pod_groups(cluster).create(&PostParams::default(), &group),
    )
    .await
    .unwrap_or_else(|e| panic!("creating PodGroup {name}: {e}"));
}

/// The pod's `PodScheduled=False` message, once it has one.
async fn unschedulable_message(cluster: &Cluster, name: &str) -> String {
    eventually(
        &format!("`{name}` has PodScheduled=False"),
        WAIT,
        || async {
            let p = cluster.pod(name).await;
            let conditions = p.status.and_then(|s| s.conditions).unwrap_or_default();
            match conditions.iter().find(|c| c.type_ == "PodScheduled") {
                Some(c) if c.status == "False" && c.reason.as_deref() == Some("Unschedulable") => {
                    Ok(c.message.clone().unwrap_or_default())
                }
                _ => Err(format!("{conditions:?}")),
            }
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gang_of_4_with_room_for_3_binds_nothing_until_a_node_fits() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    cluster.create_node(node("node-a", "3", "16Gi")).await;
    let mut berth = start_gang(&cluster).await;

    create_pod_group(
        &cluster,
        "train",
        json!({"minMember": 4, "scheduleTimeoutSeconds": 2}),
    )
    .await;
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

    // Every member says why it waits; the members that were held at Permit name their
    // group.
    let mut messages = Vec::new();
    for name in names {
        messages.push((name, unschedulable_message(&cluster, name).await));
    }
    assert!(messages.iter().all(|(_, m)| !m.is_empty()), "{messages:#?}");
    assert!(
        messages.iter().any(|(_, m)| m.contains("default/train")),
        "no member names its group: {messages:#?}"
    );

    // A node with room for the 4th: the whole group is bound, once each.
    cluster.create_node(node("node-b", "2", "16Gi")).await;
    cluster.wait_bound(&names, WAIT).await;
    let bound = member_bindings(&cluster, &names);
    assert!(
        bound.iter().all(|(_, n)| *n == 1),
        "successful bindings per member: {bound:?}"
    );
    // kwok starts the bound members, so the group goes on from Scheduled to Running.
    eventually("PodGroup train reaches phase Running", WAIT, || async {
        let pg = pod_group(&cluster, "train").await;
        if pg["status"]["phase"] == "Running"
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
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    cluster.create_node(node("node-a", "4", "16Gi")).await;
    let mut berth = start_gang(&cluster).await;

    // A real Job: its controller creates the members (and would garbage-collect pods
    // that name a Job that does not exist).
    let mut template = member("ignored", "job-a");
    template["metadata"]["annotations"] = json!({"berth.dev/min-member": "3"});
    let job = cluster.create_job("job-a", &template, 3).await;
    let job_uid = job["metadata"]["uid"].as_str().expect("a uid").to_string();
    let names: Vec<String> = eventually("the Job creates its 3 pods", WAIT, || async {
        let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), "default");
        let list = pods
            .list(&ListParams::default().labels("berth.dev/pod-group=job-a"))
            .await
            .map_err(|e| e.to_string())?;
        let names: Vec<String> = list.items.iter().map(|p| p.name_any()).collect();
        if names.len() == 3 {
            Ok(names)
        } else {
            Err(format!("{names:?}"))
        }
    })
    .await;
    let names: Vec<&str> = names.iter().map(String::as_str).collect();

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
    // kwok runs the members and finishes them (Job pods): the group ends Finished.
    eventually("PodGroup job-a reaches phase Finished", WAIT, || async {
        let pg = pod_group(&cluster, "job-a").await;
        if pg["status"]["phase"] == "Finished" {
            Ok(())
        } else {
            Err(conditions_summary(&pg))
        }
    })
    .await;
    berth.terminate_cleanly().await;
}

/// Two groups of 4 one-cpu members and room for 4: the older group is bound in full, the
/// other binds nothing and holds nothing — once the first group's pods are gone, it is
/// bound in full. Two seeds, so tie-breaks differ between runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_groups_competing_for_room_for_one_bind_one_fully_without_deadlock() {
    for seed in [1, 7] {
        let Some(cluster) = Cluster::start().await else {
            return;
        };
        cluster.create_node(node("node-a", "2", "16Gi")).await;
        cluster.create_node(node("node-b", "2", "16Gi")).await;
        let mut berth = start_gang_with(&cluster, BerthOptions::seed(seed), gang_profile()).await;
        create_pod_group(&cluster, "alpha", json!({"minMember": 4})).await;
        create_pod_group(&cluster, "beta", json!({"minMember": 4})).await;
        let alpha = ["alpha-0", "alpha-1", "alpha-2", "alpha-3"];
        let beta = ["beta-0", "beta-1", "beta-2", "beta-3"];
        // Interleaved, beta first: the queue, not the arrival order, keeps groups together.
        // Beta's last member comes after alpha's: a group complete before the other exists
        // in full may be bound at once, and bound pods are never taken back (there is no
        // preemption), so beta-3 before alpha-3 would let a fast scheduler bind beta, which
        // is right but not what this test is about.
        for (b, a) in beta[..3].iter().zip(&alpha[..3]) {
            cluster.create_pod(member(b, "beta")).await;
            cluster.create_pod(member(a, "alpha")).await;
        }
        cluster.create_pod(member(alpha[3], "alpha")).await;
        cluster.create_pod(member(beta[3], "beta")).await;

        cluster.wait_bound(&alpha, WAIT).await;
        cluster
            .assert_stay_unbound(&beta, Duration::from_secs(2))
            .await;
        assert!(
            member_bindings(&cluster, &beta)
                .iter()
                .all(|(_, n)| *n == 0),
            "seed {seed}: a beta member was bound"
        );

        // Beta held nothing: with alpha gone it fits, and is bound whole.
        for name in alpha {
            cluster.delete_pod(name).await;
        }
        cluster.wait_bound(&beta, WAIT).await;
        let bound = member_bindings(&cluster, &beta);
        assert!(
            bound.iter().all(|(_, n)| *n == 1),
            "seed {seed}: successful bindings per beta member: {bound:?}"
        );
        berth.terminate_cleanly().await;
    }
}

/// A group that cannot complete is tried whole by its pod-group cycle and holds no room:
/// a pod without a group created meanwhile is bound, and the members say which minimum
/// the group cannot reach.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_that_cannot_complete_holds_no_room() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    cluster.create_node(node("node-a", "2", "16Gi")).await;
    let mut berth = start_gang(&cluster).await;
    create_pod_group(&cluster, "job", json!({"minMember": 3})).await;
    let names = ["job-0", "job-1", "job-2"];
    for name in names {
        let mut p = member(name, "job");
        if name == "job-2" {
            // Fits nowhere: the group never completes.
            p["spec"]["nodeSelector"] = json!({"disk": "nvme"});
        }
        cluster.create_pod(p).await;
    }
    // job-2 is told its own reason once the group was tried with all three.
    eventually("job-2 was tried with its group", WAIT, || async {
        let message = unschedulable_message(&cluster, "job-2").await;
        if message.contains("node(s) didn't match Pod's node affinity/selector") {
            Ok(())
        } else {
            Err(message)
        }
    })
    .await;
    // The two members that fit hold nothing: a 2-cpu pod takes the whole node.
    let mut loner = pod("loner", "gang", "2", "128Mi");
    loner["metadata"]["labels"] = json!({});
    cluster.create_pod(loner).await;
    cluster.wait_bound(&["loner"], WAIT).await;
    cluster
        .assert_stay_unbound(&names, Duration::from_secs(1))
        .await;
    // Each retry of the group stops where minMember is out of reach: the member tried
    // last says so, the one before it may name its own reason (the loner's node is full).
    let mut messages = Vec::new();
    for name in ["job-0", "job-1"] {
        messages.push(unschedulable_message(&cluster, name).await);
    }
    assert!(
        messages
            .iter()
            .any(|m| m.contains("pod group default/job cannot reach minMember (3)")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .all(|m| m.contains("cannot reach minMember (3)") || m.contains("Insufficient cpu")),
        "{messages:?}"
    );
    berth.terminate_cleanly().await;
}

/// A Coscheduling gang's dialect in the live tests: its pod label and the API of its
/// PodGroup.
pub(crate) struct GangDialect {
    pub(crate) label: &'static str,
    pub(crate) api_version: &'static str,
}

/// A gang of three 1-cpu members at high priority, whose PodGroup `train` (minMember 3)
/// `create_group` makes and returns the uid of, on two 2-cpu nodes filled by four 1-cpu
/// pods of low priority: the gang preempts as a unit (workload-aware preemption through
/// the pod-group cycle). Exactly three pods are evicted, each by the PodGroup (upstream's
/// note and related object), the gang binds whole, and the workload-preemption metrics
/// see one unit decision.
pub(crate) async fn a_gang_preempts_as_a_unit(
    cluster: &Cluster,
    dialect: GangDialect,
    create_group: impl AsyncFnOnce(&Cluster) -> String,
) {
    for name in ["n1", "n2"] {
        cluster.create_node(node(name, "2", "16Gi")).await;
    }
    let mut berth = start_gang(cluster).await;
    let group = "train";
    let uid = create_group(cluster).await;
    let low = cluster.ensure_priority_class(10).await;
    let high = cluster.ensure_priority_class(1000).await;
    let batch = ["batch-0", "batch-1", "batch-2", "batch-3"];
    for name in batch {
        let mut p = pod(name, "gang", "1", "128Mi");
        p["spec"]["priorityClassName"] = json!(low);
        cluster.create_pod(p).await;
    }
    cluster.wait_bound(&batch, WAIT).await;
    let members = ["train-0", "train-1", "train-2"];
    for name in members {
        let mut p = pod(name, "gang", "1", "128Mi");
        p["metadata"]["labels"] = json!({dialect.label: group});
        p["spec"]["priorityClassName"] = json!(high);
        cluster.create_pod(p).await;
    }
    cluster.wait_bound(&members, WAIT).await;
    let victims = eventually("three Preempted events", WAIT, || async {
        let mut victims = Vec::new();
        for name in batch {
            let events = cluster.events_for(name).await;
            if let Some(e) = events
                .iter()
                .find(|e| e.reason.as_deref() == Some("Preempted"))
            {
                victims.push((name, e.clone()));
            }
        }
        if victims.len() == 3 {
            Ok(victims)
        } else {
            Err(format!("{} so far", victims.len()))
        }
    })
    .await;
    for (victim, event) in &victims {
        assert_eq!(
            event.note.as_deref(),
            Some(format!("Preempted by podgroup {uid} on node cluster").as_str()),
            "{victim}"
        );
        let related = event.related.clone().expect("the preemptor");
        assert_eq!(
            (
                related.api_version.as_deref(),
                related.kind.as_deref(),
                related.name.as_deref()
            ),
            (Some(dialect.api_version), Some("PodGroup"), Some(group)),
            "{victim}"
        );
    }
    let scraped = berth.scrape().await;
    let value = |series: &str| scraped.value(series);
    assert_eq!(value("scheduler_workload_preemption_victims_count"), 1.0);
    assert_eq!(value("scheduler_workload_preemption_victims_sum"), 3.0);
    // No member preempted for itself.
    assert_eq!(value("scheduler_preemption_victims_count"), 0.0);
    berth.terminate_cleanly().await;
}

/// The Job-less course of issue 31 through berth's own PodGroup: the gang preempts as a
/// unit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_berth_gang_preempts_as_a_unit() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    let dialect = GangDialect {
        label: "berth.dev/pod-group",
        api_version: "berth.dev/v1alpha1",
    };
    a_gang_preempts_as_a_unit(&cluster, dialect, async |cluster: &Cluster| {
        create_pod_group(cluster, "train", json!({"minMember": 3})).await;
        pod_group(cluster, "train").await["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    })
    .await;
}

/// The first half of the Job-of-8 course: on four 2-cpu nodes (the caller's), a 1-cpu
/// blocker is bound, then Job `train` of 8 one-cpu members made from `template`, whose
/// group (minMember 8, the caller's) cannot be whole. The members' names, once the Job
/// controller made them all.
pub(crate) async fn blocked_job_of_eight(cluster: &Cluster, template: &Value) -> Vec<String> {
    cluster
        .create_pod(pod("blocker", "gang", "1", "128Mi"))
        .await;
    cluster.wait_bound(&["blocker"], WAIT).await;
    cluster.create_job("train", template, 8).await;
    eventually("the Job controller made 8 pods", WAIT, || async {
        let pods = cluster.job_pods("train").await;
        if pods.len() == 8 {
            Ok(pods.into_keys().collect())
        } else {
            Err(format!("{pods:?}"))
        }
    })
    .await
}

/// The second half: nothing binds while the gang cannot be whole; once the blocker
/// leaves, all 8 bind, each once, two per node.
pub(crate) async fn binds_whole_once_the_blocker_leaves(cluster: &Cluster, names: &[&str]) {
    cluster
        .assert_stay_unbound(names, Duration::from_secs(4))
        .await;
    let bound = member_bindings(cluster, names);
    assert!(
        bound.iter().all(|(_, n)| *n == 0),
        "successful bindings while the gang cannot be whole: {bound:?}"
    );
    cluster.delete_pod("blocker").await;
    let placed = cluster.wait_bound(names, WAIT).await;
    let mut per_node: std::collections::BTreeMap<&str, usize> = Default::default();
    for node in placed.values() {
        *per_node.entry(node).or_default() += 1;
    }
    assert_eq!(per_node.values().copied().collect::<Vec<_>>(), [2, 2, 2, 2]);
    let bound = member_bindings(cluster, names);
    assert!(
        bound.iter().all(|(_, n)| *n == 1),
        "successful bindings per member: {bound:?}"
    );
}

/// A Job of 8 with berth's PodGroup binds all 8 or none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_berth_gang_of_eight_binds_whole_or_not_at_all() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    for n in ["n1", "n2", "n3", "n4"] {
        cluster.create_node(node(n, "2", "8Gi")).await;
    }
    let mut berth = start_gang(&cluster).await;
    create_pod_group(&cluster, "train", json!({"minMember": 8})).await;
    let members = blocked_job_of_eight(&cluster, &member("ignored", "train")).await;
    let names: Vec<&str> = members.iter().map(String::as_str).collect();
    binds_whole_once_the_blocker_leaves(&cluster, &names).await;
    berth.terminate_cleanly().await;
}

/// A replica that becomes leader creates the implicit groups of pods it saw as a
/// follower, without waiting for those pods to change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_leader_creates_the_implicit_groups_of_pods_seen_as_follower() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    // Someone else leads for the next few seconds and then stops renewing.
    let now = k8s_openapi::jiff::Timestamp::now();
    let micro = |t: k8s_openapi::jiff::Timestamp| t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
    let (status, body) = cluster
        .raw(
            "POST",
            &format!(
                "/apis/coordination.k8s.io/v1/namespaces/{}/leases",
                cluster.lease_namespace()
            ),
            &json!({
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": LEASE_NAME, "namespace": cluster.lease_namespace()},
                "spec": {
                    "holderIdentity": "ghost",
                    "leaseDurationSeconds": 6,
                    "acquireTime": micro(now),
                    "renewTime": micro(now),
                },
            }),
        )
        .await;
    assert_eq!(status, 201, "creating the ghost's Lease: {body}");
    let mut berth = Berth::spawn(&cluster, BerthOptions::leader("r1"));
    berth.wait_ready().await;

    let names = ["late-0", "late-1"];
    for name in names {
        let mut p = member(name, "late");
        p["metadata"]["annotations"] = json!({"berth.dev/min-member": "2"});
        cluster.create_pod(p).await;
    }
    // A follower creates nothing.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        cluster.lease_holder(LEASE_NAME).await.as_deref(),
        Some("ghost")
    );
    assert!(
        pod_group(&cluster, "late").await.is_null(),
        "a follower created PodGroup late"
    );

    // The ghost's lease runs out; r1 leads and catches up, the pods unchanged.
    let group = eventually(
        "PodGroup late is created by the new leader",
        WAIT,
        || async {
            let pg = pod_group(&cluster, "late").await;
            if pg.is_null() {
                Err(format!(
                    "no PodGroup late; lease holder {:?}",
                    cluster.lease_holder(LEASE_NAME).await
                ))
            } else {
                Ok(pg)
            }
        },
    )
    .await;
    assert_eq!(group["spec"]["minMember"], 2, "{group}");
    assert_eq!(
        cluster.lease_holder(LEASE_NAME).await.as_deref(),
        Some("r1")
    );
    berth.terminate_cleanly().await;
}
