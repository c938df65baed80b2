//! The benchmark of the live path: scheduler_perf's workloads through the test API server
//! and the `berth run` binary (see `live` and docs/performance.md, "Through the API").
//!
//! `cargo bench --bench api -- [--workload NAME|all] [--size 500Nodes|5000Nodes]
//! [--nodes N] [--pods N] [-o table|json]`. `cargo bench` builds this binary and
//! `berth` with the bench profile (release settings), so the berth it starts is the
//! optimized one. Exits 1 when a workload's check fails or a run errs, 2 for bad
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
use clap::Parser;
use serde::Serialize;

use live::{LiveOptions, LiveReport, run_live};

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
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    timeout: u64,
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
    workloads: Vec<LiveReport>,
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
    let options = LiveOptions {
        berth: PathBuf::from(env!("CARGO_BIN_EXE_berth")),
        parallelism: args.parallelism,
        seed: args.seed,
        in_flight: args.in_flight,
        timeout: Duration::from_secs(args.timeout),
        log_filter: std::env::var("BERTH_BENCH_LOG").unwrap_or_else(|_| "warn".to_string()),
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
    let mut report = Report {
        passed: true,
        berth: options.berth.clone(),
        cpus: default_parallelism(),
        workloads: Vec::new(),
    };
    for plan in &plans {
        eprintln!(
            "running {} {}: {} nodes, {}+{} pods",
            plan.workload,
            plan.size,
            plan.counts.nodes,
            plan.counts.init_pods,
            plan.counts.measure_pods
        );
        match runtime.block_on(run_live(plan, &options)) {
            Ok(workload) => {
                report.passed &= workload.check.passed;
                report.workloads.push(workload);
            }
            Err(error) => {
                eprintln!("error: {} {}: {error}", plan.workload, plan.size);
                return ExitCode::from(1);
            }
        }
    }
    match args.output {
        OutputFormat::Table => print!("{}", render_table(&report.workloads)),
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

/// One row per workload, then one line per check failure.
fn render_table(workloads: &[LiveReport]) -> String {
    let header = [
        "WORKLOAD",
        "SIZE",
        "NODES",
        "PODS",
        "PODS/S AVG",
        "P50",
        "P90",
        "P99",
        "BOUND P50",
        "BOUND P99",
        "CPU BERTH",
        "CPU SERVER+CLIENT",
        "BERTH RSS",
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
            w.nodes.to_string(),
            format!("{}+{}", w.init_pods, w.measure_pods),
            format!("{:.1}", t.average),
            format!("{:.1}", t.perc50),
            format!("{:.1}", t.perc90),
            format!("{:.1}", t.perc99),
            milliseconds(w.create_to_bound_seconds.perc50),
            milliseconds(w.create_to_bound_seconds.perc99),
            seconds(w.cpu_seconds.berth),
            seconds(w.cpu_seconds.bench),
            w.berth_peak_rss_bytes
                .map_or_else(|| "unavailable".to_string(), mebibytes),
            if w.check.passed { "passed" } else { "FAILED" }.to_string(),
        ]
    });
    let mut out = render_columns(std::iter::once(header).chain(rows));
    for w in workloads {
        for failure in &w.check.failures {
            out.push_str(&format!("{} {}: {failure}\n", w.workload, w.size));
        }
    }
    out
}
