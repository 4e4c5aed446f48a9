"""The `seglog` Spark data source: replay reads from a timestamp or an offset (docs/spec.md section 8).

Importing this package registers the source with the active Spark session, if there is one;
`register(spark)` registers it with any session (a session created after the import needs it).
"""
from __future__ import annotations

from seglog.source.register import register

__all__ = ["register"]


def _register_with_active_session() -> None:
    try:
        from pyspark.sql import SparkSession
    except ImportError:  # pyspark not installed: storage tools still work without it
        return
    from seglog.errors import ConnectorJarError

    active = SparkSession.getActiveSession()
    if active is not None:
        try:
            register(active)
        except ConnectorJarError:  # no jar in that session: register(spark) says what to do when called
            pass


_register_with_active_session()
