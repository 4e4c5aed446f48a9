"""A local Spark session sized for a small machine, for the demo, the tests and the benchmarks.

Production jobs bring their own session; this one exists so that every local entry point (demo,
tests, bench) starts Spark the same way, with the settings the seglog paths rely on.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from seglog.jvm import with_jar

# Local runs print Spark's warnings only from ERROR up (the demo's output stays readable).
_LOG4J2 = """rootLogger.level = error
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def _cached_file(name: str, text: str) -> str:
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "seglog"
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / name
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return str(path)


def _artifact(jar_name: str) -> str:
    """`parquet-column-1.16.0.jar` -> `parquet-column` (the name without its version)."""
    return re.sub(r"-\d[^-]*(-[A-Za-z0-9.]+)?\.jar$", "", jar_name)


def delta_jars() -> list[str]:
    """Delta's jars as `scripts/delta-jars.sh` resolved them with Maven, minus the artifacts Spark
    ships itself (Spark's own versions win, as with `spark.jars.packages`)."""
    import importlib.metadata

    import pyspark

    mm = ".".join(pyspark.__version__.split(".")[:2])
    artifact = f"delta-spark_{mm}_2.13-{importlib.metadata.version('delta-spark')}"
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "seglog" / "jars"
    folder = Path(os.environ.get("SEGLOG_DELTA_JARS", cache / artifact))
    if not (folder / ".complete").exists():
        raise RuntimeError(f"Delta's jars are not in {folder}: run `bash scripts/delta-jars.sh` "
                           f"(scripts/setup-test.sh does)")
    spark_own = {_artifact(p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    return sorted(str(p) for p in folder.glob("*.jar") if _artifact(p.name) not in spark_own)


def s3a_jars() -> list[str]:
    """S3A's jars (hadoop-aws and the AWS SDK modules it needs) as `scripts/s3a-jars.sh` resolved them,
    minus the artifacts Spark ships itself: what a user adds to read a remote tier through s3a://."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    hadoop = next(jars.glob("hadoop-client-api-*.jar")).name[len("hadoop-client-api-"):-len(".jar")]
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "seglog" / "jars"
    folder = Path(os.environ.get("SEGLOG_S3A_JARS", cache / f"hadoop-aws-{hadoop}"))
    if not (folder / ".complete").exists():
        raise RuntimeError(f"S3A's jars are not in {folder}: run `bash scripts/s3a-jars.sh` (scripts/setup-test.sh does)")
    spark_own = {_artifact(p.name) for p in jars.glob("*.jar")}
    return sorted(str(p) for p in folder.glob("*.jar") if _artifact(p.name) not in spark_own)


def kafka_connector_jars() -> list[str]:
    """Spark's own Kafka connector (spark-sql-kafka-0-10_2.13 at this pyspark's version) as
    `scripts/kafka-connector-jars.sh` resolved it with Maven, minus the artifacts Spark ships itself:
    the baseline users compare `format("seglog")` with (bench/kafka.py)."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "seglog" / "jars"
    folder = Path(os.environ.get("SEGLOG_KAFKA_CONNECTOR_JARS",
                                 cache / f"spark-sql-kafka-0-10_2.13-{pyspark.__version__}"))
    if not (folder / ".complete").exists():
        raise RuntimeError(f"Spark's Kafka connector jars are not in {folder}: run `bash scripts/kafka-connector-jars.sh`")
    spark_own = {_artifact(p.name) for p in jars.glob("*.jar")}
    return sorted(str(p) for p in folder.glob("*.jar") if _artifact(p.name) not in spark_own)


def local_session(app_name: str = "seglog", *, cores: int = 2, with_delta: bool = False, with_s3a: bool = False,
                  with_kafka: bool = False, driver_memory: str = "4g", jvm_options: str = "",
                  extra_conf: dict[str, str] | None = None):
    """`jvm_options`: more options for the driver JVM (e.g. the tests' `-XX:ErrorFile`), after the
    log settings. `with_s3a`: S3A's jars (scripts/s3a-jars.sh) on spark.jars, for a remote tier on s3a://.
    `with_kafka`: Spark's Kafka connector (scripts/kafka-connector-jars.sh), `format("kafka")`."""
    from pyspark.sql import SparkSession

    # Python workers must run this interpreter, or they will not find pyarrow or seglog.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")   # a local session needs no other interface
    builder = (
        SparkSession.builder.master(f"local[{cores}]").appName(app_name)
        .config("spark.driver.memory", driver_memory)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(max(2, cores * 2)))
        .config("spark.default.parallelism", str(cores))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100000")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.sql.streaming.stopGracefullyOnShutdown", "true")
        .config("spark.python.worker.reuse", "true")
        # Workers fork from a daemon that has loaded seglog and its compiled codec already.
        .config("spark.python.daemon.module", "seglog.worker_daemon")
        .config("spark.driver.extraJavaOptions",
                f"-Dlog4j2.configurationFile=file:{_cached_file('log4j2.properties', _LOG4J2)} {jvm_options}".strip())
    )
    # seglog's connector jar (the JVM reader and writer) first, then Delta's when asked for.
    extra = ((delta_jars() if with_delta else []) + (s3a_jars() if with_s3a else [])
             + (kafka_connector_jars() if with_kafka else []))
    builder = builder.config("spark.jars", with_jar(",".join(extra) or None))
    if with_delta:
        builder = (builder
                   .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
                   .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"))
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
