"""What a Kafka consumer returns from batches with transactions (docs/kafka.md, "Transactions").

- Control batches (attribute bit 5) hold COMMIT/ABORT markers, never data: no reader returns them.
- `read_uncommitted` (Kafka's consumer default, and what Spark's Kafka source uses unless
  `kafka.isolation.level` says otherwise): every data record, aborted or not.
- `read_committed`: also skips the records of aborted transactions. A transactional batch (bit 4) of
  producer P belongs to the transaction that P's next control marker after it ends: an ABORT marker
  aborts every open transactional batch of P before it (what the broker's `.txnindex` records and
  the consumer's aborted-transactions list applies). A transaction with no marker yet is still open:
  a read_committed consumer stops at its first offset (the last stable offset): neither its records
  nor any later record is returned.

`TransactionFates` answers "is this batch aborted?" by walking batch headers forward from the first
transactional batch a read meets, only as far as the markers it needs (headers only; the control
batch's one record is decoded for its type).
"""
from __future__ import annotations

import bisect
import struct

import numpy as np

from seglog.errors import ConfigError, CorruptRecordError
from seglog.indexer.batch_layout import CONTROL_FLAG_MASK, TRANSACTIONAL_FLAG_MASK

READ_UNCOMMITTED = "read_uncommitted"
READ_COMMITTED = "read_committed"
ISOLATION_LEVELS = (READ_UNCOMMITTED, READ_COMMITTED)
DEFAULT_ISOLATION_LEVEL = READ_UNCOMMITTED     # Kafka's consumer default (ConsumerConfig), as Spark's source

ABORT, COMMIT = 0, 1                           # control record types (the key's second int16)
_CONTROL_KEY = struct.Struct(">hh")            # version, type


def check_isolation_level(level: str) -> str:
    if level not in ISOLATION_LEVELS:
        raise ConfigError(f"isolation level {level!r} is not one of {', '.join(ISOLATION_LEVELS)}")
    return level


def control_type(records) -> int:
    """ABORT or COMMIT, from a control batch's decoded records (one record; key = version, type)."""
    if not records or records[0].key is None or len(records[0].key) < _CONTROL_KEY.size:
        raise CorruptRecordError("a control batch without a control record key (version, type)")
    return _CONTROL_KEY.unpack_from(records[0].key)[1]


class TransactionFates:
    """Lazily learns the control markers after a starting offset. `walk` yields
    (producer id, marker offset, type) for every control batch at or after the offset it is given,
    in offset order (the Log walks its own batches)."""

    def __init__(self, walk):
        self._walk = walk
        self._markers: dict[int, tuple[list[int], list[int]]] = {}
        self._cursor = None
        self._done = False

    def _advance(self, from_offset: int) -> bool:
        if self._done:
            return False
        if self._cursor is None:
            self._cursor = iter(self._walk(from_offset))
        try:
            pid, offset, kind = next(self._cursor)
        except StopIteration:
            self._done = True
            return False
        offsets, kinds = self._markers.setdefault(pid, ([], []))
        offsets.append(offset)
        kinds.append(kind)
        return True

    def fate(self, producer_id: int, base_offset: int) -> int | None:
        """COMMIT or ABORT: the type of the producer's next marker after `base_offset`; None when
        there is none yet (an open transaction)."""
        while True:
            offsets, kinds = self._markers.get(producer_id, ((), ()))
            i = bisect.bisect_right(offsets, base_offset)
            if i < len(offsets):
                return kinds[i]
            if not self._advance(base_offset):
                return None


def visible_batches(headers, attributes: np.ndarray, isolation: str, fates_for) -> tuple[np.ndarray | None, int | None]:
    """(mask, stop): a boolean mask of the batches a consumer with `isolation` returns records from,
    or None when every batch is (no control or transactional batch: the common case, one vectorised
    test); and, under read_committed, the first offset of an open transaction met here (the last
    stable offset: a read_committed consumer returns nothing from there on), else None.
    `fates_for()` gives the TransactionFates to ask (made on first need)."""
    flags = attributes & (CONTROL_FLAG_MASK | TRANSACTIONAL_FLAG_MASK)
    if not flags.any():
        return None, None
    keep = (attributes & CONTROL_FLAG_MASK) == 0
    stop = None
    if isolation == READ_COMMITTED:
        fates = None
        for k in np.flatnonzero(keep & ((attributes & TRANSACTIONAL_FLAG_MASK) != 0)):
            h = headers[int(k)]
            fates = fates or fates_for()
            fate = fates.fate(h.producer_id, h.base_offset)
            keep[k] = fate == COMMIT
            if fate is None:
                stop = h.base_offset
                break
        if stop is not None:
            bases = np.fromiter((h.base_offset for h in headers), dtype=np.int64, count=len(headers))
            keep &= bases < stop
    return keep, stop
