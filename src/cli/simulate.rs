//! `berth simulate`: placeholder while the subcommand is written.

use std::process::ExitCode;

use clap::Args;

use crate::framework::Registry;

#[derive(Debug, Args)]
pub struct SimulateArgs {}

pub fn run(_args: SimulateArgs, _registry: &Registry) -> ExitCode {
    ExitCode::from(1)
}
