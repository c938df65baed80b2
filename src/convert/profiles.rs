//! One `profiles[]` entry: its name, its plugin sets and weights, and the args of the
//! legacy plugins a profile of an old version configures.

use super::*;

impl Converter<'_> {
    /// One `profiles[]` entry (for v1alpha1 the top-level scheduler, `path` empty);
    /// `None` when it cannot be carried at all.
    pub(super) fn profile(
        &mut self,
        value: &Value,
        path: &str,
        globals: &Globals,
        names: &mut BTreeMap<String, String>,
    ) -> Option<SchedulerProfile> {
        let Some(object) = value.as_object() else {
            self.invalid(path, value, "a profile (a mapping)");
            return None;
        };
        let mut name = DEFAULT_SCHEDULER_NAME.to_string();
        let mut spec = SchedulerProfileSpec::default();
        let mut fit_strategy = None;
        let section = |key: &str| match object.contains_key(key) || path.is_empty() {
            true => join(path, key),
            false => path.to_string(),
        };
        if self.version.per_point_defaults() && !object.contains_key("plugins") {
            let legacy = self.legacy_plugins(&Value::Null, &section("plugins"));
            spec.plugins = legacy.plugins;
            fit_strategy = legacy.fit_strategy;
        }
        for (key, field) in in_upstream_order(object, PROFILE_FIELDS) {
            let field_path = join(path, key);
            match key.as_str() {
                "schedulerName" => match field {
                    Value::String(s) if !s.is_empty() => name = s.clone(),
                    Value::Null => {}
                    _ => self.invalid(&field_path, field, "a non-empty string"),
                },
                "percentageOfNodesToScore" => {
                    spec.percentage_of_nodes_to_score = self.int32(field, &field_path);
                }
                "plugins" if self.version.per_point_defaults() => {
                    let legacy = self.legacy_plugins(field, &field_path);
                    spec.plugins = legacy.plugins;
                    fit_strategy = legacy.fit_strategy;
                }
                "plugins" => spec.plugins = self.plugins(field, &field_path),
                "pluginConfig" => {
                    spec.plugin_config = self.plugin_config(field, &field_path, fit_strategy);
                }
                "percentageOfPlacementsToScore" if !is_empty(field) => self.unsupported(
                    field_path,
                    "berth has no workload (pod group placement) scheduling cycle",
                ),
                _ if is_empty(field) => {}
                _ => self.unsupported(
                    field_path,
                    "unknown field: a scheduler profile has no such field",
                ),
            }
        }
        self.legacy_profile_args(&mut spec, fit_strategy, &section("pluginConfig"));
        self.keep_volume_binding_unscored(&mut spec, &section("plugins"));
        if let Some(seconds) = globals.bind_timeout_seconds {
            self.carry_bind_timeout(&mut spec, seconds);
        }
        if globals.disable_preemption {
            disable_preemption(&mut spec);
        }
        let name_path = section("schedulerName");
        if !is_dns1123_subdomain(&name) {
            self.unsupported(
                name_path,
                format!(
                    "{name:?} cannot name a SchedulerProfile: it must be a DNS-1123 subdomain (lowercase \
                     letters, digits, '-' and '.'), as pods' spec.schedulerName must be too"
                ),
            );
            return None;
        }
        let name = self.renamed_to(name, &name_path);
        if let Some(first) = names.get(&name) {
            let message = format!("duplicate schedulerName {name:?}: {first} already defines it");
            self.unsupported(name_path, message);
            return None;
        }
        names.insert(name.clone(), path.to_string());
        Some(profile_with_globals(&name, spec, globals))
    }

    /// The name `--rename` gives the profile named `name`; a profile that ends up named
    /// `default-scheduler` gets a note on what `berth run` does with it.
    pub(super) fn renamed_to(&mut self, name: String, path: &str) -> String {
        let name = match self.options.renames.get(&name) {
            Some(new) => {
                self.renamed.insert(name.clone());
                self.note(
                    path,
                    format!(
                        "{name:?} renamed to {new:?}: pods select this profile with spec.schedulerName: {new}"
                    ),
                );
                new.clone()
            }
            None => name,
        };
        if name == DEFAULT_SCHEDULER_NAME {
            self.note(
                path,
                "profile \"default-scheduler\": `berth run` refuses to serve default-scheduler, the name \
                 kube-scheduler serves, unless started with --serve-default-scheduler (Helm value \
                 serveDefaultScheduler: true), which is meant for clusters whose own kube-scheduler is \
                 disabled; otherwise rename it, e.g. `berth convert --rename default-scheduler=berth-default`, \
                 and set spec.schedulerName: berth-default on the pods it should schedule",
            );
        }
        name
    }

    /// Profile args that depend on the whole profile: the scoring strategy of a renamed
    /// resource scorer without args, and v1alpha1's top-level InterPodAffinity weight.
    pub(super) fn legacy_profile_args(
        &mut self,
        spec: &mut SchedulerProfileSpec,
        fit_strategy: Option<&'static str>,
        path: &str,
    ) {
        let scores_with_fit = spec
            .plugins
            .as_ref()
            .and_then(|p| p.score.as_ref())
            .is_none_or(|score| score.enabled.iter().any(|p| p.name == "NodeResourcesFit"));
        if let Some(strategy) = fit_strategy.filter(|_| scores_with_fit) {
            let has_strategy = spec
                .plugin_config
                .get("nodeResourcesFit")
                .is_some_and(|args| args.get("scoringStrategy").is_some());
            if !has_strategy
                && let Some(Value::Object(args)) = self.default_fit_args(strategy, path)
            {
                merge_args(&mut spec.plugin_config, "nodeResourcesFit", args);
            }
        }
        if let Some(weight) = self.hard_pod_affinity_weight {
            let args = Map::from_iter([("hardPodAffinityWeight".to_string(), json!(weight))]);
            let overridden = spec
                .plugin_config
                .get("interPodAffinity")
                .is_some_and(|a| a.get("hardPodAffinityWeight").is_some());
            if let Some(Value::Object(existing)) = spec.plugin_config.get_mut("interPodAffinity") {
                existing.insert("hardPodAffinityWeight".into(), json!(weight));
            } else {
                merge_args(&mut spec.plugin_config, "interPodAffinity", args);
            }
            self.note(
                "hardPodAffinitySymmetricWeight",
                format!(
                    "carried as InterPodAffinity args hardPodAffinityWeight: {weight}{}",
                    if overridden {
                        " (it wins over pluginConfig, as in v1alpha1)"
                    } else {
                        ""
                    }
                ),
            );
        }
    }

    /// The alpha versions' top-level `bindTimeoutSeconds` as VolumeBinding's args, as
    /// kube-scheduler 1.19 passed it on: to every profile whose `pluginConfig` has no
    /// VolumeBinding entry (1.18 gave it to the one volume binder all profiles shared). A
    /// profile that does not run VolumeBinding gets nothing: berth would ignore the args
    /// and warn about them.
    pub(super) fn carry_bind_timeout(&self, spec: &mut SchedulerProfileSpec, seconds: i64) {
        let Some(entry) = self.registry.get(VOLUME_BINDING) else {
            return;
        };
        let field = entry.config_field();
        let runs = resolve(spec, self.registry)
            .map(|resolved| resolved.all_plugins().iter().any(|p| p == VOLUME_BINDING))
            .unwrap_or(true);
        if runs && !spec.plugin_config.contains_key(&field) {
            spec.plugin_config
                .insert(field, json!({"bindTimeoutSeconds": seconds}));
        }
    }

    pub(super) fn plugins(&mut self, value: &Value, path: &str) -> Option<Plugins> {
        let object = match value {
            Value::Null => return None,
            Value::Object(object) => object,
            _ => {
                self.invalid(path, value, "a mapping of extension points");
                return None;
            }
        };
        let mut plugins = Plugins::default();
        for (key, set) in in_upstream_order(object, PLUGINS_FIELDS) {
            let set_path = format!("{path}.{key}");
            let point = ExtensionPoint::ALL
                .into_iter()
                .find(|p| p.field_name() == key);
            match point {
                Some(point) => {
                    if let Some(set) = self.plugin_set(set, &set_path, Some(point)) {
                        *plugins.at_mut(point) = set;
                    }
                }
                None if key == "multiPoint" => {
                    plugins.multi_point = self.plugin_set(set, &set_path, None);
                }
                None if is_empty(set) => {}
                None if FOREIGN_POINTS.contains(&key.as_str()) => self.unsupported(
                    set_path,
                    format!("berth has no {key} extension point (workload scheduling)"),
                ),
                None => self.unsupported(set_path, "unknown extension point"),
            }
        }
        (plugins != Plugins::default()).then_some(plugins)
    }

    /// One `PluginSet`; `point` is `None` for multiPoint. `None` when nothing is left.
    pub(super) fn plugin_set(
        &mut self,
        value: &Value,
        path: &str,
        point: Option<ExtensionPoint>,
    ) -> Option<PluginSet> {
        let object = match value {
            Value::Null => return None,
            Value::Object(object) => object,
            _ => {
                self.invalid(path, value, "a plugin set (enabled, disabled)");
                return None;
            }
        };
        let mut set = PluginSet::default();
        for (key, list) in in_upstream_order(object, &["enabled", "disabled"]) {
            let list_path = format!("{path}.{key}");
            match key.as_str() {
                "enabled" => set.enabled = self.plugin_list(list, &list_path, point, true),
                "disabled" => set.disabled = self.plugin_list(list, &list_path, point, false),
                _ if is_empty(list) => {}
                _ => self.unsupported(
                    list_path,
                    "unknown field: a plugin set has only enabled and disabled",
                ),
            }
        }
        (set != PluginSet::default()).then_some(set)
    }

    pub(super) fn plugin_list(
        &mut self,
        value: &Value,
        path: &str,
        point: Option<ExtensionPoint>,
        enabled: bool,
    ) -> Vec<PluginRef> {
        let items = match value {
            Value::Null => return Vec::new(),
            Value::Array(items) => items,
            _ => {
                self.invalid(path, value, "a list of plugins");
                return Vec::new();
            }
        };
        items
            .iter()
            .enumerate()
            .filter_map(|(index, item)| {
                self.plugin_ref(item, &format!("{path}[{index}]"), point, enabled)
            })
            .collect()
    }

    /// The name and weight of one `{name, weight}` entry, type-checked.
    pub(super) fn plugin_fields(
        &mut self,
        value: &Value,
        path: &str,
    ) -> Option<(String, Option<i32>)> {
        let (object, name) = self.named_entry(value, path, "a plugin", &["name", "weight"])?;
        let weight = match object.get("weight") {
            None | Some(Value::Null) => None,
            Some(weight) => self.int32(weight, &format!("{path}.weight")),
        };
        Some((name, weight))
    }

    pub(super) fn plugin_ref(
        &mut self,
        value: &Value,
        path: &str,
        point: Option<ExtensionPoint>,
        enabled: bool,
    ) -> Option<PluginRef> {
        let (name, weight) = self.plugin_fields(value, path)?;
        let registered = name == "*" && !enabled || self.registry.get(&name).is_some();
        if !registered {
            if enabled && self.note_missing_upstream_plugin(&name, path) {
                return None;
            }
            if enabled {
                let message = not_registered(&name, self.registry);
                self.unsupported(format!("{path}.name"), message);
            } else {
                self.note(
                    format!("{path}.name"),
                    format!("dropped: plugin {name:?} is not registered in berth, so there is nothing to disable"),
                );
            }
            return None;
        }
        let elsewhere = point
            .filter(|p| enabled && self.registry.get(&name).is_some_and(|e| !e.implements(*p)));
        if let Some(point) = elsewhere {
            self.note(
                format!("{path}.name"),
                format!(
                    "dropped: berth's {name} does not run at {} (it needs nothing there)",
                    point.field_name()
                ),
            );
            return None;
        }
        Some(PluginRef {
            weight: self.weight(weight, path, point, enabled),
            name,
        })
    }

    /// Weights count only for enabled Score and multiPoint entries; upstream ignores the
    /// rest and reads 0 as "unset", so those are dropped (with a note), not carried.
    pub(super) fn weight(
        &mut self,
        weight: Option<i32>,
        path: &str,
        point: Option<ExtensionPoint>,
        enabled: bool,
    ) -> Option<i32> {
        let weight = weight?;
        let scored = enabled && matches!(point, None | Some(ExtensionPoint::Score));
        if !scored {
            self.note(
                format!("{path}.weight"),
                "dropped: a weight counts only for enabled score and multiPoint plugins",
            );
            return None;
        }
        if weight == 0 {
            self.note(
                format!("{path}.weight"),
                "dropped: upstream reads weight 0 as unset (weight 1); berth does the same for an omitted weight",
            );
            return None;
        }
        Some(weight)
    }
}

/// Disables DefaultPreemption at PostFilter (the alpha versions' `disablePreemption`).
fn disable_preemption(spec: &mut SchedulerProfileSpec) {
    let plugins = spec.plugins.get_or_insert_with(Default::default);
    let set = plugins.post_filter.get_or_insert_with(Default::default);
    if !set
        .disabled
        .iter()
        .any(|p| p.name == DEFAULT_PREEMPTION || p.name == "*")
    {
        set.disabled.push(crate::api::PluginRef {
            name: DEFAULT_PREEMPTION.to_string(),
            weight: None,
        });
    }
}

/// The plugin the alpha versions' `disablePreemption` turned off.
const DEFAULT_PREEMPTION: &str = "DefaultPreemption";
