# Sourced by scripts/*-jars.sh: resolve_jars NAME DEST DEPENDENCIES [WHAT]
# Resolves DEPENDENCIES (<dependency> elements) and what they need at runtime with Maven, as this machine
# configures it (its settings.xml, mirrors and proxies), into DEST, which Spark is then given as `spark.jars`.
# No registry address is written anywhere. Idempotent: a finished folder is kept (its `.complete` marker), so a
# second run is offline. On failure it retries twice, then prints Maven's own output and exits non-zero.
resolve_jars() {
  local name=$1 dest=$2 deps=$3 what=${4:-$1}
  [ -f "$dest/.complete" ] && return 0
  local work
  work=$(mktemp -d)
  # shellcheck disable=SC2064  # expanded now: the folder of this call
  trap "rm -rf '$work'" EXIT
  cat > "$work/pom.xml" <<POM
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>seglog.setup</groupId>
  <artifactId>$name</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    $deps
  </dependencies>
</project>
POM
  local attempt
  for attempt in 1 2 3; do
    if mvn -q -B -f "$work/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
         -DoutputDirectory="$work/jars" > "$work/mvn.log" 2>&1; then
      rm -rf "$dest"; mkdir -p "$(dirname "$dest")"
      mv "$work/jars" "$dest" && touch "$dest/.complete"
      echo "$name: $(ls "$dest" | grep -c '\.jar$') jars ($(du -sh "$dest" | cut -f1)) in $dest" >&2
      return 0
    fi
    echo "$name: attempt $attempt to resolve $what failed" >&2
    [ "$attempt" -lt 3 ] && sleep $((attempt * 5))
  done
  echo "$name: Maven's output from the last attempt:" >&2
  cat "$work/mvn.log" >&2
  exit 1
}
