//! The built-in plugins, one module each, and the default registry.
//!
//! Shared scoring math (default normalization, piecewise-linear shapes) lives once in
//! [`helper`].

pub mod coscheduling;
pub mod default_binder;
pub mod helper;
pub mod image_locality;
pub mod inter_pod_affinity;
pub mod node_affinity;
pub mod node_name;
pub mod node_ports;
pub mod node_resources;
pub mod node_unschedulable;
pub mod pod_topology_spread;
pub mod priority_sort;
pub mod prometheus;
pub mod qos_sort;
pub mod scheduling_gates;
pub mod taint_toleration;

use crate::framework::{DefaultPlugin, Registry};

pub use coscheduling::Coscheduling;
pub use default_binder::DefaultBinder;
pub use image_locality::ImageLocality;
pub use inter_pod_affinity::InterPodAffinity;
pub use node_affinity::NodeAffinity;
pub use node_name::NodeName;
pub use node_ports::NodePorts;
pub use node_resources::NodeResourcesBalancedAllocation;
pub use node_resources::NodeResourcesFit;
pub use node_unschedulable::NodeUnschedulable;
pub use pod_topology_spread::PodTopologySpread;
pub use priority_sort::PrioritySort;
pub use prometheus::{MetricsScore, NetworkTraffic};
pub use qos_sort::QosSort;
pub use scheduling_gates::SchedulingGates;
pub use taint_toleration::TaintToleration;

/// Every built-in plugin, with the default plugin set: names, order and weights as
/// upstream v1.31+, without the volume plugins and DefaultPreemption (not built yet).
/// Coscheduling, QOSSort, NetworkTraffic and MetricsScore are registered but not in the
/// default set: profiles enable them.
pub fn default_registry() -> Registry {
    let mut registry = Registry::new();
    registry
        .register::<SchedulingGates>()
        .register::<PrioritySort>()
        .register::<NodeUnschedulable>()
        .register::<NodeName>()
        .register::<TaintToleration>()
        .register::<NodeAffinity>()
        .register::<NodePorts>()
        .register::<NodeResourcesFit>()
        .register::<PodTopologySpread>()
        .register::<InterPodAffinity>()
        .register::<NodeResourcesBalancedAllocation>()
        .register::<ImageLocality>()
        .register::<DefaultBinder>()
        .register::<Coscheduling>()
        .register::<QosSort>()
        .register::<NetworkTraffic>()
        .register::<MetricsScore>();
    registry.set_defaults(vec![
        DefaultPlugin::new("SchedulingGates"),
        DefaultPlugin::new("PrioritySort"),
        DefaultPlugin::new("NodeUnschedulable"),
        DefaultPlugin::new("NodeName"),
        DefaultPlugin::weighted("TaintToleration", 3),
        DefaultPlugin::weighted("NodeAffinity", 2),
        DefaultPlugin::new("NodePorts"),
        DefaultPlugin::weighted("NodeResourcesFit", 1),
        DefaultPlugin::weighted("PodTopologySpread", 2),
        DefaultPlugin::weighted("InterPodAffinity", 2),
        DefaultPlugin::weighted("NodeResourcesBalancedAllocation", 1),
        DefaultPlugin::weighted("ImageLocality", 1),
        DefaultPlugin::new("DefaultBinder"),
    ]);
    registry
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::{ExtensionPoint, Handle, implements};

    /// The fields a plugin's args cannot default (where its Prometheus is, what to
    /// query); `None` for plugins that build from default args.
    fn required_args(plugin: &str) -> Option<serde_json::Value> {
        let address = "http://127.0.0.1:9090";
        match plugin {
            "NetworkTraffic" => Some(serde_json::json!({"prometheusAddress": address})),
            "MetricsScore" => Some(serde_json::json!({
                "prometheusAddress": address,
                "metrics": [{"query": "node_load1", "direction": "LowerIsBetter"}],
            })),
            _ => None,
        }
    }

    /// The extension points a registry entry declares (which drive the CRD and profile
    /// resolution) are exactly the points its instance implements.
    #[test]
    fn every_plugin_implements_exactly_its_declared_points() {
        let handle = Handle::builder().build();
        for entry in default_registry().entries() {
            let args = required_args(entry.name);
            let plugin = entry
                .build(args.as_ref(), "test", &handle)
                .unwrap_or_else(|e| panic!("{} builds with default args: {e}", entry.name));
            for point in ExtensionPoint::ALL {
                assert_eq!(
                    implements(plugin.as_ref(), point),
                    entry.implements(point),
                    "{} at {point}",
                    entry.name
                );
            }
        }
    }
}
