#!/usr/bin/env bash
# The wheel as a user gets it: build it, check that only `seglog` lands in site-packages, install it
# with the sidecar extra into a fresh virtualenv outside the repository, then, from a folder that
# holds a `conf.py` and a `sink.py` (as a Sphinx docs/ folder or a user's project might), run every
# subcommand's --help, a Python round trip and one sidecar pass.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say() { echo "wheel-check: $*" >&2; }

PIP_ROOT_USER_ACTION=ignore "$PY" -m pip wheel -v --disable-pip-version-check --no-deps -w "$work/dist" "$repo" > "$work/build.log" 2>&1 \
  || { cat "$work/build.log" >&2; exit 1; }
# a build that warns (setuptools deprecations, packages left out of the configuration) is a failure
if grep -iE "warning" "$work/build.log" | grep -qv "byte-compiling is disabled"; then cat "$work/build.log" >&2; say "the wheel's build printed warnings"; exit 1; fi
wheel=$(ls "$work"/dist/seglog-*.whl)
tops=$("$PY" -c "import sys, zipfile; print(' '.join(sorted({n.split('/')[0] for n in zipfile.ZipFile(sys.argv[1]).namelist() if '.dist-info' not in n})))" "$wheel")
[ "$tops" = "seglog" ] || { say "the wheel installs top-level names '$tops'; only 'seglog' may land in site-packages"; exit 1; }
# every connector jar seglog.jvm.JARS names (one per Spark line it supports)
"$PY" - "$wheel" "$repo/seglog/jvm.py" <<'PY' || { say "the wheel lacks a connector jar (bash scripts/build-jar.sh first)"; exit 1; }
import ast, sys, zipfile
tree = ast.parse(open(sys.argv[2]).read())
jars = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "JARS")
missing = {f"seglog/jars/{j}" for j in jars.values()} - set(zipfile.ZipFile(sys.argv[1]).namelist())
sys.exit(f"missing: {sorted(missing)}" if missing else 0)
PY
say "built $(basename "$wheel"): top-level name '$tops', with the connector jars"

"$PY" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check "$wheel[sidecar]"
bin="$work/venv/bin"

mkdir -p "$work/user"
cd "$work/user"
printf 'project = "shadow"\n' > conf.py          # a Sphinx conf.py must not shadow seglog.conf
printf 'raise ImportError("a user module named sink was imported")\n' > sink.py

"$bin/seglog" --help > /dev/null
for sub in dump verify describe offsets-for-times recover truncate; do
  "$bin/seglog" "$sub" --help > /dev/null || { say "seglog $sub --help failed"; exit 1; }
done
"$bin/seglog" compactor run --help > /dev/null

"$bin/python" - "$work/root" <<'PY'
import sys
from seglog.indexer import Log, Record
root = sys.argv[1]
with Log.open(f"{root}/events-0", {"segment.bytes": 4096}) as log:
    info = log.append([Record(key=b"k%d" % i, value=b"v" * 100, timestamp=1_700_000_000_000 + i) for i in range(200)])
    assert (info.first_offset, info.last_offset) == (0, 199), info
    log.flush()
with Log.open(f"{root}/events-0", readonly=True) as log:
    rows = list(log.read(0))
    assert [r.offset for r in rows] == list(range(200))
    assert log.offset_for_timestamp(1_700_000_000_150) == 150
    assert log.offset_for_timestamp(1_800_000_000_000) is None
from pathlib import Path
from seglog import jvm
# no pyspark here (the sidecar extra): the jar is named by the Spark version a cluster runs
assert Path(jvm.jar_path("4.3.0")).stat().st_size > 0 and Path(jvm.jar_path("3.5.9")).stat().st_size > 0
print("round trip ok", file=sys.stderr)
PY

cat > "$work/compactor.yaml" <<YAML
root: $work/root
log: {retention.ms: -1}
http: {host: 127.0.0.1, port: 0}
YAML
"$bin/seglog" compactor run --once --config "$work/compactor.yaml" > "$work/sidecar.log" 2>&1 \
  || { cat "$work/sidecar.log" >&2; say "the sidecar's --once pass failed"; exit 1; }
"$bin/seglog" verify "$work/root" > /dev/null
say "ok: --help of every subcommand, a Python round trip, a sidecar --once pass, verify"
