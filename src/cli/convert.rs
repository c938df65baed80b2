//! `berth convert` (being written).

use std::process::ExitCode;

use clap::Args;

use crate::framework::Registry;

#[derive(Debug, Args)]
pub struct ConvertArgs {}

pub fn run(_args: ConvertArgs, _registry: &Registry) -> ExitCode {
    eprintln!("error: berth convert is not available yet");
    ExitCode::from(1)
}
