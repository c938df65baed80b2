use super::*;
use crate::plugins::default_registry;

/// apimachinery's `field.Error.Error()` for each type, written out by hand from
/// k8s.io/apimachinery/pkg/util/validation/field/errors.go.
#[test]
fn field_errors_read_like_apimachinery() {
    let cases = [
        (
            FieldError::new(
                "spec.plugins.score.enabled[0].weight",
                0,
                "must be between 1 and 100",
            ),
            "spec.plugins.score.enabled[0].weight: Invalid value: 0: must be between 1 and 100",
        ),
        (
            FieldError::invalid("spec.x", &json!("a"), "must be of type integer"),
            "spec.x: Invalid value: \"a\": must be of type integer",
        ),
        (FieldError::required("spec", ""), "spec: Required value"),
        (
            FieldError::required(
                "spec.plugins.bind",
                "at least one Bind plugin must be enabled",
            ),
            "spec.plugins.bind: Required value: at least one Bind plugin must be enabled",
        ),
        (
            FieldError::not_supported(
                "spec.plugins.filter.enabled[0].name",
                &json!("Foo"),
                &["A", "B"],
            ),
            "spec.plugins.filter.enabled[0].name: Unsupported value: \"Foo\": supported values: \"A\", \"B\"",
        ),
        (
            FieldError::too_many("spec.plugins.queueSort.enabled", 2, 1),
            "spec.plugins.queueSort.enabled: Too many: 2: must have at most 1 items",
        ),
        (
            FieldError::too_long("spec.schedulerName", 253),
            "spec.schedulerName: Too long: may not be more than 253 bytes",
        ),
        (
            FieldError::forbidden("spec.a", "may not be set"),
            "spec.a: Forbidden: may not be set",
        ),
        (
            FieldError::duplicate("spec.plugins.score.enabled[1].name", &json!("X"), ""),
            "spec.plugins.score.enabled[1].name: Duplicate value: \"X\"",
        ),
        (
            FieldError::unknown_field("spec.foo"),
            "spec.foo: unknown field \"spec.foo\"",
        ),
        (
            FieldError::internal("spec", "boom"),
            "spec: Internal error: boom",
        ),
        (
            FieldError::new("spec.containers", "", "cannot decode Pod: bad"),
            "spec.containers: cannot decode Pod: bad",
        ),
    ];
    for (error, want) in cases {
        assert_eq!(error.to_string(), want);
    }
}

#[test]
fn range_messages_name_both_bounds_when_there_are_two() {
    let cases = [
        (
            json!({"minimum": 1.0, "maximum": 100.0}),
            Bound::Lower,
            "must be between 1 and 100",
        ),
        (
            json!({"minimum": 1.0, "maximum": 100.0}),
            Bound::Upper,
            "must be between 1 and 100",
        ),
        (
            json!({"minimum": 1.0}),
            Bound::Lower,
            "must be greater than or equal to 1",
        ),
        (
            json!({"maximum": 10}),
            Bound::Upper,
            "must be less than or equal to 10",
        ),
        (
            json!({"minimum": 0, "exclusiveMinimum": true, "maximum": 5}),
            Bound::Lower,
            "must be greater than 0",
        ),
        (
            json!({"minimum": 0.5}),
            Bound::Lower,
            "must be greater than or equal to 0.5",
        ),
    ];
    for (node, bound, want) in cases {
        assert_eq!(range_message(&node, bound), want, "{node}");
    }
}

#[test]
fn openapi_is_translated_to_json_schema() {
    let openapi = json!({
        "type": "object",
        "description": "dropped",
        "properties": {
            "a": {"type": "integer", "nullable": true, "minimum": 1.0, "format": "int32"},
            "b": {"type": "string", "enum": ["X"], "nullable": true},
            "q": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "when": {"type": "string", "format": "date-time"},
        },
        "x-kubernetes-validations": [{"rule": "true"}],
    });
    assert_eq!(
        to_json_schema(&openapi),
        json!({
            "type": "object",
            "properties": {
                "a": {"type": ["integer", "null"], "minimum": 1.0},
                "b": {"type": ["string", "null"], "enum": ["X", null]},
                "q": {"type": ["integer", "string"]},
                "when": {"type": "string", "format": "date-time"},
            },
        })
    );
}

#[test]
fn pointers_become_field_paths() {
    let instance =
        json!({"spec": {"plugins": {"score": {"enabled": [{"weight": 0}]}}, "m": {"0": 1}}});
    assert_eq!(
        field_path("/spec/plugins/score/enabled/0/weight", &instance),
        "spec.plugins.score.enabled[0].weight"
    );
    assert_eq!(field_path("/spec/m/0", &instance), "spec.m.0");
    assert_eq!(field_path("", &instance), "");
}

#[test]
fn pruning_reports_unknown_fields_and_drops_non_nullable_nulls() {
    let schema = json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {
                "a": {"type": "integer"},
                "b": {"type": "integer", "nullable": true},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            }},
        },
    });
    let mut value = json!({"spec": {"a": null, "b": null, "c": 1, "free": {"x": 1}}, "top": 1});
    let mut errors = Vec::new();
    prune(&schema, &mut value, "", &mut errors);
    assert_eq!(value, json!({"spec": {"b": null, "free": {"x": 1}}}));
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["spec.c", "top"]);
}

#[test]
fn semantic_errors_inside_a_reported_path_are_left_out() {
    assert!(covers(
        "spec.plugins.queueSort",
        "spec.plugins.queueSort.enabled"
    ));
    assert!(covers(
        "spec.pluginConfig.nodeResourcesFit",
        "spec.pluginConfig.nodeResourcesFit.scoringStrategy.type"
    ));
    assert!(covers("spec.a", "spec.a"));
    assert!(covers("spec.a", "spec.a[0]"));
    assert!(covers("spec.a.shape[1].utilization", "spec.a.shape"));
    assert!(!covers("spec.a", "spec.ab"));
    assert!(!covers("spec.a.b", "spec"));
    assert!(!covers("spec.a.b", ""));
}

#[test]
fn the_smallest_profile_is_valid_and_resolved() {
    let raw = json!({"apiVersion": "berth.dev/v1alpha1", "kind": "SchedulerProfile",
                         "metadata": {"name": "p"}, "spec": {}});
    let validation = validate_profile(&raw, &default_registry());
    assert_eq!(validation.errors, Vec::new());
    assert!(validation.resolved.is_some());
    assert_eq!(
        validation.profile.map(|p| p.scheduler_name()),
        Some("p".to_string())
    );
}

#[test]
fn the_default_registry_has_no_broken_rules() {
    let registry = default_registry();
    let validator = ProfileValidator::new(&registry).expect("schema builds");
    assert_eq!(validator.rule_compilation_errors(), Vec::<String>::new());
}
