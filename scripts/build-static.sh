#!/usr/bin/env bash
# Builds the statically linked release binary of berth: the exact command the Dockerfile
# runs in its build stage, and what CI runs outside Docker (scripts/test.sh) to check that
# the binary is static and starts (tests/static_binary.rs).
#
# Usage: scripts/build-static.sh [OUT]
#   Builds, then copies the binary to OUT (default: $CARGO_TARGET_DIR/static/berth) and
#   prints OUT's path as the last line.
#
# Static linking uses glibc's static libraries (`-C target-feature=+crt-static` on
# x86_64-unknown-linux-gnu), not musl: only the gnu target is installed where berth is
# built, and rustup cannot download another. berth's only C code is ring's (TLS crypto),
# which links statically without trouble. glibc warns at link time that getaddrinfo in a
# static binary needs glibc's shared NSS modules at run time; since glibc 2.34 the
# `files` and `dns` modules are built into libc itself, so /etc/hosts and DNS lookups
# work in a distroless image without any shared library (tests/static_binary.rs connects
# through `localhost` to prove the `files` path).
#
# Environment:
#   CARGO_TARGET_DIR          cargo's target directory (default: target). Give the static
#                             build its own directory: its RUSTFLAGS differ from a normal
#                             build's, and sharing one directory rebuilds everything twice.
#   BERTH_STATIC_TARGET       the target triple (default: x86_64-unknown-linux-gnu)
set -euo pipefail
cd "$(dirname "$0")/.."

target="${BERTH_STATIC_TARGET:-x86_64-unknown-linux-gnu}"
target_dir="${CARGO_TARGET_DIR:-target}"
out="${1:-$target_dir/static/berth}"

# --target keeps RUSTFLAGS away from build scripts and proc macros (they run on the host
# and stay dynamically linked); only berth and its dependencies are linked statically.
RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }-C target-feature=+crt-static" \
    cargo build --release --locked --target "$target" --bin berth

mkdir -p "$(dirname "$out")"
cp "$target_dir/$target/release/berth" "$out.tmp.$$"
mv -f "$out.tmp.$$" "$out"
echo "$out"
