//! `berth run`: the operator. See [`crate::operator`].

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::framework::Registry;
use crate::framework::parallel::{MAX_PARALLELISM, default_parallelism};
use crate::observability::server::connections::DEFAULT_MAX_CONNECTIONS;
use crate::operator::leader::LeaseConfig;
use crate::operator::{MetricsSecurity, OperatorConfig, run as run_operator};

use super::EXIT_INTERNAL;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Kubeconfig file; by default KUBECONFIG, ~/.kube/config or the in-cluster account.
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Elect one active replica through a coordination.k8s.io Lease.
    #[arg(long)]
    pub leader_elect: bool,
    /// Namespace of the Lease.
    #[arg(long, env = "POD_NAMESPACE", default_value = "kube-system")]
    pub lease_namespace: String,
    /// Name of the Lease.
    #[arg(long, default_value = "berth")]
    pub lease_name: String,
    /// How long the Lease stays valid without renewal.
    #[arg(long, default_value_t = 15)]
    pub lease_duration_seconds: u64,
    /// This replica's identity in the Lease; defaults to POD_NAME, else the host name.
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
    /// Address for /metrics, /healthz and /readyz (HTTPS unless --metrics-insecure).
    #[arg(long, default_value = "0.0.0.0:10259")]
    pub metrics_bind_address: SocketAddr,
    /// Serve plain HTTP, and /metrics to anyone who reaches the port: for local use only.
    /// By default the port is HTTPS and /metrics answers only callers whose bearer token
    /// the API server authenticates (TokenReview) and authorizes for `get` on /metrics
    /// (SubjectAccessReview).
    #[arg(long, conflicts_with_all = ["tls_cert_file", "tls_private_key_file"])]
    pub metrics_insecure: bool,
    /// PEM certificate (chain) served on the metrics port; read again when it changes.
    /// Without it, a self-signed certificate is generated at start.
    #[arg(long, requires = "tls_private_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    /// PEM private key of --tls-cert-file.
    #[arg(long, requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,
    /// Connections the metrics port holds open at once; more wait to be accepted.
    #[arg(long, default_value_t = DEFAULT_MAX_CONNECTIONS as u64,
          value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub metrics_max_connections: u64,
    /// Threads for Filter and Score, 1 to 256 (default: CPU count).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MAX_PARALLELISM as u64))]
    pub parallelism: Option<u64>,
    /// Seed of the random tie-break among equally scored nodes.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Serve SchedulerProfiles whose scheduler name is `default-scheduler`. Only for
    /// clusters whose own kube-scheduler is disabled: otherwise both would bind the same
    /// pods, each blind to the other's placements. Without it such profiles are refused
    /// (Accepted=False, reason ReservedSchedulerName).
    #[arg(long, env = "BERTH_SERVE_DEFAULT_SCHEDULER")]
    pub serve_default_scheduler: bool,
}

pub fn run(args: RunArgs, registry: Registry) -> ExitCode {
    let identity = args.identity.clone().unwrap_or_else(host_name);
    let config = OperatorConfig {
        kubeconfig: args.kubeconfig,
        leader_elect: args.leader_elect,
        lease: LeaseConfig {
            namespace: args.lease_namespace,
            name: args.lease_name,
            identity,
            duration_seconds: args.lease_duration_seconds.max(1),
        },
        metrics_bind_address: args.metrics_bind_address,
        metrics_security: match (
            args.metrics_insecure,
            args.tls_cert_file,
            args.tls_private_key_file,
        ) {
            (true, _, _) => MetricsSecurity::Insecure,
            (false, Some(cert), Some(key)) => MetricsSecurity::CertificateFiles { cert, key },
            (false, _, _) => MetricsSecurity::SelfSigned,
        },
        metrics_max_connections: usize::try_from(args.metrics_max_connections)
            .unwrap_or(DEFAULT_MAX_CONNECTIONS),
        parallelism: args
            .parallelism
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or_else(default_parallelism),
        seed: args.seed,
        serve_default_scheduler: args.serve_default_scheduler,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::from(EXIT_INTERNAL);
        }
    };
    match runtime.block_on(run_operator(config, registry)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(EXIT_INTERNAL)
        }
    }
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("berth-{}", std::process::id()))
}
