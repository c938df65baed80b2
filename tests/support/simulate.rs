//! Running the simulator in-process on the default registry, and finding a pod in its
//! report.

use berth::simulate::input::ClusterInput;
use berth::simulate::report::{PodReport, Report};
use berth::simulate::run::{SimulateOptions, simulate};

/// Simulates `input` with the default plugins, seed 0 and two worker threads.
pub async fn simulate_default(input: ClusterInput) -> Report {
    simulate(
        input,
        &berth::plugins::default_registry(),
        SimulateOptions {
            explain: false,
            seed: 0,
            parallelism: 2,
        },
    )
    .await
    .expect("simulation runs")
}

/// The report of pod `name`; fails the test when it is missing.
pub fn pod<'a>(report: &'a Report, name: &str) -> &'a PodReport {
    report
        .pods
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("{name} is reported: {report:#?}"))
}
