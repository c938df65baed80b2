//! The benchmark of the live path: scheduler_perf's workloads through an API server and
//! a real scheduler process (see `live` and docs/performance.md, "Through the API" and
//! "Side by side with kube-scheduler").
//!
//! `cargo bench --bench api -- [--workload NAME|all] [--size 500Nodes|5000Nodes]
//! [--nodes N] [--pods N] [--apiserver test|real] [--scheduler berth|kube-scheduler|both]
//! [--repeat N] [-o table|json]`. `--scheduler both` (on the real API server) runs each
//! workload with kube-scheduler and with berth on fresh identical clusters, alternating
//! which goes first when repeated, and prints their ratios. `cargo bench` builds this
//! binary and `berth` with the bench profile (release settings), so the berth it starts
//! is the optimized one. Exits 1 when a workload's check fails or a run errs, 2 for bad
//! arguments. Run without the `--bench` that `cargo bench` passes (as `cargo test
//! --all-targets` runs it), it does nothing.

#[path = "api/live.rs"]
mod live;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use berth::bench::report::{mebibytes, milliseconds, render_columns};
use berth::cli::bench::{BenchArgs, OutputFormat, SizeArg, plans};
use berth::framework::parallel::default_parallelism;
use clap::{Parser, ValueEnum};
use serde::Serialize;

use live::{ApiServerKind, LiveOptions, LiveReport, SchedulerKind, run_live};

/// `--scheduler`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SchedulerArg {
    Berth,
    KubeScheduler,
    /// kube-scheduler and berth, one after the other on fresh clusters.
    Both,
}

#[derive(Debug, Parser)]
#[command(
    name = "api",
    about = "scheduler_perf's workloads through the API and `berth run`"
)]
struct Args {
    /// Workload to run (repeatable), or `all`.
    #[arg(
        long = "workload",
        value_name = "NAME",
        default_value = "SchedulingBasic"
    )]
    workloads: Vec<String>,
    /// Upstream's size.
    #[arg(long, value_enum, default_value_t = SizeArg::Nodes500)]
    size: SizeArg,
    /// Nodes instead of the size's (the init pods keep their ratio to the nodes).
    #[arg(long, value_name = "N")]
    nodes: Option<u64>,
    /// Measured pods instead of the size's.
    #[arg(long, value_name = "N")]
    pods: Option<u64>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = OutputFormat::Table)]
    output: OutputFormat,
    /// `berth run --seed`.
    #[arg(long, value_name = "N", default_value_t = 0)]
    seed: u64,
    /// `berth run --parallelism` [default: berth's, the number of CPUs].
    #[arg(long, value_name = "N")]
    parallelism: Option<u64>,
    /// Create requests in flight at once.
    #[arg(long, value_name = "N", default_value_t = 32)]
    in_flight: usize,
    /// Seconds every wait (profile Ready, a phase's pods bound) may take.
    #[arg(long, value_name = "SECONDS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    timeout: u64,
    /// The API server the pods go through.
    #[arg(long, value_enum, default_value_t = ApiServerKind::Test)]
    apiserver: ApiServerKind,
    /// The scheduler that binds them; kube-scheduler and both need `--apiserver real`.
    #[arg(long, value_enum, default_value_t = SchedulerArg::Berth)]
    scheduler: SchedulerArg,
    /// Runs of each workload (with `--scheduler both`, pairs; the first scheduler
    /// alternates).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100))]
    repeat: u64,
    /// `cargo bench` passes `--bench` to benchmarks without the default harness.
    #[arg(long, hide = true)]
    bench: bool,
}

/// The JSON report.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    passed: bool,
    berth: PathBuf,
    cpus: usize,
    /// The 1-minute load average before the first run (Linux), to judge the figures by.
    load_average: Option<f64>,
    workloads: Vec<LiveReport>,
    /// berth's figures over kube-scheduler's, per workload (`--scheduler both`).
    ratios: Vec<Ratios>,
}

/// berth over kube-scheduler for one workload, each figure the mean over the repeats.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Ratios {
    workload: String,
    size: String,
    runs: usize,
    /// SchedulingThroughput average (higher is better for berth).
    throughput: Option<f64>,
    /// Create-to-bound p50 and p99 (lower is better).
    create_to_bound_p50: Option<f64>,
    create_to_bound_p99: Option<f64>,
    /// The scheduler's CPU seconds in the measured phase (lower is better).
    cpu_seconds: Option<f64>,
    /// The scheduler's peak RSS (lower is better).
    peak_rss: Option<f64>,
}

fn main() -> ExitCode {
    // `cargo test --all-targets` runs this binary too, without `--bench` and with libtest's
    // arguments; tests/bench_api.rs is what runs this code in the test suite.
    if !std::env::args().skip(1).any(|arg| arg == "--bench") {
        eprintln!("api: not under `cargo bench`; skipped (tests/bench_api.rs runs this code)");
        return ExitCode::SUCCESS;
    }
    let args = Args::parse();
    let bench_args = BenchArgs {
        workloads: args.workloads.clone(),
        size: args.size,
        nodes: args.nodes,
        pods: args.pods,
        profile: None,
        output: args.output,
        seed: args.seed,
        parallelism: args.parallelism,
    };
    let plans = match plans(&bench_args) {
        Ok(plans) => plans,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    // A workload named on its own that cannot run through the API is an error; `all`
    // leaves such workloads out.
    let named_all = args.workloads.iter().any(|w| w.eq_ignore_ascii_case("all"));
    let mut supported = Vec::new();
    for plan in plans {
        match live::unsupported(plan.workload) {
            None => supported.push(plan),
            Some(reason) if named_all => eprintln!("skipped: {reason}"),
            Some(reason) => {
                eprintln!("error: --workload: {reason}");
                return ExitCode::from(2);
            }
        }
    }
    let plans = supported;
    let apiserver = args.apiserver;
    if apiserver == ApiServerKind::Test && args.scheduler != SchedulerArg::Berth {
        eprintln!("error: --scheduler: kube-scheduler runs against --apiserver real only");
        return ExitCode::from(2);
    }
    let options = LiveOptions {
        berth: PathBuf::from(env!("CARGO_BIN_EXE_berth")),
        parallelism: args.parallelism,
        seed: args.seed,
        in_flight: args.in_flight,
        timeout: Duration::from_secs(args.timeout),
        log_filter: std::env::var("BERTH_BENCH_LOG").unwrap_or_else(|_| "warn".to_string()),
        apiserver,
        scheduler: SchedulerKind::Berth,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: starting the async runtime: {error}");
            return ExitCode::from(1);
        }
    };
    let build = if cfg!(debug_assertions) {
        "debug build"
    } else {
        "optimized build"
    };
    eprintln!("berth: {} ({build})", options.berth.display());
    eprintln!("cpus: {}", default_parallelism());
    let load_average = load_average();
    if let Some(load) = load_average {
        eprintln!("load average (1 min) before the first run: {load:.2}");
    }
    let mut report = Report {
        passed: true,
        berth: options.berth.clone(),
        cpus: default_parallelism(),
        load_average,
        workloads: Vec::new(),
        ratios: Vec::new(),
    };
    for plan in &plans {
        let mut runs = Vec::new();
        for round in 0..args.repeat {
            for scheduler in schedulers(args.scheduler, round) {
                eprintln!(
                    "running {} {} with {} ({} API server): {} nodes, {}+{} pods",
                    plan.workload,
                    plan.size,
                    scheduler.name(),
                    match apiserver {
                        ApiServerKind::Test => "test",
                        ApiServerKind::Real => "real",
                    },
                    plan.counts.nodes,
                    plan.counts.init_pods,
                    plan.counts.measure_pods
                );
                let options = LiveOptions {
                    scheduler,
                    ..options.clone()
                };
                match runtime.block_on(run_live(plan, &options)) {
                    Ok(workload) => {
                        report.passed &= workload.check.passed;
                        runs.push(workload);
                    }
                    Err(error) => {
                        eprintln!(
                            "error: {} {} with {}: {error}",
                            plan.workload,
                            plan.size,
                            scheduler.name()
                        );
                        return ExitCode::from(1);
                    }
                }
            }
        }
        if args.scheduler == SchedulerArg::Both {
            report.ratios.push(ratios(&runs));
        }
        report.workloads.extend(runs);
    }
    match args.output {
        OutputFormat::Table => {
            print!("{}", render_table(&report.workloads));
            if !report.ratios.is_empty() {
                println!();
                print!("{}", render_ratios(&report.ratios));
            }
        }
        OutputFormat::Json => match serde_json::to_string_pretty(&report) {
            Ok(json) => println!("{json}"),
            Err(error) => {
                eprintln!("error: rendering the report: {error}");
                return ExitCode::from(1);
            }
        },
    }
    ExitCode::from(if report.passed { 0 } else { 1 })
}

/// The schedulers of round `round`: with both, kube-scheduler first in even rounds and
/// berth first in odd ones, so that neither always runs on a cooler machine.
fn schedulers(arg: SchedulerArg, round: u64) -> Vec<SchedulerKind> {
    match arg {
        SchedulerArg::Berth => vec![SchedulerKind::Berth],
        SchedulerArg::KubeScheduler => vec![SchedulerKind::KubeScheduler],
        SchedulerArg::Both if round.is_multiple_of(2) => {
            vec![SchedulerKind::KubeScheduler, SchedulerKind::Berth]
        }
        SchedulerArg::Both => vec![SchedulerKind::Berth, SchedulerKind::KubeScheduler],
    }
}

/// berth's means over kube-scheduler's, from one workload's runs.
fn ratios(runs: &[LiveReport]) -> Ratios {
    let mean = |scheduler: SchedulerKind, figure: &dyn Fn(&LiveReport) -> Option<f64>| {
        let values: Vec<f64> = runs
            .iter()
            .filter(|r| r.scheduler == scheduler)
            .filter_map(figure)
            .collect();
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    };
    let ratio = |figure: &dyn Fn(&LiveReport) -> Option<f64>| {
        let berth = mean(SchedulerKind::Berth, figure)?;
        let kube = mean(SchedulerKind::KubeScheduler, figure)?;
        (kube > 0.0).then(|| berth / kube)
    };
    let first = runs.first();
    Ratios {
        workload: first.map(|r| r.workload.clone()).unwrap_or_default(),
        size: first.map(|r| r.size.clone()).unwrap_or_default(),
        runs: runs.len(),
        throughput: ratio(&|r| Some(r.scheduling_throughput.average)),
        create_to_bound_p50: ratio(&|r| Some(r.create_to_bound_seconds.perc50)),
        create_to_bound_p99: ratio(&|r| Some(r.create_to_bound_seconds.perc99)),
        cpu_seconds: ratio(&|r| r.cpu_seconds.scheduler),
        peak_rss: ratio(&|r| r.scheduler_peak_rss_bytes.map(|b| b as f64)),
    }
}

/// One row per workload: berth / kube-scheduler.
fn render_ratios(ratios: &[Ratios]) -> String {
    let header = [
        "BERTH / KUBE-SCHEDULER",
        "SIZE",
        "RUNS",
        "PODS/S AVG",
        "BOUND P50",
        "BOUND P99",
        "CPU",
        "PEAK RSS",
    ]
    .map(String::from);
    let times =
        |r: Option<f64>| r.map_or_else(|| "unavailable".to_string(), |r| format!("{r:.2}x"));
    let rows = ratios.iter().map(|r| {
        [
            r.workload.clone(),
            r.size.clone(),
            r.runs.to_string(),
            times(r.throughput),
            times(r.create_to_bound_p50),
            times(r.create_to_bound_p99),
            times(r.cpu_seconds),
            times(r.peak_rss),
        ]
    });
    render_columns(std::iter::once(header).chain(rows))
}

/// The 1-minute load average (`/proc/loadavg`), where the platform has it.
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// One row per run, then one line per check failure.
fn render_table(workloads: &[LiveReport]) -> String {
    let header = [
        "WORKLOAD",
        "SIZE",
        "SCHEDULER",
        "NODES",
        "PODS",
        "PODS/S AVG",
        "P50",
        "P90",
        "P99",
        "BOUND P50",
        "BOUND P99",
        "CPU SCHEDULER",
        "CPU APISERVER",
        "CPU CLIENT",
        "SCHEDULER RSS",
        "CHECK",
    ]
    .map(String::from);
    let seconds =
        |s: Option<f64>| s.map_or_else(|| "unavailable".to_string(), |s| format!("{s:.2}s"));
    let rows = workloads.iter().map(|w| {
        let t = &w.scheduling_throughput;
        [
            w.workload.clone(),
            w.size.clone(),
            w.scheduler.name().to_string(),
            w.nodes.to_string(),
            format!("{}+{}", w.init_pods, w.measure_pods),
            format!("{:.1}", t.average),
            format!("{:.1}", t.perc50),
            format!("{:.1}", t.perc90),
            format!("{:.1}", t.perc99),
            milliseconds(w.create_to_bound_seconds.perc50),
            milliseconds(w.create_to_bound_seconds.perc99),
            seconds(w.cpu_seconds.scheduler),
            // The test API server runs in this process: its CPU is the client's column.
            match w.apiserver {
                ApiServerKind::Test => "in client".to_string(),
                ApiServerKind::Real => seconds(w.cpu_seconds.apiserver),
            },
            seconds(w.cpu_seconds.bench),
            w.scheduler_peak_rss_bytes
                .map_or_else(|| "unavailable".to_string(), mebibytes),
            if w.check.passed { "passed" } else { "FAILED" }.to_string(),
        ]
    });
    let mut out = render_columns(std::iter::once(header).chain(rows));
    for w in workloads {
        for failure in &w.check.failures {
            out.push_str(&format!(
                "{} {} ({}): {failure}\n",
                w.workload,
                w.size,
                w.scheduler.name()
            ));
        }
    }
    out
}
