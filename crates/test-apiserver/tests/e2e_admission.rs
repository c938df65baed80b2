//! CRD admission end to end over HTTP: berth's `crds/` installed into the test API server,
//! then the profile corpus (`tests/profiles/`, format in its README) replayed as creates.
//! Invalid profiles are rejected with 422 Invalid whose `details.causes[].field` name every
//! path the file's header expects; profiles marked `api-server: accepts` and the valid
//! corpus are created. (berth's local validator is tested on the same files in
//! `tests/profiles.rs`; this checks the API server's side over the wire.)
//!
//! Unknown fields follow the real server's `fieldValidation`: the corpus is replayed with
//! `fieldValidation=Strict`, as `kubectl apply` sends it; there, upstream answers unknown
//! fields (anything pruning would drop) with 400 BadRequest `strict decoding error: unknown
//! field "<path>"`, which cuts the other errors short. So a 400 naming every expected
//! unknown field is accepted too, and the other expected paths are then checked by a
//! replay without `fieldValidation`, where unknown fields are pruned and the rest must
//! still fail with 422.

mod common;

use std::path::Path;

use berth::api::{PodGroup, SchedulerProfile};
use berth::testing::{profile_corpus, read_yaml};
use common::*;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use test_apiserver::TestApiServer;

const PROFILES: &str = "/apis/berth.dev/v1alpha1/schedulerprofiles";

/// What a corpus file's header promises (the subset the API server is concerned with).
#[derive(Debug, Default)]
struct Expectations {
    /// (field path, message fragment; empty = any).
    errors: Vec<(String, String)>,
    api_server_accepts: bool,
}

impl Expectations {
    fn is_unknown_field(fragment: &str) -> bool {
        fragment.contains("unknown field")
    }
}

fn expectations(text: &str) -> Expectations {
    let mut expected = Expectations::default();
    for line in text.lines() {
        let Some(comment) = line.strip_prefix('#') else {
            continue;
        };
        let comment = comment.trim();
        if let Some(path) = comment.strip_prefix("expect-path:") {
            expected
                .errors
                .push((path.trim().to_string(), String::new()));
        } else if let Some(message) = comment.strip_prefix("expect-message:") {
            if let Some((_, fragment)) = expected.errors.last_mut() {
                *fragment = message.trim().to_string();
            }
        } else if comment == "api-server: accepts" {
            expected.api_server_accepts = true;
        }
    }
    expected
}

/// The field paths a rejection names: `details.causes[].field`, plus the paths quoted in
/// `unknown field "<path>"` in the message (upstream's strict decoding error).
fn named_paths(response: &RawResponse) -> (Vec<String>, Vec<String>) {
    let causes: Vec<String> = response.body["details"]["causes"]
        .as_array()
        .map(|causes| {
            causes
                .iter()
                .filter_map(|c| c["field"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let message = response.body["message"].as_str().unwrap_or_default();
    let unknown = message
        .split("unknown field \"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next().map(str::to_string))
        .collect();
    (causes, unknown)
}

async fn create(server: &TestApiServer, object: &Value, strict: bool) -> RawResponse {
    let query = if strict {
        "?fieldValidation=Strict"
    } else {
        ""
    };
    raw(
        server,
        "POST",
        &format!("{PROFILES}{query}"),
        "application/json",
        Some(object),
    )
    .await
}

async fn delete(server: &TestApiServer, name: &str) {
    let response = raw(
        server,
        "DELETE",
        &format!("{PROFILES}/{name}"),
        "application/json",
        None,
    )
    .await;
    assert_eq!(response.status, 200, "deleting {name}: {}", response.text);
}

fn name_of(object: &Value) -> String {
    object["metadata"]["name"]
        .as_str()
        .expect("every corpus file has metadata.name")
        .to_string()
}

/// Problems with one invalid file's replay, empty when it behaves.
async fn check_invalid(server: &TestApiServer, file: &Path) -> Vec<String> {
    let (text, object) = read_yaml(file);
    let expected = expectations(&text);
    let mut problems = Vec::new();
    let strict = create(server, &object, true).await;

    if expected.api_server_accepts {
        if strict.status == 201 {
            delete(server, &name_of(&object)).await;
        } else {
            problems.push(format!(
                "marked `api-server: accepts` but the create got {}: {}",
                strict.status, strict.text
            ));
        }
        return problems;
    }
    if expected.errors.is_empty() {
        problems.push("an invalid file without expect-path".into());
        return problems;
    }
    let (unknown, known): (Vec<_>, Vec<_>) = expected
        .errors
        .iter()
        .partition(|(_, fragment)| Expectations::is_unknown_field(fragment));

    let (causes, unknown_in_message) = named_paths(&strict);
    let named = |path: &str| {
        causes.iter().any(|c| c == path) || unknown_in_message.iter().any(|u| u == path)
    };
    if strict.body["message"]
        .as_str()
        .is_some_and(|m| m.contains("Internal error"))
    {
        problems.push(format!("an Internal error: {}", strict.text));
    }
    match strict.status {
        201 => {
            problems.push("created, but it is invalid".into());
            delete(server, &name_of(&object)).await;
            return problems;
        }
        422 => {
            if strict.body["reason"] != "Invalid" {
                problems.push(format!("422 without reason Invalid: {}", strict.text));
            }
            for (path, _) in &expected.errors {
                if !named(path) {
                    problems.push(format!("strict: no cause at {path}; causes: {causes:?}"));
                }
            }
        }
        // Upstream's strict decoding error: it names the unknown fields (including what
        // pruning drops inside a value of the wrong type, e.g. the keys of list items where
        // an object is expected) and cuts the other errors short.
        400 if strict.body["message"]
            .as_str()
            .is_some_and(|m| m.contains("strict decoding error")) =>
        {
            for (path, _) in &unknown {
                if !named(path) {
                    problems.push(format!(
                        "strict: 400 does not name unknown field {path}: {}",
                        strict.text
                    ));
                }
            }
        }
        other => problems.push(format!(
            "strict: expected 422 Invalid, got {other}: {}",
            strict.text
        )),
    }

    // Without fieldValidation, unknown fields are pruned; the other errors still fail.
    // (Needed where the strict replay stopped at the unknown fields.)
    let cut_short = strict.status == 400 || !unknown.is_empty();
    if cut_short && !known.is_empty() {
        let lenient = create(server, &object, false).await;
        let (causes, _) = named_paths(&lenient);
        if lenient.status != 422 {
            problems.push(format!(
                "without fieldValidation: expected 422, got {}: {}",
                lenient.status, lenient.text
            ));
            if lenient.status == 201 {
                delete(server, &name_of(&object)).await;
            }
        } else {
            for (path, _) in &known {
                if !causes.iter().any(|c| c == path) {
                    problems.push(format!(
                        "without fieldValidation: no cause at {path}; causes: {causes:?}"
                    ));
                }
            }
        }
    }
    if !problems.is_empty() {
        problems.push(format!("response: {} {}", strict.status, strict.text));
    }
    problems
}

#[tokio::test]
async fn invalid_profiles_are_rejected_with_their_field_paths() {
    let server = start_with_crds().await;
    let files = profile_corpus("invalid");
    assert!(
        files.len() >= 30,
        "the invalid corpus has {} files",
        files.len()
    );
    let mut failures = Vec::new();
    for file in &files {
        let problems = check_invalid(&server, file).await;
        if !problems.is_empty() {
            failures.push(format!(
                "{}:\n  {}",
                file.strip_prefix(repo_root()).unwrap_or(file).display(),
                problems.join("\n  ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} invalid profiles misbehave over HTTP:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    // Nothing invalid was stored.
    let client = server.client().await;
    let left = Api::<SchedulerProfile>::all(client)
        .list(&Default::default())
        .await
        .expect("list");
    assert!(left.items.is_empty(), "{:?}", left.items);
    server.shutdown().await;
}

#[tokio::test]
async fn valid_profiles_are_created() {
    let server = start_with_crds().await;
    let client = server.client().await;
    let typed: Api<SchedulerProfile> = Api::all(client);
    let files = profile_corpus("valid");
    assert!(files.len() >= 6);
    let mut failures = Vec::new();
    for file in &files {
        let (_, object) = read_yaml(file);
        let name = name_of(&object);
        let response = create(&server, &object, true).await;
        if response.status != 201 {
            failures.push(format!(
                "{}: expected 201, got {}: {}",
                file.display(),
                response.status,
                response.text
            ));
            continue;
        }
        // What was stored reads back as berth's typed SchedulerProfile.
        match typed.get(&name).await {
            Ok(stored) => assert_eq!(stored.metadata.generation, Some(1)),
            Err(e) => failures.push(format!("{}: reading it back: {e}", file.display())),
        }
        delete(&server, &name).await;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    server.shutdown().await;
}

#[tokio::test]
async fn defaults_are_applied_and_unknown_fields_pruned() {
    let server = start_with_crds().await;
    let client = server.client().await;
    let api: Api<SchedulerProfile> = Api::all(client.clone());

    let response = create(
        &server,
        &json!({
            "apiVersion": "berth.dev/v1alpha1",
            "kind": "SchedulerProfile",
            "metadata": {"name": "defaults"},
            "spec": {"pluginConfig": {"nodeResourcesFit": {"scoringStrategy": {
                "resources": [{"name": "nvidia.com/gpu"}],
            }}}},
        }),
        true,
    )
    .await;
    assert_eq!(response.status, 201, "{}", response.text);
    let args = &response.body["spec"]["pluginConfig"]["nodeResourcesFit"];
    assert_eq!(args["ignoredResourceGroups"], json!([]), "{args}");
    assert_eq!(args["scoringStrategy"]["type"], "LeastAllocated", "{args}");
    assert_eq!(
        args["scoringStrategy"]["resources"],
        json!([{"name": "nvidia.com/gpu", "weight": 1}]),
        "{args}"
    );
    // The stored object has the defaults too.
    let stored = api.get("defaults").await.expect("get");
    let stored_args = &stored.spec.plugin_config["nodeResourcesFit"];
    assert_eq!(stored_args["scoringStrategy"]["type"], "LeastAllocated");

    // Without fieldValidation (what kube-rs sends), unknown fields are dropped, not
    // rejected: upstream's default is Warn.
    let (_, object) =
        read_yaml(&repo_root().join("tests/profiles/invalid/unknown-spec-field.yaml"));
    let response = create(&server, &object, false).await;
    assert_eq!(
        response.status, 201,
        "an unknown field without fieldValidation=Strict is pruned, not an error: {}",
        response.text
    );
    assert_eq!(
        response.body["spec"],
        json!({}),
        "the unknown field is pruned"
    );
    if let Some(warning) = response.headers.get("warning") {
        eprintln!("warning header: {warning:?}");
    }
    // An unknown top-level field, too.
    let response = create(
        &server,
        &json!({
            "apiVersion": "berth.dev/v1alpha1",
            "kind": "SchedulerProfile",
            "metadata": {"name": "extra"},
            "spec": {},
            "extra": {"a": 1},
        }),
        false,
    )
    .await;
    assert_eq!(response.status, 201, "{}", response.text);
    assert!(response.body.get("extra").is_none(), "{}", response.text);
    server.shutdown().await;
}

#[tokio::test]
async fn pod_groups_are_admitted_by_their_schema() {
    let server = start_with_crds().await;
    let client = server.client().await;
    ensure_namespace(&client, "ml").await;
    let groups: Api<PodGroup> = Api::namespaced(client.clone(), "ml");
    let pp = PostParams::default();

    let valid: PodGroup = serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "train"},
        "spec": {"minMember": 4, "minResources": {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": 4}},
    }))
    .expect("a PodGroup");
    let created = groups.create(&pp, &valid).await.expect("a valid PodGroup");
    assert_eq!(created.spec.min_member, 4);

    for (name, spec, path) in [
        ("zero", json!({"minMember": 0}), "spec.minMember"),
        ("missing", json!({}), "spec.minMember"),
        ("string", json!({"minMember": "four"}), "spec.minMember"),
        (
            "bad-quantity",
            json!({"minMember": 1, "minResources": {"cpu": "lots"}}),
            "spec.minResources.cpu",
        ),
        (
            "timeout",
            json!({"minMember": 1, "scheduleTimeoutSeconds": 0}),
            "spec.scheduleTimeoutSeconds",
        ),
    ] {
        let response = raw(
            &server,
            "POST",
            "/apis/berth.dev/v1alpha1/namespaces/ml/podgroups",
            "application/json",
            Some(&json!({
                "apiVersion": "berth.dev/v1alpha1",
                "kind": "PodGroup",
                "metadata": {"name": name},
                "spec": spec,
            })),
        )
        .await;
        assert_eq!(response.status, 422, "{name}: {}", response.text);
        let (causes, _) = named_paths(&response);
        assert!(
            causes.iter().any(|c| c == path),
            "{name}: no cause at {path}: {}",
            response.text
        );
        assert!(
            response.body["message"].as_str().is_some_and(
                |m| m.starts_with(&format!("PodGroup.berth.dev \"{name}\" is invalid"))
            ),
            "{name}: {}",
            response.text
        );
    }

    // Spec updates are admitted too.
    let status = assert_api_error(
        "an update to an invalid spec",
        groups
            .patch(
                "train",
                &Default::default(),
                &kube::api::Patch::Merge(json!({"spec": {"minMember": -1}})),
            )
            .await,
        422,
        "Invalid",
    );
    assert!(
        status
            .details
            .is_some_and(|d| d.causes.iter().any(|c| c.field == "spec.minMember")),
        "causes name spec.minMember"
    );
    server.shutdown().await;
}
