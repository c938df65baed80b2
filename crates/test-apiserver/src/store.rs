//! The object store: every object by group/resource and namespace/name, one store-wide
//! resourceVersion counter (as etcd's revision), and the window of recent events that
//! watches resume from (as the real server's watch cache).
//!
//! Resource versions are dense: every write takes the next number, so a watcher at
//! position `p` has lost nothing exactly when the oldest kept event is at most `p + 1`.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::errors::ApiError;

/// Group and plural: objects of every served version of a resource share one storage.
pub type StorageKey = (String, String);

/// What happened at one resourceVersion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Added,
    Modified,
    Deleted,
    /// `expire_history()`: a revision with no object, so that every resourceVersion handed
    /// out before it is older than the kept history.
    Compaction,
}

/// One kept event. `object` is the object after the write (for a delete: the last state,
/// carrying the deletion's resourceVersion); `prev` the object before it.
#[derive(Debug, Clone)]
pub struct HistoryEvent {
    pub rv: u64,
    pub key: StorageKey,
    pub kind: EventKind,
    pub object: Arc<Value>,
    pub prev: Option<Arc<Value>>,
}

#[derive(Debug)]
pub struct Store {
    objects: BTreeMap<StorageKey, BTreeMap<(String, String), Value>>,
    rv: u64,
    history: VecDeque<HistoryEvent>,
    /// Every event after this resourceVersion is in `history`.
    history_start: u64,
    window: usize,
    changes: watch::Sender<u64>,
}

/// `metadata.namespace` (empty for cluster-scoped) and `metadata.name` of an object.
pub fn object_key(object: &Value) -> (String, String) {
    let field = |name: &str| {
        object["metadata"][name]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    (field("namespace"), field("name"))
}

impl Store {
    /// An empty store keeping the last `window` events (at least one).
    pub fn new(window: usize) -> Store {
        let (changes, _) = watch::channel(1);
        Store {
            objects: BTreeMap::new(),
            rv: 1,
            history: VecDeque::new(),
            history_start: 1,
            window: window.max(1),
            changes,
        }
    }

    pub fn current_rv(&self) -> u64 {
        self.rv
    }

    /// A receiver that is marked changed on every write.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    pub fn get(&self, key: &StorageKey, namespace: &str, name: &str) -> Option<&Value> {
        self.objects
            .get(key)?
            .get(&(namespace.to_string(), name.to_string()))
    }

    /// Objects of a resource sorted by namespace, then name; `namespace` narrows to one.
    pub fn list<'a>(
        &'a self,
        key: &StorageKey,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Value> + 'a {
        self.objects
            .get(key)
            .into_iter()
            .flat_map(|objects| objects.iter())
            .filter(move |((ns, _), _)| namespace.is_none_or(|n| n == ns))
            .map(|(_, object)| object)
    }

    /// Stores `object` under the next resourceVersion (set into its metadata) and records
    /// ADDED or MODIFIED. Returns the stored object.
    pub fn put(&mut self, key: &StorageKey, mut object: Value) -> Value {
        self.rv += 1;
        object["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        let object_key = object_key(&object);
        let prev = self
            .objects
            .entry(key.clone())
            .or_default()
            .insert(object_key, object.clone());
        let kind = if prev.is_some() {
            EventKind::Modified
        } else {
            EventKind::Added
        };
        self.record(key, kind, object.clone(), prev);
        object
    }

    /// Removes an object under the next resourceVersion and records DELETED. Returns the
    /// last state, carrying the deletion's resourceVersion as the real server's does.
    pub fn remove(&mut self, key: &StorageKey, namespace: &str, name: &str) -> Option<Value> {
        let prev = self
            .objects
            .get_mut(key)?
            .remove(&(namespace.to_string(), name.to_string()))?;
        self.rv += 1;
        let mut object = prev.clone();
        object["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        self.record(key, EventKind::Deleted, object.clone(), Some(prev));
        Some(object)
    }

    fn record(&mut self, key: &StorageKey, kind: EventKind, object: Value, prev: Option<Value>) {
        self.history.push_back(HistoryEvent {
            rv: self.rv,
            key: key.clone(),
            kind,
            object: Arc::new(object),
            prev: prev.map(Arc::new),
        });
        while self.history.len() > self.window {
            if let Some(dropped) = self.history.pop_front() {
                self.history_start = dropped.rv;
            }
        }
        self.changes.send_replace(self.rv);
    }

    /// Forgets the kept history: every resourceVersion handed out so far becomes too old
    /// to watch or continue a list from; open watches are unaffected.
    pub fn expire_history(&mut self) {
        self.rv += 1;
        self.history.clear();
        self.history_start = self.rv;
        self.record(
            &(String::new(), String::new()),
            EventKind::Compaction,
            Value::Null,
            None,
        );
    }

    /// The oldest resourceVersion a new watch or a continue token may start from.
    pub fn oldest_resumable(&self) -> u64 {
        self.history_start
    }

    /// 410 Expired when a new watch (or a continued list) starts before the kept history.
    pub fn check_resumable(&self, rv: u64) -> Result<(), ApiError> {
        if rv < self.history_start {
            Err(ApiError::gone(rv, self.history_start))
        } else {
            Ok(())
        }
    }

    /// Events of `key` after `position` for an open watch, with the resourceVersion the
    /// watch is at afterwards; 410 when events after `position` were already dropped.
    pub fn events_after(
        &self,
        key: &StorageKey,
        position: u64,
    ) -> Result<(Vec<HistoryEvent>, u64), ApiError> {
        let first_kept = self.history.front().map_or(self.rv + 1, |e| e.rv);
        if position + 1 < first_kept {
            return Err(ApiError::gone(position, self.history_start));
        }
        // Dense resourceVersions: the event at rv r sits at index r - first_kept.
        let skip = usize::try_from((position + 1).saturating_sub(first_kept)).unwrap_or(usize::MAX);
        let events = self
            .history
            .iter()
            .skip(skip)
            .filter(|e| &e.key == key)
            .cloned()
            .collect();
        Ok((events, self.rv.max(position)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pods() -> StorageKey {
        (String::new(), "pods".to_string())
    }

    fn pod(name: &str) -> Value {
        json!({"kind": "Pod", "metadata": {"namespace": "default", "name": name}})
    }

    #[test]
    fn every_write_takes_the_next_resource_version() {
        let mut store = Store::new(10);
        let a = store.put(&pods(), pod("a"));
        let b = store.put(&pods(), pod("b"));
        let deleted = store.remove(&pods(), "default", "a").expect("a exists");
        assert_eq!(a["metadata"]["resourceVersion"], "2");
        assert_eq!(b["metadata"]["resourceVersion"], "3");
        assert_eq!(deleted["metadata"]["resourceVersion"], "4");
        assert_eq!(store.current_rv(), 4);
        let names: Vec<_> = store
            .list(&pods(), None)
            .map(|p| p["metadata"]["name"].clone())
            .collect();
        assert_eq!(names, [json!("b")]);
    }

    #[test]
    fn events_after_a_position_come_in_order_for_one_resource() {
        let mut store = Store::new(10);
        store.put(&pods(), pod("a"));
        store.put(
            &(String::new(), "nodes".to_string()),
            json!({"metadata": {"name": "n"}}),
        );
        store.put(&pods(), pod("a"));
        let (events, at) = store.events_after(&pods(), 1).expect("history kept");
        let kinds: Vec<_> = events.iter().map(|e| (e.rv, e.kind)).collect();
        assert_eq!(kinds, [(2, EventKind::Added), (4, EventKind::Modified)]);
        assert_eq!(at, 4);
    }

    #[test]
    fn the_history_window_drops_old_events_and_old_positions_get_410() {
        let mut store = Store::new(2);
        for name in ["a", "b", "c", "d"] {
            store.put(&pods(), pod(name));
        }
        // Kept: rv 4 and 5; a watch from 3 still has everything after it.
        assert!(store.check_resumable(3).is_ok());
        assert!(store.events_after(&pods(), 3).is_ok());
        let gone = store.check_resumable(2).expect_err("rv 3 was dropped");
        assert_eq!((gone.code, gone.reason.as_str()), (410, "Expired"));
        assert!(store.events_after(&pods(), 2).is_err());
    }

    #[test]
    fn expire_history_outdates_every_handed_out_version_but_not_open_watches() {
        let mut store = Store::new(10);
        store.put(&pods(), pod("a"));
        let before = store.current_rv();
        store.expire_history();
        assert!(
            store.check_resumable(before).is_err(),
            "a new watch from an old RV gets 410"
        );
        assert!(
            store.check_resumable(store.current_rv()).is_ok(),
            "a relist's RV is watchable"
        );
        store.put(&pods(), pod("b"));
        let (events, _) = store
            .events_after(&pods(), before)
            .expect("an open watch at the head loses nothing");
        assert_eq!(events.len(), 1);
    }
}
