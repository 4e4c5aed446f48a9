"""seglog's storage core: Kafka-format record batches, offset and time indexes, segments, logs.

    from indexer import Log, Record
    with Log.open("/data/events-0", {"segment.bytes": 1 << 20}) as log:
        info = log.append([Record(key=b"k", value=b"v", timestamp=1_700_000_000_000)])
"""
from __future__ import annotations

from typing import Any

# Lazy exports keep `import indexer.errors` cheap (no numpy/pyarrow) for the CLI's error paths.
_EXPORTS = {
    "Log": "indexer.log",
    "AppendInfo": "indexer.log",
    "SegmentInfo": "indexer.segment",
    "RetentionResult": "indexer.retention",
    "EARLIEST": "indexer.log",
    "LATEST": "indexer.log",
    "Record": "indexer.records",
    "LogRoot": "indexer.root",
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
