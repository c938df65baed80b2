//! Node, Pod and Namespace watches feeding the scheduling loop.
//!
//! Each watch is a kube-runtime watcher (list, then watch from the list's
//! resourceVersion, relist on 410 Gone, reconnect with backoff): no polling. Objects are
//! forwarded as [`ClusterChange`]s as they arrive. A (re)list ends with
//! [`ClusterChange::Listed`] carrying every key it delivered, so the loop forgets objects
//! deleted while the watch was down.

use std::collections::{HashMap, HashSet};

use futures::{Stream, StreamExt};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, ReplicationController, Service};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, Resource};
use tokio::sync::mpsc::UnboundedSender;
use tracing::{debug, warn};

use crate::api::PodGroup;
use crate::cluster::{PodGroups, Workloads, pod_key};

use super::types::{ClusterChange, LoopMessage};

/// Starts the Node, Pod and Namespace watches; they run until the loop's receiver is dropped.
pub fn spawn(client: Client, tx: UnboundedSender<LoopMessage>) -> Vec<tokio::task::JoinHandle<()>> {
    let nodes = watcher(Api::<Node>::all(client.clone()), watcher::Config::default());
    let pods = watcher(Api::<Pod>::all(client.clone()), watcher::Config::default());
    let namespaces = watcher(Api::<Namespace>::all(client), watcher::Config::default());
    vec![
        tokio::spawn(forward(
            nodes,
            tx.clone(),
            "nodes",
            node_key,
            ClusterChange::NodeApplied,
            ClusterChange::NodeDeleted,
        )),
        tokio::spawn(forward(
            pods,
            tx.clone(),
            "pods",
            pod_key,
            ClusterChange::PodApplied,
            ClusterChange::PodDeleted,
        )),
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
    let stream = watcher(Api::<PodGroup>::all(client), watcher::Config::default());
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            let deleted = match event {
                Ok(Event::Apply(group) | Event::InitApply(group)) => {
                    pod_groups.apply(&group);
                    false
                }
                Ok(Event::Delete(group)) => {
                    pod_groups.delete(&group);
                    true
                }
                Ok(Event::Init | Event::InitDone) => continue,
                Err(error) => {
                    warn!(%error, "PodGroup watch failed; retrying");
                    continue;
                }
            };
            let change = ClusterChange::PodGroupChanged { deleted };
            if tx.send(LoopMessage::Cluster(change)).is_err() {
                return;
            }
        }
    })
}

/// Applies one workload watch to `workloads`. Objects deleted while the watch was down
/// are removed when the relist completes.
async fn keep<K: kube::Resource + Clone>(
    stream: impl Stream<Item = Result<Event<K>, watcher::Error>> + Send,
    workloads: Arc<Workloads>,
    apply: fn(&Workloads, &K),
    delete: fn(&Workloads, &K),
) {
    let key = |o: &K| {
        format!(
            "{}/{}",
            o.meta().namespace.as_deref().unwrap_or_default(),
            o.meta().name.as_deref().unwrap_or_default()
        )
    };
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

fn watcher<K>(
    api: Api<K>,
    config: watcher::Config,
) -> impl Stream<Item = Result<Event<K>, watcher::Error>> + Send
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
{
    watcher::watcher(api, config).default_backoff()
}

fn node_key(node: &Node) -> String {
    node.metadata.name.clone().unwrap_or_default()
}

fn named_key(namespace: &Namespace) -> String {
    namespace.metadata.name.clone().unwrap_or_default()
}

/// Forwards one watch to the loop. Returns when the loop is gone.
async fn forward<K>(
    stream: impl Stream<Item = Result<Event<K>, watcher::Error>> + Send,
    tx: UnboundedSender<LoopMessage>,
    kind: &'static str,
    key: fn(&K) -> String,
    applied: fn(K) -> ClusterChange,
    deleted: fn(K) -> ClusterChange,
) {
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
                applied(object)
            }
            Ok(Event::InitDone) => {
                let keys = listing.take().unwrap_or_default();
                debug!(kind, objects = keys.len(), "listed");
                ClusterChange::Listed { kind, keys }
            }
            Ok(Event::Apply(object)) => applied(object),
            Ok(Event::Delete(object)) => deleted(object),
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
