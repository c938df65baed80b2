//! berth's Kubernetes API (group `berth.dev`, version `v1alpha1`): the
//! [`SchedulerProfile`] and [`PodGroup`] custom resources, and the generation of their CRDs,
//! enriched from the plugin registry so the API server validates plugin names and args.

pub mod convert;
mod crd;
mod podgroup;
mod profile;
pub mod validation;

pub use crd::{CrdError, crds, crds_yaml};
pub use podgroup::{
    MIN_MEMBER_ANNOTATION, POD_GROUP_LABEL, POD_GROUP_LABEL_COMPAT, PodGroup, PodGroupPhase,
    PodGroupSpec, PodGroupStatus,
};
pub use profile::{
    EffectivePlugins, PluginRef, PluginSet, Plugins, SchedulerProfile, SchedulerProfileSpec,
    SchedulerProfileStatus, WeightedPlugin,
};
pub use validation::{
    CrdValidator, ProfileValidation, ProfileValidator, SchemaError, validate_pod_group,
    validate_profile,
};

/// The API group of berth's resources.
pub const GROUP: &str = "berth.dev";
/// The API version of berth's resources.
pub const VERSION: &str = "v1alpha1";
