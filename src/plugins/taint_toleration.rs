//! TaintToleration (placeholder while the plugin is being written).

use crate::framework::{Handle, NoArgs, Plugin, PluginError, PluginFactory};

pub struct TaintToleration;

impl Plugin for TaintToleration {
    fn name(&self) -> &str {
        Self::NAME
    }
}

impl PluginFactory for TaintToleration {
    const NAME: &'static str = "TaintToleration";
    const POINTS: &'static [crate::framework::ExtensionPoint] = &[];
    type Args = NoArgs;

    fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
        Ok(TaintToleration)
    }
}
