"""Registering the `seglog` data source with a Spark session (docs/spec.md §8).

`format("seglog")` is the JVM reader in the connector jar (`io.seglog.spark.read.SeglogProvider`, found
by Spark through the jar's `META-INF/services`). Spark 4.1 refuses a name registered both as a JVM
`DataSourceRegister` and as a Python data source (FOUND_MULTIPLE_DATA_SOURCES, in
`DataSource.lookupDataSource`), so the Python reader is registered only where the jar cannot be
loaded, and only when asked for (`python_fallback=True`).
"""
from __future__ import annotations

from seglog.errors import ConnectorJarError

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark, *, python_fallback: bool = False) -> str:
    """Make `format("seglog")` and `USING seglog` available in `spark`. Idempotent. Returns "jvm" or
    "python": which reader serves the session.

    The session must have loaded seglog's connector jar (`spark.jars`, see `seglog.jvm.with_jar`);
    without it this raises ConnectorJarError saying how to add it, unless `python_fallback=True`
    (a session that cannot load jars): then the Python reader (seglog.source.reader, slower, no
    streaming) is registered for this session (registration is per session).
    """
    from seglog.jvm import check_session

    try:
        check_session(spark)
        return "jvm"
    except ConnectorJarError:
        if not python_fallback:
            raise
    from seglog.source.reader import SeglogDataSource

    spark.conf.set(PUSHDOWN_CONF, "true")
    spark.dataSource.register(SeglogDataSource)
    return "python"
