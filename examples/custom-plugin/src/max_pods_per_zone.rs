//! MaxPodsPerZone: at most `maxPods` pods of one group in each zone (or rack, or any
//! topology domain named by a node label).
//!
//! A pod's group is the value of its `groupLabel` label (default `app`) within its
//! namespace: with the defaults, at most 2 pods labelled `app=web` in namespace `shop` run in
//! each `topology.kubernetes.io/zone`. Pods without the label, and pods in
//! `exemptNamespaces`, are not limited.
//!
//! - PreFilter counts the group's pods per domain over the whole snapshot, once per cycle,
//!   into [`CycleState`]. Pods that are not limited return Skip, so Filter does not run for
//!   them; in audit mode (`enforce: false`) PreFilter counts and then returns Skip as well.
//! - Filter looks the node's domain up in those counts: a domain that already runs `maxPods`
//!   of the group rejects the node as Unschedulable (preempting group pods could make room;
//!   the [`PreFilterExtensions`] keep the counts right for "what if" evaluations). A node
//!   without the topology label is rejected as UnschedulableAndUnresolvable, or admitted
//!   when `nodesWithoutTopology: Admit`. Success allocates nothing: the rejection reasons
//!   are built once, in PreFilter.
//! - PreBind logs the placement with the domain's count after it, and warns about a
//!   placement over the limit (possible only in audit mode).

use std::collections::HashMap;

use async_trait::async_trait;
use berth::cluster::{NodeInfo, PodInfo, Snapshot};
use berth::framework::{
    ActionType, ClusterEvent, Coupling, CycleState, EventResource, FieldError, FilterPlugin,
    Handle, PluginArgs, PluginError, PreBindPlugin, PreFilterExtensions, PreFilterPlugin,
    PreFilterResult, Status,
};
use berth::helpers::validation::qualified_name_errors;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{label, quoted};

/// The bounds of `maxPods`, in the schema and in [`PluginArgs::validate`].
const MAX_PODS_RANGE: std::ops::RangeInclusive<i32> = 1..=1000;

/// Args of MaxPodsPerZone: at most `maxPods` pods of one group (pods with equal
/// `groupLabel` values in one namespace) per topology domain.
// The CEL rule is checked by the API server at `kubectl apply` time and by berth's local
// validation (`berth simulate`, the operator before it instantiates a profile), so
// `validate` does not repeat it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "self.groupLabel != self.topologyKey",
    "message": "groupLabel must differ from topologyKey",
    "fieldPath": ".groupLabel",
}]))]
pub struct MaxPodsPerZoneArgs {
    /// The node label whose value is the node's domain, e.g. `topology.kubernetes.io/zone`
    /// or a rack label.
    pub topology_key: String,
    /// The pod label whose value names the pod's group (within its namespace).
    pub group_label: String,
    /// The most pods of one group a domain may run, 1..=1000.
    #[schemars(range(min = 1, max = 1000))]
    pub max_pods: i32,
    /// Namespaces whose pods are never limited.
    #[schemars(length(max = 64))]
    pub exempt_namespaces: Vec<String>,
    /// What Filter does with a node that has no `topologyKey` label.
    pub nodes_without_topology: NodesWithoutTopology,
    /// False runs the plugin in audit mode: Filter admits every node and PreBind warns
    /// about placements over the limit.
    pub enforce: bool,
}

impl Default for MaxPodsPerZoneArgs {
    fn default() -> Self {
        MaxPodsPerZoneArgs {
            topology_key: "topology.kubernetes.io/zone".to_string(),
            group_label: "app".to_string(),
            max_pods: 2,
            exempt_namespaces: vec!["kube-system".to_string()],
            nodes_without_topology: NodesWithoutTopology::Reject,
            enforce: true,
        }
    }
}

/// `Reject` keeps group pods off nodes without the topology label (as PodTopologySpread
/// does); `Admit` lets them run there, unlimited.
// Variants carry no doc comments so the schema is a plain string enum.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum NodesWithoutTopology {
    #[default]
    Reject,
    Admit,
}

impl PluginArgs for MaxPodsPerZoneArgs {
    fn validate(&self, path: &str) -> Vec<FieldError> {
        let mut errors = Vec::new();
        for (field, value) in [
            ("topologyKey", &self.topology_key),
            ("groupLabel", &self.group_label),
        ] {
            errors.extend(
                qualified_name_errors(value).into_iter().map(|message| {
                    FieldError::new(format!("{path}.{field}"), quoted(value), message)
                }),
            );
        }
        if !MAX_PODS_RANGE.contains(&self.max_pods) {
            errors.push(FieldError::new(
                format!("{path}.maxPods"),
                self.max_pods,
                format!(
                    "must be between {} and {}",
                    MAX_PODS_RANGE.start(),
                    MAX_PODS_RANGE.end()
                ),
            ));
        }
        for (i, namespace) in self.exempt_namespaces.iter().enumerate() {
            if !is_dns1123_label(namespace) {
                errors.push(FieldError::new(
                    format!("{path}.exemptNamespaces[{i}]"),
                    quoted(namespace),
                    "a namespace name must be at most 63 lower case alphanumerics or '-', \
                     starting and ending with an alphanumeric (e.g. 'kube-system')",
                ));
            }
        }
        errors
    }
}

/// RFC 1123 label syntax, the syntax of namespace names.
fn is_dns1123_label(value: &str) -> bool {
    (1..=63).contains(&value.len())
        && value
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !value.starts_with('-')
        && !value.ends_with('-')
}

/// The MaxPodsPerZone plugin.
#[derive(Debug, Clone)]
pub struct MaxPodsPerZone {
    args: MaxPodsPerZoneArgs,
}

/// What PreFilter hands to Filter, the PreFilter extensions and PreBind.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PreFilterState {
    /// The pod's namespace and group (the value of its group label).
    namespace: String,
    group: String,
    /// The group's pods per domain.
    pods_per_domain: HashMap<String, i32>,
    /// The domain of every node that has one, for PreBind (which only gets a node name).
    domain_of_node: HashMap<String, String>,
    /// Filter's rejection reasons, built once per cycle.
    full_reason: String,
    no_domain_reason: String,
}

impl PreFilterState {
    fn pods_in(&self, domain: &str) -> i32 {
        self.pods_per_domain.get(domain).copied().unwrap_or(0)
    }

    fn is_member(&self, pod: &PodInfo, group_label: &str) -> bool {
        pod.namespace() == self.namespace
            && label(&pod.pod.metadata, group_label) == Some(self.group.as_str())
    }
}

/// Where PreBind found the pod going: its domain and the group's pods there once it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub domain: Option<String>,
    pub pods_after: i32,
    pub over_limit: bool,
}

impl MaxPodsPerZone {
    fn domain<'a>(&self, node: &'a NodeInfo) -> Option<&'a str> {
        label(&node.node()?.metadata, &self.args.topology_key)
    }

    /// The placement of the pod of this cycle on `node_name`, or `None` when the pod is not
    /// limited (PreFilter wrote no state).
    fn placement(&self, state: &CycleState, node_name: &str) -> Option<Placement> {
        let state = state.read::<PreFilterState>()?;
        let domain = state.domain_of_node.get(node_name).cloned();
        let pods_after = domain.as_deref().map_or(0, |d| state.pods_in(d) + 1);
        Some(Placement {
            over_limit: pods_after > self.args.max_pods,
            domain,
            pods_after,
        })
    }

    /// Adds `delta` to the count of `node`'s domain when `pod` belongs to the group.
    fn adjust(&self, state: &mut CycleState, pod: &PodInfo, node: &NodeInfo, delta: i32) -> Status {
        let Some(domain) = self.domain(node) else {
            return Status::success();
        };
        let Some(state) = state.read_mut::<PreFilterState>() else {
            return Status::error("MaxPodsPerZone: PreFilter state not found in CycleState");
        };
        if state.is_member(pod, &self.args.group_label) {
            *state.pods_per_domain.entry(domain.to_string()).or_default() += delta;
        }
        Status::success()
    }
}

berth::plugin! {
    MaxPodsPerZone {
        name: "MaxPodsPerZone",
        points: [PreFilter, Filter, PreBind],
    }

    impl Plugin {
        /// A rejected pod may fit after a group pod is deleted or relabelled, or a node
        /// appears or gets its topology label.
        fn events_to_register(&self) -> Option<Vec<ClusterEvent>> {
            Some(vec![
                ClusterEvent::new(
                    EventResource::AssignedPod,
                    ActionType::DELETE | ActionType::UPDATE_POD_LABEL,
                ),
                ClusterEvent::new(
                    EventResource::Node,
                    ActionType::ADD | ActionType::UPDATE_NODE_LABEL,
                ),
            ])
        }
    }

    impl PluginFactory {
        // Filter reads the per-zone counts PreFilter computed: resolution runs PreFilter
        // wherever a profile enables Filter.
        const COUPLINGS: &'static [Coupling] = &[Coupling::FilterNeedsPreFilter];
        type Args = MaxPodsPerZoneArgs;

        fn build(args: MaxPodsPerZoneArgs, _: &Handle) -> Result<Self, PluginError> {
            Ok(MaxPodsPerZone { args })
        }
    }
}

#[async_trait]
impl PreFilterPlugin for MaxPodsPerZone {
    async fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let args = &self.args;
        let Some(group) = label(&pod.pod.metadata, &args.group_label) else {
            return (None, Status::skip());
        };
        if args
            .exempt_namespaces
            .iter()
            .any(|ns| ns == pod.namespace())
        {
            return (None, Status::skip());
        }
        let mut pre_filter = PreFilterState {
            namespace: pod.namespace().to_string(),
            group: group.to_string(),
            pods_per_domain: HashMap::new(),
            domain_of_node: HashMap::new(),
            full_reason: format!(
                "node(s) were in a {} domain already running {} pod(s) with {}={group}",
                args.topology_key, args.max_pods, args.group_label
            ),
            no_domain_reason: format!("node(s) had no {} label", args.topology_key),
        };
        for node in snapshot.nodes() {
            let Some(domain) = self.domain(node) else {
                continue;
            };
            let members = node
                .pods
                .iter()
                .filter(|p| pre_filter.is_member(p, &args.group_label))
                .count();
            let count = pre_filter
                .pods_per_domain
                .entry(domain.to_string())
                .or_default();
            *count = count.saturating_add(i32::try_from(members).unwrap_or(i32::MAX));
            pre_filter
                .domain_of_node
                .insert(node.name().to_string(), domain.to_string());
        }
        state.write(pre_filter);
        // Audit mode: keep the counts for PreBind, but never filter.
        let status = if args.enforce {
            Status::success()
        } else {
            Status::skip()
        };
        (None, status)
    }

    fn pre_filter_extensions(&self) -> Option<&dyn PreFilterExtensions> {
        Some(self)
    }
}

impl PreFilterExtensions for MaxPodsPerZone {
    fn add_pod(
        &self,
        state: &mut CycleState,
        _: &PodInfo,
        pod_to_add: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        self.adjust(state, pod_to_add, node, 1)
    }

    fn remove_pod(
        &self,
        state: &mut CycleState,
        _: &PodInfo,
        pod_to_remove: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        self.adjust(state, pod_to_remove, node, -1)
    }
}

impl FilterPlugin for MaxPodsPerZone {
    fn filter(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
        let Some(pre_filter) = state.read::<PreFilterState>() else {
            return Status::error("MaxPodsPerZone: PreFilter state not found in CycleState");
        };
        if node.node().is_none() {
            return Status::error("node not found");
        }
        match self.domain(node) {
            Some(domain) if pre_filter.pods_in(domain) >= self.args.max_pods => {
                Status::unschedulable(pre_filter.full_reason.clone())
            }
            Some(_) => Status::success(),
            None => match self.args.nodes_without_topology {
                NodesWithoutTopology::Reject => {
                    Status::unresolvable(pre_filter.no_domain_reason.clone())
                }
                NodesWithoutTopology::Admit => Status::success(),
            },
        }
    }
}

#[async_trait]
impl PreBindPlugin for MaxPodsPerZone {
    async fn pre_bind(&self, state: &mut CycleState, pod: &PodInfo, node_name: &str) -> Status {
        let Some(placement) = self.placement(state, node_name) else {
            return Status::success();
        };
        let pod_name = format!("{}/{}", pod.namespace(), pod.name());
        let max_pods = self.args.max_pods;
        match (&placement.domain, placement.over_limit) {
            (Some(domain), false) => tracing::info!(
                pod = %pod_name, node = node_name, domain = %domain,
                "MaxPodsPerZone PreBind: {}/{max_pods} pods of the group in the domain",
                placement.pods_after
            ),
            (Some(domain), true) => tracing::warn!(
                pod = %pod_name, node = node_name, domain = %domain,
                "MaxPodsPerZone PreBind: {}/{max_pods} pods of the group in the domain, over the limit (audit mode)",
                placement.pods_after
            ),
            (None, _) => tracing::info!(
                pod = %pod_name, node = node_name,
                "MaxPodsPerZone PreBind: node has no {} label, pod is not counted",
                self.args.topology_key
            ),
        }
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    use berth::framework::{Code, decode_args};
    use serde_json::json;

    use super::*;
    use crate::test_util::{node, node_info, pending, pod_on, snapshot};

    const ZONE: &str = "topology.kubernetes.io/zone";

    fn plugin(args: serde_json::Value) -> MaxPodsPerZone {
        let args = decode_args::<MaxPodsPerZoneArgs>(Some(&args), "args")
            .unwrap_or_else(|errors| panic!("test args are valid: {errors:?}"));
        MaxPodsPerZone { args }
    }

    /// zone-a: node-a1 (web-1, web-2), node-a2 (web-3 of another namespace, db-1);
    /// zone-b: node-b1 (web-4); node-x has no zone.
    fn cluster() -> Snapshot {
        let nodes = vec![
            node("node-a1", &[(ZONE, "zone-a")]),
            node("node-a2", &[(ZONE, "zone-a")]),
            node("node-b1", &[(ZONE, "zone-b")]),
            node("node-x", &[]),
        ];
        let pods = vec![
            pod_on("shop", "web-1", &[("app", "web")], Some("node-a1")),
            pod_on("shop", "web-2", &[("app", "web")], Some("node-a1")),
            pod_on("other", "web-3", &[("app", "web")], Some("node-a2")),
            pod_on("shop", "db-1", &[("app", "db")], Some("node-a2")),
            pod_on("shop", "web-4", &[("app", "web")], Some("node-b1")),
            pod_on("shop", "web-5", &[("app", "web")], Some("node-x")),
        ];
        snapshot(nodes, pods)
    }

    /// PreFilter, then Filter on every node: `(PreFilter code, [(node, Filter status)])`.
    async fn run(
        plugin: &MaxPodsPerZone,
        pod: &PodInfo,
    ) -> (CycleState, Code, Vec<(String, Status)>) {
        let snapshot = cluster();
        let mut state = CycleState::new();
        let (_, status) = plugin.pre_filter(&mut state, pod, &snapshot).await;
        let verdicts = snapshot
            .nodes()
            .iter()
            .map(|n| (n.name().to_string(), plugin.filter(&state, pod, n)))
            .collect();
        (state, status.code(), verdicts)
    }

    #[tokio::test]
    async fn filter_rejects_full_domains_and_nodes_without_domain() {
        let full = |max: i32| {
            Status::unschedulable(format!(
                "node(s) were in a topology.kubernetes.io/zone domain already running {max} pod(s) with app=web"
            ))
        };
        let no_zone = Status::unresolvable("node(s) had no topology.kubernetes.io/zone label");
        let ok = Status::success();
        // (case, args, pod labels, expected verdicts for node-a1, node-a2, node-b1, node-x)
        let cases = [
            (
                "defaults: zone-a runs 2 web pods of shop (web-3 is in another namespace), zone-b 1",
                json!({}),
                vec![full(2), full(2), ok.clone(), no_zone.clone()],
            ),
            (
                "maxPods 3: zone-a has room for one more",
                json!({"maxPods": 3}),
                vec![ok.clone(), ok.clone(), ok.clone(), no_zone.clone()],
            ),
            (
                "maxPods 1: zone-b is full too",
                json!({"maxPods": 1}),
                vec![full(1), full(1), full(1), no_zone.clone()],
            ),
            (
                "nodes without a zone admitted: web-5 on node-x is not counted anywhere",
                json!({"nodesWithoutTopology": "Admit"}),
                vec![full(2), full(2), ok.clone(), ok.clone()],
            ),
        ];
        let pod = pending("shop", "web-new", &[("app", "web")]);
        for (name, args, want) in cases {
            let (_, code, verdicts) = run(&plugin(args), &pod).await;
            assert_eq!(code, Code::Success, "case {name}");
            let got: Vec<Status> = verdicts.into_iter().map(|(_, s)| s).collect();
            assert_eq!(got, want, "case {name}");
        }
    }

    #[tokio::test]
    async fn pre_filter_skips_pods_it_does_not_limit() {
        let cases = [
            ("no group label", json!({}), pending("shop", "p", &[])),
            (
                "exempt namespace",
                json!({"exemptNamespaces": ["shop"]}),
                pending("shop", "p", &[("app", "web")]),
            ),
        ];
        for (name, args, pod) in cases {
            let mut state = CycleState::new();
            let (_, status) = plugin(args).pre_filter(&mut state, &pod, &cluster()).await;
            assert_eq!(status.code(), Code::Skip, "case {name}");
            assert!(state.read::<PreFilterState>().is_none(), "case {name}");
        }
    }

    #[tokio::test]
    async fn audit_mode_skips_filter_and_pre_bind_flags_the_excess() {
        let plugin = plugin(json!({"enforce": false}));
        let pod = pending("shop", "web-new", &[("app", "web")]);
        let (mut state, code, _) = run(&plugin, &pod).await;
        assert_eq!(code, Code::Skip);
        // zone-a already runs web-1 and web-2: the pod would be the third of at most 2.
        assert_eq!(
            plugin.placement(&state, "node-a2"),
            Some(Placement {
                domain: Some("zone-a".into()),
                pods_after: 3,
                over_limit: true
            })
        );
        assert_eq!(
            plugin.placement(&state, "node-b1"),
            Some(Placement {
                domain: Some("zone-b".into()),
                pods_after: 2,
                over_limit: false
            })
        );
        assert_eq!(
            plugin.placement(&state, "node-x"),
            Some(Placement {
                domain: None,
                pods_after: 0,
                over_limit: false
            })
        );
        // PreBind reports, it never fails the binding.
        assert!(
            plugin
                .pre_bind(&mut state, &pod, "node-a2")
                .await
                .is_success()
        );
    }

    #[tokio::test]
    async fn pre_bind_of_an_unlimited_pod_succeeds_without_state() {
        let plugin = plugin(json!({}));
        let pod = pending("shop", "p", &[]);
        assert_eq!(plugin.placement(&CycleState::new(), "node-a1"), None);
        let status = plugin
            .pre_bind(&mut CycleState::new(), &pod, "node-a1")
            .await;
        assert!(status.is_success());
    }

    #[tokio::test]
    async fn extensions_count_added_and_removed_group_pods() {
        let plugin = plugin(json!({}));
        let pod = pending("shop", "web-new", &[("app", "web")]);
        let (mut state, _, _) = run(&plugin, &pod).await;
        let zone_b = node_info("node-b1", &[(ZONE, "zone-b")]);
        let zone_a = node_info("node-a1", &[(ZONE, "zone-a")]);
        let web = pending("shop", "web-9", &[("app", "web")]);
        let db = pending("shop", "db-9", &[("app", "db")]);
        // zone-b: 1 web pod + web-9 = 2 = maxPods, so node-b1 is full; db-9 does not count.
        assert!(plugin.add_pod(&mut state, &pod, &web, &zone_b).is_success());
        assert!(plugin.add_pod(&mut state, &pod, &db, &zone_b).is_success());
        assert_eq!(
            plugin.filter(&state, &pod, &zone_b).code(),
            Code::Unschedulable
        );
        // zone-a: 2 web pods - web-1 = 1, so node-a1 has room.
        let web_1 = pending("shop", "web-1", &[("app", "web")]);
        assert!(
            plugin
                .remove_pod(&mut state, &pod, &web_1, &zone_a)
                .is_success()
        );
        assert!(plugin.filter(&state, &pod, &zone_a).is_success());
    }

    #[test]
    fn filter_without_pre_filter_state_is_an_error() {
        let pod = pending("shop", "web-new", &[("app", "web")]);
        let node = node_info("node-a1", &[(ZONE, "zone-a")]);
        let status = plugin(json!({})).filter(&CycleState::new(), &pod, &node);
        assert_eq!(status.code(), Code::Error);
    }

    #[test]
    fn args_default_and_validate_with_field_paths() {
        let defaults = decode_args::<MaxPodsPerZoneArgs>(None, "p").expect("defaults are valid");
        assert_eq!(defaults, MaxPodsPerZoneArgs::default());
        assert_eq!(defaults.max_pods, 2);
        assert!(defaults.enforce);

        let bad = json!({
            "topologyKey": "example.com/rack",
            "maxPods": 0,
            "exemptNamespaces": ["kube-system", "Bad_NS"],
        });
        let errors =
            decode_args::<MaxPodsPerZoneArgs>(Some(&bad), "spec.pluginConfig.maxPodsPerZone")
                .expect_err("invalid args");
        let rendered: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            rendered,
            [
                "spec.pluginConfig.maxPodsPerZone.maxPods: Invalid value: 0: must be between 1 and 1000",
                "spec.pluginConfig.maxPodsPerZone.exemptNamespaces[1]: Invalid value: \"Bad_NS\": a namespace name must be at most 63 lower case alphanumerics or '-', starting and ending with an alphanumeric (e.g. 'kube-system')",
            ]
        );

        let bad_label = json!({"groupLabel": "-app"});
        let errors = decode_args::<MaxPodsPerZoneArgs>(Some(&bad_label), "a").expect_err("invalid");
        assert_eq!(errors[0].path, "a.groupLabel");
        assert_eq!(errors[0].value, "\"-app\"");
    }
}
