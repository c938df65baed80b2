//! The `berth` binary: the built-in plugins and the command line.

use std::process::ExitCode;

fn main() -> ExitCode {
    berth::cli::main(berth::plugins::default_registry())
}
