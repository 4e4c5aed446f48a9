"""The Kafka record batch codec, magic 2 (docs/spec.md §2.2), byte for byte as Apache Kafka writes it.

This module is the reference: a plain, per-record encoder and decoder that are easy to check against
the format. The bulk paths in `indexer.codec.columns` are held to it byte for byte by the tests.

The batch header's layout has one home, `indexer.codec.batch_layout`. Record: length varint (of the bytes
after it), attributes int8, timestampDelta varlong, offsetDelta varint, keyLength varint (-1 null) +
key, valueLength varint (-1 null) + value, headerCount varint, headers (keyLength varint + UTF-8 key,
valueLength varint (-1 null) + value). Varints are zigzag. Compressed batches are inflated first
(`indexer.codec.compression`): the record walks here only ever see uncompressed records.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import NamedTuple

import crc32c as _crc32c
import numpy as np

from seglog.errors import CorruptRecordError, InvalidRecordError
from seglog.indexer.codec.batch_layout import (  # noqa: F401  (re-exported: the names callers import from here)
    ATTRIBUTES_OFFSET, BATCH_HEADER_SIZE, COMPRESSION_CODEC_MASK, CONTROL_FLAG_MASK, CRC_OFFSET, HEADER_STRUCT,
    LOG_OVERHEAD, MAGIC, MAGIC_OFFSET, MIN_BATCH_LENGTH, TIMESTAMP_TYPE_MASK, TRANSACTIONAL_FLAG_MASK)
from seglog.conf.limits import INT32_MAX, INT64_MAX, INT64_MIN  # noqa: F401  (re-exported for indexer modules)
from seglog.conf.limits import INFLATED_BATCH_MAX, MIN_RECORD_SIZE
from seglog.indexer.codec.compression import inflate_batch
from seglog.indexer.codec.kernels import native_kernels

NO_TIMESTAMP = -1
CREATE_TIME = 0
LOG_APPEND_TIME = 1

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
PARTITION_LEADER_EPOCH = 0        # what we write; Kafka's broker writes its leader epoch


_CRC_STRUCT = struct.Struct(">I")


@dataclass(slots=True)
class Record:
    """One record. `timestamp` in ms: None = "now" at append, -1 = no timestamp (NO_TIMESTAMP).
    `offset` and `timestamp_type` (0 CreateTime, 1 LogAppendTime) are filled on read."""
    key: bytes | None = None
    value: bytes | None = None
    timestamp: int | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    offset: int = -1
    timestamp_type: int = CREATE_TIME


class BatchHeader(NamedTuple):
    """The header of one record batch, as stored (indexer.codec.batch_layout)."""
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size(self) -> int:
        """Bytes of the whole batch on disk."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def timestamp_type(self) -> int:
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME

    @property
    def compression_codec(self) -> int:
        return self.attributes & COMPRESSION_CODEC_MASK

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG_MASK)


# ---------------------------------------------------------------------------------------------
# varints (zigzag, as Kafka's ByteUtils and protobuf's sint32/sint64)

def zigzag(n: int) -> int:
    """Signed int64 -> unsigned: 0, -1, 1, -2, ... -> 0, 1, 2, 3, ..."""
    return (n << 1) ^ (n >> 63)


def varint_size(n: int) -> int:
    """Bytes of the zigzag varint of `n` (same for varint and varlong within int32 range)."""
    u = zigzag(n)
    size = 1
    while u >= 0x80:
        u >>= 7
        size += 1
    return size


def write_varint(out: bytearray, n: int) -> None:
    """Append the zigzag varint (or varlong) of `n` to `out`."""
    u = zigzag(n)
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)


def read_varint(buf, pos: int, end: int, max_bytes: int = 5) -> tuple[int, int]:
    """Read a zigzag varint at `pos` (no byte at or past `end`); returns (value, next position).
    `max_bytes` is 5 for a varint (int32) and 10 for a varlong (int64)."""
    u = 0
    shift = 0
    for i in range(max_bytes):
        p = pos + i
        if p >= end:
            raise CorruptRecordError(f"varint at position {pos} runs past the end of its record")
        b = buf[p]
        u |= (b & 0x7F) << shift
        if b < 0x80:
            return (u >> 1) ^ -(u & 1), p + 1
        shift += 7
    raise CorruptRecordError(f"varint at position {pos} is longer than {max_bytes} bytes")


# ---------------------------------------------------------------------------------------------
# batch headers

def parse_header(buf, pos: int) -> BatchHeader:
    """Parse the batch header at `pos` of `buf` (bytes, memoryview, mmap or a uint8 numpy array).

    Raises CorruptRecordError, naming the position, when the header is structurally impossible:
    fewer than BATCH_HEADER_SIZE bytes left, magic not 2, batchLength below 49, a negative record count, or a
    lastOffsetDelta below recordCount - 1 (compaction may leave it above, never below)."""
    if pos < 0 or pos + BATCH_HEADER_SIZE > len(buf):
        raise CorruptRecordError(
            f"torn batch header at position {pos}: {max(0, len(buf) - pos)} bytes left, "
            f"a header needs {BATCH_HEADER_SIZE}")
    header = BatchHeader._make(HEADER_STRUCT.unpack_from(buf, pos))
    problem = header_problem(header)
    if problem is not None:
        raise CorruptRecordError(f"corrupt batch header at position {pos}: {problem}")
    return header


def header_problem(header: BatchHeader) -> str | None:
    """What is structurally impossible about `header`, or None."""
    if header.magic != MAGIC:
        return f"magic {header.magic}, expected {MAGIC}"
    if header.batch_length < MIN_BATCH_LENGTH:
        return f"batchLength {header.batch_length} below the minimum {MIN_BATCH_LENGTH}"
    if header.record_count < 0:
        return f"negative record count {header.record_count}"
    if header.last_offset_delta < 0 or header.last_offset_delta < header.record_count - 1:
        return (f"lastOffsetDelta {header.last_offset_delta} below recordCount - 1 "
                f"({header.record_count - 1})")
    if header.base_offset < 0:
        return f"negative base offset {header.base_offset}"
    if header.base_offset > INT64_MAX - header.last_offset_delta:
        # the last offset must be an int64: checked before anything computes with it (native._header_ok too)
        return (f"baseOffset {header.base_offset} + lastOffsetDelta {header.last_offset_delta} is beyond "
                f"the largest offset {INT64_MAX}")
    return record_count_problem(header.record_count, header.attributes & COMPRESSION_CODEC_MASK,
                                header.batch_length)


def record_count_problem(count: int, codec: int, batch_length: int) -> str | None:
    """Why a batch's recordCount cannot be its records' count, or None: the one home of the rule
    (the JVM's format.BatchBounds keeps it too; tests/conformance/batch_bounds.json pins both). A
    record takes at least MIN_RECORD_SIZE bytes, of the batch's records section when uncompressed,
    of at most INFLATED_BATCH_MAX inflated bytes when compressed. Checked before anything is sized
    by the count (a crafted 170-byte batch can claim 2^31-1 records under a valid CRC)."""
    if count < 0:
        return f"negative record count {count}"
    room = INFLATED_BATCH_MAX if codec else batch_length - MIN_BATCH_LENGTH
    if count > room // MIN_RECORD_SIZE:
        where = (f"{INFLATED_BATCH_MAX} bytes, the most a compressed batch's records inflate to" if codec
                 else f"batchLength {batch_length}")
        return (f"record count {count} cannot fit in {where} (a record takes at least "
                f"{MIN_RECORD_SIZE} bytes)")
    return None


def batch_crc(buf, pos: int, header: BatchHeader) -> int:
    """CRC-32C of the batch at `pos`, from attributes to its end (what the crc field must hold)."""
    view = memoryview(buf)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    return _crc32c.crc32c(view[pos + ATTRIBUTES_OFFSET:pos + header.size])


def check_crc(buf, pos: int, header: BatchHeader) -> bool:
    """True when the stored crc matches the batch's bytes. The batch must lie within `buf`."""
    if pos + header.size > len(buf):
        return False
    return batch_crc(buf, pos, header) == header.crc


# ---------------------------------------------------------------------------------------------
# scanning a log region

class ScanResult:
    """What `scan_batches` found: the good batches from the start, in order, and the first fault.

    Invariant: `positions[i]` + `headers[i].size` == `positions[i + 1]`, and `valid_end` is the byte
    position after the last good batch (the start position when none is good).

    The headers are held either as BatchHeader tuples or, from the compiled walk, as one int64 row
    per batch in BatchHeader's field order (`rows`): the column properties read the rows directly,
    and `headers` builds the tuples only when asked."""
    __slots__ = ("positions", "_headers", "_rows", "valid_end", "error")

    def __init__(self, positions: np.ndarray, headers: list[BatchHeader] | None, valid_end: int, error: str | None,
                 rows: np.ndarray | None = None):
        self.positions = positions    # int64, start of each good batch
        self._headers = headers
        self._rows = rows
        self.valid_end = valid_end
        self.error = error            # None when the walk reached `end` cleanly

    @property
    def headers(self) -> list[BatchHeader]:
        if self._headers is None:
            self._headers = [BatchHeader._make(r) for r in self._rows.tolist()]
        return self._headers

    @property
    def rows(self) -> np.ndarray:
        """The headers as an (n, 13) int64 array, BatchHeader's field order."""
        if self._rows is None:
            self._rows = np.array(self._headers, dtype=np.int64).reshape(len(self._headers), len(BatchHeader._fields))
        return self._rows

    def _col(self, field: str) -> np.ndarray:
        if self._rows is None:
            return np.fromiter((getattr(h, field) for h in self._headers), dtype=np.int64,
                               count=len(self._headers))
        r = self._rows
        if field == "last_offset":
            return r[:, 0] + r[:, 6]
        if field == "size":
            return r[:, 1] + LOG_OVERHEAD
        return r[:, _FIELD[field]].copy()

    @property
    def base_offsets(self) -> np.ndarray:
        return self._col("base_offset")

    @property
    def last_offsets(self) -> np.ndarray:
        return self._col("last_offset")

    @property
    def max_timestamps(self) -> np.ndarray:
        return self._col("max_timestamp")

    @property
    def sizes(self) -> np.ndarray:
        return self._col("size")

    @property
    def record_counts(self) -> np.ndarray:
        return self._col("record_count")

    @property
    def attributes(self) -> np.ndarray:
        return self._col("attributes")

    @property
    def next_offset(self) -> int | None:
        """The offset after the last good batch, or None when there is none."""
        if not len(self.positions):
            return None
        return self.headers[-1].next_offset if self._rows is None else int(self._rows[-1, 0] + self._rows[-1, 6] + 1)


_FIELD = {name: i for i, name in enumerate(BatchHeader._fields)}
_COMPILED_WALK_MIN = 64 << 10   # bytes from which the compiled walk pays for its call


def scan_batches(buf, start: int, end: int | None = None, *, check_crc: bool = True,
                 prev_last_offset: int | None = None, dense: bool = False,
                 min_leader_epoch: int | None = None, max_leader_epoch: int | None = None,
                 origin: int = 0) -> ScanResult:
    """Walk the batches of `buf` from `start` while they fit before `end` (default: len(buf)).

    Stops at the first fault and says what and where it is: a torn header, a length past `end`, a
    bad header (magic, length, counts), a CRC mismatch (when `check_crc`), or an offset that does not
    increase (a batch's base offset must exceed the previous batch's last offset, and
    `prev_last_offset` when given). One step per batch, never per record.

    The CRC does not cover baseOffset, batchLength, partitionLeaderEpoch or magic. To catch a flipped
    byte there too, a caller that knows its log pass `prev_last_offset` (segment base - 1) with
    `dense=True` (each base offset must be exactly the previous last offset + 1: no compaction) and
    the leader epoch bounds: epochs never decrease from batch to batch (a new leader only raises
    them), start at `min_leader_epoch` or above, and stay at or below `max_leader_epoch` (0 for a
    folder seglog wrote, which only ever writes 0; any epoch for a Kafka broker's folder).

    `origin`: the file position of buf[0], for a buffer read from the middle of a file. `start`,
    `end`, the result's positions and valid_end, and the positions its error names are then file
    positions, so an error says where the fault lies in the file, not in the chunk read."""
    end = origin + len(buf) if end is None else min(end, origin + len(buf))
    view = memoryview(buf)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    crc = _crc32c.crc32c
    kernels = native_kernels() if end - start >= _COMPILED_WALK_MIN else None
    if kernels is not None:
        fast = _compiled_scan(kernels, view, start, end, origin, check_crc, prev_last_offset, dense,
                              min_leader_epoch, max_leader_epoch)
        if fast is not None:
            view.release()
            return fast
    try:
        return walk_batches(lambda pos: (view, pos - origin), start, end,
                            (lambda pos, size: crc(view[pos - origin + ATTRIBUTES_OFFSET:pos - origin + size]))
                            if check_crc else None,
                            prev_last_offset=prev_last_offset, dense=dense, min_leader_epoch=min_leader_epoch,
                            max_leader_epoch=max_leader_epoch)
    finally:
        view.release()


def crcs_match(buf, positions: np.ndarray, rows: np.ndarray, *, compiled: bool = False) -> bool:
    """Whether every batch's stored CRC (rows[:, 4], BatchHeader's order) is the CRC-32C of its bytes
    from its attributes on; `positions` index `buf`. `compiled`: one GIL-free loop
    (indexer/codec/crc_kernel.py) where it can be had, for long scans (its first use compiles it)."""
    if compiled:
        from seglog.indexer.codec.crc_kernel import first_bad_crc

        kernel = first_bad_crc()
        if kernel is not None:
            return kernel(np.frombuffer(buf, dtype=np.uint8), np.ascontiguousarray(positions, dtype=np.int64),
                          ATTRIBUTES_OFFSET, np.ascontiguousarray(rows[:, 1] + LOG_OVERHEAD),
                          np.ascontiguousarray(rows[:, 4])) < 0
    view = memoryview(buf)
    crc = _crc32c.crc32c
    at, stored = ATTRIBUTES_OFFSET, rows[:, 4].tolist()
    for k, (pos, size) in enumerate(zip(positions.tolist(), (rows[:, 1] + LOG_OVERHEAD).tolist())):
        if crc(view[pos + at:pos + size]) != stored[k]:
            return False
    return True


def _compiled_scan(kernels, view, start, end, origin, check_crc, prev_last_offset, dense, min_leader_epoch,
                   max_leader_epoch) -> ScanResult | None:
    """scan_batches through the compiled walk (indexer/codec/native.py) and the crc32c library: the
    result of a clean walk, or None when anything is wrong (the reference walk then says what, where)."""
    a = kernels.readonly(np.frombuffer(view, dtype=np.uint8))
    positions, rows, valid_end, status = kernels.walk(a, start - origin, end - origin, prev_last_offset, dense,
                                                      min_leader_epoch, max_leader_epoch)
    if status not in (kernels.OK, kernels.TORN_HEADER, kernels.PAST_END):
        return None
    if check_crc and not crcs_match(view, positions, rows):
        return None
    pos = valid_end + origin
    error = None          # the reference walk's words for the two stops the compiled walk names
    if status == kernels.TORN_HEADER:
        error = (f"torn batch header at position {pos}: {end - pos} bytes left, "
                 f"a header needs {BATCH_HEADER_SIZE}")
    elif status == kernels.PAST_END:
        header = BatchHeader._make(HEADER_STRUCT.unpack_from(view, valid_end))
        error = (f"batch at position {pos} (offset {header.base_offset}) has length {header.size}, "
                 f"past the end at {end}")
    return ScanResult(positions + origin, None, pos, error, rows=rows)


def walk_batches(header_at, start: int, end: int, crc_at=None, *, prev_last_offset: int | None = None,
                 dense: bool = False, min_leader_epoch: int | None = None,
                 max_leader_epoch: int | None = None) -> ScanResult:
    """`scan_batches`' walk over batches that lie in [start, end), whatever holds their bytes:
    `header_at(pos)` gives (a buffer, the index of the batch header at `pos` in it), or None when
    fewer than a header's bytes are there; `crc_at(pos, size)` (None: CRCs not checked) gives the
    CRC-32C of the batch's bytes from its attributes on. Without CRCs only the headers are read, so
    a reader that only needs them (the largest timestamp after an index entry) can walk a segment
    in O(batches), as Kafka's broker does when it loads a segment."""
    positions: list[int] = []
    headers: list[BatchHeader] = []
    pos = start
    error: str | None = None
    last = prev_last_offset
    unpack = HEADER_STRUCT.unpack_from
    while pos < end:
        at = header_at(pos) if pos + BATCH_HEADER_SIZE <= end else None
        if at is None:
            error = (f"torn batch header at position {pos}: {end - pos} bytes left, "
                     f"a header needs {BATCH_HEADER_SIZE}")
            break
        header = BatchHeader._make(unpack(*at))
        problem = header_problem(header)
        if problem is not None:
            error = f"corrupt batch header at position {pos}: {problem}"
            break
        size = header.batch_length + LOG_OVERHEAD
        if pos + size > end:
            error = (f"batch at position {pos} (offset {header.base_offset}) has length {size}, "
                     f"past the end at {end}")
            break
        if last is not None and header.base_offset <= last:
            error = (f"batch at position {pos}: base offset {header.base_offset} does not "
                     f"increase past the previous last offset {last}")
            break
        if dense and last is not None and header.base_offset != last + 1:
            error = (f"batch at position {pos}: base offset {header.base_offset} leaves a gap "
                     f"after the previous last offset {last}")
            break
        epoch = header.partition_leader_epoch
        if min_leader_epoch is not None and epoch < min_leader_epoch:
            error = (f"batch at position {pos} (offset {header.base_offset}): partition leader "
                     f"epoch {epoch} below the previous batch's {min_leader_epoch} (epochs never decrease)")
            break
        if max_leader_epoch is not None and epoch > max_leader_epoch:
            error = (f"batch at position {pos} (offset {header.base_offset}): partition leader "
                     f"epoch {epoch} above {max_leader_epoch}, the largest this partition can hold")
            break
        if crc_at is not None:
            actual = crc_at(pos, size)
            if actual != header.crc:
                error = (f"CRC mismatch in batch at position {pos} (offset {header.base_offset}): "
                         f"stored {header.crc:#010x}, computed {actual:#010x}")
                break
        positions.append(pos)
        headers.append(header)
        last = header.base_offset + header.last_offset_delta
        if min_leader_epoch is not None:
            min_leader_epoch = epoch
        pos += size
    return ScanResult(np.asarray(positions, dtype=np.int64), headers, pos, error)


# ---------------------------------------------------------------------------------------------
# the reference decoder

def decode_batch(buf, pos: int, header: BatchHeader | None = None) -> list[Record]:
    """Decode every record of the batch at `pos`: offsets, timestamps, timestamp type and headers
    filled. Does not check the CRC (scan_batches does); raises CorruptRecordError on bad structure.
    In a LogAppendTime batch every record takes the batch's maxTimestamp."""
    if header is None:
        header = parse_header(buf, pos)
    end = pos + header.size
    if end > len(buf):
        raise CorruptRecordError(f"batch at position {pos} runs past the end of the buffer")
    if header.compression_codec != 0:
        inflated = inflate_batch(buf, pos, header.size)
        try:
            return decode_batch(inflated, 0)
        except CorruptRecordError as exc:
            raise CorruptRecordError(f"batch at position {pos} (decompressed): {exc}") from exc
    log_append = header.timestamp_type == LOG_APPEND_TIME
    data = bytes(memoryview(buf)[pos + BATCH_HEADER_SIZE:end]) if not isinstance(buf, bytes) else buf
    base = 0 if data is not buf else pos + BATCH_HEADER_SIZE
    limit = base + (end - pos - BATCH_HEADER_SIZE)
    p = base
    records: list[Record] = []
    for i in range(header.record_count):
        try:
            length, p = read_varint(data, p, limit)
        except CorruptRecordError as exc:
            raise CorruptRecordError(f"record {i} of the batch at position {pos}: length {exc}") from exc
        rec_end = p + length
        if length < 0 or rec_end > limit:
            raise CorruptRecordError(
                f"record {i} of the batch at position {pos} has length {length}, past the batch end")
        p += 1  # attributes: unused in magic 2
        ts_delta, p = _field_varint(data, p, rec_end, pos, i, "timestampDelta", 10)
        offset_delta, p = _field_varint(data, p, rec_end, pos, i, "offsetDelta")
        key, p = _read_bytes(data, p, rec_end, pos, i, "key")
        value, p = _read_bytes(data, p, rec_end, pos, i, "value")
        count, p = _field_varint(data, p, rec_end, pos, i, "header count")
        if count < 0:
            raise CorruptRecordError(f"record {i} of the batch at position {pos}: negative header count")
        hdrs = []
        for _ in range(count):
            hkey, p = _read_bytes(data, p, rec_end, pos, i, "header key")
            if hkey is None:
                raise CorruptRecordError(f"record {i} of the batch at position {pos}: null header key")
            try:
                hkey_s = hkey.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise CorruptRecordError(
                    f"record {i} of the batch at position {pos}: header key is not UTF-8") from exc
            hval, p = _read_bytes(data, p, rec_end, pos, i, "header value")
            hdrs.append((hkey_s, hval))
        if p != rec_end:
            raise CorruptRecordError(
                f"record {i} of the batch at position {pos}: {rec_end - p} bytes left over after its fields")
        timestamp = header.max_timestamp if log_append else header.base_timestamp + ts_delta
        records.append(Record(key, value, timestamp, tuple(hdrs), header.base_offset + offset_delta,
                              header.timestamp_type))
    if p != limit:
        raise CorruptRecordError(
            f"batch at position {pos}: {limit - p} bytes left over after its {header.record_count} records")
    return records


def first_offset_at_or_after(buf, pos: int, header: BatchHeader, timestamp: int, min_offset: int) -> int | None:
    """The first offset >= min_offset in the batch at `pos` whose record has a timestamp >=
    `timestamp`, or None. Reads only each record's length, timestamp and offset deltas (the
    lookup-by-timestamp scan; keys and values are skipped, not decoded)."""
    if header.timestamp_type == LOG_APPEND_TIME:
        if header.max_timestamp < timestamp or header.last_offset < min_offset:
            return None
        return max(min_offset, header.base_offset)
    if header.compression_codec != 0:
        # Only this batch is decompressed; the walk below (and the compiled one) sees plain records.
        buf, pos = inflate_batch(buf, pos, header.size), 0
        header = parse_header(buf, 0)
    native = native_kernels()
    if native is not None and isinstance(buf, (bytes, bytearray)):
        found = native.first_at_or_after(buf, pos, header, timestamp, min_offset)
        if found is not False:
            return found
    view = memoryview(buf)
    p = pos + BATCH_HEADER_SIZE
    end = pos + header.size
    base_ts, base_off = header.base_timestamp, header.base_offset
    if end > len(view):
        raise CorruptRecordError(f"batch at position {pos} runs past the end of the buffer")
    for i in range(header.record_count):
        length, q = read_varint(view, p, end)
        if length < 1 or q + length > end:
            raise CorruptRecordError(f"record {i} of the batch at position {pos} has length {length}, "
                                     f"outside its batch")
        ts_delta, r = read_varint(view, q + 1, end, 10)
        off_delta, _ = read_varint(view, r, end)
        offset = base_off + off_delta
        if offset >= min_offset and base_ts + ts_delta >= timestamp:
            return offset
        p = q + length
    return None


def _field_varint(data, p: int, end: int, pos: int, i: int, what: str,
                  max_bytes: int = 5) -> tuple[int, int]:
    try:
        return read_varint(data, p, end, max_bytes)
    except CorruptRecordError as exc:
        raise CorruptRecordError(
            f"record {i} of the batch at position {pos}: {what} varint is torn or too long") from exc


def _read_bytes(data, p: int, end: int, pos: int, i: int, what: str) -> tuple[bytes | None, int]:
    n, p = _field_varint(data, p, end, pos, i, f"{what} length")
    if n == -1:
        return None, p
    if n < -1 or p + n > end:
        raise CorruptRecordError(
            f"record {i} of the batch at position {pos}: {what} length {n} is out of bounds")
    return bytes(data[p:p + n]), p + n


# ---------------------------------------------------------------------------------------------
# the reference encoder

def encode_batch(base_offset: int, records, *, append_time_ms: int | None = None) -> bytes:
    """Encode `records` as ONE batch with offsets base_offset, base_offset + 1, ...

    CreateTime (append_time_ms None): each record keeps its timestamp (-1 = none; None is an error:
    the Log resolves "now" first); baseTimestamp is the first record's, maxTimestamp the largest
    (-1 when none has one). LogAppendTime: baseTimestamp = maxTimestamp = append_time_ms, every
    timestampDelta 0, attribute bit 3 set. Raises InvalidRecordError naming the bad record."""
    records = list(records)
    if not records:
        raise InvalidRecordError("a record batch needs at least one record")
    if not isinstance(base_offset, int) or base_offset < 0:
        raise InvalidRecordError(f"base offset {base_offset!r} must be a non-negative int")
    if len(records) - 1 > INT32_MAX:
        raise InvalidRecordError(f"{len(records)} records do not fit one batch")
    if append_time_ms is not None:
        if not isinstance(append_time_ms, int) or append_time_ms < 0:
            raise InvalidRecordError(f"append time {append_time_ms!r} must be a non-negative int (ms)")
        attributes = TIMESTAMP_TYPE_MASK
        base_ts = max_ts = append_time_ms
        timestamps = [append_time_ms] * len(records)
    else:
        attributes = 0
        timestamps = [_check_timestamp(r, i) for i, r in enumerate(records)]
        base_ts = timestamps[0]
        max_ts = max(timestamps)

    body = bytearray()
    for i, (rec, ts) in enumerate(zip(records, timestamps)):
        delta = ts - base_ts
        if not INT64_MIN <= delta <= INT64_MAX:
            raise InvalidRecordError(f"record {i}: timestamp {ts} is too far from the batch's first "
                                     f"timestamp {base_ts} for a varlong delta")
        r = bytearray()
        r.append(0)                       # record attributes: unused
        write_varint(r, delta)
        write_varint(r, i)                # offsetDelta
        _write_bytes(r, _check_bytes(rec.key, i, "key"))
        _write_bytes(r, _check_bytes(rec.value, i, "value"))
        headers = rec.headers
        if not isinstance(headers, (tuple, list)):
            raise InvalidRecordError(f"record {i}: headers must be a tuple of (str, bytes | None), "
                                     f"got {type(headers).__name__}")
        write_varint(r, len(headers))
        for h in headers:
            if not (isinstance(h, (tuple, list)) and len(h) == 2 and isinstance(h[0], str)):
                raise InvalidRecordError(f"record {i}: header {h!r} must be a (str, bytes | None) pair")
            _write_bytes(r, h[0].encode("utf-8"))
            _write_bytes(r, _check_bytes(h[1], i, f"header {h[0]!r} value"))
        write_varint(body, len(r))
        body += r

    batch_length = BATCH_HEADER_SIZE - LOG_OVERHEAD + len(body)
    if batch_length > INT32_MAX:
        raise InvalidRecordError(f"batch of {len(records)} records is {batch_length} bytes, over int32")
    out = bytearray(HEADER_STRUCT.pack(
        base_offset, batch_length, PARTITION_LEADER_EPOCH, MAGIC, 0, attributes, len(records) - 1,
        base_ts, max_ts, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE, len(records)))
    crc = _crc32c.crc32c(memoryview(out)[ATTRIBUTES_OFFSET:])
    crc = _crc32c.crc32c(body, value=crc)
    _CRC_STRUCT.pack_into(out, CRC_OFFSET, crc)
    out += body
    return bytes(out)


def _check_timestamp(rec: Record, i: int) -> int:
    ts = rec.timestamp
    if ts is None:
        raise InvalidRecordError(f"record {i}: timestamp is None; resolve it to the append time first")
    if isinstance(ts, bool) or not isinstance(ts, (int, np.integer)):
        raise InvalidRecordError(f"record {i}: timestamp {ts!r} must be an int (ms)")
    ts = int(ts)
    if ts < NO_TIMESTAMP or ts > INT64_MAX:
        raise InvalidRecordError(f"record {i}: timestamp {ts} is out of range "
                                 f"(ms since the epoch, or -1 for none)")
    return ts


def _check_bytes(v, i: int, what: str) -> bytes | None:
    if v is None or isinstance(v, bytes):
        return v
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    raise InvalidRecordError(f"record {i}: {what} must be bytes or None, got {type(v).__name__}")


def _write_bytes(out: bytearray, v: bytes | None) -> None:
    if v is None:
        write_varint(out, -1)
    else:
        write_varint(out, len(v))
        out += v
