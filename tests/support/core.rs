//! A scheduler core with one `default-scheduler` profile of the default plugins, for the
//! tests that drive the core directly (`schedule_one`, `complete_binding`). Those crates
//! include this file alone (`#[path]`), not the whole `support` module.

use std::sync::Arc;

use berth::api::SchedulerProfileSpec;
use berth::cluster::DisruptionBudgets;
use berth::framework::clock::Clock;
use berth::framework::{Framework, Handle, resolve};
use berth::scheduler::{Scheduler, SchedulerOptions};

/// How the core is set up; [`Default`] is the default profile, the runtime clock, no
/// Workload API PodGroups served, no disruption budgets.
#[derive(Default)]
pub struct Core {
    pub spec: SchedulerProfileSpec,
    /// The scheduler's clock (a test's virtual one); the runtime's when `None`.
    pub clock: Option<Arc<dyn Clock>>,
    /// Serve `scheduling.k8s.io/v1beta1` PodGroups (members queue as groups).
    pub pod_groups: bool,
    pub budgets: Option<Arc<DisruptionBudgets>>,
}

impl Core {
    /// The scheduler (seed 1), its profile's handle sharing the core's nominator, clock
    /// and pod-group states.
    pub fn build(self) -> Scheduler {
        let mut options = SchedulerOptions {
            seed: 1,
            ..SchedulerOptions::default()
        };
        if let Some(clock) = self.clock {
            options.clock = clock;
        }
        let mut scheduler = Scheduler::new(options);
        if self.pod_groups {
            scheduler.serve_pod_groups().expect("no profile yet");
        }
        let registry = berth::plugins::default_registry();
        let resolved = resolve(&self.spec, &registry).expect("valid");
        let handle = Handle::builder()
            .nominator(scheduler.nominator().clone())
            .clock(scheduler.clock().clone())
            .pod_group_states(scheduler.pod_group_states().clone())
            .legacy_workloads(scheduler.legacy_workloads().clone())
            .disruption_budgets(self.budgets.unwrap_or_default())
            .build();
        let framework = Arc::new(
            Framework::new("default-scheduler", resolved, &registry, handle).expect("plugins"),
        );
        scheduler
            .add_profile("default-scheduler", framework)
            .expect("profile");
        scheduler
    }
}
