//! "The invalid-profile corpus is rejected by the server with 422 and the expected
//! paths; a profile that passes the schema but fails semantic validation gets
//! Accepted=False with the field path in the message, and no instance runs."
//!
//! The test API server's own tests replay the whole corpus (`tests/profiles/invalid`);
//! here a few representative files are sent while berth runs: a type error (schema), a
//! CEL rule, an unknown field (strict decoding) and the semantic-only file.
//!
//! Issue 13, item 10: a profile serving `default-scheduler` is refused unless berth runs
//! with `--serve-default-scheduler`, and served (pods without a schedulerName bound) with
//! it.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{
    Berth, BerthOptions, Cluster, WAIT, condition, node, pod, profile, repo_root,
};

const PROFILES: &str = "/apis/berth.dev/v1alpha1/schedulerprofiles";

/// A corpus file: the object and its `# expect-path:` lines.
fn corpus(file: &str) -> (Value, Vec<String>) {
    let path = repo_root().join("tests/profiles/invalid").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let object: Value = serde_saphyr::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: not YAML: {e}", path.display()));
    let paths = text
        .lines()
        .filter_map(|line| line.strip_prefix('#'))
        .filter_map(|comment| comment.trim().strip_prefix("expect-path:"))
        .map(|p| p.trim().to_string())
        .collect::<Vec<_>>();
    assert!(!paths.is_empty(), "{file} has no expect-path");
    (object, paths)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_profiles_are_rejected_with_422_and_semantic_errors_are_not_accepted() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    cluster.create_node(node("node-1", "4", "8Gi")).await;
    let mut berth = Berth::spawn(&cluster, BerthOptions::default());
    berth.wait_ready().await;

    // Schema and CEL errors: 422 Invalid naming the expected paths in details.causes.
    for file in ["args-wrong-type.yaml", "cel-backoff-max-below-initial.yaml"] {
        let (object, paths) = corpus(file);
        let (status, body) = cluster
            .raw(
                "POST",
                &format!("{PROFILES}?fieldValidation=Strict"),
                &object,
            )
            .await;
        assert_eq!(
            (status, &body["reason"]),
            (422, &json!("Invalid")),
            "{file}: {body}"
        );
        let causes: Vec<&str> = body["details"]["causes"]
            .as_array()
            .map(|c| c.iter().filter_map(|c| c["field"].as_str()).collect())
            .unwrap_or_default();
        for path in &paths {
            assert!(
                causes.contains(&path.as_str()),
                "{file}: no cause at {path}: {body}"
            );
        }
    }
    // An unknown field with fieldValidation=Strict (what kubectl apply sends): upstream's
    // 400 strict decoding error naming the field.
    let (object, paths) = corpus("args-unknown-field.yaml");
    let (status, body) = cluster
        .raw(
            "POST",
            &format!("{PROFILES}?fieldValidation=Strict"),
            &object,
        )
        .await;
    let message = body["message"].as_str().unwrap_or_default();
    assert_eq!(status, 400, "args-unknown-field.yaml: {body}");
    assert!(message.contains("strict decoding error"), "{body}");
    for path in &paths {
        assert!(
            message.contains(&format!("unknown field \"{path}\"")),
            "no {path}: {body}"
        );
    }
    for name in ["args-wrong-type", "inverted-backoff", "args-unknown-field"] {
        assert!(cluster.profile(name).await.is_null(), "{name} was stored");
    }

    // Passes the schema, fails berth's semantic checks: stored, then Accepted=False with
    // the field path in the message, and no instance serves its scheduler name.
    let (object, paths) = corpus("no-bind-plugin.yaml");
    let name = object["metadata"]["name"]
        .as_str()
        .expect("a name")
        .to_string();
    let created = cluster.create_profile(object).await;
    let rejected = cluster
        .wait_profile_condition(&name, "Accepted", "False", None, Duration::from_secs(2))
        .await;
    let took = created.elapsed();
    assert!(
        took <= Duration::from_secs(2),
        "Accepted=False took {took:?}"
    );
    let accepted = condition(&rejected, "Accepted").expect("Accepted");
    let message = accepted["message"].as_str().unwrap_or_default();
    for path in &paths {
        assert!(
            message.contains(path.as_str()),
            "the Accepted message does not name {path}: {accepted}"
        );
    }
    assert!(
        condition(&rejected, "Ready").is_none_or(|c| c["status"] != "True"),
        "a rejected profile must not be Ready: {}",
        rejected["status"]
    );

    // A valid profile next to it schedules its pod; the rejected profile's pod stays
    // pending with no Binding ever sent for it.
    cluster.create_profile(profile("valid", json!({}))).await;
    cluster.wait_profile_ready("valid", WAIT).await;
    cluster
        .create_pod(pod("rejected-1", &name, "100m", "128Mi"))
        .await;
    cluster
        .create_pod(pod("valid-1", "valid", "100m", "128Mi"))
        .await;
    cluster.wait_bound(&["valid-1"], WAIT).await;
    cluster
        .assert_stay_unbound(&["rejected-1"], Duration::from_secs(2))
        .await;
    let requests = cluster.binding_requests_for("rejected-1");
    assert!(
        requests.is_empty(),
        "bindings for a rejected profile's pod: {requests:?}"
    );

    berth.terminate_cleanly().await;
}

/// A pod without `spec.schedulerName` (the API server defaults it to `default-scheduler`).
fn unnamed_pod(name: &str) -> Value {
    let mut pod = pod(name, "", "100m", "128Mi");
    if let Some(spec) = pod["spec"].as_object_mut() {
        spec.remove("schedulerName");
    }
    pod
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_default_scheduler_profile_is_refused_without_the_flag() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    cluster.create_node(node("node-1", "4", "8Gi")).await;
    let mut berth = Berth::spawn(&cluster, BerthOptions::default());
    berth.wait_ready().await;

    // What `berth convert` makes of an ordinary KubeSchedulerConfiguration.
    cluster
        .create_profile(profile("default-scheduler", json!({})))
        .await;
    let refused = cluster
        .wait_profile_condition(
            "default-scheduler",
            "Accepted",
            "False",
            Some("ReservedSchedulerName"),
            WAIT,
        )
        .await;
    let message = condition(&refused, "Accepted").expect("Accepted")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains("--serve-default-scheduler") && message.contains("serveDefaultScheduler"),
        "the message says how to opt in: {message}"
    );
    assert!(
        condition(&refused, "Ready").is_none_or(|c| c["status"] != "True"),
        "a refused profile must not be Ready: {}",
        refused["status"]
    );

    // The same plugins under a name of berth's own are served.
    cluster
        .create_profile(profile(
            "converted",
            json!({"schedulerName": "berth-default"}),
        ))
        .await;
    cluster.wait_profile_ready("converted", WAIT).await;

    // kube-scheduler's pods are left to kube-scheduler.
    cluster.create_pod(unnamed_pod("kube-schedulers")).await;
    cluster
        .assert_stay_unbound(&["kube-schedulers"], Duration::from_secs(2))
        .await;
    assert!(cluster.binding_requests_for("kube-schedulers").is_empty());
    berth.terminate_cleanly().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_default_scheduler_profile_is_served_with_the_flag() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    cluster.create_node(node("node-1", "4", "8Gi")).await;
    let mut berth = Berth::spawn(
        &cluster,
        BerthOptions {
            serve_default_scheduler: true,
            ..Default::default()
        },
    );
    berth.wait_ready().await;

    cluster
        .create_profile(profile("default-scheduler", json!({})))
        .await;
    let ready = cluster.wait_profile_ready("default-scheduler", WAIT).await;
    assert_eq!(
        condition(&ready, "Accepted").expect("Accepted")["reason"],
        "Valid"
    );
    cluster.create_pod(unnamed_pod("plain")).await;
    let placed = cluster.wait_bound(&["plain"], WAIT).await;
    assert_eq!(placed["plain"], "node-1");
    berth.terminate_cleanly().await;
}

/// A corpus file's header (tests/profiles/README.md): its object, the paths its errors
/// must name, whether an API server accepts it, whether other errors are tolerated.
struct CorpusFile {
    name: String,
    object: Value,
    paths: Vec<String>,
    server_accepts: bool,
    other_errors_allowed: bool,
}

fn corpus_dir(dir: &str) -> Vec<CorpusFile> {
    let dir = repo_root().join("tests/profiles").join(dir);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("readable");
            let header = |key: &str| {
                text.lines()
                    .filter_map(|line| line.strip_prefix('#'))
                    .filter_map(|c| c.trim().strip_prefix(key).map(|v| v.trim().to_string()))
                    .collect::<Vec<_>>()
            };
            CorpusFile {
                name: path
                    .file_name()
                    .expect("a name")
                    .to_string_lossy()
                    .into_owned(),
                object: serde_saphyr::from_str(&text)
                    .unwrap_or_else(|e| panic!("{}: not YAML: {e}", path.display())),
                paths: header("expect-path:"),
                server_accepts: header("api-server:").iter().any(|v| v == "accepts"),
                other_errors_allowed: text.lines().any(|l| l.trim() == "# allow-other-errors"),
            }
        })
        .collect()
}

/// The field paths a rejection names: `details.causes[].field` of a 422, or the unknown
/// fields of a 400 strict decoding error.
fn rejected_paths(status: u16, body: &Value) -> Vec<String> {
    match status {
        // kube-apiserver adds a cause without a field when schema errors kept it from
        // evaluating the CEL rules ("some validation rules were not checked because the
        // object was invalid"): a note, not an error of the object's.
        422 => body["details"]["causes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["field"] != "<nil>")
            .filter_map(|c| c["field"].as_str().map(str::to_string))
            .collect(),
        400 => {
            let message = body["message"].as_str().unwrap_or_default();
            message
                .split("unknown field \"")
                .skip(1)
                .filter_map(|rest| rest.split('"').next().map(str::to_string))
                .collect()
        }
        _ => Vec::new(),
    }
}

/// POSTs a profile with `fieldValidation=<mode>`; one the server stores is deleted again.
async fn post_and_forget(cluster: &Cluster, mode: &str, object: &Value) -> (u16, Value) {
    let (status, body) = cluster
        .raw(
            "POST",
            &format!("{PROFILES}?fieldValidation={mode}"),
            object,
        )
        .await;
    if status == 201 {
        cluster
            .delete_profile(body["metadata"]["name"].as_str().unwrap_or_default())
            .await;
    }
    (status, body)
}

/// Item 3 of the issue "Real Kubernetes in the loop": the whole profile corpus sent to the
/// real kube-apiserver as `kubectl apply` sends it (`fieldValidation=Strict`): every
/// valid file admitted, every invalid file rejected at exactly the paths berth's local
/// validation gives (tests/profiles.rs), except the files only berth's semantic checks
/// reject, which the server must store. A strict decoding error (400) stops the server
/// before the schema; the same object is then sent with `fieldValidation=Warn` for the
/// remaining errors, as a client that does not ask for strictness would see them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_profile_corpus_meets_the_real_api_server_at_the_same_paths() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    let mut wrong = Vec::new();
    for file in corpus_dir("valid") {
        let (status, body) = post_and_forget(&cluster, "Strict", &file.object).await;
        if status != 201 {
            wrong.push(format!("valid/{}: {status} {body}", file.name));
        }
    }
    let invalid = corpus_dir("invalid");
    assert!(
        invalid.len() >= 40,
        "the invalid corpus has {} files",
        invalid.len()
    );
    for file in invalid {
        let (status, body) = post_and_forget(&cluster, "Strict", &file.object).await;
        if file.server_accepts {
            if status != 201 {
                wrong.push(format!(
                    "invalid/{} (api-server: accepts): {status} {body}",
                    file.name
                ));
            }
            continue;
        }
        let mut found = rejected_paths(status, &body);
        if status == 400 {
            let (status, body) = post_and_forget(&cluster, "Warn", &file.object).await;
            found.extend(rejected_paths(status, &body));
        } else if status != 422 {
            wrong.push(format!(
                "invalid/{}: {status}, not 400 or 422: {body}",
                file.name
            ));
            continue;
        }
        let missing: Vec<_> = file.paths.iter().filter(|p| !found.contains(p)).collect();
        let extra: Vec<_> = found.iter().filter(|p| !file.paths.contains(p)).collect();
        if !missing.is_empty() || (!extra.is_empty() && !file.other_errors_allowed) {
            wrong.push(format!(
                "invalid/{}: expected {:?}, the server named {found:?}: {body}",
                file.name, file.paths
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "the real API server disagrees:\n{}",
        wrong.join("\n")
    );
}
