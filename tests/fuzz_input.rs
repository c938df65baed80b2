//! Fuzzing `berth simulate`'s input and `berth convert`'s input on stable Rust.
//!
//! Inputs are mutated from valid seeds (Nodes, Pods, PodGroups, SchedulerProfiles, PVCs,
//! PriorityClasses; KubeSchedulerConfigurations of several versions), by random byte edits
//! of the YAML text and by structured edits of the parsed document: a field replaced by a
//! huge name, a negative or malformed quantity, a value outside an enum, a wrong type, a
//! null, an unknown field, deep nesting. The properties:
//!
//! - loading never panics and never hangs: the input is either valid, or refused with an
//!   error of the shape `fuzz.yaml: document N: ...` that names where the problem is;
//! - some valid inputs are also simulated (a few nodes) and rendered as a table and as
//!   JSON, which must not panic or report an internal error;
//! - `berth::convert::convert` never panics on a mutated configuration.
//!
//! The suite runs a few hundred cases per property. A longer run takes the case count
//! from `BERTH_FUZZ_CASES`:
//!
//! ```text
//! BERTH_FUZZ_CASES=20000 cargo test --release --test fuzz_input
//! ```
//!
//! proptest shrinks a failing input and records its seed in
//! `tests/fuzz_input.proptest-regressions`, so that the failure is replayed first on the
//! next run.

use std::path::Path;
use std::time::{Duration, Instant};

use berth::convert::{ConvertOptions, convert};
use berth::framework::Registry;
use berth::plugins::default_registry;
use berth::simulate::input::{ClusterInput, load_str};
use berth::simulate::render::{render_json, render_table};
use berth::simulate::run::{SimulateOptions, simulate};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestRunner};
use serde_json::Value;

const FILE: &str = "fuzz.yaml";

/// Cases per property in the test suite; `BERTH_FUZZ_CASES` overrides it.
const DEFAULT_CASES: u32 = 256;

/// No input may take longer than this to load (or to simulate, for the small inputs that
/// are simulated): "never hangs", with room for a slow debug build on a busy machine.
const CASE_TIME_LIMIT: Duration = Duration::from_secs(20);

fn cases() -> u32 {
    std::env::var("BERTH_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: cases(),
        // Shrinking a slow input could take long; a few hundred steps find a small one.
        max_shrink_iters: 256,
        source_file: Some(file!()),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..Config::default()
    })
}

// ---------------------------------------------------------------------------------------
// Seeds

const SIMULATE_SEEDS: [&str; 6] = [
    r#"apiVersion: v1
kind: Node
metadata:
  name: node-1
  labels: {topology.kubernetes.io/zone: a, kubernetes.io/hostname: node-1}
spec:
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110", example.com/gpu: "2"}
"#,
    r#"apiVersion: v1
kind: Pod
metadata: {name: web-1, labels: {app: web}}
spec:
  containers:
  - name: c
    ports: [{containerPort: 8080, hostPort: 80}]
    resources: {requests: {cpu: 500m, memory: 1Gi}, limits: {cpu: "1"}}
  tolerations: [{key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [a, b]}]}]
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 50
        podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: web}}}
  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}
"#,
    r#"apiVersion: berth.dev/v1alpha1
kind: PodGroup
metadata: {name: gang}
spec: {minMember: 2, scheduleTimeoutSeconds: 30, minResources: {cpu: "2"}}
---
apiVersion: v1
kind: Pod
metadata: {name: worker-0, labels: {berth.dev/pod-group: gang}}
spec:
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
"#,
    r#"apiVersion: berth.dev/v1alpha1
kind: SchedulerProfile
metadata: {name: packing}
spec:
  plugins:
    score:
      enabled: [{name: NodeResourcesFit, weight: 5}]
  pluginConfig:
    nodeResourcesFit:
      scoringStrategy: {type: MostAllocated, resources: [{name: cpu, weight: 1}]}
---
apiVersion: v1
kind: Pod
metadata: {name: packed}
spec:
  schedulerName: packing
  containers: [{name: c, resources: {requests: {cpu: 100m}}}]
"#,
    r#"apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: db}
spec:
  priorityClassName: high
  containers: [{name: c}]
  volumes: [{name: d, persistentVolumeClaim: {claimName: data}}]
"#,
    r#"apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: node-2}
  status: {capacity: {cpu: "2", memory: 4Gi, pods: "10"}}
- apiVersion: v1
  kind: Pod
  metadata: {name: api, namespace: team-a}
  spec:
    containers: [{name: c, resources: {requests: {cpu: 250m}}}]
    schedulingGates: [{name: example.com/wait}]
"#,
];

/// Nodes that every simulated case gets, so that pods have somewhere to go.
const NODES: &str = r#"apiVersion: v1
kind: Node
metadata: {name: base-1, labels: {topology.kubernetes.io/zone: a}}
status: {capacity: {cpu: "2", memory: 4Gi, pods: "20"}}
---
apiVersion: v1
kind: Node
metadata: {name: base-2, labels: {topology.kubernetes.io/zone: b}}
status: {capacity: {cpu: "2", memory: 4Gi, pods: "20"}}
"#;

fn convert_seeds() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut seeds: Vec<String> = ["examples/kube-scheduler-config.yaml"]
        .iter()
        .map(|path| root.join(path))
        .chain(
            std::fs::read_dir(root.join("tests/convert"))
                .into_iter()
                .flatten()
                .flatten()
                .map(|entry| entry.path())
                .filter(|path| path.extension().is_some_and(|e| e == "yaml")),
        )
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .collect();
    seeds.sort();
    seeds
}

// ---------------------------------------------------------------------------------------
// Mutations

/// Values that have broken parsers and validators before: huge names, signs, suffixes,
/// enums nobody defines, wrong types.
fn interesting_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::from("a".repeat(65_525))),
        Just(Value::from("a".repeat(254))),
        Just(Value::from("-5")),
        Just(Value::from("-1Gi")),
        Just(Value::from("x")),
        Just(Value::from("1e400")),
        Just(Value::from("99999999999999999999999999Ei")),
        Just(Value::from("0.0000000001m")),
        Just(Value::from("Foo")),
        Just(Value::from("")),
        Just(Value::from("a/b/c")),
        Just(Value::from("*")),
        Just(Value::from(0)),
        Just(Value::from(-1)),
        Just(Value::from(i64::MAX)),
        Just(Value::from(i64::MIN)),
        Just(Value::from(1e300)),
        Just(Value::from(true)),
        Just(Value::Null),
        Just(Value::Array(Vec::new())),
        Just(Value::Object(serde_json::Map::new())),
        Just(serde_json::json!([{"key": "", "operator": "Foo"}])),
        any::<i32>().prop_map(Value::from),
        "[a-zA-Z0-9./_-]{0,80}".prop_map(Value::from),
    ]
}

/// One structured edit: which leaf or object (by index among all of them, modulo their
/// count) and what to do there.
#[derive(Debug, Clone)]
enum Edit {
    Replace(usize, Value),
    Remove(usize),
    AddField(usize, String, Value),
    Nest(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        4 => (any::<usize>(), interesting_value()).prop_map(|(at, v)| Edit::Replace(at, v)),
        1 => any::<usize>().prop_map(Edit::Remove),
        1 => (any::<usize>(), "[a-zA-Z]{1,12}", interesting_value())
            .prop_map(|(at, k, v)| Edit::AddField(at, k, v)),
        1 => (any::<usize>(), 1usize..300).prop_map(|(at, depth)| Edit::Nest(at, depth)),
    ]
}

/// JSON pointers of every node under `value` (objects, arrays and leaves).
fn pointers(value: &Value, prefix: String, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let escaped = k.replace('~', "~0").replace('/', "~1");
                pointers(v, format!("{prefix}/{escaped}"), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                pointers(v, format!("{prefix}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(prefix);
}

fn apply(value: &mut Value, edit: &Edit) {
    let mut all = Vec::new();
    pointers(value, String::new(), &mut all);
    let pick = |at: usize| all[at % all.len()].clone();
    match edit {
        Edit::Replace(at, new) => {
            if let Some(slot) = value.pointer_mut(&pick(*at)) {
                *slot = new.clone();
            }
        }
        Edit::Remove(at) => {
            let pointer = pick(*at);
            if let Some((parent, last)) = pointer.rsplit_once('/')
                && let Some(parent) = value.pointer_mut(parent)
            {
                match parent {
                    Value::Object(map) => {
                        map.remove(&last.replace("~1", "/").replace("~0", "~"));
                    }
                    Value::Array(items) => {
                        if let Ok(i) = last.parse::<usize>()
                            && i < items.len()
                        {
                            items.remove(i);
                        }
                    }
                    _ => {}
                }
            }
        }
        Edit::AddField(at, key, new) => {
            if let Some(Value::Object(map)) = value.pointer_mut(&pick(*at)) {
                map.insert(key.clone(), new.clone());
            }
        }
        Edit::Nest(at, depth) => {
            if let Some(slot) = value.pointer_mut(&pick(*at)) {
                let mut nested = Value::from("x");
                for _ in 0..*depth {
                    nested = Value::Array(vec![nested]);
                }
                *slot = nested;
            }
        }
    }
}

/// Each document of `text` parsed, edited and written back as JSON (which is YAML); a
/// document that does not parse is kept as it is.
fn edit_documents(text: &str, edits: &[(usize, Edit)]) -> String {
    let documents: Vec<&str> = text.split("\n---\n").collect();
    let mut values: Vec<Option<Value>> = documents
        .iter()
        .map(|d| serde_saphyr::from_str::<Value>(d).ok())
        .collect();
    for (document, edit) in edits {
        let index = document % values.len();
        if let Some(value) = values[index].as_mut() {
            apply(value, edit);
        }
    }
    documents
        .iter()
        .zip(values)
        .map(|(text, value)| value.map_or_else(|| text.to_string(), |v| v.to_string()))
        .collect::<Vec<_>>()
        .join("\n---\n")
}

/// Random byte edits: overwrite, insert or delete at positions, with bytes YAML gives
/// meaning to.
fn edit_bytes(text: &str, edits: &[(usize, u8, u8)]) -> String {
    const BYTES: &[u8] = b":-{}[]\"'\n #&*!|>%@`,?\t0123456789abcAZ.~/\\";
    let mut bytes = text.as_bytes().to_vec();
    for &(at, op, byte) in edits {
        let at = at % (bytes.len() + 1);
        let byte = BYTES[byte as usize % BYTES.len()];
        match op % 3 {
            0 if at < bytes.len() => bytes[at] = byte,
            1 => bytes.insert(at, byte),
            _ if at < bytes.len() => {
                bytes.remove(at);
            }
            _ => {}
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[derive(Debug, Clone)]
enum Mutation {
    Bytes(Vec<(usize, u8, u8)>),
    Structured(Vec<(usize, Edit)>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        prop::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 1..8)
            .prop_map(Mutation::Bytes),
        prop::collection::vec((any::<usize>(), edit()), 1..4).prop_map(Mutation::Structured),
    ]
}

fn mutate(seed: &str, mutation: &Mutation) -> String {
    match mutation {
        Mutation::Bytes(edits) => edit_bytes(seed, edits),
        Mutation::Structured(edits) => edit_documents(seed, edits),
    }
}

// ---------------------------------------------------------------------------------------
// Properties

/// `fuzz.yaml: document N: ` followed by a message.
fn has_source_shape(message: &str) -> bool {
    let Some(rest) = message.strip_prefix(&format!("{FILE}: document ")) else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && rest[digits..].starts_with(": ") && rest.len() > digits + 2
}

fn small(input: &ClusterInput) -> bool {
    input.nodes.len() <= 6 && input.pods.len() <= 12
}

fn simulate_and_render(input: ClusterInput, registry: &Registry) -> Result<(), TestCaseError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .map_err(|e| TestCaseError::fail(format!("runtime: {e}")))?;
    let options = SimulateOptions {
        explain: true,
        seed: 0,
        parallelism: 1,
    };
    match runtime.block_on(simulate(input, registry, options)) {
        Ok(report) => {
            let table = render_table(&report);
            prop_assert!(table.lines().count() > report.pods.len());
            let json = render_json(&report)
                .map_err(|e| TestCaseError::fail(format!("JSON report: {e}")))?;
            prop_assert!(json.starts_with('{'), "JSON report: {json}");
        }
        Err(error) => prop_assert!(
            error.is_input_error(),
            "internal error on valid input: {error}"
        ),
    }
    Ok(())
}

fn check_simulate_input(text: &str, registry: &Registry) -> Result<(), TestCaseError> {
    let started = Instant::now();
    let loaded = load_str(Path::new(FILE), text);
    prop_assert!(
        started.elapsed() < CASE_TIME_LIMIT,
        "loading took {:?}",
        started.elapsed()
    );
    match loaded {
        Err(error) => {
            let message = error.to_string();
            prop_assert!(
                has_source_shape(&message),
                "error without file and document: {message}"
            );
        }
        Ok((input, _warnings)) if small(&input) => {
            simulate_and_render(input, registry)?;
            prop_assert!(
                started.elapsed() < CASE_TIME_LIMIT,
                "simulating took {:?}",
                started.elapsed()
            );
        }
        Ok(_) => {}
    }
    Ok(())
}

#[test]
fn simulate_input_is_valid_or_refused_with_its_source() {
    let registry = default_registry();
    let strategy = (0..SIMULATE_SEEDS.len(), mutation(), any::<bool>());
    runner()
        .run(&strategy, |(seed, mutation, with_nodes)| {
            let mut text = mutate(SIMULATE_SEEDS[seed], &mutation);
            if with_nodes {
                text = format!("{text}\n---\n{NODES}");
            }
            check_simulate_input(&text, &registry)
        })
        .unwrap_or_else(|failure| panic!("{failure}"));
}

#[test]
fn convert_never_panics_on_a_mutated_configuration() {
    let registry = default_registry();
    let seeds = convert_seeds();
    assert!(seeds.len() >= 3, "convert seeds found: {}", seeds.len());
    let strategy = (0..seeds.len(), mutation());
    runner()
        .run(&strategy, |(seed, mutation)| {
            let text = mutate(&seeds[seed], &mutation);
            let started = Instant::now();
            for document in text.split("\n---\n") {
                let Ok(config) = serde_saphyr::from_str::<Value>(document) else {
                    continue;
                };
                if let Err(error) = convert(&config, &registry, &ConvertOptions::default()) {
                    prop_assert!(!error.to_string().is_empty());
                }
            }
            prop_assert!(
                started.elapsed() < CASE_TIME_LIMIT,
                "converting took {:?}",
                started.elapsed()
            );
            Ok(())
        })
        .unwrap_or_else(|failure| panic!("{failure}"));
}

/// The inputs the issue's fuzzing run found, each refused with its source.
#[test]
fn the_reported_inputs_are_refused() {
    let huge = "a".repeat(65_525);
    let inputs = [
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {huge}}}\n"),
        format!("apiVersion: v1\nkind: Node\nmetadata: {{name: {huge}}}\n"),
        format!(
            "apiVersion: v1\nkind: Node\nmetadata: {{name: n1}}\n---\n{}",
            "[".repeat(100_000)
        ),
        format!(
            "{{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {{\"name\": \"n1\"}}, \"spec\": {}{}}}",
            "[".repeat(2_000),
            "]".repeat(2_000)
        ),
    ];
    for text in inputs {
        let error = load_str(Path::new(FILE), &text)
            .err()
            .map(|e| e.to_string());
        let message = error.unwrap_or_default();
        assert!(has_source_shape(&message), "{message}");
    }
}
