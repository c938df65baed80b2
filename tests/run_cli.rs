//! `berth run`'s metrics-port flags refused or failed with what is wrong, before
//! anything is served (issue 20: absurd flags get a clear error, never a half-started
//! operator). None of these cases reaches an API server: the kubeconfig points at a port
//! where nothing listens, and berth fails before it would connect.

mod support;
use support::cli::{assert_exit, run_berth, stderr};
use support::https::Issued;
use support::temp::TempDir;

/// `berth run` with a kubeconfig for an address nobody serves and the metrics port on a
/// free loopback port, plus `args`.
fn run(dir: &TempDir, args: &[&str]) -> std::process::Output {
    let kubeconfig = dir.write(
        "kubeconfig",
        &test_apiserver::kubeconfig::render("http://127.0.0.1:1"),
    );
    let mut all = vec![
        "run",
        "--kubeconfig",
        kubeconfig.to_str().expect("a UTF-8 path"),
        "--metrics-bind-address",
        "127.0.0.1:0",
    ];
    all.extend_from_slice(args);
    run_berth(&all, None)
}

#[test]
fn flags_that_do_not_go_together_are_refused() {
    let dir = TempDir::new("run-cli-flags");
    let cases: [(&str, &[&str], &str); 4] = [
        (
            "a certificate without its key",
            &["--tls-cert-file", "tls.crt"],
            "--tls-private-key-file",
        ),
        (
            "a key without its certificate",
            &["--tls-private-key-file", "tls.key"],
            "--tls-cert-file",
        ),
        (
            "plain HTTP with a certificate",
            &[
                "--metrics-insecure",
                "--tls-cert-file",
                "tls.crt",
                "--tls-private-key-file",
                "tls.key",
            ],
            "cannot be used with",
        ),
        (
            "no connection at all",
            &["--metrics-max-connections", "0"],
            "0 is not in 1..=65536",
        ),
    ];
    for (name, args, expected) in cases {
        let output = run(&dir, args);
        assert_exit(&output, 2);
        assert!(
            stderr(&output).contains(expected),
            "{name}: {}",
            stderr(&output)
        );
    }
}

#[test]
fn certificate_files_that_cannot_be_served_fail_the_start_naming_the_file() {
    let dir = TempDir::new("run-cli-tls");
    let a = Issued::new("a CA");
    let b = Issued::new("b CA");
    let cert = dir.write("a.crt", &a.cert_pem);
    let other_key = dir.write("b.key", &b.key_pem);
    let missing = dir.join("missing.key");
    let path = |p: &std::path::Path| p.to_str().expect("a UTF-8 path").to_string();
    let cases = [
        (
            "a missing key file",
            path(&missing),
            format!("cannot read {}", missing.display()),
        ),
        (
            "the key of another certificate",
            path(&other_key),
            format!(
                "the private key in {} does not belong to the certificate in {}",
                other_key.display(),
                cert.display()
            ),
        ),
    ];
    for (name, key, expected) in cases {
        let output = run(
            &dir,
            &[
                "--tls-cert-file",
                &path(&cert),
                "--tls-private-key-file",
                &key,
            ],
        );
        assert_exit(&output, 1);
        let stderr = stderr(&output);
        assert!(
            stderr.contains("cannot serve HTTPS on the metrics port") && stderr.contains(&expected),
            "{name}: {stderr}"
        );
    }
}
