"""The sink's input columns (docs/spec.md §7), as Spark's Kafka sink: checked before anything is written.

    value      binary or string (required)
    key        binary or string
    topic      string (picks the topic per row)
    partition  int
    timestamp  timestamp
    headers    array<struct<key: string, value: binary>>

A known column of the wrong type is refused with an error naming the column and what is expected;
any other column is ignored, as Spark's Kafka sink ignores it (the `seglog` source's `offset`,
`timestampType`, ... included).
"""
from __future__ import annotations

from dataclasses import dataclass

from seglog.errors import SeglogError


class SinkSchemaError(SeglogError, ValueError):
    """The DataFrame given to the sink lacks `value`, or has a column of the wrong type."""


class SinkInputError(SeglogError, ValueError):
    """A row of the batch cannot be written (partition out of range, no topic); nothing was written."""


EXPECTED = {
    "value": "binary or string (required)",
    "key": "binary or string",
    "topic": "string",
    "partition": "int",
    "timestamp": "timestamp",
    "headers": "array<struct<key: string, value: binary>>",
}


@dataclass(frozen=True)
class InputColumns:
    """Which optional columns a batch has, and whether key/value arrive as strings."""

    has_key: bool
    has_topic: bool
    has_partition: bool
    has_timestamp: bool
    has_headers: bool
    value_is_string: bool
    key_is_string: bool


def _is_headers(dt) -> bool:
    from pyspark.sql.types import ArrayType, BinaryType, StringType, StructType

    if not isinstance(dt, ArrayType) or not isinstance(dt.elementType, StructType):
        return False
    fields = dt.elementType.fields
    return (len(fields) == 2 and fields[0].name == "key" and isinstance(fields[0].dataType, StringType)
            and fields[1].name == "value" and isinstance(fields[1].dataType, BinaryType))


def validate_schema(schema) -> InputColumns:
    """Check a Spark StructType against the sink's columns; raise SinkSchemaError naming the column."""
    from pyspark.sql.types import (BinaryType, ByteType, IntegerType, ShortType, StringType, TimestampNTZType,
                                   TimestampType)

    names = [f.name for f in schema.fields]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SinkSchemaError(f"the sink's input has duplicate columns {dupes}")
    by_name = {f.name: f.dataType for f in schema.fields}
    # Any other column (the `seglog` source's `offset`, `timestampType`, ...) is ignored, as
    # Spark's Kafka sink ignores it: a replay can be written back without a select.
    if "value" not in by_name:
        raise SinkSchemaError(f"the sink's input has no 'value' column ({EXPECTED['value']}); columns: {names}")

    def check(name: str, ok: bool) -> None:
        if not ok:
            raise SinkSchemaError(f"column '{name}' is {by_name[name].simpleString()}; expected {EXPECTED[name]}")

    binary_or_string = (BinaryType, StringType)
    check("value", isinstance(by_name["value"], binary_or_string))
    if "key" in by_name:
        check("key", isinstance(by_name["key"], binary_or_string))
    if "topic" in by_name:
        check("topic", isinstance(by_name["topic"], StringType))
    if "partition" in by_name:
        check("partition", isinstance(by_name["partition"], (IntegerType, ShortType, ByteType)))
    if "timestamp" in by_name:
        check("timestamp", isinstance(by_name["timestamp"], (TimestampType, TimestampNTZType)))
    if "headers" in by_name:
        check("headers", _is_headers(by_name["headers"]))
    return InputColumns(
        has_key="key" in by_name, has_topic="topic" in by_name, has_partition="partition" in by_name,
        has_timestamp="timestamp" in by_name, has_headers="headers" in by_name,
        value_is_string=isinstance(by_name["value"], StringType),
        key_is_string=isinstance(by_name.get("key"), StringType))
