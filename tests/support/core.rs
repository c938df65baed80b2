//! A scheduler core with one `default-scheduler` profile of the default plugins, for the
//! tests that drive the core directly (`schedule_one`, `complete_binding`). Those crates
//! include this file alone (`#[path]`), not the whole `support` module.
//!
//! [`Dialect`] lets a gang test run the same rows through each of the three ways a pod
//! names its gang.

#![allow(dead_code)]

use std::sync::Arc;

use berth::api::{POD_GROUP_LABEL, POD_GROUP_LABEL_COMPAT, SchedulerProfileSpec};
use berth::cluster::{DisruptionBudgets, PodGroups};
use berth::framework::clock::Clock;
use berth::framework::{Framework, Handle, resolve};
use berth::scheduler::{Scheduler, SchedulerOptions};
use k8s_openapi::api::core::v1::{Pod, PodSchedulingGroup};
use k8s_openapi::api::scheduling::v1beta1::{
    GangSchedulingPolicy, PodGroup, PodGroupSchedulingPolicy, PodGroupSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

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
    /// berth's and scheduler-plugins' PodGroups, which the profile's Coscheduling reads.
    pub coscheduling: Option<Arc<PodGroups>>,
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
            .pod_groups(self.coscheduling.unwrap_or_default())
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

/// How a gang's pods name it: a Workload API PodGroup (`spec.schedulingGroup`,
/// GangScheduling), scheduler-plugins' PodGroup and label, or berth's own (both
/// Coscheduling's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Workload,
    SchedulerPlugins,
    Berth,
}

pub const DIALECTS: [Dialect; 3] = [Dialect::Workload, Dialect::SchedulerPlugins, Dialect::Berth];

impl Dialect {
    /// The profile: the default one, plus Coscheduling (as scheduler-plugins' sample
    /// configures it: every point, and QueueSort in PrioritySort's place) for the
    /// PodGroups it serves.
    pub fn profile(self) -> SchedulerProfileSpec {
        match self {
            Dialect::Workload => SchedulerProfileSpec::default(),
            Dialect::SchedulerPlugins | Dialect::Berth => serde_json::from_value(serde_json::json!({
                "plugins": {
                    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
                },
            }))
            .expect("a valid profile"),
        }
    }

    /// The core of [`Core`] with this dialect's profile and PodGroups (Workload API
    /// PodGroups are served in every dialect: the victims' groups are theirs).
    pub fn core(self, core: Core) -> (Core, Arc<PodGroups>) {
        let lister = Arc::new(PodGroups::new());
        let core = Core {
            spec: self.profile(),
            pod_groups: true,
            coscheduling: Some(lister.clone()),
            ..core
        };
        (core, lister)
    }

    /// Makes `pod` a member of gang `group`.
    pub fn join(self, pod: &mut Pod, group: &str) {
        let label = match self {
            Dialect::Workload => {
                pod.spec.as_mut().expect("spec").scheduling_group = Some(PodSchedulingGroup {
                    pod_group_name: Some(group.to_string()),
                });
                return;
            }
            Dialect::SchedulerPlugins => POD_GROUP_LABEL_COMPAT,
            Dialect::Berth => POD_GROUP_LABEL,
        };
        pod.metadata
            .labels
            .get_or_insert_default()
            .insert(label.to_string(), group.to_string());
    }

    /// Creates gang `default/name` of at least `min` members (`None`: no minimum; one
    /// member suffices) whose members run at `priority`, and tells the scheduler.
    pub fn add_gang(
        self,
        scheduler: &mut berth::scheduler::Scheduler,
        lister: &PodGroups,
        name: &str,
        min: Option<i32>,
        priority: i32,
    ) {
        let metadata = ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some("default".to_string()),
            uid: Some(format!("uid-{name}")),
            generation: Some(1),
            ..ObjectMeta::default()
        };
        match self {
            Dialect::Workload => scheduler.on_scheduling_group_apply(PodGroup {
                metadata,
                spec: PodGroupSpec {
                    priority: Some(priority),
                    scheduling_policy: PodGroupSchedulingPolicy {
                        gang: min.map(|min_count| GangSchedulingPolicy { min_count }),
                        basic: min.is_none().then(Default::default),
                    },
                    ..PodGroupSpec::default()
                },
                status: None,
            }),
            Dialect::SchedulerPlugins | Dialect::Berth => {
                let min_member = min.unwrap_or(1);
                if self == Dialect::Berth {
                    lister.apply(&berth::api::PodGroup {
                        metadata,
                        spec: berth::api::PodGroupSpec {
                            min_member,
                            min_resources: None,
                            schedule_timeout_seconds: None,
                        },
                        status: None,
                    });
                } else {
                    lister.apply_scheduler_plugins(&berth::api::scheduler_plugins::PodGroup {
                        metadata,
                        spec: berth::api::scheduler_plugins::PodGroupSpec {
                            min_member,
                            ..Default::default()
                        },
                        status: None,
                    });
                }
                let group = lister.get("default", name);
                scheduler.on_coscheduling_group_change("default", name, group.as_ref());
            }
        }
    }

    /// The group's message when it cannot reach its minimum with `scheduled` members
    /// placed and `remaining` left: GangScheduling's or Coscheduling's PlacementFeasible.
    pub fn cannot_reach(self, group: &str, min: i32, scheduled: usize, remaining: usize) -> String {
        match self {
            Dialect::Workload => format!(
                "minCount ({min}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining"
            ),
            Dialect::SchedulerPlugins | Dialect::Berth => format!(
                "pod group default/{group} cannot reach minMember ({min}): {scheduled} scheduled, {remaining} remaining"
            ),
        }
    }
}
