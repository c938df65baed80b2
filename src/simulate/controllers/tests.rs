use std::path::Path;

use super::*;
use crate::simulate::input::load_str;

/// The input loaded (which expands its workloads), or the error's text.
fn load(text: &str) -> Result<ClusterInput, String> {
    load_str(Path::new("test.yaml"), text)
        .map(|(input, _)| input)
        .map_err(|e| e.to_string())
}

fn pod_names(input: &ClusterInput) -> Vec<String> {
    input
        .pods
        .iter()
        .map(|p| p.metadata.name.clone().unwrap_or_default())
        .collect()
}

fn labels(pod: &Pod) -> BTreeMap<String, String> {
    pod.metadata.labels.clone().unwrap_or_default()
}

fn controller_of(pod: &Pod) -> (String, String) {
    let owners = pod.metadata.owner_references.clone().unwrap_or_default();
    let owner = owners
        .iter()
        .find(|o| o.controller == Some(true))
        .cloned()
        .unwrap_or_default();
    (owner.kind, owner.name)
}

/// A suffix of `generateName`: 5 characters of apimachinery's `rand.String` alphabet.
fn is_generated_suffix(suffix: &str) -> bool {
    suffix.len() == 5
        && suffix
            .chars()
            .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c))
}

const NODES: &str = "\
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {disk: ssd}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
spec: {taints: [{key: dedicated, value: gpu, effect: NoSchedule}]}
---
apiVersion: v1
kind: Node
metadata: {name: n3}
spec:
  unschedulable: true
  taints: [{key: node.kubernetes.io/unschedulable, effect: NoSchedule}]
---
";

#[test]
fn replica_counts_follow_the_controllers() {
    // (case, workload document, existing pods, pods the controller creates)
    let owned = |kind: &str, name: &str, phase: &str| {
        format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}-old, ownerReferences: [{{apiVersion: apps/v1, kind: {kind}, name: {name}, uid: other, controller: true}}]}}\nspec: {{containers: []}}\nstatus: {{phase: {phase}}}\n"
        )
    };
    let rs = |replicas: &str| {
        format!(
            "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {{name: rs}}\nspec: {{{replicas}selector: {{matchLabels: {{a: b}}}}, template: {{metadata: {{labels: {{a: b}}}}, spec: {{containers: []}}}}}}\n"
        )
    };
    let job = |spec: &str| {
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: job}}\nspec: {{{spec}template: {{spec: {{containers: [], restartPolicy: Never}}}}}}\n"
        )
    };
    let cases: Vec<(&str, String, String, usize)> = vec![
        ("replicas default to 1", rs(""), String::new(), 1),
        ("replicas: 3", rs("replicas: 3, "), String::new(), 3),
        ("replicas: 0", rs("replicas: 0, "), String::new(), 0),
        (
            "a running owned pod counts",
            rs("replicas: 3, "),
            owned("ReplicaSet", "rs", "Running"),
            2,
        ),
        (
            "a finished owned pod does not count",
            rs("replicas: 3, "),
            owned("ReplicaSet", "rs", "Failed"),
            3,
        ),
        (
            "a pod another kind controls does not count",
            rs("replicas: 3, "),
            owned("StatefulSet", "rs", "Running"),
            3,
        ),
        ("parallelism defaults to 1", job(""), String::new(), 1),
        ("parallelism", job("parallelism: 4, "), String::new(), 4),
        (
            "capped by completions",
            job("parallelism: 4, completions: 2, "),
            String::new(),
            2,
        ),
        (
            "capped by completions left",
            job("parallelism: 4, completions: 5, "),
            owned("Job", "job", "Succeeded"),
            4,
        ),
        (
            "completions left counts status.succeeded",
            format!(
                "{}status: {{succeeded: 4}}\n",
                job("parallelism: 4, completions: 5, ")
            ),
            String::new(),
            1,
        ),
        (
            "active pods count toward parallelism",
            job("parallelism: 3, "),
            owned("Job", "job", "Running"),
            2,
        ),
        (
            "no completions: nothing new once one succeeded",
            job("parallelism: 3, "),
            owned("Job", "job", "Succeeded"),
            0,
        ),
        (
            "suspended",
            job("parallelism: 3, suspend: true, "),
            String::new(),
            0,
        ),
        (
            "indexed: completed indexes count as succeeded",
            format!(
                "{}status: {{completedIndexes: \"0-1999999997\"}}\n",
                job("completionMode: Indexed, parallelism: 5, completions: 2000000000, ")
            ),
            String::new(),
            2,
        ),
        (
            "being deleted",
            job("parallelism: 3, ").replace(
                "metadata: {name: job}",
                "metadata: {name: job, deletionTimestamp: \"2024-01-01T00:00:00Z\"}",
            ),
            String::new(),
            0,
        ),
        (
            "complete",
            format!(
                "{}status: {{conditions: [{{type: Complete, status: \"True\"}}]}}\n",
                job("parallelism: 3, ")
            ),
            String::new(),
            0,
        ),
    ];
    for (name, workload, existing, want) in cases {
        let text = format!("{workload}{existing}");
        let input = load(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let created = pod_names(&input)
            .into_iter()
            .filter(|pod| !pod.ends_with("-old"))
            .count();
        assert_eq!(created, want, "{name}: {:?}", pod_names(&input));
    }
}

#[test]
fn deployment_creates_a_replica_set_and_its_pods() {
    let text = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx}]}
";
    let input = load(text).expect("valid input");
    let [rs] = &input.replica_sets[..] else {
        panic!("one ReplicaSet, got {:?}", input.replica_sets);
    };
    let rs_name = rs.metadata.name.clone().unwrap_or_default();
    let hash = rs_name
        .strip_prefix("web-")
        .expect("named <deployment>-<hash>");
    assert!(
        !hash.is_empty()
            && hash
                .chars()
                .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c))
    );
    assert_eq!(rs.metadata.namespace.as_deref(), Some("shop"));
    let rs_owner = rs.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(
        (
            rs_owner[0].kind.as_str(),
            rs_owner[0].name.as_str(),
            rs_owner[0].controller
        ),
        ("Deployment", "web", Some(true))
    );
    let spec = rs.spec.clone();
    assert_eq!(spec.replicas, Some(2));
    let selector = spec.selector.match_labels.unwrap_or_default();
    assert_eq!(
        selector.get(POD_TEMPLATE_HASH_LABEL).map(String::as_str),
        Some(hash)
    );
    assert_eq!(input.pods.len(), 2);
    for pod in &input.pods {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let suffix = name
            .strip_prefix(&format!("{rs_name}-"))
            .expect("named <replicaset>-<suffix>");
        assert!(is_generated_suffix(suffix), "{name}");
        assert_eq!(pod.metadata.namespace.as_deref(), Some("shop"));
        let labels = labels(pod);
        assert_eq!(labels.get("app").map(String::as_str), Some("web"));
        assert_eq!(
            labels.get(POD_TEMPLATE_HASH_LABEL).map(String::as_str),
            Some(hash)
        );
        assert_eq!(controller_of(pod), ("ReplicaSet".into(), rs_name.clone()));
    }
    assert_ne!(input.pods[0].metadata.name, input.pods[1].metadata.name);
    let again = load(text).expect("valid input");
    assert_eq!(
        pod_names(&again),
        pod_names(&input),
        "names are deterministic"
    );
}

#[test]
fn deployment_with_its_replica_set_in_the_input_is_left_to_it() {
    let text = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, uid: d-uid}
spec:
  replicas: 5
  selector: {matchLabels: {app: web}}
  template: {metadata: {labels: {app: web}}, spec: {containers: []}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-abc
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: d-uid, controller: true}]
spec:
  replicas: 2
  selector: {matchLabels: {app: web, pod-template-hash: abc}}
  template: {metadata: {labels: {app: web, pod-template-hash: abc}}, spec: {containers: []}}
";
    let input = load(text).expect("valid input");
    assert_eq!(input.replica_sets.len(), 1);
    assert_eq!(input.pods.len(), 2, "{:?}", pod_names(&input));
}

#[test]
fn stateful_set_pods_have_ordinals_identity_and_claims() {
    let text = "\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 3
  serviceName: db-headless
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: c, image: pg}]
      volumes: [{name: data, emptyDir: {}}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: Pod
metadata:
  name: db-1
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: db, uid: u, controller: true}]
spec: {nodeName: n1, containers: []}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-db-1}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
";
    let input = load(text).expect("valid input");
    assert_eq!(pod_names(&input), vec!["db-1", "db-0", "db-2"]);
    let claims: Vec<String> = input
        .pvcs
        .iter()
        .map(|c| c.metadata.name.clone().unwrap_or_default())
        .collect();
    assert_eq!(claims, vec!["data-db-1", "data-db-0", "data-db-2"]);
    let created_claim = &input.pvcs[1];
    assert_eq!(
        created_claim
            .metadata
            .labels
            .clone()
            .unwrap_or_default()
            .get("app")
            .map(String::as_str),
        Some("db"),
        "claims carry the set's selector labels"
    );
    let db2 = &input.pods[2];
    let labels = labels(db2);
    assert_eq!(
        labels.get(STATEFUL_SET_POD_NAME_LABEL).map(String::as_str),
        Some("db-2")
    );
    assert_eq!(labels.get(POD_INDEX_LABEL).map(String::as_str), Some("2"));
    let revision = labels
        .get(CONTROLLER_REVISION_HASH_LABEL)
        .cloned()
        .unwrap_or_default();
    assert!(revision.starts_with("db-"), "{revision}");
    let spec = db2.spec.clone().unwrap_or_default();
    assert_eq!(spec.hostname.as_deref(), Some("db-2"));
    assert_eq!(spec.subdomain.as_deref(), Some("db-headless"));
    let volumes = spec.volumes.unwrap_or_default();
    assert_eq!(
        volumes.len(),
        1,
        "the template volume of the same name is replaced"
    );
    assert_eq!(
        volumes[0]
            .persistent_volume_claim
            .as_ref()
            .map(|c| c.claim_name.as_str()),
        Some("data-db-2")
    );
    assert_eq!(controller_of(db2), ("StatefulSet".into(), "db".into()));
}

#[test]
fn job_pods_carry_the_job_labels_and_indexes() {
    let text = "\
apiVersion: batch/v1
kind: Job
metadata: {name: train, uid: job-uid}
spec:
  parallelism: 2
  completions: 4
  completionMode: Indexed
  template:
    metadata: {labels: {team: ml}}
    spec: {containers: [], restartPolicy: Never}
status: {completedIndexes: \"0\"}
";
    let input = load(text).expect("valid input");
    assert_eq!(input.pods.len(), 2);
    let want = [
        (JOB_NAME_LABEL, "train"),
        (LEGACY_JOB_NAME_LABEL, "train"),
        (CONTROLLER_UID_LABEL, "job-uid"),
        (LEGACY_CONTROLLER_UID_LABEL, "job-uid"),
        ("team", "ml"),
    ];
    for (pod, index) in input.pods.iter().zip(["1", "2"]) {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let suffix = name
            .strip_prefix(&format!("train-{index}-"))
            .expect("named <job>-<index>-<suffix>");
        assert!(is_generated_suffix(suffix), "{name}");
        let labels = labels(pod);
        for (key, value) in want {
            assert_eq!(labels.get(key).map(String::as_str), Some(value), "{key}");
        }
        let annotations = pod.metadata.annotations.clone().unwrap_or_default();
        assert_eq!(
            annotations.get(JOB_COMPLETION_INDEX).map(String::as_str),
            Some(index)
        );
        assert_eq!(controller_of(pod), ("Job".into(), "train".into()));
    }
}

#[test]
fn daemon_set_runs_where_its_controller_would_and_is_pinned_there() {
    // (case, template spec, nodes that get a pod)
    let cases = [
        (
            "every node whose taints are tolerated",
            "{containers: []}",
            vec!["n1", "n3"],
        ),
        (
            "a toleration admits the tainted node",
            "{containers: [], tolerations: [{key: dedicated, operator: Exists}]}",
            vec!["n1", "n2", "n3"],
        ),
        (
            "nodeSelector",
            "{containers: [], nodeSelector: {disk: ssd}}",
            vec!["n1"],
        ),
        (
            "required node affinity",
            "{containers: [], affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: disk, operator: DoesNotExist}]}]}}}}",
            vec!["n3"],
        ),
    ];
    for (name, spec, want) in cases {
        let text = format!(
            "{NODES}apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: agent}}\nspec: {{selector: {{matchLabels: {{a: b}}}}, template: {{metadata: {{labels: {{a: b}}}}, spec: {spec}}}}}\n"
        );
        let input = load(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let pinned: Vec<String> = input.pods.iter().filter_map(target_node_name).collect();
        assert_eq!(pinned, want, "{name}");
        for pod in &input.pods {
            let name = pod.metadata.name.clone().unwrap_or_default();
            assert!(is_generated_suffix(
                name.strip_prefix("agent-").unwrap_or_default()
            ));
            let spec = pod.spec.clone().unwrap_or_default();
            assert_eq!(spec.node_name, None, "scheduled by the scheduler");
            let terms = spec
                .affinity
                .and_then(|a| a.node_affinity)
                .and_then(|n| n.required_during_scheduling_ignored_during_execution)
                .map(|s| s.node_selector_terms)
                .unwrap_or_default();
            assert_eq!(terms.len(), 1, "one matchFields term");
            let tolerations = spec.tolerations.unwrap_or_default();
            for key in [
                "node.kubernetes.io/not-ready",
                "node.kubernetes.io/unreachable",
                "node.kubernetes.io/disk-pressure",
                "node.kubernetes.io/memory-pressure",
                "node.kubernetes.io/pid-pressure",
                "node.kubernetes.io/unschedulable",
            ] {
                assert!(
                    tolerations.iter().any(|t| t.key.as_deref() == Some(key)),
                    "{name}: tolerates {key}"
                );
            }
            assert!(
                !tolerations
                    .iter()
                    .any(|t| t.key.as_deref() == Some("node.kubernetes.io/network-unavailable"))
            );
        }
    }
}

#[test]
fn daemon_set_pod_already_on_a_node_is_not_created_again() {
    let text = format!(
        "{NODES}apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: agent}}\nspec: {{selector: {{matchLabels: {{a: b}}}}, template: {{metadata: {{labels: {{a: b}}}}, spec: {{containers: []}}}}}}\n---\napiVersion: v1\nkind: Pod\nmetadata: {{name: agent-old, ownerReferences: [{{apiVersion: apps/v1, kind: DaemonSet, name: agent, uid: u, controller: true}}]}}\nspec: {{nodeName: n1, containers: []}}\n"
    );
    let input = load(&text).expect("valid input");
    let pinned: Vec<String> = input.pods.iter().filter_map(target_node_name).collect();
    assert_eq!(
        pinned,
        vec!["n1", "n3"],
        "the existing pod on n1, a new one on n3"
    );
}

#[test]
fn pin_to_node_replaces_the_required_terms_and_keeps_the_rest() {
    let affinity: Affinity = serde_json::from_value(serde_json::json!({
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["old"]}]}
                ]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": {"matchExpressions": [{"key": "z", "operator": "Exists"}]}}
                ]
            }
        }))
        .expect("valid affinity");
    let pinned = serde_json::to_value(pin_to_node(Some(affinity), "n7")).unwrap_or_default();
    assert_eq!(
        pinned["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"],
        serde_json::json!({"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n7"]}]}
        ]})
    );
    assert_eq!(
        pinned["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"],
        1
    );
    let from_nothing = serde_json::to_value(pin_to_node(None, "n1")).unwrap_or_default();
    assert_eq!(
        from_nothing["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            [0]["matchFields"][0]["values"],
        serde_json::json!(["n1"])
    );
}

#[test]
fn free_indexes_skip_taken_ranges() {
    // (case, completions, taken ranges as (start, end), count, want)
    type Case = (
        &'static str,
        i64,
        &'static [(i64, i64)],
        usize,
        &'static [i64],
    );
    let cases: &[Case] = &[
        ("nothing taken", 5, &[], 3, &[0, 1, 2]),
        ("holes", 6, &[(0, 1), (2, 4)], 3, &[1, 4, 5]),
        (
            "unsorted, overlapping",
            6,
            &[(3, 5), (0, 2), (1, 4)],
            5,
            &[5],
        ),
        ("capped by completions", 3, &[(1, 2)], 5, &[0, 2]),
        (
            "a huge taken range is jumped",
            2_000_000_000,
            &[(0, 1_999_999_998)],
            5,
            &[1_999_999_998, 1_999_999_999],
        ),
    ];
    for (name, completions, taken, count, want) in cases {
        let taken = taken.iter().map(|(start, end)| *start..*end).collect();
        assert_eq!(free_indexes(*completions, taken, *count), *want, "{name}");
    }
}

#[test]
fn host_network_daemon_pods_tolerate_network_unavailable() {
    let mut spec = PodSpec {
        host_network: Some(true),
        ..PodSpec::default()
    };
    add_daemon_tolerations(&mut spec);
    add_daemon_tolerations(&mut spec);
    let tolerations = spec.tolerations.unwrap_or_default();
    assert_eq!(tolerations.len(), 7, "added once: {tolerations:?}");
    assert!(tolerations.iter().any(|t| t.key.as_deref()
        == Some("node.kubernetes.io/network-unavailable")
        && t.effect.as_deref() == Some("NoSchedule")));
}

#[test]
fn unreasonable_counts_are_errors_naming_the_field() {
    // (case, workload, expected error start)
    let cases = [
        (
            "negative replicas",
            "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs}\nspec: {replicas: -1, selector: {}, template: {}}\n",
            "test.yaml: document 0: spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            "too many replicas",
            "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec: {replicas: 2000000000, selector: {}, template: {}, serviceName: s}\n",
            "test.yaml: document 0: spec.replicas: Invalid value: 2000000000: berth simulate creates at most 10000 pods per workload",
        ),
        (
            "too much parallelism",
            "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {parallelism: 2000000000, template: {}}\n",
            "test.yaml: document 0: spec.parallelism: Invalid value: 2000000000: berth simulate creates at most 10000 pods per workload",
        ),
        (
            "negative parallelism",
            "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {parallelism: -2, template: {}}\n",
            "test.yaml: document 0: spec.parallelism: Invalid value: -2: must be greater than or equal to 0",
        ),
    ];
    for (name, text, want) in cases {
        let error = load(text).expect_err(name);
        assert!(error.starts_with(want), "{name}: {error}");
    }
    let list = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: node-a}}\n- {apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: -3, selector: {}, template: {}}}\n";
    let error = load(list).expect_err("negative replicas in a List");
    assert!(
        error.starts_with("test.yaml: document 0: items[1].spec.replicas: Invalid value: -3"),
        "{error}"
    );
}

#[test]
fn annotated_pods_get_their_implicit_pod_group() {
    let text = "\
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: ml}
spec:
  parallelism: 3
  template:
    metadata:
      labels: {berth.dev/pod-group: train}
      annotations: {berth.dev/min-member: \"3\"}
    spec: {containers: [], restartPolicy: Never}
---
apiVersion: v1
kind: Pod
metadata: {name: bad, labels: {berth.dev/pod-group: other}, annotations: {berth.dev/min-member: \"x\"}}
spec: {containers: []}
";
    let (input, warnings) = load_str(Path::new("test.yaml"), text).expect("valid input");
    let [group] = &input.pod_groups[..] else {
        panic!("one implicit group: {:?}", input.pod_groups);
    };
    assert_eq!(group.metadata.namespace.as_deref(), Some("ml"));
    assert_eq!(group.metadata.name.as_deref(), Some("train"));
    assert_eq!(group.spec.min_member, 3);
    let owners = group.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(
        (owners[0].kind.as_str(), owners[0].name.as_str()),
        ("Job", "train")
    );
    let [warning] = &warnings[..] else {
        panic!("one warning for the invalid annotation: {warnings:?}");
    };
    let warning = warning.to_string();
    assert!(
            warning.starts_with("test.yaml: document 1: pod default/bad: annotation berth.dev/min-member: invalid value \"x\""),
            "{warning}"
        );
}

#[test]
fn an_existing_pod_group_is_not_replaced() {
    let text = "\
apiVersion: berth.dev/v1alpha1
kind: PodGroup
metadata: {name: g}
spec: {minMember: 5}
---
apiVersion: v1
kind: Pod
metadata: {name: p, labels: {berth.dev/pod-group: g}, annotations: {berth.dev/min-member: \"2\"}}
spec: {containers: []}
";
    let input = load(text).expect("valid input");
    let mins: Vec<i32> = input.pod_groups.iter().map(|g| g.spec.min_member).collect();
    assert_eq!(mins, vec![5]);
}

/// Upstream `getPersistentVolumeClaims`: a claim per template in the set's namespace,
/// with the template's labels and the set's selector labels; the controller creates only
/// the claims that do not exist, leaving an existing one as it is.
#[test]
fn stateful_set_claims_carry_template_and_selector_labels_and_existing_claims_are_kept() {
    let text = "\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c}]}
  volumeClaimTemplates:
  - metadata: {name: data, labels: {tier: storage}}
    spec: {accessModes: [ReadWriteOnce], storageClassName: fast, resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-db-1, namespace: shop}
spec: {accessModes: [ReadWriteMany], storageClassName: kept, resources: {requests: {storage: 5Gi}}}
";
    let input = load(text).expect("valid input");
    let claim = |name: &str| {
        input
            .pvcs
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("claim {name}"))
            .clone()
    };
    assert_eq!(input.pvcs.len(), 2, "one claim created, one kept");
    let created = claim("data-db-0");
    assert_eq!(created.metadata.namespace.as_deref(), Some("shop"));
    let labels = created.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels,
        BTreeMap::from([
            ("app".to_string(), "db".to_string()),
            ("tier".to_string(), "storage".to_string()),
        ])
    );
    let class = |c: &PersistentVolumeClaim| c.spec.as_ref()?.storage_class_name.clone();
    assert_eq!(class(&created).as_deref(), Some("fast"));
    assert_eq!(class(&claim("data-db-1")).as_deref(), Some("kept"));
    assert!(
        created.metadata.uid.is_some(),
        "created claims get a uid, as the API server gives one"
    );
}

/// The input loaded with the WorkloadWithJob gate on.
fn load_with_workloads(text: &str) -> Result<ClusterInput, String> {
    let gates = ControllerOptions {
        workload_with_job: true,
    };
    crate::simulate::input::load_str_with(Path::new("test.yaml"), text, gates)
        .map(|(input, _)| input)
        .map_err(|e| e.to_string())
}

/// A Job `train` (uid fixed, so that the names are upstream's) with `extra` spec fields.
fn gang_job(extra: &str, status: &str) -> String {
    format!(
        "apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {{name: training}}
value: 1000
---
apiVersion: batch/v1
kind: Job
metadata: {{name: train, namespace: ml, uid: 6a1f2c3e-0000-4000-8000-000000000001}}
spec:
  parallelism: 3
{extra}  template:
    spec:
      priorityClassName: training
      restartPolicy: Never
      containers: [{{name: c, image: i}}]
{status}"
    )
}

#[test]
fn with_workload_with_job_a_new_job_gets_a_workload_and_a_pod_group() {
    let text = gang_job("  scheduling: {schedulingPolicy: {gang: {}}}\n", "");
    let input = load_with_workloads(&text).expect("valid input");
    // Names as upstream computes them for this uid (checked against its Go code).
    let workload_name = "train-7fccd77f65";
    let group_name = "train-7fccd77f65-train-pgt-0-844f74f67";

    let [workload] = &input.scheduling_workloads[..] else {
        panic!("one Workload: {:#?}", input.scheduling_workloads);
    };
    assert_eq!(workload.metadata.name.as_deref(), Some(workload_name));
    assert_eq!(workload.metadata.namespace.as_deref(), Some("ml"));
    let reference = workload.spec.controller_ref.clone().unwrap_or_default();
    assert_eq!(
        (
            reference.api_group.as_deref(),
            reference.kind.as_str(),
            reference.name.as_str()
        ),
        (Some("batch"), "Job", "train")
    );
    let templates = workload
        .spec
        .pod_group_templates
        .clone()
        .unwrap_or_default();
    let [template] = &templates[..] else {
        panic!("one template: {templates:#?}");
    };
    assert_eq!(template.name, "train-pgt-0");
    assert_eq!(template.priority_class_name.as_deref(), Some("training"));
    // A gang without minCount takes the Job's parallelism.
    assert_eq!(
        template
            .scheduling_policy
            .gang
            .as_ref()
            .map(|g| g.min_count),
        Some(3)
    );

    let [group] = &input.scheduling_pod_groups[..] else {
        panic!("one PodGroup: {:#?}", input.scheduling_pod_groups);
    };
    assert_eq!(group.metadata.name.as_deref(), Some(group_name));
    let reference = group.spec.workload_ref.clone().unwrap_or_default();
    assert_eq!(
        (
            reference.workload_name.as_str(),
            reference.template_name.as_str()
        ),
        (workload_name, "train-pgt-0")
    );
    // Priority admission resolved the template's class on the PodGroup.
    assert_eq!(group.spec.priority, Some(1000));
    let owners: Vec<(String, String, Option<bool>)> = group
        .metadata
        .owner_references
        .iter()
        .flatten()
        .map(|o| (o.kind.clone(), o.name.clone(), o.controller))
        .collect();
    assert_eq!(
        owners,
        [
            ("Job".to_string(), "train".to_string(), Some(true)),
            ("Workload".to_string(), workload_name.to_string(), None),
        ]
    );

    assert_eq!(input.pods.len(), 3);
    for pod in &input.pods {
        let named = pod
            .spec
            .as_ref()
            .and_then(|s| s.scheduling_group.as_ref())
            .and_then(|g| g.pod_group_name.as_deref());
        assert_eq!(named, Some(group_name));
        assert_eq!(controller_of(pod), ("Job".to_string(), "train".to_string()));
        let group_owner = pod
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.kind == "PodGroup")
            .map(|o| (o.name.as_str(), o.uid.as_str(), o.controller));
        assert_eq!(
            group_owner,
            Some((
                group_name,
                group.metadata.uid.as_deref().unwrap_or_default(),
                None
            ))
        );
    }
}

#[test]
fn without_spec_scheduling_the_job_gets_a_basic_group() {
    let input = load_with_workloads(&gang_job("", "")).expect("valid input");
    let [group] = &input.scheduling_pod_groups[..] else {
        panic!("one PodGroup: {:#?}", input.scheduling_pod_groups);
    };
    assert!(group.spec.scheduling_policy.basic.is_some());
    assert!(group.spec.scheduling_policy.gang.is_none());
}

#[test]
fn the_job_controller_leaves_some_jobs_ungrouped() {
    let gang = "  scheduling: {schedulingPolicy: {gang: {minCount: 2}}}\n";
    let cases = [
        ("the gate off", gang_job(gang, ""), false),
        (
            "a Job that started already",
            gang_job(gang, "status: {startTime: \"2024-01-01T00:00:00Z\"}\n"),
            true,
        ),
        (
            "a Job that names its group in its template",
            gang_job(gang, "").replace(
                "      priorityClassName: training\n",
                "      priorityClassName: training\n      schedulingGroup: {podGroupName: mine}\n",
            ),
            true,
        ),
        (
            "a Job with a controller that did not delegate its group",
            gang_job(gang, "").replace(
                "uid: 6a1f2c3e-0000-4000-8000-000000000001}",
                "uid: 6a1f2c3e-0000-4000-8000-000000000001, ownerReferences: [{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, name: js, uid: u1, controller: true}]}",
            ),
            true,
        ),
    ];
    for (name, text, gate) in cases {
        let input = if gate {
            load_with_workloads(&text)
        } else {
            load(&text)
        }
        .expect(name);
        assert!(input.scheduling_workloads.is_empty(), "{name}");
        assert!(input.scheduling_pod_groups.is_empty(), "{name}");
        let named = input
            .pods
            .iter()
            .filter(|p| {
                p.spec
                    .as_ref()
                    .and_then(|s| s.scheduling_group.as_ref())
                    .is_some()
            })
            .count();
        let by_template = name.contains("template");
        assert_eq!(
            named,
            if by_template { input.pods.len() } else { 0 },
            "{name}"
        );
    }
}

#[test]
fn a_started_job_reuses_its_pod_group_and_follows_its_gang_size() {
    // The Job's objects from an earlier sync, with minCount 2; the Job now asks for 3.
    let existing = "---
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata:
  name: train-7fccd77f65
  namespace: ml
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: train, uid: 6a1f2c3e-0000-4000-8000-000000000001, controller: true}]
spec:
  controllerRef: {apiGroup: batch, kind: Job, name: train}
  podGroupTemplates: [{name: train-pgt-0, priorityClassName: training, schedulingPolicy: {gang: {minCount: 2}}}]
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata:
  name: earlier
  namespace: ml
  uid: pg-uid
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: train, uid: 6a1f2c3e-0000-4000-8000-000000000001, controller: true}]
spec:
  workloadRef: {workloadName: train-7fccd77f65, templateName: train-pgt-0}
  priorityClassName: training
  schedulingPolicy: {gang: {minCount: 2}}
";
    let text = gang_job(
        "  scheduling: {schedulingPolicy: {gang: {minCount: 3}}}\n",
        "status: {startTime: \"2024-01-01T00:00:00Z\"}\n",
    ) + existing;
    let input = load_with_workloads(&text).expect("valid input");
    assert_eq!(input.scheduling_workloads.len(), 1, "nothing new");
    assert_eq!(input.scheduling_pod_groups.len(), 1, "nothing new");
    let min_counts = (
        input.scheduling_workloads[0]
            .spec
            .pod_group_templates
            .iter()
            .flatten()
            .filter_map(|t| t.scheduling_policy.gang.as_ref())
            .map(|g| g.min_count)
            .next(),
        input.scheduling_pod_groups[0]
            .spec
            .scheduling_policy
            .gang
            .as_ref()
            .map(|g| g.min_count),
    );
    assert_eq!(min_counts, (Some(3), Some(3)));
    for pod in &input.pods {
        let named = pod
            .spec
            .as_ref()
            .and_then(|s| s.scheduling_group.as_ref())
            .and_then(|g| g.pod_group_name.as_deref());
        assert_eq!(named, Some("earlier"));
    }
}
