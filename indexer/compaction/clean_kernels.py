"""Compiled kernels of the cleaner (numba): the record walk, the offset map's hash table and the
writer of cleaned batches. `offset_map` and `clean_batches` call them through `kernels()`, and fall
back to their Arrow/Python reference paths when numba is unusable or a walk finds bad structure
(the reference path then raises the precise, typed error), as `indexer.codec.native` does.

- `walk_records`: one pass over uncompressed batches giving, per record, its batch, offset,
  timestamp (a LogAppendTime batch gives its max timestamp, as the decoder), key position and length
  in the buffer (-1: null key), whether its value is null, and where its offset delta starts and its
  bytes end. Keys are never copied: the map and the writer read them where they lie.
- The offset map's table: open addressing with linear probing over entry numbers (int32, 0 = empty),
  at most half full; each entry holds its key's 64-bit hash, its latest offset and its key's bytes in
  an arena. Keys are compared whole after the hash, so a hash collision never makes two keys one.
  Invariant kept by `map_insert`: an entry added later never lies on the probe path of an earlier
  one (entries only fill empty slots, and a rehash reinserts in entry order), so the entries from
  number n on can be removed by clearing their slots alone (`offset_map`'s rollback of a segment).
- `write_batches`: cleaned batches straight from the source bytes: a kept record is its new length,
  attribute 0, its new timestamp delta, then its own bytes from the offset delta on (key, value and
  headers unchanged), so a cleaned batch is byte for byte what `columns.encode_sparse_batches` writes
  from the decoded record (canonical varints, as every Kafka writer produces).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from seglog.indexer.codec import native
from seglog.indexer.codec.batch_layout import (
    ATTRIBUTES_OFFSET, BASE_TIMESTAMP_OFFSET, BATCH_HEADER_SIZE, BATCH_LENGTH_OFFSET, COMPRESSION_CODEC_MASK,
    CRC_OFFSET, DELETE_HORIZON_FLAG_MASK, LOG_OVERHEAD, MAGIC, MAGIC_OFFSET, MAX_TIMESTAMP_OFFSET,
    RECORD_COUNT_OFFSET, TIMESTAMP_TYPE_MASK)

_JIT = dict(cache=True, nogil=True)
_HEADER = BATCH_HEADER_SIZE
_get_be, _put_be, _get_varint = native._get_be, native._put_be, native._get_varint
_put_varint, _zigzag, _uwidth, _copy = native._put_varint, native._zigzag, native._uwidth, native._copy

OK, ERROR, NEED_GROW, FULL = 0, 1, 2, 3
VERBATIM, REWRITE, BARE = 0, 1, 2
NO_TIMESTAMP = -1


# ---------------------------------------------------------------------------------------------
# the record walk

@njit(**_JIT)
def _walk(a, positions, n, batch, offset, ts, kpos, klen, tomb, odpos, rend):
    """Fill the per-record arrays (n records in all); ERROR on any structural fault."""
    r = 0
    for b in range(len(positions)):
        pos = positions[b]
        if pos < 0 or pos + _HEADER > len(a) or a[pos + MAGIC_OFFSET] != MAGIC:
            return ERROR
        bend = pos + _get_be(a, pos + BATCH_LENGTH_OFFSET, 4) + LOG_OVERHEAD
        attrs = _get_be(a, pos + ATTRIBUTES_OFFSET, 2)
        if bend > len(a) or (attrs & COMPRESSION_CODEC_MASK) != 0:
            return ERROR
        base = _get_be(a, pos, 8)
        bts = _get_be(a, pos + BASE_TIMESTAMP_OFFSET, 8)
        mts = _get_be(a, pos + MAX_TIMESTAMP_OFFSET, 8)
        lat = (attrs & TIMESTAMP_TYPE_MASK) != 0
        q = pos + _HEADER
        for _ in range(_get_be(a, pos + RECORD_COUNT_OFFSET, 4)):
            if r >= n:
                return ERROR
            length, q, ok = _get_varint(a, q, bend, 5)
            e = q + length
            if not ok or length < 0 or e > bend:
                return ERROR
            tsd, p, ok1 = _get_varint(a, q + 1, e, 10)
            od_at = p
            od, p, ok2 = _get_varint(a, p, e, 5)
            kl, p, ok3 = _get_varint(a, p, e, 5)
            if not (ok1 and ok2 and ok3) or kl < -1:
                return ERROR
            kp = p
            p += max(kl, 0)
            vl, p, ok = _get_varint(a, p, e, 5)
            if not ok or vl < -1:
                return ERROR
            p += max(vl, 0)
            hc, p, ok = _get_varint(a, p, e, 5)
            if not ok or hc < 0:
                return ERROR
            for _h in range(hc):
                hkl, p, ok = _get_varint(a, p, e, 5)
                if not ok or hkl < 0:
                    return ERROR
                p += hkl
                hvl, p, ok = _get_varint(a, p, e, 5)
                if not ok or hvl < -1:
                    return ERROR
                p += max(hvl, 0)
            if p != e:
                return ERROR
            batch[r] = b
            offset[r] = base + od
            ts[r] = mts if lat else bts + tsd
            kpos[r] = kp
            klen[r] = kl
            tomb[r] = vl < 0
            odpos[r] = od_at
            rend[r] = e
            r += 1
            q = e
        if q != bend:
            return ERROR
    return OK if r == n else ERROR


# A record's smallest encoding: its length, attributes, timestamp delta, offset delta, key length,
# value length and header count, one byte each.
_MIN_RECORD_BYTES = 7


class Records:
    """Per-record arrays of one walk (see `walk_records`)."""
    __slots__ = ("batch", "offset", "ts", "kpos", "klen", "tomb", "odpos", "rend")

    def __init__(self, n: int):
        self.batch = np.empty(n, np.int64)
        self.offset = np.empty(n, np.int64)
        self.ts = np.empty(n, np.int64)
        self.kpos = np.empty(n, np.int64)
        self.klen = np.empty(n, np.int64)
        self.tomb = np.empty(n, np.bool_)
        self.odpos = np.empty(n, np.int64)
        self.rend = np.empty(n, np.int64)


def walk_records(a: np.ndarray, positions: np.ndarray, n: int) -> Records | None:
    """The records of the uncompressed batches at `positions` in the uint8 array `a` (n records in
    all, from the headers' counts); None on any structural fault (the caller's reference path names it)."""
    if n > len(a) // _MIN_RECORD_BYTES:
        # The counts claim more records than the bytes can hold (a compressed batch's count is not
        # bounded by its compressed length): never arrays sized by such a claim.
        return None
    rec = Records(n)
    status = _walk(native.readonly(a), native.readonly(np.ascontiguousarray(positions, dtype=np.int64)), n,
                   rec.batch, rec.offset, rec.ts, rec.kpos, rec.klen, rec.tomb, rec.odpos, rec.rend)
    return rec if status == OK else None


# ---------------------------------------------------------------------------------------------
# the offset map's hash table

@njit(inline="always")
def _hash(a, p, n):
    """FNV-1a over the key bytes, then murmur3's finaliser (FNV's low bits alone probe badly)."""
    h = np.uint64(0xCBF29CE484222325)
    for k in range(n):
        h = (h ^ np.uint64(a[p + k])) * np.uint64(0x100000001B3)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xC4CEB9FE1A85EC53)
    h ^= h >> np.uint64(33)
    return h


@njit(inline="always")
def _same_key(a, p, n, arena, s, e):
    if e - s != n:
        return False
    for k in range(n):
        if a[p + k] != arena[s + k]:
            return False
    return True


@njit(inline="always")
def _find(a, p, n, h, table, hashes, kstart, arena):
    """(slot, entry number + 1 or 0 when absent) of the key a[p:p + n] with hash h."""
    mask = len(table) - 1
    s = np.int64(h & np.uint64(mask))
    while True:
        e1 = table[s]
        if e1 == 0:
            return s, 0
        e = e1 - 1
        if hashes[e] == h and _same_key(a, p, n, arena, kstart[e], kstart[e + 1]):
            return s, e1
        s = (s + 1) & mask


@njit(**_JIT)
def map_insert(a, kpos, klen, offs, sel, i, table, hashes, kstart, offsets, arena, undo_e, undo_o, state):
    """Add records sel[i:] (indexes into kpos/klen/offs) to the map; state = [entries, arena used,
    undo used, segment start]. An existing key's offset moves up (its value before the segment is
    written to the undo log the first time, for a rollback); a new key is appended. Returns
    (status, next i): NEED_GROW when the table must double first, FULL when the arrays sized from the
    budget are full (the segment cannot be added)."""
    n = state[0]
    used = state[1]
    nu = state[2]
    seg_start = state[3]
    while i < len(sel):
        r = sel[i]
        p = kpos[r]
        kl = klen[r]
        h = _hash(a, p, kl)
        s, e1 = _find(a, p, kl, h, table, hashes, kstart, arena)
        if e1:
            e = e1 - 1
            if offs[r] > offsets[e]:
                if offsets[e] < seg_start:
                    if nu == len(undo_e):
                        state[0], state[1], state[2] = n, used, nu
                        return FULL, i
                    undo_e[nu] = e
                    undo_o[nu] = offsets[e]
                    nu += 1
                offsets[e] = offs[r]
        else:
            if 2 * (n + 1) > len(table):
                state[0], state[1], state[2] = n, used, nu
                return NEED_GROW, i
            if n == len(offsets) or used + kl > len(arena):
                state[0], state[1], state[2] = n, used, nu
                return FULL, i
            _copy(arena, used, a, p, kl)
            used += kl
            hashes[n] = h
            offsets[n] = offs[r]
            kstart[n + 1] = used
            table[s] = n + 1
            n += 1
        i += 1
    state[0], state[1], state[2] = n, used, nu
    return OK, i


@njit(**_JIT)
def map_rehash(table, hashes, n):
    """Reinsert entries 0..n-1, in order, into the (cleared) `table`."""
    mask = len(table) - 1
    for e in range(n):
        s = np.int64(hashes[e] & np.uint64(mask))
        while table[s] != 0:
            s = (s + 1) & mask
        table[s] = e + 1


@njit(**_JIT)
def map_lookup(a, kpos, klen, table, hashes, kstart, arena, offsets, out):
    """out[r] = the mapped offset of record r's key, -1 when absent or null."""
    for r in range(len(kpos)):
        kl = klen[r]
        if kl < 0 or len(table) == 0:
            out[r] = -1
            continue
        h = _hash(a, kpos[r], kl)
        s, e1 = _find(a, kpos[r], kl, h, table, hashes, kstart, arena)
        out[r] = offsets[e1 - 1] if e1 else -1


# ---------------------------------------------------------------------------------------------
# the writer of cleaned batches

@njit(**_JIT)
def write_batches(a, positions, which, mode, horizon, now_horizon, starts, kept, ts, odpos, rend, out,
                  out_pos, first_ts, max_ts):
    """Write batch which[j] of `positions` for every j, as `mode[j]` says: VERBATIM copies it,
    REWRITE writes its header (base offset, lastOffsetDelta, producer fields, leader epoch kept;
    codec bits cleared, the caller compresses) with records kept[starts[j]:starts[j + 1]], and
    BARE writes its header with no records and no timestamps. `horizon[j]`: set the delete horizon
    to `now_horizon`. Fills out_pos (the batch starts plus the end), first_ts and max_ts; returns
    the bytes written. CRCs of written headers are left zero for the caller (crc32c)."""
    p = 0
    for j in range(len(which)):
        src = positions[which[j]]
        out_pos[j] = p
        attrs = _get_be(a, src + ATTRIBUTES_OFFSET, 2)
        bts = _get_be(a, src + BASE_TIMESTAMP_OFFSET, 8)
        mts = _get_be(a, src + MAX_TIMESTAMP_OFFSET, 8)
        if mode[j] == VERBATIM:
            size = _get_be(a, src + BATCH_LENGTH_OFFSET, 4) + LOG_OVERHEAD
            _copy(out, p, a, src, size)
            p += size
            first_ts[j] = bts if bts >= 0 and (attrs & DELETE_HORIZON_FLAG_MASK) == 0 else mts
            max_ts[j] = mts
            continue
        _copy(out, p, a, src, _HEADER)
        new_attrs = attrs & ~COMPRESSION_CODEC_MASK
        lo = starts[j]
        hi = starts[j + 1]
        if mode[j] == REWRITE:
            first = ts[kept[lo]]
            if (attrs & TIMESTAMP_TYPE_MASK) != 0:
                last_max = mts
            else:
                last_max = ts[kept[lo]]
                for k in range(lo + 1, hi):
                    if ts[kept[k]] > last_max:
                        last_max = ts[kept[k]]
            if horizon[j]:
                base_ts = now_horizon
                new_attrs |= DELETE_HORIZON_FLAG_MASK
            elif (attrs & DELETE_HORIZON_FLAG_MASK) != 0:
                base_ts = bts
            else:
                base_ts = first
            first_ts[j] = first
            max_ts[j] = last_max
        else:
            new_attrs &= ~DELETE_HORIZON_FLAG_MASK
            base_ts = NO_TIMESTAMP
            last_max = NO_TIMESTAMP
            first_ts[j] = NO_TIMESTAMP
            max_ts[j] = NO_TIMESTAMP
        _put_be(out, p + CRC_OFFSET, 0, 4)
        _put_be(out, p + ATTRIBUTES_OFFSET, new_attrs, 2)
        _put_be(out, p + BASE_TIMESTAMP_OFFSET, base_ts, 8)
        _put_be(out, p + MAX_TIMESTAMP_OFFSET, last_max, 8)
        _put_be(out, p + RECORD_COUNT_OFFSET, hi - lo, 4)
        q = p + _HEADER
        for k in range(lo, hi):
            r = kept[k]
            tz = _zigzag(ts[r] - base_ts)
            tail = rend[r] - odpos[r]
            q = _put_varint(out, q, _zigzag(1 + _uwidth(tz) + tail))
            out[q] = 0                           # record attributes
            q = _put_varint(out, q + 1, tz)
            _copy(out, q, a, odpos[r], tail)
            q += tail
        _put_be(out, p + BATCH_LENGTH_OFFSET, q - p - LOG_OVERHEAD, 4)
        p = q
    out_pos[len(which)] = p
    return p

