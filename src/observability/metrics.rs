//! The operator's Prometheus metrics.
//!
//! Names, help texts, label names and buckets follow kube-scheduler's
//! `pkg/scheduler/metrics/metrics.go` wherever upstream defines the metric, so existing
//! dashboards and alerts work unchanged. Every `scheduler_*` metric carries a `profile`
//! label holding the scheduler name (as upstream, where a profile *is* a scheduler name);
//! for `scheduler_pending_pods` and `scheduler_pod_scheduling_sli_duration_seconds` that
//! label is berth's addition, because berth runs one queue per profile.
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `scheduler_schedule_attempts_total` | counter | `result`, `profile` |
//! | `scheduler_scheduling_attempt_duration_seconds` | histogram | `result`, `profile` |
//! | `scheduler_pending_pods` | gauge | `queue`, `profile` |
//! | `scheduler_pod_scheduling_sli_duration_seconds` | histogram | `attempts`, `profile` |
//! | `scheduler_podgroup_schedule_attempts_total` | counter | `result`, `profile` |
//! | `scheduler_podgroup_scheduling_attempt_duration_seconds` | histogram | `result`, `profile` |
//! | `scheduler_podgroup_scheduling_algorithm_duration_seconds` | histogram | |
//! | `scheduler_framework_extension_point_duration_seconds` | histogram | `extension_point`, `status`, `profile` |
//! | `berth_binding_duration_seconds` | histogram | `profile`, `result` |
//! | `berth_profile_reconcile_total` | counter | `result` |
//! | `berth_profile_reconcile_duration_seconds` | histogram | |
//! | `berth_profile_condition` | gauge | `profile`, `type`, `status` |
//! | `berth_leader` | gauge | |
//!
//! `scheduler_pending_pods` has upstream's `incomplete` queue (members of pod groups whose
//! PodGroup has not been seen) but not its `pending` one (members that arrive while their
//! group is in a cycle), which berth's queue does not hold apart.
//!
//! The exposition is OpenMetrics text (what `prometheus-client` writes), served with
//! [`CONTENT_TYPE`].

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::framework::{Code, ExtensionPoint, Observer};

/// The content type of [`Metrics::encode`]'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// How a scheduling attempt ended, as upstream's `result` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttemptResult {
    /// The pod was assigned a node (the attempt includes binding).
    Scheduled,
    /// No node fits the pod.
    Unschedulable,
    /// An internal scheduler problem.
    Error,
    /// A pod group that did not fit, for which preemption is evicting victims (pod-group
    /// attempts only).
    WaitingOnPreemption,
}

impl AttemptResult {
    const ALL: [AttemptResult; 4] = [
        AttemptResult::Scheduled,
        AttemptResult::Unschedulable,
        AttemptResult::Error,
        AttemptResult::WaitingOnPreemption,
    ];

    /// The label value upstream uses (`pkg/scheduler/metrics/profile_metrics.go`).
    pub fn label(self) -> &'static str {
        match self {
            AttemptResult::Scheduled => "scheduled",
            AttemptResult::Unschedulable => "unschedulable",
            AttemptResult::Error => "error",
            AttemptResult::WaitingOnPreemption => "waiting_on_preemption",
        }
    }
}

/// The queues of `scheduler_pending_pods`, as upstream's `queue` label.
const QUEUES: [&str; 5] = ["active", "backoff", "unschedulable", "gated", "incomplete"];

/// `result` of berth's binding and reconcile metrics, as controller-runtime's
/// `controller_runtime_reconcile_total`.
const SUCCESS: &str = "success";
const ERROR: &str = "error";

/// The condition statuses of Kubernetes conditions.
const CONDITION_STATUSES: [&str; 3] = ["True", "False", "Unknown"];

/// Upstream caps the `attempts` label of the SLI histogram at "15+" to bound cardinality
/// (`getAttemptsLabel` in `pkg/scheduler/schedule_one.go`).
const ATTEMPTS_LABELS: [&str; 16] = [
    "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15+",
];

fn attempts_label(attempts: u32) -> &'static str {
    let index = usize::try_from(attempts).map_or(ATTEMPTS_LABELS.len() - 1, |a| {
        a.min(ATTEMPTS_LABELS.len() - 1)
    });
    ATTEMPTS_LABELS[index]
}

/// A [`Code`]'s upstream name (its `String()`, the `status` label) and its slot in a
/// profile's extension-point handles.
fn code_slot(code: Code) -> (usize, &'static str) {
    match code {
        Code::Success => (0, "Success"),
        Code::Error => (1, "Error"),
        Code::Unschedulable => (2, "Unschedulable"),
        Code::UnschedulableAndUnresolvable => (3, "UnschedulableAndUnresolvable"),
        Code::Wait => (4, "Wait"),
        Code::Skip => (5, "Skip"),
        Code::Pending => (6, "Pending"),
    }
}

/// Every code, for removing a profile's series; [`code_slot`] numbers them in this order.
const ALL_CODES: [Code; 7] = [
    Code::Success,
    Code::Error,
    Code::Unschedulable,
    Code::UnschedulableAndUnresolvable,
    Code::Wait,
    Code::Skip,
    Code::Pending,
];
const CODES: usize = ALL_CODES.len();
const POINTS: usize = ExtensionPoint::ALL.len();

/// Profile names are interned once, so label sets clone an `Arc` instead of a `String`.
type ProfileName = Arc<str>;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultProfileLabels {
    result: &'static str,
    profile: ProfileName,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    queue: &'static str,
    profile: ProfileName,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AttemptsLabels {
    attempts: &'static str,
    profile: ProfileName,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ExtensionPointLabels {
    extension_point: &'static str,
    status: &'static str,
    profile: ProfileName,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProfileResultLabels {
    profile: ProfileName,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ConditionLabels {
    profile: ProfileName,
    r#type: String,
    status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PreemptorLabels {
    preemptor: &'static str,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// What is kept per profile name: the interned name, the extension-point histograms the
/// Observer has touched (so the per-node Filter path neither allocates nor takes the
/// family's lock), and the condition types set, so that they can be removed.
struct ProfileEntry {
    name: ProfileName,
    extension_points: [OnceLock<Histogram>; POINTS * CODES],
    condition_types: Mutex<BTreeSet<String>>,
}

/// The operator's metrics, registered in their own registry.
pub struct Metrics {
    registry: Registry,
    profiles: RwLock<HashMap<ProfileName, Arc<ProfileEntry>>>,
    schedule_attempts: Family<ResultProfileLabels, Counter>,
    scheduling_attempt_duration: HistogramFamily<ResultProfileLabels>,
    pending_pods: Family<QueueLabels, Gauge>,
    pod_scheduling_sli_duration: HistogramFamily<AttemptsLabels>,
    extension_point_duration: HistogramFamily<ExtensionPointLabels>,
    binding_duration: HistogramFamily<ProfileResultLabels>,
    reconciles: Family<ResultLabels, Counter>,
    reconcile_duration: Histogram,
    profile_condition: Family<ConditionLabels, Gauge>,
    leader: Gauge,
    preemption_attempts: Counter,
    preemption_victims: Histogram,
    pod_group_attempts: Family<ResultProfileLabels, Counter>,
    pod_group_attempt_duration: HistogramFamily<ResultProfileLabels>,
    pod_group_algorithm_duration: Histogram,
    workload_preemption_attempts: Family<ResultLabels, Counter>,
    workload_preemption_victims: Histogram,
    preemption_workload_disruptions: HistogramFamily<PreemptorLabels>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

// Buckets as upstream, with upstream's reasoning.
/// 1ms .. ~16s.
fn attempt_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}
/// "Start with 10ms with the last bucket being [~88m, Inf)."
fn sli_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.01, 2.0, 20))
}
/// "Start with 0.1ms with the last bucket being [~200ms, Inf)."
fn extension_point_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 12))
}
/// Upstream's former `scheduler_binding_duration_seconds` used the attempt buckets.
fn binding_buckets() -> Histogram {
    attempt_buckets()
}
/// "We think #victims>64 is pretty rare, therefore [64, +Inf) is considered a single
/// bucket."
fn victims_buckets() -> Histogram {
    Histogram::new(exponential_buckets(1.0, 2.0, 7))
}
/// Upstream's `workload_preemption_victims` and `preemption_workload_disruptions`: 1 to 1024.
fn workload_victims_buckets() -> Histogram {
    Histogram::new(exponential_buckets(1.0, 2.0, 11))
}
/// No upstream counterpart; the buckets of kube-rs's controller-rs reconcile histogram.
fn reconcile_buckets() -> Histogram {
    Histogram::new([0.01, 0.1, 0.25, 0.5, 1.0, 5.0, 15.0, 60.0])
}

impl Metrics {
    pub fn new() -> Arc<Metrics> {
        let metrics = Metrics {
            registry: Registry::default(),
            profiles: RwLock::default(),
            schedule_attempts: Family::default(),
            scheduling_attempt_duration: Family::new_with_constructor(attempt_buckets),
            pending_pods: Family::default(),
            pod_scheduling_sli_duration: Family::new_with_constructor(sli_buckets),
            extension_point_duration: Family::new_with_constructor(extension_point_buckets),
            binding_duration: Family::new_with_constructor(binding_buckets),
            reconciles: Family::default(),
            reconcile_duration: reconcile_buckets(),
            profile_condition: Family::default(),
            leader: Gauge::default(),
            preemption_attempts: Counter::default(),
            preemption_victims: victims_buckets(),
            pod_group_attempts: Family::default(),
            pod_group_attempt_duration: Family::new_with_constructor(attempt_buckets),
            pod_group_algorithm_duration: attempt_buckets(),
            workload_preemption_attempts: Family::default(),
            workload_preemption_victims: workload_victims_buckets(),
            preemption_workload_disruptions: Family::new_with_constructor(workload_victims_buckets),
        };
        Arc::new(metrics.registered())
    }

    fn registered(mut self) -> Self {
        let r = &mut self.registry;
        // prometheus-client appends `_total` to counter names and `.` to help texts, so
        // both are left out here: upstream's help texts come out as upstream writes them,
        // except that the two without a final period gain one.
        r.register(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod \
             could not be scheduled, while 'error' means an internal scheduler problem",
            self.schedule_attempts.clone(),
        );
        r.register(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            self.scheduling_attempt_duration.clone(),
        );
        r.register(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in \
             activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means \
             number of pods in unschedulableEntities that the scheduler attempted to schedule \
             and failed; 'gated' is the number of unschedulable pods that the scheduler never \
             attempted to schedule because they are gated; 'incomplete' means number of pods \
             in incompletePodGroupPods; 'pending' means number of pods in pendingPodGroupPods",
            self.pending_pods.clone(),
        );
        r.register(
            "scheduler_podgroup_schedule_attempts",
            "Number of attempts to schedule pod group, by the result. 'unschedulable' means \
             a pod group could not be scheduled, while 'error' means an internal scheduler \
             problem",
            self.pod_group_attempts.clone(),
        );
        r.register(
            "scheduler_podgroup_scheduling_attempt_duration_seconds",
            "Pod group scheduling attempt latency in seconds",
            self.pod_group_attempt_duration.clone(),
        );
        r.register(
            "scheduler_podgroup_scheduling_algorithm_duration_seconds",
            "Pod group scheduling algorithm latency in seconds",
            self.pod_group_algorithm_duration.clone(),
        );
        r.register(
            "scheduler_workload_preemption_attempts",
            "Total preemption attempts initiated by workload (including pod groups) in the \
             cluster till now",
            self.workload_preemption_attempts.clone(),
        );
        r.register(
            "scheduler_workload_preemption_victims",
            "Number of pod preemption victims caused by workload preemption",
            self.workload_preemption_victims.clone(),
        );
        r.register(
            "scheduler_preemption_workload_disruptions",
            "Number of workload preemption units being preempted. A single preemption unit \
             can be all pods in a pod group (in case of DisruptionMode=all), or a single pod \
             (in case of DisruptionMode=single)",
            self.preemption_workload_disruptions.clone(),
        );
        r.register(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the \
             scheduling queue and might involve multiple scheduling attempts",
            self.pod_scheduling_sli_duration.clone(),
        );
        r.register(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point",
            self.extension_point_duration.clone(),
        );
        r.register(
            "scheduler_preemption_attempts",
            "Total preemption attempts in the cluster till now",
            self.preemption_attempts.clone(),
        );
        r.register(
            "scheduler_preemption_victims",
            "Number of selected preemption victims",
            self.preemption_victims.clone(),
        );
        r.register(
            "berth_binding_duration_seconds",
            "Latency in seconds of the binding cycle's API call(s) that bind a pod to its node",
            self.binding_duration.clone(),
        );
        r.register(
            "berth_profile_reconcile",
            "Number of SchedulerProfile reconciles, by the result",
            self.reconciles.clone(),
        );
        r.register(
            "berth_profile_reconcile_duration_seconds",
            "SchedulerProfile reconcile latency in seconds",
            self.reconcile_duration.clone(),
        );
        r.register(
            "berth_profile_condition",
            "Status of each SchedulerProfile condition: 1 for the current status, 0 for the \
             others",
            self.profile_condition.clone(),
        );
        r.register(
            "berth_leader",
            "Whether this replica holds the leader lease and schedules (1) or not (0)",
            self.leader.clone(),
        );
        self
    }

    /// The entry for `profile`, created on first use. Without a miss this takes a read
    /// lock and clones an `Arc`; it never allocates.
    fn profile(&self, profile: &str) -> Arc<ProfileEntry> {
        let read = self.profiles.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = read.get(profile) {
            return Arc::clone(entry);
        }
        drop(read);
        let mut write = self
            .profiles
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let entry = write.entry(Arc::from(profile)).or_insert_with_key(|name| {
            Arc::new(ProfileEntry {
                name: Arc::clone(name),
                extension_points: std::array::from_fn(|_| OnceLock::new()),
                condition_types: Mutex::default(),
            })
        });
        Arc::clone(entry)
    }

    /// A preemption chose `victims` pods to evict.
    pub fn preemption_victims(&self, victims: usize) {
        self.preemption_victims.observe(victims as f64);
    }

    /// DefaultPreemption's PodGroupPostFilter ran for a pod group and ended with `code`;
    /// when it decided a preemption, `victims` are its pods and the pod groups' units
    /// among them (upstream's `observeVictims` for a pod-group preemptor).
    pub fn workload_preemption(&self, code: Code, victims: Option<(usize, usize)>) {
        let labels = ResultLabels {
            result: code_slot(code).1,
        };
        self.workload_preemption_attempts
            .get_or_create(&labels)
            .inc();
        let Some((pods, group_units)) = victims else {
            return;
        };
        self.workload_preemption_victims.observe(pods as f64);
        if group_units > 0 {
            self.preemption_workload_disruptions
                .get_or_create(&PreemptorLabels {
                    preemptor: "podgroup",
                })
                .observe(group_units as f64);
        }
    }

    /// One scheduling attempt (scheduling cycle plus, when scheduled, binding), as
    /// upstream's `observeScheduleAttemptAndLatency`.
    pub fn schedule_attempt(&self, profile: &str, result: AttemptResult, elapsed: Duration) {
        let labels = ResultProfileLabels {
            result: result.label(),
            profile: self.profile(profile).name.clone(),
        };
        self.schedule_attempts.get_or_create(&labels).inc();
        self.scheduling_attempt_duration
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
    }

    /// One pod-group cycle of `profile` that ran its algorithm (upstream records none for a
    /// group it refuses before): how it ended, how long the whole attempt took and how
    /// long its algorithm did, as upstream's `observePodGroupScheduleAttemptAndLatency`
    /// and `PodGroupSchedulingAlgorithmLatency`.
    pub fn pod_group_attempt(
        &self,
        profile: &str,
        result: AttemptResult,
        elapsed: Duration,
        algorithm: Duration,
    ) {
        let labels = ResultProfileLabels {
            result: result.label(),
            profile: self.profile(profile).name.clone(),
        };
        self.pod_group_attempts.get_or_create(&labels).inc();
        self.pod_group_attempt_duration
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
        self.pod_group_algorithm_duration
            .observe(algorithm.as_secs_f64());
    }

    /// Sets the number of `profile`'s pods in `queue`: `active`, `backoff`,
    /// `unschedulable`, `gated` or `incomplete`. Any other queue name is a caller bug: it is logged and
    /// ignored, so that the metric keeps upstream's label values.
    pub fn set_pending_pods(&self, profile: &str, queue: &str, count: i64) {
        let Some(queue) = QUEUES.iter().copied().find(|q| *q == queue) else {
            tracing::warn!(queue, "scheduler_pending_pods: unknown queue, not recorded");
            return;
        };
        let labels = QueueLabels {
            queue,
            profile: self.profile(profile).name.clone(),
        };
        self.pending_pods.get_or_create(&labels).set(count);
    }

    /// A pod of `profile` was scheduled after `attempts` attempts, `elapsed` after it
    /// first entered the queue.
    pub fn pod_scheduling_sli(&self, profile: &str, attempts: u32, elapsed: Duration) {
        let labels = AttemptsLabels {
            attempts: attempts_label(attempts),
            profile: self.profile(profile).name.clone(),
        };
        self.pod_scheduling_sli_duration
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
    }

    /// One binding of a pod of `profile`, successful or not.
    pub fn binding(&self, profile: &str, ok: bool, elapsed: Duration) {
        let labels = ProfileResultLabels {
            profile: self.profile(profile).name.clone(),
            result: if ok { SUCCESS } else { ERROR },
        };
        self.binding_duration
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
    }

    /// One reconcile of a SchedulerProfile.
    pub fn reconcile(&self, ok: bool, elapsed: Duration) {
        let labels = ResultLabels {
            result: if ok { SUCCESS } else { ERROR },
        };
        self.reconciles.get_or_create(&labels).inc();
        self.reconcile_duration.observe(elapsed.as_secs_f64());
    }

    /// Records that `condition` of `profile` has `status`: its series for that status is
    /// 1 and those for the other two of True/False/Unknown are 0. A status outside those
    /// three is recorded as `Unknown`, which is what an API client must assume for it.
    pub fn set_profile_condition(&self, profile: &str, condition: &str, status: &str) {
        let entry = self.profile(profile);
        let status = CONDITION_STATUSES
            .iter()
            .copied()
            .find(|s| *s == status)
            .unwrap_or("Unknown");
        entry
            .condition_types
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(condition.to_string());
        for candidate in CONDITION_STATUSES {
            let labels = ConditionLabels {
                profile: entry.name.clone(),
                r#type: condition.to_string(),
                status: candidate,
            };
            self.profile_condition
                .get_or_create(&labels)
                .set(i64::from(candidate == status));
        }
    }

    /// Forgets every series whose `profile` label is `profile`, in all families, so that a
    /// deleted profile's queue gauges and conditions stop being exported.
    ///
    /// What stays: the profile-less `berth_profile_reconcile_*` and `berth_leader`; and a
    /// series recorded again after this call (by a cycle still in flight on the removed
    /// profile's framework, for instance) is simply exported again.
    pub fn remove_profile(&self, profile: &str) {
        let removed = self
            .profiles
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(profile);
        let Some(entry) = removed else {
            return;
        };
        let name = &entry.name;
        for result in AttemptResult::ALL {
            let labels = ResultProfileLabels {
                result: result.label(),
                profile: name.clone(),
            };
            self.schedule_attempts.remove(&labels);
            self.scheduling_attempt_duration.remove(&labels);
            self.pod_group_attempts.remove(&labels);
            self.pod_group_attempt_duration.remove(&labels);
        }
        for queue in QUEUES {
            let labels = QueueLabels {
                queue,
                profile: name.clone(),
            };
            self.pending_pods.remove(&labels);
        }
        for attempts in ATTEMPTS_LABELS {
            let labels = AttemptsLabels {
                attempts,
                profile: name.clone(),
            };
            self.pod_scheduling_sli_duration.remove(&labels);
        }
        for point in ExtensionPoint::ALL {
            for code in ALL_CODES {
                let labels = ExtensionPointLabels {
                    extension_point: point.name(),
                    status: code_slot(code).1,
                    profile: name.clone(),
                };
                self.extension_point_duration.remove(&labels);
            }
        }
        for result in [SUCCESS, ERROR] {
            let labels = ProfileResultLabels {
                profile: name.clone(),
                result,
            };
            self.binding_duration.remove(&labels);
        }
        let condition_types = entry
            .condition_types
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for condition in condition_types.iter() {
            for status in CONDITION_STATUSES {
                let labels = ConditionLabels {
                    profile: name.clone(),
                    r#type: condition.clone(),
                    status,
                };
                self.profile_condition.remove(&labels);
            }
        }
    }

    /// Whether this replica leads (and therefore schedules).
    pub fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }

    /// Every metric in the OpenMetrics text format ([`CONTENT_TYPE`]), ending in `# EOF`.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        if let Err(error) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            // Writing to a String cannot fail; only a label encoder could, and ours write
            // plain strings.
            tracing::error!(%error, "cannot encode metrics");
        }
        text
    }
}

/// Called once per extension point per cycle, and once per node for Filter: after the
/// first call for a (profile, point, status), it takes a read lock, hashes the profile
/// name and observes, without allocating.
impl Observer for Metrics {
    fn extension_point(&self, profile: &str, point: ExtensionPoint, code: Code, elapsed: Duration) {
        if point == ExtensionPoint::PostFilter {
            // Upstream counts an attempt each time a fit error runs the PostFilter plugins.
            self.preemption_attempts.inc();
        }
        let entry = self.profile(profile);
        let (code_index, status) = code_slot(code);
        let point_index = ExtensionPoint::ALL.iter().position(|p| *p == point);
        let slot = point_index.map_or(usize::MAX, |p| p * CODES + code_index);
        let create = || {
            self.extension_point_duration
                .get_or_create_owned(&ExtensionPointLabels {
                    extension_point: point.name(),
                    status,
                    profile: entry.name.clone(),
                })
        };
        let seconds = elapsed.as_secs_f64();
        match entry.extension_points.get(slot) {
            Some(cell) => cell.get_or_init(create).observe(seconds),
            None => create().observe(seconds),
        }
    }
}
