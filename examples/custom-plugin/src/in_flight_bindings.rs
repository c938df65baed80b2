//! InFlightBindings: at most `maxPerNode` pods between Reserve and the end of binding on one
//! node, e.g. to spare a node's kubelet and image registry a burst of pod starts.
//!
//! The plugin keeps a ledger shared across scheduling cycles (`Arc<Mutex<..>>`, one per
//! profile instance), keyed by pod, and hands each pod's booking from the scheduling cycle
//! to the binding cycle through [`CycleState`]:
//!
//! - Reserve books the node in the ledger under a fresh ticket and writes a
//!   [`Reservation`] into CycleState; a node with `maxPerNode` bookings rejects the pod
//!   (Unschedulable; it is retried when a binding finishes).
//! - PreBind reads the Reservation back and checks the ledger still holds that ticket for
//!   the pod on that node; anything else is an Error (the binding would not be accounted).
//! - Unreserve (any failure after Reserve) removes the Reservation from CycleState and
//!   releases its ticket. It is idempotent, and releases only the ticket this cycle booked.
//! - PostBind releases the ticket once the pod is bound.
//!
//! The ledger lives in the plugin instance: a profile reload starts with an empty one, and
//! bindings still in flight in the old instance release into the old ledger.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use berth::cluster::PodInfo;
use berth::framework::{
    ActionType, ClusterEvent, CycleState, EventResource, FieldError, Handle, PluginArgs,
    PluginError, PostBindPlugin, PreBindPlugin, ReservePlugin, Status,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The bounds of `maxPerNode`, in the schema and in [`PluginArgs::validate`].
const MAX_PER_NODE_RANGE: std::ops::RangeInclusive<i32> = 1..=1000;

/// Args of InFlightBindings: how many pods may be between Reserve and bound on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, rename_all = "camelCase")]
pub struct InFlightBindingsArgs {
    /// The most pods reserved on one node and not yet bound, 1..=1000.
    #[schemars(range(min = 1, max = 1000))]
    pub max_per_node: i32,
}

impl Default for InFlightBindingsArgs {
    fn default() -> Self {
        InFlightBindingsArgs { max_per_node: 4 }
    }
}

impl PluginArgs for InFlightBindingsArgs {
    fn validate(&self, path: &str) -> Vec<FieldError> {
        if MAX_PER_NODE_RANGE.contains(&self.max_per_node) {
            return Vec::new();
        }
        vec![FieldError::new(
            format!("{path}.maxPerNode"),
            self.max_per_node,
            format!(
                "must be between {} and {}",
                MAX_PER_NODE_RANGE.start(),
                MAX_PER_NODE_RANGE.end()
            ),
        )]
    }
}

/// What Reserve hands to PreBind and Unreserve through CycleState.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    pub node: String,
    pub ticket: u64,
    /// Bookings on the node, this one included, when it was made.
    pub in_flight: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Booking {
    node: String,
    ticket: u64,
}

/// Bookings by pod key; tickets are unique for the life of the ledger.
#[derive(Debug, Default)]
struct Ledger {
    bookings: HashMap<String, Booking>,
    last_ticket: u64,
}

impl Ledger {
    fn in_flight(&self, node: &str) -> usize {
        self.bookings.values().filter(|b| b.node == node).count()
    }

    /// Releases `pod`'s booking if it is `ticket`; a newer booking of the pod stays.
    fn release(&mut self, pod: &str, ticket: u64) {
        if self.bookings.get(pod).is_some_and(|b| b.ticket == ticket) {
            self.bookings.remove(pod);
        }
    }
}

/// The InFlightBindings plugin.
#[derive(Debug, Clone)]
pub struct InFlightBindings {
    max_per_node: usize,
    ledger: Arc<Mutex<Ledger>>,
}

impl InFlightBindings {
    pub fn new(args: InFlightBindingsArgs) -> Self {
        InFlightBindings {
            max_per_node: usize::try_from(args.max_per_node).unwrap_or(1),
            ledger: Arc::default(),
        }
    }

    /// Every ledger operation is a single insert or remove, so a panic elsewhere while the
    /// lock was held cannot have left it half-updated: a poisoned lock is safe to reuse.
    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Pods booked on `node` and not yet bound or unreserved.
    #[cfg(test)]
    fn in_flight(&self, node: &str) -> usize {
        self.ledger().in_flight(node)
    }
}

berth::plugin! {
    InFlightBindings {
        name: "InFlightBindings",
        points: [Reserve, PreBind, PostBind],
    }

    impl Plugin {
        /// A booking ends when its pod is bound (an assigned pod appears) or deleted.
        fn events_to_register(&self) -> Option<Vec<ClusterEvent>> {
            Some(vec![ClusterEvent::new(
                EventResource::AssignedPod,
                ActionType::ADD | ActionType::DELETE,
            )])
        }
    }

    impl PluginFactory {
        type Args = InFlightBindingsArgs;

        fn build(args: InFlightBindingsArgs, _: &Handle) -> Result<Self, PluginError> {
            Ok(InFlightBindings::new(args))
        }
    }
}

#[async_trait]
impl ReservePlugin for InFlightBindings {
    async fn reserve(&self, state: &mut CycleState, pod: &PodInfo, node_name: &str) -> Status {
        let mut ledger = self.ledger();
        let in_flight = ledger.in_flight(node_name);
        if in_flight >= self.max_per_node {
            return Status::unschedulable(format!(
                "node(s) had {} bindings in flight",
                self.max_per_node
            ));
        }
        ledger.last_ticket += 1;
        let ticket = ledger.last_ticket;
        ledger.bookings.insert(
            pod.key().to_string(),
            Booking {
                node: node_name.to_string(),
                ticket,
            },
        );
        state.write(Reservation {
            node: node_name.to_string(),
            ticket,
            in_flight: in_flight + 1,
        });
        Status::success()
    }

    async fn unreserve(&self, state: &mut CycleState, pod: &PodInfo, _: &str) {
        if let Some(reservation) = state.remove::<Reservation>() {
            self.ledger().release(pod.key(), reservation.ticket);
        }
    }
}

#[async_trait]
impl PreBindPlugin for InFlightBindings {
    async fn pre_bind(&self, state: &mut CycleState, pod: &PodInfo, node_name: &str) -> Status {
        let Some(reservation) = state.read::<Reservation>() else {
            return Status::error(
                "InFlightBindings: no Reservation in CycleState; enable the plugin at Reserve too",
            );
        };
        let booked = self.ledger().bookings.get(pod.key()).cloned();
        let expected = Booking {
            node: node_name.to_string(),
            ticket: reservation.ticket,
        };
        if booked.as_ref() != Some(&expected) {
            return Status::error(format!(
                "InFlightBindings: ticket {} of pod {} on node {node_name} is not in the ledger (found {booked:?})",
                reservation.ticket,
                pod.key()
            ));
        }
        tracing::info!(
            pod = %format!("{}/{}", pod.namespace(), pod.name()),
            node = node_name,
            ticket = reservation.ticket,
            "InFlightBindings PreBind: binding {}/{} in flight on the node",
            reservation.in_flight,
            self.max_per_node
        );
        Status::success()
    }
}

#[async_trait]
impl PostBindPlugin for InFlightBindings {
    async fn post_bind(&self, state: &CycleState, pod: &PodInfo, _: &str) {
        if let Some(reservation) = state.read::<Reservation>() {
            self.ledger().release(pod.key(), reservation.ticket);
        }
    }
}

#[cfg(test)]
mod tests {
    use berth::framework::{Code, decode_args};
    use serde_json::json;

    use super::*;
    use crate::test_util::pending;

    fn plugin(max_per_node: i32) -> InFlightBindings {
        InFlightBindings::new(InFlightBindingsArgs { max_per_node })
    }

    #[tokio::test]
    async fn reserve_writes_state_pre_bind_reads_it_unreserve_cleans_up() {
        let plugin = plugin(2);
        let pod = pending("default", "web-1", &[]);
        let mut state = CycleState::new();

        assert!(
            plugin
                .reserve(&mut state, &pod, "node-a")
                .await
                .is_success()
        );
        assert_eq!(
            state.read::<Reservation>(),
            Some(&Reservation {
                node: "node-a".into(),
                ticket: 1,
                in_flight: 1
            })
        );
        assert_eq!(plugin.in_flight("node-a"), 1);
        assert!(
            plugin
                .pre_bind(&mut state, &pod, "node-a")
                .await
                .is_success()
        );

        plugin.unreserve(&mut state, &pod, "node-a").await;
        assert!(state.read::<Reservation>().is_none());
        assert_eq!(plugin.in_flight("node-a"), 0);
        // Idempotent: a second Unreserve finds nothing to release.
        plugin.unreserve(&mut state, &pod, "node-a").await;
        assert_eq!(plugin.in_flight("node-a"), 0);
        // With the state gone, PreBind refuses to bind an unaccounted pod.
        let status = plugin.pre_bind(&mut state, &pod, "node-a").await;
        assert_eq!(status.code(), Code::Error);
    }

    #[tokio::test]
    async fn a_full_node_rejects_until_a_binding_ends() {
        let plugin = plugin(2);
        let pods: Vec<PodInfo> = (1..=3)
            .map(|i| pending("default", &format!("web-{i}"), &[]))
            .collect();
        let mut states: Vec<CycleState> = (0..3).map(|_| CycleState::new()).collect();
        for (pod, state) in pods.iter().zip(&mut states).take(2) {
            assert!(plugin.reserve(state, pod, "node-a").await.is_success());
        }
        // Third pod: 2 bookings on node-a = maxPerNode.
        let status = plugin.reserve(&mut states[2], &pods[2], "node-a").await;
        assert_eq!(
            status,
            Status::unschedulable("node(s) had 2 bindings in flight")
        );
        assert!(states[2].read::<Reservation>().is_none());
        // Another node is unaffected.
        assert!(
            plugin
                .reserve(&mut states[2], &pods[2], "node-b")
                .await
                .is_success()
        );
        assert_eq!(states[2].read::<Reservation>().map(|r| r.ticket), Some(3));
        // web-1 is bound: PostBind releases its booking and node-a has room again.
        plugin.post_bind(&states[0], &pods[0], "node-a").await;
        assert_eq!(plugin.in_flight("node-a"), 1);
        let mut retry = CycleState::new();
        let status = plugin.reserve(&mut retry, &pods[0], "node-a").await;
        assert!(status.is_success());
        assert_eq!(retry.read::<Reservation>().map(|r| r.in_flight), Some(2));
    }

    #[tokio::test]
    async fn unreserve_of_a_stale_cycle_keeps_the_newer_booking() {
        let plugin = plugin(4);
        let pod = pending("default", "web-1", &[]);
        let mut first = CycleState::new();
        let mut second = CycleState::new();
        assert!(
            plugin
                .reserve(&mut first, &pod, "node-a")
                .await
                .is_success()
        );
        assert!(
            plugin
                .reserve(&mut second, &pod, "node-b")
                .await
                .is_success()
        );
        // The first cycle's Unreserve holds ticket 1; the ledger now holds ticket 2.
        plugin.unreserve(&mut first, &pod, "node-a").await;
        assert_eq!(plugin.in_flight("node-b"), 1);
        assert!(
            plugin
                .pre_bind(&mut second, &pod, "node-b")
                .await
                .is_success()
        );
        // And PreBind on a node other than the reserved one is an error.
        let status = plugin.pre_bind(&mut second, &pod, "node-a").await;
        assert_eq!(status.code(), Code::Error);
    }

    #[test]
    fn args_default_and_validate() {
        let defaults = decode_args::<InFlightBindingsArgs>(None, "p").expect("valid");
        assert_eq!(defaults.max_per_node, 4);
        let errors = decode_args::<InFlightBindingsArgs>(
            Some(&json!({"maxPerNode": 0})),
            "spec.pluginConfig.inFlightBindings",
        )
        .expect_err("invalid");
        assert_eq!(
            errors[0].to_string(),
            "spec.pluginConfig.inFlightBindings.maxPerNode: Invalid value: 0: must be between 1 and 1000"
        );
    }
}
