"""Small file-system helpers that keep the crash-safety rules in one place."""
from __future__ import annotations

import os
import time
from pathlib import Path


def temp_path(path: str | os.PathLike) -> Path:
    """A unique temporary name beside `path`, short whatever `path`'s name is (a long topic's file
    name plus a suffix would pass NAME_MAX); a leading dot keeps it out of every listing."""
    path = Path(path)
    return path.with_name(f".tmp-{os.getpid()}-{time.monotonic_ns()}")


def fsync_dir(path: str | os.PathLike) -> None:
    """Make a rename or create in `path` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike, data: bytes, *, fsync_folder: bool = True) -> None:
    """Write to a temporary name, fsync, rename over `path`, fsync the folder: old or new, never torn.
    `fsync_folder=False` where a later fsync of the folder (or a commit) makes the rename durable."""
    path = Path(path)
    tmp = temp_path(path)
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    if fsync_folder:
        fsync_dir(path.parent)
