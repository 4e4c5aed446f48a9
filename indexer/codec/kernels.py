"""Where the compiled kernels (`indexer.codec.native`) are looked up, once per process.

Its own module so that `records` (the reference codec) and `columns` (the bulk codec) can both reach
the kernels without importing each other.
"""
from __future__ import annotations

import logging
import os

_log = logging.getLogger(__name__)
_native = None                  # indexer.codec.native once imported, False when numba is unusable


def native_kernels():
    """The compiled kernels (`indexer.codec.native`), or None: numba missing or unusable, or the
    environment variable SEGLOG_NO_NUMBA set to anything but 0 (read on every call, for tests)."""
    global _native
    if os.environ.get("SEGLOG_NO_NUMBA", "0") not in ("", "0"):
        return None
    if _native is None:
        try:
            from seglog.indexer.codec import native
            _native = native
        except Exception as exc:        # ImportError, or numba finding no cache dir it can use
            _log.warning("seglog: compiled codec unavailable, using the numpy path: %s", exc)
            _native = False
    return _native or None
