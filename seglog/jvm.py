"""seglog's Spark connector jar: where the wheel ships it and how a Spark session gets it.

The jar (built from `jvm/` by scripts/build-jar.sh) holds the Spark hot paths on the JVM: the `seglog`
reader and the executor-side write (docs/internals.md, "jvm/"). A ground module like `seglog.errors`:
it imports nothing first-party but errors (and `seglog.__version__`), so `seglog.sink` and `seglog.source` can both use it.

For your own session: `.config("spark.jars", seglog.jvm.jar_path())` (or `spark-submit --jars`).
"""
from __future__ import annotations

from pathlib import Path

import seglog
from seglog.errors import ConnectorJarError

JAR_NAME = "seglog-spark.jar"
CONNECTOR_CLASS = "io.seglog.spark.Connector"


def jar_path() -> str:
    """The connector jar installed with this seglog, as an absolute path."""
    path = Path(__file__).resolve().parent / "jars" / JAR_NAME
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
