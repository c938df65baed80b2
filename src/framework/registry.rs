//! The plugin registry: the single source of truth about plugins.
//!
//! Each entry carries a plugin's name, the extension points it implements, its args type
//! (serde + schemars + defaults + semantic validation) and its factory. The CRD schema, the
//! decoding of `pluginConfig`, `berth plugins` and the default plugin set all come from
//! here, so they cannot disagree.
//!
//! Out-of-tree plugins are registered the same way, with [`Registry::register`], before
//! the binary's entry point runs (the Rust counterpart of upstream's
//! `app.WithPlugin(name, factory)`).

use std::collections::BTreeMap;
use std::sync::Arc;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Handle, Plugin};
use crate::api::{ExtensionPoint, FieldError};

/// The typed arguments of a plugin. `Default` gives the upstream defaults; serde fills
/// missing fields from them (`#[serde(default)]` on the struct).
/// A field transform for plugin args (`#[schemars(transform = without_default)]`) whose
/// serde default does not pass the field's own schema (an empty list under `minItems: 1`):
/// the CRD then has no default there, since kube-apiserver refuses a CRD whose default
/// fails its own schema.
pub fn without_default(schema: &mut schemars::Schema) {
    schema.remove("default");
}

pub trait PluginArgs:
    Serialize + DeserializeOwned + JsonSchema + Default + Clone + Send + Sync + 'static
{
    /// False only for [`NoArgs`]: such plugins get no `pluginConfig` property.
    const HAS_ARGS: bool = true;

    /// The smallest args that pass validation: the defaults, unless a field has none
    /// (the Prometheus plugins' `prometheusAddress`). Wherever args must merely build a
    /// plugin (tests, examples), they come from here instead of a hand-kept table.
    fn example() -> Self {
        Self::default()
    }

    /// Semantic checks that the schema cannot express. `path` is the path of the args
    /// object, e.g. `spec.pluginConfig.nodeResourcesFit`.
    fn validate(&self, path: &str) -> Vec<FieldError> {
        let _ = path;
        Vec::new()
    }
}

/// The args type of plugins that take no arguments.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, JsonSchema)]
pub struct NoArgs {}

impl PluginArgs for NoArgs {
    const HAS_ARGS: bool = false;
}

/// How a plugin type describes itself to the registry. Write it through [`plugin!`](crate::plugin),
/// which derives `NAME`, `POINTS` and the `Plugin` accessors from one declaration.
pub trait PluginFactory: Plugin + Sized {
    /// The registry name, e.g. `NodeResourcesFit`.
    const NAME: &'static str;
    /// The extension points the plugin implements: exactly the points whose `as_*`
    /// accessor returns `Some`.
    const POINTS: &'static [ExtensionPoint];
    /// One sentence saying what the plugin does, shown by `berth plugins`; empty when the
    /// plugin does not describe itself.
    const DESCRIPTION: &'static str = "";
    /// The points whose calls read what the plugin's own pre-point wrote into the
    /// `CycleState` (see [`Coupling`]). Profile resolution runs the pre-point wherever the
    /// point runs. Leave a point out when it recomputes the state itself when it is
    /// missing, as upstream's NodeAffinity and NodeResourcesFit Score do.
    const COUPLINGS: &'static [Coupling] = &[];
    type Args: PluginArgs;

    /// Builds the plugin from defaulted, validated args.
    fn build(args: Self::Args, handle: &Handle) -> Result<Self, PluginError>;
}

/// Declares a plugin once: its registry name and the extension points it implements give
/// both the [`Plugin`] impl (`name` and one `as_<point>` accessor per point) and the
/// [`PluginFactory`] constants `NAME` and `POINTS`, so the points the registry (and with it
/// the CRD and profile resolution) knows and the points the framework calls cannot
/// disagree. Built-in and out-of-tree plugins use the same declaration.
///
/// The optional `impl Plugin` block holds the rest of the `Plugin` impl
/// (`events_to_register`, `rejections_expire`); the `impl PluginFactory` block the rest of
/// the factory (`DESCRIPTION`, `COUPLINGS`, `Args`, `build`). The plugin must implement the
/// trait of every point listed (`FilterPlugin` for `Filter`, ...).
///
/// ```ignore
/// berth::plugin! {
///     PreferNodes {
///         name: "PreferNodes",
///         points: [Score],
///     }
///
///     impl Plugin {
///         fn events_to_register(&self) -> Option<Vec<ClusterEvent>> {
///             Some(Vec::new())
///         }
///     }
///
///     impl PluginFactory {
///         const DESCRIPTION: &'static str = "Prefers the nodes its args name.";
///         type Args = PreferNodesArgs;
///
///         fn build(args: PreferNodesArgs, _: &Handle) -> Result<Self, PluginError> {
///             Ok(PreferNodes::new(args))
///         }
///     }
/// }
/// ```
#[macro_export]
macro_rules! plugin {
    (@accessor PreEnqueue) => {
        fn as_pre_enqueue(&self) -> Option<&dyn $crate::framework::PreEnqueuePlugin> {
            Some(self)
        }
    };
    (@accessor QueueSort) => {
        fn as_queue_sort(&self) -> Option<&dyn $crate::framework::QueueSortPlugin> {
            Some(self)
        }
    };
    (@accessor PreFilter) => {
        fn as_pre_filter(&self) -> Option<&dyn $crate::framework::PreFilterPlugin> {
            Some(self)
        }
    };
    (@accessor Filter) => {
        fn as_filter(&self) -> Option<&dyn $crate::framework::FilterPlugin> {
            Some(self)
        }
    };
    (@accessor PostFilter) => {
        fn as_post_filter(&self) -> Option<&dyn $crate::framework::PostFilterPlugin> {
            Some(self)
        }
    };
    (@accessor PreScore) => {
        fn as_pre_score(&self) -> Option<&dyn $crate::framework::PreScorePlugin> {
            Some(self)
        }
    };
    (@accessor Score) => {
        fn as_score(&self) -> Option<&dyn $crate::framework::ScorePlugin> {
            Some(self)
        }
    };
    (@accessor Reserve) => {
        fn as_reserve(&self) -> Option<&dyn $crate::framework::ReservePlugin> {
            Some(self)
        }
    };
    (@accessor Permit) => {
        fn as_permit(&self) -> Option<&dyn $crate::framework::PermitPlugin> {
            Some(self)
        }
    };
    (@accessor PreBind) => {
        fn as_pre_bind(&self) -> Option<&dyn $crate::framework::PreBindPlugin> {
            Some(self)
        }
    };
    (@accessor Bind) => {
        fn as_bind(&self) -> Option<&dyn $crate::framework::BindPlugin> {
            Some(self)
        }
    };
    (@accessor PostBind) => {
        fn as_post_bind(&self) -> Option<&dyn $crate::framework::PostBindPlugin> {
            Some(self)
        }
    };
    (
        $plugin:ident {
            name: $name:literal,
            points: [$($point:ident),+ $(,)?] $(,)?
        }
        $(impl Plugin { $($plugin_item:tt)* })?
        impl PluginFactory { $($factory_item:tt)* }
    ) => {
        impl $crate::framework::Plugin for $plugin {
            fn name(&self) -> &str {
                $name
            }
            $($crate::plugin!(@accessor $point);)+
            $($($plugin_item)*)?
        }

        impl $crate::framework::PluginFactory for $plugin {
            const NAME: &'static str = $name;
            const POINTS: &'static [$crate::framework::ExtensionPoint] =
                &[$($crate::framework::ExtensionPoint::$point),+];
            $($factory_item)*
        }
    };
}

/// A point of a plugin that cannot work without the plugin's own pre-point in the same
/// cycle: upstream's plugins keep what PreFilter or PreScore computed in the `CycleState`
/// and read it back in Filter or Score, failing (or, for berth's metrics plugins, scoring
/// neutrally) when it is not there. Declared per plugin in [`PluginFactory::COUPLINGS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Coupling {
    /// Filter reads the state PreFilter writes.
    FilterNeedsPreFilter,
    /// Score reads the state PreScore writes.
    ScoreNeedsPreScore,
}

impl Coupling {
    /// The point that needs the state (Filter or Score).
    pub fn point(self) -> ExtensionPoint {
        match self {
            Coupling::FilterNeedsPreFilter => ExtensionPoint::Filter,
            Coupling::ScoreNeedsPreScore => ExtensionPoint::Score,
        }
    }

    /// The point that writes it (PreFilter or PreScore).
    pub fn pre_point(self) -> ExtensionPoint {
        match self {
            Coupling::FilterNeedsPreFilter => ExtensionPoint::PreFilter,
            Coupling::ScoreNeedsPreScore => ExtensionPoint::PreScore,
        }
    }
}

/// Why a plugin could not be built from its args.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum PluginError {
    #[error("invalid args for plugin {plugin}: {errors:?}")]
    InvalidArgs {
        plugin: String,
        errors: Vec<FieldError>,
    },
    #[error("plugin {plugin} failed to initialise: {message}")]
    Init { plugin: String, message: String },
}

type BuildFn = dyn Fn(Option<&serde_json::Value>, &str, &Handle) -> Result<Arc<dyn Plugin>, PluginError>
    + Send
    + Sync;

/// The args side of a registry entry.
#[derive(Clone)]
pub struct ArgsSpec {
    type_name: fn() -> String,
    schema: fn(&mut SchemaGenerator) -> Schema,
    defaults: fn() -> serde_json::Value,
    example: fn() -> serde_json::Value,
    check: fn(&serde_json::Value, &str) -> Vec<FieldError>,
}

impl ArgsSpec {
    fn of<A: PluginArgs>() -> Self {
        ArgsSpec {
            type_name: || A::schema_name().into_owned(),
            schema: |generator| generator.subschema_for::<A>(),
            defaults: || serde_json::to_value(A::default()).unwrap_or(serde_json::Value::Null),
            example: || serde_json::to_value(A::example()).unwrap_or(serde_json::Value::Null),
            check: |value, path| match decode_args::<A>(Some(value), path) {
                Ok(_) => Vec::new(),
                Err(errors) => errors,
            },
        }
    }

    /// The name of the args type, e.g. `NodeResourcesFitArgs`.
    pub fn type_name(&self) -> String {
        (self.type_name)()
    }

    /// The JSON schema of the args type.
    pub fn schema(&self, generator: &mut SchemaGenerator) -> Schema {
        (self.schema)(generator)
    }

    /// The defaulted args as JSON.
    pub fn defaults(&self) -> serde_json::Value {
        (self.defaults)()
    }

    /// The smallest valid args as JSON ([`PluginArgs::example`]).
    pub fn example(&self) -> serde_json::Value {
        (self.example)()
    }

    /// The JSON schema of the args type on its own (JSON Schema 2020-12, subschemas
    /// inlined where schemars can), with the doc comments of the args types as
    /// `description`s. For documentation; the CRD uses [`ArgsSpec::schema`] with its own
    /// generator.
    pub fn schema_json(&self) -> serde_json::Value {
        let mut generator = schemars::generate::SchemaSettings::draft2020_12()
            .with(|settings| {
                settings.inline_subschemas = true;
                settings.meta_schema = None;
            })
            .into_generator();
        let mut schema = self.schema(&mut generator).to_value();
        // Recursive types stay `$ref`s into `$defs`; keep them resolvable.
        let definitions = generator.take_definitions(true);
        if let (false, Some(object)) = (definitions.is_empty(), schema.as_object_mut()) {
            object.insert("$defs".into(), serde_json::Value::Object(definitions));
        }
        schema
    }

    /// Decodes and validates `value`; errors name fields under `path`.
    pub fn check(&self, value: &serde_json::Value, path: &str) -> Vec<FieldError> {
        (self.check)(value, path)
    }
}

/// Decodes args (missing -> defaults) and runs their semantic validation.
pub fn decode_args<A: PluginArgs>(
    value: Option<&serde_json::Value>,
    path: &str,
) -> Result<A, Vec<FieldError>> {
    let args = match value {
        None | Some(serde_json::Value::Null) => A::default(),
        Some(v) => serde_json::from_value::<A>(v.clone()).map_err(|e| {
            vec![FieldError::new(
                path,
                v,
                format!("cannot decode plugin args: {e}"),
            )]
        })?,
    };
    let errors = args.validate(path);
    if errors.is_empty() {
        Ok(args)
    } else {
        Err(errors)
    }
}

/// One plugin known to the registry.
#[derive(Clone)]
pub struct PluginEntry {
    pub name: &'static str,
    pub points: &'static [ExtensionPoint],
    /// One sentence saying what the plugin does ([`PluginFactory::DESCRIPTION`]); may be
    /// empty.
    pub description: &'static str,
    /// Points that need the plugin's own pre-point ([`PluginFactory::COUPLINGS`]).
    pub couplings: &'static [Coupling],
    /// `None` for plugins without args.
    pub args: Option<ArgsSpec>,
    build: Arc<BuildFn>,
}

impl PluginEntry {
    /// The entry of plugin type `P`.
    pub fn of<P: PluginFactory>() -> Self {
        PluginEntry {
            name: P::NAME,
            points: P::POINTS,
            description: P::DESCRIPTION,
            couplings: P::COUPLINGS,
            args: P::Args::HAS_ARGS.then(ArgsSpec::of::<P::Args>),
            build: Arc::new(|value, path, handle| {
                let args = decode_args::<P::Args>(value, path).map_err(|errors| {
                    PluginError::InvalidArgs {
                        plugin: P::NAME.to_string(),
                        errors,
                    }
                })?;
                Ok(Arc::new(P::build(args, handle)?) as Arc<dyn Plugin>)
            }),
        }
    }

    /// The `pluginConfig` property name: the plugin name in lowerCamelCase.
    pub fn config_field(&self) -> String {
        lower_camel(self.name)
    }

    pub fn implements(&self, point: ExtensionPoint) -> bool {
        self.points.contains(&point)
    }

    /// The pre-point that must run wherever `point` runs, if `point` needs one.
    pub fn pre_point_of(&self, point: ExtensionPoint) -> Option<ExtensionPoint> {
        self.couplings
            .iter()
            .find(|coupling| coupling.point() == point)
            .map(|coupling| coupling.pre_point())
    }

    /// Args this plugin builds from: its [`PluginArgs::example`], `None` without args.
    pub fn example_args(&self) -> Option<serde_json::Value> {
        self.args.as_ref().map(ArgsSpec::example)
    }

    /// Builds an instance from (possibly absent) args; `path` names the args in errors.
    pub fn build(
        &self,
        args: Option<&serde_json::Value>,
        path: &str,
        handle: &Handle,
    ) -> Result<Arc<dyn Plugin>, PluginError> {
        (self.build)(args, path, handle)
    }
}

/// `NodeResourcesFit` -> `nodeResourcesFit`; a leading acronym is lowered as a whole
/// (`QOSSort` -> `qosSort`), as Kubernetes JSON field names do.
pub fn lower_camel(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let upper_run = chars.iter().take_while(|c| c.is_uppercase()).count();
    let lowered = match upper_run {
        0 => 0,
        n if n == chars.len() || n == 1 => n,
        n => n - 1,
    };
    chars
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if i < lowered {
                c.to_ascii_lowercase()
            } else {
                *c
            }
        })
        .collect()
}

/// A plugin in the default set with its default Score weight. As in upstream's v1
/// config, the default set is a `multiPoint` list: each plugin runs at every point it
/// implements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultPlugin {
    pub name: &'static str,
    pub weight: Option<i32>,
}

impl DefaultPlugin {
    /// Plugin type `P` under its registry name, without a weight: the default set names
    /// plugins by type, so a renamed plugin cannot leave a stale name behind.
    pub const fn of<P: PluginFactory>() -> Self {
        DefaultPlugin {
            name: P::NAME,
            weight: None,
        }
    }

    /// The same plugin with Score weight `weight`.
    pub const fn weight(self, weight: i32) -> Self {
        DefaultPlugin {
            weight: Some(weight),
            ..self
        }
    }
}

/// All plugins a binary knows, plus the default plugin set.
#[derive(Clone, Default)]
pub struct Registry {
    entries: BTreeMap<&'static str, PluginEntry>,
    /// The default `multiPoint` plugins, in upstream order.
    defaults: Vec<DefaultPlugin>,
}

impl Registry {
    /// An empty registry (no plugins, no defaults).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds plugin type `P`. Registering a name twice replaces the earlier entry.
    pub fn register<P: PluginFactory>(&mut self) -> &mut Self {
        self.insert(PluginEntry::of::<P>())
    }

    /// Adds plugin type `P` and appends it to the default set, unweighted (Score weight 1
    /// where it scores).
    pub fn register_default<P: PluginFactory>(&mut self) -> &mut Self {
        self.register_in_defaults::<P>(DefaultPlugin::of::<P>())
    }

    /// Adds plugin type `P` and appends it to the default set with Score weight `weight`.
    pub fn register_default_weighted<P: PluginFactory>(&mut self, weight: i32) -> &mut Self {
        self.register_in_defaults::<P>(DefaultPlugin::of::<P>().weight(weight))
    }

    fn register_in_defaults<P: PluginFactory>(&mut self, plugin: DefaultPlugin) -> &mut Self {
        self.defaults
            .retain(|existing| existing.name != plugin.name);
        self.defaults.push(plugin);
        self.register::<P>()
    }

    pub fn insert(&mut self, entry: PluginEntry) -> &mut Self {
        self.entries.insert(entry.name, entry);
        self
    }

    /// Sets the default plugin set (a `multiPoint` list), in order.
    pub fn set_defaults(&mut self, plugins: Vec<DefaultPlugin>) -> &mut Self {
        self.defaults = plugins;
        self
    }

    pub fn get(&self, name: &str) -> Option<&PluginEntry> {
        self.entries.get(name)
    }

    /// Every entry, sorted by name.
    pub fn entries(&self) -> impl Iterator<Item = &PluginEntry> {
        self.entries.values()
    }

    /// Every plugin name, sorted.
    pub fn names(&self) -> Vec<&'static str> {
        self.entries.keys().copied().collect()
    }

    /// The default plugin set, in order.
    pub fn defaults(&self) -> &[DefaultPlugin] {
        &self.defaults
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_field_is_lower_camel() {
        assert_eq!(lower_camel("NodeResourcesFit"), "nodeResourcesFit");
        assert_eq!(lower_camel("QOSSort"), "qosSort");
        assert_eq!(lower_camel("DefaultBinder"), "defaultBinder");
    }

    #[test]
    fn couplings_name_points_the_plugin_implements() {
        for entry in crate::plugins::default_registry().entries() {
            for coupling in entry.couplings {
                assert!(
                    entry.implements(coupling.point()) && entry.implements(coupling.pre_point()),
                    "{}: {coupling:?}",
                    entry.name
                );
            }
        }
    }

    #[test]
    fn the_default_set_names_plugins_by_type_in_registration_order() {
        use crate::plugins::{NodeName, PrioritySort, TaintToleration};
        let named = |name, weight| DefaultPlugin { name, weight };
        let mut registry = Registry::new();
        registry
            .register_default::<PrioritySort>()
            .register_default::<NodeName>()
            .register_default_weighted::<TaintToleration>(3)
            // Registering a default again replaces it and moves it to the end, as
            // registering a name again replaces its entry.
            .register_default_weighted::<NodeName>(2);
        assert_eq!(
            registry.defaults(),
            [
                named("PrioritySort", None),
                named("TaintToleration", Some(3)),
                named("NodeName", Some(2)),
            ]
        );
        assert_eq!(
            registry.names(),
            ["NodeName", "PrioritySort", "TaintToleration"]
        );
        assert_eq!(
            DefaultPlugin::of::<TaintToleration>().weight(3),
            named("TaintToleration", Some(3))
        );
    }
}
