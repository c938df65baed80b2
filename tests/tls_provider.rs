//! One rustls crypto provider in a process that links the Prometheus plugins (issue 8):
//! kube's client and the Prometheus client both get their TLS set up, neither panics over
//! which provider to use, and the provider in use is `ring`, the one kube is built with.

use berth::plugins::prometheus::{ClientConfig, PrometheusClient, QueryError};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// A kubeconfig for an https API server where nothing listens: creating a client for it
/// builds the TLS configuration without connecting.
const KUBECONFIG: &str = r#"
apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster:
    server: https://127.0.0.1:1
contexts:
- name: nowhere
  context:
    cluster: nowhere
    user: someone
current-context: nowhere
users:
- name: someone
  user:
    token: not-a-real-token
"#;

fn suite_names(provider: &rustls::crypto::CryptoProvider) -> Vec<String> {
    provider
        .cipher_suites
        .iter()
        .map(|suite| format!("{:?}", suite.suite()))
        .collect()
}

#[tokio::test]
async fn kube_and_prometheus_clients_share_the_ring_provider() {
    // kube first, before berth installs a default: rustls must find exactly one provider
    // among the crate features (with two, `ClientConfig::builder()` panics here).
    let kubeconfig = Kubeconfig::from_yaml(KUBECONFIG).expect("the kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("a kube config");
    let kube_client = kube::Client::try_from(config);
    assert!(kube_client.is_ok(), "kube client: {:?}", kube_client.err());

    let address = "https://127.0.0.1:1";
    let prometheus = PrometheusClient::new(ClientConfig::new(address))
        .unwrap_or_else(|e| panic!("a Prometheus client for {address}: {e}"));
    // The TLS connector is used, and the failure is a value, not a panic.
    let outcome = prometheus.node_values("up", "nodename").await;
    assert!(
        matches!(&outcome, Err(QueryError::Unreachable { .. })),
        "{outcome:?}"
    );

    let installed = rustls::crypto::CryptoProvider::get_default()
        .expect("a process-wide provider is installed");
    assert_eq!(
        suite_names(installed),
        suite_names(&rustls::crypto::ring::default_provider()),
        "the process default is ring's provider"
    );
}
