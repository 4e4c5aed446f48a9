#!/usr/bin/env bash
# Resolve S3A (hadoop-aws matching the Hadoop that pyspark ships, and the AWS SDK modules it needs) with
# Maven (scripts/lib/resolve-jars.sh) into a local folder that seglog.sink.session.local_session(with_s3a=True)
# passes to Spark as `spark.jars`: the tests read tiered segments through s3a:// from the loopback S3 server,
# as a user adds hadoop-aws for any s3a use. The connector jar never bundles these.
#
# Not hadoop-aws's declared SDK dependency (software.amazon.awssdk:bundle, ~600 MB; v1's aws-java-sdk-bundle for
# Hadoop 3.3, ~280 MB): the SDK modules S3A uses (s3, s3-transfer-manager, sts and what they pull in), about 18 MB.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-$here/.venv/bin/python}
# hadoop-aws's version is the Hadoop that pyspark ships (hadoop-client-api-<version>.jar); the SDK's is the
# one that hadoop-aws release declares.
read -r hadoop sdk < <("$py" - <<'PY'
import pathlib, re
import pyspark
jars = pathlib.Path(pyspark.__file__).parent / "jars"
v = next(re.match(r"hadoop-client-api-(.+)\.jar$", p.name).group(1) for p in jars.glob("hadoop-client-api-*.jar"))
# hadoop-project's aws-java-sdk(-v2).version per Hadoop that a supported pyspark ships (seglog.jvm.JARS):
# Hadoop 3.3.x's S3A is on the AWS SDK v1, 3.4 on v2. 3.4.1 declares 2.24.6, whose s3-transfer-manager Maven
# Central here does not serve: 3.4.2's SDK, the nearest it has, runs 3.4.1's S3A (pyspark 4.0.5's smoke reads s3a)
sdk = {"3.3.4": "1.12.262", "3.4.1": "2.29.52", "3.4.2": "2.29.52", "3.5.0": "2.35.4"}.get(v)
if sdk is None:
    raise SystemExit(f"s3a-jars: no AWS SDK version known for Hadoop {v}: add hadoop-aws {v}'s to scripts/s3a-jars.sh")
print(v, sdk)
PY
)
dest=${SEGLOG_S3A_JARS:-${XDG_CACHE_HOME:-$HOME/.cache}/seglog/jars/hadoop-aws-$hadoop}
sdkdep() { echo "<dependency><groupId>software.amazon.awssdk</groupId><artifactId>$1</artifactId><version>$sdk</version></dependency>"; }
v1dep() { echo "<dependency><groupId>com.amazonaws</groupId><artifactId>$1</artifactId><version>$sdk</version></dependency>"; }
# the SDK's modules S3A uses, not its bundle: v1's bundle is com.amazonaws:aws-java-sdk-bundle (~280 MB)
case $sdk in
  1.*) sdkdeps="$(v1dep aws-java-sdk-s3) $(v1dep aws-java-sdk-sts) $(v1dep aws-java-sdk-dynamodb)"
       nobundle="<exclusion><groupId>com.amazonaws</groupId><artifactId>aws-java-sdk-bundle</artifactId></exclusion>" ;;
  *)   sdkdeps="$(sdkdep s3) $(sdkdep s3-transfer-manager) $(sdkdep sts)"
       nobundle="<exclusion><groupId>software.amazon.awssdk</groupId><artifactId>bundle</artifactId></exclusion>" ;;
esac
. "$here/scripts/lib/resolve-jars.sh"
resolve_jars s3a-jars "$dest" \
  "<dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-aws</artifactId><version>$hadoop</version><exclusions>$nobundle</exclusions></dependency> $sdkdeps" \
  "hadoop-aws $hadoop"
