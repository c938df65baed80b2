//! Watch streams: newline-delimited `{"type": ..., "object": ...}` events over a chunked
//! response, one chunk per event.
//!
//! A watch starts either with synthetic ADDED events for the current objects (no
//! resourceVersion, `0`, or `sendInitialEvents=true`, which ends them with the
//! `k8s.io/initial-events-end` bookmark) or after a resourceVersion, and then follows the
//! store's kept history. Selectors filter as the real watch cache does: an object that
//! stops matching is DELETED, one that starts matching is ADDED.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_stream::wrappers::ReceiverStream;

use crate::cluster::{ListQuery, present};
use crate::errors::ApiError;
use crate::http::{Shared, lock};
use crate::resources::ResourceDef;
use crate::store::{EventKind, HistoryEvent};

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Synthetic ADDED for every current object first; with `end_bookmark`, then the
    /// initial-events-end BOOKMARK (streaming list).
    Initial { end_bookmark: bool },
    /// Only changes after the current state.
    Now,
    /// Changes after this resourceVersion (410 when it is older than the kept history).
    After(u64),
}

#[derive(Debug, Clone)]
pub struct WatchRequest {
    pub def: ResourceDef,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub query: ListQuery,
    pub start: Start,
    pub bookmarks: bool,
    pub timeout: Option<Duration>,
}

impl WatchRequest {
    fn passes(&self, object: &Value) -> bool {
        let metadata = &object["metadata"];
        let in_namespace = self
            .namespace
            .as_deref()
            .is_none_or(|ns| metadata["namespace"].as_str() == Some(ns));
        let named = self
            .name
            .as_deref()
            .is_none_or(|name| metadata["name"].as_str() == Some(name));
        in_namespace && named && self.query.matches(object)
    }

    /// The event this watcher sees for a store event, as the watch cache's
    /// `convertToWatchEvent` decides it.
    fn convert(&self, event: &HistoryEvent) -> Option<Value> {
        let current = event.kind != EventKind::Deleted && self.passes(&event.object);
        let previous = event.prev.as_deref().is_some_and(|prev| self.passes(prev));
        let (kind, object) = match (current, previous) {
            (true, false) => ("ADDED", present(&self.def, &event.object)),
            (true, true) => ("MODIFIED", present(&self.def, &event.object)),
            (false, true) => {
                let mut last = present(&self.def, event.prev.as_deref().unwrap_or(&event.object));
                last["metadata"]["resourceVersion"] = json!(event.rv.to_string());
                ("DELETED", last)
            }
            (false, false) => return None,
        };
        Some(json!({"type": kind, "object": object}))
    }

    fn bookmark(&self, rv: u64, initial_events_end: bool) -> Value {
        let mut metadata = json!({"resourceVersion": rv.to_string()});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        json!({"type": "BOOKMARK", "object": {"kind": self.def.kind, "apiVersion": self.def.api_version(), "metadata": metadata}})
    }
}

fn error_event(error: &ApiError) -> Value {
    json!({"type": "ERROR", "object": error.to_status()})
}

fn line(event: &Value) -> Bytes {
    let mut bytes = serde_json::to_vec(event).unwrap_or_default();
    bytes.push(b'\n');
    Bytes::from(bytes)
}

/// Starts the stream and answers 200 with it.
pub fn respond(shared: Arc<Shared>, request: WatchRequest) -> Response {
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    tokio::spawn(run(shared, request, tx));
    let body = Body::from_stream(ReceiverStream::new(rx).map(Ok::<_, Infallible>));
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

async fn run(shared: Arc<Shared>, request: WatchRequest, tx: mpsc::Sender<Bytes>) {
    let mut dropped = shared.drop_watches.subscribe();
    let key = request.def.storage_key();
    // Snapshot and subscription under one lock: no write can fall between them.
    let snapshot = {
        let cluster = lock(&shared.cluster);
        let changes = cluster.store.subscribe();
        let current = cluster.store.current_rv();
        match request.start {
            Start::Initial { .. } => {
                let objects: Vec<Value> = cluster
                    .store
                    .list(&key, request.namespace.as_deref())
                    .filter(|o| request.passes(o))
                    .map(|o| json!({"type": "ADDED", "object": present(&request.def, o)}))
                    .collect();
                Ok((objects, current, changes))
            }
            Start::Now => Ok((Vec::new(), current, changes)),
            Start::After(rv) => cluster
                .store
                .check_resumable(rv)
                .map(|()| (Vec::new(), rv, changes)),
        }
    };
    let (initial, mut position, mut changes) = match snapshot {
        Ok(snapshot) => snapshot,
        Err(error) => {
            let _ = tx.send(line(&error_event(&error))).await;
            return;
        }
    };
    for event in &initial {
        if tx.send(line(event)).await.is_err() {
            return;
        }
    }
    if request.start == (Start::Initial { end_bookmark: true })
        && tx
            .send(line(&request.bookmark(position, true)))
            .await
            .is_err()
    {
        return;
    }

    // A watch from an older resourceVersion first catches up with what it missed.
    if !drain(&shared, &request, &tx, &mut position).await {
        return;
    }
    let period = shared
        .config
        .bookmark_interval
        .max(Duration::from_millis(10));
    let mut ticker = tokio::time::interval_at(Instant::now() + period, period);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let deadline = Instant::now()
        + request
            .timeout
            .unwrap_or(Duration::from_secs(365 * 24 * 3600));
    loop {
        tokio::select! {
            _ = dropped.changed() => return,
            _ = tx.closed() => return,
            _ = tokio::time::sleep_until(deadline) => return,
            changed = changes.changed() => {
                if changed.is_err() || !drain(&shared, &request, &tx, &mut position).await {
                    return;
                }
            }
            _ = ticker.tick(), if request.bookmarks => {
                if tx.send(line(&request.bookmark(position, false))).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Sends the events after `position` and moves it to the store's head. False when the
/// stream is over (client gone, or 410 because the history no longer reaches back).
async fn drain(
    shared: &Shared,
    request: &WatchRequest,
    tx: &mpsc::Sender<Bytes>,
    position: &mut u64,
) -> bool {
    let batch = lock(&shared.cluster)
        .store
        .events_after(&request.def.storage_key(), *position);
    match batch {
        Ok((events, at)) => {
            for event in events.iter().filter_map(|e| request.convert(e)) {
                if tx.send(line(&event)).await.is_err() {
                    return false;
                }
            }
            *position = at;
            true
        }
        Err(error) => {
            let _ = tx.send(line(&error_event(&error))).await;
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;
    use crate::selectors::LabelSelector;

    fn watcher(selector: &str) -> WatchRequest {
        let label = LabelSelector::parse(selector).expect("valid selector");
        WatchRequest {
            def: Registry::builtin()
                .get("", "v1", "pods")
                .cloned()
                .expect("pods"),
            namespace: Some("default".into()),
            name: None,
            query: ListQuery {
                label,
                filtered: true,
                ..ListQuery::default()
            },
            start: Start::Now,
            bookmarks: false,
            timeout: None,
        }
    }

    fn event(kind: EventKind, object: Value, prev: Option<Value>) -> HistoryEvent {
        HistoryEvent {
            rv: 7,
            key: (String::new(), "pods".into()),
            kind,
            object: Arc::new(object),
            prev: prev.map(Arc::new),
        }
    }

    fn pod(namespace: &str, app: &str) -> Value {
        json!({"metadata": {"namespace": namespace, "name": "p", "labels": {"app": app}, "resourceVersion": "6"}})
    }

    #[test]
    fn events_outside_the_namespace_are_not_seen() {
        let seen = watcher("").convert(&event(EventKind::Added, pod("other", "a"), None));
        assert!(seen.is_none());
    }

    #[test]
    fn a_modified_object_that_leaves_the_selector_is_deleted_with_the_event_rv() {
        let watch = watcher("app=a");
        let seen = watch.convert(&event(
            EventKind::Modified,
            pod("default", "b"),
            Some(pod("default", "a")),
        ));
        let seen = seen.expect("the watcher saw the object before");
        assert_eq!(seen["type"], "DELETED");
        assert_eq!(seen["object"]["metadata"]["labels"]["app"], "a");
        assert_eq!(seen["object"]["metadata"]["resourceVersion"], "7");
    }
}
