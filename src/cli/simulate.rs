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
use crate::simulate::controllers::ControllerOptions;
use crate::simulate::explain;
use crate::simulate::input::{self, ClusterInput, InputError};
use crate::simulate::live;

use super::snapshot::{ClusterArgs, read_live_cluster};
use crate::simulate::render;
use crate::simulate::report::Report;
use crate::simulate::run::{SimulateError, SimulateOptions, check_profiles, simulate_on_workers};

#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// YAML file with Nodes, Pods, SchedulerProfiles, ... (repeatable; `-` reads stdin).
    /// With --from-cluster, its objects replace the cluster's of the same kind, namespace
    /// and name, or are added.
    #[arg(
        short = 'f',
        long = "filename",
        value_name = "FILE",
        required_unless_present = "from_cluster"
    )]
    pub filenames: Vec<PathBuf>,
    /// Read the cluster from its API server, with your kubeconfig's credentials (lists
    /// only: nothing is written).
    #[arg(long)]
    pub from_cluster: bool,
    /// With --from-cluster: the kubeconfig file [default: KUBECONFIG, else
    /// ~/.kube/config, else the in-cluster account].
    #[arg(long, value_name = "FILE", requires = "from_cluster")]
    pub kubeconfig: Option<PathBuf>,
    /// With --from-cluster: the kubeconfig context [default: the current context].
    #[arg(long, value_name = "NAME", requires = "from_cluster")]
    pub context: Option<String>,
    /// Explain one pending pod, NAMESPACE/NAME: why it goes where it goes, or why it
    /// fits nowhere (every pending pod is still simulated, so the answer is the one the
    /// whole run gives).
    #[arg(long, value_name = "NAMESPACE/NAME")]
    pub pod: Option<String>,
    /// What-if: schedule every pending pod with this SchedulerProfile (by name) and list
    /// the pods whose outcome changes compared with their own schedulers.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
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
    /// Alpha feature gates of the simulated controllers, `NAME=true|false,...` as
    /// Kubernetes components take them. Known: `WorkloadWithJob` (the Job controller gives
    /// each Job a Workload and a PodGroup and puts its pods in it).
    #[arg(long, value_name = "GATES", value_parser = parse_feature_gates)]
    pub feature_gates: Option<ControllerOptions>,
}

/// `--feature-gates`: `NAME=BOOL` pairs, comma-separated; an unknown gate or value is an
/// error naming it.
fn parse_feature_gates(text: &str) -> Result<ControllerOptions, String> {
    let mut options = ControllerOptions::default();
    for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("{pair:?} is not NAME=true or NAME=false"))?;
        let value: bool = value
            .trim()
            .parse()
            .map_err(|_| format!("{name}: {value:?} is neither true nor false"))?;
        match name.trim() {
            "WorkloadWithJob" => options.workload_with_job = value,
            other => {
                return Err(format!(
                    "unknown feature gate {other:?}; berth simulate knows WorkloadWithJob"
                ));
            }
        }
    }
    Ok(options)
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
    let Some(runtime) = super::driver_runtime() else {
        return EXIT_INTERNAL;
    };
    let (cluster, warnings) = match load_input(&args, &runtime) {
        Ok(loaded) => loaded,
        Err(code) => return code,
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
    let target = match args.pod.as_deref().map(|text| pending_pod(&cluster, text)) {
        None => None,
        Some(Ok(target)) => Some(target),
        Some(Err(message)) => {
            eprintln!("error: {message}");
            return EXIT_INVALID_INPUT;
        }
    };
    let what_if = match args
        .profile
        .as_deref()
        .map(|name| scheduler_of(&cluster, name))
    {
        None => None,
        Some(Ok(scheduler)) => Some(scheduler),
        Some(Err(message)) => {
            eprintln!("error: {message}");
            return EXIT_INVALID_INPUT;
        }
    };
    let options = SimulateOptions {
        explain: args.explain || target.is_some(),
        seed: args.seed,
        // Threads beyond the node count would have no node to filter.
        parallelism: args
            .parallelism
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or_else(default_parallelism)
            .min(cluster.nodes.len().max(1)),
    };
    let run = |input: ClusterInput| {
        simulate_on_workers(
            &runtime,
            input,
            profiles.valid.clone(),
            registry,
            options.clone(),
        )
    };
    let result = match &what_if {
        None => run(cluster.clone()),
        Some(scheduler) => match run(cluster.clone()) {
            Ok(baseline) => run(redirect_pending(cluster.clone(), scheduler)).map(|mut report| {
                report.moved = report.moves_from(&baseline);
                report
            }),
            Err(error) => Err(error),
        },
    };
    match result {
        Ok(report) => {
            for warning in report.warnings() {
                warn(warning);
            }
            match &target {
                Some((namespace, name)) if args.output == OutputFormat::Table => {
                    let pod = report
                        .pods
                        .iter()
                        .find(|p| p.namespace == *namespace && p.name == *name);
                    match pod {
                        Some(pod) => super::write_stdout(
                            &explain::explain_pod(&report, pod, &cluster),
                            "the explanation",
                        ),
                        None => {
                            eprintln!(
                                "error: the simulation did not report pod {namespace}/{name}"
                            );
                            EXIT_INTERNAL
                        }
                    }
                }
                _ => print_report(&report, args.output),
            }
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

/// The simulated cluster: the `-f` files, or the API server's objects with the files on
/// top. An error has been printed when this returns the exit code.
fn load_input(
    args: &SimulateArgs,
    runtime: &tokio::runtime::Runtime,
) -> Result<(ClusterInput, Vec<input::InputWarning>), u8> {
    if !args.from_cluster {
        let controllers = args.feature_gates.unwrap_or_default();
        return input::load_files_with(&args.filenames, controllers)
            .map_err(|error| report_input_error(&error));
    }
    let cluster = ClusterArgs {
        kubeconfig: args.kubeconfig.clone(),
        context: args.context.clone(),
        page_size: live::DEFAULT_PAGE_SIZE,
    };
    // Prints the `error:` line, or a `warning:` line per kind it could not list.
    let read = read_live_cluster(runtime, &cluster)?;
    let served = read.serves_scheduling_pod_groups();
    let legacy_served = read.serves_legacy_workloads();
    let (mut input, warnings) = input::load_cluster(read.documents, &args.filenames)
        .map_err(|error| report_input_error(&error))?;
    input.pod_groups_not_served = !served;
    input.legacy_workloads_not_served = !legacy_served;
    Ok((input, warnings))
}

/// `NAMESPACE/NAME` of a pending pod of `cluster`, or why it is not one.
fn pending_pod(cluster: &ClusterInput, text: &str) -> Result<(String, String), String> {
    let Some((namespace, name)) = text
        .split_once('/')
        .filter(|(n, m)| !n.is_empty() && !m.is_empty())
    else {
        return Err(format!(
            "--pod {text:?}: expected NAMESPACE/NAME, e.g. default/web-0"
        ));
    };
    let named = |pod: &&k8s_openapi::api::core::v1::Pod| {
        pod.metadata.namespace.as_deref() == Some(namespace)
            && pod.metadata.name.as_deref() == Some(name)
    };
    if cluster.pending_pods().any(|pod| named(&pod)) {
        return Ok((namespace.to_string(), name.to_string()));
    }
    if let Some(pod) = cluster.running_pods().find(named) {
        let node = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .unwrap_or_default();
        return Err(format!(
            "pod {namespace}/{name} is not pending: it is bound to node {node}"
        ));
    }
    Err(format!("pod {namespace}/{name} is not in the cluster"))
}

/// The scheduler name of the SchedulerProfile named `name`.
fn scheduler_of(cluster: &ClusterInput, name: &str) -> Result<String, String> {
    let names: Vec<&str> = cluster.profiles.iter().filter_map(|p| p.name()).collect();
    cluster
        .profiles
        .iter()
        .find(|p| p.name() == Some(name))
        .map(|p| p.scheduler_name())
        .ok_or_else(|| {
            let known = if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            };
            format!("--profile {name}: no SchedulerProfile of that name (the input has: {known})")
        })
}

/// `cluster` with every pending pod handed to `scheduler`.
fn redirect_pending(mut cluster: ClusterInput, scheduler: &str) -> ClusterInput {
    for pod in &mut cluster.pods {
        if input::is_finished(pod) {
            continue;
        }
        if let Some(spec) = pod.spec.as_mut()
            && spec.node_name.as_deref().is_none_or(str::is_empty)
        {
            spec.scheduler_name = Some(scheduler.to_string());
        }
    }
    cluster
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
