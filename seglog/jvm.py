"""seglog's Spark connector jars: where the wheel ships them, which one a Spark line loads, and how a
Spark session gets it.

The jars (built from `jvm/` by scripts/build-jar.sh) hold the Spark hot paths on the JVM: the `seglog`
reader and the executor-side write (docs/internals.md, "jvm/"). A ground module like `seglog.errors`:
it imports nothing first-party but errors (and `seglog.__version__`), so `seglog.sink` and `seglog.source` can both use it.

For your own session: `.config("spark.jars", seglog.jvm.jar_path())` (or `spark-submit --jars`): the jar
for the pyspark this process runs (or pass the Spark version your cluster runs).
"""
from __future__ import annotations

import re
from pathlib import Path

import seglog
from seglog.errors import ConnectorJarError, UnsupportedSparkError

CONNECTOR_CLASS = "io.seglog.spark.Connector"

# The one home of which connector jar serves which Spark line and Scala version (README's table,
# docs/spark-notes.md). Spark 4.0 to 4.3 share one jar (their APIs allow it: CI checks it on each line);
# Spark 3.5 (Scala 2.12, Hadoop 3.3.4) has its own build (jvm/pom.xml, profile spark-3.5).
JARS = {
    ("3.5", "2.12"): "seglog-spark-3.5_2.12.jar",
    ("3.5", "2.13"): "seglog-spark-3.5_2.13.jar",    # Spark 3.5's Scala 2.13 build (pip's pyspark is 2.12)
    ("4.0", "2.13"): "seglog-spark-4_2.13.jar",
    ("4.1", "2.13"): "seglog-spark-4_2.13.jar",
    ("4.2", "2.13"): "seglog-spark-4_2.13.jar",
    ("4.3", "2.13"): "seglog-spark-4_2.13.jar",
}
# the Scala version a line's pip pyspark ships, when its jars do not say
_DEFAULT_SCALA = {"3.5": "2.12"}


def supported() -> str:
    """The Spark lines this seglog has a connector for, as users read them: `3.5 (Scala 2.12), 4.0 (...)`."""
    return ", ".join(f"{line} (Scala {scala})" for line, scala in JARS)


def _running_spark() -> tuple[str, str | None]:
    """The installed pyspark's version and the Scala version of the jars it ships (None if it ships none)."""
    try:
        import pyspark
    except ImportError:
        raise ConnectorJarError("pyspark is not installed here, so seglog cannot tell which connector jar "
                                "your Spark needs: pass its version, e.g. seglog.jvm.jar_path('4.1.1') "
                                f"(supported: {supported()})") from None
    scala = None
    for p in (Path(pyspark.__file__).parent / "jars").glob("scala-library-*.jar"):
        m = re.fullmatch(r"scala-library-(\d+\.\d+)\.\d+\.jar", p.name)
        scala = m.group(1) if m else scala
    return pyspark.__version__, scala


def jar_for(spark_version: str, scala_version: str | None = None) -> str:
    """The jar's file name for Spark `spark_version` (`4.3.0`, `3.5`) built for Scala `scala_version`
    (default: the Scala that line's pyspark ships); UnsupportedSparkError for a line seglog has none for."""
    m = re.match(r"(\d+)\.(\d+)(?:[.\-+]|$)", spark_version or "")
    line = f"{m.group(1)}.{m.group(2)}" if m else None
    scala = scala_version or _DEFAULT_SCALA.get(line, "2.13")
    name = JARS.get((line, scala))
    if name is None:
        raise UnsupportedSparkError(
            f"seglog {seglog.__version__} has no Spark connector for Spark {spark_version!r} with Scala {scala}: "
            f"it supports Spark {supported()}")
    return name


def jar_path(spark_version: str | None = None, scala_version: str | None = None) -> str:
    """The connector jar installed with this seglog for Spark `spark_version` (default: the pyspark this
    process runs, with the Scala its jars are built for), as an absolute path."""
    if spark_version is None:
        spark_version, found = _running_spark()
        scala_version = scala_version or found
    path = Path(__file__).resolve().parent / "jars" / jar_for(spark_version, scala_version)
    if not path.is_file():
        raise ConnectorJarError(
            f"seglog's Spark connector jar is not at {path}: a source checkout builds it with "
            f"`bash scripts/build-jar.sh` (scripts/setup.sh does); an installed wheel ships it")
    return str(path)


def with_jar(spark_jars: str | None) -> str:
    """A `spark.jars` value that also holds the connector jar (kept once, first)."""
    jar = jar_path()
    rest = [j for j in (spark_jars or "").split(",") if j and j != jar]
    return ",".join([jar, *rest])


def check_session(spark) -> str:
    """The connector version that `spark`'s JVM loaded; raises ConnectorJarError if it has none, or a
    version other than this seglog's."""
    try:
        loaded = spark.sparkContext._jvm.io.seglog.spark.Connector.version()
    except Exception as exc:  # py4j reports a missing class as a callable JavaPackage, or an error
        raise ConnectorJarError(
            f"this Spark session has no seglog connector ({CONNECTOR_CLASS}): start it with "
            f"spark.jars={jar_path()} (seglog.jvm.with_jar)") from exc
    if not isinstance(loaded, str):
        raise ConnectorJarError(
            f"this Spark session has no seglog connector ({CONNECTOR_CLASS}): start it with "
            f"spark.jars={jar_path()} (seglog.jvm.with_jar)")
    installed = seglog.__version__
    if loaded != installed:
        raise ConnectorJarError(f"this Spark session loaded seglog connector {loaded}, but seglog "
                                f"{installed} is installed: put {jar_path()} on spark.jars")
    return loaded
