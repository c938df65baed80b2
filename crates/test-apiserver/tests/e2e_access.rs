//! TokenReview and SubjectAccessReview as a delegating component (kube-scheduler, berth's
//! `/metrics`) sends them: through kube-rs into k8s-openapi's types, through discovery,
//! the request log and faults like any other request, answered from the configured
//! tokens and rules, which tests change while the server runs (`set_access`).

mod common;

use std::collections::BTreeMap;

use common::*;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use kube::discovery::{Discovery, Scope};
use serde_json::{Value, json};
use test_apiserver::{Access, AccessRule, Config, Fault, TestApiServer, UserInfo};

const TOKEN_REVIEWS: &str = "/apis/authentication.k8s.io/v1/tokenreviews";
const SUBJECT_ACCESS_REVIEWS: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

/// One token for `prometheus` (group `monitoring`), allowed `get /metrics` by group.
fn metrics_access() -> Access {
    Access {
        tokens: BTreeMap::from([(
            "prom-token".to_string(),
            UserInfo {
                username: "prometheus".into(),
                uid: "uid-1".into(),
                groups: vec!["monitoring".into()],
            },
        )]),
        rules: vec![AccessRule {
            name: "metrics-readers".into(),
            groups: vec!["monitoring".into()],
            verbs: vec!["get".into()],
            non_resource_urls: vec!["/metrics".into()],
            ..AccessRule::default()
        }],
    }
}

async fn start_with_access(access: Access) -> TestApiServer {
    start_with(Config {
        access,
        ..Config::default()
    })
    .await
}

fn token_review(token: &str) -> TokenReview {
    TokenReview {
        spec: TokenReviewSpec {
            token: token.into(),
            audiences: None,
        },
        ..TokenReview::default()
    }
}

fn metrics_review(user: &str, groups: &[&str]) -> SubjectAccessReview {
    SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.into()),
            groups: Some(groups.iter().map(|g| g.to_string()).collect()),
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some("/metrics".into()),
                verb: Some("get".into()),
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    }
}

/// What a delegating authenticator + authorizer concludes for a bearer token on
/// `GET /metrics`: None when the token is not authenticated, else whether it is allowed.
async fn may_read_metrics(client: &kube::Client, token: &str) -> Option<bool> {
    let reviews: Api<TokenReview> = Api::all(client.clone());
    let answer = within(
        "a TokenReview",
        reviews.create(&PostParams::default(), &token_review(token)),
    )
    .await
    .expect("a TokenReview is answered");
    let status = answer.status.expect("the answer has a status");
    if status.authenticated != Some(true) {
        return None;
    }
    let user = status.user.expect("an authenticated user");
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: user.username,
            uid: user.uid,
            groups: user.groups,
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some("/metrics".into()),
                verb: Some("get".into()),
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let reviews: Api<SubjectAccessReview> = Api::all(client.clone());
    let answer = within(
        "a SubjectAccessReview",
        reviews.create(&PostParams::default(), &review),
    )
    .await
    .expect("a SubjectAccessReview is answered");
    Some(answer.status.expect("the answer has a status").allowed)
}

#[tokio::test]
async fn reviews_decode_into_k8s_openapi_types() {
    let server = start_with_access(metrics_access()).await;
    let client = server.client().await;
    let token_reviews: Api<TokenReview> = Api::all(client.clone());
    let pp = PostParams::default();

    let known = token_reviews
        .create(&pp, &token_review("prom-token"))
        .await
        .expect("a known token is reviewed");
    let status = known.status.expect("status");
    assert_eq!(status.authenticated, Some(true));
    let user = status.user.expect("user");
    assert_eq!(user.username.as_deref(), Some("prometheus"));
    assert_eq!(user.uid.as_deref(), Some("uid-1"));
    assert_eq!(
        user.groups,
        Some(vec!["monitoring".into(), "system:authenticated".into()])
    );
    assert_eq!(known.spec.token, "prom-token");

    let unknown = token_reviews
        .create(&pp, &token_review("guess"))
        .await
        .expect("an unknown token is reviewed too");
    let status = unknown.status.expect("status");
    assert_ne!(status.authenticated, Some(true));
    assert_eq!(status.error.as_deref(), Some("invalid bearer token"));
    assert!(
        status.user.is_none_or(|u| u.username.is_none()),
        "no user for an unknown token"
    );

    let empty = assert_api_error(
        "an empty token",
        token_reviews.create(&pp, &token_review("")).await,
        400,
        "BadRequest",
    );
    assert_eq!(
        empty.message,
        "token is required for TokenReview in authentication"
    );

    let access_reviews: Api<SubjectAccessReview> = Api::all(client.clone());
    let allowed = access_reviews
        .create(&pp, &metrics_review("prometheus", &["monitoring"]))
        .await
        .expect("a SubjectAccessReview is answered");
    let status = allowed.status.expect("status");
    assert!(status.allowed, "{status:?}");
    assert_eq!(
        status.reason.as_deref(),
        Some("RBAC: allowed by AccessRule \"metrics-readers\" (rules[0]) to Group \"monitoring\"")
    );
    let denied = access_reviews
        .create(&pp, &metrics_review("bob", &["system:authenticated"]))
        .await
        .expect("a denied review is answered");
    let status = denied.status.expect("status");
    assert!(!status.allowed && status.reason.is_none(), "{status:?}");

    let resource_review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some("prometheus".into()),
            resource_attributes: Some(ResourceAttributes {
                verb: Some("list".into()),
                resource: Some("pods".into()),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let denied = access_reviews
        .create(&pp, &resource_review)
        .await
        .expect("a resource review is answered");
    assert!(!denied.status.expect("status").allowed);

    let invalid = assert_api_error(
        "a review without user or groups",
        access_reviews.create(&pp, &metrics_review("", &[])).await,
        422,
        "Invalid",
    );
    assert!(
        invalid
            .message
            .contains("at least one of user or group must be specified"),
        "{invalid:?}"
    );

    // The delegated flow end to end: a known token in the right group may read /metrics.
    assert_eq!(may_read_metrics(&client, "prom-token").await, Some(true));
    assert_eq!(may_read_metrics(&client, "guess").await, None);
    server.shutdown().await;
}

#[tokio::test]
async fn reviews_are_create_only_and_never_stored() {
    let server = start_with_access(metrics_access()).await;
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "metadata": {"name": "same"}, "spec": {"token": "prom-token"}});

    struct Case {
        name: &'static str,
        method: &'static str,
        path: &'static str,
        body: Option<Value>,
        status: u16,
        reason: &'static str,
    }
    let cases = [
        Case {
            name: "create",
            method: "POST",
            path: TOKEN_REVIEWS,
            body: Some(review.clone()),
            status: 201,
            reason: "",
        },
        Case {
            name: "create with the same name again: nothing was stored",
            method: "POST",
            path: TOKEN_REVIEWS,
            body: Some(review.clone()),
            status: 201,
            reason: "",
        },
        Case {
            name: "list",
            method: "GET",
            path: TOKEN_REVIEWS,
            body: None,
            status: 405,
            reason: "MethodNotAllowed",
        },
        Case {
            name: "watch",
            method: "GET",
            path: "/apis/authorization.k8s.io/v1/subjectaccessreviews?watch=true",
            body: None,
            status: 405,
            reason: "MethodNotAllowed",
        },
        Case {
            name: "get by name",
            method: "GET",
            path: "/apis/authentication.k8s.io/v1/tokenreviews/same",
            body: None,
            status: 405,
            reason: "MethodNotAllowed",
        },
        Case {
            name: "delete",
            method: "DELETE",
            path: "/apis/authentication.k8s.io/v1/tokenreviews/same",
            body: None,
            status: 405,
            reason: "MethodNotAllowed",
        },
        Case {
            name: "namespaced path of a cluster-scoped resource",
            method: "POST",
            path: "/apis/authentication.k8s.io/v1/namespaces/default/tokenreviews",
            body: Some(review.clone()),
            status: 404,
            reason: "NotFound",
        },
        Case {
            name: "another kind in the body",
            method: "POST",
            path: SUBJECT_ACCESS_REVIEWS,
            body: Some(review.clone()),
            status: 400,
            reason: "BadRequest",
        },
        Case {
            name: "not JSON",
            method: "POST",
            path: TOKEN_REVIEWS,
            body: Some(json!("just a string")),
            status: 400,
            reason: "BadRequest",
        },
    ];
    for case in cases {
        let response = raw(
            &server,
            case.method,
            case.path,
            "application/json",
            case.body.as_ref(),
        )
        .await;
        assert_eq!(
            response.status, case.status,
            "{}: {}",
            case.name, response.text
        );
        if case.status == 201 {
            assert_eq!(
                response.body["metadata"],
                json!({"name": "same"}),
                "{}",
                case.name
            );
            assert_eq!(
                response.body["status"]["authenticated"], true,
                "{}",
                case.name
            );
        } else {
            assert_eq!(
                (&response.body["kind"], &response.body["reason"]),
                (&json!("Status"), &json!(case.reason)),
                "{}: {}",
                case.name,
                response.text
            );
        }
    }

    // YAML bodies work like every other body.
    let client = server.client().await;
    let request = axum::http::Request::post(SUBJECT_ACCESS_REVIEWS)
        .header("content-type", "application/yaml")
        .body(
            b"apiVersion: authorization.k8s.io/v1\nkind: SubjectAccessReview\nspec:\n  groups: [monitoring]\n  nonResourceAttributes: {path: /metrics, verb: get}\n"
                .to_vec(),
        )
        .expect("a request");
    let answer: SubjectAccessReview = within("a YAML review", client.request(request))
        .await
        .expect("a YAML body is answered");
    assert!(answer.status.expect("status").allowed);
    server.shutdown().await;
}

#[tokio::test]
async fn discovery_lists_the_reviews() {
    let server = start().await;
    let client = server.client().await;

    let groups = client.list_api_groups().await.expect("/apis");
    for (group, resource, kind) in [
        ("authentication.k8s.io", "tokenreviews", "TokenReview"),
        (
            "authorization.k8s.io",
            "subjectaccessreviews",
            "SubjectAccessReview",
        ),
    ] {
        let listed = groups
            .groups
            .iter()
            .find(|g| g.name == group)
            .unwrap_or_else(|| panic!("/apis lacks {group}"));
        assert_eq!(
            listed
                .preferred_version
                .as_ref()
                .map(|v| v.group_version.as_str()),
            Some(format!("{group}/v1").as_str())
        );
        let api_group = raw(&server, "GET", &format!("/apis/{group}"), "", None).await;
        assert_eq!(api_group.body["kind"], "APIGroup", "{}", api_group.text);
        assert_eq!(api_group.body["versions"][0]["version"], "v1");

        let resources = client
            .list_api_group_resources(&format!("{group}/v1"))
            .await
            .unwrap_or_else(|e| panic!("/apis/{group}/v1: {e}"));
        let entry = resources
            .resources
            .iter()
            .find(|r| r.name == resource)
            .unwrap_or_else(|| panic!("/apis/{group}/v1 lacks {resource}"));
        assert_eq!(entry.kind, kind);
        assert!(!entry.namespaced, "{resource} is cluster-scoped");
        assert_eq!(entry.verbs, ["create"], "{resource}");
        assert_eq!(entry.singular_name, kind.to_ascii_lowercase());
    }

    // kube-rs' discovery walk still works, and sees the reviews as cluster-scoped.
    let discovery = within("discovery", Discovery::new(client.clone()).run())
        .await
        .expect("discovery runs");
    for (group, kind) in [
        ("authentication.k8s.io", "TokenReview"),
        ("authorization.k8s.io", "SubjectAccessReview"),
    ] {
        let (resource, capabilities) = discovery
            .get(group)
            .and_then(|g| g.recommended_kind(kind))
            .unwrap_or_else(|| panic!("discovery finds {kind}"));
        assert_eq!(capabilities.scope, Scope::Cluster, "{kind}");
        assert!(
            capabilities.supports_operation("create") && !capabilities.supports_operation("list"),
            "{kind}: {:?}",
            capabilities.operations
        );
        assert_eq!(resource.version, "v1");
    }
    assert!(
        discovery.get("coordination.k8s.io").is_some(),
        "the other groups are still discovered"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn reviews_are_logged_and_faulted_like_other_requests() {
    let server = start_with_access(metrics_access()).await;
    let client = server.client().await;
    let reviews: Api<TokenReview> = Api::all(client.clone());
    let pp = PostParams::default();

    server.inject_fault(Fault {
        verb: Some("create".into()),
        resource: Some("tokenreviews".into()),
        count: 1,
        status: 500,
        message: "authentication is down".into(),
    });
    let status = assert_api_error(
        "a faulted TokenReview",
        reviews.create(&pp, &token_review("prom-token")).await,
        500,
        "InternalError",
    );
    assert_eq!(status.message, "authentication is down");
    // The fault is used up, and never matched the other review.
    assert_eq!(may_read_metrics(&client, "prom-token").await, Some(true));

    let logged = requests_for(&server, "create", "tokenreviews");
    assert_eq!(
        logged.iter().map(|r| r.status).collect::<Vec<_>>(),
        [500, 201],
        "{}",
        log_summary(&server)
    );
    for record in &logged {
        assert_eq!(record.method, "POST");
        assert_eq!(record.path, TOKEN_REVIEWS);
        assert_eq!(
            (record.group.as_str(), record.version.as_str()),
            ("authentication.k8s.io", "v1")
        );
        assert_eq!(
            (&record.namespace, &record.name, &record.subresource),
            (&None, &None, &None)
        );
    }
    let sar = requests_for(&server, "create", "subjectaccessreviews");
    assert_eq!(sar.len(), 1, "{}", log_summary(&server));
    assert_eq!(sar[0].group, "authorization.k8s.io");
    assert_eq!(sar[0].status, 201);
    server.shutdown().await;
}

#[tokio::test]
async fn access_changes_while_the_server_runs() {
    let server = start_with_access(metrics_access()).await;
    let client = server.client().await;
    assert_eq!(server.access(), metrics_access());
    assert_eq!(may_read_metrics(&client, "prom-token").await, Some(true));

    // Revoke the rule: still authenticated, no longer allowed.
    let mut access = metrics_access();
    access.rules.clear();
    server.set_access(access.clone()).expect("valid access");
    assert_eq!(may_read_metrics(&client, "prom-token").await, Some(false));

    // Revoke the token: no longer authenticated.
    access.tokens.clear();
    server.set_access(access).expect("valid access");
    assert_eq!(may_read_metrics(&client, "prom-token").await, None);

    // An invalid change is refused and changes nothing.
    let refused = server
        .set_access(Access {
            rules: vec![AccessRule {
                verbs: vec!["get".into()],
                non_resource_urls: vec!["/metrics".into()],
                ..AccessRule::default()
            }],
            ..Access::default()
        })
        .expect_err("a rule without subjects");
    assert_eq!(refused.code, 400);
    assert!(refused.message.contains("rules[0]"), "{refused}");
    assert_eq!(server.access(), Access::default());

    server.shutdown().await;
}

#[tokio::test]
async fn an_invalid_access_config_does_not_start() {
    let config = Config {
        access: Access {
            rules: vec![AccessRule {
                users: vec!["u".into()],
                verbs: vec!["get".into()],
                resources: vec!["pods".into()],
                ..AccessRule::default()
            }],
            ..Access::default()
        },
        ..Config::default()
    };
    let error = TestApiServer::start(config)
        .await
        .expect_err("a resource rule without apiGroups");
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
    assert!(error.to_string().contains("api group"), "{error}");
}
