//! The default profile (`spec: {}`) resolves to upstream kube-scheduler's default plugin
//! list (1.37's `getDefaultPlugins` with DynamicResources, and with GangScheduling as the
//! GenericWorkload gate adds it, expanded per extension point). DefaultPreemption is
//! at PreEnqueue too, as upstream's asynchronous preemption enables it there.

use berth::api::SchedulerProfileSpec;
use berth::framework::{ExtensionPoint, resolve};

fn names(points: &[&str]) -> Vec<String> {
    points.iter().map(|s| s.to_string()).collect()
}

#[test]
fn default_profile_matches_upstream_defaults() {
    let registry = berth::plugins::default_registry();
    let resolved = resolve(&SchedulerProfileSpec::default(), &registry).expect("spec: {} is valid");
    let at = |p| resolved.plugins_at(p).to_vec();
    assert_eq!(
        at(ExtensionPoint::PreEnqueue),
        names(&[
            "SchedulingGates",
            "DynamicResources",
            "DefaultPreemption",
            "GangScheduling",
        ])
    );
    assert_eq!(at(ExtensionPoint::QueueSort), names(&["PrioritySort"]));
    assert_eq!(
        at(ExtensionPoint::PreFilter),
        names(&[
            "NodeAffinity",
            "NodePorts",
            "NodeResourcesFit",
            "VolumeRestrictions",
            "NodeVolumeLimits",
            "VolumeBinding",
            "VolumeZone",
            "PodTopologySpread",
            "InterPodAffinity",
            "DynamicResources",
        ])
    );
    assert_eq!(
        at(ExtensionPoint::Filter),
        names(&[
            "NodeUnschedulable",
            "NodeName",
            "TaintToleration",
            "NodeAffinity",
            "NodePorts",
            "NodeResourcesFit",
            "VolumeRestrictions",
            "NodeVolumeLimits",
            "VolumeBinding",
            "VolumeZone",
            "PodTopologySpread",
            "InterPodAffinity",
            "DynamicResources",
        ])
    );
    assert_eq!(
        at(ExtensionPoint::PreScore),
        names(&[
            "TaintToleration",
            "NodeAffinity",
            "NodeResourcesFit",
            "VolumeBinding",
            "PodTopologySpread",
            "InterPodAffinity",
            "NodeResourcesBalancedAllocation",
        ])
    );
    let score: Vec<(String, i32)> = resolved
        .effective()
        .score
        .into_iter()
        .map(|p| (p.name, p.weight))
        .collect();
    let expected: Vec<(String, i32)> = [
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodeResourcesFit", 1),
        ("VolumeBinding", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("DynamicResources", 2),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
    ]
    .iter()
    .map(|(n, w)| (n.to_string(), *w))
    .collect();
    assert_eq!(score, expected);
    assert_eq!(at(ExtensionPoint::Permit), names(&["GangScheduling"]));
    assert_eq!(at(ExtensionPoint::Bind), names(&["DefaultBinder"]));
    assert_eq!(
        at(ExtensionPoint::PostFilter),
        names(&["DynamicResources", "DefaultPreemption"])
    );
    assert_eq!(
        at(ExtensionPoint::Reserve),
        names(&["VolumeBinding", "DynamicResources"])
    );
    assert_eq!(
        at(ExtensionPoint::PreBind),
        names(&["VolumeBinding", "DynamicResources"])
    );
}
