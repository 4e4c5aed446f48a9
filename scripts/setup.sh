#!/usr/bin/env bash
# The newcomer's set-up: a virtualenv in .venv with seglog and what `seglog demo` needs (Spark and
# the sidecar). Nothing else: no Helm, no Kafka or Delta jars (scripts/setup-test.sh adds those).
# Idempotent: a second run only checks. Needs Python 3.10+, Java 17+ and Maven (the connector jar).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
pip() { .venv/bin/python -m pip --disable-pip-version-check -q "$@"; }
pip install --upgrade pip
# seglog's Spark connector (jvm/) into seglog/jars/, where the editable install and the wheel find it
SEGLOG_JAR_SKIP_TESTS=${SEGLOG_JAR_SKIP_TESTS-1} bash scripts/build-jar.sh
# setuptools' editable-install notices go to the build log, not the newcomer's screen
log=$(mktemp)
if ! pip install -e ".[spark,sidecar${SEGLOG_EXTRAS:+,$SEGLOG_EXTRAS}]" > "$log" 2>&1; then
  cat "$log" >&2; rm -f "$log"; exit 1
fi
rm -f "$log"
echo "seglog is set up in .venv ($(.venv/bin/python --version), seglog $(.venv/bin/python -c 'import seglog; print(seglog.__version__)'))"
