//! The built-in plugins, one module each, and the default registry.
//!
//! A plugin module imports the framework and [`crate::helpers`], never another plugin:
//! what two plugins share (node affinity matching, tolerations, score normalization) lives
//! once in the helpers.

pub mod coscheduling;
pub mod default_binder;
pub mod default_preemption;
pub mod dynamic_resources;
pub mod gang_scheduling;
pub mod image_locality;
pub mod inter_pod_affinity;
pub mod node_affinity;
pub mod node_name;
pub mod node_ports;
pub mod node_resources;
pub mod node_unschedulable;
pub mod node_volume_limits;
pub mod pod_topology_spread;
pub mod priority_sort;
pub mod prometheus;
pub mod qos_sort;
pub mod scheduling_gates;
pub mod taint_toleration;
pub mod volume_binding;
pub mod volume_restrictions;
pub mod volume_zone;

use crate::framework::Registry;

pub use coscheduling::Coscheduling;
pub use default_binder::DefaultBinder;
pub use default_preemption::DefaultPreemption;
pub use dynamic_resources::{DynamicResources, DynamicResourcesArgs};
pub use gang_scheduling::GangScheduling;
pub use image_locality::ImageLocality;
pub use inter_pod_affinity::InterPodAffinity;
pub use node_affinity::NodeAffinity;
pub use node_name::NodeName;
pub use node_ports::NodePorts;
pub use node_resources::NodeResourcesBalancedAllocation;
pub use node_resources::NodeResourcesFit;
pub use node_unschedulable::NodeUnschedulable;
pub use node_volume_limits::NodeVolumeLimits;
pub use pod_topology_spread::PodTopologySpread;
pub use priority_sort::PrioritySort;
pub use prometheus::{MetricsScore, NetworkTraffic};
pub use qos_sort::QosSort;
pub use scheduling_gates::SchedulingGates;
pub use taint_toleration::TaintToleration;
pub use volume_binding::{VolumeBinding, VolumeBindingArgs};
pub use volume_restrictions::VolumeRestrictions;
pub use volume_zone::VolumeZone;

/// Every built-in plugin, with the default plugin set: names, order and weights as
/// upstream v1.31+ (1.37's, with the GenericWorkload gate on: GangScheduling last).
/// `register_default` adds a plugin to the default set in the order written here;
/// Coscheduling, QOSSort, NetworkTraffic and MetricsScore are registered but not in the
/// default set: profiles enable them. Adding a plugin is its module and one line here.
pub fn default_registry() -> Registry {
    let mut registry = Registry::new();
    registry
        .register_default::<SchedulingGates>()
        .register_default::<PrioritySort>()
        .register_default::<NodeUnschedulable>()
        .register_default::<NodeName>()
        .register_default_weighted::<TaintToleration>(3)
        .register_default_weighted::<NodeAffinity>(2)
        .register_default::<NodePorts>()
        .register_default_weighted::<NodeResourcesFit>(1)
        .register_default::<VolumeRestrictions>()
        .register_default::<NodeVolumeLimits>()
        .register_default::<VolumeBinding>()
        .register_default::<VolumeZone>()
        .register_default_weighted::<PodTopologySpread>(2)
        .register_default_weighted::<InterPodAffinity>(2)
        .register_default_weighted::<DynamicResources>(2)
        .register_default::<DefaultPreemption>()
        .register_default_weighted::<NodeResourcesBalancedAllocation>(1)
        .register_default_weighted::<ImageLocality>(1)
        .register_default::<DefaultBinder>()
        .register_default::<GangScheduling>()
        .register::<Coscheduling>()
        .register::<QosSort>()
        .register::<NetworkTraffic>()
        .register::<MetricsScore>();
    registry
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::{ExtensionPoint, Handle, implements};

    /// The extension points a registry entry declares (which drive the CRD and profile
    /// resolution) are exactly the points its instance implements.
    #[test]
    fn every_plugin_implements_exactly_its_declared_points() {
        let handle = Handle::builder().build();
        for entry in default_registry().entries() {
            let plugin = entry
                .build(entry.example_args().as_ref(), "test", &handle)
                .unwrap_or_else(|e| panic!("{} builds with its example args: {e}", entry.name));
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
