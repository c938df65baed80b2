use std::path::PathBuf;

use rustls::pki_types::ServerName;

use super::*;

/// A fresh directory for one test's files, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let path = std::env::temp_dir().join(format!("berth-tls-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("temp dir");
        Dir(path)
    }

    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).expect("write");
        path
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A certificate for `name` and its key, PEM.
struct Pair {
    cert_pem: String,
    key_pem: String,
    der: CertificateDer<'static>,
}

fn pair(name: &str) -> Pair {
    let rcgen::CertifiedKey { cert, signing_key } =
        rcgen::generate_simple_self_signed(vec![name.to_string()]).expect("generate");
    Pair {
        cert_pem: cert.pem(),
        key_pem: signing_key.serialize_pem(),
        der: cert.der().clone(),
    }
}

fn served(certificate: &ServingCertificate) -> CertificateDer<'static> {
    certificate.current().cert[0].clone()
}

#[test]
fn files_load_and_serve_their_certificate() {
    let dir = Dir::new("load");
    let a = pair("a.example");
    let cert = dir.write("tls.crt", a.cert_pem.as_bytes());
    let key = dir.write("tls.key", a.key_pem.as_bytes());
    let certificate = ServingCertificate::from_files(&cert, &key).expect("loads");
    assert_eq!(served(&certificate), a.der);
    assert!(certificate.follows_files());
    assert_eq!(certificate.reload(), Ok(false), "nothing changed");
}

#[test]
fn unusable_files_are_refused_with_what_is_wrong() {
    let dir = Dir::new("refuse");
    let a = pair("a.example");
    let b = pair("b.example");
    let a_cert = dir.write("a.crt", a.cert_pem.as_bytes());
    let a_key = dir.write("a.key", a.key_pem.as_bytes());
    let b_key = dir.write("b.key", b.key_pem.as_bytes());
    let garbage = dir.write("garbage", b"not pem at all\n");
    let missing = dir.0.join("missing");
    struct Case {
        name: &'static str,
        cert: PathBuf,
        key: PathBuf,
        expected: fn(&Path, &Path) -> CertificateError,
    }
    let cases = [
        Case {
            name: "the certificate file is missing",
            cert: missing.clone(),
            key: a_key.clone(),
            expected: |cert, _| CertificateError::Read {
                path: cert.to_path_buf(),
                message: "No such file or directory (os error 2)".to_string(),
            },
        },
        Case {
            name: "the certificate file holds no certificate",
            cert: garbage.clone(),
            key: a_key.clone(),
            expected: |cert, _| CertificateError::NoCertificate {
                path: cert.to_path_buf(),
            },
        },
        Case {
            name: "the key file holds no key",
            cert: a_cert.clone(),
            key: garbage.clone(),
            expected: |_, key| CertificateError::NoKey {
                path: key.to_path_buf(),
            },
        },
        Case {
            name: "a certificate file given as the key holds no key",
            cert: a_cert.clone(),
            key: a_cert.clone(),
            expected: |_, key| CertificateError::NoKey {
                path: key.to_path_buf(),
            },
        },
        Case {
            name: "the key belongs to another certificate",
            cert: a_cert.clone(),
            key: b_key.clone(),
            expected: |cert, key| CertificateError::Mismatch {
                cert: cert.to_path_buf(),
                key: key.to_path_buf(),
            },
        },
    ];
    for case in cases {
        let error = ServingCertificate::from_files(&case.cert, &case.key)
            .map(|_| ())
            .expect_err(case.name);
        assert_eq!(
            error,
            (case.expected)(&case.cert, &case.key),
            "{}",
            case.name
        );
    }
    let broken = dir.write(
        "broken.crt",
        b"-----BEGIN CERTIFICATE-----\n!!! not base64 !!!\n-----END CERTIFICATE-----\n",
    );
    let error = ServingCertificate::from_files(&broken, &a_key).map(|_| ());
    assert!(
        matches!(&error, Err(CertificateError::Malformed { path, .. }) if *path == broken),
        "{error:?}"
    );
}

#[test]
fn a_rotation_is_served_once_both_files_match_and_never_half_way() {
    let dir = Dir::new("rotate");
    let a = pair("a.example");
    let b = pair("b.example");
    let cert = dir.write("tls.crt", a.cert_pem.as_bytes());
    let key = dir.write("tls.key", a.key_pem.as_bytes());
    let certificate = ServingCertificate::from_files(&cert, &key).expect("loads");

    // The new certificate is written first: it does not match the old key yet.
    dir.write("tls.crt", b.cert_pem.as_bytes());
    assert_eq!(
        certificate.reload(),
        Err(CertificateError::Mismatch {
            cert: cert.clone(),
            key: key.clone()
        })
    );
    assert_eq!(served(&certificate), a.der, "the old pair is kept");
    assert_eq!(
        certificate.reload(),
        Ok(false),
        "a failed pair is parsed once"
    );

    dir.write("tls.key", b.key_pem.as_bytes());
    assert_eq!(certificate.reload(), Ok(true));
    assert_eq!(served(&certificate), b.der);

    // A file that disappears for a moment (a symlink swap) keeps the current pair.
    std::fs::remove_file(&key).expect("remove");
    assert!(matches!(
        certificate.reload(),
        Err(CertificateError::Read { .. })
    ));
    assert_eq!(served(&certificate), b.der);
}

#[test]
fn self_signed_certificate_names_localhost_loopback_and_the_hosts() {
    let certificate =
        ServingCertificate::self_signed(&["berth-0".to_string(), "10.1.2.3".to_string()])
            .expect("generated");
    assert!(!certificate.follows_files());
    assert_eq!(certificate.reload(), Ok(false));
    let der = served(&certificate);
    let parsed = webpki::EndEntityCert::try_from(&der).expect("a certificate");
    for name in ["localhost", "127.0.0.1", "::1", "berth-0", "10.1.2.3"] {
        let server_name = ServerName::try_from(name).expect("a server name");
        assert!(
            parsed
                .verify_is_valid_for_subject_name(&server_name)
                .is_ok(),
            "the certificate is valid for {name}"
        );
    }
    let other = ServerName::try_from("elsewhere.example").expect("a server name");
    assert!(parsed.verify_is_valid_for_subject_name(&other).is_err());
    // Each start makes its own key.
    let again = ServingCertificate::self_signed(&[]).expect("generated");
    assert_ne!(served(&again), der);
}

#[test]
fn the_server_configuration_resolves_the_current_certificate() {
    let certificate = ServingCertificate::self_signed(&[]).expect("generated");
    let config = certificate.server_config().expect("config");
    assert_eq!(config.alpn_protocols, vec![b"http/1.1".to_vec()]);
}
