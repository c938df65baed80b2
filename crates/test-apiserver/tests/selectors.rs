//! Label and field selectors. Valid/invalid strings come from upstream's
//! `labels/selector_test.go` (`TestSelectorParse`) and `fields/selector_test.go`; error
//! messages from `labels/selector.go`, `fields/selector.go`, `util/validation` and the
//! field label conversion functions (`pkg/apis/core/v1/conversion.go`), and from real
//! `kubectl` output where quoted.

use serde_json::{Value, json};
use test_apiserver::selectors::{FieldSelector, LabelSelector};

const NAME_PART_REGEX_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

fn labeled(labels: Value) -> Value {
    json!({"metadata": {"name": "x", "labels": labels}})
}

#[test]
fn label_selector_good_strings_parse() {
    // TestSelectorParse testGoodStrings
    for text in [
        "x=a,y=b,z=c",
        "",
        "x!=a,y=b",
        "x=",
        "x= ",
        "x=,z= ",
        "x= ,z= ",
        "!x",
        "x>1",
        "x>1,z<5",
        "x in (a)",
        "x in (a,b)",
        "x notin (a,,b)",
        "x in ()",
        "  x  in  ( a , b )  ,  !y  ",
        "x==a",
        "example.com/x=a",
        "in in (in)",
    ] {
        assert!(
            LabelSelector::parse(text).is_ok(),
            "{text:?}: {:?}",
            LabelSelector::parse(text)
        );
    }
}

#[test]
fn label_selector_bad_strings_and_messages() {
    let cases = [
        // TestSelectorParse testBadStrings
        (
            "x=a||y=b",
            "unable to parse requirement: values[0][x]: Invalid value: \"a||y\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".to_string(),
        ),
        ("x==a==b", "found '==', expected: ',' or 'end of string'".to_string()),
        ("!x=a", "found '=', expected: ',' or 'end of string'".to_string()),
        (
            "x<a",
            "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer".to_string(),
        ),
        // Parser branches.
        ("x,", "found '', expected: identifier after ','".to_string()),
        (",x", "found ',', expected: !, identifier, or 'end of string'".to_string()),
        ("x y", "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt".to_string()),
        ("x in a", "unable to parse requirement: found 'a' expected: '('".to_string()),
        ("x in (a", "unable to parse requirement: found '', expected: ',' or ')'".to_string()),
        ("x in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier".to_string()),
        ("x=(", "unable to parse requirement: found '(', expected: identifier".to_string()),
        ("!", "unable to parse requirement: found '', expected: identifier".to_string()),
        // Real kubectl output: `kubectl get pods -l "app:monolith"`.
        (
            "app:monolith",
            format!("unable to parse requirement: <nil>: Invalid value: \"app:monolith\": {NAME_PART_REGEX_MSG}"),
        ),
        // apiserver request-info test: key with two slashes.
        (
            "a/b/c ?=? def",
            "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".to_string(),
        ),
        // Real kubectl output: an underscore in the prefix.
        (
            "app.kubernetes_io/name=vault",
            "unable to parse requirement: <nil>: Invalid value: \"app.kubernetes_io/name\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_string(),
        ),
        (
            "a/=b",
            format!("unable to parse requirement: <nil>: Invalid value: \"a/\": name part must be non-empty; {NAME_PART_REGEX_MSG}"),
        ),
        (
            &format!("x={}", "z".repeat(64)),
            format!("unable to parse requirement: values[0][x]: Invalid value: \"{}\": must be no more than 63 characters", "z".repeat(64)),
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(
            LabelSelector::parse(text).unwrap_err(),
            expected,
            "{text:?}"
        );
    }
}

#[test]
fn label_selector_matching() {
    let obj = labeled(json!({"app": "web", "tier": "front", "n": "5"}));
    let unlabeled = json!({"metadata": {"name": "y"}});
    let cases: &[(&str, bool, bool)] = &[
        // (selector, matches obj, matches unlabeled)
        ("", true, true),
        ("app=web", true, false),
        ("app==web", true, false),
        ("app!=web", false, true),
        ("app!=db", true, true),
        ("app in (web,db)", true, false),
        ("app notin (web)", false, true),
        ("app notin (db)", true, true),
        ("app", true, false),
        ("!app", false, true),
        ("app=web,tier=front", true, false),
        ("app=web,tier=back", false, false),
        ("n>4", true, false),
        ("n<5", false, false),
        ("n>4,n<6", true, false),
        ("app=", false, false),
        ("missing=", false, false),
        ("missing in ()", false, false),
        ("missing notin ()", true, true),
    ];
    for (text, want_obj, want_unlabeled) in cases {
        let selector = LabelSelector::parse(text).unwrap();
        assert_eq!(selector.matches(&obj), *want_obj, "{text:?} on labeled");
        assert_eq!(
            selector.matches(&unlabeled),
            *want_unlabeled,
            "{text:?} on unlabeled"
        );
    }
    // `x=` matches an empty value.
    assert!(
        LabelSelector::parse("x=")
            .unwrap()
            .matches(&labeled(json!({"x": ""})))
    );
}

#[test]
fn label_selector_string_form_is_sorted_like_upstream() {
    let selector = LabelSelector::parse("z in (b,a),!y,x=1").unwrap();
    assert_eq!(selector.to_string(), "x=1,!y,z in (a,b)");
}

#[test]
fn field_selector_parses_and_matches_pods() {
    let scheduled = json!({
        "metadata": {"name": "p1", "namespace": "ns"},
        "spec": {"nodeName": "n1", "schedulerName": "berth", "restartPolicy": "Always", "hostNetwork": true},
        "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.5"}], "podIP": "10.0.0.5"}
    });
    let pending = json!({"metadata": {"name": "p2", "namespace": "ns"}, "spec": {"schedulerName": "berth"}, "status": {"phase": "Pending"}});
    let cases: &[(&str, bool, bool)] = &[
        ("", true, true),
        ("spec.nodeName=", false, true),
        ("spec.nodeName==n1", true, false),
        ("spec.nodeName!=", true, false),
        ("spec.host=n1", true, false),
        (
            "spec.schedulerName=berth,status.phase!=Running",
            false,
            true,
        ),
        ("metadata.name=p1,metadata.namespace=ns", true, false),
        ("spec.hostNetwork=true", true, false),
        ("spec.hostNetwork=false", false, true),
        ("status.podIP=10.0.0.5", true, false),
        ("status.podIPs=", true, true),
        ("status.nominatedNodeName=", true, true),
        ("spec.restartPolicy=Always", true, false),
        ("spec.serviceAccountName=", true, true),
    ];
    for (text, want_scheduled, want_pending) in cases {
        let selector = FieldSelector::parse(text, "pods").unwrap();
        assert_eq!(
            selector.matches(&scheduled),
            *want_scheduled,
            "{text:?} on scheduled"
        );
        assert_eq!(
            selector.matches(&pending),
            *want_pending,
            "{text:?} on pending"
        );
    }
}

#[test]
fn field_selector_syntax_errors() {
    let cases = [
        ("a", "invalid selector: 'a'; can't understand 'a'"),
        (
            "metadata.name=a,b",
            "invalid selector: 'metadata.name=a,b'; can't understand 'b'",
        ),
        (
            "metadata.name=a=b",
            "invalid field selector: unescaped character in value: 61",
        ),
        (
            "metadata.name=a\\b",
            "invalid field selector: invalid escape sequence: \\b",
        ),
        (
            "metadata.name=a\\",
            "invalid field selector: invalid escape sequence: \\",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(
            FieldSelector::parse(text, "pods").unwrap_err(),
            expected,
            "{text:?}"
        );
    }
    // Escaped commas and equals signs are data.
    let selector = FieldSelector::parse("metadata.name=a\\,b\\=c", "pods").unwrap();
    assert!(selector.matches(&json!({"metadata": {"name": "a,b=c"}})));
}

#[test]
fn field_selector_support_per_resource() {
    let ok: &[(&str, &str)] = &[
        ("pods", "spec.nodeName=a"),
        ("pods", "spec.restartPolicy=Always"),
        ("pods", "spec.serviceAccountName=default"),
        ("pods", "status.nominatedNodeName=n"),
        ("nodes", "spec.unschedulable=true"),
        ("nodes", "metadata.name=n1"),
        ("namespaces", "status.phase=Active"),
        (
            "events",
            "involvedObject.kind=Pod,involvedObject.name=p,involvedObject.namespace=ns",
        ),
        (
            "events",
            "involvedObject.uid=u,involvedObject.apiVersion=v1,involvedObject.resourceVersion=1",
        ),
        (
            "events",
            "involvedObject.fieldPath=x,reason=Scheduled,reportingComponent=berth,source=berth,type=Normal",
        ),
        (
            "events.events.k8s.io",
            "regarding.name=p,reportingController=berth,type=Normal",
        ),
        ("leases", "metadata.name=l,metadata.namespace=kube-system"),
        ("persistentvolumes", "metadata.namespace="),
        ("schedulerprofiles", "metadata.name=p,metadata.namespace=ns"),
    ];
    for (resource, text) in ok {
        assert!(
            FieldSelector::parse(text, resource).is_ok(),
            "{resource} {text}: {:?}",
            FieldSelector::parse(text, resource)
        );
    }
    let bad: &[(&str, &str, &str)] = &[
        ("pods", "spec.foo=a", "field label not supported: spec.foo"),
        (
            "nodes",
            "metadata.namespace=a",
            "field label not supported: metadata.namespace",
        ),
        (
            "nodes",
            "spec.nodeName=a",
            "field label not supported: spec.nodeName",
        ),
        (
            "namespaces",
            "metadata.namespace=a",
            "field label not supported: metadata.namespace",
        ),
        (
            "events",
            "regarding.name=a",
            "field label not supported: regarding.name",
        ),
        (
            "events.events.k8s.io",
            "involvedObject.name=a",
            "field label not supported: involvedObject.name",
        ),
        (
            "schedulerprofiles",
            "spec.foo=a",
            "field label not supported: spec.foo",
        ),
        (
            "leases",
            "spec.holderIdentity=a",
            "\"spec.holderIdentity\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
        ),
    ];
    for (resource, text, expected) in bad {
        assert_eq!(
            FieldSelector::parse(text, resource).unwrap_err(),
            *expected,
            "{resource} {text}"
        );
    }
    // Cluster-scoped custom resources and CRD selectableFields.
    assert_eq!(
        FieldSelector::parse_custom("metadata.namespace=a", false, &[]).unwrap_err(),
        "field label not supported: metadata.namespace"
    );
    let selector = FieldSelector::parse_custom("spec.color=red", true, &[".spec.color"]).unwrap();
    assert!(selector.matches(&json!({"spec": {"color": "red"}})));
    assert!(!selector.matches(&json!({"spec": {}})));
}

#[test]
fn field_selector_matches_nodes_namespaces_and_events() {
    let node = json!({"metadata": {"name": "n1"}, "spec": {}});
    assert!(
        FieldSelector::parse("spec.unschedulable=false", "nodes")
            .unwrap()
            .matches(&node)
    );
    let cordoned = json!({"metadata": {"name": "n2"}, "spec": {"unschedulable": true}});
    assert!(
        FieldSelector::parse("spec.unschedulable=true", "nodes")
            .unwrap()
            .matches(&cordoned)
    );

    let ns = json!({"metadata": {"name": "ns"}, "status": {"phase": "Terminating"}});
    assert!(
        FieldSelector::parse("status.phase=Terminating", "namespaces")
            .unwrap()
            .matches(&ns)
    );

    let core_event = json!({
        "metadata": {"name": "e", "namespace": "ns"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "ns"},
        "reason": "Scheduled", "type": "Normal", "reportingComponent": "berth", "source": {}
    });
    let selector = FieldSelector::parse(
        "involvedObject.kind=Pod,reason=Scheduled,source=berth",
        "events",
    )
    .unwrap();
    assert!(selector.matches(&core_event));
    let v1_event = json!({
        "metadata": {"name": "e2", "namespace": "ns"},
        "regarding": {"kind": "Pod", "name": "p"}, "reason": "Scheduled", "type": "Warning",
        "reportingController": "berth"
    });
    let selector = FieldSelector::parse(
        "regarding.name=p,reportingController=berth,type=Warning",
        "events.k8s.io/events",
    )
    .unwrap();
    assert!(selector.matches(&v1_event));
    // The same event seen through core/v1 field names.
    assert!(
        FieldSelector::parse("involvedObject.name=p,source=berth", "events")
            .unwrap()
            .matches(&v1_event)
    );
}
