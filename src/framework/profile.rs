//! Profile resolution: from `spec.plugins` and `spec.pluginConfig` to the ordered plugin
//! list per extension point, with upstream's merge rules.

/// Placeholder until resolution lands.
pub struct ProfileConfig;
pub struct ResolvedProfile;
pub fn resolve() {}
