//! Cluster events that can make a rejected pod schedulable again.
//!
//! Each plugin declares, through [`super::EnqueueExtensions`], the events after which a pod
//! it rejected is worth retrying. The queue moves an unschedulable pod back to activeQ (or
//! backoffQ) only on an event that one of its rejecting plugins registered, as upstream's
//! `EventsToRegister` does. A pod rejected by a plugin that registered nothing is retried
//! on any event.

/// The kind of object an event is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventResource {
    Pod,
    /// A pod that is assigned to a node (upstream's `AssignedPod`).
    AssignedPod,
    /// A pod that is not yet assigned (upstream's `UnscheduledPod`).
    UnscheduledPod,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    CSINode,
    CSIDriver,
    CSIStorageCapacity,
    VolumeAttachment,
    PodGroup,
    /// A Kubernetes 1.35 `scheduling.k8s.io/v1alpha1` Workload.
    Workload,
    ResourceClaim,
    /// No plugin registers it: the resourceclaim controller makes claims from templates,
    /// and the claim and the pod's status change then.
    ResourceClaimTemplate,
    ResourceSlice,
    DeviceClass,
    /// Matches every resource.
    Wildcard,
}

/// What happened to the object; a bit set, as upstream's `ActionType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ActionType(u32);

impl ActionType {
    pub const ADD: ActionType = ActionType(1);
    pub const DELETE: ActionType = ActionType(1 << 1);
    pub const UPDATE_NODE_ALLOCATABLE: ActionType = ActionType(1 << 2);
    pub const UPDATE_NODE_LABEL: ActionType = ActionType(1 << 3);
    pub const UPDATE_NODE_TAINT: ActionType = ActionType(1 << 4);
    pub const UPDATE_NODE_CONDITION: ActionType = ActionType(1 << 5);
    pub const UPDATE_NODE_ANNOTATION: ActionType = ActionType(1 << 6);
    pub const UPDATE_POD_LABEL: ActionType = ActionType(1 << 7);
    pub const UPDATE_POD_SCALE_DOWN: ActionType = ActionType(1 << 8);
    pub const UPDATE_POD_TOLERATIONS: ActionType = ActionType(1 << 9);
    pub const UPDATE_POD_SCHEDULING_GATES_ELIMINATED: ActionType = ActionType(1 << 10);
    /// Any other update.
    pub const UPDATE_OTHER: ActionType = ActionType(1 << 11);
    /// The pod's `status.resourceClaimStatuses` or `status.extendedResourceClaimStatus`
    /// changed (the resourceclaim controller made its claims).
    pub const UPDATE_POD_GENERATED_RESOURCE_CLAIM: ActionType = ActionType(1 << 12);
    pub const UPDATE: ActionType = ActionType((1 << 13) - 1 - 1 - (1 << 1));
    pub const ALL: ActionType = ActionType((1 << 13) - 1);

    pub const fn union(self, other: ActionType) -> ActionType {
        ActionType(self.0 | other.0)
    }

    pub const fn intersects(self, other: ActionType) -> bool {
        self.0 & other.0 != 0
    }
}

impl std::ops::BitOr for ActionType {
    type Output = ActionType;
    fn bitor(self, rhs: ActionType) -> ActionType {
        self.union(rhs)
    }
}

/// One cluster event: a resource and what happened to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClusterEvent {
    pub resource: EventResource,
    pub action: ActionType,
}

impl ClusterEvent {
    pub const fn new(resource: EventResource, action: ActionType) -> Self {
        ClusterEvent { resource, action }
    }

    /// Whether a registered interest (`self`) covers the event `incoming`.
    pub fn matches(&self, incoming: &ClusterEvent) -> bool {
        let resource_matches = self.resource == EventResource::Wildcard
            || self.resource == incoming.resource
            || (self.resource == EventResource::Pod
                && matches!(
                    incoming.resource,
                    EventResource::AssignedPod | EventResource::UnscheduledPod
                ));
        resource_matches && self.action.intersects(incoming.action)
    }

    /// The event upstream calls `UnschedulableTimeout`: sent when pods have waited in the
    /// unschedulable set for the flush interval; every plugin's pods move on it.
    pub const UNSCHEDULABLE_TIMEOUT: ClusterEvent =
        ClusterEvent::new(EventResource::Wildcard, ActionType::ALL);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_interest_covers_assigned_and_unscheduled_pods() {
        let interest = ClusterEvent::new(EventResource::Pod, ActionType::DELETE);
        assert!(interest.matches(&ClusterEvent::new(
            EventResource::AssignedPod,
            ActionType::DELETE
        )));
        assert!(!interest.matches(&ClusterEvent::new(
            EventResource::AssignedPod,
            ActionType::ADD
        )));
        assert!(!interest.matches(&ClusterEvent::new(EventResource::Node, ActionType::DELETE)));
        let node_taint = ClusterEvent::new(EventResource::Node, ActionType::UPDATE_NODE_TAINT);
        assert!(
            ClusterEvent::new(EventResource::Node, ActionType::ADD | ActionType::UPDATE)
                .matches(&node_taint)
        );
    }
}
