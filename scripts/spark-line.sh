#!/usr/bin/env bash
# The smoke profile on one Spark line, as a user installs it: `bash scripts/spark-line.sh 4.3.0`.
# 1. A cached virtualenv per pyspark version (${SEGLOG_LINES:-~/.cache/seglog/lines}/<version>) with
#    `pip install pyspark==V <this checkout's wheel>[spark,sidecar,connect,smoke]` in one command; pip must
#    keep V (seglog's extras never change a user's pyspark), and a dry run of the wheel alone must install no
#    pyspark at all.
# 2. That line's jars: hadoop-aws matching its Hadoop (scripts/s3a-jars.sh), and Spark Connect's server jar
#    where pyspark ships none (3.5).
# 3. The tests marked `smoke` (README's quick start, Connect writes, a Connect foreachBatch(SegmentLogSink) and a
#    foreachBatch of format("seglog"), a tiered read through s3a (its file:// twin is line-neutral: the primary
#    line runs it), a kill-and-restart exactly-once stream, the JVM conformance runners on this line's jars) from
#    a copy of tests/ (and jvm/'s test sources) outside the checkout, so `seglog` is the installed wheel, not the
#    source tree.
# The first run of a line downloads its pyspark (~400 MB); later runs reuse the venv. Exit status: pytest's.
set -euo pipefail
V=${1:?usage: spark-line.sh PYSPARK_VERSION [pytest args...]}; shift
repo=$(cd "$(dirname "$0")/.." && pwd)
lines=${SEGLOG_LINES:-${XDG_CACHE_HOME:-$HOME/.cache}/seglog/lines}
venv="$lines/$V"
PY=${PYTHON:-python3}
say() { echo "spark-line $V: $*" >&2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pipq() { PIP_ROOT_USER_ACTION=ignore "$venv/bin/python" -m pip -q --disable-pip-version-check "$@"; }

# SEGLOG_WHEEL: a wheel of this checkout built already (tests/lines builds one for every line)
wheel=${SEGLOG_WHEEL:-}
if [ -z "$wheel" ]; then
  SEGLOG_JAR_SKIP_TESTS=1 bash "$repo/scripts/build-jar.sh"
  PIP_ROOT_USER_ACTION=ignore "$PY" -m pip wheel -q --disable-pip-version-check --no-deps -w "$work/dist" "$repo" > "$work/build.log" 2>&1 \
    || { cat "$work/build.log" >&2; exit 1; }
  wheel=$(ls "$work"/dist/seglog-*.whl)
fi

[ -x "$venv/bin/python" ] || "$PY" -m venv "$venv"
pipq install "pyspark==$V" "$wheel[spark,sidecar,connect,smoke]"
pipq install --no-deps --force-reinstall "$wheel"          # this checkout's code, at an unchanged version
got=$("$venv/bin/python" -c "import pyspark; print(pyspark.__version__)")
[ "$got" = "$V" ] || { say "installing seglog changed pyspark $V to $got"; exit 1; }
# what `pip install seglog[...]` does to an environment that already has this pyspark: installs no pyspark
pipq install --dry-run --report "$work/report-kept.json" "$wheel[spark,sidecar,connect]" > /dev/null
"$venv/bin/python" - "$work/report-kept.json" "$V" <<'PY'
import json, sys
report, v = json.load(open(sys.argv[1])), sys.argv[2]
changed = [i["metadata"]["version"] for i in report["install"] if i["metadata"]["name"].lower() == "pyspark"]
if changed:
    sys.exit(f"pip install seglog[spark,sidecar,connect] would replace pyspark {v} with {changed[0]}")
PY
say "pyspark $V kept by pip install pyspark==$V seglog[spark,sidecar,connect]"

PYTHON="$venv/bin/python" bash "$repo/scripts/s3a-jars.sh"
site=$("$venv/bin/python" -c "import pathlib, pyspark; print(pathlib.Path(pyspark.__file__).parent)")
connect_jars=
if ! ls "$site"/jars/spark-connect_*.jar > /dev/null 2>&1; then
  scala=$(ls "$site"/jars/scala-library-*.jar | sed -E 's/.*scala-library-([0-9]+\.[0-9]+)\..*/\1/')
  # Spark Connect's server jar of this release, else the newest earlier patch of the line Maven serves (one line's
  # patches share the server's API)
  IFS=. read -r major minor patch <<< "$V"
  for p in $(seq "$patch" -1 0); do
    dest="${XDG_CACHE_HOME:-$HOME/.cache}/seglog/jars/spark-connect_$scala-$major.$minor.$p"
    if [ -f "$dest/.complete" ] || mvn -q -B dependency:copy -Dartifact="org.apache.spark:spark-connect_$scala:$major.$minor.$p" \
         -DoutputDirectory="$dest" > "$work/connect.log" 2>&1; then
      touch "$dest/.complete"; connect_jars=$(ls "$dest"/spark-connect_*.jar); break
    fi
  done
  [ -n "$connect_jars" ] || { cat "$work/connect.log" >&2; say "no spark-connect_$scala jar for Spark $major.$minor"; exit 1; }
  say "Spark Connect server jar: $(basename "$connect_jars")"
fi

cp -r "$repo/tests" "$work/tests"
mkdir -p "$work/jvm/src"                                   # the JVM conformance runners (tests/smoke) and their pom
cp "$repo/jvm/pom.xml" "$work/jvm/" && cp -r "$repo/jvm/src/test" "$work/jvm/src/"
cp "$repo/pyproject.toml" "$work/"
find "$work/tests" -name __pycache__ -prune -exec rm -rf {} +
cd "$work"
say "smoke profile: $("$venv/bin/python" -c 'import seglog.jvm as j; print(j.jar_path())')"
SEGLOG_CONNECT_JARS="$connect_jars" PYSPARK_PYTHON="$venv/bin/python" PYSPARK_DRIVER_PYTHON="$venv/bin/python" \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider -m smoke \
  tests/smoke tests/sink/test_dsv2_write_connect.py tests/sink/test_sink_connect.py tests/sink/test_dsv2_write_crash.py \
  tests/remote/test_jvm_tiered_reads.py \
  --deselect "tests/remote/test_jvm_tiered_reads.py::test_a_replay_from_a_timestamp_crosses_the_tiers_as_before_tiering[file]" \
  "$@"
