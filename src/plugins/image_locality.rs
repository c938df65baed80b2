//! ImageLocality: prefers nodes that already hold the pod's container images, so the pod
//! starts without pulling them (upstream `plugins/imagelocality`).
//!
//! Each image of the pod's init and app containers that the node holds adds its size
//! scaled by its spread, `nodes holding it / nodes in the cluster`, so an image present on
//! one node only does not draw every replica there (the "node heating" problem). The sum
//! is clamped to `[23 MiB, 1000 MiB * containers]` and mapped linearly onto 0..=100.
//! Image names are matched after normalization (`:latest` added to an untagged name,
//! [`normalized_image_name`]).
//!
//! Score only, as upstream: the pod's image names are normalized once per pod
//! (`PodInfo::images`) and the node count is the whole snapshot's
//! (`CycleState::node_count`), so Score only looks names up. No NormalizeScore, and no
//! EnqueueExtensions, as upstream.

use crate::cluster::{ImageStateSummary, NodeInfo, PodInfo};
use crate::framework::{
    CycleState, Handle, MAX_NODE_SCORE, NoArgs, PluginError, ScorePlugin, Status,
};

const MB: i64 = 1024 * 1024;
/// Below this sum of scaled image sizes a node scores 0 (upstream `minThreshold`).
pub const MIN_THRESHOLD: i64 = 23 * MB;
/// Per container: at or above this many times the number of containers a node scores 100
/// (upstream `maxContainerThreshold`).
pub const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

/// The ImageLocality plugin. Stateless; per-cycle data lives in [`CycleState`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ImageLocality;

crate::plugin! {
    ImageLocality {
        name: "ImageLocality",
        points: [Score],
    }

    impl Plugin {
        fn as_sign(&self) -> Option<&dyn crate::framework::SignPlugin> {
            Some(self)
        }
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str = "Prefers nodes that already hold the pod's container images, weighing each image by its size and by how many nodes have it.";
        type Args = NoArgs;

        fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
            Ok(ImageLocality)
        }
    }
}

impl ScorePlugin for ImageLocality {
    /// Upstream `Score`: the pod's images (normalized once per pod in `PodInfo`) found on
    /// the node, each scaled by its spread over all nodes of the snapshot, then clamped
    /// and scaled by [`calculate_priority`]. No allocation per node.
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let total_nodes = state.node_count();
        let sum = pod
            .images
            .iter()
            .filter_map(|image| node.image_states.get(image))
            .map(|image| scaled_image_score(image, total_nodes))
            .sum();
        let num_containers = i64::try_from(pod.images.len()).unwrap_or(i64::MAX);
        Ok(calculate_priority(sum, num_containers))
    }
}

/// An image's size scaled by the share of nodes holding it, truncated (upstream
/// `scaledImageScore`, same float arithmetic).
fn scaled_image_score(image: &ImageStateSummary, total_nodes: usize) -> i64 {
    let spread = image.num_nodes as f64 / total_nodes.max(1) as f64;
    (image.size as f64 * spread) as i64
}

/// Upstream `calculatePriority`: clamp `sum` to `[MIN_THRESHOLD, MAX_CONTAINER_THRESHOLD *
/// num_containers]` and scale it linearly onto 0..=100 with integer division. A pod without
/// containers scores 0.
fn calculate_priority(sum: i64, num_containers: i64) -> i64 {
    let max_threshold = MAX_CONTAINER_THRESHOLD.saturating_mul(num_containers);
    // In upstream's order: the lower bound wins when the range is empty.
    let sum = if sum < MIN_THRESHOLD {
        MIN_THRESHOLD
    } else {
        sum.min(max_threshold)
    };
    MAX_NODE_SCORE * (sum - MIN_THRESHOLD) / (max_threshold - MIN_THRESHOLD)
}

/// What of a pod this plugin reads, for opportunistic batching (upstream `SignPod`).
impl crate::framework::SignPlugin for ImageLocality {
    fn fragments(&self, pod: &crate::cluster::PodInfo) -> Vec<crate::framework::SignFragment> {
        use crate::framework::signature;
        vec![signature::image_names(pod)]
    }
}

#[cfg(test)]
mod tests {
    use crate::framework::{ExtensionPoint, Plugin, PluginFactory};
    use k8s_openapi::api::core::v1::{Container, Node};

    use super::*;
    use crate::cluster::Snapshot;
    use crate::testing::{make_node, make_pod};

    /// A container running `image`.
    fn container(image: &str) -> Container {
        Container {
            name: image.replace(['/', '.', ':'], "-"),
            image: Some(image.to_string()),
            ..Container::default()
        }
    }

    /// A pod with app containers `images` and init containers `init`.
    fn pod(images: &[&str], init: &[&str]) -> PodInfo {
        let pod = make_pod().name("pod").namespace("default");
        let pod = init
            .iter()
            .fold(pod, |pod, i| pod.init_container(container(i)));
        images
            .iter()
            .fold(pod, |pod, i| pod.container(container(i)))
            .info()
    }

    /// upstream `makeImageNode`: a node holding `images`, each (names, size in MiB).
    fn image_node(name: &str, images: &[(&[&str], i64)]) -> Node {
        images
            .iter()
            .fold(make_node().name(name).no_images(), |node, (names, mib)| {
                node.image(names, mib * MB)
            })
            .obj()
    }

    // The node statuses of upstream's table, named as there.
    fn node_40_300_2000(name: &str) -> Node {
        image_node(
            name,
            &[
                (&["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40),
                (&["gcr.io/300:latest", "gcr.io/300:v1"], 300),
                (&["gcr.io/2000:latest"], 2000),
            ],
        )
    }

    fn node_250_10(name: &str) -> Node {
        image_node(
            name,
            &[
                (&["gcr.io/250:latest"], 250),
                (&["gcr.io/10:latest", "gcr.io/10:v1"], 10),
            ],
        )
    }

    fn node_600_40_900(name: &str) -> Node {
        image_node(
            name,
            &[
                (&["gcr.io/600:latest"], 600),
                (&["gcr.io/40:latest"], 40),
                (&["gcr.io/900:latest"], 900),
            ],
        )
    }

    fn node_300_600_900(name: &str) -> Node {
        image_node(
            name,
            &[
                (&["gcr.io/300:latest"], 300),
                (&["gcr.io/600:latest"], 600),
                (&["gcr.io/900:latest"], 900),
            ],
        )
    }

    fn node_4000_30(name: &str) -> Node {
        image_node(
            name,
            &[(&["gcr.io/4000:latest"], 4000), (&["gcr.io/30:latest"], 30)],
        )
    }

    fn node_20_30_40(name: &str) -> Node {
        image_node(
            name,
            &[
                (&["gcr.io/20:latest"], 20),
                (&["gcr.io/30:latest"], 30),
                (&["gcr.io/40:latest"], 40),
            ],
        )
    }

    fn node_without_images(name: &str) -> Node {
        image_node(name, &[])
    }

    /// Builds the snapshot (which counts each image's nodes) and runs Score on each node, as
    /// upstream's test scores every node of the snapshot.
    fn scores(pod: &PodInfo, nodes: Vec<Node>) -> Vec<i64> {
        let snapshot = Snapshot::from_objects(nodes, Vec::new()).expect("valid nodes");
        let mut state = CycleState::new();
        state.set_node_count(snapshot.len());
        snapshot
            .nodes()
            .iter()
            .map(|node| {
                ImageLocality
                    .score(&state, pod, node)
                    .unwrap_or_else(|status| panic!("Score failed: {status}"))
            })
            .collect()
    }

    #[test]
    fn scores_match_upstream() {
        let cases: Vec<(&str, PodInfo, Vec<Node>, Vec<i64>)> = vec![
            // upstream TestImageLocalityPriority "two images spread on two nodes, prefer the larger image one":
            // node2: 100 * (250M/2 - 23M) / (2 * 1000M - 23M) = 5; node1: 40M/2 < 23M.
            (
                "two images spread on two nodes",
                pod(&["gcr.io/40", "gcr.io/250"], &[]),
                vec![node_40_300_2000("node1"), node_250_10("node2")],
                vec![0, 5],
            ),
            // upstream "two images on one node, prefer this node":
            // node1: 100 * ((40M + 300M)/2 - 23M) / (2000M - 23M) = 7.
            (
                "two images on one node",
                pod(&["gcr.io/40", "gcr.io/300"], &[]),
                vec![node_40_300_2000("node1"), node_250_10("node2")],
                vec![7, 0],
            ),
            // upstream "if exceed limit, use limit": 4000M/2 >= 2 * 1000M -> 100.
            (
                "above the upper threshold",
                pod(&["gcr.io/10", "gcr.io/4000"], &[]),
                vec![node_4000_30("node1"), node_250_10("node2")],
                vec![100, 0],
            ),
            // upstream "if exceed limit, use limit (with node which has no images present)":
            // a third node lowers the spread: 100 * (4000M/3 - 23M) / (2000M - 23M) = 66.
            (
                "spread over three nodes",
                pod(&["gcr.io/10", "gcr.io/4000"], &[]),
                vec![
                    node_4000_30("node1"),
                    node_250_10("node2"),
                    node_without_images("node3"),
                ],
                vec![66, 0, 0],
            ),
            // upstream "pod with multiple large images, node2 is preferred":
            // node1 (600M + 900M) * 2/3 -> 32; node2 adds 300M * 1/3 -> 36.
            (
                "multiple large images",
                pod(&["gcr.io/300", "gcr.io/600", "gcr.io/900"], &[]),
                vec![
                    node_600_40_900("node1"),
                    node_300_600_900("node2"),
                    node_without_images("node3"),
                ],
                vec![32, 36, 0],
            ),
            // upstream "pod with multiple small images":
            // node1: 100 * (30M + 40M * 1/2 - 23M) / (2000M - 23M) = 1.
            (
                "multiple small images",
                pod(&["gcr.io/30", "gcr.io/40"], &[]),
                vec![node_20_30_40("node1"), node_4000_30("node2")],
                vec![1, 0],
            ),
            // upstream "include InitContainers: two images spread on two nodes, prefer the larger image one":
            // node1 holds the init container's image: 100 * (300M/2 - 23M) / (2000M - 23M) = 6.
            (
                "init containers count",
                pod(&["gcr.io/30"], &["gcr.io/300"]),
                vec![node_40_300_2000("node1"), node_20_30_40("node2")],
                vec![6, 0],
            ),
        ];
        for (name, pod, nodes, want) in cases {
            assert_eq!(scores(&pod, nodes), want, "case {name}");
        }
    }

    #[test]
    fn tagged_and_digest_images_match_exactly() {
        // A tag other than latest matches only that name; `:latest` matches the untagged
        // name (upstream TestNormalizedImageName behaviour, through scoring).
        let node = || {
            image_node(
                "node1",
                &[(&["gcr.io/app:v1", "registry:5000/base:latest"], 2000)],
            )
        };
        assert_eq!(
            scores(&pod(&["gcr.io/app:v1"], &[]), vec![node()]),
            vec![100]
        );
        assert_eq!(scores(&pod(&["gcr.io/app"], &[]), vec![node()]), vec![0]);
        assert_eq!(
            scores(&pod(&["registry:5000/base"], &[]), vec![node()]),
            vec![100]
        );
    }

    #[test]
    fn priority_clamps_to_the_thresholds() {
        assert_eq!(calculate_priority(0, 2), 0);
        assert_eq!(calculate_priority(MIN_THRESHOLD, 1), 0);
        assert_eq!(calculate_priority(MAX_CONTAINER_THRESHOLD, 1), 100);
        assert_eq!(calculate_priority(10 * MAX_CONTAINER_THRESHOLD, 3), 100);
        // No containers: nothing to pull, score 0 and no division by zero.
        assert_eq!(calculate_priority(0, 0), 0);
    }

    #[test]
    fn without_a_node_count_every_image_counts_as_everywhere() {
        // A cycle state that never saw a snapshot (node count 0) must not divide by zero:
        // the spread is taken over at least one node.
        let snapshot =
            Snapshot::from_objects(vec![node_250_10("node1")], Vec::new()).expect("valid node");
        let result = ImageLocality.score(
            &CycleState::new(),
            &pod(&["gcr.io/250"], &[]),
            &snapshot.nodes()[0],
        );
        assert!(result.is_ok());
    }

    #[test]
    fn registry_points_match_the_accessors() {
        let plugin = ImageLocality;
        assert!(plugin.as_pre_score().is_none());
        assert!(plugin.as_score().is_some());
        assert!(plugin.as_filter().is_none());
        assert!(
            plugin
                .as_score()
                .and_then(|s| s.score_extensions())
                .is_none()
        );
        // Upstream's ImageLocality implements ScorePlugin only.
        assert_eq!(ImageLocality::POINTS, &[ExtensionPoint::Score]);
        assert!(plugin.events_to_register().is_none());
    }
}
