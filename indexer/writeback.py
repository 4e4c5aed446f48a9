"""Start the writeback of a background job's output as it is written (Linux's sync_file_range).

A clean or merge writes a segment's worth (segment.bytes) into the OS cache, then fsyncs it whole. On
ext4 (data=ordered) a writer's fsync beside it then waits for the journal commit that carries those
dirty pages: a sink batch beside a clean took up to 4 ms more in its flush (bench/clean_lock.py).
Starting the writeback of each MiB once written (SYNC_FILE_RANGE_WRITE: asynchronous, no metadata)
spreads the disk work over the build, so the final fsync, and any writer's fsync beside it, finds
little left to flush. A courtesy only: durability still comes from the fsync at seal; where the call
is missing (not Linux) nothing is done.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os

_SYNC_FILE_RANGE_WRITE = 2
KICK_BYTES = 1 << 20          # written bytes between two kicks


def _load():
    if not os.uname().sysname == "Linux":
        return None
    try:
        fn = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
    fn.restype = ctypes.c_int
    return fn


_sync_file_range = _load()


class WritebackKicker:
    """Kicks the writeback of `fd`'s bytes [kicked, size) once at least KICK_BYTES are pending."""

    def __init__(self, fd: int, start: int = 0):
        self._fd = fd
        self._kicked = start

    def written(self, size: int) -> None:
        if _sync_file_range is None or size - self._kicked < KICK_BYTES:
            return
        _sync_file_range(self._fd, self._kicked, size - self._kicked, _SYNC_FILE_RANGE_WRITE)   # errors: a courtesy
        self._kicked = size
