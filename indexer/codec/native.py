"""Compiled kernels for the bulk batch codec (`indexer.codec.columns`), with numba.

`columns` keeps the numpy/Arrow path as the reference and the fallback; these kernels do the same
work in one compiled pass each and must produce exactly the same bytes and the same Arrow columns
(tests/indexer/test_native.py holds them to it):

- `encode_plain`: headerless records -> record batches (batch grouping, every header field but the
  CRC, every record) written straight into one preallocated buffer; the CRC-32C of each batch is
  then filled in by the `crc32c` C library (hardware CRC, faster than anything compiled here).
- `decode_batches`: whole batches -> the columns of `columns.ARROW_SCHEMA` (headers as positions,
  turned into Arrow by the caller).

Errors: a kernel never raises. Any structural problem (a corrupt record, a timestamp delta out of
range, a batch over 2 GiB) makes it return a non-zero status, and the caller reruns the numpy path,
which raises the precise, typed error. So a kernel may be stricter than the numpy path, never
laxer: whatever the numpy path refuses, the kernel reports.

Compilation is lazy (first call) and cached on disk (`cache=True`), so later processes, such as
Spark's Python workers, load machine code instead of compiling. The cache lives in the package's
`__pycache__` when that is writable, else in $NUMBA_CACHE_DIR, else ~/.cache/seglog/numba (or a
per-user temp dir): numba refuses `cache=True` outright when it finds no writable place.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _writable_dir(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
        return True
    except OSError:
        return False


def cache_dir_for(pycache: Path) -> str | None:
    """Where numba should cache when `pycache` (the package's __pycache__) is not writable: None
    when it is, or when NUMBA_CACHE_DIR already says; else the first writable of
    $XDG_CACHE_HOME/seglog/numba (~/.cache/...) and a per-user temp dir."""
    if os.environ.get("NUMBA_CACHE_DIR") or _writable_dir(pycache):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    for cand in (Path(base) / "seglog" / "numba",
                 Path(tempfile.gettempdir()) / f"seglog-numba-{os.getuid()}"):
        if _writable_dir(cand):
            return str(cand)
    return None                 # numba will refuse cache=True; columns falls back to numpy


def _choose_cache_dir() -> None:
    chosen = cache_dir_for(Path(__file__).resolve().parent / "__pycache__")
    if chosen is not None:
        os.environ["NUMBA_CACHE_DIR"] = chosen
        import numba.core.config as _cfg          # numba reads the variable at import only
        _cfg.CACHE_DIR = chosen


_choose_cache_dir()

import crc32c as _crc32c                                # noqa: E402
import numpy as np                                      # noqa: E402
import pyarrow as pa                                    # noqa: E402
from numba import njit, types                           # noqa: E402
from numba.core import cgutils                          # noqa: E402
from numba.extending import intrinsic                   # noqa: E402

from seglog.conf.limits import INFLATED_BATCH_MAX, INT32_MAX, INT64_MAX, MIN_RECORD_SIZE  # noqa: E402
from seglog.indexer.codec.batch_layout import (  # noqa: E402  (numba freezes these globals into the kernels)
    ATTRIBUTES_OFFSET, BASE_SEQUENCE_OFFSET, BASE_TIMESTAMP_OFFSET, BATCH_HEADER_SIZE, BATCH_LENGTH_OFFSET,
    COMPRESSION_CODEC_MASK, CRC_OFFSET, LAST_OFFSET_DELTA_OFFSET, LOG_OVERHEAD, MAGIC, MAGIC_OFFSET,
    MAX_TIMESTAMP_OFFSET, MIN_BATCH_LENGTH, PARTITION_LEADER_EPOCH_OFFSET, PRODUCER_EPOCH_OFFSET,
    PRODUCER_ID_OFFSET, RECORD_COUNT_OFFSET, TIMESTAMP_TYPE_MASK)

_JIT = dict(cache=True, nogil=True)
_INT32_MAX = INT32_MAX              # numba freezes module globals: local names keep the kernels readable
_INT64_MAX = INT64_MAX
_HEADER = BATCH_HEADER_SIZE
_MIN_BATCH_LENGTH = MIN_BATCH_LENGTH
_MIN_RECORD_SIZE = MIN_RECORD_SIZE
_INFLATED_BATCH_MAX = INFLATED_BATCH_MAX

OK = 0
ERROR = 1                       # the numpy path must run and raise (or decide)


# ---------------------------------------------------------------------------------------------
# varints and big-endian fields (all arithmetic in int64: numba turns uint64 op int64 into float)

@njit(inline="always")
def _zigzag(v):
    """Zigzag of an int64, as the int64 with the same bits as the unsigned result."""
    return (v << 1) ^ (v >> 63)


@njit(inline="always")
def _uwidth(u):
    """Bytes of the unsigned varint whose bits are the int64 `u` (negative = top bit set: 10)."""
    if u < 0:
        return 10
    w = 1
    while u >= 0x80:
        u >>= 7
        w += 1
    return w


@njit(inline="always")
def _put_varint(out, p, u):
    """Write the unsigned varint with the bits of int64 `u` at out[p]; returns the next position."""
    while u < 0 or u >= 0x80:
        out[p] = (u & 0x7F) | 0x80
        u = (u >> 7) & 0x01FFFFFFFFFFFFFF         # logical shift
        p += 1
    out[p] = u
    return p + 1


@njit(inline="always")
def _put_be(out, p, v, nbytes):
    for k in range(nbytes):
        out[p + k] = (v >> (8 * (nbytes - 1 - k))) & 0xFF


@njit(inline="always")
def _get_be(a, p, nbytes):
    """Signed big-endian integer of `nbytes` (2, 4 or 8) at a[p]."""
    v = np.int64(0)
    for k in range(nbytes):
        v = (v << 8) | np.int64(a[p + k])
    if nbytes < 8:
        half = np.int64(1) << (8 * nbytes - 1)
        if v >= half:
            v -= half << 1
    return v


@njit(inline="always")
def _get_varint(a, p, end, max_bytes):
    """Zigzag varint at a[p], no byte at or past `end` (nor past the array, nor before its start):
    (value, next position, ok). Every read of the record walks goes through here, so no position a
    corrupt length produces ever reaches memory outside `a`."""
    u = np.int64(0)
    if p < 0:
        return np.int64(0), p, False
    if end > len(a):
        end = len(a)
    for k in range(max_bytes):
        if p + k >= end:
            return np.int64(0), p, False
        b = np.int64(a[p + k])
        u |= (b & 0x7F) << (7 * k)
        if b < 0x80:
            return ((u >> 1) & _INT64_MAX) ^ -(u & 1), p + k + 1, True
    return np.int64(0), p, False


# ---------------------------------------------------------------------------------------------
# encode

@intrinsic
def _copy(typingctx, out, p, src, s, n):
    """out[p:p + n] = src[s:s + n] as one memcpy (uint8 arrays, positions in bounds, no overlap).
    A slice assignment costs ~100 ns of view and refcount bookkeeping per call, and a byte loop
    does not vectorise (numba's negative-index wraparound on every access)."""
    sig = types.void(out, types.int64, src, types.int64, types.int64)

    def codegen(context, builder, signature, args):
        dst, dpos, srcv, spos, count = args
        d = context.make_array(signature.args[0])(context, builder, dst)
        s_ = context.make_array(signature.args[2])(context, builder, srcv)
        cgutils.raw_memcpy(builder, builder.gep(d.data, [dpos]), builder.gep(s_.data, [spos]),
                           count, 1)
    return sig, codegen


@njit(**_JIT)
def _encode_plan(vlen, klen, has_keys, ts, log_append, append_time, budget, od_w):
    """Group n headerless records into batches and size them.

    Grouping equals `columns._group` over `columns._bound_sizes`: a batch takes records while the
    sum of their size bounds stays within `budget`, at least one. Returns (status, positions,
    starts, first_ts, max_ts): batch i holds records starts[i]..starts[i+1]-1 and the bytes
    positions[i]..positions[i+1]-1 of the output."""
    n = len(vlen)
    z = np.zeros(1, np.int64)
    # width of the widest timestamp delta in any batch (as columns._width_of(max - min))
    ts_w = 1
    if not log_append:
        tmin = ts[0]
        tmax = ts[0]
        for i in range(n):
            t = ts[i]
            if t < tmin:
                tmin = t
            if t > tmax:
                tmax = t
        ts_w = _uwidth(_zigzag(tmax - tmin))     # wraps to 10 bytes at the very top, as it must
    # Room for a batch a record (the most there can be; untouched pages cost nothing): growing the
    # arrays inside the loop made numba keep them in memory and slowed every record ~2x.
    cap = n + 1
    starts = np.empty(cap, np.int64)
    bodies = np.empty(cap, np.int64)             # record bytes of each batch
    first_ts = np.empty(cap, np.int64)
    max_ts = np.empty(cap, np.int64)
    nb = 0
    acc = np.int64(0)
    s = 0
    base_ts = np.int64(0)
    for i in range(n):
        vl = vlen[i]
        kl = klen[i] if has_keys else np.int64(-1)
        fixed = 2 + _uwidth(_zigzag(kl)) + max(kl, 0) + _uwidth(_zigzag(vl)) + max(vl, 0)
        body = fixed + ts_w + od_w
        bound = body + _uwidth(_zigzag(body))
        t = append_time if log_append else ts[i]
        if i == 0 or acc + bound > budget:       # a new batch (never an empty one)
            if i > 0 and bodies[nb - 1] > _INT32_MAX - _MIN_BATCH_LENGTH:
                return ERROR, z, z, z, z
            starts[nb] = i
            bodies[nb] = 0
            first_ts[nb] = t
            max_ts[nb] = t
            nb += 1
            s = i
            acc = 0
            base_ts = t
        acc += bound
        if t > max_ts[nb - 1]:
            max_ts[nb - 1] = t
        tsd = np.int64(0)
        if not log_append:
            if base_ts == -1 and t == _INT64_MAX:
                return ERROR, z, z, z, z
            tsd = t - base_ts
        exact = fixed + _uwidth(_zigzag(tsd)) + _uwidth(_zigzag(np.int64(i - s)))
        bodies[nb - 1] += exact + _uwidth(_zigzag(exact))
    if bodies[nb - 1] > _INT32_MAX - _MIN_BATCH_LENGTH:
        return ERROR, z, z, z, z
    starts[nb] = n
    positions = np.empty(nb + 1, np.int64)
    positions[0] = 0
    for b in range(nb):
        positions[b + 1] = positions[b] + _HEADER + bodies[b]
    return OK, positions, starts[:nb + 1].copy(), first_ts[:nb].copy(), max_ts[:nb].copy()


@njit(**_JIT)
def _encode_write(out, positions, starts, first_ts, max_ts, base_offset, voff, vdata, vlen, koff, kdata,
                  klen, has_keys, ts, log_append):
    """Write the batches `_encode_plan` sized into `out`: each header (CRC zero), then its records."""
    attributes = TIMESTAMP_TYPE_MASK if log_append else 0
    for b in range(len(positions) - 1):
        p = positions[b]
        s = starts[b]
        e = starts[b + 1]
        _put_be(out, p, base_offset + s, 8)
        _put_be(out, p + BATCH_LENGTH_OFFSET, positions[b + 1] - p - LOG_OVERHEAD, 4)
        _put_be(out, p + PARTITION_LEADER_EPOCH_OFFSET, 0, 4)
        out[p + MAGIC_OFFSET] = MAGIC
        _put_be(out, p + CRC_OFFSET, 0, 4)   # filled by the caller
        _put_be(out, p + ATTRIBUTES_OFFSET, attributes, 2)
        _put_be(out, p + LAST_OFFSET_DELTA_OFFSET, e - s - 1, 4)
        _put_be(out, p + BASE_TIMESTAMP_OFFSET, first_ts[b], 8)
        _put_be(out, p + MAX_TIMESTAMP_OFFSET, max_ts[b], 8)
        _put_be(out, p + PRODUCER_ID_OFFSET, -1, 8)
        _put_be(out, p + PRODUCER_EPOCH_OFFSET, -1, 2)
        _put_be(out, p + BASE_SEQUENCE_OFFSET, -1, 4)
        _put_be(out, p + RECORD_COUNT_OFFSET, e - s, 4)
        p += _HEADER
        bts = first_ts[b]
        for i in range(s, e):
            vl = vlen[i]
            kl = klen[i] if has_keys else np.int64(-1)
            tz = np.int64(0) if log_append else _zigzag(ts[i] - bts)
            oz = np.int64(i - s) << 1
            kz = _zigzag(kl)
            vz = _zigzag(vl)
            body = (2 + _uwidth(tz) + _uwidth(oz) + _uwidth(kz) + max(kl, 0) + _uwidth(vz)
                    + max(vl, 0))
            p = _put_varint(out, p, body << 1)
            out[p] = 0                           # attributes
            p = _put_varint(out, p + 1, tz)
            p = _put_varint(out, p, oz)
            p = _put_varint(out, p, kz)
            if kl > 0:
                _copy(out, p, kdata, koff[i], kl)
                p += kl
            p = _put_varint(out, p, vz)
            if vl > 0:
                _copy(out, p, vdata, voff[i], vl)
                p += vl
            out[p] = 0                           # header count
            p += 1


@njit(**_JIT)
def _put_crcs(out, positions, crcs):
    for b in range(len(crcs)):
        _put_be(out, positions[b] + CRC_OFFSET, np.int64(crcs[b]), 4)


def readonly(x: np.ndarray) -> np.ndarray:
    """A read-only view: numba compiles one specialisation per (dtype, layout, readonly), so every
    input array handed to a kernel is read-only, whether it came from Arrow, mmap, bytes or numpy."""
    v = x.view()
    v.flags.writeable = False
    return v


_NO_BYTES = readonly(np.zeros(0, np.uint8))
_NO_OFFSETS = readonly(np.zeros(1, np.int64))


def _column_parts(arr):
    """(offsets int64, data uint8, lengths int64) of a large_binary Arrow array: offsets and data are
    zero-copy read-only views; lengths are each row's bytes, -1 for a null. The kernels take lengths,
    not the validity bitmap: a bit test per field inside them cost ~20 ns a record (numba compiled the
    inlined test into a loop LLVM could not optimise; 2-3x slower appends of 100-byte records)."""
    bufs = arr.buffers()
    n = len(arr)
    off = readonly(np.frombuffer(bufs[1], dtype=np.int64)[arr.offset:arr.offset + n + 1])
    data = readonly(np.frombuffer(bufs[2], dtype=np.uint8)) if bufs[2] is not None else _NO_BYTES
    lengths = np.diff(off)
    if arr.null_count:
        lengths[arr.is_null().to_numpy(zero_copy_only=False)] = -1
    return off, data, readonly(lengths)


def _arrow_bytes(n: int) -> np.ndarray:
    """A writable uint8 array of n bytes from Arrow's memory pool (mimalloc/jemalloc keep freed
    pages, so the next call does not page-fault them in again as a fresh numpy allocation would)."""
    return np.frombuffer(pa.allocate_buffer(n), dtype=np.uint8) if n else np.zeros(0, np.uint8)


def encode_plain(base_offset: int, vals, key_arr, ts, append_time_ms, max_batch_bytes: int,
                 od_w: int):
    """Headerless records as batches, CRCs filled. `vals`/`key_arr` are large_binary Arrow arrays
    (key_arr may be None: all keys null); `ts` int64 ms (ignored with `append_time_ms`); `od_w` the
    offset delta width `columns` bounds with. Returns (data, positions, starts, first_ts, max_ts)
    as uint8/int64 numpy arrays, or None when the numpy path must run to raise the error."""
    voff, vdata, vlen = _column_parts(vals)
    if key_arr is not None:
        koff, kdata, klen = _column_parts(key_arr)
    else:
        koff, kdata, klen = _NO_OFFSETS, _NO_BYTES, _NO_OFFSETS
    log_append = append_time_ms is not None
    ts = readonly(ts) if not log_append else _NO_OFFSETS
    has_keys = key_arr is not None
    status, positions, starts, first_ts, max_ts = _encode_plan(
        vlen, klen, has_keys, ts, log_append, int(append_time_ms) if log_append else 0,
        int(max_batch_bytes) - _HEADER, int(od_w))
    if status != OK:
        return None
    out = _arrow_bytes(int(positions[-1]))
    _encode_write(out, positions, starts, first_ts, max_ts, int(base_offset), voff, vdata, vlen,
                  koff, kdata, klen, has_keys, ts, log_append)
    view = memoryview(out)
    crc = _crc32c.crc32c
    pos = positions.tolist()
    crcs = np.fromiter((crc(view[pos[b] + ATTRIBUTES_OFFSET:pos[b + 1]]) for b in range(len(pos) - 1)),
                       dtype=np.uint32, count=len(pos) - 1)
    _put_crcs(out, positions, crcs)
    return out, positions, starts, first_ts, max_ts


# ---------------------------------------------------------------------------------------------
# decode

@njit(inline="always")
def _header_ok(a, pos):
    """The checks of records.parse_header/header_problem for the header at `pos`."""
    if pos < 0 or pos + _HEADER > len(a):
        return False
    if a[pos + MAGIC_OFFSET] != MAGIC:
        return False
    bl = _get_be(a, pos + BATCH_LENGTH_OFFSET, 4)
    rc = _get_be(a, pos + RECORD_COUNT_OFFSET, 4)
    lod = _get_be(a, pos + LAST_OFFSET_DELTA_OFFSET, 4)
    if bl < _MIN_BATCH_LENGTH or rc < 0 or lod < 0 or lod < rc - 1:
        return False
    base = _get_be(a, pos, 8)
    if base < 0 or base > _INT64_MAX - lod:     # the last offset must fit (the range test adds)
        return False
    # records.record_count_problem: a record takes MIN_RECORD_SIZE bytes of what the batch holds
    if (_get_be(a, pos + ATTRIBUTES_OFFSET, 2) & COMPRESSION_CODEC_MASK) == 0:
        return rc <= (bl - _MIN_BATCH_LENGTH) // _MIN_RECORD_SIZE
    return rc <= _INFLATED_BATCH_MAX // _MIN_RECORD_SIZE


@njit(**_JIT)
def _decode_plan(a, positions, start, end):
    """Pass 1: check every structural rule the numpy path checks (records.parse_header's and the
    record layout's) and size the outputs. Returns (status, positions of the batches to read,
    records kept, their key bytes, value bytes, headers)."""
    nb = len(positions)
    picked = np.empty(nb, np.int64)
    npk = 0
    for j in range(nb):
        pos = positions[j]
        if not _header_ok(a, pos):
            return ERROR, picked, 0, np.int64(0), np.int64(0), np.int64(0)
        base = _get_be(a, pos, 8)
        lod = _get_be(a, pos + LAST_OFFSET_DELTA_OFFSET, 4)
        if base + lod < start or base >= end:
            continue                            # out of range: not read, as the numpy path
        if pos + _get_be(a, pos + BATCH_LENGTH_OFFSET, 4) + LOG_OVERHEAD > len(a) or (_get_be(a, pos + ATTRIBUTES_OFFSET, 2) & COMPRESSION_CODEC_MASK) != 0:
            return ERROR, picked, 0, np.int64(0), np.int64(0), np.int64(0)
        if _get_be(a, pos + RECORD_COUNT_OFFSET, 4) > 0:
            picked[npk] = pos
            npk += 1
    m = 0
    kbytes = np.int64(0)
    vbytes = np.int64(0)
    nh = np.int64(0)
    for j in range(npk):
        pos = picked[j]
        base = _get_be(a, pos, 8)
        bend = pos + _get_be(a, pos + BATCH_LENGTH_OFFSET, 4) + LOG_OVERHEAD
        q = pos + _HEADER
        ok = True
        for _ in range(_get_be(a, pos + RECORD_COUNT_OFFSET, 4)):
            length, q, ok = _get_varint(a, q, bend, 5)
            e = q + length
            if not ok or length < 0 or e > bend:
                ok = False
                break
            tsd, p, ok1 = _get_varint(a, q + 1, e, 10)
            od, p, ok2 = _get_varint(a, p, e, 5)
            kl, p, ok3 = _get_varint(a, p, e, 5)
            if not (ok1 and ok2 and ok3) or kl < -1:
                ok = False
                break
            p += max(kl, 0)
            vl, p, ok = _get_varint(a, p, e, 5)     # fails when the key ran past e
            if not ok or vl < -1:
                ok = False
                break
            p += max(vl, 0)
            hc, p, ok = _get_varint(a, p, e, 5)
            if not ok or hc < 0:
                ok = False
                break
            for _h in range(hc):
                hkl, p, ok = _get_varint(a, p, e, 5)
                if not ok or hkl < 0:
                    ok = False
                    break
                p += hkl
                hvl, p, ok = _get_varint(a, p, e, 5)
                if not ok or hvl < -1:
                    ok = False
                    break
                p += max(hvl, 0)
            if not ok or p != e:
                ok = False
                break
            off = base + od
            if start <= off < end:
                m += 1
                kbytes += max(kl, 0)
                vbytes += max(vl, 0)
                nh += hc
            q = e
        if not ok or q != bend:
            return ERROR, picked, 0, np.int64(0), np.int64(0), np.int64(0)
    if kbytes > _INT32_MAX or vbytes > _INT32_MAX or nh > _INT32_MAX:
        return ERROR, picked, 0, np.int64(0), np.int64(0), np.int64(0)
    return OK, picked[:npk].copy(), m, kbytes, vbytes, nh


@njit(inline="always")
def _take_field(a, p, e, r, data, dp, bits, off, nulls):
    """Row r's key or value at a[p]: its length varint, then its bytes copied to data[dp:] (valid
    bit set), or a null (counted). Returns the next read position, write position and nulls."""
    n, p, ok = _get_varint(a, p, e, 5)
    if n < 0:
        nulls += 1
    else:
        bits[r >> 3] |= np.uint8(1 << (r & 7))
        _copy(data, dp, a, p, n)
        dp += n
        p += n
    off[r + 1] = dp
    return p, dp, nulls


@njit(**_JIT)
def _decode_fill(a, picked, start, end, offsets, timestamps, tstypes, koff, kdata, kbits, voff,
                 vdata, vbits, hoff, hks, hkl, hvs, hvl):
    """Pass 2, over what `_decode_plan` checked: fill the outputs (validity bitmaps and, when there
    are headers, the list offsets and the header positions in `a`). Returns the null counts."""
    kbits[:] = 0
    vbits[:] = 0
    knulls = 0
    vnulls = 0
    koff[0] = 0
    voff[0] = 0
    if len(hoff):
        hoff[0] = 0
    r = 0
    kp = 0
    vp = 0
    h = 0
    for j in range(len(picked)):
        pos = picked[j]
        base = _get_be(a, pos, 8)
        bts = _get_be(a, pos + BASE_TIMESTAMP_OFFSET, 8)
        mts = _get_be(a, pos + MAX_TIMESTAMP_OFFSET, 8)
        lat = (_get_be(a, pos + ATTRIBUTES_OFFSET, 2) & TIMESTAMP_TYPE_MASK) != 0
        q = pos + _HEADER
        for _ in range(_get_be(a, pos + RECORD_COUNT_OFFSET, 4)):
            length, q, ok = _get_varint(a, q, _INT64_MAX, 5)
            e = q + length
            tsd, p, ok = _get_varint(a, q + 1, e, 10)
            od, p, ok = _get_varint(a, p, e, 5)
            off = base + od
            q = e
            if not (start <= off < end):
                continue
            offsets[r] = off
            timestamps[r] = mts if lat else bts + tsd
            tstypes[r] = 1 if lat else 0
            p, kp, knulls = _take_field(a, p, e, r, kdata, kp, kbits, koff, knulls)
            p, vp, vnulls = _take_field(a, p, e, r, vdata, vp, vbits, voff, vnulls)
            if len(hoff):
                hc, p, ok = _get_varint(a, p, e, 5)
                for _h in range(hc):
                    x, p, ok = _get_varint(a, p, e, 5)
                    hks[h] = p
                    hkl[h] = x
                    p += x
                    x, p, ok = _get_varint(a, p, e, 5)
                    hvs[h] = p
                    hvl[h] = x
                    p += max(x, 0)
                    h += 1
                hoff[r + 1] = h
            r += 1
    return knulls, vnulls


def _arrow_array(n: int, dtype) -> tuple[pa.Buffer, np.ndarray]:
    buf = pa.allocate_buffer(int(n) * np.dtype(dtype).itemsize)
    return buf, np.frombuffer(buf, dtype=dtype)


def decode_batches(a: np.ndarray, positions: np.ndarray, start: int, end: int):
    """Decode the records with offsets in [start, end) of the batches at `positions` in the uint8
    array `a`. Returns None when the numpy path must run (a structural error for it to raise, or
    a range the kernel's int64 cannot hold); else a dict of Arrow buffers ("offset", "timestamp",
    "timestampType", "key"/"value": [validity or None, int32 offsets, data], "key_nulls",
    "value_nulls", "rows") and, for the headers, numpy arrays "header_offsets" (int32 list
    offsets, empty when no kept record has a header) and header key/value starts and lengths
    in `a` ("hks", "hkl", "hvs", "hvl")."""
    lo, hi = -(1 << 63), (1 << 63) - 1
    if not (lo <= start <= hi and lo <= end <= hi):
        return None
    a = readonly(a)
    status, picked, m, kbytes, vbytes, nh = _decode_plan(a, readonly(positions), start, end)
    if status != OK:
        return None
    ob, offsets = _arrow_array(m, np.int64)
    tb, timestamps = _arrow_array(m, np.int64)
    yb, tstypes = _arrow_array(m, np.int32)
    kob, koff = _arrow_array(m + 1, np.int32)
    vob, voff = _arrow_array(m + 1, np.int32)
    kdb, kdata = _arrow_array(kbytes, np.uint8)
    vdb, vdata = _arrow_array(vbytes, np.uint8)
    kbb, kbits = _arrow_array((m + 7) >> 3, np.uint8)
    vbb, vbits = _arrow_array((m + 7) >> 3, np.uint8)
    hoff = np.empty(m + 1 if nh else 0, np.int32)
    hks, hkl, hvs, hvl = (np.empty(nh, np.int64) for _ in range(4))
    knulls, vnulls = _decode_fill(a, readonly(picked), start, end, offsets, timestamps, tstypes,
                                  koff, kdata, kbits, voff, vdata, vbits, hoff, hks, hkl, hvs, hvl)
    return {"rows": m, "offset": ob, "timestamp": tb, "timestampType": yb,
            "key": [kbb if knulls else None, kob, kdb], "key_nulls": knulls,
            "value": [vbb if vnulls else None, vob, vdb], "value_nulls": vnulls,
            "header_offsets": hoff, "hks": hks, "hkl": hkl, "hvs": hvs, "hvl": hvl}


# ---------------------------------------------------------------------------------------------
# lookup by timestamp

@njit(**_JIT)
def _first_at_or_after(a, p, end, count, base_ts, base_off, ts, min_off):
    """Walk the records of one batch (lengths and the two deltas only); -1 when none has an offset
    >= min_off and a timestamp >= ts, -2 on a structural fault (the caller then uses the checked
    Python walk, which names the fault). A record must lie inside [p, end): a negative or too long
    length is a fault, never a step backwards or past the batch."""
    if end > len(a) or p < 0:
        return -2
    for _ in range(count):
        length, q, ok = _get_varint(a, p, end, 5)
        if not ok or length < 1 or q + length > end:
            return -2
        delta, r, ok = _get_varint(a, q + 1, end, 10)
        if not ok:
            return -2
        od, _, ok = _get_varint(a, r, end, 5)
        if not ok:
            return -2
        off = base_off + od
        if off >= min_off and base_ts + delta >= ts:
            return off
        p = q + length
    return -1


def first_at_or_after(buf, pos: int, header, timestamp: int, min_offset: int) -> int | None | bool:
    """records.first_offset_at_or_after compiled: the offset, None, or False on a fault. Never
    handed compressed bytes (the caller inflates a compressed batch first)."""
    if header.compression_codec != 0:
        return False
    a = np.frombuffer(buf, dtype=np.uint8)
    found = _first_at_or_after(a, pos + _HEADER, pos + header.size, header.record_count, header.base_timestamp,
                               header.base_offset, timestamp, min_offset)
    if found == -2:
        return False
    return None if found == -1 else int(found)


# ---------------------------------------------------------------------------------------------
# the index rule over many batches (`LogSegment.index_batches`; the reference is `index_batch`)

@njit(**_JIT)
def _index_plan(last_offsets, sizes, max_timestamps, interval, bytes_since, max_seen, offset_of_max,
                last_time_ts, skip_time_offset):
    """Kafka's index rule over batches in order, from the segment's state: which batches get an offset
    index entry (their indices), the time index entries written with them (timestamp, offset: the
    largest timestamp so far when it grew past the last entry's, never (0, skip_time_offset)), and the
    state after the last batch. The same decisions as `LogSegment.index_batch` one batch at a time."""
    n = len(sizes)
    picked = np.empty(n, np.int64)
    t_ts = np.empty(n, np.int64)
    t_off = np.empty(n, np.int64)
    k = 0
    t = 0
    for b in range(n):
        if max_timestamps[b] > max_seen:
            max_seen = max_timestamps[b]
            offset_of_max = last_offsets[b]
        if bytes_since > interval:
            picked[k] = b
            k += 1
            # last_time_ts is -1 for an empty index: a segment without timestamps (max_seen -1) writes none
            if max_seen > last_time_ts and not (max_seen == 0 and offset_of_max == skip_time_offset):
                t_ts[t] = max_seen
                t_off[t] = offset_of_max
                t += 1
                last_time_ts = max_seen
            bytes_since = 0
        bytes_since += sizes[b]
    return picked[:k], t_ts[:t], t_off[:t], bytes_since, max_seen, offset_of_max


def index_plan(last_offsets, sizes, max_timestamps, interval: int, bytes_since: int, max_seen: int,
               offset_of_max: int, last_time_ts: int, skip_time_offset: int):
    return _index_plan(np.ascontiguousarray(last_offsets, dtype=np.int64), np.ascontiguousarray(sizes, dtype=np.int64),
                       np.ascontiguousarray(max_timestamps, dtype=np.int64), np.int64(interval), np.int64(bytes_since),
                       np.int64(max_seen), np.int64(offset_of_max), np.int64(last_time_ts), np.int64(skip_time_offset))


# ---------------------------------------------------------------------------------------------
# the batch walk (`records.scan_batches`; the reference is `records.walk_batches`)

HEADER_FIELDS = 13       # records.BatchHeader's fields, in its order
TORN_HEADER = 2          # the walk stopped where fewer than a header's bytes are left before `end`
PAST_END = 3             # the walk stopped at a sound header whose batch runs past `end`


@njit(**_JIT)
def _walk(a, start, end, has_prev, prev_last, dense, has_min, min_epoch, has_max, max_epoch):
    """The batches of a[start:end] while every check of `records.walk_batches` but the CRC holds: their
    positions, their header fields (one row each, BatchHeader's order) and the stored CRCs are the
    caller's to check. Returns (positions, rows, count, the position after the last batch kept,
    status): OK when the walk reached `end`; TORN_HEADER or PAST_END when it stopped there for that
    reason, the first two checks of the reference (a chunked read's normal end); ERROR for any other
    fault (the caller reruns the reference walk, which says what the fault is)."""
    cap = 64
    positions = np.empty(cap, np.int64)
    rows = np.empty((cap, HEADER_FIELDS), np.int64)
    n = 0
    pos = start
    while pos < end:
        if pos + _HEADER > end:
            return positions, rows, n, pos, TORN_HEADER
        if not _header_ok(a, pos):
            return positions, rows, n, pos, ERROR
        blen = _get_be(a, pos + BATCH_LENGTH_OFFSET, 4)
        size = blen + LOG_OVERHEAD
        if pos + size > end:
            return positions, rows, n, pos, PAST_END
        base = _get_be(a, pos, 8)
        if has_prev and (base <= prev_last or (dense and base != prev_last + 1)):
            return positions, rows, n, pos, ERROR
        epoch = _get_be(a, pos + PARTITION_LEADER_EPOCH_OFFSET, 4)
        if (has_min and epoch < min_epoch) or (has_max and epoch > max_epoch):
            return positions, rows, n, pos, ERROR
        if n == cap:
            cap *= 2
            grown = np.empty(cap, np.int64)
            grown[:n] = positions[:n]
            positions = grown
            grown_rows = np.empty((cap, HEADER_FIELDS), np.int64)
            grown_rows[:n] = rows[:n]
            rows = grown_rows
        lod = _get_be(a, pos + LAST_OFFSET_DELTA_OFFSET, 4)
        positions[n] = pos
        r = rows[n]
        r[0] = base
        r[1] = blen
        r[2] = epoch
        r[3] = a[pos + MAGIC_OFFSET]
        r[4] = _get_be(a, pos + CRC_OFFSET, 4) & 0xFFFFFFFF
        r[5] = _get_be(a, pos + ATTRIBUTES_OFFSET, 2)
        r[6] = lod
        r[7] = _get_be(a, pos + BASE_TIMESTAMP_OFFSET, 8)
        r[8] = _get_be(a, pos + MAX_TIMESTAMP_OFFSET, 8)
        r[9] = _get_be(a, pos + PRODUCER_ID_OFFSET, 8)
        r[10] = _get_be(a, pos + PRODUCER_EPOCH_OFFSET, 2)
        r[11] = _get_be(a, pos + BASE_SEQUENCE_OFFSET, 4)
        r[12] = _get_be(a, pos + RECORD_COUNT_OFFSET, 4)
        n += 1
        has_prev = True
        prev_last = base + lod
        if has_min:
            min_epoch = epoch
        pos += size
    return positions, rows, n, pos, OK


def walk(buf: np.ndarray, start: int, end: int, prev_last_offset, dense: bool, min_leader_epoch, max_leader_epoch):
    """`_walk` over a uint8 array, None standing for "not given" as in `records.walk_batches`."""
    positions, rows, n, valid_end, status = _walk(
        buf, np.int64(start), np.int64(end), prev_last_offset is not None,
        np.int64(-1 if prev_last_offset is None else prev_last_offset), bool(dense),
        min_leader_epoch is not None, np.int64(0 if min_leader_epoch is None else min_leader_epoch),
        max_leader_epoch is not None, np.int64(0 if max_leader_epoch is None else max_leader_epoch))
    return positions[:n], rows[:n], int(valid_end), status
