//! A hook for metrics: the framework reports how long each extension point took and with
//! which status code, without knowing about any metrics library. The operator implements
//! it with Prometheus histograms (`scheduler_framework_extension_point_duration_seconds`);
//! the simulator does not install one.
//!
//! Filter is reported once per node, as upstream does. Per-plugin timings are not
//! reported from the per-node points (Filter, Score), which keeps the hot path free of
//! extra clock reads per plugin.

use std::time::Duration;

use super::{Code, ExtensionPoint};

/// Receives framework timings.
pub trait Observer: Send + Sync {
    /// One run of an extension point in `profile`, ending with `code`.
    fn extension_point(&self, profile: &str, point: ExtensionPoint, code: Code, elapsed: Duration);
}
