//! Storage watches feeding [`Volumes`], the lister the volume plugins read; the same
//! machinery feeds the device objects DynamicResources reads ([`super::devices`]).
//!
//! One kube-runtime watcher per kind (PersistentVolumeClaims, PersistentVolumes,
//! StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities, VolumeAttachments), as
//! upstream's scheduler runs one informer per kind. Each change is applied to the lister
//! first, then reported to the scheduling loop as a [`ClusterChange::ListerChanged`], so
//! the pods the plugins rejected are requeued by a cache that already holds the change.
//!
//! A (re)list is compared with what the watch knew: objects it no longer has are deleted
//! from the lister (they were deleted while the watch was down), and the kinds of change it
//! brought (added, updated, deleted) are reported once each when the list completes rather
//! than once per object. The first completed list of each kind is reported as
//! [`ClusterChange::Listed`]; scheduling waits for it, as upstream waits for its informers
//! to sync, so no claim is judged missing only because its watch has not listed yet.

use std::collections::HashMap;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::{
    CSIDriver, CSINode, CSIStorageCapacity, StorageClass, VolumeAttachment,
};
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, Resource};
use tokio::sync::mpsc::UnboundedSender;
use tracing::{debug, warn};

use crate::cluster::Volumes;
use crate::framework::{ActionType, EventResource};

use super::types::{ClusterChange, LoopMessage};

/// The kinds the storage watches list, as [`ClusterChange::Listed`] names them; the
/// scheduling loop waits for each before scheduling.
pub const STORAGE_KINDS: [&str; 7] = [
    "persistentvolumeclaims",
    "persistentvolumes",
    "storageclasses",
    "csinodes",
    "csidrivers",
    "csistoragecapacities",
    "volumeattachments",
];

/// How one kind is kept in its lister `L` ([`Volumes`] here, the device objects in
/// [`super::devices`]) and reported to the scheduling loop.
pub(super) struct Feed<K, L> {
    /// The plural, as in [`STORAGE_KINDS`].
    pub kind: &'static str,
    pub resource: EventResource,
    /// Reports every change as this action instead of what happened to the object (a
    /// DeviceTaintRule, to the plugins, updates the slices it taints).
    pub reported_as: Option<ActionType>,
    pub apply: fn(&L, K),
    pub delete: fn(&L, &K),
}

/// Starts the storage watches; they run until the loop's receiver is dropped.
pub fn spawn(
    client: Client,
    volumes: Arc<Volumes>,
    tx: UnboundedSender<LoopMessage>,
) -> Vec<tokio::task::JoinHandle<()>> {
    vec![
        start(
            Api::<PersistentVolumeClaim>::all(client.clone()),
            Feed {
                kind: STORAGE_KINDS[0],
                resource: EventResource::PersistentVolumeClaim,
                reported_as: None,
                apply: Volumes::apply_claim,
                delete: Volumes::delete_claim,
            },
            volumes.clone(),
            tx.clone(),
        ),
        start(
            Api::<PersistentVolume>::all(client.clone()),
            Feed {
                kind: STORAGE_KINDS[1],
                resource: EventResource::PersistentVolume,
                reported_as: None,
                apply: Volumes::apply_volume,
                delete: Volumes::delete_volume,
            },
            volumes.clone(),
            tx.clone(),
        ),
        start(
            Api::<StorageClass>::all(client.clone()),
            Feed {
                kind: STORAGE_KINDS[2],
                resource: EventResource::StorageClass,
                reported_as: None,
                apply: Volumes::apply_class,
                delete: Volumes::delete_class,
            },
            volumes.clone(),
            tx.clone(),
        ),
        start(
            Api::<CSINode>::all(client.clone()),
            Feed {
                kind: STORAGE_KINDS[3],
                resource: EventResource::CSINode,
                reported_as: None,
                apply: Volumes::apply_csi_node,
                delete: Volumes::delete_csi_node,
            },
            volumes.clone(),
            tx.clone(),
        ),
        start(
            Api::<CSIDriver>::all(client.clone()),
            Feed {
                kind: STORAGE_KINDS[4],
                resource: EventResource::CSIDriver,
                reported_as: None,
                apply: Volumes::apply_csi_driver,
                delete: Volumes::delete_csi_driver,
            },
            volumes.clone(),
            tx.clone(),
        ),
        start(
            Api::<CSIStorageCapacity>::all(client.clone()),
            Feed {
                kind: STORAGE_KINDS[5],
                resource: EventResource::CSIStorageCapacity,
                reported_as: None,
                apply: Volumes::apply_capacity,
                delete: Volumes::delete_capacity,
            },
            volumes.clone(),
            tx.clone(),
        ),
        start(
            Api::<VolumeAttachment>::all(client),
            Feed {
                kind: STORAGE_KINDS[6],
                resource: EventResource::VolumeAttachment,
                reported_as: None,
                apply: Volumes::apply_attachment,
                delete: Volumes::delete_attachment,
            },
            volumes,
            tx,
        ),
    ]
}

/// Starts one watch of `api` feeding `lister`.
pub(super) fn start<K, L>(
    api: Api<K>,
    feed: Feed<K, L>,
    lister: Arc<L>,
    tx: UnboundedSender<LoopMessage>,
) -> tokio::task::JoinHandle<()>
where
    K: Resource + Clone + Default + std::fmt::Debug + serde::de::DeserializeOwned + Send,
    K: Sync + 'static,
    K::DynamicType: Default,
    L: Send + Sync + 'static,
{
    let stream =
        super::backoff::reflector_backoff(watcher::watcher(api, watcher::Config::default()));
    tokio::spawn(keep(stream, feed, lister, tx))
}

/// `namespace/name` (`/name` for cluster-scoped objects).
fn object_key<K: Resource>(object: &K) -> String {
    format!(
        "{}/{}",
        object.meta().namespace.as_deref().unwrap_or_default(),
        object.meta().name.as_deref().unwrap_or_default()
    )
}

/// An object standing for `key` in a delete: the listers forget objects by name and
/// namespace only, so a (re)list need not keep whole copies of what it saw.
fn stub<K: Resource + Default>(key: &str) -> K {
    let (namespace, name) = key.split_once('/').unwrap_or(("", key));
    let mut object = K::default();
    if !namespace.is_empty() {
        object.meta_mut().namespace = Some(namespace.to_string());
    }
    object.meta_mut().name = Some(name.to_string());
    object
}

/// The kinds of change one (re)list brought.
#[derive(Debug, Default)]
struct Relist {
    /// Key -> resourceVersion of every object listed so far.
    listed: HashMap<String, String>,
    added: bool,
    updated: bool,
}

/// Applies one watch to `lister` and reports its changes; see the module docs. Returns
/// when the loop is gone.
async fn keep<K: Resource + Default, L>(
    stream: impl Stream<Item = Result<Event<K>, watcher::Error>> + Send,
    feed: Feed<K, L>,
    lister: Arc<L>,
    tx: UnboundedSender<LoopMessage>,
) {
    // Key -> resourceVersion of what the lister holds from this watch.
    let mut known: HashMap<String, String> = HashMap::new();
    let mut relist: Option<Relist> = None;
    let mut synced = false;
    let mut stream = std::pin::pin!(stream);
    while let Some(event) = stream.next().await {
        let mut changes: Vec<ClusterChange> = Vec::new();
        let changed = |action| ClusterChange::ListerChanged {
            resource: feed.resource,
            action: feed.reported_as.unwrap_or(action),
        };
        match event {
            Ok(Event::Init) => {
                debug!(kind = feed.kind, "listing");
                relist = Some(Relist::default());
            }
            Ok(Event::InitApply(object)) => {
                let (key, version) = (object_key(&object), version_of(&object));
                if let Some(relist) = relist.as_mut() {
                    match known.get(&key) {
                        None => relist.added = true,
                        Some(seen) if *seen != version => relist.updated = true,
                        Some(_) => {}
                    }
                    relist.listed.insert(key, version);
                }
                (feed.apply)(&lister, object);
            }
            Ok(Event::InitDone) => {
                let relist = relist.take().unwrap_or_default();
                let gone: Vec<&String> = known
                    .keys()
                    .filter(|k| !relist.listed.contains_key(*k))
                    .collect();
                debug!(
                    kind = feed.kind,
                    objects = relist.listed.len(),
                    gone = gone.len(),
                    "listed"
                );
                for key in &gone {
                    (feed.delete)(&lister, &stub::<K>(key));
                }
                let deleted = !gone.is_empty();
                known = relist.listed;
                for (happened, action) in [
                    (relist.added, ActionType::ADD),
                    (relist.updated, ActionType::UPDATE),
                    (deleted, ActionType::DELETE),
                ] {
                    if happened {
                        changes.push(changed(action));
                    }
                }
                if !synced {
                    synced = true;
                    changes.push(ClusterChange::Listed {
                        kind: feed.kind,
                        keys: Default::default(),
                    });
                }
            }
            Ok(Event::Apply(object)) => {
                let (key, version) = (object_key(&object), version_of(&object));
                (feed.apply)(&lister, object);
                match known.insert(key, version.clone()) {
                    None => changes.push(changed(ActionType::ADD)),
                    Some(seen) if seen != version => changes.push(changed(ActionType::UPDATE)),
                    Some(_) => {}
                }
            }
            Ok(Event::Delete(object)) => {
                (feed.delete)(&lister, &object);
                known.remove(&object_key(&object));
                changes.push(changed(ActionType::DELETE));
            }
            Err(error) => {
                // `default_backoff` delays the retry; the watcher resumes from its last
                // resourceVersion or relists.
                warn!(kind = feed.kind, %error, "watch failed; retrying");
            }
        }
        for change in changes {
            if tx.send(LoopMessage::Cluster(change)).is_err() {
                return;
            }
        }
    }
}

fn version_of<K: Resource>(object: &K) -> String {
    object.meta().resource_version.clone().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::claim_key;
    use futures::stream;
    use kube::ResourceExt;
    use serde_json::json;
    use tokio::sync::mpsc;

    fn claim(name: &str, version: &str) -> PersistentVolumeClaim {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "apps", "resourceVersion": version},
            "spec": {"storageClassName": "wait"},
        }))
        .expect("a PersistentVolumeClaim")
    }

    fn volume(name: &str, version: &str) -> PersistentVolume {
        serde_json::from_value(json!({
            "metadata": {"name": name, "resourceVersion": version},
            "spec": {"storageClassName": "wait"},
        }))
        .expect("a PersistentVolume")
    }

    /// Runs `keep` over `events` and returns what it told the loop, as
    /// `<resource> <ADD|UPDATE|DELETE>` and `listed <kind>`.
    async fn run<K: Resource + Default + Send>(
        events: Vec<Event<K>>,
        feed: Feed<K, Volumes>,
        volumes: Arc<Volumes>,
    ) -> Vec<String> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        keep(stream::iter(events.into_iter().map(Ok)), feed, volumes, tx).await;
        let mut told = Vec::new();
        while let Ok(message) = rx.try_recv() {
            told.push(match message {
                LoopMessage::Cluster(ClusterChange::ListerChanged { resource, action }) => {
                    let action = [
                        (ActionType::ADD, "ADD"),
                        (ActionType::UPDATE, "UPDATE"),
                        (ActionType::DELETE, "DELETE"),
                    ]
                    .iter()
                    .find(|(a, _)| *a == action)
                    .map_or("other", |(_, name)| name);
                    format!("{resource:?} {action}")
                }
                LoopMessage::Cluster(ClusterChange::Listed { kind, .. }) => {
                    format!("listed {kind}")
                }
                other => format!("{other:?}"),
            });
        }
        told
    }

    type Case = (
        &'static str,
        Vec<Event<PersistentVolumeClaim>>,
        Vec<&'static str>,
        Vec<(&'static str, &'static str)>,
    );

    fn claims_feed() -> Feed<PersistentVolumeClaim, Volumes> {
        Feed {
            kind: "persistentvolumeclaims",
            resource: EventResource::PersistentVolumeClaim,
            reported_as: None,
            apply: Volumes::apply_claim,
            delete: Volumes::delete_claim,
        }
    }

    #[tokio::test]
    async fn claim_watch_keeps_volumes_and_tells_the_loop() {
        use Event::{Apply, Delete, Init, InitApply, InitDone};
        // (case, watch events, what the loop is told, claims held with their versions)
        let cases: Vec<Case> = vec![
            (
                "the first list is reported once, as additions, then as synced",
                vec![
                    Init,
                    InitApply(claim("a", "1")),
                    InitApply(claim("b", "2")),
                    InitDone,
                ],
                vec!["PersistentVolumeClaim ADD", "listed persistentvolumeclaims"],
                vec![("a", "1"), ("b", "2")],
            ),
            (
                "watch events are reported one by one; the same version again is no change",
                vec![
                    Init,
                    InitApply(claim("a", "1")),
                    InitDone,
                    Apply(claim("b", "2")),
                    Apply(claim("a", "3")),
                    Apply(claim("a", "3")),
                    Delete(claim("b", "4")),
                ],
                vec![
                    "PersistentVolumeClaim ADD",
                    "listed persistentvolumeclaims",
                    "PersistentVolumeClaim ADD",
                    "PersistentVolumeClaim UPDATE",
                    "PersistentVolumeClaim DELETE",
                ],
                vec![("a", "3")],
            ),
            (
                "a relist forgets claims deleted while the watch was down",
                vec![
                    Init,
                    InitApply(claim("a", "1")),
                    InitApply(claim("b", "2")),
                    InitDone,
                    Init,
                    InitApply(claim("a", "1")),
                    InitDone,
                ],
                vec![
                    "PersistentVolumeClaim ADD",
                    "listed persistentvolumeclaims",
                    "PersistentVolumeClaim DELETE",
                ],
                vec![("a", "1")],
            ),
            (
                "a relist reports what it added and updated, not what it found unchanged",
                vec![
                    Init,
                    InitApply(claim("a", "1")),
                    InitApply(claim("b", "2")),
                    InitDone,
                    Init,
                    InitApply(claim("a", "5")),
                    InitApply(claim("b", "2")),
                    InitApply(claim("c", "6")),
                    InitDone,
                ],
                vec![
                    "PersistentVolumeClaim ADD",
                    "listed persistentvolumeclaims",
                    "PersistentVolumeClaim ADD",
                    "PersistentVolumeClaim UPDATE",
                ],
                vec![("a", "5"), ("b", "2"), ("c", "6")],
            ),
            (
                "an unchanged relist reports nothing",
                vec![
                    Init,
                    InitApply(claim("a", "1")),
                    InitDone,
                    Init,
                    InitApply(claim("a", "1")),
                    InitDone,
                ],
                vec!["PersistentVolumeClaim ADD", "listed persistentvolumeclaims"],
                vec![("a", "1")],
            ),
        ];
        for (name, events, told, claims) in cases {
            let volumes = Arc::new(Volumes::new());
            assert_eq!(
                run(events, claims_feed(), volumes.clone()).await,
                told,
                "{name}"
            );
            let held: Vec<(String, String)> = volumes
                .claims()
                .iter()
                .map(|c| (claim_key(c), c.resource_version().unwrap_or_default()))
                .collect();
            let expected: Vec<(String, String)> = claims
                .iter()
                .map(|(n, v)| (format!("apps/{n}"), v.to_string()))
                .collect();
            assert_eq!(held, expected, "{name}");
        }
    }

    /// Cluster-scoped objects are forgotten on a relist too (their key has no namespace).
    #[tokio::test]
    async fn volume_relist_forgets_deleted_volumes() {
        use Event::{Init, InitApply, InitDone};
        let volumes = Arc::new(Volumes::new());
        let feed = Feed {
            kind: "persistentvolumes",
            resource: EventResource::PersistentVolume,
            reported_as: None,
            apply: Volumes::apply_volume,
            delete: Volumes::delete_volume,
        };
        let events = vec![
            Init,
            InitApply(volume("pv-a", "1")),
            InitApply(volume("pv-b", "2")),
            InitDone,
            Init,
            InitApply(volume("pv-b", "2")),
            InitDone,
        ];
        let told = run(events, feed, volumes.clone()).await;
        assert_eq!(
            told,
            [
                "PersistentVolume ADD",
                "listed persistentvolumes",
                "PersistentVolume DELETE"
            ]
        );
        assert!(volumes.volume("pv-a").is_none(), "pv-a was deleted");
        assert!(volumes.volume("pv-b").is_some(), "pv-b is still there");
    }
}
