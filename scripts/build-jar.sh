#!/usr/bin/env bash
# Build seglog's Spark connector (jvm/, a Maven project) into seglog/jars/seglog-spark.jar, where the
# wheel ships it as package data and seglog.jvm finds it. Maven resolves its dependencies as this
# machine configures it (settings.xml, mirrors, proxies); no registry address is written here.
# Idempotent: skipped when the jar is newer than every file under jvm/ and conf/topic.yaml (the jar
# carries the topic defaults; SEGLOG_JAR_FORCE=1 rebuilds).
# On failure it retries (a transient resolution failure), then prints Maven's own output.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
jar="$here/seglog/jars/seglog-spark.jar"
if [ -f "$jar" ] && [ -z "${SEGLOG_JAR_FORCE:-}" ] \
   && [ -z "$(find "$here/jvm/pom.xml" "$here/jvm/src" "$here/conf/topic.yaml" -newer "$jar" -print -quit)" ]; then
  exit 0
fi
command -v mvn >/dev/null || { echo "build-jar: Maven (mvn) is needed to build jvm/" >&2; exit 2; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
skip_tests=${SEGLOG_JAR_SKIP_TESTS:+-DskipTests}
for attempt in 1 2 3; do
  if mvn -q -B -f "$here/jvm/pom.xml" package $skip_tests > "$log" 2>&1; then
    mkdir -p "$(dirname "$jar")"
    cp "$here/jvm/target/seglog-spark.jar" "$jar.tmp" && mv "$jar.tmp" "$jar"
    echo "build-jar: $(du -h "$jar" | cut -f1) $jar" >&2
    exit 0
  fi
  echo "build-jar: attempt $attempt failed" >&2
  [ "$attempt" -lt 3 ] && sleep $((attempt * 5))
done
echo "build-jar: Maven's output from the last attempt:" >&2
cat "$log" >&2
exit 1
