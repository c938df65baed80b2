#!/usr/bin/env bash
# Builds the real Kubernetes components berth's end-to-end tests run against, from the
# Go modules pinned under kube/, and caches them outside the clone keyed by version:
#
#   $BERTH_KUBE_CACHE/kubernetes-v1.37.2/{kube-apiserver,kube-controller-manager,kube-scheduler}
#   $BERTH_KUBE_CACHE/kubernetes-v1.35.4/...
#   $BERTH_KUBE_CACHE/etcd-v3.6.16/etcd
#   $BERTH_KUBE_CACHE/kwok-v0.8.0/kwok
#
# (default cache: $HOME/.cache/berth-kube). Only the first run on a machine pays for a build;
# later runs find the directory (with its .complete stamp, written last) and do nothing. A
# build that fails or is interrupted leaves no stamp and is redone next time.
#
# Usage: scripts/kube-build.sh [COMPONENT ...]   (default: all of them)
#   COMPONENT is one of: kubernetes-1.37 kubernetes-1.35 etcd kwok
# Prints nothing but progress on stderr; on success the last stdout line is the cache dir.
#
# Needs Go 1.26 or newer and the Go module proxy. Nothing here downloads a binary: every
# component is compiled from its module source, with the real version stamped in as
# upstream's release build does (hack/lib/version.sh's -X flags).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

CACHE="${BERTH_KUBE_CACHE:-$HOME/.cache/berth-kube}"
mkdir -p "$CACHE"

log() { echo "kube-build: $*" >&2; }
fail() {
    echo "kube-build: ERROR: $*" >&2
    exit 1
}

command -v go >/dev/null 2>&1 || fail "go is not on PATH (the end-to-end tests need Go 1.26+ to build kube-apiserver and friends)"

# The version a module directory pins for a module path, read from its go.mod.
pinned() {
    local dir=$1 module=$2
    (cd "$ROOT/kube/$dir" && go list -m -f '{{.Version}}' "$module")
}

# build DIR NAME VERSION LDFLAGS PACKAGE...: go build into $CACHE/NAME-VERSION once.
build() {
    local dir=$1 name=$2 version=$3 ldflags=$4
    shift 4
    local out="$CACHE/$name-$version"
    # The contents of go.mod and go.sum are the key (not their paths: every clone shares
    # the cache): a change of any pinned dependency rebuilds.
    local key
    key="$(cat "$ROOT/kube/$dir/go.mod" "$ROOT/kube/$dir/go.sum" | sha256sum | cut -c1-16)"
    if [ -f "$out/.complete" ] && [ "$(cat "$out/.complete")" = "$key" ]; then
        log "$name $version: cached in $out"
        return 0
    fi
    log "$name $version: building into $out (the first time on a machine takes minutes)"
    local started=$SECONDS
    rm -rf "$out.tmp"
    mkdir -p "$out.tmp"
    (cd "$ROOT/kube/$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out.tmp/" "$@") ||
        fail "building $name $version failed (see the go output above)"
    echo "$key" >"$out.tmp/.complete"
    rm -rf "$out"
    mv "$out.tmp" "$out"
    log "$name $version: built in $((SECONDS - started)) s"
}

# Kubernetes' own version stamping, as hack/lib/version.sh writes it for a release build.
kube_ldflags() {
    local version=$1 major minor
    major="${version#v}"
    major="${major%%.*}"
    minor="$(echo "$version" | cut -d. -f2)"
    local flags="-s -w"
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        flags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
        flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
    done
    echo "$flags"
}

kubernetes() {
    local dir="k8s-$1" version
    version="$(pinned "$dir" k8s.io/kubernetes)"
    build "$dir" kubernetes "$version" "$(kube_ldflags "$version")" \
        k8s.io/kubernetes/cmd/kube-apiserver \
        k8s.io/kubernetes/cmd/kube-controller-manager \
        k8s.io/kubernetes/cmd/kube-scheduler
}

etcd() {
    local version
    version="$(pinned etcd go.etcd.io/etcd/server/v3)"
    build etcd etcd "$version" "-s -w" ./cmd/etcd
}

kwok() {
    local version
    version="$(pinned kwok sigs.k8s.io/kwok)"
    build kwok kwok "$version" "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$version" sigs.k8s.io/kwok/cmd/kwok
}

components=("$@")
[ ${#components[@]} -gt 0 ] || components=(etcd kubernetes-1.37 kwok kubernetes-1.35)
for c in "${components[@]}"; do
    case "$c" in
    kubernetes-1.37) kubernetes 1.37 ;;
    kubernetes-1.35) kubernetes 1.35 ;;
    etcd) etcd ;;
    kwok) kwok ;;
    *) fail "unknown component '$c' (kubernetes-1.37, kubernetes-1.35, etcd, kwok)" ;;
    esac
done
echo "$CACHE"
