#!/usr/bin/env bash
# Lint and render the sidecar's Helm chart (docs/spec.md §9): `helm lint` and `helm template` for the default
# values and every helm/examples/values-*.yaml. Rendered manifests go to $SEGLOG_HELM_OUT
# (default .cache/helm/rendered/<name>.yaml), where tests/compactor/test_helm.py also looks.
#
# Helm is installed with `go install` at a pinned v3 version into .cache/helm/<version>/bin if it is
# not there yet (SEGLOG_HELM=/path/to/helm uses another binary).
set -euo pipefail

HELM_VERSION="v3.22.0"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${SEGLOG_CACHE:-$REPO/.cache}"
HELM_BIN_DIR="$CACHE/helm/$HELM_VERSION/bin"
OUT="${SEGLOG_HELM_OUT:-$CACHE/helm/rendered}"
CHART="$REPO/helm"
RELEASE="seglog"

HELM="${SEGLOG_HELM:-$HELM_BIN_DIR/helm}"
if [[ ! -x "$HELM" ]]; then
  command -v go >/dev/null || { echo "helm.sh: go is needed to install helm $HELM_VERSION" >&2; exit 2; }
  echo "helm.sh: installing helm $HELM_VERSION into $HELM_BIN_DIR" >&2
  mkdir -p "$HELM_BIN_DIR"
  GOBIN="$HELM_BIN_DIR" go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
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
