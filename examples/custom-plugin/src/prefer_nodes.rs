//! PreferNodes: a Score plugin that prefers the nodes named in its args, most preferred
//! first.
//!
//! - Score (raw): with `nodes: [n1, ..., nk]`, node `ni` scores `k - i + 1` (the first
//!   scores `k`, the last 1); an unlisted node scores 0.
//! - NormalizeScore: min-max over the feasible nodes of this cycle,
//!   `0 + (raw - min) * (100 - 0) / (max - min)` in integer arithmetic (rounding down), so
//!   the most preferred feasible node gets 100 and the least preferred (or unlisted) one 0.
//!   The scale is relative to the feasible nodes: with `nodes: [a, b, c]` and only `b` and
//!   `c` feasible, `b` gets 100 and `c` 0.
//! - When every feasible node has the same raw score (none listed, or a single feasible
//!   node), no node is preferred over another and every node gets 0: the plugin adds
//!   nothing to the totals rather than the same constant to each.
//!
//! Score reads a name -> rank map built once, at construction: a lookup, no allocation.

use std::collections::HashMap;
use std::sync::Arc;

use berth::cluster::{NodeInfo, PodInfo};
use berth::framework::{
    CycleState, FieldError, Handle, MAX_NODE_SCORE, MIN_NODE_SCORE, PluginArgs, PluginError,
    ScoreExtensions, ScorePlugin, Status,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::quoted;

/// The most nodes `nodes` may list.
const MAX_NODES: usize = 100;

/// Args of PreferNodes: the nodes to prefer, most preferred first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, rename_all = "camelCase")]
pub struct PreferNodesArgs {
    /// Node names, most preferred first, each listed once.
    // `x-kubernetes-list-type: set` makes the API server reject a name listed twice.
    #[schemars(length(max = 100), extend("x-kubernetes-list-type" = "set"))]
    pub nodes: Vec<String>,
}

impl PluginArgs for PreferNodesArgs {
    fn validate(&self, path: &str) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if self.nodes.len() > MAX_NODES {
            errors.push(FieldError::new(
                format!("{path}.nodes"),
                self.nodes.len(),
                format!("must have at most {MAX_NODES} items"),
            ));
        }
        for (i, name) in self.nodes.iter().enumerate() {
            let field = format!("{path}.nodes[{i}]");
            if name.is_empty() {
                errors.push(FieldError::new(field, quoted(name), "must be a node name"));
            } else if let Some(first) = self.nodes[..i].iter().position(|n| n == name) {
                errors.push(FieldError::new(
                    field,
                    quoted(name),
                    format!("duplicate of nodes[{first}]: list each node once"),
                ));
            }
        }
        errors
    }
}

/// The PreferNodes plugin.
#[derive(Debug, Clone)]
pub struct PreferNodes {
    /// Raw score per listed node.
    rank: HashMap<String, i64>,
}

impl PreferNodes {
    pub fn new(args: PreferNodesArgs) -> Self {
        let count = args.nodes.len() as i64;
        let rank = args.nodes.into_iter().zip((1..=count).rev()).collect();
        PreferNodes { rank }
    }
}

berth::plugin! {
    PreferNodes {
        name: "PreferNodes",
        points: [Score],
    }

    impl Plugin {
        /// Score-only: it never rejects a pod, so no event needs to requeue one.
        fn events_to_register(&self) -> Option<Vec<berth::framework::ClusterEvent>> {
            Some(Vec::new())
        }
    }

    impl PluginFactory {
        type Args = PreferNodesArgs;

        fn build(args: PreferNodesArgs, _: &Handle) -> Result<Self, PluginError> {
            Ok(PreferNodes::new(args))
        }
    }
}

impl ScorePlugin for PreferNodes {
    fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(self.rank.get(node.name()).copied().unwrap_or(0))
    }

    fn score_extensions(&self) -> Option<&dyn ScoreExtensions> {
        Some(self)
    }
}

impl ScoreExtensions for PreferNodes {
    fn normalize_score(
        &self,
        _: &CycleState,
        _: &PodInfo,
        _: &[Arc<NodeInfo>],
        scores: &mut [i64],
    ) -> Status {
        min_max_normalize(scores);
        Status::success()
    }
}

/// Maps `scores` linearly onto `MIN_NODE_SCORE..=MAX_NODE_SCORE`: the lowest becomes
/// `MIN_NODE_SCORE`, the highest `MAX_NODE_SCORE`, rounding down in between. When all
/// scores are equal (or there are none) every score becomes `MIN_NODE_SCORE`.
pub fn min_max_normalize(scores: &mut [i64]) {
    let (Some(&min), Some(&max)) = (scores.iter().min(), scores.iter().max()) else {
        return;
    };
    if min == max {
        scores.fill(MIN_NODE_SCORE);
        return;
    }
    for score in scores.iter_mut() {
        *score = MIN_NODE_SCORE + (*score - min) * (MAX_NODE_SCORE - MIN_NODE_SCORE) / (max - min);
    }
}

#[cfg(test)]
mod tests {
    use berth::framework::decode_args;
    use serde_json::json;

    use super::*;
    use crate::test_util::{node_info, pending};

    fn plugin(nodes: &[&str]) -> PreferNodes {
        let args = PreferNodesArgs {
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
        };
        PreferNodes::new(args)
    }

    /// Score then NormalizeScore over `feasible`, as the framework runs them.
    fn scores(plugin: &PreferNodes, feasible: &[&str]) -> (Vec<i64>, Vec<i64>) {
        let pod = pending("default", "p", &[]);
        let nodes: Vec<Arc<NodeInfo>> = feasible.iter().map(|n| node_info(n, &[])).collect();
        let state = CycleState::new();
        let raw: Vec<i64> = nodes
            .iter()
            .map(|n| plugin.score(&state, &pod, n).expect("Score succeeds"))
            .collect();
        let mut normalized = raw.clone();
        let status = plugin.normalize_score(&state, &pod, &nodes, &mut normalized);
        assert!(status.is_success());
        (raw, normalized)
    }

    #[test]
    fn raw_and_normalized_scores() {
        // (case, preferred nodes, feasible nodes, raw scores, normalized scores), each
        // worked from the rules in the module docs.
        type Case = (
            &'static str,
            &'static [&'static str],
            &'static [&'static str],
            Vec<i64>,
            Vec<i64>,
        );
        let cases: Vec<Case> = vec![
            (
                "two preferred among four: ranks 2 and 1, min 0 max 2 -> 100, 50",
                &["node-c", "node-a"],
                &["node-a", "node-b", "node-c", "node-d"],
                vec![1, 0, 2, 0],
                vec![50, 0, 100, 0],
            ),
            (
                "three preferred, ranks 3, 2, 1: (2-0)*100/3 = 66 rounds down",
                &["node-a", "node-b", "node-c"],
                &["node-a", "node-b", "node-c", "node-d"],
                vec![3, 2, 1, 0],
                vec![100, 66, 33, 0],
            ),
            (
                "relative to the feasible nodes: min is 1, not 0, when every feasible node is listed",
                &["node-a", "node-b", "node-c"],
                &["node-b", "node-c"],
                vec![2, 1],
                vec![100, 0],
            ),
            (
                "no feasible node listed: all equal -> all 0",
                &["node-z"],
                &["node-a", "node-b"],
                vec![0, 0],
                vec![0, 0],
            ),
            (
                "single feasible preferred node: all equal -> 0",
                &["node-a"],
                &["node-a"],
                vec![1],
                vec![0],
            ),
            ("no nodes at all", &["node-a"], &[], vec![], vec![]),
        ];
        for (name, preferred, feasible, want_raw, want_normalized) in cases {
            let (raw, normalized) = scores(&plugin(preferred), feasible);
            assert_eq!(raw, want_raw, "case {name}: raw");
            assert_eq!(normalized, want_normalized, "case {name}: normalized");
        }
    }

    #[test]
    fn min_max_normalize_handles_negative_and_large_ranges() {
        let mut scores = vec![-50, 0, 50];
        min_max_normalize(&mut scores);
        assert_eq!(scores, [0, 50, 100]);
        let mut scores = vec![7, 1000, 7];
        min_max_normalize(&mut scores);
        assert_eq!(scores, [0, 100, 0]);
    }

    #[test]
    fn args_validate_names_and_duplicates() {
        let args = json!({"nodes": ["node-a", "", "node-b", "node-a"]});
        let errors = decode_args::<PreferNodesArgs>(Some(&args), "spec.pluginConfig.preferNodes")
            .expect_err("invalid args");
        let rendered: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            rendered,
            [
                "spec.pluginConfig.preferNodes.nodes[1]: Invalid value: \"\": must be a node name",
                "spec.pluginConfig.preferNodes.nodes[3]: Invalid value: \"node-a\": duplicate of nodes[0]: list each node once",
            ]
        );
        let defaults = decode_args::<PreferNodesArgs>(None, "p").expect("defaults are valid");
        assert!(defaults.nodes.is_empty());
    }
}
