//! Nominated pods in Filter, and PreFilter's AddPod/RemovePod: what the Filter phase and
//! preemption's dry run ([`FilterRunner`]) run on a node whose pods are not (only) the
//! snapshot's.

use std::sync::Arc;

use crate::cluster::{NodeInfo, PodInfo};
use crate::framework::{
    CycleState, ExtensionPoint, FilterPlugin, FilterRunner, PreFilterExtensions, Status,
};

use super::{Framework, filter_with};

impl Framework {
    /// Filter as upstream's `RunFilterPluginsWithNominatedPods`: when pods of equal or
    /// higher priority are nominated to the node, the pod must fit both with them on it
    /// (their room is theirs: resources, ports, anti-affinity) and without them (affinity
    /// to them must not count before they run). Nominated pods of lower priority are
    /// ignored: a more important pod may take the room preemption made for them.
    pub(super) fn filter_with_nominated_pods(
        &self,
        filters: &[(&str, &dyn FilterPlugin)],
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        let nominated = self.nominated_pods_to_add(pod, node);
        if nominated.is_empty() {
            return filter_with(filters, state, pod, node);
        }
        let mut state_with = state.clone();
        let mut node_with = node.clone();
        for other in nominated {
            node_with.add_pod(other.clone());
            let status = self.run_pre_filter_add_pod(&mut state_with, pod, &other, &node_with);
            if !status.is_success() {
                return status;
            }
        }
        let status = filter_with(filters, &state_with, pod, &node_with);
        if !status.is_success() {
            return status;
        }
        filter_with(filters, state, pod, node)
    }

    /// The pods nominated to `node` that `pod` must leave room for: of equal or higher
    /// priority, never the pod itself.
    pub(super) fn nominated_pods_to_add(
        &self,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Vec<Arc<PodInfo>> {
        let nominator = &self.handle.nominator;
        if nominator.is_empty() {
            return Vec::new();
        }
        nominator
            .pods_for_node(node.name())
            .into_iter()
            .filter(|other| other.key() != pod.key() && other.priority() >= pod.priority())
            .collect()
    }

    /// Upstream `RunPreFilterExtensionAddPod`: tells every PreFilter plugin whose Filter
    /// runs this cycle that `added` is on `node` now.
    pub fn run_pre_filter_add_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        added: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        self.run_pre_filter_extension(state, "AddPod", |extensions, state| {
            extensions.add_pod(state, pod, added, node)
        })
    }

    /// Upstream `RunPreFilterExtensionRemovePod`: tells every PreFilter plugin whose
    /// Filter runs this cycle that `removed` is no longer on `node`.
    pub fn run_pre_filter_remove_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        removed: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        self.run_pre_filter_extension(state, "RemovePod", |extensions, state| {
            extensions.remove_pod(state, pod, removed, node)
        })
    }

    /// Calls `call` on the PreFilter extensions of every plugin whose Filter runs this
    /// cycle; the first failure is an Error naming the extension (`what`) and the plugin.
    fn run_pre_filter_extension(
        &self,
        state: &mut CycleState,
        what: &str,
        call: impl Fn(&dyn PreFilterExtensions, &mut CycleState) -> Status,
    ) -> Status {
        for plugin in self.plugins(ExtensionPoint::PreFilter) {
            if state.skips_filter(plugin.name()) {
                continue;
            }
            let Some(extensions) = plugin
                .as_pre_filter()
                .and_then(|p| p.pre_filter_extensions())
            else {
                continue;
            };
            let status = call(extensions, state);
            if !status.is_success() {
                return Status::error(format!(
                    "running {what} on PreFilter plugin {:?}: {}",
                    plugin.name(),
                    status.message()
                ))
                .with_plugin(plugin.name());
            }
        }
        Status::success()
    }
}

impl FilterRunner for Framework {
    fn filter_with_nominated_pods(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        self.run_filter_unobserved(state, pod, node)
    }

    fn pre_filter_add_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        added: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        self.run_pre_filter_add_pod(state, pod, added, node)
    }

    fn pre_filter_remove_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        removed: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        self.run_pre_filter_remove_pod(state, pod, removed, node)
    }
}
