"""seglog: a Kafka-format segment log for Spark Structured Streaming.

The storage core is `indexer`, the Spark edges are `sink`, the sidecar is `compactor`; this package
holds the `seglog` command line (`seglog.cli`).
"""
from __future__ import annotations

__version__ = "0.1.0"
