//! Plugin health: how a plugin running in its documented fallback says so.
//!
//! A plugin whose outside source is down (the Prometheus plugins, docs/metrics-plugins.md) keeps
//! scheduling in a degraded mode: it scores every node equally. It reports that through
//! the [`PluginHealth`] of its profile instance, which the framework hands it in
//! [`super::Handle`]. The operator turns the report into the profile's `Degraded`
//! condition (reason `MetricsUnavailable`); `berth simulate` lists it in its report.
//!
//! Reports are level-triggered: a plugin calls [`PluginHealth::set_degraded`] each time a
//! query fails and [`PluginHealth::set_healthy`] each time one succeeds; only changes
//! reach the listener, so calling either on every cycle is cheap.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

/// Called after every change of a [`PluginHealth`]; must not block.
pub type HealthListener = Arc<dyn Fn() + Send + Sync>;

/// One plugin's fallback, as reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Degradation {
    /// The plugin, e.g. `NetworkTraffic`.
    pub plugin: String,
    /// The condition reason, e.g. `MetricsUnavailable`.
    pub reason: String,
    /// What failed, with the source's error, e.g.
    /// `NetworkTraffic: Prometheus at http://prom:9090 is unavailable: connection refused`.
    pub message: String,
}

/// The degraded plugins of one profile instance.
#[derive(Default)]
pub struct PluginHealth {
    degraded: Mutex<BTreeMap<String, Degradation>>,
    listener: Option<HealthListener>,
}

impl fmt::Debug for PluginHealth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginHealth")
            .field("degraded", &self.degraded())
            .finish_non_exhaustive()
    }
}

impl PluginHealth {
    /// Health without a listener (the simulator reads it at the end of the run).
    pub fn new() -> Self {
        Self::default()
    }

    /// Health whose changes call `listener` (the operator's profile controller reconciles
    /// the profile's status).
    pub fn with_listener(listener: HealthListener) -> Self {
        Self {
            degraded: Mutex::default(),
            listener: Some(listener),
        }
    }

    /// `plugin` runs in its fallback because of what `message` says. Replaces the
    /// plugin's previous report; the listener is called when anything changed.
    pub fn set_degraded(&self, plugin: &str, reason: &str, message: impl Into<String>) {
        let degradation = Degradation {
            plugin: plugin.to_string(),
            reason: reason.to_string(),
            message: message.into(),
        };
        let changed = {
            let mut degraded = self.degraded.lock().unwrap_or_else(PoisonError::into_inner);
            if degraded.get(plugin) == Some(&degradation) {
                false
            } else {
                degraded.insert(plugin.to_string(), degradation);
                true
            }
        };
        if changed {
            self.notify();
        }
    }

    /// `plugin` runs as configured again.
    pub fn set_healthy(&self, plugin: &str) {
        let changed = self
            .degraded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(plugin)
            .is_some();
        if changed {
            self.notify();
        }
    }

    /// The plugins now degraded, by plugin name.
    pub fn degraded(&self) -> Vec<Degradation> {
        self.degraded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect()
    }

    fn notify(&self) {
        if let Some(listener) = &self.listener {
            listener();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn only_changes_reach_the_listener() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = calls.clone();
        let health = PluginHealth::with_listener(Arc::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        }));
        health.set_healthy("NetworkTraffic");
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        health.set_degraded("NetworkTraffic", "MetricsUnavailable", "refused");
        health.set_degraded("NetworkTraffic", "MetricsUnavailable", "refused");
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        health.set_degraded("NetworkTraffic", "MetricsUnavailable", "timed out");
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        health.set_degraded("MetricsScore", "MetricsUnavailable", "timed out");
        assert_eq!(
            health
                .degraded()
                .iter()
                .map(|d| d.plugin.as_str())
                .collect::<Vec<_>>(),
            ["MetricsScore", "NetworkTraffic"]
        );
        health.set_healthy("NetworkTraffic");
        health.set_healthy("NetworkTraffic");
        assert_eq!(calls.load(Ordering::SeqCst), 4);
        assert_eq!(health.degraded().len(), 1);
    }
}
