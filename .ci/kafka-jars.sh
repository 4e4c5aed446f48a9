#!/bin/sh
# Prefetch Apache Kafka's jars from Maven Central into the cache that tests/kafka_tools.py uses
# (~/.cache/seglog/kafka-<version>, or $SEGLOG_KAFKA_CACHE). Idempotent and quiet: prints nothing
# when the jars are already there; on failure prints Maven's output and exits non-zero.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-}
if [ -z "$py" ]; then
  if [ -x "$here/.venv/bin/python" ]; then py="$here/.venv/bin/python"; else py=python3; fi
fi
"$py" "$here/tests/kafka_tools.py" fetch >/dev/null
