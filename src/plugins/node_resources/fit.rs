//! Filter: does the node have room for the pod's requests? (upstream `fitsRequest`)

use std::collections::HashSet;

use crate::cluster::{NodeInfo, Resource, is_extended_resource_name};
use crate::framework::{Code, Status};

/// What Filter checks, computed once per cycle in PreFilter: the pod's requests (upstream
/// `computePodResourceRequest`: `PodRequests` of the spec with pod-level requests and
/// overhead, already in `PodInfo.filter_requests`) with the scalar resources to skip —
/// zero requests and ignored extended resources — already removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PreFilterState {
    milli_cpu: i64,
    memory: i64,
    ephemeral_storage: i64,
    /// Scalar resources to check, by name (sorted, so reasons come in a stable order),
    /// each with whether a DeviceClass serves it (upstream `shouldDelegateResourceToDRA`:
    /// a node without allocatable of it leaves it to DynamicResources).
    scalar_resources: Vec<(String, i64, bool)>,
}

impl PreFilterState {
    pub(super) fn new(
        requests: &Resource,
        ignored_resources: &HashSet<String>,
        ignored_groups: &HashSet<String>,
        served_by_devices: impl Fn(&str) -> bool,
    ) -> Self {
        let ignored = |name: &str| {
            // Only extended resources may be ignored; hugepages and kubernetes.io
            // resources are always checked.
            is_extended_resource_name(name)
                && (ignored_resources.contains(name)
                    || name
                        .split_once('/')
                        .is_some_and(|(group, _)| ignored_groups.contains(group)))
        };
        PreFilterState {
            milli_cpu: requests.milli_cpu,
            memory: requests.memory,
            ephemeral_storage: requests.ephemeral_storage,
            scalar_resources: requests
                .scalar_resources
                .iter()
                .filter(|(name, amount)| **amount != 0 && !ignored(name))
                .map(|(name, amount)| (name.clone(), *amount, served_by_devices(name)))
                .collect(),
        }
    }

    /// Success, or one reason per insufficient resource. The status is
    /// UnschedulableAndUnresolvable when some request exceeds the node's whole allocatable
    /// amount, since no eviction could then make room (upstream `InsufficientResource.
    /// Unresolvable`, which keeps preemption off such nodes); `Too many pods` alone stays
    /// Unschedulable. Allocates only when the node does not fit. An extended resource
    /// a DeviceClass serves is left to DynamicResources on a node without allocatable of
    /// it.
    pub(super) fn fits(&self, node: &NodeInfo) -> Status {
        let allocatable = &node.allocatable;
        let requested = &node.requested;
        let mut reasons: Vec<String> = Vec::new();
        let mut unresolvable = false;
        if node.pods.len() as i64 + 1 > allocatable.allowed_pod_number {
            reasons.push("Too many pods".to_string());
        }
        let mut check = |request: i64, allocatable: i64, requested: i64| {
            let short = request > allocatable - requested;
            unresolvable |= short && request > allocatable;
            short
        };
        if self.milli_cpu > 0 && check(self.milli_cpu, allocatable.milli_cpu, requested.milli_cpu) {
            reasons.push("Insufficient cpu".to_string());
        }
        if self.memory > 0 && check(self.memory, allocatable.memory, requested.memory) {
            reasons.push("Insufficient memory".to_string());
        }
        if self.ephemeral_storage > 0
            && check(
                self.ephemeral_storage,
                allocatable.ephemeral_storage,
                requested.ephemeral_storage,
            )
        {
            reasons.push("Insufficient ephemeral-storage".to_string());
        }
        for (name, request, served_by_devices) in &self.scalar_resources {
            let available = scalar(allocatable, name);
            if available <= 0 && *served_by_devices {
                continue;
            }
            if check(*request, available, scalar(requested, name)) {
                reasons.push(format!("Insufficient {name}"));
            }
        }
        if reasons.is_empty() {
            Status::success()
        } else if unresolvable {
            Status::with_reasons(Code::UnschedulableAndUnresolvable, reasons)
        } else {
            Status::with_reasons(Code::Unschedulable, reasons)
        }
    }
}

fn scalar(resource: &Resource, name: &str) -> i64 {
    resource.scalar_resources.get(name).copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::super::{NodeResourcesFit, NodeResourcesFitArgs};
    use crate::framework::{Code, CycleState, FilterPlugin, PreFilterPlugin, Status};

    /// The node of upstream `TestEnoughRequests`: 10m cpu, 20 bytes memory, 32 pods,
    /// 5 example.com/aaa, 20 bytes ephemeral storage, 5 hugepages-2Mi.
    const NODE: &[(&str, &str)] = &[
        ("cpu", "10m"),
        ("memory", "20"),
        ("pods", "32"),
        ("example.com/aaa", "5"),
        ("ephemeral-storage", "20"),
        ("hugepages-2Mi", "5"),
    ];

    fn run_filter(
        args: NodeResourcesFitArgs,
        pod: &k8s_openapi::api::core::v1::Pod,
        node: &[(&str, &str)],
        existing: &[k8s_openapi::api::core::v1::Pod],
    ) -> Status {
        let plugin = NodeResourcesFit::new(args);
        let pod = pod_info(pod.clone());
        let node = node_info(&make_node("node", node), existing);
        let mut state = CycleState::new();
        let (_, pre) = complete(plugin.pre_filter(&mut state, &pod, &empty_snapshot()));
        assert!(pre.is_success(), "PreFilter: {pre}");
        plugin.filter(&state, &pod, &node)
    }

    fn unschedulable(reasons: &[&str]) -> Status {
        Status::with_reasons(
            Code::Unschedulable,
            reasons.iter().map(|r| r.to_string()).collect(),
        )
    }

    /// Some request exceeds the node's whole allocatable amount: no eviction can help.
    fn unresolvable(reasons: &[&str]) -> Status {
        Status::with_reasons(
            Code::UnschedulableAndUnresolvable,
            reasons.iter().map(|r| r.to_string()).collect(),
        )
    }

    #[test]
    fn enough_requests_matches_upstream() {
        let ignore = |resources: &[&str], groups: &[&str]| NodeResourcesFitArgs {
            ignored_resources: resources.iter().map(|s| s.to_string()).collect(),
            ignored_resource_groups: groups.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        let cpu_mem =
            |cpu: &str, mem: &str| vec![("cpu", cpu.to_string()), ("memory", mem.to_string())];
        // (upstream case, args, pod, existing pod on the node, expected status)
        let cases: Vec<(&str, NodeResourcesFitArgs, _, _, Status)> = vec![
            // upstream TestEnoughRequests "no resources requested always fits"
            (
                "no resources requested always fits",
                Default::default(),
                pod_with(&[], &[]),
                pod_with(&[cpu_mem("10m", "20")], &[]),
                Status::success(),
            ),
            // upstream TestEnoughRequests "too many resources fails"
            (
                "too many resources fails",
                Default::default(),
                pod_with(&[cpu_mem("1m", "1")], &[]),
                pod_with(&[cpu_mem("10m", "20")], &[]),
                unschedulable(&["Insufficient cpu", "Insufficient memory"]),
            ),
            // upstream TestEnoughRequests "too many resources fails due to init container cpu"
            (
                "init container cpu",
                Default::default(),
                pod_with(&[cpu_mem("1m", "1")], &[cpu_mem("3m", "1")]),
                pod_with(&[cpu_mem("8m", "19")], &[]),
                unschedulable(&["Insufficient cpu"]),
            ),
            // upstream TestEnoughRequests "too many resources fails due to highest init container cpu"
            (
                "highest init container cpu",
                Default::default(),
                pod_with(
                    &[cpu_mem("1m", "1")],
                    &[cpu_mem("3m", "1"), cpu_mem("2m", "1")],
                ),
                pod_with(&[cpu_mem("8m", "19")], &[]),
                unschedulable(&["Insufficient cpu"]),
            ),
            // upstream TestEnoughRequests "too many resources fails due to init container memory"
            (
                "init container memory",
                Default::default(),
                pod_with(&[cpu_mem("1m", "1")], &[cpu_mem("1m", "3")]),
                pod_with(&[cpu_mem("9m", "19")], &[]),
                unschedulable(&["Insufficient memory"]),
            ),
            // upstream TestEnoughRequests "init container fits because it's the max, not sum, of containers and init containers"
            (
                "init container max not sum",
                Default::default(),
                pod_with(&[cpu_mem("1m", "1")], &[cpu_mem("1m", "1")]),
                pod_with(&[cpu_mem("9m", "19")], &[]),
                Status::success(),
            ),
            // upstream TestEnoughRequests "both resources fit"
            (
                "both resources fit",
                Default::default(),
                pod_with(&[cpu_mem("1m", "1")], &[]),
                pod_with(&[cpu_mem("5m", "5")], &[]),
                Status::success(),
            ),
            // upstream TestEnoughRequests "one resource memory fits"
            (
                "one resource memory fits",
                Default::default(),
                pod_with(&[cpu_mem("2m", "1")], &[]),
                pod_with(&[cpu_mem("9m", "5")], &[]),
                unschedulable(&["Insufficient cpu"]),
            ),
            // upstream TestEnoughRequests "one resource cpu fits"
            (
                "one resource cpu fits",
                Default::default(),
                pod_with(&[cpu_mem("1m", "2")], &[]),
                pod_with(&[cpu_mem("5m", "19")], &[]),
                unschedulable(&["Insufficient memory"]),
            ),
            // upstream TestEnoughRequests "equal edge case"
            (
                "equal edge case",
                Default::default(),
                pod_with(&[cpu_mem("5m", "1")], &[]),
                pod_with(&[cpu_mem("5m", "19")], &[]),
                Status::success(),
            ),
            // upstream TestEnoughRequests "equal edge case for init container"
            (
                "equal edge case for init container",
                Default::default(),
                pod_with(&[cpu_mem("4m", "1")], &[cpu_mem("5m", "1")]),
                pod_with(&[cpu_mem("5m", "19")], &[]),
                Status::success(),
            ),
            // upstream TestEnoughRequests "extended resource fits"
            (
                "extended resource fits",
                Default::default(),
                pod_with(&[req(&[("example.com/aaa", "1")])], &[]),
                pod_with(&[vec![]], &[]),
                Status::success(),
            ),
            // upstream TestEnoughRequests "extended resource capacity enforced"
            (
                "extended resource capacity enforced",
                Default::default(),
                pod_with(
                    &[req(&[
                        ("cpu", "1m"),
                        ("memory", "1"),
                        ("example.com/aaa", "10"),
                    ])],
                    &[],
                ),
                pod_with(&[req(&[("example.com/aaa", "0")])], &[]),
                unresolvable(&["Insufficient example.com/aaa"]),
            ),
            // upstream TestEnoughRequests "extended resource allocatable enforced for init container"
            (
                "extended resource allocatable enforced for init container",
                Default::default(),
                pod_with(
                    &[vec![]],
                    &[req(&[
                        ("cpu", "1m"),
                        ("memory", "1"),
                        ("example.com/aaa", "1"),
                    ])],
                ),
                pod_with(&[req(&[("example.com/aaa", "5")])], &[]),
                unschedulable(&["Insufficient example.com/aaa"]),
            ),
            // upstream TestEnoughRequests "extended resource allocatable enforced for multiple containers"
            (
                "extended resource for multiple containers",
                Default::default(),
                pod_with(
                    &[
                        req(&[("cpu", "1m"), ("memory", "1"), ("example.com/aaa", "3")]),
                        req(&[("cpu", "1m"), ("memory", "1"), ("example.com/aaa", "3")]),
                    ],
                    &[],
                ),
                pod_with(&[req(&[("example.com/aaa", "2")])], &[]),
                unresolvable(&["Insufficient example.com/aaa"]),
            ),
            // upstream TestEnoughRequests "extended resource allocatable admits multiple init containers"
            (
                "extended resource admits multiple init containers",
                Default::default(),
                pod_with(
                    &[vec![]],
                    &[
                        req(&[("cpu", "1m"), ("memory", "1"), ("example.com/aaa", "3")]),
                        req(&[("cpu", "1m"), ("memory", "1"), ("example.com/aaa", "3")]),
                    ],
                ),
                pod_with(&[req(&[("example.com/aaa", "2")])], &[]),
                Status::success(),
            ),
            // upstream TestEnoughRequests "extended resource allocatable enforced for unknown resource"
            (
                "unknown extended resource",
                Default::default(),
                pod_with(
                    &[req(&[
                        ("cpu", "1m"),
                        ("memory", "1"),
                        ("example.com/bbb", "1"),
                    ])],
                    &[],
                ),
                pod_with(&[vec![]], &[]),
                unresolvable(&["Insufficient example.com/bbb"]),
            ),
            // upstream TestEnoughRequests "kubernetes.io resource capacity enforced"
            (
                "kubernetes.io resource capacity enforced",
                Default::default(),
                pod_with(
                    &[req(&[
                        ("cpu", "1m"),
                        ("memory", "1"),
                        ("kubernetes.io/something", "10"),
                    ])],
                    &[],
                ),
                pod_with(&[vec![]], &[]),
                unresolvable(&["Insufficient kubernetes.io/something"]),
            ),
            // upstream TestEnoughRequests "hugepages resource capacity enforced"
            (
                "hugepages resource capacity enforced",
                Default::default(),
                pod_with(
                    &[req(&[
                        ("cpu", "1m"),
                        ("memory", "1"),
                        ("hugepages-2Mi", "10"),
                    ])],
                    &[],
                ),
                pod_with(&[req(&[("hugepages-2Mi", "0")])], &[]),
                unresolvable(&["Insufficient hugepages-2Mi"]),
            ),
            // upstream TestEnoughRequests "skip checking ignored extended resource"
            (
                "skip checking ignored extended resource",
                ignore(&["example.com/bbb"], &[]),
                pod_with(
                    &[req(&[
                        ("cpu", "1m"),
                        ("memory", "1"),
                        ("example.com/bbb", "1"),
                    ])],
                    &[],
                ),
                pod_with(&[vec![]], &[]),
                Status::success(),
            ),
            // upstream TestEnoughRequests "resources + pod overhead fits"
            (
                "resources + pod overhead fits",
                Default::default(),
                with_overhead(
                    pod_with(&[cpu_mem("1m", "1")], &[]),
                    &[("cpu", "3m"), ("memory", "13")],
                ),
                pod_with(&[cpu_mem("5m", "5")], &[]),
                Status::success(),
            ),
            // upstream TestEnoughRequests "requests + overhead does not fit for memory"
            (
                "requests + overhead does not fit for memory",
                Default::default(),
                with_overhead(
                    pod_with(&[cpu_mem("1m", "1")], &[]),
                    &[("cpu", "1m"), ("memory", "15")],
                ),
                pod_with(&[cpu_mem("5m", "5")], &[]),
                unschedulable(&["Insufficient memory"]),
            ),
            // upstream TestEnoughRequests "skip checking ignored extended resource via resource groups"
            (
                "skip ignored group, kubernetes.io still checked",
                ignore(&[], &["example.com"]),
                pod_with(
                    &[req(&[
                        ("cpu", "1m"),
                        ("memory", "1"),
                        ("example.com/bbb", "1"),
                        ("kubernetes.io/something", "1"),
                    ])],
                    &[],
                ),
                pod_with(&[vec![]], &[]),
                unresolvable(&["Insufficient kubernetes.io/something"]),
            ),
            // upstream TestEnoughRequests "skip checking extended resource request with quantity zero via resource groups"
            (
                "zero extended request is not checked",
                Default::default(),
                pod_with(
                    &[req(&[
                        ("cpu", "1m"),
                        ("memory", "1"),
                        ("example.com/aaa", "0"),
                    ])],
                    &[],
                ),
                pod_with(&[req(&[("example.com/aaa", "6")])], &[]),
                Status::success(),
            ),
            // upstream TestEnoughRequests "skip checking resource request with quantity zero"
            (
                "zero cpu and memory requests are not checked",
                Default::default(),
                pod_with(&[req(&[("example.com/aaa", "1")])], &[]),
                pod_with(
                    &[req(&[
                        ("cpu", "20m"),
                        ("memory", "30"),
                        ("example.com/aaa", "1"),
                    ])],
                    &[],
                ),
                Status::success(),
            ),
            // upstream TestEnoughRequests "both pod-level and container-level resources fit"
            (
                "pod-level and container requests fit",
                Default::default(),
                with_pod_requests(
                    pod_with(&[cpu_mem("1m", "1")], &[]),
                    &[("cpu", "1m"), ("memory", "2")],
                ),
                pod_with(&[cpu_mem("5m", "5")], &[]),
                Status::success(),
            ),
            // upstream TestEnoughRequests "pod-level cpu resource not fit": 7m is short on the
            // node but within its 10m, so preemption could still help
            (
                "pod-level cpu does not fit",
                Default::default(),
                with_pod_requests(
                    pod_with(&[cpu_mem("1m", "1")], &[]),
                    &[("cpu", "7m"), ("memory", "2")],
                ),
                pod_with(&[cpu_mem("5m", "5")], &[]),
                unschedulable(&["Insufficient cpu"]),
            ),
            // upstream TestEnoughRequests "pod-level memory resource not fit"
            (
                "pod-level memory does not fit",
                Default::default(),
                with_pod_requests(
                    pod_with(&[cpu_mem("1m", "1")], &[]),
                    &[("cpu", "3m"), ("memory", "2")],
                ),
                pod_with(&[cpu_mem("5m", "19")], &[]),
                unschedulable(&["Insufficient memory"]),
            ),
            // upstream TestEnoughRequests "pod-level hugepages resource fit"
            (
                "pod-level hugepages fit",
                Default::default(),
                with_pod_requests(
                    pod_with(&[vec![]], &[]),
                    &[("cpu", "3m"), ("memory", "2"), ("hugepages-2Mi", "5")],
                ),
                pod_with(&[vec![]], &[]),
                Status::success(),
            ),
            // upstream TestEnoughRequests "both pod-level and container-level hugepages resource fit"
            (
                "pod-level and container hugepages fit",
                Default::default(),
                with_pod_requests(
                    pod_with(
                        &[req(&[
                            ("cpu", "1m"),
                            ("memory", "1"),
                            ("hugepages-2Mi", "3"),
                        ])],
                        &[],
                    ),
                    &[("cpu", "3m"), ("memory", "2"), ("hugepages-2Mi", "5")],
                ),
                pod_with(&[vec![]], &[]),
                Status::success(),
            ),
            // upstream TestEnoughRequests "pod-level hugepages resource not fit": 10 > the
            // node's 5
            (
                "pod-level hugepages exceed allocatable",
                Default::default(),
                with_pod_requests(
                    pod_with(&[vec![]], &[]),
                    &[("cpu", "3m"), ("memory", "2"), ("hugepages-2Mi", "10")],
                ),
                pod_with(&[vec![]], &[]),
                unresolvable(&["Insufficient hugepages-2Mi"]),
            ),
            // upstream TestEnoughRequests "one pod-level cpu resource fits and all init and
            // non-init containers resources fit"
            (
                "pod-level requests with an init container",
                Default::default(),
                with_pod_requests(
                    pod_with(&[cpu_mem("1m", "1")], &[cpu_mem("1m", "1")]),
                    &[("cpu", "3m"), ("memory", "2")],
                ),
                pod_with(&[cpu_mem("5m", "19")], &[]),
                unschedulable(&["Insufficient memory"]),
            ),
        ];
        for (name, args, pod, existing, want) in cases {
            assert_eq!(
                run_filter(args, &pod, NODE, &[existing]),
                want,
                "case {name}"
            );
        }
    }

    #[test]
    fn not_enough_pods_matches_upstream() {
        // upstream TestNotEnoughRequests: the node allows one pod and already runs one.
        let node: &[(&str, &str)] = &[("cpu", "10m"), ("memory", "20"), ("pods", "1")];
        let cpu_mem =
            |cpu: &str, mem: &str| vec![("cpu", cpu.to_string()), ("memory", mem.to_string())];
        let cases = vec![
            // upstream "even without specified resources, predicate fails when there's no space for additional pod"
            (
                "no requests, no pod slot",
                pod_with(&[], &[]),
                pod_with(&[cpu_mem("10m", "20")], &[]),
            ),
            // upstream "even if both resources fit, predicate fails when there's no space for additional pod"
            (
                "resources fit, no pod slot",
                pod_with(&[cpu_mem("1m", "1")], &[]),
                pod_with(&[cpu_mem("5m", "5")], &[]),
            ),
            // upstream "even for equal edge case, predicate fails when there's no space for additional pod due to init container"
            (
                "init container edge, no pod slot",
                pod_with(&[cpu_mem("5m", "1")], &[cpu_mem("5m", "1")]),
                pod_with(&[cpu_mem("5m", "19")], &[]),
            ),
        ];
        for (name, pod, existing) in cases {
            assert_eq!(
                run_filter(Default::default(), &pod, node, &[existing]),
                unschedulable(&["Too many pods"]),
                "case {name}"
            );
        }
    }

    #[test]
    fn storage_requests_match_upstream() {
        let cases = vec![
            // upstream TestStorageRequests "empty storage requested, and pod fits"
            (
                "empty storage requested",
                pod_with(&[req(&[("cpu", "1m"), ("memory", "1")])], &[]),
                pod_with(&[req(&[("cpu", "2m"), ("memory", "10")])], &[]),
                Status::success(),
            ),
            // upstream TestStorageRequests "storage ephemeral local storage request exceeds allocatable"
            (
                "ephemeral storage exceeds allocatable",
                pod_with(&[req(&[("ephemeral-storage", "25")])], &[]),
                pod_with(&[req(&[("cpu", "2m"), ("memory", "2")])], &[]),
                unresolvable(&["Insufficient ephemeral-storage"]),
            ),
            // upstream TestStorageRequests "pod fits"
            (
                "ephemeral storage fits",
                pod_with(&[req(&[("ephemeral-storage", "10")])], &[]),
                pod_with(&[req(&[("cpu", "2m"), ("memory", "2")])], &[]),
                Status::success(),
            ),
        ];
        for (name, pod, existing, want) in cases {
            assert_eq!(
                run_filter(Default::default(), &pod, NODE, &[existing]),
                want,
                "case {name}"
            );
        }
    }

    #[test]
    fn filter_without_pre_filter_is_an_error() {
        // upstream TestPreFilterDisabled
        let plugin = NodeResourcesFit::new(Default::default());
        let pod = pod_info(pod_with(&[], &[]));
        let node = node_info(&make_node("node", NODE), &[]);
        let status = plugin.filter(&CycleState::new(), &pod, &node);
        assert_eq!(status.code(), Code::Error, "{status}");
    }
}
