//! The schema layer: what the plugin registry adds to berth's API types. It generates the
//! CRDs with every registered plugin's name and args schema ([`crds`]), validates
//! profiles and PodGroups locally exactly as the API server would ([`validation`]), and
//! renders the plugin reference `berth plugins` prints ([`reference`]). It sits above the
//! framework (it reads the [`Registry`](crate::framework::Registry) and resolves
//! profiles) and below the adapters and the command line.

mod crd;
pub mod reference;
pub mod validation;

pub use crd::{CrdError, crds, crds_yaml};
pub use validation::{
    CrdValidator, ProfileValidation, ProfileValidator, SchemaError, validate_pod_group,
    validate_profile,
};
