//! Lists that keep failing, on the real cluster: a kind berth may not list (the chart's
//! ClusterRole without `csinodes`: a real 403) and a kind the server does not serve (the
//! PodGroup CRD deleted: a real 404). berth retries each as client-go's reflector does —
//! 800 ms doubling to 30 s, jittered by up to +100 % — instead of every second, and
//! `/readyz` names the kind it still waits for.

use std::time::Duration;

use berth::operator::USER_AGENT;
use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, PostParams};
use tokio::time::Instant;

use crate::harness::{Berth, BerthOptions, Cluster, RELEASE, WAIT, eventually, within};

/// What `/readyz` says while csinodes cannot be listed.
const WAITING: &str = "caches not synced: waiting for the first list of csinodes";

/// How long berth runs against the failing lists.
const WINDOW: Duration = Duration::from_secs(40);

/// The most list attempts one retrying stream can make within `window` from its first:
/// the first, then one per wait while the shortest waits (800 ms doubling, no jitter)
/// still fit.
fn most_attempts(window: Duration) -> usize {
    let (mut attempts, mut elapsed, mut wait) = (1, Duration::ZERO, Duration::from_millis(800));
    while elapsed + wait <= window {
        elapsed += wait;
        attempts += 1;
        wait = (wait * 2).min(Duration::from_secs(30));
    }
    attempts
}

/// berth's list requests of `resource`, with their status codes.
fn lists_of(cluster: &Cluster, resource: &str) -> Vec<u16> {
    cluster
        .requests()
        .into_iter()
        .filter(|r| {
            r.user_agent.as_deref() == Some(USER_AGENT)
                && r.verb == "list"
                && r.resource == resource
        })
        .map(|r| r.status)
        .collect()
}

#[test]
fn the_bound_follows_the_reflector_schedule() {
    // 0, 0.8, 2.4, 5.6, 12, 24.8 s: six attempts in 40 s; the seventh needs 50.4 s.
    assert_eq!(most_attempts(Duration::from_secs(40)), 6);
    assert_eq!(most_attempts(Duration::from_millis(50_400)), 7);
    assert_eq!(most_attempts(Duration::from_millis(700)), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_lists_back_off_as_the_reflector_does_and_readyz_names_the_kind() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    let roles: Api<ClusterRole> = Api::all(cluster.client.clone());
    let mut role = within("reading the chart's ClusterRole", WAIT, roles.get(RELEASE))
        .await
        .expect("the chart's ClusterRole");
    for rule in role.rules.iter_mut().flatten() {
        if let Some(resources) = rule.resources.as_mut() {
            resources.retain(|r| r != "csinodes");
        }
    }
    within(
        "replacing the ClusterRole",
        WAIT,
        roles.replace(RELEASE, &PostParams::default(), &role),
    )
    .await
    .expect("the ClusterRole without csinodes");
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client.clone());
    within(
        "deleting the PodGroup CRD",
        WAIT,
        crds.delete("podgroups.berth.dev", &DeleteParams::default()),
    )
    .await
    .expect("the PodGroup CRD deleted");
    eventually("the PodGroup CRD is gone", WAIT, || async {
        match crds.get_opt("podgroups.berth.dev").await {
            Ok(None) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    let started = Instant::now();
    let mut berth = Berth::spawn(&cluster, BerthOptions::default());
    // Once the other kinds are listed, only csinodes is left.
    eventually("/readyz names only csinodes", WAIT, || async {
        match berth.get("/readyz").await? {
            (503, body) if body.trim_end() == WAITING => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    tokio::time::sleep(WINDOW.saturating_sub(started.elapsed())).await;
    berth.assert_running();

    let bound = most_attempts(WINDOW);
    let csinodes = lists_of(&cluster, "csinodes");
    assert!(
        csinodes.iter().all(|&status| status == 403),
        "every csinodes list is refused: {csinodes:?}"
    );
    assert!(
        (3..=bound).contains(&csinodes.len()),
        "csinodes listed {} times in {WINDOW:?} (at most {bound} with the reflector's backoff)",
        csinodes.len()
    );
    // Two streams list PodGroups: the PodGroup controller and the cache the gang
    // plugins read.
    let podgroups = lists_of(&cluster, "podgroups");
    assert!(
        podgroups.iter().all(|&status| status == 404),
        "every podgroups list is not found: {podgroups:?}"
    );
    assert!(
        (3..=2 * bound).contains(&podgroups.len()),
        "podgroups listed {} times in {WINDOW:?} (at most {} with the reflector's backoff)",
        podgroups.len(),
        2 * bound
    );
    let (code, body) = berth.get("/readyz").await.expect("/readyz answers");
    assert_eq!((code, body.trim_end()), (503, WAITING), "still waiting");
    eprintln!(
        "in {WINDOW:?}: csinodes listed {} times, podgroups {} times (two streams)",
        csinodes.len(),
        podgroups.len()
    );
}
