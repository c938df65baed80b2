//! Node, Pod and Namespace watches feeding the scheduling loop, and the watches that keep
//! the listers plugins read (workloads, PodGroups, PodDisruptionBudgets).
//!
//! Each watch is a kube-runtime watcher (list, then watch from the list's
//! resourceVersion, relist on 410 Gone, reconnect with backoff): no polling. Objects are
//! forwarded as [`ClusterChange`]s as they arrive. A (re)list ends with
//! [`ClusterChange::Listed`] carrying every key it delivered, so the loop forgets objects
//! deleted while the watch was down.

use std::collections::{HashMap, HashSet};

use futures::{Stream, StreamExt, TryStreamExt};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, ReplicationController, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, Resource, ResourceExt};
use tokio::sync::mpsc::UnboundedSender;
use tracing::{debug, warn};

use crate::api::PodGroup;
use crate::cluster::{DisruptionBudgets, PodGroups, Workloads, pod_key};

use super::legacy_pods::{LegacyPod, SCHEDULING_GROUP_MINOR, minor_release};
use super::types::{ClusterChange, LoopMessage};

/// Starts the Node, Pod and Namespace watches; they run until the loop's receiver is dropped.
pub fn spawn(client: Client, tx: UnboundedSender<LoopMessage>) -> Vec<tokio::task::JoinHandle<()>> {
    let nodes = watcher(Api::<Node>::all(client.clone()), watcher::Config::default());
    let namespaces = watcher(
        Api::<Namespace>::all(client.clone()),
        watcher::Config::default(),
    );
    vec![
        tokio::spawn(forward(
            nodes,
            tx.clone(),
            "nodes",
            node_key,
            ClusterChange::NodeApplied,
            ClusterChange::NodeDeleted,
        )),
        tokio::spawn(watch_pods(client, tx.clone())),
        tokio::spawn(forward(
            namespaces,
            tx,
            "namespaces",
            named_key,
            ClusterChange::NamespaceApplied,
            ClusterChange::NamespaceDeleted,
        )),
    ]
}

/// Starts the Service, ReplicationController, ReplicaSet and StatefulSet watches that keep
/// `workloads` current (PodTopologySpread's default spreading reads them directly, as
/// upstream reads its informer listers). A relist replaces the kind's entries.
pub fn spawn_workloads(
    client: Client,
    workloads: Arc<Workloads>,
) -> Vec<tokio::task::JoinHandle<()>> {
    vec![
        tokio::spawn(keep(
            watcher(
                Api::<Service>::all(client.clone()),
                watcher::Config::default(),
            ),
            workloads.clone(),
            Workloads::apply_service,
            Workloads::delete_service,
        )),
        tokio::spawn(keep(
            watcher(
                Api::<ReplicationController>::all(client.clone()),
                watcher::Config::default(),
            ),
            workloads.clone(),
            Workloads::apply_replication_controller,
            Workloads::delete_replication_controller,
        )),
        tokio::spawn(keep(
            watcher(
                Api::<ReplicaSet>::all(client.clone()),
                watcher::Config::default(),
            ),
            workloads.clone(),
            Workloads::apply_replica_set,
            Workloads::delete_replica_set,
        )),
        tokio::spawn(keep(
            watcher(Api::<StatefulSet>::all(client), watcher::Config::default()),
            workloads,
            Workloads::apply_stateful_set,
            Workloads::delete_stateful_set,
        )),
    ]
}

/// Starts the PodGroup watch: keeps `pod_groups` current for Coscheduling and tells the
/// loop, so pods waiting for their group are retried.
pub fn spawn_pod_groups(
    client: Client,
    pod_groups: Arc<PodGroups>,
    tx: UnboundedSender<LoopMessage>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(group_watch::<PodGroup>(
        client,
        pod_groups,
        tx,
        PodGroups::apply,
        PodGroups::delete,
    ))
}

/// The watch of one PodGroup kind `K` (berth's or scheduler-plugins'): each change goes
/// into `pod_groups` through `apply`/`delete`, and the loop is told.
pub fn group_watch<K>(
    client: Client,
    pod_groups: Arc<PodGroups>,
    tx: UnboundedSender<LoopMessage>,
    apply: fn(&PodGroups, &K),
    delete: fn(&PodGroups, &K),
) -> impl std::future::Future<Output = ()> + Send + 'static
where
    K: Resource<Scope = kube::core::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + 'static,
    K::DynamicType: Default,
{
    let stream = watcher(Api::<K>::all(client), watcher::Config::default());
    async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            let group = match event {
                Ok(Event::Apply(group) | Event::InitApply(group)) => {
                    apply(&pod_groups, &group);
                    group
                }
                Ok(Event::Delete(group)) => {
                    delete(&pod_groups, &group);
                    group
                }
                Ok(Event::Init | Event::InitDone) => continue,
                Err(error) => {
                    warn!(%error, kind = %K::kind(&Default::default()), "PodGroup watch failed; retrying");
                    continue;
                }
            };
            let namespace = group.namespace().unwrap_or_else(|| "default".into());
            let name = group.name_any();
            let change = ClusterChange::PodGroupChanged {
                group: pod_groups.get(&namespace, &name).map(Box::new),
                namespace,
                name,
            };
            if tx.send(LoopMessage::Cluster(change)).is_err() {
                return;
            }
        }
    }
}

/// The kind the PodDisruptionBudget watch names in [`ClusterChange::Listed`]; scheduling
/// waits for its first list, as upstream waits for its informers to sync, so no
/// preemption picks victims before the budgets protecting them are known.
pub const DISRUPTION_BUDGETS_KIND: &str = "poddisruptionbudgets";

/// Starts the policy/v1 PodDisruptionBudget watch (all namespaces) that keeps `budgets`
/// current for DefaultPreemption. Budget changes requeue no pod (upstream's preemption
/// registers no PodDisruptionBudget event); the loop hears of the first list only.
pub fn spawn_disruption_budgets(
    client: Client,
    budgets: Arc<DisruptionBudgets>,
    tx: UnboundedSender<LoopMessage>,
) -> tokio::task::JoinHandle<()> {
    let stream = watcher(
        Api::<PodDisruptionBudget>::all(client),
        watcher::Config::default(),
    );
    tokio::spawn(keep_disruption_budgets(stream, budgets, tx))
}

/// Applies the PodDisruptionBudget watch to `budgets`: a relist replaces what the watch
/// knew (budgets it no longer has were deleted while the watch was down), a delete
/// forgets. Returns when the loop is gone.
async fn keep_disruption_budgets(
    stream: impl Stream<Item = Result<Event<PodDisruptionBudget>, watcher::Error>> + Send,
    budgets: Arc<DisruptionBudgets>,
    tx: UnboundedSender<LoopMessage>,
) {
    // `namespace/name` -> a stub standing for the budget in a delete.
    let mut known: HashMap<String, PodDisruptionBudget> = HashMap::new();
    let mut listing: Option<HashMap<String, PodDisruptionBudget>> = None;
    let mut synced = false;
    let mut stream = std::pin::pin!(stream);
    while let Some(event) = stream.next().await {
        match event {
            Ok(Event::Init) => listing = Some(HashMap::new()),
            Ok(Event::InitApply(budget)) => {
                if let Some(listed) = listing.as_mut() {
                    listed.insert(object_key(&budget), stub(&budget));
                }
                budgets.apply(budget);
            }
            Ok(Event::InitDone) => {
                let listed = listing.take().unwrap_or_default();
                known
                    .iter()
                    .filter(|(key, _)| !listed.contains_key(*key))
                    .for_each(|(_, gone)| budgets.delete(gone));
                debug!(
                    kind = DISRUPTION_BUDGETS_KIND,
                    budgets = listed.len(),
                    "listed"
                );
                known = listed;
                if !synced {
                    synced = true;
                    let change = ClusterChange::Listed {
                        kind: DISRUPTION_BUDGETS_KIND,
                        keys: HashSet::new(),
                    };
                    if tx.send(LoopMessage::Cluster(change)).is_err() {
                        return;
                    }
                }
            }
            Ok(Event::Apply(budget)) => {
                known.insert(object_key(&budget), stub(&budget));
                budgets.apply(budget);
            }
            Ok(Event::Delete(budget)) => {
                known.remove(&object_key(&budget));
                budgets.delete(&budget);
            }
            Err(error) => warn!(%error, "PodDisruptionBudget watch failed; retrying"),
        }
        if tx.is_closed() {
            return;
        }
    }
}

/// `namespace/name` of a namespaced object.
fn object_key<K: Resource>(object: &K) -> String {
    format!(
        "{}/{}",
        object.meta().namespace.as_deref().unwrap_or_default(),
        object.meta().name.as_deref().unwrap_or_default()
    )
}

/// The name and namespace of `budget`, all [`DisruptionBudgets::delete`] needs: a relist
/// need not keep whole copies of what it saw.
fn stub(budget: &PodDisruptionBudget) -> PodDisruptionBudget {
    let mut stub = PodDisruptionBudget::default();
    stub.metadata.namespace = budget.metadata.namespace.clone();
    stub.metadata.name = budget.metadata.name.clone();
    stub
}

/// Applies one workload watch to `workloads`. Objects deleted while the watch was down
/// are removed when the relist completes.
async fn keep<K: kube::Resource + Clone>(
    stream: impl Stream<Item = Result<Event<K>, watcher::Error>> + Send,
    workloads: Arc<Workloads>,
    apply: fn(&Workloads, &K),
    delete: fn(&Workloads, &K),
) {
    let key = object_key::<K>;
    let mut known: HashMap<String, K> = HashMap::new();
    let mut listing: Option<Vec<K>> = None;
    let mut stream = std::pin::pin!(stream);
    while let Some(event) = stream.next().await {
        match event {
            Ok(Event::Init) => listing = Some(Vec::new()),
            Ok(Event::InitApply(object)) => {
                apply(&workloads, &object);
                if let Some(list) = listing.as_mut() {
                    list.push(object);
                }
            }
            Ok(Event::InitDone) => {
                // Forget what the list no longer has.
                let listed: HashMap<String, K> = listing
                    .take()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|o| (key(&o), o))
                    .collect();
                known
                    .iter()
                    .filter(|(k, _)| !listed.contains_key(*k))
                    .for_each(|(_, o)| delete(&workloads, o));
                known = listed;
            }
            Ok(Event::Apply(object)) => {
                apply(&workloads, &object);
                known.insert(key(&object), object);
            }
            Ok(Event::Delete(object)) => {
                delete(&workloads, &object);
                known.remove(&key(&object));
            }
            Err(error) => warn!(%error, "workload watch failed; retrying"),
        }
    }
}

pub(super) fn watcher<K>(
    api: Api<K>,
    config: watcher::Config,
) -> impl Stream<Item = Result<Event<K>, watcher::Error>> + Send
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
{
    super::backoff::reflector_backoff(watcher::watcher(api, config))
}

fn node_key(node: &Node) -> String {
    node.metadata.name.clone().unwrap_or_default()
}

/// The pod watch: [`LegacyPod`]s from a 1.35 API server, plain pods from newer ones (or
/// when `/version` cannot be read, with a warning).
async fn watch_pods(client: Client, tx: UnboundedSender<LoopMessage>) {
    let minor = match client.apiserver_version().await {
        Ok(info) => minor_release(&info.minor),
        Err(error) => {
            warn!(%error, "cannot read the API server's version; assuming Kubernetes 1.36 or newer");
            None
        }
    };
    let pods = if minor.is_some_and(|minor| minor < SCHEDULING_GROUP_MINOR) {
        debug!(
            ?minor,
            "pods carry spec.workloadRef; decoding them as Kubernetes 1.35 sends them"
        );
        watcher(Api::<LegacyPod>::all(client), watcher::Config::default())
            .map_ok(legacy_event)
            .boxed()
    } else {
        watcher(Api::<Pod>::all(client), watcher::Config::default()).boxed()
    };
    forward_pods(pods, tx).await;
}

/// Forwards the pod watch to the loop.
async fn forward_pods(
    pods: impl Stream<Item = Result<Event<Pod>, watcher::Error>> + Send,
    tx: UnboundedSender<LoopMessage>,
) {
    forward(
        pods,
        tx,
        "pods",
        pod_key,
        ClusterChange::PodApplied,
        ClusterChange::PodDeleted,
    )
    .await;
}

fn legacy_event(event: Event<LegacyPod>) -> Event<Pod> {
    match event {
        Event::Apply(LegacyPod(pod)) => Event::Apply(pod),
        Event::Delete(LegacyPod(pod)) => Event::Delete(pod),
        Event::Init => Event::Init,
        Event::InitApply(LegacyPod(pod)) => Event::InitApply(pod),
        Event::InitDone => Event::InitDone,
    }
}

fn named_key(namespace: &Namespace) -> String {
    namespace.metadata.name.clone().unwrap_or_default()
}

/// Forwards one watch to the loop. Returns when the loop is gone.
pub(super) async fn forward<K>(
    stream: impl Stream<Item = Result<Event<K>, watcher::Error>> + Send,
    tx: UnboundedSender<LoopMessage>,
    kind: &'static str,
    key: fn(&K) -> String,
    applied: fn(K) -> ClusterChange,
    deleted: fn(K) -> ClusterChange,
) where
    K: Resource,
{
    let mut listing: Option<HashSet<String>> = None;
    let mut stream = std::pin::pin!(stream);
    while let Some(event) = stream.next().await {
        let change = match event {
            Ok(Event::Init) => {
                debug!(kind, "listing");
                listing = Some(HashSet::new());
                continue;
            }
            Ok(Event::InitApply(object)) => {
                if let Some(keys) = listing.as_mut() {
                    keys.insert(key(&object));
                }
                applied(trimmed(object))
            }
            Ok(Event::InitDone) => {
                let keys = listing.take().unwrap_or_default();
                debug!(kind, objects = keys.len(), "listed");
                ClusterChange::Listed { kind, keys }
            }
            Ok(Event::Apply(object)) => applied(trimmed(object)),
            Ok(Event::Delete(object)) => deleted(trimmed(object)),
            Err(error) => {
                // The backoff of `default_backoff` delays the retry; the watcher resumes
                // from its last resourceVersion or relists.
                warn!(kind, %error, "watch failed; retrying");
                continue;
            }
        };
        if tx.send(LoopMessage::Cluster(change)).is_err() {
            return;
        }
    }
}

/// `object` without `metadata.managedFields`, which no plugin reads and which are a
/// large part of a watched object in memory. kube-scheduler's pod informer drops them
/// the same way; the loop drops them from nodes and namespaces too.
fn trimmed<K: Resource>(mut object: K) -> K {
    object.meta_mut().managed_fields = None;
    object
}

/// A stream that yields once per change of `receiver`'s value (sent values count as
/// changes even when equal): what a controller reconciles everything on (a leadership
/// change, a profile set change).
pub(super) fn changes<T: Send + Sync + 'static>(
    receiver: tokio::sync::watch::Receiver<T>,
) -> futures::stream::BoxStream<'static, ()> {
    futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.changed().await.ok().map(|()| ((), receiver))
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::stream;
    use serde_json::json;
    use tokio::sync::mpsc;

    fn budget(namespace: &str, name: &str, min_available: i32) -> PodDisruptionBudget {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"minAvailable": min_available},
        }))
        .expect("a PodDisruptionBudget")
    }

    #[tokio::test]
    async fn disruption_budget_watch_keeps_the_lister() {
        use Event::{Apply, Delete, Init, InitApply, InitDone};
        // (case, watch events, budgets held as namespace/name=minAvailable, first lists
        // the loop is told of)
        type Case = (
            &'static str,
            Vec<Event<PodDisruptionBudget>>,
            Vec<&'static str>,
            usize,
        );
        let cases: Vec<Case> = vec![
            (
                "the first list fills the lister and is reported once",
                vec![
                    Init,
                    InitApply(budget("apps", "web", 2)),
                    InitApply(budget("batch", "jobs", 1)),
                    InitDone,
                ],
                vec!["apps/web=2", "batch/jobs=1"],
                1,
            ),
            (
                "watch events add, replace and forget budgets",
                vec![
                    Init,
                    InitApply(budget("apps", "web", 2)),
                    InitDone,
                    Apply(budget("apps", "db", 1)),
                    Apply(budget("apps", "web", 3)),
                    Delete(budget("apps", "db", 1)),
                ],
                vec!["apps/web=3"],
                1,
            ),
            (
                "a relist forgets budgets deleted while the watch was down",
                vec![
                    Init,
                    InitApply(budget("apps", "web", 2)),
                    InitApply(budget("apps", "db", 1)),
                    InitDone,
                    Apply(budget("batch", "jobs", 1)),
                    Init,
                    InitApply(budget("apps", "db", 4)),
                    InitDone,
                ],
                vec!["apps/db=4"],
                1,
            ),
            (
                "a budget with the same name in another namespace is another budget",
                vec![
                    Init,
                    InitApply(budget("apps", "web", 2)),
                    InitApply(budget("batch", "web", 5)),
                    InitDone,
                    Delete(budget("apps", "web", 2)),
                ],
                vec!["batch/web=5"],
                1,
            ),
            ("no list yet: not synced", vec![Init], vec![], 0),
        ];
        for (name, events, held, lists) in cases {
            let budgets = Arc::new(DisruptionBudgets::new());
            let (tx, mut rx) = mpsc::unbounded_channel();
            keep_disruption_budgets(
                stream::iter(events.into_iter().map(Ok)),
                budgets.clone(),
                tx,
            )
            .await;
            let got: Vec<String> = budgets
                .list()
                .iter()
                .map(|b| {
                    let min = b.spec.as_ref().and_then(|s| s.min_available.clone());
                    let min = match min {
                        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(n)) => {
                            n.to_string()
                        }
                        other => format!("{other:?}"),
                    };
                    format!("{}={min}", object_key(b.as_ref()))
                })
                .collect();
            assert_eq!(got, held, "{name}");
            let mut told = Vec::new();
            while let Ok(message) = rx.try_recv() {
                told.push(match message {
                    LoopMessage::Cluster(ClusterChange::Listed { kind, .. }) => kind.to_string(),
                    other => format!("{other:?}"),
                });
            }
            assert_eq!(told, vec![DISRUPTION_BUDGETS_KIND; lists], "{name}");
        }
    }

    #[tokio::test]
    async fn forwarded_pods_lose_their_managed_fields() {
        use Event::{Apply, Delete, InitApply};
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {
                "name": "web", "namespace": "apps",
                "managedFields": [{"manager": "kubectl", "operation": "Apply",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}],
            },
            "spec": {"containers": [{"name": "c"}]},
        }))
        .expect("a pod");
        let events = vec![
            Ok(InitApply(pod.clone())),
            Ok(Apply(pod.clone())),
            Ok(Delete(pod.clone())),
        ];
        let (tx, mut rx) = mpsc::unbounded_channel();
        forward_pods(stream::iter(events), tx).await;
        let mut seen = 0;
        while let Ok(LoopMessage::Cluster(change)) = rx.try_recv() {
            let (ClusterChange::PodApplied(forwarded) | ClusterChange::PodDeleted(forwarded)) =
                change
            else {
                panic!("unexpected change {change:?}");
            };
            assert_eq!(forwarded.metadata.managed_fields, None);
            let mut expected = pod.clone();
            expected.metadata.managed_fields = None;
            assert_eq!(forwarded, expected, "nothing else changes");
            seen += 1;
        }
        assert_eq!(seen, 3);
    }
}
