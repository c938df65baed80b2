//! Turning a resolved profile into a running [`Framework`]: the one instantiation
//! `berth simulate` and the operator share, so that both hand plugins the same services
//! (the scheduler's worker threads and clock, the binder, the workload, PodGroup and
//! storage listers) and differ only in where those services come from.

use std::sync::Arc;

use crate::cluster::{
    DeviceResources, DisruptionBudgets, LegacyWorkloads, PodGroupStates, PodGroups, Volumes,
    Workloads,
};
use crate::framework::{
    Binder, ClaimWriter, Clock, Framework, Handle, Nominator, Observer, Parallelizer, PluginError,
    PluginHealth, Registry, ResolvedProfile, VolumeWriter,
};

/// What every profile instance of one scheduler shares.
#[derive(Clone)]
pub struct ProfileServices {
    /// Writes bindings (DefaultBinder).
    pub binder: Arc<dyn Binder>,
    /// Writes volume bindings (VolumeBinding's PreBind).
    pub volume_writer: Arc<dyn VolumeWriter>,
    /// The scheduler's worker threads ([`Scheduler::parallelizer`](super::Scheduler::parallelizer)).
    pub parallelizer: Arc<Parallelizer>,
    /// The scheduler's time ([`Scheduler::clock`](super::Scheduler::clock)).
    pub clock: Arc<dyn Clock>,
    /// The scheduler's nominations ([`Scheduler::nominator`](super::Scheduler::nominator)).
    pub nominator: Arc<Nominator>,
    /// Workload selectors, for default spreading.
    pub workloads: Arc<Workloads>,
    /// PodGroups, for gang scheduling.
    pub pod_groups: Arc<PodGroups>,
    /// The Workload API's pod groups ([`Scheduler::pod_group_states`](super::Scheduler::pod_group_states)).
    pub pod_group_states: Arc<PodGroupStates>,
    /// Kubernetes 1.35's gangs ([`Scheduler::legacy_workloads`](super::Scheduler::legacy_workloads)).
    pub legacy_workloads: Arc<LegacyWorkloads>,
    /// Storage objects, for the volume plugins.
    pub volumes: Arc<Volumes>,
    /// PodDisruptionBudgets, for preemption.
    pub disruption_budgets: Arc<DisruptionBudgets>,
    /// resource.k8s.io objects, for DynamicResources (shared by every profile).
    pub device_resources: Arc<DeviceResources>,
    /// Writes ResourceClaims (DynamicResources' PreBind).
    pub claim_writer: Arc<dyn ClaimWriter>,
    /// Records extension-point timings of every instance (metrics), if any.
    pub observer: Option<Arc<dyn Observer>>,
}

impl ProfileServices {
    /// Instantiates the plugins of `resolved` for the profile serving `scheduler_name`,
    /// reporting plugin health to `health`; the instance holds its own Permit waiters.
    pub fn instantiate(
        &self,
        scheduler_name: &str,
        resolved: ResolvedProfile,
        registry: &Registry,
        health: Arc<PluginHealth>,
    ) -> Result<Framework, PluginError> {
        let handle = Handle::builder()
            .binder(self.binder.clone())
            .volume_writer(self.volume_writer.clone())
            .parallelizer(self.parallelizer.clone())
            .clock(self.clock.clone())
            .nominator(self.nominator.clone())
            .workloads(self.workloads.clone())
            .pod_groups(self.pod_groups.clone())
            .pod_group_states(self.pod_group_states.clone())
            .legacy_workloads(self.legacy_workloads.clone())
            .volumes(self.volumes.clone())
            .disruption_budgets(self.disruption_budgets.clone())
            .device_resources(self.device_resources.clone())
            .claim_writer(self.claim_writer.clone())
            .health(health)
            .build();
        let framework = Framework::new(scheduler_name, resolved, registry, handle)?;
        Ok(match &self.observer {
            Some(observer) => framework.with_observer(observer.clone()),
            None => framework,
        })
    }
}
