//! The cache as the scheduler drives it: pods and nodes added, assumed, bound, forgotten
//! and expired, and the snapshot it hands a cycle.

use super::*;
use crate::testing::{make_node, make_pod};

/// A node with `cpu` allocatable holding `images` of 1000 bytes each.
fn node(name: &str, cpu: &str, images: &[&str]) -> Node {
    images
        .iter()
        .fold(
            make_node().name(name).allocatable(&[("cpu", cpu)]),
            |node, image| node.image(&[image], 1000),
        )
        .obj()
}

/// A pod in `ns` named and identified `uid`, with one container requesting `cpu`.
fn pod(uid: &str, node: Option<&str>, cpu: &str) -> Pod {
    let pod = make_pod()
        .name(uid)
        .namespace("ns")
        .uid(uid)
        .req(&[("cpu", cpu)]);
    match node {
        Some(node) => pod.node(node).obj(),
        None => pod.obj(),
    }
}

fn info(uid: &str, cpu: &str) -> PodInfo {
    PodInfo::new(pod(uid, None, cpu)).expect("valid pod")
}

fn cache_with(nodes: &[&str]) -> Cache {
    let mut cache = Cache::new(Some(Duration::from_secs(30)));
    for name in nodes {
        cache.add_node(node(name, "4", &[])).expect("valid node");
    }
    cache
}

fn snapshot_of(cache: &Cache) -> Snapshot {
    let mut snapshot = Snapshot::default();
    cache.update_snapshot(&mut snapshot);
    snapshot
}

fn requested_cpu(snapshot: &Snapshot, node: &str) -> i64 {
    snapshot.get(node).map_or(-1, |n| n.requested.milli_cpu)
}

#[test]
fn assumed_pods_count_until_forgotten() {
    let mut cache = cache_with(&["n1", "n2"]);
    let p = info("p1", "1500m");
    cache.assume_pod(&p, "n1").expect("assume");

    let snapshot = snapshot_of(&cache);
    assert_eq!(requested_cpu(&snapshot, "n1"), 1500);
    assert_eq!(requested_cpu(&snapshot, "n2"), 0);
    assert!(cache.is_assumed("p1"));
    let held = cache.get_pod("p1").expect("held");
    assert_eq!(
        held.node_name(),
        Some("n1"),
        "the cache holds the assumed copy"
    );
    assert_eq!(
        cache.assume_pod(&p, "n2"),
        Err(CacheError::PodExists("p1".to_owned()))
    );

    cache.forget_pod("p1").expect("forget");
    assert_eq!(requested_cpu(&snapshot_of(&cache), "n1"), 0);
    assert!(!cache.is_assumed("p1"));
    assert_eq!(cache.pod_count(), 0);
    assert_eq!(
        cache.forget_pod("p1"),
        Err(CacheError::PodNotFound("p1".to_owned()))
    );
}

#[test]
fn add_event_confirms_assumed_pod() {
    // (case, node the pod is bound to, expected n1 cpu, expected n2 cpu)
    let cases = [
        ("bound where assumed", "n1", 1000, 0),
        ("bound elsewhere moves it", "n2", 0, 1000),
    ];
    for (name, bound, n1, n2) in cases {
        let mut cache = cache_with(&["n1", "n2"]);
        cache.assume_pod(&info("p1", "1"), "n1").expect(name);
        cache.finish_binding("p1", Instant::now());
        cache.add_pod(pod("p1", Some(bound), "1")).expect(name);

        let snapshot = snapshot_of(&cache);
        assert_eq!(
            requested_cpu(&snapshot, "n1"),
            n1,
            "{name}: no double count"
        );
        assert_eq!(requested_cpu(&snapshot, "n2"), n2, "{name}");
        assert!(!cache.is_assumed("p1"), "{name}");
        assert_eq!(cache.pod_count(), 1, "{name}");
        assert_eq!(
            cache.forget_pod("p1"),
            Err(CacheError::NotAssumed("p1".to_owned())),
            "{name}: a confirmed pod cannot be forgotten"
        );
        let expired = cache.cleanup_assumed_pods(Instant::now() + Duration::from_secs(3600));
        assert!(expired.is_empty(), "{name}: confirmed pods never expire");
    }
}

#[test]
fn assumed_pods_expire_after_binding_plus_ttl() {
    let start = Instant::now();
    let ttl = Duration::from_secs(30);
    // (case, binding finished?, cleanup time, expired?)
    let cases = [
        ("binding not finished", false, start + ttl * 10, false),
        (
            "within ttl",
            true,
            start + ttl - Duration::from_secs(1),
            false,
        ),
        ("exactly at deadline", true, start + ttl, false),
        (
            "past deadline",
            true,
            start + ttl + Duration::from_secs(1),
            true,
        ),
    ];
    for (name, finished, now, expired) in cases {
        let mut cache = cache_with(&["n1"]);
        cache.assume_pod(&info("p1", "1"), "n1").expect(name);
        if finished {
            cache.finish_binding("p1", start);
        }
        let removed = cache.cleanup_assumed_pods(now);
        assert_eq!(removed.len(), usize::from(expired), "{name}");
        assert_eq!(cache.get_pod("p1").is_none(), expired, "{name}");
        let want_cpu = if expired { 0 } else { 1000 };
        assert_eq!(
            requested_cpu(&snapshot_of(&cache), "n1"),
            want_cpu,
            "{name}"
        );
    }

    let mut forever = Cache::new(None);
    forever.add_node(node("n1", "4", &[])).expect("valid node");
    forever.assume_pod(&info("p1", "1"), "n1").expect("assume");
    forever.finish_binding("p1", start);
    assert!(forever.cleanup_assumed_pods(start + ttl * 1000).is_empty());
}

#[test]
fn a_pod_set_aside_comes_back_as_it_was() {
    let start = Instant::now();
    let mut cache = cache_with(&["n1"]);
    cache.add_pod(pod("bound", Some("n1"), "1")).expect("add");
    cache
        .assume_pod(&info("assumed", "2"), "n1")
        .expect("assume");
    cache.finish_binding("assumed", start);
    let mut snapshot = snapshot_of(&cache);
    assert_eq!(requested_cpu(&snapshot, "n1"), 3000);

    let bound = cache.set_aside("bound").expect("in the cache");
    let assumed = cache.set_aside("assumed").expect("in the cache");
    assert!(cache.set_aside("bound").is_none(), "taken out once");
    cache.update_snapshot(&mut snapshot);
    assert_eq!(
        requested_cpu(&snapshot, "n1"),
        0,
        "neither counts meanwhile"
    );
    assert_eq!(cache.pod_count(), 0);

    cache.put_back(bound);
    cache.put_back(assumed);
    cache.update_snapshot(&mut snapshot);
    assert_eq!(requested_cpu(&snapshot, "n1"), 3000);
    assert!(!cache.is_assumed("bound"));
    assert!(cache.is_assumed("assumed"), "still assumed");
    let expired = cache.cleanup_assumed_pods(start + Duration::from_secs(31));
    assert_eq!(expired, vec!["assumed".to_string()], "with its deadline");
}

#[test]
fn snapshot_reclones_only_changed_nodes() {
    let mut cache = cache_with(&["n1", "n2", "n3"]);
    let mut snapshot = Snapshot::default();
    cache.update_snapshot(&mut snapshot);
    let before: Vec<Arc<NodeInfo>> = snapshot.nodes().to_vec();

    cache.add_pod(pod("p1", Some("n2"), "250m")).expect("add");
    cache.update_snapshot(&mut snapshot);

    let names: Vec<&str> = snapshot.nodes().iter().map(|n| n.name()).collect();
    assert_eq!(names, ["n1", "n2", "n3"]);
    assert!(
        Arc::ptr_eq(&before[0], &snapshot.nodes()[0]),
        "n1 untouched"
    );
    assert!(!Arc::ptr_eq(&before[1], &snapshot.nodes()[1]), "n2 changed");
    assert!(
        Arc::ptr_eq(&before[2], &snapshot.nodes()[2]),
        "n3 untouched"
    );
    assert_eq!(requested_cpu(&snapshot, "n2"), 250);
    assert_eq!(
        before[1].requested.milli_cpu, 0,
        "the old snapshot is immutable"
    );

    // A node update keeps its place; removal drops it; a new node takes its place in
    // name order (snapshots list nodes sorted by name, whatever the arrival order).
    cache.update_node(node("n1", "8", &[])).expect("update");
    cache.remove_node("n2");
    cache.add_node(node("n0", "2", &[])).expect("add");
    cache.update_snapshot(&mut snapshot);
    let names: Vec<&str> = snapshot.nodes().iter().map(|n| n.name()).collect();
    assert_eq!(names, ["n0", "n1", "n3"]);
    assert_eq!(
        snapshot.get("n1").map(|n| n.allocatable.milli_cpu),
        Some(8000)
    );
    assert!(snapshot.get("n2").is_none());
    assert!(
        Arc::ptr_eq(&before[2], &snapshot.nodes()[2]),
        "n3 still untouched"
    );
    assert_eq!(cache.node_count(), 3);
}

#[test]
fn pods_may_arrive_before_their_node_and_outlive_it() {
    let mut cache = Cache::new(None);
    cache.add_pod(pod("p1", Some("late"), "1")).expect("add");
    assert_eq!(cache.node_count(), 0);
    assert!(
        snapshot_of(&cache).is_empty(),
        "node-less infos are not scheduled on"
    );

    cache.add_node(node("late", "4", &[])).expect("node");
    assert_eq!(requested_cpu(&snapshot_of(&cache), "late"), 1000);

    cache.remove_node("late");
    assert!(snapshot_of(&cache).get("late").is_none());
    assert_eq!(
        cache.pod_count(),
        1,
        "the pod waits for its own delete event"
    );
    cache.remove_pod(&pod("p1", Some("late"), "1"));
    assert_eq!(cache.pod_count(), 0);
    assert!(
        cache.node_info("late").is_none(),
        "empty node-less info is dropped"
    );
}

#[test]
fn pod_events() {
    let mut cache = cache_with(&["n1"]);
    let p1 = pod("p1", Some("n1"), "1");
    cache.add_pod(p1.clone()).expect("add");
    assert_eq!(
        cache.add_pod(p1.clone()),
        Err(CacheError::PodExists("p1".to_owned()))
    );
    assert_eq!(
        cache.add_pod(pod("p2", None, "1")),
        Err(CacheError::NoNode("p2".to_owned()))
    );
    assert!(matches!(
        cache.add_pod(pod("p3", Some("n1"), "much")),
        Err(CacheError::Quantity(_))
    ));

    cache.update_pod(&p1, pod("p1", Some("n1"), "3"));
    assert_eq!(requested_cpu(&snapshot_of(&cache), "n1"), 3000);

    cache.remove_pod(&p1);
    assert_eq!(requested_cpu(&snapshot_of(&cache), "n1"), 0);
    assert!(cache.get_pod("p1").is_none());
}

#[test]
fn image_num_nodes_counts_nodes_with_the_image() {
    let mut cache = Cache::new(None);
    cache
        .add_node(node("n1", "4", &["app:v1", "base"]))
        .expect("n1");
    cache.add_node(node("n2", "4", &["app:v1"])).expect("n2");
    let mut snapshot = Snapshot::default();
    cache.update_snapshot(&mut snapshot);
    let count = |s: &Snapshot, node: &str, image: &str| {
        s.get(node)
            .and_then(|n| n.image_states.get(image))
            .map(|i| i.num_nodes)
    };
    // (node, image, count)
    let cases = [
        ("n1", "app:v1", Some(2)),
        ("n2", "app:v1", Some(2)),
        ("n1", "base:latest", Some(1)),
        ("n2", "base:latest", None),
    ];
    for (node_name, image, want) in cases {
        assert_eq!(
            count(&snapshot, node_name, image),
            want,
            "{node_name} {image}"
        );
    }

    cache.remove_node("n2");
    cache.update_snapshot(&mut snapshot);
    assert_eq!(
        count(&snapshot, "n1", "app:v1"),
        Some(1),
        "n1 sees n2 leave"
    );

    let before = snapshot.get("n1").cloned().expect("n1");
    cache
        .update_node(node("n1", "8", &["app:v1", "base"]))
        .expect("n1");
    cache.add_node(node("n3", "4", &["other"])).expect("n3");
    cache.update_snapshot(&mut snapshot);
    assert_eq!(count(&snapshot, "n1", "app:v1"), Some(1));
    assert!(
        !Arc::ptr_eq(&before, &snapshot.nodes()[0]),
        "n1 itself changed"
    );
}

#[test]
fn nodes_need_a_name_and_valid_allocatable() {
    let mut cache = Cache::new(None);
    assert_eq!(
        cache.add_node(Node::default()),
        Err(CacheError::NodeWithoutName)
    );
    assert!(matches!(
        cache.add_node(node("n1", "lots", &[])),
        Err(CacheError::Quantity(_))
    ));
    assert_eq!(cache.node_count(), 0);
    assert!(cache.node_info("n1").is_none());
}
