#!/usr/bin/env bash
# Resolve Delta Lake's jars (the tests' and benchmarks' baseline) into a local folder that
# seglog.sink.session.local_session(with_delta=True) passes to Spark as `spark.jars`
# (how: scripts/lib/resolve-jars.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-$here/.venv/bin/python}
# The artifact Delta's own pip helper would ask Spark for (delta-spark_<spark major.minor>_2.13).
read -r artifact version < <("$py" - <<'PY'
import importlib.metadata as md
import pyspark
mm = ".".join(pyspark.__version__.split(".")[:2])
print(f"delta-spark_{mm}_2.13", md.version("delta-spark"))
PY
)
dest=${SEGLOG_DELTA_JARS:-${XDG_CACHE_HOME:-$HOME/.cache}/seglog/jars/$artifact-$version}
. "$here/scripts/lib/resolve-jars.sh"
resolve_jars delta-jars "$dest" \
  "<dependency><groupId>io.delta</groupId><artifactId>$artifact</artifactId><version>$version</version></dependency>" \
  "io.delta:$artifact:$version"
