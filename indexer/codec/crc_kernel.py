"""CRC-32C of many batches in one compiled loop, without the GIL (recovery's index rebuild, segment._scan_chunked).

Checking a segment's batches one `crc32c.crc32c` call each costs Python's per-call overhead on top of the
hashing (16 KiB batches: ~1/4 of the time), and holds the GIL between calls, so no other thread reads the
next chunk meanwhile. Here one numba loop calls the hardware CRC routine of the crc32c library itself
(its exported `_crc32c_hw_adler`, Mark Adler's SSE4.2 code) through ctypes, with the GIL released.

That symbol is the library's internal one, not its API: it is used only after it gives the library's own
answers on probes at load (`crc32c.crc32c` of random buffers, empty and odd lengths); where it is missing
(another platform, another version) or disagrees, `first_bad_crc` is None and callers use the library's
Python API. Compiled per process on first use (no cache: the routine's address is a process's own).
"""
from __future__ import annotations

import ctypes
import os

import crc32c as _crc32c
import numpy as np

_MASK = 0xFFFFFFFF


def _load():
    try:
        from crc32c import _crc32c as ext
        fn = ctypes.CDLL(ext.__file__)._crc32c_hw_adler
    except (ImportError, OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t)
    fn.restype = ctypes.c_uint32
    rng = np.random.default_rng(7)
    for n in (0, 1, 7, 64, 1000, 16384, 70001):
        data = rng.integers(0, 256, n, dtype=np.uint8)
        if (fn(_MASK, data.ctypes.data, n) ^ _MASK) != _crc32c.crc32c(data.tobytes()):
            return None
    return fn


def _compile(fn):
    from numba import njit

    @njit(nogil=True)
    def first_bad(a, positions, starts_at, sizes, stored):
        """Index of the first batch whose CRC-32C of a[positions[i] + starts_at : positions[i] + sizes[i]]
        is not stored[i], or -1. Positions and sizes lie inside `a` (the walk that found them checked so)."""
        base = a.ctypes.data
        for i in range(len(positions)):
            p = positions[i] + starts_at
            c = fn(np.uint32(_MASK), base + p, sizes[i] - starts_at) ^ np.uint32(_MASK)
            if c != stored[i]:
                return i
        return -1

    return first_bad


_kernel = None


def first_bad_crc():
    """The compiled check (see the module doc), or None where it cannot be had; SEGLOG_NO_NUMBA set
    (tests of the plain path) also gives None."""
    global _kernel
    if os.environ.get("SEGLOG_NO_NUMBA", "0") not in ("", "0"):
        return None
    if _kernel is None:
        fn = _load()
        try:
            _kernel = _compile(fn) if fn is not None else False
        except Exception:          # numba missing or refusing: the library's API instead
            _kernel = False
    return _kernel or None
