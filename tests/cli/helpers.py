"""What the CLI tests share: running the real `seglog` command, and a digest of a root's files that
says "nothing changed" (lock files aside: taking a lock may create one)."""
from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path


def seglog(*args) -> subprocess.CompletedProcess:
    """`python -m seglog ARGS...`, its output captured; a traceback is never an answer."""
    proc = subprocess.run([sys.executable, "-m", "seglog", *map(str, args)], capture_output=True, text=True,
                          timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def digest(root: Path) -> str:
    """A hash of every file's name and bytes under `root`, lock files left out."""
    h = hashlib.sha256()
    for p in sorted(Path(root).rglob("*")):
        if p.is_file() and "locks" not in p.parts:
            h.update(str(p.relative_to(root)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()
