//! RequestedToCapacityRatio: score each resource's utilization (with the pod placed)
//! through a user-given piecewise-linear shape, e.g. to bin-pack accelerators (upstream
//! `requestedToCapacityRatioScorer`).

pub(super) use crate::helpers::score::scaled_shape;
use crate::helpers::score::{FunctionShapePoint, broken_linear};

use super::MAX_UTILIZATION;

/// One resource's score: the shape at `requested * 100 / capacity` (integer division),
/// or at full utilization when the resource is absent or over-requested.
fn resource_score(shape: &[FunctionShapePoint], requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return broken_linear(shape, MAX_UTILIZATION);
    }
    broken_linear(shape, requested * MAX_UTILIZATION / capacity)
}

/// The weighted average of the resources' scores over `(requested, allocatable, weight)`,
/// rounded half away from zero. As upstream, a resource scoring 0 is left out, weight
/// included.
pub(super) fn combine(
    shape: &[FunctionShapePoint],
    entries: impl Iterator<Item = (i64, i64, i64)>,
) -> i64 {
    let (total, weight_sum) = entries
        .map(|(requested, allocatable, weight)| {
            (resource_score(shape, requested, allocatable), weight)
        })
        .filter(|&(score, _)| score > 0)
        .fold((0, 0), |(total, weights), (score, weight)| {
            (total + score * weight, weights + weight)
        });
    if weight_sum == 0 {
        return 0;
    }
    (total as f64 / weight_sum as f64).round() as i64
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::super::{ResourceSpec, ScoringStrategyType, default_resources};
    use k8s_openapi::api::core::v1::Pod;

    const RTCR: ScoringStrategyType = ScoringStrategyType::RequestedToCapacityRatio;

    #[test]
    fn requested_to_capacity_ratio_matches_upstream() {
        // upstream TestRequestedToCapacityRatioScoringStrategy: shape 0% -> 10, 100% -> 0.
        let shape: &[(i64, i64)] = &[(0, 10), (100, 0)];
        let cases: Vec<ShapeCase> = vec![
            // upstream "nothing scheduled, nothing requested (default - least requested nodes have priority)"
            (
                "nothing scheduled, nothing requested",
                no_requests(),
                vec![
                    node(
                        "node1",
                        &[("cpu", "4000"), ("memory", "10000")],
                        vec![no_requests(), no_requests()],
                    ),
                    node("node2", &[("cpu", "4000"), ("memory", "10000")], vec![]),
                ],
                vec![100, 100],
            ),
            // upstream "nothing scheduled, resources requested, differently sized nodes (default - least requested nodes have priority)"
            (
                "nothing scheduled, resources requested, differently sized nodes",
                two_containers(&[]),
                vec![
                    node(
                        "node1",
                        &[("cpu", "4000"), ("memory", "10000")],
                        vec![no_requests(), no_requests()],
                    ),
                    node("node2", &[("cpu", "6000"), ("memory", "10000")], vec![]),
                ],
                vec![38, 50],
            ),
            // upstream "no resources requested, pods scheduled with resources (default - least requested nodes have priority)"
            (
                "no resources requested, pods scheduled with resources",
                no_requests(),
                vec![
                    node(
                        "node1",
                        &[("cpu", "4000"), ("memory", "10000")],
                        vec![cpu_mem("3000", "5000")],
                    ),
                    node(
                        "node2",
                        &[("cpu", "6000"), ("memory", "10000")],
                        vec![cpu_mem("3000", "5000")],
                    ),
                ],
                vec![38, 50],
            ),
        ];
        for (name, pod, nodes, want) in cases {
            assert_eq!(
                scores(
                    strategy_args(RTCR, default_resources(), Some(shape)),
                    pod,
                    &nodes
                ),
                want,
                "case {name}"
            );
        }
    }

    /// upstream `makeNode(name, 4000, 10000*1024*1024, extended)`.
    fn extended_node(name: &str, extended: &[(&str, &str)], pods: Vec<Pod>) -> TestNode {
        let mut resources = vec![("cpu", "4"), ("memory", "10000Mi")];
        resources.extend_from_slice(extended);
        node(name, &resources, pods)
    }

    #[test]
    fn bin_packing_single_extended_matches_upstream() {
        // upstream TestResourceBinPackingSingleExtended: intel.com/foo weight 1, shape 0% -> 0, 100% -> 1.
        let shape: &[(i64, i64)] = &[(0, 0), (100, 1)];
        let foo = |n: &str| pod_with(&[req(&[("intel.com/foo", n)])], &[]);
        let nodes = |node2_pods: Vec<Pod>| {
            vec![
                extended_node("node1", &[("intel.com/foo", "8")], vec![]),
                extended_node("node2", &[("intel.com/foo", "4")], node2_pods),
            ]
        };
        // Upstream's tables also list pods without a node; they are on no node, so they are left out here.
        let cases: Vec<ShapeCase> = vec![
            // upstream "nothing scheduled, nothing requested"
            (
                "nothing scheduled, nothing requested",
                no_requests(),
                nodes(vec![]),
                vec![0, 0],
            ),
            // upstream "resources requested, pods scheduled with less resources"
            (
                "resources requested, pods scheduled with less resources",
                foo("2"),
                nodes(vec![]),
                vec![2, 5],
            ),
            // upstream "resources requested, pods scheduled with resources, on node with existing pod running "
            (
                "on node with existing pod running",
                foo("2"),
                nodes(vec![foo("2")]),
                vec![2, 10],
            ),
            // upstream "resources requested, pods scheduled with more resources"
            (
                "resources requested, pods scheduled with more resources",
                foo("4"),
                nodes(vec![]),
                vec![5, 10],
            ),
        ];
        for (name, pod, nodes, want) in cases {
            let args = strategy_args(
                RTCR,
                vec![ResourceSpec::new("intel.com/foo", 1)],
                Some(shape),
            );
            assert_eq!(scores(args, pod, &nodes), want, "case {name}");
        }
    }

    #[test]
    fn bin_packing_multiple_extended_matches_upstream() {
        // upstream TestResourceBinPackingMultipleExtended: intel.com/foo weight 3,
        // intel.com/bar weight 5, shape 0% -> 0, 100% -> 1.
        let shape: &[(i64, i64)] = &[(0, 0), (100, 1)];
        let foo_bar = |foo: &str, bar: &str| {
            pod_with(
                &[req(&[("intel.com/foo", foo), ("intel.com/bar", bar)])],
                &[],
            )
        };
        let nodes = |node2_pods: Vec<Pod>| {
            vec![
                extended_node(
                    "node1",
                    &[("intel.com/foo", "8"), ("intel.com/bar", "4")],
                    vec![],
                ),
                extended_node(
                    "node2",
                    &[("intel.com/foo", "4"), ("intel.com/bar", "8")],
                    node2_pods,
                ),
            ]
        };
        let cases: Vec<ShapeCase> = vec![
            // upstream "nothing scheduled, nothing requested"
            (
                "nothing scheduled, nothing requested",
                no_requests(),
                nodes(vec![]),
                vec![0, 0],
            ),
            // upstream "resources requested, pods scheduled with less resources"
            (
                "resources requested, pods scheduled with less resources",
                foo_bar("2", "2"),
                nodes(vec![]),
                vec![4, 3],
            ),
            // upstream "resources requested, pods scheduled with resources, on node with existing pod running "
            (
                "on node with existing pod running",
                foo_bar("2", "2"),
                nodes(vec![foo_bar("4", "2")]),
                vec![4, 7],
            ),
            // upstream "resources requested, pods scheduled with more resources"
            (
                "resources requested, pods scheduled with more resources",
                foo_bar("4", "2"),
                nodes(vec![]),
                vec![5, 5],
            ),
        ];
        for (name, pod, nodes, want) in cases {
            let args = strategy_args(
                RTCR,
                vec![
                    ResourceSpec::new("intel.com/foo", 3),
                    ResourceSpec::new("intel.com/bar", 5),
                ],
                Some(shape),
            );
            assert_eq!(scores(args, pod, &nodes), want, "case {name}");
        }
    }

    #[test]
    fn broken_linear_on_the_upstream_shapes() {
        // upstream TestBrokenLinearFunction, the two cases helper.rs does not cover.
        use crate::helpers::score::{FunctionShapePoint, broken_linear};
        let points = |pts: &[(i64, i64)]| {
            pts.iter()
                .map(|&(utilization, score)| FunctionShapePoint { utilization, score })
                .collect::<Vec<_>>()
        };
        let peaked = points(&[(0, 2), (40, 10), (100, 0)]);
        for (p, want) in [
            (-10, 2),
            (0, 2),
            (20, 6),
            (30, 8),
            (40, 10),
            (70, 5),
            (100, 0),
            (110, 0),
        ] {
            assert_eq!(broken_linear(&peaked, p), want, "peaked shape at {p}");
        }
        let flat = points(&[(0, 2), (40, 2), (100, 2)]);
        for p in [-10, 0, 20, 30, 40, 70, 100, 110] {
            assert_eq!(broken_linear(&flat, p), 2, "flat shape at {p}");
        }
    }
}
