"""File states a crash leaves, made on purpose for the tests that repair them.

`unseal_rolled_segments`: every segment but the last gets its index files extended with zeros to
the preallocated size, as a writer killed inside a roll (after the seal entry, before the trim)
leaves them (docs/format.md "Segment states"). Recovery, `seal_inactive` and the sidecar's seal
job must finish them; readers must not trust them.
"""
from __future__ import annotations

import os
from pathlib import Path

INDEX_BYTES = 10 * 1024 * 1024   # segment.index.bytes' default


def unseal_rolled_segments(partition_dir: Path, index_bytes: int = INDEX_BYTES) -> int:
    """Returns how many segments it left inactive."""
    bases = sorted(int(p.stem) for p in Path(partition_dir).glob("*.log"))
    for base in bases[:-1]:
        for suffix, entry in ((".index", 8), (".timeindex", 12)):
            path = Path(partition_dir) / f"{base:020d}{suffix}"
            size = index_bytes - index_bytes % entry
            if path.stat().st_size < size:
                os.truncate(path, size)
    return max(0, len(bases) - 1)
