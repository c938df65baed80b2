//! Score: combine the pod's and the node's allocation of each configured resource into one
//! node score (upstream `resourceAllocationScorer`).
//!
//! For each configured resource the scorer takes the node's allocatable and what would be
//! requested on the node with the pod placed there; resources the node does not have, and
//! scalar resources the pod does not request, are left out (their weight is not counted).
//! The strategy turns each resource's pair into a 0..=100 score and the scores into a
//! weighted average. NodeResourcesBalancedAllocation reuses the scorer with its own
//! combination (how evenly the resources would be used), as upstream's
//! `BalancedAllocation` embeds `resourceAllocationScorer`.

use crate::cluster::{NodeInfo, PodInfo, Resource, is_scalar_resource_name};
use crate::framework::Status;
use crate::helpers::score::FunctionShapePoint;

use super::{MAX_RESOURCES, ResourceSpec, ScoringStrategy, ScoringStrategyType, default_resources};
use super::{balanced_allocation, least_allocated, most_allocated, requested_to_capacity_ratio};

/// The pod's request of each configured resource, in the order of the configuration;
/// computed once per cycle in PreScore.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PreScoreState {
    pub(super) pod_requests: Vec<i64>,
}

/// How a resource name maps onto [`Resource`], decided once when the plugin is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ResourceKind {
    Cpu,
    Memory,
    EphemeralStorage,
    Scalar,
    /// Not a resource the scheduler accounts per node (e.g. `pods`): never scored.
    Unscored,
}

impl ResourceKind {
    fn of(name: &str) -> Self {
        match name {
            "cpu" => ResourceKind::Cpu,
            "memory" => ResourceKind::Memory,
            "ephemeral-storage" => ResourceKind::EphemeralStorage,
            n if is_scalar_resource_name(n) => ResourceKind::Scalar,
            _ => ResourceKind::Unscored,
        }
    }
}

#[derive(Debug, Clone)]
struct ScoredResource {
    name: String,
    weight: i64,
    kind: ResourceKind,
}

#[derive(Debug, Clone)]
enum Strategy {
    LeastAllocated,
    MostAllocated,
    /// The user's shape with scores scaled to 0..=100.
    RequestedToCapacityRatio(Vec<FunctionShapePoint>),
    /// NodeResourcesBalancedAllocation: one minus the standard deviation of the
    /// resources' utilization; weights are not used.
    BalancedAllocation,
}

#[derive(Debug, Clone)]
pub(super) struct ResourceAllocationScorer {
    strategy: Strategy,
    resources: Vec<ScoredResource>,
    /// Use the plain requests of the pod and node rather than the ones with the non-zero
    /// cpu/memory defaults. Upstream sets it for BalancedAllocation only.
    use_requested: bool,
}

impl ResourceAllocationScorer {
    pub(super) fn new(args: &ScoringStrategy) -> Self {
        let resources = scored_resources(&args.resources);
        let strategy = match args.strategy_type {
            ScoringStrategyType::LeastAllocated => Strategy::LeastAllocated,
            ScoringStrategyType::MostAllocated => Strategy::MostAllocated,
            ScoringStrategyType::RequestedToCapacityRatio => {
                Strategy::RequestedToCapacityRatio(requested_to_capacity_ratio::scaled_shape(
                    args.requested_to_capacity_ratio
                        .as_ref()
                        .map(|param| param.shape.as_slice())
                        .unwrap_or_default(),
                ))
            }
        };
        // Every strategy of NodeResourcesFit scores non-zero requests in 1.37
        // (RequestedToCapacityRatio included); only BalancedAllocation uses plain ones.
        ResourceAllocationScorer {
            strategy,
            resources,
            use_requested: false,
        }
    }

    /// The scorer of NodeResourcesBalancedAllocation over `resources`. As upstream, it
    /// uses the plain requests, without the non-zero cpu/memory defaults.
    pub(super) fn balanced_allocation(resources: &[ResourceSpec]) -> Self {
        ResourceAllocationScorer {
            strategy: Strategy::BalancedAllocation,
            resources: scored_resources(resources),
            use_requested: true,
        }
    }

    /// The pod's request of each configured resource (upstream
    /// `calculatePodResourceRequestList`): the status-aware requests, with the non-zero
    /// cpu/memory defaults unless the strategy uses plain requests.
    pub(super) fn pod_requests(&self, pod: &PodInfo) -> Vec<i64> {
        let requests = if self.use_requested {
            &pod.requests
        } else {
            &pod.score_non_zero_requests
        };
        self.resources
            .iter()
            .map(|r| amount(requests, r.kind, &r.name))
            .collect()
    }

    /// The node's score for a pod whose requests [`Self::pod_requests`] computed.
    /// Allocation-free.
    pub(super) fn score(&self, node: &NodeInfo, pod_requests: &[i64]) -> Result<i64, Status> {
        if self.resources.is_empty() {
            return Err(Status::error(
                "NodeResourcesFit: no resources configured for scoring",
            ));
        }
        // (requested, allocatable, weight, the pod's request) of every resource that
        // takes part; `requested` includes the pod's.
        let entries = self
            .resources
            .iter()
            .zip(pod_requests)
            .map(|(resource, &pod_request)| {
                let (allocatable, requested) =
                    self.allocatable_and_requested(node, resource, pod_request);
                (requested, allocatable, resource.weight, pod_request)
            })
            .filter(|&(_, allocatable, _, _)| allocatable != 0);
        Ok(match &self.strategy {
            Strategy::LeastAllocated => {
                weighted_average(entries.map(|(r, a, w, _)| (least_allocated::score(r, a), w)))
            }
            Strategy::MostAllocated => {
                weighted_average(entries.map(|(r, a, w, _)| (most_allocated::score(r, a), w)))
            }
            Strategy::RequestedToCapacityRatio(shape) => {
                requested_to_capacity_ratio::combine(shape, entries.map(|(r, a, w, _)| (r, a, w)))
            }
            Strategy::BalancedAllocation => {
                // One walk: the utilizations with and without the pod, on the stack
                // (validation allows at most MAX_RESOURCES resources).
                let mut with = [0.0_f64; MAX_RESOURCES as usize];
                let mut without = [0.0_f64; MAX_RESOURCES as usize];
                let mut count = 0;
                for (requested, allocatable, _, pod_request) in entries.take(with.len()) {
                    with[count] = balanced_allocation::fraction(requested, allocatable);
                    without[count] =
                        balanced_allocation::fraction(requested - pod_request, allocatable);
                    count += 1;
                }
                balanced_allocation::improvement(
                    balanced_allocation::balance(&with[..count]),
                    balanced_allocation::balance(&without[..count]),
                )
            }
        })
    }

    /// Upstream `calculateResourceAllocatableRequest`: the node's allocatable of
    /// `resource` and what would be requested with the pod placed; `(0, 0)` leaves the
    /// resource out.
    fn allocatable_and_requested(
        &self,
        node: &NodeInfo,
        resource: &ScoredResource,
        pod_request: i64,
    ) -> (i64, i64) {
        let requested = if self.use_requested {
            &node.requested
        } else {
            &node.non_zero_requested
        };
        match resource.kind {
            ResourceKind::Cpu => (
                node.allocatable.milli_cpu,
                requested.milli_cpu + pod_request,
            ),
            ResourceKind::Memory => (node.allocatable.memory, requested.memory + pod_request),
            // Ephemeral storage and scalars have no non-zero default: always the plain
            // requests.
            ResourceKind::EphemeralStorage => (
                node.allocatable.ephemeral_storage,
                node.requested.ephemeral_storage + pod_request,
            ),
            // A scalar resource the pod does not ask for says nothing about this pod.
            ResourceKind::Scalar if pod_request == 0 => (0, 0),
            ResourceKind::Scalar => match node.allocatable.scalar_resources.get(&resource.name) {
                Some(&allocatable) => (
                    allocatable,
                    amount(&node.requested, ResourceKind::Scalar, &resource.name) + pod_request,
                ),
                None => (0, 0),
            },
            ResourceKind::Unscored => (0, 0),
        }
    }
}

/// The configured resources, resolved once; an empty list means the defaults, as
/// upstream's v1 defaulting.
fn scored_resources(specs: &[ResourceSpec]) -> Vec<ScoredResource> {
    let defaults;
    let specs = if specs.is_empty() {
        defaults = default_resources();
        &defaults
    } else {
        specs
    };
    specs
        .iter()
        .map(|spec| ScoredResource {
            kind: ResourceKind::of(&spec.name),
            name: spec.name.clone(),
            weight: spec.weight,
        })
        .collect()
}

fn amount(resource: &Resource, kind: ResourceKind, name: &str) -> i64 {
    match kind {
        ResourceKind::Cpu => resource.milli_cpu,
        ResourceKind::Memory => resource.memory,
        ResourceKind::EphemeralStorage => resource.ephemeral_storage,
        ResourceKind::Scalar => resource.scalar_resources.get(name).copied().unwrap_or(0),
        ResourceKind::Unscored => 0,
    }
}

/// `sum(score * weight) / sum(weight)` with integer division, 0 when nothing took part
/// (LeastAllocated and MostAllocated).
fn weighted_average(scores: impl Iterator<Item = (i64, i64)>) -> i64 {
    let (total, weight_sum) = scores.fold((0, 0), |(total, weights), (score, weight)| {
        (total + score * weight, weights + weight)
    });
    if weight_sum == 0 {
        0
    } else {
        total / weight_sum
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;
    use crate::framework::Code;

    #[test]
    fn resources_not_set_is_an_error() {
        // upstream TestLeastAllocatedScoringStrategy / TestMostAllocatedScoringStrategy
        // "Resources not set, pods scheduled with error": reachable only through the
        // scorer, since args with no resources get the defaults.
        let scorer = ResourceAllocationScorer {
            strategy: Strategy::LeastAllocated,
            resources: Vec::new(),
            use_requested: false,
        };
        let node = node_info(
            &make_node("node1", &[("cpu", "4000"), ("memory", "10000")]),
            &[],
        );
        let status = scorer.score(&node, &[]).expect_err("no resources");
        assert_eq!(status.code(), Code::Error);
    }

    #[test]
    fn empty_resources_mean_cpu_and_memory() {
        let scorer = ResourceAllocationScorer::new(&ScoringStrategy {
            resources: Vec::new(),
            ..Default::default()
        });
        let names: Vec<_> = scorer
            .resources
            .iter()
            .map(|r| (r.name.as_str(), r.weight))
            .collect();
        assert_eq!(names, vec![("cpu", 1), ("memory", 1)]);
    }
}
