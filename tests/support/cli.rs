//! Running the `berth` binary from integration tests: arguments, optional stdin, and
//! readable failures.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// The binary under test.
pub const BERTH: &str = env!("CARGO_BIN_EXE_berth");

/// Runs `berth <args>` with `stdin` piped in (or none) and waits for it.
pub fn run_berth(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(BERTH)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("berth starts");
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes()).expect("stdin is written");
    }
    child.wait_with_output().expect("berth runs")
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts the exit code, showing both streams when it differs.
pub fn assert_exit(output: &Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        stdout(output),
        stderr(output)
    );
}
