//! The top level of a configuration: process settings (which become notes naming the
//! `berth run` flag or Helm value), v1alpha1's scheduler fields, extenders and the walk
//! over `profiles[]`.

use super::*;

// ---------------------------------------------------------------------------------------
// Settings of the kube-scheduler process

/// Top-level fields that configure the kube-scheduler process rather than a profile, and
/// what configures the same thing in berth: `berth run` flags and the chart's values.
pub(super) const PROCESS_SETTINGS: [(&str, &str); 8] = [
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
];

/// Fields only v1alpha1 has: its one scheduler is configured at the top level.
pub(super) const V1ALPHA1_FIELDS: [&str; 5] = [
    "schedulerName",
    "algorithmSource",
    "hardPodAffinitySymmetricWeight",
    "plugins",
    "pluginConfig",
];

/// Top-level fields in the order of upstream's type, so reports follow the input's layout.
pub(super) const CONFIG_FIELDS: &[&str] = &[
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

pub(super) const PROFILE_FIELDS: &[&str] = &[
    "schedulerName",
    "percentageOfNodesToScore",
    "percentageOfPlacementsToScore",
    "plugins",
    "pluginConfig",
];

pub(super) const PLUGINS_FIELDS: &[&str] = &[
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
pub(super) fn in_upstream_order<'v>(
    object: &'v Map<String, Value>,
    order: &[&str],
) -> Vec<(&'v String, &'v Value)> {
    let mut entries: Vec<_> = object.iter().collect();
    entries.sort_by_key(|(key, _)| order.iter().position(|o| o == key).unwrap_or(order.len()));
    entries
}

/// Extension points of newer upstream releases that berth does not have.
pub(super) const FOREIGN_POINTS: [&str; 4] = [
    "placementGenerate",
    "placementScore",
    "placementFeasible",
    "podGroupPostFilter",
];

impl Converter<'_> {
    pub(super) fn configuration(&mut self, object: &Map<String, Value>) -> Conversion {
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
                "bindTimeoutSeconds" if self.version <= Version::V1alpha2 => {
                    globals.bind_timeout_seconds = self.bind_timeout(value);
                }
                "disablePreemption" if self.version <= Version::V1alpha2 => {
                    globals.disable_preemption = self.disable_preemption(value);
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
    pub(super) fn copied_note(&mut self, key: &str, value: &Value, target: &str) {
        if !value.is_null() {
            self.note(
                key,
                format!("copied into {target}: berth has no process-wide setting for it"),
            );
        }
    }

    /// The top-level `disablePreemption` of v1alpha1 and v1alpha2: `true` disables
    /// DefaultPreemption at PostFilter in every profile, as kube-scheduler 1.19's
    /// conversion did.
    pub(super) fn disable_preemption(&mut self, value: &Value) -> bool {
        const KEY: &str = "disablePreemption";
        match value {
            Value::Bool(true) => {
                self.note(
                    KEY,
                    "copied into spec.plugins.postFilter.disabled of every profile (DefaultPreemption): \
                     berth has no process-wide setting for it",
                );
                true
            }
            Value::Bool(false) | Value::Null => false,
            _ => {
                self.invalid(KEY, value, "a boolean");
                false
            }
        }
    }

    /// The top-level `bindTimeoutSeconds` of v1alpha1 and v1alpha2, checked as
    /// VolumeBinding's args check it; `None` when there is nothing to carry (reported or
    /// noted).
    pub(super) fn bind_timeout(&mut self, value: &Value) -> Option<i64> {
        const KEY: &str = "bindTimeoutSeconds";
        let seconds = self.int64(value, KEY)?;
        let Some(entry) = self.registry.get(VOLUME_BINDING) else {
            self.note(
                KEY,
                "dropped: it configures VolumeBinding, which is not registered in this berth binary",
            );
            return None;
        };
        if let Some(spec) = &entry.args {
            let errors = spec.check(&json!({ KEY: seconds }), "args");
            for error in &errors {
                self.unsupported(KEY, message_of(error, "args"));
            }
            if !errors.is_empty() {
                return None;
            }
        }
        self.copied_note(
            KEY,
            value,
            "spec.pluginConfig.volumeBinding.bindTimeoutSeconds of every profile that runs VolumeBinding \
             and does not configure it in its own pluginConfig (which wins, as upstream)",
        );
        Some(seconds)
    }

    /// v1alpha1's choice between the built-in provider's defaults and a Policy.
    pub(super) fn algorithm_source(&mut self, value: &Value) {
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

    pub(super) fn top_level_field(&mut self, key: &str, value: &Value) {
        if is_empty(value) {
            return;
        }
        let setting = PROCESS_SETTINGS.iter().find(|(name, _)| *name == key);
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

    pub(super) fn extenders(&mut self, value: &Value) {
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
}
