//! `berth crds`: prints the CRDs generated from the registry.

use std::process::ExitCode;

use clap::Args;

use crate::framework::Registry;

#[derive(Debug, Args)]
pub struct CrdsArgs {}

pub fn run(_args: CrdsArgs, _registry: &Registry) -> ExitCode {
    ExitCode::from(1)
}
