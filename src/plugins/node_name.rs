//! NodeName (placeholder while the plugin is being written).

use crate::framework::{Handle, NoArgs, Plugin, PluginError, PluginFactory};

pub struct NodeName;

impl Plugin for NodeName {
    fn name(&self) -> &str {
        Self::NAME
    }
}

impl PluginFactory for NodeName {
    const NAME: &'static str = "NodeName";
    const POINTS: &'static [crate::framework::ExtensionPoint] = &[];
    type Args = NoArgs;

    fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
        Ok(NodeName)
    }
}
