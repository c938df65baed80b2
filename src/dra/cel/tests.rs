//! Upstream's selector table (dynamic-resource-allocation/cel `compile_test.go`,
//! Kubernetes 1.37), as the allocator's stored-expression environment evaluates it: each
//! row's expression against its device, expecting its result or an error containing
//! its text.
//!
//! Not carried, and why:
//! - `type-error` (`1` must be rejected at compile time): there is no type checker; the
//!   expression fails when evaluated, with the non-bool result error
//!   (`a_non_bool_result_is_an_error` checks that).
//! - `macro-compilation-error-new-expressions`, `includes-function-compilation-error`,
//!   `allow_multiple_allocations_disabled`: they expect the API server's validation
//!   environment with list attributes or consumable capacity off; the allocator
//!   evaluates in the stored-expression environment, where all three compile.
//! - The expected cost estimates (`expectCost`) of every row: there is no static cost
//!   estimate; the runtime limit is checked by `expensive`.
//! - `TestInterrupt` (an evaluation stopped by a cancelled context): an evaluation is
//!   bounded by the cost limit; the allocator checks its deadline between devices.

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::{Device, DeviceAttribute, DeviceCapacity};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::{SelectorError, Selectors};

const DRIVER: &str = "dra.example.com";

enum Expect {
    Match(bool),
    CompileError(&'static str),
    MatchError(&'static str),
}

struct Row {
    name: &'static str,
    expression: String,
    driver: &'static str,
    allow_multiple: Option<bool>,
    attributes: Vec<(String, DeviceAttribute)>,
    capacity: Vec<(&'static str, &'static str)>,
    expect: Expect,
}

fn row(name: &'static str, expression: &str, expect: Expect) -> Row {
    Row {
        name,
        expression: expression.to_string(),
        driver: DRIVER,
        allow_multiple: None,
        attributes: Vec::new(),
        capacity: Vec::new(),
        expect,
    }
}

impl Row {
    fn without_driver(mut self) -> Row {
        self.driver = "";
        self
    }

    fn attribute(mut self, name: &str, value: DeviceAttribute) -> Row {
        self.attributes.push((name.to_string(), value));
        self
    }

    fn capacity(mut self, name: &'static str, value: &'static str) -> Row {
        self.capacity.push((name, value));
        self
    }

    fn allow_multiple(mut self, value: Option<bool>) -> Row {
        self.allow_multiple = value;
        self
    }

    fn device(&self) -> Device {
        let attributes: BTreeMap<String, DeviceAttribute> =
            self.attributes.iter().cloned().collect();
        let capacity: BTreeMap<String, DeviceCapacity> = self
            .capacity
            .iter()
            .map(|(name, value)| {
                (
                    name.to_string(),
                    DeviceCapacity {
                        value: Quantity(value.to_string()),
                        request_policy: None,
                    },
                )
            })
            .collect();
        Device {
            name: "device".into(),
            attributes: (!attributes.is_empty()).then_some(attributes),
            capacity: (!capacity.is_empty()).then_some(capacity),
            allow_multiple_allocations: self.allow_multiple,
            ..Device::default()
        }
    }
}

fn boolean(b: bool) -> DeviceAttribute {
    DeviceAttribute {
        bool: Some(b),
        ..DeviceAttribute::default()
    }
}

fn int(i: i64) -> DeviceAttribute {
    DeviceAttribute {
        int: Some(i),
        ..DeviceAttribute::default()
    }
}

fn text(s: &str) -> DeviceAttribute {
    DeviceAttribute {
        string: Some(s.into()),
        ..DeviceAttribute::default()
    }
}

fn version(s: &str) -> DeviceAttribute {
    DeviceAttribute {
        version: Some(s.into()),
        ..DeviceAttribute::default()
    }
}

fn bools(v: &[bool]) -> DeviceAttribute {
    DeviceAttribute {
        bools: Some(v.to_vec()),
        ..DeviceAttribute::default()
    }
}

fn ints(v: &[i64]) -> DeviceAttribute {
    DeviceAttribute {
        ints: Some(v.to_vec()),
        ..DeviceAttribute::default()
    }
}

fn strings(v: &[&str]) -> DeviceAttribute {
    DeviceAttribute {
        strings: Some(v.iter().map(|s| s.to_string()).collect()),
        ..DeviceAttribute::default()
    }
}

fn versions(v: &[&str]) -> DeviceAttribute {
    DeviceAttribute {
        versions: Some(v.iter().map(|s| s.to_string()).collect()),
        ..DeviceAttribute::default()
    }
}

const A: &str = r#"device.attributes["dra.example.com"]"#;

fn rows() -> Vec<Row> {
    use Expect::*;
    let a = |rest: &str| format!("{A}{rest}");
    let mut rows = vec![
        row("true", "true", Match(true)),
        row("false", "false", Match(false)),
        row("syntax-error", "?!", CompileError("Syntax error")),
        row(
            "runtime-error-lookup-identifier",
            r#"device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))"#,
            MatchError("no such key: noSuchAttr"),
        )
        .without_driver(),
        row(
            "runtime-error-lookup-map",
            r#"device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))"#,
            MatchError("no such key: noSuchAttr"),
        )
        .without_driver(),
        row("domain-check-negative", r#""no-such-domain" in device.attributes"#, Match(false)).without_driver(),
        row("domain-check-positive", r#""dra.example.com" in device.attributes"#, Match(true))
            .without_driver()
            .attribute("dra.example.com/something", boolean(true)),
        row("empty-driver-name", r#"device.driver == """#, Match(true)).without_driver(),
        row("real-driver-name", r#"device.driver == "dra.example.com""#, Match(true)),
        row("driver-name-qualifier", &a(".name"), Match(true)).attribute("name", boolean(true)),
        row("driver-name-qualifier-map-lookup", &a(r#"["name"]"#), Match(true)).attribute("name", boolean(true)),
        row(
            "bind",
            r#"cel.bind(dra, device.attributes["dra.example.com"], dra.name)"#,
            Match(true),
        )
        .attribute("name", boolean(true)),
        row("qualified-attribute-name", r#"device.attributes["other.example.com"].name"#, Match(true))
            .attribute("other.example.com/name", boolean(true)),
        row("bool", &a(".name"), Match(true)).attribute("name", boolean(true)),
        row("int", &a(".name > 0"), Match(true)).attribute("name", int(1)),
        row("string", &a(r#".name == "fish""#), Match(true)).attribute("name", text("fish")),
        row(
            "macro-exists-on-int",
            &a(".name.exists(x, x > 0)"),
            MatchError("got 'types.Int', expected iterable type"),
        )
        .attribute("name", int(1)),
        row(
            "macro-exists-on-bool",
            &a(".name.exists(x, x == true)"),
            MatchError("got 'types.Bool', expected iterable type"),
        )
        .attribute("name", boolean(true)),
        row(
            "macro-exists-on-string",
            &a(r#".name.exists(x, x == "fish")"#),
            MatchError("got 'types.String', expected iterable type"),
        )
        .attribute("name", text("fish")),
        row(
            "list-result-type-causes-match-error",
            &a(".names"),
            MatchError("CEL result of type list could not be converted to bool"),
        )
        .attribute("names", strings(&["fish", "bird"])),
        row("includes-function-can-evaluate", &a(r#".name.includes("fish")"#), Match(true))
            .attribute("name", strings(&["fish", "bird"])),
        row("list-of-bool", &a(".names.size() == 2"), Match(true)).attribute("names", bools(&[true, false])),
        row("list-of-int", &a(".names.size() == 2"), Match(true)).attribute("names", ints(&[1, 2])),
        row("list-of-string", &a(".names.size() == 2"), Match(true))
            .attribute("names", strings(&["fish", "bird"])),
        row("list-of-semver", &a(".names.size() == 2"), Match(true))
            .attribute("names", versions(&["1.0.0", "2.0.0"])),
        row("macro-on-list-of-int", &a(".names.exists(x, x > 0)"), Match(true)).attribute("names", ints(&[1, 2])),
        row("macro-on-list-of-string", &a(r#".names.all(x, x != "")"#), Match(true))
            .attribute("names", strings(&["fish", "bird"])),
        row(
            "macro-on-list-of-semver",
            &a(r#".names.all(x, x.isGreaterThan(semver("0.0.1")))"#),
            Match(true),
        )
        .attribute("names", versions(&["1.0.0", "2.0.0"])),
        row(
            "includes-function-compilation-and-eval-success",
            &a(r#".attr.includes("fish")"#),
            Match(true),
        )
        .attribute("attr", text("fish")),
        row("includes-function-on-bool-scalar-positive", &a(".name.includes(true)"), Match(true))
            .attribute("name", boolean(true)),
        row("includes-function-on-bool-scalar-negative", &a(".name.includes(true)"), Match(false))
            .attribute("name", boolean(false)),
        row("includes-function-on-bool-list-positive", &a(".name.includes(true)"), Match(true))
            .attribute("name", bools(&[true, false])),
        row("includes-function-on-bool-list-negative", &a(".name.includes(false)"), Match(false))
            .attribute("name", bools(&[true, true])),
        row("includes-function-on-int-scalar-positive", &a(".name.includes(1)"), Match(true)).attribute("name", int(1)),
        row("includes-function-on-int-scalar-negative", &a(".name.includes(1)"), Match(false)).attribute("name", int(2)),
        row("includes-function-on-int-list-positive", &a(".name.includes(1)"), Match(true))
            .attribute("name", ints(&[1, 2])),
        row("includes-function-on-int-list-negative", &a(".name.includes(3)"), Match(false))
            .attribute("name", ints(&[1, 2])),
        row("includes-function-on-string-scalar-positive", &a(r#".name.includes("fish")"#), Match(true))
            .attribute("name", text("fish")),
        row("includes-function-on-string-scalar-negative", &a(r#".name.includes("bird")"#), Match(false))
            .attribute("name", text("fish")),
        row("includes-function-on-string-list-positive", &a(r#".name.includes("fish")"#), Match(true))
            .attribute("name", strings(&["fish", "bird"])),
        row("includes-function-on-string-list-negative", &a(r#".name.includes("cat")"#), Match(false))
            .attribute("name", strings(&["fish", "bird"])),
        row(
            "includes-function-on-semver-scalar-positive",
            &a(r#".name.includes(semver("1.0.0"))"#),
            Match(true),
        )
        .attribute("name", version("1.0.0")),
        row(
            "includes-function-on-semver-scalar-negative",
            &a(r#".name.includes(semver("2.0.0"))"#),
            Match(false),
        )
        .attribute("name", version("1.0.0")),
        row(
            "includes-function-on-semver-list-positive",
            &a(r#".name.includes(semver("1.0.0"))"#),
            Match(true),
        )
        .attribute("name", versions(&["1.0.0", "2.0.0"])),
        row(
            "includes-function-on-semver-list-negative",
            &a(r#".name.includes(semver("3.0.0"))"#),
            Match(false),
        )
        .attribute("name", versions(&["1.0.0", "2.0.0"])),
        row("in-operator-on-list", &format!("1 in {A}.names"), Match(true)).attribute("names", ints(&[1, 2, 3])),
        row("version", &a(r#".name.isGreaterThan(semver("0.0.1"))"#), Match(true)).attribute("name", version("1.0.0")),
        row(
            "version_v",
            &a(r#".name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)"#),
            Match(true),
        )
        .attribute("name", version("1.0.0")),
        row(
            "macro-exists-on-version",
            &a(r#".name.exists(x, x.isGreaterThan(semver("0.0.1")))"#),
            MatchError("got 'cel.Semver', expected iterable type"),
        )
        .attribute("name", version("1.0.0")),
        row(
            "quantity",
            r#"device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#,
            Match(true),
        )
        .capacity("name", "1Mi"),
        row(
            "check-positive",
            r#""name" in device.capacity["dra.example.com"] && device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#,
            Match(true),
        )
        .capacity("name", "1Mi"),
        row(
            "check-negative",
            r#"!("name" in device.capacity["dra.example.com"]) || device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#,
            Match(true),
        )
        .without_driver(),
        row(
            "all",
            r#"
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
"#,
            Match(true),
        )
        .attribute("bool", boolean(true))
        .attribute("int", int(1))
        .attribute("string", text("fish"))
        .attribute("version", version("1.0.0"))
        .capacity("quantity", "1Mi"),
        row("many", &format!("{A}.a && {A}.b && {A}.c"), Match(true))
            .attribute("a", boolean(true))
            .attribute("b", boolean(true))
            .attribute("c", boolean(true)),
        row(
            "check_attribute_domains",
            r#"device.attributes.exists_one(x, x == "dra.example.com")"#,
            Match(true),
        )
        .attribute("services", text("some_example_value")),
        row("check_attribute_ids", &a(r#".exists_one(x, x == "services")"#), Match(true))
            .attribute("services", text("some_example_value")),
        row("split_attribute", &a(r#".services.split("example").size() >= 2"#), Match(true))
            .attribute("services", text("some_example_value")),
        row("regexp_attribute", &a(r#".services.matches("[^a]?sym")"#), Match(true))
            .attribute("services", text("asymetric")),
        row(
            "check_capacity_domains",
            r#"device.capacity.exists_one(x, x == "dra.example.com")"#,
            Match(true),
        )
        .capacity("memory", "1Mi"),
        row(
            "check_capacity_ids",
            r#"device.capacity["dra.example.com"].exists_one(x, x == "memory")"#,
            Match(true),
        )
        .capacity("memory", "1Mi"),
        row("allow_multiple_allocations", "device.allowMultipleAllocations == true", Match(true))
            .allow_multiple(Some(true)),
        row("allow_multiple_allocations_default", "device.allowMultipleAllocations == false", Match(true)),
        row("allow_multiple_allocations_false", "device.allowMultipleAllocations == false", Match(true))
            .allow_multiple(Some(false)),
        row("allow_multiple_allocations_new", "device.allowMultipleAllocations == false", Match(true))
            .allow_multiple(Some(false)),
        row(
            "allow_multiple_allocations_enabled",
            "device.allowMultipleAllocations == false",
            Match(true),
        )
        .allow_multiple(Some(false)),
    ];
    // Upstream's `includes-function-on-very-long-list-positive`: 48 values, value-0 to
    // value-47, and the one asked for is value-48.
    let values: Vec<String> = (0..48).map(|i| format!("value-{i}")).collect();
    let refs: Vec<&str> = values.iter().map(String::as_str).collect();
    rows.push(
        row(
            "includes-function-on-very-long-list-positive",
            &a(r#".name.includes("value-48")"#),
            Match(false),
        )
        .attribute("name", strings(&refs)),
    );
    // Upstream's `expensive`: 32 long attributes and seven nested loops over ten numbers.
    let ten = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]";
    let mut expensive = "int('1'.find('[0-9]*')) < 100".to_string();
    for var in ["z5", "z4", "z3", "z2", "z", "y", "x"] {
        expensive = format!("{ten}.all({var}, {expensive})");
    }
    let mut row_expensive = row(
        "expensive",
        &expensive,
        MatchError("actual cost limit exceeded"),
    );
    for i in 0..32 {
        let suffix = format!("-{i}");
        let name = format!("dra.example.com/{}{suffix}", "x".repeat(64 - suffix.len()));
        row_expensive = row_expensive.attribute(&name, text("abc"));
    }
    rows.push(row_expensive);
    rows
}

#[test]
fn upstream_selector_rows_evaluate_as_upstream() {
    let selectors = Selectors::new();
    let mut failures = Vec::new();
    for row in rows() {
        let got = selectors.evaluate(&row.expression, row.driver, &row.device());
        let ok = match (&row.expect, &got) {
            (Expect::Match(want), Ok(got)) => want == got,
            (Expect::CompileError(want), Err(SelectorError::Compile(e))) => e.contains(want),
            (Expect::MatchError(want), Err(SelectorError::Runtime(e))) => e.contains(want),
            _ => false,
        };
        if !ok {
            failures.push(format!("{}: got {got:?}", row.name));
        }
    }
    assert!(
        failures.is_empty(),
        "rows that differ:\n{}",
        failures.join("\n")
    );
}

#[test]
fn a_non_bool_result_is_an_error() {
    // Upstream's text up to the conversion detail, which comes from the interpreter
    // (cel-go's words differ per type; the module docs say so).
    let selectors = Selectors::new();
    let got = selectors.evaluate("1", DRIVER, &Device::default());
    match got {
        Err(SelectorError::Runtime(e)) => assert!(
            e.starts_with("CEL result of type int could not be converted to bool: "),
            "{e}"
        ),
        other => panic!("expected a runtime error, got {other:?}"),
    }
}

/// Upstream errors_test.go: a missing key gets the hint, once.
#[test]
fn a_missing_key_carries_upstreams_hint() {
    let selectors = Selectors::new();
    let got = selectors.evaluate(
        r#"device.attributes["dra.example.com"].sharingStrategy == "x""#,
        DRIVER,
        &Device {
            name: "d".into(),
            attributes: Some([("other".to_string(), boolean(true))].into()),
            ..Device::default()
        },
    );
    assert_eq!(
        got,
        Err(SelectorError::Runtime(
            "no such key: sharingStrategy. consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() for optional fields".into()
        ))
    );
}

#[test]
fn optional_chaining_on_a_missing_key_gives_the_default() {
    let selectors = Selectors::new();
    let device = Device {
        name: "d".into(),
        attributes: Some([("int".to_string(), int(3))].into()),
        ..Device::default()
    };
    for (expression, want) in [
        (format!("{A}.?missing.orValue(42) == 42"), true),
        (format!("{A}.?int.orValue(42) == 3"), true),
        (format!("{A}[?\"missing\"].hasValue()"), false),
    ] {
        assert_eq!(
            selectors.evaluate(&expression, DRIVER, &device),
            Ok(want),
            "{expression}"
        );
    }
}

#[test]
fn quantities_and_versions_compare_as_upstreams_library() {
    let selectors = Selectors::new();
    let device = Device::default();
    for (expression, want) in [
        ("quantity('200M') == quantity('0.2G')", true),
        ("quantity('1Mi').compareTo(quantity('1Ki')) == 1", true),
        (
            "quantity('50k').add(20).sub(quantity('100k')).sub(-50000).asInteger() == 20",
            true,
        ),
        ("sign(quantity('-1')) == -1", true),
        ("quantity('1.5').isInteger()", false),
        ("isQuantity('10Mo')", false),
        ("semver('1.0.0+a') == semver('1.0.0+b')", true),
        ("semver('1.0.0-alpha').isLessThan(semver('1.0.0'))", true),
        (
            "semver('1.0.0-alpha.2').isLessThan(semver('1.0.0-alpha.10'))",
            true,
        ),
        ("semver('v1.2', true).minor() == 2", true),
        ("isSemver('v1.0.0')", false),
    ] {
        assert_eq!(
            selectors.evaluate(expression, DRIVER, &device),
            Ok(want),
            "{expression}"
        );
    }
}

/// The differences from cel-go the module docs list, pinned so that a change of the
/// interpreter that removes one shows up here (and the docs get updated).
#[test]
fn the_documented_differences_from_cel_go_hold() {
    let selectors = Selectors::new();
    let device = Device {
        name: "d".into(),
        attributes: Some(
            [
                ("int".to_string(), int(1)),
                ("name".to_string(), text("fish")),
            ]
            .into(),
        ),
        ..Device::default()
    };
    // Numbers of different types are never equal (cel-go: true).
    assert_eq!(selectors.evaluate("1 == 1.0", DRIVER, &device), Ok(false));
    // An ill-typed expression fails only when evaluated (cel-go: at compile time).
    assert!(matches!(
        selectors.evaluate(r#"1 + "x" == 2"#, DRIVER, &device),
        Err(SelectorError::Runtime(_))
    ));
    // An error inside `exists` ends the evaluation (cel-go: another element may decide).
    assert!(matches!(
        selectors.evaluate(
            &format!(r#"[{A}.name, {A}.int].exists(x, x > 0)"#),
            DRIVER,
            &device
        ),
        Err(SelectorError::Runtime(_))
    ));
}
