"""`SegmentLogSink`: the foreachBatch sink (docs/spec.md §7). The driver plans, checks and commits; executors write.

Per call `(df, batch_id)`:
1. Check the schema (`sink.input_schema`): a bad column is refused before any job runs.
2. Resolve the writer id (`writer_id=`, else Spark's local property `sql.streaming.queryId`, else
   `default`) and the target topics; take each topic's driver lock
   (`<root>/_seglog/locks/<topic>.writer`) so two queries never interleave batches of one topic.
3. Skip topics whose commit log already holds this batch for this writer (a re-delivery).
4. Topics are created (or checked). With a `topic` column one aggregate finds the batch's topics;
   otherwise no job runs before the write: the checks ride in the one write pass (a partition out of
   range fails the slot expression, a record over max.message.bytes or a timestamp out of range under
   policy `fail` fails the JVM task), and a refused batch is rolled back and reported by `_explain`
   naming the record. Under policy `quarantine` out-of-range rows are routed to the quarantine topic in SQL.
5. Roll back: any partition whose log end is past its committed end (a crashed delivery) is
   truncated back under its lock; a crashed delivery's staged files are removed.
6. The write, one JVM pass and no shuffle (sink/jvm_write.py): a SQL expression gives every row its
   slot (topic, partition): the `partition` column, else Kafka's murmur2 of the key (the connector
   jar's UDF, `io.seglog.spark.write.Murmur2Partition`), else a hash of the value for a null key; each
   input task stages its rows as sealed segments per slot; the driver publishes each partition's
   staged segments in task order at its log end (indexer/staged.py) and fsyncs.
7. Commit once per topic, holding the written partitions' locks, then remove the staged files. On
   failure every partition is truncated back to its committed end: a refused batch leaves the log as it was.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Mapping

from seglog.conf.topic_config import requested_topic_config
from seglog.indexer.codec.records import BATCH_HEADER_SIZE
from seglog.indexer.commit_log import CommitLog
from seglog.errors import (InvalidRecordError, MissingKeyError, RecordTooLargeError, SegmentDeletedError,
                           TimestampOutOfRangeError)
from seglog.indexer.locks import FileLock, check_lock_timeout, lock_path, partition_lock
from seglog.indexer.names import partition_dir_name, validate_topic
from seglog.indexer.topics import TopicMetadata, create_topic, forget_uncommitted_topic, load_topic
from seglog.indexer.log import Log
from seglog.indexer.staged import RENAME_MIN_BYTES, publish
from seglog.sink.jvm_write import (INT64_MAX, run_staged_write, stage_config, staged_by_slot, staging_dir,
                                   writer_staging)
from seglog.sink.input_schema import InputColumns, SinkInputError, validate_schema

_WRITER_RE = re.compile(r"[A-Za-z0-9._-]{1,200}")   # fullmatch: `$` lets "id\n" through
QUERY_ID_PROPERTY = "sql.streaming.queryId"
PUBLISH_THREADS = 8   # partitions published at once by the driver
# A record's time, from the `timestamp` column (timestamp or timestamp_ntz): NTZ is read in the
# session time zone, as Spark's CAST does. The write and the quarantine routing both use it.
EVENT_TIME = "CAST(timestamp AS TIMESTAMP)"
BATCH_OVERHEAD = BATCH_HEADER_SIZE   # Kafka's record batch header, v2


def _sql_str(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _varint_len(x: str) -> str:
    """SQL: bytes of the zigzag varint of a non-negative int expression."""
    return (f"(CASE WHEN {x} < 64 THEN 1 WHEN {x} < 8192 THEN 2 WHEN {x} < 1048576 THEN 3 "
            f"WHEN {x} < 134217728 THEN 4 ELSE 5 END)")


def _record_batch_size_sql(cols: InputColumns) -> str:
    """SQL: the encoded size of a batch holding this record alone (what max.message.bytes bounds)."""
    key = ("1" if not cols.has_key else
           f"(CASE WHEN key IS NULL THEN 1 ELSE {_varint_len('octet_length(key)')} + octet_length(key) END)")
    value = f"(CASE WHEN value IS NULL THEN 1 ELSE {_varint_len('octet_length(value)')} + octet_length(value) END)"
    if cols.has_headers:
        one = (f"{_varint_len('octet_length(h.key)')} + octet_length(h.key) + (CASE WHEN h.value IS NULL THEN 1 "
               f"ELSE {_varint_len('octet_length(h.value)')} + octet_length(h.value) END)")
        headers = (f"(CASE WHEN headers IS NULL THEN 1 ELSE {_varint_len('size(headers)')} + "
                   f"aggregate(headers, 0L, (acc, h) -> acc + {one}) END)")
    else:
        headers = "1"
    body = f"(3 + {key} + {value} + {headers})"       # attributes, timestamp delta 0, offset delta 0
    return f"({BATCH_OVERHEAD} + {_varint_len(body)} + {body})"


class SegmentLogSink:
    """`foreachBatch(SegmentLogSink(root, topic=..., partitions=..., config=...))`; a plain callable."""

    def __init__(self, root: str, topic: str | None = None, partitions: int | None = None,
                 config: Mapping[str, Any] | None = None, writer_id: str | None = None, *,
                 tasks: int | None = None, lock_timeout: float | None = 600.0,
                 jvm_partitioner: bool | None = None, rename_min_bytes: int = RENAME_MIN_BYTES):
        self.root = str(Path(root).resolve())
        self.topic = validate_topic(topic) if topic is not None else None
        if partitions is not None and (isinstance(partitions, bool) or not isinstance(partitions, int)
                                       or partitions < 1):
            raise SinkInputError(f"partitions = {partitions!r}; allowed: an integer >= 1")
        self.partitions = partitions
        # Validated now, so a bad key fails when the query is defined, not at its first batch. Every
        # key asked for is kept, even one equal to a default: the topic records it (docs/spec.md §5).
        self.config = (requested_topic_config(config, where="SegmentLogSink config")
                       if config is not None else None)
        if writer_id is not None and (not isinstance(writer_id, str) or not _WRITER_RE.fullmatch(writer_id)):
            raise SinkInputError(f"writer_id = {writer_id!r}; allowed: 1 to 200 characters of [A-Za-z0-9._-]")
        self.writer_id = writer_id
        self.tasks = tasks
        self.lock_timeout = check_lock_timeout(lock_timeout, "SegmentLogSink lock_timeout")
        self.jvm_partitioner = jvm_partitioner
        # staged segments at least this large are renamed in as segments; smaller ones are copied
        # onto the active segment (indexer/staged.py), so micro-batches leave no tiny segments
        self.rename_min_bytes = rename_min_bytes
        self.last_results: list[dict] = []       # the last batch's per-partition results (driver side)
        self.last_task_rows: list[int] = []      # rows each write task staged in the last batch (skew)
        self.last_timings: dict[str, float] = {}  # the last batch's phases in seconds: where time goes

    # ------------------------------------------------------------------ entry point
    def __call__(self, df, batch_id: int) -> None:
        cols = validate_schema(df.schema)
        if self.topic is not None and cols.has_topic:
            # Spark's Kafka sink: the `topic` option overrides the topic column.
            cols = dataclasses.replace(cols, has_topic=False)
        spark = df.sparkSession
        writer = self.writer_id or spark.sparkContext.getLocalProperty(QUERY_ID_PROPERTY) or "default"
        if not _WRITER_RE.fullmatch(writer):
            raise SinkInputError(f"writer id {writer!r} from the query is not usable as a folder name")
        batch_id = int(batch_id)
        self.last_results = []
        if not cols.has_topic and self.topic is None:
            raise SinkInputError("the sink has no topic: pass topic= or give the DataFrame a 'topic' column")

        topic_expr = ("coalesce(topic, " + (_sql_str(self.topic) if self.topic else "CAST(NULL AS STRING)") + ")"
                      if cols.has_topic else _sql_str(self.topic))
        known_topics = [self.topic] if (self.topic and not cols.has_topic) else None
        if known_topics:
            with self._locked(known_topics):
                if self._all_committed(known_topics, writer, batch_id):
                    return
        timings = self.last_timings = {}
        t0 = time.perf_counter()
        if cols.has_topic:
            # Rows pick their topic: one aggregate learns which topics this batch touches.
            stats = self._stats(df, topic_expr)
            if None in stats:
                raise SinkInputError(f"{stats[None]} row(s) have a null 'topic' and the sink has no topic= "
                                     f"to fall back on; nothing was written")
            topics = sorted(stats) or ([self.topic] if self.topic else [])
        else:
            topics = [self.topic]
        now = int(time.time() * 1000)
        created: list[str] = []          # topics this call records: forgotten again if the batch fails
        try:
            self._write_batch(df, cols, topic_expr, topics, created, writer, batch_id, now, timings, t0)
        except BaseException:
            for t in created:
                forget_uncommitted_topic(self.root, t)
            raise

    def _write_batch(self, df, cols, topic_expr, topics, created, writer, batch_id, now, timings, t0) -> None:
        metas = {t: self._topic(t, created=created) for t in topics}
        quarantine = self._quarantine_targets(cols, metas)
        for t, q in quarantine.items():
            if q not in metas:
                metas[q] = self._quarantine_topic(q, metas[t].partitions, created=created)
        all_topics = sorted(metas)
        # judged where each row lands, after quarantine routing (a keyless row routed to a compacted
        # quarantine topic is refused; one routed out of a compacted topic is not)
        _refuse_keyless(df, cols, self._routed_topic_sql(topic_expr, metas, quarantine, now), metas)
        timings["plan_s"] = time.perf_counter() - t0
        with self._locked(all_topics):
            todo = [t for t in all_topics if not self._committed(t, writer, batch_id)]
            if not todo:
                return
            t0 = time.perf_counter()
            for t in todo:
                self._roll_back(t, metas[t])
            # a crashed delivery's staged files (never published past a commit) go too
            shutil.rmtree(writer_staging(self.root, writer, todo), ignore_errors=True)
            timings["roll_back_s"] = time.perf_counter() - t0
            run_id = uuid.uuid4().hex
            existed = {t: {p for p in range(metas[t].partitions)
                           if (Path(self.root) / partition_dir_name(t, p)).is_dir()} for t in todo}
            try:
                t0 = time.perf_counter()
                results = self._write(df, cols, topic_expr, metas, todo, quarantine, writer, batch_id, run_id, now)
                timings["write_job_s"] = time.perf_counter() - t0
                t0 = time.perf_counter()
                self._commit(todo, metas, results, writer, batch_id)
                timings["commit_s"] = time.perf_counter() - t0
            except BaseException as exc:
                # Nothing of this batch was committed: cut every partition back, so a refused or
                # failed batch leaves each log as it was.
                for t in todo:
                    with contextlib.suppress(Exception):
                        self._restore(t, metas[t], existed[t])
                explained = self._explain(exc, df, cols, topic_expr, metas, now)
                if explained is None:
                    raise
                raise explained from exc
            finally:
                # this delivery's staged files: published (moved) or never to be
                shutil.rmtree(staging_dir(self.root, writer, todo, batch_id, run_id), ignore_errors=True)
            self.last_results = results

    # ------------------------------------------------------------------ driver steps
    @contextlib.contextmanager
    def _locked(self, topics):
        locks = [FileLock(lock_path(self.root, f"{t}.writer"), what=f"topic {t} (sink writer)")
                 for t in sorted(set(topics))]
        try:
            for lock in locks:                       # sorted order: two sinks never deadlock
                lock.acquire(self.lock_timeout)
            yield
        finally:
            for lock in reversed(locks):
                lock.release()

    def _committed(self, topic: str, writer: str, batch_id: int) -> bool:
        last = CommitLog(self.root, topic).last_batch(writer)
        return last is not None and last >= batch_id

    def _all_committed(self, topics, writer, batch_id) -> bool:
        return all(self._committed(t, writer, batch_id) for t in topics)

    def _topic(self, topic: str, *, created: list[str]) -> TopicMetadata:
        """A topic the sink writes by name: created with the sink's partitions= and config=, or,
        existing, checked against them (an existing topic keeps its own; a different request is an error)."""
        meta = load_topic(self.root, topic)
        if meta is not None:
            if self.partitions is not None or self.config is not None:
                create_topic(self.root, topic, self.partitions or meta.partitions,
                             self.config if self.config is not None else meta.config)
            return meta
        if self.partitions is None:
            raise SinkInputError(f"topic {topic!r} does not exist under {self.root}; pass partitions= (and "
                                 f"config=) to the sink to create it")
        meta = create_topic(self.root, topic, self.partitions, self.config)
        created.append(topic)
        return meta

    def _quarantine_topic(self, topic: str, partitions: int, *, created: list[str]) -> TopicMetadata:
        """A quarantine topic: used as it is when it exists (the sink's partitions= and config= are
        the main topic's, not its own: checking them against it would refuse every later batch),
        else created with the main topic's partition count and the default configuration."""
        meta = load_topic(self.root, topic)
        if meta is None:
            meta = create_topic(self.root, topic, partitions)
            created.append(topic)
        return meta

    def _stats(self, df, topic_expr: str) -> dict:
        """Rows per topic, for a batch whose rows pick their topic (one JVM aggregate)."""
        from pyspark.sql import functions as F

        rows = df.groupBy(F.expr(topic_expr).alias("_t")).agg(F.count(F.lit(1)).alias("rows")).collect()
        return {r["_t"]: r["rows"] for r in rows}

    @staticmethod
    def _quarantine_targets(cols: InputColumns, metas) -> dict[str, str]:
        """{topic: quarantine topic} for topics whose out-of-range CreateTime rows are rerouted."""
        out = {}
        for t, meta in metas.items():
            cfg = meta.topic_config()
            bounded = min(cfg["message.timestamp.before.max.ms"], cfg["message.timestamp.after.max.ms"]) < INT64_MAX
            if (cols.has_timestamp and not cfg.log_append_time and bounded
                    and cfg["message.timestamp.out.of.range.policy"] == "quarantine"):
                out[t] = validate_topic(cfg["quarantine.topic"])
        return out

    def _explain(self, exc: BaseException, df, cols: InputColumns, topic_expr: str, metas, now: int):
        """A failed write job as the typed error the user needs, naming the record; None to re-raise
        as is. The checks run inside the one write pass (no extra pass over every batch); only a
        refused batch pays for a query that finds the offending record."""
        text = str(exc)
        if "seglog: partition out of range:" in text:
            detail = text[text.index("seglog: partition out of range:") + 32:].split("\n")[0]
            return SinkInputError(detail.split(" SQLSTATE")[0].strip())
        show_key = "key" if cols.has_key else "NULL AS key"

        def first(topic: str, where: str, value: str):
            """The first row of `topic` that breaks the rule `where`: (key, offending value)."""
            return df.where(f"{topic_expr} = {_sql_str(topic)} AND {where}").selectExpr(show_key, f"{value} AS v").first()

        if "RecordTooLargeError" in text:
            size_sql = _record_batch_size_sql(cols)
            for t, meta in metas.items():
                limit = meta.topic_config()["max.message.bytes"]
                row = first(t, f"{size_sql} > {limit}", size_sql)
                if row is not None:
                    return RecordTooLargeError(
                        f"topic {t!r}: a record (key {_show(row['key'])}) encodes to a batch of {row['v']} "
                        f"bytes, more than max.message.bytes={limit}; nothing was written")
        if "TimestampOutOfRangeError" in text and cols.has_timestamp:
            ts = f"unix_millis({EVENT_TIME})"
            for t, meta in metas.items():
                cfg = meta.topic_config()
                row = first(t, _out_of_range_sql(ts, now, cfg), ts)
                if row is not None:
                    key = "message.timestamp.before.max.ms" if row["v"] < now else "message.timestamp.after.max.ms"
                    return TimestampOutOfRangeError(
                        f"topic {t!r}: a record (key {_show(row['key'])}) has timestamp {row['v']}, "
                        f"{row['v'] - now} ms from now ({now}); {key}={cfg[key]}; "
                        f"the batch was refused whole, nothing was written")
        for name, kind in (("RecordTooLargeError", RecordTooLargeError),
                           ("TimestampOutOfRangeError", TimestampOutOfRangeError),
                           ("InvalidRecordError", InvalidRecordError)):
            if name + ":" in text:
                detail = text[text.index(name + ":") + len(name) + 1:].split("\n")[0].strip()
                return kind(f"{detail}; the batch was refused, nothing was written")
        return None

    def _roll_back(self, topic: str, meta: TopicMetadata) -> None:
        """Truncate every partition whose log end is past its committed end (a crashed delivery)."""
        from seglog.indexer.committed_end import roll_back_to_committed
        from seglog.indexer.log import Log

        ends = CommitLog(self.root, topic).end_offsets()
        for p in range(meta.partitions):
            path = Path(self.root) / partition_dir_name(topic, p)
            if not path.is_dir():
                continue
            committed = ends.get(p, 0)
            try:   # a look without the lock first: most partitions have nothing to cut
                with Log.open(path, meta.config, readonly=True) as ro:
                    if ro.log_end_offset <= committed:
                        continue
            except SegmentDeletedError:
                # The look raced a swap of the sidecar's, or a killed sidecar left one (a .log.swap):
                # the writable open below finishes it under the partition's lock, then decides.
                pass
            with Log.open(path, meta.config, lock_timeout=self.lock_timeout) as log:
                roll_back_to_committed(log, committed, flush=True)

    def _restore(self, topic: str, meta: TopicMetadata, existed: set[int]) -> None:
        """After a failed or refused write: every partition back to its committed end, its files as
        they were. Tasks killed mid-write leave preallocated indexes (a clean close trims them),
        segments rolled during the batch (their `.deleted` files held only uncommitted records, so
        no reader has them open: unlinked now), and folders of partitions this batch created."""
        from seglog.indexer.committed_end import roll_back_to_committed
        from seglog.indexer.log import Log
        from seglog.indexer.names import DELETED_SUFFIX, parse_segment_file

        ends = CommitLog(self.root, topic).end_offsets()
        for p in range(meta.partitions):
            path = Path(self.root) / partition_dir_name(topic, p)
            if not path.is_dir():
                continue
            committed = ends.get(p, 0)
            with Log.open(path, meta.config, lock_timeout=self.lock_timeout) as log:
                roll_back_to_committed(log, committed)
                empty = log.log_end_offset == 0
            for name in os.listdir(path):
                parsed = parse_segment_file(name)
                if parsed and parsed[2] == DELETED_SUFFIX and parsed[0] >= committed:
                    os.unlink(path / name)
            if p not in existed and empty and committed == 0:
                shutil.rmtree(path, ignore_errors=True)

    @staticmethod
    def _routed_topic_sql(topic_expr: str, metas, quarantine: dict[str, str], now: int) -> str:
        """SQL: each row's topic after quarantine routing (the one home of that rule: the write and
        the keyless check both use it)."""
        t_expr = topic_expr
        for t, q in quarantine.items():
            out_of_range = _out_of_range_sql(f"unix_millis({EVENT_TIME})", now, metas[t].topic_config())
            t_expr = (f"(CASE WHEN {topic_expr} = {_sql_str(t)} AND timestamp IS NOT NULL AND {out_of_range} "
                      f"THEN {_sql_str(q)} ELSE {t_expr} END)")
        return t_expr

    def _slot_sql(self, cols, topic_expr, metas, todo, quarantine, now):
        """SQL for each row's topic (after quarantine routing), its topic's partition count, the slot base
        of its topic (NULL if that topic is not written in this delivery), and the slots (topic, p)."""
        slots, base = [], {}
        for t in todo:
            base[t] = len(slots)
            slots += [(t, p) for p in range(metas[t].partitions)]
        t_expr = self._routed_topic_sql(topic_expr, metas, quarantine, now)
        n_expr = "(CASE _t " + " ".join(f"WHEN {_sql_str(t)} THEN {metas[t].partitions}" for t in metas) + " END)"
        base_expr = "(CASE _t " + " ".join(f"WHEN {_sql_str(t)} THEN {base[t]}" for t in todo) + " END)"
        return t_expr, n_expr, base_expr, slots

    def _write(self, df, cols, topic_expr, metas, todo, quarantine, writer, batch_id, run_id, now) -> list[dict]:
        t_expr, n_expr, base_expr, slots = self._slot_sql(cols, topic_expr, metas, todo, quarantine, now)
        staged = df.selectExpr("*", f"{t_expr} AS _t")
        # Null keys: spread by a hash of the value. Deterministic (unlike Kafka's sticky partitioner) so
        # that a retried task or a rerun stage sends every row to the same partition.
        spread_cols = "value, timestamp" if cols.has_timestamp else "value"
        spread = f"CAST(pmod(xxhash64({spread_cols}), {n_expr}) AS INT)"
        key_bin = "CAST(key AS BINARY)" if cols.key_is_string else "key"
        if cols.has_key and self.jvm_partitioner is False:
            # the Python reference partitioner (sink.partitioner), one extra pass
            staged = _python_key_partitions(staged.selectExpr("*", f"{n_expr} AS _n"), cols)
            p_expr = f"coalesce(_kp, {spread})"
        elif cols.has_key:
            # NULL for a keyed row: the JVM writer takes Kafka's murmur2 partition of its key
            # (io.seglog.spark.write.Murmur2Partition, kafka-clients' own function)
            p_expr = f"(CASE WHEN key IS NULL THEN {spread} END)"
        else:
            p_expr = spread
        if cols.has_partition:
            # Range-checked in the same pass: a row out of range fails the job before its task
            # writes, and the driver rolls every partition back (see _explain for the message).
            p_expr = (f"(CASE WHEN partition IS NULL THEN {p_expr} "
                      f"WHEN partition < 0 OR partition >= {n_expr} THEN raise_error(concat("
                      f"'seglog: partition out of range: topic ', _t, ' has ', CAST({n_expr} AS STRING), "
                      f"' partitions (0 to ', CAST({n_expr} - 1 AS STRING), '); the batch has a row with partition ', "
                      f"CAST(partition AS STRING), '; nothing was written')) "
                      f"ELSE CAST(partition AS INT) END)")
        # The JVM writer's columns (sink/jvm_write.py, STAGED_COLUMNS); one rule for every use of the
        # timestamp column (a TimestampNTZ value is a wall time in the session time zone, as Spark's CAST says).
        staged = staged.selectExpr(
            f"{base_expr} AS _base", f"{n_expr} AS _n", f"{p_expr} AS _p",
            f"{key_bin} AS key" if cols.has_key else "CAST(NULL AS BINARY) AS key",
            "CAST(value AS BINARY) AS value",
            f"unix_micros({EVENT_TIME}) AS ts" if cols.has_timestamp else "CAST(NULL AS BIGINT) AS ts",
            "headers" if cols.has_headers else
            "CAST(NULL AS ARRAY<STRUCT<key: STRING, value: BINARY>>) AS headers").where("_base IS NOT NULL")
        if self.tasks:
            staged = staged.repartition(self.tasks)
        else:
            # At most one write task per core (docs/internals.md, "jvm/"): input partitions beyond the
            # cores are grouped into tasks, with no shuffle (a coalesce never adds tasks). Each task
            # writes one staged segment per log partition, so fewer tasks mean fewer, larger segments
            # (renamed in rather than copied by the driver) and no second wave of tasks waiting on
            # the disk. spark.default.parallelism sets the count (defaultParallelism returns it).
            staged = staged.coalesce(max(1, df.sparkSession.sparkContext.defaultParallelism))
        configs = {t: metas[t].topic_config() for t in todo}
        # Out-of-range rows of a quarantined topic were rerouted in SQL against the driver's `now`:
        # the tasks must not refuse a borderline row that the routing kept.
        slot_configs = [stage_config(configs[t], unbounded_time=t in quarantine) for t, _ in slots]
        staging = staging_dir(self.root, writer, todo, batch_id, run_id)
        t0 = time.perf_counter()
        reports = run_staged_write(staged, staging, slot_configs, now, self.rename_min_bytes)
        self.last_timings["stage_job_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        def publish_one(slot: int, segments) -> dict:
            t, p = slots[slot]
            with Log.open(Path(self.root) / partition_dir_name(t, p), configs[t],
                          lock_timeout=self.lock_timeout) as log:
                start = log.log_end_offset
                adopted = publish(log, segments, rename_min_bytes=self.rename_min_bytes)
                log.flush()   # durable before the commit makes it visible
                end = log.log_end_offset
            return {"topic": t, "partition": p, "start": start, "end": end,
                    "records": sum(s.records for s in segments), "bytes": sum(s.size for s in segments),
                    "adopted": adopted,   # staged segments renamed in (the rest were copied)
                    "tasks": sum(1 for r in reports for o in r["outputs"] if o["slot"] == slot)}

        # Partitions are independent (each its own Log and lock): published in parallel threads,
        # whose time is mostly fsyncs and renames (the GIL is released there).
        by_slot = sorted(staged_by_slot(reports).items())
        with ThreadPoolExecutor(max_workers=max(1, min(PUBLISH_THREADS, len(by_slot)))) as pool:
            results = list(pool.map(lambda item: publish_one(*item), by_slot))
        self.last_timings["publish_s"] = time.perf_counter() - t0
        self.last_task_rows = [sum(o["records"] for o in r["outputs"]) for r in reports]
        return results

    def _commit(self, todo, metas, results, writer, batch_id) -> None:
        for t in todo:
            ends = {r["partition"]: r["end"] for r in results if r["topic"] == t}
            locks = [partition_lock(Path(self.root) / partition_dir_name(t, p)) for p in sorted(ends)]
            try:
                for lock in locks:   # a late task attempt cannot run between its check and this commit
                    lock.acquire(self.lock_timeout)
                CommitLog(self.root, t).commit(writer, batch_id, ends)
            finally:
                for lock in reversed(locks):
                    lock.release()


def _refuse_keyless(df, cols: InputColumns, routed_expr: str, metas) -> None:
    """A compacted topic takes only keyed records, as Kafka (docs/spec.md §3.9): refused before
    anything is written, at the cost of one query, and only for batches that write such a topic.
    `routed_expr` is each row's topic after quarantine routing: a row is judged where it lands."""
    compacted = [t for t, meta in metas.items() if meta.topic_config().compacted]
    if not compacted:
        return
    names = ", ".join(_sql_str(t) for t in compacted)
    null_key = "key IS NULL" if cols.has_key else "TRUE"
    row = df.where(f"{null_key} AND {routed_expr} IN ({names})").selectExpr(f"{routed_expr} AS t").first()
    if row is None:
        return
    if not cols.has_key:
        raise MissingKeyError(f"topic {row['t']!r} is compacted (cleanup.policy holds 'compact'): every record "
                              f"needs a key and the DataFrame has no 'key' column; nothing was written")
    raise MissingKeyError(f"topic {row['t']!r} is compacted (cleanup.policy holds 'compact'): a record has a "
                          f"null key; every record needs a key; nothing was written")


def _show(key) -> str:
    if key is None:
        return "null"
    b = bytes(key) if not isinstance(key, str) else key.encode()
    return repr(b[:40]) + ("..." if len(b) > 40 else "")


def _python_key_partitions(df, cols: InputColumns):
    """Fallback without javac: a first Python pass that computes `_kp` (murmur2 partition or null)."""
    from seglog.sink.partitioner import KeyPartitionPass

    from pyspark.sql.types import IntegerType, StructField, StructType

    schema = StructType(list(df.schema.fields) + [StructField("_kp", IntegerType())])
    return df.mapInArrow(KeyPartitionPass(), schema)


def _out_of_range_sql(ts_sql: str, now: int, cfg) -> str:
    """SQL: the CreateTime `ts_sql` is further in the past than message.timestamp.before.max.ms or
    further in the future than message.timestamp.after.max.ms (KIP-937; Log._append's rule)."""
    return (f"(({now} - {ts_sql}) > {cfg['message.timestamp.before.max.ms']} OR "
            f"({ts_sql} - {now}) > {cfg['message.timestamp.after.max.ms']})")
