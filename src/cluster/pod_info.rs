//! A pod plus what the scheduler computes once per pod rather than once per node.

use std::any::Any;
use std::sync::{Arc, OnceLock};

use k8s_openapi::api::core::v1::{ContainerPort, Pod, PodSpec};
use k8s_openapi::jiff::Timestamp;

use super::pod_requests::{SchedulerRequests, is_restartable, scheduler_requests};
use super::{QuantityError, Resource};

const DEFAULT_NAMESPACE: &str = "default";
const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// A value [`PodInfo::memo`] derived from a pod: the one the pod keeps, or one derived
/// for this call only.
#[derive(Debug)]
pub enum Memo<'a, T> {
    Kept(&'a T),
    Fresh(T),
}

impl<T> std::ops::Deref for Memo<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        match self {
            Memo::Kept(value) => value,
            Memo::Fresh(value) => value,
        }
    }
}

/// A pod and its precomputed requests.
#[derive(Debug, Clone)]
pub struct PodInfo {
    pub pod: Arc<Pod>,
    key: String,
    /// What NodeResourcesFit's Filter compares with a node's free room: upstream's
    /// `PodRequests` of the spec alone (pod-level requests and overhead included, no
    /// resize status), as `computePodResourceRequest` asks for it.
    pub filter_requests: Resource,
    /// What the pod takes on its node: `PodRequests` with an in-place resize's status
    /// (the larger of desired, allocated and actuated), as upstream's node accounting
    /// and the scorers that use plain requests ask for it. For a pod that has not run,
    /// the same as [`Self::filter_requests`].
    pub requests: Resource,
    /// [`Self::requests`] with 100m cpu / 200Mi memory for each container that requests
    /// none, as a node adds up its pods' non-zero requests. With pod-level requests only
    /// cpu or memory the requests do not name at all gets the default.
    pub non_zero_requests: Resource,
    /// What NodeResourcesFit's scorer takes the incoming pod to request: the
    /// containers' spec requests with 100m cpu / 200Mi memory for each container that
    /// requests none, without pod-level requests and without an in-place resize's
    /// status, as upstream 1.37's scorer (its pod-level and resize features are never
    /// turned on in `NewFit`).
    pub score_non_zero_requests: Resource,
    /// The images of the init and app containers, one entry per container, normalized
    /// as node image names are (`:latest` added when untagged), for ImageLocality.
    pub images: Vec<String>,
    /// What a plugin derived from the pod's spec once, for every later cycle to reuse
    /// (see [`PodInfo::memo`]).
    memo: OnceLock<Arc<dyn Any + Send + Sync>>,
}

impl PodInfo {
    /// The pod is shared, not copied: the operator's loop keeps the same object.
    pub fn new(pod: impl Into<Arc<Pod>>) -> Result<Self, QuantityError> {
        let pod = pod.into();
        let SchedulerRequests {
            filter,
            requests,
            non_zero,
            score_non_zero,
        } = scheduler_requests(&pod)?;
        let images = pod
            .spec
            .iter()
            .flat_map(|spec| {
                spec.init_containers
                    .iter()
                    .flatten()
                    .chain(spec.containers.iter())
            })
            .map(|c| {
                super::node_info::normalized_image_name(c.image.as_deref().unwrap_or_default())
            })
            .collect();
        Ok(PodInfo {
            key: pod_key(&pod),
            pod,
            filter_requests: filter,
            requests,
            non_zero_requests: non_zero,
            score_non_zero_requests: score_non_zero,
            images,
            memo: OnceLock::new(),
        })
    }

    /// A copy whose pod has `spec.nodeName` set to `node`, as the cache stores an assumed
    /// pod. The requests are reused, not recomputed.
    pub fn with_node_name(&self, node: &str) -> PodInfo {
        let mut pod = Pod::clone(&self.pod);
        pod.spec.get_or_insert_with(Default::default).node_name = Some(node.to_owned());
        PodInfo {
            pod: Arc::new(pod),
            key: self.key.clone(),
            filter_requests: self.filter_requests.clone(),
            requests: self.requests.clone(),
            non_zero_requests: self.non_zero_requests.clone(),
            score_non_zero_requests: self.score_non_zero_requests.clone(),
            images: self.images.clone(),
            // Only the node name changed: what was derived from the spec still holds.
            memo: self.memo.clone(),
        }
    }

    /// `derive(pod)`, computed once per pod and kept: upstream's `PodInfo` likewise
    /// parses affinity terms once, not in every cycle that looks at the pod. `derive`
    /// must depend on nothing but the pod. One type is kept per pod (the first one asked
    /// for); another type is derived anew each time.
    pub fn memo<T: Any + Send + Sync>(&self, derive: impl Fn(&Pod) -> T) -> Memo<'_, T> {
        let kept = self
            .memo
            .get_or_init(|| Arc::new(derive(&self.pod)) as Arc<dyn Any + Send + Sync>);
        match kept.downcast_ref::<T>() {
            Some(value) => Memo::Kept(value),
            None => Memo::Fresh(derive(&self.pod)),
        }
    }

    /// The pod's identity in the cache and queue: its UID, or `namespace/name` when it
    /// has none (pods read from YAML).
    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn name(&self) -> &str {
        self.pod.metadata.name.as_deref().unwrap_or("")
    }

    /// `metadata.namespace`, `default` when unset.
    pub fn namespace(&self) -> &str {
        namespace_of(&self.pod)
    }

    /// `spec.priority`, 0 when unset.
    pub fn priority(&self) -> i32 {
        self.spec().and_then(|s| s.priority).unwrap_or(0)
    }

    /// `spec.nodeName`, `None` when unset or empty.
    pub fn node_name(&self) -> Option<&str> {
        self.spec()
            .and_then(|s| s.node_name.as_deref())
            .filter(|n| !n.is_empty())
    }

    /// `spec.schedulerName`, `default-scheduler` when unset or empty.
    pub fn scheduler_name(&self) -> &str {
        scheduler_name(&self.pod)
    }

    /// The host ports the pod occupies on its node (upstream `GetHostPorts`).
    pub fn host_ports(&self) -> Vec<&ContainerPort> {
        host_ports(&self.pod)
    }

    fn spec(&self) -> Option<&PodSpec> {
        self.pod.spec.as_ref()
    }
}

/// `spec.schedulerName` of `pod`, `default-scheduler` when unset or empty.
pub fn scheduler_name(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.scheduler_name.as_deref())
        .filter(|n| !n.is_empty())
        .unwrap_or(DEFAULT_SCHEDULER_NAME)
}

/// The cache/queue key of a pod: its UID, or `namespace/name` when it has none.
pub fn pod_key(pod: &Pod) -> String {
    match pod.metadata.uid.as_deref() {
        Some(uid) if !uid.is_empty() => uid.to_owned(),
        _ => format!(
            "{}/{}",
            namespace_of(pod),
            pod.metadata.name.as_deref().unwrap_or("")
        ),
    }
}

fn namespace_of(pod: &Pod) -> &str {
    pod.metadata
        .namespace
        .as_deref()
        .filter(|ns| !ns.is_empty())
        .unwrap_or(DEFAULT_NAMESPACE)
}

/// Upstream `GetHostPorts`: ports with a `hostPort` of the app containers and of the
/// init containers that run for the pod's whole life (sidecars).
pub fn host_ports(pod: &Pod) -> Vec<&ContainerPort> {
    let Some(spec) = &pod.spec else {
        return Vec::new();
    };
    let sidecars = spec
        .init_containers
        .iter()
        .flatten()
        .filter(|c| is_restartable(c));
    sidecars
        .chain(&spec.containers)
        .flat_map(|c| c.ports.iter().flatten())
        .filter(|p| p.host_port.is_some_and(|port| port > 0))
        .collect()
}

/// When a pod started, for ordering: a pod without `status.startTime` counts as started
/// after every pod that has one (upstream takes "now" for it, the newest possible time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StartTime {
    At(Timestamp),
    Unknown,
}

pub fn start_time(pod: &Pod) -> StartTime {
    pod.status
        .as_ref()
        .and_then(|s| s.start_time.as_ref())
        .map_or(StartTime::Unknown, |t| StartTime::At(t.0))
}

#[cfg(test)]
pub(crate) mod tests {
    use k8s_openapi::api::core::v1::{Container, ResourceRequirements};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;
    use crate::cluster::DEFAULT_MEMORY_REQUEST;
    use crate::testing::{PodWrapper, make_pod, quantities};

    fn container(name: &str, requests: &[(&str, &str)]) -> Container {
        Container {
            name: name.to_owned(),
            resources: (!requests.is_empty()).then(|| ResourceRequirements {
                requests: Some(quantities(requests)),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn sidecar(name: &str, requests: &[(&str, &str)]) -> Container {
        Container {
            restart_policy: Some("Always".to_owned()),
            ..container(name, requests)
        }
    }

    fn pod_with(init: Vec<Container>, app: Vec<Container>, overhead: &[(&str, &str)]) -> Pod {
        let pod = init
            .into_iter()
            .fold(make_pod().name("p"), PodWrapper::init_container);
        let pod = app.into_iter().fold(pod, PodWrapper::container);
        match overhead {
            [] => pod.obj(),
            _ => pod.overhead(overhead).obj(),
        }
    }

    fn cpu(milli: i64) -> Resource {
        Resource {
            milli_cpu: milli,
            ..Default::default()
        }
    }

    #[test]
    fn requests_follow_upstream_pod_requests() {
        // Cases from upstream component-helpers TestPodResourceRequests /
        // TestPodResourceLimits (the sidecar arithmetic is the same for requests).
        let c = container;
        let s = sidecar;
        let cases: Vec<(&str, Pod, Resource)> = vec![
            (
                "larger init container wins",
                pod_with(
                    vec![c("i", &[("cpu", "4")])],
                    vec![c("a", &[("cpu", "1")])],
                    &[],
                ),
                cpu(4000),
            ),
            (
                "larger containers win",
                pod_with(
                    vec![c("i", &[("cpu", "2")])],
                    vec![c("a", &[("cpu", "2")]), c("b", &[("cpu", "3")])],
                    &[],
                ),
                cpu(5000),
            ),
            (
                "pod overhead included",
                pod_with(
                    vec![c("i", &[("cpu", "2")])],
                    vec![c("a", &[("cpu", "2")]), c("b", &[("cpu", "3")])],
                    &[("cpu", "1"), ("memory", "1Gi")],
                ),
                Resource {
                    milli_cpu: 6000,
                    memory: 1 << 30,
                    ..Default::default()
                },
            ),
            (
                "restartable init container adds to containers",
                pod_with(
                    vec![s("r1", &[("cpu", "1")])],
                    vec![c("a", &[("cpu", "1")])],
                    &[],
                ),
                cpu(2000),
            ),
            (
                "multiple restartable init containers: max(5, 3+2+1 + 1)",
                pod_with(
                    vec![
                        c("init-1", &[("cpu", "5")]),
                        s("r1", &[("cpu", "1")]),
                        s("r2", &[("cpu", "2")]),
                        s("r3", &[("cpu", "3")]),
                    ],
                    vec![c("a", &[("cpu", "1")])],
                    &[],
                ),
                cpu(7000),
            ),
            (
                "regular init after sidecars counts the sidecars started before it",
                pod_with(
                    vec![
                        c("init-1", &[("cpu", "5")]),
                        s("r1", &[("cpu", "1")]),
                        s("r2", &[("cpu", "2")]),
                        c("init-2", &[("cpu", "5")]),
                        s("r3", &[("cpu", "3")]),
                    ],
                    vec![c("a", &[("cpu", "1")])],
                    &[],
                ),
                cpu(8000),
            ),
            (
                "restartable init, init and regular",
                pod_with(
                    vec![s("r1", &[("cpu", "10")]), c("init-1", &[("cpu", "200")])],
                    vec![c("a", &[("cpu", "100")])],
                    &[],
                ),
                cpu(210_000),
            ),
            (
                "requests with overhead, limits ignored",
                pod_with(
                    vec![],
                    vec![c("a", &[("cpu", "1"), ("memory", "10")])],
                    &[("cpu", "5"), ("memory", "5")],
                ),
                Resource {
                    milli_cpu: 6000,
                    memory: 15,
                    ..Default::default()
                },
            ),
            (
                "two containers, massive init, overhead on top",
                pod_with(
                    vec![
                        c("small", &[("cpu", "1"), ("memory", "5")]),
                        c("big", &[("cpu", "40"), ("memory", "120")]),
                    ],
                    vec![
                        c("a", &[("cpu", "1"), ("memory", "5")]),
                        c("b", &[("cpu", "4"), ("memory", "12")]),
                    ],
                    &[("cpu", "3"), ("memory", "8")],
                ),
                Resource {
                    milli_cpu: 43_000,
                    memory: 128,
                    ..Default::default()
                },
            ),
            (
                "sub-milli amounts are summed before rounding",
                pod_with(
                    vec![],
                    vec![c("a", &[("cpu", "0.4m")]), c("b", &[("cpu", "0.4m")])],
                    &[],
                ),
                cpu(1),
            ),
        ];
        for (name, pod, want) in cases {
            let info = PodInfo::new(pod).expect(name);
            assert_eq!(info.requests, want, "{name}");
        }
    }

    #[test]
    fn non_zero_requests_substitute_missing_cpu_and_memory_per_container() {
        let default_mem = DEFAULT_MEMORY_REQUEST;
        let c = container;
        let cases: Vec<(&str, Pod, i64, i64)> = vec![
            (
                "no containers request anything",
                pod_with(vec![], vec![c("a", &[]), c("b", &[])], &[]),
                200,
                2 * default_mem,
            ),
            (
                "explicit zero is kept",
                pod_with(vec![], vec![c("a", &[("cpu", "0"), ("memory", "0")])], &[]),
                0,
                0,
            ),
            (
                "only cpu set",
                pod_with(vec![], vec![c("a", &[("cpu", "250m")])], &[]),
                250,
                default_mem,
            ),
            (
                "init container defaults count in the max",
                pod_with(
                    vec![c("i", &[("memory", "1Gi")])],
                    vec![c("a", &[("memory", "1Mi")])],
                    &[],
                ),
                100,
                1 << 30,
            ),
            (
                "overhead is added after defaults",
                pod_with(vec![], vec![c("a", &[])], &[("cpu", "50m")]),
                150,
                default_mem,
            ),
        ];
        for (name, pod, want_cpu, want_mem) in cases {
            let info = PodInfo::new(pod).expect(name);
            assert_eq!(info.non_zero_requests.milli_cpu, want_cpu, "{name}: cpu");
            assert_eq!(info.non_zero_requests.memory, want_mem, "{name}: memory");
        }
    }

    #[test]
    fn invalid_request_names_the_resource() {
        let pod = pod_with(vec![], vec![container("a", &[("memory", "1 GB")])], &[]);
        let err = PodInfo::new(pod).expect_err("invalid memory");
        assert_eq!(err.resource, "memory");
        assert_eq!(err.value, "1 GB");
    }

    #[test]
    fn identity_and_defaults() {
        let meta = |uid: Option<&str>, ns: Option<&str>| ObjectMeta {
            name: Some("web".to_owned()),
            namespace: ns.map(str::to_owned),
            uid: uid.map(str::to_owned),
            ..Default::default()
        };
        let cases = [
            ("uid wins", meta(Some("u-1"), Some("prod")), "u-1", "prod"),
            (
                "empty uid falls back",
                meta(Some(""), Some("prod")),
                "prod/web",
                "prod",
            ),
            (
                "namespace defaults",
                meta(None, None),
                "default/web",
                "default",
            ),
        ];
        for (name, metadata, key, namespace) in cases {
            let pod = Pod {
                metadata,
                ..Default::default()
            };
            assert_eq!(pod_key(&pod), key, "{name}");
            let info = PodInfo::new(pod).expect(name);
            assert_eq!(info.key(), key, "{name}");
            assert_eq!(info.namespace(), namespace, "{name}");
            assert_eq!(info.name(), "web", "{name}");
            assert_eq!(info.priority(), 0, "{name}");
            assert_eq!(info.node_name(), None, "{name}");
            assert_eq!(info.scheduler_name(), "default-scheduler", "{name}");
        }

        let mut pod = pod_with(vec![], vec![container("a", &[("cpu", "1")])], &[]);
        if let Some(spec) = pod.spec.as_mut() {
            spec.priority = Some(7);
            spec.node_name = Some(String::new());
            spec.scheduler_name = Some("batch".to_owned());
        }
        let info = PodInfo::new(pod).expect("valid");
        assert_eq!(info.priority(), 7);
        assert_eq!(info.node_name(), None, "empty nodeName is unassigned");
        assert_eq!(info.scheduler_name(), "batch");

        let assumed = info.with_node_name("n1");
        assert_eq!(assumed.node_name(), Some("n1"));
        assert_eq!(assumed.key(), info.key());
        assert_eq!(assumed.requests, cpu(1000));
        assert_eq!(info.node_name(), None, "the original is untouched");
    }

    #[test]
    fn host_ports_include_sidecars_but_not_plain_init_containers() {
        let with_port = |mut c: Container, port: i32| {
            c.ports = Some(vec![ContainerPort {
                container_port: 80,
                host_port: Some(port),
                ..Default::default()
            }]);
            c
        };
        let pod = pod_with(
            vec![
                with_port(container("init", &[]), 1),
                with_port(sidecar("side", &[]), 2),
            ],
            vec![
                with_port(container("a", &[]), 3),
                with_port(container("b", &[]), 0),
            ],
            &[],
        );
        let info = PodInfo::new(pod).expect("valid");
        let ports: Vec<i32> = info
            .host_ports()
            .iter()
            .filter_map(|p| p.host_port)
            .collect();
        assert_eq!(ports, vec![2, 3]);
    }

    #[test]
    fn memo_derives_once_per_pod_and_survives_assuming() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let calls = AtomicUsize::new(0);
        let names = |pod: &Pod| {
            calls.fetch_add(1, Ordering::Relaxed);
            pod.spec.as_ref().map_or(0, |s| s.containers.len())
        };
        let info = PodInfo::new(pod_with(vec![], vec![container("a", &[])], &[])).expect("pod");
        assert_eq!(*info.memo(names), 1);
        assert_eq!(*info.memo(names), 1);
        assert_eq!(calls.load(Ordering::Relaxed), 1, "derived once");
        let assumed = info.with_node_name("n1");
        assert_eq!(*assumed.memo(names), 1);
        assert_eq!(calls.load(Ordering::Relaxed), 1, "kept by the assumed copy");
        // Another type does not displace the kept one; it is derived on every call.
        assert_eq!(*info.memo(|_| "other"), "other");
        assert!(matches!(info.memo(|_| "other"), Memo::Fresh(_)));
        assert!(matches!(info.memo(names), Memo::Kept(1)));
    }
}
