"""Registering the `seglog` data source with a Spark session (docs/spec.md §8)."""
from __future__ import annotations

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark) -> None:
    """Make `format("seglog")` and `USING seglog` available in `spark`. Idempotent.

    Registration is per session (docs/spark-notes.md): a session made later, or by `newSession()`, needs its
    own call. The reader honours pushed-down filters, and Spark refuses a Python reader that
    implements `pushFilters` while filter pushdown is off, so this turns it on for the session.
    """
    from seglog.source.reader import SeglogDataSource

    spark.conf.set(PUSHDOWN_CONF, "true")
    spark.dataSource.register(SeglogDataSource)
