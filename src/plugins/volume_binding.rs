//! VolumeBinding: a pod runs only where its PersistentVolumeClaims can be served, and its
//! waiting claims are bound (or provisioned) for the node it is placed on (upstream
//! `volumebinding`).
//!
//! - **PreFilter** reads the pod's claims: a missing, lost or deleting claim, an
//!   ephemeral claim the pod does not own, or an unbound claim of an Immediate class
//!   (the PV controller binds those, not the scheduler) rejects the pod; a pod without
//!   claims skips the plugin.
//! - **Filter** checks the bound claims' volumes against the node (their node affinity),
//!   and finds for each WaitForFirstConsumer claim an Available volume that fits on the
//!   node, or else checks that its class can provision there (a provisioner, the
//!   class's allowedTopologies and, for drivers that track it, storage capacity). All
//!   failed checks of a node are reported together, as upstream does.
//! - **Reserve** assumes the node's bindings in the storage lister's assume cache, so the
//!   next pod does not pick the same volume; **Unreserve** reverts them.
//! - **PreBind** writes them through the [`VolumeWriter`](crate::framework::VolumeWriter)
//!   (a PV's claimRef, a claim's selected-node annotation) and waits, polling every
//!   second of the scheduler's clock for at most `bindTimeoutSeconds`, until the PV
//!   controller and the provisioner have completed them; a failure or the timeout fails
//!   the binding cycle, which unreserves and retries the pod.
//! - **Score** (upstream's StorageCapacityScoring, beta and on by default since 1.37)
//!   rates nodes by how full the chosen volumes would be, through `shape`; by default it
//!   prefers the nodes with the most free capacity. A profile that wants no storage
//!   scoring disables VolumeBinding at Score, as upstream.
//!
//! The binder's logic is in [`binder`]; the cache it assumes into is
//! [`Volumes`](crate::cluster::Volumes).

pub mod binder;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cluster::lock::mutex as lock;
use crate::cluster::{NodeInfo, PodInfo, Snapshot, Volumes};
use crate::framework::{
    ActionType, Clock, ClusterEvent, Code, CycleState, EventResource, FieldError, FilterPlugin,
    Handle, PluginArgs, PluginError, PreBindPlugin, PreFilterPlugin, PreFilterResult,
    PreScorePlugin, ReservePlugin, ScorePlugin, Status, VolumeWriter,
};
use crate::helpers::score::{
    FunctionShapePoint, MAX_UTILIZATION, UtilizationShapePoint, broken_linear, scaled_shape,
    validate_shape,
};
use crate::helpers::volumes::volume_class;

use binder::{
    PodVolumeClaims, PodVolumes, assume_pod_volumes, bind_api_update, capacity_bytes,
    check_bindings, check_pod_claims, find_pod_volumes, get_pod_volume_claims, quantity_bytes,
    requested_bytes, revert_assumed,
};

/// PreFilter's rejection of an unbound claim of an Immediate class.
pub const ERR_UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";

/// upstream's default `bindTimeoutSeconds`.
pub const DEFAULT_BIND_TIMEOUT_SECONDS: i64 = 600;

/// Upstream's default `shape` since 1.37 (v1 `SetDefaults_VolumeBindingArgs` with
/// StorageCapacityScoring on): score 10 for an empty volume, 0 for a full one, so the node
/// with the most free capacity wins.
pub const DEFAULT_SHAPE: [UtilizationShapePoint; 2] = [
    UtilizationShapePoint {
        utilization: 0,
        score: 10,
    },
    UtilizationShapePoint {
        utilization: MAX_UTILIZATION,
        score: 0,
    },
];

/// How often PreBind checks whether the bindings completed.
const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// Args of VolumeBinding (upstream `VolumeBindingArgs`, v1 defaults).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct VolumeBindingArgs {
    /// How long PreBind waits for the volumes to be bound (the PV controller) or
    /// provisioned (the external provisioner), in seconds; 600 when omitted. 0 fails
    /// every binding that has anything to wait for.
    #[schemars(range(min = 0))]
    pub bind_timeout_seconds: i64,
    /// The storage capacity score (upstream's StorageCapacityScoring): a function from
    /// the utilization of the chosen volumes (0..=100) to a score (0..=10), by strictly
    /// increasing utilization. Omitted, it is upstream's 1.37 default, which prefers the
    /// nodes with the most free capacity; `[{utilization: 0, score: 0}, {utilization: 100,
    /// score: 10}]` packs volumes onto the fullest nodes instead.
    #[schemars(length(min = 1, max = 16))]
    pub shape: Vec<UtilizationShapePoint>,
}

impl Default for VolumeBindingArgs {
    fn default() -> Self {
        VolumeBindingArgs {
            bind_timeout_seconds: DEFAULT_BIND_TIMEOUT_SECONDS,
            shape: DEFAULT_SHAPE.to_vec(),
        }
    }
}

impl PluginArgs for VolumeBindingArgs {
    /// Upstream `ValidateVolumeBindingArgs`.
    fn validate(&self, path: &str) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if self.bind_timeout_seconds < 0 {
            errors.push(FieldError::new(
                format!("{path}.bindTimeoutSeconds"),
                self.bind_timeout_seconds,
                "invalid BindTimeoutSeconds, should not be a negative value",
            ));
        }
        errors.extend(validate_shape(&self.shape, &format!("{path}.shape")));
        errors
    }
}

/// What PreFilter read, and what Filter found per node.
#[derive(Debug, Clone)]
struct State {
    claims: Arc<PodVolumeClaims>,
    /// By node name; filled by Filter, which runs for nodes in parallel.
    by_node: Arc<Mutex<HashMap<String, NodeVolumes>>>,
    has_static_bindings: Arc<Mutex<bool>>,
    /// Set by Reserve: every claim was bound already, PreBind has nothing to do.
    all_bound: bool,
    /// Set by Reserve: the assumed bindings of the chosen node.
    reserved: Option<NodeVolumes>,
}

/// The bindings a node needs, and the node's labels they were checked against.
#[derive(Debug, Clone)]
struct NodeVolumes {
    volumes: PodVolumes,
    labels: BTreeMap<String, String>,
}

pub struct VolumeBinding {
    volumes: Arc<Volumes>,
    writer: Arc<dyn VolumeWriter>,
    clock: Arc<dyn Clock>,
    bind_timeout: Duration,
    shape: Vec<FunctionShapePoint>,
}

crate::plugin! {
    VolumeBinding {
        name: "VolumeBinding",
        points: [PreFilter, Filter, PreScore, Score, Reserve, PreBind],
    }

    impl Plugin {
        fn as_sign(&self) -> Option<&dyn crate::framework::SignPlugin> {
            Some(self)
        }

        /// Upstream's registration: a class added or changed, a claim or volume added or
        /// changed, a node added or relabelled, a CSINode, CSIDriver or storage capacity
        /// added or changed.
        fn events_to_register(&self) -> Option<Vec<ClusterEvent>> {
            let add_or_update = ActionType::ADD | ActionType::UPDATE;
            Some(vec![
                ClusterEvent::new(EventResource::StorageClass, add_or_update),
                ClusterEvent::new(EventResource::PersistentVolumeClaim, add_or_update),
                ClusterEvent::new(EventResource::PersistentVolume, add_or_update),
                ClusterEvent::new(
                    EventResource::Node,
                    ActionType::ADD | ActionType::UPDATE_NODE_LABEL | ActionType::UPDATE_NODE_TAINT,
                ),
                ClusterEvent::new(EventResource::CSINode, add_or_update),
                ClusterEvent::new(EventResource::CSIDriver, ActionType::UPDATE),
                ClusterEvent::new(EventResource::CSIStorageCapacity, add_or_update),
            ])
        }
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str = "Places a pod only where its PersistentVolumeClaims can be bound or provisioned, and binds them before the pod.";
        type Args = VolumeBindingArgs;

        fn build(args: VolumeBindingArgs, handle: &Handle) -> Result<Self, PluginError> {
            Ok(VolumeBinding {
                volumes: handle.volumes.clone(),
                writer: handle.volume_writer.clone(),
                clock: handle.clock.clone(),
                bind_timeout: Duration::from_secs(args.bind_timeout_seconds.max(0) as u64),
                shape: scaled_shape(&args.shape),
            })
        }
    }
}

#[async_trait]
impl PreFilterPlugin for VolumeBinding {
    async fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        match check_pod_claims(&self.volumes, &pod.pod) {
            Err(message) => return (None, Status::unresolvable(message)),
            Ok(false) => return (None, Status::skip()),
            Ok(true) => {}
        }
        let claims = match get_pod_volume_claims(&self.volumes, &pod.pod) {
            Ok(claims) => claims,
            Err(message) => return (None, Status::error(message)),
        };
        if !claims.unbound_immediate.is_empty() {
            return (None, Status::unresolvable(ERR_UNBOUND_IMMEDIATE));
        }
        state.write(State {
            claims: Arc::new(claims),
            by_node: Arc::default(),
            has_static_bindings: Arc::default(),
            all_bound: false,
            reserved: None,
        });
        (None, Status::success())
    }
}

impl FilterPlugin for VolumeBinding {
    fn filter(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
        let Some(state) = state.read::<State>() else {
            return Status::error("reading VolumeBinding's PreFilter state: not found");
        };
        let Some(node) = node.node() else {
            return Status::error("node not found");
        };
        let name = node.metadata.name.clone().unwrap_or_default();
        let labels = node.metadata.labels.clone().unwrap_or_default();
        let verdict = match find_pod_volumes(&self.volumes, &state.claims, &name, &labels) {
            Ok(verdict) => verdict,
            Err(message) => return Status::error(message),
        };
        if !verdict.reasons.is_empty() {
            let reasons = verdict.reasons.iter().map(|r| r.message().to_string());
            return Status::with_reasons(Code::UnschedulableAndUnresolvable, reasons.collect());
        }
        if !verdict.pod_volumes.static_bindings.is_empty() {
            *lock(&state.has_static_bindings) = true;
        }
        lock(&state.by_node).insert(
            name,
            NodeVolumes {
                volumes: verdict.pod_volumes,
                labels,
            },
        );
        Status::success()
    }
}

#[async_trait]
impl PreScorePlugin for VolumeBinding {
    /// Upstream's PreScore with StorageCapacityScoring on: skip only a pod without claims
    /// (PreFilter skipped it).
    async fn pre_score(&self, state: &mut CycleState, _: &PodInfo, _: &[Arc<NodeInfo>]) -> Status {
        match state.read::<State>() {
            Some(_) => Status::success(),
            None => Status::skip(),
        }
    }
}

impl ScorePlugin for VolumeBinding {
    /// Upstream's storage capacity score: per class, the utilization of the chosen
    /// volumes (their claims' requests over their capacities), or, for a node with only
    /// provisionings, of the capacity objects that admitted them; through the shape;
    /// averaged over the classes and rounded.
    fn score(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let Some(state) = state.read::<State>() else {
            return Ok(0);
        };
        let name = node
            .node()
            .and_then(|n| n.metadata.name.clone())
            .unwrap_or_default();
        let by_node = lock(&state.by_node);
        let Some(volumes) = by_node.get(&name).map(|n| &n.volumes) else {
            return Ok(0);
        };
        let mut classes: BTreeMap<String, (i64, i64)> = BTreeMap::new();
        if !volumes.static_bindings.is_empty() {
            for binding in &volumes.static_bindings {
                let entry = classes.entry(volume_class(&binding.volume)).or_default();
                entry.0 += requested_bytes(&binding.claim);
                entry.1 += capacity_bytes(&binding.volume);
            }
        } else {
            for provision in &volumes.dynamic_provisions {
                let Some(capacity) = &provision.capacity else {
                    continue;
                };
                let entry = classes
                    .entry(capacity.storage_class_name.clone())
                    .or_default();
                entry.0 += requested_bytes(&provision.claim);
                entry.1 = capacity.capacity.as_ref().map(quantity_bytes).unwrap_or(0);
            }
        }
        if classes.is_empty() {
            return Ok(0);
        }
        let total: i64 = classes
            .values()
            .map(|&(requested, capacity)| {
                let utilization = if capacity == 0 || requested > capacity {
                    MAX_UTILIZATION
                } else {
                    requested * MAX_UTILIZATION / capacity
                };
                broken_linear(&self.shape, utilization)
            })
            .sum();
        Ok((total as f64 / classes.len() as f64).round() as i64)
    }
}

#[async_trait]
impl ReservePlugin for VolumeBinding {
    async fn reserve(&self, state: &mut CycleState, pod: &PodInfo, node_name: &str) -> Status {
        let Some(state) = state.read_mut::<State>() else {
            return Status::success();
        };
        let found = lock(&state.by_node).get(node_name).cloned();
        let Some(mut node_volumes) = found else {
            state.all_bound = true;
            return Status::success();
        };
        match assume_pod_volumes(
            &self.volumes,
            &pod.pod,
            node_name,
            &mut node_volumes.volumes,
        ) {
            Ok(all_bound) => {
                state.all_bound = all_bound;
                state.reserved = Some(node_volumes);
                Status::success()
            }
            Err(message) => Status::error(message),
        }
    }

    async fn unreserve(&self, state: &mut CycleState, _: &PodInfo, _: &str) {
        if let Some(reserved) = state.read::<State>().and_then(|s| s.reserved.as_ref()) {
            revert_assumed(&self.volumes, &reserved.volumes);
        }
    }
}

#[async_trait]
impl PreBindPlugin for VolumeBinding {
    async fn pre_bind(&self, state: &mut CycleState, _: &PodInfo, node_name: &str) -> Status {
        let Some(state) = state.read_mut::<State>() else {
            return Status::success();
        };
        if state.all_bound {
            return Status::success();
        }
        let Some(reserved) = state.reserved.as_mut() else {
            return Status::error(format!("no pod volumes found for node \"{node_name}\""));
        };
        if let Err(message) =
            bind_api_update(&self.volumes, self.writer.as_ref(), &mut reserved.volumes).await
        {
            return Status::error(message);
        }
        let deadline = self.clock.now() + self.bind_timeout;
        loop {
            let next = self.clock.now() + POLL_INTERVAL;
            if next > deadline {
                return Status::error("binding volumes: context deadline exceeded");
            }
            self.clock.sleep_until(next).await;
            match check_bindings(
                &self.volumes,
                node_name,
                &reserved.labels,
                &reserved.volumes,
            ) {
                Ok(true) => return Status::success(),
                Ok(false) => {}
                Err(message) => return Status::error(format!("binding volumes: {message}")),
            }
        }
    }
}

#[cfg(test)]
mod tests;

/// What of a pod this plugin reads, for opportunistic batching (upstream `SignPod`).
impl crate::framework::SignPlugin for VolumeBinding {
    fn fragments(&self, pod: &crate::cluster::PodInfo) -> Vec<crate::framework::SignFragment> {
        use crate::framework::signature;
        vec![signature::volumes(&pod.pod)]
    }
}
