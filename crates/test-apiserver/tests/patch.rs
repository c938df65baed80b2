//! Patch types: expected results come from RFC 7386 appendix A, RFC 6902 appendix A, and
//! upstream's strategicpatch `patch_test.go` cases (named), translated onto Pod fields that
//! carry the same patch strategy as the test struct's fields.

use serde_json::{Value, json};
use test_apiserver::patch::{PatchType, apply_patch, supports_strategic_merge};

fn merge(original: Value, patch: Value) -> Value {
    apply_patch(
        &original,
        patch.to_string().as_bytes(),
        PatchType::Merge,
        "Pod",
    )
    .unwrap()
}

fn json_patch(original: Value, patch: Value) -> Result<Value, String> {
    apply_patch(
        &original,
        patch.to_string().as_bytes(),
        PatchType::Json,
        "Pod",
    )
}

fn smp(kind: &str, original: Value, patch: Value) -> Result<Value, String> {
    apply_patch(
        &original,
        patch.to_string().as_bytes(),
        PatchType::StrategicMerge,
        kind,
    )
}

fn pod_smp(original: Value, patch: Value) -> Value {
    smp("Pod", original, patch).unwrap()
}

#[test]
fn content_types() {
    assert_eq!(
        PatchType::from_content_type("application/strategic-merge-patch+json; charset=utf-8"),
        Some(PatchType::StrategicMerge)
    );
    assert_eq!(
        PatchType::from_content_type("application/apply-patch+yaml"),
        None,
        "server-side apply is not served"
    );
    assert_eq!(PatchType::from_content_type("application/json"), None);
}

#[test]
fn rfc7386_appendix_a() {
    let cases = [
        (json!({"a":"b"}), json!({"a":"c"}), json!({"a":"c"})),
        (json!({"a":"b"}), json!({"b":"c"}), json!({"a":"b","b":"c"})),
        (json!({"a":"b"}), json!({"a":null}), json!({})),
        (
            json!({"a":"b","b":"c"}),
            json!({"a":null}),
            json!({"b":"c"}),
        ),
        (json!({"a":["b"]}), json!({"a":"c"}), json!({"a":"c"})),
        (json!({"a":"c"}), json!({"a":["b"]}), json!({"a":["b"]})),
        (
            json!({"a":{"b":"c"}}),
            json!({"a":{"b":"d","c":null}}),
            json!({"a":{"b":"d"}}),
        ),
        (json!({"a":[{"b":"c"}]}), json!({"a":[1]}), json!({"a":[1]})),
        (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
        (json!({"a":"b"}), json!(["c"]), json!(["c"])),
        (json!({"a":"foo"}), json!(null), json!(null)),
        (json!({"a":"foo"}), json!("bar"), json!("bar")),
        (json!({"e":null}), json!({"a":1}), json!({"e":null,"a":1})),
        (json!([1, 2]), json!({"a":"b","c":null}), json!({"a":"b"})),
        (
            json!({}),
            json!({"a":{"bb":{"ccc":null}}}),
            json!({"a":{"bb":{}}}),
        ),
    ];
    for (original, patch, expected) in cases {
        assert_eq!(
            merge(original.clone(), patch.clone()),
            expected,
            "{original} + {patch}"
        );
    }
}

#[test]
fn rfc6902_appendix_a() {
    // A.1 Adding an Object Member
    assert_eq!(
        json_patch(
            json!({"foo":"bar"}),
            json!([{"op":"add","path":"/baz","value":"qux"}])
        )
        .unwrap(),
        json!({"baz":"qux","foo":"bar"})
    );
    // A.2 Adding an Array Element
    assert_eq!(
        json_patch(
            json!({"foo":["bar","baz"]}),
            json!([{"op":"add","path":"/foo/1","value":"qux"}])
        )
        .unwrap(),
        json!({"foo":["bar","qux","baz"]})
    );
    // A.3 Removing an Object Member
    assert_eq!(
        json_patch(
            json!({"baz":"qux","foo":"bar"}),
            json!([{"op":"remove","path":"/baz"}])
        )
        .unwrap(),
        json!({"foo":"bar"})
    );
    // A.4 Removing an Array Element
    assert_eq!(
        json_patch(
            json!({"foo":["bar","qux","baz"]}),
            json!([{"op":"remove","path":"/foo/1"}])
        )
        .unwrap(),
        json!({"foo":["bar","baz"]})
    );
    // A.5 Replacing a Value
    assert_eq!(
        json_patch(
            json!({"baz":"qux","foo":"bar"}),
            json!([{"op":"replace","path":"/baz","value":"boo"}])
        )
        .unwrap(),
        json!({"baz":"boo","foo":"bar"})
    );
    // A.6 Moving a Value
    assert_eq!(
        json_patch(
            json!({"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}}),
            json!([{"op":"move","from":"/foo/waldo","path":"/qux/thud"}])
        )
        .unwrap(),
        json!({"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}})
    );
    // A.7 Moving an Array Element
    assert_eq!(
        json_patch(
            json!({"foo":["all","grass","cows","eat"]}),
            json!([{"op":"move","from":"/foo/1","path":"/foo/3"}])
        )
        .unwrap(),
        json!({"foo":["all","cows","eat","grass"]})
    );
    // A.8 Testing a Value: Success
    let doc = json!({"baz":"qux","foo":["a",2,"c"]});
    assert_eq!(
        json_patch(
            doc.clone(),
            json!([{"op":"test","path":"/baz","value":"qux"},{"op":"test","path":"/foo/1","value":2}])
        )
        .unwrap(),
        doc
    );
    // A.9 Testing a Value: Error
    assert_eq!(
        json_patch(
            json!({"baz":"qux"}),
            json!([{"op":"test","path":"/baz","value":"bar"}])
        )
        .unwrap_err(),
        "testing value /baz failed: test failed"
    );
    // A.10 Adding a Nested Member Object
    assert_eq!(
        json_patch(
            json!({"foo":"bar"}),
            json!([{"op":"add","path":"/child","value":{"grandchild":{}}}])
        )
        .unwrap(),
        json!({"foo":"bar","child":{"grandchild":{}}})
    );
    // A.12 Adding to a Nonexistent Target
    assert_eq!(
        json_patch(
            json!({"foo":"bar"}),
            json!([{"op":"add","path":"/baz/bat","value":"qux"}])
        )
        .unwrap_err(),
        "add operation does not apply: doc is missing path: \"/baz/bat\": missing value"
    );
    // A.16 Adding an Array Value
    assert_eq!(
        json_patch(
            json!({"foo":["bar"]}),
            json!([{"op":"add","path":"/foo/-","value":["abc","def"]}])
        )
        .unwrap(),
        json!({"foo":["bar",["abc","def"]]})
    );
    // Copy (section 4.5).
    assert_eq!(
        json_patch(
            json!({"a":{"b":1}}),
            json!([{"op":"copy","from":"/a","path":"/c"}])
        )
        .unwrap(),
        json!({"a":{"b":1},"c":{"b":1}})
    );
    // A failing operation leaves nothing half-applied.
    assert!(
        json_patch(
            json!({"a":1}),
            json!([{"op":"add","path":"/b","value":2},{"op":"remove","path":"/zzz"}])
        )
        .is_err()
    );
    // Not a JSON patch at all.
    assert!(json_patch(json!({}), json!({"op":"add"})).is_err());
}

fn containers(items: Value) -> Value {
    json!({"spec": {"containers": items}})
}

#[test]
fn smp_preserve_the_order_from_the_patch_in_a_merging_list_2() {
    // patch_test.go "preserve the order from the patch in a merging list 2"
    // (mergingList has patchMergeKey name, like spec.containers).
    let original = containers(json!([{"name":"1"},{"name":"2","image":"b"},{"name":"3"}]));
    let patch = containers(json!([{"name":"3","image":"c"},{"name":"1","image":"a"}]));
    assert_eq!(
        pod_smp(original, patch),
        containers(
            json!([{"name":"2","image":"b"},{"name":"3","image":"c"},{"name":"1","image":"a"}])
        )
    );
}

#[test]
fn smp_preserve_the_order_from_the_patch_in_a_merging_list() {
    // patch_test.go "preserve the order from the patch in a merging list"
    let original = containers(json!([{"name":"1"},{"name":"2","image":"b"},{"name":"3"}]));
    let patch = containers(
        json!([{"name":"3","image":"c"},{"name":"1","image":"a"},{"name":"2","args":["x"]}]),
    );
    assert_eq!(
        pod_smp(original, patch),
        containers(
            json!([{"name":"3","image":"c"},{"name":"1","image":"a"},{"name":"2","image":"b","args":["x"]}])
        )
    );
}

#[test]
fn smp_new_container_goes_first_like_the_kubectl_patch_docs() {
    // kubernetes.io "Update API Objects in Place Using kubectl patch": the patched pod lists
    // the added container (patch-demo-ctr-2) before the existing one.
    let original = containers(json!([{"name":"patch-demo-ctr","image":"nginx"}]));
    let patch = containers(json!([{"name":"patch-demo-ctr-2","image":"redis"}]));
    assert_eq!(
        pod_smp(original, patch),
        containers(
            json!([{"name":"patch-demo-ctr-2","image":"redis"},{"name":"patch-demo-ctr","image":"nginx"}])
        )
    );
}

#[test]
fn smp_merges_nested_container_lists_by_their_keys() {
    let original = containers(json!([{
        "name":"app","image":"v1",
        "env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],
        "ports":[{"containerPort":80,"protocol":"TCP"}],
        "volumeMounts":[{"name":"data","mountPath":"/data"}]
    }]));
    let patch = containers(json!([{
        "name":"app",
        "env":[{"name":"B","value":"3"},{"name":"A","$patch":"delete"}],
        "ports":[{"containerPort":80,"name":"http"}],
        "volumeMounts":[{"name":"data2","mountPath":"/data"}]
    }]));
    assert_eq!(
        pod_smp(original, patch),
        containers(json!([{
            "name":"app","image":"v1",
            "env":[{"name":"B","value":"3"}],
            "ports":[{"containerPort":80,"protocol":"TCP","name":"http"}],
            "volumeMounts":[{"name":"data2","mountPath":"/data"}]
        }]))
    );
}

#[test]
fn smp_de_duplicate_entries_in_a_merging_list() {
    // patch_test.go "de-duplicate entries in a merging list"
    let original = containers(
        json!([{"name":"1"},{"name":"1"},{"name":"2","image":"a"},{"name":"3"},{"name":"3"}]),
    );
    let patch = containers(json!([{"name":"1","$patch":"delete"},{"name":"3","$patch":"delete"}]));
    assert_eq!(
        pod_smp(original, patch),
        containers(json!([{"name":"2","image":"a"}]))
    );
}

#[test]
fn smp_delete_all_items_from_merging_list() {
    // patch_test.go "delete all items from merging list"
    let original = containers(json!([{"name":"1"},{"name":"2"}]));
    let patch = containers(json!([{"$patch":"replace"}]));
    assert_eq!(pod_smp(original, patch), containers(json!([])));
}

#[test]
fn smp_replace_directive_on_a_list_keeps_only_the_patch_items() {
    let original = containers(json!([{"name":"1","image":"x"},{"name":"2"}]));
    let patch = containers(json!([{"name":"3"},{"$patch":"replace"}]));
    assert_eq!(pod_smp(original, patch), containers(json!([{"name":"3"}])));
}

#[test]
fn smp_delete_map_from_nested_map_and_replace_map() {
    // patch_test.go "delete map from nested map"
    let original = json!({"spec":{"nodeSelector":{"key1":"1","key2":"1"}}});
    let patch = json!({"spec":{"nodeSelector":{"$patch":"delete"}}});
    assert_eq!(
        pod_smp(original, patch),
        json!({"spec":{"nodeSelector":{}}})
    );
    // patch_test.go "add key and delete all keys from map"
    let original = json!({"spec":{"nodeSelector":{"name":"1","value":"1"}}});
    let patch = json!({"spec":{"nodeSelector":{"other":"a","$patch":"replace"}}});
    assert_eq!(
        pod_smp(original, patch),
        json!({"spec":{"nodeSelector":{"other":"a"}}})
    );
}

#[test]
fn smp_missing_merge_key_should_error_out() {
    // patch_test.go "missing merge key should error out"
    let original = containers(json!([{"name":"1","image":"a"}]));
    let patch = containers(json!([{"image":"b"}]));
    assert_eq!(
        smp("Pod", original, patch).unwrap_err(),
        "map: map[image:b] does not contain declared merge key: name"
    );
}

#[test]
fn smp_finalizers_are_a_merging_primitive_list() {
    // patch_test.go "unique scalars when merging lists"
    let original = json!({"metadata":{"finalizers":["1","2"]}});
    let patch = json!({"metadata":{"finalizers":["2","3"]}});
    assert_eq!(
        pod_smp(original, patch),
        json!({"metadata":{"finalizers":["1","2","3"]}})
    );
    // patch_test.go "preserve the order from the patch in a merging int list" (second case)
    let original = json!({"metadata":{"finalizers":["1","2","3"]}});
    let patch = json!({"metadata":{"finalizers":["3","1"]}});
    assert_eq!(
        pod_smp(original, patch),
        json!({"metadata":{"finalizers":["2","3","1"]}})
    );
    // "$deleteFromPrimitiveList of nonexistent item in primitive list should not add the item"
    let original = json!({"metadata":{"finalizers":["1","2"]}});
    let patch = json!({"metadata":{"$deleteFromPrimitiveList/finalizers":["3","1"]}});
    assert_eq!(
        pod_smp(original, patch),
        json!({"metadata":{"finalizers":["2"]}})
    );
    // "$deleteFromPrimitiveList on nonexistent primitive list should not add the primitive list"
    let original = json!({"metadata":{"name":"p"}});
    let patch = json!({"metadata":{"$deleteFromPrimitiveList/finalizers":["3"]}});
    assert_eq!(pod_smp(original, patch), json!({"metadata":{"name":"p"}}));
}

#[test]
fn smp_set_element_order_contains_item_not_present_in_the_list() {
    // patch_test.go "$setElementOrder contains item that is not present in the list to be merged"
    let original = containers(json!([{"name":"1"},{"name":"3"}]));
    let patch = json!({"spec":{
        "$setElementOrder/containers":[{"name":"3"},{"name":"2"},{"name":"1"}],
        "containers":[{"name":"3","image":"3"},{"name":"1","image":"1"}]
    }});
    assert_eq!(
        pod_smp(original, patch),
        containers(json!([{"name":"3","image":"3"},{"name":"1","image":"1"}]))
    );
    // "should check if order in $setElementOrder and patch list match"
    let original = containers(json!([{"name":"1"},{"name":"3"},{"name":"2"}]));
    let patch = json!({"spec":{
        "$setElementOrder/containers":[{"name":"1"},{"name":"2"},{"name":"3"}],
        "containers":[{"name":"3","image":"3"},{"name":"1","image":"1"}]
    }});
    assert!(
        smp("Pod", original, patch)
            .unwrap_err()
            .contains("doesn't match")
    );
}

#[test]
fn smp_retain_keys_switches_a_volume_source() {
    // The $retainKeys directive kubectl sends for spec.volumes (merge,retainKeys).
    let original = json!({"spec":{"volumes":[{"name":"v","emptyDir":{}}]}});
    let patch = json!({"spec":{"volumes":[{"$retainKeys":["configMap","name"],"name":"v","configMap":{"name":"cm"}}]}});
    assert_eq!(
        pod_smp(original, patch),
        json!({"spec":{"volumes":[{"name":"v","configMap":{"name":"cm"}}]}})
    );
    // A patch key missing from $retainKeys is rejected.
    let original = json!({"spec":{"volumes":[{"name":"v","emptyDir":{}}]}});
    let patch = json!({"spec":{"volumes":[{"$retainKeys":["name"],"name":"v","secret":{}}]}});
    assert_eq!(
        smp("Pod", original, patch).unwrap_err(),
        "invalid patch format of retainKeys"
    );
}

#[test]
fn smp_conditions_merge_by_type_and_null_deletes() {
    let original = json!({"status":{"phase":"Pending","conditions":[
        {"type":"PodScheduled","status":"False","reason":"Unschedulable"},
        {"type":"Ready","status":"False"}
    ]}});
    let patch = json!({"status":{"conditions":[{"type":"PodScheduled","status":"True","reason":null}],"phase":null}});
    assert_eq!(
        pod_smp(original, patch),
        json!({"status":{"conditions":[{"type":"PodScheduled","status":"True"},{"type":"Ready","status":"False"}]}})
    );
    let node = json!({"status":{"conditions":[{"type":"Ready","status":"True"}],"addresses":[{"type":"InternalIP","address":"10.0.0.1"}]}});
    let patch = json!({"status":{"conditions":[{"type":"MemoryPressure","status":"False"}],"addresses":[{"type":"Hostname","address":"n1"}]}});
    assert_eq!(
        smp("Node", node, patch).unwrap(),
        json!({"status":{
            "conditions":[{"type":"MemoryPressure","status":"False"},{"type":"Ready","status":"True"}],
            "addresses":[{"type":"Hostname","address":"n1"},{"type":"InternalIP","address":"10.0.0.1"}]
        }})
    );
}

#[test]
fn smp_tolerations_and_taints_are_atomic_like_upstream() {
    let original = json!({"spec":{"tolerations":[{"key":"a","operator":"Exists"}]}});
    let patch = json!({"spec":{"tolerations":[{"key":"b","operator":"Exists"}]}});
    assert_eq!(
        pod_smp(original, patch),
        json!({"spec":{"tolerations":[{"key":"b","operator":"Exists"}]}})
    );
    let original = json!({"spec":{"taints":[{"key":"a","effect":"NoSchedule"}]}});
    let patch = json!({"spec":{"taints":[{"key":"b","effect":"NoSchedule"}]}});
    assert_eq!(
        smp("Node", original, patch).unwrap(),
        json!({"spec":{"taints":[{"key":"b","effect":"NoSchedule"}]}})
    );
}

#[test]
fn smp_owner_references_merge_by_uid() {
    let original = json!({"metadata":{"ownerReferences":[{"uid":"1","name":"a"}]}});
    let patch = json!({"metadata":{"ownerReferences":[{"uid":"1","controller":true}]}});
    assert_eq!(
        pod_smp(original, patch),
        json!({"metadata":{"ownerReferences":[{"uid":"1","name":"a","controller":true}]}})
    );
}

#[test]
fn smp_directives_in_new_values_are_resolved_not_stored() {
    let original = json!({"metadata":{"name":"p"}});
    let patch = json!({"spec":{"containers":[{"name":"a","image":"x","env":null},{"name":"b","$patch":"delete"}]}});
    assert_eq!(
        pod_smp(original, patch),
        json!({"metadata":{"name":"p"},"spec":{"containers":[{"name":"a","image":"x"}]}})
    );
}

#[test]
fn smp_bad_directives_are_errors() {
    let err = smp(
        "Pod",
        json!({"spec":{}}),
        json!({"spec":{"$patch":"bogus"}}),
    )
    .unwrap_err();
    assert_eq!(err, "unknown patch type: bogus in map: map[$patch:bogus]");
    let err = smp(
        "Pod",
        containers(json!([{"name":"a"}])),
        containers(json!([{"name":"a","$patch":"merge"}])),
    )
    .unwrap_err();
    assert_eq!(err, "merging lists cannot yet be specified in the patch");
    assert_eq!(
        smp("Pod", json!({}), json!([1])).unwrap_err(),
        "invalid JSON document"
    );
}

#[test]
fn smp_is_rejected_for_custom_resources() {
    assert!(supports_strategic_merge("Pod"));
    assert!(supports_strategic_merge("Lease"));
    assert!(!supports_strategic_merge("SchedulerProfile"));
    let err = smp("SchedulerProfile", json!({}), json!({"spec":{}})).unwrap_err();
    assert!(
        err.starts_with("the body of the request was in an unknown format"),
        "{err}"
    );
}
