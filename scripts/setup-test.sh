#!/usr/bin/env bash
# Everything the tests and benchmarks need on top of scripts/setup.sh: the test and bench extras,
# Kafka's jars (the format judge), Delta's jars (the baseline), S3A's jars (format("seglog") on an s3a://
# remote tier), Azurite (the abfs:// remote tier, when npm is there) and Helm (the chart checks).
# fake-gcs-server (the gs:// remote tier) is left to scripts/fake-gcs-server.sh: a Go build of minutes.
# Idempotent. Needs Python 3.10+ and Java 17+ with Maven (Go only where PyPI's Helm wheel cannot be had).
set -euo pipefail
cd "$(dirname "$0")/.."
# the connector jar with its Java unit tests run (the newcomer set-up skips them)
SEGLOG_JAR_SKIP_TESTS= SEGLOG_EXTRAS=test,bench bash scripts/setup.sh
bash .ci/kafka-jars.sh
bash scripts/delta-jars.sh
bash scripts/s3a-jars.sh
bash scripts/azurite.sh
bash .ci/helm.sh > /dev/null
echo "seglog's test set-up is complete"
