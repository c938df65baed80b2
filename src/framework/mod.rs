//! The scheduling framework, free of Kubernetes I/O: extension-point traits ([`interface`]),
//! [`Status`], [`CycleState`], the plugin [`Registry`], profile resolution
//! ([`profile`]) and the [`Framework`] runner that calls the plugins of one profile.

pub mod claim_writer;
pub mod clock;
mod cycle_state;
pub mod events;
mod handle;
pub mod health;
pub mod interface;
pub mod kept;
pub mod nominator;
mod observer;
pub mod parallel;
pub mod profile;
mod registry;
mod runner;
pub mod signature;
mod status;
mod types;
pub mod victim_units;
mod waiting_pods;

pub use crate::api::{ExtensionPoint, FieldError, FieldErrorKind};
pub use claim_writer::{ClaimWriter, WriteError};
pub use clock::{Clock, RuntimeClock};
pub use cycle_state::{CycleState, StateData};
pub use events::{ActionType, ClusterEvent, EventResource};
pub use handle::{BindError, Binder, Handle, HandleBuilder, NoVolumeWriter, VolumeWriter};
pub use health::{Degradation, HealthListener, PluginHealth};
pub use interface::*;
pub use nominator::Nominator;
pub use observer::Observer;
pub use parallel::Parallelizer;
pub use profile::{ProfileConfig, ResolvedProfile, resolve};
pub use registry::{
    ArgsSpec, Coupling, DefaultPlugin, NoArgs, PluginArgs, PluginEntry, PluginError, PluginFactory,
    Registry, decode_args, lower_camel, without_default,
};
pub use runner::{Framework, KeptScores, MAX_PERMIT_TIMEOUT, RawScores, implements};
pub use signature::{SignFragment, Signature};
pub use status::{Code, Status};
pub use types::{
    GROUP_PREEMPTION_DOMAIN, NodeScoreDetail, NodeToStatus, PodGroupCycle, PodsToActivate,
    PostFilterResult, PreFilterOutcome, PreFilterResult, Preemption, QueuedPodInfo,
    RetryAfterBackoff, ScoredNode, Victim,
};
pub use waiting_pods::{WaitingPod, WaitingPods, format_duration};
