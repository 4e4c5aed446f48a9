"""seglog's storage core: Kafka-format record batches, offset and time indexes, segments, logs.

    from seglog.indexer import Log, Record
    with Log.open("/data/events-0", {"segment.bytes": 1 << 20}) as log:
        info = log.append([Record(key=b"k", value=b"v", timestamp=1_700_000_000_000)])
"""
from __future__ import annotations

from typing import Any

# Lazy exports keep `import seglog.errors` cheap (no numpy/pyarrow) for the CLI's error paths.
_EXPORTS = {
    "Log": "seglog.indexer.log",
    "AppendInfo": "seglog.indexer.log",
    "SegmentInfo": "seglog.indexer.segment",
    "RetentionResult": "seglog.indexer.retention",
    "EARLIEST": "seglog.indexer.log",
    "LATEST": "seglog.indexer.log",
    "Record": "seglog.indexer.codec.records",
    "LogRoot": "seglog.indexer.root",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'indexer' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
