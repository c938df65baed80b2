//! A Prometheus client for node metrics, on `prometheus-http-query`: one PromQL instant
//! query answers for every node at once ([`PrometheusClient::node_values`]), each series
//! mapped to a node by one of its labels.
//!
//! - **Cache.** The outcome of a query, an answer or a failure, is reused for the
//!   configured TTL, keyed by query and label; a TTL of zero queries every time. Reusing
//!   a failure keeps an unreachable Prometheus from costing every cycle a timeout.
//! - **Timeout.** One timeout bounds the whole request (connect, send, answer), and is
//!   passed to Prometheus as the query's evaluation timeout.
//! - **Token.** The bearer token file is read for every request, so a rotated token is
//!   used as soon as it is written.
//! - **TLS.** reqwest with `rustls-no-provider` verifies https certificates with
//!   rustls-platform-verifier, which on Linux trusts the system roots (rustls-native-certs:
//!   `/etc/ssl/certs`, or `SSL_CERT_FILE`/`SSL_CERT_DIR`); the CA file adds its certificates
//!   to those. It is read once, when the client is built, so that a bad file fails the
//!   plugin where the user looks for configuration errors rather than every query.
//! - **Runtime and time.** Requests run on the caller's runtime, whose timer bounds them
//!   in real time. The cache's age is read from the scheduler's [`Clock`] (virtual in
//!   `berth simulate`, where time moves only between cycles), so that an answer is reused
//!   exactly as long in a simulation as in the cluster.
//! - **Counting.** [`PrometheusClient::queries_issued`] counts the requests sent (not the
//!   cache hits), for tests that assert one query per metric per scheduling cycle.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use prometheus_http_query::response::Data;
use reqwest::header::{AUTHORIZATION, HeaderValue};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::files;
use crate::framework::clock::{Clock, Instant, RuntimeClock};

use super::args::{DEFAULT_CACHE_TTL_SECONDS, DEFAULT_QUERY_TIMEOUT_SECONDS};

/// Where Prometheus is and how to query it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfig {
    address: String,
    timeout: Duration,
    cache_ttl: Duration,
    bearer_token_file: Option<PathBuf>,
    ca_file: Option<PathBuf>,
}

impl ClientConfig {
    /// Prometheus at `address` (the base URL of its HTTP API), with the plugins' default
    /// timeout (2 s) and cache TTL (5 s), and no token.
    pub fn new(address: impl Into<String>) -> Self {
        ClientConfig {
            address: address.into(),
            timeout: Duration::from_secs(DEFAULT_QUERY_TIMEOUT_SECONDS.unsigned_abs()),
            cache_ttl: Duration::from_secs(DEFAULT_CACHE_TTL_SECONDS.unsigned_abs()),
            bearer_token_file: None,
            ca_file: None,
        }
    }

    /// The longest a query may take, connection included.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long the outcome of a query is reused; zero queries every time.
    pub fn with_cache_ttl(mut self, ttl: Duration) -> Self {
        self.cache_ttl = ttl;
        self
    }

    /// A file whose content (trimmed) is sent as `Authorization: Bearer <content>`.
    pub fn with_bearer_token_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.bearer_token_file = Some(path.into());
        self
    }

    /// A PEM file of CA certificates trusted for https in addition to the system roots;
    /// read by [`PrometheusClient::new`].
    pub fn with_ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_file = Some(path.into());
        self
    }

    pub fn address(&self) -> &str {
        &self.address
    }
}

/// Why a client could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    #[error("prometheusAddress {address:?} is not a usable URL: {detail}")]
    Address { address: String, detail: String },
    #[error("cannot set up HTTP(S) for Prometheus at {address}: {detail}")]
    Http { address: String, detail: String },
    /// The CA file is missing, unreadable, or holds no usable CA certificate.
    #[error(
        "caFile {path}: {detail}; caFile must be a PEM file of CA certificates that berth can read (in a cluster, mounted into its pod)"
    )]
    CaFile { path: String, detail: String },
}

/// Why a query gave no usable answer. Every variant names the Prometheus it was sent to;
/// plugins put the message in their Degraded report.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// No connection, or the request could not be sent.
    #[error("cannot reach Prometheus at {address}: {detail}")]
    Unreachable { address: String, detail: String },
    /// The TLS handshake failed on the server's certificate: signed by a CA berth does not
    /// trust, issued for another host, expired.
    #[error("Prometheus at {address} presented a certificate berth does not trust: {detail}")]
    Certificate { address: String, detail: String },
    /// No complete answer within the timeout.
    #[error(
        "Prometheus at {address} did not answer within {timeout:?}; raise queryTimeoutSeconds if it is just slow"
    )]
    Timeout { address: String, timeout: Duration },
    /// An HTTP error status without a Prometheus error body (a proxy, a wrong path).
    #[error(
        "Prometheus at {address} answered HTTP {status}; check that prometheusAddress is the base URL of the Prometheus HTTP API"
    )]
    HttpStatus { address: String, status: u16 },
    /// Prometheus refused or failed the query (`"status": "error"`), e.g. a PromQL syntax
    /// error.
    #[error("Prometheus at {address} rejected the query: {error_type}: {message}")]
    Rejected {
        address: String,
        error_type: String,
        message: String,
    },
    /// An answer that is not an instant vector, or not Prometheus JSON at all.
    #[error("Prometheus at {address} gave an answer berth cannot use: {detail}")]
    BadResponse { address: String, detail: String },
    /// The bearer token file could not be used; no request was sent.
    #[error("cannot use the bearer token file {path}: {detail}")]
    BearerToken { path: String, detail: String },
    /// berth itself failed (the HTTP client failed in a way none of the above describes).
    #[error("querying Prometheus at {address} failed inside berth: {detail}")]
    Internal { address: String, detail: String },
}

/// The answer to one query, by node: the value of each series whose node label names a
/// node.
///
/// Series without the label, and values that are not finite numbers (`NaN`, `+Inf`), are
/// left out: such a node has no sample. Several series naming one node count as their
/// mean; a query should return one series per node (`sum by (<label>)`, `avg by`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeValues {
    values: HashMap<String, f64>,
    series: usize,
}

impl NodeValues {
    /// Values from `(node label value, sample value)` pairs, one per series.
    pub fn from_series(series: impl IntoIterator<Item = (Option<String>, f64)>) -> Self {
        let mut sums: HashMap<String, (f64, u32)> = HashMap::new();
        let mut count = 0;
        for (node, value) in series {
            count += 1;
            if let Some(node) = node.filter(|_| value.is_finite()) {
                let entry = sums.entry(node).or_insert((0.0, 0));
                entry.0 += value;
                entry.1 += 1;
            }
        }
        NodeValues {
            values: sums
                .into_iter()
                .map(|(node, (sum, n))| (node, sum / f64::from(n)))
                .collect(),
            series: count,
        }
    }

    /// The node's value, if the answer had a sample for it.
    pub fn get(&self, node: &str) -> Option<f64> {
        self.values.get(node).copied()
    }

    /// The number of nodes with a value.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The number of series in the answer, with or without a usable node label.
    pub fn series(&self) -> usize {
        self.series
    }
}

impl<S: Into<String>> FromIterator<(S, f64)> for NodeValues {
    fn from_iter<I: IntoIterator<Item = (S, f64)>>(iter: I) -> Self {
        NodeValues::from_series(iter.into_iter().map(|(node, v)| (Some(node.into()), v)))
    }
}

type CacheKey = (String, String);

struct CachedOutcome {
    at: Instant,
    outcome: Result<Arc<NodeValues>, QueryError>,
}

/// A Prometheus HTTP API client for node metrics; cheap to clone (clones share the cache,
/// the clock and the query counter).
#[derive(Clone)]
pub struct PrometheusClient {
    inner: Arc<Inner>,
}

struct Inner {
    config: ClientConfig,
    api: prometheus_http_query::Client,
    cache: Mutex<HashMap<CacheKey, CachedOutcome>>,
    clock: Arc<dyn Clock>,
    queries: AtomicU64,
}

impl fmt::Debug for PrometheusClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrometheusClient")
            .field("config", &self.inner.config)
            .field("queries_issued", &self.queries_issued())
            .finish_non_exhaustive()
    }
}

impl PrometheusClient {
    /// A client for `config`, its cache timed by the runtime's clock; no request is made
    /// yet.
    pub fn new(config: ClientConfig) -> Result<Self, ClientError> {
        Self::with_clock(config, RuntimeClock::shared())
    }

    /// A client for `config` whose cached answers age by `clock` (a plugin's: the
    /// scheduler's clock from its [`Handle`](crate::framework::Handle)).
    pub fn with_clock(config: ClientConfig, clock: Arc<dyn Clock>) -> Result<Self, ClientError> {
        crate::tls::install_default_crypto_provider();
        let address = config.address.clone();
        let mut http = reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            .user_agent(concat!("berth/", env!("CARGO_PKG_VERSION")));
        if let Some(path) = &config.ca_file {
            http = http.tls_certs_merge(ca_certificates(path)?);
        }
        let http = http.build().map_err(|e| ClientError::Http {
            address: address.clone(),
            detail: error_chain(&e),
        })?;
        let api = prometheus_http_query::Client::from(http, &address).map_err(|e| {
            ClientError::Address {
                address: address.clone(),
                detail: error_chain(&e),
            }
        })?;
        if !matches!(api.base_url().scheme(), "http" | "https") {
            return Err(ClientError::Address {
                address,
                detail: "the scheme must be http or https".to_string(),
            });
        }
        Ok(PrometheusClient {
            inner: Arc::new(Inner {
                config,
                api,
                cache: Mutex::default(),
                clock,
                queries: AtomicU64::new(0),
            }),
        })
    }

    /// The Prometheus base URL, as configured.
    pub fn address(&self) -> &str {
        &self.inner.config.address
    }

    /// Requests sent so far (cache hits are not requests).
    pub fn queries_issued(&self) -> u64 {
        self.inner.queries.load(Ordering::SeqCst)
    }

    /// The answer to the instant query `query`, by the value of label `node_label`; from
    /// the cache when an outcome younger than the TTL is there.
    pub async fn node_values(
        &self,
        query: &str,
        node_label: &str,
    ) -> Result<Arc<NodeValues>, QueryError> {
        let ttl = self.inner.config.cache_ttl;
        let key = (query.to_string(), node_label.to_string());
        let now = self.inner.clock.now();
        if !ttl.is_zero()
            && let Some(cached) = self.lock_cache().get(&key)
            && now.saturating_duration_since(cached.at) < ttl
        {
            return cached.outcome.clone();
        }
        let outcome = self.fetch(query, node_label).await.map(Arc::new);
        if !ttl.is_zero() {
            self.lock_cache().insert(
                key,
                CachedOutcome {
                    at: self.inner.clock.now(),
                    outcome: outcome.clone(),
                },
            );
        }
        outcome
    }

    fn lock_cache(&self) -> std::sync::MutexGuard<'_, HashMap<CacheKey, CachedOutcome>> {
        self.inner
            .cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    async fn fetch(&self, query: &str, node_label: &str) -> Result<NodeValues, QueryError> {
        let inner = &self.inner;
        tracing::debug!(address = %inner.config.address, query, "querying Prometheus");
        let token = inner.bearer_header()?;
        inner.queries.fetch_add(1, Ordering::SeqCst);
        let answer = inner.instant_query(query, token).await?;
        Ok(NodeValues::from_series(answer.into_iter().map(|series| {
            let (mut labels, sample) = series.into_inner();
            (labels.remove(node_label), sample.value())
        })))
    }
}

impl Inner {
    async fn instant_query(
        &self,
        query: &str,
        token: Option<HeaderValue>,
    ) -> Result<Vec<prometheus_http_query::response::InstantVector>, QueryError> {
        let timeout_ms = i64::try_from(self.config.timeout.as_millis()).unwrap_or(i64::MAX);
        let mut request = self.api.query(query).timeout(timeout_ms);
        if let Some(token) = token {
            request = request.header(AUTHORIZATION, token);
        }
        let answer = request.get().await.map_err(|e| self.classify(e))?;
        match answer.into_inner().0 {
            Data::Vector(series) => Ok(series),
            Data::Matrix(_) => Err(self.bad_response(
                "the query returned a range vector; give an instant-vector query (no [range] selector at the end)",
            )),
            Data::Scalar(_) => Err(self.bad_response(
                "the query returned a scalar; give an instant-vector query with one series per node",
            )),
        }
    }

    fn bearer_header(&self) -> Result<Option<HeaderValue>, QueryError> {
        let Some(path) = &self.config.bearer_token_file else {
            return Ok(None);
        };
        let token_error = |detail: String| QueryError::BearerToken {
            path: path.display().to_string(),
            detail,
        };
        let content = files::read_to_string(path, files::CREDENTIAL_LIMIT)
            .map_err(|e| token_error(e.to_string()))?;
        let token = content.trim();
        if token.is_empty() {
            return Err(token_error("the file is empty".to_string()));
        }
        let mut value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
            token_error("the token holds characters an HTTP header cannot carry".to_string())
        })?;
        value.set_sensitive(true);
        Ok(Some(value))
    }

    fn classify(&self, error: prometheus_http_query::Error) -> QueryError {
        let address = self.config.address.clone();
        match error {
            prometheus_http_query::Error::Prometheus(e) => QueryError::Rejected {
                address,
                error_type: e.error_type().to_string(),
                message: e.message().to_string(),
            },
            prometheus_http_query::Error::Client(e) => match e.inner() {
                Some(http) if http.is_timeout() => QueryError::Timeout {
                    address,
                    timeout: self.config.timeout,
                },
                Some(http) if http.status().is_some() => QueryError::HttpStatus {
                    address,
                    status: http.status().map_or(0, |s| s.as_u16()),
                },
                Some(http) if http.is_connect() || http.is_request() => {
                    match certificate_problem(http) {
                        Some(detail) => QueryError::Certificate { address, detail },
                        None => QueryError::Unreachable {
                            address,
                            detail: source_chain(http),
                        },
                    }
                }
                Some(http) => self.bad_response(format!("{e}: {}", source_chain(http))),
                None => self.bad_response(e.to_string()),
            },
            other => self.internal(error_chain(&other)),
        }
    }

    fn bad_response(&self, detail: impl Into<String>) -> QueryError {
        QueryError::BadResponse {
            address: self.config.address.clone(),
            detail: detail.into(),
        }
    }

    fn internal(&self, detail: impl Into<String>) -> QueryError {
        QueryError::Internal {
            address: self.config.address.clone(),
            detail: detail.into(),
        }
    }
}

/// The CA certificates in the PEM file at `path`, checked as rustls will use them, so that
/// a bad file is an error naming it rather than reqwest's "invalid certificate".
fn ca_certificates(path: &Path) -> Result<Vec<reqwest::Certificate>, ClientError> {
    let ca_error = |detail: String| ClientError::CaFile {
        path: path.display().to_string(),
        detail,
    };
    let pem = files::read_bytes(path, files::CREDENTIAL_LIMIT).map_err(|e| match e {
        files::ReadError::Io(e) => ca_error(format!("cannot read it: {e}")),
        too_large => ca_error(format!("{too_large}; a CA bundle is a few KiB of PEM")),
    })?;
    let certificates = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ca_error(format!("not valid PEM: {e}")))?;
    if certificates.is_empty() {
        return Err(ca_error(
            "it holds no PEM certificate (-----BEGIN CERTIFICATE-----); convert a DER file with `openssl x509 -inform der`".to_string(),
        ));
    }
    let count = certificates.len();
    let mut roots = rustls::RootCertStore::empty();
    certificates
        .into_iter()
        .enumerate()
        .map(|(i, der)| {
            roots.add(der.clone()).map_err(|e| {
                ca_error(format!(
                    "certificate {} of {count} is not usable as a CA: {e}",
                    i + 1
                ))
            })?;
            reqwest::Certificate::from_der(&der).map_err(|e| {
                ca_error(format!(
                    "certificate {} of {count}: {}",
                    i + 1,
                    error_chain(&e)
                ))
            })
        })
        .collect()
}

/// What was wrong with the server's certificate, when `error` is a TLS handshake that
/// failed on it. rustls' error sits inside `io::Error`s (hyper-rustls wraps
/// tokio-rustls' error), whose `source()` skips the error they wrap: those are unwrapped
/// with `get_ref` instead.
fn certificate_problem(error: &reqwest::Error) -> Option<String> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = next {
        if let Some(tls @ rustls::Error::InvalidCertificate(problem)) = e.downcast_ref() {
            let hint = match problem {
                // BadSignature: a trusted CA has the issuer's name but not its key (a CA
                // re-issued under the same name, an old copy in caFile).
                rustls::CertificateError::UnknownIssuer
                | rustls::CertificateError::BadSignature => {
                    "; give the PEM file of the CA that signed it as caFile"
                }
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. } => {
                    "; prometheusAddress must name a host the certificate is issued for"
                }
                _ => "",
            };
            return Some(format!("{tls}{hint}"));
        }
        next = match e.downcast_ref::<std::io::Error>() {
            Some(io) => io
                .get_ref()
                .map(|inner| inner as &(dyn std::error::Error + 'static)),
            None => e.source(),
        };
    }
    None
}

/// `error` and its sources, joined by `: `, without repeating a message a source repeats.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(error);
    while let Some(e) = next {
        let text = e.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = e.source();
    }
    parts.join(": ")
}

/// The sources of a reqwest error, without its own message (which repeats the whole URL,
/// query included).
fn source_chain(error: &reqwest::Error) -> String {
    match std::error::Error::source(error) {
        Some(source) => error_chain(source),
        None => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_values_keep_finite_labelled_samples_and_average_duplicates() {
        let values = NodeValues::from_series([
            (Some("a".to_string()), 10.0),
            (Some("a".to_string()), 20.0),
            (Some("b".to_string()), f64::NAN),
            (Some("c".to_string()), f64::INFINITY),
            (None, 5.0),
            (Some("d".to_string()), 0.0),
        ]);
        assert_eq!(values.get("a"), Some(15.0));
        assert_eq!(values.get("b"), None);
        assert_eq!(values.get("c"), None);
        assert_eq!(values.get("d"), Some(0.0));
        assert_eq!(values.len(), 2);
        assert_eq!(values.series(), 6);
    }

    #[test]
    fn addresses_that_are_not_urls_are_errors_not_panics() {
        for address in ["", "prometheus", "ftp://p:21", "mailto:ops@example.com"] {
            let result = PrometheusClient::new(ClientConfig::new(address));
            assert!(
                matches!(result, Err(ClientError::Address { .. })),
                "{address}: {result:?}"
            );
        }
    }

    /// A device that never ends is refused at its size bound, not read until memory
    /// runs out.
    #[cfg(unix)]
    #[test]
    fn endless_credential_files_are_refused_at_one_mib() {
        let ca = PrometheusClient::new(
            ClientConfig::new("https://prometheus:9090").with_ca_file("/dev/zero"),
        );
        match ca {
            Err(ClientError::CaFile { path, detail }) => {
                assert_eq!(path, "/dev/zero");
                assert!(detail.starts_with("larger than 1 MiB"), "{detail}");
            }
            other => panic!("caFile /dev/zero: {other:?}"),
        }
        let client = PrometheusClient::new(
            ClientConfig::new("http://prometheus:9090").with_bearer_token_file("/dev/zero"),
        )
        .expect("a client whose token file is only read per request");
        match client.inner.bearer_header() {
            Err(QueryError::BearerToken { path, detail }) => {
                assert_eq!(path, "/dev/zero");
                assert!(detail.starts_with("larger than 1 MiB"), "{detail}");
            }
            other => panic!("bearerTokenFile /dev/zero: {other:?}"),
        }
    }
}
