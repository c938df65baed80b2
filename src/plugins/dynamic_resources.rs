//! DynamicResources: devices for a pod's ResourceClaims, allocated from the drivers'
//! ResourceSlices by the structured-parameters allocator ([`crate::dra`]), as upstream
//! kube-scheduler 1.37 does with its default-on features (upstream `dynamicresources`).
//!
//! - **PreEnqueue** keeps a pod out of the queue until every claim it names exists (a
//!   template's claim is made by the resourceclaim controller), is not being deleted and,
//!   for a template's claim, is owned by the pod.
//! - **PreFilter** resolves the claims again, refuses a claim another pod's allocation is
//!   still being written for, checks that every request's DeviceClass exists, and builds
//!   one allocator for the cycle from the slices (DeviceTaintRules applied) and the
//!   devices allocated or pending. A pod without claims and without extended resources
//!   backed by a DeviceClass skips the plugin. A pod asking for such an extended resource
//!   gets an in-memory claim, which Filter fills per node.
//! - **Filter** rejects a node an allocated claim cannot be used on (its node selector,
//!   a failed or timed-out binding) and allocates the others there, within
//!   `filterTimeout` per node; the node's results are kept for Reserve.
//! - **PostFilter** deallocates one allocated claim that was unusable and is reserved
//!   for nobody else (so that the next attempt may allocate it anew), or deletes an
//!   extended-resource claim left from an earlier attempt. It runs before
//!   DefaultPreemption: freeing an idle claim is preferred over evicting a pod.
//! - **Score** (prioritized lists): 8 − i for every request served by its i-th
//!   alternative, normalized to 0..=100; weight 2 in the default set.
//! - **Reserve** records the chosen node's allocations as *pending* in
//!   [`DeviceResources`], which every later cycle counts as allocated, so two pods never
//!   get the same device; **Unreserve** drops them and removes the pod's reservations.
//! - **PreBind** writes each claim through the [`ClaimWriter`]: the finalizer, then
//!   `status.allocation` with `allocationTimestamp` and the pod in `reservedFor`
//!   (retrying a conflict five times, as upstream); it creates the extended-resource
//!   claim and records it in the pod's `status.extendedResourceClaimStatus`; it then
//!   waits, polling every 5 s of the scheduler's clock for at most `bindingTimeout`,
//!   until devices with binding conditions report them met.
//!
//! Left out, as upstream's defaults leave them off: node-allocatable resources from
//! devices, Workload/PodGroup claims, optional node operations. Not carried: the
//! `BindingConditionsPending` event and the binding-condition metrics; NodeResourcesFit's
//! scoring of extended resources backed by devices (its default strategy scores cpu and
//! memory only).

pub mod claims;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{
    ContainerExtendedResourceRequest, PodExtendedResourceClaimStatus,
};
use k8s_openapi::api::resource::v1::{
    AllocationResult, ResourceClaim, ResourceClaimConsumerReference, ResourceClaimSpec,
    ResourceClaimStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::GoDuration;
use crate::cluster::lock::mutex as lock;
use crate::cluster::{DeviceResources, NodeInfo, PodInfo, Snapshot, is_allocated};
use crate::dra::allocator::{AllocateError, AllocatedState, Allocator, claim_label};
use crate::dra::cel::Selectors;
use crate::framework::{
    ActionType, ClaimWriter, Clock, ClusterEvent, Code, CycleState, EventResource, FieldError,
    FilterPlugin, FilterRunner, Handle, NodeToStatus, PluginArgs, PluginError, PostFilterPlugin,
    PostFilterResult, PreBindPlugin, PreEnqueuePlugin, PreFilterPlugin, PreFilterResult,
    ReservePlugin, ScoreExtensions, ScorePlugin, Status, WriteError,
};
use crate::helpers::node_affinity::NodeSelector;
use crate::helpers::score::default_normalize_score;

use claims::{
    EXTENDED_CLAIM_ANNOTATION, EXTENDED_CLAIM_NAME, FINALIZER, allocation, binding_timed_out,
    claim_requests, has_finalizer, is_controlled_by, is_dra_extended_resource_name, kobj,
    pod_claims, prioritized_list_score, ready_for_binding, requests_and_mappings, reserved_for,
};

/// Upstream's default `filterTimeout`.
pub const DEFAULT_FILTER_TIMEOUT: GoDuration = GoDuration::from_secs(10);
/// Upstream's default `bindingTimeout`.
pub const DEFAULT_BINDING_TIMEOUT: GoDuration = GoDuration::from_secs(600);

/// Filter's rejection of a node the claims do not fit on.
pub const CANNOT_ALLOCATE: &str = "cannot allocate all claims";
/// Filter's rejection of a node an allocated claim cannot be used on.
pub const NOT_AVAILABLE: &str = "resourceclaim not available on the node";

/// Upstream's error reading a cycle state that was never written (`fwk.ErrNotFound`).
const STATE_NOT_FOUND: &str = "not found";

/// How often PreBind checks binding conditions.
const BINDING_POLL: Duration = Duration::from_secs(5);
/// How long PreBind waits for the claim it created to reach the lister.
const CREATED_CLAIM_WAIT: Duration = Duration::from_secs(120);
/// Attempts of a status update that conflicts (client-go's `DefaultRetry`).
const CONFLICT_ATTEMPTS: usize = 5;

/// Args of DynamicResources (upstream `DynamicResourcesArgs`, v1 defaults with 1.37's
/// default features).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct DynamicResourcesArgs {
    /// How long Filter may search for devices on one node (Go duration, e.g. `10s`); a
    /// node that takes longer fails the attempt, which is retried after backoff. `0s`
    /// means no limit.
    pub filter_timeout: GoDuration,
    /// How long PreBind waits for devices with binding conditions to report them met,
    /// and how long after allocation such a claim counts as timed out; at least `1s`.
    pub binding_timeout: GoDuration,
}

impl Default for DynamicResourcesArgs {
    fn default() -> Self {
        DynamicResourcesArgs {
            filter_timeout: DEFAULT_FILTER_TIMEOUT,
            binding_timeout: DEFAULT_BINDING_TIMEOUT,
        }
    }
}

impl PluginArgs for DynamicResourcesArgs {
    /// Upstream `ValidateDynamicResourcesArgs` with its features on.
    fn validate(&self, path: &str) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if self.filter_timeout.as_nanos() < 0 {
            errors.push(FieldError::invalid(
                format!("{path}.filterTimeout"),
                &self.filter_timeout.to_string().into(),
                "must be zero or positive",
            ));
        }
        if self.binding_timeout < GoDuration::from_secs(1) {
            errors.push(FieldError::invalid(
                format!("{path}.bindingTimeout"),
                &self.binding_timeout.to_string().into(),
                "must be at least 1 second",
            ));
        }
        errors
    }
}

/// What the cycle knows about the pod's claims (upstream `stateData`); shared, not
/// copied, by the preemption dry run.
#[derive(Clone)]
struct State {
    /// The pod's claims in order, the extended-resource claim last.
    claims: Vec<Arc<ResourceClaim>>,
    /// How many of `claims` the pod names (the rest is the extended-resource claim).
    user_claims: usize,
    extended: Option<Arc<Extended>>,
    /// Where each allocated claim can be used; `None` is anywhere.
    available_on: Vec<Option<Arc<NodeSelector>>>,
    /// Set by Reserve: the allocation chosen for each claim.
    allocations: Vec<Option<AllocationResult>>,
    allocator: Option<Arc<Allocator>>,
    /// Allocated claims found unusable on some node, by index.
    unavailable: Arc<Mutex<BTreeSet<usize>>>,
    by_node: Arc<Mutex<HashMap<String, Arc<NodeAllocation>>>>,
}

/// Requested amounts of resources a DeviceClass may serve, with the class serving each.
type ExtendedRequests = BTreeMap<String, (i64, Option<String>)>;

/// The pod's extended resources served by DeviceClasses.
struct Extended {
    /// The pod's non-zero requests of resources a DeviceClass may serve (extended and
    /// `deviceclass.resource.kubernetes.io/` names), with the class that serves each, if
    /// any; looked up once in PreFilter for every node's Filter.
    resources: ExtendedRequests,
    /// The UID its claim had at PreFilter, under which Reserve made it pending.
    initial_uid: String,
}

/// What Filter allocated on a node.
struct NodeAllocation {
    /// One per claim to allocate, in order.
    results: Vec<AllocationResult>,
    /// The node's extended-resource claim, with its requests.
    extended_claim: Option<ResourceClaim>,
    mappings: Vec<ContainerExtendedResourceRequest>,
}

impl State {
    fn empty() -> State {
        State {
            claims: Vec::new(),
            user_claims: 0,
            extended: None,
            available_on: Vec::new(),
            allocations: Vec::new(),
            allocator: None,
            unavailable: Arc::default(),
            by_node: Arc::default(),
        }
    }

    fn extended_index(&self) -> Option<usize> {
        (self.claims.len() > self.user_claims).then_some(self.user_claims)
    }

    /// The claims without an allocation, with their indices.
    fn to_allocate(&self) -> impl Iterator<Item = (usize, &Arc<ResourceClaim>)> {
        self.claims
            .iter()
            .enumerate()
            .filter(|(_, c)| !is_allocated(c))
    }
}

pub struct DynamicResources {
    resources: Arc<DeviceResources>,
    writer: Arc<dyn ClaimWriter>,
    clock: Arc<dyn Clock>,
    selectors: Arc<Selectors>,
    filter_timeout: Option<Duration>,
    binding_timeout: Duration,
}

crate::plugin! {
    DynamicResources {
        name: "DynamicResources",
        points: [PreEnqueue, PreFilter, Filter, PostFilter, Score, Reserve, PreBind],
    }

    impl Plugin {
        fn as_sign(&self) -> Option<&dyn crate::framework::SignPlugin> {
            Some(self)
        }

        /// Upstream's registration: nodes added or changed in labels or allocatable,
        /// claims added, changed or deleted, the pod's own generated claims recorded,
        /// DeviceClasses and ResourceSlices added or changed.
        fn events_to_register(&self) -> Option<Vec<ClusterEvent>> {
            Some(vec![
                ClusterEvent::new(
                    EventResource::Node,
                    ActionType::ADD | ActionType::UPDATE_NODE_LABEL | ActionType::UPDATE_NODE_ALLOCATABLE,
                ),
                ClusterEvent::new(EventResource::ResourceClaim, ActionType::ALL),
                ClusterEvent::new(
                    EventResource::Pod,
                    ActionType::UPDATE_POD_GENERATED_RESOURCE_CLAIM,
                ),
                ClusterEvent::new(EventResource::DeviceClass, ActionType::ADD | ActionType::UPDATE),
                ClusterEvent::new(EventResource::ResourceSlice, ActionType::ADD | ActionType::UPDATE),
            ])
        }
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str = "Allocates devices for a pod's ResourceClaims (and extended resources backed by a DeviceClass) from the drivers' ResourceSlices, and writes the allocations before the pod is bound.";
        type Args = DynamicResourcesArgs;

        fn build(args: DynamicResourcesArgs, handle: &Handle) -> Result<Self, PluginError> {
            let filter_timeout = args.filter_timeout.to_std();
            Ok(DynamicResources {
                resources: handle.device_resources.clone(),
                writer: handle.claim_writer.clone(),
                clock: handle.clock.clone(),
                selectors: Arc::new(Selectors::new()),
                filter_timeout: (!filter_timeout.is_zero()).then_some(filter_timeout),
                binding_timeout: args.binding_timeout.to_std(),
            })
        }
    }
}

impl PreEnqueuePlugin for DynamicResources {
    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        let has_claims = pod
            .pod
            .spec
            .as_ref()
            .and_then(|s| s.resource_claims.as_ref())
            .is_some_and(|c| !c.is_empty());
        // Where the adapter does not feed claims, the scheduler refuses such pods with
        // its own message; they are not gated here.
        if !has_claims || !self.resources.is_served() {
            return Status::success();
        }
        match pod_claims(&self.resources, &pod.pod) {
            Ok(_) => Status::success(),
            Err(message) => Status::unresolvable(message),
        }
    }
}

impl DynamicResources {
    /// Upstream `validateDeviceClass`.
    fn check_class(&self, class: &str, request: &str) -> Result<(), Status> {
        if class.is_empty() {
            return Err(Status::error(format!(
                "request {request}: unsupported request type"
            )));
        }
        if self.resources.class(class).is_none() {
            return Err(Status::unresolvable(format!(
                "request {request}: device class {class} does not exist"
            )));
        }
        Ok(())
    }

    /// Checks every request of a claim to allocate: its classes exist.
    fn check_requests(&self, claim: &ResourceClaim) -> Result<(), Status> {
        for request in claim_requests(claim).into_iter().flatten() {
            if let Some(exact) = &request.exactly {
                self.check_class(&exact.device_class_name, &request.name)?;
            } else if let Some(subs) = request.first_available.as_ref().filter(|s| !s.is_empty()) {
                for sub in subs {
                    self.check_class(
                        &sub.device_class_name,
                        &format!("{}/{}", request.name, sub.name),
                    )?;
                }
            } else {
                return Err(Status::unresolvable(format!(
                    "resource claim {}, request {}: unknown request type",
                    claim_label(claim),
                    request.name
                )));
            }
        }
        Ok(())
    }

    /// Upstream `preFilterExtendedResources`: the pod's claim for extended resources
    /// served by DeviceClasses, one left from an earlier attempt or a new in-memory one.
    fn extended_claim(&self, pod: &PodInfo) -> Option<(ResourceClaim, ExtendedRequests)> {
        let resources: ExtendedRequests = pod
            .filter_requests
            .scalar_resources
            .iter()
            .filter(|(name, amount)| **amount != 0 && is_dra_extended_resource_name(name))
            .map(|(name, &amount)| {
                let class = self.resources.extended_resource_class(name);
                let class = class.and_then(|c| c.metadata.name.clone());
                (name.clone(), (amount, class))
            })
            .collect();
        if resources.values().all(|(_, class)| class.is_none()) {
            return None;
        }
        let left = self.resources.claims().into_iter().find(|claim| {
            claim
                .annotations()
                .get(EXTENDED_CLAIM_ANNOTATION)
                .map(String::as_str)
                == Some("true")
                && claim
                    .owner_references()
                    .iter()
                    .any(|o| o.controller == Some(true) && o.name == pod.name())
                && is_controlled_by(claim, &pod.pod)
        });
        if let Some(claim) = left {
            return Some(((*claim).clone(), resources));
        }
        let mut bytes = [0u8; 16];
        rand::fill(&mut bytes);
        let claim = ResourceClaim {
            metadata: kube::api::ObjectMeta {
                namespace: Some(pod.namespace().to_string()),
                name: Some(EXTENDED_CLAIM_NAME.into()),
                uid: Some(crate::helpers::uuid::uuid_text(bytes, 4)),
                generate_name: Some(format!("{}-extended-resources-", pod.name())),
                owner_references: Some(vec![OwnerReference {
                    api_version: "v1".into(),
                    kind: "Pod".into(),
                    name: pod.name().to_string(),
                    uid: pod.pod.metadata.uid.clone().unwrap_or_default(),
                    controller: Some(true),
                    block_owner_deletion: None,
                }]),
                annotations: Some(BTreeMap::from([(
                    EXTENDED_CLAIM_ANNOTATION.to_string(),
                    "true".to_string(),
                )])),
                ..Default::default()
            },
            spec: Some(ResourceClaimSpec::default()),
            status: None,
        };
        Some((claim, resources))
    }

    /// Upstream `filterExtendedResources`: the node's copy of the extended-resource
    /// claim with the requests this node must serve through devices, if any.
    fn node_extended_claim(
        &self,
        state: &State,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Result<Option<(ResourceClaim, Vec<ContainerExtendedResourceRequest>)>, Status> {
        let (Some(index), Some(extended)) = (state.extended_index(), &state.extended) else {
            return Ok(None);
        };
        let claim = &state.claims[index];
        if claim_requests(claim).is_some() {
            return Err(Status::unresolvable(
                "cannot schedule extended resource claim",
            ));
        }
        let mut through_devices = BTreeMap::new();
        for (name, (amount, class)) in &extended.resources {
            let allocatable = node.allocatable.scalar_resources.get(name);
            if class.is_some() && allocatable.copied().unwrap_or(0) == 0 {
                through_devices.insert(name.clone(), *amount);
            } else if allocatable.is_none() {
                return Err(Status::unresolvable("cannot fit resource"));
            }
        }
        if through_devices.is_empty() && state.user_claims == 0 {
            return Ok(None);
        }
        if is_allocated(claim) {
            return Ok(None);
        }
        let (requests, mappings) = requests_and_mappings(&pod.pod, &through_devices, |name| {
            extended.resources.get(name).and_then(|(_, c)| c.clone())
        });
        let mut node_claim = (**claim).clone();
        node_claim
            .spec
            .get_or_insert_default()
            .devices
            .get_or_insert_default()
            .requests = Some(requests);
        Ok(Some((node_claim, mappings)))
    }
}

#[async_trait]
impl PreFilterPlugin for DynamicResources {
    async fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        // Upstream writes its state first, so that PostFilter finds one whatever
        // PreFilter decides; PostFilter after an earlier plugin's PreFilter rejection
        // finds none.
        state.write(State::empty());
        let mut claims = match pod_claims(&self.resources, &pod.pod) {
            Ok(claims) => claims,
            Err(message) => return (None, Status::unresolvable(message)),
        };
        let user_claims = claims.len();
        let extended = self.extended_claim(pod).map(|(claim, resources)| {
            let initial_uid = claim.metadata.uid.clone().unwrap_or_default();
            claims.push(Arc::new(claim));
            Arc::new(Extended {
                resources,
                initial_uid,
            })
        });
        if claims.is_empty() {
            return (None, Status::skip());
        }
        let mut available_on = Vec::with_capacity(claims.len());
        let mut to_allocate = 0;
        for (i, claim) in claims.iter().enumerate() {
            if let Some(allocation) = allocation(claim) {
                let selector = match &allocation.node_selector {
                    Some(spec) => match NodeSelector::parse(spec, "nodeSelector") {
                        Ok(selector) => Some(Arc::new(selector)),
                        Err(errors) => {
                            let text: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
                            return (None, Status::error(text.join(", ")));
                        }
                    },
                    None => None,
                };
                available_on.push(selector);
                continue;
            }
            available_on.push(None);
            to_allocate += 1;
            let uid = claim.metadata.uid.as_deref().unwrap_or_default();
            if self.resources.pending_allocation(uid).is_some() {
                return (
                    None,
                    Status::unresolvable(format!(
                        "resource claim {} is in the process of being allocated",
                        claim_label(claim)
                    )),
                );
            }
            if i < user_claims
                && let Err(status) = self.check_requests(claim)
            {
                return (None, status);
            }
        }
        let allocator = (to_allocate > 0).then(|| {
            let allocated = self.resources.allocated_claims();
            let allocated = AllocatedState::of(allocated.iter().map(Arc::as_ref));
            Arc::new(Allocator::new(
                Arc::new(allocated),
                self.resources.clone(),
                self.resources.slices_with_taint_rules(),
                self.selectors.clone(),
            ))
        });
        state.write(State {
            allocations: vec![None; claims.len()],
            claims,
            user_claims,
            extended,
            available_on,
            allocator,
            ..State::empty()
        });
        (None, Status::success())
    }
}

impl FilterPlugin for DynamicResources {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(state) = state.read::<State>() else {
            return Status::error(STATE_NOT_FOUND);
        };
        let Some(node_object) = node.node() else {
            return Status::error("node not found");
        };
        let node_claim = match self.node_extended_claim(state, pod, node) {
            Ok(found) => found,
            Err(status) => return status,
        };
        if node_claim.is_none() && state.user_claims == 0 {
            // The node's device plugin serves the extended resources; NodeResourcesFit
            // counts them.
            return Status::success();
        }
        let mut now = None;
        let mut unavailable = Vec::new();
        for (i, claim) in state.claims.iter().enumerate() {
            if let Some(selector) = &state.available_on[i]
                && !selector.matches(node_object)
            {
                unavailable.push(i);
                continue;
            }
            if is_allocated(claim) {
                match ready_for_binding(claim) {
                    Err(_) => unavailable.push(i),
                    Ok(false)
                        if binding_timed_out(
                            claim,
                            self.binding_timeout,
                            *now.get_or_insert_with(Timestamp::now),
                        ) =>
                    {
                        unavailable.push(i)
                    }
                    Ok(_) => {}
                }
            }
        }
        let mut results = None;
        if let Some(allocator) = &state.allocator {
            let extended_index = state.extended_index();
            let to_allocate: Vec<&ResourceClaim> = state
                .to_allocate()
                .map(|(i, claim)| match &node_claim {
                    Some((node_claim, _)) if Some(i) == extended_index => node_claim,
                    _ => claim.as_ref(),
                })
                .collect();
            let deadline = self.filter_timeout.map(|t| Instant::now() + t);
            match allocator.allocate(node_object, &to_allocate, deadline) {
                Ok(Some(found)) if found.len() == to_allocate.len() => results = Some(found),
                Ok(_) => return Status::unresolvable(CANNOT_ALLOCATE),
                Err(AllocateError::Timeout) => {
                    return Status::error(format!(
                        "node {}: timed out trying to allocate devices",
                        node.name()
                    ));
                }
                Err(AllocateError::Node(message)) => return Status::unresolvable(message),
                Err(AllocateError::Fatal(message)) => return Status::error(message),
            }
        }
        if !unavailable.is_empty() {
            lock(&state.unavailable).extend(unavailable);
            return Status::unresolvable(NOT_AVAILABLE);
        }
        if let Some(results) = results {
            let (extended_claim, mappings) = match node_claim {
                Some((claim, mappings)) => (Some(claim), mappings),
                None => (None, Vec::new()),
            };
            lock(&state.by_node).insert(
                node.name().to_string(),
                Arc::new(NodeAllocation {
                    results,
                    extended_claim,
                    mappings,
                }),
            );
        }
        Status::success()
    }
}

#[async_trait]
impl PostFilterPlugin for DynamicResources {
    /// Upstream `deallocateOrDeletePodClaims`. Nothing freed is an Unschedulable status
    /// without a reason, so that the fit error reads as if the plugin were absent. Without
    /// a PreFilter state (an earlier plugin's PreFilter rejected the pod, so this one's
    /// did not run) it is upstream's error reading the state, whose text ends the
    /// failure message.
    async fn post_filter(
        &self,
        _: &dyn FilterRunner,
        state: &CycleState,
        pod: &PodInfo,
        _: &Snapshot,
        _: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        let nothing = || Status::with_reasons(Code::Unschedulable, Vec::new());
        let Some(state) = state.read::<State>() else {
            return (None, Status::error(STATE_NOT_FOUND));
        };
        if state.claims.is_empty() {
            return (None, nothing());
        }
        let pod_uid = pod.pod.metadata.uid.as_deref().unwrap_or_default();
        let extended_index = state.extended_index();
        let unavailable: Vec<usize> = lock(&state.unavailable).iter().copied().collect();
        for index in unavailable {
            let claim = &state.claims[index];
            if Some(index) == extended_index {
                if claim.metadata.name.as_deref() != Some(EXTENDED_CLAIM_NAME) {
                    break;
                }
                continue;
            }
            let reserved = claim
                .status
                .as_ref()
                .and_then(|s| s.reserved_for.as_deref())
                .unwrap_or_default();
            let only_this_pod = reserved.len() == 1 && reserved[0].uid == pod_uid;
            if reserved.is_empty() || only_this_pod {
                let mut freed = (**claim).clone();
                let status = freed.status.get_or_insert_default();
                status.reserved_for = None;
                status.allocation = None;
                status.devices = None;
                return match self.writer.update_claim_status(&freed).await {
                    Ok(_) => (
                        None,
                        Status::unschedulable("deallocation of ResourceClaim completed"),
                    ),
                    Err(e) => (None, Status::error(e.to_string())),
                };
            }
        }
        if let Some(index) = extended_index {
            let claim = &state.claims[index];
            if claim.metadata.name.as_deref() != Some(EXTENDED_CLAIM_NAME) {
                return match self.delete_claim(claim).await {
                    Ok(()) => (
                        None,
                        Status::unschedulable("deletion of ResourceClaim completed"),
                    ),
                    Err(message) => (None, Status::error(message)),
                };
            }
        }
        (None, nothing())
    }
}

impl ScorePlugin for DynamicResources {
    fn score(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let Some(state) = state.read::<State>() else {
            return Ok(0);
        };
        if state.allocator.is_none() {
            // Nothing allocated this cycle (no claims, or all allocated already): no lock
            // per node.
            return Ok(0);
        }
        let found = lock(&state.by_node).get(node.name()).cloned();
        let Some(allocation) = found else {
            return Ok(0);
        };
        prioritized_list_score(&state.claims, &allocation.results).map_err(Status::error)
    }

    fn score_extensions(&self) -> Option<&dyn ScoreExtensions> {
        Some(self)
    }
}

impl ScoreExtensions for DynamicResources {
    fn normalize_score(
        &self,
        _: &CycleState,
        _: &PodInfo,
        _: &[Arc<NodeInfo>],
        scores: &mut [i64],
    ) -> Status {
        default_normalize_score(100, false, scores)
    }
}

#[async_trait]
impl ReservePlugin for DynamicResources {
    async fn reserve(&self, state: &mut CycleState, _: &PodInfo, node_name: &str) -> Status {
        let Some(state) = state.read_mut::<State>() else {
            return Status::success();
        };
        let unallocated = state.claims.iter().filter(|c| !is_allocated(c)).count();
        if unallocated == 0 || state.allocator.is_none() {
            return Status::success();
        }
        let extended_index = state.extended_index();
        let user_to_allocate = state.to_allocate().any(|(i, _)| Some(i) != extended_index);
        let found = lock(&state.by_node).get(node_name).cloned();
        let Some(node_allocation) = found.filter(|a| !a.results.is_empty()) else {
            if !user_to_allocate {
                return Status::success();
            }
            return Status::error("claim allocation not found for node");
        };
        if node_allocation.results.len() != unallocated {
            return Status::error(format!(
                "internal error, have {} allocations, {} claims to allocate, want {} claims",
                node_allocation.results.len(),
                unallocated,
                unallocated
            ));
        }
        let indices: Vec<usize> = state.to_allocate().map(|(i, _)| i).collect();
        for (k, index) in indices.into_iter().enumerate() {
            let result = node_allocation.results[k].clone();
            state.allocations[index] = Some(result.clone());
            let special = Some(index) == extended_index;
            let base = match (&node_allocation.extended_claim, special) {
                (Some(node_claim), true) => node_claim.clone(),
                _ => (*state.claims[index]).clone(),
            };
            let mut pending = base;
            if !has_finalizer(&pending) {
                pending
                    .metadata
                    .finalizers
                    .get_or_insert_default()
                    .push(FINALIZER.to_string());
            }
            pending.status.get_or_insert_default().allocation = Some(result);
            if !special {
                let namespace = pending.metadata.namespace.clone().unwrap_or_default();
                let name = pending.name_any();
                let uid = pending.metadata.uid.clone().unwrap_or_default();
                let Some(assumed) = self.resources.claim(&namespace, &name) else {
                    return Status::error(format!(
                        "internal error, couldn't signal allocation for claim {name}: \
                         look up assumed claim {}, UID={uid}: ResourceClaim \"{}\" not found",
                        kobj(&namespace, &name),
                        kobj(&namespace, &name)
                    ));
                };
                if assumed.metadata.uid.as_deref() == Some(uid.as_str()) && is_allocated(&assumed) {
                    continue;
                }
            }
            self.resources.signal_pending_allocation(pending);
        }
        Status::success()
    }

    async fn unreserve(&self, state: &mut CycleState, pod: &PodInfo, _: &str) {
        let Some(state) = state.read::<State>() else {
            return;
        };
        let pod_uid = pod.pod.metadata.uid.as_deref().unwrap_or_default();
        for claim in &state.claims[..state.user_claims] {
            let uid = claim.metadata.uid.as_deref().unwrap_or_default();
            let namespace = claim.metadata.namespace.as_deref().unwrap_or_default();
            if self.resources.remove_pending_allocation(uid) {
                self.resources.restore_claim(namespace, &claim.name_any());
            }
            if is_allocated(claim)
                && reserved_for(claim, pod_uid)
                && let Err(e) = self.writer.remove_reservation(claim, pod_uid).await
            {
                tracing::warn!(claim = %claim_label(claim), error = %e, "unreserve");
            }
        }
        let (Some(index), Some(extended)) = (state.extended_index(), &state.extended) else {
            return;
        };
        let claim = &state.claims[index];
        let namespace = claim.metadata.namespace.as_deref().unwrap_or_default();
        if self
            .resources
            .remove_pending_allocation(&extended.initial_uid)
        {
            self.resources.restore_claim(namespace, &claim.name_any());
        }
        if claim.metadata.name.as_deref() == Some(EXTENDED_CLAIM_NAME) {
            return;
        }
        if let Err(e) = self.delete_claim(claim).await {
            tracing::warn!(claim = %claim_label(claim), error = %e, "delete extended resource claim");
        }
    }
}

impl DynamicResources {
    /// Upstream `deleteClaim`: remove the finalizer (retrying a conflict), then delete;
    /// a claim already gone is fine.
    async fn delete_claim(&self, claim: &ResourceClaim) -> Result<(), String> {
        let namespace = claim.metadata.namespace.clone().unwrap_or_default();
        let name = claim.name_any();
        let label = kobj(&namespace, &name);
        let mut current = claim.clone();
        for attempt in 0..CONFLICT_ATTEMPTS {
            if attempt > 0 {
                current = self
                    .writer
                    .get_claim(&namespace, &name)
                    .await
                    .map_err(|e| format!("get resourceclaim {label}: {e}"))?;
            }
            if let Some(finalizers) = current.metadata.finalizers.as_mut() {
                finalizers.retain(|f| f != FINALIZER);
            }
            match self.writer.update_claim(&current).await {
                Ok(_) => break,
                Err(WriteError::Conflict(_)) if attempt + 1 < CONFLICT_ATTEMPTS => continue,
                Err(WriteError::NotFound(_)) => return Ok(()),
                Err(e) => return Err(format!("update resourceclaim {label}: {e}")),
            }
        }
        match self.writer.delete_claim(&namespace, &name).await {
            Ok(()) | Err(WriteError::NotFound(_)) => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Upstream `bindClaim`: writes claim `index`'s allocation (when this cycle made it)
    /// and the pod's reservation; creates the extended-resource claim first. Returns the
    /// claim as stored.
    async fn bind_claim(
        &self,
        state: &State,
        index: usize,
        pod: &PodInfo,
        node_name: &str,
    ) -> Result<ResourceClaim, String> {
        let mut claim = (*state.claims[index]).clone();
        let allocation = state.allocations[index].clone();
        let special = Some(index) == state.extended_index();
        if special && allocation.is_none() && claim_requests(&claim).is_none() {
            return Ok(claim);
        }
        if special && claim.metadata.name.as_deref() == Some(EXTENDED_CLAIM_NAME) {
            let found = lock(&state.by_node).get(node_name).cloned();
            let Some(node_claim) = found.and_then(|a| a.extended_claim.clone()) else {
                return Err(format!(
                    "extended resource claim not found for node {node_name}"
                ));
            };
            let mut create = node_claim;
            create.status = None;
            create.metadata.name = None;
            create.metadata.uid = None;
            claim = self.writer.create_claim(&create).await.map_err(|e| {
                format!(
                    "create claim for extended resources {}/: {e}",
                    pod.namespace()
                )
            })?;
        }
        let namespace = claim.metadata.namespace.clone().unwrap_or_default();
        let name = claim.name_any();
        let label = kobj(&namespace, &name);
        let binding = ResourceClaimConsumerReference {
            api_group: None,
            resource: "pods".into(),
            name: pod.name().to_string(),
            uid: pod.pod.metadata.uid.clone().unwrap_or_default(),
        };
        let mut attempt = 0;
        let updated = loop {
            if attempt > 0 {
                claim = self
                    .writer
                    .get_claim(&namespace, &name)
                    .await
                    .map_err(|e| format!("get updated claim {label} after conflict: {e}"))?;
            }
            match self
                .update_allocation(claim.clone(), allocation.as_ref(), &binding, &label)
                .await
            {
                Ok(updated) => break updated,
                Err((true, _)) if attempt + 1 < CONFLICT_ATTEMPTS => attempt += 1,
                Err((_, message)) => return Err(message),
            }
        };
        if special {
            let deadline = self.clock.now() + CREATED_CLAIM_WAIT;
            while self.resources.api_claim(&namespace, &name).is_none()
                && self.clock.now() < deadline
            {
                self.clock
                    .sleep_until(self.clock.now() + Duration::from_secs(1))
                    .await;
            }
        }
        if let Err(e) = self.resources.assume_claim(updated.clone()) {
            tracing::debug!(claim = %label, error = %e, "assume claim after PreBind");
        }
        if special {
            let found = lock(&state.by_node).get(node_name).cloned();
            let mappings = found.map(|a| a.mappings.clone()).unwrap_or_default();
            if mappings.is_empty() {
                return Err(format!(
                    "nil or empty request mappings, no update of pod {} ExtendedResourceClaimStatus",
                    kobj(pod.namespace(), pod.name())
                ));
            }
            let status = PodExtendedResourceClaimStatus {
                request_mappings: mappings,
                resource_claim_name: name.clone(),
            };
            self.writer
                .set_extended_resource_claim_status(&pod.pod, &status)
                .await
                .map_err(|e| {
                    format!(
                        "update pod {} ExtendedResourceClaimStatus: {e}",
                        kobj(pod.namespace(), pod.name())
                    )
                })?;
        }
        Ok(updated)
    }

    /// One attempt of `bindClaim`'s update; the error says whether it was a conflict.
    async fn update_allocation(
        &self,
        mut claim: ResourceClaim,
        allocation: Option<&AllocationResult>,
        binding: &ResourceClaimConsumerReference,
        label: &str,
    ) -> Result<ResourceClaim, (bool, String)> {
        let conflict = |e: &WriteError| matches!(e, WriteError::Conflict(_));
        if claim.metadata.deletion_timestamp.is_some() {
            return Err((false, format!("claim {label} got deleted in the meantime")));
        }
        if let Some(allocation) = allocation {
            if is_allocated(&claim) {
                return Err((
                    false,
                    format!("claim {label} got allocated elsewhere in the meantime"),
                ));
            }
            if !has_finalizer(&claim) {
                claim
                    .metadata
                    .finalizers
                    .get_or_insert_default()
                    .push(FINALIZER.to_string());
                claim =
                    self.writer.update_claim(&claim).await.map_err(|e| {
                        (conflict(&e), format!("add finalizer to claim {label}: {e}"))
                    })?;
            }
            claim.status.get_or_insert_default().allocation = Some(allocation.clone());
        }
        let status: &mut ResourceClaimStatus = claim.status.get_or_insert_default();
        status
            .reserved_for
            .get_or_insert_default()
            .push(binding.clone());
        let Some(written) = status.allocation.as_mut() else {
            return Err((
                false,
                format!("claim {label} got deallocated elsewhere in the meantime"),
            ));
        };
        if written.allocation_timestamp.is_none() {
            written.allocation_timestamp = Some(Time(Timestamp::now()));
        }
        self.writer.update_claim_status(&claim).await.map_err(|e| {
            let what = if allocation.is_some() {
                "add allocation and reservation to claim"
            } else {
                "add reservation to claim"
            };
            (conflict(&e), format!("{what} {label}: {e}"))
        })
    }

    /// Upstream's wait in PreBind: until every claim's devices with binding conditions
    /// report them met, a failure, or `bindingTimeout`.
    async fn wait_for_binding_conditions(&self, state: &mut State) -> Result<(), String> {
        let needs_wait = state.claims.iter().any(|claim| {
            allocation(claim)
                .and_then(|a| a.devices.as_ref())
                .and_then(|d| d.results.as_ref())
                .is_some_and(|r| {
                    r.iter()
                        .any(|r| r.binding_conditions.as_ref().is_some_and(|c| !c.is_empty()))
                })
        });
        if !needs_wait {
            return Ok(());
        }
        let deadline = self.clock.now() + self.binding_timeout;
        loop {
            let mut ready = true;
            for claim in &mut state.claims {
                let namespace = claim.metadata.namespace.clone().unwrap_or_default();
                let name = claim.name_any();
                let Some(fresh) = self.resources.claim(&namespace, &name) else {
                    return Err(format!(
                        "ResourceClaim \"{}\" not found",
                        kobj(&namespace, &name)
                    ));
                };
                *claim = fresh;
                if !ready_for_binding(claim)? {
                    if binding_timed_out(claim, self.binding_timeout, Timestamp::now()) {
                        return Err(format!("device binding timeout: claim={name}"));
                    }
                    ready = false;
                }
            }
            if ready {
                return Ok(());
            }
            let next = self.clock.now() + BINDING_POLL;
            if next > deadline {
                return Err("device binding timeout: context deadline exceeded".into());
            }
            self.clock.sleep_until(next).await;
        }
    }
}

#[async_trait]
impl PreBindPlugin for DynamicResources {
    async fn pre_bind(&self, state: &mut CycleState, pod: &PodInfo, node_name: &str) -> Status {
        let Some(state) = state.read_mut::<State>() else {
            return Status::success();
        };
        if state.claims.is_empty() {
            return Status::success();
        }
        let pod_uid = pod.pod.metadata.uid.clone().unwrap_or_default();
        let mut bound = Vec::new();
        for index in 0..state.claims.len() {
            if reserved_for(&state.claims[index], &pod_uid) {
                continue;
            }
            let initial_uid = match (&state.extended, Some(index) == state.extended_index()) {
                (Some(extended), true) => extended.initial_uid.clone(),
                _ => state.claims[index].metadata.uid.clone().unwrap_or_default(),
            };
            match self.bind_claim(state, index, pod, node_name).await {
                Ok(updated) => state.claims[index] = Arc::new(updated),
                Err(message) => return Status::error(message),
            }
            bound.push(initial_uid);
        }
        if let Err(message) = self.wait_for_binding_conditions(state).await {
            return Status::error(message);
        }
        for uid in bound {
            self.resources.remove_pending_allocation(&uid);
        }
        Status::success()
    }
}

#[cfg(test)]
mod tests;

/// What of a pod this plugin reads, for opportunistic batching (upstream `SignPod`).
impl crate::framework::SignPlugin for DynamicResources {
    fn refusal(&self, pod: &crate::cluster::PodInfo) -> Option<String> {
        let claims = pod
            .pod
            .spec
            .as_ref()
            .and_then(|s| s.resource_claims.as_ref())
            .is_some_and(|c| !c.is_empty());
        claims.then(|| "pods with dra resource claims are not signable".into())
    }

    fn fragments(&self, _: &crate::cluster::PodInfo) -> Vec<crate::framework::SignFragment> {
        Vec::new()
    }
}
