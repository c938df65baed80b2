//! Profile resolution: from `spec.plugins` and `spec.pluginConfig` to the ordered plugin
//! list of every extension point, following upstream's rules exactly.
//!
//! Upstream (v1 config) keeps the default plugin set as one `multiPoint` list. Resolution
//! takes kube-scheduler's two steps, then one of berth's own:
//!
//! 1. **Merge** (`mergePluginSet`): the user's `multiPoint` set is merged into the default
//!    `multiPoint` list. `disabled: [{name: "*"}]` drops every default; a disabled default
//!    is dropped; a default re-listed in `enabled` is replaced *in place* (so it keeps its
//!    default position, with the user's weight); other enabled plugins follow the defaults
//!    in the order listed.
//! 2. **Expand** (`expandMultiPointPlugins`), per extension point: the plugins enabled
//!    specifically at the point, and every `multiPoint` plugin that implements the point
//!    and is not disabled there, ordered as
//!    (a) plugins enabled at the point that also come from multiPoint ("overrides"), in
//!    the point's order, then (b) the remaining multiPoint plugins in multiPoint order, then
//!    (c) the remaining plugins enabled at the point. `disabled: ["*"]` at a point skips
//!    multiPoint expansion there entirely. So "disable X at a point, then enable X there"
//!    moves X after the multiPoint plugins, while merely re-listing X at the point moves it
//!    to the front.
//! 3. **Couple** (berth's own rule; upstream has none): a plugin whose Filter reads what
//!    its own PreFilter wrote into the `CycleState`, or whose Score reads what its PreScore
//!    wrote, declares so in the registry ([`crate::framework::Coupling`]). Wherever such a
//!    plugin ends up at Filter (Score) after expansion, it also runs at PreFilter
//!    (PreScore): without it, upstream's plugins fail every pod with an internal error and
//!    the metrics plugins score every node the same, which is what the tutorials'
//!    `score: {enabled: [{name: NetworkTraffic}], disabled: [{name: "*"}]}` did. The added
//!    pre-points come after the pre-point's other plugins, in the order of the point that
//!    needs them, so the lists the user wrote keep their order; the default set enables
//!    every plugin at all its points, so default profiles are unchanged. A profile that
//!    disables the plugin at the pre-point *by name* asked for the impossible and is
//!    rejected, with the error naming the disabling entry and where the plugin was enabled;
//!    `disabled: [{name: "*"}]` at the pre-point only drops the defaults and does not stop
//!    the coupling.
//!
//! The reverse is legal but useless: a plugin the profile enables (in `multiPoint` or at
//! `preScore`) that runs at PreScore but not at Score (`score.disabled`) computes, or for
//! the metrics plugins queries Prometheus, for nothing. That is a warning. Default
//! plugins left at PreScore by `score.disabled: [{name: "*"}]` are not warned about: the
//! profile did not ask for them, and upstream runs their PreScore the same way.
//!
//! Score weights come from the point's own `enabled` entry when present, else from the
//! multiPoint entry; a missing weight means 1.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use crate::api::{
    EffectivePlugins, PluginRef, PluginSet, Plugins, SchedulerProfileSpec, WeightedPlugin,
};

use super::{ExtensionPoint, FieldError, Registry};

/// The input of resolution: a profile's spec.
pub type ProfileConfig = SchedulerProfileSpec;

/// A profile after merging, expansion and args checking, ready to instantiate.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResolvedProfile {
    /// Plugin names per extension point, in call order.
    pub points: BTreeMap<ExtensionPoint, Vec<String>>,
    /// Score weight per Score plugin.
    pub score_weights: HashMap<String, i32>,
    /// Raw args per plugin name (only plugins that are enabled somewhere).
    pub args: BTreeMap<String, serde_json::Value>,
    /// Non-fatal findings, e.g. args for a plugin that is not enabled.
    pub warnings: Vec<String>,
    /// `spec.percentageOfNodesToScore` (None or 0 = adaptive).
    pub percentage_of_nodes_to_score: Option<i32>,
    /// Initial and maximum backoff of failed pods.
    pub backoff: (Duration, Duration),
    /// `spec.opportunisticBatching` (absent = true).
    pub opportunistic_batching: bool,
}

impl ResolvedProfile {
    /// The plugins at `point`, in call order.
    pub fn plugins_at(&self, point: ExtensionPoint) -> &[String] {
        self.points.get(&point).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Every plugin enabled at some point, each once, in first-use order.
    pub fn all_plugins(&self) -> Vec<String> {
        let mut seen = HashSet::new();
        ExtensionPoint::ALL
            .iter()
            .flat_map(|p| self.plugins_at(*p).iter())
            .filter(|name| seen.insert(name.as_str()))
            .cloned()
            .collect()
    }

    /// The effective plugin list as reported in the profile status.
    pub fn effective(&self) -> EffectivePlugins {
        let names = |p| self.plugins_at(p).to_vec();
        EffectivePlugins {
            pre_enqueue: names(ExtensionPoint::PreEnqueue),
            queue_sort: names(ExtensionPoint::QueueSort),
            pre_filter: names(ExtensionPoint::PreFilter),
            filter: names(ExtensionPoint::Filter),
            post_filter: names(ExtensionPoint::PostFilter),
            pre_score: names(ExtensionPoint::PreScore),
            score: self
                .plugins_at(ExtensionPoint::Score)
                .iter()
                .map(|n| WeightedPlugin {
                    name: n.clone(),
                    weight: self.score_weights.get(n).copied().unwrap_or(1),
                })
                .collect(),
            reserve: names(ExtensionPoint::Reserve),
            permit: names(ExtensionPoint::Permit),
            pre_bind: names(ExtensionPoint::PreBind),
            bind: names(ExtensionPoint::Bind),
            post_bind: names(ExtensionPoint::PostBind),
        }
    }
}

/// The lowest and highest Score weight a profile may set.
pub const WEIGHT_RANGE: std::ops::RangeInclusive<i32> = 1..=100;

/// Resolves `spec` against `registry`. All problems are collected; each names its field.
pub fn resolve(
    spec: &SchedulerProfileSpec,
    registry: &Registry,
) -> Result<ResolvedProfile, Vec<FieldError>> {
    let mut errors = Vec::new();
    let plugins = spec.plugins.clone().unwrap_or_default();
    let empty = PluginSet::default();

    let custom_multi = plugins.multi_point.as_ref().unwrap_or(&empty);
    check_set(registry, "multiPoint", None, custom_multi, &mut errors);
    let defaults: Vec<PluginRef> = registry
        .defaults()
        .iter()
        .map(|d| PluginRef {
            name: d.name.to_string(),
            weight: d.weight,
        })
        .collect();
    let multi_point = merge_plugin_set(&defaults, custom_multi);

    let mut resolved = ResolvedProfile::default();
    for point in ExtensionPoint::ALL {
        let set = plugins.at(point).unwrap_or(&empty);
        check_set(registry, point.field_name(), Some(point), set, &mut errors);
        let names = expand(registry, point, &multi_point, set, &mut errors);
        if point == ExtensionPoint::Score {
            for name in &names {
                let specific = set.enabled.iter().find(|p| &p.name == name);
                let from_multi = multi_point.iter().find(|p| &p.name == name);
                let weight = match specific {
                    Some(p) => p.weight,
                    None => from_multi.and_then(|p| p.weight),
                };
                let weight = weight.unwrap_or(1);
                resolved.score_weights.insert(name.clone(), weight);
            }
        }
        resolved.points.insert(point, names);
    }
    couple_pre_points(registry, &plugins, &mut resolved, &mut errors);
    warn_pre_score_without_score(registry, &plugins, &mut resolved);

    check_cardinality(&resolved, &mut errors);
    resolved.percentage_of_nodes_to_score = spec.percentage_of_nodes_to_score;
    resolved.opportunistic_batching = spec.opportunistic_batching.unwrap_or(true);
    resolved.backoff = resolve_backoff(spec, &mut errors);
    resolve_args(spec, registry, &mut resolved, &mut errors);
    if errors.is_empty() {
        Ok(resolved)
    } else {
        Err(errors)
    }
}

/// Upstream `mergePluginSet` for the multiPoint list: defaults minus disabled, with
/// re-listed defaults replaced in place, then the other enabled plugins in order.
fn merge_plugin_set(defaults: &[PluginRef], custom: &PluginSet) -> Vec<PluginRef> {
    let disabled: HashSet<&str> = custom.disabled.iter().map(|p| p.name.as_str()).collect();
    let mut replaced = HashSet::new();
    let mut merged = Vec::new();
    if !disabled.contains("*") {
        for default in defaults
            .iter()
            .filter(|d| !disabled.contains(d.name.as_str()))
        {
            match custom.enabled.iter().position(|p| p.name == default.name) {
                Some(index) => {
                    replaced.insert(index);
                    merged.push(custom.enabled[index].clone());
                }
                None => merged.push(default.clone()),
            }
        }
    }
    merged.extend(
        custom
            .enabled
            .iter()
            .enumerate()
            .filter(|(i, _)| !replaced.contains(i))
            .map(|(_, p)| p.clone()),
    );
    merged
}

/// Upstream `expandMultiPointPlugins` for one point.
fn expand(
    registry: &Registry,
    point: ExtensionPoint,
    multi_point: &[PluginRef],
    set: &PluginSet,
    errors: &mut Vec<FieldError>,
) -> Vec<String> {
    let enabled: Vec<&str> = set.enabled.iter().map(|p| p.name.as_str()).collect();
    let disabled: HashSet<&str> = set.disabled.iter().map(|p| p.name.as_str()).collect();
    if disabled.contains("*") {
        return enabled.iter().map(|s| s.to_string()).collect();
    }
    let mut overrides = HashSet::new();
    let mut from_multi: Vec<&str> = Vec::new();
    for (i, plugin) in multi_point.iter().enumerate() {
        let Some(entry) = registry.get(&plugin.name) else {
            continue;
        };
        if !entry.implements(point) || disabled.contains(plugin.name.as_str()) {
            continue;
        }
        if enabled.contains(&plugin.name.as_str()) {
            overrides.insert(plugin.name.as_str());
            continue;
        }
        if from_multi.contains(&plugin.name.as_str()) {
            errors.push(FieldError::duplicate(
                format!("spec.plugins.multiPoint.enabled[{i}].name"),
                &serde_json::Value::from(plugin.name.as_str()),
                "",
            ));
            continue;
        }
        from_multi.push(plugin.name.as_str());
    }
    let (first, last): (Vec<&str>, Vec<&str>) =
        enabled.iter().partition(|name| overrides.contains(*name));
    first
        .into_iter()
        .chain(from_multi)
        .chain(last)
        .map(str::to_string)
        .collect()
}

/// Step 3 of the module docs: every coupled pre-point runs, or the profile is rejected.
fn couple_pre_points(
    registry: &Registry,
    plugins: &Plugins,
    resolved: &mut ResolvedProfile,
    errors: &mut Vec<FieldError>,
) {
    for point in ExtensionPoint::ALL {
        for name in resolved.plugins_at(point).to_vec() {
            let Some(pre_point) = registry.get(&name).and_then(|e| e.pre_point_of(point)) else {
                continue;
            };
            if resolved.plugins_at(pre_point).contains(&name) {
                continue;
            }
            let disabled_at = plugins
                .at(pre_point)
                .and_then(|set| set.disabled.iter().position(|p| p.name == name));
            match disabled_at {
                Some(i) => errors.push(FieldError::invalid(
                    format!("spec.plugins.{}.disabled[{i}].name", pre_point.field_name()),
                    &serde_json::Value::from(name.as_str()),
                    format!(
                        "{name} runs at {point} ({}) and its {point} reads what its \
                         {pre_point} computes in the same cycle; do not disable it at {}, or \
                         disable it at {} as well",
                        enabled_by(plugins, point, &name),
                        pre_point.field_name(),
                        point.field_name(),
                    ),
                )),
                None => resolved.points.entry(pre_point).or_default().push(name),
            }
        }
    }
}

/// Where `name` was enabled at `point`: the field path of its entry, or the default set.
fn enabled_by(plugins: &Plugins, point: ExtensionPoint, name: &str) -> String {
    let position = |set: Option<&PluginSet>| {
        set.and_then(|set| set.enabled.iter().position(|p| p.name == name))
    };
    if let Some(i) = position(plugins.at(point)) {
        format!("spec.plugins.{}.enabled[{i}].name", point.field_name())
    } else if let Some(i) = position(plugins.multi_point.as_ref()) {
        format!("spec.plugins.multiPoint.enabled[{i}].name")
    } else {
        "from the default plugin set".to_string()
    }
}

/// The warning of the module docs: a plugin the profile enables runs its PreScore for a
/// Score that never runs.
fn warn_pre_score_without_score(
    registry: &Registry,
    plugins: &Plugins,
    resolved: &mut ResolvedProfile,
) {
    let listed = |set: Option<&PluginSet>, name: &str| {
        set.is_some_and(|set| set.enabled.iter().any(|p| p.name == name))
    };
    let score = plugins.at(ExtensionPoint::Score);
    let mut warnings = Vec::new();
    for name in resolved.plugins_at(ExtensionPoint::PreScore) {
        let scores = registry
            .get(name)
            .is_some_and(|e| e.implements(ExtensionPoint::Score));
        let asked_for = listed(plugins.multi_point.as_ref(), name)
            || listed(plugins.at(ExtensionPoint::PreScore), name);
        if !scores || !asked_for || resolved.plugins_at(ExtensionPoint::Score).contains(name) {
            continue;
        }
        let disabled = score.and_then(|set| {
            let by_name = set.disabled.iter().position(|p| &p.name == name);
            by_name.or_else(|| set.disabled.iter().position(|p| p.name == "*"))
        });
        let path = match disabled {
            Some(i) => format!("spec.plugins.score.disabled[{i}].name"),
            None => enabled_by(plugins, ExtensionPoint::PreScore, name),
        };
        warnings.push(format!(
            "{path}: {name} runs at PreScore but not at Score, so what its PreScore computes \
             (for a metrics plugin, a Prometheus query per pod) is never used; enable it at \
             score, or disable it at preScore as well"
        ));
    }
    resolved.warnings.extend(warnings);
}

/// Checks names, points, duplicates and weights of one `spec.plugins.<field>` set.
fn check_set(
    registry: &Registry,
    field: &str,
    point: Option<ExtensionPoint>,
    set: &PluginSet,
    errors: &mut Vec<FieldError>,
) {
    let mut seen = HashSet::new();
    for (i, plugin) in set.enabled.iter().enumerate() {
        let path = format!("spec.plugins.{field}.enabled[{i}]");
        let name = serde_json::Value::from(plugin.name.as_str());
        match registry.get(&plugin.name) {
            None => errors.push(FieldError::not_supported(
                format!("{path}.name"),
                &name,
                &registry.names(),
            )),
            Some(entry) => {
                if let Some(point) = point.filter(|p| !entry.implements(*p)) {
                    errors.push(not_implemented(
                        registry,
                        &format!("{path}.name"),
                        &name,
                        point,
                    ));
                }
            }
        }
        if !seen.insert(plugin.name.as_str()) {
            errors.push(FieldError::duplicate(format!("{path}.name"), &name, ""));
        }
        if let Some(weight) = plugin.weight.filter(|w| !WEIGHT_RANGE.contains(w)) {
            errors.push(FieldError::new(
                format!("{path}.weight"),
                weight,
                format!(
                    "must be between {} and {}",
                    WEIGHT_RANGE.start(),
                    WEIGHT_RANGE.end()
                ),
            ));
        }
    }
    for (i, plugin) in set.disabled.iter().enumerate() {
        if plugin.name != "*" && registry.get(&plugin.name).is_none() {
            let mut supported = registry.names();
            supported.push("*");
            errors.push(FieldError::not_supported(
                format!("spec.plugins.{field}.disabled[{i}].name"),
                &serde_json::Value::from(plugin.name.as_str()),
                &supported,
            ));
        }
    }
}

/// A plugin enabled at a point it does not implement (upstream: "plugin X does not extend
/// Y plugin"), worded as the CRD's per-point enum words it.
fn not_implemented(
    registry: &Registry,
    path: &str,
    name: &serde_json::Value,
    point: ExtensionPoint,
) -> FieldError {
    let implementing: Vec<&str> = registry
        .entries()
        .filter(|entry| entry.implements(point))
        .map(|entry| entry.name)
        .collect();
    if implementing.is_empty() {
        FieldError::forbidden(
            path,
            format!("no registered plugin implements the {point} extension point"),
        )
    } else {
        FieldError::not_supported(path, name, &implementing)
    }
}

/// Backoff bounds, defaulted (1 s, 10 s) and checked (initial >= 1, max >= initial).
fn resolve_backoff(
    spec: &SchedulerProfileSpec,
    errors: &mut Vec<FieldError>,
) -> (Duration, Duration) {
    let initial = spec
        .pod_initial_backoff_seconds
        .unwrap_or(SchedulerProfileSpec::DEFAULT_INITIAL_BACKOFF_SECONDS);
    let max = spec
        .pod_max_backoff_seconds
        .unwrap_or(SchedulerProfileSpec::DEFAULT_MAX_BACKOFF_SECONDS.max(initial));
    if initial < 1 {
        errors.push(FieldError::new(
            "spec.podInitialBackoffSeconds",
            initial,
            "must be greater than or equal to 1",
        ));
    }
    if max < initial {
        errors.push(FieldError::new(
            "spec.podMaxBackoffSeconds",
            max,
            format!("must be greater than or equal to podInitialBackoffSeconds ({initial})"),
        ));
    }
    if let Some(pct) = spec
        .percentage_of_nodes_to_score
        .filter(|p| !(0..=100).contains(p))
    {
        errors.push(FieldError::new(
            "spec.percentageOfNodesToScore",
            pct,
            "must be between 0 and 100",
        ));
    }
    let secs = |s: i64| Duration::from_secs(s.max(1) as u64);
    (secs(initial), secs(max.max(initial)))
}

/// Upstream's framework requirements: exactly one QueueSort plugin, at least one Bind.
fn check_cardinality(resolved: &ResolvedProfile, errors: &mut Vec<FieldError>) {
    let queue_sort = resolved.plugins_at(ExtensionPoint::QueueSort);
    match queue_sort.len() {
        0 => errors.push(FieldError::required(
            "spec.plugins.queueSort",
            "exactly one QueueSort plugin must be enabled",
        )),
        1 => {}
        _ => errors.push(FieldError::invalid(
            "spec.plugins.queueSort",
            &serde_json::Value::from(queue_sort.to_vec()),
            "exactly one QueueSort plugin must be enabled; disable the default one \
             (disabled: [{name: \"*\"}]) when enabling another",
        )),
    }
    if resolved.plugins_at(ExtensionPoint::Bind).is_empty() {
        errors.push(FieldError::required(
            "spec.plugins.bind",
            "at least one Bind plugin must be enabled",
        ));
    }
}

/// Decodes and validates `spec.pluginConfig`, keeping the args of enabled plugins.
fn resolve_args(
    spec: &SchedulerProfileSpec,
    registry: &Registry,
    resolved: &mut ResolvedProfile,
    errors: &mut Vec<FieldError>,
) {
    let enabled: HashSet<String> = resolved.all_plugins().into_iter().collect();
    for (field, value) in &spec.plugin_config {
        let path = format!("spec.pluginConfig.{field}");
        let entry = registry
            .entries()
            .find(|e| e.args.is_some() && e.config_field() == *field);
        let Some(entry) = entry else {
            errors.push(FieldError::unknown_field(path));
            continue;
        };
        if let Some(spec) = &entry.args {
            errors.extend(spec.check(value, &path));
        }
        if enabled.contains(entry.name) {
            resolved.args.insert(entry.name.to_string(), value.clone());
        } else {
            resolved.warnings.push(format!(
                "{path}: args given for plugin {} which is not enabled in this profile; they are ignored",
                entry.name
            ));
        }
    }
    // An enabled plugin without args runs on its defaults, which may lack a required field
    // (the Prometheus plugins' `prometheusAddress`): check them as if given.
    for entry in registry.entries().filter(|e| enabled.contains(e.name)) {
        let field = entry.config_field();
        if let Some(args) = entry
            .args
            .as_ref()
            .filter(|_| !spec.plugin_config.contains_key(&field))
        {
            errors.extend(args.check(
                &serde_json::Value::Null,
                &format!("spec.pluginConfig.{field}"),
            ));
        }
    }
}

#[cfg(test)]
mod tests;
