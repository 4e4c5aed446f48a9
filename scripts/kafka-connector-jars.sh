#!/usr/bin/env bash
# Resolve Spark's own Kafka connector (spark-sql-kafka-0-10_2.13 at the venv's pyspark version: the
# baseline of bench/kafka.py) into a local folder that bench/kafka.py passes to Spark as `spark.jars`
# (how: scripts/lib/resolve-jars.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-$here/.venv/bin/python}
# The artifact `spark.jars.packages` would name for this pyspark (Spark 4 is built for Scala 2.13).
version=$("$py" -c 'import pyspark; print(pyspark.__version__)')
artifact=spark-sql-kafka-0-10_2.13
dest=${SEGLOG_KAFKA_CONNECTOR_JARS:-${XDG_CACHE_HOME:-$HOME/.cache}/seglog/jars/$artifact-$version}
. "$here/scripts/lib/resolve-jars.sh"
resolve_jars kafka-connector-jars "$dest" \
  "<dependency><groupId>org.apache.spark</groupId><artifactId>$artifact</artifactId><version>$version</version></dependency>" \
  "org.apache.spark:$artifact:$version"
