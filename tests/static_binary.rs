//! The container image's binary (issue 9): the Dockerfile builds it with
//! `scripts/build-static.sh`, and no Docker engine runs here, so CI runs that script
//! outside Docker (`scripts/test.sh`) and hands the result to these tests in
//! `BERTH_STATIC_BINARY`. They check it is statically linked (it must run on distroless
//! `static`, which has no libc), prints its version, and runs `berth run` — including a
//! host-name lookup, the part of glibc that static linking can break.
//!
//! Without `BERTH_STATIC_BINARY` the tests skip loudly; on CI (`CI=true`) they fail.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod support;
use support::http::{free_port, loopback};
use support::https::{self, Trust};
use support::temp::TempDir;

const BINARY_VAR: &str = "BERTH_STATIC_BINARY";

/// The binary to check, or `None` after a loud skip message (a failure on CI).
fn static_binary(test: &str) -> Option<PathBuf> {
    let why = match std::env::var_os(BINARY_VAR).map(PathBuf::from) {
        Some(path) if path.is_file() => return Some(path),
        Some(path) => format!("{BINARY_VAR}={} is not a file", path.display()),
        None => format!(
            "{BINARY_VAR} is not set; build the binary with `bash scripts/build-static.sh` and \
             set {BINARY_VAR} to the path it prints (scripts/test.sh does both)"
        ),
    };
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test}: {why}. On CI (CI=true) this test must run.");
    }
    let _ = writeln!(
        std::io::stderr(),
        "\n{bar}\n!!! SKIPPED {test}: {why}.\n!!! This test did NOT run.\n{bar}\n",
        bar = "!".repeat(100)
    );
    None
}

/// What the dynamic loader would need to run an ELF file.
#[derive(Debug, PartialEq, Eq)]
struct Linking {
    /// A `PT_INTERP` program header: the path of the dynamic loader.
    interpreter: Option<String>,
    /// `DT_NEEDED` entries: the shared libraries it links (as string-table offsets; the
    /// count is what matters).
    needed: usize,
}

/// Reads the program headers of a 64-bit little-endian ELF file (x86_64).
fn linking(path: &Path) -> Linking {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert!(
        bytes.len() > 64 && bytes[..4] == *b"\x7fELF" && bytes[4] == 2 && bytes[5] == 1,
        "{} is not a 64-bit little-endian ELF file",
        path.display()
    );
    let u16_at =
        |at: usize| u16::from_le_bytes(bytes[at..at + 2].try_into().expect("2 bytes")) as usize;
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let u64_at =
        |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes")) as usize;
    const PT_DYNAMIC: u32 = 2;
    const PT_INTERP: u32 = 3;
    const DT_NULL: usize = 0;
    const DT_NEEDED: usize = 1;
    let (phoff, phentsize, phnum) = (u64_at(0x20), u16_at(0x36), u16_at(0x38));
    let mut result = Linking {
        interpreter: None,
        needed: 0,
    };
    for header in (0..phnum).map(|i| phoff + i * phentsize) {
        let (offset, size) = (u64_at(header + 8), u64_at(header + 32));
        match u32_at(header) {
            PT_INTERP => {
                let path = &bytes[offset..offset + size];
                let path = path.split(|b| *b == 0).next().unwrap_or_default();
                result.interpreter = Some(String::from_utf8_lossy(path).into_owned());
            }
            PT_DYNAMIC => {
                // Elf64_Dyn: d_tag (8 bytes), d_val (8 bytes), up to DT_NULL.
                result.needed += (offset..offset + size)
                    .step_by(16)
                    .map(u64_at)
                    .take_while(|tag| *tag != DT_NULL)
                    .filter(|tag| *tag == DT_NEEDED)
                    .count();
            }
            _ => {}
        }
    }
    result
}

#[test]
fn static_binary_needs_no_dynamic_loader_and_no_shared_library() {
    let Some(binary) = static_binary("static_binary_needs_no_dynamic_loader_and_no_shared_library")
    else {
        return;
    };
    // The reader sees dynamic linking where there is some: the test build of berth links
    // glibc dynamically.
    let dynamic = linking(Path::new(env!("CARGO_BIN_EXE_berth")));
    assert!(
        dynamic.interpreter.is_some() && dynamic.needed > 0,
        "the ELF reader must find the loader and libraries of the dynamic test binary: {dynamic:?}"
    );
    assert_eq!(
        linking(&binary),
        Linking {
            interpreter: None,
            needed: 0
        },
        "{} must be statically linked",
        binary.display()
    );
}

#[test]
fn static_binary_prints_the_crate_version() {
    let Some(binary) = static_binary("static_binary_prints_the_crate_version") else {
        return;
    };
    let output = Command::new(&binary)
        .arg("--version")
        .env_clear()
        .output()
        .unwrap_or_else(|e| panic!("run {} --version: {e}", binary.display()));
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!("berth {}", env!("CARGO_PKG_VERSION"))
    );
}

/// `berth run` from the static binary against a real kube-apiserver (etcd, kube-apiserver
/// 1.37, `crates/kube-cluster`, with berth's CRDs) over TLS, addressed as `localhost`: the
/// name goes through getaddrinfo and /etc/hosts, which a static glibc binary resolves with
/// the NSS modules built into it. Ready means it listed nodes and pods; SIGTERM must then
/// stop it cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_binary_runs_berth_run_against_an_api_server_named_localhost() {
    const TEST: &str = "static_binary_runs_berth_run_against_an_api_server_named_localhost";
    let Some(binary) = static_binary(TEST) else {
        return;
    };
    let Some(cluster) = support::kube::start_apiserver_or_skip(TEST).await else {
        return;
    };
    let client = cluster.admin_client().await.expect("an admin client");
    support::kube::install_crds(&client).await;
    let admin = std::fs::read_to_string(cluster.admin_kubeconfig()).expect("the kubeconfig");
    let url = admin
        .lines()
        .find_map(|line| line.trim().strip_prefix("server: "))
        .expect("the kubeconfig names its server")
        .replace("127.0.0.1", "localhost");
    let dir = TempDir::new("static");
    let kubeconfig = dir.write(
        "kubeconfig",
        &admin
            .lines()
            .map(|line| match line.trim().strip_prefix("server: ") {
                Some(_) => format!("    server: {url}\n"),
                None => format!("{line}\n"),
            })
            .collect::<String>(),
    );
    let port = free_port();
    let mut child = Command::new(&binary)
        .args(["run", "--identity", "static", "--metrics-bind-address"])
        .arg(format!("127.0.0.1:{port}"))
        .env_clear()
        .env("KUBECONFIG", &kubeconfig)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the static binary");
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = String::new();
    let ready = loop {
        if let Ok(Some(status)) = child.try_wait() {
            let mut stderr = String::new();
            let _ = child
                .stderr
                .take()
                .map(|mut s| s.read_to_string(&mut stderr));
            panic!("the static berth exited ({status}) before it was ready:\n{stderr}");
        }
        // The port is HTTPS with the certificate the static binary generated at start.
        let readyz = move || {
            https::get(loopback(port), "localhost", "/readyz", &[], &Trust::Any)
                .map(|exchange| exchange.response.status)
        };
        match tokio::task::spawn_blocking(readyz).await {
            Ok(Ok(200)) => break true,
            other => last = format!("{other:?}"),
        }
        if Instant::now() >= deadline {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let listed_nodes = support::kube::requests(cluster.audit_log())
        .iter()
        .any(|r| r.resource == "nodes" && r.verb == "list" && r.status == 200);
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let status = wait_with_deadline(&mut child, Duration::from_secs(15));
    let mut stderr = String::new();
    let _ = child
        .stderr
        .take()
        .map(|mut s| s.read_to_string(&mut stderr));
    assert!(
        ready,
        "/readyz never answered 200 within 30 s (last: {last}):\n{stderr}"
    );
    assert!(
        listed_nodes,
        "the static berth never listed nodes through {url}"
    );
    assert!(
        status.is_some_and(|s| s.success()),
        "exit after SIGTERM: {status:?}\n{stderr}"
    );
}

fn wait_with_deadline(
    child: &mut std::process::Child,
    timeout: Duration,
) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The Dockerfile builds with the script CI runs, and the image runs `berth run` as the
/// distroless nonroot user.
#[test]
fn dockerfile_builds_with_the_static_build_script_and_runs_berth_run_as_nonroot() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("Dockerfile")).expect("read the Dockerfile");
    let instructions: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let stages: Vec<&&str> = instructions
        .iter()
        .filter(|l| l.starts_with("FROM "))
        .collect();
    assert_eq!(
        stages.len(),
        2,
        "a build stage and a final stage: {stages:?}"
    );
    assert!(
        stages[1].starts_with("FROM gcr.io/distroless/static"),
        "the final stage is distroless static: {}",
        stages[1]
    );
    assert!(
        text.contains("bash scripts/build-static.sh /out/berth"),
        "the build stage runs scripts/build-static.sh"
    );
    assert!(instructions.contains(&"COPY --from=build /out/berth /berth"));
    assert!(instructions.contains(&"USER 65532:65532"));
    assert_eq!(
        instructions.last(),
        Some(&r#"ENTRYPOINT ["/berth", "run"]"#)
    );
    let script =
        std::fs::read_to_string(root.join("scripts/build-static.sh")).expect("read the script");
    assert!(script.contains("cargo build --release --locked"));
    assert!(script.contains("+crt-static"));
}
