//! The resource pools a node sees (upstream `GatherPools`): which ResourceSlices are
//! relevant to the node, which generation of a pool counts, whether the pool is complete
//! and valid, and the order pools and devices are tried in.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, NodeSelector as NodeSelectorSpec};
use k8s_openapi::api::resource::v1::{Device, ResourceSlice};

use super::quantity::Amount;
use crate::helpers::node_affinity::NodeSelector;

/// A pool: its driver and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PoolId {
    pub driver: String,
    pub pool: String,
}

impl fmt::Display for PoolId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.driver, self.pool)
    }
}

/// Counter sets by name, each its counters by name.
pub type CounterSets = BTreeMap<String, BTreeMap<String, Amount>>;

/// One pool as a node sees it.
#[derive(Debug)]
pub struct Pool<'a> {
    pub id: PoolId,
    /// Not every slice of the pool's newest generation is there: its devices are not
    /// offered (the driver is publishing).
    pub incomplete: bool,
    /// Why the pool's slices contradict each other; its devices are not offered.
    pub invalid: Option<String>,
    /// The device slices relevant to the node, by slice name.
    pub slices: Vec<&'a ResourceSlice>,
    /// The pool's other device slices (their allocated devices still use counters).
    pub other_slices: Vec<&'a ResourceSlice>,
    pub counter_sets: CounterSets,
}

impl Pool<'_> {
    /// Whether devices may be taken from this pool.
    pub fn usable(&self) -> bool {
        !self.incomplete && self.invalid.is_none()
    }

    fn has_binding_conditions(&self) -> bool {
        self.usable()
            && self
                .slices
                .iter()
                .flat_map(|s| devices(s))
                .any(|d| d.binding_conditions.is_some())
    }
}

/// The devices of a slice.
pub fn devices(slice: &ResourceSlice) -> &[Device] {
    slice.spec.devices.as_deref().unwrap_or_default()
}

/// Upstream `NodeMatches`: a node name matches that node only, `allNodes` every node, a
/// selector by its terms; nothing set matches nothing.
pub fn node_matches(
    node: &Node,
    node_name: Option<&str>,
    all_nodes: bool,
    selector: Option<&NodeSelectorSpec>,
) -> Result<bool, String> {
    if let Some(name) = node_name.filter(|n| !n.is_empty()) {
        return Ok(node.metadata.name.as_deref() == Some(name));
    }
    if all_nodes {
        return Ok(true);
    }
    match selector {
        Some(selector) => NodeSelector::parse(selector, "nodeSelector")
            .map(|parsed| parsed.matches(node))
            .map_err(|errors| {
                let shown = serde_json::to_string(selector).unwrap_or_default();
                let reasons: Vec<String> = errors.iter().map(ToString::to_string).collect();
                format!(
                    "failed to parse node selector {shown}: {}",
                    reasons.join(", ")
                )
            }),
        None => Ok(false),
    }
}

/// Whether some device of a slice uses compatibility groups (alpha, off in 1.37): upstream
/// ignores such slices, so their pool is incomplete.
fn uses_compatibility_groups(slice: &ResourceSlice) -> bool {
    devices(slice).iter().any(|d| {
        d.consumes_counters.iter().flatten().any(|c| {
            c.compatibility_groups
                .as_ref()
                .is_some_and(|g| !g.is_empty())
        })
    })
}

fn pool_id(slice: &ResourceSlice) -> PoolId {
    PoolId {
        driver: slice.spec.driver.clone(),
        pool: slice.spec.pool.name.clone(),
    }
}

fn slice_name(slice: &ResourceSlice) -> &str {
    slice.metadata.name.as_deref().unwrap_or_default()
}

/// Whether a slice is for `node`; an error for a selector that does not parse.
fn relevant(node: &Node, slice: &ResourceSlice) -> Result<bool, String> {
    let spec = &slice.spec;
    let node_name = spec.node_name.as_deref().filter(|n| !n.is_empty());
    if node_name.is_some() || spec.all_nodes == Some(true) || spec.node_selector.is_some() {
        return node_matches(
            node,
            node_name,
            spec.all_nodes == Some(true),
            spec.node_selector.as_ref(),
        )
        .map_err(|e| {
            format!(
                "failed to perform node selection for slice {}: {e}",
                slice_name(slice)
            )
        });
    }
    if spec.per_device_node_selection == Some(true) {
        for device in devices(slice) {
            let matches = node_matches(
                node,
                device.node_name.as_deref(),
                device.all_nodes == Some(true),
                device.node_selector.as_ref(),
            )
            .map_err(|e| {
                format!(
                    "failed to perform node selection for device {} in slice {}: {e}",
                    device.name,
                    slice_name(slice)
                )
            })?;
            if matches {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// The pools `node` sees, in the order their devices are tried: by driver and pool name,
/// pools with devices that have binding conditions last. `all` is every slice of the
/// cluster; `candidates` the slices that may be for the node (its own, then the shared
/// ones). A selector that does not parse is an error.
pub fn gather<'a>(
    node: &Node,
    candidates: &[&'a ResourceSlice],
    all: &'a [Arc<ResourceSlice>],
) -> Result<Vec<Pool<'a>>, String> {
    let mut by_pool: HashMap<PoolId, Vec<&'a ResourceSlice>> = HashMap::new();
    for &slice in candidates {
        if uses_compatibility_groups(slice) || !relevant(node, slice)? {
            continue;
        }
        let list = by_pool.entry(pool_id(slice)).or_default();
        match list
            .first()
            .map(|first| slice.spec.pool.generation.cmp(&first.spec.pool.generation))
        {
            Some(Ordering::Less) => {}
            Some(Ordering::Greater) => *list = vec![slice],
            _ => list.push(slice),
        }
    }
    let mut pools = Vec::new();
    for (id, list) in by_pool {
        let count = list[0].spec.pool.resource_slice_count;
        let generation = list[0].spec.pool.generation;
        if list.len() as i64 == count {
            pools.push(build(id, list, &[]));
            continue;
        }
        let same_pool = |s: &&ResourceSlice| pool_id(s) == id;
        if all
            .iter()
            .map(Arc::as_ref)
            .filter(same_pool)
            .any(|s| s.spec.pool.generation > generation)
        {
            // A newer generation is being published elsewhere: this one is obsolete.
            continue;
        }
        let whole: Vec<&ResourceSlice> = all
            .iter()
            .map(Arc::as_ref)
            .filter(same_pool)
            .filter(|s| s.spec.pool.generation == generation && !uses_compatibility_groups(s))
            .collect();
        if whole.len() as i64 != count {
            pools.push(Pool {
                id,
                incomplete: true,
                invalid: None,
                slices: Vec::new(),
                other_slices: Vec::new(),
                counter_sets: CounterSets::new(),
            });
            continue;
        }
        pools.push(build(id, list, &whole));
    }
    let (mut late, mut early): (Vec<Pool>, Vec<Pool>) =
        pools.into_iter().partition(Pool::has_binding_conditions);
    early.sort_by(|a, b| a.id.cmp(&b.id));
    late.sort_by(|a, b| a.id.cmp(&b.id));
    early.extend(late);
    Ok(early)
}

/// A pool from its slices for the node and, when those are not all of it, all its slices.
fn build<'a>(
    id: PoolId,
    mut targeting: Vec<&'a ResourceSlice>,
    whole: &[&'a ResourceSlice],
) -> Pool<'a> {
    targeting.sort_by(|a, b| slice_name(a).cmp(slice_name(b)));
    let names: HashSet<&str> = targeting.iter().map(|s| slice_name(s)).collect();
    let has_counters = |s: &ResourceSlice| {
        s.spec
            .shared_counters
            .as_ref()
            .is_some_and(|c| !c.is_empty())
    };
    let mut counter_slices: Vec<&ResourceSlice> = Vec::new();
    let mut slices = Vec::new();
    for slice in targeting.iter().copied() {
        if has_counters(slice) {
            counter_slices.push(slice);
        } else {
            slices.push(slice);
        }
    }
    let mut other_slices = Vec::new();
    for slice in whole.iter().copied() {
        if names.contains(slice_name(slice)) {
            continue;
        }
        if has_counters(slice) {
            counter_slices.push(slice);
        } else {
            other_slices.push(slice);
        }
    }
    let invalid = |id: PoolId, reason: String| Pool {
        id,
        incomplete: false,
        invalid: Some(reason),
        slices: Vec::new(),
        other_slices: Vec::new(),
        counter_sets: CounterSets::new(),
    };
    let mut seen = HashSet::new();
    for device in slices.iter().flat_map(|s| devices(s)) {
        if !seen.insert(device.name.as_str()) {
            return invalid(id, format!("duplicate device name {}", device.name));
        }
    }
    let mut counter_sets = CounterSets::new();
    for set in counter_slices
        .iter()
        .flat_map(|s| s.spec.shared_counters.iter().flatten())
    {
        if counter_sets.contains_key(&set.name) {
            return invalid(id, format!("duplicate counter set name {}", set.name));
        }
        let counters = set
            .counters
            .iter()
            .map(|(name, c)| {
                let amount = Amount::parse(name, &c.value).unwrap_or_default();
                (name.clone(), amount)
            })
            .collect();
        counter_sets.insert(set.name.clone(), counters);
    }
    for device in slices.iter().chain(&other_slices).flat_map(|s| devices(s)) {
        for consumption in device.consumes_counters.iter().flatten() {
            let Some(set) = counter_sets.get(&consumption.counter_set) else {
                return invalid(
                    id,
                    format!("counter set {} not found", consumption.counter_set),
                );
            };
            if let Some(name) = consumption.counters.keys().find(|n| !set.contains_key(*n)) {
                return invalid(
                    id,
                    format!(
                        "counter {name} not found in counter set {}",
                        consumption.counter_set
                    ),
                );
            }
        }
    }
    Pool {
        id,
        incomplete: false,
        invalid: None,
        slices,
        other_slices,
        counter_sets,
    }
}
