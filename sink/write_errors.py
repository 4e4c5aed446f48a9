"""The `format("seglog")` write's refusals as seglog's typed errors (seglog/errors.py).

The connector jar names each refusal in its message, `seglog <ErrorName>: <detail>` (a record refused by a
task: too large, timestamp out of range, a missing key, ...; a topic conflict; a roll back below the remote end) or `seglog write: <detail>`
(a row or request the write cannot take: a partition out of range, null topics, a missing topic, no query
to name the writer). The message reaches Python as text: inside a py4j error in classic PySpark, inside a
SparkConnectGrpcException under Spark Connect, often wrapped in Spark's job failure. The first such line is
the refusal; its detail is the error's message.
"""
from __future__ import annotations

import re

from seglog.errors import (ConnectorJarError, InvalidRecordError, InvalidTopicError, MissingKeyError, OffsetOutOfRangeError,
                           PartitionLockedError, RecordTooLargeError, SeglogError, TimestampOutOfRangeError)
from seglog.sink.input_schema import SinkInputError, SinkSchemaError

KINDS: dict[str, type[SeglogError]] = {
    "RecordTooLargeError": RecordTooLargeError,
    "TimestampOutOfRangeError": TimestampOutOfRangeError,
    "MissingKeyError": MissingKeyError,
    "InvalidRecordError": InvalidRecordError,
    "InvalidTopicError": InvalidTopicError,
    "OffsetOutOfRangeError": OffsetOutOfRangeError,   # a roll back below the remote end (docs/tiered-storage.md §4)
}
_REFUSAL = re.compile(r"seglog (?:(?P<kind>[A-Za-z]+Error)|write): (?P<detail>[^\n]*)")
_LOCKED = re.compile(r"LockedException: (?P<detail>[^\n]*is locked by another writer[^\n]*)")
_SPARK_SUFFIX = re.compile(r"\s*(SQLSTATE: \w+|\(\w+\.(?:scala|java):\d+\)).*$")


def _detail(text: str) -> str:
    return _SPARK_SUFFIX.sub("", text).strip()


def typed_error(exc: BaseException) -> SeglogError | None:
    """The typed error a failed write means, or None when it is no refusal of the write (re-raise as is)."""
    text = str(exc)
    m = _REFUSAL.search(text)
    if m is not None:
        detail = _detail(m.group("detail"))
        kind = m.group("kind")
        if kind is None:
            if "column '" in detail or "'value' column" in detail or "duplicate columns" in detail:
                return SinkSchemaError(detail)
            return SinkInputError(detail)
        return KINDS.get(kind, InvalidRecordError)(detail)
    if "DATA_SOURCE_NOT_FOUND" in text and "seglog" in text:
        from seglog.jvm import jar_path

        return ConnectorJarError(f"this Spark session has no seglog connector (format(\"seglog\") is unknown): start "
                                 f"it with spark.jars={jar_path()} (seglog.jvm.with_jar)")
    m = _LOCKED.search(text)
    if m is not None:
        return PartitionLockedError(_detail(m.group("detail")))
    return None
