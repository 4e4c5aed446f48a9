"""The cleaner's filter over whole chunks of batches (docs/spec.md §3.9), as Kafka's
MemoryRecords.filterTo with the LogCleaner's record filter. Decoded with `columns.decode_to_arrow`
and decided with numpy masks: no per-record Python.

A record survives when it is the latest of its key in the offset map (or its key is not mapped),
unless it is a tombstone (null value) in a batch whose delete horizon has passed, belongs to an
aborted transaction, or has no key (Kafka drops those too). Control batches (transaction markers)
are copied as they are. Per batch:
- every record survives and no horizon is to be set: the original bytes, untouched;
- some survive, or a surviving tombstone needs its horizon: the batch is re-encoded keeping its
  base offset, lastOffsetDelta, producer fields and leader epoch (so its offsets and the producer's
  last sequence stay), with the delete horizon (now + delete.retention.ms, KIP-534: attribute bit 6,
  base timestamp = the horizon) set the first time it is cleaned with a tombstone in it, and
  compressed again with its own codec;
- none survives: dropped, except a bare header (no records, no timestamps, its last offset kept) for the group's
  last batch (so a cleaned segment ends where the segments it replaces ended, docs/spec.md §3.9) and
  for a batch of an idempotent or transactional producer (Kafka keeps those for producer state).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import crc32c as _crc32c

from seglog.indexer.codec.batch_layout import (ATTRIBUTES_OFFSET, BATCH_HEADER_SIZE, CRC_OFFSET,
                                               DELETE_HORIZON_FLAG_MASK, LOG_OVERHEAD)
from seglog.indexer.codec.columns import inflate_in_range, decode_to_arrow, encode_sparse_batches
from seglog.indexer.codec.compression import deflate_batch
from seglog.indexer.compaction.offset_map import clean_kernels, key_positions
from seglog.indexer.codec.records import (COMPRESSION_CODEC_MASK, CONTROL_FLAG_MASK, INT64_MAX, LOG_APPEND_TIME,
                                     NO_TIMESTAMP)


@dataclass
class CleanedChunk:
    """Batches back to back in `data`, with the facts `LogSegment.append` indexes them by."""
    data: bytes
    positions: np.ndarray
    base_offsets: np.ndarray
    last_offsets: np.ndarray
    first_timestamps: np.ndarray
    max_timestamps: np.ndarray
    record_counts: np.ndarray
    records_read: int
    records_kept: int

    @property
    def num_batches(self) -> int:
        return len(self.record_counts)


@dataclass(frozen=True)
class FilterContext:
    latest: object                 # OffsetMap
    now: int
    delete_retention_ms: int


def _first_ts(h) -> int:
    return h.base_timestamp if h.base_timestamp >= 0 and not h.attributes & DELETE_HORIZON_FLAG_MASK \
        else h.max_timestamp


@dataclass
class Decision:
    """Which records and batches of a chunk survive, and how (the module docstring's rules)."""
    keep: np.ndarray               # per record
    kept: np.ndarray               # per batch: records kept
    needs_horizon: np.ndarray      # per batch: a surviving tombstone, no horizon yet
    horizon_set: np.ndarray
    verbatim: np.ndarray
    rewrite: np.ndarray
    bare: np.ndarray

    @property
    def out_batch(self) -> np.ndarray:
        return self.verbatim | self.rewrite | self.bare


def decide(scan, batch_of: np.ndarray, offsets: np.ndarray, latest: np.ndarray, has_key: np.ndarray,
           tomb: np.ndarray, aborted: np.ndarray, ctx: FilterContext, keep_last: bool) -> Decision:
    """The one home of the filter's rules, per record (batch_of, offsets, the map's latest offset of
    its key, has_key, tomb) and per batch (the scan's headers)."""
    headers = scan.headers
    nb = len(headers)
    attrs = scan.attributes
    control = (attrs & CONTROL_FLAG_MASK) != 0
    counts = scan.record_counts
    horizon_set = (attrs & DELETE_HORIZON_FLAG_MASK) != 0
    horizon = np.array([h.base_timestamp for h in headers], dtype=np.int64)
    expired = horizon_set & (ctx.now >= horizon)
    keep = has_key & (offsets >= latest) & ~aborted[batch_of] & ~(tomb & expired[batch_of])
    keep |= control[batch_of]
    kept = np.bincount(batch_of[keep], minlength=nb)
    needs_horizon = ~horizon_set & (np.bincount(batch_of[keep & tomb], minlength=nb) > 0) & ~control
    producer = np.array([h.producer_id >= 0 for h in headers], dtype=bool)

    verbatim = control | ((kept == counts) & ~needs_horizon)
    rewrite = ~verbatim & (kept > 0)
    bare = ~verbatim & (kept == 0) & producer
    if keep_last and nb and not verbatim[-1] and kept[-1] == 0:
        bare[-1] = True
    return Decision(keep, kept, needs_horizon, horizon_set, verbatim, rewrite, bare)


def filter_chunk(buf, scan, ctx: FilterContext, aborted: np.ndarray, keep_last: bool) -> CleanedChunk:
    """The cleaned form of the whole batches `scan` found in `buf`. `aborted[b]`: batch b's records
    belong to an aborted transaction. `keep_last`: the chunk's last batch ends the group. The
    compiled path when it can; the reference path otherwise (and to name any structural fault)."""
    k = clean_kernels()
    if k is not None:
        got = _filter_compiled(k, buf, scan, ctx, aborted, keep_last)
        if got is not None:
            return got
    return filter_chunk_reference(buf, scan, ctx, aborted, keep_last)


def _uncompressed(buf, scan):
    """(uint8 array, batch positions, compressed?) of the chunk, its compressed batches inflated
    (one batch for one, in order)."""
    view = memoryview(buf)
    if view.ndim != 1 or view.format != "B":
        view = view.cast("B")
    inflated = inflate_in_range(view, scan.positions, 0, INT64_MAX)
    if inflated is None:
        return np.frombuffer(view, dtype=np.uint8), np.asarray(scan.positions, dtype=np.int64), False
    data, positions, _ = inflated
    return np.frombuffer(data, dtype=np.uint8), positions, True


def _filter_compiled(k, buf, scan, ctx: FilterContext, aborted: np.ndarray, keep_last: bool) -> CleanedChunk | None:
    """filter_chunk without decoding: the walk finds each record's key where it lies, the map answers
    from those bytes, and kept records are copied into their batches (clean_kernels.write_batches).
    None when the walk finds a structural fault."""
    counts = scan.record_counts
    nb = len(counts)
    a, positions, compressed = _uncompressed(buf, scan)
    rec = k.walk_records(a, positions, int(counts.sum()))
    if rec is None:
        return None
    latest = ctx.latest.latest_of(a, rec.kpos, rec.klen)
    d = decide(scan, rec.batch, rec.offset, latest, rec.klen >= 0, rec.tomb, aborted, ctx, keep_last)
    which = np.flatnonzero(d.out_batch)
    mode = np.where(d.verbatim, k.VERBATIM, np.where(d.rewrite, k.REWRITE, k.BARE))[which].astype(np.int64)
    keep_idx = np.flatnonzero(d.keep & d.rewrite[rec.batch])
    starts = np.zeros(len(which) + 1, dtype=np.int64)
    np.cumsum(np.where(mode == k.REWRITE, d.kept[which], 0), out=starts[1:])
    sizes = np.asarray(scan.sizes if not compressed else np.diff(np.append(positions, len(a))), dtype=np.int64)
    bound = int(sizes[which[mode == k.VERBATIM]].sum()) + BATCH_HEADER_SIZE * len(which) + int(
        (rec.rend[keep_idx] - rec.odpos[keep_idx]).sum()) + 16 * len(keep_idx)
    out = np.empty(bound, np.uint8)
    out_pos = np.empty(len(which) + 1, np.int64)
    first_ts = np.empty(len(which), np.int64)
    max_ts = np.empty(len(which), np.int64)
    end = k.write_batches(a, positions, which, mode, d.needs_horizon[which].astype(np.bool_),
                          ctx.now + ctx.delete_retention_ms, starts, keep_idx, rec.ts, rec.odpos, rec.rend,
                          out, out_pos, first_ts, max_ts)
    crc = _crc32c.crc32c
    written = np.flatnonzero(mode != k.VERBATIM).tolist()
    for j in written:                              # per batch, never per record
        p, e = int(out_pos[j]), int(out_pos[j + 1])
        out[p + CRC_OFFSET:p + CRC_OFFSET + 4] = np.frombuffer(
            crc(out[p + ATTRIBUTES_OFFSET:e]).to_bytes(4, "big"), np.uint8)
    headers = scan.headers
    if compressed:                                 # verbatim batches as they were, rewrites compressed again
        view = memoryview(buf)
        parts = []
        for j, b in enumerate(which.tolist()):
            codec = headers[b].attributes & COMPRESSION_CODEC_MASK
            if mode[j] == k.VERBATIM:
                p = int(scan.positions[b])
                parts.append(view[p:p + headers[b].size])
            elif mode[j] == k.REWRITE and codec:
                parts.append(deflate_batch(out[out_pos[j]:out_pos[j + 1]].tobytes(), codec))
            else:
                parts.append(out[out_pos[j]:out_pos[j + 1]])
        data = b"".join(parts)
        out_pos = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in parts], out=out_pos[1:])
    else:
        data = out[:end]
    out_counts = np.where(d.verbatim, counts, d.kept * d.rewrite)[which]
    base_offsets = scan.base_offsets[which] if nb else np.zeros(0, np.int64)
    last_offsets = scan.last_offsets[which] if nb else np.zeros(0, np.int64)
    return CleanedChunk(data, out_pos, base_offsets, last_offsets, first_ts, max_ts, out_counts.astype(np.int64),
                        len(rec.offset), int(out_counts.sum()))


def filter_chunk_reference(buf, scan, ctx: FilterContext, aborted: np.ndarray, keep_last: bool) -> CleanedChunk:
    """filter_chunk over records decoded into Arrow and re-encoded (`columns`): the path without
    numba, the judge of the compiled one (tests), and the one that raises the precise
    CorruptRecordError for bad structure."""
    headers = scan.headers
    nb = len(headers)
    counts = scan.record_counts
    rows = decode_to_arrow(buf, scan.positions, start_offset=0, end_offset=INT64_MAX)
    batch_of = np.repeat(np.arange(nb), counts)
    keys = rows.column(0)
    offsets = rows.column(2).to_numpy()
    d = decide(scan, batch_of, offsets, ctx.latest.latest(keys), ~keys.is_null().to_numpy(zero_copy_only=False),
               rows.column(1).is_null().to_numpy(zero_copy_only=False), aborted, ctx, keep_last)
    keep, kept, needs_horizon, horizon_set = d.keep, d.kept, d.needs_horizon, d.horizon_set
    verbatim, rewrite, bare, out_batch = d.verbatim, d.rewrite, d.bare, d.out_batch

    # Re-encoded batches (and bare headers) in one vectorised pass.
    re = np.flatnonzero(rewrite | bare)
    new_bytes: dict[int, bytes] = {}
    new_facts: dict[int, tuple[int, int]] = {}
    if len(re):
        sel = keep & (rewrite | bare)[batch_of]
        idx = np.flatnonzero(sel)
        sub = rows.take(pa.array(idx))
        ts = sub.column(3).to_numpy()
        sb = batch_of[idx]
        starts = np.zeros(len(re) + 1, dtype=np.int64)
        np.cumsum(kept[re] * rewrite[re], out=starts[1:])
        fields = {name: np.zeros(len(re), dtype=np.int64) for name in (
            "base_offset", "last_offset_delta", "leader_epoch", "attributes", "base_timestamp", "max_timestamp",
            "producer_id", "producer_epoch", "base_sequence")}
        first_ts = np.full(len(re), NO_TIMESTAMP, dtype=np.int64)
        for j, b in enumerate(re.tolist()):       # per batch, never per record
            h = headers[b]
            lo, hi = int(starts[j]), int(starts[j + 1])
            fields["base_offset"][j] = h.base_offset
            fields["last_offset_delta"][j] = h.last_offset_delta
            fields["leader_epoch"][j] = h.partition_leader_epoch
            fields["producer_id"][j] = h.producer_id
            fields["producer_epoch"][j] = h.producer_epoch
            fields["base_sequence"][j] = h.base_sequence
            a = h.attributes & ~COMPRESSION_CODEC_MASK
            if rewrite[b]:
                if h.timestamp_type == LOG_APPEND_TIME:
                    max_ts = h.max_timestamp
                else:
                    max_ts = int(ts[lo:hi].max())
                first = int(ts[lo])
                if needs_horizon[b]:
                    base_ts = ctx.now + ctx.delete_retention_ms
                    a |= DELETE_HORIZON_FLAG_MASK
                elif horizon_set[b]:
                    base_ts = h.base_timestamp
                else:
                    base_ts = first
                first_ts[j] = first
            else:
                # A bare header, as Kafka's writeEmptyHeader, but with no max timestamp either: a
                # batch without records must not hold the segment's largest timestamp, or the time
                # index would name a batch whose records (none) never reach it (Kafka's
                # DumpLogSegments --verify-index-only checks entries against the records).
                a &= ~DELETE_HORIZON_FLAG_MASK
                base_ts, max_ts = NO_TIMESTAMP, NO_TIMESTAMP
            fields["attributes"][j] = a
            fields["base_timestamp"][j] = base_ts
            fields["max_timestamp"][j] = max_ts
        assert len(sb) == int(starts[-1])
        data, pos = encode_sparse_batches(fields, starts, sub.column(0), sub.column(1), sub.column(2).to_numpy(),
                                          ts, sub.column(5))
        for j, b in enumerate(re.tolist()):
            piece = data[int(pos[j]):int(pos[j + 1])]
            codec = headers[b].attributes & COMPRESSION_CODEC_MASK
            if codec and rewrite[b]:
                piece = deflate_batch(piece, codec)
            new_bytes[b] = piece
            new_facts[b] = (int(first_ts[j]), int(fields["max_timestamp"][j]))

    view = memoryview(buf)
    parts, firsts, maxes = [], [], []
    for b in np.flatnonzero(out_batch).tolist():   # per batch
        h = headers[b]
        if verbatim[b]:
            p = int(scan.positions[b])
            parts.append(view[p:p + h.batch_length + LOG_OVERHEAD])
            firsts.append(_first_ts(h))
            maxes.append(h.max_timestamp)
        else:
            parts.append(new_bytes[b])
            f, m = new_facts[b]
            firsts.append(f)
            maxes.append(m)
    sizes = np.array([len(p) for p in parts], dtype=np.int64)
    positions = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(sizes, out=positions[1:])
    chosen = np.flatnonzero(out_batch)
    base_offsets = np.array([headers[b].base_offset for b in chosen.tolist()], dtype=np.int64)
    last_offsets = np.array([headers[b].last_offset for b in chosen.tolist()], dtype=np.int64)
    out_counts = np.where(verbatim, counts, kept * rewrite)[chosen]
    return CleanedChunk(b"".join(parts), positions, base_offsets, last_offsets,
                        np.array(firsts, dtype=np.int64), np.array(maxes, dtype=np.int64),
                        out_counts.astype(np.int64), int(len(offsets)), int(out_counts.sum()))


def aborted_batches(scan, fates) -> np.ndarray:
    """Which of the scanned batches hold records of an aborted transaction (indexer/transactions.py)."""
    from seglog.indexer.codec.records import TRANSACTIONAL_FLAG_MASK
    from seglog.indexer.transactions import ABORT

    attrs = scan.attributes
    out = np.zeros(len(scan.headers), dtype=bool)
    for k in np.flatnonzero((attrs & TRANSACTIONAL_FLAG_MASK != 0) & (attrs & CONTROL_FLAG_MASK == 0)).tolist():
        h = scan.headers[k]
        out[k] = fates.fate(h.producer_id, h.base_offset) == ABORT
    return out


def keys_and_offsets(buf, scan, aborted: np.ndarray, start: int) -> tuple[pa.Array, pa.Array]:
    """The (key, offset) pairs the offset map takes from these batches: data records with a key,
    at or after `start`, outside aborted transactions and control batches."""
    rows = decode_to_arrow(buf, scan.positions, start_offset=start, end_offset=INT64_MAX)
    if rows.num_rows == 0:
        return pa.array([], pa.binary()), pa.array([], pa.int64())
    attrs = scan.attributes
    skip = ((attrs & CONTROL_FLAG_MASK) != 0) | aborted
    keys = rows.column(0)
    ok = pc.is_valid(keys)
    if skip.any():
        last = np.array([h.last_offset for h in scan.headers], dtype=np.int64)
        b = np.searchsorted(last, rows.column(2).to_numpy(), side="left")   # each record's batch
        ok = pc.and_(ok, pa.array(~skip[b]))
    return keys.filter(ok), rows.column(2).filter(ok)


def map_chunk(buf, scan, aborted: np.ndarray, start: int, builder) -> None:
    """Add to the offset map (`OffsetMapBuilder`) what it takes from these batches: the keys of data
    records at or after `start`, outside aborted transactions and control batches, read where they
    lie (compiled), or decoded (`keys_and_offsets`, which also names any structural fault)."""
    k = clean_kernels()
    if k is not None:
        a, positions, _ = _uncompressed(buf, scan)
        rec = k.walk_records(a, positions, int(scan.record_counts.sum()))
        if rec is not None:
            skip = ((scan.attributes & CONTROL_FLAG_MASK) != 0) | aborted
            sel = np.flatnonzero((rec.klen >= 0) & (rec.offset >= start) & ~skip[rec.batch])
            builder.add(a, rec.kpos[sel], rec.klen[sel], rec.offset[sel])
            return
    keys, offsets = keys_and_offsets(buf, scan, aborted, start)
    a, kpos, klen = key_positions(keys)
    builder.add(a, kpos, klen, offsets.to_numpy().astype(np.int64, copy=False))
