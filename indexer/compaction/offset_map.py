"""The cleaner's key -> latest offset map over the dirty section (Kafka's OffsetMap), fed chunk by
chunk straight from the log's bytes (no decoded copy of a segment's keys is ever held).

Layout (the compiled path, `clean_kernels`): an arena of the distinct keys' bytes, per entry its
key's 64-bit hash, latest offset and arena start (24 bytes), and an open-addressing table of int32
entry numbers kept at most half full. Unlike Kafka's SkimpyOffsetMap, which keeps only a 16-byte
MD5 of each key and accepts that two keys with one hash become one (the older key's latest record
then dropped), this map keeps the keys themselves and compares them whole: a collision costs a probe,
never a record. The price is room: a 12-byte key takes 44-52 bytes here (its bytes, 24, a table
slot or two), about 27 in Kafka's map (24 bytes a slot at a 0.9 load) whatever the key's length; a
dirty section with more keys than the budget holds is cleaned over several passes, as in Kafka.

Memory (`memory_of`) is exactly what the arrays hold: key bytes + 24 per entry + 4 per table slot +
16 per undo entry (the value an entry had before the segment being added, kept to roll it back).
The arrays are reserved at the sizes the budget and the dirty section allow, and only the pages
written are ever resident.
Invariants:
- `memory_bytes` <= the budget given to `OffsetMapBuilder`; segments are added whole, and one that
  would overflow the budget is refused (`end_segment` returns False, the map as before it), so the
  map always covers a prefix of the dirty section ending at a segment boundary (`end`).
- For every key, the offset is the largest offset at which the key was added.
Without numba the same map is a dict (same answers, same memory count, slower).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from seglog.indexer.codec.kernels import native_kernels

ENTRY_BYTES = 24            # hash + offset + arena start
SLOT_BYTES = 4              # int32 entry number + 1 (0 = empty)
UNDO_BYTES = 16             # entry number + its offset before the segment
MIN_SLOTS = 16
MIN_RECORD_BYTES = 7        # a record's smallest encoding: length, attributes, deltas, key and value lengths, headers


def clean_kernels():
    """indexer.compaction.clean_kernels, or None when numba is unusable (kernels.native_kernels)."""
    if native_kernels() is None:
        return None
    from seglog.indexer.compaction import clean_kernels as k
    return k


def table_slots(entries: int) -> int:
    """Slots of a table holding `entries` at most half full (a power of two, for the probe mask)."""
    return max(MIN_SLOTS, 1 << max(0, 2 * entries - 1).bit_length())


def memory_of(entries: int, key_bytes: int, undo: int = 0) -> int:
    return key_bytes + ENTRY_BYTES * entries + SLOT_BYTES * table_slots(entries) + UNDO_BYTES * undo


class OffsetMap:
    """The built map: `latest_of` answers per record, `end` is where the mapped part ends."""

    def __init__(self, builder: "OffsetMapBuilder"):
        self._b = builder
        self.end = builder.end      # offsets below it were mapped (a segment boundary)

    @property
    def size(self) -> int:
        return self._b.entries

    @property
    def memory_bytes(self) -> int:
        return memory_of(self._b.entries, self._b.key_bytes)

    def latest_of(self, a: np.ndarray, kpos: np.ndarray, klen: np.ndarray) -> np.ndarray:
        """The latest mapped offset of each key a[kpos:kpos + klen], -1 where the key is not mapped
        or null (klen -1)."""
        return self._b.lookup(a, kpos, klen)

    def latest(self, keys: pa.Array) -> np.ndarray:
        """The same for an Arrow binary array (the reference filter's path)."""
        return self._b.lookup(*key_positions(keys))


def key_positions(keys: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bytes, start, length) of each key of an Arrow binary array in its own data buffer (-1: null)."""
    keys = keys.cast(pa.large_binary())
    n = len(keys)
    if n == 0:
        return np.zeros(0, np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64)
    offs = np.frombuffer(keys.buffers()[1], np.int64)[keys.offset:keys.offset + n + 1]
    data = keys.buffers()[2]
    a = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    klen = np.diff(offs)
    klen[keys.is_null().to_numpy(zero_copy_only=False)] = -1
    return a, offs[:-1].copy(), klen


class OffsetMapBuilder:
    """Adds the dirty section segment by segment, chunk by chunk, within `budget` bytes:
    `add(a, kpos, klen, offsets)` for the records of each chunk the map takes, then
    `end_segment(next_offset)` (or `drop_segment()`), then `build()`."""

    def __init__(self, budget: int, start: int, most_bytes: int | None = None):
        """`most_bytes`: the size of what will be mapped, when known (the dirty section's bytes): no
        array is reserved larger than that can fill (a budget far above it reserves nothing more)."""
        self.budget = budget
        self.end = start
        self.peak_bytes = 0
        self.entries = 0
        self.key_bytes = 0
        self._full = False            # the current segment did not fit
        self._segment_entries = 0     # entries before the current segment (the rollback point)
        self._k = clean_kernels()
        if self._k is None:
            self._dict: dict[bytes, int] = {}
            self._undo: dict[bytes, int | None] = {}
            return
        self._table = np.zeros(MIN_SLOTS, np.int32)
        # Reserved, not resident: np.empty maps pages only as the map writes them. A record takes at
        # least MIN_RECORD_BYTES of the log, so most_bytes bounds the keys, entries and undo entries.
        most = max(0, budget) if most_bytes is None else max(0, min(budget, most_bytes))
        cap = min(max(0, budget // ENTRY_BYTES), most // MIN_RECORD_BYTES + 1)
        undo = min(max(0, budget // UNDO_BYTES), most // MIN_RECORD_BYTES + 1)
        self._hashes = np.empty(cap, np.uint64)
        self._offsets = np.empty(cap, np.int64)
        self._kstart = np.zeros(cap + 1, np.int64)
        self._arena = np.empty(most, np.uint8)
        self._undo_e = np.empty(undo, np.int64)
        self._undo_o = np.empty(undo, np.int64)
        self._state = np.array([0, 0, 0, start], np.int64)

    def _used(self, undo: int) -> int:
        return memory_of(self.entries, self.key_bytes, undo)

    def add(self, a: np.ndarray, kpos: np.ndarray, klen: np.ndarray, offsets: np.ndarray) -> None:
        """Add the keys a[kpos:kpos + klen] (never null) at `offsets`, ascending, all >= `end`."""
        if self._full or not len(kpos):
            return
        if self._k is None:
            self._add_dict(a, kpos, klen, offsets)
            return
        k, st = self._k, self._state
        sel = np.arange(len(kpos), dtype=np.int64)
        i = 0
        while True:
            status, i = k.map_insert(a, kpos, klen, offsets, sel, i, self._table, self._hashes, self._kstart,
                                     self._offsets, self._arena, self._undo_e, self._undo_o, st)
            self.entries, self.key_bytes = int(st[0]), int(st[1])
            if status == k.NEED_GROW:
                if memory_of(self.entries + 1, self.key_bytes, int(st[2])) > self.budget:
                    status = k.FULL
                else:
                    self._table = np.zeros(2 * len(self._table), np.int32)
                    k.map_rehash(self._table, self._hashes, self.entries)
                    continue
            if status == k.FULL or self._used(int(st[2])) > self.budget:
                self._full = True
            break
        self.peak_bytes = max(self.peak_bytes, self._used(int(st[2])))

    def _add_dict(self, a, kpos, klen, offsets) -> None:
        raw = a.tobytes()
        for p, n, off in zip(kpos.tolist(), klen.tolist(), offsets.tolist()):
            key = raw[p:p + n]
            old = self._dict.get(key)
            if old is None or old < self.end:
                self._undo.setdefault(key, old)
            if old is None:
                self.entries += 1
                self.key_bytes += n
            if old is None or off > old:
                self._dict[key] = off
        undo = sum(1 for v in self._undo.values() if v is not None)
        self.peak_bytes = max(self.peak_bytes, self._used(undo))
        if self._used(undo) > self.budget:
            self._full = True

    def end_segment(self, next_offset: int) -> bool:
        """Close the segment's additions: kept (the map now ends at `next_offset`), or, when they
        outgrew the budget, rolled back and False."""
        if self._full:
            self.drop_segment()
            return False
        self.end = next_offset
        self._forget_undo()
        return True

    def drop_segment(self) -> None:
        """Undo everything added since the last `end_segment`."""
        if self._k is None:
            for key, old in self._undo.items():
                if old is None:
                    del self._dict[key]
                    self.entries -= 1
                    self.key_bytes -= len(key)
                else:
                    self._dict[key] = old
        else:
            st = self._state
            n0 = self._segment_entries
            for e, old in zip(self._undo_e[:st[2]].tolist(), self._undo_o[:st[2]].tolist()):
                if e < n0:
                    self._offsets[e] = old
            self.entries, self.key_bytes = n0, int(self._kstart[n0])
            self._table = np.zeros(table_slots(n0), np.int32)
            self._k.map_rehash(self._table, self._hashes, n0)
            st[0], st[1] = n0, self.key_bytes
        self._full = False
        self._forget_undo()

    def _forget_undo(self) -> None:
        if self._k is None:
            self._undo = {}
        else:
            self._state[2] = 0
            self._state[3] = self.end
            self._segment_entries = self.entries

    def lookup(self, a: np.ndarray, kpos: np.ndarray, klen: np.ndarray) -> np.ndarray:
        out = np.empty(len(kpos), np.int64)
        if self._k is None:
            raw = a.tobytes()
            for r, (p, n) in enumerate(zip(kpos.tolist(), klen.tolist())):
                out[r] = -1 if n < 0 else self._dict.get(raw[p:p + n], -1)
            return out
        self._k.map_lookup(a, kpos, klen, self._table, self._hashes, self._kstart, self._arena, self._offsets, out)
        return out

    def build(self) -> OffsetMap:
        return OffsetMap(self)
