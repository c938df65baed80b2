//! The `daemon` controller: which nodes a DaemonSet's pod should run on
//! (`NodeShouldRunDaemonPod`), the tolerations it adds, and the node affinity that pins a
//! pod to its node.

use super::*;

/// Upstream `AddOrUpdateDaemonPodTolerations`: daemon pods tolerate the node conditions
/// that would otherwise keep them off a node, and network-unavailable with hostNetwork.
pub(super) fn add_daemon_tolerations(spec: &mut PodSpec) {
    let mut added = vec![
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ];
    if spec.host_network == Some(true) {
        added.push(("node.kubernetes.io/network-unavailable", "NoSchedule"));
    }
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    for (key, effect) in added {
        let toleration = Toleration {
            key: Some(key.to_string()),
            operator: Some("Exists".to_string()),
            effect: Some(effect.to_string()),
            value: None,
            toleration_seconds: None,
        };
        // `AddOrUpdateTolerationInPodSpec`: an identical toleration is not added twice.
        if !tolerations.contains(&toleration) {
            tolerations.push(toleration);
        }
    }
}

/// Upstream `NodeShouldRunDaemonPod` (the "should run" answer): the template's nodeName,
/// nodeSelector and required node affinity admit the node, and its tolerations (with the
/// daemon tolerations) tolerate every NoSchedule and NoExecute taint.
pub(super) fn should_run_daemon_pod(template: &PodTemplateSpec, node: &Node) -> bool {
    let node_name = node.metadata.name.as_deref().unwrap_or_default();
    let spec = template.spec.clone().unwrap_or_default();
    if spec
        .node_name
        .as_deref()
        .is_some_and(|n| !n.is_empty() && n != node_name)
    {
        return false;
    }
    let tolerations = spec.tolerations.clone().unwrap_or_default();
    let pod = Pod {
        spec: Some(spec),
        ..Pod::default()
    };
    let untolerated = find_untolerated_taint(node_taints(node), &tolerations, |t| {
        t.effect == "NoSchedule" || t.effect == "NoExecute"
    });
    RequiredNodeAffinity::new(&pod).matches(node) && untolerated.is_none()
}

/// Upstream `ReplaceDaemonSetPodNodeNameNodeAffinity`: the required node selector becomes
/// the single term `matchFields: [{key: metadata.name, operator: In, values: [node]}]`
/// (the controller checked the template's own terms against the node already); preferred
/// terms are kept.
pub(super) fn pin_to_node(affinity: Option<Affinity>, node_name: &str) -> Affinity {
    let selector = NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![NodeSelectorRequirement {
                key: NODE_NAME_FIELD.to_string(),
                operator: "In".to_string(),
                values: Some(vec![node_name.to_string()]),
            }]),
        }],
    };
    let mut affinity = affinity.unwrap_or_default();
    affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default)
        .required_during_scheduling_ignored_during_execution = Some(selector);
    affinity
}

/// Upstream `GetTargetNodeName`: the node a daemon pod runs on or is pinned to.
pub(super) fn target_node_name(pod: &Pod) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    if let Some(name) = spec.node_name.as_ref().filter(|n| !n.is_empty()) {
        return Some(name.clone());
    }
    let terms = &spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    terms
        .iter()
        .flat_map(|term| term.match_fields.iter().flatten())
        .find(|r| r.key == NODE_NAME_FIELD && r.operator == "In")
        .and_then(|r| match r.values.as_deref() {
            Some([only]) => Some(only.clone()),
            _ => None,
        })
}
