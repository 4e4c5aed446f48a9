"""The bulk path of the batch codec: whole columns in, Kafka batches out, and back to Arrow.

`encode_columns` writes exactly the bytes `records.encode_batch` would write for the same grouping
(the tests hold it to that), but works on whole columns: every varint is computed with numpy for all
records at once, the small fixed pieces of each record are built in one numpy buffer, and keys and
values are copied into place by Arrow's `binary_join_element_wise` (C++), never by a Python loop per
record. The only Python loops are per batch (header CRCs) and per byte position of a varint (<= 10).

`decode_to_arrow` reads batches back into one Arrow RecordBatch. Finding where each record starts is
inherently sequential (a record's start depends on the previous record's length varint), so that is
one tight loop reading only the length varints; every other field is parsed for all records at once.

Both have a compiled twin in `indexer.codec.native` (numba), used when numba imports and
SEGLOG_NO_NUMBA is unset: headerless encoding in one pass into one buffer, and decoding of all
records in two passes. The numpy code here stays the reference the kernels are tested against, the
path for records with headers (encode), and the path that raises: a kernel that finds anything
wrong hands over to it, so errors are the same either way.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import crc32c as _crc32c
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from seglog.errors import CorruptRecordError, InvalidRecordError
from seglog.indexer.codec.batch_layout import CRC_OFFSET, RECORD_COUNT_OFFSET
from seglog.indexer.codec.compression import deflate_batch, inflate_batch
from seglog.indexer.codec.kernels import native_kernels
from seglog.indexer.codec.records import (
    ATTRIBUTES_OFFSET, BATCH_HEADER_SIZE, COMPRESSION_CODEC_MASK, CREATE_TIME, INT32_MAX,
    INT64_MAX, LOG_APPEND_TIME, MAGIC, MIN_BATCH_LENGTH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID,
    NO_SEQUENCE, NO_TIMESTAMP, PARTITION_LEADER_EPOCH, TIMESTAMP_TYPE_MASK, parse_header)

HEADER_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
ARROW_SCHEMA = pa.schema([
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.int64()),
    pa.field("timestampType", pa.int32()),
    pa.field("headers", HEADER_TYPE),
])

# The batch header as a packed big-endian numpy record (indexer/codec/batch_layout.py's layout, checked below).
_HEADER_DTYPE = np.dtype([
    ("base_offset", ">i8"), ("batch_length", ">i4"), ("leader_epoch", ">i4"), ("magic", "i1"),
    ("crc", ">u4"), ("attributes", ">i2"), ("last_offset_delta", ">i4"), ("base_timestamp", ">i8"),
    ("max_timestamp", ">i8"), ("producer_id", ">i8"), ("producer_epoch", ">i2"),
    ("base_sequence", ">i4"), ("record_count", ">i4")])
assert _HEADER_DTYPE.itemsize == BATCH_HEADER_SIZE
assert (_HEADER_DTYPE.fields["crc"][1], _HEADER_DTYPE.fields["attributes"][1],
        _HEADER_DTYPE.fields["record_count"][1]) == (CRC_OFFSET, ATTRIBUTES_OFFSET, RECORD_COUNT_OFFSET)

_LB = pa.large_binary()


def _binary_scalar(data: bytes) -> pa.Scalar:
    """A large_binary scalar built from buffers: pa.scalar(bytes) would make pyarrow import pandas
    (0.4 s per process, paid by every Spark worker)."""
    offsets = np.array([0, len(data)], dtype=np.int64)
    return pa.Array.from_buffers(_LB, 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)])[0]


_EMPTY = _binary_scalar(b"")
_NUL = _binary_scalar(b"\x00")          # headerCount 0
# zigzag varint widths: a value u takes k+1 bytes when u >= 2**(7k) for the largest such k
_WIDTH_THRESHOLDS = np.array([1 << (7 * k) for k in range(1, 10)], dtype=np.uint64)
_MIN_RECORD_SIZE = 7                     # length, attributes, ts, offset, key len, value len, count


# pa.nulls, not pa.array([]): converting a Python list makes pyarrow import pandas (0.4 s per process)
_NO_HEADERS = pa.StructArray.from_arrays([pa.nulls(0, pa.string()), pa.nulls(0, pa.binary())],
                                         fields=list(HEADER_TYPE.value_type))
# ---------------------------------------------------------------------------------------------
# the result of encoding

@dataclass(slots=True)
class EncodedBatches:
    """Batches back to back in `data`; per-batch arrays of length n, `positions` of length n + 1.

    Invariants: positions[0] == 0, positions[-1] == len(data), positions[i + 1] - positions[i] is
    batch i's size; offsets are dense: base_offsets[i + 1] == last_offsets[i] + 1."""
    data: memoryview
    positions: np.ndarray
    base_offsets: np.ndarray
    last_offsets: np.ndarray
    first_timestamps: np.ndarray
    max_timestamps: np.ndarray
    record_counts: np.ndarray
    num_records: int
    timestamp_type: int = CREATE_TIME
    _owner: object = field(default=None, repr=False, compare=False)   # keeps `data`'s memory alive

    @property
    def num_batches(self) -> int:
        return len(self.record_counts)

    @property
    def sizes(self) -> np.ndarray:
        """Encoded size of each batch in bytes (what max.message.bytes is checked against)."""
        return np.diff(self.positions)

    @property
    def nbytes(self) -> int:
        return len(self.data)

    def slice(self, i: int, j: int) -> EncodedBatches:
        """Batches i..j-1, their bytes a memoryview slice of `data` (no copy)."""
        n = self.num_batches
        if not 0 <= i <= j <= n:
            raise IndexError(f"batch slice [{i}, {j}) out of range for {n} batches")
        lo, hi = int(self.positions[i]), int(self.positions[j])
        counts = self.record_counts[i:j]
        return EncodedBatches(
            self.data[lo:hi], self.positions[i:j + 1] - lo, self.base_offsets[i:j],
            self.last_offsets[i:j], self.first_timestamps[i:j], self.max_timestamps[i:j], counts,
            int(counts.sum()), self.timestamp_type, self._owner)


def compress_encoded(enc: EncodedBatches, codec: int) -> EncodedBatches:
    """`enc` with every batch compressed with `codec` (indexer.codec.compression): same offsets, counts and
    timestamps, new bytes and positions. One codec call per batch, never per record."""
    if codec == 0 or enc.num_batches == 0:
        return enc
    pos = enc.positions.tolist()
    parts = [deflate_batch(bytes(enc.data[pos[b]:pos[b + 1]]), codec) for b in range(enc.num_batches)]
    positions = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=positions[1:])
    data = b"".join(parts)
    return EncodedBatches(memoryview(data), positions, enc.base_offsets, enc.last_offsets, enc.first_timestamps,
                          enc.max_timestamps, enc.record_counts, enc.num_records, enc.timestamp_type, data)


def _empty_encoded(timestamp_type: int) -> EncodedBatches:
    z = np.zeros(0, dtype=np.int64)
    return EncodedBatches(memoryview(b""), np.zeros(1, dtype=np.int64), z, z.copy(), z.copy(),
                          z.copy(), z.copy(), 0, timestamp_type)


# ---------------------------------------------------------------------------------------------
# vectorised varints

def _zigzag(v: np.ndarray) -> np.ndarray:
    v = v.astype(np.int64, copy=False)
    if len(v) and v.min() >= 0:                  # the common case: lengths, counts, deltas
        return (v << 1).view(np.uint64)
    return ((v << 1) ^ (v >> 63)).view(np.uint64)


def _widths(u: np.ndarray) -> np.ndarray:
    """Bytes of each unsigned varint in `u` (only the thresholds below the maximum are tested)."""
    w = np.ones(len(u), dtype=np.int64)
    if len(u):
        top = u.max()
        for t in _WIDTH_THRESHOLDS:
            if t > top:
                break
            w += u >= t
    return w


def _width_of(n: int) -> int:
    """Bytes of the zigzag varint of the Python int `n` (any sign, any size within int64)."""
    u = (n << 1) if n >= 0 else ((-n) << 1) - 1
    return max(1, (u.bit_length() + 6) // 7)


class _Varints:
    """A column of zigzag varints: unsigned values `u` and their byte widths `w`, computed once."""
    __slots__ = ("u", "w")

    def __init__(self, v: np.ndarray):
        self.u = _zigzag(v)
        self.w = _widths(self.u)


def _write_varints(buf: np.ndarray, pos: np.ndarray, u: np.ndarray, w: np.ndarray) -> None:
    """Write varint u[i] (w[i] bytes) at buf[pos[i]:]. Loops over byte positions, not records."""
    more = (w > 1).view(np.uint8)
    buf[pos] = (u.astype(np.uint8) & np.uint8(0x7F)) | (more << np.uint8(7))
    top = int(w.max()) if len(w) else 0
    for k in range(1, top):
        live = w > k
        if live.all():
            uk, pk, wk = u, pos, w
        else:
            idx = np.flatnonzero(live)
            uk, pk, wk = u[idx], pos[idx], w[idx]
        byte = (uk >> np.uint64(7 * k)).astype(np.uint8) & np.uint8(0x7F)
        buf[pk + k] = byte | ((wk > k + 1).view(np.uint8) << np.uint8(7))


def _pieces(fields: list) -> pa.Array:
    """One large_binary row per record: the concatenation of `fields`, each either a _Varints
    column or an int for a constant byte."""
    n = next(len(f.u) for f in fields if isinstance(f, _Varints))
    row_len = sum(f.w if isinstance(f, _Varints) else 1 for f in fields)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(row_len, out=offsets[1:])
    buf = np.empty(int(offsets[-1]), dtype=np.uint8)
    pos = offsets[:-1].copy()
    for f in fields:
        if isinstance(f, _Varints):
            _write_varints(buf, pos, f.u, f.w)
            pos += f.w
        else:
            buf[pos] = f
            pos += 1
    return pa.Array.from_buffers(_LB, n, [None, pa.py_buffer(offsets), pa.py_buffer(buf)])


def _read_varints(a: np.ndarray, pos: np.ndarray, end: np.ndarray, max_bytes: int,
                  what: str, where) -> tuple[np.ndarray, np.ndarray]:
    """Read the zigzag varint at a[pos[i]] for every i, none reaching end[i].
    Returns (values int64, widths). Loops over byte positions, not records."""
    n = len(pos)
    u = np.zeros(n, dtype=np.uint64)
    width = np.zeros(n, dtype=np.int64)
    live = np.arange(n)
    last = len(a) - 1
    for k in range(max_bytes):
        p = pos[live] + k
        b = a[np.minimum(p, last)].astype(np.uint64)
        u[live] |= (b & np.uint64(0x7F)) << np.uint64(7 * k)
        stop = b < 0x80
        width[live[stop]] = k + 1
        bad = p >= end[live]
        if bad.any():
            i = int(live[np.flatnonzero(bad)[0]])
            raise CorruptRecordError(f"{what} varint of {where(i)} runs past the end of its record")
        live = live[~stop]
        if live.size == 0:
            break
    else:
        i = int(live[0])
        raise CorruptRecordError(f"{what} varint of {where(i)} is longer than {max_bytes} bytes")
    values = ((u >> np.uint64(1)) ^ (np.uint64(0) - (u & np.uint64(1)))).view(np.int64)
    return values, width


# ---------------------------------------------------------------------------------------------
# input columns

def _as_binary(col, name: str) -> pa.Array:
    """A key or value column as a large_binary Arrow array, or InvalidRecordError naming it."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if isinstance(col, np.ndarray) and col.dtype == object:
        col = col.tolist()
    if isinstance(col, (list, tuple)):
        for i, v in enumerate(col):        # lists are Python objects already; pa.array loops too
            if v is not None and type(v) is not bytes and type(v) is not bytearray:
                raise InvalidRecordError(
                    f"column {name!r} row {i}: expected bytes or None, got {type(v).__name__}")
        return pa.array(col, type=_LB)
    if isinstance(col, pa.Array):
        t = col.type
        if (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_string(t)
                or pa.types.is_large_string(t) or pa.types.is_binary_view(t)
                or pa.types.is_string_view(t)):
            return col.cast(_LB) if t != _LB else col
        raise InvalidRecordError(
            f"column {name!r} has Arrow type {t}; expected binary, large_binary, string or large_string")
    raise InvalidRecordError(
        f"column {name!r} must be a pyarrow binary/string array or a list of bytes/None, "
        f"got {type(col).__name__}")


def _lengths(arr: pa.Array) -> np.ndarray:
    """Byte length of each row of a large_binary array, -1 for null."""
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset:arr.offset + n + 1]
    lengths = np.diff(offsets)
    if arr.null_count:
        lengths[arr.is_null().to_numpy(zero_copy_only=False)] = -1
    return lengths


def _as_timestamps(ts, n: int) -> np.ndarray:
    """Timestamps in ms as int64 numpy, -1 = none; InvalidRecordError naming the bad row."""
    if ts is None:
        raise InvalidRecordError("column 'timestamps' is required here (resolve 'now' before encoding)")
    if isinstance(ts, pa.ChunkedArray):
        ts = ts.combine_chunks() if ts.num_chunks != 1 else ts.chunk(0)
    if isinstance(ts, pa.Array):
        t = ts.type
        if ts.null_count:
            row = int(np.flatnonzero(ts.is_null().to_numpy(zero_copy_only=False))[0])
            raise InvalidRecordError(f"column 'timestamps' row {row}: null timestamp "
                                     f"(resolve it to the append time first)")
        if pa.types.is_timestamp(t):
            raw = ts.cast(pa.int64()).to_numpy()
            scale = {"s": -1000, "ms": 1, "us": 1000, "ns": 1_000_000}[t.unit]
            out = raw * -scale if scale < 0 else raw // scale
        elif pa.types.is_integer(t):
            out = ts.cast(pa.int64()).to_numpy()
        else:
            raise InvalidRecordError(f"column 'timestamps' has Arrow type {t}; expected int64 (ms) "
                                     f"or a timestamp")
    else:
        arr = np.asarray(ts)
        if np.issubdtype(arr.dtype, np.datetime64):
            if np.isnat(arr).any():
                row = int(np.flatnonzero(np.isnat(arr))[0])
                raise InvalidRecordError(f"column 'timestamps' row {row}: NaT timestamp")
            out = arr.astype("datetime64[ms]").astype(np.int64)
        elif np.issubdtype(arr.dtype, np.integer):
            out = arr.astype(np.int64)
        else:
            raise InvalidRecordError(f"column 'timestamps' has dtype {arr.dtype}; expected int64 ms")
    out = np.ascontiguousarray(out, dtype=np.int64)
    if out.ndim != 1 or len(out) != n:
        raise InvalidRecordError(f"column 'timestamps' has {out.size} rows, values has {n}")
    bad = np.flatnonzero(out < NO_TIMESTAMP)
    if bad.size:
        row = int(bad[0])
        raise InvalidRecordError(f"column 'timestamps' row {row}: timestamp {int(out[row])} is "
                                 f"negative (ms since the epoch, or -1 for none)")
    return out


@dataclass(slots=True)
class _Headers:
    counts: _Varints            # headers per record
    blob: pa.Array              # large_binary, row i = record i's encoded headers (no count)
    nbytes: np.ndarray          # byte length of each blob row


def _encode_headers(headers, n: int) -> _Headers | None:
    """Encode a list<struct<key: string, value: binary>> column: one vectorised pass over all
    headers (not records), then each record's headers are a zero-copy range of that result."""
    if headers is None:
        return None
    if isinstance(headers, pa.ChunkedArray):
        headers = headers.combine_chunks() if headers.num_chunks != 1 else headers.chunk(0)
    if not isinstance(headers, pa.Array):
        raise InvalidRecordError(f"column 'headers' must be a pyarrow list<struct<key: string, "
                                 f"value: binary>> array, got {type(headers).__name__}")
    t = headers.type
    ok = (pa.types.is_list(t) or pa.types.is_large_list(t)) and pa.types.is_struct(t.value_type)
    st = t.value_type if ok else None
    if ok:
        ki, vi = st.get_field_index("key"), st.get_field_index("value")
        ok = ki >= 0 and vi >= 0 and (
            pa.types.is_string(st.field(ki).type) or pa.types.is_large_string(st.field(ki).type)) and (
            pa.types.is_binary(st.field(vi).type) or pa.types.is_large_binary(st.field(vi).type)
            or pa.types.is_string(st.field(vi).type) or pa.types.is_large_string(st.field(vi).type))
    if not ok:
        raise InvalidRecordError(f"column 'headers' has Arrow type {t}; expected "
                                 f"list<struct<key: string, value: binary>>")
    if len(headers) != n:
        raise InvalidRecordError(f"column 'headers' has {len(headers)} rows, values has {n}")
    counts = pc.fill_null(pc.list_value_length(headers), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    total = int(counts.sum())
    if total == 0:
        return _Headers(_Varints(counts), pa.nulls(n, _LB).fill_null(b""), np.zeros(n, dtype=np.int64))
    first = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=first[1:])
    flat = headers.flatten()                 # drops sub-lists behind null rows, honours slicing
    parts = flat.flatten()                   # struct nulls become field nulls
    hkeys, hvals = parts[ki].cast(_LB), parts[vi].cast(_LB)
    if hkeys.null_count:
        h = int(np.flatnonzero(hkeys.is_null().to_numpy(zero_copy_only=False))[0])
        row = int(np.searchsorted(first, h, side="right") - 1)
        raise InvalidRecordError(f"column 'headers' row {row}: header {h - int(first[row])} has a "
                                 f"null key (a header key is a string)")
    klen, vlen = _lengths(hkeys), _lengths(hvals)
    joined = pc.binary_join_element_wise(
        _pieces([_Varints(klen)]), hkeys, _pieces([_Varints(vlen)]), hvals, _EMPTY,
        null_handling="replace", null_replacement=b"")
    joff = np.frombuffer(joined.buffers()[1], dtype=np.int64)[joined.offset:joined.offset + total + 1]
    blob_offsets = np.ascontiguousarray(joff[first])
    blob = pa.Array.from_buffers(_LB, n, [None, pa.py_buffer(blob_offsets), joined.buffers()[2]])
    return _Headers(_Varints(counts), blob, np.diff(blob_offsets))


# ---------------------------------------------------------------------------------------------
# encoding

def _body_sizes(ts_w, od_w, key: _Varints, klen, value: _Varints, vlen, hdr: _Headers | None):
    """Bytes after a record's length varint, given the widths of its two delta varints."""
    size = 1 + ts_w + od_w + key.w + np.maximum(klen, 0) + value.w + np.maximum(vlen, 0)
    if hdr is None:
        return size + 1
    return size + hdr.counts.w + hdr.nbytes


def _bound_sizes(ts: np.ndarray, key: _Varints, klen, value: _Varints, vlen, hdr,
                 max_records: int, log_append: bool) -> np.ndarray:
    """An upper bound of each record's encoded size in any batch of at most `max_records` records:
    the offset delta is below max_records and a timestamp delta is at most max(ts) - min(ts)."""
    ts_w = 1 if log_append else _width_of(int(ts.max()) - int(ts.min()))
    od_w = _width_of(max(max_records - 1, 0))
    body = _body_sizes(ts_w, od_w, key, klen, value, vlen, hdr)
    return body + _widths(body.view(np.uint64) << np.uint64(1))


def record_sizes_upper_bound(values, keys=None, timestamps=None, headers=None, *,
                             append_time_ms: int | None = None) -> np.ndarray:
    """An upper bound of each record's encoded size (without the batch header) in whatever
    batch it lands in. With `timestamps` None the timestamp delta is taken at its widest."""
    vals = _as_binary(values, "values")
    n = len(vals)
    klen = _lengths(_as_binary(keys, "keys")) if keys is not None else np.full(n, -1, np.int64)
    hdr = _encode_headers(headers, n)
    if timestamps is None and append_time_ms is None:
        ts = np.array([NO_TIMESTAMP, INT64_MAX], dtype=np.int64)
    else:
        ts = _as_timestamps(timestamps, n) if append_time_ms is None else np.zeros(1, np.int64)
    vlen = _lengths(vals)
    return _bound_sizes(ts, _Varints(klen), klen, _Varints(vlen), vlen, hdr, INT32_MAX,
                        append_time_ms is not None)


def encode_columns(base_offset: int, values, keys=None, timestamps=None, headers=None, *,
                   max_batch_bytes: int, append_time_ms: int | None = None) -> EncodedBatches:
    """Encode whole columns as record batches with offsets base_offset, base_offset + 1, ...

    Records are grouped in order, each batch at most `max_batch_bytes` (a record that alone exceeds
    it is a batch on its own; the caller checks `sizes` against max.message.bytes). The bytes equal
    `encode_batch` applied to each group. `timestamps` is required with CreateTime (-1 = none);
    with `append_time_ms` the batches are LogAppendTime and `timestamps` is ignored."""
    if not isinstance(max_batch_bytes, (int, np.integer)) or max_batch_bytes <= 0:
        raise InvalidRecordError(f"max_batch_bytes {max_batch_bytes!r} must be a positive int")
    max_batch_bytes = min(int(max_batch_bytes), INT32_MAX)
    if not isinstance(base_offset, (int, np.integer)) or base_offset < 0:
        raise InvalidRecordError(f"base offset {base_offset!r} must be a non-negative int")
    log_append = append_time_ms is not None
    if log_append and (not isinstance(append_time_ms, (int, np.integer)) or append_time_ms < 0):
        raise InvalidRecordError(f"append time {append_time_ms!r} must be a non-negative int (ms)")
    tstype = LOG_APPEND_TIME if log_append else CREATE_TIME

    vals = _as_binary(values, "values")
    n = len(vals)
    key_arr = None
    if keys is not None:
        key_arr = _as_binary(keys, "keys")
        if len(key_arr) != n:
            raise InvalidRecordError(f"column 'keys' has {len(key_arr)} rows, values has {n}")
    if log_append:
        ts = np.full(n, int(append_time_ms), dtype=np.int64)
    else:
        ts = _as_timestamps(timestamps, n)
    hdr = _encode_headers(headers, n)
    if n == 0:
        return _empty_encoded(tstype)
    max_records = min(n, max_batch_bytes // _MIN_RECORD_SIZE + 1)
    kernels = native_kernels()
    if kernels is not None and (hdr is None or not hdr.counts.u.any()):
        # the sink's common case, headerless: one compiled pass (None: the numpy path raises)
        got = kernels.encode_plain(base_offset, vals, key_arr, ts, append_time_ms, max_batch_bytes,
                                   _width_of(max(max_records - 1, 0)))
        if got is not None:
            out, positions, starts, first_ts, max_ts = got
            counts = np.diff(starts)
            base_offsets = base_offset + starts[:-1]
            return EncodedBatches(memoryview(out), positions, base_offsets,
                                  base_offsets + counts - 1, first_ts, max_ts, counts, n, tstype, out)
    return _encode_numpy(base_offset, vals, key_arr, ts, hdr, max_batch_bytes, max_records,
                         log_append, tstype)


def _encode_numpy(base_offset: int, vals: pa.Array, key_arr: pa.Array | None, ts: np.ndarray,
                  hdr: _Headers | None, max_batch_bytes: int, max_records: int, log_append: bool,
                  tstype: int) -> EncodedBatches:
    """encode_columns after validation, with numpy and Arrow joins: any records, with headers too."""
    n = len(vals)
    vlen = _lengths(vals)
    klen = _lengths(key_arr) if key_arr is not None else np.full(n, -1, dtype=np.int64)

    # 1. batch boundaries from per-record upper bounds: each batch's true size <= its bound sum
    kv, vv = _Varints(klen), _Varints(vlen)
    bound = _bound_sizes(ts, kv, klen, vv, vlen, hdr, max_records, log_append)
    starts = _group(bound, max_batch_bytes - BATCH_HEADER_SIZE)
    counts = np.diff(starts)
    nb = len(counts)
    first = np.repeat(starts[:-1], counts)        # index of each record's batch's first record

    # 2. exact fields relative to each record's batch
    od = np.arange(n, dtype=np.int64) - first
    if log_append:
        tsd = np.zeros(n, dtype=np.int64)
    else:
        base_ts = ts[first]
        overflow = (base_ts == NO_TIMESTAMP) & (ts == INT64_MAX)
        if overflow.any():
            row = int(np.flatnonzero(overflow)[0])
            raise InvalidRecordError(f"column 'timestamps' row {row}: timestamp {INT64_MAX} is too "
                                     f"far from its batch's first timestamp -1 for a varlong delta")
        tsd = ts - base_ts
    tv, ov = _Varints(tsd), _Varints(od)
    bv = _Varints(_body_sizes(tv.w, ov.w, kv, klen, vv, vlen, hdr))

    # 3. record bytes: fixed pieces from numpy, keys/values/headers joined in by Arrow
    if key_arr is None:
        args = [_pieces([bv, 0, tv, ov, 1, vv]), vals]          # 1: key length -1 (null)
    else:
        args = [_pieces([bv, 0, tv, ov, kv]), key_arr, _pieces([vv]), vals]
    if hdr is None:
        args.append(_NUL)
    else:
        args += [_pieces([hdr.counts]), hdr.blob]
    recs = pc.binary_join_element_wise(*args, _EMPTY, null_handling="replace", null_replacement=b"")
    roff = np.frombuffer(recs.buffers()[1], dtype=np.int64)[recs.offset:recs.offset + n + 1]
    rdata = recs.buffers()[2]
    batch_body = roff[starts[1:]] - roff[starts[:-1]]
    if int(batch_body.max()) > INT32_MAX - MIN_BATCH_LENGTH:
        raise InvalidRecordError("a record batch would exceed 2 GiB (int32 batchLength)")

    # 4. batch headers, vectorised; then one CRC-32C per batch over header tail + record bytes
    base_offsets = base_offset + starts[:-1]
    first_ts = ts[starts[:-1]]
    max_ts = np.maximum.reduceat(ts, starts[:-1]) if not log_append else first_ts
    hdrs = np.zeros(nb, dtype=_HEADER_DTYPE)
    hdrs["base_offset"] = base_offsets
    hdrs["batch_length"] = MIN_BATCH_LENGTH + batch_body
    hdrs["leader_epoch"] = PARTITION_LEADER_EPOCH
    hdrs["magic"] = MAGIC
    hdrs["attributes"] = TIMESTAMP_TYPE_MASK if log_append else 0
    hdrs["last_offset_delta"] = counts - 1
    hdrs["base_timestamp"] = first_ts
    hdrs["max_timestamp"] = max_ts
    hdrs["producer_id"] = NO_PRODUCER_ID
    hdrs["producer_epoch"] = NO_PRODUCER_EPOCH
    hdrs["base_sequence"] = NO_SEQUENCE
    hdrs["record_count"] = counts
    hbytes = hdrs.view(np.uint8)
    rview = memoryview(rdata)
    crc = _crc32c.crc32c
    crcs = np.empty(nb, dtype=np.uint32)
    bstart = roff[starts[:-1]].tolist()
    bend = roff[starts[1:]].tolist()
    for b in range(nb):                            # per batch, never per record
        c = crc(hbytes[b * BATCH_HEADER_SIZE + ATTRIBUTES_OFFSET:(b + 1) * BATCH_HEADER_SIZE])
        crcs[b] = crc(rview[bstart[b]:bend[b]], value=c)
    hdrs["crc"] = crcs

    # 5. header + records of each batch, back to back: one more copy, in C++
    hoffs = np.arange(0, (nb + 1) * BATCH_HEADER_SIZE, BATCH_HEADER_SIZE, dtype=np.int64)
    harr = pa.Array.from_buffers(_LB, nb, [None, pa.py_buffer(hoffs), pa.py_buffer(hbytes)])
    barr = pa.Array.from_buffers(_LB, nb, [None, pa.py_buffer(np.ascontiguousarray(roff[starts])),
                                           rdata])
    out = pc.binary_join_element_wise(harr, barr, _EMPTY)
    ooff = np.frombuffer(out.buffers()[1], dtype=np.int64)[out.offset:out.offset + nb + 1]
    obuf = out.buffers()[2]
    data = memoryview(obuf)[int(ooff[0]):int(ooff[-1])]
    positions = (ooff - ooff[0]).astype(np.int64)
    return EncodedBatches(data, positions, base_offsets.astype(np.int64),
                          (base_offsets + counts - 1).astype(np.int64), first_ts.copy(),
                          np.asarray(max_ts, dtype=np.int64).copy(), counts.astype(np.int64), n,
                          tstype, obuf)


def _group(bound: np.ndarray, budget: int) -> np.ndarray:
    """Greedy batch boundaries: starts[0] = 0, starts[-1] = n; each batch takes records while the
    sum of their bounds stays within `budget` (at least one record). One step per batch."""
    n = len(bound)
    cum = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(bound, out=cum[1:])
    if cum[-1] <= budget:
        return np.array([0, n], dtype=np.int64)
    starts = [0]
    s = 0
    search = cum.searchsorted
    while s < n:
        e = int(search(cum[s] + budget, side="right")) - 1
        s = e if e > s else s + 1
        starts.append(s)
    return np.asarray(starts, dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# decoding to Arrow

def decode_to_arrow(buf, batch_positions, *, start_offset: int, end_offset: int) -> pa.RecordBatch:
    """Decode the batches starting at `batch_positions` in `buf` into one RecordBatch with columns
    key, value, offset, timestamp (ms; a LogAppendTime batch gives its maxTimestamp to every
    record), timestampType, headers (never null: an empty list when none). Records outside
    [start_offset, end_offset) are dropped. Bad structure raises CorruptRecordError naming the
    batch position (CRCs are scan_batches' job)."""
    view = memoryview(buf)
    if view.ndim != 1 or view.format != "B":      # Arrow buffers export signed 'b': bytes as ints < 0
        view = view.cast("B")
    inflated = inflate_in_range(view, batch_positions, int(start_offset), int(end_offset))
    if inflated is None:
        return _decode(view, batch_positions, start_offset, end_offset)
    data, positions, origins = inflated
    try:
        return _decode(memoryview(data), positions, start_offset, end_offset)
    except CorruptRecordError as exc:
        raise CorruptRecordError(f"in the batches at positions {origins[0]}..{origins[-1]} "
                                 f"(decompressed): {exc}") from exc


def _decode(view: memoryview, batch_positions, start_offset: int, end_offset: int) -> pa.RecordBatch:
    kernels = native_kernels()
    if kernels is not None:
        got = _decode_native(kernels, view, batch_positions, int(start_offset), int(end_offset))
        if got is not None:
            return got
    return _decode_numpy(view, batch_positions, start_offset, end_offset)


def inflate_in_range(view: memoryview, batch_positions, start: int, end: int):
    """None when no batch holding offsets in [start, end) is compressed (the common case, checked
    with one vectorised look at each batch's codec bits); else (bytes, positions, original positions)
    of just the batches in range, the compressed ones inflated (indexer.codec.compression): the record
    walks, compiled or not, never see compressed bytes."""
    positions = np.asarray(batch_positions, dtype=np.int64).ravel()
    if not len(positions):
        return None
    a = np.frombuffer(view, dtype=np.uint8)
    codec_at = positions + ATTRIBUTES_OFFSET + 1
    if (codec_at >= len(a)).any() or not (a[codec_at] & COMPRESSION_CODEC_MASK).any():
        return None                              # out-of-bounds positions: the decoders name them
    parts, new_positions, origins = [], [], []
    at = 0
    for p in positions.tolist():
        h = parse_header(view, p)
        if h.base_offset + h.last_offset_delta < start or h.base_offset >= end:
            continue
        if p + h.size > len(view):
            raise CorruptRecordError(f"batch at position {p} (offset {h.base_offset}) runs past the end "
                                     f"of the data at {len(view)}")
        part = inflate_batch(view, p, h.size) if h.compression_codec else view[p:p + h.size]
        parts.append(part)
        new_positions.append(at)
        origins.append(p)
        at += len(part)
    if not parts:
        return None
    return b"".join(parts), np.asarray(new_positions, dtype=np.int64), origins


def _decode_native(kernels, view: memoryview, batch_positions, start: int,
                   end: int) -> pa.RecordBatch | None:
    """decode_to_arrow through the compiled kernel; None when the numpy path must decide (it
    raises the precise error for whatever the kernel found wrong)."""
    positions = np.ascontiguousarray(np.asarray(batch_positions, dtype=np.int64).ravel())
    res = kernels.decode_batches(np.frombuffer(view, dtype=np.uint8), positions, start, end)
    if res is None:
        return None
    m = res["rows"]
    keys = pa.Array.from_buffers(pa.binary(), m, res["key"], res["key_nulls"])
    values = pa.Array.from_buffers(pa.binary(), m, res["value"], res["value_nulls"])
    hoff, hks = res["header_offsets"], res["hks"]
    if len(hks):
        data = pa.py_buffer(view)
        try:
            hkeys = _gather(data, hks, res["hkl"]).cast(pa.string())
        except pa.ArrowInvalid:
            return None                              # not UTF-8: the numpy path names the batch
        structs = pa.StructArray.from_arrays([hkeys, _gather(data, res["hvs"], res["hvl"])],
                                             fields=list(HEADER_TYPE.value_type))
    else:
        hoff = np.zeros(m + 1, dtype=np.int32)
        structs = _NO_HEADERS
    hlist = pa.ListArray.from_arrays(pa.array(hoff), structs, type=HEADER_TYPE)
    return pa.RecordBatch.from_arrays(
        [keys, values, pa.Array.from_buffers(pa.int64(), m, [None, res["offset"]]),
         pa.Array.from_buffers(pa.int64(), m, [None, res["timestamp"]]),
         pa.Array.from_buffers(pa.int32(), m, [None, res["timestampType"]]), hlist],
        schema=ARROW_SCHEMA)


def _decode_numpy(view: memoryview, batch_positions, start_offset: int,
                  end_offset: int) -> pa.RecordBatch:
    """decode_to_arrow with numpy: the reference for the kernel, and the path that raises."""
    positions = [int(p) for p in np.asarray(batch_positions, dtype=np.int64).ravel()]
    picked = []                                  # (position, header) of batches in range
    for p in positions:
        h = parse_header(view, p)
        if h.base_offset + h.last_offset_delta < start_offset or h.base_offset >= end_offset:
            continue
        if p + h.size > len(view):
            raise CorruptRecordError(f"batch at position {p} (offset {h.base_offset}) runs past the "
                                     f"end of the data at {len(view)}")
        if h.attributes & COMPRESSION_CODEC_MASK:
            raise CorruptRecordError(f"batch at position {p} uses compression codec "
                                     f"{h.attributes & COMPRESSION_CODEC_MASK}; seglog reads "
                                     f"uncompressed batches only")
        if h.record_count:
            picked.append((p, h))
    if not picked:
        return pa.RecordBatch.from_arrays([pa.array([], f.type) for f in ARROW_SCHEMA],
                                          schema=ARROW_SCHEMA)
    lo = min(p for p, _ in picked)
    hi = max(p + h.size for p, h in picked)
    region = view[lo:hi]
    a = np.frombuffer(region, dtype=np.uint8)

    # 1. record starts: the one sequential step, reading only each record's length varint
    rstarts: list[int] = []
    rlens: list[int] = []
    add_start, add_len = rstarts.append, rlens.append
    for p, h in picked:
        q = p - lo + BATCH_HEADER_SIZE
        bend = p - lo + h.size
        try:
            for _ in range(h.record_count):
                b = region[q]
                if b < 0x80:                       # lengths below 64: one byte
                    q += 1
                    raw = b
                else:
                    b2 = region[q + 1]
                    if b2 < 0x80:                  # below 8192: two bytes
                        q += 2
                        raw = (b & 0x7F) | (b2 << 7)
                    else:
                        raw, q = _uvarint(region, q, bend)
                length = (raw >> 1) ^ -(raw & 1)
                add_start(q)
                add_len(length)
                q += length
        except IndexError:
            q = -1
        if q != bend:
            raise CorruptRecordError(f"batch at position {p} (offset {h.base_offset}): its "
                                     f"{h.record_count} records do not end at the batch end")
    s = np.asarray(rstarts, dtype=np.int64)
    lens = np.asarray(rlens, dtype=np.int64)
    nrec = len(s)
    counts = np.array([h.record_count for _, h in picked], dtype=np.int64)
    batch_of = np.repeat(np.arange(len(picked)), counts)
    bpos = np.array([p for p, _ in picked], dtype=np.int64)

    def where(i: int) -> str:
        b = int(batch_of[i])
        return f"record {i - int(counts[:b].sum())} of the batch at position {int(bpos[b])}"

    if (lens < 0).any():
        raise CorruptRecordError(f"{where(int(np.flatnonzero(lens < 0)[0]))}: negative length")
    e = s + lens

    # 2. every field, all records at once
    p = s + 1                                          # skip the attributes byte
    tsd, w = _read_varints(a, p, e, 10, "timestampDelta", where)
    p = p + w
    od, w = _read_varints(a, p, e, 5, "offsetDelta", where)
    p = p + w
    klen, w = _read_varints(a, p, e, 5, "key length", where)
    kstart = p + w
    vpos = kstart + np.maximum(klen, 0)
    _check_bounds(klen, vpos, e, "key", where)
    vlen, w = _read_varints(a, vpos, e, 5, "value length", where)
    vstart = vpos + w
    p = vstart + np.maximum(vlen, 0)
    _check_bounds(vlen, p, e, "value", where)
    hcount, w = _read_varints(a, p, e, 5, "header count", where)
    p = p + w
    if (hcount < 0).any():
        raise CorruptRecordError(f"{where(int(np.flatnonzero(hcount < 0)[0]))}: negative header count")
    hfirst = np.zeros(nrec + 1, dtype=np.int64)
    np.cumsum(hcount, out=hfirst[1:])
    nh = int(hfirst[-1])
    hks = np.zeros(nh, np.int64)
    hkl = np.zeros(nh, np.int64)
    hvs = np.zeros(nh, np.int64)
    hvl = np.zeros(nh, np.int64)
    for j in range(int(hcount.max()) if nrec else 0):   # header j of every record that has one
        r = np.flatnonzero(hcount > j)
        slot = hfirst[r] + j
        pr, er = p[r], e[r]
        kl, w = _read_varints(a, pr, er, 5, f"header {j} key length", lambda i: where(int(r[i])))
        ks = pr + w
        vp = ks + np.maximum(kl, 0)
        if (kl < 0).any():
            raise CorruptRecordError(f"{where(int(r[np.flatnonzero(kl < 0)[0]]))}: header {j} has "
                                     f"a null or negative key length")
        _check_bounds(kl, vp, er, f"header {j} key", lambda i: where(int(r[i])))
        vl, w = _read_varints(a, vp, er, 5, f"header {j} value length", lambda i: where(int(r[i])))
        vs = vp + w
        pe = vs + np.maximum(vl, 0)
        _check_bounds(vl, pe, er, f"header {j} value", lambda i: where(int(r[i])))
        hks[slot], hkl[slot], hvs[slot], hvl[slot] = ks, kl, vs, vl
        p[r] = pe
    if (p != e).any():
        i = int(np.flatnonzero(p != e)[0])
        raise CorruptRecordError(f"{where(i)}: {int(e[i] - p[i])} bytes left over after its fields")

    # 3. offsets, timestamps, and the range cut
    base = np.array([h.base_offset for _, h in picked], dtype=np.int64)
    bts = np.array([h.base_timestamp for _, h in picked], dtype=np.int64)
    mts = np.array([h.max_timestamp for _, h in picked], dtype=np.int64)
    lat = np.array([h.timestamp_type for _, h in picked], dtype=np.int32)
    offsets = base[batch_of] + od
    rlat = lat[batch_of]
    timestamps = np.where(rlat == LOG_APPEND_TIME, mts[batch_of], bts[batch_of] + tsd)
    keep = (offsets >= start_offset) & (offsets < end_offset)
    if not keep.all():
        idx = np.flatnonzero(keep)
        hkeep = np.repeat(keep, hcount)
        offsets, timestamps, rlat = offsets[idx], timestamps[idx], rlat[idx]
        kstart, klen, vstart, vlen, hcount = kstart[idx], klen[idx], vstart[idx], vlen[idx], hcount[idx]
        hks, hkl, hvs, hvl = hks[hkeep], hkl[hkeep], hvs[hkeep], hvl[hkeep]
    data = pa.py_buffer(region)
    keys = _gather(data, kstart, klen)
    values = _gather(data, vstart, vlen)
    hkeys = _gather(data, hks, hkl)
    try:
        hkeys = hkeys.cast(pa.string())
    except pa.ArrowInvalid as exc:
        raise CorruptRecordError(f"a header key in the batches from position {lo} is not UTF-8") from exc
    hvals = _gather(data, hvs, hvl)
    loff = np.zeros(len(hcount) + 1, dtype=np.int32)
    np.cumsum(hcount, out=loff[1:])
    structs = pa.StructArray.from_arrays([hkeys, hvals], fields=list(HEADER_TYPE.value_type))
    hlist = pa.ListArray.from_arrays(pa.array(loff), structs, type=HEADER_TYPE)
    return pa.RecordBatch.from_arrays(
        [keys, values, pa.array(offsets, pa.int64()), pa.array(timestamps, pa.int64()),
         pa.array(rlat, pa.int32()), hlist], schema=ARROW_SCHEMA)


def _uvarint(buf, q: int, end: int) -> tuple[int, int]:
    """The unsigned varint at q (a record length, more than one byte): (raw value, next position)."""
    u = 0
    for k in range(5):
        if q + k >= end:
            raise IndexError
        b = buf[q + k]
        u |= (b & 0x7F) << (7 * k)
        if b < 0x80:
            return u, q + k + 1
    raise IndexError


def _check_bounds(length: np.ndarray, end_pos: np.ndarray, rec_end: np.ndarray, what: str, where) -> None:
    bad = (length < -1) | (end_pos > rec_end)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CorruptRecordError(f"{where(i)}: {what} length {int(length[i])} is out of bounds")


def _gather(data: pa.Buffer, start: np.ndarray, length: np.ndarray) -> pa.Array:
    """Binary column of data[start[i]:start[i] + length[i]] (null where length is -1). The ranges
    are in order and disjoint, so they and the gaps between them are one offsets array over `data`;
    `take` of the even rows copies just the fields, in C++."""
    m = len(start)
    if m == 0:
        return pa.array([], pa.binary())
    inter = np.empty(2 * m, dtype=np.int64)
    inter[0::2] = start
    inter[1::2] = start + np.maximum(length, 0)
    offs = np.empty(2 * m + 1, dtype=np.int64)
    offs[:-1] = inter
    offs[-1] = inter[-1]
    valid = np.ones(2 * m, dtype=bool)
    nulls = length < 0
    valid[0::2] = ~nulls
    vbuf = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls.any() else None
    both = pa.Array.from_buffers(_LB, 2 * m, [vbuf, pa.py_buffer(offs), data])
    picked = both.take(pa.array(np.arange(0, 2 * m, 2, dtype=np.int64)))
    return picked.cast(pa.binary())


# ---------------------------------------------------------------------------------------------
# re-encoding batches with sparse offsets (the cleaner's rewrite, docs/spec.md §3.9)

SPARSE_HEADER_FIELDS = ("base_offset", "last_offset_delta", "leader_epoch", "attributes", "base_timestamp",
                        "max_timestamp", "producer_id", "producer_epoch", "base_sequence")


def encode_sparse_batches(fields: dict, starts: np.ndarray, keys: pa.Array, values: pa.Array,
                          offsets: np.ndarray, timestamps: np.ndarray, headers) -> tuple[bytes, np.ndarray]:
    """Uncompressed batches whose header fields are given per batch (`fields`, SPARSE_HEADER_FIELDS
    as numpy arrays) holding records `starts[b]:starts[b + 1]` at their own offsets: each record's
    offset delta is its offset minus its batch's base offset, its timestamp delta its timestamp minus
    the batch's base timestamp (as Kafka's MemoryRecordsBuilder writes a cleaned batch, keeping the
    original base offset and lastOffsetDelta). Batches with no records are bare headers. Returns
    (bytes, positions of the batches plus the end). Vectorised as `encode_columns`."""
    nb = len(starts) - 1
    n = int(starts[-1])
    counts = np.diff(starts).astype(np.int64)
    batch_of = np.repeat(np.arange(nb), counts)
    vals = values.cast(_LB) if len(values) else pa.array([], _LB)
    key_arr = keys.cast(_LB) if len(keys) else pa.array([], _LB)
    if n:
        vlen, klen = _lengths(vals), _lengths(key_arr)
        kv, vv = _Varints(klen), _Varints(vlen)
        od = np.asarray(offsets, dtype=np.int64) - fields["base_offset"][batch_of]
        tsd = np.asarray(timestamps, dtype=np.int64) - fields["base_timestamp"][batch_of]
        tv, ov = _Varints(tsd), _Varints(od)
        hdr = _encode_headers(headers, n)
        bv = _Varints(_body_sizes(tv.w, ov.w, kv, klen, vv, vlen, hdr))
        args = [_pieces([bv, 0, tv, ov, kv]), key_arr, _pieces([vv]), vals]
        args += [_NUL] if hdr is None else [_pieces([hdr.counts]), hdr.blob]
        recs = pc.binary_join_element_wise(*args, _EMPTY, null_handling="replace", null_replacement=b"")
        roff = np.frombuffer(recs.buffers()[1], dtype=np.int64)[recs.offset:recs.offset + n + 1]
        rdata = recs.buffers()[2]
    else:
        roff, rdata = np.zeros(1, dtype=np.int64), pa.py_buffer(b"")
    rstart = roff[starts[:-1]]
    rend = roff[starts[1:]]
    hdrs = np.zeros(nb, dtype=_HEADER_DTYPE)
    for name in SPARSE_HEADER_FIELDS:
        hdrs[name] = fields[name]
    hdrs["batch_length"] = MIN_BATCH_LENGTH + (rend - rstart)
    hdrs["magic"] = MAGIC
    hdrs["record_count"] = counts
    hbytes = hdrs.view(np.uint8)
    rview = memoryview(rdata)
    out = bytearray()
    positions = np.zeros(nb + 1, dtype=np.int64)
    crc = _crc32c.crc32c
    for b in range(nb):                            # per batch, never per record
        h = bytearray(hbytes[b * BATCH_HEADER_SIZE:(b + 1) * BATCH_HEADER_SIZE])
        body = rview[int(rstart[b]):int(rend[b])]
        c = crc(body, value=crc(memoryview(h)[ATTRIBUTES_OFFSET:]))
        h[CRC_OFFSET:CRC_OFFSET + 4] = int(c).to_bytes(4, "big")
        out += h
        out += body
        positions[b + 1] = len(out)
    return bytes(out), positions
