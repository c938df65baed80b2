use super::*;

/// apimachinery's own tables (`validation_test.go`) for the name rules.
#[test]
fn name_rules_follow_apimachinery() {
    type Rule = fn(&str) -> Vec<String>;
    let cases: [(&str, Rule, &str, bool); 16] = [
        ("label: simple", dns1123_label, "my-name", true),
        ("label: digits first", dns1123_label, "123-abc", true),
        ("label: 63 chars", dns1123_label, &"a".repeat(63), true),
        ("label: 64 chars", dns1123_label, &"a".repeat(64), false),
        ("label: dot", dns1123_label, "a.b", false),
        ("label: upper case", dns1123_label, "A", false),
        ("subdomain: dots", dns1123_subdomain, "example.com", true),
        (
            "subdomain: 253 chars",
            dns1123_subdomain,
            &"a".repeat(253),
            true,
        ),
        (
            "subdomain: 254 chars",
            dns1123_subdomain,
            &"a".repeat(254),
            false,
        ),
        ("subdomain: empty part", dns1123_subdomain, "a..b", false),
        ("1035: digit first", dns1035_label, "1abc", false),
        ("1035: letter first", dns1035_label, "abc-123", true),
        (
            "qualified: prefix",
            qualified_name,
            "example.com/MyName",
            true,
        ),
        ("qualified: two slashes", qualified_name, "a/b/c", false),
        ("qualified: empty prefix", qualified_name, "/a", false),
        (
            "qualified: underscore inside",
            qualified_name,
            "my_name",
            true,
        ),
    ];
    for (name, rule, value, valid) in cases {
        assert_eq!(rule(value).is_empty(), valid, "{name}: {:?}", rule(value));
    }
}

#[test]
fn regex_errors_list_examples_as_apimachinery_does() {
    assert_eq!(
        qualified_name("a/b/c"),
        vec![
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    );
}

/// The workloads other Kind arms load use the same template rules, at their own path.
#[test]
fn workload_templates_are_validated_at_their_path() {
    let template: PodTemplateSpec = serde_json::from_value(serde_json::json!({
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "-1"}}}]}
    }))
    .expect("template");
    let web = Deployment {
        metadata: ObjectMeta {
            name: Some("web".into()),
            ..Default::default()
        },
        spec: k8s_openapi::api::apps::v1::DeploymentSpec {
            template: template.clone(),
            ..Default::default()
        },
        ..Default::default()
    };
    let batch = Job {
        metadata: ObjectMeta {
            name: Some("batch".into()),
            ..Default::default()
        },
        spec: Some(k8s_openapi::api::batch::v1::JobSpec {
            parallelism: Some(-2),
            template,
            ..Default::default()
        }),
        ..Default::default()
    };
    let first = |errors: Vec<FieldError>| errors.first().map(ToString::to_string);
    assert_eq!(
        first(deployment(&web)).as_deref(),
        Some(
            "spec.template.spec.containers[0].resources.requests[cpu]: Invalid value: \"-1\": must be greater than or equal to 0"
        )
    );
    assert_eq!(
        first(job(&batch)).as_deref(),
        Some("spec.parallelism: Invalid value: -2: must be greater than or equal to 0")
    );
}
