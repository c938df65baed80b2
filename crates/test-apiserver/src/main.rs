//! `test-apiserver [--port N] [--kubeconfig PATH] [--crds DIR] [--access FILE]`: runs the
//! test API server until SIGTERM or ctrl-c. Tests drive it over HTTP (`/__test/...`, see
//! README.md).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use test_apiserver::{Access, Config, TestApiServer};

#[derive(Debug, Parser)]
#[command(
    name = "test-apiserver",
    about = "A Kubernetes API server stand-in for end-to-end tests"
)]
struct Args {
    /// Port on 127.0.0.1 (0: a random free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Where to write the kubeconfig (default: a fresh temp dir).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Install every CRD in this directory's YAML files at start.
    #[arg(long)]
    crds: Option<PathBuf>,
    /// Events kept for watches to resume from.
    #[arg(long, default_value_t = 10_000)]
    history_window: usize,
    /// Milliseconds between watch bookmarks.
    #[arg(long, default_value_t = 1000)]
    bookmark_interval_ms: u64,
    /// The Kubernetes minor version `/version` reports (1.N.0).
    #[arg(long, default_value_t = 37)]
    minor_version: u32,
    /// A JSON or YAML file with the tokens TokenReview knows and the rules
    /// SubjectAccessReview applies (`{"tokens": {...}, "rules": [...]}`, see README.md).
    #[arg(long)]
    access: Option<PathBuf>,
}

/// The `--access` file, read and checked.
fn read_access(path: &Path) -> Result<Access, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    Access::parse(&text)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let access = match &args.access {
        None => Access::default(),
        Some(path) => match read_access(path) {
            Ok(access) => access,
            Err(error) => {
                eprintln!("test-apiserver: --access {}: {error}", path.display());
                return ExitCode::FAILURE;
            }
        },
    };
    let config = Config {
        history_window: args.history_window,
        bookmark_interval: std::time::Duration::from_millis(args.bookmark_interval_ms),
        minor_version: args.minor_version,
        access,
    };
    let server = match TestApiServer::start_on(config, args.port, args.kubeconfig).await {
        Ok(server) => server,
        Err(error) => {
            eprintln!("test-apiserver: cannot start: {error}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(dir) = &args.crds {
        match server.install_crds_from_dir(dir) {
            Ok(names) => eprintln!("installed CRDs: {}", names.join(", ")),
            Err(error) => {
                eprintln!(
                    "test-apiserver: installing CRDs from {}: {error}",
                    dir.display()
                );
                return ExitCode::FAILURE;
            }
        }
    }
    println!("listening on {}", server.url());
    println!("kubeconfig: {}", server.kubeconfig_path().display());
    wait_for_signal().await;
    server.shutdown().await;
    ExitCode::SUCCESS
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
