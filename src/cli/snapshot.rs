//! `berth snapshot`: reads the live cluster with the user's credentials and writes it as
//! the multi-document YAML `berth simulate -f` takes, with secrets' worth of data removed
//! (see [`crate::simulate::live`]), so that it can be attached to a bug report.
//!
//! Exit codes (documented in `docs/simulate.md`): 0 when the cluster was read, even with
//! kinds the user may not list (one `warning:` line each on stderr); 2 for bad arguments
//! (an unreadable kubeconfig, an unknown context); 1 when the cluster cannot be read or
//! the output cannot be written.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::simulate::live::{self, ClusterRead, DEFAULT_PAGE_SIZE, ReadOptions};

use super::{EXIT_INTERNAL, EXIT_INVALID_INPUT, EXIT_OK};

/// The largest `--page-size`.
pub const MAX_PAGE_SIZE: u32 = 10_000;

/// Which cluster to read and how, as `kubectl` takes it; shared by the commands that
/// read a live cluster.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct ClusterArgs {
    /// Kubeconfig file [default: the files of KUBECONFIG, else ~/.kube/config, else the
    /// in-cluster service account].
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use [default: the current context].
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Objects per list request, 1 to 10000.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_PAGE_SIZE,
          value_parser = clap::value_parser!(u32).range(1..=MAX_PAGE_SIZE as i64))]
    pub page_size: u32,
}

#[derive(Debug, Args)]
pub struct SnapshotArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Write the snapshot to FILE instead of standard output.
    #[arg(short = 'o', long = "output-file", value_name = "FILE")]
    pub output_file: Option<PathBuf>,
}

/// Runs `berth snapshot` and returns its exit code.
pub fn run(args: SnapshotArgs) -> ExitCode {
    ExitCode::from(snapshot_command(args))
}

fn snapshot_command(args: SnapshotArgs) -> u8 {
    let Some(runtime) = super::driver_runtime() else {
        return EXIT_INTERNAL;
    };
    let read = match read_live_cluster(&runtime, &args.cluster) {
        Ok(read) => read,
        Err(code) => return code,
    };
    let mut documents = read.documents;
    documents.iter_mut().for_each(live::scrub);
    let yaml = live::to_yaml(&documents);
    match &args.output_file {
        None => super::write_stdout(&yaml, "the snapshot"),
        Some(path) => match std::fs::write(path, yaml) {
            Ok(()) => EXIT_OK,
            Err(error) => {
                eprintln!(
                    "error: {}: cannot write the snapshot: {error}",
                    path.display()
                );
                EXIT_INTERNAL
            }
        },
    }
}

/// Reads the cluster `args` name, unscrubbed (what the scheduler would see), and prints
/// one `warning: <kind>: <message>; <consequence>` line on stderr per kind that could not
/// be read. When the cluster cannot be read, prints the `error:` line and returns the
/// exit code: 2 for a bad kubeconfig or context, 1 otherwise.
pub fn read_live_cluster(
    runtime: &tokio::runtime::Runtime,
    args: &ClusterArgs,
) -> Result<ClusterRead, u8> {
    let result = runtime.block_on(async {
        let connection = live::connect(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
        let options = ReadOptions {
            page_size: args.page_size,
            server: connection.server.clone(),
            ..ReadOptions::default()
        };
        live::read_cluster(&connection.client, &options).await
    });
    match result {
        Ok(read) => {
            for gap in &read.gaps {
                eprintln!("warning: {gap}");
            }
            Ok(read)
        }
        Err(error) => {
            eprintln!("error: {error}");
            Err(if error.is_invalid_input() {
                EXIT_INVALID_INPUT
            } else {
                EXIT_INTERNAL
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: SnapshotArgs,
    }

    #[test]
    fn flags_parse_with_defaults() {
        let cases = [
            (
                "no flags: the default kubeconfig, context and page size, stdout",
                vec!["berth"],
                (None, None, 500, None),
            ),
            (
                "every flag",
                vec![
                    "berth",
                    "--kubeconfig",
                    "kc.yaml",
                    "--context",
                    "prod",
                    "--page-size",
                    "10000",
                    "-o",
                    "snap.yaml",
                ],
                (
                    Some(PathBuf::from("kc.yaml")),
                    Some("prod".to_string()),
                    10_000,
                    Some(PathBuf::from("snap.yaml")),
                ),
            ),
            (
                "the long output flag",
                vec!["berth", "--output-file", "s.yaml", "--page-size", "1"],
                (None, None, 1, Some(PathBuf::from("s.yaml"))),
            ),
        ];
        for (name, argv, expected) in cases {
            let args = Cli::try_parse_from(&argv).map(|c| c.args);
            let parsed = args.as_ref().ok().map(|a| {
                (
                    a.cluster.kubeconfig.clone(),
                    a.cluster.context.clone(),
                    a.cluster.page_size,
                    a.output_file.clone(),
                )
            });
            assert_eq!(parsed, Some(expected), "{name}");
        }
    }

    #[test]
    fn invalid_flags_are_rejected() {
        for argv in [
            vec!["berth", "--page-size", "0"],
            vec!["berth", "--page-size", "10001"],
            vec!["berth", "--page-size", "-1"],
            vec!["berth", "-f", "a.yaml"],
            vec!["berth", "--output", "json"],
        ] {
            assert!(Cli::try_parse_from(&argv).is_err(), "{argv:?}");
        }
    }
}
