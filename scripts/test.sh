#!/usr/bin/env bash
# The whole test suite of berth: formatting, lints, unit, integration and CLI tests.
# Installs what the tests need when it is missing (nothing beyond the Rust toolchain yet).
set -euo pipefail
cd "$(dirname "$0")/.."

# A persistent target directory outside the clone makes repeated runs fast.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/berth-target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy --all-targets -- -D warnings"
cargo clippy --locked --workspace --all-targets -- -D warnings

echo "== cargo test"
cargo test --locked --workspace --all-targets
