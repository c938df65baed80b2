//! `kubectl berth`: the same binary installed as `kubectl-berth` (a copy or a link), which
//! kubectl's plugin mechanism runs for `kubectl berth ...`. The binary dispatches on the
//! name it was started as ([`is_kubectl_plugin`]), and the plugin's two short forms are
//! `berth simulate --from-cluster` underneath:
//!
//! - `kubectl berth why NAMESPACE/POD` (or `why POD -n NAMESPACE`): why a pending pod goes
//!   where it goes, or fits nowhere: `simulate --from-cluster --pod NAMESPACE/POD`.
//! - `kubectl berth what-if -f profile.yaml`: which pending pods another profile would
//!   place differently: `simulate --from-cluster -f profile.yaml --profile <its name>`.
//!
//! kubectl passes the user's environment, so `KUBECONFIG` is honoured as kubectl honours
//! it; `--kubeconfig` and `--context` may also be given after the subcommand.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::framework::Registry;
use crate::simulate::input;

use super::EXIT_INVALID_INPUT;
use super::simulate::{self, OutputFormat, SimulateArgs};

/// The executable name kubectl looks for on `PATH` for `kubectl berth`.
pub const PLUGIN_NAME: &str = "kubectl-berth";

/// Whether the process was started as the kubectl plugin (`kubectl-berth`, with or
/// without an extension).
pub fn is_kubectl_plugin(argv0: &OsString) -> bool {
    Path::new(argv0)
        .file_stem()
        .is_some_and(|stem| stem == PLUGIN_NAME)
}

#[derive(Debug, Parser)]
#[command(
    name = "kubectl berth",
    version,
    about = "Explain pending pods and try other scheduler profiles against the live cluster \
             (read-only: nothing is written to the cluster)"
)]
struct KubectlBerth {
    #[command(subcommand)]
    command: PluginCommand,
}

#[derive(Debug, Subcommand)]
enum PluginCommand {
    /// Why is this pod pending? Simulates the cluster's pending pods and explains this one.
    Why {
        /// The pod: NAMESPACE/NAME, or NAME with -n.
        #[arg(value_name = "POD")]
        pod: String,
        /// The pod's namespace when POD has none.
        #[arg(short = 'n', long, value_name = "NAMESPACE")]
        namespace: Option<String>,
        /// A SchedulerProfile to explain the pod with instead of its own scheduler.
        #[arg(long, value_name = "NAME")]
        profile: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// What would another profile change? Schedules every pending pod with the
    /// SchedulerProfile in FILE and lists the pods it would place differently.
    WhatIf {
        /// YAML with the SchedulerProfile to try (and any other objects to add on top of
        /// the cluster's); repeatable.
        #[arg(short = 'f', long = "filename", value_name = "FILE", required = true)]
        filenames: Vec<PathBuf>,
        /// The profile to try when FILE defines several.
        #[arg(long, value_name = "NAME")]
        profile: Option<String>,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Debug, Args)]
struct Common {
    /// The kubeconfig file [default: KUBECONFIG, else ~/.kube/config].
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context [default: the current context].
    #[arg(long, value_name = "NAME")]
    context: Option<String>,
    /// Output format: the explanation or table for people, or the simulate JSON report.
    #[arg(short, long, value_enum, default_value_t = OutputFormat::Table)]
    output: OutputFormat,
    /// Seed for breaking ties between equally scored nodes.
    #[arg(long, value_name = "N", default_value_t = 0)]
    seed: u64,
}

/// Runs `kubectl berth` with `args` (the process arguments, the program name first).
pub fn main(args: Vec<OsString>, registry: &Registry) -> ExitCode {
    let plugin = match KubectlBerth::try_parse_from(args) {
        Ok(plugin) => plugin,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() {
                EXIT_INVALID_INPUT
            } else {
                0
            });
        }
    };
    match simulate_args(plugin.command) {
        Ok(args) => simulate::run(args, registry),
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(EXIT_INVALID_INPUT)
        }
    }
}

/// The `berth simulate` command a plugin command stands for.
fn simulate_args(command: PluginCommand) -> Result<SimulateArgs, String> {
    let (filenames, pod, profile, common) = match command {
        PluginCommand::Why {
            pod,
            namespace,
            profile,
            common,
        } => {
            let pod = match (pod.split_once('/'), namespace) {
                (Some(_), Some(_)) => {
                    return Err(format!(
                        "give the namespace once: {pod:?} already has one, drop -n"
                    ));
                }
                (Some(_), None) => pod,
                (None, namespace) => format!(
                    "{}/{pod}",
                    namespace.as_deref().unwrap_or(input::DEFAULT_NAMESPACE)
                ),
            };
            (Vec::new(), Some(pod), profile, common)
        }
        PluginCommand::WhatIf {
            filenames,
            profile,
            common,
        } => {
            let profile = match profile {
                Some(profile) => profile,
                None => single_profile(&filenames)?,
            };
            (filenames, None, Some(profile), common)
        }
    };
    Ok(SimulateArgs {
        filenames,
        from_cluster: true,
        kubeconfig: common.kubeconfig,
        context: common.context,
        pod,
        profile,
        output: common.output,
        explain: false,
        seed: common.seed,
        parallelism: None,
        feature_gates: None,
    })
}

/// The name of the one SchedulerProfile `filenames` define.
fn single_profile(filenames: &[PathBuf]) -> Result<String, String> {
    let (cluster, _) = input::load_files(filenames).map_err(|error| error.to_string())?;
    let names: Vec<&str> = cluster.profiles.iter().filter_map(|p| p.name()).collect();
    match names.as_slice() {
        [one] => Ok(one.to_string()),
        [] => Err("the files define no SchedulerProfile to try".to_string()),
        several => Err(format!(
            "the files define several SchedulerProfiles ({}); choose one with --profile",
            several.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(argv: &[&str]) -> Result<SimulateArgs, String> {
        let plugin = KubectlBerth::try_parse_from(argv).map_err(|e| e.to_string())?;
        simulate_args(plugin.command)
    }

    #[test]
    fn dispatches_on_the_program_name() {
        for (argv0, plugin) in [
            ("kubectl-berth", true),
            ("/usr/local/bin/kubectl-berth", true),
            ("kubectl-berth.exe", true),
            ("berth", false),
            ("/usr/bin/kubectl", false),
        ] {
            assert_eq!(is_kubectl_plugin(&OsString::from(argv0)), plugin, "{argv0}");
        }
    }

    #[test]
    fn why_is_simulate_from_the_cluster_for_one_pod() {
        let cases = [
            (vec!["kubectl-berth", "why", "ml/train-0"], "ml/train-0"),
            (vec!["kubectl-berth", "why", "web"], "default/web"),
            (
                vec!["kubectl-berth", "why", "web", "-n", "shop"],
                "shop/web",
            ),
        ];
        for (argv, pod) in cases {
            let args = parse(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
            assert!(args.from_cluster, "{argv:?}");
            assert_eq!(args.pod.as_deref(), Some(pod), "{argv:?}");
            assert!(
                args.filenames.is_empty() && args.profile.is_none(),
                "{argv:?}"
            );
        }
        assert!(parse(&["kubectl-berth", "why", "a/b", "-n", "c"]).is_err());
        assert!(parse(&["kubectl-berth", "why"]).is_err());
    }

    #[test]
    fn what_if_names_the_profile_of_its_file() {
        let args = parse(&[
            "kubectl-berth",
            "what-if",
            "-f",
            "p.yaml",
            "--profile",
            "packed",
            "--context",
            "prod",
        ])
        .expect("parses");
        assert_eq!(args.profile.as_deref(), Some("packed"));
        assert_eq!(args.filenames, [PathBuf::from("p.yaml")]);
        assert_eq!(args.context.as_deref(), Some("prod"));
        assert!(args.from_cluster && args.pod.is_none());
        // Without --profile the file is read for its one profile; a missing file says so.
        let error = parse(&["kubectl-berth", "what-if", "-f", "/nonexistent/p.yaml"])
            .expect_err("a missing file");
        assert!(error.contains("/nonexistent/p.yaml"), "{error}");
        assert!(parse(&["kubectl-berth", "what-if"]).is_err());
    }
}
