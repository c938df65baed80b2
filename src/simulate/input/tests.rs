use super::*;

fn load(text: &str) -> Result<(ClusterInput, Vec<InputWarning>), InputError> {
    load_str(Path::new("test.yaml"), text)
}

fn documents(text: &str) -> Vec<(usize, bool)> {
    split_documents(text)
        .iter()
        .map(|d| (d.first_line, d.has_content))
        .collect()
}

#[test]
fn splits_documents_as_a_user_counts_them() {
    // (name, text, (first line, has content) per document)
    type Case = (&'static str, &'static str, Vec<(usize, bool)>);
    let cases: &[Case] = &[
        ("one bare document", "a: 1\n", vec![(1, true)]),
        (
            "leading marker opens document 0",
            "---\na: 1\n",
            vec![(1, true)],
        ),
        (
            "comment before leading marker",
            "# c\n---\na: 1\n---\nb: 2\n",
            vec![(1, true), (4, true)],
        ),
        (
            "empty document in the middle counts",
            "a: 1\n---\n---\nb: 2\n",
            vec![(1, true), (2, false), (3, true)],
        ),
        (
            "content on the marker line",
            "--- {a: 1}\n",
            vec![(1, true)],
        ),
        (
            "end marker then next document",
            "a: 1\n...\n---\nb: 2\n",
            vec![(1, true), (3, true)],
        ),
        (
            "indented dashes are content",
            "a: |\n  ---\n",
            vec![(1, true)],
        ),
        (
            "no newline at end",
            "a: 1\n---\nb: 2",
            vec![(1, true), (2, true)],
        ),
    ];
    for (name, text, want) in cases {
        assert_eq!(&documents(text), want, "{name}");
    }
}

#[test]
fn malformed_yaml_names_document_and_file_line() {
    let text = "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\n---\nkind: [unclosed\n";
    let error = load(text).expect_err("invalid input").to_string();
    assert!(
        error.starts_with("test.yaml: document 2: malformed YAML"),
        "{error}"
    );
    assert!(error.contains("line 6"), "{error}");
}

#[test]
fn decode_error_names_field_path() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    ports: [{containerPort: http}]\n";
    let error = load(text).expect_err("invalid input").to_string();
    assert!(
        error.starts_with("test.yaml: document 0: spec.containers[0].ports[0].containerPort: "),
        "{error}"
    );
}

#[test]
fn list_items_error_path_includes_index() {
    let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: a}\n- apiVersion: v1\n  kind: Node\n  metadata: {labels: [x]}\n";
    let error = load(text).expect_err("invalid input").to_string();
    assert!(
        error.starts_with("test.yaml: document 0: items[1].metadata.labels"),
        "{error}"
    );
}

#[test]
fn unknown_kind_warns_and_is_skipped() {
    let text = "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: d}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: a}\n";
    let (input, warnings) = load(text).expect("valid input");
    assert_eq!(input.nodes.len(), 1);
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0]
            .to_string()
            .starts_with("test.yaml: document 0: skipping CronJob")
    );
}

#[test]
fn duplicate_names_are_rejected_per_kind_and_namespace() {
    let pod =
        |ns: &str| format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: {ns}}}\n");
    let ok = format!("{}---\n{}", pod("a"), pod("b"));
    assert!(load(&ok).is_ok());
    let dup = format!(
        "{}---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\n",
        pod("default")
    );
    let error = load(&dup).expect_err("invalid input").to_string();
    assert!(
        error.starts_with("test.yaml: document 1: metadata.name: Duplicate value: \"default/p\""),
        "{error}"
    );
    assert!(error.contains("test.yaml: document 0"), "{error}");
}

#[test]
fn pods_get_api_server_defaults() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n  - name: c\n    resources: {limits: {cpu: 2}}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec: {containers: []}\n";
    let (input, _) = load(text).expect("valid input");
    let [a, b] = &input.pods[..] else {
        panic!("want two pods, got {}", input.pods.len());
    };
    let spec = a.spec.clone().unwrap_or_default();
    assert_eq!(a.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(spec.scheduler_name.as_deref(), Some("default-scheduler"));
    assert_eq!(spec.priority, Some(0));
    let requests = spec.containers[0]
        .resources
        .clone()
        .unwrap_or_default()
        .requests;
    assert_eq!(
        requests.and_then(|r| r.get("cpu").cloned()).map(|q| q.0),
        Some("2".to_string())
    );
    assert!(a.metadata.creation_timestamp < b.metadata.creation_timestamp);
    assert_ne!(a.metadata.uid, b.metadata.uid);
    let (again, _) = load(text).expect("valid input");
    assert_eq!(
        again.pods[0].metadata.uid, a.metadata.uid,
        "uid is deterministic"
    );
}

#[test]
fn priority_comes_from_class_or_global_default() {
    let classes = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: base}\nvalue: 10\nglobalDefault: true\n";
    let text = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: a}}\nspec: {{priorityClassName: high, containers: []}}\n---\napiVersion: v1\nkind: Pod\nmetadata: {{name: b}}\nspec: {{containers: []}}\n---\n{classes}"
    );
    let (input, _) = load(&text).expect("valid input");
    let priorities: Vec<_> = input
        .pods
        .iter()
        .map(|p| p.spec.as_ref().and_then(|s| s.priority))
        .collect();
    assert_eq!(priorities, vec![Some(1000), Some(10)]);
}

#[test]
fn unknown_priority_class_is_rejected_naming_the_pod() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: ml}\nspec: {priorityClassName: nope, containers: []}\n";
    let error = load(text).expect_err("invalid input").to_string();
    assert!(
        error.starts_with("test.yaml: document 0: spec.priorityClassName"),
        "{error}"
    );
    assert!(error.contains("pod ml/a"), "{error}");
    let system = text.replace("nope", "system-node-critical");
    assert!(load(&system).is_ok());
}

#[test]
fn not_an_object_is_an_error() {
    for text in ["just a string\n", "- a\n- b\n", "kind: Node\n"] {
        assert!(
            matches!(load(text), Err(InputError::Field { .. })),
            "{text}"
        );
    }
}

#[test]
fn cluster_objects_take_overlays_by_kind_namespace_and_name() {
    use serde_json::json;
    let cluster = vec![
        json!({"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": "n1", "creationTimestamp": "2026-01-01T00:00:00Z"},
               "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}),
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "web", "namespace": "default", "uid": "u-web",
                            "creationTimestamp": "2026-01-01T00:00:10Z"},
               "spec": {"priorityClassName": "gone", "priority": 7,
                        "containers": [{"name": "c", "image": "i"}]}}),
    ];
    let dir = std::env::temp_dir().join(format!("berth-overlay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let overlay = dir.join("overlay.yaml");
    std::fs::write(
        &overlay,
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n\
         status: {allocatable: {cpu: \"16\", memory: 8Gi, pods: \"110\"}}\n---\n\
         apiVersion: v1\nkind: List\nitems:\n\
         - apiVersion: v1\n  kind: Pod\n  metadata: {name: extra}\n  spec: {containers: [{name: c, image: i}]}\n",
    )
    .expect("overlay written");
    let (input, _) = load_cluster(cluster, &[overlay]).expect("loads");
    let _ = std::fs::remove_dir_all(&dir);

    // The overlay's node replaced the cluster's; the pod list gained the overlay's pod.
    assert_eq!(input.nodes.len(), 1);
    let allocatable = input.nodes[0]
        .status
        .as_ref()
        .and_then(|s| s.allocatable.as_ref())
        .and_then(|a| a.get("cpu"))
        .map(|q| q.0.clone());
    assert_eq!(allocatable.as_deref(), Some("16"));
    let names: Vec<_> = input
        .pods
        .iter()
        .map(|p| p.metadata.name.clone().unwrap_or_default())
        .collect();
    assert_eq!(names, ["web", "extra"]);
    // An admitted priority stays although its class is not in the input.
    assert_eq!(
        input.pods[0].spec.as_ref().and_then(|s| s.priority),
        Some(7)
    );
    // The added pod is created after the cluster's newest object (2026-01-01T00:00:10Z).
    let created = input.pods[1]
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|t| t.0.as_second());
    let newest: Timestamp = "2026-01-01T00:00:10Z".parse().expect("timestamp");
    assert!(created > Some(newest.as_second()), "{created:?}");
}

/// A `scheduling.k8s.io/v1beta1` PodGroup document named `name` with `spec`.
fn workload_pod_group(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {{name: {name}}}\nspec:\n{spec}"
    )
}

#[test]
fn pod_group_kinds_are_told_apart_by_api_version() {
    let text = [
        workload_pod_group("gang", "  schedulingPolicy: {gang: {minCount: 2}}\n"),
        "apiVersion: berth.dev/v1alpha1\nkind: PodGroup\nmetadata: {name: gang}\nspec: {minMember: 2}\n".to_string(),
        "apiVersion: scheduling.k8s.io/v1beta1\nkind: Workload\nmetadata: {name: w}\nspec:\n  podGroupTemplates:\n  - {name: t, schedulingPolicy: {basic: {}}}\n".to_string(),
        scheduler_plugins_pod_group("gang", "{minMember: 2}"),
        "apiVersion: scheduling.x-k8s.io/v1beta1\nkind: PodGroup\nmetadata: {name: future}\nspec: {minMember: 2}\n".to_string(),
    ]
    .join("---\n");
    let (input, warnings) = load(&text).expect("valid input");
    // Same namespace and name, different kinds: no duplicate.
    assert_eq!(input.scheduling_pod_groups.len(), 1);
    assert_eq!(input.pod_groups.len(), 1);
    assert_eq!(input.scheduling_workloads.len(), 1);
    assert_eq!(input.scheduler_plugins_pod_groups.len(), 1);
    let warnings: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [
            "test.yaml: document 4: skipping PodGroup (scheduling.x-k8s.io/v1beta1): unsupported apiVersion, berth simulate reads PodGroup as berth.dev/v1alpha1, scheduling.k8s.io/v1beta1 or scheduling.x-k8s.io/v1alpha1"
        ]
    );
}

/// A `scheduling.x-k8s.io/v1alpha1` (scheduler-plugins) PodGroup document named `name`
/// with `spec` (a flow mapping, or empty for none).
fn scheduler_plugins_pod_group(name: &str, spec: &str) -> String {
    let spec = if spec.is_empty() {
        String::new()
    } else {
        format!("spec: {spec}\n")
    };
    format!(
        "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {{name: {name}}}\n{spec}"
    )
}

#[test]
fn scheduler_plugins_pod_groups_are_read_as_the_api_server_admits_them() {
    let text = [
        scheduler_plugins_pod_group(
            "mpi",
            "{minMember: 3, scheduleTimeoutSeconds: 30, minResources: {cpu: \"3\", memory: 3Gi}}",
        ),
        // Every spec field is optional and unbounded in scheduler-plugins' CRD.
        scheduler_plugins_pod_group("none", ""),
        scheduler_plugins_pod_group("empty", "{}"),
        scheduler_plugins_pod_group("nulled", "null"),
        scheduler_plugins_pod_group("negative", "{minMember: -1, scheduleTimeoutSeconds: 0}"),
        "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: elsewhere, namespace: ml}\nstatus: {phase: Running, running: 3}\n".to_string(),
    ]
    .join("---\n");
    let (input, warnings) = load(&text).expect("valid input");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(input.pod_groups.is_empty() && input.scheduling_pod_groups.is_empty());
    let got: Vec<_> = input
        .scheduler_plugins_pod_groups
        .iter()
        .map(|g| {
            (
                g.metadata.namespace.as_deref().unwrap_or_default(),
                g.metadata.name.as_deref().unwrap_or_default(),
                g.spec.min_member,
                g.spec.schedule_timeout_seconds,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("default", "mpi", 3, Some(30)),
            ("default", "none", 0, None),
            ("default", "empty", 0, None),
            ("default", "nulled", 0, None),
            ("default", "negative", -1, Some(0)),
            ("ml", "elsewhere", 0, None),
        ]
    );
    let resources = input.scheduler_plugins_pod_groups[0]
        .spec
        .min_resources
        .as_ref()
        .map(|r| {
            r.iter()
                .map(|(k, v)| (k.as_str(), v.0.as_str()))
                .collect::<Vec<_>>()
        });
    assert_eq!(resources, Some(vec![("cpu", "3"), ("memory", "3Gi")]));
    // Admitted as any object: a creation time in document order; the namespace a group
    // lives in exists.
    let created: Vec<_> = input
        .scheduler_plugins_pod_groups
        .iter()
        .map(|g| {
            g.metadata
                .creation_timestamp
                .as_ref()
                .map(|t| t.0.as_second())
        })
        .collect();
    let epoch = CREATION_EPOCH_SECONDS;
    assert_eq!(
        created,
        [0, 1, 2, 3, 4, 5].map(|i| Some(epoch + i)),
        "one second apart, in document order"
    );
    assert!(
        input
            .namespaces
            .iter()
            .any(|ns| ns.metadata.name.as_deref() == Some("ml"))
    );
}

#[test]
fn scheduler_plugins_pod_groups_are_duplicates_only_of_their_own_kind() {
    let berth = "apiVersion: berth.dev/v1alpha1\nkind: PodGroup\nmetadata: {name: mpi}\nspec: {minMember: 2}\n";
    let workload = workload_pod_group("mpi", "  schedulingPolicy: {gang: {minCount: 2}}\n");
    let text = [
        scheduler_plugins_pod_group("mpi", "{minMember: 3}"),
        berth.to_string(),
        workload,
    ]
    .join("---\n");
    let (input, _) = load(&text).expect("one PodGroup of each kind named default/mpi");
    assert_eq!(input.scheduler_plugins_pod_groups.len(), 1);
    assert_eq!(input.pod_groups.len(), 1);
    assert_eq!(input.scheduling_pod_groups.len(), 1);

    let text = [
        scheduler_plugins_pod_group("mpi", "{minMember: 3}"),
        berth.to_string(),
        "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: mpi, namespace: default}\nspec: {minMember: 4}\n".to_string(),
    ]
    .join("---\n");
    let error = load(&text).expect_err("a second scheduler-plugins default/mpi");
    assert_eq!(
        error.to_string(),
        "test.yaml: document 2: metadata.name: Duplicate value: \"default/mpi\": PodGroup default/mpi is already defined at test.yaml: document 0"
    );
    // In another namespace it is another group.
    let text = [
        scheduler_plugins_pod_group("mpi", "{minMember: 3}"),
        "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: mpi, namespace: ml}\n".to_string(),
    ]
    .join("---\n");
    assert!(load(&text).is_ok());
}

#[test]
fn scheduler_plugins_pod_groups_are_refused_for_their_schema_only() {
    let cases = [
        (
            "minMember of the wrong type",
            scheduler_plugins_pod_group("g", "{minMember: three}"),
            "test.yaml: document 0: spec.minMember: Invalid value: \"three\": must be of type integer",
        ),
        (
            "an unknown field",
            scheduler_plugins_pod_group("g", "{minMember: 2, minMembers: 3}"),
            "test.yaml: document 0: spec.minMembers: unknown field \"spec.minMembers\"",
        ),
        (
            "a name the API server refuses",
            scheduler_plugins_pod_group("Gang", "{minMember: 2}"),
            "test.yaml: document 0: metadata.name: Invalid value: \"Gang\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ),
    ];
    for (name, text, expected) in cases {
        let error = load(&text).expect_err(name);
        assert_eq!(error.to_string(), expected, "{name}");
    }
}

#[test]
fn workload_pod_groups_get_priority_and_disruption_mode_as_admitted() {
    let classes = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: base}\nvalue: 10\nglobalDefault: true\n";
    let text = [
        workload_pod_group(
            "named",
            "  priorityClassName: high\n  schedulingPolicy: {basic: {}}\n",
        ),
        workload_pod_group("defaulted", "  schedulingPolicy: {basic: {}}\n"),
        classes.to_string(),
    ]
    .join("---\n");
    let (input, _) = load(&text).expect("valid input");
    let got: Vec<_> = input
        .scheduling_pod_groups
        .iter()
        .map(|g| (g.spec.priority, g.spec.priority_class_name.as_deref()))
        .collect();
    assert_eq!(got, [(Some(1000), Some("high")), (Some(10), Some("base"))]);
    let mode = serde_json::to_value(&input.scheduling_pod_groups[0].spec.disruption_mode)
        .expect("serializes");
    assert_eq!(mode, serde_json::json!({"single": {}}));

    let (input, _) = load(&workload_pod_group(
        "none",
        "  schedulingPolicy: {basic: {}}\n",
    ))
    .expect("valid input");
    assert_eq!(input.scheduling_pod_groups[0].spec.priority, Some(0));
}

#[test]
fn workload_pod_groups_are_refused_as_admission_and_validation_refuse_them() {
    let cases = [
        (
            "unknown class",
            "  priorityClassName: nope\n  schedulingPolicy: {basic: {}}\n",
            "test.yaml: document 0: spec.priorityClassName: Invalid value: \"nope\": PodGroup default/g is forbidden: no PriorityClass with name nope was found",
        ),
        (
            "explicit priority other than the class's",
            "  priority: 5\n  schedulingPolicy: {basic: {}}\n",
            "test.yaml: document 0: spec.priority: Invalid value: 5: PodGroup default/g is forbidden: priority set in the pod group (5) must match the priority computed (0) based on the priority class set in the spec",
        ),
        (
            "no policy",
            "  priority: 0\n",
            "test.yaml: document 0: spec.schedulingPolicy: Invalid value: \"\": must specify one of: `basic`, `gang`",
        ),
        (
            "both policies",
            "  schedulingPolicy: {basic: {}, gang: {minCount: 2}}\n",
            "test.yaml: document 0: spec.schedulingPolicy: Invalid value: \"{basic, gang}\": must specify exactly one of: `basic`, `gang`",
        ),
        (
            "minCount 0 reads as missing",
            "  schedulingPolicy: {gang: {minCount: 0}}\n",
            "test.yaml: document 0: spec.schedulingPolicy.gang.minCount: Required value",
        ),
        (
            "negative minCount",
            "  schedulingPolicy: {gang: {minCount: -1}}\n",
            "test.yaml: document 0: spec.schedulingPolicy.gang.minCount: Invalid value: -1: must be greater than or equal to 1",
        ),
        (
            "a field of an alpha gate",
            "  schedulingPolicy: {basic: {}}\n  schedulingConstraints: {topology: [{key: zone}]}\n",
            "test.yaml: document 0: spec.schedulingConstraints: Forbidden: requires the TopologyAwareWorkloadScheduling feature gate (alpha, off in Kubernetes 1.37)",
        ),
    ];
    for (name, spec, want) in cases {
        let error = load(&workload_pod_group("g", spec))
            .expect_err(name)
            .to_string();
        assert_eq!(error, want, "{name}");
    }
    let unnamed = "apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {}\nspec: {schedulingPolicy: {basic: {}}}\n";
    let error = load(unnamed).expect_err("no name").to_string();
    assert!(
        error.starts_with("test.yaml: document 0: metadata.name: Required value"),
        "{error}"
    );
}

#[test]
fn workloads_are_validated_as_the_api_server_does() {
    let workload = |spec: &str| {
        format!(
            "apiVersion: scheduling.k8s.io/v1beta1\nkind: Workload\nmetadata: {{name: w}}\nspec:\n{spec}"
        )
    };
    let cases = [
        (
            "no templates",
            "  controllerRef: {kind: Job, name: j}\n",
            "test.yaml: document 0: spec: Invalid value: \"\": must specify one of: `podGroupTemplates`, `compositePodGroupTemplates`",
        ),
        (
            "a template without a name",
            "  podGroupTemplates:\n  - {schedulingPolicy: {basic: {}}}\n",
            "test.yaml: document 0: spec.podGroupTemplates[0].name: Required value",
        ),
        (
            "two templates of one name",
            "  podGroupTemplates:\n  - {name: t, schedulingPolicy: {basic: {}}}\n  - {name: t, schedulingPolicy: {basic: {}}}\n",
            "test.yaml: document 0: spec.podGroupTemplates[1]: Duplicate value: \"t\"",
        ),
        (
            "templates of different priorities",
            "  podGroupTemplates:\n  - {name: a, priorityClassName: x, schedulingPolicy: {basic: {}}}\n  - {name: b, schedulingPolicy: {basic: {}}}\n",
            "test.yaml: document 0: spec: Invalid value: null: detected multiple priority configurations",
        ),
    ];
    for (name, spec, want) in cases {
        let error = load(&workload(spec)).expect_err(name).to_string();
        assert_eq!(error, want, "{name}");
    }
}

#[test]
fn a_pod_names_its_pod_group_as_a_dns_subdomain() {
    let pod = |group: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  schedulingGroup: {group}\n  containers: []\n"
        )
    };
    assert!(load(&pod("{podGroupName: train}")).is_ok());
    let error = load(&pod("{podGroupName: Train}"))
        .expect_err("upper case")
        .to_string();
    assert!(
        error.starts_with(
            "test.yaml: document 0: spec.schedulingGroup.podGroupName: Invalid value: \"Train\": a lowercase RFC 1123 subdomain"
        ),
        "{error}"
    );
    let error = load(&pod("{}")).expect_err("no member").to_string();
    assert_eq!(
        error,
        "test.yaml: document 0: spec.schedulingGroup.podGroupName: Invalid value: null: must specify one of: `podGroupName`"
    );
}

/// Kubernetes 1.35's Workload (`scheduling.k8s.io/v1alpha1`) is its own kind beside the
/// v1beta1 one, validated as 1.35's API server does; a pod's `spec.workloadRef` is kept.
#[test]
fn legacy_workloads_and_workload_refs_load() {
    let legacy = |name: &str, groups: &str| {
        format!(
            "apiVersion: scheduling.k8s.io/v1alpha1\nkind: Workload\nmetadata: {{name: {name}}}\nspec:\n  podGroups: {groups}\n"
        )
    };
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  workloadRef: {name: w, podGroup: workers}\n  containers: [{name: c, image: i}]\n";
    let text = [
        legacy("w", "[{name: workers, policy: {gang: {minCount: 2}}}]"),
        "apiVersion: scheduling.k8s.io/v1beta1\nkind: Workload\nmetadata: {name: w}\nspec:\n  podGroupTemplates:\n  - {name: t, schedulingPolicy: {basic: {}}}\n".to_string(),
        pod.to_string(),
    ]
    .join("---\n");
    let (input, _) = load(&text).expect("valid input");
    assert_eq!(input.legacy_workloads.len(), 1);
    assert_eq!(input.scheduling_workloads.len(), 1);
    let reference = crate::cluster::WorkloadReference::of_pod(&input.pods[0]);
    assert_eq!(
        reference.map(|r| (r.name, r.pod_group)),
        Some(("w".to_string(), "workers".to_string()))
    );
    // (pod groups, the error's tail)
    let cases = [
        (
            "[]",
            "spec.podGroups: Required value: must have at least one item",
        ),
        (
            "[{name: a, policy: {gang: {minCount: 0}}}]",
            "spec.podGroups[0].policy.gang.minCount: Invalid value: 0: must be greater than 0",
        ),
        (
            "[{name: a, policy: {}}]",
            "spec.podGroups[0].policy: Required value: exactly one of `basic`, `gang` is required",
        ),
        (
            "[{name: a, policy: {basic: {}}}, {name: a, policy: {basic: {}}}]",
            "spec.podGroups[1].name: Duplicate value: \"a\"",
        ),
    ];
    for (groups, want) in cases {
        let error = load(&legacy("bad", groups)).expect_err(groups).to_string();
        assert!(error.ends_with(want), "{groups}: {error}");
    }
}
