//! The `berth` command line: one module per subcommand.
//!
//! [`main`] is also the entry point for binaries with out-of-tree plugins: build a
//! [`Registry`] (usually [`crate::plugins::default_registry`] plus your own plugins) and
//! call `berth::cli::main(registry)`.

pub mod bench;
pub mod convert;
pub mod crds;
pub mod kubectl;
pub mod plugins;
pub mod run;
pub mod simulate;
pub mod snapshot;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::framework::Registry;
use crate::observability::logging::{self, LogFormat};

/// berth: SchedulerProfiles as live Kubernetes schedulers.
#[derive(Debug, Parser)]
#[command(name = "berth", version, about)]
pub struct Cli {
    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Log filter, e.g. `info` or `warn,berth=debug` (overrides RUST_LOG) [default:
    /// `warn,berth=info` for `run`, no logs for the other commands].
    #[arg(long, global = true, value_name = "FILTER")]
    pub log_level: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the operator: SchedulerProfiles become live schedulers in the cluster.
    Run(run::RunArgs),
    /// Schedule the pending pods of a cluster described in YAML (or read from the live
    /// cluster with --from-cluster), without a scheduler running.
    Simulate(simulate::SimulateArgs),
    /// Write the live cluster as YAML for `berth simulate -f`, without secrets' worth of data.
    Snapshot(snapshot::SnapshotArgs),
    /// Print the CustomResourceDefinitions (SchedulerProfile, PodGroup) as YAML.
    Crds(crds::CrdsArgs),
    /// Describe the registered plugins: extension points, defaults, weights and args.
    Plugins(plugins::PluginsArgs),
    /// Convert a KubeSchedulerConfiguration into SchedulerProfiles.
    Convert(convert::ConvertArgs),
    /// Run upstream's scheduler_perf workloads in memory and report throughput.
    Bench(bench::BenchArgs),
}

/// Exit code: success (for `simulate`: the input was valid, whatever the placements).
pub const EXIT_OK: u8 = 0;
/// Exit code: an internal error of berth (output could not be encoded or written, ...).
pub const EXIT_INTERNAL: u8 = 1;
/// Exit code: the user's input is invalid (malformed YAML, invalid profiles, unknown
/// names, unsupported configuration).
pub const EXIT_INVALID_INPUT: u8 = 2;

/// The runtime of `simulate` and `bench`: one thread, on which the driver loop and its
/// binding cycles take turns (time is the simulator's virtual clock, see
/// `simulate::clock`). `None` (after an `error:` line) when it cannot start.
pub fn driver_runtime() -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => Some(runtime),
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            None
        }
    }
}

/// Prints a command's report: `table` renders it for people, otherwise it is pretty
/// JSON; the exit code (see [`write_stdout`]).
pub fn print_report<R: serde::Serialize>(
    report: &R,
    as_json: bool,
    table: impl FnOnce(&R) -> String,
) -> u8 {
    let text = if as_json {
        match serde_json::to_string_pretty(report) {
            Ok(json) => json + "\n",
            Err(error) => {
                eprintln!("error: cannot encode the report as JSON: {error}");
                return EXIT_INTERNAL;
            }
        }
    } else {
        table(report)
    };
    write_stdout(&text, "the report")
}

/// Writes `text` to stdout. A closed pipe (`berth ... | head`) is not a failure; any
/// other write error is reported naming `what` and gives [`EXIT_INTERNAL`].
pub fn write_stdout(text: &str, what: &str) -> u8 {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => EXIT_OK,
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => EXIT_OK,
        Err(error) => {
            eprintln!("error: cannot write {what}: {error}");
            EXIT_INTERNAL
        }
    }
}

/// Parses the command line and runs the subcommand with `registry`.
pub fn main(registry: Registry) -> ExitCode {
    // One rustls crypto provider for the whole process, before any TLS client (kube's, the
    // Prometheus plugins') is built.
    crate::tls::install_default_crypto_provider();
    // Installed as `kubectl-berth`, the binary is the kubectl plugin.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.first().is_some_and(kubectl::is_kubectl_plugin) {
        logging::init_with(LogFormat::Text, None, logging::QUIET_FILTER);
        return kubectl::main(args, &registry);
    }
    let cli = Cli::parse_from(args);
    let default_filter = match cli.command {
        Command::Run(_) => logging::OPERATOR_FILTER,
        _ => logging::QUIET_FILTER,
    };
    logging::init_with(cli.log_format, cli.log_level.as_deref(), default_filter);
    match cli.command {
        Command::Run(args) => run::run(args, registry),
        Command::Simulate(args) => simulate::run(args, &registry),
        Command::Snapshot(args) => snapshot::run(args),
        Command::Crds(args) => crds::run(args, &registry),
        Command::Plugins(args) => plugins::run(args, &registry),
        Command::Convert(args) => convert::run(args, &registry),
        Command::Bench(args) => bench::run(args, &registry),
    }
}
