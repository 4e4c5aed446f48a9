"""The cleaner's key -> latest offset map over the dirty section (Kafka's OffsetMap), built from
whole decoded chunks with Arrow's hash aggregation: no per-record Python.

It stores the keys themselves (exact, no hash collisions) and counts its memory as the key bytes
plus 16 bytes per entry (the offset and the key's position). Invariants:
- `memory_bytes` <= the budget given to `OffsetMapBuilder`; segments are added whole, and one that
  would overflow the budget is refused (`add_segment` returns False), so the map always covers a
  prefix of the dirty section ending at a segment boundary (`end`).
- For every key, the offset is the largest offset at which the key was added.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

ENTRY_OVERHEAD = 16


def _latest_per_key(keys: pa.Array, offsets: pa.Array) -> pa.Table:
    t = pa.table({"key": keys, "offset": offsets})
    return t.group_by("key").aggregate([("offset", "max")]).rename_columns(["key", "offset"])


class OffsetMap:
    def __init__(self, table: pa.Table | None = None, end: int = 0):
        self._table = table if table is not None else pa.table({"key": pa.array([], pa.binary()),
                                                                "offset": pa.array([], pa.int64())})
        self.end = end              # offsets below it were mapped (a segment boundary)
        self._keys = self._table.column("key").combine_chunks()
        self._offsets = self._table.column("offset").combine_chunks()

    @property
    def size(self) -> int:
        return self._table.num_rows

    @property
    def memory_bytes(self) -> int:
        return memory_of(self._table)

    def latest(self, keys: pa.Array) -> np.ndarray:
        """The latest mapped offset of each key, -1 where the key is not mapped (or null)."""
        if len(keys) == 0:
            return np.zeros(0, dtype=np.int64)
        if self.size == 0:
            return np.full(len(keys), -1, dtype=np.int64)
        idx = pc.index_in(keys, value_set=self._keys)
        got = pc.take(self._offsets, idx)
        return pc.fill_null(got, -1).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def memory_of(table: pa.Table) -> int:
    return int(pc.sum(pc.binary_length(table.column("key"))).as_py() or 0) + ENTRY_OVERHEAD * table.num_rows


class OffsetMapBuilder:
    """Adds the dirty section segment by segment, within `budget` bytes."""

    def __init__(self, budget: int, start: int):
        self.budget = budget
        self._table: pa.Table | None = None
        self.end = start
        self.peak_bytes = 0

    def add_segment(self, parts: list[tuple[pa.Array, pa.Array]], next_offset: int) -> bool:
        """Add one segment's (keys, offsets) pieces (keys never null); False, adding nothing, when
        the map would outgrow its budget."""
        keys = [k for k, _ in parts if len(k)]
        if keys:
            seg = _latest_per_key(pa.concat_arrays([k.cast(pa.binary()) for k in keys]),
                                  pa.concat_arrays([o for k, o in parts if len(k)]))
            merged = seg if self._table is None else _latest_per_key(
                pa.concat_arrays([self._table.column("key").combine_chunks(), seg.column("key").combine_chunks()]),
                pa.concat_arrays([self._table.column("offset").combine_chunks(),
                                  seg.column("offset").combine_chunks()]))
            used = memory_of(merged)
            self.peak_bytes = max(self.peak_bytes, used + (memory_of(self._table) if self._table is not None else 0))
            if used > self.budget:
                return False
            self._table = merged
        self.end = next_offset
        return True

    def build(self) -> OffsetMap:
        return OffsetMap(self._table, self.end)
