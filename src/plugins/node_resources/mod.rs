//! NodeResourcesFit (placeholder while the plugin is being written).

use crate::framework::{Handle, NoArgs, Plugin, PluginError, PluginFactory};

pub struct NodeResourcesFit;

impl Plugin for NodeResourcesFit {
    fn name(&self) -> &str {
        Self::NAME
    }
}

impl PluginFactory for NodeResourcesFit {
    const NAME: &'static str = "NodeResourcesFit";
    const POINTS: &'static [crate::framework::ExtensionPoint] = &[];
    type Args = NoArgs;

    fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
        Ok(NodeResourcesFit)
    }
}
