//! The versions of `KubeSchedulerConfiguration` and what each one meant by "the default
//! plugins".
//!
//! v1 and v1beta3 list their defaults once, as `multiPoint`, with the weights berth's
//! registry uses, so their profiles are copied as written; v1 means kube-scheduler
//! [`UPSTREAM_RELEASE`], whose defaults berth's follow but for [`UPSTREAM_DIFFERENCES`],
//! and a v1beta3 profile keeps VolumeBinding from scoring, as its releases did. The older
//! versions (v1beta2, v1beta1, v1alpha2 and the single-profile v1alpha1) listed defaults
//! point by point, with other Score weights and with plugins that later merged into
//! NodeResourcesFit or were removed. For those, [`Converter::legacy_plugins`] computes what kube-scheduler of that
//! version ran (its defaults merged with the profile's `enabled`/`disabled` by that
//! version's rules), translates the plugin names, and writes out in full each extension
//! point whose plugins or weights berth's own defaults would change. A profile that relied
//! on its version's defaults therefore scores as it did; what berth cannot keep is a note.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{Converter, VOLUME_BINDING, is_empty, not_registered};
use crate::api::{ExtensionPoint, PluginRef, PluginSet, Plugins, SchedulerProfileSpec};
use crate::framework::resolve;

mod legacy;

/// A `kubescheduler.config.k8s.io` version `berth convert` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Version {
    V1alpha1,
    V1alpha2,
    V1beta1,
    V1beta2,
    V1beta3,
    V1,
}

impl Version {
    /// Newest first, as error messages list them.
    pub const ALL: [Version; 6] = [
        Version::V1,
        Version::V1beta3,
        Version::V1beta2,
        Version::V1beta1,
        Version::V1alpha2,
        Version::V1alpha1,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Version::V1alpha1 => "v1alpha1",
            Version::V1alpha2 => "v1alpha2",
            Version::V1beta1 => "v1beta1",
            Version::V1beta2 => "v1beta2",
            Version::V1beta3 => "v1beta3",
            Version::V1 => "v1",
        }
    }

    pub fn parse(name: &str) -> Option<Version> {
        Version::ALL.into_iter().find(|v| v.name() == name)
    }

    /// Whether default plugins were listed point by point (before v1beta3's multiPoint).
    pub fn per_point_defaults(self) -> bool {
        self <= Version::V1beta2
    }

    /// The Kubernetes release whose defaults berth applies for this version: the last
    /// release whose default plugins the version's configurations were written against.
    /// v1 is current upstream ([`UPSTREAM_RELEASE`]); v1beta3's multiPoint defaults are
    /// those v1 had when it arrived (1.25).
    fn release(self) -> &'static str {
        match self {
            Version::V1alpha1 | Version::V1alpha2 => "1.18",
            Version::V1beta1 => "1.19",
            Version::V1beta2 => "1.22",
            Version::V1beta3 => "1.25",
            Version::V1 => UPSTREAM_RELEASE,
        }
    }

    /// The name this version gives extension point `key` of a `plugins` section; `None`
    /// for a key the version does not have.
    fn point(self, key: &str) -> Option<LegacyPoint> {
        let point = match key {
            // v1alpha1's postFilter ran between Filter and Score: v1alpha2 renamed it.
            "postFilter" if self == Version::V1alpha1 => ExtensionPoint::PreScore,
            "preScore" if self == Version::V1alpha1 => return None,
            "postFilter" if self == Version::V1alpha2 => return None,
            "unreserve" if self <= Version::V1alpha2 => return Some(LegacyPoint::Unreserve),
            "multiPoint" if self == Version::V1beta2 => return Some(LegacyPoint::MultiPoint),
            "preEnqueue" if self == Version::V1beta2 => ExtensionPoint::PreEnqueue,
            "preEnqueue" => return None,
            _ => ExtensionPoint::ALL
                .into_iter()
                .find(|p| p.field_name() == key)?,
        };
        Some(LegacyPoint::At(point))
    }

    /// The default plugins of `point`, in order, with Score weights (0 elsewhere).
    fn defaults(self, point: ExtensionPoint) -> &'static [(&'static str, i32)] {
        use ExtensionPoint::*;
        let alpha = self <= Version::V1alpha2;
        match point {
            QueueSort => &[("PrioritySort", 0)],
            PreFilter if alpha => &[
                ("NodeResourcesFit", 0),
                ("NodePorts", 0),
                ("PodTopologySpread", 0),
                ("InterPodAffinity", 0),
            ],
            PreFilter if self == Version::V1beta1 => &[
                ("NodeResourcesFit", 0),
                ("NodePorts", 0),
                ("PodTopologySpread", 0),
                ("InterPodAffinity", 0),
                ("VolumeBinding", 0),
            ],
            PreFilter => &[
                ("NodeResourcesFit", 0),
                ("NodePorts", 0),
                ("VolumeRestrictions", 0),
                ("PodTopologySpread", 0),
                ("InterPodAffinity", 0),
                ("VolumeBinding", 0),
                ("VolumeZone", 0),
                ("NodeAffinity", 0),
            ],
            Filter => &[
                ("NodeUnschedulable", 0),
                ("NodeName", 0),
                ("TaintToleration", 0),
                ("NodeAffinity", 0),
                ("NodePorts", 0),
                ("NodeResourcesFit", 0),
                ("VolumeRestrictions", 0),
                ("EBSLimits", 0),
                ("GCEPDLimits", 0),
                ("NodeVolumeLimits", 0),
                ("AzureDiskLimits", 0),
                ("VolumeBinding", 0),
                ("VolumeZone", 0),
                ("PodTopologySpread", 0),
                ("InterPodAffinity", 0),
            ],
            // The alpha versions preempted without a plugin (`disablePreemption` turned it
            // off); 1.19 made that DefaultPreemption.
            PostFilter => &[("DefaultPreemption", 0)],
            PreScore => match self {
                Version::V1alpha1 | Version::V1alpha2 => &[
                    ("InterPodAffinity", 0),
                    ("PodTopologySpread", 0),
                    ("DefaultPodTopologySpread", 0),
                    ("TaintToleration", 0),
                ],
                Version::V1beta1 => &[
                    ("InterPodAffinity", 0),
                    ("PodTopologySpread", 0),
                    ("SelectorSpread", 0),
                    ("TaintToleration", 0),
                ],
                _ => &[
                    ("InterPodAffinity", 0),
                    ("PodTopologySpread", 0),
                    ("TaintToleration", 0),
                    ("NodeAffinity", 0),
                ],
            },
            Score => match self {
                Version::V1alpha1 | Version::V1alpha2 => &[
                    ("NodeResourcesBalancedAllocation", 1),
                    ("ImageLocality", 1),
                    ("InterPodAffinity", 1),
                    ("NodeResourcesLeastAllocated", 1),
                    ("NodeAffinity", 1),
                    ("NodePreferAvoidPods", 10000),
                    ("PodTopologySpread", 1),
                    ("DefaultPodTopologySpread", 1),
                    ("TaintToleration", 1),
                ],
                Version::V1beta1 => &[
                    ("NodeResourcesBalancedAllocation", 1),
                    ("ImageLocality", 1),
                    ("InterPodAffinity", 1),
                    ("NodeResourcesLeastAllocated", 1),
                    ("NodeAffinity", 1),
                    ("NodePreferAvoidPods", 10000),
                    ("PodTopologySpread", 2),
                    ("SelectorSpread", 1),
                    ("TaintToleration", 1),
                ],
                _ => &[
                    ("NodeResourcesBalancedAllocation", 1),
                    ("ImageLocality", 1),
                    ("InterPodAffinity", 1),
                    ("NodeResourcesFit", 1),
                    ("NodeAffinity", 1),
                    ("PodTopologySpread", 2),
                    ("TaintToleration", 1),
                ],
            },
            Reserve | PreBind => &[("VolumeBinding", 0)],
            PostBind if alpha => &[("VolumeBinding", 0)],
            Bind => &[("DefaultBinder", 0)],
            PreEnqueue | Permit | PostBind => &[],
        }
    }
}

/// The kube-scheduler release berth's defaults follow, and that a v1 configuration is read
/// against.
pub const UPSTREAM_RELEASE: &str = "1.37";

/// One way berth's default plugin set differs from kube-scheduler's of
/// [`UPSTREAM_RELEASE`]. `berth plugins` and docs/plugins.md list them; `berth convert`
/// notes a configuration that enables or configures a plugin berth lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpstreamDifference {
    /// The upstream plugin concerned.
    pub plugin: &'static str,
    /// Whether berth lacks the plugin altogether (rather than a part of what it does).
    pub missing: bool,
    /// The fields of the plugin's upstream args, which `berth convert` accepts and drops
    /// for a missing plugin; empty for a plugin without args.
    pub args_fields: &'static [&'static str],
    /// What upstream's default set does.
    pub upstream: &'static str,
    /// What berth does instead, as a user sees it.
    pub berth: &'static str,
}

/// How berth's default plugin set differs from upstream's ([`UPSTREAM_RELEASE`]).
pub const UPSTREAM_DIFFERENCES: &[UpstreamDifference] = &[
    UpstreamDifference {
        plugin: "DynamicResources",
        missing: false,
        args_fields: &[],
        upstream: "in the default set (dynamic resource allocation is GA and always on since 1.35), \
                   right before DefaultPreemption: allocates devices for a pod's ResourceClaims",
        berth: "in the default set at the same place, live and in `berth simulate`; a pod \
                it rejected is retried on any ResourceClaim change (upstream's queueing \
                hint retries it only when one of its own claims changes), and a pod waiting \
                in PreBind for a device's binding conditions gets no event saying so",
    },
    UpstreamDifference {
        plugin: "GangScheduling",
        missing: false,
        args_fields: &[],
        upstream: "in the default set, last, only with the GenericWorkload feature gate on \
                   (beta, off by default in 1.37); PodGroupPostFilter (DefaultPreemption) \
                   then preempts for a pod group as a unit",
        berth: "always in the default set, last (a pod names a PodGroup only where the API \
                server has the gate on); the pod-group cycle places a PodGroup's members as \
                one operation and preempts for the group as upstream does (victims across \
                the cluster, a PodGroup with `disruptionMode: All` evicted whole, as it is \
                by a lone pod's preemption), with upstream's workload-preemption metrics; a \
                pod it \
                held at PreEnqueue or Permit is retried on any pod or PodGroup addition, not \
                only its own group's; a member waiting at Permit gets no \
                `nominatedNodeName` (upstream sets it, NominatedNodeNameForExpectation); a \
                rejected gang's claims are not deallocated by DynamicResources' \
                PodGroupPostFilter (berth allocates a member's claims only when it binds); \
                on a 1.35 API server it serves `spec.workloadRef` pods as 1.35's plugin \
                does (PreEnqueue and Permit over the `v1alpha1` Workloads), retried on any \
                pod or Workload addition and also on a Workload update",
    },
    UpstreamDifference {
        plugin: "NodeDeclaredFeatures",
        missing: true,
        args_fields: &[],
        upstream: "in the default set (GA in 1.37): keeps a pod off nodes whose \
                   `status.declaredFeatures` lack a feature the pod's spec needs",
        berth: "`node.status.declaredFeatures` is not checked, so a pod may be placed on \
                a node that does not declare a feature it uses",
    },
    UpstreamDifference {
        plugin: "NodeResourcesFit",
        missing: false,
        args_fields: &[],
        upstream: "leaves an extended resource the node does not list in allocatable to \
                   DynamicResources when a DeviceClass maps it (DRA-backed extended resources, \
                   GA in 1.37)",
        berth: "the same at Filter; at Score, a DRA-backed extended resource named in \
                `scoringStrategy.resources` is not counted from the node's devices (upstream \
                counts the DeviceClass's devices on the node and those allocated), so it \
                scores as a resource the node does not have; the default strategy scores \
                cpu and memory only",
    },
];

/// The difference entry of a plugin upstream's default set has and berth lacks.
fn missing_upstream_plugin(name: &str) -> Option<&'static UpstreamDifference> {
    UPSTREAM_DIFFERENCES
        .iter()
        .find(|d| d.missing && d.plugin == name)
}

impl Converter<'_> {
    /// Notes a plugin of upstream's default set that berth lacks, enabled at `path`: the
    /// profile runs without it, as every berth profile does, which is worth knowing but
    /// not a reason to refuse the configuration. False (nothing noted) for other plugins.
    pub(in crate::convert) fn note_missing_upstream_plugin(
        &mut self,
        name: &str,
        path: &str,
    ) -> bool {
        let Some(difference) = missing_upstream_plugin(name) else {
            return false;
        };
        self.note(
            format!("{path}.name"),
            format!(
                "dropped: berth does not have {name}, which kube-scheduler {UPSTREAM_RELEASE} runs by \
                 default; {}",
                difference.berth
            ),
        );
        true
    }

    /// Notes the `pluginConfig` args of a plugin of upstream's default set that berth
    /// lacks: they are dropped, since there is no plugin for them to configure. Fields its
    /// upstream args do not have are reported, as for any plugin. False (nothing done) for
    /// other plugins.
    pub(in crate::convert) fn drop_missing_upstream_args(
        &mut self,
        name: &str,
        args: Option<&Value>,
        path: &str,
    ) -> bool {
        let Some(difference) = missing_upstream_plugin(name) else {
            return false;
        };
        let args_path = format!("{path}.args");
        let Some(args) = self.args_mapping(name, args, &args_path) else {
            return true;
        };
        for key in args.keys() {
            if !difference.args_fields.contains(&key.as_str()) {
                let message = match difference.args_fields {
                    [] => format!("upstream's {name} takes no args"),
                    fields => format!(
                        "unknown field: {name}Args has only {}",
                        fields.join(" and ")
                    ),
                };
                self.unsupported(format!("{args_path}.{key}"), message);
            }
        }
        self.note(
            format!("{path}.name"),
            format!(
                "dropped: berth does not have {name}, which kube-scheduler {UPSTREAM_RELEASE} runs by \
                 default, so there is nothing to configure; {}",
                difference.berth
            ),
        );
        true
    }
}

/// upstream's default VolumeBinding `shape` since 1.37, as the notes write it.
const DEFAULT_SHAPE_TEXT: &str = "[{utilization: 0, score: 10}, {utilization: 100, score: 0}], which prefers nodes with more \
     free capacity";

impl Converter<'_> {
    /// VolumeBinding's `shape` as the version read it: v1 defaulting replaces an empty
    /// shape with upstream's default (StorageCapacityScoring is on since 1.37), which is
    /// berth's default too, so an empty one is dropped rather than refused. The older
    /// versions' profiles do not score with VolumeBinding at all unless a shape is given
    /// ([`Converter::keep_volume_binding_unscored`], the legacy plugin lists).
    pub(in crate::convert) fn adjust_volume_binding_shape(
        &mut self,
        plugin: &str,
        args: &mut Map<String, Value>,
        path: &str,
    ) {
        let empty = match args.get("shape") {
            Some(Value::Null) => true,
            Some(Value::Array(points)) => points.is_empty(),
            _ => false,
        };
        if plugin != VOLUME_BINDING || !empty {
            return;
        }
        args.remove("shape");
        let message = match self.version {
            Version::V1 => format!(
                "dropped: an empty shape is upstream {UPSTREAM_RELEASE}'s default, which berth applies \
                 too: {DEFAULT_SHAPE_TEXT}"
            ),
            version => format!(
                "dropped: an empty shape meant no storage capacity scoring in {}, and the profile \
                 does not score with VolumeBinding",
                version.name()
            ),
        };
        self.note(format!("{path}.shape"), message);
    }

    /// v1 and v1beta3 defaulting reads a resource weight of 0 as 1 (NodeResourcesFit's
    /// `scoringStrategy.resources`, NodeResourcesBalancedAllocation's `resources`);
    /// berth's args take 1..=100, so such a weight is written as 1, with a note.
    pub(in crate::convert) fn adjust_zero_weights(
        &mut self,
        plugin: &str,
        args: &mut Map<String, Value>,
        path: &str,
    ) {
        if self.version.per_point_defaults() {
            return;
        }
        let (resources, resources_path) = match plugin {
            "NodeResourcesFit" => (
                args.get_mut("scoringStrategy")
                    .and_then(|s| s.get_mut("resources")),
                format!("{path}.scoringStrategy.resources"),
            ),
            "NodeResourcesBalancedAllocation" => {
                (args.get_mut("resources"), format!("{path}.resources"))
            }
            _ => return,
        };
        let Some(Value::Array(resources)) = resources else {
            return;
        };
        let mut zeros = Vec::new();
        for (index, resource) in resources.iter_mut().enumerate() {
            if let Some(weight) = resource.get_mut("weight")
                && weight.as_i64() == Some(0)
            {
                *weight = json!(1);
                zeros.push(index);
            }
        }
        for index in zeros {
            self.note(
                format!("{resources_path}[{index}].weight"),
                "weight 0 written as 1, as upstream's defaulting reads it",
            );
        }
    }

    /// v1beta3's releases (1.23-1.28) ran VolumeBinding's Score only with the alpha
    /// VolumeCapacityPriority gate on, which a configuration shows by giving a `shape`;
    /// berth scores by default, as upstream does since 1.37. A v1beta3 profile that would
    /// score with VolumeBinding in berth and gives no shape has it disabled at PreScore and
    /// Score, so it scores as it did (the older versions' recomputed plugin lists leave it
    /// out already).
    pub(in crate::convert) fn keep_volume_binding_unscored(
        &mut self,
        spec: &mut SchedulerProfileSpec,
        path: &str,
    ) {
        if self.version != Version::V1beta3 {
            return;
        }
        let Some(entry) = self.registry.get(VOLUME_BINDING) else {
            return;
        };
        let shape_given = spec
            .plugin_config
            .get(&entry.config_field())
            .is_some_and(|args| args.get("shape").is_some());
        let scores = resolve(spec, self.registry).is_ok_and(|resolved| {
            resolved
                .plugins_at(ExtensionPoint::Score)
                .iter()
                .any(|p| p == VOLUME_BINDING)
        });
        if shape_given || !scores {
            return;
        }
        let plugins = spec.plugins.get_or_insert_default();
        for set in [&mut plugins.pre_score, &mut plugins.score] {
            let disabled = &mut set.get_or_insert_default().disabled;
            if !disabled.iter().any(|p| p.name == VOLUME_BINDING) {
                disabled.push(PluginRef {
                    name: VOLUME_BINDING.into(),
                    weight: None,
                });
            }
        }
        self.note(
            path,
            format!(
                "VolumeBinding disabled at preScore and score: v1beta3's releases did not score by \
                 storage capacity unless the VolumeCapacityPriority alpha gate was on (a shape in \
                 VolumeBinding's args shows that), while berth, as upstream {UPSTREAM_RELEASE}, scores \
                 with {DEFAULT_SHAPE_TEXT}; remove these entries to score so"
            ),
        );
    }
}

/// Where a legacy `plugins` key puts its plugins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LegacyPoint {
    At(ExtensionPoint),
    /// v1beta2 (Kubernetes 1.23+): plugins enabled at every point they implement.
    MultiPoint,
    /// v1alpha1/v1alpha2: berth calls a Reserve plugin's Unreserve itself.
    Unreserve,
}

/// The points whose default lists differ between versions: all but PreEnqueue (the first
/// point), which is read as in v1.
const LEGACY_POINTS: &[ExtensionPoint] = ExtensionPoint::ALL.split_at(1).1;

/// The NodeResourcesFit scoring strategy a Score plugin of the older versions stands for.
pub fn fit_strategy(plugin: &str) -> Option<&'static str> {
    match plugin {
        "NodeResourcesLeastAllocated" => Some("LeastAllocated"),
        "NodeResourcesMostAllocated" => Some("MostAllocated"),
        "RequestedToCapacityRatio" => Some("RequestedToCapacityRatio"),
        _ => None,
    }
}

/// Default plugins of the older versions that berth does not have and whose absence
/// changes scores, with what the user should know.
const DROPPED_DEFAULTS: [(&str, &str); 3] = [
    (
        "NodePreferAvoidPods",
        "NodePreferAvoidPods (weight 10000) is not carried: berth does not have it (upstream removed it \
         in 1.24), so nodes annotated scheduler.alpha.kubernetes.io/preferAvoidPods are no longer avoided",
    ),
    (
        "SelectorSpread",
        "SelectorSpread (weight 1) is not carried: berth does not have it; berth's PodTopologySpread \
         spreads pods of the same Service, ReplicaSet or StatefulSet with its system default \
         constraints instead, as upstream does since 1.20",
    ),
    (
        "DefaultPodTopologySpread",
        "DefaultPodTopologySpread (weight 1, later named SelectorSpread) is not carried: berth does not \
         have it; berth's PodTopologySpread spreads pods of the same Service, ReplicaSet or StatefulSet \
         with its system default constraints instead, as upstream does since 1.20",
    ),
];

/// Plugins upstream removed, and what replaced them.
pub fn removed_upstream(plugin: &str) -> Option<&'static str> {
    match plugin {
        "NodeLabel" => Some(
            "upstream removed NodeLabel in v1beta2; use NodeAffinity with the profile's addedAffinity",
        ),
        "ServiceAffinity" => Some(
            "upstream removed ServiceAffinity in v1beta2; use pod affinity or PodTopologySpread",
        ),
        "NodePreferAvoidPods" => {
            Some("upstream removed NodePreferAvoidPods in v1beta2; taint the nodes instead")
        }
        "SelectorSpread" | "DefaultPodTopologySpread" => Some(
            "upstream replaced it with PodTopologySpread's system default constraints, which berth applies",
        ),
        "NodeResourceLimits" => Some("upstream removed NodeResourceLimits in 1.19"),
        _ => None,
    }
}

/// One plugin of a merged legacy list; `path` is where the input enabled it (`None` for
/// a version default).
#[derive(Debug, Clone)]
struct Entry {
    name: String,
    weight: Option<i32>,
    path: Option<String>,
}

/// A legacy `enabled`/`disabled` pair as written.
#[derive(Debug, Default)]
struct LegacySet {
    enabled: Vec<Entry>,
    disabled: Vec<String>,
}

impl LegacySet {
    fn disables(&self, name: &str) -> bool {
        self.disabled.iter().any(|d| d == "*" || d == name)
    }
}

/// Upstream's `mergePluginSet` of those versions: defaults minus disabled (all with
/// `"*"`), a re-enabled default replaced in place, the other enabled plugins appended.
fn merge(defaults: &[(&'static str, i32)], custom: &LegacySet) -> Vec<Entry> {
    let mut replaced = vec![false; custom.enabled.len()];
    let mut merged = Vec::new();
    if !custom.disabled.iter().any(|d| d == "*") {
        for (name, weight) in defaults {
            if custom.disabled.iter().any(|d| d == name) {
                continue;
            }
            match custom.enabled.iter().position(|e| e.name == *name) {
                Some(index) => {
                    replaced[index] = true;
                    merged.push(custom.enabled[index].clone());
                }
                None => merged.push(Entry {
                    name: name.to_string(),
                    weight: (*weight > 0).then_some(*weight),
                    path: None,
                }),
            }
        }
    }
    merged.extend(
        custom
            .enabled
            .iter()
            .zip(&replaced)
            .filter(|(_, replaced)| !**replaced)
            .map(|(entry, _)| entry.clone()),
    );
    merged
}

/// What one legacy profile's plugins come to in berth's terms.
#[derive(Debug, Default)]
pub struct LegacyPlugins {
    pub plugins: Option<Plugins>,
    /// The NodeResourcesFit scoring strategy a renamed Score plugin stands for.
    pub fit_strategy: Option<&'static str>,
}

#[cfg(test)]
mod tests;
