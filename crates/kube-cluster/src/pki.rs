//! The cluster's certificates and keys, generated per cluster: a CA, the API server's
//! serving certificate (loopback names and the in-cluster service names), client
//! certificates for the admin and the control-plane components, and the service-account
//! signing key. ECDSA P-256 throughout; nothing outlives the cluster's directory.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

use crate::Error;

/// A certificate and key written as PEM files.
#[derive(Debug, Clone)]
pub struct Pair {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Everything the control plane needs, written under one directory.
#[derive(Debug, Clone)]
pub struct Pki {
    pub ca_cert: PathBuf,
    pub ca_key: PathBuf,
    pub serving: Pair,
    pub admin: Pair,
    pub controller_manager: Pair,
    pub service_account_key: PathBuf,
    pub service_account_public: PathBuf,
}

fn pki_error(what: &str) -> impl Fn(rcgen::Error) -> Error + '_ {
    move |e| Error::Pki(format!("{what}: {e}"))
}

fn write(dir: &Path, name: &str, text: &str) -> Result<PathBuf, Error> {
    let path = dir.join(name);
    std::fs::write(&path, text)
        .map_err(|e| Error::Pki(format!("writing {}: {e}", path.display())))?;
    Ok(path)
}

impl Pki {
    /// Generates a fresh PKI into `dir`.
    pub fn generate(dir: &Path) -> Result<Pki, Error> {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::Pki(format!("creating {}: {e}", dir.display())))?;
        let ca_key = KeyPair::generate().map_err(pki_error("CA key"))?;
        let mut ca_params =
            CertificateParams::new(Vec::<String>::new()).map_err(pki_error("CA"))?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "berth-e2e-ca");
        let ca_key_pem = ca_key.serialize_pem();
        let ca = CertifiedIssuer::self_signed(ca_params, ca_key).map_err(pki_error("CA"))?;

        let leaf = |common_name: &str,
                    organization: Option<&str>,
                    names: Vec<String>,
                    usage: ExtendedKeyUsagePurpose,
                    file: &str|
         -> Result<Pair, Error> {
            let key = KeyPair::generate().map_err(pki_error(file))?;
            let mut params = CertificateParams::new(names).map_err(pki_error(file))?;
            params
                .distinguished_name
                .push(DnType::CommonName, common_name);
            if let Some(o) = organization {
                params.distinguished_name.push(DnType::OrganizationName, o);
            }
            params.key_usages = vec![
                KeyUsagePurpose::DigitalSignature,
                KeyUsagePurpose::KeyEncipherment,
            ];
            params.extended_key_usages = vec![usage];
            let cert = params.signed_by(&key, &ca).map_err(pki_error(file))?;
            Ok(Pair {
                cert: write(dir, &format!("{file}.crt"), &cert.pem())?,
                key: write(dir, &format!("{file}.key"), &key.serialize_pem())?,
            })
        };

        let serving_names = [
            "localhost",
            "127.0.0.1",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
            "10.96.0.1",
        ]
        .map(str::to_string)
        .to_vec();
        let serving = leaf(
            "kube-apiserver",
            None,
            serving_names,
            ExtendedKeyUsagePurpose::ServerAuth,
            "apiserver",
        )?;
        let admin = leaf(
            "berth-e2e-admin",
            Some("system:masters"),
            Vec::new(),
            ExtendedKeyUsagePurpose::ClientAuth,
            "admin",
        )?;
        let controller_manager = leaf(
            "system:kube-controller-manager",
            None,
            Vec::new(),
            ExtendedKeyUsagePurpose::ClientAuth,
            "controller-manager",
        )?;
        let sa = KeyPair::generate().map_err(pki_error("service-account key"))?;
        Ok(Pki {
            ca_cert: write(dir, "ca.crt", &ca.pem())?,
            ca_key: write(dir, "ca.key", &ca_key_pem)?,
            serving,
            admin,
            controller_manager,
            service_account_key: write(dir, "sa.key", &sa.serialize_pem())?,
            service_account_public: write(dir, "sa.pub", &sa.public_key_pem())?,
        })
    }
}
