//! DefaultBinder (placeholder while the plugin is being written).

use crate::framework::{Handle, NoArgs, Plugin, PluginError, PluginFactory};

pub struct DefaultBinder;

impl Plugin for DefaultBinder {
    fn name(&self) -> &str {
        Self::NAME
    }
}

impl PluginFactory for DefaultBinder {
    const NAME: &'static str = "DefaultBinder";
    const POINTS: &'static [crate::framework::ExtensionPoint] = &[];
    type Args = NoArgs;

    fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
        Ok(DefaultBinder)
    }
}
