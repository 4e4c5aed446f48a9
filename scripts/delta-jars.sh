#!/usr/bin/env bash
# Resolve Delta Lake's jars (the tests' and benchmarks' baseline) with Maven, as this machine
# configures it (its settings.xml, mirrors and proxies), into a local folder that
# seglog.sink.session.local_session(with_delta=True) passes to Spark as `spark.jars`.
# No registry address is written anywhere. Idempotent: a finished folder is kept (marker file).
# On failure it retries, then prints Maven's own output and exits non-zero.
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
[ -f "$dest/.complete" ] && exit 0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/pom.xml" <<POM
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>seglog.setup</groupId>
  <artifactId>delta-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>io.delta</groupId>
      <artifactId>$artifact</artifactId>
      <version>$version</version>
    </dependency>
  </dependencies>
</project>
POM
for attempt in 1 2 3; do
  if mvn -q -B -f "$work/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
       -DoutputDirectory="$work/jars" > "$work/mvn.log" 2>&1; then
    rm -rf "$dest"; mkdir -p "$(dirname "$dest")"
    mv "$work/jars" "$dest" && touch "$dest/.complete"
    echo "delta-jars: $(ls "$dest" | grep -c '\.jar$') jars in $dest" >&2
    exit 0
  fi
  echo "delta-jars: attempt $attempt to resolve io.delta:$artifact:$version failed" >&2
  [ "$attempt" -lt 3 ] && sleep $((attempt * 5))
done
echo "delta-jars: Maven's output from the last attempt:" >&2
cat "$work/mvn.log" >&2
exit 1
