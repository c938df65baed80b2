//! Pod groups in the queue (upstream's `QueuedPodGroupInfo` with GenericWorkload on): the
//! pending members of one pod group (a Workload API PodGroup, or a Coscheduling group whose
//! PodGroup is known) wait together as one entity and leave activeQ together, for one
//! pod-group cycle.
//!
//! An entity sits in activeQ, backoffQ or the gated set as a *proxy*: a [`QueuedPodInfo`]
//! of a synthetic pod keyed `podgroup/<namespace>/<name>` (no pod key has two slashes),
//! with the PodGroup's `spec.priority` and the group's timestamp, so the profile's
//! QueueSort plugin orders it among pods as upstream's orders a group entity (priority,
//! then timestamp). The members themselves live in [`GroupEntity::members`].

use std::cmp::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Pod, PodSchedulingGroup, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::api::POD_GROUP_LABEL;
use crate::cluster::{GroupDialect, GroupKey, PodInfo};
use crate::framework::QueuedPodInfo;

/// The proxy key of a group.
pub(super) fn proxy_key(group: &GroupKey) -> String {
    let kind = match group.dialect {
        GroupDialect::Workload => "podgroup",
        GroupDialect::Coscheduling => "coscheduling",
    };
    format!("{kind}/{}/{}", group.namespace, group.name)
}

/// The queue-side bookkeeping of one group attempt history (upstream's group-level
/// `QueueingParams`): backoff is the group's, whatever its members' own counts.
#[derive(Debug, Clone)]
pub struct GroupParams {
    /// When the group last entered the queue or failed; QueueSort orders by it.
    pub timestamp: Instant,
    pub attempts: u32,
    pub initial_attempt_timestamp: Option<Instant>,
    /// Failed attempts in a row that were rejections.
    pub unschedulable_count: u32,
    /// Failed attempts in a row that were errors.
    pub consecutive_errors: u32,
}

impl GroupParams {
    pub(super) fn new(timestamp: Instant) -> Self {
        GroupParams {
            timestamp,
            attempts: 0,
            initial_attempt_timestamp: None,
            unschedulable_count: 0,
            consecutive_errors: 0,
        }
    }
}

/// A group waiting in the queue.
pub(super) struct GroupEntity {
    pub(super) key: GroupKey,
    /// The PodGroup's `spec.priority` (0 when unset).
    pub(super) priority: i32,
    pub(super) params: GroupParams,
    /// Members in the order the group cycle tries them ([`member_order`]).
    pub(super) members: Vec<QueuedPodInfo>,
}

impl GroupEntity {
    pub(super) fn new(key: GroupKey, priority: i32, params: GroupParams) -> Self {
        GroupEntity {
            key,
            priority,
            params,
            members: Vec::new(),
        }
    }

    /// Adds or replaces a member, keeping the order.
    pub(super) fn insert(&mut self, member: QueuedPodInfo) {
        self.remove(member.pod_info.key());
        let at = self
            .members
            .partition_point(|m| member_order(m, &member) != Ordering::Greater);
        self.members.insert(at, member);
    }

    pub(super) fn remove(&mut self, key: &str) -> Option<QueuedPodInfo> {
        let at = self.members.iter().position(|m| m.pod_info.key() == key)?;
        Some(self.members.remove(at))
    }

    pub(super) fn get_mut(&mut self, key: &str) -> Option<&mut QueuedPodInfo> {
        self.members.iter_mut().find(|m| m.pod_info.key() == key)
    }

    /// The proxy standing for the group in activeQ, backoffQ or the gated set. A
    /// Coscheduling group's proxy carries the pod-group label (Coscheduling's QueueSort
    /// orders it by its PodGroup) and its highest member priority (scheduler-plugins'
    /// PodGroups have none of their own).
    pub(super) fn proxy(&self, gated_by: Option<String>) -> QueuedPodInfo {
        let coscheduling = self.key.dialect == GroupDialect::Coscheduling;
        let priority = match self.members.first() {
            Some(first) if coscheduling => first.pod_info.priority(),
            _ => self.priority,
        };
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some(self.key.name.clone()),
                namespace: Some(self.key.namespace.clone()),
                uid: Some(proxy_key(&self.key)),
                labels: coscheduling
                    .then(|| [(POD_GROUP_LABEL.to_string(), self.key.name.clone())].into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                priority: Some(priority),
                scheduling_group: (!coscheduling).then(|| PodSchedulingGroup {
                    pod_group_name: Some(self.key.name.clone()),
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let info = PodInfo::new(pod).expect("a pod without containers has no quantity to parse");
        QueuedPodInfo {
            pod_info: Arc::new(info),
            timestamp: self.params.timestamp,
            attempts: self.params.attempts,
            initial_attempt_timestamp: self.params.initial_attempt_timestamp,
            unschedulable_plugins: Default::default(),
            pending_plugins: Default::default(),
            gated_by,
        }
    }

    /// Upstream's group backoff: `initial * 2^(count-1)` capped at `max * sqrt(size)`,
    /// where `count` counts the errors in a row if any, else the rejections in a row (no
    /// backoff before the first failure).
    pub(super) fn backoff(&self, initial: Duration, max: Duration) -> Duration {
        let count = if self.params.consecutive_errors > 0 {
            self.params.consecutive_errors
        } else {
            self.params.unschedulable_count
        };
        if max.is_zero() {
            return Duration::ZERO;
        }
        let size = self.members.len().max(1);
        let max = if size > 1 {
            max.mul_f64((size as f64).sqrt())
        } else {
            max
        };
        super::doubling_backoff(initial, max, count)
    }
}

/// The order of a group's members (upstream `PodGroupMemberPodsOrderingFunc`): higher
/// priority first, then more attempts, then the older queue timestamp, then the name.
pub(super) fn member_order(a: &QueuedPodInfo, b: &QueuedPodInfo) -> Ordering {
    b.pod_info
        .priority()
        .cmp(&a.pod_info.priority())
        .then(b.attempts.cmp(&a.attempts))
        .then(a.timestamp.cmp(&b.timestamp))
        .then_with(|| a.pod_info.name().cmp(b.pod_info.name()))
}
