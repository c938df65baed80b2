use super::*;

fn access() -> Access {
    Access {
        tokens: BTreeMap::from([
            (
                "prom-token".to_string(),
                UserInfo {
                    username: "prometheus".into(),
                    uid: "uid-prom".into(),
                    groups: vec!["monitoring".into()],
                },
            ),
            (
                "bob-token".to_string(),
                UserInfo {
                    username: "bob".into(),
                    ..UserInfo::default()
                },
            ),
        ]),
        rules: vec![
            AccessRule {
                name: "metrics-readers".into(),
                groups: vec!["monitoring".into()],
                verbs: vec!["get".into()],
                non_resource_urls: vec!["/metrics".into()],
                ..AccessRule::default()
            },
            AccessRule {
                users: vec!["alice".into()],
                verbs: vec!["get".into()],
                non_resource_urls: vec!["/debug/*".into()],
                ..AccessRule::default()
            },
            AccessRule {
                name: "everyone-healthz".into(),
                groups: vec![AUTHENTICATED_GROUP.into()],
                verbs: vec!["*".into()],
                non_resource_urls: vec!["/healthz".into()],
                ..AccessRule::default()
            },
            AccessRule {
                users: vec!["alice".into()],
                verbs: vec!["get".into(), "list".into()],
                api_groups: vec!["".into()],
                resources: vec!["pods".into(), "*/status".into()],
                namespaces: vec!["team-a".into()],
                ..AccessRule::default()
            },
            AccessRule {
                users: vec!["carol".into()],
                verbs: vec!["update".into()],
                api_groups: vec!["coordination.k8s.io".into()],
                resources: vec!["leases".into()],
                resource_names: vec!["berth".into()],
                ..AccessRule::default()
            },
        ],
    }
}

fn token_review(token: Value) -> Value {
    json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "metadata": {}, "spec": {"token": token}})
}

#[test]
fn token_reviews_answer_from_the_token_map() {
    struct Case {
        name: &'static str,
        body: Value,
        status: Value,
    }
    let cases = [
        Case {
            name: "known token: the user, plus system:authenticated",
            body: token_review(json!("prom-token")),
            status: json!({"authenticated": true, "user": {"username": "prometheus", "uid": "uid-prom", "groups": ["monitoring", "system:authenticated"]}}),
        },
        Case {
            name: "known token without uid or groups",
            body: token_review(json!("bob-token")),
            status: json!({"authenticated": true, "user": {"username": "bob", "groups": ["system:authenticated"]}}),
        },
        Case {
            name: "audiences asked for are echoed",
            body: json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "bob-token", "audiences": ["berth"]}}),
            status: json!({"authenticated": true, "user": {"username": "bob", "groups": ["system:authenticated"]}, "audiences": ["berth"]}),
        },
        Case {
            name: "unknown token",
            body: token_review(json!("nope")),
            status: json!({"authenticated": false, "user": {}, "error": "invalid bearer token"}),
        },
        Case {
            name: "kind and apiVersion may be left out",
            body: json!({"spec": {"token": "nope"}}),
            status: json!({"authenticated": false, "user": {}, "error": "invalid bearer token"}),
        },
    ];
    for case in cases {
        let answer = Review::Token
            .answer(&access(), case.body.clone())
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert_eq!(answer["status"], case.status, "{}", case.name);
        assert_eq!(answer["kind"], "TokenReview", "{}", case.name);
        assert_eq!(
            answer["apiVersion"], "authentication.k8s.io/v1",
            "{}",
            case.name
        );
        assert_eq!(answer["spec"], case.body["spec"], "{}", case.name);
    }
}

#[test]
fn bad_reviews_are_rejected_like_the_real_server() {
    struct Case {
        name: &'static str,
        review: Review,
        body: Value,
        code: u16,
        message: &'static str,
    }
    let sar = |spec: Value| json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec});
    let get_metrics = json!({"path": "/metrics", "verb": "get"});
    let cases = [
        Case {
            name: "empty token",
            review: Review::Token,
            body: token_review(json!("")),
            code: 400,
            message: "token is required for TokenReview in authentication",
        },
        Case {
            name: "no spec",
            review: Review::Token,
            body: json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview"}),
            code: 400,
            message: "token is required for TokenReview in authentication",
        },
        Case {
            name: "another kind",
            review: Review::Token,
            body: json!({"apiVersion": "authentication.k8s.io/v1", "kind": "Pod", "spec": {"token": "x"}}),
            code: 400,
            message: "the kind in the data (Pod) does not match the expected kind (TokenReview)",
        },
        Case {
            name: "another apiVersion",
            review: Review::Token,
            body: json!({"apiVersion": "authentication.k8s.io/v1beta1", "kind": "TokenReview", "spec": {"token": "x"}}),
            code: 400,
            message: "the API version in the data (authentication.k8s.io/v1beta1) does not match the expected API version (authentication.k8s.io/v1)",
        },
        Case {
            name: "not an object",
            review: Review::Token,
            body: json!(["x"]),
            code: 400,
            message: "the request body must be a JSON object",
        },
        Case {
            name: "a token that is not a string",
            review: Review::Token,
            body: token_review(json!(7)),
            code: 400,
            message: "TokenReview in version \"v1\" cannot be handled as a TokenReview: spec: invalid type: integer `7`, expected a string",
        },
        Case {
            name: "SAR without user or groups",
            review: Review::SubjectAccess,
            body: sar(json!({"nonResourceAttributes": get_metrics})),
            code: 422,
            message: "SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.user: Invalid value: \"\": at least one of user or group must be specified",
        },
        Case {
            name: "SAR with both kinds of attributes",
            review: Review::SubjectAccess,
            body: sar(
                json!({"user": "alice", "nonResourceAttributes": get_metrics, "resourceAttributes": {"verb": "get", "resource": "pods"}}),
            ),
            code: 422,
            message: "SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec: Invalid value: {\"path\":\"/metrics\",\"verb\":\"get\"}: exactly one of nonResourceAttributes or resourceAttributes must be specified",
        },
        Case {
            name: "SAR with neither kind of attributes",
            review: Review::SubjectAccess,
            body: sar(json!({"user": "alice"})),
            code: 422,
            message: "SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified",
        },
        Case {
            name: "SAR without spec",
            review: Review::SubjectAccess,
            body: json!({"kind": "SubjectAccessReview"}),
            code: 422,
            message: "SubjectAccessReview.authorization.k8s.io \"\" is invalid: [spec: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified, spec.user: Invalid value: \"\": at least one of user or group must be specified]",
        },
        Case {
            name: "SAR with a name",
            review: Review::SubjectAccess,
            body: json!({"kind": "SubjectAccessReview", "metadata": {"creationTimestamp": null, "name": "x"}, "spec": {"user": "alice", "nonResourceAttributes": get_metrics}}),
            code: 422,
            message: "SubjectAccessReview.authorization.k8s.io \"\" is invalid: metadata: Invalid value: {\"creationTimestamp\":null,\"name\":\"x\"}: must be empty",
        },
        Case {
            name: "SAR of another kind",
            review: Review::SubjectAccess,
            body: json!({"kind": "TokenReview", "spec": {"user": "alice", "nonResourceAttributes": get_metrics}}),
            code: 400,
            message: "the kind in the data (TokenReview) does not match the expected kind (SubjectAccessReview)",
        },
    ];
    for case in cases {
        let error = case
            .review
            .answer(&access(), case.body)
            .expect_err(case.name);
        assert_eq!(
            (error.code, error.message.as_str()),
            (case.code, case.message),
            "{}",
            case.name
        );
    }
}

#[test]
fn subject_access_reviews_match_rules_like_rbac() {
    struct Case {
        name: &'static str,
        spec: Value,
        /// The reason when allowed, None when denied.
        allowed_by: Option<&'static str>,
    }
    let metrics = |user: &str, groups: Value, verb: &str, path: &str| json!({"user": user, "groups": groups, "nonResourceAttributes": {"path": path, "verb": verb}});
    let resource =
        |user: &str, attributes: Value| json!({"user": user, "resourceAttributes": attributes});
    let cases = [
        Case {
            name: "allowed by group",
            spec: metrics(
                "prometheus",
                json!(["monitoring", "system:authenticated"]),
                "get",
                "/metrics",
            ),
            allowed_by: Some(
                "RBAC: allowed by AccessRule \"metrics-readers\" (rules[0]) to Group \"monitoring\"",
            ),
        },
        Case {
            name: "groups alone, no user",
            spec: json!({"groups": ["monitoring"], "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}),
            allowed_by: Some(
                "RBAC: allowed by AccessRule \"metrics-readers\" (rules[0]) to Group \"monitoring\"",
            ),
        },
        Case {
            name: "wrong verb",
            spec: metrics("prometheus", json!(["monitoring"]), "post", "/metrics"),
            allowed_by: None,
        },
        Case {
            name: "wrong path",
            spec: metrics("prometheus", json!(["monitoring"]), "get", "/metrics/extra"),
            allowed_by: None,
        },
        Case {
            name: "not in the group",
            spec: metrics("bob", json!(["system:authenticated"]), "get", "/metrics"),
            allowed_by: None,
        },
        Case {
            name: "allowed by user, prefix path",
            spec: metrics("alice", json!([]), "get", "/debug/pprof/heap"),
            allowed_by: Some("RBAC: allowed by rules[1] to User \"alice\""),
        },
        Case {
            name: "a prefix rule does not match the bare prefix's parent",
            spec: metrics("alice", json!([]), "get", "/debug"),
            allowed_by: None,
        },
        Case {
            name: "allowed by system:authenticated with a wildcard verb",
            spec: metrics("bob", json!(["system:authenticated"]), "head", "/healthz"),
            allowed_by: Some(
                "RBAC: allowed by AccessRule \"everyone-healthz\" (rules[2]) to Group \"system:authenticated\"",
            ),
        },
        Case {
            name: "system:authenticated only when the review lists it, as RBAC",
            spec: metrics("bob", json!([]), "get", "/healthz"),
            allowed_by: None,
        },
        Case {
            name: "resource in the rule's namespace",
            spec: resource(
                "alice",
                json!({"namespace": "team-a", "verb": "list", "group": "", "version": "v1", "resource": "pods"}),
            ),
            allowed_by: Some("RBAC: allowed by rules[3] to User \"alice\""),
        },
        Case {
            name: "resource in another namespace",
            spec: resource(
                "alice",
                json!({"namespace": "team-b", "verb": "list", "resource": "pods"}),
            ),
            allowed_by: None,
        },
        Case {
            name: "all namespaces is not a listed namespace",
            spec: resource("alice", json!({"verb": "list", "resource": "pods"})),
            allowed_by: None,
        },
        Case {
            name: "subresource not listed",
            spec: resource(
                "alice",
                json!({"namespace": "team-a", "verb": "get", "resource": "pods", "subresource": "log"}),
            ),
            allowed_by: None,
        },
        Case {
            name: "*/status matches any status",
            spec: resource(
                "alice",
                json!({"namespace": "team-a", "verb": "get", "resource": "services", "subresource": "status"}),
            ),
            allowed_by: Some("RBAC: allowed by rules[3] to User \"alice\""),
        },
        Case {
            name: "wrong group",
            spec: resource(
                "alice",
                json!({"namespace": "team-a", "verb": "get", "group": "apps", "resource": "pods"}),
            ),
            allowed_by: None,
        },
        Case {
            name: "resource name listed",
            spec: resource(
                "carol",
                json!({"namespace": "kube-system", "verb": "update", "group": "coordination.k8s.io", "resource": "leases", "name": "berth"}),
            ),
            allowed_by: Some("RBAC: allowed by rules[4] to User \"carol\""),
        },
        Case {
            name: "resource name not listed",
            spec: resource(
                "carol",
                json!({"namespace": "kube-system", "verb": "update", "group": "coordination.k8s.io", "resource": "leases", "name": "other"}),
            ),
            allowed_by: None,
        },
        Case {
            name: "a resource rule never allows a non-resource path",
            spec: metrics("carol", json!([]), "update", "/leases"),
            allowed_by: None,
        },
    ];
    for case in cases {
        let body = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": case.spec});
        let answer = Review::SubjectAccess
            .answer(&access(), body)
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let expected = match case.allowed_by {
            Some(reason) => json!({"allowed": true, "reason": reason}),
            None => json!({"allowed": false}),
        };
        assert_eq!(answer["status"], expected, "{}", case.name);
        assert_eq!(answer["spec"], case.spec, "{}", case.name);
    }
}

#[test]
fn access_parses_from_json_and_yaml_and_is_checked() {
    let json_text = r#"{"tokens": {"t": {"username": "u", "groups": ["g"]}},
        "rules": [{"name": "m", "groups": ["g"], "verbs": ["get"], "nonResourceURLs": ["/metrics"]}]}"#;
    let yaml_text = "tokens:\n  t:\n    username: u\n    groups: [g]\nrules:\n- name: m\n  groups: [g]\n  verbs: [get]\n  nonResourceURLs: [/metrics]\n";
    let expected = Access {
        tokens: BTreeMap::from([(
            "t".to_string(),
            UserInfo {
                username: "u".into(),
                uid: String::new(),
                groups: vec!["g".into()],
            },
        )]),
        rules: vec![AccessRule {
            name: "m".into(),
            groups: vec!["g".into()],
            verbs: vec!["get".into()],
            non_resource_urls: vec!["/metrics".into()],
            ..AccessRule::default()
        }],
    };
    assert_eq!(Access::parse(json_text), Ok(expected.clone()));
    assert_eq!(Access::parse(yaml_text), Ok(expected.clone()));
    let round_trip = serde_json::to_string(&expected).expect("serialises");
    assert_eq!(Access::parse(&round_trip), Ok(expected));
    assert_eq!(Access::parse("{}"), Ok(Access::default()));

    struct Case {
        name: &'static str,
        text: &'static str,
        error: &'static str,
    }
    let cases = [
        Case {
            name: "a misspelt field",
            text: r#"{"rules": [{"users": ["u"], "verbs": ["get"], "nonResourceUrls": ["/metrics"]}]}"#,
            error: "unknown field `nonResourceUrls`",
        },
        Case {
            name: "no subject",
            text: r#"{"rules": [{"verbs": ["get"], "nonResourceURLs": ["/metrics"]}]}"#,
            error: "rules[0]: at least one of users or groups must be specified",
        },
        Case {
            name: "no verbs",
            text: r#"{"rules": [{"users": ["u"], "nonResourceURLs": ["/metrics"]}]}"#,
            error: "rules[0]: verbs must contain at least one value",
        },
        Case {
            name: "both kinds",
            text: r#"{"rules": [{"users": ["u"], "verbs": ["get"], "nonResourceURLs": ["/metrics"], "resources": ["pods"]}]}"#,
            error: "rules[0]: rules cannot apply to both regular resources and non-resource URLs",
        },
        Case {
            name: "namespaced non-resource rule",
            text: r#"{"rules": [{"users": ["u"], "verbs": ["get"], "nonResourceURLs": ["/metrics"], "namespaces": ["a"]}]}"#,
            error: "rules[0]: namespaced rules cannot apply to non-resource URLs",
        },
        Case {
            name: "resource rule without groups",
            text: r#"{"rules": [{"users": ["u"], "verbs": ["get"], "resources": ["pods"]}]}"#,
            error: "rules[0]: resource rules must supply at least one api group",
        },
        Case {
            name: "resource rule without resources",
            text: "rules:\n- users: [u]\n  verbs: [get]\n  apiGroups: ['']\n",
            error: "rules[0]: resource rules must supply at least one resource",
        },
        Case {
            name: "user without a name",
            text: r#"{"tokens": {"t": {"username": ""}}}"#,
            error: "tokens[\"t\"].username: may not be empty",
        },
        Case {
            name: "not an object",
            text: "[1, 2]",
            error: "expected mapping",
        },
    ];
    for case in cases {
        let error = Access::parse(case.text).expect_err(case.name);
        assert!(
            error.contains(case.error),
            "{}: {error:?} does not contain {:?}",
            case.name,
            case.error
        );
    }
}
