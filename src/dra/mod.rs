//! Dynamic resource allocation as kube-scheduler 1.37 does it with its default features:
//! the structured-parameters allocator that picks devices from ResourceSlices for a
//! pod's ResourceClaims ([`allocator`]), the pools a node sees ([`pools`]), device
//! selectors in CEL ([`cel`]), consumable capacity ([`capacity`]) and exact quantities
//! ([`quantity`]).
//!
//! This module is below `plugins` and above `helpers`: the DynamicResources plugin, the
//! NodeResourcesFit check of DRA-backed extended resources and the simulator's report
//! all read it, and it reads node selectors through `helpers`.

pub mod allocator;
pub mod capacity;
pub mod cel;
pub mod pools;
pub mod quantity;

pub use allocator::{
    AllocateError, AllocatedState, Allocator, ClassLister, DeviceId, INVALID_POOLS,
    MAX_DEVICES_PER_CLAIM, claim_label,
};
pub use cel::{SelectorError, Selectors};
pub use pools::PoolId;
pub use quantity::{Amount, Format};
