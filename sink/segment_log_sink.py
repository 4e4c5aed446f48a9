"""`SegmentLogSink`: the foreachBatch sink (docs/spec.md §7), a thin layer over the `format("seglog")` write.

    query.writeStream.foreachBatch(SegmentLogSink(root, topic="events", partitions=8)).start()

Per call `(df, batch_id)`:
1. Check the schema (`sink.input_schema`): a bad column is refused with a typed error before any job runs.
   The sink's own arguments were checked when it was made.
2. `df.write.format("seglog").mode("append")` with the sink's options and `foreachBatchId` = the batch id:
   the connector jar's DataSource V2 write does the rest, and its driver commit (the JVM's `DriverCommit`)
   is the one home of the exactly-once protocol: the writer is `writer_id`, else the calling query's id
   (known on the driver JVM from the batch's DataFrame, on any thread and under Spark Connect; a call that is
   no query's is refused asking for `writer_id`), the batch id its version, so a re-delivered batch is skipped; rows are
   partitioned and checked in the write's tasks; partitions are rolled back, published and committed once
   per topic on the driver; a refused batch leaves every log as it was.
3. A refusal comes back from the JVM as text (a py4j error in classic PySpark, a SparkConnectGrpcException
   under Spark Connect); `sink.write_errors` turns it into the typed error of seglog/errors.py by the Java
   exception's class (its table, JAVA_CLASSES), never by the wording of the message.

No `sparkContext`, no py4j: the same sink runs in classic PySpark and from a Spark Connect client.
"""
from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, Mapping

from seglog.conf.topic_config import requested_topic_config
from seglog.indexer.locks import check_lock_timeout
from seglog.indexer.log import Log
from seglog.indexer.names import parse_partition_dir, validate_topic
from seglog.indexer.root import local_root
from seglog.indexer.topics import load_topic
from seglog.sink.input_schema import SinkInputError, validate_schema
from seglog.sink.write_errors import typed_error
from seglog.sink.writer_id import check_writer_id

_LOG = logging.getLogger("seglog.sink")
# Logged when a write is tried again after the core finished what a killed process left half done: Spark has
# logged the first attempt's "Data source write support ... is aborting." / "aborted." as ERROR lines by then.
RETRIED_AFTER_RECOVERY = "seglog sink: the write was tried again"
_RECOVERY_NEEDED = re.compile(r"RecoveryNeededException: (\S+) holds (?:\S+\.swap|truncate\.pending)")


def _option_text(value: Any) -> str:
    """A validated topic configuration value as the write's option text (Kafka's spelling)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


class SegmentLogSink:
    """`foreachBatch(SegmentLogSink(root, topic=..., partitions=..., config=...))`; a plain callable.

    `writer_id`: the writer the commit log records (default: the calling streaming query's id, one per
    checkpoint; a call outside a query needs it); `tasks`: the write's task count (a repartition before the write; default: the input's
    partitions); `lock_timeout`: seconds the commit waits for a topic's or a partition's lock (None: for
    ever); `rename_min_bytes`: staged segments at least this large are renamed in, smaller ones copied onto
    the active segment (the write's default: 1 MiB)."""

    def __init__(self, root: str, topic: str | None = None, partitions: int | None = None,
                 config: Mapping[str, Any] | None = None, writer_id: str | None = None, *,
                 tasks: int | None = None, lock_timeout: float | None = 600.0,
                 rename_min_bytes: int | None = None):
        self.root = str(Path(local_root(root, "SegmentLogSink root")).resolve())   # file:///data/log is /data/log
        self.topic = validate_topic(topic) if topic is not None else None
        if partitions is not None and (isinstance(partitions, bool) or not isinstance(partitions, int)
                                       or partitions < 1):
            raise SinkInputError(f"partitions = {partitions!r}; allowed: an integer >= 1")
        self.partitions = partitions
        # Validated now, so a bad key fails when the query is defined, not at its first batch. Every
        # key asked for is kept, even one equal to a default: the topic records it (docs/spec.md §5).
        self.config = (requested_topic_config(config, where="SegmentLogSink config")
                       if config is not None else None)
        self.writer_id = None if writer_id is None else check_writer_id(writer_id, "writer_id")
        if tasks is not None and (isinstance(tasks, bool) or not isinstance(tasks, int) or tasks < 1):
            raise SinkInputError(f"tasks = {tasks!r}; allowed: an integer >= 1")
        self.tasks = tasks
        self.lock_timeout = check_lock_timeout(lock_timeout, "SegmentLogSink lock_timeout")
        if rename_min_bytes is not None and (isinstance(rename_min_bytes, bool) or not isinstance(rename_min_bytes, int)
                                             or rename_min_bytes < 0):
            raise SinkInputError(f"rename_min_bytes = {rename_min_bytes!r}; allowed: an integer >= 0")
        self.rename_min_bytes = rename_min_bytes

    def options(self, batch_id: int) -> dict[str, str]:
        """The `format("seglog")` write's options for one call (docs/spec.md §7 names each). Without `writer_id`
        the JVM names the writer by the query whose micro-batch the DataFrame is, or refuses."""
        out: dict[str, str] = {"foreachBatchId": str(int(batch_id))}
        if self.topic is not None:
            out["topic"] = self.topic
        if self.partitions is not None:
            out["partitions"] = str(self.partitions)
        for key, value in (self.config or {}).items():
            out[key] = _option_text(value)
        if self.writer_id is not None:
            out["writerId"] = self.writer_id
        out["lockTimeoutMs"] = "none" if self.lock_timeout is None else str(int(self.lock_timeout * 1000))
        if self.rename_min_bytes is not None:
            out["renameMinBytes"] = str(self.rename_min_bytes)
        return out

    def __call__(self, df, batch_id: int) -> None:
        validate_schema(df.schema)
        if self.topic is None and "topic" not in df.columns:
            raise SinkInputError("the sink has no topic: pass topic= or give the DataFrame a 'topic' column")
        if self.tasks:
            df = df.repartition(self.tasks)
        writer = df.write.format("seglog").mode("append")
        for key, value in self.options(batch_id).items():
            writer = writer.option(key, value)
        try:
            writer.save(self.root)
        except Exception as exc:
            recovered = self._finished_interrupted_swap(str(exc))
            if recovered is None:
                typed = typed_error(exc)
                if typed is None:
                    raise
                raise typed from exc
            _LOG.warning("%s: %s held a rewrite left half done by a killed process (the JVM refused it); the core "
                         "finished it, and batch %s was written again (the write Spark logged as aborting and aborted just "
                         "before is the first attempt)", RETRIED_AFTER_RECOVERY, recovered, batch_id)
            writer.save(self.root)   # once: the folder the JVM refused is recovered now

    def _finished_interrupted_swap(self, text: str) -> Path | None:
        """A sidecar killed inside a clean's or merge's swap leaves `.swap` files, and a core truncation killed
        after rewriting a straddling batch leaves its `truncate.pending`: the JVM refuses to touch either
        (RecoveryNeededException names the folder); the Python core's writable open finishes it under the
        partition's lock, as the sidecar would. The folder if it did (the write is then tried again), else None."""
        m = _RECOVERY_NEEDED.search(text)
        if m is None:
            return None
        folder = Path(m.group(1))
        parsed = parse_partition_dir(folder.name)
        if folder.parent != Path(self.root) or parsed is None or not folder.is_dir():
            return None
        meta = load_topic(self.root, parsed[0])
        if meta is None:
            return None
        with Log.open(folder, meta.config, lock_timeout=self.lock_timeout, create=False):
            pass
        return folder
