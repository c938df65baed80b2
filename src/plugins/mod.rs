//! The built-in plugins, one module each, and the default registry.
//!
//! Shared scoring math (default normalization, piecewise-linear shapes) lives once in
//! [`helper`].

pub mod default_binder;
pub mod helper;
pub mod node_name;
pub mod node_resources;
pub mod node_unschedulable;
pub mod priority_sort;
pub mod reference;
pub mod scheduling_gates;
pub mod taint_toleration;

use crate::framework::{DefaultPlugin, Registry};

pub use default_binder::DefaultBinder;
pub use node_name::NodeName;
pub use node_resources::NodeResourcesFit;
pub use node_unschedulable::NodeUnschedulable;
pub use priority_sort::PrioritySort;
pub use scheduling_gates::SchedulingGates;
pub use taint_toleration::TaintToleration;

/// Every built-in plugin, with the default plugin set (names and weights as upstream
/// v1.31+, restricted to the plugins berth implements so far).
pub fn default_registry() -> Registry {
    let mut registry = Registry::new();
    registry
        .register::<SchedulingGates>()
        .register::<PrioritySort>()
        .register::<NodeUnschedulable>()
        .register::<NodeName>()
        .register::<TaintToleration>()
        .register::<NodeResourcesFit>()
        .register::<DefaultBinder>();
    registry.set_defaults(vec![
        DefaultPlugin::new("SchedulingGates"),
        DefaultPlugin::new("PrioritySort"),
        DefaultPlugin::new("NodeUnschedulable"),
        DefaultPlugin::new("NodeName"),
        DefaultPlugin::weighted("TaintToleration", 3),
        DefaultPlugin::weighted("NodeResourcesFit", 1),
        DefaultPlugin::new("DefaultBinder"),
    ]);
    registry
}
