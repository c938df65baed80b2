//! `berth plugins`: the reference rendered for a small hand-made registry (exact output),
//! the built binary on the real registry, and the freshness of the checked-in
//! `docs/plugins.md`.

use std::path::Path;
use std::process::{Command, Output};

use berth::cli::plugins::{Format, render};
use berth::cluster::{NodeInfo, PodInfo};
use berth::framework::{
    CycleState, DefaultPlugin, ExtensionPoint, FilterPlugin, Handle, NoArgs, Plugin, PluginArgs,
    PluginError, PluginFactory, QueueSortPlugin, QueuedPodInfo, Registry, ScorePlugin, Status,
};
use pretty_assertions::assert_eq;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

const BERTH: &str = env!("CARGO_BIN_EXE_berth");

/// Args of Fake.
///
/// This second paragraph is for Rust readers and stays out of the reference.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
struct FakeArgs {
    /// How long to wait,
    /// in seconds.
    #[schemars(range(min = 1, max = 600))]
    timeout_seconds: i64,
    /// The mode | with a pipe.
    mode: Mode,
    /// Targets to prefer, best first.
    #[schemars(length(max = 4))]
    targets: Vec<Target>,
    /// Extra settings.
    extra: Extra,
}

impl Default for FakeArgs {
    fn default() -> Self {
        FakeArgs {
            timeout_seconds: 30,
            mode: Mode::Fast,
            targets: Vec::new(),
            extra: Extra {
                labels: vec!["app".into()],
                address: None,
            },
        }
    }
}

impl PluginArgs for FakeArgs {}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, JsonSchema)]
enum Mode {
    /// Skips the checks.
    #[default]
    Fast,
    /// Runs every check.
    Careful,
}

/// A node to prefer.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Target {
    /// Node name.
    name: String,
    /// Weight of the target.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = 10))]
    weight: i64,
}

fn one() -> i64 {
    1
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
struct Extra {
    /// Labels to match.
    labels: Vec<String>,
    /// Address of the service; none by default.
    address: Option<String>,
}

struct Fake;

berth::plugin! {
    Fake {
        name: "Fake",
        points: [Filter, Score],
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str = "Does fake things to test the reference.";
        type Args = FakeArgs;

        fn build(_: FakeArgs, _: &Handle) -> Result<Self, PluginError> {
            Ok(Fake)
        }
    }
}

impl FilterPlugin for Fake {
    fn filter(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Status {
        Status::success()
    }
}

impl ScorePlugin for Fake {
    fn score(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Result<i64, Status> {
        Ok(0)
    }
}

struct Plain;

berth::plugin! {
    Plain {
        name: "Plain",
        points: [QueueSort],
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str = "Sorts the queue plainly.";
        type Args = NoArgs;

        fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
            Ok(Plain)
        }
    }
}

impl QueueSortPlugin for Plain {
    fn less(&self, _: &QueuedPodInfo, _: &QueuedPodInfo) -> bool {
        false
    }
}

/// No DESCRIPTION: the reference leaves the column empty.
struct Binder;

// Declares Bind without implementing BindPlugin: the reference reads only the registry
// entry, so the plugin! declaration (which would require the trait) is not used here.
impl Plugin for Binder {
    fn name(&self) -> &str {
        Self::NAME
    }
}

impl PluginFactory for Binder {
    const NAME: &'static str = "Binder";
    const POINTS: &'static [ExtensionPoint] = &[ExtensionPoint::Bind];
    type Args = NoArgs;

    fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
        Ok(Binder)
    }
}

/// Fake (with args, default, weight 5), Plain (not default) and Binder (default, no
/// weight).
fn test_registry() -> Registry {
    let mut registry = Registry::new();
    registry
        .register::<Fake>()
        .register::<Plain>()
        .register::<Binder>();
    registry.set_defaults(vec![
        DefaultPlugin::of::<Fake>().weight(5),
        DefaultPlugin::of::<Binder>(),
    ]);
    registry
}

fn rendered(name: Option<&str>, format: Format) -> String {
    match render(name, format, &test_registry()) {
        Ok(text) => text,
        Err(error) => panic!("render failed: {error}"),
    }
}

/// Where the list's closing section on upstream's default set begins, in each format.
const DIFFERENCES_TEXT: &str = "\nDifferences from kube-scheduler 1.37's default set:\n";
const DIFFERENCES_MARKDOWN: &str = "\n## Differences from kube-scheduler 1.37\n";

/// The list without its closing section, which `the_list_ends_with_*` checks.
fn rendered_list(format: Format) -> String {
    let text = rendered(None, format);
    let marker = match format {
        Format::Text => DIFFERENCES_TEXT,
        Format::Markdown => DIFFERENCES_MARKDOWN,
    };
    match text.split_once(marker) {
        Some((list, _)) => list.to_string(),
        None => panic!("no {marker:?} section in:\n{text}"),
    }
}

#[test]
fn text_list_shows_every_plugin_and_the_default_set() {
    let want = "\
NAME    EXTENSION POINTS  DEFAULT  WEIGHT  ARGS  DESCRIPTION
Binder  Bind              yes      -       -
Fake    Filter, Score     yes      5       fake  Does fake things to test the reference.
Plain   QueueSort         no       -       -     Sorts the queue plainly.

Default plugin set (multiPoint, in order):
  1. Fake    Score weight 5
  2. Binder

Args go under spec.pluginConfig.<ARGS>; `berth plugins NAME` describes them.
";
    assert_eq!(rendered_list(Format::Text), want);
}

#[test]
fn text_detail_shows_each_args_field() {
    let want = "\
Fake
  Does fake things to test the reference.

Extension points:  Filter, Score
Default set:       yes, Score weight 5
Args:              spec.pluginConfig.fake (FakeArgs)
                   Args of Fake.

Fields:
  extra  object
      Extra settings.
  extra.address  string
      Address of the service; none by default.
      Default: null
  extra.labels  []string
      Labels to match.
      Default: [\"app\"]
  mode  string
      The mode | with a pipe. `Fast`: Skips the checks. `Careful`: Runs every check.
      Default: \"Fast\"
      Allowed: Fast, Careful
  targets  []object
      Targets to prefer, best first.
      Default: []
      Constraints: items: <= 4
  targets[].name  string
      Node name.
      Required
  targets[].weight  integer
      Weight of the target.
      Default: 1
      Constraints: 1..10
  timeoutSeconds  integer
      How long to wait, in seconds.
      Default: 30
      Constraints: 1..600

Defaults:
  spec:
    pluginConfig:
      fake:
        extra:
          address: null
          labels:
          - app
        mode: Fast
        targets: []
        timeoutSeconds: 30
";
    assert_eq!(rendered(Some("Fake"), Format::Text), want);
}

#[test]
fn text_detail_of_a_plugin_without_args() {
    let want = "\
Plain
  Sorts the queue plainly.

Extension points:  QueueSort
Default set:       no
Args:              none
";
    assert_eq!(rendered(Some("Plain"), Format::Text), want);
}

#[test]
fn markdown_is_the_full_reference() {
    let want = "\
# Plugin reference

<!-- Generated from the plugin registry by `berth plugins --format markdown`; do not edit.
     Regenerate with: cargo run -q -- plugins --format markdown > docs/plugins.md -->

Every plugin berth knows: the extension points it implements, whether it is in the
default plugin set (and with which Score weight), and its args, which a
SchedulerProfile sets under `spec.pluginConfig.<field>`. `berth plugins [NAME]`
prints the same in a terminal.

## Plugins

| Plugin | Extension points | Default | Weight | Args | Description |
|---|---|---|---|---|---|
| [Binder](#binder) | Bind | yes | - | - |  |
| [Fake](#fake) | Filter, Score | yes | 5 | `fake` | Does fake things to test the reference. |
| [Plain](#plain) | QueueSort | no | - | - | Sorts the queue plainly. |

## Default plugin set

A profile runs these unless it disables them, as a `multiPoint` list: each plugin at
every extension point it implements, in this order.

1. Fake (Score weight 5)
2. Binder

## Binder

- Extension points: Bind
- Default set: yes
- Args: none

## Fake

Does fake things to test the reference.

- Extension points: Filter, Score
- Default set: yes, Score weight 5
- Args: `spec.pluginConfig.fake` (`FakeArgs`)

Args of Fake.

| Field | Type | Default | Allowed values | Constraints | Description |
|---|---|---|---|---|---|
| `extra` | object | - | - | - | Extra settings. |
| `extra.address` | string | `null` | - | - | Address of the service; none by default. |
| `extra.labels` | []string | `[\"app\"]` | - | - | Labels to match. |
| `mode` | string | `\"Fast\"` | `Fast`, `Careful` | - | The mode \\| with a pipe. `Fast`: Skips the checks. `Careful`: Runs every check. |
| `targets` | []object | `[]` | - | items: <= 4 | Targets to prefer, best first. |
| `targets[].name` | string | required | - | - | Node name. |
| `targets[].weight` | integer | `1` | - | 1..10 | Weight of the target. |
| `timeoutSeconds` | integer | `30` | - | 1..600 | How long to wait, in seconds. |

Defaults:

```yaml
spec:
  pluginConfig:
    fake:
      extra:
        address: null
        labels:
        - app
      mode: Fast
      targets: []
      timeoutSeconds: 30
```

## Plain

Sorts the queue plainly.

- Extension points: QueueSort
- Default set: no
- Args: none
";
    assert_eq!(rendered_list(Format::Markdown), want);
}

/// Issue 18: the list says how berth's default set differs from upstream kube-scheduler
/// 1.37's (NodeDeclaredFeatures is in upstream's, not berth's; DynamicResources requeues
/// more often and scoring of DRA-backed extended resources differs), and what that means
/// for a pod.
#[test]
fn the_list_ends_with_the_differences_from_upstream_1_37() {
    let text = rendered(None, Format::Text);
    let (_, section) = text
        .split_once(DIFFERENCES_TEXT)
        .unwrap_or_else(|| panic!("no differences section in:\n{text}"));
    let flat = section.split_whitespace().collect::<Vec<_>>().join(" ");
    for expected in [
        "DynamicResources Upstream: in the default set",
        "right before DefaultPreemption",
        "live and in `berth simulate`",
        "retried on any ResourceClaim change",
        "NodeDeclaredFeatures Upstream: in the default set (GA in 1.37)",
        "`node.status.declaredFeatures` is not checked",
        "NodeResourcesFit Upstream:",
        "DeviceClass",
        "named in `scoringStrategy.resources` is not counted from the node's devices",
    ] {
        assert!(
            flat.contains(expected),
            "missing {expected:?} in:\n{section}"
        );
    }
    let markdown = rendered(None, Format::Markdown);
    let (_, table) = markdown
        .split_once(DIFFERENCES_MARKDOWN)
        .unwrap_or_else(|| panic!("no differences section in:\n{markdown}"));
    for row in [
        "| DynamicResources | In the default set",
        "| NodeDeclaredFeatures | In the default set (GA in 1.37)",
        "| NodeResourcesFit | Leaves an extended resource",
    ] {
        assert!(table.contains(row), "missing {row:?} in:\n{table}");
    }
}

#[test]
fn unknown_plugin_names_the_registered_ones_and_the_close_one() {
    let error = match render(Some("fake"), Format::Text, &test_registry()) {
        Ok(text) => panic!("expected an error, got {text}"),
        Err(error) => error.to_string(),
    };
    assert_eq!(
        error,
        "unknown plugin fake; did you mean Fake? registered plugins: Binder, Fake, Plain"
    );
}

fn berth(args: &[&str]) -> Output {
    match Command::new(BERTH).args(args).output() {
        Ok(output) => output,
        Err(e) => panic!("cannot run {BERTH}: {e}"),
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn cli_lists_the_builtin_plugins() {
    let output = berth(&["plugins"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let row = |name: &str| {
        text.lines()
            .find(|line| line.split_whitespace().next() == Some(name))
            .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|| panic!("no row for {name} in:\n{text}"))
    };
    assert!(
        row("NodeResourcesFit").starts_with(
            "NodeResourcesFit PreFilter, Filter, PreScore, Score yes 1 nodeResourcesFit"
        ),
        "{text}"
    );
    assert!(row("TaintToleration").contains("yes 3"), "{text}");
    assert!(
        row("DefaultBinder").starts_with("DefaultBinder Bind yes -"),
        "{text}"
    );
    // Upstream's default order: gates and queue sort first, the binder last.
    let default_set = text
        .split("Default plugin set")
        .nth(1)
        .unwrap_or_else(|| panic!("no default set in:\n{text}"));
    let position = |name: &str| {
        default_set
            .find(&format!(". {name}"))
            .unwrap_or_else(|| panic!("{name} not in the default set:\n{default_set}"))
    };
    assert!(position("SchedulingGates") < position("PrioritySort"));
    assert!(position("NodeResourcesFit") < position("DefaultBinder"));
    // Columns are padded to the longest name; compare with whitespace collapsed.
    let collapsed = default_set.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        collapsed.contains("TaintToleration Score weight 3"),
        "{default_set}"
    );
}

#[test]
fn cli_default_set_lacks_the_plugins_listed_as_missing_upstream_ones() {
    // The differences name plugins berth does not have: they must not be registered
    // (else the list would be stale).
    for difference in berth::convert::UPSTREAM_DIFFERENCES {
        let output = berth(&["plugins", difference.plugin]);
        let want = if difference.missing { Some(2) } else { Some(0) };
        assert_eq!(
            output.status.code(),
            want,
            "{}: registered iff not listed as missing",
            difference.plugin
        );
    }
}

#[test]
fn cli_describes_node_resources_fit() {
    let output = berth(&["plugins", "NodeResourcesFit"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    for expected in [
        "Args:              spec.pluginConfig.nodeResourcesFit (NodeResourcesFitArgs)",
        "  scoringStrategy.type  string\n",
        "      Default: \"LeastAllocated\"\n      Allowed: LeastAllocated, MostAllocated, RequestedToCapacityRatio\n",
        "  scoringStrategy.resources[].weight  integer\n",
        "      Default: [{\"name\":\"cpu\",\"weight\":1},{\"name\":\"memory\",\"weight\":1}]\n",
        "  scoringStrategy.requestedToCapacityRatio.shape[].utilization  integer\n",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}

#[test]
fn cli_lists_the_cel_rules_of_pod_topology_spread() {
    // Upstream's `ValidatePodTopologySpreadArgs` as CRD rules: default constraints only
    // with `defaultingType: List` (reported at defaultingType) and no selector in a
    // default constraint (reported at its labelSelector).
    let output = berth(&["plugins", "PodTopologySpread"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let rules = text
        .split_once("\nCEL rules:\n")
        .map(|(_, rest)| rest)
        .unwrap_or_else(|| panic!("no CEL rules section in:\n{text}"));
    for expected in [
        "  spec.pluginConfig.podTopologySpread\n      Rule: ",
        "      Reported at: spec.pluginConfig.podTopologySpread.defaultingType\n",
        "  spec.pluginConfig.podTopologySpread.defaultConstraints[]\n      Rule: !has(self.labelSelector)\n",
        "      Reported at: spec.pluginConfig.podTopologySpread.defaultConstraints[].labelSelector\n",
    ] {
        assert!(
            rules.contains(expected),
            "missing {expected:?} in:\n{rules}"
        );
    }
}

#[test]
fn cli_unknown_plugin_exits_2() {
    let output = berth(&["plugins", "NodeResourceFit"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stdout(&output).is_empty());
    let error = stderr(&output);
    assert!(
        error.starts_with(
            "error: unknown plugin NodeResourceFit; did you mean NodeResourcesFit? registered plugins: "
        ),
        "{error}"
    );
    assert!(
        error.contains("DefaultBinder, "),
        "the registered names are listed: {error}"
    );
}

#[test]
fn docs_plugins_md_is_fresh() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/plugins.md");
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    let output = berth(&["plugins", "--format", "markdown"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let generated = stdout(&output);
    if checked_in != generated {
        let first_difference = checked_in
            .lines()
            .zip(generated.lines())
            .position(|(old, new)| old != new)
            .unwrap_or_else(|| checked_in.lines().count().min(generated.lines().count()));
        panic!(
            "docs/plugins.md is stale: it differs from `berth plugins --format markdown` from \
             line {} on.\nRegenerate it with:\n\n    \
             cargo run -q -- plugins --format markdown > docs/plugins.md\n\n\
             and commit the result.",
            first_difference + 1
        );
    }
}
