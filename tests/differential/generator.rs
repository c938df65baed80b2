//! Random clusters for the differential run, from a seed: the same seed gives the same
//! scenario on every machine (ChaCha8, no other source of randomness).
//!
//! A scenario is nodes (zones, labels, taints, capacities, images, CSI volume limits),
//! running pods placed first (spec.nodeName), PodDisruptionBudgets, StorageClasses with
//! static PersistentVolumes, and pending pods given one at a time: container and
//! pod-level requests, node and pod (anti-)affinity, topology spread constraints,
//! tolerations, host ports, priorities and preemption policies, claims on static
//! volumes. The sizes are small on purpose: what the run compares is each decision, and
//! a small cluster makes ties, full nodes and preemptions frequent.

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use super::scenario::Scenario;

/// The PriorityClasses every random scenario may use (created with the scenario).
const PRIORITIES: &[(&str, i64)] = &[("low", 10), ("mid", 100), ("high", 1000)];
const ZONES: &[&str] = &["zone-a", "zone-b", "zone-c"];
const IMAGES: &[(&str, i64)] = &[
    ("registry.example/app:1", 300 * 1024 * 1024),
    ("registry.example/ml:2", 900 * 1024 * 1024),
    ("registry.example/db:3", 500 * 1024 * 1024),
    ("registry.example/tiny:1", 30 * 1024 * 1024),
];
const APPS: &[&str] = &["web", "db", "cache", "batch"];
const CSI_DRIVER: &str = "disk.csi.example.com";

/// The scenario of `seed`: names are prefixed with `d<seed>` so that one scenario's
/// objects never meet another's in a scheduler's cache.
pub fn scenario(seed: u64) -> Scenario {
    let mut g = Gen {
        rng: ChaCha8Rng::seed_from_u64(seed),
        prefix: format!("d{seed}"),
        namespace: format!("d{seed}"),
        zones: Vec::new(),
        nodes: Vec::new(),
        no_execute: Vec::new(),
        classes: Vec::new(),
        volumes: 0,
        claims: Vec::new(),
    };
    let mut objects = vec![json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": g.namespace}
    })];
    for (name, value) in PRIORITIES {
        objects.push(json!({
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": format!("{}-{name}", g.prefix)}, "value": value,
        }));
    }
    // A high priority that never preempts (admission takes a pod's preemptionPolicy
    // from its class).
    objects.push(json!({
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": format!("{}-never", g.prefix)}, "value": 1000,
        "preemptionPolicy": "Never",
    }));
    let zones = g.rng.random_range(1..=3);
    g.zones = ZONES[..zones].iter().map(|z| z.to_string()).collect();
    let nodes = g.rng.random_range(3..=7);
    for i in 0..nodes {
        objects.extend(g.node(i));
    }
    if g.rng.random_bool(0.3) {
        objects.extend(g.storage());
    }
    let running = g.rng.random_range(0..=nodes * 2);
    for i in 0..running {
        objects.push(g.pod(&format!("run-{i}"), true));
    }
    if running > 0 && g.rng.random_bool(0.4) {
        objects.push(g.budget());
    }
    let pending = g.rng.random_range(3..=10);
    let pending: Vec<Value> = (0..pending)
        .map(|i| g.pod(&format!("p-{i}"), false))
        .collect();
    Scenario {
        name: format!("random seed {seed}"),
        objects,
        pending,
        config: Scenario::default_config(),
        bulk: false,
    }
}

struct Gen {
    rng: ChaCha8Rng,
    prefix: String,
    namespace: String,
    zones: Vec<String>,
    nodes: Vec<String>,
    /// The nodes with a NoExecute taint.
    no_execute: Vec<String>,
    /// StorageClass names.
    classes: Vec<String>,
    volumes: usize,
    /// PVC names not yet used by a pod.
    claims: Vec<String>,
}

impl Gen {
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        items.choose(&mut self.rng).expect("a non-empty list")
    }

    fn zone(&mut self) -> String {
        let zones = self.zones.clone();
        self.pick(&zones).clone()
    }

    fn node(&mut self, i: usize) -> Vec<Value> {
        let name = format!("{}-n{i}", self.prefix);
        self.nodes.push(name.clone());
        let zone = self.zone();
        let cpu = *self.pick(&["2", "4", "4", "8", "3500m"]);
        let memory = *self.pick(&["4Gi", "8Gi", "16Gi"]);
        let pods = *self.pick(&[4, 10, 110]);
        let mut labels = json!({
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "topology.kubernetes.io/zone": zone,
            "topology.kubernetes.io/region": "region-1",
        });
        if self.rng.random_bool(0.5) {
            labels["disk"] = json!(*self.pick(&["ssd", "hdd"]));
        }
        if self.rng.random_bool(0.3) {
            labels["tier"] = json!(*self.pick(&["1", "2"]));
        }
        let mut spec = json!({});
        if self.rng.random_bool(0.25) {
            let effect = *self.pick(&["NoSchedule", "PreferNoSchedule", "NoExecute"]);
            if effect == "NoExecute" {
                self.no_execute.push(name.clone());
            }
            spec["taints"] = json!([{"key": "dedicated", "value": *self.pick(&["gpu", "infra"]), "effect": effect}]);
        }
        if self.rng.random_bool(0.05) {
            spec["unschedulable"] = json!(true);
        }
        let images: Vec<Value> = IMAGES
            .iter()
            .filter(|_| self.rng.random_bool(0.4))
            .map(|(image, size)| json!({"names": [image], "sizeBytes": size}))
            .collect();
        let resources = json!({"cpu": cpu, "memory": memory, "pods": pods.to_string(), "ephemeral-storage": "100Gi"});
        let mut objects = vec![json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": spec,
            "status": {"capacity": resources, "allocatable": resources, "images": images},
        })];
        if self.rng.random_bool(0.3) {
            objects.push(json!({
                "apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                "metadata": {"name": name},
                "spec": {"drivers": [{
                    "name": CSI_DRIVER, "nodeID": name,
                    "allocatable": {"count": self.rng.random_range(1..=2)},
                    "topologyKeys": ["topology.kubernetes.io/zone"],
                }]},
            }));
        }
        objects
    }

    /// A WaitForFirstConsumer class of static CSI volumes, some pinned to a zone, some to
    /// a node; and claims on them for pods to use.
    fn storage(&mut self) -> Vec<Value> {
        let class = format!("{}-local", self.prefix);
        self.classes.push(class.clone());
        let mut objects = vec![json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": class},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        })];
        let volumes = self.rng.random_range(1..=4);
        for _ in 0..volumes {
            let name = format!("{}-pv{}", self.prefix, self.volumes);
            self.volumes += 1;
            let term = if self.rng.random_bool(0.5) {
                let zone = self.zone();
                json!({"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]})
            } else {
                let nodes = self.nodes.clone();
                let node = self.pick(&nodes).clone();
                json!({"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]})
            };
            let size = *self.pick(&["1Gi", "5Gi", "10Gi"]);
            objects.push(json!({
                "apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": name},
                "spec": {
                    "capacity": {"storage": size},
                    "accessModes": ["ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": class,
                    "csi": {"driver": CSI_DRIVER, "volumeHandle": name},
                    "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
                },
            }));
        }
        let claims = self.rng.random_range(1..=volumes + 1);
        for i in 0..claims {
            let name = format!("claim-{i}");
            self.claims.push(name.clone());
            objects.push(json!({
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": self.namespace},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": class,
                    "resources": {"requests": {"storage": *self.pick(&["1Gi", "4Gi"])}},
                },
            }));
        }
        objects
    }

    fn budget(&mut self) -> Value {
        let app = *self.pick(APPS);
        let mut spec = json!({"selector": {"matchLabels": {"app": app}}});
        if self.rng.random_bool(0.5) {
            spec["maxUnavailable"] = json!(self.rng.random_range(0..=1));
        } else {
            spec["minAvailable"] = json!(self.rng.random_range(1..=2));
        }
        json!({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": format!("pdb-{app}"), "namespace": self.namespace},
            "spec": spec,
        })
    }

    fn quantity_cpu(&mut self) -> String {
        (*self.pick(&["100m", "250m", "500m", "1", "1500m", "2"])).to_string()
    }

    fn quantity_memory(&mut self) -> String {
        (*self.pick(&["128Mi", "512Mi", "1Gi", "2Gi", "3Gi"])).to_string()
    }

    fn requests(&mut self) -> Value {
        match self.rng.random_range(0..10) {
            0 => json!({}),
            1 => json!({"cpu": self.quantity_cpu()}),
            _ => json!({"cpu": self.quantity_cpu(), "memory": self.quantity_memory()}),
        }
    }

    fn pod(&mut self, name: &str, running: bool) -> Value {
        let app = *self.pick(APPS);
        let image = self.pick(IMAGES).0;
        let mut container = json!({"name": "main", "image": image});
        let requests = self.requests();
        if requests.as_object().is_some_and(|r| !r.is_empty()) {
            container["resources"] = json!({"requests": requests});
        }
        if self.rng.random_bool(0.1) {
            container["ports"] =
                json!([{"containerPort": 8080, "hostPort": *self.pick(&[8080, 9090])}]);
        }
        let mut spec = json!({"containers": [container]});
        if self.rng.random_bool(0.2) {
            let sidecar_requests = self.requests();
            spec["initContainers"] = json!([{
                "name": "init", "image": "registry.example/tiny:1",
                "resources": {"requests": sidecar_requests},
            }]);
        }
        if !running && self.rng.random_bool(0.1) {
            // Pod-level requests, at least the containers' (as admission requires).
            let cpu = *self.pick(&["3", "4"]);
            let memory = *self.pick(&["4Gi", "6Gi"]);
            spec["resources"] = json!({"requests": {"cpu": cpu, "memory": memory}});
        }
        if self.rng.random_bool(0.5) {
            let (class, _) = *self.pick(PRIORITIES);
            let class = if !running && self.rng.random_bool(0.2) {
                "never"
            } else {
                class
            };
            spec["priorityClassName"] = json!(format!("{}-{class}", self.prefix));
        }
        if self.rng.random_bool(0.3) {
            spec["tolerations"] = json!([match self.rng.random_range(0..3) {
                0 => json!({"operator": "Exists"}),
                1 => json!({"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}),
                _ => json!({"key": "dedicated", "operator": "Equal", "value": "gpu"}),
            }]);
        }
        if !running {
            self.constraints(&mut spec, app);
        }
        if !running && !self.claims.is_empty() && self.rng.random_bool(0.3) {
            let claim = self.claims.remove(0);
            spec["volumes"] =
                json!([{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]);
        }
        let mut pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": self.namespace, "labels": {"app": app}},
            "spec": spec,
        });
        if running {
            let nodes = self.nodes.clone();
            let node = self.pick(&nodes).clone();
            // The taint manager would evict a running pod that does not tolerate its
            // node's NoExecute taint, while the run goes on.
            if self.no_execute.contains(&node) {
                pod["spec"]["tolerations"] = json!([{"operator": "Exists"}]);
            }
            pod["spec"]["nodeName"] = json!(node);
        }
        pod
    }

    fn selector(&mut self) -> Value {
        let app = *self.pick(APPS);
        json!({"matchLabels": {"app": app}})
    }

    fn constraints(&mut self, spec: &mut Value, app: &str) {
        let mut affinity = json!({});
        if self.rng.random_bool(0.3) {
            let term = match self.rng.random_range(0..3) {
                0 => {
                    json!({"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]})
                }
                1 => {
                    let zone = self.zone();
                    json!({"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "NotIn", "values": [zone]}]})
                }
                _ => json!({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}),
            };
            if self.rng.random_bool(0.5) {
                affinity["nodeAffinity"] = json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}});
            } else {
                let weight = self.rng.random_range(1..=100);
                affinity["nodeAffinity"] = json!({"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": weight, "preference": term}]});
            }
        }
        if self.rng.random_bool(0.1) {
            spec["nodeSelector"] = json!({"kubernetes.io/os": "linux"});
        }
        const TOPOLOGY_KEYS: [&str; 2] = ["kubernetes.io/hostname", "topology.kubernetes.io/zone"];
        let topology = |g: &mut Gen| TOPOLOGY_KEYS[g.rng.random_range(0..TOPOLOGY_KEYS.len())];
        if self.rng.random_bool(0.25) {
            let term = json!({"labelSelector": self.selector(), "topologyKey": topology(self)});
            let key = if self.rng.random_bool(0.5) {
                "podAffinity"
            } else {
                "podAntiAffinity"
            };
            if self.rng.random_bool(0.5) {
                affinity[key] = json!({"requiredDuringSchedulingIgnoredDuringExecution": [term]});
            } else {
                let weight = self.rng.random_range(1..=100);
                affinity[key] = json!({"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": weight, "podAffinityTerm": term}]});
            }
        }
        if affinity.as_object().is_some_and(|a| !a.is_empty()) {
            spec["affinity"] = affinity;
        }
        if self.rng.random_bool(0.25) {
            let when = *self.pick(&["DoNotSchedule", "ScheduleAnyway"]);
            let mut constraint = json!({
                "maxSkew": self.rng.random_range(1..=2),
                "topologyKey": topology(self),
                "whenUnsatisfiable": when,
                "labelSelector": {"matchLabels": {"app": app}},
            });
            if when == "DoNotSchedule" && self.rng.random_bool(0.2) {
                constraint["minDomains"] = json!(self.rng.random_range(2..=4));
            }
            if self.rng.random_bool(0.2) {
                constraint["nodeTaintsPolicy"] = json!("Honor");
            }
            spec["topologySpreadConstraints"] = json!([constraint]);
        }
    }
}
