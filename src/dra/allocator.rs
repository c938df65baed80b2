//! The structured-parameters allocator (upstream `structured`, the implementation
//! kube-scheduler 1.37 runs with its default features): for one node, devices for every
//! request of a pod's unallocated claims, or the verdict that there are none.
//!
//! The search is upstream's, so that the same devices are picked: claims in the pod's
//! order, their requests in order (a `firstAvailable` request tries its subrequests in
//! order), and for each request the devices in pool order (see [`super::pools`]), slice
//! name order and then the slice's own order, each request taking devices in increasing
//! position (combinations, never permutations). A device that does not fit — taken,
//! not selected by the class's and the request's CEL selectors, its taints not tolerated,
//! its shared counters or its capacity exhausted, a constraint unmet — is skipped, and a
//! request that cannot be completed backtracks into the choices before it. The first
//! complete assignment wins; nothing is scored.
//!
//! Errors are upstream's: an invalid selector, a missing class or an `All` request over
//! an incomplete pool abort the pod's attempt ([`AllocateError::Fatal`]), an invalid pool
//! fails only the node ([`AllocateError::Node`]), and the deadline (DynamicResources'
//! `filterTimeout`) fails the node as timed out.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use k8s_openapi::api::core::v1::{
    Node, NodeSelector as NodeSelectorSpec, NodeSelectorRequirement, NodeSelectorTerm,
};
use k8s_openapi::api::resource::v1::{
    AllocationResult, CapacityRequirements, Device, DeviceAllocationConfiguration,
    DeviceAllocationResult, DeviceAttribute, DeviceClaim, DeviceClass, DeviceConstraint,
    DeviceRequestAllocationResult, DeviceSelector, DeviceTaint, DeviceToleration, ResourceClaim,
    ResourceSlice,
};

use super::capacity::{Consumed, consumed_by, request_fits};
use super::cel::{SelectorError, Selectors};
use super::pools::{CounterSets, Pool, PoolId, devices, gather, node_matches};
use super::quantity::Amount;

/// Upstream `AllocationResultsMaxSize`: at most this many devices per claim.
pub const MAX_DEVICES_PER_CLAIM: usize = 32;

/// The message of a node whose pools contradict themselves.
pub const INVALID_POOLS: &str = "invalid resource pools were encountered";

/// A device: driver, pool and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceId {
    pub driver: String,
    pub pool: String,
    pub device: String,
}

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.driver, self.pool, self.device)
    }
}

/// What allocated claims hold (upstream `AllocatedState`): devices held exclusively,
/// shares of devices that allow multiple allocations, and the capacity those shares
/// consume. Admin-access results hold nothing.
#[derive(Debug, Clone, Default)]
pub struct AllocatedState {
    pub devices: HashSet<DeviceId>,
    /// Devices with at least one share.
    pub shared: HashSet<DeviceId>,
    pub capacity: HashMap<DeviceId, Consumed>,
}

impl AllocatedState {
    /// The state the allocations of `claims` make.
    pub fn of<'c>(claims: impl IntoIterator<Item = &'c ResourceClaim>) -> AllocatedState {
        let mut state = AllocatedState::default();
        for claim in claims {
            state.add(claim);
        }
        state
    }

    /// Adds what the allocation of `claim` holds (none when it has no allocation), as
    /// [`AllocatedState::of`] counts it.
    pub fn add(&mut self, claim: &ResourceClaim) {
        for result in crate::cluster::allocated_devices(claim) {
            if result.admin_access == Some(true) {
                continue;
            }
            let id = DeviceId {
                driver: result.driver.clone(),
                pool: result.pool.clone(),
                device: result.device.clone(),
            };
            if result.share_id.is_none() {
                self.devices.insert(id);
                continue;
            }
            if let Some(consumed) = &result.consumed_capacity {
                let total = self.capacity.entry(id.clone()).or_default();
                for (name, q) in consumed {
                    let amount = Amount::parse(name, q).unwrap_or_default();
                    let sum = total.get(name).map_or(amount, |t| t.plus(amount));
                    total.insert(name.clone(), sum);
                }
            }
            self.shared.insert(id);
        }
    }

    /// Upstream `IsDeviceAllocated`: held exclusively or shared.
    fn holds(&self, id: &DeviceId) -> bool {
        self.devices.contains(id) || self.shared.contains(id) || self.capacity.contains_key(id)
    }
}

/// Why devices could not be allocated, when that is not simply "they do not fit".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllocateError {
    /// The pod cannot be scheduled anywhere until the objects change: the attempt fails
    /// with this message (upstream's error status).
    Fatal(String),
    /// The node cannot serve the claims, with this message.
    Node(String),
    /// The deadline passed.
    Timeout,
}

impl fmt::Display for AllocateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocateError::Fatal(m) | AllocateError::Node(m) => f.write_str(m),
            AllocateError::Timeout => {
                f.write_str("filter operation aborted: context deadline exceeded")
            }
        }
    }
}

/// Looks up DeviceClasses by name.
pub trait ClassLister: Sync {
    fn class(&self, name: &str) -> Option<Arc<DeviceClass>>;
}

impl ClassLister for crate::cluster::DeviceResources {
    fn class(&self, name: &str) -> Option<Arc<DeviceClass>> {
        crate::cluster::DeviceResources::class(self, name)
    }
}

impl<F: Fn(&str) -> Option<Arc<DeviceClass>> + Sync> ClassLister for F {
    fn class(&self, name: &str) -> Option<Arc<DeviceClass>> {
        self(name)
    }
}

/// One pod's allocator (upstream creates one per scheduling cycle): the cluster's slices
/// (with DeviceTaintRules' taints applied), the allocated state, and the counters each
/// pool has left, computed once and shared by every node's [`Allocator::allocate`].
pub struct Allocator {
    allocated: Arc<AllocatedState>,
    classes: Arc<dyn ClassLister + Send>,
    selectors: Arc<Selectors>,
    slices: Arc<Vec<Arc<ResourceSlice>>>,
    /// Indices into `slices` of each node's own slices.
    on_node: HashMap<String, Vec<usize>>,
    /// Indices into `slices` of the slices not tied to one node.
    shared: Vec<usize>,
    available_counters: Mutex<HashMap<PoolId, Arc<CounterSets>>>,
}

/// `namespace/name`, or the name of a claim without a namespace (klog's `KObj`).
pub fn claim_label(claim: &ResourceClaim) -> String {
    let name = claim.metadata.name.as_deref().unwrap_or_default();
    match claim.metadata.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_string(),
    }
}

impl Allocator {
    pub fn new(
        allocated: Arc<AllocatedState>,
        classes: Arc<dyn ClassLister + Send>,
        slices: Arc<Vec<Arc<ResourceSlice>>>,
        selectors: Arc<Selectors>,
    ) -> Allocator {
        let mut on_node: HashMap<String, Vec<usize>> = HashMap::new();
        let mut shared = Vec::new();
        for (i, slice) in slices.iter().enumerate() {
            match slice.spec.node_name.as_deref().filter(|n| !n.is_empty()) {
                Some(node) => on_node.entry(node.to_string()).or_default().push(i),
                None => shared.push(i),
            }
        }
        Allocator {
            allocated,
            classes,
            selectors,
            slices,
            on_node,
            shared,
            available_counters: Mutex::new(HashMap::new()),
        }
    }

    /// Devices for every request of `claims` on `node`: one result per claim, in order;
    /// `Ok(None)` when they do not fit. `deadline` bounds the search.
    pub fn allocate(
        &self,
        node: &Node,
        claims: &[&ResourceClaim],
        deadline: Option<Instant>,
    ) -> Result<Option<Vec<AllocationResult>>, AllocateError> {
        let node_name = node.metadata.name.as_deref().unwrap_or_default();
        let candidates: Vec<&ResourceSlice> = self
            .on_node
            .get(node_name)
            .into_iter()
            .flatten()
            .chain(&self.shared)
            .map(|&i| self.slices[i].as_ref())
            .collect();
        let pools = gather(node, &candidates, &self.slices)
            .map_err(|e| AllocateError::Fatal(format!("gather pool information: {e}")))?;
        let mut search = Search {
            allocator: self,
            node,
            claims,
            deadline,
            pools: &pools,
            requests: HashMap::new(),
            selected_sub: HashMap::new(),
            constraints: Vec::new(),
            allocating: HashMap::new(),
            allocating_capacity: HashMap::new(),
            consumed_counters: HashMap::new(),
            picks: vec![Vec::new(); claims.len()],
            selectable: RefCell::new(HashMap::new()),
        };
        search.prepare()?;
        let done = match search.allocate_one(Position::default(), false, Start::default()) {
            Ok(done) => done,
            Err(Failure::Fatal(e)) => return Err(e),
            Err(Failure::MaxSize) => {
                return Err(AllocateError::Fatal(MAX_SIZE_EXCEEDED.to_string()));
            }
        };
        if !done {
            if pools.iter().any(|p| p.invalid.is_some()) {
                return Err(AllocateError::Node(INVALID_POOLS.to_string()));
            }
            return Ok(None);
        }
        search.results().map(Some)
    }

    /// What is left of a pool's counters after the devices allocated already.
    fn available_counters(&self, pool: &Pool) -> Arc<CounterSets> {
        let mut cache = self
            .available_counters
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(available) = cache.get(&pool.id) {
            return available.clone();
        }
        let mut available = pool.counter_sets.clone();
        for slice in pool.slices.iter().chain(&pool.other_slices) {
            for device in devices(slice) {
                let id = device_id(&pool.id, device);
                if !self.allocated.holds(&id) {
                    continue;
                }
                for consumption in device.consumes_counters.iter().flatten() {
                    let Some(set) = available.get_mut(&consumption.counter_set) else {
                        continue;
                    };
                    for (name, counter) in &consumption.counters {
                        if let Some(left) = set.get_mut(name) {
                            *left =
                                left.minus(Amount::parse(name, &counter.value).unwrap_or_default());
                        }
                    }
                }
            }
        }
        let available = Arc::new(available);
        cache.insert(pool.id.clone(), available.clone());
        available
    }
}

/// A claim's `spec.devices`.
fn claim_devices(claim: &ResourceClaim) -> Option<&DeviceClaim> {
    claim.spec.as_ref()?.devices.as_ref()
}

fn device_id(pool: &PoolId, device: &Device) -> DeviceId {
    DeviceId {
        driver: pool.driver.clone(),
        pool: pool.pool.clone(),
        device: device.name.clone(),
    }
}

/// A request or subrequest: claim, request and subrequest index.
type RequestKey = (usize, usize, usize);

/// Counters a device consumes: counter set, counter and amount.
type CounterAmounts = Vec<(String, String, Amount)>;

/// Where the search is: claim, request, subrequest, and how many devices the request has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
struct Position {
    claim: usize,
    request: usize,
    sub: usize,
    device: usize,
}

impl Position {
    fn key(&self) -> RequestKey {
        (self.claim, self.request, self.sub)
    }
}

/// Where a request's next device may come from: at or after this pool, slice, device.
#[derive(Debug, Clone, Copy, Default)]
struct Start {
    pool: usize,
    slice: usize,
    device: usize,
}

/// A device of a pool the node sees.
#[derive(Debug, Clone, Copy)]
struct DeviceRef {
    pool: usize,
    slice: usize,
    device: usize,
}

/// A request or subrequest, prepared.
struct RequestData<'r> {
    /// Its own name (a subrequest's, for a subrequest).
    name: &'r str,
    /// The request a subrequest belongs to.
    parent: Option<&'r str>,
    class: Arc<DeviceClass>,
    selectors: &'r [DeviceSelector],
    admin_access: bool,
    all: bool,
    count: usize,
    /// For `All`: the matching devices, in order.
    all_devices: Vec<DeviceRef>,
    tolerations: Option<&'r Vec<DeviceToleration>>,
    capacity: Option<&'r CapacityRequirements>,
}

/// A device picked.
#[derive(Clone)]
struct Pick {
    request: String,
    parent: Option<String>,
    id: DeviceId,
    at: DeviceRef,
    share_id: Option<String>,
    admin_access: bool,
    consumed: Option<Consumed>,
    tolerations: Option<Vec<DeviceToleration>>,
}

/// A constraint of a claim and its state.
struct Constraint {
    requests: Vec<String>,
    attribute: String,
    kind: ConstraintKind,
}

enum ConstraintKind {
    Match {
        first: Option<DeviceAttribute>,
        count: usize,
    },
    Distinct {
        seen: Vec<DeviceAttribute>,
    },
}

impl Constraint {
    fn new(constraint: &DeviceConstraint) -> Option<Constraint> {
        let requests = constraint.requests.clone().unwrap_or_default();
        if let Some(attribute) = &constraint.match_attribute {
            return Some(Constraint {
                requests,
                attribute: attribute.clone(),
                kind: ConstraintKind::Match {
                    first: None,
                    count: 0,
                },
            });
        }
        constraint
            .distinct_attribute
            .as_ref()
            .map(|attribute| Constraint {
                requests,
                attribute: attribute.clone(),
                kind: ConstraintKind::Distinct { seen: Vec::new() },
            })
    }

    fn applies(&self, request: &str, sub: Option<&str>) -> bool {
        if self.requests.is_empty() {
            return true;
        }
        match sub {
            None => self.requests.iter().any(|r| r == request),
            Some(sub) => {
                let full = format!("{request}/{sub}");
                self.requests.iter().any(|r| *r == request || *r == full)
            }
        }
    }

    fn add(&mut self, request: &str, sub: Option<&str>, driver: &str, device: &Device) -> bool {
        if !self.applies(request, sub) {
            return true;
        }
        let Some(value) = lookup_attribute(device, driver, &self.attribute) else {
            return false;
        };
        match &mut self.kind {
            ConstraintKind::Match { first, count } => {
                if *count > 0 {
                    let Some(stored) = first.as_ref() else {
                        return false;
                    };
                    if !same_scalar(stored, value) {
                        return false;
                    }
                } else {
                    *first = Some(value.clone());
                }
                *count += 1;
                true
            }
            ConstraintKind::Distinct { seen } => {
                if !is_scalar(value) && !seen.is_empty() {
                    return false;
                }
                if seen.iter().any(|s| same_scalar(s, value)) {
                    return false;
                }
                seen.push(value.clone());
                true
            }
        }
    }

    fn remove(&mut self, request: &str, sub: Option<&str>) {
        if !self.applies(request, sub) {
            return;
        }
        match &mut self.kind {
            ConstraintKind::Match { count, .. } => *count = count.saturating_sub(1),
            ConstraintKind::Distinct { seen } => {
                seen.pop();
            }
        }
    }
}

fn is_scalar(a: &DeviceAttribute) -> bool {
    a.string.is_some() || a.int.is_some() || a.bool.is_some() || a.version.is_some()
}

/// Whether `stored` equals `value`, compared as `value`'s type (a version by its text).
fn same_scalar(stored: &DeviceAttribute, value: &DeviceAttribute) -> bool {
    if let Some(v) = &value.string {
        stored.string.as_ref() == Some(v)
    } else if let Some(v) = value.int {
        stored.int == Some(v)
    } else if let Some(v) = value.bool {
        stored.bool == Some(v)
    } else if let Some(v) = &value.version {
        stored.version.as_ref() == Some(v)
    } else {
        false
    }
}

/// A device's attribute by its fully qualified name; an attribute stored without a
/// domain is the driver's.
fn lookup_attribute<'d>(
    device: &'d Device,
    driver: &str,
    name: &str,
) -> Option<&'d DeviceAttribute> {
    let attributes = device.attributes.as_ref()?;
    if let Some(a) = attributes.get(name) {
        return Some(a);
    }
    let (domain, id) = name.split_once('/')?;
    if domain == driver {
        attributes.get(id)
    } else {
        None
    }
}

/// Upstream `ToleratesTaint` for devices.
fn tolerates(toleration: &DeviceToleration, taint: &DeviceTaint) -> bool {
    if toleration
        .effect
        .as_deref()
        .is_some_and(|e| !e.is_empty() && e != taint.effect)
    {
        return false;
    }
    if toleration
        .key
        .as_deref()
        .is_some_and(|k| !k.is_empty() && k != taint.key)
    {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or("") {
        "" | "Equal" => {
            toleration.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or("")
        }
        "Exists" => true,
        _ => false,
    }
}

/// Whether every NoSchedule and NoExecute taint of the device is tolerated.
fn taints_tolerated(device: &Device, tolerations: Option<&Vec<DeviceToleration>>) -> bool {
    device.taints.iter().flatten().all(|taint| {
        if taint.effect != "NoSchedule" && taint.effect != "NoExecute" {
            return true;
        }
        tolerations
            .into_iter()
            .flatten()
            .any(|t| tolerates(t, taint))
    })
}

/// A random version-4 UUID, as a share's ID.
fn new_share_id() -> String {
    crate::helpers::uuid::uuid_text(rand::random(), 4)
}

/// The search's sentinel: a request would take the claim over its device limit.
const MAX_SIZE_EXCEEDED: &str = "allocation max size exceeded";

/// What a step of the search ends in.
enum Failure {
    Fatal(AllocateError),
    /// Upstream's `errAllocationResultMaxSizeExceeded`: try another subrequest or claim.
    MaxSize,
}

impl From<AllocateError> for Failure {
    fn from(e: AllocateError) -> Self {
        Failure::Fatal(e)
    }
}

type Step = Result<bool, Failure>;

/// Undoing one pick.
struct Undo {
    claim: usize,
    results_len: usize,
    exclusive: Option<DeviceId>,
    capacity: Option<(DeviceId, Consumed, bool)>,
    constraints: usize,
    request: String,
    sub: Option<String>,
    counters: Option<(usize, CounterAmounts)>,
}

struct Search<'s> {
    allocator: &'s Allocator,
    node: &'s Node,
    claims: &'s [&'s ResourceClaim],
    deadline: Option<Instant>,
    pools: &'s [Pool<'s>],
    requests: HashMap<RequestKey, RequestData<'s>>,
    /// The subrequest chosen for a `firstAvailable` request, by claim and request.
    selected_sub: HashMap<(usize, usize), usize>,
    constraints: Vec<Vec<Constraint>>,
    /// Devices taken exclusively in this allocation, by the claims that took them.
    allocating: HashMap<DeviceId, HashSet<usize>>,
    /// Capacity shares consume in this allocation.
    allocating_capacity: HashMap<DeviceId, Consumed>,
    /// Counters devices picked in this allocation consume, by pool index.
    consumed_counters: HashMap<usize, BTreeMap<String, BTreeMap<String, Amount>>>,
    picks: Vec<Vec<Pick>>,
    /// Whether a device is selected by a request, by device and request.
    selectable: RefCell<HashMap<(usize, usize, usize, RequestKey), bool>>,
}

impl<'s> Search<'s> {
    fn device(&self, at: DeviceRef) -> (&'s Pool<'s>, &'s ResourceSlice, &'s Device) {
        let pool = &self.pools[at.pool];
        let slice = pool.slices[at.slice];
        (pool, slice, &devices(slice)[at.device])
    }

    fn claim(&self, index: usize) -> &'s ResourceClaim {
        self.claims[index]
    }

    /// Upstream's pass before the search: every request checked and its class read, the
    /// device limit checked, `All` requests' devices listed, constraints built.
    fn prepare(&mut self) -> Result<(), AllocateError> {
        for (ci, claim) in self.claims.iter().enumerate() {
            let label = claim_label(claim);
            let spec = claim_devices(claim);
            let requests = spec.and_then(|d| d.requests.as_deref()).unwrap_or_default();
            let mut min_claim = 0usize;
            for (ri, request) in requests.iter().enumerate() {
                let min_request = match (&request.first_available, &request.exactly) {
                    (Some(subs), _) if !subs.is_empty() => {
                        let mut min = usize::MAX;
                        for (si, sub) in subs.iter().enumerate() {
                            let data = self.prepare_request(
                                (ci, ri, si),
                                &label,
                                RequestSpec {
                                    name: &sub.name,
                                    parent: Some(&request.name),
                                    class: &sub.device_class_name,
                                    selectors: sub.selectors.as_deref().unwrap_or_default(),
                                    admin_access: false,
                                    mode: sub.allocation_mode.as_deref(),
                                    count: sub.count,
                                    derived: sub
                                        .derived_attributes
                                        .as_ref()
                                        .is_some_and(|d| !d.is_empty()),
                                    tolerations: sub.tolerations.as_ref(),
                                    capacity: sub.capacity.as_ref(),
                                },
                            )?;
                            min = min.min(data.count);
                            self.requests.insert((ci, ri, si), data);
                        }
                        min
                    }
                    (_, Some(exact)) => {
                        let data = self.prepare_request(
                            (ci, ri, 0),
                            &label,
                            RequestSpec {
                                name: &request.name,
                                parent: None,
                                class: &exact.device_class_name,
                                selectors: exact.selectors.as_deref().unwrap_or_default(),
                                admin_access: exact.admin_access == Some(true),
                                mode: exact.allocation_mode.as_deref(),
                                count: exact.count,
                                derived: exact
                                    .derived_attributes
                                    .as_ref()
                                    .is_some_and(|d| !d.is_empty()),
                                tolerations: exact.tolerations.as_ref(),
                                capacity: exact.capacity.as_ref(),
                            },
                        )?;
                        let count = data.count;
                        self.requests.insert((ci, ri, 0), data);
                        count
                    }
                    _ => {
                        return Err(AllocateError::Fatal(format!(
                            "claim {label}, request {}: missing device class name (unsupported request type?)",
                            request.name
                        )));
                    }
                };
                if min_request > MAX_DEVICES_PER_CLAIM - min_claim {
                    return Err(AllocateError::Fatal(format!(
                        "claim {label}, request {}: adding {min_request} devices exceeds the claim limit of {MAX_DEVICES_PER_CLAIM}, with {min_claim} already accounted for",
                        request.name
                    )));
                }
                min_claim += min_request;
            }
            let mut constraints = Vec::new();
            let listed = spec
                .and_then(|d| d.constraints.as_deref())
                .unwrap_or_default();
            for (i, constraint) in listed.iter().enumerate() {
                let Some(built) = Constraint::new(constraint) else {
                    return Err(AllocateError::Fatal(format!(
                        "claim {label}, constraint #{i}: empty constraint (unsupported constraint type?)"
                    )));
                };
                constraints.push(built);
            }
            self.constraints.push(constraints);
        }
        Ok(())
    }

    fn prepare_request(
        &self,
        key: RequestKey,
        label: &str,
        spec: RequestSpec<'s>,
    ) -> Result<RequestData<'s>, AllocateError> {
        let fatal =
            |m: String| AllocateError::Fatal(format!("claim {label}, request {}: {m}", spec.name));
        if spec.derived {
            return Err(fatal(
                "cannot handle request with derived attributes, the feature is disabled".into(),
            ));
        }
        for (i, selector) in spec.selectors.iter().enumerate() {
            if selector.cel.is_none() {
                return Err(AllocateError::Fatal(format!(
                    "claim {label}, request {}, selector #{i}: CEL expression empty (unsupported selector type?)",
                    spec.name
                )));
            }
        }
        if spec.class.is_empty() {
            return Err(fatal(
                "missing device class name (unsupported request type?)".into(),
            ));
        }
        let Some(class) = self.allocator.classes.class(spec.class) else {
            return Err(fatal(format!(
                "could not retrieve device class {}: deviceclass.resource.k8s.io \"{}\" not found",
                spec.class, spec.class
            )));
        };
        let mut data = RequestData {
            name: spec.name,
            parent: spec.parent,
            class,
            selectors: spec.selectors,
            admin_access: spec.admin_access,
            all: false,
            count: 0,
            all_devices: Vec::new(),
            tolerations: spec.tolerations,
            capacity: spec.capacity,
        };
        match spec.mode.unwrap_or("") {
            "ExactCount" => {
                data.count = usize::try_from(spec.count.unwrap_or(1).max(0)).unwrap_or(usize::MAX);
            }
            "All" => {
                data.all = true;
                data.all_devices = self.all_devices(key, label, &data)?;
                data.count = data.all_devices.len();
            }
            other => return Err(fatal(format!("unsupported count mode {other}"))),
        }
        Ok(data)
    }

    /// The devices an `All` request takes: every selected device that could hold its
    /// capacity request, of every pool; an incomplete or invalid pool is fatal. `key` is
    /// the request's, for the selectors' errors (which name its claim) and their cache.
    fn all_devices(
        &self,
        key: RequestKey,
        label: &str,
        data: &RequestData<'s>,
    ) -> Result<Vec<DeviceRef>, AllocateError> {
        let mut found = Vec::new();
        for (p, pool) in self.pools.iter().enumerate() {
            if pool.incomplete {
                return Err(AllocateError::Fatal(format!(
                    "claim {label}, request {}: asks for all devices, but resource pool {} is currently being updated",
                    data.name, pool.id
                )));
            }
            if pool.invalid.is_some() {
                return Err(AllocateError::Fatal(format!(
                    "claim {label}, request {}: asks for all devices, but resource pool {} is currently invalid",
                    data.name, pool.id
                )));
            }
            for (s, slice) in pool.slices.iter().enumerate() {
                for (d, device) in devices(slice).iter().enumerate() {
                    let at = DeviceRef {
                        pool: p,
                        slice: s,
                        device: d,
                    };
                    if !self.selects(key, data, at)? {
                        continue;
                    }
                    let empty = BTreeMap::new();
                    let capacities = device.capacity.as_ref().unwrap_or(&empty);
                    let fits =
                        request_fits(None, data.capacity, capacities, None).map_err(|e| {
                            AllocateError::Fatal(format!(
                                "claim {label}, request {}: checking capacity for device {}: {e}",
                                data.name, device.name
                            ))
                        })?;
                    if fits {
                        found.push(at);
                    }
                }
            }
        }
        Ok(found)
    }

    /// Whether the class's and the request's selectors select the device, and a device
    /// of a per-device slice is for this node. The answer is cached per device and
    /// request (`key`: claim, request, subrequest).
    fn selects(
        &self,
        key: RequestKey,
        data: &RequestData<'s>,
        at: DeviceRef,
    ) -> Result<bool, AllocateError> {
        let cache_key = (at.pool, at.slice, at.device, key);
        if let Some(hit) = self.selectable.borrow().get(&cache_key) {
            return Ok(*hit);
        }
        let (pool, slice, device) = self.device(at);
        let id = device_id(&pool.id, device);
        let driver = slice.spec.driver.as_str();
        let class_name = data.class.metadata.name.as_deref().unwrap_or_default();
        let class_selectors = data
            .class
            .spec
            .as_ref()
            .and_then(|s| s.selectors.as_deref())
            .unwrap_or_default();
        let class_owner = || format!("class {class_name}");
        let mut selected = self.selected_by(&class_owner, class_selectors, driver, device, &id)?;
        if selected {
            let claim_owner = || format!("claim {}", claim_label(self.claim(key.0)));
            selected = self.selected_by(&claim_owner, data.selectors, driver, device, &id)?;
        }
        if selected && slice.spec.per_device_node_selection == Some(true) {
            selected = node_matches(
                self.node,
                device.node_name.as_deref(),
                device.all_nodes == Some(true),
                device.node_selector.as_ref(),
            )
            .map_err(AllocateError::Fatal)?;
        }
        self.selectable.borrow_mut().insert(cache_key, selected);
        Ok(selected)
    }

    /// Whether every one of `selectors` selects the device, evaluated in order up to the
    /// first that does not; an error names `owner()` (`class <name>` or `claim <name>`)
    /// as upstream's messages do.
    fn selected_by(
        &self,
        owner: &dyn Fn() -> String,
        selectors: &[DeviceSelector],
        driver: &str,
        device: &Device,
        id: &DeviceId,
    ) -> Result<bool, AllocateError> {
        for (i, selector) in selectors.iter().enumerate() {
            let Some(cel) = &selector.cel else { continue };
            match self
                .allocator
                .selectors
                .evaluate(&cel.expression, driver, device)
            {
                Ok(true) => {}
                Ok(false) => return Ok(false),
                Err(SelectorError::Compile(e)) => {
                    return Err(AllocateError::Fatal(format!(
                        "{}: selector #{i}: CEL compile error: {e}",
                        owner()
                    )));
                }
                Err(SelectorError::Runtime(e)) => {
                    return Err(AllocateError::Fatal(format!(
                        "{}: selector #{i} on device {id}: CEL runtime error: {e}",
                        owner()
                    )));
                }
            }
        }
        Ok(true)
    }

    /// The prepared request or subrequest at `key`; every one the search reaches was
    /// prepared, so a missing one is an internal error, not a panic.
    fn request(&self, key: RequestKey) -> Result<&RequestData<'s>, AllocateError> {
        self.requests.get(&key).ok_or_else(|| unprepared(key))
    }

    fn in_use(&self, id: &DeviceId) -> bool {
        self.allocator.allocated.devices.contains(id)
            || self.allocating.get(id).is_some_and(|c| !c.is_empty())
    }

    /// One step of upstream's `allocateOne`.
    fn allocate_one(&mut self, r: Position, allocate_sub: bool, start: Start) -> Step {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(Failure::Fatal(AllocateError::Timeout));
        }
        if r.claim >= self.claims.len() {
            return Ok(true);
        }
        let claim = self.claim(r.claim);
        let request_count = claim_devices(claim)
            .and_then(|d| d.requests.as_ref())
            .map_or(0, Vec::len);
        if r.request >= request_count {
            let next = Position {
                claim: r.claim + 1,
                ..Position::default()
            };
            return match self.allocate_one(next, false, Start::default()) {
                Err(Failure::MaxSize) => Ok(false),
                other => other,
            };
        }
        let key = r.key();
        let (has_parent, all, count, no_all_devices, admin) = {
            let data = self.request(key)?;
            (
                data.parent.is_some(),
                data.all,
                data.count,
                data.all_devices.is_empty(),
                data.admin_access,
            )
        };
        if !allocate_sub && has_parent {
            let mut all_exceeded = true;
            for sub in 0.. {
                if !self.requests.contains_key(&(r.claim, r.request, sub)) {
                    return if all_exceeded {
                        Err(Failure::MaxSize)
                    } else {
                        Ok(false)
                    };
                }
                let at = Position {
                    sub,
                    device: 0,
                    ..r
                };
                match self.allocate_one(at, true, Start::default()) {
                    Err(Failure::MaxSize) => continue,
                    Err(e) => return Err(e),
                    Ok(true) => {
                        self.selected_sub.insert((r.claim, r.request), sub);
                        return Ok(true);
                    }
                    Ok(false) => all_exceeded = false,
                }
            }
        }
        if all && no_all_devices {
            return Ok(false);
        }
        if r.device >= count {
            let next = Position {
                claim: r.claim,
                request: r.request + 1,
                sub: 0,
                device: 0,
            };
            return self.allocate_one(next, false, Start::default());
        }
        let remaining = count - r.device;
        let available = MAX_DEVICES_PER_CLAIM.saturating_sub(self.picks[r.claim].len());
        if remaining > available {
            return Err(Failure::MaxSize);
        }
        let next = Position {
            device: r.device + 1,
            ..r
        };
        if all {
            let Some(&at) = self.request(key)?.all_devices.get(r.device) else {
                return Ok(false);
            };
            let Some(undo) = self.allocate_device(r, at, true)? else {
                return Ok(false);
            };
            return match self.allocate_one(next, allocate_sub, Start::default()) {
                Ok(true) => Ok(true),
                other => {
                    self.undo(undo);
                    other.map(|_| false)
                }
            };
        }
        for p in start.pool..self.pools.len() {
            let pool = &self.pools[p];
            if !pool.usable() {
                continue;
            }
            let first_slice = if p == start.pool { start.slice } else { 0 };
            for s in first_slice..pool.slices.len() {
                let slice = pool.slices[s];
                let first_device = if p == start.pool && s == start.slice {
                    start.device
                } else {
                    0
                };
                for d in first_device..devices(slice).len() {
                    let device = &devices(slice)[d];
                    let id = device_id(&pool.id, device);
                    if admin {
                        if self
                            .allocating
                            .get(&id)
                            .is_some_and(|c| c.contains(&r.claim))
                        {
                            continue;
                        }
                    } else if self.in_use(&id) {
                        continue;
                    }
                    let at = DeviceRef {
                        pool: p,
                        slice: s,
                        device: d,
                    };
                    let data = self.request(key)?;
                    if !self.selects(key, data, at)? {
                        continue;
                    }
                    let (capacity, name) = (data.capacity, data.name);
                    let empty = BTreeMap::new();
                    let fits = request_fits(
                        self.allocator.allocated.capacity.get(&id),
                        capacity,
                        device.capacity.as_ref().unwrap_or(&empty),
                        self.allocating_capacity.get(&id),
                    )
                    .map_err(|e| {
                        AllocateError::Fatal(format!(
                            "claim {}, request {name}: checking capacity for device {id}: {e}",
                            claim_label(claim)
                        ))
                    })?;
                    if !fits {
                        continue;
                    }
                    let Some(undo) = self.allocate_device(r, at, false)? else {
                        continue;
                    };
                    let after = Start {
                        pool: p,
                        slice: s,
                        device: d + 1,
                    };
                    match self.allocate_one(next, allocate_sub, after) {
                        Ok(true) => return Ok(true),
                        Ok(false) => self.undo(undo),
                        Err(e) => {
                            self.undo(undo);
                            return Err(e);
                        }
                    }
                }
            }
        }
        Ok(false)
    }

    /// Upstream `allocateDevice`: takes the device for the request if it is free, its
    /// counters suffice, its taints are tolerated, the claim's constraints hold and its
    /// capacity fits; `None` if not. `must` (an `All` request) makes a broken constraint
    /// fatal.
    fn allocate_device(
        &mut self,
        r: Position,
        at: DeviceRef,
        must: bool,
    ) -> Result<Option<Undo>, AllocateError> {
        let (pool, slice, device) = self.device(at);
        let id = device_id(&pool.id, device);
        let claim = self.claim(r.claim);
        let data = self.request(r.key())?;
        let (name, parent, admin, capacity, tolerations) = (
            data.name.to_string(),
            data.parent.map(str::to_string),
            data.admin_access,
            data.capacity,
            data.tolerations,
        );
        let allow_multi = device.allow_multiple_allocations == Some(true);
        if !allow_multi
            && admin
            && self
                .allocating
                .get(&id)
                .is_some_and(|c| c.contains(&r.claim))
        {
            return Ok(None);
        }
        if !admin && self.in_use(&id) {
            return Ok(None);
        }
        let allocated = &self.allocator.allocated;
        let capacity_in_use = allocated.capacity.contains_key(&id)
            || allocated.shared.contains(&id)
            || self.allocating_capacity.contains_key(&id);
        let mut undo = Undo {
            claim: r.claim,
            results_len: self.picks[r.claim].len(),
            exclusive: None,
            capacity: None,
            constraints: 0,
            request: parent.clone().unwrap_or_else(|| name.clone()),
            sub: parent.as_ref().map(|_| name.clone()),
            counters: None,
        };
        let consumes = device
            .consumes_counters
            .as_ref()
            .is_some_and(|c| !c.is_empty());
        if !(allow_multi && capacity_in_use) && consumes {
            match self.check_counters(at) {
                Some(reserved) => undo.counters = Some((at.pool, reserved)),
                None => return Ok(None),
            }
        }
        if !taints_tolerated(device, tolerations) {
            self.undo(undo);
            return Ok(None);
        }
        let (base, sub) = (undo.request.clone(), undo.sub.clone());
        let driver = slice.spec.driver.clone();
        for i in 0..self.constraints[r.claim].len() {
            if self.constraints[r.claim][i].add(&base, sub.as_deref(), &driver, device) {
                undo.constraints += 1;
                continue;
            }
            self.undo(undo);
            if must {
                return Err(AllocateError::Fatal(format!(
                    "claim {}, request {name}: cannot add device {id} because a claim constraint would not be satisfied",
                    claim_label(claim)
                )));
            }
            return Ok(None);
        }
        if !allow_multi {
            self.allocating
                .entry(id.clone())
                .or_default()
                .insert(r.claim);
            undo.exclusive = Some(id.clone());
        }
        let empty = BTreeMap::new();
        let capacities = device.capacity.as_ref().unwrap_or(&empty);
        let fits = request_fits(
            allocated.capacity.get(&id),
            capacity,
            capacities,
            self.allocating_capacity.get(&id),
        );
        match fits {
            Ok(true) => {}
            Ok(false) => {
                self.undo(undo);
                return Ok(None);
            }
            Err(e) => {
                self.undo(undo);
                return Err(AllocateError::Fatal(format!(
                    "claim {}, request {name}: rechecking capacity for device {id}: {e}",
                    claim_label(claim)
                )));
            }
        }
        let mut share_id = None;
        let mut consumed_result = None;
        if allow_multi {
            let consumed = match consumed_by(capacity, capacities) {
                Ok(c) => c,
                Err(e) => {
                    self.undo(undo);
                    return Err(AllocateError::Fatal(format!(
                        "claim {}, request {name}: computing consumed capacity for device {id}: {e}",
                        claim_label(claim)
                    )));
                }
            };
            share_id = Some(new_share_id());
            let existed = self.allocating_capacity.contains_key(&id);
            let total = self.allocating_capacity.entry(id.clone()).or_default();
            for (k, v) in &consumed {
                let sum = total.get(k).map_or(*v, |t| t.plus(*v));
                total.insert(k.clone(), sum);
            }
            if !consumed.is_empty() {
                consumed_result = Some(consumed.clone());
            }
            undo.capacity = Some((id.clone(), consumed, existed));
        }
        self.picks[r.claim].push(Pick {
            request: name,
            parent,
            id,
            at,
            share_id,
            admin_access: admin,
            consumed: consumed_result,
            tolerations: tolerations.cloned(),
        });
        Ok(Some(undo))
    }

    /// Upstream `checkAvailableCounters`: adds the device's counters to what this
    /// allocation consumes of its pool, if every counter of the pool still covers it.
    /// Returns what was added.
    fn check_counters(&mut self, at: DeviceRef) -> Option<CounterAmounts> {
        let (pool, _, device) = self.device(at);
        let available = self.allocator.available_counters(pool);
        let consumed = self.consumed_counters.entry(at.pool).or_default();
        let mut added = Vec::new();
        for consumption in device.consumes_counters.iter().flatten() {
            for (name, counter) in &consumption.counters {
                let amount = Amount::parse(name, &counter.value).unwrap_or_default();
                let set = consumed.entry(consumption.counter_set.clone()).or_default();
                let sum = set.get(name).map_or(amount, |c| c.plus(amount));
                set.insert(name.clone(), sum);
                added.push((consumption.counter_set.clone(), name.clone(), amount));
            }
        }
        let exhausted = available.iter().any(|(set, counters)| {
            counters.iter().any(|(name, left)| {
                let used = consumed
                    .get(set)
                    .and_then(|s| s.get(name))
                    .copied()
                    .unwrap_or(Amount::ZERO);
                *left < used
            })
        });
        if exhausted {
            subtract_counters(consumed, &added);
            return None;
        }
        Some(added)
    }

    fn undo(&mut self, undo: Undo) {
        self.picks[undo.claim].truncate(undo.results_len);
        if let Some((id, consumed, existed)) = undo.capacity
            && let Some(total) = self.allocating_capacity.get_mut(&id)
        {
            for (k, v) in &consumed {
                if let Some(t) = total.get_mut(k) {
                    *t = t.minus(*v);
                }
            }
            if total.values().all(Amount::is_zero) {
                self.allocating_capacity.remove(&id);
                if existed {
                    self.allocating_capacity.insert(id, Consumed::new());
                }
            }
        }
        if let Some(id) = undo.exclusive
            && let Some(claims) = self.allocating.get_mut(&id)
        {
            claims.remove(&undo.claim);
        }
        for i in (0..undo.constraints).rev() {
            self.constraints[undo.claim][i].remove(&undo.request, undo.sub.as_deref());
        }
        if let Some((pool, added)) = undo.counters
            && let Some(consumed) = self.consumed_counters.get_mut(&pool)
        {
            subtract_counters(consumed, &added);
        }
    }

    /// The allocation results, one per claim (upstream's result building).
    fn results(&self) -> Result<Vec<AllocationResult>, AllocateError> {
        let mut out = Vec::with_capacity(self.claims.len());
        for (ci, claim) in self.claims.iter().enumerate() {
            let picks = &self.picks[ci];
            let results = picks
                .iter()
                .map(|pick| {
                    let (_, _, device) = self.device(pick.at);
                    DeviceRequestAllocationResult {
                        request: match &pick.parent {
                            Some(parent) => format!("{parent}/{}", pick.request),
                            None => pick.request.clone(),
                        },
                        driver: pick.id.driver.clone(),
                        pool: pick.id.pool.clone(),
                        device: pick.id.device.clone(),
                        admin_access: pick.admin_access.then_some(true),
                        tolerations: pick.tolerations.clone(),
                        share_id: pick.share_id.clone(),
                        consumed_capacity: pick.consumed.as_ref().map(|c| {
                            c.iter()
                                .map(|(k, v)| (k.clone(), v.to_quantity()))
                                .collect()
                        }),
                        binding_conditions: device.binding_conditions.clone(),
                        binding_failure_conditions: device.binding_failure_conditions.clone(),
                        skip_node_operations: None,
                    }
                })
                .collect();
            let config = self.configs(ci, claim);
            let node_selector = self.node_selector(claim, picks)?;
            out.push(AllocationResult {
                allocation_timestamp: None,
                devices: Some(DeviceAllocationResult {
                    config: (!config.is_empty()).then_some(config),
                    results: Some(results),
                }),
                node_selector,
            });
        }
        Ok(out)
    }

    /// The configuration for a claim's devices: its classes' first (once per class, for
    /// every request using the class), then the claim's own, then any that covers every
    /// request says so by naming none.
    fn configs(&self, ci: usize, claim: &ResourceClaim) -> Vec<DeviceAllocationConfiguration> {
        let spec = claim_devices(claim);
        let requests = spec.and_then(|d| d.requests.as_deref()).unwrap_or_default();
        let used_name = |ri: usize| -> String {
            let name = &requests[ri].name;
            match self.selected_sub.get(&(ci, ri)) {
                Some(&sub)
                    if requests[ri]
                        .first_available
                        .as_ref()
                        .is_some_and(|s| !s.is_empty()) =>
                {
                    match self.requests.get(&(ci, ri, sub)) {
                        Some(data) => format!("{name}/{}", data.name),
                        None => name.clone(),
                    }
                }
                _ => name.clone(),
            }
        };
        let mut config: Vec<DeviceAllocationConfiguration> = Vec::new();
        let mut by_class: HashMap<String, std::ops::Range<usize>> = HashMap::new();
        for ri in 0..requests.len() {
            let sub = self.selected_sub.get(&(ci, ri)).copied().unwrap_or(0);
            let Some(data) = self.requests.get(&(ci, ri, sub)) else {
                continue;
            };
            let class_name = data.class.metadata.name.clone().unwrap_or_default();
            let name = used_name(ri);
            match by_class.get(&class_name) {
                Some(range) => {
                    for entry in &mut config[range.clone()] {
                        entry
                            .requests
                            .get_or_insert_with(Vec::new)
                            .push(name.clone());
                    }
                }
                None => {
                    let start = config.len();
                    let class_config = data.class.spec.as_ref().and_then(|s| s.config.as_ref());
                    for entry in class_config.into_iter().flatten() {
                        config.push(DeviceAllocationConfiguration {
                            source: "FromClass".into(),
                            requests: Some(vec![name.clone()]),
                            opaque: entry.opaque.clone(),
                        });
                    }
                    by_class.insert(class_name, start..config.len());
                }
            }
        }
        // Whether `named` names request `ri`, or the subrequest it used.
        let names = |named: &[String], ri: usize| {
            named.contains(&requests[ri].name)
                || (requests[ri]
                    .first_available
                    .as_ref()
                    .is_some_and(|s| !s.is_empty())
                    && named.contains(&used_name(ri)))
        };
        for entry in spec.and_then(|d| d.config.as_deref()).unwrap_or_default() {
            let named = entry.requests.as_deref().unwrap_or_default();
            if named.is_empty() || (0..requests.len()).any(|ri| names(named, ri)) {
                config.push(DeviceAllocationConfiguration {
                    source: "FromClaim".into(),
                    requests: entry.requests.clone(),
                    opaque: entry.opaque.clone(),
                });
            }
        }
        for entry in &mut config {
            let Some(named) = entry.requests.as_ref().filter(|r| !r.is_empty()) else {
                continue;
            };
            if (0..requests.len()).all(|ri| names(named, ri)) {
                entry.requests = None;
            }
        }
        config
    }

    /// Where the claim's devices can be used (upstream `createNodeSelector`): this node
    /// only when a device is local to it or binds to it; the selectors of network-attached
    /// devices combined; nothing for devices on every node.
    fn node_selector(
        &self,
        claim: &ResourceClaim,
        picks: &[Pick],
    ) -> Result<Option<NodeSelectorSpec>, AllocateError> {
        let node_name = self.node.metadata.name.clone().unwrap_or_default();
        let mut fields: Vec<NodeSelectorRequirement> = Vec::new();
        let mut expressions: Vec<NodeSelectorRequirement> = Vec::new();
        for pick in picks {
            let (_, slice, device) = self.device(pick.at);
            let (name, selector) = if slice.spec.per_device_node_selection == Some(true) {
                (device.node_name.as_ref(), device.node_selector.as_ref())
            } else {
                (
                    slice.spec.node_name.as_ref(),
                    slice.spec.node_selector.as_ref(),
                )
            };
            if name.is_some() || device.binds_to_node == Some(true) {
                return Ok(Some(NodeSelectorSpec {
                    node_selector_terms: vec![NodeSelectorTerm {
                        match_fields: Some(vec![NodeSelectorRequirement {
                            key: "metadata.name".into(),
                            operator: "In".into(),
                            values: Some(vec![node_name]),
                        }]),
                        match_expressions: None,
                    }],
                }));
            }
            let Some(selector) = selector else { continue };
            match selector.node_selector_terms.len() {
                0 => {}
                1 => {
                    let term = &selector.node_selector_terms[0];
                    for requirement in term.match_fields.iter().flatten() {
                        if !fields.iter().any(|r| same_requirement(r, requirement)) {
                            fields.push(requirement.clone());
                        }
                    }
                    for requirement in term.match_expressions.iter().flatten() {
                        if !expressions.iter().any(|r| same_requirement(r, requirement)) {
                            expressions.push(requirement.clone());
                        }
                    }
                }
                n => {
                    return Err(AllocateError::Fatal(format!(
                        "create NodeSelector for claim {}: unsupported ResourceSlice.NodeSelector with {n} terms",
                        claim.metadata.name.as_deref().unwrap_or_default()
                    )));
                }
            }
        }
        if fields.is_empty() && expressions.is_empty() {
            return Ok(None);
        }
        Ok(Some(NodeSelectorSpec {
            node_selector_terms: vec![NodeSelectorTerm {
                match_fields: (!fields.is_empty()).then_some(fields),
                match_expressions: (!expressions.is_empty()).then_some(expressions),
            }],
        }))
    }
}

/// The error of a request the search reaches without having prepared it.
fn unprepared(key: RequestKey) -> AllocateError {
    AllocateError::Fatal(format!(
        "internal error: request {key:?} (claim, request, subrequest) was not prepared"
    ))
}

/// Same key, operator and set of values.
fn same_requirement(a: &NodeSelectorRequirement, b: &NodeSelectorRequirement) -> bool {
    let values = |r: &NodeSelectorRequirement| -> HashSet<String> {
        r.values.iter().flatten().cloned().collect()
    };
    a.key == b.key && a.operator == b.operator && values(a) == values(b)
}

fn subtract_counters(
    consumed: &mut BTreeMap<String, BTreeMap<String, Amount>>,
    added: &[(String, String, Amount)],
) {
    for (set, name, amount) in added {
        if let Some(value) = consumed.get_mut(set).and_then(|s| s.get_mut(name)) {
            *value = value.minus(*amount);
        }
    }
}

/// A request or subrequest as the claim states it.
struct RequestSpec<'r> {
    name: &'r str,
    parent: Option<&'r str>,
    class: &'r str,
    selectors: &'r [DeviceSelector],
    admin_access: bool,
    mode: Option<&'r str>,
    count: Option<i64>,
    derived: bool,
    tolerations: Option<&'r Vec<DeviceToleration>>,
    capacity: Option<&'r CapacityRequirements>,
}

#[cfg(test)]
mod tests;
