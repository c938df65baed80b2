//! What several plugins (and the simulator's controllers) need to agree on, written once,
//! as upstream keeps it in component-helpers and `framework/plugins/helper`: node
//! affinity matching, taints and tolerations, score normalization and shapes, the
//! syntax checks of names in plugin args, the storage rules (claims and classes, the
//! CSI form of in-tree volumes) the volume plugins read alike, and UUIDs as text.
//!
//! A plugin imports these, never another plugin: the helpers sit between the framework
//! and the plugins in the layer order, so two plugins that ask the same question share
//! the answer without depending on each other.

pub mod csi_translation;
pub mod node_affinity;
pub mod score;
pub mod taints;
pub mod uuid;
pub mod validation;
pub mod volumes;
