//! The cluster model the scheduling core reads: resources and quantities, pods with their
//! precomputed requests ([`PodInfo`]), per-node aggregates ([`NodeInfo`]), the incremental
//! [`Cache`] fed by pod and node events (with assumed pods), and the cheap [`Snapshot`] a
//! scheduling cycle works on; beside them, the listers plugins read directly
//! ([`Workloads`], [`PodGroups`], [`Volumes`], [`DeviceResources`], and 1.35's
//! [`LegacyWorkloads`]).

mod assume;
mod cache;
mod device_resources;
mod disruption_budgets;
mod legacy_pod;
mod legacy_workloads;
pub(crate) mod lock;
mod node_info;
mod pod_group_states;
mod pod_groups;
mod pod_info;
mod pod_requests;
mod resource;
mod snapshot;
mod volumes;
mod workloads;

pub use assume::resource_version;
pub use cache::{Cache, CacheError, SetAside};
pub use device_resources::{
    DeviceResources, IMPLICIT_EXTENDED_RESOURCE_PREFIX, allocated_devices, is_allocated,
    is_controlled_by, reserved_for,
};
pub use disruption_budgets::{BudgetTracker, DisruptionBudgets};
pub use legacy_pod::{WORKLOAD_REF_ANNOTATION, WorkloadReference};
pub use legacy_workloads::{
    LEGACY_SCHEDULING_TIMEOUT, LegacyGangPolicy, LegacyGroup, LegacyGroupKey, LegacyWorkloads,
    Workload as LegacyWorkload, WorkloadPodGroup as LegacyWorkloadPodGroup,
    WorkloadPodGroupPolicy as LegacyWorkloadPodGroupPolicy, WorkloadSpec as LegacyWorkloadSpec,
};
pub use node_info::{
    HostPortInfo, ImageStateSummary, NodeInfo, PodIter, PodList, normalized_image_name,
};
pub use pod_group_states::{
    GroupDialect, GroupKey, PodGroupState, PodGroupStates, gang_min_count, short_of,
};
pub use pod_groups::{
    API_VERSION_ANNOTATION, PodGroups, core_pod_group, implicit_group, implicit_owner,
    min_member_of, pod_group_of,
};
pub use pod_info::{Memo, PodInfo, StartTime, host_ports, pod_key, scheduler_name, start_time};
pub use pod_requests::default_pod_level_requests;
pub use resource::{
    DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, QuantityError, Resource,
    is_extended_resource_name, is_scalar_resource_name, parse_milli_value, parse_nanos,
    parse_nanos_exact, parse_value,
};
pub use snapshot::{ChangeCursor, NamespaceLabels, Snapshot};
pub use volumes::{Volumes, claim_key};
pub use workloads::Workloads;
