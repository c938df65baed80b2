#!/usr/bin/env bash
# Starts the end-to-end tests' real cluster by hand, to try berth on a real API server:
# etcd, kube-apiserver, kube-controller-manager and kwok (which plays the kubelet of
# every node) on 127.0.0.1, with --nodes kwok nodes. Builds the components on the first
# run (scripts/kube-build.sh, minutes), then starts in seconds.
#
#   bash scripts/kube-up.sh [--release 1.37|1.35] [--nodes N] [--keep]
#
# It prints `export KUBECONFIG=...` (an admin's kubeconfig) and runs until Ctrl-C, then
# stops everything and deletes the cluster's directory (--keep keeps its logs).
# docs/testing.md ("A real cluster by hand") shows a session with berth on it.
set -euo pipefail
cd "$(dirname "$0")/.."

release=1.37
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    if [ "${args[$i]}" = "--release" ] && [ $((i + 1)) -lt ${#args[@]} ]; then
        release="${args[$((i + 1))]}"
    fi
done
bash scripts/kube-build.sh etcd kwok "kubernetes-$release" >/dev/null
cargo build --quiet --locked -p berth-kube-cluster
exec "${CARGO_TARGET_DIR:-target}/debug/kube-cluster" up "$@"
