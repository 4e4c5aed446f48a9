"""A root's files, for the SQL tests' "a refused statement changes nothing" checks."""
from __future__ import annotations

from pathlib import Path


def files(root: Path) -> dict[str, bytes | None]:
    """Every file under the root with its bytes, and every folder (as None)."""
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))}
