//! NodePorts: keeps a pod off nodes where a host port it asks for is already taken
//! (upstream `plugins/nodeports`).
//!
//! - PreFilter collects the pod's host ports once (app containers and sidecar init
//!   containers, [`PodInfo::host_ports`]); a pod without host ports returns Skip, so
//!   Filter never runs for it.
//! - Filter rejects a node whose used ports clash with one of them, as Unschedulable
//!   (preempting the pod that holds the port frees it). A clash needs the same protocol
//!   and port, and the same host IP or `0.0.0.0` on either side
//!   ([`HostPortInfo::check_conflict`]).

use async_trait::async_trait;

use crate::cluster::{HostPortInfo, NodeInfo, PodInfo, Snapshot};
use crate::framework::{
    ActionType, ClusterEvent, Coupling, CycleState, EventResource, FilterPlugin, Handle, NoArgs,
    PluginError, PluginFactory, PreFilterPlugin, PreFilterResult, Status,
};

/// Filter's reason when a requested host port is in use on the node (upstream
/// `ErrReason`).
pub const ERR_REASON: &str = "node(s) didn't have free ports for the requested pod ports";

/// One host port a pod asks for: host IP (empty means all addresses), protocol (empty
/// means TCP) and port.
#[derive(Debug, Clone, PartialEq, Eq)]
struct WantedPort {
    host_ip: String,
    protocol: String,
    port: i32,
}

/// What PreFilter hands to Filter: the pod's host ports.
#[derive(Debug, Clone)]
struct PreFilterState(Vec<WantedPort>);

/// Whether none of `wanted` clashes with the ports in use (upstream `fitsPorts`).
fn fits_ports(wanted: &[WantedPort], in_use: &HostPortInfo) -> bool {
    !wanted
        .iter()
        .any(|p| in_use.check_conflict(&p.host_ip, &p.protocol, p.port))
}

/// The host ports of `pod`.
fn wanted_ports(pod: &PodInfo) -> Vec<WantedPort> {
    pod.host_ports()
        .into_iter()
        .map(|p| WantedPort {
            host_ip: p.host_ip.clone().unwrap_or_default(),
            protocol: p.protocol.clone().unwrap_or_default(),
            port: p.host_port.unwrap_or_default(),
        })
        .collect()
}

/// Whether `pod` could take its host ports on `node` (upstream `Fits`), for callers
/// outside a scheduling cycle, such as preemption.
pub fn fits(pod: &PodInfo, node: &NodeInfo) -> bool {
    fits_ports(&wanted_ports(pod), &node.used_ports)
}

/// The NodePorts plugin. Stateless; per-cycle data lives in [`CycleState`].
#[derive(Debug, Clone, Copy, Default)]
pub struct NodePorts;

crate::plugin! {
    NodePorts {
        name: "NodePorts",
        points: [PreFilter, Filter],
    }

    impl Plugin {
        fn as_sign(&self) -> Option<&dyn crate::framework::SignPlugin> {
            Some(self)
        }

        /// Upstream's registration with queueing hints enabled: a pod deleted (its ports are
        /// freed; ports are immutable, so pod updates never free one) or a node added. berth
        /// has no pre-check that could drop a Node/Add, so upstream's extra node-update
        /// interest (needed only without queueing hints) is not registered.
        fn events_to_register(&self) -> Option<Vec<ClusterEvent>> {
            Some(vec![
                ClusterEvent::new(EventResource::Pod, ActionType::DELETE),
                ClusterEvent::new(EventResource::Node, ActionType::ADD),
            ])
        }
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str =
            "Rejects nodes where a host port the pod asks for is already in use.";
        // Filter reads the wanted ports PreFilter collected (an error without them).
        const COUPLINGS: &'static [Coupling] = &[Coupling::FilterNeedsPreFilter];
        type Args = NoArgs;

        fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
            Ok(NodePorts)
        }
    }
}

#[async_trait]
impl PreFilterPlugin for NodePorts {
    async fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let wanted = wanted_ports(pod);
        if wanted.is_empty() {
            return (None, Status::skip());
        }
        state.write(PreFilterState(wanted));
        (None, Status::success())
    }
}

impl FilterPlugin for NodePorts {
    fn filter(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
        // As upstream, Filter without PreFilter state is an error, not a recomputation.
        let Some(PreFilterState(wanted)) = state.read::<PreFilterState>() else {
            return Status::error(format!(
                "{}: no PreFilter state in this cycle; PreFilter must run before Filter",
                Self::NAME
            ));
        };
        if fits_ports(wanted, &node.used_ports) {
            Status::success()
        } else {
            Status::unschedulable(ERR_REASON)
        }
    }
}

/// What of a pod this plugin reads, for opportunistic batching (upstream `SignPod`).
impl crate::framework::SignPlugin for NodePorts {
    fn fragments(&self, pod: &crate::cluster::PodInfo) -> Vec<crate::framework::SignFragment> {
        use crate::framework::signature;
        vec![signature::host_ports(&pod.pod)]
    }
}

#[cfg(test)]
mod tests {
    use crate::framework::{ExtensionPoint, Plugin};
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::{Container, ContainerPort};

    use super::*;
    use crate::framework::Code;
    use crate::testing::moves_on;
    use crate::testing::{PodWrapper, make_pod};

    /// A port written as upstream's test helper reads it: `PROTOCOL/hostIP/hostPort`.
    fn port(spec: &str) -> ContainerPort {
        let parts: Vec<&str> = spec.split('/').collect();
        let [protocol, host_ip, host_port] = parts[..] else {
            panic!("port spec {spec} is not PROTOCOL/IP/PORT");
        };
        ContainerPort {
            protocol: Some(protocol.to_string()),
            host_ip: Some(host_ip.to_string()),
            host_port: Some(host_port.parse().expect("numeric port")),
            ..ContainerPort::default()
        }
    }

    fn pod_with(init: Vec<Container>, app: Vec<Container>) -> PodInfo {
        let pod = make_pod().name("pod").namespace("default");
        let pod = init.into_iter().fold(pod, PodWrapper::init_container);
        app.into_iter().fold(pod, PodWrapper::container).info()
    }

    /// A pod with one app container holding `ports` (upstream's `newPod`).
    fn pod(ports: &[&str]) -> PodInfo {
        let container = Container {
            name: "c".into(),
            ports: Some(ports.iter().map(|p| port(p)).collect()),
            ..Container::default()
        };
        pod_with(vec![], vec![container])
    }

    /// A pod whose only container is an init container with host port 8001/TCP; a
    /// sidecar when `restart_always` (upstream `InitContainerPort`).
    fn pod_with_init_port(restart_always: bool) -> PodInfo {
        let init = Container {
            name: "init".into(),
            restart_policy: restart_always.then(|| "Always".to_string()),
            ports: Some(vec![ContainerPort {
                container_port: 8001,
                host_port: Some(8001),
                protocol: Some("TCP".into()),
                ..ContainerPort::default()
            }]),
            ..Container::default()
        };
        pod_with(vec![init], vec![])
    }

    /// A node running one pod that holds `ports` (upstream `NewNodeInfo(newPod(...))`).
    fn node_with_ports(ports: &[&str]) -> NodeInfo {
        let mut node = NodeInfo::default();
        node.add_pod(Arc::new(pod(ports).with_node_name("m1")));
        node
    }

    #[tokio::test]
    async fn pre_filter_and_filter_match_upstream_table() {
        // Upstream `TestNodePorts`, in order. (case, pod, node, expected PreFilter status,
        // expected Filter status); Filter is not run after a PreFilter Skip.
        let conflict = || Status::unschedulable(ERR_REASON);
        let cases: Vec<(&str, PodInfo, NodeInfo, Status, Status)> = vec![
            (
                "skip filter",
                pod_with(vec![], vec![]),
                NodeInfo::default(),
                Status::skip(),
                Status::success(),
            ),
            (
                "other port",
                pod(&["UDP/127.0.0.1/8080"]),
                node_with_ports(&["UDP/127.0.0.1/9090"]),
                Status::success(),
                Status::success(),
            ),
            (
                "same udp port",
                pod(&["UDP/127.0.0.1/8080"]),
                node_with_ports(&["UDP/127.0.0.1/8080"]),
                Status::success(),
                conflict(),
            ),
            (
                "same tcp port",
                pod(&["TCP/127.0.0.1/8080"]),
                node_with_ports(&["TCP/127.0.0.1/8080"]),
                Status::success(),
                conflict(),
            ),
            (
                "different host ip",
                pod(&["TCP/127.0.0.1/8080"]),
                node_with_ports(&["TCP/127.0.0.2/8080"]),
                Status::success(),
                Status::success(),
            ),
            (
                "different protocol",
                pod(&["UDP/127.0.0.1/8080"]),
                node_with_ports(&["TCP/127.0.0.1/8080"]),
                Status::success(),
                Status::success(),
            ),
            (
                "second udp port conflict",
                pod(&["UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"]),
                node_with_ports(&["UDP/127.0.0.1/8080"]),
                Status::success(),
                conflict(),
            ),
            (
                "first tcp port conflict",
                pod(&["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"]),
                node_with_ports(&["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"]),
                Status::success(),
                conflict(),
            ),
            (
                "first tcp port conflict due to 0.0.0.0 hostIP",
                pod(&["TCP/0.0.0.0/8001"]),
                node_with_ports(&["TCP/127.0.0.1/8001"]),
                Status::success(),
                conflict(),
            ),
            (
                "TCP hostPort conflict due to 0.0.0.0 hostIP",
                pod(&["TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"]),
                node_with_ports(&["TCP/127.0.0.1/8001"]),
                Status::success(),
                conflict(),
            ),
            (
                "second tcp port conflict to 0.0.0.0 hostIP",
                pod(&["TCP/127.0.0.1/8001"]),
                node_with_ports(&["TCP/0.0.0.0/8001"]),
                Status::success(),
                conflict(),
            ),
            (
                "second different protocol",
                pod(&["UDP/127.0.0.1/8001"]),
                node_with_ports(&["TCP/0.0.0.0/8001"]),
                Status::success(),
                Status::success(),
            ),
            (
                "UDP hostPort conflict due to 0.0.0.0 hostIP",
                pod(&["UDP/127.0.0.1/8001"]),
                node_with_ports(&["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"]),
                Status::success(),
                conflict(),
            ),
            (
                "non-sidecar initContainer using hostPort",
                pod_with_init_port(false),
                node_with_ports(&["TCP/0.0.0.0/8001"]),
                Status::skip(),
                Status::success(),
            ),
            (
                "TCP hostPort conflict from sidecar initContainer",
                pod_with_init_port(true),
                node_with_ports(&["TCP/0.0.0.0/8001"]),
                Status::success(),
                conflict(),
            ),
        ];
        let snapshot = Snapshot::new(vec![]);
        for (name, pod, node, want_pre_filter, want_filter) in cases {
            let mut state = CycleState::new();
            let (result, status) = NodePorts.pre_filter(&mut state, &pod, &snapshot).await;
            assert_eq!(result, None, "case {name}: PreFilter narrows nothing");
            assert_eq!(status, want_pre_filter, "case {name}: PreFilter");
            if status.is_skip() {
                continue;
            }
            let got = NodePorts.filter(&state, &pod, &node);
            assert_eq!(got, want_filter, "case {name}: Filter");
        }
    }

    #[test]
    fn filter_without_pre_filter_is_an_error() {
        // Upstream `TestPreFilterDisabled`: the missing state is an Error status.
        let got = NodePorts.filter(&CycleState::new(), &pod(&[]), &NodeInfo::default());
        assert_eq!(got.code(), Code::Error);
    }

    #[test]
    fn fits_matches_upstream_table() {
        // Upstream `TestFits`, in order.
        let cases: &[(&str, &[&str], &[&str], bool)] = &[
            (
                "non-conflicting ports",
                &["TCP/127.0.0.1/80"],
                &["TCP/127.0.0.1/9090"],
                true,
            ),
            (
                "multiple non-conflicting ports",
                &[
                    "TCP/127.0.0.1/80",
                    "TCP/127.0.1.1/80",
                    "TCP/127.0.1.1/90",
                    "TCP/127.0.1.1/100",
                ],
                &[
                    "TCP/127.0.0.1/9090",
                    "TCP/127.0.0.1/9191",
                    "TCP/127.0.1.1/8080",
                ],
                true,
            ),
            (
                "same ports on different protocols",
                &["TCP/127.0.0.1/80"],
                &["UDP/127.0.0.1/80"],
                true,
            ),
            (
                "conflicting ports",
                &["TCP/127.0.0.1/80"],
                &["TCP/127.0.0.1/80"],
                false,
            ),
            (
                "multiple ports, some conflicting",
                &[
                    "TCP/127.0.0.1/80",
                    "TCP/127.0.1.1/80",
                    "TCP/127.0.1.1/90",
                    "TCP/127.0.1.1/100",
                ],
                &[
                    "TCP/127.0.0.1/9090",
                    "TCP/127.0.1.1/90",
                    "TCP/127.0.1.1/8080",
                ],
                false,
            ),
        ];
        for (name, wanted, existing, want) in cases {
            assert_eq!(
                fits(&pod(wanted), &node_with_ports(existing)),
                *want,
                "case {name}"
            );
        }
    }

    #[test]
    fn registry_points_match_the_accessors_and_events() {
        let plugin = NodePorts;
        assert!(plugin.as_pre_filter().is_some());
        assert!(plugin.as_filter().is_some());
        assert!(plugin.as_score().is_none());
        assert_eq!(
            NodePorts::POINTS,
            &[ExtensionPoint::PreFilter, ExtensionPoint::Filter]
        );
        let events = plugin.events_to_register().expect("registers events");
        assert!(moves_on(
            &events,
            EventResource::AssignedPod,
            ActionType::DELETE
        ));
        assert!(moves_on(&events, EventResource::Node, ActionType::ADD));
        assert!(!moves_on(
            &events,
            EventResource::AssignedPod,
            ActionType::UPDATE_POD_LABEL
        ));
        assert!(!moves_on(
            &events,
            EventResource::Node,
            ActionType::UPDATE_NODE_LABEL
        ));
    }
}
