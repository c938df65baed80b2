//! What kube-scheduler of an older version ran for one profile: its per-point defaults
//! merged with the profile's `enabled`/`disabled` by that version's rules, translated into
//! berth's plugin names and written out where berth's own defaults would differ; and the
//! args of the renamed resource scorers, carried over as NodeResourcesFit's.

use super::*;

impl Converter<'_> {
    /// The `plugins` of a profile of a version with per-point defaults (`value` is null
    /// when the profile has none), as explicit berth plugin sets wherever berth's defaults
    /// would run other plugins or weights.
    pub(in crate::convert) fn legacy_plugins(
        &mut self,
        value: &Value,
        path: &str,
    ) -> LegacyPlugins {
        let object = match value {
            Value::Null => Map::new(),
            Value::Object(object) => object.clone(),
            _ => {
                self.invalid(path, value, "a mapping of extension points");
                return LegacyPlugins::default();
            }
        };
        let mut sets: BTreeMap<ExtensionPoint, LegacySet> = BTreeMap::new();
        let mut multi_point = LegacySet::default();
        let mut passthrough = Plugins::default();
        for (key, set) in &object {
            let set_path = format!("{path}.{key}");
            match self.version.point(key) {
                Some(LegacyPoint::At(ExtensionPoint::PreEnqueue)) => {
                    passthrough.pre_enqueue =
                        self.plugin_set(set, &set_path, Some(ExtensionPoint::PreEnqueue));
                }
                Some(LegacyPoint::At(point)) => {
                    if key != point.field_name() && !is_empty(set) {
                        self.note(
                            &set_path,
                            format!(
                                "read as {}: v1alpha2 renamed v1alpha1's {key} to {}",
                                point.field_name(),
                                point.field_name()
                            ),
                        );
                    }
                    let legacy = self.legacy_set(set, &set_path, Some(point));
                    sets.insert(point, legacy);
                }
                Some(LegacyPoint::MultiPoint) => {
                    multi_point = self.legacy_set(set, &set_path, None);
                    if !multi_point.disabled.is_empty() {
                        self.note(
                            format!("{set_path}.disabled"),
                            "dropped: v1beta2 has no default multiPoint plugins, so there is nothing to disable",
                        );
                    }
                }
                Some(LegacyPoint::Unreserve) if !is_empty(set) => self.note(
                    set_path,
                    "dropped: berth calls the Unreserve of every Reserve plugin itself (upstream merged \
                     unreserve into reserve in v1beta1)",
                ),
                Some(LegacyPoint::Unreserve) => {}
                None if is_empty(set) => {}
                None => self.unsupported(
                    set_path,
                    format!(
                        "unknown field: {} has no {key} extension point",
                        self.version.name()
                    ),
                ),
            }
        }

        let mut targets: BTreeMap<ExtensionPoint, Vec<Entry>> = BTreeMap::new();
        let mut fit_strategy = None;
        let mut customs = BTreeMap::new();
        for &point in LEGACY_POINTS {
            let custom = sets.remove(&point).unwrap_or_default();
            let mut defaults = self.version.defaults(point).to_vec();
            if self.autoscaler_provider {
                for (name, _) in &mut defaults {
                    if *name == "NodeResourcesLeastAllocated" {
                        *name = "NodeResourcesMostAllocated";
                    }
                }
            }
            let merged = merge(&defaults, &custom);
            let target = self.berth_entries(point, merged, path, &mut fit_strategy);
            targets.insert(point, target);
            customs.insert(point, custom);
        }
        self.expand_multi_point(&multi_point, &customs, &mut targets);
        couple_pre_points(self, &mut targets);
        let plugins = self.explicit_sets(targets, passthrough, path);
        LegacyPlugins {
            plugins,
            fit_strategy,
        }
    }

    /// One legacy plugin set with its entries type-checked; names are not checked yet.
    fn legacy_set(
        &mut self,
        value: &Value,
        path: &str,
        point: Option<ExtensionPoint>,
    ) -> LegacySet {
        let mut set = LegacySet::default();
        let object = match value {
            Value::Null => return set,
            Value::Object(object) => object,
            _ => {
                self.invalid(path, value, "a plugin set (enabled, disabled)");
                return set;
            }
        };
        for (key, list) in object {
            let list_path = format!("{path}.{key}");
            let enabled = match key.as_str() {
                "enabled" => true,
                "disabled" => false,
                _ if is_empty(list) => continue,
                _ => {
                    self.unsupported(
                        list_path,
                        "unknown field: a plugin set has only enabled and disabled",
                    );
                    continue;
                }
            };
            let items = match list {
                Value::Null => continue,
                Value::Array(items) => items,
                _ => {
                    self.invalid(&list_path, list, "a list of plugins");
                    continue;
                }
            };
            for (index, item) in items.iter().enumerate() {
                let item_path = format!("{list_path}[{index}]");
                let Some((name, weight)) = self.plugin_fields(item, &item_path) else {
                    continue;
                };
                if enabled {
                    let weight = self.weight(weight, &item_path, point, true);
                    set.enabled.push(Entry {
                        name,
                        weight,
                        path: Some(item_path),
                    });
                } else {
                    if weight.is_some() {
                        self.weight(weight, &item_path, point, false);
                    }
                    self.check_disabled_name(&name, &item_path, point);
                    set.disabled.push(name);
                }
            }
        }
        set
    }

    /// A disabled name neither berth nor this version's defaults know disables nothing.
    fn check_disabled_name(&mut self, name: &str, path: &str, point: Option<ExtensionPoint>) {
        let in_defaults = point.is_some_and(|p| {
            self.version
                .defaults(p)
                .iter()
                .any(|(default, _)| *default == name)
        });
        if name == "*" || in_defaults || self.registry.get(name).is_some() {
            return;
        }
        self.note(
            format!("{path}.name"),
            format!("dropped: plugin {name:?} is not registered in berth, so there is nothing to disable"),
        );
    }

    /// The merged upstream list of `point` restricted to what berth runs: renamed
    /// resource scorers become NodeResourcesFit, unknown plugins the input enabled are
    /// reported, defaults berth lacks are left out (noted where that changes scores).
    fn berth_entries(
        &mut self,
        point: ExtensionPoint,
        merged: Vec<Entry>,
        plugins_path: &str,
        fit_strategy: &mut Option<&'static str>,
    ) -> Vec<Entry> {
        let mut target: Vec<Entry> = Vec::new();
        let mut fit_source: Option<String> = None;
        for mut entry in merged {
            let shown = entry.name.clone();
            let strategy = fit_strategy_of(&entry.name, point);
            if let Some(strategy) = strategy {
                entry.name = "NodeResourcesFit".into();
                if let Some(first) = &fit_source {
                    let path = entry.path.clone().unwrap_or_else(|| plugins_path.into());
                    self.unsupported(
                        format!("{path}.name"),
                        format!(
                            "{shown} scores with NodeResourcesFit's resources as {first} already does; berth \
                             has one NodeResourcesFit Score with one scoringStrategy: disable {first} at score \
                             or remove {shown}"
                        ),
                    );
                    continue;
                }
                fit_source = Some(shown.clone());
                if let Some(strategy) = strategy.filter(|s| !s.is_empty()) {
                    *fit_strategy = Some(strategy);
                }
            }
            let Some(registered) = self.registry.get(&entry.name) else {
                match &entry.path {
                    Some(path) if self.note_missing_upstream_plugin(&entry.name, path) => {}
                    Some(path) => {
                        let mut message = not_registered(&entry.name, self.registry);
                        if let Some(why) = removed_upstream(&entry.name) {
                            message = format!("{message}; {why}");
                        }
                        self.unsupported(format!("{path}.name"), message);
                    }
                    None if point == ExtensionPoint::Score => {
                        if let Some((_, why)) = DROPPED_DEFAULTS
                            .iter()
                            .find(|(name, _)| *name == entry.name)
                        {
                            self.note(plugins_path, *why);
                        }
                    }
                    None => {}
                }
                continue;
            };
            if !registered.implements(point) {
                if let Some(path) = &entry.path {
                    self.note(
                        format!("{path}.name"),
                        format!(
                            "dropped: berth's {} does not run at {} (it needs nothing there)",
                            entry.name,
                            point.field_name()
                        ),
                    );
                }
                continue;
            }
            if target.iter().any(|t| t.name == entry.name) {
                if let Some(path) = &entry.path {
                    self.unsupported(
                        format!("{path}.name"),
                        format!(
                            "plugin {:?} is enabled twice at {}",
                            entry.name,
                            point.field_name()
                        ),
                    );
                }
                continue;
            }
            if point == ExtensionPoint::Score {
                entry.weight = Some(entry.weight.unwrap_or(1));
            } else {
                entry.weight = None;
            }
            target.push(entry);
        }
        target
    }

    /// v1beta2's multiPoint: each plugin joins every point it implements, unless that
    /// point disables it (by name or `"*"`) or lists it itself.
    fn expand_multi_point(
        &mut self,
        multi_point: &LegacySet,
        sets: &BTreeMap<ExtensionPoint, LegacySet>,
        targets: &mut BTreeMap<ExtensionPoint, Vec<Entry>>,
    ) {
        for entry in &multi_point.enabled {
            let Some(registered) = self.registry.get(&entry.name) else {
                if let Some(path) = &entry.path
                    && !self.note_missing_upstream_plugin(&entry.name, path)
                {
                    let message = not_registered(&entry.name, self.registry);
                    self.unsupported(format!("{path}.name"), message);
                }
                continue;
            };
            for (point, target) in targets.iter_mut() {
                let disabled = sets.get(point).is_some_and(|s| s.disables(&entry.name));
                if !registered.implements(*point)
                    || disabled
                    || target.iter().any(|t| t.name == entry.name)
                {
                    continue;
                }
                let mut added = entry.clone();
                added.weight = (*point == ExtensionPoint::Score).then(|| entry.weight.unwrap_or(1));
                target.push(added);
            }
        }
    }

    /// Berth's plugin sets for the target lists, each as short as berth's merge rules
    /// allow: nothing where berth's defaults run the same plugins and weights, only
    /// `enabled` where the target adds plugins to them, only `disabled` where it removes
    /// some, both where that is shorter than the whole list (as with `enabled` alone, the
    /// order of the plugins berth adds is berth's), else `disabled: "*"` and the whole list.
    fn explicit_sets(
        &mut self,
        targets: BTreeMap<ExtensionPoint, Vec<Entry>>,
        mut plugins: Plugins,
        path: &str,
    ) -> Option<Plugins> {
        let defaults = resolve(&Default::default(), self.registry).unwrap_or_default();
        for (point, target) in targets {
            let have: Vec<(String, Option<i32>)> = defaults
                .plugins_at(point)
                .iter()
                .map(|name| {
                    let weight = (point == ExtensionPoint::Score)
                        .then(|| defaults.score_weights.get(name).copied().unwrap_or(1));
                    (name.clone(), weight)
                })
                .collect();
            let want: Vec<(String, Option<i32>)> =
                target.iter().map(|e| (e.name.clone(), e.weight)).collect();
            if point == ExtensionPoint::Score {
                self.note_kept_weights(&target, &have, path);
            }
            let added: Vec<&(String, Option<i32>)> =
                want.iter().filter(|w| !have.contains(w)).collect();
            let removed: Vec<&(String, Option<i32>)> =
                have.iter().filter(|h| !want.contains(h)).collect();
            let set = match (added.is_empty(), removed.is_empty()) {
                (true, true) => continue,
                (false, true) => PluginSet {
                    enabled: added.iter().map(|(n, w)| plugin_ref(n, *w)).collect(),
                    disabled: Vec::new(),
                },
                (true, false) if !want.is_empty() => PluginSet {
                    enabled: Vec::new(),
                    disabled: removed.iter().map(|(n, _)| PluginRef::named(n)).collect(),
                },
                (false, false) if added.len() + removed.len() <= want.len() => PluginSet {
                    enabled: added.iter().map(|(n, w)| plugin_ref(n, *w)).collect(),
                    disabled: removed.iter().map(|(n, _)| PluginRef::named(n)).collect(),
                },
                _ => PluginSet {
                    enabled: want.iter().map(|(n, w)| plugin_ref(n, *w)).collect(),
                    disabled: vec![PluginRef::named("*")],
                },
            };
            *plugins.at_mut(point) = set;
        }
        (plugins != Plugins::default()).then_some(plugins)
    }

    /// Version default Score weights that berth's defaults would change are kept.
    fn note_kept_weights(&mut self, target: &[Entry], have: &[(String, Option<i32>)], path: &str) {
        let kept: Vec<String> = target
            .iter()
            .filter(|e| e.path.is_none())
            .filter_map(|e| {
                let (_, berth) = have.iter().find(|(name, _)| *name == e.name)?;
                (*berth != e.weight).then(|| {
                    format!(
                        "{} {} instead of {}",
                        e.name,
                        e.weight.unwrap_or(1),
                        berth.unwrap_or(1)
                    )
                })
            })
            .collect();
        if !kept.is_empty() {
            self.note(
                path,
                format!(
                    "score written out in full to keep {}'s default weights ({}); drop plugins.score from \
                     the SchedulerProfile to take berth's (v1's)",
                    self.version.name(),
                    kept.join(", ")
                ),
            );
        }
    }

    /// The `pluginConfig` entry of a renamed resource scorer, as NodeResourcesFit's
    /// `scoringStrategy`; `None` (reported or noted) when there is nothing to carry.
    pub(in crate::convert) fn legacy_fit_args(
        &mut self,
        plugin: &str,
        args: Option<&Value>,
        path: &str,
        strategy_in_use: Option<&'static str>,
    ) -> Option<Value> {
        let strategy = fit_strategy(plugin)?;
        let args_path = format!("{path}.args");
        let mut args = match args {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(args)) => args.clone(),
            Some(other) => {
                self.invalid(&args_path, other, "the plugin's args (a mapping)");
                return None;
            }
        };
        args.remove("apiVersion");
        if let Some(kind) = args.remove("kind")
            && kind.as_str() != Some(format!("{plugin}Args").as_str())
        {
            self.unsupported(
                format!("{args_path}.kind"),
                format!(
                    "args of kind {kind} do not belong to plugin {plugin} (expected {plugin}Args)"
                ),
            );
            return None;
        }
        if strategy_in_use != Some(strategy) {
            self.note(
                format!("{path}.name"),
                format!("dropped: {plugin} does not score in this profile, so its args are unused"),
            );
            return None;
        }
        let mut scoring = Map::from_iter([("type".to_string(), json!(strategy))]);
        for (key, value) in args {
            match key.as_str() {
                "resources" => {
                    scoring.insert(key, value);
                }
                "shape" if strategy == "RequestedToCapacityRatio" => {
                    scoring.insert("requestedToCapacityRatio".into(), json!({"shape": value}));
                }
                _ => self.unsupported(
                    format!("{args_path}.{key}"),
                    format!(
                        "unknown field: {plugin}Args have only resources{}",
                        if strategy == "RequestedToCapacityRatio" {
                            " and shape"
                        } else {
                            ""
                        }
                    ),
                ),
            }
        }
        let converted = json!({"scoringStrategy": scoring});
        self.note(
            format!("{path}.name"),
            format!(
                "converted to NodeResourcesFit args {converted} (v1beta2 merged {plugin} into NodeResourcesFit's scoringStrategy)"
            ),
        );
        Some(converted)
    }

    /// Args fields whose shape or default changed after v1beta1.
    pub(in crate::convert) fn adjust_legacy_args(
        &mut self,
        plugin: &str,
        args: &mut Map<String, Value>,
        path: &str,
    ) {
        if plugin != "PodTopologySpread" || self.version > Version::V1beta1 {
            return;
        }
        let has_constraints = args
            .get("defaultConstraints")
            .and_then(Value::as_array)
            .is_some_and(|c| !c.is_empty());
        if has_constraints && !args.contains_key("defaultingType") {
            args.insert("defaultingType".into(), json!("List"));
            self.note(
                format!("{path}.defaultConstraints"),
                format!(
                    "defaultingType: List added: {} applied defaultConstraints as given, while later versions \
                     default to the System constraints",
                    self.version.name()
                ),
            );
        }
    }

    /// A NodeResourcesFit scoring strategy for a renamed scorer that had no args.
    pub(in crate::convert) fn default_fit_args(
        &mut self,
        strategy: &str,
        path: &str,
    ) -> Option<Value> {
        match strategy {
            "LeastAllocated" => None,
            _ => {
                self.note(
                    path,
                    format!(
                        "NodeResourcesFit args scoringStrategy.type: {strategy} added: the strategy of the \
                         renamed resource scorer this profile enables"
                    ),
                );
                Some(json!({"scoringStrategy": {"type": strategy}}))
            }
        }
    }

    /// The note on `apiVersion` for the older versions.
    pub(in crate::convert) fn version_note(&mut self) {
        let version = self.version;
        if !version.per_point_defaults() {
            return;
        }
        let single = if version == Version::V1alpha1 {
            "; its one scheduler (schedulerName, plugins, pluginConfig at the top level) becomes one profile"
        } else {
            ""
        };
        self.note(
            "apiVersion",
            format!(
                "read with {}'s default plugins (as Kubernetes {} ran them) and its merge rules{single}; \
                 see the version notes in docs/convert.md",
                version.name(),
                version.release()
            ),
        );
    }
}

/// The scoring strategy a Score entry stands for: `Some("")` for NodeResourcesFit itself
/// (its args say), `Some(type)` for a renamed scorer, `None` for other plugins.
pub(in crate::convert) fn fit_strategy_of(
    name: &str,
    point: ExtensionPoint,
) -> Option<Option<&'static str>> {
    if point != ExtensionPoint::Score {
        return None;
    }
    match name {
        "NodeResourcesFit" => Some(Some("")),
        _ => fit_strategy(name).map(Some),
    }
}

/// A plugin enabled at Filter (Score) that has a PreFilter (PreScore) in berth runs it
/// too: the older versions' pre-point lists predate several of berth's pre-points.
pub(in crate::convert) fn couple_pre_points(
    converter: &Converter<'_>,
    targets: &mut BTreeMap<ExtensionPoint, Vec<Entry>>,
) {
    for (main, pre) in [
        (ExtensionPoint::Filter, ExtensionPoint::PreFilter),
        (ExtensionPoint::Score, ExtensionPoint::PreScore),
    ] {
        let needed: Vec<Entry> = targets
            .get(&main)
            .into_iter()
            .flatten()
            .filter(|e| {
                converter
                    .registry
                    .get(&e.name)
                    .is_some_and(|r| r.implements(pre))
            })
            .map(|e| Entry {
                name: e.name.clone(),
                weight: None,
                path: None,
            })
            .collect();
        let list = targets.entry(pre).or_default();
        // A default pre-point whose main point no longer runs would prepare for nothing.
        list.retain(|e| {
            e.path.is_some()
                || needed.iter().any(|n| n.name == e.name)
                || !converter
                    .registry
                    .get(&e.name)
                    .is_some_and(|r| r.implements(main))
        });
        for entry in needed {
            if !list.iter().any(|e| e.name == entry.name) {
                list.push(entry);
            }
        }
    }
}

pub(in crate::convert) fn plugin_ref(name: &str, weight: Option<i32>) -> PluginRef {
    PluginRef {
        name: name.to_string(),
        weight,
    }
}
