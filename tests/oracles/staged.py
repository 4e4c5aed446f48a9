"""Publishing staged segments into a partition log at its end: the test oracle of the JVM's publish
(format.StagedPublisher, held to it byte for byte by tests/sink/test_jvm_copy.py; docs/internals.md "Test oracles").

A staged segment is what the JVM writer (`io.seglog.spark.write.SegmentStager`) leaves for one log
partition: `<stem>.log` with batch base offsets relative to the segment (0, ...), `<stem>.index` and
`<stem>.timeindex` built by `indexer.segment`'s rules from an empty segment and sealed (docs/spec.md
§2.3-2.5), and `<stem>.batches`, one 36-byte row per batch (position, relative last offset, first
and largest timestamp, record count). Its real base offset B is known only here, at the log's end.

Two ways in, both giving valid segments (docs/spec.md §2):
- copy: the batches, base offsets patched to B + relative, go through `Log`'s own append path (the
  roll and index rules of any append, the partition's leader epoch; batches the JVM compressed
  with the topic's codec are kept as they are, never compressed twice): the same bytes as
  `Log.append_columns` of the same batches. For small outputs (micro-batches must not leave tiny
  segments).
- rename (large outputs, any codec, any leader epoch): each batch's base offset and partition
  leader epoch (`Log.write_leader_epoch`: 0 in seglog's folders, the broker's current epoch in an
  imported one) are patched in place, one write per batch (both outside the CRC, docs/format.md
  "Record batches"), the files fsynced, then `adopt_segments` (below) rolls (seals and
  retires the active segment) and renames each segment's `.index`, `.timeindex` and, last, `.log`
  to `<B>.*` (a segment exists when its `.log` does); a run of them goes in together, sealed as
  the JVM left them, the last opened as the active segment. Index entries, relative to the
  segment's base and to positions in its own file, hold as they are.

Crash safety: nothing here is visible before the sink's commit (readers stop at the committed end,
docs/spec.md §4); a crash part way leaves records past the committed end, which the next delivery
rolls back (tests/oracles/committed_end.py), and staged files, which the sink removes.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass

import numpy as np

from seglog.indexer.codec.batch_layout import COMPRESSION_CODEC_MASK
from seglog.indexer.codec.columns import EncodedBatches
from seglog.indexer.fsutil import fsync_dir
from seglog.indexer.codec.compression import topic_codec
from seglog.indexer.names import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, segment_file
from seglog.indexer.codec.records import CREATE_TIME, LOG_APPEND_TIME

BATCHES_SUFFIX = ".batches"
BATCH_META = np.dtype([("position", ">i8"), ("last", ">i8"), ("first_ts", ">i8"), ("max_ts", ">i8"),
                       ("count", ">i4")])
assert BATCH_META.itemsize == 36   # SegmentStager.BATCH_META_SIZE
RENAME_MIN_BYTES = 1 << 20        # smaller staged segments are copied onto the active segment
COPY_CHUNK_BYTES = 16 << 20       # the copy path reads at most this much of a staged .log at once
_BASE_LENGTH_EPOCH = struct.Struct(">qii")   # a batch's first 16 bytes: base offset, length, leader epoch
_CODEC_BYTE = 22                               # attributes' low byte: the codec bits (docs/format.md)


@dataclass(frozen=True)
class StagedSegment:
    stem: str          # path without suffix
    size: int          # bytes of its .log
    records: int
    batches: int
    durable: bool = False   # the writer forced its .log and both indexes before reporting it

    def meta(self) -> np.ndarray:
        meta = np.fromfile(self.stem + BATCHES_SUFFIX, dtype=BATCH_META)
        if len(meta) != self.batches:
            raise ValueError(f"{self.stem}{BATCHES_SUFFIX}: {len(meta)} batches, the writer reported {self.batches}")
        return meta

    def codec(self) -> int:
        """The compression codec of its batches (the writer uses one for all: the topic's)."""
        fd = os.open(self.stem + LOG_SUFFIX, os.O_RDONLY)
        try:
            attr = os.pread(fd, 1, _CODEC_BYTE)
        finally:
            os.close(fd)
        if len(attr) != 1:
            raise ValueError(f"{self.stem}{LOG_SUFFIX}: no batch header")
        return attr[0] & COMPRESSION_CODEC_MASK


def publish(log, staged: list[StagedSegment], *, rename_min_bytes: int = RENAME_MIN_BYTES) -> int:
    """Append every staged segment, in order, at the end of `log` (open writable, its lock held).
    Runs of large ones are renamed in together (only the last is opened, as the active segment);
    small ones are copied. Returns how many were renamed in. The caller flushes the log (fsync)
    before committing."""
    run: list[StagedSegment] = []
    adopted = 0
    for seg in staged:
        if seg.records == 0:
            continue
        if seg.size >= rename_min_bytes and takes_whole_segments(log, seg.codec()):
            run.append(seg)
            continue
        if run:
            _rename(log, run)
            adopted += len(run)
            run = []
        _copy(log, seg)
    if run:
        _rename(log, run)
        adopted += len(run)
    if adopted:
        fsync_dir(log.path)   # the renames are durable before the commit that makes them visible
    return adopted


def _copy(log, seg: StagedSegment) -> None:
    meta = seg.meta()
    tstype = LOG_APPEND_TIME if log.config.log_append_time else CREATE_TIME
    ends = np.append(meta["position"][1:], seg.size).astype(np.int64)
    fd = os.open(seg.stem + LOG_SUFFIX, os.O_RDONLY)
    try:
        i, n = 0, len(meta)
        while i < n:
            # a run of whole batches of at most COPY_CHUNK_BYTES (at least one batch)
            start = int(meta["position"][i])
            j = max(i + 1, int(np.searchsorted(ends, start + COPY_CHUNK_BYTES, side="right")))
            end = int(ends[j - 1])
            data = bytearray(os.pread(fd, end - start, start))
            if len(data) != end - start:
                raise ValueError(f"{seg.stem}{LOG_SUFFIX}: short read at {start}")
            part = meta[i:j]
            counts = part["count"].astype(np.int64)
            rel_bases = part["last"].astype(np.int64) - counts + 1
            bases = log.log_end_offset + rel_bases - rel_bases[0]
            positions = np.append(part["position"].astype(np.int64) - start, end - start)
            _patch_bases(data, positions[:-1], bases)
            log.append_encoded(EncodedBatches(memoryview(data), positions, bases, bases + counts - 1,
                                              part["first_ts"].astype(np.int64), part["max_ts"].astype(np.int64),
                                              counts, int(counts.sum()), tstype, data))
            i = j
    finally:
        os.close(fd)


def _patch_bases(data: bytearray, positions: np.ndarray, bases: np.ndarray) -> None:
    """Write each batch's base offset (big-endian int64 at its start), vectorised."""
    buf = np.frombuffer(data, dtype=np.uint8)
    buf[positions[:, None] + np.arange(8)] = bases.astype(">i8").view(np.uint8).reshape(-1, 8)


def _rename(log, run: list[StagedSegment]) -> None:
    """Patch each staged segment's batch base offsets and leader epochs in place, fsync its files,
    rename them all in. As `Log._with_leader_epoch` for appended batches: every batch carries the
    partition's write epoch, so epochs never decrease and the leader-epoch-checkpoint stays valid
    as it is (indexer/leader_epochs.py)."""
    base = log.log_end_offset
    epoch = log.write_leader_epoch()
    for seg in run:
        meta = seg.meta()
        counts = meta["count"].astype(np.int64)
        bases = base + meta["last"].astype(np.int64) - counts + 1
        positions = meta["position"].astype(np.int64)
        lengths = np.append(positions[1:], seg.size) - positions - 12   # batchLength: after offset and length
        fd = os.open(seg.stem + LOG_SUFFIX, os.O_RDWR)
        try:
            for pos, b, n in zip(positions.tolist(), bases.tolist(), lengths.tolist()):
                os.pwrite(fd, _BASE_LENGTH_EPOCH.pack(b, n, epoch), pos)   # per batch, never per record
            os.fsync(fd)                                    # the real offsets durable before the rename
        finally:
            os.close(fd)
        # sealed: trusted by readers once renamed in, so durable first (the writer's own force counts:
        # its task failed if a force did)
        for suffix in () if seg.durable else (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            fd = os.open(seg.stem + suffix, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        base += seg.records
    adopt_segments(log, [({suffix: seg.stem + suffix for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)},
                         seg.records) for seg in run])


def takes_whole_segments(log, codec: int) -> bool:
    """Whether `adopt_segments` may take segments whose batches are in `codec`: the topic's own (what
    `append_columns` would write). The leader epoch is no bar: the publisher writes `write_leader_epoch()` into
    every batch (outside the CRC) before the rename."""
    log._check_writable()
    return codec == topic_codec(log.config["compression.type"])


def adopt_segments(log, segments) -> list[int]:
    """Put finished segments written elsewhere at `log`'s end, by rename, in order: each item maps `.log`,
    `.index`, `.timeindex` to paths, with its record count; its batches already carry their real base offsets
    (from `log_end_offset` on, dense) and are fsynced with both indexes, which are relative to that base. Every
    one but the last must be sealed (docs/spec.md §2.5: seal entry, trimmed indexes): they go in as sealed
    segments, never opened; the last becomes the active segment. A roll first: the active segment is sealed and
    retired (an empty one gives way: its `.log` goes first, so no reader lists a segment without its indexes);
    each segment's indexes are renamed in before its `.log` (a segment exists when its `.log` does). Returns
    their base offsets. The caller fsyncs the folder. (Was `Log.adopt_segments`: it reaches the Log's segment
    list as the method did; the JVM's StagedPublisher is the production rename.)"""
    log._check_writable()
    if not segments:
        return []
    base = log.log_end_offset
    active = log._segments.active
    if active.size > 0:
        active.seal(active.next_offset, durable=False)   # as Log._roll_active
        log._segments.retire_active()
    else:
        active.close()
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            segment_file(log.path, base, suffix).unlink(missing_ok=True)
        log._segments.bases.pop()
    bases = []
    for files, records in segments:
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, LOG_SUFFIX):
            os.replace(files[suffix], segment_file(log.path, base, suffix))
        bases.append(base)
        base += int(records)
    log._segments.bases.extend(bases[:-1])
    log._segments.adopt_active(bases[-1])
    log._dirty = True
    return bases
