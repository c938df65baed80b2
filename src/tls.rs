//! Process-wide TLS setup, shared by every TLS client berth starts.
//!
//! Both TLS clients in the process take rustls' process default crypto provider: kube's
//! (rustls `ClientConfig::builder()`) and the Prometheus client's (reqwest with
//! `rustls-no-provider`, which panics when there is none). berth links `ring` only (kube's
//! `ring` feature; no dependency may enable `aws-lc-rs`), and installing it explicitly
//! keeps that working even if a second provider gets linked one day, when rustls would
//! refuse to pick one.

/// Makes rustls' `ring` provider the process-wide default, unless a default is installed
/// already. The binary calls this at startup, before any client exists; the Prometheus
/// client calls it too, for programs that embed berth without its entry point.
pub fn install_default_crypto_provider() {
    // Err only means a provider is installed already (by an earlier call, or by the
    // embedding program); that one is kept.
    let _ = rustls::crypto::ring::default_provider().install_default();
}
