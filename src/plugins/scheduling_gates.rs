//! SchedulingGates (placeholder while the plugin is being written).

use crate::framework::{Handle, NoArgs, Plugin, PluginError, PluginFactory};

pub struct SchedulingGates;

impl Plugin for SchedulingGates {
    fn name(&self) -> &str {
        Self::NAME
    }
}

impl PluginFactory for SchedulingGates {
    const NAME: &'static str = "SchedulingGates";
    const POINTS: &'static [crate::framework::ExtensionPoint] = &[];
    type Args = NoArgs;

    fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
        Ok(SchedulingGates)
    }
}
