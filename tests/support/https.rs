//! HTTPS for tests, blocking: a GET over rustls that either trusts one root certificate
//! (and checks the server's name against it, as a scraper with a CA bundle would) or
//! trusts anything (as `insecureSkipVerify` does); either way it hands back the
//! certificate the server presented.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

use super::http::{self, Response, TIMEOUT};
use super::temp::TempDir;

/// Which server certificates the client accepts.
#[derive(Debug, Clone)]
pub enum Trust {
    /// Any certificate, unchecked.
    Any,
    /// Certificates issued by this root for the name given to [`get`].
    Root(CertificateDer<'static>),
}

/// A CA and a serving certificate for `localhost` it issued.
pub struct Issued {
    pub ca: CertificateDer<'static>,
    pub leaf: CertificateDer<'static>,
    pub cert_pem: String,
    pub key_pem: String,
}

impl Issued {
    /// A fresh CA named `ca_name` and a certificate for `localhost` signed by it.
    pub fn new(ca_name: &str) -> Issued {
        let ca_key = rcgen::KeyPair::generate().expect("CA key");
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, ca_name);
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).expect("CA");
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .expect("params")
            .signed_by(&key, &ca)
            .expect("issued");
        Issued {
            ca: ca.der().clone(),
            leaf: cert.der().clone(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }

    /// Writes `tls.crt` and `tls.key` into `dir` as a Secret volume is updated: each
    /// file replaced by a rename, never edited in place. Returns both paths.
    pub fn install(&self, dir: &TempDir) -> (std::path::PathBuf, std::path::PathBuf) {
        for (name, text) in [("tls.crt", &self.cert_pem), ("tls.key", &self.key_pem)] {
            let staged = dir.write(&format!(".{name}.new"), text);
            std::fs::rename(&staged, dir.join(name)).expect("replace");
        }
        (dir.join("tls.crt"), dir.join("tls.key"))
    }
}

/// An answer over HTTPS and the server's end-entity certificate.
#[derive(Debug)]
pub struct Exchange {
    pub response: Response,
    pub certificate: CertificateDer<'static>,
}

/// `GET https://<server_name>:<port><path>` at `address` with `headers`.
pub fn get(
    address: SocketAddr,
    server_name: &str,
    path: &str,
    headers: &[(&str, &str)],
    trust: &Trust,
) -> Result<Exchange, String> {
    let what = |e: String| format!("GET https://{address}{path}: {e}");
    let seen = Arc::new(Mutex::new(None));
    let config = client_config(trust, seen.clone());
    let name = ServerName::try_from(server_name.to_string()).map_err(|e| what(e.to_string()))?;
    let connection =
        rustls::ClientConnection::new(Arc::new(config), name).map_err(|e| what(e.to_string()))?;
    let tcp = http::connect(address, TIMEOUT).map_err(|e| what(e.to_string()))?;
    let mut stream = rustls::StreamOwned::new(connection, tcp);
    stream
        .write_all(http::request_head(address, path, headers).as_bytes())
        .map_err(|e| what(e.to_string()))?;
    let mut bytes = Vec::new();
    match stream.read_to_end(&mut bytes) {
        Ok(_) => {}
        // A server that closes without close_notify after a complete answer.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !bytes.is_empty() => {}
        Err(e) => return Err(what(e.to_string())),
    }
    let response = http::parse_response(&bytes).map_err(what)?;
    let certificate = stream
        .conn
        .peer_certificates()
        .and_then(|chain| chain.first().cloned())
        .or_else(|| seen.lock().ok().and_then(|seen| seen.clone()))
        .ok_or_else(|| what("the server presented no certificate".to_string()))?;
    Ok(Exchange {
        response,
        certificate,
    })
}

/// A TLS stream to `address` that trusts any certificate, for writing raw bytes; the
/// handshake happens on the first write or read.
pub fn connect(
    address: SocketAddr,
) -> Result<rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream>, String> {
    let config = client_config(&Trust::Any, Arc::new(Mutex::new(None)));
    let name = ServerName::try_from("localhost").map_err(|e| e.to_string())?;
    let connection =
        rustls::ClientConnection::new(Arc::new(config), name).map_err(|e| e.to_string())?;
    let tcp = http::connect(address, TIMEOUT).map_err(|e| e.to_string())?;
    Ok(rustls::StreamOwned::new(connection, tcp))
}

/// The certificate the server at `address` presents, trusting anything.
pub fn presented_certificate(address: SocketAddr) -> Result<CertificateDer<'static>, String> {
    get(address, "localhost", "/healthz", &[], &Trust::Any).map(|exchange| exchange.certificate)
}

/// Polls [`presented_certificate`] until it is `expected`, for at most `timeout`.
pub fn wait_for_certificate(
    address: SocketAddr,
    expected: &CertificateDer<'static>,
    timeout: Duration,
) -> Result<(), String> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let seen = presented_certificate(address);
        if seen.as_ref() == Ok(expected) {
            return Ok(());
        }
        if std::time::Instant::now() >= deadline {
            return Err(format!(
                "the server did not present the expected certificate within {timeout:?}; last: {}",
                match seen {
                    Ok(_) => "another certificate".to_string(),
                    Err(e) => e,
                }
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn client_config(
    trust: &Trust,
    seen: Arc<Mutex<Option<CertificateDer<'static>>>>,
) -> rustls::ClientConfig {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("rustls' default protocol versions");
    let mut config = match trust {
        Trust::Any => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAny { provider, seen }))
            .with_no_client_auth(),
        Trust::Root(root) => {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(root.clone()).expect("a usable root certificate");
            builder.with_root_certificates(roots).with_no_client_auth()
        }
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config
}

/// Accepts every certificate (checking only that the handshake is signed by it).
#[derive(Debug)]
struct AcceptAny {
    provider: Arc<rustls::crypto::CryptoProvider>,
    seen: Arc<Mutex<Option<CertificateDer<'static>>>>,
}

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Ok(mut seen) = self.seen.lock() {
            *seen = Some(end_entity.clone().into_owned());
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
