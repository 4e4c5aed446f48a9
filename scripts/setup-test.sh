#!/usr/bin/env bash
# Everything the tests and benchmarks need on top of scripts/setup.sh: the test and bench extras,
# Kafka's jars (the format judge), Delta's jars (the baseline), S3A's jars (format("seglog") on an s3a://
# remote tier), Azurite (the abfs:// remote tier, through npm), fake-gcs-server (the gs:// remote tier, a Go
# build of 3 to 4 minutes the first time), Helm (the chart checks), and from Debian's packages chromium
# with its chromedriver (the console's browser tests) and strace (the durability tests), installed through
# apt-get when running as root.
# Idempotent. Needs Python 3.10+, Java 17+ with Maven, npm and Go.
set -euo pipefail
cd "$(dirname "$0")/.."
# the connector jar with its Java unit tests run (the newcomer set-up skips them)
SEGLOG_JAR_SKIP_TESTS= SEGLOG_EXTRAS=test,bench bash scripts/setup.sh
bash .ci/kafka-jars.sh
bash scripts/delta-jars.sh
bash scripts/s3a-jars.sh
bash scripts/azurite.sh
bash scripts/fake-gcs-server.sh
bash .ci/helm.sh > /dev/null
bash scripts/debian-packages.sh
echo "seglog's test set-up is complete"
