#!/usr/bin/env bash
# The whole test suite of berth: formatting, lints, unit, integration and CLI tests.
# Installs what the tests need when it is missing (kubectl and helm, see scripts/install-kubectl.sh;
# prometheus and promtool, see scripts/install-prometheus.sh; the real Kubernetes components,
# see scripts/kube-build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

# A persistent target directory outside the clone makes repeated runs fast.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/berth-target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

# kubectl 1.37 and helm for the end-to-end tests (scripts/install-kubectl.sh says where
# they come from). On CI a failure here fails the run; on a laptop the kubectl tests skip
# loudly instead.
echo "== install kubectl and helm"
export PATH="$HOME/.cache/berth-tools/bin:$PATH"
if ! bash scripts/install-kubectl.sh; then
    if [ "${CI:-}" = "true" ]; then
        echo "ERROR: scripts/install-kubectl.sh failed; CI needs kubectl for the end-to-end tests" >&2
        exit 1
    fi
    echo "################################################################################" >&2
    echo "WARNING: scripts/install-kubectl.sh failed; tests that need kubectl will SKIP." >&2
    echo "################################################################################" >&2
fi

# The real Kubernetes components (etcd, kube-apiserver, kube-controller-manager and
# kube-scheduler 1.37 and 1.35, kwok) the end-to-end tests run against, built from the Go
# modules under kube/ on a machine's first run and cached outside the clone
# (scripts/kube-build.sh; docs/testing.md). On CI a failure fails the run; on a laptop
# without Go the real-cluster tests skip loudly instead.
echo "== build or reuse the real Kubernetes components"
kube_started=$SECONDS
if command -v go >/dev/null 2>&1; then
    bash scripts/kube-build.sh >/dev/null
    echo "components ready in $((SECONDS - kube_started)) s"
elif [ "${CI:-}" = "true" ]; then
    echo "ERROR: go is not installed; CI builds kube-apiserver and friends from Go modules" >&2
    exit 1
else
    echo "################################################################################" >&2
    echo "WARNING: go is not installed; the tests against a real kube-apiserver will SKIP." >&2
    echo "################################################################################" >&2
fi

# prometheus and promtool (Debian's `prometheus` package) for the Prometheus-driven plugin
# tests. The script decides itself: on CI (CI=true) a failed install fails the run; on a
# laptop it warns loudly and those tests skip.
echo "== install prometheus and promtool"
bash scripts/install-prometheus.sh

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy --all-targets -- -D warnings"
cargo clippy --locked --workspace --all-targets -- -D warnings

# The container image's binary, built by the Dockerfile's own command outside Docker;
# tests/static_binary.rs checks it is static and runs. Its own target directory: its
# RUSTFLAGS differ from the test build's, and sharing one would rebuild both every time.
echo "== static release binary (scripts/build-static.sh, as the Dockerfile runs it)"
static_started=$SECONDS
BERTH_STATIC_BINARY="$(CARGO_TARGET_DIR="${BERTH_STATIC_TARGET_DIR:-$HOME/.cache/berth-static-target}" \
    bash scripts/build-static.sh | tail -n 1)"
export BERTH_STATIC_BINARY
echo "built $BERTH_STATIC_BINARY in $((SECONDS - static_started)) s"

# The end-to-end tests write berth's requests here (the real API server's audit log, or
# the test API server's request log); rbac_replay (tests/chart.rs) checks them against the
# chart's RBAC once they have all run.
BERTH_E2E_REQUEST_LOG_DIR="$(mktemp -d "${TMPDIR:-/tmp}/berth-e2e-requests.XXXXXX")"
export BERTH_E2E_REQUEST_LOG_DIR
trap 'rm -rf "$BERTH_E2E_REQUEST_LOG_DIR"' EXIT

echo "== cargo test"
cargo test --locked --workspace --lib --bins --tests --examples -- --skip rbac_replay
echo "== benchmarks, each once and unmeasured (criterion's test mode)"
cargo test --locked --bench '*'

echo "== RBAC replay: the chart's permissions against the end-to-end suite's requests"
cargo test --locked --test chart rbac_replay
