"""The executor side of the sink: one Python pass over whole Arrow batches, straight into the logs.

The JVM has already grouped rows by target log partition (a shuffle on the `_slot` column, one slot
per (topic, partition)), so each log partition is written by exactly one task of the batch. Inside
the task each incoming Arrow batch is split by slot (stable, numpy) and each slice is appended with
`Log.append_columns` to that partition's writable Log, opened once per task (it holds the
partition's lock until the task ends). Before finishing the task fsyncs every log, writes a marker
per partition, and yields one small row per partition (topic, partition, start, end, records, bytes).

Retries and speculation (each decided while holding the partition lock):
- batch already committed for this writer (a late attempt): write nothing, report nothing.
- a marker of this very delivery (same run id and stage attempt) whose end is the log's end: an
  earlier attempt of this task finished the partition: reuse it, drop its rows.
- otherwise, anything past the committed end (a failed attempt's partial output) is truncated back
  and the partition is written again.
Reuse is sound because the slot of every row is a deterministic function of the row (null keys are
spread by a hash of the value, not round robin), so any attempt, or a rerun of the whole stage,
sends the same rows to the same partition.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pyarrow as pa

from seglog.indexer.fsutil import atomic_write
from seglog.indexer.names import META_DIR, partition_dir_name

RESULT_SCHEMA = ("topic string, partition int, start long, end long, records long, bytes long, "
                 "reused boolean")
SLOT = "_slot"
INT64_MAX = (1 << 63) - 1


def inflight_dir(root: str | os.PathLike, topic: str, writer_id: str, batch_id: int) -> Path:
    return Path(root) / META_DIR / "inflight" / topic / writer_id / str(batch_id)


def _write_json_atomic(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Markers only have to be whole when read; the batch's commit is what makes a write durable.
    atomic_write(path, json.dumps(doc).encode(), fsync_folder=False)


@dataclass(frozen=True)
class WritePlan:
    """Everything a task needs; built on the driver, pickled to the executors."""

    root: str
    writer_id: str
    batch_id: int
    run_id: str                                   # one delivery of the batch (a fresh uuid per call)
    slots: tuple[tuple[str, int], ...]            # slot -> (topic, partition)
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)   # topic -> Log config overrides
    lock_timeout: float | None = None


class _Partition:
    """One target partition inside a task: its open Log, or the decision to skip it."""

    def __init__(self, plan: WritePlan, topic: str, partition: int, stage_attempt: int):
        from seglog.indexer.commit_log import CommitLog
        from seglog.indexer.committed_end import roll_back_to_committed
        from seglog.indexer.log import Log

        self.topic, self.partition = topic, partition
        self.log = None
        self.skip = False
        self.reused: dict | None = None
        self.start = self.records = self.bytes = 0
        self.marker = inflight_dir(plan.root, topic, plan.writer_id, plan.batch_id) / f"{partition}.json"
        log = Log.open(Path(plan.root) / partition_dir_name(topic, partition), plan.configs.get(topic),
                       lock_timeout=plan.lock_timeout)
        try:
            commits = CommitLog(plan.root, topic)
            last = commits.last_batch(plan.writer_id)
            if last is not None and last >= plan.batch_id:
                self.skip = True                  # a late attempt of a committed batch
                log.close()
                return
            committed = commits.end_offsets().get(partition, 0)
            marker = self._read_marker()
            if (marker and marker.get("run_id") == plan.run_id and marker.get("stage_attempt") == stage_attempt
                    and marker.get("start") == committed and marker.get("end") == log.log_end_offset):
                self.reused = marker              # written whole by an earlier attempt of this task
                self.skip = True
                log.close()
                return
            roll_back_to_committed(log, committed)   # a failed attempt's partial output: never committed
            self.start = log.log_end_offset
            self.log = log
        except BaseException:
            log.close()
            raise

    def _read_marker(self) -> dict | None:
        try:
            return json.loads(self.marker.read_text())
        except (FileNotFoundError, ValueError):
            return None

    def append(self, batch: pa.RecordBatch) -> None:
        if self.skip:
            return
        cols = batch.schema.names
        info = self.log.append_columns(
            batch.column("value"),
            keys=batch.column("key") if "key" in cols else None,
            timestamps=batch.column("timestamp") if "timestamp" in cols else None,
            headers=batch.column("headers") if "headers" in cols else None)
        self.records += batch.num_rows
        self.bytes += info.bytes

    def finish(self, plan: WritePlan, stage_attempt: int) -> tuple | None:
        if self.reused is not None:
            m = self.reused
            return (self.topic, self.partition, m["start"], m["end"], m["records"], m["bytes"], True)
        if self.skip:
            return None
        self.log.flush()
        end = self.log.log_end_offset
        # The marker follows the fsync: it promises that [start, end) is durable and whole.
        _write_json_atomic(self.marker, {"run_id": plan.run_id, "stage_attempt": stage_attempt,
                                         "start": self.start, "end": end, "records": self.records,
                                         "bytes": self.bytes})
        return (self.topic, self.partition, self.start, end, self.records, self.bytes, False)

    def close(self) -> None:
        if self.log is not None:
            self.log.close()
            self.log = None


def _split_by_slot(batch: pa.RecordBatch) -> Iterator[tuple[int, pa.RecordBatch]]:
    """(slot, rows of that slot in their original order) for one Arrow batch, without the slot column."""
    slots = batch.column(SLOT).to_numpy(zero_copy_only=False)
    data = batch.drop_columns([SLOT])
    if len(slots) == 0:
        return
    first = slots[0]
    if (slots == first).all():                    # common case: the whole batch goes to one partition
        yield int(first), data
        return
    order = np.argsort(slots, kind="stable")
    sorted_slots = slots[order]
    cuts = np.flatnonzero(np.diff(sorted_slots)) + 1
    bounds = np.concatenate([[0], cuts, [len(order)]])
    grouped = data.take(pa.array(order))
    for a, b in zip(bounds[:-1], bounds[1:]):
        yield int(sorted_slots[a]), grouped.slice(int(a), int(b - a))


class TaskWriter:
    """The function given to `mapInArrow`: a plain picklable callable over an iterator of batches."""

    def __init__(self, plan: WritePlan):
        self.plan = plan

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        stage_attempt = 0   # kept in the marker for diagnosis; PySpark exposes no stage attempt number
        open_parts: dict[int, _Partition] = {}
        try:
            for batch in batches:
                for slot, rows in _split_by_slot(batch):
                    part = open_parts.get(slot)
                    if part is None:
                        topic, p = self.plan.slots[slot]
                        part = open_parts[slot] = _Partition(self.plan, topic, p, stage_attempt)
                    part.append(rows)
            results = [r for r in (part.finish(self.plan, stage_attempt) for part in open_parts.values()) if r]
        finally:
            for part in open_parts.values():
                part.close()
        if results:
            cols = list(zip(*results))
            yield pa.RecordBatch.from_arrays(
                [pa.array(cols[0], pa.string()), pa.array(cols[1], pa.int32()), pa.array(cols[2], pa.int64()),
                 pa.array(cols[3], pa.int64()), pa.array(cols[4], pa.int64()), pa.array(cols[5], pa.int64()),
                 pa.array(cols[6], pa.bool_())],
                names=["topic", "partition", "start", "end", "records", "bytes", "reused"])
