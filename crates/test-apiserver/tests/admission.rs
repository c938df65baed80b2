//! CRD admission (`test_apiserver::admission`) against the real server's behaviour.
//!
//! The expected wording below is written from the upstream sources, not from this crate's
//! output:
//! - kube-openapi `pkg/validation/errors/schema.go` (`"%s in %s should be greater than or equal
//!   to %v"`, `"%s in %s must be of type %s: %q"`, `"%s in %s should match '%s'"`, ...) and
//!   `validate/schema_messages.go` (`"%q must validate at least one schema (anyOf)"`);
//! - apiextensions-apiserver `pkg/apiserver/validation/validation.go`
//!   (`kubeOpenAPIResultToFieldErrors`: Required, NotSupported, TooLong, TooMany, TypeInvalid);
//! - apimachinery `pkg/util/validation/field/errors.go` (`ErrorBody`, `TooLong`: "may not be
//!   more than %d bytes", `TooMany`: "must have at most %d items", `NotSupported` quoting);
//! - apiextensions `schema/cel/validation.go` (`fieldErrorForReason(fldPath, sts.Type, ...)`,
//!   `ruleMessageOrDefault`: "failed rule: %s"), `schema/listtype/validation.go`
//!   (`field.Duplicate`), and the customresource strategy's `hasBlockingErr`.

// In a module so that `cargo test -p berth-test-apiserver admission` selects these tests.
mod admission {
    use std::path::{Path, PathBuf};

    use serde_json::{Value, json};
    use test_apiserver::admission::{admit, unknown_fields};
    use test_apiserver::errors::Cause;

    fn cause(reason: &str, field: &str, message: &str) -> Cause {
        Cause {
            reason: reason.into(),
            message: message.into(),
            field: field.into(),
        }
    }

    fn resource(spec: Value) -> Value {
        json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": spec})
    }

    fn root(spec_schema: Value) -> Value {
        json!({"type": "object", "properties": {"spec": spec_schema}})
    }

    fn spec_of(props: Value) -> Value {
        root(json!({"type": "object", "properties": props}))
    }

    fn rejected(schema: &Value, spec: Value) -> Vec<Cause> {
        match admit(schema, resource(spec.clone()), None) {
            Ok(obj) => panic!("{spec} was admitted as {obj}"),
            Err(causes) => causes,
        }
    }

    fn admitted(schema: &Value, spec: Value) -> Value {
        match admit(schema, resource(spec.clone()), None) {
            Ok(obj) => obj["spec"].clone(),
            Err(causes) => panic!("{spec} was rejected: {causes:?}"),
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Structural schema validation wording

    #[test]
    fn keyword_wording_matches_the_real_server() {
        let schema = spec_of(json!({
            "min": {"type": "integer", "minimum": 1},
            "exclMax": {"type": "integer", "maximum": 10, "exclusiveMaximum": true},
            "floatMax": {"type": "number", "maximum": 1.5},
            "enum": {"type": "string", "enum": ["a", "b"]},
            "int": {"type": "integer"},
            "list": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
            "fewList": {"type": "array", "minItems": 1, "items": {"type": "string"}},
            "uniq": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
            "short": {"type": "string", "maxLength": 3},
            "long": {"type": "string", "minLength": 1},
            "pat": {"type": "string", "pattern": "^[a-z]+$"},
            "when": {"type": "string", "format": "date-time"},
            "obj": {"type": "object", "properties": {"x": {"type": "string"}}},
        }));
        let cases: Vec<(Value, Cause)> = vec![
            (
                json!({"min": 0}),
                cause(
                    "FieldValueInvalid",
                    "spec.min",
                    "Invalid value: 0: spec.min in body should be greater than or equal to 1",
                ),
            ),
            (
                json!({"exclMax": 10}),
                cause(
                    "FieldValueInvalid",
                    "spec.exclMax",
                    "Invalid value: 10: spec.exclMax in body should be less than 10",
                ),
            ),
            (
                json!({"floatMax": 2.25}),
                cause(
                    "FieldValueInvalid",
                    "spec.floatMax",
                    "Invalid value: 2.25: spec.floatMax in body should be less than or equal to 1.5",
                ),
            ),
            (
                json!({"enum": "foo"}),
                cause(
                    "FieldValueNotSupported",
                    "spec.enum",
                    r#"Unsupported value: "foo": supported values: "a", "b""#,
                ),
            ),
            (
                json!({"int": "string"}),
                cause(
                    "FieldValueTypeInvalid",
                    "spec.int",
                    r#"Invalid value: "string": spec.int in body must be of type integer: "string""#,
                ),
            ),
            (
                json!({"int": "3"}),
                cause(
                    "FieldValueTypeInvalid",
                    "spec.int",
                    r#"Invalid value: "string": spec.int in body must be of type integer: "string""#,
                ),
            ),
            (
                json!({"int": 2.5}),
                cause(
                    "FieldValueTypeInvalid",
                    "spec.int",
                    r#"Invalid value: "number": spec.int in body must be of type integer: "number""#,
                ),
            ),
            (
                json!({"list": ["a", "b", "c"]}),
                cause(
                    "FieldValueTooMany",
                    "spec.list",
                    "Too many: 3: must have at most 2 items",
                ),
            ),
            (
                json!({"fewList": []}),
                cause(
                    "FieldValueInvalid",
                    "spec.fewList",
                    "Invalid value: 0: spec.fewList in body should have at least 1 items",
                ),
            ),
            (
                json!({"uniq": ["a", "a"]}),
                cause(
                    "FieldValueInvalid",
                    "spec.uniq",
                    r#"Invalid value: "": spec.uniq in body shouldn't contain duplicates"#,
                ),
            ),
            (
                json!({"short": "abcd"}),
                cause(
                    "FieldValueTooLong",
                    "spec.short",
                    "Too long: may not be more than 3 bytes",
                ),
            ),
            (
                json!({"long": ""}),
                cause(
                    "FieldValueInvalid",
                    "spec.long",
                    r#"Invalid value: "": spec.long in body should be at least 1 chars long"#,
                ),
            ),
            (
                json!({"pat": "Foo"}),
                cause(
                    "FieldValueInvalid",
                    "spec.pat",
                    r#"Invalid value: "Foo": spec.pat in body should match '^[a-z]+$'"#,
                ),
            ),
            (
                json!({"when": "yesterday"}),
                cause(
                    "FieldValueTypeInvalid",
                    "spec.when",
                    r#"Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday""#,
                ),
            ),
            (
                json!({"obj": "x"}),
                cause(
                    "FieldValueTypeInvalid",
                    "spec.obj",
                    r#"Invalid value: "string": spec.obj in body must be of type object: "string""#,
                ),
            ),
            (
                json!({"list": "a"}),
                cause(
                    "FieldValueTypeInvalid",
                    "spec.list",
                    r#"Invalid value: "string": spec.list in body must be of type array: "string""#,
                ),
            ),
        ];
        for (spec, expected) in cases {
            assert_eq!(
                rejected(&schema, spec.clone()),
                vec![expected],
                "for {spec}"
            );
        }
        admitted(
            &schema,
            json!({"when": "2024-05-01T10:00:00Z", "int": 3.0, "min": 1, "floatMax": 1.5}),
        );
    }

    #[test]
    fn required_fields_and_nested_paths() {
        let schema = json!({
            "type": "object",
            "required": ["spec"],
            "properties": {"spec": {
                "type": "object",
                "properties": {"items": {"type": "array", "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {"name": {"type": "string"}, "weight": {"type": "integer", "minimum": 1}},
                }}},
            }},
        });
        let obj = json!({"apiVersion": "v", "kind": "K", "metadata": {}});
        assert_eq!(
            admit(&schema, obj, None).unwrap_err(),
            vec![cause("FieldValueRequired", "spec", "Required value")]
        );
        let causes = rejected(&schema, json!({"items": [{"name": "a"}, {"weight": 0}]}));
        assert_eq!(
            causes,
            vec![
                cause(
                    "FieldValueInvalid",
                    "spec.items[1].weight",
                    "Invalid value: 0: spec.items[1].weight in body should be greater than or equal to 1"
                ),
                cause("FieldValueRequired", "spec.items[1].name", "Required value"),
            ]
        );
    }

    #[test]
    fn nullable_and_nulls() {
        let schema = spec_of(json!({
            "n": {"type": "string", "nullable": true},
            "s": {"type": "string"},
            "d": {"type": "string", "default": "x"},
            "l": {"type": "array", "items": {"type": "string"}},
        }));
        // nullable nulls are kept; non-nullable nulls without a default are pruned; with a default
        // they are defaulted.
        assert_eq!(
            admitted(&schema, json!({"n": null, "s": null, "d": null})),
            json!({"n": null, "d": "x"})
        );
        // A null list item is not pruned and fails the type check.
        assert_eq!(
            rejected(&schema, json!({"l": ["a", null]})),
            vec![cause(
                "FieldValueTypeInvalid",
                "spec.l[1]",
                r#"Invalid value: "null": spec.l[1] in body must be of type string: "null""#
            )]
        );
    }

    #[test]
    fn int_or_string() {
        let schema = spec_of(
            json!({"port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}}),
        );
        admitted(&schema, json!({"port": 80}));
        admitted(&schema, json!({"port": "http"}));
        let causes = rejected(&schema, json!({"port": true}));
        assert_eq!(
            causes[0],
            cause(
                "FieldValueTypeInvalid",
                "spec.port",
                r#"Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean""#
            )
        );
    }

    #[test]
    fn any_of_and_properties_limits() {
        let schema = spec_of(json!({
            "v": {"type": "integer", "anyOf": [{"minimum": 10}, {"maximum": 2}]},
            "m": {"type": "object", "minProperties": 1, "maxProperties": 2, "additionalProperties": {"type": "string", "maxLength": 2}},
        }));
        assert_eq!(
            rejected(&schema, json!({"v": 5})),
            vec![
                cause(
                    "FieldValueInvalid",
                    "<nil>",
                    r#"Invalid value: "": "spec.v" must validate at least one schema (anyOf)"#
                ),
                cause(
                    "FieldValueInvalid",
                    "spec.v",
                    "Invalid value: 5: spec.v in body should be greater than or equal to 10"
                ),
            ]
        );
        assert_eq!(
            rejected(&schema, json!({"m": {}})),
            vec![cause(
                "FieldValueInvalid",
                "spec.m",
                "Invalid value: 0: spec.m in body should have at least 1 properties"
            )]
        );
        assert_eq!(
            rejected(&schema, json!({"m": {"a": "1", "b": "2", "c": "3"}})),
            vec![cause(
                "FieldValueTooMany",
                "spec.m",
                "Too many: 3: must have at most 2 items"
            )]
        );
        // kube-openapi names map values with a dot.
        assert_eq!(
            rejected(&schema, json!({"m": {"key": "long"}})),
            vec![cause(
                "FieldValueTooLong",
                "spec.m.key",
                "Too long: may not be more than 2 bytes"
            )]
        );
    }

    #[test]
    fn list_type_set_and_map() {
        let schema = spec_of(json!({
            "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "map": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}}},
        }));
        assert_eq!(
            rejected(&schema, json!({"set": ["a", "b", "a", "a"]})),
            vec![cause(
                "FieldValueDuplicate",
                "spec.set[2]",
                r#"Duplicate value: "a""#
            )]
        );
        assert_eq!(
            rejected(
                &schema,
                json!({"map": [{"name": "x", "v": 1}, {"name": "x", "v": 2}]})
            ),
            vec![cause(
                "FieldValueDuplicate",
                "spec.map[1]",
                r#"Duplicate value: map[string]interface {}{"name":"x"}"#
            )]
        );
    }

    // ---------------------------------------------------------------------------------------------
    // Pruning and defaulting

    #[test]
    fn pruning_keeps_declared_preserved_and_meta_fields() {
        let schema = json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {
                    "known": {"type": "string"},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "embedded": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}},
                    "list": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
                    "labels": {"type": "object", "additionalProperties": {"type": "object", "properties": {"v": {"type": "string"}}}},
                }},
            },
        });
        let obj = json!({
            "apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t", "labels": {"a": "b"}},
            "top": 1,
            "spec": {
                "known": "k", "unknown": 1,
                "free": {"anything": {"goes": [1, 2]}},
                "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}, "extra": true},
                "list": [{"a": "x", "b": "y"}],
                "labels": {"one": {"v": "1", "w": "2"}},
            },
        });
        assert_eq!(
            unknown_fields(&schema, &obj),
            vec![
                "spec.embedded.extra",
                "spec.labels.one.w",
                "spec.list[0].b",
                "spec.unknown",
                "top"
            ]
        );
        let stored = admit(&schema, obj, None).expect("admitted");
        assert_eq!(
            stored,
            json!({
                "apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t", "labels": {"a": "b"}},
                "spec": {
                    "known": "k",
                    "free": {"anything": {"goes": [1, 2]}},
                    "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}},
                    "list": [{"a": "x"}],
                    "labels": {"one": {"v": "1"}},
                },
            })
        );
    }

    #[test]
    fn defaulting_after_pruning_including_items_and_map_values() {
        let schema = spec_of(json!({
            "replicas": {"type": "integer", "default": 1},
            "strategy": {"type": "object", "default": {"type": "Rolling"}, "properties": {
                "type": {"type": "string"}, "maxSurge": {"type": "integer", "default": 25},
            }},
            "ports": {"type": "array", "items": {"type": "object", "properties": {
                "port": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"},
            }}},
            "byName": {"type": "object", "additionalProperties": {"type": "object", "properties": {
                "enabled": {"type": "boolean", "default": true},
            }}},
            "opt": {"type": "string", "nullable": true, "default": "d"},
        }));
        let spec = admitted(
            &schema,
            json!({"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}], "byName": {"a": {}}, "opt": null}),
        );
        assert_eq!(
            spec,
            json!({
                "replicas": 1,
                "strategy": {"type": "Rolling", "maxSurge": 25},
                "ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}],
                "byName": {"a": {"enabled": true}},
                "opt": null,
            })
        );
    }

    // ---------------------------------------------------------------------------------------------
    // CEL

    #[test]
    fn cel_messages_paths_and_reasons() {
        let schema = spec_of(json!({
            "a": {"type": "object", "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}},
                  "x-kubernetes-validations": [
                      {"rule": "self.min <= self.max", "message": "min must not exceed max", "fieldPath": ".max"},
                      {"rule": "self.min >= 0", "messageExpression": "'min is ' + string(self.min)"},
                      {"rule": "self.max < 100"},
                  ]},
            "b": {"type": "object", "properties": {"k": {"type": "string"}}, "x-kubernetes-validations": [
                {"rule": "has(self.k)", "message": "k is needed", "reason": "FieldValueRequired", "fieldPath": ".k"},
                {"rule": "!has(self.k) || self.k != 'x'", "message": "x is forbidden", "reason": "FieldValueForbidden"},
            ]},
            "m": {"type": "object", "additionalProperties": {"type": "integer", "x-kubernetes-validations": [
                {"rule": "self > 0", "message": "must be positive"},
            ]}},
            "l": {"type": "array", "items": {"type": "string"}, "x-kubernetes-validations": [
                {"rule": "self.all(x, self.exists_one(y, x == y))", "message": "dup", "reason": "FieldValueDuplicate"},
            ]},
        }));
        let causes = rejected(
            &schema,
            json!({"a": {"min": -5, "max": 200}, "b": {}, "m": {"k": 0}, "l": ["p", "p"]}),
        );
        let expected = vec![
            cause(
                "FieldValueInvalid",
                "spec.a",
                r#"Invalid value: "object": min is -5"#,
            ),
            cause(
                "FieldValueInvalid",
                "spec.a",
                r#"Invalid value: "object": failed rule: self.max < 100"#,
            ),
            cause(
                "FieldValueRequired",
                "spec.b.k",
                "Required value: k is needed",
            ),
            cause(
                "FieldValueDuplicate",
                "spec.l",
                r#"Duplicate value: "array""#,
            ),
            cause(
                "FieldValueInvalid",
                "spec.m[k]",
                r#"Invalid value: "integer": must be positive"#,
            ),
        ];
        assert_eq!(causes, expected);
        let causes = rejected(&schema, json!({"a": {"min": 5, "max": 3}, "b": {"k": "x"}}));
        assert_eq!(
            causes,
            vec![
                cause(
                    "FieldValueInvalid",
                    "spec.a.max",
                    r#"Invalid value: "object": min must not exceed max"#
                ),
                cause("FieldValueForbidden", "spec.b", "Forbidden: x is forbidden"),
            ]
        );
    }

    #[test]
    fn cel_is_skipped_after_a_blocking_schema_error() {
        let schema = spec_of(json!({
            "n": {"type": "integer"},
            "m": {"type": "integer", "minimum": 0},
            "o": {"type": "object", "properties": {"x": {"type": "integer"}}, "x-kubernetes-validations": [{"rule": "self.x > 0", "message": "positive"}]},
        }));
        // A type error blocks CEL.
        assert_eq!(
            rejected(&schema, json!({"n": "one", "o": {"x": 0}})),
            vec![
                cause(
                    "FieldValueTypeInvalid",
                    "spec.n",
                    r#"Invalid value: "string": spec.n in body must be of type integer: "string""#
                ),
                cause(
                    "FieldValueInvalid",
                    "<nil>",
                    r#"Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"#
                ),
            ]
        );
        // A bound error does not.
        assert_eq!(
            rejected(&schema, json!({"m": -1, "o": {"x": 0}})),
            vec![
                cause(
                    "FieldValueInvalid",
                    "spec.m",
                    "Invalid value: -1: spec.m in body should be greater than or equal to 0"
                ),
                cause(
                    "FieldValueInvalid",
                    "spec.o",
                    r#"Invalid value: "object": positive"#
                ),
            ]
        );
    }

    #[test]
    fn cel_transition_rules_need_the_old_object() {
        let schema = spec_of(json!({
            "id": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "id is immutable"}]},
        }));
        let created = admit(&schema, resource(json!({"id": "a"})), None)
            .expect("create ignores transition rules");
        assert!(admit(&schema, resource(json!({"id": "a"})), Some(&created)).is_ok());
        assert_eq!(
            admit(&schema, resource(json!({"id": "b"})), Some(&created)).unwrap_err(),
            vec![cause(
                "FieldValueInvalid",
                "spec.id",
                r#"Invalid value: "string": id is immutable"#
            )]
        );
    }

    // ---------------------------------------------------------------------------------------------
    // berth's SchedulerProfile CRD and the profile corpus

    fn repo_root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    fn profile_schema() -> Value {
        let text =
            std::fs::read_to_string(repo_root().join("crds/schedulerprofiles.berth.dev.yaml"))
                .expect("CRD file");
        let crd: Value = serde_saphyr::from_str(&text).expect("CRD YAML");
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone()
    }

    fn profile(spec: Value) -> Value {
        json!({"apiVersion": "berth.dev/v1alpha1", "kind": "SchedulerProfile", "metadata": {"name": "p"}, "spec": spec})
    }

    #[test]
    fn scheduler_profile_schema_wording_and_defaults() {
        let schema = profile_schema();
        let causes = admit(
            &schema,
            profile(
                json!({"plugins": {"score": {"enabled": [{"name": "TaintToleration", "weight": 0}]}}}),
            ),
            None,
        )
        .unwrap_err();
        assert_eq!(
            causes,
            vec![cause(
                "FieldValueInvalid",
                "spec.plugins.score.enabled[0].weight",
                "Invalid value: 0: spec.plugins.score.enabled[0].weight in body should be greater than or equal to 1"
            )]
        );
        let stored = admit(
            &schema,
            profile(json!({"pluginConfig": {"nodeResourcesFit": {}}})),
            None,
        )
        .expect("admitted");
        assert_eq!(
            stored["spec"]["pluginConfig"]["nodeResourcesFit"],
            json!({
                "ignoredResourceGroups": [],
                "ignoredResources": [],
                "scoringStrategy": {
                    "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
                    "type": "LeastAllocated",
                },
            })
        );
        let causes = admit(&schema, profile(json!({"plugins": {"queueSort": {"enabled": [{"name": "PrioritySort"}, {"name": "PrioritySort"}]}}})), None)
            .unwrap_err();
        assert!(
            causes.contains(&cause(
                "FieldValueInvalid",
                "spec.plugins.queueSort.enabled",
                r#"Invalid value: "object": only one queue sort plugin can be enabled"#
            )),
            "{causes:?}"
        );
    }

    struct CorpusCase {
        name: String,
        doc: Value,
        expected_paths: Vec<String>,
        accepts: bool,
        allow_other: bool,
    }

    fn corpus(dir: &str) -> Vec<CorpusCase> {
        let mut files: Vec<PathBuf> =
            std::fs::read_dir(repo_root().join("tests/profiles").join(dir))
                .expect("corpus dir")
                .map(|e| e.expect("entry").path())
                .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
                .collect();
        files.sort();
        files
            .into_iter()
            .map(|file| {
                let text = std::fs::read_to_string(&file).expect("corpus file");
                let mut case = CorpusCase {
                    name: file
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    doc: serde_saphyr::from_str(&text).expect("corpus YAML"),
                    expected_paths: Vec::new(),
                    accepts: false,
                    allow_other: false,
                };
                for line in text.lines().take_while(|l| l.starts_with('#')) {
                    let line = line.trim_start_matches('#').trim();
                    if let Some(p) = line.strip_prefix("expect-path:") {
                        case.expected_paths.push(p.trim().to_string());
                    } else if line == "api-server: accepts" {
                        case.accepts = true;
                    } else if line == "allow-other-errors" {
                        case.allow_other = true;
                    }
                }
                case
            })
            .collect()
    }

    /// The paths the server names for a profile sent with `fieldValidation=Warn`: the 422 causes
    /// of `admit` plus the unknown fields it warns about. (With `Strict`, kubectl's default, a
    /// request with unknown fields fails earlier, as a 400 `strict decoding error` naming only
    /// them.)
    fn rejection_paths(schema: &Value, doc: &Value) -> Result<Value, Vec<String>> {
        let unknown = unknown_fields(schema, doc);
        match admit(schema, doc.clone(), None) {
            Ok(stored) if unknown.is_empty() => Ok(stored),
            Ok(_) => Err(unknown),
            Err(causes) => Err(causes.into_iter().map(|c| c.field).chain(unknown).collect()),
        }
    }

    #[test]
    fn invalid_profile_corpus_is_rejected_at_the_expected_paths() {
        let schema = profile_schema();
        let mut problems = Vec::new();
        let cases = corpus("invalid");
        assert!(cases.len() > 50, "corpus found");
        for case in cases {
            let result = rejection_paths(&schema, &case.doc);
            match (case.accepts, result) {
                (true, Ok(_)) => {}
                (true, Err(paths)) => problems.push(format!(
                    "{}: marked api-server: accepts, rejected at {paths:?}",
                    case.name
                )),
                (false, Ok(_)) => problems.push(format!(
                    "{}: admitted, expected rejection at {:?}",
                    case.name, case.expected_paths
                )),
                (false, Err(paths)) => {
                    for expected in &case.expected_paths {
                        if !paths.contains(expected) {
                            problems.push(format!(
                                "{}: no error at {expected} (got {paths:?})",
                                case.name
                            ));
                        }
                    }
                    if !case.allow_other {
                        for path in &paths {
                            if path != "<nil>" && !case.expected_paths.contains(path) {
                                problems.push(format!("{}: unexpected error at {path}", case.name));
                            }
                        }
                    }
                }
            }
        }
        // plugins-as-list.yaml: besides the 422 type error at spec.plugins the server
        // reports `unknown field "spec.plugins[0].name"` (pruning with no schema for the
        // list's items); the file says `allow-other-errors`, as the real kube-apiserver
        // does the same (tests/operator_e2e/validation.rs replays the corpus against it).
        assert!(
            problems.is_empty(),
            "corpus mismatches:\n{}",
            problems.join("\n")
        );
    }

    #[test]
    fn valid_profile_corpus_is_admitted() {
        let schema = profile_schema();
        let cases = corpus("valid");
        assert!(!cases.is_empty());
        for case in cases {
            if let Err(paths) = rejection_paths(&schema, &case.doc) {
                panic!(
                    "{} rejected at {paths:?}: {:?}",
                    case.name,
                    admit(&schema, case.doc.clone(), None).err()
                );
            }
        }
    }
}
