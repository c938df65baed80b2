//! An out-of-tree plugin: a binary that registers its own plugin next to berth's
//! built-ins and runs berth's command line. `berth crds` from this binary validates the
//! plugin's args; `berth simulate` schedules with it.
//!
//! ```sh
//! cargo run -p berth-custom-plugin -- crds | grep -A8 preferNodeLabel
//! cargo run -p berth-custom-plugin -- simulate \
//!     -f examples/quickstart.yaml -f examples/prefer-label.yaml
//! ```

use std::process::ExitCode;

use berth::cluster::{NodeInfo, PodInfo};
use berth::framework::{
    CycleState, ExtensionPoint, FieldError, Handle, MAX_NODE_SCORE, Plugin, PluginArgs,
    PluginError, PluginFactory, ScorePlugin, Status,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Args of `PreferNodeLabel`: nodes whose `label` equals `value` score 100, others 0.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, rename_all = "camelCase")]
struct PreferNodeLabelArgs {
    /// The node label to look at, e.g. `node.kubernetes.io/instance-type`.
    label: String,
    /// The preferred value.
    value: String,
}

impl PluginArgs for PreferNodeLabelArgs {
    fn validate(&self, path: &str) -> Vec<FieldError> {
        if self.label.is_empty() {
            vec![FieldError::new(
                format!("{path}.label"),
                "\"\"",
                "a label key is required",
            )]
        } else {
            Vec::new()
        }
    }
}

struct PreferNodeLabel {
    args: PreferNodeLabelArgs,
}

impl Plugin for PreferNodeLabel {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

impl PluginFactory for PreferNodeLabel {
    const NAME: &'static str = "PreferNodeLabel";
    const POINTS: &'static [ExtensionPoint] = &[ExtensionPoint::Score];
    type Args = PreferNodeLabelArgs;

    fn build(args: PreferNodeLabelArgs, _: &Handle) -> Result<Self, PluginError> {
        Ok(PreferNodeLabel { args })
    }
}

impl ScorePlugin for PreferNodeLabel {
    fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let matches = node
            .node()
            .and_then(|n| n.metadata.labels.as_ref())
            .and_then(|labels| labels.get(&self.args.label))
            .is_some_and(|v| *v == self.args.value);
        Ok(if matches { MAX_NODE_SCORE } else { 0 })
    }
}

fn main() -> ExitCode {
    let mut registry = berth::plugins::default_registry();
    registry.register::<PreferNodeLabel>();
    berth::cli::main(registry)
}
