"""Full consistency check of a partition (`seglog verify`): CRCs, batch structure, offsets that
never go backwards, offset index entries that point at the right batches, time index entries
that are strictly increasing and keep their promise, and sealed segments that are really sealed.

Reads every byte once, in bounded chunks; never changes a file.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from seglog.errors import CorruptIndexError

if TYPE_CHECKING:
    from seglog.indexer.log import Log


def verify_log(log: "Log") -> list[str]:
    problems: list[str] = _check_log_start_checkpoint(log)
    if log.log_start_offset > log.log_end_offset:
        problems.append(f"{log.path}: the checkpointed log start offset {log.log_start_offset} is beyond the "
                        f"log end offset {log.log_end_offset}: it hides every record")
    prev_next = None
    bases = log.segment_bases()
    for i, base in enumerate(bases):
        try:
            seg = log.segment(base)
        except CorruptIndexError as exc:     # an index file missing: named, and the next segments checked
            problems.append(str(exc))
            prev_next = None
            continue
        where = str(seg.log_path)
        # The whole file, not the size a reader settled on: verify judges every byte (run it on
        # a log no one is writing, or expect the writer's unfinished tail to be reported).
        scan = seg.scan(0, seg.file_size(), check_crc=True, strict=True)
        if scan.error:
            problems.append(f"{where}: {scan.error}")
        else:
            problems += _check_records(seg)
        if len(scan.positions):
            first = int(scan.base_offsets[0])
            if first < base:
                problems.append(f"{where}: first batch starts at offset {first}, below the segment base {base}")
            if prev_next is not None and first < prev_next:
                problems.append(f"{where}: offsets go backwards across segments ({first} after {prev_next - 1})")
            prev_next = int(scan.last_offsets[-1]) + 1
        problems += seg.offset_index.sanity_check()   # each message names its file
        problems += seg.time_index.sanity_check()
        problems += _check_offset_index(seg, scan)
        problems += _check_time_index(seg, scan)
        last = i == len(bases) - 1
        if not last:
            next_base = bases[i + 1]
            if seg.file_size() == 0:
                problems.append(f"{where}: the .log is empty but offsets {base} to {next_base - 1} belonged to it: "
                                f"{next_base - base} records lost")
            if seg.is_sealed(next_base):
                problems += _check_seal_entry(seg, scan)
    return problems


def _check_log_start_checkpoint(log: "Log") -> list[str]:
    """The root's log-start-offset-checkpoint reads as Kafka's format (docs/format.md "Files"). A
    malformed one is a fault: readers then take the log start from the first segment, as Kafka's log
    manager does, which may show records the checkpoint hid."""
    from seglog.indexer.checkpoint import CorruptCheckpointError, read_log_start_offsets

    if log.topic is None:
        return []
    try:
        read_log_start_offsets(log.path.parent)
    except CorruptCheckpointError as exc:
        return [f"{exc}; until it is repaired, the log start is the first segment's base offset "
                f"(`seglog recover` rewrites the file)"]
    return []


def _check_records(seg) -> list[str]:
    """Every record of every batch decodes (compressed batches decompressed first): what `verify`
    calls clean, a read returns."""
    from seglog.errors import CorruptRecordError
    from seglog.indexer.codec.columns import decode_to_arrow
    from seglog.indexer.codec.records import INT64_MAX
    from seglog.indexer.segment import read_checked

    try:
        for pos, buf, scan in read_checked(seg, 0, seg.base_offset - 1):
            decode_to_arrow(buf, scan.positions, start_offset=0, end_offset=INT64_MAX)
    except CorruptRecordError as exc:
        return [f"{seg.log_path}: {exc}"]
    return []


def _check_offset_index(seg, scan) -> list[str]:
    offsets, positions = seg.offset_index.offsets_and_positions()
    if not len(offsets):
        return []
    batch_pos = scan.positions
    idx = np.searchsorted(batch_pos, positions.astype(np.int64))
    ok = (idx < len(batch_pos))
    ok[ok] &= batch_pos[idx[ok]] == positions.astype(np.int64)[ok]
    ok[ok] &= scan.last_offsets[idx[ok]] == offsets[ok]
    bad = np.nonzero(~ok)[0]
    if len(bad):
        k = int(bad[0])
        return [f"{seg.index_path}: entry {k} ({int(offsets[k])} -> position {int(positions[k])}) does not "
                f"point at the start of the batch ending at that offset ({len(bad)} bad entries)"]
    return []


def _check_time_index(seg, scan) -> list[str]:
    """Each entry (T, O) as Kafka writes it (docs/format.md "Time index"): a batch ends at O, the
    largest timestamp up to and including it is T, and it is the first batch to reach T. Checked
    over batch maxima, vectorised."""
    timestamps, offsets = seg.time_index.timestamps_and_offsets()
    if not len(timestamps) or not len(scan.positions):
        return []
    ts = np.asarray(timestamps, dtype=np.int64)
    offs = np.asarray(offsets, dtype=np.int64)
    if np.any(np.diff(ts) <= 0) or np.any(np.diff(offs) <= 0):
        return [f"{seg.time_index_path}: timestamps or offsets are not strictly increasing"]
    last_offsets = np.asarray(scan.last_offsets, dtype=np.int64)
    running = np.maximum.accumulate(np.asarray(scan.max_timestamps, dtype=np.int64))
    k = np.searchsorted(last_offsets, offs, side="left")
    inside = k < len(last_offsets)
    ends = inside.copy()
    ends[inside] = last_offsets[k[inside]] == offs[inside]
    for j in np.flatnonzero(~ends)[:1].tolist():
        return [f"{seg.time_index_path}: entry {j} ({int(ts[j])}, {int(offs[j])}) does not name the last "
                f"offset of a batch in this segment"]
    before = np.where(k > 0, running[np.maximum(k - 1, 0)], -1)
    wrong = (running[k] != ts) | (before >= ts)
    for j in np.flatnonzero(wrong)[:1].tolist():
        return [f"{seg.time_index_path}: entry {j} ({int(ts[j])}, {int(offs[j])}): the largest timestamp up "
                f"to that batch is {int(running[k[j]])}, first reached "
                f"{'before it' if before[j] >= ts[j] else 'elsewhere'}; an entry holds the largest "
                f"timestamp so far and the first batch that reached it"]
    return []


def _check_seal_entry(seg, scan) -> list[str]:
    """A sealed segment's last time index entry holds its largest timestamp (docs/spec.md §2.4)."""
    from seglog.indexer.segment import largest_with_offset

    expected = largest_with_offset(None, scan, seg.base_offset)
    if expected[0] < 0:
        return []
    entry = seg.time_index.last_entry()
    if entry != expected:
        return [f"{seg.time_index_path}: sealed segment's last time index entry {entry} is not its largest "
                f"timestamp and the batch holding it {expected}"]
    return []
