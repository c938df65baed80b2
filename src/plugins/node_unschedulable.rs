//! NodeUnschedulable (placeholder while the plugin is being written).

use crate::framework::{Handle, NoArgs, Plugin, PluginError, PluginFactory};

pub struct NodeUnschedulable;

impl Plugin for NodeUnschedulable {
    fn name(&self) -> &str {
        Self::NAME
    }
}

impl PluginFactory for NodeUnschedulable {
    const NAME: &'static str = "NodeUnschedulable";
    const POINTS: &'static [crate::framework::ExtensionPoint] = &[];
    type Args = NoArgs;

    fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
        Ok(NodeUnschedulable)
    }
}
