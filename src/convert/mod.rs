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
//!   the same shape and merge rules; the older versions listed other defaults point by
//!   point, so their plugin lists are recomputed as that version ran them and written out
//!   where berth's defaults differ (the `versions` submodule);
//! - each `pluginConfig[]` entry becomes the typed `spec.pluginConfig.<lowerCamelName>`
//!   property, without the `apiVersion`/`kind` upstream args carry, after translating
//!   known foreign field names ([`ArgsTranslation`]) and decoding the args with the
//!   registry's args type;
//! - the global `percentageOfNodesToScore` and backoff settings are copied into every
//!   profile (a profile's own `percentageOfNodesToScore` wins, as upstream).
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

mod versions;
pub use versions::Version;

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

// ---------------------------------------------------------------------------------------
// Args translations

/// How the args of one plugin, as widely published configurations write them, map to the
/// args type berth registers for that plugin. Active only when `plugin` is registered.
#[derive(Debug, Clone, Copy)]
pub struct ArgsTranslation {
    pub plugin: &'static str,
    pub fields: &'static [FieldTranslation],
    /// Fields with no counterpart in berth's args, each with why nothing is lost; they are
    /// dropped with a note instead of being reported as unknown.
    pub dropped: &'static [(&'static str, &'static str)],
}

/// One args field renamed, with its value converted.
#[derive(Debug, Clone, Copy)]
pub struct FieldTranslation {
    /// The field name in the input's args.
    pub from: &'static str,
    /// The field name in berth's args.
    pub to: &'static str,
    /// Converts the value; the error says what would be valid.
    pub value: fn(&Value) -> Result<Value, String>,
}

/// The translations `berth convert` applies.
pub const BUILTIN_ARGS_TRANSLATIONS: &[ArgsTranslation] =
    &[NETWORK_TRAFFIC_TUTORIAL, COSCHEDULING_TUTORIAL];

/// The NetworkTraffic plugin of the widely copied "write a scheduler plugin" tutorial
/// (`ip`, `deviceName`, `timeRange`) and of scheduler-plugins' sample
/// (`timeRangeInMinutes`), to berth's NetworkTraffic args.
pub const NETWORK_TRAFFIC_TUTORIAL: ArgsTranslation = ArgsTranslation {
    plugin: "NetworkTraffic",
    fields: &[
        FieldTranslation {
            from: "ip",
            to: "prometheusAddress",
            value: prometheus_address,
        },
        FieldTranslation {
            from: "deviceName",
            to: "networkInterface",
            value: same_string,
        },
        FieldTranslation {
            from: "timeRange",
            to: "timeRangeSeconds",
            value: duration_seconds,
        },
        FieldTranslation {
            from: "timeRangeInMinutes",
            to: "timeRangeSeconds",
            value: minutes_to_seconds,
        },
    ],
    dropped: &[],
};

/// The Coscheduling args of scheduler-plugins' releases, as its tutorials configure them,
/// to berth's Coscheduling args.
pub const COSCHEDULING_TUTORIAL: ArgsTranslation = ArgsTranslation {
    plugin: "Coscheduling",
    fields: &[FieldTranslation {
        // Both hold a denied group's pods back at PreFilter for this many seconds.
        from: "deniedPGExpirationTimeSeconds",
        to: "podGroupBackoffSeconds",
        value: whole_seconds,
    }],
    dropped: &[
        (
            "kubeConfigPath",
            "berth's plugins use berth's own API connection (`berth run --kubeconfig`)",
        ),
        (
            "kubeMaster",
            "berth's plugins use berth's own API connection (`berth run --kubeconfig`)",
        ),
        (
            "podGroupGCIntervalSeconds",
            "it tuned scheduler-plugins' in-memory pod group records; berth reads PodGroups from the API",
        ),
        (
            "podGroupExpirationTimeSeconds",
            "it tuned scheduler-plugins' in-memory pod group records; berth reads PodGroups from the API",
        ),
    ],
};

fn whole_seconds(value: &Value) -> Result<Value, String> {
    value
        .as_i64()
        .filter(|s| *s >= 0)
        .map(Value::from)
        .ok_or_else(|| "expected a whole number of seconds, 0 or more".into())
}

fn same_string(value: &Value) -> Result<Value, String> {
    match value {
        Value::String(_) => Ok(value.clone()),
        _ => Err("expected a string".into()),
    }
}

/// The tutorial's `ip` is often a bare `host:port`; berth wants an http(s) URL.
fn prometheus_address(value: &Value) -> Result<Value, String> {
    let Some(address) = value.as_str().filter(|s| !s.is_empty()) else {
        return Err("expected the Prometheus address, e.g. \"http://prometheus:9090\"".into());
    };
    if address.contains("://") {
        Ok(Value::String(address.to_string()))
    } else {
        Ok(Value::String(format!("http://{address}")))
    }
}

/// Whole seconds as a number, or a Go duration string (`"90s"`, `"5m"`, `"1h30m"`).
fn duration_seconds(value: &Value) -> Result<Value, String> {
    const EXPECTED: &str = "expected whole seconds as a number or a duration such as \"5m\"";
    match value {
        Value::Number(n) => n
            .as_i64()
            .filter(|s| *s > 0)
            .map(Value::from)
            .ok_or_else(|| EXPECTED.to_string()),
        Value::String(text) => parse_duration_seconds(text)
            .map(Value::from)
            .ok_or_else(|| EXPECTED.to_string()),
        _ => Err(EXPECTED.into()),
    }
}

fn minutes_to_seconds(value: &Value) -> Result<Value, String> {
    value
        .as_i64()
        .filter(|m| *m > 0)
        .and_then(|m| m.checked_mul(60))
        .map(Value::from)
        .ok_or_else(|| "expected a positive whole number of minutes".into())
}

/// Parses a Go `time.Duration` string into whole seconds; `None` when it is malformed,
/// not positive or not a whole number of seconds.
fn parse_duration_seconds(text: &str) -> Option<i64> {
    const UNITS: [(&str, f64); 6] = [
        ("ns", 1e-9),
        ("us", 1e-6),
        ("ms", 1e-3),
        ("s", 1.0),
        ("m", 60.0),
        ("h", 3600.0),
    ];
    let mut rest = text.trim();
    if let Ok(seconds) = rest.parse::<i64>() {
        return (seconds > 0).then_some(seconds);
    }
    let mut total = 0.0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..number_len].parse().ok()?;
        rest = &rest[number_len..];
        let (unit, scale) = UNITS
            .iter()
            .filter(|(unit, _)| rest.starts_with(unit))
            .max_by_key(|(unit, _)| unit.len())?;
        rest = &rest[unit.len()..];
        total += number * scale;
    }
    let seconds = total.round();
    ((total - seconds).abs() < 1e-6 && seconds >= 1.0 && seconds <= i64::MAX as f64)
        .then_some(seconds as i64)
}

// ---------------------------------------------------------------------------------------
// Settings of the kube-scheduler process

/// Top-level fields that configure the kube-scheduler process rather than a profile, and
/// what configures the same thing in berth: `berth run` flags and the chart's values.
const PROCESS_SETTINGS: [(&str, &str); 10] = [
    (
        "parallelism",
        "set `berth run --parallelism` (Helm value `parallelism`)",
    ),
    (
        "leaderElection",
        "berth elects a leader with its own Lease: `berth run --leader-elect` with `--lease-name`, \
         `--lease-namespace`, `--lease-duration-seconds` (Helm values `leaderElection.enabled`, \
         `leaderElection.leaseName`, `leaderElection.leaseDurationSeconds`)",
    ),
    (
        "clientConnection",
        "berth connects with `berth run --kubeconfig` (or KUBECONFIG), in a cluster with the chart's \
         service account (Helm values `serviceAccount.create`, `serviceAccount.name`)",
    ),
    (
        "healthzBindAddress",
        "berth serves /healthz and /readyz next to /metrics: `berth run --metrics-bind-address` \
         (Helm values `metrics.bindAddress`, `metrics.port`)",
    ),
    (
        "metricsBindAddress",
        "set `berth run --metrics-bind-address` (Helm values `metrics.bindAddress`, `metrics.port`)",
    ),
    (
        "enableProfiling",
        "berth has no profiling endpoints; nothing to set",
    ),
    (
        "enableContentionProfiling",
        "berth has no profiling endpoints; nothing to set",
    ),
    (
        "delayCacheUntilActive",
        "berth's followers always keep their caches warm; nothing to set",
    ),
    (
        "disablePreemption",
        "berth does not preempt pods; nothing to set",
    ),
    (
        "bindTimeoutSeconds",
        "it bounded volume binding, which berth does not do; nothing to set",
    ),
];

/// Fields only v1alpha1 and v1alpha2 have.
const ALPHA_ONLY_FIELDS: [&str; 2] = ["disablePreemption", "bindTimeoutSeconds"];

/// Fields only v1alpha1 has: its one scheduler is configured at the top level.
const V1ALPHA1_FIELDS: [&str; 5] = [
    "schedulerName",
    "algorithmSource",
    "hardPodAffinitySymmetricWeight",
    "plugins",
    "pluginConfig",
];

/// Top-level fields in the order of upstream's type, so reports follow the input's layout.
const CONFIG_FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "schedulerName",
    "algorithmSource",
    "hardPodAffinitySymmetricWeight",
    "parallelism",
    "leaderElection",
    "clientConnection",
    "healthzBindAddress",
    "metricsBindAddress",
    "enableProfiling",
    "enableContentionProfiling",
    "percentageOfNodesToScore",
    "percentageOfPlacementsToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "disablePreemption",
    "bindTimeoutSeconds",
    "plugins",
    "pluginConfig",
    "profiles",
    "extenders",
    "delayCacheUntilActive",
];

const PROFILE_FIELDS: &[&str] = &[
    "schedulerName",
    "percentageOfNodesToScore",
    "percentageOfPlacementsToScore",
    "plugins",
    "pluginConfig",
];

const PLUGINS_FIELDS: &[&str] = &[
    "multiPoint",
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
];

/// The entries of `object` with the `order` fields first, in that order, then the rest.
fn in_upstream_order<'v>(
    object: &'v Map<String, Value>,
    order: &[&str],
) -> Vec<(&'v String, &'v Value)> {
    let mut entries: Vec<_> = object.iter().collect();
    entries.sort_by_key(|(key, _)| order.iter().position(|o| o == key).unwrap_or(order.len()));
    entries
}

/// Extension points of newer upstream releases that berth does not have.
const FOREIGN_POINTS: [&str; 4] = [
    "placementGenerate",
    "placementScore",
    "placementFeasible",
    "podGroupPostFilter",
];

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
}

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

    fn invalid(&mut self, path: &str, value: &Value, expected: &str) {
        self.invalid.push(FieldError::new(
            path,
            value,
            format!("expected {expected}, got {}", json_type(value)),
        ));
    }

    fn configuration(&mut self, object: &Map<String, Value>) -> Conversion {
        let mut globals = Globals::default();
        let mut profiles = None;
        let single = self.version == Version::V1alpha1;
        let mut scheduler = Map::new();
        for (key, value) in in_upstream_order(object, CONFIG_FIELDS) {
            match key.as_str() {
                "apiVersion" | "kind" => {}
                "profiles" if !single => profiles = Some(value),
                "percentageOfNodesToScore" => {
                    globals.percentage_of_nodes_to_score = self.int32(value, key);
                    self.copied_note(
                        key,
                        value,
                        "spec.percentageOfNodesToScore of every profile that sets none",
                    );
                }
                "podInitialBackoffSeconds" => {
                    globals.pod_initial_backoff_seconds = self.int64(value, key);
                    self.copied_note(key, value, "spec.podInitialBackoffSeconds of every profile");
                }
                "podMaxBackoffSeconds" => {
                    globals.pod_max_backoff_seconds = self.int64(value, key);
                    self.copied_note(key, value, "spec.podMaxBackoffSeconds of every profile");
                }
                "extenders" if !single => self.extenders(value),
                "algorithmSource" if single => self.algorithm_source(value),
                "hardPodAffinitySymmetricWeight" if single => {
                    self.hard_pod_affinity_weight = self.int32(value, key);
                }
                "schedulerName" | "plugins" | "pluginConfig" if single => {
                    scheduler.insert(key.clone(), value.clone());
                }
                _ => self.top_level_field(key, value),
            }
        }
        let mut converted = Vec::new();
        if single {
            let mut names = BTreeMap::new();
            let scheduler = Value::Object(scheduler);
            if let Some(profile) = self.profile(&scheduler, "", &globals, &mut names) {
                // The scheduler has no path of its own; its plugins are what validation
                // rejects.
                converted.push(("plugins".to_string(), profile));
            }
            profiles = None;
        }
        match profiles.filter(|p| !is_empty(p)) {
            None if single => {}
            None => {
                let profile = self.profile(&json!({}), "profiles", &globals, &mut BTreeMap::new());
                converted.extend(profile.map(|p| ("profiles".to_string(), p)));
            }
            Some(Value::Array(items)) => {
                let mut names = BTreeMap::new();
                for (index, item) in items.iter().enumerate() {
                    let path = format!("profiles[{index}]");
                    if let Some(profile) = self.profile(item, &path, &globals, &mut names) {
                        converted.push((path, profile));
                    }
                }
            }
            Some(other) => self.invalid("profiles", other, "a list of profiles"),
        }
        let profiles = converted
            .into_iter()
            .filter_map(|(path, profile)| self.check_valid(&path, profile))
            .collect();
        Conversion {
            profiles,
            unsupported: std::mem::take(&mut self.unsupported),
            notes: std::mem::take(&mut self.notes),
            renamed: std::mem::take(&mut self.renamed),
        }
    }

    /// A global setting berth keeps per profile.
    fn copied_note(&mut self, key: &str, value: &Value, target: &str) {
        if !value.is_null() {
            self.note(
                key,
                format!("copied into {target}: berth has no process-wide setting for it"),
            );
        }
    }

    /// v1alpha1's choice between the built-in provider's defaults and a Policy.
    fn algorithm_source(&mut self, value: &Value) {
        let Some(source) = value.as_object() else {
            if !value.is_null() {
                self.invalid("algorithmSource", value, "a mapping (provider or policy)");
            }
            return;
        };
        for (key, field) in source {
            let path = format!("algorithmSource.{key}");
            match (key.as_str(), field.as_str()) {
                (_, _) if is_empty(field) => {}
                ("provider", Some("DefaultProvider")) => {}
                ("provider", Some("ClusterAutoscalerProvider")) => {
                    self.autoscaler_provider = true;
                    self.note(
                        path,
                        "ClusterAutoscalerProvider scored with NodeResourcesMostAllocated instead of \
                         NodeResourcesLeastAllocated: NodeResourcesFit scores with the MostAllocated strategy",
                    );
                }
                ("provider", _) => self.unsupported(
                    path,
                    format!(
                        "Unsupported value: {field}: supported values: \"DefaultProvider\", \"ClusterAutoscalerProvider\""
                    ),
                ),
                ("policy", _) => self.unsupported(
                    path,
                    "the Policy API (predicates and priorities in a file or ConfigMap) has no SchedulerProfile \
                     form, and upstream removed it in 1.23: write the plugins those predicates and priorities \
                     stand for under plugins (the Kubernetes scheduling docs map each one to its plugin), then \
                     convert again",
                ),
                _ => self.unsupported(
                    path,
                    "unknown field: algorithmSource has only provider and policy",
                ),
            }
        }
    }

    fn top_level_field(&mut self, key: &str, value: &Value) {
        if is_empty(value) {
            return;
        }
        let alpha = self.version <= Version::V1alpha2;
        let setting = PROCESS_SETTINGS
            .iter()
            .find(|(name, _)| *name == key)
            .filter(|(name, _)| alpha || !ALPHA_ONLY_FIELDS.contains(name));
        if let Some((_, instead)) = setting {
            self.note(
                key,
                format!(
                    "not carried: it configures the kube-scheduler process, not a profile; {instead}"
                ),
            );
        } else if V1ALPHA1_FIELDS.contains(&key) || key == "extenders" || key == "profiles" {
            self.unsupported(
                key,
                format!(
                    "unknown field: KubeSchedulerConfiguration {} has no such field",
                    self.version.name()
                ),
            );
        } else if key == "percentageOfPlacementsToScore" {
            self.unsupported(
                key,
                "berth has no workload (pod group placement) scheduling cycle",
            );
        } else {
            self.unsupported(
                key,
                "unknown field: KubeSchedulerConfiguration has no such field",
            );
        }
    }

    fn extenders(&mut self, value: &Value) {
        let Some(extenders) = value.as_array() else {
            if !value.is_null() {
                self.invalid("extenders", value, "a list of extenders");
            }
            return;
        };
        for (index, extender) in extenders.iter().enumerate() {
            let url = extender
                .get("urlPrefix")
                .and_then(Value::as_str)
                .map(|url| format!(" {url}"))
                .unwrap_or_default();
            self.unsupported(
                format!("extenders[{index}]"),
                format!(
                    "berth does not call scheduler extenders (extender{url}); port its logic to a plugin \
                     registered in a berth binary (see examples/custom-plugin)"
                ),
            );
        }
    }

    /// One `profiles[]` entry (for v1alpha1 the top-level scheduler, `path` empty);
    /// `None` when it cannot be carried at all.
    fn profile(
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
    fn renamed_to(&mut self, name: String, path: &str) -> String {
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
    fn legacy_profile_args(
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

    fn plugins(&mut self, value: &Value, path: &str) -> Option<Plugins> {
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
    fn plugin_set(
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

    fn plugin_list(
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
    fn plugin_fields(&mut self, value: &Value, path: &str) -> Option<(String, Option<i32>)> {
        let Some(object) = value.as_object() else {
            self.invalid(path, value, "a plugin (name, weight)");
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
        let weight = match object.get("weight") {
            None | Some(Value::Null) => None,
            Some(weight) => self.int32(weight, &format!("{path}.weight")),
        };
        for key in object
            .keys()
            .filter(|k| !matches!(k.as_str(), "name" | "weight"))
        {
            self.unsupported(
                format!("{path}.{key}"),
                "unknown field: a plugin has only name and weight",
            );
        }
        Some((name, weight))
    }

    fn plugin_ref(
        &mut self,
        value: &Value,
        path: &str,
        point: Option<ExtensionPoint>,
        enabled: bool,
    ) -> Option<PluginRef> {
        let (name, weight) = self.plugin_fields(value, path)?;
        let registered = name == "*" && !enabled || self.registry.get(&name).is_some();
        if !registered {
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
    fn weight(
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

    /// `fit_strategy`: the NodeResourcesFit scoring strategy of a renamed resource scorer
    /// enabled in this (legacy) profile, whose args become NodeResourcesFit's.
    fn plugin_config(
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
    fn plugin_config_entry<'v>(
        &mut self,
        value: &'v Value,
        path: &str,
    ) -> Option<(String, Option<&'v Value>)> {
        let Some(object) = value.as_object() else {
            self.invalid(path, value, "a plugin config (name, args)");
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
        for key in object
            .keys()
            .filter(|k| !matches!(k.as_str(), "name" | "args"))
        {
            self.unsupported(
                format!("{path}.{key}"),
                "unknown field: a plugin config has only name and args",
            );
        }
        Some((name, object.get("args")))
    }

    /// The `spec.pluginConfig` property name and args for plugin `name`; `None` when the
    /// args cannot be carried (reported) or there is nothing to carry.
    fn plugin_args(
        &mut self,
        name: &str,
        args: Option<&Value>,
        path: &str,
    ) -> Option<(String, Value)> {
        let Some(entry) = self.registry.get(name) else {
            let mut message = not_registered(name, self.registry);
            if let Some(why) = versions::removed_upstream(name) {
                message = format!("{message}; {why}");
            }
            self.unsupported(format!("{path}.name"), message);
            return None;
        };
        let args_path = format!("{path}.args");
        let mut args = match args {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(args)) => args.clone(),
            Some(other) => {
                self.invalid(&args_path, other, "the plugin's args (a mapping)");
                return None;
            }
        };
        if !self.strip_type_meta(name, &mut args, &args_path) {
            return None;
        }
        let Some(spec) = entry.args.as_ref() else {
            if !args.is_empty() {
                self.unsupported(args_path, format!("plugin {name} takes no args in berth"));
            }
            return None;
        };
        let field = entry.config_field();
        self.translate_args(name, &mut args, &args_path);
        self.adjust_legacy_args(name, &mut args, &args_path);
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

    /// Drops the `apiVersion`/`kind` of upstream args; false (reported) when `kind` names
    /// the args of another plugin, which upstream rejects too.
    fn strip_type_meta(&mut self, name: &str, args: &mut Map<String, Value>, path: &str) -> bool {
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

    fn translate_args(&mut self, plugin: &str, args: &mut Map<String, Value>, path: &str) {
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
    fn prune_unknown_fields(&mut self, field: &str, args: &mut Map<String, Value>, path: &str) {
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
    fn schema_errors(&self, field: &str, args: &Value, args_path: &str) -> Vec<FieldError> {
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
    fn check_valid(&mut self, path: &str, profile: SchedulerProfile) -> Option<SchedulerProfile> {
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

/// Adds the fields of `args` to the args of `field`, keeping fields already there.
fn merge_args(config: &mut BTreeMap<String, Value>, field: &str, args: Map<String, Value>) {
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
fn message_of(error: &FieldError, args_path: &str) -> String {
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
fn plugin_config_schemas(registry: &Registry) -> Map<String, Value> {
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
fn prune_object(
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

fn prune_value(value: &mut Value, schema: &Value, path: &str, unknown: &mut Vec<String>) {
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
mod tests {
    use super::*;
    use crate::plugins::default_registry;
    use serde_json::json;
    use std::collections::HashSet;

    /// Every plugin name a plugin section mentions.
    fn mentioned(plugins: &Plugins) -> HashSet<String> {
        let sets = std::iter::once(plugins.multi_point.as_ref())
            .chain(ExtensionPoint::ALL.into_iter().map(|p| plugins.at(p)));
        sets.flatten()
            .flat_map(|set| set.enabled.iter().chain(&set.disabled))
            .map(|p| p.name.clone())
            .collect()
    }

    fn run(config: Value) -> Conversion {
        convert(&config, &default_registry(), &ConvertOptions::default())
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn paths(items: &[Unsupported]) -> Vec<&str> {
        items.iter().map(|u| u.path.as_str()).collect()
    }

    #[test]
    fn durations_parse_as_go_writes_them() {
        let cases = [
            ("60", Some(60)),
            ("90s", Some(90)),
            ("5m", Some(300)),
            ("1h30m", Some(5400)),
            ("1.5m", Some(90)),
            ("1500ms", None),
            ("0s", None),
            ("-5s", None),
            ("5 minutes", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_duration_seconds(text), want, "{text:?}");
        }
    }

    #[test]
    fn dns_subdomains() {
        for ok in ["a", "default-scheduler", "bin.packing-2"] {
            assert!(is_dns1123_subdomain(ok), "{ok}");
        }
        for bad in ["", "Upper", "under_score", "-lead", "trail-", "a..b"] {
            assert!(!is_dns1123_subdomain(bad), "{bad}");
        }
    }

    #[test]
    fn no_profiles_means_one_default_profile_with_the_globals() {
        let conversion = run(json!({
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": 30,
            "podMaxBackoffSeconds": 20,
        }));
        assert_eq!(conversion.unsupported, []);
        let [profile] = &conversion.profiles[..] else {
            panic!("{:?}", conversion.profiles);
        };
        assert_eq!(profile.metadata.name.as_deref(), Some("default-scheduler"));
        assert_eq!(profile.spec.scheduler_name, None);
        assert_eq!(profile.spec.percentage_of_nodes_to_score, Some(30));
        assert_eq!(profile.spec.pod_max_backoff_seconds, Some(20));
        assert_eq!(profile.spec.pod_initial_backoff_seconds, None);
    }

    #[test]
    fn wrong_types_are_errors_naming_every_path() {
        let error = convert(
            &json!({
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "percentageOfNodesToScore": "half",
                "profiles": [{"plugins": {"score": {"enabled": [{"name": 3}]}}}],
            }),
            &default_registry(),
            &ConvertOptions::default(),
        )
        .expect_err("invalid");
        let ConvertError::Invalid(errors) = error else {
            panic!("{error:?}");
        };
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "percentageOfNodesToScore",
                "profiles[0].plugins.score.enabled[0].name"
            ]
        );
    }

    #[test]
    fn disabled_plugins_berth_lacks_are_dropped_with_a_note() {
        let conversion = run(json!({
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"plugins": {"score": {"disabled": [{"name": "VolumeBinding"}, {"name": "TaintToleration"}]}}}],
        }));
        assert_eq!(conversion.unsupported, []);
        let plugins = conversion.profiles[0]
            .spec
            .plugins
            .clone()
            .unwrap_or_default();
        assert_eq!(
            mentioned(&plugins),
            HashSet::from(["TaintToleration".to_string()])
        );
        assert_eq!(
            conversion.notes[0].path,
            "profiles[0].plugins.score.disabled[0].name"
        );
    }

    #[test]
    fn weights_upstream_ignores_are_dropped() {
        let conversion = run(json!({
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"plugins": {
                "filter": {"enabled": [{"name": "NodeName", "weight": 4}]},
                "score": {"enabled": [{"name": "TaintToleration", "weight": 0}]},
            }}],
        }));
        let plugins = conversion.profiles[0]
            .spec
            .plugins
            .clone()
            .unwrap_or_default();
        let filter = plugins.filter.unwrap_or_default();
        let score = plugins.score.unwrap_or_default();
        assert_eq!(filter.enabled, [PluginRef::named("NodeName")]);
        assert_eq!(score.enabled, [PluginRef::named("TaintToleration")]);
        let weight_notes: Vec<&str> = conversion
            .notes
            .iter()
            .map(|n| n.path.as_str())
            .filter(|p| p.ends_with(".weight"))
            .collect();
        assert_eq!(
            weight_notes,
            [
                "profiles[0].plugins.filter.enabled[0].weight",
                "profiles[0].plugins.score.enabled[0].weight"
            ]
        );
    }

    #[test]
    fn unknown_args_fields_are_reported_and_pruned() {
        let conversion = run(json!({
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": {
                "kind": "NodeResourcesFitArgs",
                "scoringStrategy": {"type": "MostAllocated", "shape": []},
                "ignoredResource": ["x"],
            }}]}],
        }));
        assert_eq!(
            paths(&conversion.unsupported),
            [
                "profiles[0].pluginConfig[0].args.ignoredResource",
                "profiles[0].pluginConfig[0].args.scoringStrategy.shape"
            ]
        );
        assert_eq!(
            conversion.profiles[0].spec.plugin_config["nodeResourcesFit"],
            json!({"scoringStrategy": {"type": "MostAllocated"}})
        );
    }

    #[test]
    fn args_kind_of_another_plugin_is_reported() {
        let conversion = run(json!({
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": {"kind": "NodeAffinityArgs"}}]}],
        }));
        assert_eq!(
            paths(&conversion.unsupported),
            ["profiles[0].pluginConfig[0].args.kind"]
        );
    }

    #[test]
    fn a_profile_berth_would_reject_is_reported_and_left_out() {
        let conversion = run(json!({
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {"schedulerName": "a", "plugins": {"queueSort": {"enabled": [{"name": "CustomQueueSort"}], "disabled": [{"name": "*"}]}}},
                {"schedulerName": "b", "plugins": {"score": {"enabled": [{"name": "TaintToleration", "weight": 500}]}}},
                {"schedulerName": "c"},
            ],
        }));
        assert_eq!(
            paths(&conversion.unsupported),
            [
                "profiles[0].plugins.queueSort.enabled[0].name",
                "profiles[0]",
                "profiles[1]"
            ]
        );
        let names: Vec<String> = conversion
            .profiles
            .iter()
            .map(SchedulerProfile::scheduler_name)
            .collect();
        assert_eq!(names, ["c"]);
    }
}
