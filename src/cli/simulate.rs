//! `berth simulate`: schedules the pending pods of a cluster read from YAML with the same
//! core as `berth run`, and prints where each pod went and why.
//!
//! Exit codes (documented in `docs/simulate.md`): 0 when the input was valid, whatever
//! the placements; 2 when it was not (unreadable file, malformed YAML, invalid object or
//! profile); 1 for internal errors.
//!
//! The report goes to stdout; stderr carries one `warning: ...` line per warning (skipped
//! documents, profile warnings, pods no profile serves, degraded plugins) and `error:`
//! lines, and log lines only when `--log-level` or `RUST_LOG` asks for them.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use crate::framework::Registry;
use crate::framework::parallel::{MAX_PARALLELISM, default_parallelism};

use super::{EXIT_INTERNAL, EXIT_INVALID_INPUT};
use crate::simulate::input::{self, InputError};
use crate::simulate::render;
use crate::simulate::report::Report;
use crate::simulate::run::{SimulateError, SimulateOptions, check_profiles, simulate_on_workers};

#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// YAML file with Nodes, Pods, SchedulerProfiles, ... (repeatable; `-` reads stdin).
    #[arg(short = 'f', long = "filename", value_name = "FILE", required = true)]
    pub filenames: Vec<PathBuf>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,
    /// Also show every node's filter verdict and per-plugin scores for each pod.
    #[arg(long)]
    pub explain: bool,
    /// Seed for breaking ties between equally scored nodes; the same seed gives the same
    /// placements.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Threads that filter and score nodes, 1 to 256 [default: the number of CPUs]; never
    /// more than the cluster has nodes.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=MAX_PARALLELISM as u64))]
    pub parallelism: Option<u64>,
}

/// How the result is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Aligned columns, like `kubectl get`.
    Table,
    /// The JSON report documented in docs/simulate.md.
    Json,
}

/// Runs `berth simulate` and returns its exit code.
pub fn run(args: SimulateArgs, registry: &Registry) -> ExitCode {
    ExitCode::from(simulate_command(args, registry))
}

fn simulate_command(args: SimulateArgs, registry: &Registry) -> u8 {
    let (cluster, warnings) = match input::load_files(&args.filenames) {
        Ok(loaded) => loaded,
        Err(error) => return report_input_error(&error),
    };
    for warning in &warnings {
        warn(warning);
    }
    // Every error of every profile, one line each, before anything is scheduled.
    let profiles = check_profiles(&cluster.profiles, registry);
    for warning in &profiles.warnings {
        warn(warning);
    }
    if !profiles.invalid.is_empty() {
        for line in profiles.invalid.iter().flat_map(|p| p.lines()) {
            eprintln!("error: {line}");
        }
        return EXIT_INVALID_INPUT;
    }
    let Some(runtime) = super::driver_runtime() else {
        return EXIT_INTERNAL;
    };
    let options = SimulateOptions {
        explain: args.explain,
        seed: args.seed,
        // Threads beyond the node count would have no node to filter.
        parallelism: args
            .parallelism
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or_else(default_parallelism)
            .min(cluster.nodes.len().max(1)),
    };
    match simulate_on_workers(&runtime, cluster, profiles.valid, registry, options) {
        Ok(report) => {
            for warning in report.warnings() {
                warn(warning);
            }
            print_report(&report, args.output)
        }
        Err(SimulateError::InvalidProfiles(invalid)) => {
            for line in invalid.iter().flat_map(|p| p.lines()) {
                eprintln!("error: {line}");
            }
            EXIT_INVALID_INPUT
        }
        // An object the core cannot take (say, an unparsable quantity) is invalid input
        // just as a malformed document is.
        Err(SimulateError::InvalidObject {
            kind,
            name,
            message,
        }) => {
            eprintln!("error: {kind} {name}: {message}");
            EXIT_INVALID_INPUT
        }
        Err(error @ SimulateError::Internal(_)) => {
            eprintln!("error: {error}");
            EXIT_INTERNAL
        }
    }
}

/// One `warning: ...` line on stderr, whatever the message holds.
fn warn(message: impl std::fmt::Display) {
    let text = message.to_string();
    let line: Vec<&str> = text.lines().map(str::trim).collect();
    eprintln!("warning: {}", line.join(" "));
}

fn report_input_error(error: &InputError) -> u8 {
    for line in error.lines() {
        eprintln!("error: {line}");
    }
    EXIT_INVALID_INPUT
}

fn print_report(report: &Report, format: OutputFormat) -> u8 {
    super::print_report(report, format == OutputFormat::Json, render::render_table)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: SimulateArgs,
    }

    #[test]
    fn flags_parse_with_defaults() {
        let cli = Cli::try_parse_from(["berth", "-f", "a.yaml", "--filename", "b.yaml"]);
        let args = cli.map(|c| c.args).ok();
        let args = args.as_ref();
        assert_eq!(
            args.map(|a| a.filenames.clone()),
            Some(vec![PathBuf::from("a.yaml"), PathBuf::from("b.yaml")])
        );
        assert_eq!(args.map(|a| a.output), Some(OutputFormat::Table));
        assert_eq!(
            args.map(|a| (a.explain, a.seed, a.parallelism)),
            Some((false, 0, None))
        );
    }

    #[test]
    fn invalid_flags_are_rejected() {
        for argv in [
            vec!["berth"],
            vec!["berth", "-f", "a.yaml", "-o", "yaml"],
            vec!["berth", "-f", "a.yaml", "--parallelism", "0"],
            vec!["berth", "-f", "a.yaml", "--parallelism", "100000"],
            vec!["berth", "-f", "a.yaml", "--seed", "-1"],
        ] {
            assert!(Cli::try_parse_from(&argv).is_err(), "{argv:?}");
        }
    }
}
