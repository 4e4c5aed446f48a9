"""The cleaner's file work (docs/spec.md §3.9), with Kafka's names so that recovery decides from the
file names alone:

1. The cleaned segment is written as `<base>.log.cleaned`, `.index.cleaned`, `.timeindex.cleaned`,
   sealed and fsynced (a crash here: recovery deletes every `.cleaned` file; nothing changed).
2. Renamed to `.swap`, the indexes first and the `.log` last, then the folder fsynced. The
   `.log.swap` is the commit point: from here on the swap completes.
3. Every old segment of the group (bases in [base, the swap's next offset)) renamed to `.deleted`.
4. The `.swap` files renamed to their final names, the indexes first and the `.log` last.

Step 1 runs without the partition's lock (the writer goes on appending), under the partition's
maintenance lock (indexer/locks.py); steps 2 to 4 run under the partition's lock
(indexer/compaction/swap_gate.py).

Recovery (`recover_swaps`, first thing on a writable open): `.cleaned` files go, unless a cleaner or
merger holds the maintenance lock (they are its live build's); a `.log.swap` is
completed by steps 3 and 4 (idempotent: step 3 only touches a base whose regular `.log` is still
there, so an index already swapped in is never set aside); an index `.swap` without its `.log.swap`
(step 2 interrupted, or step 4 after the `.log` rename) is deleted, and normal recovery rebuilds a
missing index. The group a swap replaces is [base, next offset of the swap) because the cleaned
segment always ends with the group's last batch (clean_batches keeps it, bare if need be).
"""
from __future__ import annotations

import os
from pathlib import Path

from seglog.errors import PartitionLockedError
from seglog.indexer.fsutil import fsync_dir
from seglog.indexer.locks import maintenance_lock
from seglog.indexer.names import (CLEANED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, SWAP_SUFFIX, TIME_INDEX_SUFFIX,
                                  log_bases, parse_segment_file, segment_file)
from seglog.indexer.codec.records import scan_batches

_KINDS = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, LOG_SUFFIX)     # the order of every rename: .log last


def _file(d: Path, base: int, kind: str, suffix: str) -> Path:
    return segment_file(d, base, kind + suffix)


def remove_cleaned(d: Path, report: list[str] | None = None) -> bool:
    """Step 1 undone: every `.cleaned` file (a clean that never reached its commit point). True if any was."""
    removed = False
    for name in os.listdir(d):
        parsed = parse_segment_file(name)
        if parsed and parsed[2] == CLEANED_SUFFIX:
            os.unlink(d / name)
            removed = True
            if report is not None:
                report.append(f"{d / name}: an interrupted clean's file removed")
    return removed


def commit(d: Path, base: int) -> None:
    """Step 2: `.cleaned` -> `.swap` (indexes, then the .log), made durable."""
    for kind in _KINDS:
        os.replace(_file(d, base, kind, CLEANED_SUFFIX), _file(d, base, kind, SWAP_SUFFIX))
    fsync_dir(d)


_CHUNK = 8 << 20     # bytes read at a time: a merged segment may be as large as segment.bytes


def swap_next_offset(d: Path, base: int) -> int:
    """The offset after the last batch of `<base>.log.swap` (complete and fsynced: step 1 made it so),
    walking its batch headers a chunk at a time (memory bounded by the chunk or the largest batch)."""
    nxt, pos = base, 0
    with open(_file(d, base, LOG_SUFFIX, SWAP_SUFFIX), "rb", buffering=0) as fh:
        size = os.fstat(fh.fileno()).st_size
        want = _CHUNK
        while pos < size:
            data = os.pread(fh.fileno(), want, pos)
            scan = scan_batches(data, 0, len(data), check_crc=False)
            if scan.next_offset is not None:
                nxt = scan.next_offset
            if scan.valid_end == 0:
                if len(data) < 12 or want >= size - pos:
                    break            # a torn tail: cannot be (step 1 fsynced whole batches), never read past it
                want = 12 + int.from_bytes(data[8:12], "big")    # one batch larger than the chunk
                continue
            pos += scan.valid_end
            want = _CHUNK
    return nxt


def complete(d: Path, base: int, rename_deleted, end: int | None = None) -> list[int]:
    """Steps 3 and 4 for the committed swap at `base`; returns the old bases set aside. `end`, the
    swap's next offset, when the caller just wrote it (recovery reads it from the `.log.swap`)."""
    end = swap_next_offset(d, base) if end is None else end
    replaced = [b for b in log_bases(d) if base <= b < end]
    for b in sorted(replaced, reverse=True):   # from the top: a crash leaves the group's lower part
        rename_deleted(d, b)
    for kind in _KINDS:
        swap = _file(d, base, kind, SWAP_SUFFIX)
        if swap.exists():
            os.replace(swap, _file(d, base, kind, ""))
    fsync_dir(d)
    return replaced


def recover_swaps(d: Path, rename_deleted, report: list[str]) -> None:
    """Finish or undo an interrupted clean from the file names alone (see the module doc). Run under
    the partition's lock, so no swap is live: every `.swap` is a crash's."""
    try:
        builder = maintenance_lock(d).acquire(0)    # tried once: this caller holds the partition's lock
    except PartitionLockedError:
        builder = None                              # a live clean or merge: its `.cleaned` files stay
    changed = False
    if builder is not None:
        try:
            changed = remove_cleaned(d, report)
        finally:
            builder.release()
    names = os.listdir(d)
    for name in sorted(names):
        parsed = parse_segment_file(name)
        if parsed and parsed[1] == "log" and parsed[2] == SWAP_SUFFIX:
            old = complete(d, parsed[0], rename_deleted)
            report.append(f"{d / name}: an interrupted clean completed (segments {old} replaced)")
            changed = True
    for name in os.listdir(d) if changed else names:
        parsed = parse_segment_file(name)
        if parsed and parsed[2] == SWAP_SUFFIX:          # an index swap without its .log swap
            os.unlink(d / name)
            report.append(f"{d / name}: an index swap without its .log swap removed")
            changed = True
    # Only a change needs the folder fsynced: beside a live clean (its `.cleaned` files, nothing to
    # undo) a writer's open must not wait for a journal commit carrying the clean's writes.
    if changed:
        fsync_dir(d)
