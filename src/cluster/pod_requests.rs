//! What a pod asks of its node: upstream's `PodRequests` (component-helpers `resource`,
//! Kubernetes 1.37) on exact amounts, and the lists the scheduler reads from it.
//!
//! # Pod requests
//!
//! A pod's request of a resource starts from its containers: the app containers and the
//! sidecars (init containers with `restartPolicy: Always`) add up, and a plain init
//! container counts with the sidecars started before it; the larger of the two wins.
//! While an in-place resize is in progress, each view of the containers is summed apart
//! (what the spec asks, what the kubelet allocated, what it actuated, read from the
//! container statuses, or from the pod-level status when it has both) and the request is
//! the larger sum, per resource; when the resize is `Infeasible` the spec is left out.
//! Pod-level `spec.resources.requests` then replace that sum for cpu, memory and
//! `hugepages-*` (the only resources a pod level may set); other resources keep the
//! container sum. `spec.overhead` is added last.
//!
//! The scheduler asks for this with different options in different places, and berth
//! keeps each answer in the pod's `PodInfo`, computed once: NodeResourcesFit's Filter
//! reads the spec only (the pod is not running yet), a node adds the status-aware
//! requests of the pods on it, and the scorers use the status-aware requests with 100m
//! cpu / 200Mi memory for a container that requests none, where a node's non-zero
//! accounting gives a pod with pod-level requests those defaults only for cpu or memory
//! the requests do not name ([`SchedulerRequests`]). berth does not model DRA
//! node-allocatable claims, which upstream adds only behind an alpha gate.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::resource::{ExactList, exact_list};
use super::{DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, QuantityError, Resource};

/// `v1.ContainerRestartPolicyAlways`: an init container with it is a sidecar.
const RESTART_POLICY_ALWAYS: &str = "Always";
/// `v1.PodResizePending`, the condition the kubelet sets while it cannot resize a pod.
const POD_RESIZE_PENDING: &str = "PodResizePending";
/// `v1.PodReasonInfeasible`: the node can never fit the resize.
const REASON_INFEASIBLE: &str = "Infeasible";
const CPU: &str = "cpu";
const MEMORY: &str = "memory";
const HUGEPAGES_PREFIX: &str = "hugepages-";

const NANOS_PER_MILLI: i128 = 1_000_000;
const NANOS_PER_UNIT: i128 = 1_000_000_000;

/// The options of `PodRequests` (upstream `PodResourcesOptions`, without `Reuse` and the
/// DRA node-allocatable claims).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct RequestOptions<'a> {
    /// Also read the container statuses of an in-place resize (`UseStatusResources`).
    pub use_status: bool,
    /// Also read the pod-level `status.resources` / `status.allocatedResources`
    /// (`InPlacePodLevelResourcesVerticalScalingEnabled`).
    pub pod_level_status: bool,
    /// Leave `spec.overhead` out (`ExcludeOverhead`).
    pub exclude_overhead: bool,
    /// Amounts a container gets for a resource its requests do not name; an explicit `0`
    /// stays 0 (`NonMissingContainerRequests`).
    pub non_missing: Option<&'a ExactList>,
    /// Ignore `spec.resources` (`SkipPodLevelResources`).
    pub skip_pod_level: bool,
    /// Start from nothing instead of the containers' sum (`SkipContainerLevelResources`).
    pub skip_container_level: bool,
}

/// The request lists the scheduler reads, each as upstream's caller computes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct SchedulerRequests {
    /// NodeResourcesFit's PreFilter/Filter (`computePodResourceRequest`): spec only.
    pub filter: Resource,
    /// A node's accounting of its pods (`PodInfo.CalculateResource`) and the scorers
    /// that use plain requests: status-aware.
    pub requests: Resource,
    /// A node's non-zero accounting (`getNonMissingContainerRequests`).
    pub non_zero: Resource,
    /// NodeResourcesFit's scorer's requests of the incoming pod
    /// (`calculatePodResourceRequest` as `NewFit` configures it): spec only, non-zero
    /// defaults, pod-level requests ignored.
    pub score_non_zero: Resource,
}

/// Computes every list of [`SchedulerRequests`] for `pod`.
pub(super) fn scheduler_requests(pod: &Pod) -> Result<SchedulerRequests, QuantityError> {
    let filter = pod_requests(pod, RequestOptions::default())?;
    let status_aware = RequestOptions {
        use_status: true,
        pod_level_status: true,
        ..RequestOptions::default()
    };
    // Without anything the status views read, they all equal the spec.
    let requests = if reads_status(pod) {
        pod_requests(pod, status_aware)?
    } else {
        filter.clone()
    };
    let defaults = non_zero_defaults();
    let pod_level = pod.spec.as_ref().is_some_and(is_pod_level_requests_set);
    let node_defaults: ExactList = if pod_level {
        // The pod level decides: only cpu or memory the requests do not name at all
        // gets a default.
        defaults
            .iter()
            .filter(|(name, _)| !requests.contains_key(*name))
            .map(|(name, amount)| (name.clone(), *amount))
            .collect()
    } else {
        defaults.clone()
    };
    let non_zero = if node_defaults.is_empty() {
        requests.clone()
    } else {
        let options = RequestOptions {
            non_missing: Some(&node_defaults),
            ..status_aware
        };
        pod_requests(pod, options)?
    };
    // NodeResourcesFit's scorer is built without the pod-level and in-place resize
    // features in 1.37 (`NewFit` never sets them on its `resourceAllocationScorer`): it
    // sums the containers' spec requests with the defaults and ignores pod-level
    // requests, where the node's side counts them.
    // Without pod-level requests or a status to read, that is the node's list.
    let score_non_zero = if pod_level || reads_status(pod) {
        pod_requests(
            pod,
            RequestOptions {
                non_missing: Some(&defaults),
                skip_pod_level: true,
                ..RequestOptions::default()
            },
        )?
    } else {
        non_zero.clone()
    };
    Ok(SchedulerRequests {
        filter: Resource::from_exact(&filter),
        requests: Resource::from_exact(&requests),
        non_zero: Resource::from_exact(&non_zero),
        score_non_zero: Resource::from_exact(&score_non_zero),
    })
}

/// 100m cpu and 200Mi memory (upstream `DefaultMilliCPURequest`, `DefaultMemoryRequest`).
fn non_zero_defaults() -> ExactList {
    [
        (
            CPU.to_owned(),
            i128::from(DEFAULT_MILLI_CPU_REQUEST) * NANOS_PER_MILLI,
        ),
        (
            MEMORY.to_owned(),
            i128::from(DEFAULT_MEMORY_REQUEST) * NANOS_PER_UNIT,
        ),
    ]
    .into()
}

/// True when the status holds anything the status-aware views read.
fn reads_status(pod: &Pod) -> bool {
    pod.status.as_ref().is_some_and(|s| {
        s.conditions.is_some()
            || s.container_statuses.is_some()
            || s.init_container_statuses.is_some()
            || s.resources.is_some()
            || s.allocated_resources.is_some()
    })
}

/// Upstream `PodRequests`: the containers' sum (or nothing), the pod-level requests over
/// it for the resources a pod level may set, then the overhead.
pub(super) fn pod_requests(
    pod: &Pod,
    options: RequestOptions<'_>,
) -> Result<ExactList, QuantityError> {
    let empty_spec;
    let spec = match &pod.spec {
        Some(spec) => spec,
        None => {
            empty_spec = PodSpec::default();
            &empty_spec
        }
    };
    let empty_status;
    let status = match &pod.status {
        Some(status) => status,
        None => {
            empty_status = PodStatus::default();
            &empty_status
        }
    };
    let mut requests = if options.skip_container_level {
        ExactList::new()
    } else {
        aggregate_container_requests(spec, status, options)?
    };
    if !options.skip_pod_level && is_pod_level_requests_set(spec) {
        let effective = effective_pod_level_requests(spec, status, options)?;
        // A replacement, not a max: the pod level wins even when it is smaller.
        for (name, amount) in effective {
            if is_supported_pod_level_resource(&name) {
                requests.insert(name, amount);
            }
        }
    }
    if !options.exclude_overhead
        && let Some(overhead) = &spec.overhead
    {
        add_list(&mut requests, &exact_list(overhead)?);
    }
    Ok(requests)
}

/// The API server's defaulting of pod-level requests (upstream `SetDefaults_Pod` with
/// PodLevelResources on, after the containers' requests were defaulted from their limits),
/// for inputs that never went through an API server (`berth simulate`). Only when
/// `spec.resources` has limits: a cpu or memory request the pod level lacks becomes the
/// containers' aggregated request when they request it, and any supported resource still
/// without a request takes the pod-level limit. Hugepages first get a pod-level limit from
/// the containers' hugepages (`defaultHugePagePodLimits`; a container's hugepages request
/// always equals its limit). A pod with an unparseable quantity is left as it is, for
/// validation to report.
pub fn default_pod_level_requests(pod: &mut Pod) {
    let Some(spec) = pod.spec.as_ref() else {
        return;
    };
    let Some(resources) = spec.resources.as_ref() else {
        return;
    };
    let limits = resources.limits.clone().unwrap_or_default();
    let requests = resources.requests.clone().unwrap_or_default();
    if limits.is_empty() && requests.is_empty() {
        return;
    }
    let Ok(containers) =
        aggregate_container_requests(spec, &PodStatus::default(), RequestOptions::default())
    else {
        return;
    };
    let mut limits = limits;
    for (name, amount) in &containers {
        if name.starts_with(HUGEPAGES_PREFIX)
            && !requests.contains_key(name)
            && !limits.contains_key(name)
        {
            limits.insert(name.clone(), quantity_of(*amount));
        }
    }
    let mut requests = requests;
    if !limits.is_empty() {
        for (name, amount) in &containers {
            if (name == CPU || name == MEMORY) && !requests.contains_key(name) {
                requests.insert(name.clone(), quantity_of(*amount));
            }
        }
        for (name, limit) in &limits {
            if is_supported_pod_level_resource(name) && !requests.contains_key(name) {
                requests.insert(name.clone(), limit.clone());
            }
        }
    }
    if let Some(resources) = pod.spec.as_mut().and_then(|s| s.resources.as_mut()) {
        if !limits.is_empty() {
            resources.limits = Some(limits);
        }
        if !requests.is_empty() {
            resources.requests = Some(requests);
        }
    }
}

/// An exact amount (in nano units) as a quantity, in the largest unit that keeps it exact.
fn quantity_of(nanos: i128) -> Quantity {
    Quantity(if nanos % NANOS_PER_UNIT == 0 {
        (nanos / NANOS_PER_UNIT).to_string()
    } else if nanos % NANOS_PER_MILLI == 0 {
        format!("{}m", nanos / NANOS_PER_MILLI)
    } else {
        format!("{nanos}n")
    })
}

/// Upstream `IsSupportedPodLevelResource`: cpu, memory and every hugepages size.
pub(super) fn is_supported_pod_level_resource(name: &str) -> bool {
    name == CPU || name == MEMORY || name.starts_with(HUGEPAGES_PREFIX)
}

/// Upstream `IsPodLevelRequestsSet`: `spec.resources.requests` names a resource a pod
/// level may set.
pub(super) fn is_pod_level_requests_set(spec: &PodSpec) -> bool {
    pod_level_requests(spec).is_some_and(|requests| {
        requests
            .keys()
            .any(|name| is_supported_pod_level_resource(name))
    })
}

fn pod_level_requests(spec: &PodSpec) -> Option<&BTreeMap<String, Quantity>> {
    spec.resources.as_ref()?.requests.as_ref()
}

/// The pod-level requests in force: the spec's, or during a resize the larger of the
/// spec's and the status's (less the overhead the status includes), without the spec
/// when the resize is infeasible.
fn effective_pod_level_requests(
    spec: &PodSpec,
    status: &PodStatus,
    options: RequestOptions<'_>,
) -> Result<ExactList, QuantityError> {
    let declared = match pod_level_requests(spec) {
        Some(requests) => exact_list(requests)?,
        None => ExactList::new(),
    };
    if !(options.pod_level_status
        && options.use_status
        && (status.resources.is_some() || status.allocated_resources.is_some()))
    {
        return Ok(declared);
    }
    let overhead = match &spec.overhead {
        Some(overhead) => exact_list(overhead)?,
        None => ExactList::new(),
    };
    let mut effective = if is_resize_infeasible(status) {
        ExactList::new()
    } else {
        declared
    };
    let actuated = status.resources.as_ref().and_then(|r| r.requests.as_ref());
    for reported in [actuated, status.allocated_resources.as_ref()]
        .into_iter()
        .flatten()
    {
        max_list(
            &mut effective,
            &less_overhead(exact_list(reported)?, &overhead),
        );
    }
    Ok(effective)
}

/// Subtracts `overhead` from the resources `list` names, flooring at 0.
fn less_overhead(mut list: ExactList, overhead: &ExactList) -> ExactList {
    for (name, amount) in &mut list {
        if let Some(extra) = overhead.get(name) {
            *amount = amount.saturating_sub(*extra).max(0);
        }
    }
    list
}

/// Upstream `IsPodResizeInfeasible`: the first `PodResizePending` condition has reason
/// `Infeasible` (its status is not looked at).
fn is_resize_infeasible(status: &PodStatus) -> bool {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == POD_RESIZE_PENDING)
        .is_some_and(|c| c.reason.as_deref() == Some(REASON_INFEASIBLE))
}

/// Which of a container's request lists a sum reads.
#[derive(Debug, Clone, Copy)]
enum View {
    /// `resources.requests`.
    Spec,
    /// What the kubelet admitted: the status's `allocatedResources`.
    Allocated,
    /// What the kubelet applied: the status's `resources.requests`, else its
    /// `allocatedResources`.
    Actuated,
}

/// Upstream `AggregateContainerRequests`: the containers' sum, or during a resize the
/// per-resource maximum of the sums of each view ("max of sums, not sum of maxes").
fn aggregate_container_requests(
    spec: &PodSpec,
    status: &PodStatus,
    options: RequestOptions<'_>,
) -> Result<ExactList, QuantityError> {
    let spec_sum = aggregate(spec, status, options, View::Spec, false)?;
    if !options.use_status {
        return Ok(spec_sum);
    }
    let infeasible = is_resize_infeasible(status);
    let pod_level = status
        .allocated_resources
        .as_ref()
        .zip(status.resources.as_ref().and_then(|r| r.requests.as_ref()))
        .filter(|_| options.pod_level_status);
    let (allocated, actuated) = match pod_level {
        // The pod-level status already sums every container.
        Some((allocated, actuated)) => (exact_list(allocated)?, exact_list(actuated)?),
        None => (
            aggregate(spec, status, options, View::Allocated, infeasible)?,
            aggregate(spec, status, options, View::Actuated, infeasible)?,
        ),
    };
    // An infeasible resize will not happen: what the spec asks is left out.
    let mut result = if infeasible {
        actuated
    } else {
        let mut result = spec_sum;
        max_list(&mut result, &actuated);
        result
    };
    max_list(&mut result, &allocated);
    Ok(result)
}

/// One view's sum: app containers and sidecars add up; while init container `i` runs,
/// the sidecars before it run too, so it uses its own requests plus theirs; the result
/// is the larger of the sum and the largest such use.
fn aggregate(
    spec: &PodSpec,
    status: &PodStatus,
    options: RequestOptions<'_>,
    view: View,
    infeasible: bool,
) -> Result<ExactList, QuantityError> {
    let own = |container: &Container| -> Result<ExactList, QuantityError> {
        let container_status = if options.use_status {
            find_container_status(status, &container.name)
        } else {
            None
        };
        let mut list = match view_of(view, container, container_status, infeasible) {
            Some(list) => exact_list(list)?,
            None => ExactList::new(),
        };
        for (name, amount) in options.non_missing.into_iter().flatten() {
            list.entry(name.clone()).or_insert(*amount);
        }
        Ok(list)
    };
    let mut sum = ExactList::new();
    for container in &spec.containers {
        add_list(&mut sum, &own(container)?);
    }
    let mut sidecars = ExactList::new();
    let mut init_peak = ExactList::new();
    for container in spec.init_containers.iter().flatten() {
        let requests = own(container)?;
        if is_restartable(container) {
            add_list(&mut sum, &requests);
            add_list(&mut sidecars, &requests);
            max_list(&mut init_peak, &sidecars);
        } else {
            let mut during = requests;
            add_list(&mut during, &sidecars);
            max_list(&mut init_peak, &during);
        }
    }
    max_list(&mut sum, &init_peak);
    Ok(sum)
}

/// A container's list in `view`. Without a status entry the allocated and actuated views
/// fall back to the spec, except while the resize is infeasible (then nothing).
fn view_of<'a>(
    view: View,
    container: &'a Container,
    status: Option<&'a ContainerStatus>,
    infeasible: bool,
) -> Option<&'a BTreeMap<String, Quantity>> {
    let declared = container
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref());
    let fallback = if infeasible { None } else { declared };
    let allocated = status.and_then(|s| s.allocated_resources.as_ref());
    match view {
        View::Spec => declared,
        View::Allocated => allocated.or(fallback),
        View::Actuated => status
            .and_then(|s| s.resources.as_ref()?.requests.as_ref())
            .or(allocated)
            .or(fallback),
    }
}

/// The status of the container named `name`: app containers first, then init ones.
fn find_container_status<'a>(status: &'a PodStatus, name: &str) -> Option<&'a ContainerStatus> {
    let apps = status.container_statuses.iter().flatten();
    let inits = status.init_container_statuses.iter().flatten();
    apps.chain(inits).find(|s| s.name == name)
}

pub(super) fn is_restartable(container: &Container) -> bool {
    container.restart_policy.as_deref() == Some(RESTART_POLICY_ALWAYS)
}

fn add_list(into: &mut ExactList, other: &ExactList) {
    for (name, amount) in other {
        let entry = into.entry(name.clone()).or_insert(0);
        *entry = entry.saturating_add(*amount);
    }
}

fn max_list(into: &mut ExactList, other: &ExactList) {
    for (name, &amount) in other {
        let entry = into.entry(name.clone()).or_insert(amount);
        *entry = (*entry).max(amount);
    }
}

#[cfg(test)]
mod tests;
