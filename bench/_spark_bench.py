"""Helpers for the Spark benchmarks: deterministic replay data, and the ceiling for any Python source.

The ceiling (`ArrowCeilingSource`, format name `seglog_ceiling`) is a Python data source whose
reader yields prepared Arrow record batches of the seglog source's schema from memory: what any
Python source costs Spark to move rows from a Python worker into the JVM, with no reading or
decoding at all. The batches are built once per Python worker process (kept in a module global;
Spark reuses workers) and the same objects are yielded again and again, so a warm run measures the
transfer alone.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

TS0 = 1_700_000_000_000            # first record timestamp (ms)
KEY_BYTES = 16
VALUE_BYTES = 200
TOPIC = "events"
_POOL_BYTES = 32 << 20             # random bytes the values are cut from (not one fresh byte per row)

_SCHEMA = pa.schema([("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
                     ("partition", pa.int32()), ("offset", pa.int64()),
                     ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32())])
CEILING_SCHEMA = ("key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
                  "timestampType int")


def _pool(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=_POOL_BYTES, dtype=np.uint8)


def fixed_binary(pool: np.ndarray, n: int, width: int, shift: int) -> pa.Array:
    """n values of `width` bytes cut from the pool (contiguous window starting at `shift`)."""
    total = n * width
    start = shift % max(1, len(pool) - total) if total < len(pool) else 0
    data = pool[start:start + total] if total <= len(pool) else np.resize(pool, total)
    offsets = np.arange(0, total + 1, width, dtype=np.int32)
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(data))])


def global_rows(lo: int, hi: int, partitions: int, pool: np.ndarray):
    """Rows [lo, hi) of the global stream: row g has timestamp TS0 + g ms and goes to partition
    g % partitions (so every partition's timestamps increase and the global order is by time)."""
    n = hi - lo
    g = np.arange(lo, hi, dtype=np.int64)
    keys = fixed_binary(pool, n, KEY_BYTES, lo * 7)
    values = fixed_binary(pool, n, VALUE_BYTES, lo * 13 + 1)
    return g, keys, values


# ---------------------------------------------------------------------------------------------
# The ceiling source.

def _cache() -> dict:
    """A per-process cache that survives this module being unpickled afresh for every task
    (the bench registers it to be pickled by value, so its own globals do not persist)."""
    import sys
    cache = getattr(sys, "_seglog_ceiling_cache", None)
    if cache is None:
        cache = {}
        sys._seglog_ceiling_cache = cache
    return cache


def _prepared(rows_per_batch: int, distinct: int) -> list[pa.RecordBatch]:
    key = (rows_per_batch, distinct)
    _CACHE = _cache()
    got = _CACHE.get(key)
    if got is None:
        pool = _pool(11)
        got = []
        for b in range(distinct):
            n = rows_per_batch
            ts = (TS0 + np.arange(b * n, (b + 1) * n, dtype=np.int64)) * 1000
            data = b"events" * n
            got.append(pa.RecordBatch.from_arrays([
                fixed_binary(pool, n, KEY_BYTES, b * 977),
                fixed_binary(pool, n, VALUE_BYTES, b * 7919 + 3),
                pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(np.arange(n + 1, dtype=np.int32) * 6),
                                                       pa.py_buffer(data)]),
                pa.array(np.zeros(n, dtype=np.int32)),
                pa.array(np.arange(b * n, (b + 1) * n, dtype=np.int64)),
                pa.array(ts, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                pa.array(np.zeros(n, dtype=np.int32)),
            ], schema=_SCHEMA))
        _CACHE.clear()
        _CACHE[key] = got
    return got


class _CeilingPartition(InputPartition):
    def __init__(self, rows: int):
        super().__init__(rows)
        self.rows = rows


class _CeilingReader(DataSourceReader):
    def __init__(self, options):
        self.task_rows = [int(x) for x in options["taskrows"].split(",")]
        self.rows_per_batch = int(options.get("rowsperbatch", "16384"))
        self.distinct = int(options.get("distinct", "8"))

    def partitions(self):
        return [_CeilingPartition(r) for r in self.task_rows]

    def read(self, partition):
        batches = _prepared(self.rows_per_batch, self.distinct)
        left, i = partition.rows, 0
        while left > 0:
            b = batches[i % len(batches)]
            if left < b.num_rows:
                b = b.slice(0, left)
            yield b
            left -= b.num_rows
            i += 1


class ArrowCeilingSource(DataSource):
    """format("seglog_ceiling").option("taskRows", "n1,n2,...").option("rowsPerBatch", ...)"""

    @classmethod
    def name(cls) -> str:
        return "seglog_ceiling"

    def schema(self) -> str:
        return CEILING_SCHEMA

    def reader(self, schema):
        return _CeilingReader(self.options)
