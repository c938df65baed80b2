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
mod tests {
    use super::*;
    use crate::api::Plugins;
    use crate::framework::{
        Coupling, DefaultPlugin, Handle, NoArgs, Plugin, PluginError, PluginFactory,
    };
    use ExtensionPoint::*;

    macro_rules! fake_plugin {
        ($ty:ident, [$($point:ident),*]) => {
            fake_plugin!($ty, [$($point),*], []);
        };
        ($ty:ident, [$($point:ident),*], [$($coupling:ident),*]) => {
            struct $ty;
            impl Plugin for $ty {
                fn name(&self) -> &str {
                    stringify!($ty)
                }
            }
            impl PluginFactory for $ty {
                const NAME: &'static str = stringify!($ty);
                const POINTS: &'static [ExtensionPoint] = &[$($point),*];
                const COUPLINGS: &'static [Coupling] = &[$(Coupling::$coupling),*];
                type Args = NoArgs;
                fn build(_: NoArgs, _: &Handle) -> Result<Self, PluginError> {
                    Ok($ty)
                }
            }
        };
    }

    fake_plugin!(Sort, [QueueSort]);
    fake_plugin!(OtherSort, [QueueSort]);
    fake_plugin!(FilterA, [PreFilter, Filter], [FilterNeedsPreFilter]);
    fake_plugin!(FilterB, [Filter, Score]);
    fake_plugin!(ScoreC, [PreScore, Score], [ScoreNeedsPreScore]);
    fake_plugin!(Custom, [Filter, Score]);
    // Shaped like NetworkTraffic (Score reads PreScore's query) and NodePorts.
    fake_plugin!(Metered, [PreScore, Score], [ScoreNeedsPreScore]);
    fake_plugin!(Ported, [PreFilter, Filter], [FilterNeedsPreFilter]);
    // Recomputes in Score what PreScore would have given, as NodeAffinity does.
    fake_plugin!(Lenient, [PreScore, Score]);
    fake_plugin!(Binder1, [Bind]);
    fake_plugin!(Binder2, [Bind]);

    /// Defaults shaped like upstream's: a multiPoint list with weights.
    fn registry() -> Registry {
        let mut r = Registry::new();
        r.register::<Sort>()
            .register::<OtherSort>()
            .register::<FilterA>()
            .register::<FilterB>()
            .register::<ScoreC>()
            .register::<Custom>()
            .register::<Metered>()
            .register::<Ported>()
            .register::<Lenient>()
            .register::<Binder1>()
            .register::<Binder2>();
        r.set_defaults(vec![
            DefaultPlugin::new("Sort"),
            DefaultPlugin::new("FilterA"),
            DefaultPlugin::weighted("FilterB", 3),
            DefaultPlugin::weighted("ScoreC", 2),
            DefaultPlugin::new("Binder1"),
        ]);
        r
    }

    fn set(enabled: &[(&str, Option<i32>)], disabled: &[&str]) -> Option<PluginSet> {
        Some(PluginSet {
            enabled: enabled
                .iter()
                .map(|(n, w)| PluginRef {
                    name: n.to_string(),
                    weight: *w,
                })
                .collect(),
            disabled: disabled.iter().map(|n| PluginRef::named(n)).collect(),
        })
    }

    fn spec(plugins: Plugins) -> SchedulerProfileSpec {
        SchedulerProfileSpec {
            plugins: Some(plugins),
            ..Default::default()
        }
    }

    fn names(r: &ResolvedProfile, p: ExtensionPoint) -> Vec<&str> {
        r.plugins_at(p).iter().map(String::as_str).collect()
    }

    #[test]
    fn empty_spec_gives_the_defaults_at_every_point_they_implement() {
        let r = resolve(&SchedulerProfileSpec::default(), &registry()).unwrap();
        assert_eq!(names(&r, QueueSort), ["Sort"]);
        assert_eq!(names(&r, PreFilter), ["FilterA"]);
        assert_eq!(names(&r, Filter), ["FilterA", "FilterB"]);
        assert_eq!(names(&r, PreScore), ["ScoreC"]);
        assert_eq!(names(&r, Score), ["FilterB", "ScoreC"]);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert_eq!(names(&r, Bind), ["Binder1"]);
        assert_eq!(r.score_weights["FilterB"], 3);
        assert_eq!(r.score_weights["ScoreC"], 2);
    }

    #[test]
    fn merge_rules_table() {
        struct Case {
            name: &'static str,
            plugins: Plugins,
            point: ExtensionPoint,
            want: &'static [&'static str],
        }
        let cases = [
            Case {
                name: "disabling a default at one point removes it only there",
                plugins: Plugins {
                    score: set(&[], &["FilterB"]),
                    ..Default::default()
                },
                point: Score,
                want: &["ScoreC"],
            },
            Case {
                name: "star disables every default at the point",
                plugins: Plugins {
                    filter: set(&[("Custom", None)], &["*"]),
                    ..Default::default()
                },
                point: Filter,
                want: &["Custom"],
            },
            Case {
                name: "re-listing a default at a point without disabling it moves it first (override)",
                plugins: Plugins {
                    filter: set(&[("FilterB", None)], &[]),
                    ..Default::default()
                },
                point: Filter,
                want: &["FilterB", "FilterA"],
            },
            Case {
                name: "disable then enable at a point moves the default after the multiPoint plugins",
                plugins: Plugins {
                    filter: set(&[("FilterA", None)], &["FilterA"]),
                    ..Default::default()
                },
                point: Filter,
                want: &["FilterB", "FilterA"],
            },
            Case {
                name: "a non-default plugin enabled at a point runs after the defaults",
                plugins: Plugins {
                    filter: set(&[("Custom", None)], &[]),
                    ..Default::default()
                },
                point: Filter,
                want: &["FilterA", "FilterB", "Custom"],
            },
            Case {
                name: "multiPoint enables a plugin at every point it implements",
                plugins: Plugins {
                    multi_point: set(&[("Custom", None)], &[]),
                    ..Default::default()
                },
                point: Score,
                want: &["FilterB", "ScoreC", "Custom"],
            },
            Case {
                name: "a default re-listed in multiPoint keeps its default position",
                plugins: Plugins {
                    multi_point: set(&[("FilterA", None)], &[]),
                    ..Default::default()
                },
                point: Filter,
                want: &["FilterA", "FilterB"],
            },
            Case {
                name: "multiPoint star drops every default; specific points still add",
                plugins: Plugins {
                    multi_point: set(&[("OtherSort", None), ("Binder2", None)], &["*"]),
                    filter: set(&[("Custom", None)], &[]),
                    ..Default::default()
                },
                point: Filter,
                want: &["Custom"],
            },
            Case {
                name: "a plugin enabled via multiPoint can be disabled at one point",
                plugins: Plugins {
                    multi_point: set(&[("Custom", None)], &[]),
                    score: set(&[], &["Custom"]),
                    ..Default::default()
                },
                point: Score,
                want: &["FilterB", "ScoreC"],
            },
        ];
        for case in cases {
            let r = resolve(&spec(case.plugins), &registry())
                .unwrap_or_else(|e| panic!("{}: {e:?}", case.name));
            assert_eq!(names(&r, case.point), case.want, "{}", case.name);
        }
    }

    #[test]
    fn weights_come_from_the_point_then_multi_point_then_one() {
        let r = resolve(
            &spec(Plugins {
                multi_point: set(&[("Custom", Some(7)), ("FilterB", Some(5))], &[]),
                score: set(&[("ScoreC", None)], &[]),
                ..Default::default()
            }),
            &registry(),
        )
        .unwrap();
        assert_eq!(r.score_weights["Custom"], 7);
        assert_eq!(
            r.score_weights["FilterB"], 5,
            "multiPoint re-listing replaces the default weight"
        );
        assert_eq!(
            r.score_weights["ScoreC"], 1,
            "a point entry without weight means 1"
        );
    }

    #[test]
    fn errors_name_the_field_and_are_all_collected() {
        let err = resolve(
            &spec(Plugins {
                filter: set(&[("Nope", None), ("Sort", None)], &[]),
                score: set(&[("ScoreC", Some(0)), ("ScoreC", Some(101))], &[]),
                queue_sort: set(&[("OtherSort", None)], &[]),
                ..Default::default()
            }),
            &registry(),
        )
        .unwrap_err();
        let paths: Vec<&str> = err.iter().map(|e| e.path.as_str()).collect();
        assert!(
            paths.contains(&"spec.plugins.filter.enabled[0].name"),
            "{paths:?}"
        );
        assert!(
            paths.contains(&"spec.plugins.filter.enabled[1].name"),
            "Sort is not a Filter plugin: {paths:?}"
        );
        assert!(
            paths.contains(&"spec.plugins.score.enabled[0].weight"),
            "{paths:?}"
        );
        assert!(
            paths.contains(&"spec.plugins.score.enabled[1].weight"),
            "{paths:?}"
        );
        assert!(
            paths.contains(&"spec.plugins.score.enabled[1].name"),
            "duplicate: {paths:?}"
        );
        assert!(
            paths.contains(&"spec.plugins.queueSort"),
            "two QueueSort plugins: {paths:?}"
        );
        let weight = err
            .iter()
            .find(|e| e.path == "spec.plugins.score.enabled[1].weight")
            .unwrap();
        assert_eq!(weight.value, "101");
    }

    #[test]
    fn a_profile_without_binder_is_rejected() {
        let err = resolve(
            &spec(Plugins {
                bind: set(&[], &["*"]),
                ..Default::default()
            }),
            &registry(),
        )
        .unwrap_err();
        assert_eq!(err[0].path, "spec.plugins.bind");
    }

    #[test]
    fn backoff_bounds_are_checked() {
        let bad = SchedulerProfileSpec {
            pod_initial_backoff_seconds: Some(5),
            pod_max_backoff_seconds: Some(2),
            ..Default::default()
        };
        let err = resolve(&bad, &registry()).unwrap_err();
        assert_eq!(err[0].path, "spec.podMaxBackoffSeconds");
        let ok = resolve(&SchedulerProfileSpec::default(), &registry()).unwrap();
        assert_eq!(
            ok.backoff,
            (Duration::from_secs(1), Duration::from_secs(10))
        );
    }

    #[test]
    fn coupled_pre_points_are_added_table() {
        struct Case {
            name: &'static str,
            plugins: Plugins,
            point: ExtensionPoint,
            want: &'static [&'static str],
        }
        let cases = [
            Case {
                name: "the tutorials' score-only shape gets its PreScore, after the point's own plugins",
                plugins: Plugins {
                    score: set(&[("Metered", None)], &["*"]),
                    ..Default::default()
                },
                point: PreScore,
                want: &["ScoreC", "Metered"],
            },
            Case {
                name: "and runs at Score alone",
                plugins: Plugins {
                    score: set(&[("Metered", None)], &["*"]),
                    ..Default::default()
                },
                point: Score,
                want: &["Metered"],
            },
            Case {
                name: "a filter-only plugin gets its PreFilter",
                plugins: Plugins {
                    filter: set(&[("Ported", None)], &[]),
                    ..Default::default()
                },
                point: PreFilter,
                want: &["FilterA", "Ported"],
            },
            Case {
                name: "a star at the pre-point drops the defaults there but not the coupling",
                plugins: Plugins {
                    pre_score: set(&[], &["*"]),
                    score: set(&[("Metered", None)], &[]),
                    ..Default::default()
                },
                point: PreScore,
                want: &["ScoreC", "Metered"],
            },
            Case {
                name: "added pre-points follow the order of the point that needs them",
                plugins: Plugins {
                    pre_score: set(&[], &["*"]),
                    score: set(&[("Metered", None), ("ScoreC", None)], &["*"]),
                    ..Default::default()
                },
                point: PreScore,
                want: &["Metered", "ScoreC"],
            },
            Case {
                name: "a pre-point the user listed keeps its place",
                plugins: Plugins {
                    pre_score: set(&[("Metered", None)], &[]),
                    score: set(&[("Metered", None)], &[]),
                    ..Default::default()
                },
                point: PreScore,
                want: &["ScoreC", "Metered"],
            },
            Case {
                name: "a plugin that recomputes in Score is not coupled",
                plugins: Plugins {
                    score: set(&[("Lenient", None)], &["*"]),
                    ..Default::default()
                },
                point: PreScore,
                want: &["ScoreC"],
            },
        ];
        for case in cases {
            let r = resolve(&spec(case.plugins), &registry())
                .unwrap_or_else(|e| panic!("{}: {e:?}", case.name));
            assert_eq!(names(&r, case.point), case.want, "{}", case.name);
        }
    }

    #[test]
    fn the_effective_list_shows_the_coupled_pre_point() {
        let r = resolve(
            &spec(Plugins {
                score: set(&[("Metered", Some(5))], &["*"]),
                ..Default::default()
            }),
            &registry(),
        )
        .unwrap();
        let effective = r.effective();
        assert_eq!(effective.pre_score, ["ScoreC", "Metered"]);
        assert_eq!(
            effective.score,
            [WeightedPlugin {
                name: "Metered".into(),
                weight: 5
            }]
        );
    }

    #[test]
    fn disabling_a_coupled_pre_point_by_name_is_rejected_table() {
        struct Case {
            name: &'static str,
            plugins: Plugins,
            path: &'static str,
            value: &'static str,
            enabled_by: &'static str,
        }
        let cases = [
            Case {
                name: "enabled at score, disabled at preScore",
                plugins: Plugins {
                    pre_score: set(&[], &["Metered"]),
                    score: set(&[("Metered", None)], &["*"]),
                    ..Default::default()
                },
                path: "spec.plugins.preScore.disabled[0].name",
                value: "\"Metered\"",
                enabled_by: "spec.plugins.score.enabled[0].name",
            },
            Case {
                name: "enabled through multiPoint, disabled at preFilter",
                plugins: Plugins {
                    multi_point: set(&[("Custom", None), ("Ported", None)], &[]),
                    pre_filter: set(&[], &["FilterA", "Ported"]),
                    filter: set(&[], &["FilterA"]),
                    ..Default::default()
                },
                path: "spec.plugins.preFilter.disabled[1].name",
                value: "\"Ported\"",
                enabled_by: "spec.plugins.multiPoint.enabled[1].name",
            },
            Case {
                name: "a default plugin disabled at its pre-point only",
                plugins: Plugins {
                    pre_score: set(&[], &["ScoreC"]),
                    ..Default::default()
                },
                path: "spec.plugins.preScore.disabled[0].name",
                value: "\"ScoreC\"",
                enabled_by: "the default plugin set",
            },
        ];
        for case in cases {
            let errors = resolve(&spec(case.plugins), &registry())
                .err()
                .unwrap_or_else(|| panic!("{}: accepted", case.name));
            assert_eq!(errors.len(), 1, "{}: {errors:?}", case.name);
            let error = &errors[0];
            assert_eq!(error.path, case.path, "{}", case.name);
            assert_eq!(error.value, case.value, "{}", case.name);
            let shown = error.to_string();
            assert!(
                shown.starts_with(&format!("{}: Invalid value: {}: ", case.path, case.value))
                    && shown.contains(case.enabled_by),
                "{}: {shown}",
                case.name
            );
        }
    }

    #[test]
    fn disabling_the_point_as_well_is_accepted() {
        let r = resolve(
            &spec(Plugins {
                pre_score: set(&[], &["ScoreC"]),
                score: set(&[], &["ScoreC"]),
                ..Default::default()
            }),
            &registry(),
        )
        .unwrap();
        assert!(!r.plugins_at(PreScore).contains(&"ScoreC".to_string()));
        assert!(!r.plugins_at(Score).contains(&"ScoreC".to_string()));
    }

    #[test]
    fn pre_score_without_score_warns_table() {
        struct Case {
            name: &'static str,
            plugins: Plugins,
            want: &'static [&'static str],
        }
        let cases = [
            Case {
                name: "multiPoint plus score star",
                plugins: Plugins {
                    multi_point: set(&[("Metered", None)], &[]),
                    score: set(&[("FilterB", None)], &["*"]),
                    ..Default::default()
                },
                want: &[
                    "spec.plugins.score.disabled[0].name: Metered runs at PreScore but not at Score",
                ],
            },
            Case {
                name: "multiPoint plus score disabled by name",
                plugins: Plugins {
                    multi_point: set(&[("Metered", None)], &[]),
                    score: set(&[], &["FilterB", "Metered"]),
                    ..Default::default()
                },
                want: &[
                    "spec.plugins.score.disabled[1].name: Metered runs at PreScore but not at Score",
                ],
            },
            Case {
                name: "enabled at preScore only",
                plugins: Plugins {
                    pre_score: set(&[("Lenient", None)], &[]),
                    ..Default::default()
                },
                want: &[
                    "spec.plugins.preScore.enabled[0].name: Lenient runs at PreScore but not at Score",
                ],
            },
            Case {
                name: "defaults left at PreScore by a score star are not the profile's doing",
                plugins: Plugins {
                    score: set(&[("FilterB", None)], &["*"]),
                    ..Default::default()
                },
                want: &[],
            },
            Case {
                name: "multiPoint with its Score running",
                plugins: Plugins {
                    multi_point: set(&[("Metered", None)], &[]),
                    ..Default::default()
                },
                want: &[],
            },
        ];
        for case in cases {
            let r = resolve(&spec(case.plugins), &registry())
                .unwrap_or_else(|e| panic!("{}: {e:?}", case.name));
            assert_eq!(
                r.warnings.len(),
                case.want.len(),
                "{}: {:?}",
                case.name,
                r.warnings
            );
            for (warning, want) in r.warnings.iter().zip(case.want) {
                assert!(warning.starts_with(want), "{}: {warning}", case.name);
            }
        }
    }
}
