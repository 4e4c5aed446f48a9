"""Spark integration: the foreachBatch sink and the `seglog` data source for replay reads.

Importing this package registers the `seglog` data source with the active Spark session, if
there is one; `register(spark)` registers it with any session (SPEC 8).
"""
from __future__ import annotations

from sink.register import register
from sink.segment_log_sink import SegmentLogSink

__all__ = ["SegmentLogSink", "register"]


def _register_with_active_session() -> None:
    try:
        from pyspark.sql import SparkSession
    except ImportError:  # pyspark not installed: the sink cannot run anyway; storage tools still can
        return
    active = SparkSession.getActiveSession()
    if active is not None:
        register(active)


_register_with_active_session()
