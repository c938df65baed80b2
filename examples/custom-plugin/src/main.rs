//! `berth-custom`: berth's command line with three out-of-tree plugins registered next to
//! the built-ins, the Rust counterpart of upstream's
//! `app.NewSchedulerCommand(app.WithPlugin(name, factory))`.
//!
//! - [`MaxPodsPerZone`] (PreFilter, Filter, PreBind; typed args): at most `maxPods` pods
//!   of one group per zone.
//! - [`PreferNodes`] (Score + min-max NormalizeScore): prefers the nodes its args name.
//! - [`InFlightBindings`] (Reserve/Unreserve, PreBind, PostBind): a ledger of bindings in
//!   flight per node, handed from Reserve to PreBind through `CycleState`.
//!
//! Every subcommand sees them: `crds` emits a typed `pluginConfig` property for each,
//! `plugins` lists them, `simulate` schedules with them.
//!
//! ```sh
//! cargo run -p berth-custom-plugin -- crds | grep -A12 maxPodsPerZone
//! cargo run -p berth-custom-plugin -- simulate -o json --explain \
//!     -f examples/custom-plugin/cluster.yaml -f examples/custom-plugin/profile.yaml
//! ```
//!
//! The guide is `docs/writing-plugins.md`.

mod in_flight_bindings;
mod max_pods_per_zone;
mod prefer_nodes;
#[cfg(test)]
mod test_util;

use std::process::ExitCode;

use in_flight_bindings::InFlightBindings;
use max_pods_per_zone::MaxPodsPerZone;
use prefer_nodes::PreferNodes;

fn main() -> ExitCode {
    let mut registry = berth::plugins::default_registry();
    registry
        .register::<MaxPodsPerZone>()
        .register::<PreferNodes>()
        .register::<InFlightBindings>();
    berth::cli::main(registry)
}

/// The value of label `key` in `meta`, if set.
fn label<'a>(
    meta: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    key: &str,
) -> Option<&'a str> {
    meta.labels.as_ref()?.get(key).map(String::as_str)
}

/// `"value"`: a string rendered as JSON, as `FieldError` values are.
fn quoted(value: &str) -> String {
    serde_json::Value::from(value).to_string()
}
