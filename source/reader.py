"""The `seglog` data source: batch replay reads of a log root with Spark's Python Data Source API (docs/spec.md §8).

    spark.read.format("seglog").option("topic", "events").option("startingTimestamp", T).load(root)

The driver resolves each partition's offsets and cuts the work into tasks by bytes
(`source_planning`); each task opens readonly `Log`s, seeks with the indexes and yields Arrow
record batches in the schema's column order (Spark matches columns by position).

Pushed-down filters (Spark passes them only with spark.sql.python.filterPushdown.enabled, which
`sink.register` turns on) on `timestamp`, `offset`, `partition` and `topic` become seeks and
bounds; every filter reported as handled is applied exactly here (the row filter below), the
others are handed back to Spark.
"""
from __future__ import annotations

import datetime as _dt
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    LessThan,
    LessThanOrEqual,
)
from pyspark.sql.types import StructType

from seglog.errors import ConfigError, OffsetOutOfRangeError
from seglog.source.options import SourceOptions, parse_options
from seglog.source.planning import (
    ScanBounds,
    Slice,
    check_layout,
    data_loss_message,
    open_readonly,
    plan,
)

SCHEMA = ("key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
          "timestampType int")
HEADERS_FIELD = "headers array<struct<key:string,value:binary>>"
HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_NOT_NULL = frozenset({"topic", "partition", "offset", "timestamp", "timestampType"})
MAX_REOPENS = 5   # a segment vanishing mid-read: reopen and decide again (docs/spec.md §3.7), a bounded number of times


def arrow_schema(include_headers: bool) -> pa.Schema:
    fields = [("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()), ("partition", pa.int32()),
              ("offset", pa.int64()), ("timestamp", TIMESTAMP_TYPE), ("timestampType", pa.int32())]
    if include_headers:
        fields.append(("headers", HEADERS_TYPE))
    return pa.schema(fields)


class SeglogDataSource(DataSource):
    """`format("seglog")`: options are parsed (and refused) when the DataFrame is defined."""

    def __init__(self, options):
        super().__init__(options)
        self.parsed: SourceOptions = parse_options(options)

    @classmethod
    def name(cls) -> str:
        return "seglog"

    def schema(self) -> str:
        check_layout(self.parsed)  # unknown topic, incomplete offsets JSON: refused at load()
        return SCHEMA + (", " + HEADERS_FIELD if self.parsed.include_headers else "")

    def reader(self, schema: StructType) -> "SeglogReader":
        expected = arrow_schema(self.parsed.include_headers).names
        if list(schema.fieldNames()) != expected:
            raise ConfigError(f"seglog source: the schema is fixed ({', '.join(expected)}); "
                              f"got {', '.join(schema.fieldNames())}")
        return SeglogReader(self.parsed)


class SeglogPartition(InputPartition):
    """One task's work: offset slices of one or more partitions."""

    def __init__(self, slices: Sequence[Slice]):
        super().__init__(tuple(slices))
        self.slices = tuple(slices)


# ---------------------------------------------------------------------------------------------
# Filter pushdown: translate Spark's filters into ScanBounds.

def _micros(value) -> int | None:
    """A timestamp filter value as epoch microseconds (Spark passes UTC-aware datetimes)."""
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return (value - _EPOCH) // _dt.timedelta(microseconds=1)
    return None


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class BoundsBuilder:
    """Accumulates the AND of the pushed filters. Record timestamps are whole ms, Spark's are us:
    ts > x us  <=>  ms >= floor(x/1000)+1; ts >= x <=> ms >= ceil(x/1000); ts < x <=> ms <= ceil(x/1000)-1;
    ts <= x <=> ms <= floor(x/1000); ts = x matches only when x is a whole ms."""

    def __init__(self):
        self.b: dict = {}

    def _lower(self, key: str, v: int) -> None:
        self.b[key] = v if self.b.get(key) is None else max(self.b[key], v)

    def _upper(self, key: str, v: int) -> None:
        self.b[key] = v if self.b.get(key) is None else min(self.b[key], v)

    def _among(self, key: str, values) -> None:
        values = frozenset(values)
        self.b[key] = values if self.b.get(key) is None else self.b[key] & values

    def push(self, f: Filter) -> bool:
        """True when the filter is honoured exactly (planning plus the reader's row filter)."""
        if isinstance(f, IsNotNull):
            return f.attribute in ((c,) for c in _NOT_NULL)
        if not isinstance(f, (EqualTo, EqualNullSafe, GreaterThan, GreaterThanOrEqual, LessThan,
                              LessThanOrEqual, In)):
            return False
        if len(f.attribute) != 1:
            return False
        column = f.attribute[0]
        values = list(f.value) if isinstance(f, In) else [f.value]
        if column == "timestamp":
            micros = [_micros(v) for v in values]
            if any(m is None for m in micros):
                return False
            if isinstance(f, (EqualTo, EqualNullSafe, In)):
                self._among("ts_in", [m // 1000 for m in micros if m % 1000 == 0])
            else:
                (m,) = micros
                if isinstance(f, GreaterThan):
                    self._lower("ts_min", m // 1000 + 1)
                elif isinstance(f, GreaterThanOrEqual):
                    self._lower("ts_min", -((-m) // 1000))
                elif isinstance(f, LessThan):
                    self._upper("ts_max", -((-m) // 1000) - 1)
                else:
                    self._upper("ts_max", m // 1000)
            return True
        if column in ("offset", "partition"):
            ints = [_int(v) for v in values]
            if any(i is None for i in ints):
                return False
            lo_key, hi_key, in_key = f"{column}_min", f"{column}_max", f"{column}_in"
            if isinstance(f, (EqualTo, EqualNullSafe, In)):
                self._among(in_key, ints)
            elif isinstance(f, GreaterThan):
                self._lower(lo_key, ints[0] + 1)
            elif isinstance(f, GreaterThanOrEqual):
                self._lower(lo_key, ints[0])
            elif isinstance(f, LessThan):
                self._upper(hi_key, ints[0] - 1)
            else:
                self._upper(hi_key, ints[0])
            return True
        if column == "topic" and isinstance(f, (EqualTo, EqualNullSafe, In)):
            if not all(isinstance(v, str) for v in values):
                return False
            self._among("topic_in", values)
            return True
        return False

    def build(self) -> ScanBounds:
        return ScanBounds(**self.b)


# ---------------------------------------------------------------------------------------------
# Reading one task.

def row_mask(batch: pa.RecordBatch, bounds: ScanBounds):
    """The rows of a read_arrow batch that pass the pushed timestamp/offset filters (None: all)."""
    mask = None

    def both(m):
        return m if mask is None else pc.and_(mask, m)

    ts = batch.column("timestamp")
    if bounds.ts_min is not None:
        mask = both(pc.greater_equal(ts, bounds.ts_min))
    if bounds.ts_max is not None:
        mask = both(pc.less_equal(ts, bounds.ts_max))
    if bounds.ts_in is not None:
        mask = both(pc.is_in(ts, value_set=pa.array(sorted(bounds.ts_in), pa.int64())))
    if bounds.offset_in is not None:
        mask = both(pc.is_in(batch.column("offset"), value_set=pa.array(sorted(bounds.offset_in), pa.int64())))
    return mask


def constant_strings(text: str, n: int) -> pa.Array:
    """A string column holding `text` n times, built from buffers (no per-row Python)."""
    data = text.encode("utf-8")
    offsets = np.arange(n + 1, dtype=np.int32) * len(data)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data * n)])


def to_output(batch: pa.RecordBatch, topic: str, partition: int, schema: pa.Schema) -> pa.RecordBatch:
    """read_arrow's columns -> the source's schema, in order; timestamps ms -> us (exact)."""
    n = batch.num_rows
    columns = [
        batch.column("key"),
        batch.column("value"),
        constant_strings(topic, n),
        pa.array(np.full(n, partition, dtype=np.int32)),
        batch.column("offset"),
        pc.multiply(batch.column("timestamp"), 1000).cast(TIMESTAMP_TYPE),
        batch.column("timestampType").cast(pa.int32()),
    ]
    if len(schema) > 7:
        headers = batch.column("headers")
        columns.append(headers if headers.type == HEADERS_TYPE else headers.cast(HEADERS_TYPE))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def read_slice(opts: SourceOptions, bounds: ScanBounds, sl: Slice, schema: pa.Schema,
               opener=open_readonly) -> Iterator[pa.RecordBatch]:
    """Yield the slice's records as output batches. A start below the log start offset (retention
    ran since planning, or a segment vanished mid-read) fails naming the offsets, or with
    failOnDataLoss=false skips to the log start (docs/spec.md §3.7)."""
    position = sl.start
    reopens = 0
    filtering = bounds.needs_row_filter()
    while position < sl.end:
        try:
            log = opener(opts.root, sl.topic, sl.partition)
        except FileNotFoundError:
            raise OffsetOutOfRangeError(
                f"seglog source: {sl.topic}-{sl.partition}: the partition folder is gone; offsets "
                f"{position} to {sl.end - 1} cannot be read") from None
        try:
            log_start = log.log_start_offset
            if position < log_start:
                if opts.fail_on_data_loss:
                    raise OffsetOutOfRangeError(data_loss_message(sl.topic, sl.partition, position, log_start))
                position = log_start
                if position >= sl.end:
                    return
            try:
                for batch in log.read_arrow(position, sl.end, max_rows=opts.max_rows_per_batch,
                                            isolation_level=opts.isolation_level):
                    if batch.num_rows == 0:
                        continue
                    next_position = batch.column("offset")[-1].as_py() + 1
                    if filtering:
                        mask = row_mask(batch, bounds)
                        if mask is not None:
                            batch = batch.filter(mask)
                    if batch.num_rows:
                        yield to_output(batch, sl.topic, sl.partition, schema)
                    position = next_position
                return
            except (FileNotFoundError, OffsetOutOfRangeError):
                # A segment was renamed .deleted under us: reopen; the log start decides above.
                reopens += 1
                if reopens > MAX_REOPENS:
                    raise
        finally:
            log.close()


class SeglogReader(DataSourceReader):
    def __init__(self, opts: SourceOptions):
        self.opts = opts
        self.bounds = ScanBounds()

    def pushFilters(self, filters: list[Filter]) -> list[Filter]:
        if not self.opts.filter_pushdown:
            return list(filters)
        builder = BoundsBuilder()
        unhandled = [f for f in filters if not builder.push(f)]
        self.bounds = builder.build()
        return unhandled  # Spark applies these after the scan

    def partitions(self) -> list[SeglogPartition]:
        return [SeglogPartition(task) for task in plan(self.opts, self.bounds)]

    def read(self, partition) -> Iterator[pa.RecordBatch]:
        if partition is None:  # Spark's placeholder when there is nothing to read
            return iter(())
        schema = arrow_schema(self.opts.include_headers)
        return (batch for sl in partition.slices for batch in read_slice(self.opts, self.bounds, sl, schema))
