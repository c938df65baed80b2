//! Upstream's `dynamicresources_test.go` and `extendeddynamicresources_test.go` rows,
//! with their fixtures (pod `default/my-pod` UID 1234, claim `my-pod-my-resource`,
//! class `my-resource-class`, driver `some-driver`, nodes `worker`, `worker-2`).
//!
//! The harness runs the points as upstream's `TestPlugin` does: PreEnqueue (stopping on
//! a rejection), PreFilter, Filter on every node, Score when more than one node passes,
//! Reserve on the best node, PreBind, or PostFilter when no node passes; an expected
//! status is the code upstream's code returns and a message upstream's test matches as
//! a substring. The API is a fake that keeps claims by resourceVersion (a stale update
//! is a conflict) and feeds every write back to the lister, as the informer does.
//!
//! Not carried: the PodGroup, node-allocatable-resource and optional-node-operations
//! rows (features off by default in 1.37), `tainted-device-disabled`,
//! `request-admin-access-without-DRAAdminAccess-featuregate`,
//! `claim-with-prioritized-list-feature-disabled`, `timeout_disabled` and
//! `dont-add-allocation-timestamp` (they turn a default-on feature off, which berth
//! cannot), `canceled` (berth's Filter has no caller cancellation), the metrics
//! expectations, and the rows whose fixtures need a concurrent writer
//! (`with-resources-finalizer-gets-removed`/`-added`, `bind-failure-concurrent-
//! deallocation`) — the conflict retry they exercise is covered by
//! `a_conflicting_status_update_is_retried_with_the_servers_claim`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{
    Container, ContainerExtendedResourceRequest, Node, NodeSpec, NodeStatus, Pod,
    PodExtendedResourceClaimStatus, PodResourceClaim, PodResourceClaimStatus, PodSpec, PodStatus,
    ResourceRequirements,
};
use k8s_openapi::api::resource::v1::{
    AllocationResult, CELDeviceSelector, Device, DeviceAllocationResult, DeviceClaim, DeviceClass,
    DeviceClassSpec, DeviceRequest, DeviceRequestAllocationResult, DeviceSelector,
    DeviceSubRequest, ExactDeviceRequest, ResourceClaim, ResourceClaimConsumerReference,
    ResourceClaimSpec, ResourceClaimStatus, ResourcePool, ResourceSlice, ResourceSliceSpec,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};

use super::*;
use crate::cluster::NodeInfo;
use crate::framework::{PluginFactory, WriteError};

const NS: &str = "default";
const POD: &str = "my-pod";
const POD_UID: &str = "1234";
const CLAIM: &str = "my-pod-my-resource";
const CLAIM2: &str = "my-pod-my-resource-2";
const CLASS: &str = "my-resource-class";
const DRIVER: &str = "some-driver";
const WORKER: &str = "worker";
const WORKER2: &str = "worker-2";
const GPU: &str = "example.com/gpu";
const IMPLICIT: &str = "deviceclass.resource.kubernetes.io/my-resource-class";

// ---- fixtures -------------------------------------------------------------------------

fn pod_with(claims: Vec<PodResourceClaim>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(POD.into()),
            namespace: Some(NS.into()),
            uid: Some(POD_UID.into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                ..Default::default()
            }],
            resource_claims: (!claims.is_empty()).then_some(claims),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn pod_with_claim_name() -> Pod {
    pod_with(vec![PodResourceClaim {
        name: "my-resource".into(),
        resource_claim_name: Some(CLAIM.into()),
        ..Default::default()
    }])
}

fn pod_with_claim_template() -> Pod {
    pod_with(vec![PodResourceClaim {
        name: "my-resource".into(),
        resource_claim_template_name: Some(CLAIM.into()),
        ..Default::default()
    }])
}

fn pod_with_claim_template_in_status() -> Pod {
    let mut pod = pod_with_claim_template();
    pod.status = Some(PodStatus {
        resource_claim_statuses: Some(vec![PodResourceClaimStatus {
            name: "my-resource".into(),
            resource_claim_name: Some(CLAIM.into()),
        }]),
        ..Default::default()
    });
    pod
}

/// A pod whose containers request extended resources, one map per container.
fn pod_requesting(containers: &[&[(&str, &str)]]) -> Pod {
    let mut pod = pod_with(Vec::new());
    let spec = pod.spec.as_mut().unwrap();
    spec.containers = containers
        .iter()
        .enumerate()
        .map(|(i, requests)| Container {
            name: format!("con{i}"),
            resources: Some(ResourceRequirements {
                requests: Some(
                    requests
                        .iter()
                        .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                        .collect(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        })
        .collect();
    pod
}

fn node(name: &str) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([(
                "kubernetes.io/hostname".to_string(),
                name.to_string(),
            )])),
            ..Default::default()
        },
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus {
            allocatable: Some(BTreeMap::from([(
                "pods".to_string(),
                Quantity("110".into()),
            )])),
            ..Default::default()
        }),
    }
}

fn node_with_allocatable(name: &str, resource: &str, amount: &str) -> Node {
    let mut node = node(name);
    let status = node.status.as_mut().unwrap();
    status
        .allocatable
        .get_or_insert_default()
        .insert(resource.to_string(), Quantity(amount.into()));
    node
}

fn class() -> DeviceClass {
    DeviceClass {
        metadata: ObjectMeta {
            name: Some(CLASS.into()),
            ..Default::default()
        },
        spec: Some(DeviceClassSpec::default()),
    }
}

fn class_with_extended_resource() -> DeviceClass {
    let mut class = class();
    class.spec.as_mut().unwrap().extended_resource_name = Some(GPU.into());
    class
}

fn slice(node: &str, devices: &[&str]) -> ResourceSlice {
    ResourceSlice {
        metadata: ObjectMeta {
            name: Some(format!("{node}-{DRIVER}")),
            ..Default::default()
        },
        spec: ResourceSliceSpec {
            driver: DRIVER.into(),
            node_name: Some(node.into()),
            pool: ResourcePool {
                name: node.into(),
                generation: 1,
                resource_slice_count: 1,
            },
            devices: Some(
                devices
                    .iter()
                    .map(|d| Device {
                        name: d.to_string(),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        },
    }
}

fn exact(name: &str, class: &str) -> DeviceRequest {
    DeviceRequest {
        name: name.into(),
        exactly: Some(ExactDeviceRequest {
            device_class_name: class.into(),
            allocation_mode: Some("ExactCount".into()),
            count: Some(1),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn prioritized(name: &str, subs: &[(&str, &str, i64)]) -> DeviceRequest {
    DeviceRequest {
        name: name.into(),
        first_available: Some(
            subs.iter()
                .map(|(sub, class, count)| DeviceSubRequest {
                    name: sub.to_string(),
                    device_class_name: class.to_string(),
                    allocation_mode: Some("ExactCount".into()),
                    count: Some(*count),
                    ..Default::default()
                })
                .collect(),
        ),
        ..Default::default()
    }
}

fn claim_named(name: &str, requests: Vec<DeviceRequest>) -> ResourceClaim {
    ResourceClaim {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            uid: Some(format!("uid-{name}")),
            resource_version: Some("1".into()),
            ..Default::default()
        },
        spec: Some(ResourceClaimSpec {
            devices: Some(DeviceClaim {
                requests: Some(requests),
                ..Default::default()
            }),
        }),
        status: None,
    }
}

/// upstream `claim`: one request `req-1` of the class.
fn claim() -> ResourceClaim {
    claim_named(CLAIM, vec![exact("req-1", CLASS)])
}

/// upstream `pendingClaim`: `claim` owned by the pod.
fn pending_claim() -> ResourceClaim {
    owned(claim())
}

fn owned(mut claim: ResourceClaim) -> ResourceClaim {
    claim.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "Pod".into(),
        name: POD.into(),
        uid: POD_UID.into(),
        controller: Some(true),
        ..Default::default()
    }]);
    claim
}

fn node_selector_for(node: &str) -> k8s_openapi::api::core::v1::NodeSelector {
    k8s_openapi::api::core::v1::NodeSelector {
        node_selector_terms: vec![k8s_openapi::api::core::v1::NodeSelectorTerm {
            match_fields: Some(vec![k8s_openapi::api::core::v1::NodeSelectorRequirement {
                key: "metadata.name".into(),
                operator: "In".into(),
                values: Some(vec![node.into()]),
            }]),
            ..Default::default()
        }],
    }
}

/// upstream `allocationResult`: `instance-1` of the worker's pool for `req-1`.
fn allocation_result(node: &str, request: &str) -> AllocationResult {
    AllocationResult {
        devices: Some(DeviceAllocationResult {
            results: Some(vec![DeviceRequestAllocationResult {
                driver: DRIVER.into(),
                pool: node.into(),
                device: "instance-1".into(),
                request: request.into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        node_selector: Some(node_selector_for(node)),
        ..Default::default()
    }
}

/// upstream `allocatedClaim`: `pendingClaim` allocated on the worker, with the finalizer.
fn allocated_claim() -> ResourceClaim {
    let mut claim = pending_claim();
    claim.metadata.finalizers = Some(vec![FINALIZER.into()]);
    claim.status = Some(ResourceClaimStatus {
        allocation: Some(allocation_result(WORKER, "req-1")),
        ..Default::default()
    });
    claim
}

fn pod_reference() -> ResourceClaimConsumerReference {
    ResourceClaimConsumerReference {
        api_group: None,
        resource: "pods".into(),
        name: POD.into(),
        uid: POD_UID.into(),
    }
}

fn reserved(mut claim: ResourceClaim) -> ResourceClaim {
    claim
        .status
        .get_or_insert_default()
        .reserved_for
        .get_or_insert_default()
        .push(pod_reference());
    claim
}

// ---- the fake API ---------------------------------------------------------------------

/// Claims as an API server keeps them, each write fed back to the lister.
#[derive(Default)]
struct FakeApi {
    resources: Arc<DeviceResources>,
    claims: Mutex<BTreeMap<String, ResourceClaim>>,
    created: Mutex<u64>,
    fail_updates: Option<String>,
    fail_create: Option<String>,
    fail_pod_patch: Option<String>,
    pod_status: Mutex<Option<PodExtendedResourceClaimStatus>>,
}

impl FakeApi {
    fn store(&self, mut claim: ResourceClaim, check: bool) -> Result<ResourceClaim, WriteError> {
        let key = format!(
            "{}/{}",
            claim.metadata.namespace.as_deref().unwrap_or_default(),
            claim.metadata.name.as_deref().unwrap_or_default()
        );
        let mut claims = self.claims.lock().unwrap();
        let Some(stored) = claims.get(&key) else {
            return Err(WriteError::NotFound(format!("{key} not found")));
        };
        if check && stored.metadata.resource_version != claim.metadata.resource_version {
            return Err(WriteError::Conflict(format!(
                "Operation cannot be fulfilled on resourceclaims.resource.k8s.io \"{}\": \
                 the object has been modified; please apply your changes to the latest \
                 version and try again",
                claim.metadata.name.as_deref().unwrap_or_default()
            )));
        }
        let version: u64 = stored
            .metadata
            .resource_version
            .as_deref()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        claim.metadata.resource_version = Some((version + 1).to_string());
        claims.insert(key, claim.clone());
        self.resources.apply_claim(claim.clone());
        Ok(claim)
    }

    fn get(&self, namespace: &str, name: &str) -> Option<ResourceClaim> {
        self.claims
            .lock()
            .unwrap()
            .get(&format!("{namespace}/{name}"))
            .cloned()
    }
}

#[async_trait]
impl ClaimWriter for FakeApi {
    async fn get_claim(&self, namespace: &str, name: &str) -> Result<ResourceClaim, WriteError> {
        self.get(namespace, name)
            .ok_or_else(|| WriteError::NotFound(format!("{namespace}/{name} not found")))
    }

    async fn create_claim(&self, claim: &ResourceClaim) -> Result<ResourceClaim, WriteError> {
        if let Some(message) = &self.fail_create {
            return Err(WriteError::Other(message.clone()));
        }
        let mut created = claim.clone();
        let mut n = self.created.lock().unwrap();
        let name = format!(
            "{}{}",
            claim.metadata.generate_name.as_deref().unwrap_or_default(),
            *n
        );
        created.metadata.uid = Some(format!("UID-{n}"));
        *n += 1;
        created.metadata.name = Some(name.clone());
        created.metadata.resource_version = Some("1".into());
        self.claims
            .lock()
            .unwrap()
            .insert(format!("{NS}/{name}"), created.clone());
        self.resources.apply_claim(created.clone());
        Ok(created)
    }

    async fn update_claim(&self, claim: &ResourceClaim) -> Result<ResourceClaim, WriteError> {
        if let Some(message) = &self.fail_updates {
            return Err(WriteError::Other(message.clone()));
        }
        let mut update = claim.clone();
        if let Some(stored) = self.get(NS, &claim.name_any()) {
            update.status = stored.status;
        }
        self.store(update, true)
    }

    async fn update_claim_status(
        &self,
        claim: &ResourceClaim,
    ) -> Result<ResourceClaim, WriteError> {
        if let Some(message) = &self.fail_updates {
            return Err(WriteError::Other(message.clone()));
        }
        let mut update = claim.clone();
        if let Some(stored) = self.get(NS, &claim.name_any()) {
            update.metadata = ObjectMeta {
                resource_version: claim.metadata.resource_version.clone(),
                ..stored.metadata
            };
        }
        self.store(update, true)
    }

    async fn remove_reservation(
        &self,
        claim: &ResourceClaim,
        pod_uid: &str,
    ) -> Result<(), WriteError> {
        let Some(mut stored) = self.get(NS, &claim.name_any()) else {
            return Err(WriteError::NotFound("gone".into()));
        };
        if let Some(r) = stored.status.as_mut().and_then(|s| s.reserved_for.as_mut()) {
            r.retain(|c| c.uid != pod_uid);
        }
        self.store(stored, false).map(|_| ())
    }

    async fn delete_claim(&self, namespace: &str, name: &str) -> Result<(), WriteError> {
        let removed = self
            .claims
            .lock()
            .unwrap()
            .remove(&format!("{namespace}/{name}"));
        match removed {
            Some(claim) => {
                self.resources.delete_claim(&claim);
                Ok(())
            }
            None => Err(WriteError::NotFound(format!(
                "{namespace}/{name} not found"
            ))),
        }
    }

    async fn set_extended_resource_claim_status(
        &self,
        _: &Pod,
        status: &PodExtendedResourceClaimStatus,
    ) -> Result<(), WriteError> {
        if let Some(message) = &self.fail_pod_patch {
            return Err(WriteError::Other(message.clone()));
        }
        *self.pod_status.lock().unwrap() = Some(status.clone());
        Ok(())
    }
}

// ---- the harness ----------------------------------------------------------------------

#[derive(Default)]
struct Case {
    name: &'static str,
    pod: Option<Pod>,
    claims: Vec<ResourceClaim>,
    classes: Vec<DeviceClass>,
    slices: Vec<ResourceSlice>,
    /// Nodes; `worker` alone when empty.
    nodes: Vec<Node>,
    /// Claims with allocations pending from other pods.
    in_flight: Vec<ResourceClaim>,
    args: Option<DynamicResourcesArgs>,
    /// Unreserve after PreBind, as after a failed Bind.
    unreserve_after_bind: bool,
    /// Unreserve instead of PreBind.
    skip_bind: bool,
    fail_updates: Option<&'static str>,
    fail_create: Option<&'static str>,
    fail_pod_patch: Option<&'static str>,
    /// What the API holds, when it differs from what the lister saw.
    api_claims: Option<Vec<ResourceClaim>>,
    want: Want,
}

/// Expected statuses: code and a substring of the message (empty: any).
type Expect = Option<(Code, &'static str)>;

#[derive(Default)]
struct Want {
    pre_enqueue: Expect,
    pre_filter: Expect,
    /// Filter by node name.
    filter: Vec<(&'static str, Code, &'static str)>,
    post_filter: Expect,
    scores: Vec<(&'static str, i64)>,
    reserve: Expect,
    /// Names of the claims pending after Reserve.
    pending_after_reserve: Vec<&'static str>,
    pre_bind: Expect,
    /// Claims as the API holds them at the end (metadata other than name, finalizers
    /// and owner ignored; the allocation timestamp checked for presence only).
    claims: Option<Vec<ResourceClaim>>,
    pod_status: Option<PodExtendedResourceClaimStatus>,
    /// Nothing pending at the end.
    no_pending_at_end: bool,
}

struct Run {
    api: Arc<FakeApi>,
    plugin: DynamicResources,
    failures: Vec<String>,
}

fn check_status(failures: &mut Vec<String>, what: &str, got: &Status, want: Expect) {
    match want {
        None if !got.is_success() && !got.is_skip() => {
            failures.push(format!("{what}: want success, got {got:?}"))
        }
        None => {}
        Some((code, message)) if got.code() != code || !got.message().contains(message) => {
            failures.push(format!(
                "{what}: want {code:?} containing {message:?}, got {:?} {:?}",
                got.code(),
                got.message()
            ));
        }
        Some(_) => {}
    }
}

/// A claim reduced to what the table compares.
fn essentials(claim: &ResourceClaim) -> String {
    let mut claim = claim.clone();
    let keep = ObjectMeta {
        name: claim.metadata.name.clone(),
        namespace: claim.metadata.namespace.clone(),
        finalizers: claim.metadata.finalizers.clone(),
        annotations: claim.metadata.annotations.clone(),
        ..Default::default()
    };
    claim.metadata = keep;
    if let Some(allocation) = claim.status.as_mut().and_then(|s| s.allocation.as_mut()) {
        allocation.allocation_timestamp = allocation
            .allocation_timestamp
            .as_ref()
            .map(|_| Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    }
    serde_json::to_string(&claim).unwrap()
}

/// `claim` with an allocation timestamp (any time).
fn stamped(mut claim: ResourceClaim) -> ResourceClaim {
    if let Some(allocation) = claim.status.as_mut().and_then(|s| s.allocation.as_mut()) {
        allocation.allocation_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    }
    claim
}

async fn run(case: Case) -> Vec<String> {
    let resources = Arc::new(DeviceResources::new());
    resources.set_served();
    for class in &case.classes {
        resources.apply_class(class.clone());
    }
    for slice in &case.slices {
        resources.apply_slice(slice.clone());
    }
    let api = Arc::new(FakeApi {
        resources: resources.clone(),
        fail_updates: case.fail_updates.map(String::from),
        fail_create: case.fail_create.map(String::from),
        fail_pod_patch: case.fail_pod_patch.map(String::from),
        ..Default::default()
    });
    for claim in &case.claims {
        resources.apply_claim(claim.clone());
    }
    for claim in case.api_claims.as_ref().unwrap_or(&case.claims) {
        api.claims
            .lock()
            .unwrap()
            .insert(format!("{NS}/{}", claim.name_any()), claim.clone());
    }
    for claim in &case.in_flight {
        resources.signal_pending_allocation(claim.clone());
    }
    let handle = Handle::builder()
        .device_resources(resources.clone())
        .claim_writer(api.clone())
        .build();
    let plugin = DynamicResources::build(case.args.clone().unwrap_or_default(), &handle).unwrap();
    let mut run = Run {
        api,
        plugin,
        failures: Vec::new(),
    };
    run.steps(&case).await;
    let name = case.name;
    run.failures
        .into_iter()
        .map(|f| format!("{name}: {f}"))
        .collect()
}

impl Run {
    async fn steps(&mut self, case: &Case) {
        let want = &case.want;
        let pod = PodInfo::new(case.pod.clone().unwrap_or_else(pod_with_claim_name)).unwrap();
        let nodes: Vec<Node> = if case.nodes.is_empty() {
            vec![node(WORKER)]
        } else {
            case.nodes.clone()
        };
        let infos: Vec<NodeInfo> = nodes
            .iter()
            .map(|n| NodeInfo::new(n.clone()).unwrap())
            .collect();
        let status = self.plugin.pre_enqueue(&pod);
        check_status(&mut self.failures, "PreEnqueue", &status, want.pre_enqueue);
        if !status.is_success() {
            return;
        }
        let mut state = CycleState::new();
        let snapshot = Snapshot::default();
        let (_, status) = self.plugin.pre_filter(&mut state, &pod, &snapshot).await;
        check_status(&mut self.failures, "PreFilter", &status, want.pre_filter);
        let mut feasible = Vec::new();
        if status.is_success() {
            for info in &infos {
                let status = self.plugin.filter(&state, &pod, info);
                let expected = want
                    .filter
                    .iter()
                    .find(|(n, _, _)| *n == info.name())
                    .map(|&(_, code, message)| (code, message));
                check_status(
                    &mut self.failures,
                    &format!("Filter {}", info.name()),
                    &status,
                    expected,
                );
                if status.code() == Code::Error {
                    return;
                }
                if status.is_success() {
                    feasible.push(info);
                }
            }
        } else if status.is_skip() {
            feasible = infos.iter().collect();
        }
        if feasible.is_empty() {
            let runner = NoRunner;
            let (_, status) = self
                .plugin
                .post_filter(&runner, &state, &pod, &snapshot, &NodeToStatus::default())
                .await;
            let nothing_freed = Some((Code::Unschedulable, ""));
            let expected = want.post_filter.or(nothing_freed);
            check_status(&mut self.failures, "PostFilter", &status, expected);
            if want.post_filter.is_none() && !status.reasons().is_empty() {
                self.failures.push(format!(
                    "PostFilter: want no reason, got {:?}",
                    status.message()
                ));
            }
            self.check_end(want);
            return;
        }
        let mut chosen = feasible[0].name().to_string();
        if feasible.len() > 1 {
            let mut scores: Vec<i64> = feasible
                .iter()
                .map(|n| self.plugin.score(&state, &pod, n).unwrap_or(-1))
                .collect();
            let arcs: Vec<Arc<NodeInfo>> = Vec::new();
            let _ = self
                .plugin
                .normalize_score(&state, &pod, &arcs, &mut scores);
            for (node, score) in &want.scores {
                let got = feasible
                    .iter()
                    .position(|n| n.name() == *node)
                    .map(|i| scores[i]);
                if got != Some(*score) {
                    self.failures
                        .push(format!("Score {node}: want {score}, got {got:?}"));
                }
            }
            let best = scores
                .iter()
                .enumerate()
                .max_by_key(|&(i, s)| (*s, -(i as i64)));
            if let Some((i, _)) = best {
                chosen = feasible[i].name().to_string();
            }
        }
        let status = self.plugin.reserve(&mut state, &pod, &chosen).await;
        check_status(&mut self.failures, "Reserve", &status, want.reserve);
        if !status.is_success() {
            self.plugin.unreserve(&mut state, &pod, &chosen).await;
            self.check_end(want);
            return;
        }
        let mut pending: Vec<String> = self
            .plugin
            .resources
            .allocated_claims()
            .iter()
            .filter(|c| {
                let uid = c.metadata.uid.as_deref().unwrap_or_default();
                self.plugin.resources.pending_allocation(uid).is_some()
            })
            .map(|c| c.name_any())
            .collect();
        pending.sort();
        let mut wanted: Vec<String> = want
            .pending_after_reserve
            .iter()
            .map(|s| s.to_string())
            .collect();
        wanted.sort();
        if pending != wanted {
            self.failures.push(format!(
                "pending after Reserve: want {wanted:?}, got {pending:?}"
            ));
        }
        if case.skip_bind {
            self.plugin.unreserve(&mut state, &pod, &chosen).await;
            self.check_end(want);
            return;
        }
        let status = self.plugin.pre_bind(&mut state, &pod, &chosen).await;
        check_status(&mut self.failures, "PreBind", &status, want.pre_bind);
        if !status.is_success() || case.unreserve_after_bind {
            self.plugin.unreserve(&mut state, &pod, &chosen).await;
        }
        self.check_end(want);
    }

    fn check_end(&mut self, want: &Want) {
        if let Some(claims) = &want.claims {
            let got: Vec<String> = self
                .api
                .claims
                .lock()
                .unwrap()
                .values()
                .map(essentials)
                .collect();
            let wanted: Vec<String> = claims.iter().map(essentials).collect();
            if got != wanted {
                self.failures
                    .push(format!("claims:\n  want {wanted:#?}\n  got  {got:#?}"));
            }
        }
        if let Some(status) = &want.pod_status {
            let got = self.api.pod_status.lock().unwrap().clone();
            if got.as_ref() != Some(status) {
                self.failures
                    .push(format!("pod status: want {status:?}, got {got:?}"));
            }
        }
        if want.no_pending_at_end {
            let left = self
                .plugin
                .resources
                .allocated_claims()
                .iter()
                .filter(|c| {
                    let uid = c.metadata.uid.as_deref().unwrap_or_default();
                    self.plugin.resources.pending_allocation(uid).is_some()
                })
                .count();
            if left != 0 {
                self.failures
                    .push(format!("{left} allocations still pending at the end"));
            }
        }
    }
}

struct NoRunner;

impl FilterRunner for NoRunner {
    fn filter_with_nominated_pods(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Status {
        Status::success()
    }
    fn pre_filter_add_pod(
        &self,
        _: &mut CycleState,
        _: &PodInfo,
        _: &PodInfo,
        _: &NodeInfo,
    ) -> Status {
        Status::success()
    }
    fn pre_filter_remove_pod(
        &self,
        _: &mut CycleState,
        _: &PodInfo,
        _: &PodInfo,
        _: &NodeInfo,
    ) -> Status {
        Status::success()
    }
}

const UU: Code = Code::UnschedulableAndUnresolvable;

fn with_resources_claims() -> Vec<ResourceClaim> {
    vec![stamped(reserved(allocated_claim()))]
}

fn extended_claim(requests: Vec<DeviceRequest>, results: Vec<(&str, &str)>) -> ResourceClaim {
    let mut claim = claim_named(&format!("{POD}-extended-resources-0"), requests);
    claim.metadata.annotations = Some(BTreeMap::from([(
        EXTENDED_CLAIM_ANNOTATION.to_string(),
        "true".to_string(),
    )]));
    claim.metadata.finalizers = Some(vec![FINALIZER.into()]);
    claim.status = Some(ResourceClaimStatus {
        allocation: Some(AllocationResult {
            devices: Some(DeviceAllocationResult {
                results: Some(
                    results
                        .iter()
                        .map(|(device, request)| DeviceRequestAllocationResult {
                            driver: DRIVER.into(),
                            pool: WORKER.into(),
                            device: device.to_string(),
                            request: request.to_string(),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
            node_selector: Some(node_selector_for(WORKER)),
            ..Default::default()
        }),
        reserved_for: Some(vec![pod_reference()]),
        ..Default::default()
    });
    stamped(claim)
}

fn gpu_request(name: &str, class: &str, count: i64) -> DeviceRequest {
    let mut request = exact(name, class);
    request.exactly.as_mut().unwrap().count = Some(count);
    request
}

fn mapping(container: &str, resource: &str, request: &str) -> ContainerExtendedResourceRequest {
    ContainerExtendedResourceRequest {
        container_name: container.into(),
        resource_name: resource.into(),
        request_name: request.into(),
    }
}

fn cases() -> Vec<Case> {
    let two_nodes = || vec![node(WORKER), node(WORKER2)];
    vec![
        Case {
            name: "empty",
            pod: Some(pod_with(Vec::new())),
            want: Want {
                pre_filter: Some((Code::Skip, "")),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "claim-reference",
            claims: vec![allocated_claim()],
            want: Want {
                claims: Some(with_resources_claims()),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "claim-template",
            pod: Some(pod_with_claim_template_in_status()),
            claims: vec![allocated_claim()],
            want: Want {
                claims: Some(with_resources_claims()),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "missing-claim",
            pod: Some(pod_with_claim_template()),
            want: Want {
                pre_enqueue: Some((UU, "pod \"default/my-pod\": ResourceClaim not created yet")),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "deleted-claim",
            pod: Some(pod_with_claim_template_in_status()),
            claims: vec![{
                let mut c = allocated_claim();
                c.metadata.deletion_timestamp =
                    Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
                c
            }],
            want: Want {
                pre_enqueue: Some((UU, "resourceclaim \"my-pod-my-resource\" is being deleted")),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "wrong-claim",
            pod: Some(pod_with_claim_template_in_status()),
            claims: vec![{
                let mut c = allocated_claim();
                c.metadata.owner_references.as_mut().unwrap()[0].uid = "other".into();
                c
            }],
            want: Want {
                pre_enqueue: Some((
                    UU,
                    "ResourceClaim default/my-pod-my-resource was not created for Pod default/my-pod (Pod is not owner)",
                )),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "no-resources",
            claims: vec![pending_claim()],
            classes: vec![class()],
            want: Want {
                filter: vec![(WORKER, UU, "cannot allocate all claims")],
                claims: Some(vec![pending_claim()]),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "with-resources",
            claims: vec![pending_claim()],
            classes: vec![class()],
            slices: vec![slice(WORKER, &["instance-1"])],
            want: Want {
                pending_after_reserve: vec![CLAIM],
                claims: Some(with_resources_claims()),
                no_pending_at_end: true,
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "with-resources-has-finalizer",
            claims: vec![{
                let mut c = pending_claim();
                c.metadata.finalizers = Some(vec![FINALIZER.into()]);
                c
            }],
            classes: vec![class()],
            slices: vec![slice(WORKER, &["instance-1"])],
            want: Want {
                pending_after_reserve: vec![CLAIM],
                claims: Some(with_resources_claims()),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "skip-bind",
            claims: vec![pending_claim()],
            classes: vec![class()],
            slices: vec![slice(WORKER, &["instance-1"])],
            skip_bind: true,
            want: Want {
                pending_after_reserve: vec![CLAIM],
                claims: Some(vec![pending_claim()]),
                no_pending_at_end: true,
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "exhausted-resources-in-informer-cache",
            claims: vec![pending_claim(), {
                let mut other = allocated_claim();
                other.metadata.name = Some("other".into());
                other.metadata.uid = Some("other-uid".into());
                other
            }],
            classes: vec![class()],
            slices: vec![slice(WORKER, &["instance-1"])],
            want: Want {
                filter: vec![(WORKER, UU, "cannot allocate all claims")],
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "exhausted-resources-in-flight-claim",
            claims: vec![pending_claim()],
            in_flight: vec![{
                let mut other = allocated_claim();
                other.metadata.name = Some("other".into());
                other.metadata.uid = Some("other-uid".into());
                other
            }],
            classes: vec![class()],
            slices: vec![slice(WORKER, &["instance-1"])],
            want: Want {
                filter: vec![(WORKER, UU, "cannot allocate all claims")],
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "other-resources-in-flight-claim",
            claims: vec![pending_claim()],
            in_flight: vec![{
                let mut other = allocated_claim();
                other.metadata.name = Some("other".into());
                other.metadata.uid = Some("other-uid".into());
                let result = &mut other.status.as_mut().unwrap().allocation.as_mut().unwrap();
                result.devices.as_mut().unwrap().results.as_mut().unwrap()[0].device =
                    "instance-1-other".into();
                other
            }],
            classes: vec![class()],
            slices: vec![slice(WORKER, &["instance-1"])],
            want: Want {
                pending_after_reserve: vec![CLAIM, "other"],
                claims: Some(with_resources_claims()),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "missing-class",
            claims: vec![pending_claim()],
            want: Want {
                pre_filter: Some((
                    UU,
                    "request req-1: device class my-resource-class does not exist",
                )),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "claim-with-request-with-unknown-device-class",
            claims: vec![owned(claim_named(
                CLAIM,
                vec![exact("req-1", "does-not-exist")],
            ))],
            classes: vec![class()],
            want: Want {
                pre_filter: Some((
                    UU,
                    "request req-1: device class does-not-exist does not exist",
                )),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "claim-with-prioritized-list-unknown-device-class",
            claims: vec![owned(claim_named(
                CLAIM,
                vec![prioritized("req-1", &[("subreq-1", "does-not-exist", 1)])],
            ))],
            classes: vec![class()],
            want: Want {
                pre_filter: Some((
                    UU,
                    "request req-1/subreq-1: device class does-not-exist does not exist",
                )),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "claim-with-prioritized-list",
            claims: vec![owned(claim_named(
                CLAIM,
                vec![prioritized("req-1", &[("subreq-1", CLASS, 1)])],
            ))],
            classes: vec![class()],
            slices: vec![slice(WORKER, &["instance-1"])],
            want: Want {
                pending_after_reserve: vec![CLAIM],
                claims: Some(vec![{
                    let mut c = owned(claim_named(
                        CLAIM,
                        vec![prioritized("req-1", &[("subreq-1", CLASS, 1)])],
                    ));
                    c.metadata.finalizers = Some(vec![FINALIZER.into()]);
                    c.status = Some(ResourceClaimStatus {
                        allocation: Some(allocation_result(WORKER, "req-1/subreq-1")),
                        reserved_for: Some(vec![pod_reference()]),
                        ..Default::default()
                    });
                    stamped(c)
                }]),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "wrong-topology",
            claims: vec![{
                let mut c = allocated_claim();
                c.status.as_mut().unwrap().allocation = Some(allocation_result(WORKER2, "req-1"));
                c
            }],
            classes: vec![class()],
            want: Want {
                filter: vec![(WORKER, UU, "resourceclaim not available on the node")],
                post_filter: Some((
                    Code::Unschedulable,
                    "deallocation of ResourceClaim completed",
                )),
                claims: Some(vec![{
                    let mut c = allocated_claim();
                    c.status = Some(ResourceClaimStatus::default());
                    c
                }]),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "good-topology",
            claims: vec![allocated_claim()],
            classes: vec![class()],
            want: Want {
                claims: Some(with_resources_claims()),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "bind-failure",
            claims: vec![pending_claim()],
            classes: vec![class()],
            slices: vec![slice(WORKER, &["instance-1"])],
            unreserve_after_bind: true,
            want: Want {
                pending_after_reserve: vec![CLAIM],
                claims: Some(vec![{
                    let mut c = stamped(allocated_claim());
                    c.status.as_mut().unwrap().reserved_for = Some(Vec::new());
                    c
                }]),
                no_pending_at_end: true,
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "bind-failure-preserves-inflight-until-unreserve",
            claims: vec![pending_claim()],
            classes: vec![class()],
            slices: vec![slice(WORKER, &["instance-1"])],
            fail_updates: Some("claim bind error"),
            want: Want {
                pending_after_reserve: vec![CLAIM],
                pre_bind: Some((Code::Error, "claim bind error")),
                claims: Some(vec![pending_claim()]),
                no_pending_at_end: true,
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "reserved-okay",
            claims: vec![reserved(allocated_claim())],
            classes: vec![class()],
            want: Want {
                claims: Some(vec![reserved(allocated_claim())]),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "extended-resource-name-with-node-resource",
            pod: Some(pod_requesting(&[&[(GPU, "1")]])),
            classes: vec![class_with_extended_resource()],
            nodes: vec![node_with_allocatable(WORKER, GPU, "1")],
            want: Want {
                claims: Some(Vec::new()),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "extended-resource-name-with-zero-allocatable",
            pod: Some(pod_requesting(&[&[(GPU, "1")]])),
            classes: vec![class_with_extended_resource()],
            slices: vec![slice(WORKER, &["instance-1"])],
            nodes: vec![node_with_allocatable(WORKER, GPU, "0")],
            want: Want {
                pending_after_reserve: vec![EXTENDED_CLAIM_NAME],
                claims: Some(vec![owned(extended_claim(
                    vec![gpu_request("container-0-request-0", CLASS, 1)],
                    vec![("instance-1", "container-0-request-0")],
                ))]),
                pod_status: Some(PodExtendedResourceClaimStatus {
                    request_mappings: vec![mapping("con0", GPU, "container-0-request-0")],
                    resource_claim_name: format!("{POD}-extended-resources-0"),
                }),
                no_pending_at_end: true,
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "non-DRA-extended-resource-name-with-zero-allocatable",
            pod: Some(pod_requesting(&[&[(GPU, "1")]])),
            classes: vec![class()],
            nodes: vec![node_with_allocatable(WORKER, GPU, "0")],
            want: Want {
                pre_filter: Some((Code::Skip, "")),
                claims: Some(Vec::new()),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "extended-resource-name-no-resource",
            pod: Some(pod_requesting(&[&[(GPU, "1")]])),
            classes: vec![class_with_extended_resource()],
            want: Want {
                filter: vec![(WORKER, UU, "cannot allocate all claims")],
                claims: Some(Vec::new()),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "extended-resource-name-with-resources",
            pod: Some(pod_requesting(&[&[(GPU, "1")]])),
            classes: vec![class_with_extended_resource()],
            slices: vec![slice(WORKER, &["instance-1"])],
            want: Want {
                pending_after_reserve: vec![EXTENDED_CLAIM_NAME],
                claims: Some(vec![owned(extended_claim(
                    vec![gpu_request("container-0-request-0", CLASS, 1)],
                    vec![("instance-1", "container-0-request-0")],
                ))]),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "implicit-extended-resource-name-with-resources",
            pod: Some(pod_requesting(&[&[(IMPLICIT, "1"), (GPU, "2")]])),
            classes: vec![class_with_extended_resource()],
            slices: vec![slice(WORKER, &["instance-1", "instance-2", "instance-3"])],
            want: Want {
                pending_after_reserve: vec![EXTENDED_CLAIM_NAME],
                claims: Some(vec![owned(extended_claim(
                    vec![
                        gpu_request("container-0-request-0", CLASS, 1),
                        gpu_request("container-0-request-1", CLASS, 2),
                    ],
                    vec![
                        ("instance-1", "container-0-request-0"),
                        ("instance-2", "container-0-request-1"),
                        ("instance-3", "container-0-request-1"),
                    ],
                ))]),
                pod_status: Some(PodExtendedResourceClaimStatus {
                    request_mappings: vec![
                        mapping("con0", IMPLICIT, "container-0-request-0"),
                        mapping("con0", GPU, "container-0-request-1"),
                    ],
                    resource_claim_name: format!("{POD}-extended-resources-0"),
                }),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "implicit-extended-resource-name-two-containers-with-resources",
            pod: Some(pod_requesting(&[&[(IMPLICIT, "1")], &[(GPU, "2")]])),
            classes: vec![class_with_extended_resource()],
            slices: vec![slice(WORKER, &["instance-1", "instance-2", "instance-3"])],
            want: Want {
                pending_after_reserve: vec![EXTENDED_CLAIM_NAME],
                claims: Some(vec![owned(extended_claim(
                    vec![
                        gpu_request("container-0-request-0", CLASS, 1),
                        gpu_request("container-1-request-0", CLASS, 2),
                    ],
                    vec![
                        ("instance-1", "container-0-request-0"),
                        ("instance-2", "container-1-request-0"),
                        ("instance-3", "container-1-request-0"),
                    ],
                ))]),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "extended-resource-name-with-resources-fail-patch",
            pod: Some(pod_requesting(&[&[(GPU, "1")]])),
            classes: vec![class_with_extended_resource()],
            slices: vec![slice(WORKER, &["instance-1"])],
            fail_pod_patch: Some("patch error"),
            want: Want {
                pending_after_reserve: vec![EXTENDED_CLAIM_NAME],
                pre_bind: Some((
                    Code::Error,
                    "update pod default/my-pod ExtendedResourceClaimStatus: patch error",
                )),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "extended-resource-name-with-resources-has-claim",
            pod: Some(pod_requesting(&[&[(GPU, "1")]])),
            claims: vec![owned(extended_claim(
                vec![gpu_request("container-0-request-0", CLASS, 1)],
                vec![("instance-1", "container-0-request-0")],
            ))],
            classes: vec![class_with_extended_resource()],
            slices: vec![slice(WORKER, &["instance-1"])],
            want: Want {
                filter: vec![(WORKER, UU, "cannot schedule extended resource claim")],
                post_filter: Some((Code::Unschedulable, "deletion of ResourceClaim completed")),
                claims: Some(Vec::new()),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "extended-resource-name-bind-failure",
            pod: Some(pod_requesting(&[&[(GPU, "1")]])),
            classes: vec![class_with_extended_resource()],
            slices: vec![slice(WORKER, &["instance-1"])],
            unreserve_after_bind: true,
            want: Want {
                pending_after_reserve: vec![EXTENDED_CLAIM_NAME],
                claims: Some(Vec::new()),
                no_pending_at_end: true,
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "extended-resource-name-skip-bind",
            pod: Some(pod_requesting(&[&[(GPU, "1")]])),
            classes: vec![class_with_extended_resource()],
            slices: vec![slice(WORKER, &["instance-1"])],
            skip_bind: true,
            want: Want {
                pending_after_reserve: vec![EXTENDED_CLAIM_NAME],
                claims: Some(Vec::new()),
                no_pending_at_end: true,
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "extended-resource-name-claim-creation-failure",
            pod: Some(pod_requesting(&[&[(GPU, "1")]])),
            classes: vec![class_with_extended_resource()],
            slices: vec![slice(WORKER, &["instance-1"])],
            fail_create: Some("claim creation errors"),
            want: Want {
                pending_after_reserve: vec![EXTENDED_CLAIM_NAME],
                pre_bind: Some((Code::Error, "claim creation errors")),
                claims: Some(Vec::new()),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "timeout",
            claims: vec![owned(claim_named(
                CLAIM,
                (0..5).map(|i| exact(&format!("req-{i}"), CLASS)).collect(),
            ))],
            classes: vec![class()],
            slices: vec![slice(
                WORKER,
                &["instance-1", "instance-2", "instance-3", "instance-4"],
            )],
            args: Some(DynamicResourcesArgs {
                filter_timeout: GoDuration::from_nanos(1),
                ..Default::default()
            }),
            want: Want {
                filter: vec![(
                    Code::Error,
                    "node worker: timed out trying to allocate devices",
                )]
                .into_iter()
                .map(|(c, m)| (WORKER, c, m))
                .collect(),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "timeout_zero",
            claims: vec![pending_claim()],
            classes: vec![class()],
            slices: vec![slice(WORKER, &["instance-1"])],
            args: Some(DynamicResourcesArgs {
                filter_timeout: GoDuration::from_nanos(0),
                ..Default::default()
            }),
            want: Want {
                pending_after_reserve: vec![CLAIM],
                claims: Some(with_resources_claims()),
                ..Default::default()
            },
            ..Default::default()
        },
        Case {
            name: "single-claim-prioritized-list-scoring",
            claims: vec![owned(claim_named(
                CLAIM,
                vec![DeviceRequest {
                    name: "req-1".into(),
                    first_available: Some(vec![
                        DeviceSubRequest {
                            name: "subreq-1".into(),
                            device_class_name: CLASS.into(),
                            allocation_mode: Some("ExactCount".into()),
                            count: Some(1),
                            selectors: Some(vec![DeviceSelector {
                                cel: Some(CELDeviceSelector {
                                    expression: format!("device.attributes[\"{DRIVER}\"].healthy"),
                                }),
                            }]),
                            ..Default::default()
                        },
                        DeviceSubRequest {
                            name: "subreq-2".into(),
                            device_class_name: CLASS.into(),
                            allocation_mode: Some("ExactCount".into()),
                            count: Some(1),
                            ..Default::default()
                        },
                    ]),
                    ..Default::default()
                }],
            ))],
            classes: vec![class()],
            slices: vec![
                {
                    let mut s = slice(WORKER, &["instance-1"]);
                    s.spec.devices.as_mut().unwrap()[0].attributes = Some(BTreeMap::from([(
                        "healthy".to_string(),
                        k8s_openapi::api::resource::v1::DeviceAttribute {
                            bool: Some(true),
                            ..Default::default()
                        },
                    )]));
                    s
                },
                {
                    let mut s = slice(WORKER2, &["instance-1"]);
                    s.spec.devices.as_mut().unwrap()[0].attributes = Some(BTreeMap::from([(
                        "healthy".to_string(),
                        k8s_openapi::api::resource::v1::DeviceAttribute {
                            bool: Some(false),
                            ..Default::default()
                        },
                    )]));
                    s
                },
            ],
            nodes: two_nodes(),
            want: Want {
                scores: vec![(WORKER, 100), (WORKER2, 87)],
                pending_after_reserve: vec![CLAIM],
                ..Default::default()
            },
            ..Default::default()
        },
    ]
}

#[tokio::test]
async fn upstream_plugin_rows() {
    let mut failures = Vec::new();
    for case in cases() {
        failures.extend(run(case).await);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn a_conflicting_status_update_is_retried_with_the_servers_claim() {
    // The API's copy moved on (another writer added the finalizer) after the lister saw
    // the claim: the finalizer update conflicts and PreBind retries with the server's.
    let mut newer = pending_claim();
    newer.metadata.resource_version = Some("7".into());
    newer.metadata.finalizers = Some(vec![FINALIZER.into()]);
    let case = Case {
        name: "conflict",
        claims: vec![pending_claim()],
        api_claims: Some(vec![newer]),
        classes: vec![class()],
        slices: vec![slice(WORKER, &["instance-1"])],
        want: Want {
            pending_after_reserve: vec![CLAIM],
            claims: Some(with_resources_claims()),
            no_pending_at_end: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let failures = run(case).await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// upstream `Test_computesScore`.
#[test]
fn prioritized_list_scores() {
    let claim_with = |requests: Vec<DeviceRequest>| Arc::new(claim_named("c", requests));
    let subs = |n: usize| -> Vec<(String, String, i64)> {
        (1..=n)
            .map(|i| (format!("subreq-{i}"), CLASS.to_string(), 1))
            .collect()
    };
    let request = |name: &str, n: usize| {
        let subs = subs(n);
        let refs: Vec<(&str, &str, i64)> = subs
            .iter()
            .map(|(a, b, c)| (a.as_str(), b.as_str(), *c))
            .collect();
        prioritized(name, &refs)
    };
    let chosen = |requests: &[&str]| AllocationResult {
        devices: Some(DeviceAllocationResult {
            results: Some(
                requests
                    .iter()
                    .map(|r| DeviceRequestAllocationResult {
                        request: r.to_string(),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }),
        ..Default::default()
    };
    let mixed_allocated = Arc::new(allocated_claim());
    type Row = (
        &'static str,
        Vec<Arc<ResourceClaim>>,
        Vec<AllocationResult>,
        Option<i64>,
    );
    let rows: Vec<Row> = vec![
        (
            "more-claims-than-allocations",
            vec![
                claim_with(vec![request("req-1", 1)]),
                claim_with(vec![request("req-2", 1)]),
            ],
            vec![],
            None,
        ),
        (
            "mix-of-allocated-and-unallocated-claims",
            vec![
                mixed_allocated,
                Arc::new(owned(claim_named(CLAIM2, vec![exact("req-1", CLASS)]))),
            ],
            vec![chosen(&["req-2"])],
            Some(0),
        ),
        (
            "single-request-only-subrequest-allocated",
            vec![claim_with(vec![request("req-1", 1)])],
            vec![chosen(&["req-1/subreq-1"])],
            Some(8),
        ),
        (
            "single-request-last-subrequest-allocated",
            vec![claim_with(vec![request("req-1", 8)])],
            vec![chosen(&["req-1/subreq-8"])],
            Some(1),
        ),
        (
            "multiple-requests-with-middle-subrequests-allocated",
            vec![claim_with(vec![request("req-1", 4), request("req-2", 5)])],
            vec![chosen(&["req-1/subreq-4", "req-2/subreq-5"])],
            Some(9),
        ),
        (
            "multiple-requests-with-top-subrequests-allocated",
            vec![claim_with(vec![request("req-1", 8), request("req-2", 1)])],
            vec![chosen(&["req-1/subreq-8", "req-2/subreq-1"])],
            Some(9),
        ),
        (
            "multiple-claims-with-last-subrequests-allocated",
            vec![
                claim_with(vec![request("req-1", 8)]),
                claim_with(vec![request("req-2", 8)]),
            ],
            vec![chosen(&["req-1/subreq-8"]), chosen(&["req-2/subreq-8"])],
            Some(2),
        ),
        (
            "multiple-claims-with-top-subrequests-allocated",
            vec![
                claim_with(vec![request("req-1", 1)]),
                claim_with(vec![request("req-2", 1)]),
            ],
            vec![chosen(&["req-1/subreq-1"]), chosen(&["req-2/subreq-1"])],
            Some(16),
        ),
    ];
    for (name, claims, results, want) in rows {
        let got = prioritized_list_score(&claims, &results).ok();
        assert_eq!(got, want, "{name}");
    }
}

/// upstream `TestNormalizeScore`.
#[test]
fn normalized_scores() {
    let max = i32::MAX as i64;
    let rows: Vec<(&str, Vec<i64>, Vec<i64>)> = vec![
        ("empty", vec![], vec![]),
        ("single-score", vec![42], vec![100]),
        ("all-same", vec![8, 8], vec![100, 100]),
        ("all-same-very-large", vec![max, max], vec![100, 100]),
        ("max-and-min-values", vec![max, 0], vec![100, 0]),
        ("mid-value", vec![99, 98, 97], vec![100, 98, 97]),
        (
            "large-spread-lost-precision",
            vec![max, max - 1, 1, 0],
            vec![100, 99, 0, 0],
        ),
    ];
    let handle = Handle::builder().build();
    let plugin = DynamicResources::build(DynamicResourcesArgs::default(), &handle).unwrap();
    let pod = PodInfo::new(pod_with(Vec::new())).unwrap();
    for (name, mut scores, want) in rows {
        let status = plugin.normalize_score(&CycleState::new(), &pod, &[], &mut scores);
        assert!(status.is_success(), "{name}");
        assert_eq!(scores, want, "{name}");
    }
}

/// A container for the request and mapping tables.
fn container(name: &str, requests: &[(&str, &str)], sidecar: bool) -> Container {
    Container {
        name: name.into(),
        restart_policy: sidecar.then(|| "Always".to_string()),
        resources: Some(ResourceRequirements {
            requests: Some(
                requests
                    .iter()
                    .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                    .collect(),
            ),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn pod_of(init: Vec<Container>, containers: Vec<Container>) -> Pod {
    Pod {
        spec: Some(PodSpec {
            init_containers: (!init.is_empty()).then_some(init),
            containers,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// upstream `Test_createRequestsAndMappings_requests` and `_mappings`: request names,
/// classes and counts, and the container → request mappings.
#[test]
fn extended_resource_requests_and_mappings() {
    let classes = BTreeMap::from([
        ("example.com/gpu", "class"),
        ("example.com/gpu1", "class1"),
        ("example.com/gpuinit", "classInit"),
        ("deviceclass.resource.kubernetes.io/classInit", "classInit"),
    ]);
    let class_of = |name: &str| classes.get(name).map(|c| c.to_string());
    type Rows = Vec<(
        &'static str,
        Pod,
        Vec<(&'static str, &'static str, i64)>,
        Vec<(&'static str, &'static str)>,
    )>;
    let rows: Rows = vec![
        (
            "nil",
            pod_of(vec![], vec![container("con0", &[], false)]),
            vec![],
            vec![],
        ),
        (
            "one resource match",
            pod_of(
                vec![],
                vec![container("con0", &[("example.com/gpu", "1")], false)],
            ),
            vec![("container-0-request-0", "class", 1)],
            vec![("con0", "container-0-request-0")],
        ),
        (
            "one resource match, one resource not match",
            pod_of(
                vec![],
                vec![container(
                    "con0",
                    &[("example.com/gpu", "1"), ("example.com/other", "1")],
                    false,
                )],
            ),
            vec![("container-0-request-0", "class", 1)],
            vec![("con0", "container-0-request-0")],
        ),
        (
            "two resources match",
            pod_of(
                vec![],
                vec![container(
                    "con0",
                    &[("example.com/gpu", "1"), ("example.com/gpu1", "2")],
                    false,
                )],
            ),
            vec![
                ("container-0-request-0", "class", 1),
                ("container-0-request-1", "class1", 2),
            ],
            vec![
                ("con0", "container-0-request-0"),
                ("con0", "container-0-request-1"),
            ],
        ),
        (
            "two containers match",
            pod_of(
                vec![],
                vec![
                    container("con0", &[("example.com/gpu1", "2")], false),
                    container("con1", &[("example.com/gpu1", "2")], false),
                ],
            ),
            vec![
                ("container-0-request-0", "class1", 2),
                ("container-1-request-0", "class1", 2),
            ],
            vec![
                ("con0", "container-0-request-0"),
                ("con1", "container-1-request-0"),
            ],
        ),
        (
            "one init container, one regular container",
            pod_of(
                vec![container(
                    "init-con0",
                    &[("example.com/gpuinit", "2")],
                    false,
                )],
                vec![container("con0", &[("example.com/gpu", "1")], false)],
            ),
            vec![
                ("container-0-request-0", "classInit", 2),
                ("container-1-request-0", "class", 1),
            ],
            vec![
                ("con0", "container-1-request-0"),
                ("init-con0", "container-0-request-0"),
            ],
        ),
        (
            "two init containers, one regular container",
            pod_of(
                vec![
                    container("init-con0", &[("example.com/gpuinit", "1")], false),
                    container("init-con1", &[("example.com/gpuinit", "2")], false),
                ],
                vec![container("con0", &[("example.com/gpu", "1")], false)],
            ),
            vec![
                ("container-1-request-0", "classInit", 2),
                ("container-2-request-0", "class", 1),
            ],
            vec![
                ("con0", "container-2-request-0"),
                ("init-con0", "container-1-request-0"),
                ("init-con1", "container-1-request-0"),
            ],
        ),
        (
            "three init containers, one sidecar, one regular container",
            pod_of(
                vec![
                    container("init-con0", &[("example.com/gpuinit", "1")], false),
                    container("sidecar-con1", &[("example.com/gpuinit", "1")], true),
                    container("init-con2", &[("example.com/gpuinit", "2")], false),
                ],
                vec![container("con0", &[("example.com/gpu", "1")], false)],
            ),
            vec![
                ("container-1-request-0", "classInit", 1),
                ("container-2-request-0", "classInit", 2),
                ("container-3-request-0", "class", 1),
            ],
            vec![
                ("con0", "container-3-request-0"),
                ("init-con0", "container-1-request-0"),
                ("init-con2", "container-2-request-0"),
                ("sidecar-con1", "container-1-request-0"),
            ],
        ),
        (
            "one container, one explicit and one implicit request",
            pod_of(
                vec![container(
                    "init-con0",
                    &[
                        ("example.com/gpuinit", "1"),
                        ("deviceclass.resource.kubernetes.io/classInit", "1"),
                    ],
                    false,
                )],
                vec![],
            ),
            vec![
                ("container-0-request-0", "classInit", 1),
                ("container-0-request-1", "classInit", 1),
            ],
            vec![
                ("init-con0", "container-0-request-0"),
                ("init-con0", "container-0-request-1"),
            ],
        ),
    ];
    for (name, pod, want_requests, want_mappings) in rows {
        let mut resources = BTreeMap::new();
        for c in pod
            .spec
            .iter()
            .flat_map(|s| s.init_containers.iter().flatten().chain(&s.containers))
        {
            for (k, v) in c.resources.iter().flat_map(|r| r.requests.iter().flatten()) {
                let amount: i64 = v.0.parse().unwrap();
                let total = resources.entry(k.clone()).or_insert(0);
                *total = (*total).max(amount);
            }
        }
        let (requests, mappings) = requests_and_mappings(&pod, &resources, class_of);
        let got: Vec<(String, String, i64)> = requests
            .iter()
            .map(|r| {
                let e = r.exactly.as_ref().unwrap();
                (
                    r.name.clone(),
                    e.device_class_name.clone(),
                    e.count.unwrap(),
                )
            })
            .collect();
        let want: Vec<(String, String, i64)> = want_requests
            .iter()
            .map(|(n, c, k)| (n.to_string(), c.to_string(), *k))
            .collect();
        assert_eq!(got, want, "{name}: requests");
        let mut got: Vec<(String, String)> = mappings
            .iter()
            .map(|m| (m.container_name.clone(), m.request_name.clone()))
            .collect();
        got.sort();
        let want: Vec<(String, String)> = want_mappings
            .iter()
            .map(|(c, r)| (c.to_string(), r.to_string()))
            .collect();
        assert_eq!(got, want, "{name}: mappings");
    }
}

#[test]
fn args_are_validated_as_upstream() {
    let args = DynamicResourcesArgs {
        filter_timeout: GoDuration::from_secs(-1),
        binding_timeout: GoDuration::from_nanos(999_999_999),
    };
    let errors: Vec<String> = args
        .validate("args")
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(
        errors,
        [
            "args.filterTimeout: Invalid value: \"-1s\": must be zero or positive",
            "args.bindingTimeout: Invalid value: \"999.999999ms\": must be at least 1 second",
        ]
    );
    assert!(DynamicResourcesArgs::default().validate("args").is_empty());
}

/// Upstream's PostFilter reads the state PreFilter always writes: a pod whose PreFilter
/// ran (with or without claims) gets a PostFilter without a reason; one an earlier
/// plugin's PreFilter rejected (so this PreFilter never ran) gets upstream's error
/// reading the missing state.
#[tokio::test]
async fn post_filter_without_claims_adds_nothing_and_without_state_fails_as_upstream() {
    let handle = Handle::builder().build();
    let plugin = DynamicResources::build(DynamicResourcesArgs::default(), &handle).unwrap();
    let pod = PodInfo::new(pod_with(Vec::new())).unwrap();
    let snapshot = Snapshot::default();
    let statuses = NodeToStatus::default();

    let mut state = CycleState::new();
    let (_, status) = plugin.pre_filter(&mut state, &pod, &snapshot).await;
    assert!(status.is_skip(), "{status:?}");
    let (_, status) = plugin
        .post_filter(&NoRunner, &state, &pod, &snapshot, &statuses)
        .await;
    assert_eq!(status.code(), Code::Unschedulable);
    assert!(status.reasons().is_empty(), "{status:?}");

    let (_, status) = plugin
        .post_filter(&NoRunner, &CycleState::new(), &pod, &snapshot, &statuses)
        .await;
    assert_eq!(status.code(), Code::Error);
    assert_eq!(status.message(), "not found");
}
