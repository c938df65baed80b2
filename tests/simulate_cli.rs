//! `berth simulate` as a user runs it: the built binary on the examples and on small
//! hand-written inputs, checking output, messages and exit codes (docs/simulate.md).

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

mod support;
use cli::{assert_exit, run_berth, stderr, stdout};
use support::cli;
use support::temp::TempDir;

/// The pending pods of examples/quickstart.yaml, as `namespace/name`.
const QUICKSTART_PENDING: [&str; 13] = [
    "default/memory-hog",
    "default/web-1",
    "default/web-2",
    "default/web-3",
    "default/api-1",
    "default/cache-1",
    "default/critical-db",
    "default/worker-1",
    "default/worker-2",
    "default/sidecar-free",
    "ml/trainer",
    "ml/gpu-untolerated",
    "default/batch-huge",
];

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
}

fn berth(args: &[&str]) -> Output {
    berth_with_stdin(args, None)
}

fn berth_with_stdin(args: &[&str], stdin: Option<&str>) -> Output {
    let args: Vec<&str> = std::iter::once("simulate")
        .chain(args.iter().copied())
        .collect();
    run_berth(&args, stdin)
}

/// A YAML file in a scratch directory, removed when dropped.
struct TempYaml {
    _dir: TempDir,
    path: String,
}

impl TempYaml {
    fn new(name: &str, text: &str) -> Self {
        let dir = TempDir::new("simulate-cli");
        let path = dir.write(&format!("{name}.yaml"), text);
        let path = path.to_str().expect("temp path is UTF-8").to_string();
        TempYaml { _dir: dir, path }
    }

    fn path(&self) -> &str {
        &self.path
    }
}

fn json_report(args: &[&str]) -> Value {
    let output = berth(args);
    assert_exit(&output, 0);
    serde_json::from_str(&stdout(&output)).expect("stdout is JSON")
}

fn pod<'a>(report: &'a Value, namespace: &str, name: &str) -> &'a Value {
    report["pods"]
        .as_array()
        .and_then(|pods| {
            pods.iter()
                .find(|p| p["namespace"] == namespace && p["name"] == name)
        })
        .unwrap_or_else(|| panic!("{namespace}/{name} is in the report"))
}

/// The table row of `pod` (`namespace/name`), split into columns.
fn table_row(table: &str, pod: &str) -> Vec<String> {
    table
        .lines()
        .find(|line| line.split_whitespace().next() == Some(pod))
        .unwrap_or_else(|| panic!("{pod} has a row in\n{table}"))
        .split_whitespace()
        .map(String::from)
        .collect()
}

#[test]
fn quickstart_lists_every_pending_pod_and_exits_0() {
    let output = berth(&[
        "-f",
        example("quickstart.yaml").to_str().unwrap_or_default(),
    ]);
    assert_exit(&output, 0);
    let table = stdout(&output);
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["POD", "PROFILE", "RESULT", "NODE", "MESSAGE"]);
    for name in QUICKSTART_PENDING {
        let row = table_row(&table, name);
        assert_eq!(row[1], "default-scheduler", "{name}");
    }
    assert_eq!(
        table.lines().count(),
        1 + QUICKSTART_PENDING.len(),
        "{table}"
    );
    assert!(
        !table.contains("existing-db"),
        "running pods are not scheduled:\n{table}"
    );
}

#[test]
fn quickstart_places_pods_as_its_comments_say() {
    let path = example("quickstart.yaml");
    let report = json_report(&["-f", path.to_str().unwrap_or_default(), "-o", "json"]);
    let trainer = pod(&report, "ml", "trainer");
    assert_eq!(trainer["result"], "Scheduled");
    assert_eq!(
        trainer["node"], "gpu-1",
        "tolerates the taint and needs a GPU"
    );
    assert_eq!(pod(&report, "default", "memory-hog")["node"], "node-c");
    let huge = pod(&report, "default", "batch-huge");
    assert_eq!(huge["result"], "Unschedulable");
    let message = huge["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("0/6 nodes are available: "),
        "{message}"
    );
    assert!(message.contains("4 Insufficient cpu"), "{message}");
    assert!(
        message.contains("1 node(s) were unschedulable"),
        "{message}"
    );
    let gpu = pod(&report, "ml", "gpu-untolerated");
    assert_eq!(gpu["result"], "Unschedulable");
    let message = gpu["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("1 node(s) had untolerated taint(s)"),
        "{message}"
    );
    for name in ["web-1", "api-1", "critical-db", "sidecar-free"] {
        assert_eq!(
            pod(&report, "default", name)["result"],
            "Scheduled",
            "{name}"
        );
    }
}

#[test]
fn json_output_has_the_documented_fields() {
    let path = example("quickstart.yaml");
    let report = json_report(&["-f", path.to_str().unwrap_or_default(), "-o", "json"]);
    let pods = report["pods"].as_array().expect("pods is an array");
    assert_eq!(pods.len(), QUICKSTART_PENDING.len());
    for pod in pods {
        for field in ["namespace", "name", "schedulerName", "message"] {
            assert!(pod[field].is_string(), "{field} in {pod}");
        }
        assert!(pod["attempts"].as_u64().is_some_and(|n| n >= 1), "{pod}");
        let result = pod["result"].as_str().unwrap_or_default();
        assert!(
            ["Scheduled", "Unschedulable", "Waiting", "Error"].contains(&result),
            "{pod}"
        );
        assert_eq!(
            pod["node"].is_string(),
            result == "Scheduled" || result == "Waiting",
            "{pod}"
        );
        assert_eq!(pod["message"] == "", result == "Scheduled", "{pod}");
        assert!(
            pod.get("nodes").is_none(),
            "nodes only with --explain: {pod}"
        );
    }
}

#[test]
fn explain_adds_per_node_verdicts() {
    let path = example("quickstart.yaml");
    let report = json_report(&[
        "-f",
        path.to_str().unwrap_or_default(),
        "-o",
        "json",
        "--explain",
    ]);
    for pod in report["pods"].as_array().expect("pods is an array") {
        let nodes = pod["nodes"]
            .as_array()
            .unwrap_or_else(|| panic!("nodes in {pod}"));
        for node in nodes {
            assert!(node["name"].is_string(), "{node}");
            assert!(node["feasible"].is_boolean(), "{node}");
            assert!(node["filterReasons"].is_array(), "{node}");
            assert!(node["totalScore"].is_i64(), "{node}");
            for score in node["scores"].as_array().expect("scores is an array") {
                let field = |f: &str| score[f].as_i64().unwrap_or(i64::MIN);
                assert!(score["plugin"].is_string(), "{score}");
                assert_eq!(
                    field("score") * field("weight"),
                    field("weighted"),
                    "{score}"
                );
            }
        }
    }
    let huge = pod(&report, "default", "batch-huge");
    let nodes = huge["nodes"].as_array().expect("nodes is an array");
    assert!(nodes.iter().all(|n| n["feasible"] == false), "{huge}");
    let table = berth(&["-f", path.to_str().unwrap_or_default(), "--explain"]);
    assert_exit(&table, 0);
    assert!(stdout(&table).contains("FEASIBLE"), "{}", stdout(&table));
}

#[test]
fn binpack_profile_schedules_its_own_pods() {
    let quickstart = example("quickstart.yaml");
    let binpack = example("binpack.yaml");
    let report = json_report(&[
        "-f",
        quickstart.to_str().unwrap_or_default(),
        "-f",
        binpack.to_str().unwrap_or_default(),
        "-o",
        "json",
    ]);
    for name in ["batch-1", "batch-2", "batch-3"] {
        let pod = pod(&report, "batch", name);
        assert_eq!(pod["schedulerName"], "binpack", "{pod}");
        assert_eq!(pod["result"], "Scheduled", "{pod}");
    }
}

#[test]
fn the_same_seed_gives_the_same_placements() {
    let path = example("quickstart.yaml");
    let args = [
        "-f",
        path.to_str().unwrap_or_default(),
        "-o",
        "json",
        "--seed",
        "42",
    ];
    let first = berth(&args);
    assert_exit(&first, 0);
    assert_eq!(stdout(&first), stdout(&berth(&args)));
}

#[test]
fn stdin_is_read_with_dash() {
    let text = std::fs::read_to_string(example("quickstart.yaml")).expect("example is readable");
    let output = berth_with_stdin(&["-f", "-"], Some(&text));
    assert_exit(&output, 0);
    table_row(&stdout(&output), "default/web-1");
}

#[test]
fn malformed_yaml_exits_2_naming_file_and_document() {
    let file = TempYaml::new(
        "malformed",
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-a\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: [unclosed\n",
    );
    let output = berth(&["-f", file.path()]);
    assert_exit(&output, 2);
    let message = stderr(&output);
    assert!(
        message.contains(&format!("error: {}: document 1: ", file.path())),
        "{message}"
    );
    assert!(stdout(&output).is_empty(), "no report on invalid input");
}

#[test]
fn undecodable_field_exits_2_naming_the_field_path() {
    let file = TempYaml::new(
        "undecodable",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    ports: [{containerPort: http}]\n",
    );
    let output = berth(&["-f", file.path()]);
    assert_exit(&output, 2);
    let message = stderr(&output);
    assert!(
        message.contains(&format!(
            "error: {}: document 0: spec.containers[0].ports[0].containerPort: ",
            file.path()
        )),
        "{message}"
    );
}

#[test]
fn unknown_kind_warns_and_is_skipped() {
    let file = TempYaml::new(
        "unknown-kind",
        "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly}\nspec: {}\n\
         ---\napiVersion: v1\nkind: Node\nmetadata: {name: node-a}\n\
         status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}\n\
         ---\napiVersion: v1\nkind: Pod\nmetadata: {name: lonely}\nspec: {schedulerName: solo, containers: []}\n\
         ---\napiVersion: berth.dev/v1alpha1\nkind: SchedulerProfile\nmetadata: {name: solo}\nspec: {}\n",
    );
    let output = berth(&["-f", file.path()]);
    assert_exit(&output, 0);
    let warnings = stderr(&output);
    assert!(
        warnings.contains(&format!(
            "warning: {}: document 0: skipping CronJob",
            file.path()
        )),
        "{warnings}"
    );
    let row = table_row(&stdout(&output), "default/lonely");
    assert_eq!(row[1..4], ["solo", "Scheduled", "node-a"]);
}

#[test]
fn invalid_profile_exits_2_naming_the_field_path() {
    let quickstart = example("quickstart.yaml");
    let bad = example("bad-profile.yaml");
    let output = berth(&[
        "-f",
        quickstart.to_str().unwrap_or_default(),
        "-f",
        bad.to_str().unwrap_or_default(),
    ]);
    assert_exit(&output, 2);
    let message = stderr(&output);
    assert!(
        message.contains(&format!(
            "error: {}: document 0: spec.plugins.score.enabled[0].name",
            bad.display()
        )),
        "{message}"
    );
    assert!(
        message.contains("NodeResourceFit"),
        "names the bad value: {message}"
    );
}

#[test]
fn nonexistent_file_exits_2() {
    let output = berth(&["-f", "/nonexistent/cluster.yaml"]);
    assert_exit(&output, 2);
    assert!(
        stderr(&output).contains("error: /nonexistent/cluster.yaml: cannot read file"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn missing_filename_is_a_usage_error() {
    let output = berth(&[]);
    assert_exit(&output, 2);
    assert!(
        stderr(&output).contains("--filename"),
        "{}",
        stderr(&output)
    );
}

/// A node and a pod for `scheduler`, so a profile file has something to schedule.
fn cluster_for(scheduler: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Node\nmetadata: {{name: node-a}}\n\
         status: {{allocatable: {{cpu: '4', memory: 8Gi, pods: '110'}}}}\n\
         ---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\n\
         spec: {{schedulerName: {scheduler}, containers: []}}\n"
    )
}

#[test]
fn every_error_of_every_invalid_profile_is_printed() {
    let file = TempYaml::new(
        "many-errors",
        "apiVersion: berth.dev/v1alpha1\nkind: SchedulerProfile\nmetadata: {name: one}\n\
         spec:\n  foo: bar\n  percentageOfNodesToScore: 101\n  plugins:\n    score:\n      enabled:\n      - {name: TaintToleration, weight: 0}\n\
         ---\napiVersion: berth.dev/v1alpha1\nkind: SchedulerProfile\nmetadata: {name: two}\n\
         spec:\n  plugins:\n    bind:\n      disabled: [{name: \"*\"}]\n",
    );
    let output = berth(&["-f", file.path()]);
    assert_exit(&output, 2);
    let message = stderr(&output);
    let expected = [
        "document 0: spec.foo: unknown field \"spec.foo\"",
        "document 0: spec.percentageOfNodesToScore: Invalid value: 101: must be between 0 and 100",
        "document 0: spec.plugins.score.enabled[0].weight: Invalid value: 0: must be between 1 and 100",
        "document 1: spec.plugins.bind: Required value: at least one Bind plugin must be enabled",
    ];
    for line in expected {
        assert!(
            message.contains(&format!("error: {}: {line}\n", file.path())),
            "{line}\n{message}"
        );
    }
    assert!(stdout(&output).is_empty(), "no report on invalid input");
}

#[test]
fn a_profile_that_does_not_decode_reports_schema_errors() {
    let file = TempYaml::new(
        "quoted-weight",
        "apiVersion: berth.dev/v1alpha1\nkind: SchedulerProfile\nmetadata: {name: q}\n\
         spec:\n  plugins:\n    score:\n      enabled:\n      - {name: TaintToleration, weight: \"3\"}\n      - {name: NodeResourcesFit, weight: []}\n",
    );
    let output = berth(&["-f", file.path()]);
    assert_exit(&output, 2);
    let message = stderr(&output);
    for line in [
        "spec.plugins.score.enabled[0].weight: Invalid value: \"3\": must be of type integer",
        "spec.plugins.score.enabled[1].weight: Invalid value: []: must be of type integer",
    ] {
        assert!(message.contains(line), "{line}\n{message}");
    }
    assert!(!message.contains("cannot decode"), "{message}");
}

#[test]
fn profile_warnings_are_printed_and_the_profile_runs() {
    let file = TempYaml::new(
        "args-warning",
        &format!(
            "{}---\napiVersion: berth.dev/v1alpha1\nkind: SchedulerProfile\nmetadata: {{name: solo}}\n\
             spec:\n  plugins:\n    multiPoint:\n      disabled: [{{name: NodeResourcesFit}}]\n\
             \x20 pluginConfig:\n    nodeResourcesFit: {{scoringStrategy: {{type: MostAllocated}}}}\n",
            cluster_for("solo")
        ),
    );
    let output = berth(&["-f", file.path()]);
    assert_exit(&output, 0);
    let warnings = stderr(&output);
    assert!(
        warnings.contains(&format!(
            "warning: {}: document 2: spec.pluginConfig.nodeResourcesFit: ",
            file.path()
        )),
        "{warnings}"
    );
    let row = table_row(&stdout(&output), "default/p");
    assert_eq!(row[1..4], ["solo", "Scheduled", "node-a"]);
}

/// Every line berth simulate wrote to stderr.
fn stderr_lines(output: &Output) -> Vec<String> {
    stderr(output).lines().map(String::from).collect()
}

#[test]
fn a_pod_no_profile_serves_is_listed_as_not_served_with_a_warning() {
    let file = TempYaml::new(
        "not-served",
        "apiVersion: v1\nkind: Node\nmetadata: {name: node-a}\n\
         status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}\n\
         ---\napiVersion: v1\nkind: Pod\nmetadata: {name: custom, namespace: team}\n\
         spec: {schedulerName: my-scheduler, containers: []}\n\
         ---\napiVersion: v1\nkind: Pod\nmetadata: {name: ordinary}\nspec: {containers: []}\n",
    );
    let output = berth(&["-f", file.path()]);
    assert_exit(&output, 0);
    let row = table_row(&stdout(&output), "team/custom");
    assert_eq!(row[1..4], ["my-scheduler", "NotServed", "-"]);
    assert!(
        stdout(&output).contains("no profile serves schedulerName \"my-scheduler\""),
        "{}",
        stdout(&output)
    );
    let warnings: Vec<String> = stderr_lines(&output)
        .into_iter()
        .filter(|line| line.contains("team/custom"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", stderr(&output));
    assert!(
        warnings[0].starts_with("warning: pod team/custom: ")
            && warnings[0].contains("\"my-scheduler\""),
        "{}",
        warnings[0]
    );

    let report = json_report(&["-f", file.path(), "-o", "json"]);
    let custom = pod(&report, "team", "custom");
    assert_eq!(custom["result"], "NotServed");
    assert_eq!(custom["schedulerName"], "my-scheduler");
    assert_eq!(pod(&report, "default", "ordinary")["result"], "Scheduled");
}

#[test]
fn stderr_has_only_warning_lines_and_no_logs_by_default() {
    let file = TempYaml::new(
        "quiet",
        "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly}\nspec: {}\n\
         ---\napiVersion: v1\nkind: Node\nmetadata: {name: node-a}\n\
         status: {allocatable: {cpu: '1', memory: 1Gi, pods: '110'}}\n\
         ---\napiVersion: v1\nkind: Pod\nmetadata: {name: lost}\nspec: {schedulerName: nobody, containers: []}\n\
         ---\napiVersion: v1\nkind: Pod\nmetadata: {name: big}\n\
         spec: {containers: [{name: c, image: i, resources: {requests: {cpu: '2'}}}]}\n\
         ---\napiVersion: v1\nkind: Pod\nmetadata: {name: gated}\n\
         spec: {schedulingGates: [{name: example.com/wait}], containers: []}\n",
    );
    let output = run_berth(&["simulate", "-f", file.path()], None);
    assert_exit(&output, 0);
    let lines = stderr_lines(&output);
    assert_eq!(lines.len(), 2, "{lines:?}");
    for line in &lines {
        assert!(line.starts_with("warning: "), "{line}");
    }

    // --log-level turns the scheduler's own log lines on (the queue logs the gated pod at
    // debug level).
    let logged = run_berth(
        &["simulate", "--log-level", "debug", "-f", file.path()],
        None,
    );
    assert_exit(&logged, 0);
    assert!(
        stderr_lines(&logged)
            .iter()
            .any(|line| !line.starts_with("warning: ")),
        "{}",
        stderr(&logged)
    );
}

#[test]
fn a_finished_pod_frees_its_node() {
    // node-a is full with a completed Job pod (and a failed one); a new pod still fits.
    let file = TempYaml::new(
        "finished",
        "apiVersion: v1\nkind: Node\nmetadata: {name: node-a}\n\
         status: {allocatable: {cpu: '1', memory: 1Gi, pods: '2'}}\n\
         ---\napiVersion: v1\nkind: Pod\nmetadata: {name: job-done}\n\
         spec: {nodeName: node-a, containers: [{name: c, image: i, resources: {requests: {cpu: '1'}}}]}\n\
         status: {phase: Succeeded}\n\
         ---\napiVersion: v1\nkind: Pod\nmetadata: {name: job-failed}\n\
         spec: {nodeName: node-a, containers: [{name: c, image: i, resources: {requests: {cpu: '1'}}}]}\n\
         status: {phase: Failed}\n\
         ---\napiVersion: v1\nkind: Pod\nmetadata: {name: never-ran}\n\
         spec: {containers: []}\nstatus: {phase: Succeeded}\n\
         ---\napiVersion: v1\nkind: Pod\nmetadata: {name: new}\n\
         spec: {containers: [{name: c, image: i, resources: {requests: {cpu: '1'}}}]}\n",
    );
    let report = json_report(&["-f", file.path(), "-o", "json"]);
    assert_eq!(
        pod(&report, "default", "new")["result"],
        "Scheduled",
        "{report}"
    );
    let listed: Vec<&str> = report["pods"]
        .as_array()
        .map(|pods| pods.iter().filter_map(|p| p["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(listed, ["new"], "a finished pod is not scheduled: {report}");
}

/// A 4-cpu node and a Job of 3 pods of 1500m (room for 2) that asks for a gang.
const GANG_JOB: &str = "apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: '4', memory: 8Gi, pods: '110'}
---
apiVersion: batch/v1
kind: Job
metadata: {name: train}
spec:
  parallelism: 3
  scheduling: {schedulingPolicy: {gang: {}}}
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: registry.k8s.io/pause:3.9
        resources: {requests: {cpu: 1500m}}
";

#[test]
fn feature_gates_turn_on_the_job_controllers_pod_groups() {
    let input = TempYaml::new("job", GANG_JOB);
    let bound = |output: &Output| -> usize {
        let report: Value = serde_json::from_str(&stdout(output)).expect("JSON report");
        report["pods"]
            .as_array()
            .expect("pods")
            .iter()
            .filter(|p| p["result"] == "Scheduled")
            .count()
    };
    // Off by default, as upstream's alpha gate: the pods are placed one by one.
    let plain = berth(&["-f", &input.path, "-o", "json"]);
    assert_exit(&plain, 0);
    assert_eq!(bound(&plain), 2);
    // On: the Job's gang of 3 does not fit, so none is bound.
    let gang = berth(&[
        "-f",
        &input.path,
        "-o",
        "json",
        "--feature-gates",
        "WorkloadWithJob=true",
    ]);
    assert_exit(&gang, 0);
    assert_eq!(bound(&gang), 0, "{}", stdout(&gang));

    let unknown = berth(&["-f", &input.path, "--feature-gates", "Nope=true"]);
    assert_exit(&unknown, 2);
    assert!(
        stderr(&unknown)
            .contains("unknown feature gate \"Nope\"; berth simulate knows WorkloadWithJob"),
        "{}",
        stderr(&unknown)
    );
    let malformed = berth(&[
        "-f",
        &input.path,
        "--feature-gates",
        "WorkloadWithJob=maybe",
    ]);
    assert_exit(&malformed, 2);
    assert!(
        stderr(&malformed).contains("WorkloadWithJob: \"maybe\" is neither true nor false"),
        "{}",
        stderr(&malformed)
    );
}
