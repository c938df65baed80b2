//! QOSSort: a QueueSort that orders by pod priority (higher first), then by QoS class
//! (Guaranteed, then Burstable, then BestEffort), then by the time the pod was queued
//! (earlier first).
//!
//! The QoS class is upstream's `GetPodQOS` (`pkg/apis/core/helper/qos`): `status.qosClass`
//! when the kubelet/API server has set it, else computed from the pod's resources:
//!
//! - Pod-level resources (`spec.resources`) are used instead of the containers' when they
//!   name cpu, memory or a hugepages resource (upstream with `PodLevelResources` and
//!   `PodLevelResourcesFixKubeletQOSClass`); an empty `spec.resources` falls back to the
//!   containers.
//! - Otherwise every container and init container counts (ephemeral containers cannot set
//!   resources). Only cpu and memory, and only quantities above zero, count.
//! - BestEffort: no cpu/memory request or limit anywhere. Guaranteed: every container (or
//!   the pod level, when used) has cpu and memory limits, and the summed requests equal the
//!   summed limits for each resource. Otherwise Burstable.
//!
//! One deliberate difference from `ComputePodQOS` on raw objects: a missing request
//! defaults to the limit, as the API server's defaulting does before any pod reaches a
//! scheduler. Quantities are compared at milli precision (`MilliValue`), and an
//! unparseable quantity counts as absent (PodInfo construction rejects such pods anyway).
//!
//! `less` computes both classes on every comparison without allocating: it walks the
//! containers' cpu/memory entries and parses them in place.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::cluster::parse_milli_value;
use crate::framework::{Handle, NoArgs, PluginError, QueueSortPlugin, QueuedPodInfo};

/// A pod's Kubernetes QoS class (`v1.PodQOSClass`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QosClass {
    Guaranteed,
    Burstable,
    BestEffort,
}

impl QosClass {
    /// Queue rank: lower goes first (Guaranteed 0, Burstable 1, BestEffort 2).
    pub fn rank(self) -> u8 {
        match self {
            QosClass::Guaranteed => 0,
            QosClass::Burstable => 1,
            QosClass::BestEffort => 2,
        }
    }

    /// The `status.qosClass` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            QosClass::Guaranteed => "Guaranteed",
            QosClass::Burstable => "Burstable",
            QosClass::BestEffort => "BestEffort",
        }
    }

    /// Parses a `status.qosClass` value; `None` for empty or unknown values.
    pub fn parse(s: &str) -> Option<QosClass> {
        match s {
            "Guaranteed" => Some(QosClass::Guaranteed),
            "Burstable" => Some(QosClass::Burstable),
            "BestEffort" => Some(QosClass::BestEffort),
            _ => None,
        }
    }
}

impl std::fmt::Display for QosClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The QoS-relevant resources, in the order the sums are kept.
const QOS_RESOURCES: [&str; 2] = ["cpu", "memory"];

/// Upstream `GetPodQOS`: `status.qosClass` when set (and a known value), else computed
/// from the spec as described in the module docs. Does not allocate for valid pods.
pub fn qos_class(pod: &Pod) -> QosClass {
    if let Some(class) = pod
        .status
        .as_ref()
        .and_then(|s| s.qos_class.as_deref())
        .and_then(QosClass::parse)
    {
        return class;
    }
    compute_qos_class(pod)
}

/// Running sums of one pod's cpu/memory requests and limits (milli units).
#[derive(Default)]
struct Totals {
    requests: [Option<i128>; 2],
    limits: [Option<i128>; 2],
    guaranteed: bool,
}

impl Totals {
    /// Adds one requirements block (a container's, or the pod level's). A block without
    /// positive cpu and memory limits rules out Guaranteed.
    fn add(&mut self, resources: Option<&ResourceRequirements>) {
        let requests = resources.and_then(|r| r.requests.as_ref());
        let limits = resources.and_then(|r| r.limits.as_ref());
        for (i, name) in QOS_RESOURCES.iter().enumerate() {
            let limit = positive(limits, name);
            // API-server defaulting: a missing request takes the limit's value.
            let request = match requests.and_then(|r| r.get(*name)) {
                Some(q) => positive_quantity(name, q),
                None => limit,
            };
            if let Some(v) = request {
                *self.requests[i].get_or_insert(0) += v;
            }
            match limit {
                Some(v) => *self.limits[i].get_or_insert(0) += v,
                None => self.guaranteed = false,
            }
        }
    }

    fn class(&self) -> QosClass {
        if self
            .requests
            .iter()
            .chain(&self.limits)
            .all(Option::is_none)
        {
            return QosClass::BestEffort;
        }
        // Every requested resource has an equal limit, and no resource is limited
        // without being requested (upstream: `len(requests) == len(limits)`).
        let matched = self
            .requests
            .iter()
            .zip(&self.limits)
            .all(|(req, lim)| req == lim);
        if self.guaranteed && matched {
            QosClass::Guaranteed
        } else {
            QosClass::Burstable
        }
    }
}

fn positive(list: Option<&BTreeMap<String, Quantity>>, name: &str) -> Option<i128> {
    list.and_then(|l| l.get(name))
        .and_then(|q| positive_quantity(name, q))
}

fn positive_quantity(name: &str, q: &Quantity) -> Option<i128> {
    parse_milli_value(name, q)
        .ok()
        .map(i128::from)
        .filter(|v| *v > 0)
}

/// Upstream `isPodLevelResourcesSet`: pod-level requests or limits name a resource that
/// pod-level resources support (cpu, memory, hugepages-*), whatever the quantity.
fn pod_level_resources_set(resources: &ResourceRequirements) -> bool {
    let supported =
        |name: &String| name == "cpu" || name == "memory" || name.starts_with("hugepages-");
    let names = |list: &Option<BTreeMap<String, Quantity>>| {
        list.as_ref().is_some_and(|l| l.keys().any(supported))
    };
    names(&resources.requests) || names(&resources.limits)
}

/// Upstream `ComputePodQOS`, ignoring `status.qosClass`.
pub fn compute_qos_class(pod: &Pod) -> QosClass {
    let mut totals = Totals {
        guaranteed: true,
        ..Totals::default()
    };
    let Some(spec) = pod.spec.as_ref() else {
        return totals.class();
    };
    match spec.resources.as_ref() {
        Some(pod_level) if pod_level_resources_set(pod_level) => {
            totals.add(Some(pod_level));
        }
        _ => {
            let init = spec.init_containers.iter().flatten();
            for container in spec.containers.iter().chain(init) {
                totals.add(container.resources.as_ref());
            }
        }
    }
    totals.class()
}

/// The QOSSort plugin. Stateless.
#[derive(Debug, Clone, Copy, Default)]
pub struct QosSort;

crate::plugin! {
    QosSort {
        name: "QOSSort",
        points: [QueueSort],
    }

    impl PluginFactory {
        const DESCRIPTION: &'static str = "Orders the scheduling queue: higher pod priority first, then QoS class (Guaranteed, Burstable, BestEffort), then the pod queued earlier.";
        type Args = NoArgs;

        fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
            Ok(QosSort)
        }
    }
}

impl QueueSortPlugin for QosSort {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        let (pa, pb) = (a.pod_info.priority(), b.pod_info.priority());
        if pa != pb {
            return pa > pb;
        }
        let qa = qos_class(&a.pod_info.pod).rank();
        let qb = qos_class(&b.pod_info.pod).rank();
        if qa != qb {
            return qa < qb;
        }
        a.timestamp < b.timestamp
    }
}

#[cfg(test)]
mod tests {
    use crate::framework::{ExtensionPoint, Plugin, PluginFactory};
    use std::sync::Arc;
    use std::time::Duration;

    use k8s_openapi::api::core::v1::{Container, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use std::time::Instant;

    use super::*;
    use crate::cluster::PodInfo;
    use crate::testing::{PodWrapper, make_pod};

    fn list(items: &[(&str, &str)]) -> Option<BTreeMap<String, Quantity>> {
        (!items.is_empty()).then(|| {
            items
                .iter()
                .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                .collect()
        })
    }

    /// Resource requirements from (requests, limits).
    fn res(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> ResourceRequirements {
        ResourceRequirements {
            requests: list(requests),
            limits: list(limits),
            ..ResourceRequirements::default()
        }
    }

    fn container(name: &str, resources: ResourceRequirements) -> Container {
        Container {
            name: name.into(),
            resources: Some(resources),
            ..Container::default()
        }
    }

    fn pod_with(containers: Vec<Container>) -> Pod {
        with_containers(make_pod(), containers)
    }

    fn pod_level(resources: ResourceRequirements, containers: Vec<Container>) -> Pod {
        with_containers(make_pod().pod_resources(resources), containers)
    }

    fn with_containers(pod: PodWrapper, containers: Vec<Container>) -> Pod {
        containers
            .into_iter()
            .fold(pod, PodWrapper::container)
            .obj()
    }

    fn with_status(class: &str) -> Pod {
        Pod {
            status: Some(PodStatus {
                qos_class: Some(class.into()),
                ..PodStatus::default()
            }),
            ..Pod::default()
        }
    }

    const ONE: &[(&str, &str)] = &[("cpu", "1"), ("memory", "1Gi")];
    const SMALL: &[(&str, &str)] = &[("cpu", "100m"), ("memory", "100Mi")];
    const ZERO: &[(&str, &str)] = &[("cpu", "0"), ("memory", "0")];

    #[test]
    fn qos_class_matches_upstream_get_pod_qos_table() {
        use QosClass::*;
        // Upstream `TestGetPodQOS` (staging/src/k8s.io/kubectl/pkg/util/qos/qos_test.go),
        // in order, with the same names.
        let cases: Vec<(&str, Pod, QosClass)> = vec![
            (
                "guaranteed pod with status",
                with_status("Guaranteed"),
                Guaranteed,
            ),
            (
                "burstable pod with status",
                with_status("Burstable"),
                Burstable,
            ),
            (
                "besteffort pod with status",
                with_status("BestEffort"),
                BestEffort,
            ),
            (
                "guaranteed pod without status",
                pod_with(vec![container("container1", res(ONE, ONE))]),
                Guaranteed,
            ),
            (
                "guaranteed pod with two containers",
                pod_with(vec![
                    container("container1", res(ONE, ONE)),
                    container("container2", res(ONE, ONE)),
                ]),
                Guaranteed,
            ),
            (
                "burstable pod without status",
                pod_with(vec![container(
                    "container1",
                    res(&[("cpu", "100m"), ("memory", "1Gi")], ONE),
                )]),
                Burstable,
            ),
            (
                "burstable pod with two containers",
                pod_with(vec![
                    container("container1", res(ONE, ONE)),
                    container(
                        "container2",
                        res(&[("cpu", "100m"), ("memory", "1Gi")], ONE),
                    ),
                ]),
                Burstable,
            ),
            (
                "besteffort pod without status",
                pod_with(vec![container("container1", res(&[], &[]))]),
                BestEffort,
            ),
            (
                "empty pod level resources should fallback to containers",
                pod_level(res(&[], &[]), vec![container("container1", res(ONE, ONE))]),
                Guaranteed,
            ),
            (
                "nil pod level resources should fallback to containers",
                pod_with(vec![container("container1", res(ONE, ONE))]),
                Guaranteed,
            ),
            (
                "zero pod level resources should not fallback to containers",
                pod_level(
                    res(ZERO, ZERO),
                    vec![container("container1", res(ONE, ONE))],
                ),
                BestEffort,
            ),
            (
                "guaranteed with pod level resources",
                pod_level(
                    res(ONE, ONE),
                    vec![container("container1", res(SMALL, &[]))],
                ),
                Guaranteed,
            ),
            (
                "burstable with pod level resources",
                pod_level(
                    res(SMALL, ONE),
                    vec![container("container1", res(ONE, ONE))],
                ),
                Burstable,
            ),
            (
                "burstable with pod level requests only",
                pod_level(
                    res(&[("cpu", "100m"), ("memory", "1Gi")], &[]),
                    vec![container("container1", res(ONE, ONE))],
                ),
                Burstable,
            ),
            (
                "container with zero requests limits",
                pod_with(vec![container("container1", res(ZERO, ZERO))]),
                BestEffort,
            ),
        ];
        for (name, pod, want) in cases {
            assert_eq!(qos_class(&pod), want, "case {name}");
        }
    }

    #[test]
    fn qos_class_beyond_the_upstream_table() {
        use QosClass::*;
        let mut init = pod_with(vec![container("app", res(ONE, ONE))]);
        init.spec.as_mut().unwrap().init_containers = Some(vec![container("init", res(&[], &[]))]);
        let mut init_burstable = pod_with(vec![]);
        init_burstable.spec.as_mut().unwrap().init_containers =
            Some(vec![container("init", res(SMALL, &[]))]);
        let cases: Vec<(&str, Pod, QosClass)> = vec![
            ("no spec", Pod::default(), BestEffort),
            (
                "requests default to limits",
                pod_with(vec![container("c", res(&[], ONE))]),
                Guaranteed,
            ),
            (
                "an init container without limits breaks Guaranteed",
                init,
                Burstable,
            ),
            (
                "an init container's requests count",
                init_burstable,
                Burstable,
            ),
            (
                "only a memory limit",
                pod_with(vec![container("c", res(&[], &[("memory", "1Gi")]))]),
                Burstable,
            ),
            (
                "one container guaranteed, one best-effort",
                pod_with(vec![
                    container("a", res(ONE, ONE)),
                    container("b", res(&[], &[])),
                ]),
                Burstable,
            ),
            (
                "other resources do not count",
                pod_with(vec![container(
                    "c",
                    res(&[("ephemeral-storage", "1Gi")], &[("nvidia.com/gpu", "1")]),
                )]),
                BestEffort,
            ),
            (
                "equal amounts in different units",
                pod_with(vec![container(
                    "c",
                    res(
                        &[("cpu", "1000m"), ("memory", "1024Mi")],
                        &[("cpu", "1"), ("memory", "1Gi")],
                    ),
                )]),
                Guaranteed,
            ),
            (
                "unknown status falls back to the spec",
                {
                    let mut p = pod_with(vec![container("c", res(ONE, ONE))]);
                    p.status = with_status("Platinum").status;
                    p
                },
                Guaranteed,
            ),
            (
                "status wins over the spec",
                {
                    let mut p = pod_with(vec![container("c", res(ONE, ONE))]);
                    p.status = with_status("BestEffort").status;
                    p
                },
                BestEffort,
            ),
        ];
        for (name, pod, want) in cases {
            assert_eq!(qos_class(&pod), want, "case {name}");
        }
    }

    fn queued(name: &str, priority: i32, qos: QosClass, timestamp: Instant) -> QueuedPodInfo {
        let resources = match qos {
            QosClass::Guaranteed => res(ONE, ONE),
            QosClass::Burstable => res(SMALL, ONE),
            QosClass::BestEffort => res(&[], &[]),
        };
        let mut pod = pod_with(vec![container("c", resources)]);
        pod.metadata = ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        };
        pod.spec.as_mut().unwrap().priority = Some(priority);
        assert_eq!(qos_class(&pod), qos, "test pod {name}");
        let info = PodInfo::new(pod).expect("test pod is valid");
        QueuedPodInfo::new(Arc::new(info), timestamp)
    }

    #[test]
    fn registry_points_match_the_accessors() {
        assert!(QosSort.as_queue_sort().is_some());
        assert!(QosSort.as_pre_enqueue().is_none());
        assert_eq!(QosSort::POINTS, &[ExtensionPoint::QueueSort]);
        assert_eq!(QosSort.name(), "QOSSort");
    }

    #[test]
    fn less_table() {
        use QosClass::*;
        let t1 = Instant::now();
        let t2 = t1 + Duration::from_secs(1);
        let cases = [
            (
                "higher priority wins over a better QoS class",
                (100, BestEffort, t2),
                (10, Guaranteed, t1),
                true,
            ),
            (
                "lower priority loses despite a better QoS class",
                (10, Guaranteed, t1),
                (100, BestEffort, t2),
                false,
            ),
            (
                "same priority: Guaranteed before Burstable",
                (10, Guaranteed, t2),
                (10, Burstable, t1),
                true,
            ),
            (
                "same priority: Burstable after Guaranteed",
                (10, Burstable, t1),
                (10, Guaranteed, t2),
                false,
            ),
            (
                "same priority: Burstable before BestEffort",
                (10, Burstable, t2),
                (10, BestEffort, t1),
                true,
            ),
            (
                "same priority: Guaranteed before BestEffort",
                (10, Guaranteed, t2),
                (10, BestEffort, t1),
                true,
            ),
            (
                "same priority and class: earlier first",
                (10, Burstable, t1),
                (10, Burstable, t2),
                true,
            ),
            (
                "same priority and class: later second",
                (10, Burstable, t2),
                (10, Burstable, t1),
                false,
            ),
            (
                "identical keys are not less (strict order)",
                (10, BestEffort, t1),
                (10, BestEffort, t1),
                false,
            ),
        ];
        for (name, (p1, q1, ts1), (p2, q2, ts2), want) in cases {
            let got = QosSort.less(&queued("p1", p1, q1, ts1), &queued("p2", p2, q2, ts2));
            assert_eq!(got, want, "case {name}");
        }
    }

    #[test]
    fn orders_a_mixed_queue() {
        use QosClass::*;
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        // Arrival order a..f.
        let arrivals = || {
            [
                queued("a-besteffort-p0", 0, BestEffort, at(0)),
                queued("b-burstable-p0", 0, Burstable, at(1)),
                queued("c-guaranteed-p0", 0, Guaranteed, at(2)),
                queued("d-besteffort-p10", 10, BestEffort, at(3)),
                queued("e-burstable-p0-late", 0, Burstable, at(4)),
                queued("f-guaranteed-p10", 10, Guaranteed, at(5)),
            ]
        };
        let want = [
            "f-guaranteed-p10",
            "d-besteffort-p10",
            "c-guaranteed-p0",
            "b-burstable-p0",
            "e-burstable-p0-late",
            "a-besteffort-p0",
        ];
        // The input order must not matter: sort the arrival order and its reverse.
        for reversed in [false, true] {
            let mut queue = arrivals();
            if reversed {
                queue.reverse();
            }
            queue.sort_by(|x, y| {
                if QosSort.less(x, y) {
                    std::cmp::Ordering::Less
                } else if QosSort.less(y, x) {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            });
            let order: Vec<&str> = queue.iter().map(|q| q.pod_info.name()).collect();
            assert_eq!(order, want, "reversed input: {reversed}");
        }
    }
}
