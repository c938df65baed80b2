//! Matching pods per topology domain, kept from one scheduling cycle to the next.
//!
//! Upstream counts, for every pod, the matching pods on every node of the cluster
//! (PreFilter for hard constraints, PreScore for soft ones): per-pod work that grows with
//! the cluster. Pods of one workload share their constraints, so the plugin keeps each
//! node's contribution for the last few distinct constraint sets and, for the next pod
//! with the same set, recounts only the nodes whose info changed since (the snapshot's
//! `ChangeCursor`, through [`Kept`]). The totals are the same sums over the same nodes as
//! counting from scratch, so the result is identical; a rebuilt node list starts the
//! count over.

use std::collections::HashMap;

use crate::cluster::{NodeInfo, Snapshot};
use crate::framework::Parallelizer;
use crate::framework::kept::Kept;

/// The most constraint sets kept; the least recently used one goes first.
const MAX_ENTRIES: usize = 16;

/// What one node contributes to one constraint: its domain and its matching pods, or
/// `None` when the node does not count for the constraint.
pub(super) type Contribution<'a> = Option<(&'a str, i64)>;

/// Gives a closure the signature [`DomainCounts::count`] takes (the domains it returns
/// borrow from the node it is given), which closures do not infer on their own.
pub(super) fn per_node<F>(eval: F) -> F
where
    F: for<'n> Fn(&'n NodeInfo) -> Vec<Contribution<'n>> + Sync + Send,
{
    eval
}

/// Per-node contributions of recently seen constraint sets.
#[derive(Debug)]
pub(super) struct DomainCounts(Kept<Table>);

impl Default for DomainCounts {
    fn default() -> Self {
        DomainCounts(Kept::new(MAX_ENTRIES))
    }
}

/// Every node's contributions for one constraint set, and their sums per domain.
struct Table {
    constraints: usize,
    /// `nodes × constraints`: the domain (an index into `domains`) and matching pods.
    per_node: Vec<Option<(u32, i64)>>,
    domains: Vec<String>,
    domain_ids: HashMap<String, u32>,
    /// `constraints × domains`: nodes counting and matching pods in the domain.
    totals: Vec<Vec<(i64, i64)>>,
}

impl Table {
    fn new(constraints: usize, nodes: usize) -> Self {
        Table {
            constraints,
            per_node: vec![None; nodes * constraints],
            domains: Vec::new(),
            domain_ids: HashMap::new(),
            totals: vec![Vec::new(); constraints],
        }
    }

    fn domain_id(&mut self, domain: &str) -> u32 {
        if let Some(&id) = self.domain_ids.get(domain) {
            return id;
        }
        let id = u32::try_from(self.domains.len()).unwrap_or(u32::MAX);
        self.domains.push(domain.to_owned());
        self.domain_ids.insert(domain.to_owned(), id);
        for totals in &mut self.totals {
            totals.push((0, 0));
        }
        id
    }

    /// Adds (`sign` 1) or removes (`sign` -1) node `i`'s stored contributions.
    fn apply(&mut self, i: usize, sign: i64) {
        for c in 0..self.constraints {
            if let Some((domain, pods)) = self.per_node[i * self.constraints + c] {
                let total = &mut self.totals[c][domain as usize];
                total.0 += sign;
                total.1 += sign * pods;
            }
        }
    }

    /// Stores node `i`'s contributions and adds them to the totals.
    fn set(&mut self, i: usize, contributions: &[Contribution<'_>]) {
        for (c, contribution) in contributions.iter().enumerate().take(self.constraints) {
            let stored = contribution.map(|(domain, pods)| (self.domain_id(domain), pods));
            self.per_node[i * self.constraints + c] = stored;
        }
        self.apply(i, 1);
    }

    /// Per constraint, the matching pods of every domain with at least one counting node.
    fn result(&self) -> Vec<HashMap<String, i64>> {
        self.totals
            .iter()
            .map(|totals| {
                totals
                    .iter()
                    .enumerate()
                    .filter(|(_, (nodes, _))| *nodes > 0)
                    .map(|(d, (_, pods))| (self.domains[d].clone(), *pods))
                    .collect()
            })
            .collect()
    }
}

impl DomainCounts {
    /// Per constraint (`constraints` of them), the matching pods per domain over the
    /// nodes of `snapshot`, each node contributing what `eval` says (one entry per
    /// constraint). `key` must capture everything `eval` depends on besides the node.
    /// A first count evaluates the nodes on `parallelizer` (on the caller's thread
    /// without one).
    pub(super) fn count<E>(
        &self,
        key: String,
        constraints: usize,
        snapshot: &Snapshot,
        eval: E,
        parallelizer: Option<&Parallelizer>,
    ) -> Vec<HashMap<String, i64>>
    where
        E: for<'n> Fn(&'n NodeInfo) -> Vec<Contribution<'n>> + Sync + Send,
    {
        let nodes = snapshot.nodes();
        let build = || {
            let per_node = match parallelizer {
                Some(parallelizer) => parallelizer.map_range(nodes.len(), |i| eval(&nodes[i])),
                None => nodes.iter().map(|n| eval(n)).collect(),
            };
            let mut table = Table::new(constraints, nodes.len());
            for (i, contributions) in per_node.iter().enumerate() {
                table.set(i, contributions);
            }
            table
        };
        let update = |table: &mut Table, i: usize| {
            table.apply(i, -1);
            table.set(i, &eval(&nodes[i]));
        };
        self.0.with(key, snapshot, build, update, Table::result)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Node, Pod};

    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::cluster::{Cache, PodInfo};
    use crate::testing::{make_node, make_pod};

    fn node(name: &str, zone: Option<&str>) -> Node {
        let node = make_node().name(name);
        match zone {
            Some(zone) => node.label("zone", zone).obj(),
            None => node.obj(),
        }
    }

    /// A pod in `default` labelled `app`, bound to `node` when one is given.
    fn pod(name: &str, node: Option<&str>, app: &str) -> Pod {
        let pod = make_pod().name(name).namespace("default").label("app", app);
        match node {
            Some(node) => pod.node(node).obj(),
            None => pod.obj(),
        }
    }

    /// Web pods per zone, over the nodes that have a zone; `evaluated` counts the nodes
    /// looked at.
    fn count(
        counts: &DomainCounts,
        snapshot: &Snapshot,
        evaluated: &AtomicUsize,
    ) -> HashMap<String, i64> {
        let eval = per_node(|info| {
            evaluated.fetch_add(1, Ordering::Relaxed);
            let zone = info
                .node()
                .and_then(|n| n.metadata.labels.as_ref())
                .and_then(|l| l.get("zone"));
            let web = info
                .pods
                .iter()
                .filter(|p| {
                    p.pod.metadata.labels.as_ref().and_then(|l| l.get("app"))
                        == Some(&"web".to_string())
                })
                .count();
            vec![zone.map(|z| (z.as_str(), web as i64))]
        });
        let workers = Parallelizer::new(2).expect("worker threads start");
        let mut result = counts.count("web".into(), 1, snapshot, eval, Some(&workers));
        result.remove(0)
    }

    #[test]
    fn incremental_counts_equal_counting_from_scratch() {
        let mut cache = Cache::new(None);
        for (name, zone) in [
            ("n0", Some("a")),
            ("n1", Some("a")),
            ("n2", Some("b")),
            ("n3", None),
        ] {
            cache.add_node(node(name, zone)).expect("node");
        }
        for (name, node, app) in [("p0", "n0", "web"), ("p1", "n1", "db"), ("p2", "n3", "web")] {
            cache.add_pod(pod(name, Some(node), app)).expect("pod");
        }
        let mut snapshot = Snapshot::default();
        cache.update_snapshot(&mut snapshot);
        let kept = DomainCounts::default();
        let evaluated = AtomicUsize::new(0);
        let want = HashMap::from([("a".to_string(), 1), ("b".to_string(), 0)]);
        assert_eq!(count(&kept, &snapshot, &evaluated), want, "first count");
        assert_eq!(evaluated.swap(0, Ordering::Relaxed), 4, "every node");

        // Pods come and go; a node moves to another zone; a zone-less node gets one.
        let assumed = PodInfo::new(pod("p3", None, "web")).expect("pod");
        cache.assume_pod(&assumed, "n2").expect("assume");
        cache.remove_pod(&pod("p0", Some("n0"), "web"));
        cache.add_pod(pod("p4", Some("n1"), "web")).expect("pod");
        cache.update_node(node("n1", Some("c"))).expect("node");
        cache.update_node(node("n3", Some("b"))).expect("node");
        cache.update_snapshot(&mut snapshot);
        let want = HashMap::from([
            ("a".to_string(), 0),
            ("b".to_string(), 2),
            ("c".to_string(), 1),
        ]);
        assert_eq!(
            count(&kept, &snapshot, &evaluated),
            want,
            "kept counts, updated"
        );
        assert_eq!(
            evaluated.swap(0, Ordering::Relaxed),
            4,
            "the four changed nodes"
        );
        let scratch = AtomicUsize::new(0);
        let fresh = count(&DomainCounts::default(), &snapshot, &scratch);
        assert_eq!(fresh, want, "from scratch");

        // One more pod: one node to recount.
        let assumed = PodInfo::new(pod("p6", None, "web")).expect("pod");
        cache.assume_pod(&assumed, "n0").expect("assume");
        cache.update_snapshot(&mut snapshot);
        let want = HashMap::from([
            ("a".to_string(), 1),
            ("b".to_string(), 2),
            ("c".to_string(), 1),
        ]);
        assert_eq!(count(&kept, &snapshot, &evaluated), want, "one more pod");
        assert_eq!(
            evaluated.swap(0, Ordering::Relaxed),
            1,
            "only the changed node"
        );

        // A new node rebuilds the node list: the kept counts start over.
        cache.add_node(node("n4", Some("c"))).expect("node");
        cache.add_pod(pod("p5", Some("n4"), "web")).expect("pod");
        cache.update_snapshot(&mut snapshot);
        let want = HashMap::from([
            ("a".to_string(), 1),
            ("b".to_string(), 2),
            ("c".to_string(), 2),
        ]);
        assert_eq!(count(&kept, &snapshot, &evaluated), want, "after a rebuild");
        assert_eq!(
            evaluated.load(Ordering::Relaxed),
            5,
            "a rebuilt list: every node"
        );
    }
}
