use serde_json::json;

use super::*;

#[test]
fn pages_are_read_from_list_responses() {
    let cases = [
        (
            "a first page with a continue token",
            json!({"kind": "PodList", "metadata": {"resourceVersion": "17", "continue": "abc"}, "items": [{"metadata": {"name": "a"}}]}),
            Some((1, "17".to_string(), Some("abc".to_string()))),
        ),
        (
            "the last page: an empty continue token ends the list",
            json!({"metadata": {"resourceVersion": "17", "continue": ""}, "items": []}),
            Some((0, "17".to_string(), None)),
        ),
        (
            "items: null is an empty list",
            json!({"metadata": {"resourceVersion": "3"}, "items": null}),
            Some((0, "3".to_string(), None)),
        ),
        ("no items: not a list", json!({"kind": "Status"}), None),
        ("items not an array", json!({"items": {}}), None),
    ];
    for (name, response, expected) in cases {
        let page = Page::read(response)
            .ok()
            .map(|p| (p.items.len(), p.resource_version, p.continue_token));
        assert_eq!(page, expected, "{name}");
    }
}

#[test]
fn items_get_the_kind_they_were_listed_as() {
    let spec = KINDS
        .iter()
        .find(|k| k.kind == "PodDisruptionBudget")
        .copied()
        .expect("PodDisruptionBudget is read");
    let item = json!({"metadata": {"name": "web"}, "spec": {"minAvailable": 1}});
    assert_eq!(
        typed(item, &spec),
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"}, "spec": {"minAvailable": 1}})
    );
}

#[test]
fn kinds_are_the_ones_the_simulation_reads_in_a_stable_order() {
    let kinds: Vec<&str> = KINDS.iter().map(|k| k.kind).collect();
    assert_eq!(
        kinds,
        [
            "Node",
            "Pod",
            "Namespace",
            "PersistentVolumeClaim",
            "PersistentVolume",
            "StorageClass",
            "CSINode",
            "PriorityClass",
            "PodDisruptionBudget",
            "Service",
            "ReplicaSet",
            "StatefulSet",
            "ReplicationController",
            "PodGroup",
            "SchedulerProfile",
        ]
    );
    for spec in KINDS {
        let (group, version) = spec
            .api_version
            .rsplit_once('/')
            .unwrap_or(("", spec.api_version));
        let expected_prefix = if group.is_empty() {
            format!("/api/{version}/")
        } else {
            format!("/apis/{group}/{version}/")
        };
        assert!(spec.path.starts_with(&expected_prefix), "{spec:?}");
        assert!(
            spec.consequence
                .ends_with(|c: char| c.is_alphanumeric() || c == ')'),
            "{spec:?}"
        );
    }
}

#[test]
fn a_gap_reads_as_one_warning_line() {
    let gap = KindGap {
        kind: "PodDisruptionBudget",
        status: 403,
        message: "poddisruptionbudgets.policy is forbidden".to_string(),
        consequence: "preemption ignores disruption budgets",
    };
    assert_eq!(
        gap.to_string(),
        "PodDisruptionBudget: poddisruptionbudgets.policy is forbidden; preemption ignores disruption budgets"
    );
}
