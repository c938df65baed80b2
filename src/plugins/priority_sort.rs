//! PrioritySort (placeholder while the plugin is being written).

use crate::framework::{Handle, NoArgs, Plugin, PluginError, PluginFactory};

pub struct PrioritySort;

impl Plugin for PrioritySort {
    fn name(&self) -> &str {
        Self::NAME
    }
}

impl PluginFactory for PrioritySort {
    const NAME: &'static str = "PrioritySort";
    const POINTS: &'static [crate::framework::ExtensionPoint] = &[];
    type Args = NoArgs;

    fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
        Ok(PrioritySort)
    }
}
