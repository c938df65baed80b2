//! Per-cycle state shared between the extension points of one pod's scheduling attempt.
//!
//! Upstream keys `CycleState` by string; here entries are keyed by their Rust type, so a
//! plugin reads back exactly the type it wrote and two plugins cannot collide unless they
//! share a type on purpose. Each plugin keeps its state in a private type.
//!
//! The state is cloneable (preemption evaluates "what if" on a copy) and moves from the
//! scheduling cycle into the binding cycle with the pod.

use std::any::{Any, TypeId};
use std::collections::HashSet;

/// Data a plugin stores in [`CycleState`]. Implemented for every `Clone + Send + Sync`
/// type.
pub trait StateData: Any + Send + Sync {
    fn clone_box(&self) -> Box<dyn StateData>;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Any + Clone + Send + Sync> StateData for T {
    fn clone_box(&self) -> Box<dyn StateData> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// Typed, cloneable per-cycle storage.
#[derive(Default)]
pub struct CycleState {
    /// A handful of entries (one or two per plugin), read on every node by Filter and
    /// Score: a linear scan of a short list beats hashing the key each time.
    entries: Vec<(TypeId, Box<dyn StateData>)>,
    /// Filter plugins whose PreFilter returned Skip in this cycle.
    pub(crate) skip_filter_plugins: HashSet<String>,
    /// Score plugins whose PreScore returned Skip in this cycle.
    pub(crate) skip_score_plugins: HashSet<String>,
    /// Nodes in the cycle's snapshot (all of them, not only the feasible ones).
    node_count: usize,
}

impl Clone for CycleState {
    fn clone(&self) -> Self {
        CycleState {
            entries: self
                .entries
                .iter()
                .map(|(k, v)| (*k, v.as_ref().clone_box()))
                .collect(),
            skip_filter_plugins: self.skip_filter_plugins.clone(),
            skip_score_plugins: self.skip_score_plugins.clone(),
            node_count: self.node_count,
        }
    }
}

impl std::fmt::Debug for CycleState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CycleState")
            .field("entries", &self.entries.len())
            .field("skip_filter_plugins", &self.skip_filter_plugins)
            .field("skip_score_plugins", &self.skip_score_plugins)
            .finish()
    }
}

impl CycleState {
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores `value`, replacing an earlier value of the same type.
    pub fn write<T: StateData>(&mut self, value: T) {
        let id = TypeId::of::<T>();
        match self.entries.iter_mut().find(|(k, _)| *k == id) {
            Some((_, v)) => *v = Box::new(value),
            None => self.entries.push((id, Box::new(value))),
        }
    }

    /// The value of type `T`, if one was written in this cycle.
    pub fn read<T: StateData>(&self) -> Option<&T> {
        let id = TypeId::of::<T>();
        self.entries
            .iter()
            .find(|(k, _)| *k == id)
            .and_then(|(_, v)| v.as_ref().as_any().downcast_ref::<T>())
    }

    pub fn read_mut<T: StateData>(&mut self) -> Option<&mut T> {
        let id = TypeId::of::<T>();
        self.entries
            .iter_mut()
            .find(|(k, _)| *k == id)
            .and_then(|(_, v)| v.as_mut().as_any_mut().downcast_mut::<T>())
    }

    pub fn remove<T: StateData>(&mut self) -> Option<T> {
        let id = TypeId::of::<T>();
        let at = self.entries.iter().position(|(k, _)| *k == id)?;
        let any: Box<dyn Any> = self.entries.swap_remove(at).1;
        any.downcast::<T>().ok().map(|b| *b)
    }

    /// The number of nodes in this cycle's snapshot, all of them (upstream plugins read it
    /// from the snapshot lister, e.g. ImageLocality's spread). Set by the scheduler before
    /// PreFilter.
    pub fn node_count(&self) -> usize {
        self.node_count
    }

    pub fn set_node_count(&mut self, count: usize) {
        self.node_count = count;
    }

    /// Whether the Filter of `plugin` is skipped in this cycle (its PreFilter said Skip).
    pub fn skips_filter(&self, plugin: &str) -> bool {
        self.skip_filter_plugins.contains(plugin)
    }

    /// Whether the Score of `plugin` is skipped in this cycle (its PreScore said Skip).
    pub fn skips_score(&self, plugin: &str) -> bool {
        self.skip_score_plugins.contains(plugin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct Counter(u32);

    #[derive(Clone, Debug, PartialEq)]
    struct Other(&'static str);

    #[test]
    fn values_are_keyed_by_type_and_survive_clone() {
        let mut state = CycleState::new();
        state.write(Counter(1));
        state.write(Other("x"));
        let copy = state.clone();
        state.read_mut::<Counter>().unwrap().0 = 2;
        assert_eq!(state.read::<Counter>(), Some(&Counter(2)));
        assert_eq!(copy.read::<Counter>(), Some(&Counter(1)));
        assert_eq!(copy.read::<Other>(), Some(&Other("x")));
        assert_eq!(state.remove::<Other>(), Some(Other("x")));
        assert!(state.read::<Other>().is_none());
    }
}
