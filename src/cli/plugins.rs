//! `berth plugins` (being written).

use std::process::ExitCode;

use clap::Args;

use crate::framework::Registry;

#[derive(Debug, Args)]
pub struct PluginsArgs {}

pub fn run(_args: PluginsArgs, _registry: &Registry) -> ExitCode {
    eprintln!("error: berth plugins is not available yet");
    ExitCode::from(1)
}
