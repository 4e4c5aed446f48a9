"""The cleaner checkpoint, <root>/cleaner-offset-checkpoint, in Kafka's text format (as the log start
checkpoint, indexer/checkpoint.py): per partition, the first dirty offset, the end of the part the
cleaner has already cleaned (docs/spec.md §3.9).

Invariant: a partition has an entry from before the first swap of its first clean on (the cleaner
writes its entry, at the old value, before it swaps anything in). So "this partition's offsets may
have gaps" is known from the files alone: its topic is compacted, or the checkpoint names it
(`may_have_gaps`). The value itself moves after each swap, as Kafka's.
"""
from __future__ import annotations

import os
from pathlib import Path

from seglog.indexer.checkpoint import read_offsets_file, write_offsets_file
from seglog.indexer.locks import FileLock, lock_path
from seglog.indexer.names import parse_partition_dir

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"


def cleaner_checkpoint_path(root: str | os.PathLike) -> Path:
    return Path(root) / CLEANER_CHECKPOINT


def read_cleaner_offsets(root: str | os.PathLike) -> dict[tuple[str, int], int]:
    return read_offsets_file(cleaner_checkpoint_path(root))


def cleaner_offset(partition_dir: str | os.PathLike) -> int | None:
    """The partition's first dirty offset, or None when it was never cleaned (or is not in a root)."""
    d = Path(partition_dir)
    parsed = parse_partition_dir(d.name)
    if parsed is None:
        return None
    try:
        return read_cleaner_offsets(d.parent).get(parsed)
    except Exception:   # a malformed file must not stop reads; the cleaner reports it when it runs
        return None


def set_cleaner_offset(partition_dir: str | os.PathLike, offset: int) -> None:
    """Record the partition's first dirty offset (under the root-level lock; atomic rewrite)."""
    d = Path(partition_dir)
    parsed = parse_partition_dir(d.name)
    if parsed is None:
        return
    root = d.parent
    with FileLock(lock_path(root, CLEANER_CHECKPOINT), what="cleaner offset checkpoint"):
        entries = read_cleaner_offsets(root)
        entries[parsed] = int(offset)
        write_offsets_file(cleaner_checkpoint_path(root), entries)


def may_have_gaps(partition_dir: str | os.PathLike, config) -> bool:
    """Offsets of this partition may have gaps between batches: compaction's doing, so the dense
    offset checks of reads and recovery do not apply (docs/spec.md §2.2)."""
    return config.compacted or cleaner_offset(partition_dir) is not None
