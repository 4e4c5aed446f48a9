"""seglog: a Kafka-format segment log for Spark Structured Streaming.

One import package: `seglog.indexer` is the storage core, `seglog.sink` the Structured Streaming
sink, `seglog.source` the replay data source, `seglog.compactor` the sidecar, `seglog.conf` the
configuration; `seglog.errors` is the ground module of errors and `seglog.cli` the command line
(docs/internals.md maps every module).
"""
from __future__ import annotations

__version__ = "0.3.0"
