#!/usr/bin/env bash
# Installs `prometheus` and `promtool` for berth's Prometheus-driven plugin tests (issue 8):
# the tests build a TSDB with `promtool tsdb create-blocks-from openmetrics` and run a real
# `prometheus` on 127.0.0.1 (tests/support/prometheus.rs).
#
# Idempotent: does nothing when both are already on PATH. Otherwise installs Debian's
# `prometheus` package (bookworm: 2.42.0) with apt-get, as root or through `sudo -n`.
#
# The package's postinst starts its service through `invoke-rc.d` (sysvinit) or
# `deb-systemd-invoke` (systemd). The tests run their own Prometheus on a free port and
# want no daemon on :9090, and a container without an init system must not fail the
# install, so the install runs under a policy-rc.d that forbids starting services
# (exit 101; both helpers honour it). An existing policy-rc.d that already forbids it is
# left alone; otherwise it is swapped out for the install and restored afterwards.
#
# Failure: with CI=true the script exits non-zero with the reason (CI must run the
# Prometheus tests); elsewhere it prints a loud warning and exits 0, and those tests skip
# with "SKIPPED: prometheus not installed".
set -euo pipefail

PACKAGE=prometheus
POLICY=/usr/sbin/policy-rc.d

report() {
    echo "install-prometheus: prometheus $(command -v prometheus): $(prometheus --version 2>&1 | head -n1)"
    echo "install-prometheus: promtool $(command -v promtool): $(promtool --version 2>&1 | head -n1)"
}

# Gives up: on CI (CI=true) with exit 1, elsewhere with a warning and exit 0.
give_up() {
    if [ "${CI:-}" = "true" ]; then
        echo "install-prometheus: ERROR: $*" >&2
        echo "install-prometheus: CI (CI=true) needs prometheus and promtool for the Prometheus tests." >&2
        exit 1
    fi
    echo "################################################################################" >&2
    echo "WARNING: install-prometheus: $*" >&2
    echo "WARNING: tests that need a real Prometheus will SKIP." >&2
    echo "WARNING: install Debian's 'prometheus' package (or put prometheus and promtool on PATH)." >&2
    echo "################################################################################" >&2
    exit 0
}

# 1. Already installed?
if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
    report
    exit 0
fi

# 2. Root, or sudo without a password prompt (there is no terminal on CI).
if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
else
    give_up "not root and no password-less sudo; cannot apt-get install $PACKAGE"
fi
command -v apt-get >/dev/null 2>&1 || give_up "apt-get not found (not a Debian system?)"

# 3. Forbid service starts while the package installs (see the top of this file).
policy_backup=""
restore_policy() {
    if [ -n "$policy_backup" ]; then
        "${SUDO[@]}" mv -f "$policy_backup" "$POLICY" || true
    elif [ -n "${policy_created:-}" ]; then
        "${SUDO[@]}" rm -f "$POLICY" || true
    fi
}
trap restore_policy EXIT
policy_forbids_start() {
    local rc=0
    [ -x "$POLICY" ] || return 1
    "$POLICY" "$PACKAGE" start >/dev/null 2>&1 || rc=$?
    [ "$rc" -eq 101 ]
}
if ! policy_forbids_start; then
    if [ -e "$POLICY" ]; then
        policy_backup="$POLICY.berth-backup.$$"
        "${SUDO[@]}" mv -f "$POLICY" "$policy_backup" || give_up "cannot move $POLICY aside"
    fi
    printf '#!/bin/sh\n# Written by berth scripts/install-prometheus.sh for the install only.\nexit 101\n' \
        | "${SUDO[@]}" tee "$POLICY" >/dev/null || give_up "cannot write $POLICY"
    "${SUDO[@]}" chmod 755 "$POLICY"
    policy_created=1
fi

# 4. Install. The package lists may be missing or stale: update them when apt knows no
# candidate, and once more when the install fails.
apt_install() {
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "$PACKAGE"
}
apt_update() {
    echo "install-prometheus: apt-get update"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q || true
}
# (Captured first: with pipefail, `grep -q` closing the pipe early would fail the test.)
policy_out="$(apt-cache policy "$PACKAGE" 2>/dev/null || true)"
if ! grep -q 'Candidate: [0-9]' <<<"$policy_out"; then
    apt_update
fi
echo "install-prometheus: apt-get install $PACKAGE"
if ! apt_install; then
    apt_update
    apt_install || give_up "apt-get install $PACKAGE failed (is the Debian package registry reachable?)"
fi

# 5. No daemon left behind, whatever the init system did (the tests start their own).
if [ -d /run/systemd/system ]; then
    "${SUDO[@]}" systemctl disable --now prometheus.service >/dev/null 2>&1 || true
elif [ -x /etc/init.d/prometheus ] && /etc/init.d/prometheus status >/dev/null 2>&1; then
    "${SUDO[@]}" /etc/init.d/prometheus stop >/dev/null 2>&1 || true
fi

command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 \
    || give_up "installed $PACKAGE but prometheus or promtool is not on PATH ($PATH)"
prometheus --version >/dev/null 2>&1 || give_up "'prometheus --version' fails after the install"
promtool --version >/dev/null 2>&1 || give_up "'promtool --version' fails after the install"
report
