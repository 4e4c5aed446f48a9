"""The real process (docs/spec.md §4, 9, 11 "Reliability, in tests"): the sidecar as a subprocess with short
intervals, a real Structured Streaming query writing through SegmentLogSink into small segments with a
retention of a few seconds, and replay reads (the `seglog` source and readonly `Log.read` bounded by the
commit log) running over and over, all at once, for about a minute.

What must hold, in every read: no error (beyond the documented data-loss case, skipped with
failOnDataLoss=false), no duplicate offset, offsets strictly increasing per partition, nothing that was
not committed, and every committed record whose timestamp is newer than now - retention.ms (with a
margin) present: no lost unexpired record. Event timestamps are the wall clock when a record is
generated, so "unexpired" is decidable from the record alone. Sealing and retention must be seen to
happen, the probes answer 200 throughout, SIGTERM exits 0, and `seglog verify` is clean afterwards.

The ground truth: a background thread writes JSON files of records with unique ids; the foreachBatch
wrapper notes each micro-batch's input files (`df.inputFiles()`, no Spark job) before the sink commits
it, so a commit log state (writer -> last batch id) names exactly the ids that are committed.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from seglog.indexer.commit_log import CommitLog
from seglog.errors import OffsetOutOfRangeError
from seglog.indexer.log import Log
from tests.oracles.partitioner import partition_for_key
from seglog.sink.segment_log_sink import SegmentLogSink
from test_compactor_process import Sidecar, free_port, wait_until

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(480)]

REPO = Path(__file__).resolve().parents[2]
TOPIC, PARTITIONS = "soak", 3
RETENTION_MS = 20_000          # a few seconds, but well above a micro-batch's latency on a busy 2-core box
MARGIN_MS = 1_000                 # clock granularity, ms rounding, a retention pass in flight
SOAK_S = float(os.environ.get("SEGLOG_SOAK_SECONDS", "65"))
ROWS_PER_FILE = 90
TOPIC_CONFIG = {"segment.bytes": 4096, "segment.index.bytes": 1024, "index.interval.bytes": 256,
                "segment.ms": 4_000, "retention.ms": RETENTION_MS, "file.delete.delay.ms": 1_000}
FILE_RE = re.compile(r"part-(\d{6})\.json$")


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Ledger:
    """What was generated (id -> (key, value, ts)), which ids each file holds, which files each batch read."""

    def __init__(self):
        self.lock = threading.Lock()
        self.records: dict[int, tuple[bytes, bytes, int]] = {}
        self.file_ids: dict[int, range] = {}
        self.batch_files: dict[int, list[int]] = {}

    def committed_ids(self, batch_id: int | None) -> set[int]:
        with self.lock:
            out: set[int] = set()
            for b, files in self.batch_files.items():
                if batch_id is not None and b <= batch_id:
                    for f in files:
                        out.update(self.file_ids[f])
            return out


def generator(src: Path, ledger: Ledger, stop: threading.Event, backlog, errors: list) -> None:
    """A new file whenever the query has caught up (at most one every 0.6 s): records reach the log a
    batch's latency after their timestamp, well inside retention.ms."""
    index, next_id = 0, 0
    try:
        while not stop.is_set():
            if backlog(index) >= 1:
                stop.wait(0.1)
                continue
            ids = range(next_id, next_id + ROWS_PER_FILE)
            lines = []
            with ledger.lock:
                for i in ids:
                    ts = now_ms()
                    key, value = f"k{i:07d}".encode(), (f"v{i}-" * (3 + i % 5)).encode()
                    ledger.records[i] = (key, value, ts)
                    lines.append(json.dumps({"key": key.decode(), "value": value.decode(), "ts": ts}))
                ledger.file_ids[index] = ids
            tmp = src / f".part-{index:06d}.tmp"
            tmp.write_text("\n".join(lines) + "\n")
            tmp.rename(src / f"part-{index:06d}.json")   # atomic: the file source never sees half a file
            index, next_id = index + 1, next_id + ROWS_PER_FILE
            stop.wait(0.6)
    except BaseException as exc:  # noqa: BLE001 (reported by the test)
        errors.append(f"generator: {exc!r}")


def batch_input_files(ckpt: Path, batch_id: int) -> list[int]:
    """The files of one micro-batch, from the file source's own log in the checkpoint (written before
    the batch runs): `sources/0/<batch>` or, every few batches, `<batch>.compact` holding all so far."""
    folder = ckpt / "sources" / "0"
    for name in (str(batch_id), f"{batch_id}.compact"):
        path = folder / name
        if path.exists():
            entries = [json.loads(line) for line in path.read_text().splitlines()[1:] if line.strip()]
            return sorted(int(m.group(1)) for e in entries if e.get("batchId") == batch_id
                          for m in [FILE_RE.search(e["path"])] if m)
    return []


def id_of(key: bytes) -> int:
    return int(key[1:])


class Checker:
    def __init__(self, root: Path, ledger: Ledger, writer: callable):
        self.root, self.ledger, self.writer = root, ledger, writer
        self.reads: dict[str, int] = defaultdict(int)
        self.checked_present = 0       # unexpired committed records found present, over all reads
        self.data_loss_skips = 0

    def committed_batch(self) -> int | None:
        state = CommitLog(str(self.root), TOPIC).latest()
        return None if state is None else state.writers.get(self.writer())

    def check(self, what: str, rows: list[tuple[int, int, bytes, bytes, int]], before: int | None,
              after: int | None, t1: int, ts_from: int | None = None, ordered: bool = False) -> None:
        """rows: (partition, offset, key, value, ts) in the order read. `before`/`after`: the committed
        batch before the read started and after it ended; `t1`: when it ended."""
        with self.ledger.lock:
            self.reads[what] += 1
        if not ordered:
            rows = sorted(rows, key=lambda r: (r[0], r[1]))
        last: dict[int, int] = {}
        for p, off, *_ in rows:   # strictly increasing per partition: no duplicate, no step back
            assert off > last.get(p, -1), f"{what}: partition {p} offset {off} after {last.get(p)}"
            last[p] = off
        may = self.ledger.committed_ids(after)
        seen: set[int] = set()
        for p, off, key, value, ts in rows:
            i = id_of(key)
            assert i not in seen, f"{what}: record {i} read twice"
            seen.add(i)
            assert i in may, f"{what}: record {i} at {p}/{off} was never committed (batch {after})"
            with self.ledger.lock:
                want = self.ledger.records[i]
            assert (key, value, ts) == want, f"{what}: record {i} differs: {(key, value, ts)} != {want}"
            assert p == partition_for_key(key, PARTITIONS)
        must = [i for i in self.ledger.committed_ids(before)
                if self.ledger.records[i][2] > t1 - RETENTION_MS + MARGIN_MS
                and (ts_from is None or self.ledger.records[i][2] >= ts_from)]
        lost = sorted(set(must) - seen)
        assert not lost, (f"{what}: {len(lost)} committed, unexpired record(s) missing, e.g. ids {lost[:10]} "
                          f"ts {[self.ledger.records[i][2] for i in lost[:3]]}, read ended at {t1}")
        with self.ledger.lock:
            self.checked_present += len(must)


def spark_rows(df) -> list[tuple]:
    t = df.toArrow()
    ts = t.column("timestamp").cast(pa.int64()).to_pylist()
    return list(zip(t.column("partition").to_pylist(), t.column("offset").to_pylist(), t.column("key").to_pylist(),
                    t.column("value").to_pylist(), [us // 1000 for us in ts]))


def driver_rows(root: Path, checker: Checker) -> list[tuple]:
    """Readonly Log.read of every partition up to the committed end. A segment deleted by retention
    under the reader is the documented data-loss case: reopen and go on from the new log start."""
    ends = CommitLog(str(root), TOPIC).end_offsets()
    rows = []
    for p in range(PARTITIONS):
        path = root / f"{TOPIC}-{p}"
        if not path.is_dir():
            continue
        pos = None
        for attempt in range(6):
            try:
                with Log.open(path, readonly=True) as log:
                    start = log.log_start_offset if pos is None else max(pos, log.log_start_offset)
                    for r in log.read(start, ends.get(p, 0)):
                        rows.append((p, r.offset, r.key, r.value, r.timestamp))
                        pos = r.offset + 1
                break
            except OffsetOutOfRangeError:
                with checker.ledger.lock:
                    checker.data_loss_skips += 1
        else:
            raise AssertionError(f"{TOPIC}-{p}: six reads in a row lost a segment under the reader")
    return rows


def watcher(root: Path, side: Sidecar, stop: threading.Event, seen: dict, errors: list) -> None:
    """Every 100 ms: the probes answer 200, and whether a .deleted file exists (they live about
    file.delete.delay.ms, too short to catch between two Spark reads)."""
    try:
        while not stop.wait(0.1):
            for path in ("/healthz", "/readyz"):
                code, body = side.get(path)
                if code != 200:
                    errors.append(f"{path} answered {code}: {body}")
            seen["probes"] = seen.get("probes", 0) + 1
            seen.setdefault("deleted", set()).update(root.glob(f"{TOPIC}-*/*.deleted"))
    except BaseException as exc:  # noqa: BLE001 (reported by the test)
        errors.append(f"watcher: {exc!r}")


def driver_reader(root: Path, checker: Checker, stop: threading.Event, errors: list) -> None:
    """Readonly Log.read, bounded by the commit log, back to back on a thread of its own: these are
    cheap, so they race the sink's rolls and the sidecar's renames far more often than Spark reads."""
    try:
        while not stop.wait(0.25):
            before = checker.committed_batch()
            rows = driver_rows(root, checker)
            checker.check("Log.read (thread)", rows, before, checker.committed_batch(), now_ms(), ordered=True)
    except BaseException as exc:  # noqa: BLE001 (reported by the test)
        import traceback
        errors.append("driver reader: " + "".join(traceback.format_exception(exc))[-3000:])


def metric_total(side: Sidecar, name: str) -> float:
    value = side.metric(name)
    return 0.0 if value is None else value


def test_sidecar_sink_and_readers_under_load(spark, tmp_path):
    src, root, ckpt = tmp_path / "in", tmp_path / "log", tmp_path / "ckpt"
    src.mkdir()
    root.mkdir()
    port = free_port()
    config = tmp_path / "compactor.yaml"
    config.write_text(yaml.safe_dump({
        "root": str(root),
        "log": {"retention.ms": RETENTION_MS, "file.delete.delay.ms": 1_000},
        "schedule": {"seal.interval.ms": 300, "roll.interval.ms": 400, "retention.check.interval.ms": 400,
                     "delete.check.interval.ms": 300, "partition.lock.timeout.ms": 50,
                     "leader.retry.interval.ms": 200},
        "http": {"host": "127.0.0.1", "port": port},
    }))
    ledger = Ledger()
    query_id: list[str] = []
    sink = SegmentLogSink(str(root), topic=TOPIC, partitions=PARTITIONS, config=TOPIC_CONFIG, lock_timeout=60)

    def write_batch(df, batch_id):
        files = batch_input_files(ckpt, int(batch_id))
        assert files, f"batch {batch_id}: no input file found in the checkpoint's source log"
        with ledger.lock:   # noted before the sink commits: a committed batch always has its files here
            ledger.batch_files[int(batch_id)] = files
        sink(df, batch_id)

    checker = Checker(root, ledger, lambda: query_id[0] if query_id else None)

    def backlog(files_written: int) -> int:
        b = checker.committed_batch() if query_id else None
        with ledger.lock:
            done = sum(len(f) for k, f in ledger.batch_files.items() if b is not None and k <= b)
        return files_written - done

    stop = threading.Event()
    errors: list[str] = []
    gen_stop = threading.Event()
    gen = threading.Thread(target=generator, args=(src, ledger, gen_stop, backlog, errors), daemon=True)
    side = Sidecar(tmp_path, config, port)
    seen: dict = {}
    watch = threading.Thread(target=watcher, args=(root, side, stop, seen, errors), daemon=True)
    reader_stop = threading.Event()
    dreader = threading.Thread(target=driver_reader, args=(root, checker, reader_stop, errors), daemon=True)
    q = None
    seen_sealed = False
    try:
        side.wait_for("/readyz", 200, timeout=60)
        watch.start()
        gen.start()
        wait_until(lambda: any(src.glob("part-*.json")), timeout=30, what="the first input file")
        stream = (spark.readStream.schema("key string, value string, ts long").option("maxFilesPerTrigger", 1)
                  .json(str(src))
                  .selectExpr("CAST(key AS BINARY) AS key", "CAST(value AS BINARY) AS value",
                              "timestamp_millis(ts) AS timestamp"))
        q = (stream.writeStream.foreachBatch(write_batch).option("checkpointLocation", str(ckpt))
             .queryName("seglog_soak").start())
        query_id.append(str(q.id))
        wait_until(lambda: checker.committed_batch() is not None, timeout=120, what="the first committed batch")
        dreader.start()

        # At least SOAK_S of everything running at once, and at least two Spark reads of each kind
        # (on a busy 2-core box one can take 15 s), within a hard limit.
        deadline, hard_limit = time.monotonic() + SOAK_S, time.monotonic() + SOAK_S + 90
        kind = 0

        def spark_reads() -> int:
            return min(checker.reads["seglog earliest"], checker.reads["seglog startingTimestamp"])

        while time.monotonic() < hard_limit and (time.monotonic() < deadline or spark_reads() < 2):
            assert not errors, errors
            assert q.isActive, f"the streaming query died: {q.exception()}"
            assert side.get("/healthz")[0] == 200 and side.get("/readyz")[0] == 200
            before, t0 = checker.committed_batch(), now_ms()
            reader = spark.read.format("seglog").option("topic", TOPIC).option("failOnDataLoss", "false")
            if kind % 2 == 0:
                rows = spark_rows(reader.option("startingOffsets", "earliest").load(str(root)))
                checker.check("seglog earliest", rows, before, checker.committed_batch(), now_ms())
            else:
                ts_from = t0 - RETENTION_MS // 2
                rows = spark_rows(reader.option("startingTimestamp", ts_from)
                                  .option("startingOffsetsByTimestampStrategy", "latest").load(str(root)))
                checker.check("seglog startingTimestamp", rows, before, checker.committed_batch(), now_ms(),
                              ts_from=ts_from)
            kind += 1
            for p in range(PARTITIONS):
                path = root / f"{TOPIC}-{p}"
                if path.is_dir():
                    with Log.open(path, readonly=True) as log:
                        seen_sealed |= any(s.state == "sealed" for s in log.segments())
            time.sleep(0.2)

        # Drain: stop adding input, let the query catch up, stop it cleanly.
        gen_stop.set()
        gen.join(10)
        reader_stop.set()
        dreader.join(30)
        assert not errors, errors
        q.processAllAvailable()
        before = checker.committed_batch()
        checker.check("Log.read after drain", driver_rows(root, checker), before, before, now_ms(), ordered=True)
        q.stop()
        assert q.exception() is None

        # What the sidecar did, seen from outside.
        assert seen_sealed, "no segment was ever seen sealed"
        # The sink's rolls seal what they leave (docs/spec.md §2.4); the seal job has only crash
        # remnants to finish, and there were none: nothing was killed here.
        assert metric_total(side, "seglog_compactor_segments_sealed_total") == 0
        assert metric_total(side, "seglog_compactor_segments_deleted_total") > 0
        for job in ("recover", "roll", "seal", "retention", "purge"):
            assert side.metric("seglog_compactor_job_failures_total", job=job) == 0, side.logs()[-3000:]
        assert seen.get("deleted"), "no .deleted file was ever seen"
        for p in range(PARTITIONS):
            with Log.open(root / f"{TOPIC}-{p}", readonly=True) as log:
                assert log.log_start_offset > 0, f"{TOPIC}-{p}: retention never moved the log start"
        # Every .deleted file seen was unlinked after file.delete.delay.ms (purge runs every 300 ms).
        deleted = set(seen.get("deleted", ()))
        wait_until(lambda: not any(f.exists() for f in deleted), timeout=30, what="the .deleted files purged")
        stop.set()
        watch.join(10)
        assert not errors, errors
        assert seen["probes"] > 100
        assert side.get("/healthz")[0] == 200 and side.get("/readyz")[0] == 200
        assert spark_reads() >= 2, checker.reads
        assert checker.reads["Log.read (thread)"] >= 20, checker.reads
        assert checker.checked_present >= 500, checker.checked_present
        assert len(ledger.batch_files) >= 6
    finally:
        stop.set()
        gen_stop.set()
        reader_stop.set()
        if q is not None and q.isActive:
            q.stop()
        try:
            rc = side.stop(signal.SIGTERM, timeout=30)
        except subprocess.TimeoutExpired:
            side.proc.kill()
            side.proc.wait(10)
            raise AssertionError("the sidecar did not exit within 30 s of SIGTERM")
    assert rc == 0, side.logs()[-3000:]
    events = [json.loads(line)["event"] for line in side.logs().splitlines() if line.strip()]
    # No "segments.sealed": the sink's rolls seal what they leave (docs/spec.md §3.3).
    assert "segments.deleted" in events and "files.purged" in events and "segments.sealed" not in events
    assert events[-1] == "compactor.stopped"
    proc = subprocess.run([sys.executable, "-m", "seglog", "verify", str(root)], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    print(f"soak: {dict(checker.reads)} reads, {len(ledger.batch_files)} batches, {len(ledger.records)} records, "
          f"{checker.checked_present} unexpired records checked present, "
          f"{checker.data_loss_skips} data-loss skips in Log.read")
