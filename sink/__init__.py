"""The Structured Streaming sink: `SegmentLogSink`, a `foreachBatch` writer, exactly once per batch id
(docs/spec.md section 7). The data source for replay reads lives in `seglog.source`.
"""
from __future__ import annotations

from seglog.sink.segment_log_sink import SegmentLogSink

__all__ = ["SegmentLogSink"]
