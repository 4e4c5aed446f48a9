#!/usr/bin/env bash
# Build seglog's Spark connectors (jvm/, a Maven project) into seglog/jars/, where the wheel ships them as
# package data and seglog.jvm finds the one for the running Spark (seglog.jvm.JARS): seglog-spark-4_2.13.jar
# for Spark 4.0 to 4.3 and seglog-spark-3.5_2.12.jar / _2.13.jar (the profile spark-3.5) for Spark 3.5. Maven resolves its
# dependencies as this machine configures it (settings.xml, mirrors, proxies); no registry address is written here.
# Idempotent: skipped when the jars are newer than every file under jvm/ and conf/topic.yaml (the jar
# carries the topic defaults; SEGLOG_JAR_FORCE=1 rebuilds). The Java unit tests run in the 4.x build only
# (SEGLOG_JAR_SKIP_TESTS=1 skips them); each line is checked end to end by tests/lines.
# On failure it retries (a transient resolution failure), then prints Maven's own output.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
command -v mvn >/dev/null || { echo "build-jar: Maven (mvn) is needed to build jvm/" >&2; exit 2; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
skip_tests=${SEGLOG_JAR_SKIP_TESTS:+-DskipTests}

# build <jar name> <Maven's output jar, under jvm/> <Maven arguments...>
build() {
  local jar="$here/seglog/jars/$1" built="$here/jvm/$2"; shift 2
  if [ -f "$jar" ] && [ -z "${SEGLOG_JAR_FORCE:-}" ] \
     && [ -z "$(find "$here/jvm/pom.xml" "$here/jvm/src" "$here/conf/topic.yaml" -newer "$jar" -print -quit)" ]; then
    return 0
  fi
  for attempt in 1 2 3; do
    if mvn -q -B -f "$here/jvm/pom.xml" package "$@" > "$log" 2>&1; then
      mkdir -p "$(dirname "$jar")"
      cp "$built" "$jar.tmp" && mv "$jar.tmp" "$jar"
      echo "build-jar: $(du -h "$jar" | cut -f1) $jar" >&2
      return 0
    fi
    echo "build-jar: $(basename "$jar"): attempt $attempt failed" >&2
    [ "$attempt" -lt 3 ] && sleep $((attempt * 5))
  done
  echo "build-jar: Maven's output from the last attempt:" >&2
  cat "$log" >&2
  exit 1
}
build seglog-spark-4_2.13.jar target/seglog-spark.jar $skip_tests
build seglog-spark-3.5_2.12.jar target/spark-3.5_2.12/seglog-spark-3.5_2.12.jar -Pspark-3.5 -DskipTests
build seglog-spark-3.5_2.13.jar target/spark-3.5_2.13/seglog-spark-3.5_2.13.jar -Pspark-3.5 -Dscala.binary.version=2.13 -DskipTests
# a jar an earlier seglog built under the name every line shared
rm -f "$here/seglog/jars/seglog-spark.jar"
