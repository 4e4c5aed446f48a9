#!/usr/bin/env bash
# Resolve Spark's own Kafka connector (spark-sql-kafka-0-10_2.13 at the venv's pyspark version: the
# baseline of bench/kafka.py) with Maven, as this machine configures it (its settings.xml, mirrors and
# proxies), into a local folder that bench/kafka.py passes to Spark as `spark.jars`; a second run is
# offline. No registry address is written anywhere. Idempotent: a finished folder is kept (marker file).
# On failure it retries, then prints Maven's own output and exits non-zero.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-$here/.venv/bin/python}
# The artifact `spark.jars.packages` would name for this pyspark (Spark 4 is built for Scala 2.13).
version=$("$py" -c 'import pyspark; print(pyspark.__version__)')
artifact=spark-sql-kafka-0-10_2.13
dest=${SEGLOG_KAFKA_CONNECTOR_JARS:-${XDG_CACHE_HOME:-$HOME/.cache}/seglog/jars/$artifact-$version}
[ -f "$dest/.complete" ] && exit 0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/pom.xml" <<POM
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>seglog.setup</groupId>
  <artifactId>kafka-connector-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.spark</groupId>
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
    echo "kafka-connector-jars: $(ls "$dest" | grep -c '\.jar$') jars in $dest" >&2
    exit 0
  fi
  echo "kafka-connector-jars: attempt $attempt to resolve org.apache.spark:$artifact:$version failed" >&2
  [ "$attempt" -lt 3 ] && sleep $((attempt * 5))
done
echo "kafka-connector-jars: Maven's output from the last attempt:" >&2
cat "$work/mvn.log" >&2
exit 1
