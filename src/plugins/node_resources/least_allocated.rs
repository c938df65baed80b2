//! LeastAllocated: favour the node with the most capacity left after placing the pod, so
//! pods spread (upstream `leastResourceScorer`).

use crate::framework::MAX_NODE_SCORE;

/// The share of `capacity` left free, on 0..=100: `(capacity - requested) * 100 /
/// capacity`, 0 when the resource is absent or over-requested.
pub(super) fn score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    (capacity - requested) * MAX_NODE_SCORE / capacity
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::super::{
        NodeResourcesFitArgs, ResourceSpec, ScoringStrategyType, default_resources,
    };

    fn least_allocated(resources: Vec<ResourceSpec>) -> NodeResourcesFitArgs {
        strategy_args(ScoringStrategyType::LeastAllocated, resources, None)
    }

    #[test]
    fn least_allocated_matches_upstream() {
        let cases: Vec<ScoreCase> = vec![
            // upstream TestLeastAllocatedScoringStrategy "nothing scheduled, nothing requested"
            (
                "nothing scheduled, nothing requested",
                no_requests(),
                vec![
                    node("node1", &[("cpu", "4000"), ("memory", "10000")], vec![]),
                    node("node2", &[("cpu", "4000"), ("memory", "10000")], vec![]),
                ],
                default_resources(),
                vec![100, 100],
            ),
            // upstream TestLeastAllocatedScoringStrategy "nothing scheduled, resources requested, differently sized nodes"
            (
                "nothing scheduled, resources requested, differently sized nodes",
                two_containers(&[]),
                vec![
                    node("node1", &[("cpu", "4000"), ("memory", "10000")], vec![]),
                    node("node2", &[("cpu", "6000"), ("memory", "10000")], vec![]),
                ],
                default_resources(),
                vec![37, 50],
            ),
            // upstream TestLeastAllocatedScoringStrategy "no resources requested, pods scheduled"
            (
                "no resources requested, pods scheduled",
                no_requests(),
                vec![
                    node(
                        "node1",
                        &[("cpu", "4000"), ("memory", "10000")],
                        vec![no_requests(), no_requests()],
                    ),
                    node(
                        "node2",
                        &[("cpu", "4000"), ("memory", "10000")],
                        vec![no_requests(), no_requests()],
                    ),
                ],
                default_resources(),
                vec![100, 100],
            ),
            // upstream TestLeastAllocatedScoringStrategy "no resources requested, pods scheduled with resources"
            (
                "no resources requested, pods scheduled with resources",
                no_requests(),
                vec![
                    node(
                        "node1",
                        &[("cpu", "10000"), ("memory", "20000")],
                        vec![cpu_mem("3000", "0"), cpu_mem("3000", "0")],
                    ),
                    node(
                        "node2",
                        &[("cpu", "10000"), ("memory", "20000")],
                        vec![cpu_mem("3000", "0"), cpu_mem("3000", "5000")],
                    ),
                ],
                default_resources(),
                vec![70, 57],
            ),
            // upstream TestLeastAllocatedScoringStrategy "resources requested, pods scheduled with resources"
            (
                "resources requested, pods scheduled with resources",
                two_containers(&[]),
                vec![
                    node(
                        "node1",
                        &[("cpu", "10000"), ("memory", "20000")],
                        vec![cpu_mem("3000", "0")],
                    ),
                    node(
                        "node2",
                        &[("cpu", "10000"), ("memory", "20000")],
                        vec![cpu_mem("3000", "5000")],
                    ),
                ],
                default_resources(),
                vec![57, 45],
            ),
            // upstream TestLeastAllocatedScoringStrategy "resources requested, pods scheduled with resources, differently sized nodes"
            (
                "resources requested, pods scheduled with resources, differently sized nodes",
                two_containers(&[]),
                vec![
                    node(
                        "node1",
                        &[("cpu", "10000"), ("memory", "20000")],
                        vec![cpu_mem("3000", "0")],
                    ),
                    node(
                        "node2",
                        &[("cpu", "10000"), ("memory", "50000")],
                        vec![cpu_mem("3000", "5000")],
                    ),
                ],
                default_resources(),
                vec![57, 60],
            ),
            // upstream TestLeastAllocatedScoringStrategy "requested resources exceed node capacity"
            (
                "requested resources exceed node capacity",
                cpu_mem("3000", "0"),
                vec![
                    node(
                        "node1",
                        &[("cpu", "4000"), ("memory", "10000")],
                        vec![cpu_mem("3000", "0")],
                    ),
                    node(
                        "node2",
                        &[("cpu", "4000"), ("memory", "10000")],
                        vec![cpu_mem("3000", "5000")],
                    ),
                ],
                default_resources(),
                vec![50, 25],
            ),
            // upstream TestLeastAllocatedScoringStrategy "zero node resources, pods scheduled with resources"
            (
                "zero node resources, pods scheduled with resources",
                no_requests(),
                vec![
                    node("node1", &[], vec![cpu_mem("3000", "0")]),
                    node("node2", &[], vec![cpu_mem("3000", "5000")]),
                ],
                default_resources(),
                vec![0, 0],
            ),
            // upstream TestLeastAllocatedScoringStrategy "nothing scheduled, resources requested with different weight on CPU and memory, differently sized nodes"
            (
                "different weight on CPU and memory",
                two_containers(&[]),
                vec![
                    node("node1", &[("cpu", "4000"), ("memory", "10000")], vec![]),
                    node("node2", &[("cpu", "6000"), ("memory", "10000")], vec![]),
                ],
                vec![ResourceSpec::new("memory", 2), ResourceSpec::new("cpu", 1)],
                vec![41, 50],
            ),
            // upstream TestLeastAllocatedScoringStrategy "bypass extended resource if the pod does not request"
            (
                "bypass extended resource if the pod does not request",
                two_containers(&[]),
                vec![
                    node("node1", &[("cpu", "6000"), ("memory", "10000")], vec![]),
                    node(
                        "node2",
                        &[("cpu", "6000"), ("memory", "10000"), (EXTENDED_RES, "4")],
                        vec![],
                    ),
                ],
                extended_resource_set(),
                vec![50, 50],
            ),
            // upstream TestLeastAllocatedScoringStrategy "honor extended resource if the pod requests"
            (
                "honor extended resource if the pod requests",
                pod_with(
                    &[req(&[
                        ("cpu", "3000"),
                        ("memory", "5000"),
                        (EXTENDED_RES, "2"),
                    ])],
                    &[],
                ),
                vec![
                    node(
                        "node1",
                        &[("cpu", "6000"), ("memory", "10000"), (EXTENDED_RES, "4")],
                        vec![],
                    ),
                    node(
                        "node2",
                        &[("cpu", "6000"), ("memory", "10000"), (EXTENDED_RES, "10")],
                        vec![],
                    ),
                ],
                extended_resource_set(),
                vec![50, 60],
            ),
            // upstream TestLeastAllocatedScoringStrategy "if the node doesn't have a resource"
            (
                "if the node doesn't have a resource",
                cpu_mem("3000", "4000"),
                vec![
                    node("node1", &[("cpu", "6000"), ("memory", "10000")], vec![]),
                    node(
                        "node2",
                        &[("cpu", "6000"), ("memory", "10000"), (EXTENDED_RES, "4")],
                        vec![],
                    ),
                ],
                vec![
                    ResourceSpec::new(EXTENDED_RES, 2),
                    ResourceSpec::new("cpu", 1),
                    ResourceSpec::new("memory", 1),
                ],
                vec![55, 55],
            ),
        ];
        for (name, pod, nodes, resources, want) in cases {
            assert_eq!(
                scores(least_allocated(resources), pod, &nodes),
                want,
                "case {name}"
            );
        }
    }
}
