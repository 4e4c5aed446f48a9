"""The recovery point of one partition, `<root>/<topic>-<partition>/recovery-point-offset-checkpoint`
(docs/format.md "Files"), in Kafka's offset checkpoint text (a version line `0`, a count line `1`,
one `topic partition offset` line).

Kafka's meaning: every segment wholly below the offset (its next segment's base at or below it) is
durable and needs no recovery scan; a writable open trusts those without looking at them (not even a
stat) and recovers the others as before (indexer/recovery.py).

Invariants (kept by indexer/log.py, the only writer, under the partition's lock):
- Raised only after the segments it newly covers are fsynced (their .log and both indexes), and
  written atomically (temp file, fsync, rename, fsync of the folder: which also makes the names of
  the segments it covers durable).
- Lowered BEFORE anything that rewrites records below it (a truncation writes its intent after).
  Clean and merge swaps put sealed, fsynced segments in place and retention only deletes: neither
  needs it lowered.
- A missing or malformed file means "recover everything" (reported, never an error).

Why one file per partition folder and not Kafka's one per log folder: a partition's writer (the
sink's executor, the sidecar) holds only that partition's lock; one shared file would need a
root-wide lock and a read-modify-write of every partition's entry on every close.
"""
from __future__ import annotations

import os
from pathlib import Path

from seglog.indexer.checkpoint import CorruptCheckpointError, read_offsets_file, write_offsets_file

RECOVERY_POINT_FILE = "recovery-point-offset-checkpoint"


def recovery_point_path(partition_dir: str | os.PathLike) -> Path:
    return Path(partition_dir) / RECOVERY_POINT_FILE


def read_recovery_point(partition_dir: str | os.PathLike, topic: str,
                        partition: int) -> tuple[int, str | None]:
    """(the recovery point, what was wrong with the file or None). 0 (nothing trusted) when the file
    is missing, malformed, or holds no entry for this partition (a folder copied under another name)."""
    path = recovery_point_path(partition_dir)
    try:
        entries = read_offsets_file(path)
    except CorruptCheckpointError as exc:
        return 0, f"{exc}; every segment recovered"
    except OSError as exc:
        return 0, f"{path}: unreadable ({exc}); every segment recovered"
    if not entries:
        return 0, None
    point = entries.get((topic, partition))
    if point is None or point < 0 or len(entries) != 1:
        return 0, f"{path}: holds {sorted(entries)} instead of one entry for {topic}-{partition}; every segment recovered"
    return point, None


def write_recovery_point(partition_dir: str | os.PathLike, topic: str, partition: int, offset: int) -> None:
    write_offsets_file(recovery_point_path(partition_dir), {(topic, partition): int(offset)})
