//! What a snapshot leaves out: data that may hold secrets and that no scheduler reads.
//!
//! Removed, from every document:
//!
//! - `managedFields` (field ownership, with every field's previous owners) and the
//!   `kubectl.kubernetes.io/last-applied-configuration` annotation (a full copy of the
//!   applied object, secrets in it included), from `metadata` and from pod templates'
//!   `metadata`; an annotation map left empty is removed;
//! - in every container of a pod spec (`containers`, `initContainers`,
//!   `ephemeralContainers`) — the pod's own `spec`, a workload's `spec.template.spec`
//!   and a CronJob's `spec.jobTemplate.spec.template.spec` — each `env` entry's `value`
//!   and `valueFrom` (the `name` stays), `envFrom`, `command`, `args`, and the
//!   `exec.command` of its probes and lifecycle hooks.
//!
//! Everything the scheduler reads stays: names, labels, other annotations, resources,
//! ports, volumes, affinity, tolerations, nodeName, status, owner references.

use serde_json::Value;

/// The annotation `kubectl apply` keeps a copy of the applied object in.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Where a document may hold a pod spec.
const POD_SPEC_PATHS: &[&str] = &[
    "/spec",
    "/spec/template/spec",
    "/spec/jobTemplate/spec/template/spec",
];

/// Where a document may hold object metadata.
const METADATA_PATHS: &[&str] = &[
    "/metadata",
    "/spec/template/metadata",
    "/spec/jobTemplate/spec/template/metadata",
];

const CONTAINER_LISTS: &[&str] = &["containers", "initContainers", "ephemeralContainers"];

/// Container fields removed whole.
const CONTAINER_FIELDS: &[&str] = &["envFrom", "command", "args"];

/// Container fields whose `exec.command` is removed.
const EXEC_HOLDERS: &[&str] = &["livenessProbe", "readinessProbe", "startupProbe"];

/// Removes, in place, what the module documentation lists.
pub fn scrub(document: &mut Value) {
    for path in METADATA_PATHS {
        if let Some(Value::Object(metadata)) = document.pointer_mut(path) {
            metadata.remove("managedFields");
            let emptied = match metadata.get_mut("annotations") {
                Some(Value::Object(annotations)) => {
                    annotations.remove(LAST_APPLIED_ANNOTATION);
                    annotations.is_empty()
                }
                _ => false,
            };
            if emptied {
                metadata.remove("annotations");
            }
        }
    }
    for path in POD_SPEC_PATHS {
        let Some(Value::Object(spec)) = document.pointer_mut(path) else {
            continue;
        };
        for list in CONTAINER_LISTS {
            if let Some(Value::Array(containers)) = spec.get_mut(*list) {
                containers.iter_mut().for_each(scrub_container);
            }
        }
    }
}

fn scrub_container(container: &mut Value) {
    let Value::Object(fields) = container else {
        return;
    };
    for field in CONTAINER_FIELDS {
        fields.remove(*field);
    }
    if let Some(Value::Array(env)) = fields.get_mut("env") {
        for variable in env.iter_mut().filter_map(Value::as_object_mut) {
            variable.remove("value");
            variable.remove("valueFrom");
        }
    }
    for holder in EXEC_HOLDERS {
        remove_exec_command(fields.get_mut(*holder));
    }
    if let Some(Value::Object(lifecycle)) = fields.get_mut("lifecycle") {
        for hook in lifecycle.values_mut() {
            remove_exec_command(Some(hook));
        }
    }
}

fn remove_exec_command(handler: Option<&mut Value>) {
    if let Some(Value::Object(exec)) = handler.and_then(|h| h.get_mut("exec")) {
        exec.remove("command");
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn secrets_are_removed_and_scheduling_fields_kept() {
        let container = || {
            json!({
                "name": "app",
                "image": "registry.example/app:1",
                "command": ["/bin/app", "--token=s3cret"],
                "args": ["--password", "hunter2"],
                "env": [
                    {"name": "PLAIN", "value": "s3cret"},
                    {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}
                ],
                "envFrom": [{"secretRef": {"name": "db"}}],
                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                "ports": [{"containerPort": 8080, "hostPort": 80}],
                "livenessProbe": {"exec": {"command": ["check", "--key=s3cret"]}, "periodSeconds": 5},
                "lifecycle": {"preStop": {"exec": {"command": ["drain", "s3cret"]}}}
            })
        };
        let scrubbed_container = json!({
            "name": "app",
            "image": "registry.example/app:1",
            "env": [{"name": "PLAIN"}, {"name": "FROM_SECRET"}],
            "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
            "ports": [{"containerPort": 8080, "hostPort": 80}],
            "livenessProbe": {"exec": {}, "periodSeconds": 5},
            "lifecycle": {"preStop": {"exec": {}}}
        });
        let metadata = || {
            json!({
                "name": "web",
                "namespace": "shop",
                "labels": {"app": "web"},
                "annotations": {
                    LAST_APPLIED_ANNOTATION: "{\"kind\":\"Secret\"}",
                    "example.com/owner": "team-a"
                },
                "managedFields": [{"manager": "kubectl", "operation": "Update"}],
                "resourceVersion": "42"
            })
        };
        let kept_metadata = json!({
            "name": "web",
            "namespace": "shop",
            "labels": {"app": "web"},
            "annotations": {"example.com/owner": "team-a"},
            "resourceVersion": "42"
        });
        let pod_spec = |container: Value| {
            json!({
                "nodeName": "node-1",
                "tolerations": [{"key": "gpu", "operator": "Exists"}],
                "containers": [container.clone()],
                "initContainers": [container.clone()],
                "ephemeralContainers": [container]
            })
        };
        let cases = [
            (
                "pod: its containers, init and ephemeral containers and metadata",
                json!({"kind": "Pod", "metadata": metadata(), "spec": pod_spec(container()), "status": {"phase": "Running"}}),
                json!({"kind": "Pod", "metadata": kept_metadata.clone(), "spec": pod_spec(scrubbed_container.clone()), "status": {"phase": "Running"}}),
            ),
            (
                "workload: the pod template's containers and metadata",
                json!({"kind": "ReplicaSet", "metadata": metadata(), "spec": {"replicas": 2, "template": {"metadata": metadata(), "spec": pod_spec(container())}}}),
                json!({"kind": "ReplicaSet", "metadata": kept_metadata.clone(), "spec": {"replicas": 2, "template": {"metadata": kept_metadata.clone(), "spec": pod_spec(scrubbed_container.clone())}}}),
            ),
            (
                "cronjob: the job template's pod template",
                json!({"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": {"spec": pod_spec(container())}}}}}),
                json!({"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": {"spec": pod_spec(scrubbed_container.clone())}}}}}),
            ),
            (
                "an annotation map holding only last-applied is removed",
                json!({"kind": "Node", "metadata": {"name": "n", "annotations": {LAST_APPLIED_ANNOTATION: "{}"}}}),
                json!({"kind": "Node", "metadata": {"name": "n"}}),
            ),
            (
                "a node keeps everything but managedFields",
                json!({"kind": "Node", "metadata": {"name": "n", "managedFields": []}, "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}, "status": {"allocatable": {"cpu": "4"}}}),
                json!({"kind": "Node", "metadata": {"name": "n"}, "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}, "status": {"allocatable": {"cpu": "4"}}}),
            ),
        ];
        for (name, mut document, expected) in cases {
            scrub(&mut document);
            assert_eq!(document, expected, "{name}");
        }
    }

    #[test]
    fn odd_shapes_are_left_alone() {
        for (name, document) in [
            ("not an object", json!("text")),
            (
                "containers not a list",
                json!({"spec": {"containers": "x"}}),
            ),
            (
                "container not an object",
                json!({"spec": {"containers": [1, null]}}),
            ),
            (
                "env entry not an object",
                json!({"spec": {"containers": [{"env": ["A=1"]}]}}),
            ),
            (
                "annotations not a map",
                json!({"metadata": {"annotations": []}}),
            ),
        ] {
            let mut scrubbed = document.clone();
            scrub(&mut scrubbed);
            assert_eq!(scrubbed, document, "{name}");
        }
    }
}
