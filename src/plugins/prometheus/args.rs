//! The connection args NetworkTraffic and MetricsScore share, flattened into each plugin's
//! args: where Prometheus is, how long a query may take, how long an answer is reused, the
//! token to send, and the CAs to trust over https.

use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::framework::FieldError;

use super::client::ClientConfig;

/// What the CRD accepts as `prometheusAddress`: `http://` or `https://`, a non-empty host
/// part, then anything without whitespace. `validate` checks the same with a URL parser.
pub const PROMETHEUS_ADDRESS_PATTERN: &str = r"^https?://[^\s/?#]+([/?#]\S*)?$";

/// Default of `queryTimeoutSeconds`: a scheduling cycle waits at most this long for
/// Prometheus.
pub const DEFAULT_QUERY_TIMEOUT_SECONDS: i64 = 2;
/// Default of `cacheTTLSeconds`: node metrics are rates over a minute or more, scraped every
/// 15-30 s, so an answer a few seconds old ranks nodes as well as a fresh one, and a busy
/// queue costs Prometheus one query per metric every 5 s rather than one per pod.
pub const DEFAULT_CACHE_TTL_SECONDS: i64 = 5;
/// The longest allowed `queryTimeoutSeconds`.
pub const MAX_QUERY_TIMEOUT_SECONDS: i64 = 60;
/// The longest allowed `cacheTTLSeconds`.
pub const MAX_CACHE_TTL_SECONDS: i64 = 3600;

/// How to reach Prometheus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct PrometheusArgs {
    /// The base URL of the Prometheus HTTP API (`/api/v1/query` is appended), http or
    /// https, e.g. `http://prometheus-operated.monitoring.svc:9090`. Required.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = PROMETHEUS_ADDRESS_PATTERN))]
    pub prometheus_address: Option<String>,
    /// How long one query may take, in seconds (1..60, default 2). A query that takes
    /// longer counts as failed: nodes score neutrally for that cycle.
    #[schemars(range(min = 1, max = MAX_QUERY_TIMEOUT_SECONDS))]
    pub query_timeout_seconds: i64,
    /// How long the answer to a query (or its failure) is reused, in seconds (0..3600,
    /// default 5); 0 queries Prometheus in every scheduling cycle.
    #[serde(rename = "cacheTTLSeconds")]
    #[schemars(range(min = 0, max = MAX_CACHE_TTL_SECONDS))]
    pub cache_ttl_seconds: i64,
    /// A file holding a bearer token to send as `Authorization: Bearer <token>`, e.g. a
    /// projected service account token. Read for every query, so a rotated token is
    /// picked up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bearer_token_file: Option<String>,
    /// A PEM file of CA certificates to trust for an https `prometheusAddress`, in
    /// addition to the system roots: for a Prometheus whose certificate an internal CA
    /// signed. https only. Read when the profile's plugins are built: a file that is
    /// missing or holds no usable certificate fails the profile (`Accepted=False`,
    /// reason `PluginInitFailed`, retried), and a changed file takes effect when the
    /// profile is rebuilt.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub ca_file: Option<String>,
}

impl Default for PrometheusArgs {
    fn default() -> Self {
        PrometheusArgs {
            prometheus_address: None,
            query_timeout_seconds: DEFAULT_QUERY_TIMEOUT_SECONDS,
            cache_ttl_seconds: DEFAULT_CACHE_TTL_SECONDS,
            bearer_token_file: None,
            ca_file: None,
        }
    }
}

/// The `prometheusAddress` of the plugins' [`PluginArgs::example`](crate::framework::PluginArgs::example)
/// args: a local Prometheus on its default port. Building a plugin does not connect.
pub const EXAMPLE_ADDRESS: &str = "http://127.0.0.1:9090";

impl PrometheusArgs {
    /// Args for `address` with every other field at its default.
    pub fn for_address(address: impl Into<String>) -> Self {
        PrometheusArgs {
            prometheus_address: Some(address.into()),
            ..PrometheusArgs::default()
        }
    }

    /// Field errors under `path` (the plugin's args object).
    pub fn validate(&self, path: &str) -> Vec<FieldError> {
        let mut errors = Vec::new();
        let address_path = format!("{path}.prometheusAddress");
        match self.prometheus_address.as_deref() {
            None | Some("") => errors.push(FieldError::required(
                address_path,
                "the http or https URL of the Prometheus HTTP API, e.g. http://prometheus-operated.monitoring.svc:9090",
            )),
            Some(address) => {
                if let Err(problem) = check_address(address) {
                    errors.push(FieldError::invalid(
                        address_path,
                        &address.into(),
                        format!("{problem}; give the http or https URL of the Prometheus HTTP API, e.g. http://prometheus-operated.monitoring.svc:9090"),
                    ));
                }
            }
        }
        if !(1..=MAX_QUERY_TIMEOUT_SECONDS).contains(&self.query_timeout_seconds) {
            errors.push(FieldError::new(
                format!("{path}.queryTimeoutSeconds"),
                self.query_timeout_seconds,
                format!("must be between 1 and {MAX_QUERY_TIMEOUT_SECONDS}"),
            ));
        }
        if !(0..=MAX_CACHE_TTL_SECONDS).contains(&self.cache_ttl_seconds) {
            errors.push(FieldError::new(
                format!("{path}.cacheTTLSeconds"),
                self.cache_ttl_seconds,
                format!("must be between 0 and {MAX_CACHE_TTL_SECONDS}"),
            ));
        }
        if self.bearer_token_file.as_deref().is_some_and(str::is_empty) {
            errors.push(FieldError::invalid(
                format!("{path}.bearerTokenFile"),
                &"".into(),
                "must be the path of a file holding the token; omit the field to send no token",
            ));
        }
        errors.extend(self.validate_ca_file(path));
        errors
    }

    /// `caFile` is a non-empty path, and the address https. A semantic check rather than a
    /// CEL rule: the rule's `has(self.caFile)` would be true for an explicit `null`, which
    /// serde (and so berth) reads as no caFile.
    fn validate_ca_file(&self, path: &str) -> Option<FieldError> {
        let ca_file = self.ca_file.as_deref()?;
        let ca_path = format!("{path}.caFile");
        if ca_file.is_empty() {
            return Some(FieldError::invalid(
                ca_path,
                &"".into(),
                "must be the path of a PEM file of CA certificates; omit the field to trust the system roots only",
            ));
        }
        let address = self.prometheus_address.as_deref()?;
        // An address that is not a URL has its own error; only an http one is a conflict.
        let http = check_address(address).is_ok() && address.starts_with("http://");
        http.then(|| {
            FieldError::invalid(
                ca_path,
                &ca_file.into(),
                format!("applies to an https prometheusAddress only, and prometheusAddress is {address:?}; use https or remove caFile"),
            )
        })
    }

    /// The client configuration of validated args.
    pub fn client_config(&self) -> ClientConfig {
        let mut config = ClientConfig::new(self.prometheus_address.clone().unwrap_or_default())
            .with_timeout(Duration::from_secs(
                self.query_timeout_seconds
                    .clamp(1, MAX_QUERY_TIMEOUT_SECONDS) as u64,
            ))
            .with_cache_ttl(Duration::from_secs(
                self.cache_ttl_seconds.clamp(0, MAX_CACHE_TTL_SECONDS) as u64,
            ));
        if let Some(file) = &self.bearer_token_file {
            config = config.with_bearer_token_file(PathBuf::from(file));
        }
        if let Some(file) = &self.ca_file {
            config = config.with_ca_file(PathBuf::from(file));
        }
        config
    }
}

/// Why `address` is not an http(s) URL with a host.
fn check_address(address: &str) -> Result<(), String> {
    let url = reqwest::Url::parse(address).map_err(|e| format!("not a URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("scheme {:?} is not http or https", url.scheme()));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("the URL has no host".to_string());
    }
    if !matches_crd_pattern(address) {
        return Err("the URL must start with http:// or https:// and hold no whitespace".into());
    }
    Ok(())
}

/// The CRD's [`PROMETHEUS_ADDRESS_PATTERN`], checked by hand, so that an address `validate`
/// accepts is never one the API server rejects (the URL parser is more lenient: it
/// accepts `HTTP://` and surrounding spaces).
fn matches_crd_pattern(address: &str) -> bool {
    let rest = address
        .strip_prefix("http://")
        .or_else(|| address.strip_prefix("https://"));
    let Some(rest) = rest else {
        return false;
    };
    let host_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    host_len > 0 && !address.chars().any(char::is_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors_of(args: &PrometheusArgs) -> Vec<String> {
        args.validate("spec.pluginConfig.networkTraffic")
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn addresses() {
        let accepted = [
            "http://prometheus:9090",
            "https://prometheus.example.com",
            "http://127.0.0.1:9090/prometheus",
            "https://[::1]:9090/",
        ];
        for address in accepted {
            let errors = errors_of(&PrometheusArgs::for_address(address));
            assert!(errors.is_empty(), "{address}: {errors:?}");
            let pattern = matches_crd_pattern(address);
            assert!(pattern, "{address} must match the CRD pattern");
        }
        let rejected = [
            (
                "ftp://prometheus:9090",
                "scheme \"ftp\" is not http or https",
            ),
            (
                "prometheus:9090",
                "scheme \"prometheus\" is not http or https",
            ),
            ("localhost", "not a URL (relative URL without a base)"),
            (
                "HTTP://prometheus:9090",
                "must start with http:// or https://",
            ),
            ("http://prom etheus", "not a URL"),
            (
                "mailto:ops@example.com",
                "scheme \"mailto\" is not http or https",
            ),
        ];
        for (address, problem) in rejected {
            let errors = errors_of(&PrometheusArgs::for_address(address));
            assert_eq!(errors.len(), 1, "{address}: {errors:?}");
            let want = format!(
                "spec.pluginConfig.networkTraffic.prometheusAddress: Invalid value: \"{address}\": "
            );
            assert!(errors[0].starts_with(&want), "{}", errors[0]);
            assert!(errors[0].contains(problem), "{address}: {}", errors[0]);
        }
    }

    #[test]
    fn the_address_is_required_and_bounds_are_checked() {
        let args = PrometheusArgs {
            prometheus_address: None,
            query_timeout_seconds: 0,
            cache_ttl_seconds: -1,
            bearer_token_file: Some(String::new()),
            ca_file: Some(String::new()),
        };
        let path = "spec.pluginConfig.networkTraffic";
        assert_eq!(
            errors_of(&args),
            [
                format!(
                    "{path}.prometheusAddress: Required value: the http or https URL of the Prometheus HTTP API, e.g. http://prometheus-operated.monitoring.svc:9090"
                ),
                format!("{path}.queryTimeoutSeconds: Invalid value: 0: must be between 1 and 60"),
                format!("{path}.cacheTTLSeconds: Invalid value: -1: must be between 0 and 3600"),
                format!(
                    "{path}.bearerTokenFile: Invalid value: \"\": must be the path of a file holding the token; omit the field to send no token"
                ),
                format!(
                    "{path}.caFile: Invalid value: \"\": must be the path of a PEM file of CA certificates; omit the field to trust the system roots only"
                ),
            ]
        );
    }

    #[test]
    fn json_field_names() {
        let args: PrometheusArgs = serde_json::from_value(serde_json::json!({
            "prometheusAddress": "https://p:9090",
            "queryTimeoutSeconds": 3,
            "cacheTTLSeconds": 0,
            "bearerTokenFile": "/var/run/secrets/token",
            "caFile": "/etc/prometheus-ca/ca.crt",
        }))
        .unwrap_or_default();
        assert_eq!(
            args,
            PrometheusArgs {
                prometheus_address: Some("https://p:9090".into()),
                query_timeout_seconds: 3,
                cache_ttl_seconds: 0,
                bearer_token_file: Some("/var/run/secrets/token".into()),
                ca_file: Some("/etc/prometheus-ca/ca.crt".into()),
            }
        );
    }

    #[test]
    fn ca_file_is_a_path_and_goes_with_https_only() {
        let path = "spec.pluginConfig.networkTraffic";
        let cases: [(&str, &str, &[String]); 5] = [
            ("https", "https://prometheus:9090", &[]),
            ("https, another path", "https://10.0.0.1/prometheus", &[]),
            (
                "http",
                "http://prometheus:9090",
                &[format!(
                    "{path}.caFile: Invalid value: \"/etc/ca/ca.crt\": applies to an https prometheusAddress only, and prometheusAddress is \"http://prometheus:9090\"; use https or remove caFile"
                )],
            ),
            // The address has an error of its own; caFile adds none.
            (
                "not a URL",
                "ftp://prometheus",
                &[format!(
                    "{path}.prometheusAddress: Invalid value: \"ftp://prometheus\": scheme \"ftp\" is not http or https; give the http or https URL of the Prometheus HTTP API, e.g. http://prometheus-operated.monitoring.svc:9090"
                )],
            ),
            (
                "no address",
                "",
                &[format!(
                    "{path}.prometheusAddress: Required value: the http or https URL of the Prometheus HTTP API, e.g. http://prometheus-operated.monitoring.svc:9090"
                )],
            ),
        ];
        for (name, address, want) in cases {
            let args = PrometheusArgs {
                ca_file: Some("/etc/ca/ca.crt".into()),
                ..PrometheusArgs::for_address(address)
            };
            assert_eq!(errors_of(&args), want, "{name}");
        }
    }

    /// A profile enabling NetworkTraffic with `args`, as `kubectl apply` would send it.
    fn profile_with(args: serde_json::Value) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "berth.dev/v1alpha1",
            "kind": "SchedulerProfile",
            "metadata": {"name": "network-aware"},
            "spec": {
                "plugins": {"multiPoint": {"enabled": [{"name": "NetworkTraffic"}]}},
                "pluginConfig": {"networkTraffic": args},
            },
        })
    }

    #[test]
    fn a_profile_with_ca_file_and_an_http_address_is_invalid_at_ca_file() {
        let registry = crate::plugins::default_registry();
        let path = "spec.pluginConfig.networkTraffic";
        let cases = [
            (
                "https",
                serde_json::json!({"prometheusAddress": "https://p:9090", "caFile": "/ca.crt"}),
                vec![],
            ),
            (
                "http",
                serde_json::json!({"prometheusAddress": "http://p:9090", "caFile": "/ca.crt"}),
                vec![format!("{path}.caFile")],
            ),
            (
                "an explicit null is no caFile",
                serde_json::json!({"prometheusAddress": "http://p:9090", "caFile": null}),
                vec![],
            ),
            (
                "an empty path",
                serde_json::json!({"prometheusAddress": "https://p:9090", "caFile": ""}),
                vec![format!("{path}.caFile")],
            ),
            (
                "a null address: only the address is reported",
                serde_json::json!({"prometheusAddress": null, "caFile": "/ca.crt"}),
                vec![format!("{path}.prometheusAddress")],
            ),
        ];
        for (name, args, want) in cases {
            let errors = crate::schema::validate_profile(&profile_with(args), &registry).errors;
            let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
            assert_eq!(paths, want, "{name}: {errors:#?}");
            if name == "http" {
                let message = errors[0].to_string();
                assert!(
                    message.contains("applies to an https prometheusAddress only"),
                    "{message}"
                );
            }
        }
    }
}
