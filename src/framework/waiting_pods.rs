//! Pods held at Permit, and the handle Permit plugins use to release them.
//!
//! A pod for which some Permit plugins returned Wait is registered here with one deadline
//! per waiting plugin. The binding cycle waits on it: the pod goes on when every waiting
//! plugin has allowed it, and is rejected as soon as any plugin rejects it or any plugin's
//! deadline passes (upstream's message: "rejected due to timeout after waiting 10s at
//! plugin Coscheduling").

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;

use crate::cluster::PodInfo;

use super::Status;
use super::clock::{Clock, Instant, RuntimeClock};

struct WaitState {
    /// Waiting plugins and their deadlines.
    pending: HashMap<String, Instant>,
    /// Set once the pod is rejected.
    rejection: Option<Status>,
}

/// One pod held at Permit.
pub struct WaitingPod {
    pod: Arc<PodInfo>,
    node_name: String,
    state: Mutex<WaitState>,
    changed: Notify,
    registered: Instant,
    clock: Arc<dyn Clock>,
}

impl WaitingPod {
    fn lock(&self) -> MutexGuard<'_, WaitState> {
        // A poisoned lock only means another thread panicked mid-update of this small map;
        // its contents are still a valid map, so keep using it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn pod(&self) -> &Arc<PodInfo> {
        &self.pod
    }

    pub fn node_name(&self) -> &str {
        &self.node_name
    }

    /// Plugins still waiting to allow the pod.
    pub fn pending_plugins(&self) -> Vec<String> {
        let mut v: Vec<String> = self.lock().pending.keys().cloned().collect();
        v.sort();
        v
    }

    /// `plugin` allows the pod; once no plugin waits any more the pod proceeds.
    pub fn allow(&self, plugin: &str) {
        self.lock().pending.remove(plugin);
        self.changed.notify_one();
    }

    /// `plugin` rejects the pod with `message`.
    pub fn reject(&self, plugin: &str, message: &str) {
        {
            let mut state = self.lock();
            if state.rejection.is_none() {
                state.rejection = Some(Status::unschedulable(message).with_plugin(plugin));
            }
        }
        self.changed.notify_one();
    }

    /// Waits until the pod is allowed (Success) or rejected (Unschedulable, naming the
    /// plugin that rejected it or timed out).
    pub async fn wait(&self) -> Status {
        loop {
            let notified = self.changed.notified();
            let next_deadline = {
                let state = self.lock();
                if let Some(rejection) = &state.rejection {
                    return rejection.clone();
                }
                match state.pending.iter().min_by_key(|(_, d)| **d) {
                    None => return Status::success(),
                    Some((plugin, deadline)) => (plugin.clone(), *deadline),
                }
            };
            let (plugin, deadline) = next_deadline;
            tokio::select! {
                _ = notified => {}
                _ = self.clock.sleep_until(deadline) => {
                    let waited = self.waited_for(&plugin, deadline);
                    self.reject(&plugin, &format!(
                        "rejected due to timeout after waiting {} at plugin {plugin}",
                        format_duration(waited)
                    ));
                }
            }
        }
    }

    fn waited_for(&self, _plugin: &str, deadline: Instant) -> Duration {
        deadline.saturating_duration_since(self.registered)
    }
}

/// Renders a duration as Go's `time.Duration.String()` does for whole and fractional
/// seconds (`10s`, `1.5s`, `500ms`).
pub fn format_duration(d: Duration) -> String {
    if d.as_secs() > 0 && d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d.as_secs() == 0 {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

/// All pods waiting at Permit in one profile instance, keyed by pod UID.
pub struct WaitingPods {
    pods: Mutex<HashMap<String, Arc<WaitingPod>>>,
    /// Deadlines are set and awaited on it.
    clock: Arc<dyn Clock>,
}

impl Default for WaitingPods {
    fn default() -> Self {
        Self::with_clock(RuntimeClock::shared())
    }
}

impl WaitingPods {
    /// Waiting pods timed by the runtime's clock.
    pub fn new() -> Self {
        Self::default()
    }

    /// Waiting pods timed by `clock`.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        WaitingPods {
            pods: Mutex::new(HashMap::new()),
            clock,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<WaitingPod>>> {
        self.pods.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers `pod` as waiting for `plugins` (name, timeout).
    pub fn add(
        &self,
        pod: Arc<PodInfo>,
        node_name: &str,
        plugins: Vec<(String, Duration)>,
    ) -> Arc<WaitingPod> {
        let now = self.clock.now();
        let waiting = Arc::new(WaitingPod {
            node_name: node_name.to_string(),
            state: Mutex::new(WaitState {
                pending: plugins.into_iter().map(|(p, t)| (p, now + t)).collect(),
                rejection: None,
            }),
            changed: Notify::new(),
            registered: now,
            clock: self.clock.clone(),
            pod,
        });
        self.lock()
            .insert(waiting.pod.key().to_string(), waiting.clone());
        waiting
    }

    pub fn get(&self, pod_key: &str) -> Option<Arc<WaitingPod>> {
        self.lock().get(pod_key).cloned()
    }

    pub fn remove(&self, pod_key: &str) -> Option<Arc<WaitingPod>> {
        self.lock().remove(pod_key)
    }

    /// A copy of the waiting pods, so callers can allow or reject while iterating.
    pub fn list(&self) -> Vec<Arc<WaitingPod>> {
        self.lock().values().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
