//! The serving certificate of the metrics port.
//!
//! Either read from PEM files (`--tls-cert-file`, `--tls-private-key-file`) and followed:
//! the files are read again every [`RELOAD_INTERVAL`] and a changed pair is served from
//! the next handshake on, without a restart, as cert-manager rotates a mounted Secret.
//! Or, when no files are given, generated once at start: a self-signed certificate for
//! `localhost`, the loopback addresses and the host name, as kube-scheduler generates one
//! when it has none.
//!
//! A rotation writes the certificate and the key one after the other, so for a moment the
//! files may not match. A pair that does not load (unreadable, not PEM, a key that does
//! not match the certificate) is never served: the last good pair stays, the problem is
//! logged once, and the files are read again until they match.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tracing::{info, warn};

/// How often the certificate files are read again.
pub const RELOAD_INTERVAL: Duration = Duration::from_secs(1);

/// How long a generated self-signed certificate is valid (kube-scheduler: one year).
const SELF_SIGNED_DAYS: i64 = 365;

/// Why a certificate could not be loaded or made.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CertificateError {
    #[error("cannot read {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("{path} holds no PEM certificate (expected a `BEGIN CERTIFICATE` block)")]
    NoCertificate { path: PathBuf },
    #[error("{path} is not valid PEM: {message}")]
    Malformed { path: PathBuf, message: String },
    #[error(
        "{path} holds no PEM private key (expected a PKCS#8, PKCS#1 or SEC1 `BEGIN ... PRIVATE KEY` block)"
    )]
    NoKey { path: PathBuf },
    #[error("the private key in {key} cannot be used: {message}")]
    UnusableKey { key: PathBuf, message: String },
    #[error("the private key in {key} does not belong to the certificate in {cert}")]
    Mismatch { cert: PathBuf, key: PathBuf },
    #[error("cannot generate a self-signed certificate: {0}")]
    Generate(String),
}

/// Where the certificate comes from.
#[derive(Debug)]
enum Source {
    Files {
        cert: PathBuf,
        key: PathBuf,
        /// The bytes of both files as last read, loaded or not: a pair is parsed once.
        last_read: Mutex<(Vec<u8>, Vec<u8>)>,
    },
    SelfSigned,
}

/// The certificate served now; a rustls certificate resolver.
#[derive(Debug)]
pub struct ServingCertificate {
    current: RwLock<Arc<CertifiedKey>>,
    source: Source,
}

impl ServingCertificate {
    /// Loads the PEM certificate chain at `cert` and the private key at `key`.
    pub fn from_files(
        cert: &Path,
        key: &Path,
    ) -> Result<Arc<ServingCertificate>, CertificateError> {
        let (cert_pem, key_pem) = read_pair(cert, key)?;
        let loaded = certified_key(cert, &cert_pem, key, &key_pem)?;
        Ok(Arc::new(ServingCertificate {
            current: RwLock::new(Arc::new(loaded)),
            source: Source::Files {
                cert: cert.to_path_buf(),
                key: key.to_path_buf(),
                last_read: Mutex::new((cert_pem, key_pem)),
            },
        }))
    }

    /// Generates a self-signed certificate for `localhost`, `127.0.0.1`, `::1` and `hosts`.
    pub fn self_signed(hosts: &[String]) -> Result<Arc<ServingCertificate>, CertificateError> {
        let generate = |e: rcgen::Error| CertificateError::Generate(e.to_string());
        let mut names = vec![
            "localhost".to_string(),
            "127.0.0.1".to_string(),
            "::1".to_string(),
        ];
        names.extend(hosts.iter().filter(|h| !h.is_empty()).cloned());
        names.dedup();
        let mut params = rcgen::CertificateParams::new(names).map_err(generate)?;
        let today = k8s_openapi::jiff::Timestamp::now()
            .to_zoned(k8s_openapi::jiff::tz::TimeZone::UTC)
            .date();
        let day = |date: k8s_openapi::jiff::civil::Date| {
            rcgen::date_time_ymd(i32::from(date.year()), date.month() as u8, date.day() as u8)
        };
        let yesterday = today.yesterday().unwrap_or(today);
        let expiry = today
            .checked_add(k8s_openapi::jiff::Span::new().days(SELF_SIGNED_DAYS))
            .unwrap_or(today);
        params.not_before = day(yesterday);
        params.not_after = day(expiry);
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, format!("berth@{}", today));
        let key_pair = rcgen::KeyPair::generate().map_err(generate)?;
        let cert = params.self_signed(&key_pair).map_err(generate)?;
        let key = PrivateKeyDer::Pkcs8(key_pair.serialize_der().into());
        let signer = provider()
            .key_provider
            .load_private_key(key)
            .map_err(|e| CertificateError::Generate(e.to_string()))?;
        Ok(Arc::new(ServingCertificate {
            current: RwLock::new(Arc::new(CertifiedKey::new(
                vec![cert.der().clone()],
                signer,
            ))),
            source: Source::SelfSigned,
        }))
    }

    /// The certificate chain and key served now.
    pub fn current(&self) -> Arc<CertifiedKey> {
        self.current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Reads the files again; serves them from now on when they changed and load.
    /// `Ok(true)`: a new pair is served; `Ok(false)`: nothing changed (or no files).
    pub fn reload(&self) -> Result<bool, CertificateError> {
        let Source::Files {
            cert,
            key,
            last_read,
        } = &self.source
        else {
            return Ok(false);
        };
        let (cert_pem, key_pem) = read_pair(cert, key)?;
        {
            let mut last = last_read.lock().unwrap_or_else(|p| p.into_inner());
            if last.0 == cert_pem && last.1 == key_pem {
                return Ok(false);
            }
            *last = (cert_pem.clone(), key_pem.clone());
        }
        let loaded = certified_key(cert, &cert_pem, key, &key_pem)?;
        *self
            .current
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(loaded);
        Ok(true)
    }

    /// Whether the certificate comes from files (and is worth following).
    pub fn follows_files(&self) -> bool {
        matches!(self.source, Source::Files { .. })
    }

    /// Reloads every [`RELOAD_INTERVAL`] until `shutdown` completes, logging each new
    /// certificate and each distinct problem once.
    pub async fn follow(self: Arc<Self>, shutdown: impl std::future::Future<Output = ()>) {
        if !self.follows_files() {
            return;
        }
        tokio::pin!(shutdown);
        let mut last_problem: Option<CertificateError> = None;
        loop {
            tokio::select! {
                _ = &mut shutdown => return,
                _ = tokio::time::sleep(RELOAD_INTERVAL) => {}
            }
            match self.reload() {
                Ok(true) => {
                    last_problem = None;
                    info!("serving the new certificate from the certificate files");
                }
                Ok(false) => {}
                Err(problem) => {
                    if last_problem.as_ref() != Some(&problem) {
                        warn!(%problem, "the certificate files changed but cannot be served; keeping the previous certificate");
                    }
                    last_problem = Some(problem);
                }
            }
        }
    }

    /// A rustls server configuration that serves this certificate (HTTP/1.1 only).
    pub fn server_config(self: &Arc<Self>) -> Result<Arc<rustls::ServerConfig>, rustls::Error> {
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(provider()))
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_cert_resolver(self.clone());
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

impl ResolvesServerCert for ServingCertificate {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

/// berth's one crypto provider (see [`crate::tls`]).
fn provider() -> CryptoProvider {
    rustls::crypto::ring::default_provider()
}

fn read_pair(cert: &Path, key: &Path) -> Result<(Vec<u8>, Vec<u8>), CertificateError> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|e| CertificateError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
    };
    Ok((read(cert)?, read(key)?))
}

/// Parses a PEM chain and key and checks that they belong together.
fn certified_key(
    cert_path: &Path,
    cert_pem: &[u8],
    key_path: &Path,
    key_pem: &[u8],
) -> Result<CertifiedKey, CertificateError> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CertificateError::Malformed {
            path: cert_path.to_path_buf(),
            message: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(CertificateError::NoCertificate {
            path: cert_path.to_path_buf(),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|_| CertificateError::NoKey {
        path: key_path.to_path_buf(),
    })?;
    let signer = provider().key_provider.load_private_key(key).map_err(|e| {
        CertificateError::UnusableKey {
            key: key_path.to_path_buf(),
            message: e.to_string(),
        }
    })?;
    let loaded = CertifiedKey::new(chain, signer);
    match loaded.keys_match() {
        Ok(()) => Ok(loaded),
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => Ok(loaded),
        Err(_) => Err(CertificateError::Mismatch {
            cert: cert_path.to_path_buf(),
            key: key_path.to_path_buf(),
        }),
    }
}

#[cfg(test)]
mod tests;
