//! `kube-cluster up`: the end-to-end tests' real cluster, started by hand, for a person
//! who wants to try berth on a real API server. Prints the admin kubeconfig's path and
//! runs until Ctrl-C (or SIGTERM), then stops everything and deletes its directory
//! (`--keep` keeps it). `scripts/kube-up.sh` builds the components and runs this.

use std::time::Duration;

use clap::{Parser, Subcommand};
use kube_cluster::{KubeCluster, Options, Release};

#[derive(Parser)]
#[command(
    name = "kube-cluster",
    about = "A real Kubernetes control plane on loopback (etcd, kube-apiserver, kube-controller-manager, kwok)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start a cluster and run until interrupted.
    Up {
        /// The Kubernetes release: 1.37 or 1.35.
        #[arg(long, default_value = "1.37")]
        release: Release,
        /// Nodes to create (kwok plays their kubelets), each 8 cpu / 32Gi / 110 pods.
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=1000))]
        nodes: u32,
        /// Keep the cluster's directory (logs, certificates, etcd data) after it stops.
        #[arg(long)]
        keep: bool,
    },
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let cli = Cli::parse();
    let Command::Up {
        release,
        nodes,
        keep,
    } = cli.command;
    eprintln!(
        "kube-cluster: starting Kubernetes {release:?} (the first run on a machine builds the components)"
    );
    let mut cluster = match KubeCluster::start(Options::release(release)).await {
        Ok(cluster) => cluster,
        Err(e) => {
            eprintln!("kube-cluster: {e}");
            std::process::exit(1);
        }
    };
    if keep {
        cluster.keep_dir();
    }
    if let Err(e) = create_nodes(&cluster, nodes).await {
        eprintln!("kube-cluster: creating nodes: {e}");
        std::process::exit(1);
    }
    println!("export KUBECONFIG={}", cluster.admin_kubeconfig().display());
    eprintln!(
        "kube-cluster: Kubernetes {} is up at {} with {nodes} kwok node(s); logs in {}. Ctrl-C stops it.",
        cluster.binaries.version,
        cluster.server,
        cluster.dir().display()
    );
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
    }
    eprintln!("kube-cluster: stopping");
    cluster.stop();
    // Give the log a moment to reach the terminal before the directory goes.
    tokio::time::sleep(Duration::from_millis(100)).await;
}

async fn create_nodes(cluster: &KubeCluster, count: u32) -> Result<(), String> {
    let client = cluster.admin_client().await.map_err(|e| e.to_string())?;
    let api: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(client);
    for i in 0..count {
        let name = format!("kwok-node-{i}");
        let node: k8s_openapi::api::core::v1::Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "type": "kwok"}},
            "status": {
                "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            },
        }))
        .map_err(|e| e.to_string())?;
        api.create(&kube::api::PostParams::default(), &node)
            .await
            .map_err(|e| format!("node {name}: {e}"))?;
    }
    Ok(())
}
