//! Per-node aggregates, maintained incrementally as pods are added and removed.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use k8s_openapi::api::core::v1::Node;

use super::{PodInfo, QuantityError, Resource};

/// Upstream `DefaultBindAllHostIP`: a host port bound on every address.
const BIND_ALL_HOST_IP: &str = "0.0.0.0";
const DEFAULT_PROTOCOL: &str = "TCP";

static GENERATION: AtomicU64 = AtomicU64::new(0);

/// A process-wide, strictly increasing stamp (upstream `nextGeneration`). Two node infos
/// with the same generation hold the same state.
pub(super) fn next_generation() -> u64 {
    GENERATION.fetch_add(1, Ordering::Relaxed) + 1
}

/// Host ports in use on a node: IP -> set of (protocol, port). `0.0.0.0` conflicts with
/// every IP, as upstream's `HostPortInfo`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostPortInfo {
    ports: HashMap<String, HashSet<(String, i32)>>,
}

impl HostPortInfo {
    /// Records `port` as used. An empty IP means `0.0.0.0`, an empty protocol TCP; ports
    /// `<= 0` are ignored.
    pub fn add(&mut self, ip: &str, protocol: &str, port: i32) {
        if port <= 0 {
            return;
        }
        let (ip, protocol) = sanitize(ip, protocol);
        self.ports
            .entry(ip.to_owned())
            .or_default()
            .insert((protocol.to_owned(), port));
    }

    /// Releases `port`; an IP left without ports is dropped.
    pub fn remove(&mut self, ip: &str, protocol: &str, port: i32) {
        if port <= 0 {
            return;
        }
        let (ip, protocol) = sanitize(ip, protocol);
        if let Some(ports) = self.ports.get_mut(ip) {
            ports.remove(&(protocol.to_owned(), port));
            if ports.is_empty() {
                self.ports.remove(ip);
            }
        }
    }

    /// Whether binding `port` on `ip` would clash: `0.0.0.0` clashes with the same
    /// protocol/port on any IP, and any IP clashes with `0.0.0.0` and itself.
    pub fn check_conflict(&self, ip: &str, protocol: &str, port: i32) -> bool {
        if port <= 0 {
            return false;
        }
        let (ip, protocol) = sanitize(ip, protocol);
        let wanted = (protocol.to_owned(), port);
        if ip == BIND_ALL_HOST_IP {
            return self.ports.values().any(|ports| ports.contains(&wanted));
        }
        [BIND_ALL_HOST_IP, ip].iter().any(|key| {
            self.ports
                .get(*key)
                .is_some_and(|ports| ports.contains(&wanted))
        })
    }

    /// The number of (ip, protocol, port) entries.
    pub fn len(&self) -> usize {
        self.ports.values().map(HashSet::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn sanitize<'a>(ip: &'a str, protocol: &'a str) -> (&'a str, &'a str) {
    let ip = if ip.is_empty() { BIND_ALL_HOST_IP } else { ip };
    let protocol = if protocol.is_empty() {
        DEFAULT_PROTOCOL
    } else {
        protocol
    };
    (ip, protocol)
}

/// The size of an image and on how many nodes it is present (for ImageLocality).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageStateSummary {
    pub size: i64,
    pub num_nodes: usize,
}

/// The name an image is matched by: a name without a tag gets `:latest`, as the
/// ImageLocality plugin's `normalizedImageName` does (digests are left alone).
pub fn normalized_image_name(name: &str) -> String {
    let last_colon = name.rfind(':');
    let last_slash = name.rfind('/');
    // Go's LastIndex returns -1 when absent; `None < Some(_)` orders the same way.
    if last_colon <= last_slash {
        format!("{name}:latest")
    } else {
        name.to_owned()
    }
}

/// A node and the pods on it, with aggregates the plugins need.
#[derive(Debug, Clone, Default)]
pub struct NodeInfo {
    node: Option<Arc<Node>>,
    pub pods: PodList,
    /// Pods with any (anti-)affinity, for InterPodAffinity.
    pub pods_with_affinity: PodList,
    /// Pods with required anti-affinity, for InterPodAffinity.
    pub pods_with_required_anti_affinity: PodList,
    pub used_ports: HostPortInfo,
    /// Sum of the pods' requests.
    pub requested: Resource,
    /// Sum of the pods' requests with the non-zero CPU/memory defaults.
    pub non_zero_requested: Resource,
    /// `status.allocatable` of the node.
    pub allocatable: Resource,
    /// Images on the node, by every name they are known by (normalized).
    pub image_states: BTreeMap<String, ImageStateSummary>,
    /// Bumped on every change; the cache uses it to re-clone only changed nodes into a
    /// snapshot.
    pub generation: u64,
}

impl NodeInfo {
    /// The info of `node`, without pods. Fails when `status.allocatable` holds an invalid
    /// quantity.
    pub fn new(node: Node) -> Result<Self, QuantityError> {
        let mut info = NodeInfo::default();
        info.set_node(node)?;
        Ok(info)
    }

    /// The node, `None` for an info that only holds pods whose node is not known (yet).
    pub fn node(&self) -> Option<&Node> {
        self.node.as_deref()
    }

    /// The node's name, `""` when there is no node.
    pub fn name(&self) -> &str {
        self.node()
            .and_then(|n| n.metadata.name.as_deref())
            .unwrap_or("")
    }

    /// Replaces the node object: allocatable and image states are recomputed; pods stay.
    /// On error nothing changes.
    pub fn set_node(&mut self, node: Node) -> Result<(), QuantityError> {
        let status = node.status.as_ref();
        self.allocatable = match status.and_then(|s| s.allocatable.as_ref()) {
            Some(allocatable) => Resource::from_list(allocatable)?,
            None => Resource::default(),
        };
        let mut image_states = BTreeMap::new();
        for image in status.and_then(|s| s.images.as_ref()).into_iter().flatten() {
            for name in image.names.iter().flatten() {
                image_states
                    .entry(normalized_image_name(name))
                    .or_insert(ImageStateSummary {
                        size: image.size_bytes.unwrap_or(0),
                        num_nodes: 1,
                    });
            }
        }
        self.image_states = image_states;
        self.node = Some(Arc::new(node));
        self.touch();
        Ok(())
    }

    /// Drops the node object; the pods stay until their own removal arrives.
    pub fn remove_node(&mut self) {
        self.node = None;
        self.touch();
    }

    /// Adds a pod (upstream `AddPodInfo`): requests, non-zero requests, host ports and the
    /// affinity lists are updated.
    pub fn add_pod(&mut self, pod: Arc<PodInfo>) {
        self.requested.add(&pod.requests);
        self.non_zero_requested.add(&pod.non_zero_requests);
        for port in pod.host_ports() {
            self.used_ports.add(
                port.host_ip.as_deref().unwrap_or(""),
                port.protocol.as_deref().unwrap_or(""),
                port.host_port.unwrap_or(0),
            );
        }
        if has_affinity(&pod) {
            self.pods_with_affinity.push(pod.clone());
        }
        if has_required_anti_affinity(&pod) {
            self.pods_with_required_anti_affinity.push(pod.clone());
        }
        self.pods.push(pod);
        self.touch();
    }

    /// Removes the pod with cache key `key`, undoing [`NodeInfo::add_pod`]. Like upstream,
    /// the last pod takes the removed one's place.
    pub fn remove_pod(&mut self, key: &str) -> Option<Arc<PodInfo>> {
        // From the end: the pod removed most often is the one added last (an assumed pod
        // its bind confirms).
        let index = self.pods.rposition(|p| p.key() == key)?;
        let pod = self.pods.swap_remove(index);
        for list in [
            &mut self.pods_with_affinity,
            &mut self.pods_with_required_anti_affinity,
        ] {
            if let Some(i) = list.rposition(|p| p.key() == key) {
                list.swap_remove(i);
            }
        }
        self.requested.sub(&pod.requests);
        self.non_zero_requested.sub(&pod.non_zero_requests);
        for port in pod.host_ports() {
            self.used_ports.remove(
                port.host_ip.as_deref().unwrap_or(""),
                port.protocol.as_deref().unwrap_or(""),
                port.host_port.unwrap_or(0),
            );
        }
        self.touch();
        Some(pod)
    }

    /// Marks the info as changed.
    pub(super) fn touch(&mut self) {
        self.generation = next_generation();
    }
}

/// Pods per chunk of a [`PodList`].
const CHUNK: usize = 128;

/// A node's pods, in order: a list of shared chunks. Cloning it (every scheduling cycle
/// clones the nodes that changed into the snapshot) costs one reference count per
/// [`CHUNK`] pods rather than one per pod; a change copies the one or two chunks it
/// touches. Every chunk but the last is full.
#[derive(Debug, Clone, Default)]
pub struct PodList {
    chunks: Vec<Arc<Vec<Arc<PodInfo>>>>,
    len: usize,
}

impl PodList {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The pods in order.
    pub fn iter(&self) -> PodIter<'_> {
        self.chunks.iter().flat_map(chunk_pods)
    }

    pub fn push(&mut self, pod: Arc<PodInfo>) {
        match self.chunks.last_mut() {
            Some(chunk) if chunk.len() < CHUNK => Arc::make_mut(chunk).push(pod),
            _ => {
                let mut chunk = Vec::with_capacity(CHUNK);
                chunk.push(pod);
                self.chunks.push(Arc::new(chunk));
            }
        }
        self.len += 1;
    }

    /// The index of the last pod `matches` accepts.
    pub fn rposition(&self, matches: impl Fn(&Arc<PodInfo>) -> bool) -> Option<usize> {
        let from_end = self.iter().rev().position(matches)?;
        Some(self.len - 1 - from_end)
    }

    /// Removes the pod at `index`; the last pod takes its place (`Vec::swap_remove`).
    /// Panics when `index` is out of bounds, as `Vec::swap_remove` does.
    pub fn swap_remove(&mut self, index: usize) -> Arc<PodInfo> {
        assert!(
            index < self.len,
            "swap_remove index {index} of {}",
            self.len
        );
        let last_chunk = self.chunks.len() - 1;
        let last = Arc::make_mut(&mut self.chunks[last_chunk])
            .pop()
            .unwrap_or_else(|| unreachable!("every chunk holds a pod"));
        if self.chunks[last_chunk].is_empty() {
            self.chunks.pop();
        }
        self.len -= 1;
        if index == self.len {
            return last;
        }
        let chunk = Arc::make_mut(&mut self.chunks[index / CHUNK]);
        std::mem::replace(&mut chunk[index % CHUNK], last)
    }
}

/// The iterator of a [`PodList`]'s pods.
pub type PodIter<'a> = std::iter::FlatMap<
    std::slice::Iter<'a, Arc<Vec<Arc<PodInfo>>>>,
    std::slice::Iter<'a, Arc<PodInfo>>,
    fn(&'a Arc<Vec<Arc<PodInfo>>>) -> std::slice::Iter<'a, Arc<PodInfo>>,
>;

fn chunk_pods(chunk: &Arc<Vec<Arc<PodInfo>>>) -> std::slice::Iter<'_, Arc<PodInfo>> {
    chunk.iter()
}

impl<'a> IntoIterator for &'a PodList {
    type Item = &'a Arc<PodInfo>;
    type IntoIter = PodIter<'a>;

    fn into_iter(self) -> PodIter<'a> {
        self.iter()
    }
}

/// Upstream `podWithAffinity`: pod affinity or anti-affinity of any kind.
fn has_affinity(pod: &PodInfo) -> bool {
    let affinity = pod.pod.spec.as_ref().and_then(|s| s.affinity.as_ref());
    affinity.is_some_and(|a| a.pod_affinity.is_some() || a.pod_anti_affinity.is_some())
}

/// Upstream `podWithRequiredAntiAffinity`.
fn has_required_anti_affinity(pod: &PodInfo) -> bool {
    let affinity = pod.pod.spec.as_ref().and_then(|s| s.affinity.as_ref());
    affinity
        .and_then(|a| a.pod_anti_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .is_some_and(|terms| !terms.is_empty())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{
        Affinity, Container, ContainerPort, PodAffinity, PodAffinityTerm, PodAntiAffinity,
        ResourceRequirements,
    };

    use super::*;
    use crate::testing::{make_node, make_pod, quantities};

    /// (ip, protocol, port)
    type Port = (&'static str, &'static str, i32);

    const LOOPBACK_AND_ALL: [Port; 8] = [
        ("127.0.0.1", "TCP", 79),
        ("127.0.0.1", "UDP", 80),
        ("127.0.0.1", "TCP", 81),
        ("127.0.0.1", "TCP", 82),
        ("0.0.0.0", "TCP", 79),
        ("0.0.0.0", "UDP", 80),
        ("0.0.0.0", "TCP", 81),
        ("0.0.0.0", "TCP", 82),
    ];

    fn host_ports(added: &[Port]) -> HostPortInfo {
        let mut info = HostPortInfo::default();
        for (ip, protocol, port) in added {
            info.add(ip, protocol, *port);
        }
        info
    }

    #[test]
    fn host_port_info_add_remove() {
        // Upstream TestHostPortInfo_AddRemove.
        let with_invalid_ports = [
            &LOOPBACK_AND_ALL[..],
            &[("0.0.0.0", "TCP", 0), ("0.0.0.0", "TCP", -1)],
        ]
        .concat();
        let cases: Vec<(&str, Vec<Port>, Vec<Port>, usize)> = vec![
            ("normal add case", with_invalid_ports, vec![], 8),
            (
                "empty ip and protocol add should work",
                vec![
                    ("127.0.0.1", "", 79),
                    ("127.0.0.1", "UDP", 80),
                    ("127.0.0.1", "", 81),
                    ("127.0.0.1", "", 82),
                    ("", "", 79),
                    ("", "UDP", 80),
                    ("", "", 81),
                    ("", "", 82),
                    ("", "", 0),
                    ("", "", -1),
                ],
                vec![],
                8,
            ),
            (
                "normal remove case",
                LOOPBACK_AND_ALL.to_vec(),
                LOOPBACK_AND_ALL.to_vec(),
                0,
            ),
            (
                "empty ip and protocol remove should work",
                LOOPBACK_AND_ALL.to_vec(),
                vec![
                    ("127.0.0.1", "", 79),
                    ("127.0.0.1", "", 81),
                    ("127.0.0.1", "", 82),
                    ("127.0.0.1", "UDP", 80),
                    ("", "", 79),
                    ("", "", 81),
                    ("", "", 82),
                    ("", "UDP", 80),
                ],
                0,
            ),
        ];
        for (name, added, removed, want) in cases {
            let mut info = host_ports(&added);
            for (ip, protocol, port) in removed {
                info.remove(ip, protocol, port);
            }
            assert_eq!(info.len(), want, "{name}");
            assert_eq!(info.is_empty(), want == 0, "{name}");
        }
    }

    #[test]
    fn host_port_info_check_conflict() {
        // Upstream TestHostPortInfo_Check.
        let cases: Vec<(&str, Vec<Port>, Port, bool)> = vec![
            (
                "empty check should check 0.0.0.0 and TCP",
                vec![("127.0.0.1", "TCP", 80)],
                ("", "", 81),
                false,
            ),
            (
                "empty check should check 0.0.0.0 and TCP (conflicted)",
                vec![("127.0.0.1", "TCP", 80)],
                ("", "", 80),
                true,
            ),
            (
                "empty port check should pass",
                vec![("127.0.0.1", "TCP", 80)],
                ("", "", 0),
                false,
            ),
            (
                "0.0.0.0 should check all registered IPs",
                vec![("127.0.0.1", "TCP", 80)],
                ("0.0.0.0", "TCP", 80),
                true,
            ),
            (
                "0.0.0.0 with different protocol should be allowed",
                vec![("127.0.0.1", "UDP", 80)],
                ("0.0.0.0", "TCP", 80),
                false,
            ),
            (
                "0.0.0.0 with different port should be allowed",
                vec![
                    ("127.0.0.1", "TCP", 79),
                    ("127.0.0.1", "TCP", 81),
                    ("127.0.0.1", "TCP", 82),
                ],
                ("0.0.0.0", "TCP", 80),
                false,
            ),
            (
                "normal ip should check all registered 0.0.0.0",
                vec![("0.0.0.0", "TCP", 80)],
                ("127.0.0.1", "TCP", 80),
                true,
            ),
            (
                "normal ip with different port/protocol should be allowed (0.0.0.0)",
                vec![
                    ("0.0.0.0", "TCP", 79),
                    ("0.0.0.0", "UDP", 80),
                    ("0.0.0.0", "TCP", 81),
                    ("0.0.0.0", "TCP", 82),
                ],
                ("127.0.0.1", "TCP", 80),
                false,
            ),
            (
                "normal ip with different port/protocol should be allowed",
                vec![
                    ("127.0.0.1", "TCP", 79),
                    ("127.0.0.1", "UDP", 80),
                    ("127.0.0.1", "TCP", 81),
                    ("127.0.0.1", "TCP", 82),
                ],
                ("127.0.0.1", "TCP", 80),
                false,
            ),
        ];
        for (name, added, (ip, protocol, port), want) in cases {
            let info = host_ports(&added);
            assert_eq!(info.check_conflict(ip, protocol, port), want, "{name}");
        }
    }

    #[test]
    fn image_names_are_normalized_like_image_locality() {
        let cases = [
            ("no tag", "gcr.io/40:latest", "gcr.io/40"),
            ("tag kept", "gcr.io/40:v1", "gcr.io/40:v1"),
            (
                "registry port is not a tag",
                "registry:5000/app:latest",
                "registry:5000/app",
            ),
            (
                "registry port and tag",
                "registry:5000/app:v2",
                "registry:5000/app:v2",
            ),
            ("bare name", "nginx:latest", "nginx"),
            ("digest kept", "nginx@sha256:abc", "nginx@sha256:abc"),
        ];
        for (name, want, input) in cases {
            assert_eq!(normalized_image_name(input), want, "{name}");
        }
    }

    fn node(name: &str, cpu: &str, images: &[(&[&str], i64)]) -> Node {
        images
            .iter()
            .fold(
                make_node().name(name).allocatable(&[("cpu", cpu)]),
                |node, (names, size)| node.image(names, *size),
            )
            .obj()
    }

    fn pod(
        uid: &str,
        cpu: Option<&str>,
        host_port: i32,
        affinity: Option<Affinity>,
    ) -> Arc<PodInfo> {
        let container = Container {
            name: "c".to_owned(),
            resources: cpu.map(|cpu| ResourceRequirements {
                requests: Some(quantities(&[("cpu", cpu)])),
                ..Default::default()
            }),
            ports: (host_port > 0).then(|| {
                vec![ContainerPort {
                    container_port: 80,
                    host_port: Some(host_port),
                    ..Default::default()
                }]
            }),
            ..Default::default()
        };
        let pod = make_pod().name(uid).uid(uid).container(container);
        Arc::new(match affinity {
            Some(affinity) => pod.affinity(affinity).info(),
            None => pod.info(),
        })
    }

    #[test]
    fn set_node_reads_allocatable_and_images() {
        let info = NodeInfo::new(node(
            "n1",
            "4",
            &[
                (&["nginx", "docker.io/library/nginx:1.25"], 100),
                (&["nginx:latest"], 7),
            ],
        ))
        .expect("valid node");
        assert_eq!(info.name(), "n1");
        assert_eq!(info.allocatable.milli_cpu, 4000);
        let names: Vec<&str> = info.image_states.keys().map(String::as_str).collect();
        assert_eq!(names, ["docker.io/library/nginx:1.25", "nginx:latest"]);
        assert_eq!(
            info.image_states["nginx:latest"],
            ImageStateSummary {
                size: 100,
                num_nodes: 1
            }
        );

        let err = NodeInfo::new(node("bad", "four", &[])).expect_err("invalid cpu");
        assert_eq!(err.resource, "cpu");

        let empty = NodeInfo::default();
        assert!(empty.node().is_none());
        assert_eq!(empty.name(), "");
    }

    #[test]
    fn add_and_remove_pods_keep_aggregates() {
        let anti = Affinity {
            pod_anti_affinity: Some(PodAntiAffinity {
                required_during_scheduling_ignored_during_execution: Some(vec![PodAffinityTerm {
                    topology_key: "kubernetes.io/hostname".to_owned(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        let soft = Affinity {
            pod_affinity: Some(PodAffinity::default()),
            ..Default::default()
        };
        let mut info = NodeInfo::new(node("n1", "4", &[])).expect("valid node");
        let g0 = info.generation;
        info.add_pod(pod("a", Some("500m"), 8080, Some(anti)));
        let g1 = info.generation;
        info.add_pod(pod("b", None, 0, Some(soft)));
        info.add_pod(pod("c", Some("1"), 0, None));
        assert!(
            g0 < g1 && g1 < info.generation,
            "every change bumps the generation"
        );

        assert_eq!(info.pods.len(), 3);
        assert_eq!(info.requested.milli_cpu, 1500);
        assert_eq!(
            info.non_zero_requested.milli_cpu, 1600,
            "b counts 100m when scoring"
        );
        assert_eq!(info.pods_with_affinity.len(), 2);
        assert_eq!(info.pods_with_required_anti_affinity.len(), 1);
        assert!(info.used_ports.check_conflict("", "TCP", 8080));

        let removed = info.remove_pod("a").expect("a is on the node");
        assert_eq!(removed.key(), "a");
        assert_eq!(info.requested.milli_cpu, 1000);
        assert_eq!(info.non_zero_requested.milli_cpu, 1100);
        assert_eq!(info.pods_with_affinity.len(), 1);
        assert!(info.pods_with_required_anti_affinity.is_empty());
        assert!(info.used_ports.is_empty());

        let g = info.generation;
        assert!(info.remove_pod("missing").is_none());
        assert_eq!(info.generation, g, "a no-op does not bump the generation");

        info.remove_node();
        assert!(info.node().is_none());
        assert_eq!(info.pods.len(), 2, "pods outlive their node until removed");
    }

    #[test]
    fn a_pod_list_keeps_the_order_a_vec_keeps_and_shares_chunks_with_its_clones() {
        // Enough pods for three chunks; every removal is checked against Vec::swap_remove.
        let pods: Vec<Arc<PodInfo>> = (0..CHUNK * 2 + 10)
            .map(|i| {
                Arc::new(
                    make_pod()
                        .name(&format!("p{i}"))
                        .namespace("default")
                        .info(),
                )
            })
            .collect();
        let mut list = PodList::default();
        let mut reference = Vec::new();
        for pod in &pods {
            list.push(pod.clone());
            reference.push(pod.clone());
        }
        let snapshot = list.clone();
        let keys = |pods: &mut dyn Iterator<Item = &Arc<PodInfo>>| -> Vec<String> {
            pods.map(|p| p.key().to_string()).collect()
        };
        // The last pod, one in the first chunk, one in the middle chunk, the last again.
        for key in ["default/p265", "default/p3", "default/p200", "default/p130"] {
            let at = list.rposition(|p| p.key() == key);
            assert_eq!(at, reference.iter().rposition(|p| p.key() == key), "{key}");
            let at = at.unwrap_or_else(|| panic!("{key} is in the list"));
            assert_eq!(list.swap_remove(at).key(), reference.swap_remove(at).key());
            assert_eq!(list.len(), reference.len());
            assert_eq!(keys(&mut list.iter()), keys(&mut reference.iter()));
        }
        // Emptied to the end, chunk by chunk.
        while !reference.is_empty() {
            let at = reference.len() / 2;
            assert_eq!(list.swap_remove(at).key(), reference.swap_remove(at).key());
            assert_eq!(keys(&mut list.iter()), keys(&mut reference.iter()));
        }
        assert!(list.is_empty());
        assert!(list.rposition(|_| true).is_none());
        // The clone taken before kept every pod, in order.
        assert_eq!(snapshot.len(), pods.len());
        assert_eq!(keys(&mut snapshot.iter()), keys(&mut pods.iter()));
    }
}
