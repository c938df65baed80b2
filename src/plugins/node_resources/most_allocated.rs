//! MostAllocated: favour the node with the least capacity left after placing the pod, so
//! pods pack (upstream `mostResourceScorer`).

use crate::framework::MAX_NODE_SCORE;

/// The share of `capacity` requested, on 0..=100: `requested * 100 / capacity`, capped at
/// 100 (the non-zero defaults can push `requested` past `capacity`), 0 when the resource
/// is absent.
pub(super) fn score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 {
        return 0;
    }
    requested.min(capacity) * MAX_NODE_SCORE / capacity
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::super::{
        NodeResourcesFitArgs, ResourceSpec, ScoringStrategyType, default_resources,
    };

    fn most_allocated(resources: Vec<ResourceSpec>) -> NodeResourcesFitArgs {
        strategy_args(ScoringStrategyType::MostAllocated, resources, None)
    }

    #[test]
    fn most_allocated_matches_upstream() {
        // A container without requests (upstream `MakePod().Container("container")`).
        let no_request_container = || pod_with(&[vec![]], &[]);
        let cases: Vec<ScoreCase> = vec![
            // upstream TestMostAllocatedScoringStrategy "nothing scheduled, nothing requested"
            (
                "nothing scheduled, nothing requested",
                no_requests(),
                vec![
                    node("node1", &[("cpu", "4000"), ("memory", "10000")], vec![]),
                    node("node2", &[("cpu", "4000"), ("memory", "10000")], vec![]),
                ],
                default_resources(),
                vec![0, 0],
            ),
            // upstream TestMostAllocatedScoringStrategy "nothing scheduled, resources requested, differently sized nodes"
            (
                "nothing scheduled, resources requested, differently sized nodes",
                two_containers(&[]),
                vec![
                    node("node1", &[("cpu", "4000"), ("memory", "10000")], vec![]),
                    node("node2", &[("cpu", "6000"), ("memory", "10000")], vec![]),
                ],
                default_resources(),
                vec![62, 50],
            ),
            // upstream TestMostAllocatedScoringStrategy "no resources requested, pods scheduled with resources"
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
                vec![30, 42],
            ),
            // upstream TestMostAllocatedScoringStrategy "resources requested, pods scheduled with resources"
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
                vec![42, 55],
            ),
            // upstream TestMostAllocatedScoringStrategy "resources requested equal node capacity"
            (
                "resources requested equal node capacity",
                pod_with(
                    &[
                        req(&[("cpu", "2000"), ("memory", "4000")]),
                        req(&[("cpu", "3000"), ("memory", "5000")]),
                    ],
                    &[],
                ),
                vec![
                    node("node1", &[("cpu", "5000"), ("memory", "10000")], vec![]),
                    node("node2", &[("cpu", "10000"), ("memory", "9000")], vec![]),
                ],
                default_resources(),
                vec![95, 75],
            ),
            // upstream TestMostAllocatedScoringStrategy "nothing scheduled, resources requested, differently sized nodes" (memory weight 2)
            (
                "different weight on CPU and memory",
                two_containers(&[]),
                vec![
                    node("node1", &[("cpu", "4000"), ("memory", "10000")], vec![]),
                    node("node2", &[("cpu", "6000"), ("memory", "10000")], vec![]),
                ],
                vec![ResourceSpec::new("memory", 2), ResourceSpec::new("cpu", 1)],
                vec![58, 50],
            ),
            // upstream TestMostAllocatedScoringStrategy "no resources requested, pods scheduled, nonzero request for resource"
            (
                "nonzero request for resource",
                no_request_container(),
                vec![
                    node(
                        "node1",
                        &[("cpu", "250m"), ("memory", "1000Mi")],
                        vec![no_request_container(), no_request_container()],
                    ),
                    node("node2", &[("cpu", "250m"), ("memory", "1000Mi")], vec![]),
                ],
                default_resources(),
                vec![80, 30],
            ),
            // upstream TestMostAllocatedScoringStrategy "bypass extended resource if the pod does not request"
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
            // upstream TestMostAllocatedScoringStrategy "honor extended resource if the pod request"
            (
                "honor extended resource if the pod request",
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
                vec![50, 40],
            ),
            // upstream TestMostAllocatedScoringStrategy "if the node doesn't have a resource"
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
                vec![45, 45],
            ),
        ];
        for (name, pod, nodes, resources, want) in cases {
            assert_eq!(
                scores(most_allocated(resources), pod, &nodes),
                want,
                "case {name}"
            );
        }
    }
}
