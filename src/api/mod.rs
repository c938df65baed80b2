//! berth's Kubernetes API (group `berth.dev`, version `v1alpha1`) as plain types: the
//! [`SchedulerProfile`] and [`PodGroup`] custom resources, the [`ExtensionPoint`]s a
//! profile names, the apimachinery-style [`FieldError`] every check of user input
//! reports and the Go-syntax [`GoDuration`] of upstream's plugin args; and, in
//! [`scheduler_plugins`], scheduler-plugins' PodGroup, which berth reads but does not
//! own. This is the
//! bottom layer: it imports nothing of berth. Generating the CRDs from these types and
//! the plugin registry, and validating profiles locally, is the job of
//! [`crate::schema`], above the framework.

mod duration;
mod extension_point;
mod field_error;
pub(crate) mod limits;
mod podgroup;
mod profile;
pub mod scheduler_plugins;

pub use duration::GoDuration;
pub use extension_point::ExtensionPoint;
pub use field_error::{FieldError, FieldErrorKind};
pub use podgroup::{
    MIN_MEMBER_ANNOTATION, POD_GROUP_LABEL, POD_GROUP_LABEL_COMPAT, PodGroup, PodGroupPhase,
    PodGroupSpec, PodGroupStatus,
};
pub use profile::{
    EffectivePlugins, PluginRef, PluginSet, Plugins, SchedulerProfile, SchedulerProfileSpec,
    SchedulerProfileStatus, WeightedPlugin,
};

/// The API group of berth's resources.
pub const GROUP: &str = "berth.dev";
/// The API version of berth's resources.
pub const VERSION: &str = "v1alpha1";
