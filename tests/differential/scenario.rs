//! What the differential run gives both schedulers: a cluster (objects created first,
//! running pods with `spec.nodeName`), pending pods given one at a time, and the
//! profile as a KubeSchedulerConfiguration.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// One scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// How failures name it: `examples/…yaml`, `random seed 7`.
    pub name: String,
    /// Created in this order before any pending pod. Pods here are bound already.
    pub objects: Vec<Value>,
    /// Pods without a node, or workloads (Deployment, ReplicaSet, StatefulSet) whose
    /// replicas are added one at a time, in this order.
    pub pending: Vec<Value>,
    /// The KubeSchedulerConfiguration: kube-scheduler runs it, berth runs what
    /// `berth convert` makes of it.
    pub config: Value,
    /// The pending pods are given at once, in order, as identical pods a controller
    /// creates in bulk (opportunistic batching's case), rather than one at a time.
    pub bulk: bool,
}

impl Scenario {
    /// kube-scheduler 1.37's default profile, as it is (DynamicResources included).
    pub fn default_config() -> Value {
        json!({
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{
                "schedulerName": "default-scheduler",
            }],
        })
    }

    /// The scheduler names the configuration's profiles serve.
    pub fn scheduler_names(&self) -> Vec<String> {
        self.config["profiles"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                p["schedulerName"]
                    .as_str()
                    .unwrap_or("default-scheduler")
                    .to_string()
            })
            .collect()
    }

    /// An example file as a scenario. Its SchedulerProfiles are replaced by `config`
    /// (the same profiles as a KubeSchedulerConfiguration; the run checks that `berth
    /// convert` gives back the example's). The file goes through the loader of `berth
    /// simulate`, so its workloads become the pods, ReplicaSets and claims their
    /// controllers would create, with owner references: the same input for both
    /// schedulers. Pending pods are given in the loader's order.
    pub fn from_file(name: &str, path: &Path, config: Value) -> Result<Scenario, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let (input, _) =
            berth::simulate::input::load_str(path, &text).map_err(|e| e.to_string())?;
        let mut objects: Vec<Value> = Vec::new();
        objects.extend(input.namespaces.iter().map(to_json));
        // The API server's own classes exist in every cluster (and cannot be deleted).
        objects.extend(
            input
                .priority_classes
                .iter()
                .filter(|c| {
                    !c.metadata
                        .name
                        .as_deref()
                        .unwrap_or_default()
                        .starts_with("system-")
                })
                .map(to_json),
        );
        objects.extend(input.storage_classes.iter().map(to_json));
        objects.extend(input.csi_nodes.iter().map(to_json));
        objects.extend(input.pvs.iter().map(to_json));
        objects.extend(input.pvcs.iter().map(to_json));
        objects.extend(input.pdbs.iter().map(to_json));
        objects.extend(input.services.iter().map(to_json));
        objects.extend(input.replication_controllers.iter().map(to_json));
        objects.extend(input.deployments.iter().map(to_json));
        objects.extend(input.replica_sets.iter().map(to_json));
        objects.extend(input.stateful_sets.iter().map(to_json));
        objects.extend(input.jobs.iter().map(to_json));
        objects.extend(input.daemon_sets.iter().map(to_json));
        objects.extend(input.nodes.iter().map(to_json));
        objects.extend(input.device_classes.iter().map(to_json));
        objects.extend(input.resource_slices.iter().map(to_json));
        objects.extend(input.device_taint_rules.iter().map(to_json));
        objects.extend(input.resource_claim_templates.iter().map(to_json));
        objects.extend(input.resource_claims.iter().map(to_json));
        objects.extend(input.scheduling_workloads.iter().map(to_json));
        objects.extend(input.scheduling_pod_groups.iter().map(to_json));
        objects.extend(input.running_pods().map(to_json));
        if !input.pod_groups.is_empty() {
            return Err("it has berth.dev PodGroups, which kube-scheduler does not read".into());
        }
        if !input.scheduler_plugins_pod_groups.is_empty() {
            return Err(
                "it has scheduler-plugins PodGroups (scheduling.x-k8s.io), which kube-scheduler \
                 does not read"
                    .into(),
            );
        }
        let pending: Vec<Value> = input.pending_pods().map(to_json).collect();
        // Namespaces the example uses without declaring them.
        let mut namespaces: Vec<String> = objects
            .iter()
            .chain(&pending)
            .filter_map(|o| o["metadata"]["namespace"].as_str())
            .filter(|ns| *ns != "default")
            .map(str::to_string)
            .collect();
        namespaces.sort();
        namespaces.dedup();
        for namespace in namespaces.into_iter().rev() {
            let declared = objects
                .iter()
                .any(|o| o["kind"] == "Namespace" && o["metadata"]["name"] == namespace.as_str());
            if !declared {
                objects.insert(
                    0,
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
                );
            }
        }
        Ok(Scenario {
            name: name.to_string(),
            objects: objects.into_iter().map(cleaned).collect(),
            pending: pending.into_iter().map(cleaned).collect(),
            config,
            bulk: false,
        })
    }
}

/// An object as a client creates it: no status (a node keeps its own, the API server
/// takes it on create), no server-set metadata.
fn cleaned(mut object: Value) -> Value {
    if let Some(metadata) = object["metadata"].as_object_mut() {
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "managedFields",
        ] {
            metadata.remove(field);
        }
    }
    if object["kind"] != "Node"
        && let Some(o) = object.as_object_mut()
    {
        o.remove("status");
    }
    object
}

/// An object as JSON.
pub fn to_json<T: serde::Serialize>(object: &T) -> Value {
    serde_json::to_value(object).expect("an object as JSON")
}

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A KubeSchedulerConfiguration file.
pub fn config_file(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
