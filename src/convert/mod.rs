//! From a `KubeSchedulerConfiguration` to `SchedulerProfile`s: the library side of
//! `berth convert` (documented in `docs/convert.md`).
//!
//! One SchedulerProfile comes out per `profiles[]` entry (or one `default-scheduler` profile
//! when the configuration has none, as upstream defaults it; v1alpha1's single scheduler,
//! configured at the top level, is one profile too):
//!
//! - `schedulerName` becomes `metadata.name` (or the name [`ConvertOptions::renames`]
//!   gives it); a kept `default-scheduler` gets a note, since `berth run` serves that name
//!   only when told to;
//! - `plugins`: v1 and v1beta3 are copied point by point, since the SchedulerProfile uses
//!   the same shape and merge rules (plugins of upstream's default set that berth lacks
//!   are dropped with a note); the older versions listed other defaults point by
//!   point, so their plugin lists are recomputed as that version ran them and written out
//!   where berth's defaults differ (the `versions` submodule);
//! - each `pluginConfig[]` entry becomes the typed `spec.pluginConfig.<lowerCamelName>`
//!   property, without the `apiVersion`/`kind` upstream args carry, after translating
//!   known foreign field names ([`ArgsTranslation`]) and decoding the args with the
//!   registry's args type;
//! - the global `percentageOfNodesToScore` and backoff settings are copied into every
//!   profile (a profile's own `percentageOfNodesToScore` wins, as upstream), and so is the
//!   alpha versions' `bindTimeoutSeconds`, as VolumeBinding's args (a profile's own
//!   VolumeBinding args win, as upstream).
//!
//! Settings of the kube-scheduler process (leader election, client connection, bind
//! addresses, parallelism) are [`Note`]s naming the `berth run` flag or Helm value that
//! does the same, never errors: a configuration written for kube-scheduler carries them
//! as a matter of course. What cannot be carried (an unknown plugin, an extender, a
//! Policy) is collected as [`Unsupported`] items, each with its path in the input, and
//! left out of the profiles: the caller decides whether that is fatal (`berth convert`
//! fails unless `--skip-unsupported`). Input that is not a KubeSchedulerConfiguration at
//! all (wrong kind, unknown apiVersion, a field of the wrong type) is a [`ConvertError`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value, json};

use crate::api::{
    ExtensionPoint, FieldError, FieldErrorKind, PluginRef, PluginSet, Plugins, SchedulerProfile,
    SchedulerProfileSpec,
};
use crate::framework::{Registry, resolve};
use crate::schema::ProfileValidator;

mod configuration;
mod plugin_config;
mod profiles;
mod translations;
mod versions;

use configuration::{FOREIGN_POINTS, PLUGINS_FIELDS, PROFILE_FIELDS, in_upstream_order};
use plugin_config::{merge_args, message_of, plugin_config_schemas};
pub use translations::{
    ArgsTranslation, BUILTIN_ARGS_TRANSLATIONS, COSCHEDULING_TUTORIAL, FieldTranslation,
    NETWORK_TRAFFIC_TUTORIAL,
};
pub use versions::{UPSTREAM_DIFFERENCES, UPSTREAM_RELEASE, UpstreamDifference, Version};

/// The API group of `KubeSchedulerConfiguration`.
pub const CONFIG_GROUP: &str = "kubescheduler.config.k8s.io";
/// The kind `berth convert` reads.
pub const CONFIG_KIND: &str = "KubeSchedulerConfiguration";
/// The versions read, newest first; [`Version`] says how each one's defaults are kept.
pub const CONFIG_VERSIONS: [&str; 6] = [
    "v1", "v1beta3", "v1beta2", "v1beta1", "v1alpha2", "v1alpha1",
];
/// The profile name upstream gives a profile without `schedulerName`.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// The result of a conversion: the profiles that could be written, and what was left out.
#[derive(Debug, Clone, Default)]
pub struct Conversion {
    /// One profile per convertible `profiles[]` entry, in input order, with every
    /// unsupported item already left out.
    pub profiles: Vec<SchedulerProfile>,
    /// What berth cannot carry, each with its path in the input.
    pub unsupported: Vec<Unsupported>,
    /// What the user should know: settings that belong to `berth run`, version defaults
    /// written out or left out, a renamed args field, a dropped `disabled` entry.
    pub notes: Vec<Note>,
    /// The keys of [`ConvertOptions::renames`] that named a profile of this configuration.
    pub renamed: BTreeSet<String>,
}

/// Something in the input that has no place in a SchedulerProfile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported {
    /// Path in the input document, e.g. `profiles[1].pluginConfig[2].name`.
    pub path: String,
    /// Why it cannot be carried and, where there is one, what to do instead.
    pub message: String,
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// A change made while converting that keeps the input's meaning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// Path in the input document.
    pub path: String,
    pub message: String,
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Why a document could not be read as a `KubeSchedulerConfiguration`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    #[error(
        "expected a KubeSchedulerConfiguration: a mapping with apiVersion and kind, got {found}"
    )]
    NotAnObject { found: &'static str },
    #[error(
        "kind: Invalid value: {kind:?}: berth convert reads only kind KubeSchedulerConfiguration"
    )]
    WrongKind { kind: String },
    #[error(
        "apiVersion: Unsupported value: {api_version:?}: berth convert reads kubescheduler.config.k8s.io/v1, v1beta3, v1beta2, v1beta1, v1alpha2 and v1alpha1"
    )]
    UnknownApiVersion { api_version: String },
    /// Fields of the wrong type or shape; each error names its path.
    #[error("{}", display_errors(.0))]
    Invalid(Vec<FieldError>),
}

fn display_errors(errors: &[FieldError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Settings of a conversion.
#[derive(Debug, Clone)]
pub struct ConvertOptions {
    /// Per-plugin renames of foreign args fields, applied when the plugin is registered.
    pub args_translations: Vec<ArgsTranslation>,
    /// Scheduler names to give the converted profiles instead of the input's, e.g.
    /// `default-scheduler` -> `berth-default` (`berth convert --rename`).
    pub renames: BTreeMap<String, String>,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            args_translations: BUILTIN_ARGS_TRANSLATIONS.to_vec(),
            renames: BTreeMap::new(),
        }
    }
}

/// Converts one `KubeSchedulerConfiguration` (already parsed from YAML or JSON) into
/// SchedulerProfiles, checking plugin names and args against `registry`.
pub fn convert(
    config: &Value,
    registry: &Registry,
    options: &ConvertOptions,
) -> Result<Conversion, ConvertError> {
    let Some(object) = config.as_object() else {
        return Err(ConvertError::NotAnObject {
            found: json_type(config),
        });
    };
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind != CONFIG_KIND {
        return Err(ConvertError::WrongKind {
            kind: kind.to_string(),
        });
    }
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let version = api_version
        .strip_prefix(CONFIG_GROUP)
        .and_then(|v| v.strip_prefix('/'))
        .and_then(Version::parse)
        .ok_or_else(|| ConvertError::UnknownApiVersion {
            api_version: api_version.to_string(),
        })?;

    let mut converter = Converter::new(registry, options, version);
    converter.version_note();
    let conversion = converter.configuration(object);
    if converter.invalid.is_empty() {
        Ok(conversion)
    } else {
        Err(ConvertError::Invalid(converter.invalid))
    }
}

/// Global settings that upstream applies to every profile.
#[derive(Debug, Default)]
struct Globals {
    percentage_of_nodes_to_score: Option<i32>,
    pod_initial_backoff_seconds: Option<i64>,
    pod_max_backoff_seconds: Option<i64>,
    /// v1alpha1's and v1alpha2's `bindTimeoutSeconds`, for VolumeBinding's args.
    bind_timeout_seconds: Option<i64>,
    /// v1alpha1's and v1alpha2's `disablePreemption: true`.
    disable_preemption: bool,
}

/// The plugin whose args the alpha versions' top-level `bindTimeoutSeconds` became.
const VOLUME_BINDING: &str = "VolumeBinding";

/// Walks one configuration, collecting unsupported items, notes and type errors.
struct Converter<'a> {
    registry: &'a Registry,
    options: &'a ConvertOptions,
    version: Version,
    /// v1alpha1's `algorithmSource.provider: ClusterAutoscalerProvider`: MostAllocated
    /// instead of LeastAllocated among the defaults.
    autoscaler_provider: bool,
    /// v1alpha1's `hardPodAffinitySymmetricWeight`, for InterPodAffinity's args.
    hard_pod_affinity_weight: Option<i32>,
    /// The keys of `options.renames` used so far.
    renamed: BTreeSet<String>,
    /// The CRD schema of each `spec.pluginConfig` property, to find args fields berth's
    /// types do not have (the API server would prune them silently).
    args_schemas: Map<String, Value>,
    /// Validates converted profiles as `berth simulate` does; `None` only if the
    /// registry's CRD cannot be compiled (berth's bug), then `resolve` alone checks them.
    validator: Option<ProfileValidator<'a>>,
    unsupported: Vec<Unsupported>,
    notes: Vec<Note>,
    invalid: Vec<FieldError>,
}

impl<'a> Converter<'a> {
    fn new(registry: &'a Registry, options: &'a ConvertOptions, version: Version) -> Self {
        Converter {
            registry,
            options,
            version,
            autoscaler_provider: false,
            hard_pod_affinity_weight: None,
            renamed: BTreeSet::new(),
            args_schemas: plugin_config_schemas(registry),
            validator: ProfileValidator::new(registry).ok(),
            unsupported: Vec::new(),
            notes: Vec::new(),
            invalid: Vec::new(),
        }
    }

    fn unsupported(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.unsupported.push(Unsupported {
            path: path.into(),
            message: message.into(),
        });
    }

    fn note(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.notes.push(Note {
            path: path.into(),
            message: message.into(),
        });
    }

    /// An object with a non-empty `name` and no fields but `fields` (others are reported
    /// as unsupported): a plugin, or a plugin config. `what` names it in errors.
    fn named_entry<'v>(
        &mut self,
        value: &'v Value,
        path: &str,
        what: &str,
        fields: &[&str],
    ) -> Option<(&'v Map<String, Value>, String)> {
        let Some(object) = value.as_object() else {
            self.invalid(path, value, &format!("{what} ({})", fields.join(", ")));
            return None;
        };
        let name = match object.get("name") {
            Some(Value::String(name)) if !name.is_empty() => name.clone(),
            other => {
                let other = other.unwrap_or(&Value::Null);
                self.invalid(&format!("{path}.name"), other, "a plugin name");
                return None;
            }
        };
        for key in object.keys().filter(|k| !fields.contains(&k.as_str())) {
            self.unsupported(
                format!("{path}.{key}"),
                format!("unknown field: {what} has only {}", fields.join(" and ")),
            );
        }
        Some((object, name))
    }

    fn invalid(&mut self, path: &str, value: &Value, expected: &str) {
        self.invalid.push(FieldError::new(
            path,
            value,
            format!("expected {expected}, got {}", json_type(value)),
        ));
    }

    fn int32(&mut self, value: &Value, path: &str) -> Option<i32> {
        match value {
            Value::Null => None,
            _ => match value.as_i64().and_then(|n| i32::try_from(n).ok()) {
                Some(n) => Some(n),
                None => {
                    self.invalid(path, value, "a 32-bit integer");
                    None
                }
            },
        }
    }

    fn int64(&mut self, value: &Value, path: &str) -> Option<i64> {
        match value {
            Value::Null => None,
            _ => match value.as_i64() {
                Some(n) => Some(n),
                None => {
                    self.invalid(path, value, "an integer");
                    None
                }
            },
        }
    }
}

fn profile_with_globals(
    name: &str,
    mut spec: SchedulerProfileSpec,
    globals: &Globals,
) -> SchedulerProfile {
    spec.percentage_of_nodes_to_score = spec
        .percentage_of_nodes_to_score
        .or(globals.percentage_of_nodes_to_score);
    spec.pod_initial_backoff_seconds = globals.pod_initial_backoff_seconds;
    spec.pod_max_backoff_seconds = globals.pod_max_backoff_seconds;
    SchedulerProfile::new(name, spec)
}

/// Why an enabled plugin cannot be carried: berth's plugins, and how to add one.
fn not_registered(name: &str, registry: &Registry) -> String {
    format!(
        "plugin {name:?} is not registered in berth, which has {}; to run a plugin of your own, build it \
         into a berth binary (docs/writing-plugins.md)",
        registry.names().join(", ")
    )
}

/// `key` under `path`; the bare key at the top level (v1alpha1).
fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Null, `{}`, `[]` and `""` carry nothing: such fields are ignored rather than reported.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(object) => object.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::String(text) => text.is_empty(),
        _ => false,
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// RFC 1123 subdomain, as Kubernetes validates object names and `spec.schedulerName`.
pub fn is_dns1123_subdomain(name: &str) -> bool {
    let label_ok = |label: &str| {
        let bytes = label.as_bytes();
        !bytes.is_empty()
            && bytes
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
            && bytes.first() != Some(&b'-')
            && bytes.last() != Some(&b'-')
    };
    name.len() <= 253 && name.split('.').all(label_ok)
}

#[cfg(test)]
mod tests;
