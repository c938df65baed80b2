//! `berth bench`: upstream's scheduler_perf workloads, generated in memory and scheduled
//! by the core `berth simulate` runs (see `docs/performance.md`).
//!
//! Exit codes: 0 when every workload's check passed; 1 when a check failed (or for an
//! internal error); 2 for bad input (unknown workload, a size the workload lacks, an
//! invalid `--profile`). The report goes to stdout; a progress line is drawn on stderr
//! only when stderr is a terminal.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, ValueEnum};

use super::{EXIT_INTERNAL, EXIT_INVALID_INPUT, EXIT_OK};
use crate::bench::report::{BenchReport, render_table};
use crate::bench::run::{Plan, RunOptions, run_workload};
use crate::bench::workload::{MAX_NODES, MAX_PODS, Size, Workload};
use crate::framework::parallel::{MAX_PARALLELISM, default_parallelism};
use crate::framework::{Parallelizer, Registry};
use crate::simulate::input;
use crate::simulate::run::{DEFAULT_SCHEDULER_NAME, ValidProfile, check_profiles};

/// Exit code: a workload's check failed.
pub const EXIT_CHECK_FAILED: u8 = 1;

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Workload to run (repeatable), or `all` (every workload upstream defines at the
    /// size): SchedulingBasic, TopologySpreading, PreferredTopologySpreading,
    /// SchedulingPodAntiAffinity, SchedulingPodAffinity, SchedulingPreferredPodAffinity,
    /// SchedulingPreferredPodAntiAffinity, SchedulingNodeAffinity, PreemptionBasic,
    /// SchedulingWithResourceClaimTemplate (500Nodes only),
    /// SteadyStateClusterResourceClaimTemplate (its three variants, 500Nodes only, 10 s
    /// each; one alone as SteadyStateClusterResourceClaimTemplate/empty_500nodes,
    /// …/half_500nodes or …/full_500nodes), SchedulingWithExtendedResource.
    #[arg(long = "workload", value_name = "NAME", default_value = "all")]
    pub workloads: Vec<String>,
    /// Upstream's size: nodes, init pods and measured pods as performance-config.yaml sets
    /// them (5000Nodes_10000Pods exists for SchedulingBasic only, the DRA workloads at
    /// 500Nodes only).
    #[arg(long, value_enum, default_value_t = SizeArg::Nodes500)]
    pub size: SizeArg,
    /// Nodes instead of the size's (the init pods keep their ratio to the nodes; the DRA
    /// workloads' init claims and SchedulingWithExtendedResource's pods follow upstream's
    /// smaller sizes, see docs/performance.md).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=MAX_NODES))]
    pub nodes: Option<u64>,
    /// Measured pods instead of the size's (pods kept pending in a steady-state run).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=MAX_PODS))]
    pub pods: Option<u64>,
    /// A YAML file with one SchedulerProfile to bench instead of the default profile.
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,
    /// Seed for breaking ties between equally scored nodes.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Threads that filter and score nodes, 1 to 256 [default: the number of CPUs]; never
    /// more than the cluster has nodes.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=MAX_PARALLELISM as u64))]
    pub parallelism: Option<u64>,
}

/// `--size` values, spelled as upstream names its workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SizeArg {
    #[value(name = "500Nodes")]
    Nodes500,
    #[value(name = "5000Nodes")]
    Nodes5000,
    #[value(name = "5000Nodes_10000Pods")]
    Nodes5000Pods10000,
}

impl From<SizeArg> for Size {
    fn from(size: SizeArg) -> Size {
        match size {
            SizeArg::Nodes500 => Size::Nodes500,
            SizeArg::Nodes5000 => Size::Nodes5000,
            SizeArg::Nodes5000Pods10000 => Size::Nodes5000Pods10000,
        }
    }
}

/// How the report is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// One row per workload.
    Table,
    /// The JSON report documented in docs/performance.md.
    Json,
}

/// Runs `berth bench` and returns its exit code.
pub fn run(args: BenchArgs, registry: &Registry) -> ExitCode {
    ExitCode::from(bench_command(args, registry))
}

fn bench_command(args: BenchArgs, registry: &Registry) -> u8 {
    let plans = match plans(&args) {
        Ok(plans) => plans,
        Err(message) => {
            eprintln!("error: {message}");
            return EXIT_INVALID_INPUT;
        }
    };
    let profile = match profile(args.profile.as_ref(), registry) {
        Ok(profile) => profile,
        Err(lines) => {
            for line in lines {
                eprintln!("error: {line}");
            }
            return EXIT_INVALID_INPUT;
        }
    };
    let Some(runtime) = super::driver_runtime() else {
        return EXIT_INTERNAL;
    };
    let mut report = BenchReport {
        passed: true,
        workloads: Vec::new(),
    };
    let mut workers: Vec<(usize, Arc<Parallelizer>)> = Vec::new();
    for plan in &plans {
        // Threads beyond the node count would have no node to filter.
        let parallelism = args
            .parallelism
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or_else(default_parallelism)
            .min(
                usize::try_from(plan.counts.nodes)
                    .unwrap_or(usize::MAX)
                    .max(1),
            );
        // Workloads of the same degree share their workers: threads started per workload
        // would each leave an allocator arena behind and inflate the next one's peak RSS.
        let parallelizer = match workers.iter().find(|(degree, _)| *degree == parallelism) {
            Some((_, parallelizer)) => parallelizer.clone(),
            None => match Parallelizer::new(parallelism) {
                Ok(parallelizer) => {
                    let parallelizer = Arc::new(parallelizer);
                    workers.push((parallelism, parallelizer.clone()));
                    parallelizer
                }
                Err(error) => {
                    eprintln!("error: {error}");
                    return EXIT_INTERNAL;
                }
            },
        };
        let options = RunOptions {
            seed: args.seed,
            parallelizer: parallelizer.clone(),
            progress: std::io::stderr().is_terminal(),
        };
        // The whole loop on a worker: see `framework::parallel`.
        let run = || runtime.block_on(run_workload(plan, &profile, registry, &options));
        match parallelizer.run(run) {
            Ok(workload) => {
                report.passed &= workload.check.passed;
                report.workloads.push(workload);
            }
            Err(error) => {
                eprintln!("error: {} {}: {error}", plan.workload, plan.size);
                return if error.is_input_error() {
                    EXIT_INVALID_INPUT
                } else {
                    EXIT_INTERNAL
                };
            }
        }
    }
    let code = print_report(&report, args.output);
    match (code, report.passed) {
        (EXIT_OK, false) => EXIT_CHECK_FAILED,
        (code, _) => code,
    }
}

/// The workloads to run at their sizes, in `Workload::ALL` order, each once (also the
/// benchmark of the live path's choice). `all` runs the workloads upstream defines at the
/// size; a workload named on its own that lacks the size is an error.
pub fn plans(args: &BenchArgs) -> Result<Vec<Plan>, String> {
    let size = Size::from(args.size);
    let mut chosen = Vec::new();
    for name in &args.workloads {
        if name.eq_ignore_ascii_case("all") {
            chosen.extend(
                Workload::ALL
                    .into_iter()
                    .filter(|w| w.counts(size).is_some()),
            );
            continue;
        }
        let workloads = Workload::parse(name);
        if workloads.is_empty() {
            let mut names: Vec<&str> = Workload::ALL.iter().map(|w| w.name()).collect();
            names.dedup();
            return Err(format!(
                "--workload: Unsupported value: {name:?}: supported values: \"all\", {}",
                names
                    .iter()
                    .map(|n| format!("{n:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        chosen.extend(workloads);
    }
    let custom = args.nodes.is_some() || args.pods.is_some();
    let mut plans = Vec::new();
    for workload in Workload::ALL.into_iter().filter(|w| chosen.contains(w)) {
        let Some(counts) = workload.counts(size) else {
            let sizes: Vec<&str> = [Size::Nodes500, Size::Nodes5000, Size::Nodes5000Pods10000]
                .into_iter()
                .filter(|s| workload.counts(*s).is_some())
                .map(Size::name)
                .collect();
            return Err(format!(
                "--size: Invalid value: {:?}: upstream does not define {workload} at this \
                 size (use {})",
                size.name(),
                sizes.join(" or ")
            ));
        };
        let counts = workload.overridden(counts, args.nodes, args.pods);
        if workload == Workload::SchedulingWithExtendedResource
            && counts.measure_pods > counts.nodes
        {
            return Err(format!(
                "--pods: Invalid value: {}: {workload}'s pod i fits node i only, so it has \
                 at most as many pods as nodes ({})",
                counts.measure_pods, counts.nodes
            ));
        }
        let name = workload.size_name(size);
        plans.push(Plan {
            workload,
            size: if custom {
                format!("{name} (custom)")
            } else {
                name.to_string()
            },
            counts,
        });
    }
    Ok(plans)
}

/// The profile to bench: the default profile, or the one SchedulerProfile of `path`
/// validated as `berth simulate` validates profiles.
fn profile(path: Option<&PathBuf>, registry: &Registry) -> Result<ValidProfile, Vec<String>> {
    let documents = match path {
        None => Vec::new(),
        Some(path) => {
            let (input, _) =
                input::load_files(std::slice::from_ref(path)).map_err(|e| e.lines())?;
            if input.profiles.len() != 1 || !input.nodes.is_empty() || !input.pods.is_empty() {
                return Err(vec![format!(
                    "{}: --profile takes a file with exactly one SchedulerProfile and no \
                     other objects; it holds {} SchedulerProfiles, {} Nodes and {} Pods",
                    path.display(),
                    input.profiles.len(),
                    input.nodes.len(),
                    input.pods.len()
                )]);
            }
            input.profiles
        }
    };
    let wanted = documents.first().map_or_else(
        || DEFAULT_SCHEDULER_NAME.to_string(),
        |d| d.scheduler_name(),
    );
    let checked = check_profiles(&documents, registry);
    if !checked.invalid.is_empty() {
        return Err(checked.invalid.iter().flat_map(|p| p.lines()).collect());
    }
    for warning in &checked.warnings {
        eprintln!("warning: {warning}");
    }
    checked
        .valid
        .into_iter()
        .find(|p| p.profile.scheduler_name() == wanted)
        .ok_or_else(|| vec![format!("no valid profile serves schedulerName {wanted:?}")])
}

fn print_report(report: &BenchReport, format: OutputFormat) -> u8 {
    super::print_report(report, format == OutputFormat::Json, render_table)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::bench::workload::Counts;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: BenchArgs,
    }

    fn parse(argv: &[&str]) -> Option<BenchArgs> {
        Cli::try_parse_from(argv).map(|c| c.args).ok()
    }

    /// A workload with its nodes, init pods and measured pods.
    type Planned = (Workload, u64, u64, u64);

    #[test]
    fn workloads_and_sizes_select_upstreams_counts() {
        let cases: [(&str, &[&str], Vec<Planned>); 4] = [
            (
                "one workload at 5000Nodes",
                &["--workload", "SchedulingBasic", "--size", "5000Nodes"],
                vec![(Workload::SchedulingBasic, 5000, 1000, 1000)],
            ),
            (
                "repeated and duplicated, run once each in the standard order",
                &[
                    "--workload",
                    "SchedulingNodeAffinity",
                    "--workload",
                    "schedulingbasic",
                    "--workload",
                    "SchedulingBasic",
                ],
                vec![
                    (Workload::SchedulingBasic, 500, 500, 1000),
                    (Workload::SchedulingNodeAffinity, 500, 500, 1000),
                ],
            ),
            (
                "the threshold size",
                &[
                    "--workload",
                    "SchedulingBasic",
                    "--size",
                    "5000Nodes_10000Pods",
                ],
                vec![(Workload::SchedulingBasic, 5000, 1000, 10_000)],
            ),
            (
                "overrides",
                &[
                    "--workload",
                    "SchedulingPodAntiAffinity",
                    "--nodes",
                    "50",
                    "--pods",
                    "40",
                ],
                vec![(Workload::SchedulingPodAntiAffinity, 50, 10, 40)],
            ),
        ];
        for (name, flags, want) in cases {
            let argv: Vec<&str> = std::iter::once("berth")
                .chain(flags.iter().copied())
                .collect();
            let args = parse(&argv);
            let got: Option<Vec<Planned>> = args.and_then(|a| {
                plans(&a).ok().map(|plans| {
                    plans
                        .iter()
                        .map(|p| {
                            let c = p.counts;
                            (p.workload, c.nodes, c.init_pods, c.measure_pods)
                        })
                        .collect()
                })
            });
            assert_eq!(got, Some(want), "{name}");
        }
    }

    #[test]
    fn all_runs_every_workload_by_default() {
        let plans = parse(&["berth"]).and_then(|a| plans(&a).ok());
        assert_eq!(plans.map(|p| p.len()), Some(Workload::ALL.len()));
    }

    #[test]
    fn all_runs_the_workloads_upstream_defines_at_the_size() {
        let names = |argv: &[&str]| -> Option<Vec<String>> {
            let plans = parse(argv).and_then(|a| plans(&a).ok())?;
            Some(
                plans
                    .iter()
                    .map(|p| format!("{} {}", p.workload, p.size))
                    .collect(),
            )
        };
        // At 5000Nodes: every workload but the four DRA ones, which upstream runs at
        // 500 nodes only; SchedulingWithExtendedResource at its threshold's size.
        let got = names(&["berth", "--size", "5000Nodes"]).unwrap_or_default();
        assert_eq!(got.len(), 10, "{got:?}");
        assert_eq!(
            got.last().map(String::as_str),
            Some("SchedulingWithExtendedResource 5000pods_5000nodes_DRAExtendedResourceEnabled")
        );
        assert!(
            !got.iter().any(|n| n.contains("ResourceClaimTemplate")),
            "{got:?}"
        );
        assert_eq!(
            names(&["berth", "--size", "5000Nodes_10000Pods"]),
            Some(vec!["SchedulingBasic 5000Nodes_10000Pods".to_string()])
        );
    }

    #[test]
    fn dra_workloads_are_named_as_perf_dash_names_them() {
        let plans = |argv: &[&str]| -> Vec<(String, String, Counts)> {
            let argv: Vec<&str> = std::iter::once("berth")
                .chain(argv.iter().copied())
                .collect();
            parse(&argv)
                .and_then(|a| plans(&a).ok())
                .unwrap_or_default()
                .into_iter()
                .map(|p| (p.workload.to_string(), p.size, p.counts))
                .collect()
        };
        let steady = plans(&["--workload", "SteadyStateClusterResourceClaimTemplate"]);
        let sizes: Vec<&str> = steady.iter().map(|(_, size, _)| size.as_str()).collect();
        assert_eq!(sizes, ["empty_500nodes", "half_500nodes", "full_500nodes"]);
        let init_claims: Vec<u64> = steady.iter().map(|(_, _, c)| c.init_claims).collect();
        assert_eq!(init_claims, [0, 2500, 4990]);

        let one = plans(&[
            "--workload",
            "SteadyStateClusterResourceClaimTemplate/full_500nodes",
            "--nodes",
            "2",
        ]);
        assert_eq!(one.len(), 1);
        let (workload, size, counts) = &one[0];
        assert_eq!(workload, "SteadyStateClusterResourceClaimTemplate");
        assert_eq!(size, "full_500nodes (custom)");
        assert_eq!(
            (counts.nodes, counts.init_claims, counts.measure_pods),
            (2, 10, 10)
        );

        let burst = plans(&["--workload", "SchedulingWithResourceClaimTemplate"]);
        assert_eq!(burst.len(), 1);
        assert_eq!(burst[0].1, "5000pods_500nodes");
    }

    #[test]
    fn bad_values_are_rejected() {
        let clap_rejects = [
            vec!["berth", "--nodes", "0"],
            vec!["berth", "--pods", "0"],
            vec!["berth", "--pods", "1000000000"],
            vec!["berth", "--nodes", "1000000"],
            vec!["berth", "--size", "50Nodes"],
            vec!["berth", "--parallelism", "0"],
            vec!["berth", "-o", "yaml"],
        ];
        for argv in clap_rejects {
            assert!(parse(&argv).is_none(), "{argv:?}");
        }
        let plan_rejects = [
            vec!["berth", "--workload", "SchedulingSecrets"],
            vec![
                "berth",
                "--workload",
                "TopologySpreading",
                "--size",
                "5000Nodes_10000Pods",
            ],
            vec![
                "berth",
                "--workload",
                "SchedulingWithResourceClaimTemplate",
                "--size",
                "5000Nodes",
            ],
            vec![
                "berth",
                "--workload",
                "SchedulingWithExtendedResource",
                "--nodes",
                "10",
                "--pods",
                "11",
            ],
        ];
        for argv in plan_rejects {
            let args = parse(&argv);
            assert!(args.is_some(), "{argv:?} parses");
            assert!(args.is_some_and(|a| plans(&a).is_err()), "{argv:?}");
        }
    }
}
