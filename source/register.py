"""Registering the `seglog` data source with a Spark session (docs/spec.md §8).

`format("seglog")` is the JVM reader in the connector jar (`io.seglog.spark.SeglogProvider`, found
by Spark through the jar's `META-INF/services`). Spark 4.1 refuses a name registered both as a JVM
`DataSourceRegister` and as a Python data source (FOUND_MULTIPLE_DATA_SOURCES, in
`DataSource.lookupDataSource`; DATA_SOURCE_ALREADY_EXISTS at registration), so the Python reader is
registered only where the connector is not there, and only when asked for (`python_fallback=True`).

A Spark Connect session has no JVM on the client: the connector is asked for through Connect itself
(`_check_connect`), never through `sparkContext`.
"""
from __future__ import annotations

import seglog
from seglog.errors import ConnectorJarError

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
# What only the connector answers to `format("seglog").load()` with no path: its typed option error,
# raised in SeglogProvider.inferSchema when the plan is analysed (no file is touched).
_PROBE_CLASS = "io.seglog.spark.read.SeglogConfigException"
_PROBE_MESSAGE = "seglog source: no path given"


def register(spark, *, python_fallback: bool = False) -> str:
    """Make `format("seglog")` and `USING seglog` available in `spark`. Idempotent. Returns "jvm" or
    "python": which reader serves the session.

    The session (classic or Spark Connect) must have loaded seglog's connector jar (`spark.jars`, see
    `seglog.jvm.with_jar`; on Connect, the server's); without it this raises ConnectorJarError saying how
    to add it, unless `python_fallback=True` (a session that cannot load jars): then the Python reader
    (seglog.source.reader, slower, no streaming) is registered for this session (registration is per
    session). Where the connector is loaded, `python_fallback` registers nothing (the JVM reader serves:
    a Python source of the same name would make every `format("seglog")` fail): "jvm" is returned, or, for
    a connector of another version than this seglog's, ConnectorJarError is raised all the same.
    """
    try:
        if _is_connect(spark):
            _check_connect(spark)
        else:
            from seglog.jvm import check_session

            check_session(spark)
        return "jvm"
    except ConnectorJarError:
        if not python_fallback or _connector_answers(spark):
            raise
    from seglog.source.reader import SeglogDataSource

    spark.conf.set(PUSHDOWN_CONF, "true")
    spark.dataSource.register(SeglogDataSource)
    return "python"


def _is_connect(spark) -> bool:
    """A Spark Connect client session (pyspark.sql.connect), which holds no JVM."""
    return type(spark).__module__.startswith("pyspark.sql.connect.")


def _check_connect(spark) -> str:
    """The connector version the Connect server loaded; raises ConnectorJarError if `format("seglog")` is not
    the connector's there, or the server runs another version of it than this seglog."""
    from seglog.jvm import CONNECTOR_CLASS

    if not _connector_answers(spark):
        raise ConnectorJarError(
            f"the Spark Connect server has no seglog connector ({CONNECTOR_CLASS}): format('seglog') there is not "
            f"the connector's; start the server with --jars <seglog's jar> (`python -c 'import seglog.jvm; "
            f"print(seglog.jvm.jar_path())'` prints its path)")
    try:
        loaded = spark.sql(f"SELECT reflect('{CONNECTOR_CLASS}', 'version') AS v").first().v
    except Exception as exc:  # noqa: BLE001 - a server that refuses reflect cannot tell its connector's version
        raise ConnectorJarError(f"the Spark Connect server's seglog connector did not tell its version: "
                                f"{_first_line(exc)}") from exc
    if loaded != seglog.__version__:
        raise ConnectorJarError(f"the Spark Connect server loaded seglog connector {loaded}, but seglog "
                                f"{seglog.__version__} is installed here: start the server with this seglog's jar")
    return loaded


def _connector_answers(spark) -> bool:
    """Whether `format("seglog")` in `spark` (classic or Connect) is the connector's JVM reader: only it answers a
    read with no path with its SeglogConfigException (named in the server's stack trace, or by its message)."""
    try:
        spark.read.format("seglog").load().schema
    except Exception as exc:  # noqa: BLE001 - whatever else answered, it is not the connector
        trace = getattr(exc, "getStackTrace", lambda: None)()
        trace = trace if isinstance(trace, str) else ""
        return trace.lstrip().startswith(_PROBE_CLASS) or str(exc).lstrip().startswith(_PROBE_MESSAGE)
    return False


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines() or [type(exc).__name__])[0][:300]
