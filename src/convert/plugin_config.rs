//! `pluginConfig[]`: each entry becomes the typed `spec.pluginConfig` property of its
//! plugin, after type metadata is stripped, known foreign field names are translated,
//! fields berth's args types do not have are pruned (as the API server would) and the args
//! are decoded with the registry's args type.

use super::*;

impl Converter<'_> {
    /// `fit_strategy`: the NodeResourcesFit scoring strategy of a renamed resource scorer
    /// enabled in this (legacy) profile, whose args become NodeResourcesFit's.
    pub(super) fn plugin_config(
        &mut self,
        value: &Value,
        path: &str,
        fit_strategy: Option<&'static str>,
    ) -> BTreeMap<String, Value> {
        let mut config = BTreeMap::new();
        let items = match value {
            Value::Null => return config,
            Value::Array(items) => items,
            _ => {
                self.invalid(path, value, "a list of {name, args}");
                return config;
            }
        };
        let mut seen = BTreeMap::new();
        for (index, item) in items.iter().enumerate() {
            let item_path = format!("{path}[{index}]");
            let Some((name, args)) = self.plugin_config_entry(item, &item_path) else {
                continue;
            };
            if let Some(first) = seen.get(&name) {
                self.unsupported(
                    format!("{item_path}.name"),
                    format!(
                        "duplicate pluginConfig for plugin {name:?}: {first} already configures it"
                    ),
                );
                continue;
            }
            seen.insert(name.clone(), item_path.clone());
            let renamed = match versions::fit_strategy(&name) {
                Some(_) if self.version.per_point_defaults() => {
                    let Some(converted) =
                        self.legacy_fit_args(&name, args, &item_path, fit_strategy)
                    else {
                        continue;
                    };
                    self.plugin_args("NodeResourcesFit", Some(&converted), &item_path)
                }
                _ => self.plugin_args(&name, args, &item_path),
            };
            if let Some((field, Value::Object(args))) = renamed {
                merge_args(&mut config, &field, args);
            }
        }
        config
    }

    /// The name and args of one `pluginConfig[]` entry.
    pub(super) fn plugin_config_entry<'v>(
        &mut self,
        value: &'v Value,
        path: &str,
    ) -> Option<(String, Option<&'v Value>)> {
        let (object, name) = self.named_entry(value, path, "a plugin config", &["name", "args"])?;
        Some((name, object.get("args")))
    }

    /// The `spec.pluginConfig` property name and args for plugin `name`; `None` when the
    /// args cannot be carried (reported) or there is nothing to carry.
    pub(super) fn plugin_args(
        &mut self,
        name: &str,
        args: Option<&Value>,
        path: &str,
    ) -> Option<(String, Value)> {
        if self.registry.get(name).is_none() && self.drop_missing_upstream_args(name, args, path) {
            return None;
        }
        let Some(entry) = self.registry.get(name) else {
            let mut message = not_registered(name, self.registry);
            if let Some(why) = versions::removed_upstream(name) {
                message = format!("{message}; {why}");
            }
            self.unsupported(format!("{path}.name"), message);
            return None;
        };
        let args_path = format!("{path}.args");
        let mut args = self.args_mapping(name, args, &args_path)?;
        let Some(spec) = entry.args.as_ref() else {
            if !args.is_empty() {
                self.unsupported(args_path, format!("plugin {name} takes no args in berth"));
            }
            return None;
        };
        let field = entry.config_field();
        self.translate_args(name, &mut args, &args_path);
        self.adjust_legacy_args(name, &mut args, &args_path);
        self.adjust_volume_binding_shape(name, &mut args, &args_path);
        self.adjust_zero_weights(name, &mut args, &args_path);
        self.prune_unknown_fields(&field, &mut args, &args_path);
        let args = Value::Object(args);
        let errors = spec.check(&args, &args_path);
        if errors.is_empty() {
            return Some((field, args));
        }
        // The schema names the exact field where serde only names the args object.
        let precise = self.schema_errors(&field, &args, &args_path);
        for error in if precise.is_empty() { errors } else { precise } {
            let message = message_of(&error, &args_path);
            self.unsupported(error.path, message);
        }
        None
    }

    /// A plugin's `args` as a mapping without its type meta; `None` (reported) when they
    /// are not a mapping or name another plugin's args.
    pub(super) fn args_mapping(
        &mut self,
        name: &str,
        args: Option<&Value>,
        args_path: &str,
    ) -> Option<Map<String, Value>> {
        let mut args = match args {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(args)) => args.clone(),
            Some(other) => {
                self.invalid(args_path, other, "the plugin's args (a mapping)");
                return None;
            }
        };
        self.strip_type_meta(name, &mut args, args_path)
            .then_some(args)
    }

    /// Drops the `apiVersion`/`kind` of upstream args; false (reported) when `kind` names
    /// the args of another plugin, which upstream rejects too.
    pub(super) fn strip_type_meta(
        &mut self,
        name: &str,
        args: &mut Map<String, Value>,
        path: &str,
    ) -> bool {
        args.remove("apiVersion");
        match args.remove("kind") {
            Some(Value::String(kind)) if kind != format!("{name}Args") => {
                self.unsupported(
                    format!("{path}.kind"),
                    format!(
                        "args of kind {kind} do not belong to plugin {name} (expected {name}Args)"
                    ),
                );
                false
            }
            _ => true,
        }
    }

    pub(super) fn translate_args(
        &mut self,
        plugin: &str,
        args: &mut Map<String, Value>,
        path: &str,
    ) {
        let options = self.options;
        let fields = options
            .args_translations
            .iter()
            .filter(|t| t.plugin == plugin)
            .flat_map(|t| t.fields.iter());
        for translation in fields {
            let Some(value) = args.remove(translation.from) else {
                continue;
            };
            let from_path = format!("{path}.{}", translation.from);
            if args.contains_key(translation.to) {
                self.unsupported(
                    from_path,
                    format!(
                        "{} is also set; {} is its older name",
                        translation.to, translation.from
                    ),
                );
                continue;
            }
            match (translation.value)(&value) {
                Ok(converted) => {
                    self.note(
                        from_path,
                        format!("converted to {}: {converted}", translation.to),
                    );
                    args.insert(translation.to.to_string(), converted);
                }
                Err(message) => {
                    self.unsupported(from_path, format!("Invalid value: {value}: {message}"))
                }
            }
        }
        let dropped = options
            .args_translations
            .iter()
            .filter(|t| t.plugin == plugin)
            .flat_map(|t| t.dropped.iter());
        for (field, why) in dropped {
            if args.remove(*field).is_some() {
                self.note(format!("{path}.{field}"), format!("dropped: {why}"));
            }
        }
    }

    /// Removes (and reports) args fields berth's args type does not have.
    pub(super) fn prune_unknown_fields(
        &mut self,
        field: &str,
        args: &mut Map<String, Value>,
        path: &str,
    ) {
        let Some(schema) = self.args_schemas.get(field) else {
            return;
        };
        let mut unknown = Vec::new();
        prune_object(args, schema, path, &mut unknown);
        for path in unknown {
            self.unsupported(
                path,
                "unknown field: berth's args for this plugin have no such field",
            );
        }
    }

    /// Schema and CEL errors of `args` as `spec.pluginConfig.<field>`, with paths moved
    /// under `args_path`.
    pub(super) fn schema_errors(
        &self,
        field: &str,
        args: &Value,
        args_path: &str,
    ) -> Vec<FieldError> {
        let Some(validator) = &self.validator else {
            return Vec::new();
        };
        let probe = SchedulerProfile::new(
            "probe",
            SchedulerProfileSpec {
                plugin_config: BTreeMap::from([(field.to_string(), args.clone())]),
                ..Default::default()
            },
        );
        let Ok(raw) = serde_json::to_value(&probe) else {
            return Vec::new();
        };
        let prefix = format!("spec.pluginConfig.{field}");
        validator
            .admission_errors(&raw)
            .into_iter()
            .filter_map(|mut error| {
                let rest = error.path.strip_prefix(&prefix)?;
                error.path = format!("{args_path}{rest}");
                Some(error)
            })
            .collect()
    }

    /// The converted profile must pass the checks `berth simulate` and the operator run
    /// (schema, CEL, then berth's semantics); when it does not (say, its only QueueSort
    /// plugin was left out), it is reported and not written.
    pub(super) fn check_valid(
        &mut self,
        path: &str,
        profile: SchedulerProfile,
    ) -> Option<SchedulerProfile> {
        let name = profile.scheduler_name();
        let (errors, warnings) = match (&self.validator, serde_json::to_value(&profile)) {
            (Some(validator), Ok(raw)) => {
                let validation = validator.validate(&raw);
                (validation.errors, validation.warnings)
            }
            _ => match resolve(&profile.spec, self.registry) {
                Ok(resolved) => (Vec::new(), resolved.warnings),
                Err(errors) => (errors, Vec::new()),
            },
        };
        for warning in warnings {
            self.note(path, warning);
        }
        // A rule berth cannot evaluate is berth's problem, not the input's.
        let (internal, errors): (Vec<_>, Vec<_>) = errors
            .into_iter()
            .partition(|e| e.kind == FieldErrorKind::Internal);
        for error in internal {
            self.note(path, format!("not fully checked: {error}"));
        }
        if errors.is_empty() {
            return Some(profile);
        }
        for error in errors {
            self.unsupported(
                path,
                format!("the converted SchedulerProfile {name:?} would be rejected: {error}"),
            );
        }
        None
    }
}

/// Adds the fields of `args` to the args of `field`, keeping fields already there.
pub(super) fn merge_args(
    config: &mut BTreeMap<String, Value>,
    field: &str,
    args: Map<String, Value>,
) {
    match config.get_mut(field) {
        Some(Value::Object(existing)) => {
            for (key, value) in args {
                existing.entry(key).or_insert(value);
            }
        }
        _ => {
            config.insert(field.to_string(), Value::Object(args));
        }
    }
}

/// An args error without its path; the value is left out when it is the whole args
/// object (a decode error), which the user has in front of them.
pub(super) fn message_of(error: &FieldError, args_path: &str) -> String {
    if error.path == args_path && error.kind == FieldErrorKind::Invalid {
        return error.message.clone();
    }
    let text = error.to_string();
    text.strip_prefix(&format!("{}: ", error.path))
        .map(str::to_string)
        .unwrap_or(text)
}

/// The typed `spec.pluginConfig` properties of the SchedulerProfile CRD generated from
/// `registry`; empty when the CRD cannot be generated (then no field is pruned).
pub(super) fn plugin_config_schemas(registry: &Registry) -> Map<String, Value> {
    let schema = crate::schema::crds(registry)
        .ok()
        .and_then(|crds| crds.into_iter().next())
        .and_then(|crd| crd.spec.versions.into_iter().next())
        .and_then(|version| version.schema)
        .and_then(|validation| validation.open_api_v3_schema)
        .and_then(|schema| serde_json::to_value(schema).ok());
    schema
        .as_ref()
        .and_then(|s| s.pointer("/properties/spec/properties/pluginConfig/properties"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// Structural pruning as the API server does it: fields an object schema does not list
/// are removed, and their paths collected.
pub(super) fn prune_object(
    object: &mut Map<String, Value>,
    schema: &Value,
    path: &str,
    unknown: &mut Vec<String>,
) {
    if schema
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(true)
    {
        return;
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        let unlisted: Vec<String> = object
            .keys()
            .filter(|key| !properties.contains_key(*key))
            .cloned()
            .collect();
        for key in unlisted {
            object.remove(&key);
            unknown.push(format!("{path}.{key}"));
        }
        for (key, value) in object.iter_mut() {
            if let Some(child) = properties.get(key) {
                prune_value(value, child, &format!("{path}.{key}"), unknown);
            }
        }
    } else if let Some(child) = schema.get("additionalProperties").filter(|s| s.is_object()) {
        for (key, value) in object.iter_mut() {
            prune_value(value, child, &format!("{path}.{key}"), unknown);
        }
    }
}

pub(super) fn prune_value(
    value: &mut Value,
    schema: &Value,
    path: &str,
    unknown: &mut Vec<String>,
) {
    match value {
        Value::Object(object) => prune_object(object, schema, path, unknown),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (index, item) in items.iter_mut().enumerate() {
                    prune_value(item, item_schema, &format!("{path}[{index}]"), unknown);
                }
            }
        }
        _ => {}
    }
}
