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
from dataclasses import dataclass

import numpy as np

from seglog.errors import ConfigError, CorruptRecordError, SeglogError
from seglog.indexer.codec.batch_layout import CONTROL_FLAG_MASK, TRANSACTIONAL_FLAG_MASK

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


# ---------------------------------------------------------------------- open transactions and their end
# What Kafka's transaction coordinator writes when it ends a transaction (WriteTxnMarkers), and what
# `kafka-transactions.sh abort` makes it write for a hanging one: one control batch per partition,
# MemoryRecords.withEndTransactionMarker: magic 2, uncompressed, CreateTime, attributes transactional +
# control, the transaction's producer id and epoch, base sequence -1, one record (offset delta 0,
# timestamp delta 0) whose key is the control record key (version 0, type) and whose value is the
# EndTransactionMarker (version 0, coordinator epoch). The log assigns its offset and leader epoch.
_MARKER_VALUE = struct.Struct(">hi")          # version, coordinator epoch
CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0
PRODUCER_EPOCH_MAX = 32767                     # int16
COORDINATOR_EPOCH_MAX = 2**31 - 1              # int32


class TransactionStateError(SeglogError):
    """A transaction cannot be ended as asked: none is open for the producer, the epoch is older than
    the transaction's (Kafka fences it), or the partition holds records past its committed end."""


@dataclass(frozen=True)
class OpenTransaction:
    """A producer's transaction with batches in the log and no COMMIT/ABORT marker after them."""
    producer_id: int
    producer_epoch: int        # the largest epoch among its batches
    first_offset: int          # its first batch's base offset (Kafka's currentTransactionStartOffset)
    last_offset: int
    coordinator_epoch: int     # of the producer's latest marker in this partition; -1 when it has none

    def describe(self) -> str:
        return (f"producer id {self.producer_id} epoch {self.producer_epoch} (open since offset "
                f"{self.first_offset}, last batch ending at {self.last_offset})")


class OpenTransactions:
    """Fed batch headers in offset order (`feed`), keeps each producer's open transaction. A control
    batch of a producer ends its transaction, whatever its type (as Kafka's producer state does).
    `coordinator_epoch_of(pid, epoch)` is told the coordinator epoch of a marker when known."""

    def __init__(self) -> None:
        self._open: dict[int, list[int]] = {}          # pid -> [epoch, first, last]
        self._coordinator: dict[int, int] = {}

    def feed(self, headers, marker_epoch=None) -> None:
        """`headers`: BatchHeaders in offset order; `marker_epoch(k)`: the coordinator epoch of the
        k-th header's marker (only asked for control batches; None: not tracked)."""
        for k, h in enumerate(headers):
            if h.producer_id < 0:
                continue
            if h.attributes & CONTROL_FLAG_MASK:
                self._open.pop(h.producer_id, None)
                if marker_epoch is not None:
                    self._coordinator[h.producer_id] = marker_epoch(k)
            elif h.attributes & TRANSACTIONAL_FLAG_MASK:
                cur = self._open.get(h.producer_id)
                if cur is None:
                    self._open[h.producer_id] = [h.producer_epoch, h.base_offset, h.base_offset + h.last_offset_delta]
                else:
                    cur[0] = max(cur[0], h.producer_epoch)
                    cur[2] = h.base_offset + h.last_offset_delta

    def open(self) -> list[OpenTransaction]:
        """The open transactions, by first offset."""
        return sorted((OpenTransaction(pid, e, first, last, self._coordinator.get(pid, -1))
                       for pid, (e, first, last) in self._open.items()), key=lambda t: t.first_offset)


def open_transactions(log) -> list[OpenTransaction]:
    """Every open transaction of a `Log` (indexer.log), from a walk of its batch headers (a control
    batch's one record is read for its coordinator epoch)."""
    from seglog.indexer.codec.records import decode_batch, parse_header

    tracker = OpenTransactions()
    for base in log.segment_bases():
        seg = log.segment(base)
        scan = seg.scan(0, seg.size, check_crc=False)
        if scan.error:
            raise CorruptRecordError(f"{seg.log_path}: {scan.error}")

        def marker_epoch(k: int, seg=seg, scan=scan) -> int:
            pos, h = int(scan.positions[k]), scan.headers[k]
            buf = seg.pread(pos, h.size)
            return marker_of(decode_batch(buf, 0, parse_header(buf, 0)))[1]

        tracker.feed(scan.headers, marker_epoch)
    return tracker.open()


def marker_of(records) -> tuple[int, int]:
    """(type, coordinator epoch) of a control batch's decoded records (an EndTransactionMarker)."""
    kind = control_type(records)
    value = records[0].value
    if value is None or len(value) < _MARKER_VALUE.size:
        raise CorruptRecordError("a control batch whose record has no EndTransactionMarker value "
                                 "(version, coordinator epoch)")
    return kind, _MARKER_VALUE.unpack_from(value)[1]


def end_transaction_marker(base_offset: int, producer_id: int, producer_epoch: int, kind: int,
                           coordinator_epoch: int, timestamp: int, leader_epoch: int = 0) -> bytes:
    """One control batch ending a transaction, byte for byte as Kafka's
    MemoryRecords.withEndTransactionMarker builds it (see above), at `base_offset`."""
    from seglog.indexer.codec.batch_layout import (ATTRIBUTES_OFFSET, CRC_OFFSET, HEADER_STRUCT, LOG_OVERHEAD,
                                             MAGIC)
    from seglog.indexer.codec.records import NO_SEQUENCE, write_varint
    import crc32c

    if kind not in (ABORT, COMMIT):
        raise ValueError(f"control type {kind!r} is neither ABORT ({ABORT}) nor COMMIT ({COMMIT})")
    key = _CONTROL_KEY.pack(CONTROL_KEY_VERSION, kind)
    value = _MARKER_VALUE.pack(END_TXN_MARKER_VERSION, coordinator_epoch)
    rec = bytearray(b"\x00")                 # record attributes
    write_varint(rec, 0)                     # timestamp delta
    write_varint(rec, 0)                     # offset delta
    write_varint(rec, len(key))
    rec += key
    write_varint(rec, len(value))
    rec += value
    write_varint(rec, 0)                     # no headers
    body = bytearray()
    write_varint(body, len(rec))
    body += rec
    attributes = TRANSACTIONAL_FLAG_MASK | CONTROL_FLAG_MASK      # codec none, CreateTime
    out = bytearray(HEADER_STRUCT.pack(
        base_offset, HEADER_STRUCT.size - LOG_OVERHEAD + len(body), leader_epoch, MAGIC, 0, attributes, 0,
        timestamp, timestamp, producer_id, producer_epoch, NO_SEQUENCE, 1))
    out += body
    struct.pack_into(">I", out, CRC_OFFSET, crc32c.crc32c(bytes(out[ATTRIBUTES_OFFSET:])))
    return bytes(out)


@dataclass(frozen=True)
class EndedTransaction:
    transaction: OpenTransaction
    marker_offset: int
    producer_epoch: int
    coordinator_epoch: int


def abort_transactions(log, transactions, *, producer_epoch: int | None = None,
                       coordinator_epoch: int | None = None, now: int | None = None) -> list[EndedTransaction]:
    """End each of `transactions` (open in `log`, a writable Log holding the partition's lock) with an
    ABORT marker appended at the log end through the Log's append path (its roll and index rules, its
    leader epoch), as Kafka's coordinator does past transaction.timeout.ms and `kafka-transactions.sh
    abort` makes it do. `producer_epoch` (default: the transaction's) may not be older than the
    transaction's: Kafka fences that. `coordinator_epoch` (default: that of the producer's latest marker
    in the partition, else 0, as kafka-transactions.sh takes it). The caller flushes and commits."""
    from seglog.indexer.codec.columns import EncodedBatches
    from seglog.indexer.codec.records import CREATE_TIME
    from seglog.indexer.segment import now_ms

    now = now_ms() if now is None else now
    ended: list[EndedTransaction] = []
    data = bytearray()
    positions = [0]
    offset = log.log_end_offset
    for txn in transactions:
        epoch = txn.producer_epoch if producer_epoch is None else producer_epoch
        if not txn.producer_epoch <= epoch <= PRODUCER_EPOCH_MAX:
            raise TransactionStateError(
                f"{log.path}: producer epoch {epoch} cannot end the transaction of {txn.describe()}: an epoch "
                f"older than the transaction's is fenced (Kafka refuses it); allowed: {txn.producer_epoch} to "
                f"{PRODUCER_EPOCH_MAX}")
        coord = max(txn.coordinator_epoch, 0) if coordinator_epoch is None else coordinator_epoch
        if not 0 <= coord <= COORDINATOR_EPOCH_MAX:
            raise TransactionStateError(f"coordinator epoch {coord} is out of range (0 to {COORDINATOR_EPOCH_MAX})")
        data += end_transaction_marker(offset, txn.producer_id, epoch, ABORT, coord, now)
        positions.append(len(data))
        ended.append(EndedTransaction(txn, offset, epoch, coord))
        offset += 1
    if not ended:
        return ended
    n = len(ended)
    bases = np.arange(log.log_end_offset, offset, dtype=np.int64)
    stamps = np.full(n, now, dtype=np.int64)
    enc = EncodedBatches(memoryview(data), np.array(positions, dtype=np.int64), bases, bases.copy(),
                         stamps, stamps.copy(), np.ones(n, dtype=np.int64), n, CREATE_TIME, data)
    log.append_encoded(enc, now)
    return ended
