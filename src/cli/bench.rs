//! `berth bench`: upstream's scheduler_perf workloads, generated in memory and scheduled
//! by the core `berth simulate` runs (see `docs/performance.md`).
//!
//! Exit codes: 0 when every workload's check passed; 1 when a check failed (or for an
//! internal error); 2 for bad input (unknown workload, a size the workload lacks, an
//! invalid `--profile`). The report goes to stdout; a progress line is drawn on stderr
//! only when stderr is a terminal.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, ValueEnum};

use super::{EXIT_INTERNAL, EXIT_INVALID_INPUT, EXIT_OK};
use crate::bench::report::{BenchReport, render_table};
use crate::bench::run::{Plan, RunOptions, run_workload};
use crate::bench::workload::{Counts, MAX_NODES, MAX_PODS, Size, Workload};
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
    /// …/half_500nodes or …/full_500nodes), SchedulingWithExtendedResource,
    /// GangScheduling and BasicScheduling (their six 5000Nodes workloads; one of them, or
    /// of their 10- and 100-node ones, by upstream's name, GangScheduling/10Nodes_3Gangs),
    /// SchedulingDaemonset, PreemptionAsync, Unschedulable, SchedulingWithMixedChurn,
    /// SchedulingWhileGated, SchedulingDeletedPodsWithFinalizers, HostPortConflict and
    /// ResourceSaturation (their performance workloads at 5000Nodes, one smaller at
    /// 500Nodes). A workload named TestCase/workload runs at its own size, whatever
    /// --size says.
    #[arg(long = "workload", value_name = "NAME", default_value = "all")]
    pub workloads: Vec<String>,
    /// Upstream's size: nodes, init pods and measured pods as performance-config.yaml sets
    /// them (5000Nodes_10000Pods and 5000Nodes_50000Pods exist for SchedulingBasic only,
    /// the DRA workloads at 500Nodes only).
    #[arg(long, value_enum, default_value_t = SizeArg::Nodes500)]
    pub size: SizeArg,
    /// Nodes instead of the size's (the init pods keep their ratio to the nodes; the DRA
    /// workloads' init claims and SchedulingWithExtendedResource's pods follow upstream's
    /// smaller sizes, see docs/performance.md).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=MAX_NODES))]
    pub nodes: Option<u64>,
    /// Measured pods instead of the size's (pods kept pending in a steady-state run; a
    /// whole number of groups for GangScheduling and BasicScheduling).
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
    #[value(name = "5000Nodes_50000Pods")]
    Nodes5000Pods50000,
}

impl From<SizeArg> for Size {
    fn from(size: SizeArg) -> Size {
        match size {
            SizeArg::Nodes500 => Size::Nodes500,
            SizeArg::Nodes5000 => Size::Nodes5000,
            SizeArg::Nodes5000Pods10000 => Size::Nodes5000Pods10000,
            SizeArg::Nodes5000Pods50000 => Size::Nodes5000Pods50000,
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
        let profile = match workload_profile(plan, &profile, args.profile.is_some(), registry) {
            Ok(profile) => profile,
            Err(lines) => {
                for line in lines {
                    eprintln!("error: {line}");
                }
                return EXIT_INTERNAL;
            }
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

/// The workloads to run at their sizes, in `Workload::all()` order, each once (also the
/// benchmark of the live path's choice). `all` runs the workloads upstream defines at the
/// size, and so does a test case's name (GangScheduling: its variants at the size); a
/// workload named on its own that lacks the size is an error. A variant named as
/// `TestCase/workload` runs at its own size ([`Workload::own_counts`]).
pub fn plans(args: &BenchArgs) -> Result<Vec<Plan>, String> {
    let size = Size::from(args.size);
    // Each chosen workload with its counts before `--nodes` and `--pods`.
    let mut chosen: Vec<(Workload, Counts)> = Vec::new();
    for name in &args.workloads {
        if name.eq_ignore_ascii_case("all") {
            chosen.extend(Workload::all().filter_map(|w| Some((w, w.counts(size)?))));
            continue;
        }
        let workloads = Workload::parse(name);
        if workloads.is_empty() {
            let mut names: Vec<&str> = Workload::all().map(|w| w.name()).collect();
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
        if Workload::is_variant_name(name) {
            chosen.extend(workloads.iter().filter_map(|w| Some((*w, w.own_counts()?))));
            continue;
        }
        let at_size: Vec<(Workload, Counts)> = workloads
            .iter()
            .filter_map(|w| Some((*w, w.counts(size)?)))
            .collect();
        if at_size.is_empty() {
            return Err(size_error(&workloads, size));
        }
        chosen.extend(at_size);
    }
    let custom = args.nodes.is_some() || args.pods.is_some();
    let mut plans = Vec::new();
    for workload in Workload::all() {
        let Some((_, counts)) = chosen.iter().find(|(w, _)| *w == workload) else {
            continue;
        };
        let counts = workload.overridden(*counts, args.nodes, args.pods);
        if let Some((_, per_group)) = workload.pod_groups()
            && !counts.measure_pods.is_multiple_of(per_group)
        {
            return Err(format!(
                "--pods: Invalid value: {}: {workload} {} creates groups of {per_group} pods, \
                 so it takes a multiple of {per_group}",
                counts.measure_pods,
                workload.size_name(size)
            ));
        }
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

/// Why none of `workloads` (one workload, or a test case's variants) runs at `size`: the
/// sizes that have them, and the variants' own names.
fn size_error(workloads: &[Workload], size: Size) -> String {
    let sizes: Vec<&str> = Size::ALL
        .into_iter()
        .filter(|s| workloads.iter().any(|w| w.counts(*s).is_some()))
        .map(Size::name)
        .collect();
    let variants: Vec<String> = workloads
        .iter()
        .filter_map(|w| Some(format!("{w}/{}", w.variant()?)))
        .collect();
    let mut instead = vec![sizes.join(" or ")];
    if !variants.is_empty() {
        instead.push(format!(
            "name one of its workloads: {}",
            variants.join(", ")
        ));
    }
    format!(
        "--size: Invalid value: {:?}: upstream does not define {} at this size (use {})",
        size.name(),
        workloads.first().map(|w| w.name()).unwrap_or_default(),
        instead.join(", or ")
    )
}

/// Upstream's profile for its `batching/` test cases (`scheduler-config-no-topology.yaml`):
/// the default plugins without default topology spreading, which no pod could be signed
/// under.
const NO_TOPOLOGY_PROFILE: &str = "\
apiVersion: berth.dev/v1alpha1
kind: SchedulerProfile
metadata:
  name: default-scheduler
spec:
  pluginConfig:
    podTopologySpread:
      defaultingType: List
      defaultConstraints: []
";

/// The profile `plan` runs with: `profile`, except that upstream's `batching/` test
/// cases run upstream's profile for them ([`NO_TOPOLOGY_PROFILE`]) unless `--profile`
/// named one (`custom`), and their `_OpportunisticBatchingDisabled` workloads turn
/// batching off, as upstream's gate does.
fn workload_profile(
    plan: &Plan,
    profile: &ValidProfile,
    custom: bool,
    registry: &Registry,
) -> Result<ValidProfile, Vec<String>> {
    let Some(batching) = plan.workload.batching() else {
        return Ok(profile.clone());
    };
    let mut profile = if custom {
        profile.clone()
    } else {
        let (input, _) = input::load_str(
            Path::new("scheduler-config-no-topology.yaml"),
            NO_TOPOLOGY_PROFILE,
        )
        .map_err(|e| e.lines())?;
        let checked = check_profiles(&input.profiles, registry);
        if !checked.invalid.is_empty() {
            return Err(checked.invalid.iter().flat_map(|p| p.lines()).collect());
        }
        checked
            .valid
            .into_iter()
            .next()
            .ok_or_else(|| vec!["upstream's batching profile did not validate".to_string()])?
    };
    if !batching {
        profile.profile.spec.opportunistic_batching = Some(false);
        profile.resolved.opportunistic_batching = false;
    }
    Ok(profile)
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
    fn all_runs_every_workload_with_a_500_node_size_by_default() {
        let plans = parse(&["berth"]).and_then(|a| plans(&a).ok());
        // The 14 workloads of the earlier test cases but the podgroup/ ones, which upstream
        // runs at 5000 nodes (or 10 and 100 in its integration tests), and one each of the
        // eight newest test cases.
        let names: Option<Vec<String>> = plans.map(|p| {
            p.iter()
                .map(|p| format!("{} {}", p.workload, p.size))
                .collect()
        });
        let names = names.unwrap_or_default();
        assert_eq!(names.len(), 14 + 8, "{names:?}");
        assert!(
            names.contains(&"SchedulingWhileGated 1Node_10GatedPods".to_string()),
            "{names:?}"
        );
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
        // 500 nodes only; SchedulingWithExtendedResource at its threshold's size; the six
        // performance workloads of GangScheduling and of BasicScheduling.
        // And the 20 performance workloads of the newest test cases.
        let got = names(&["berth", "--size", "5000Nodes"]).unwrap_or_default();
        assert_eq!(got.len(), 22 + 20, "{got:?}");
        assert_eq!(
            got.get(9).map(String::as_str),
            Some("SchedulingWithExtendedResource 5000pods_5000nodes_DRAExtendedResourceEnabled")
        );
        assert_eq!(
            got.get(21).map(String::as_str),
            Some("BasicScheduling 5000Nodes_9Groups_9000Pods_1000PerGroup")
        );
        assert_eq!(
            got.last().map(String::as_str),
            Some("ResourceSaturation 20000Nodes_20000Pods_OpportunisticBatchingDisabled")
        );
        assert!(
            !got.iter().any(|n| n.contains("ResourceClaimTemplate")),
            "{got:?}"
        );
        assert_eq!(
            names(&["berth", "--size", "5000Nodes_10000Pods"]),
            Some(vec!["SchedulingBasic 5000Nodes_10000Pods".to_string()])
        );
        assert_eq!(
            names(&["berth", "--size", "5000Nodes_50000Pods"]),
            Some(vec!["SchedulingBasic 5000Nodes_50000Pods".to_string()])
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
    fn group_workloads_run_by_test_case_at_the_size_or_by_name_at_their_own() {
        let plans = |argv: &[&str]| -> Result<Vec<(String, Counts)>, String> {
            let argv: Vec<&str> = std::iter::once("berth")
                .chain(argv.iter().copied())
                .collect();
            let args = parse(&argv).ok_or("clap refused")?;
            Ok(plans(&args)?
                .into_iter()
                .map(|p| (format!("{} {}", p.workload, p.size), p.counts))
                .collect())
        };
        let names = |got: &[(String, Counts)]| -> Vec<String> {
            got.iter().map(|(name, _)| name.clone()).collect()
        };
        let got = plans(&["--workload", "GangScheduling", "--size", "5000Nodes"]);
        assert_eq!(
            got.as_deref().map(names),
            Ok(vec![
                "GangScheduling 5000Nodes_1000Gangs_3000Pods".to_string(),
                "GangScheduling 5000Nodes_2000Gangs_6000Pods".to_string(),
                "GangScheduling 5000Nodes_3000Gangs_9000Pods".to_string(),
                "GangScheduling 5000Nodes_3Gangs_3000Pods_1000PerGroup".to_string(),
                "GangScheduling 5000Nodes_6Gangs_6000Pods_1000PerGroup".to_string(),
                "GangScheduling 5000Nodes_9Gangs_9000Pods_1000PerGroup".to_string(),
            ])
        );

        // Named by upstream's workload name: its own size, whatever --size says.
        for size in ["500Nodes", "5000Nodes"] {
            let got = plans(&[
                "--workload",
                "gangscheduling/10nodes_3gangs",
                "--size",
                size,
            ]);
            let got = got.unwrap_or_default();
            assert_eq!(names(&got), ["GangScheduling 10Nodes_3Gangs"], "{size}");
            assert_eq!((got[0].1.nodes, got[0].1.measure_pods), (10, 9), "{size}");
        }
        let got = plans(&[
            "--workload",
            "BasicScheduling/5000Nodes_3Groups_3000Pods_1000PerGroup",
        ])
        .unwrap_or_default();
        assert_eq!(
            got.iter()
                .map(|(_, c)| (c.nodes, c.init_pods, c.measure_pods))
                .collect::<Vec<_>>(),
            [(5000, 0, 3000)]
        );

        // The test case at a size it lacks: the sizes that have it, and its names.
        let error = plans(&["--workload", "GangScheduling"])
            .err()
            .unwrap_or_default();
        assert!(
            error.contains("(use 5000Nodes, or name one of its"),
            "{error}"
        );
        assert!(error.contains("GangScheduling/10Nodes_3Gangs"), "{error}");

        // --pods: whole groups only.
        let got = plans(&[
            "--workload",
            "GangScheduling/100Nodes_10Gangs",
            "--pods",
            "12",
        ]);
        assert_eq!(
            got.map(|g| g.iter().map(|(n, c)| (n.clone(), c.measure_pods)).collect()),
            Ok(vec![(
                "GangScheduling 100Nodes_10Gangs (custom)".to_string(),
                12
            )])
        );
        let error = plans(&[
            "--workload",
            "GangScheduling/100Nodes_10Gangs",
            "--pods",
            "10",
        ])
        .err()
        .unwrap_or_default();
        assert!(error.contains("takes a multiple of 3"), "{error}");
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
