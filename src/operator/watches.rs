//! Node, Pod and Namespace watches feeding the scheduling loop.
//!
//! Each watch is a kube-runtime watcher (list, then watch from the list's
//! resourceVersion, relist on 410 Gone, reconnect with backoff): no polling. Objects are
//! forwarded as [`ClusterChange`]s as they arrive. A (re)list ends with
//! [`ClusterChange::Listed`] carrying every key it delivered, so the loop forgets objects
//! deleted while the watch was down.

use std::collections::HashSet;

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, Resource};
use tokio::sync::mpsc::UnboundedSender;
use tracing::{debug, warn};

use crate::cluster::pod_key;

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
