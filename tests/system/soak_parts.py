"""Parts of the system soak (tests/system/test_soak.py): the child processes' code (run as
``python soak_parts.py writer|stream|available-now ...``), a restartable child process, the input
generator and its ledger, and the readers and bookkeeping the checks use.

The children start their own light local Spark (local[1], 1 GB, no UI) and print one line per
micro-batch (``batch N``) or per AvailableNow run (``run N``): the parent's measure of progress."""
from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCE_TOPICS = ("events", "quarantine")            # what the consumers read (delete policy, retention)
FILE_RE = re.compile(r"part-(\d{6})\.json$")
INPUT_SCHEMA = "id long, t string, k string, v string, ts long"
DAY_MS = 86_400_000


def now_ms() -> int:
    return time.time_ns() // 1_000_000


# ------------------------------------------------------------------------------------------------ children
def _session(name: str):
    from seglog.sink.session import local_session

    spark = local_session(name, cores=1, driver_memory="1g",
                          jvm_options="-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
                          extra_conf={"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false",
                                      # keep every checkpoint file: the parent maps batches to input files
                                      "spark.sql.streaming.minBatchesToRetain": "1000000",
                                      "spark.sql.streaming.fileSource.log.deletion": "false"})
    jvm = spark.sparkContext._jvm
    # the reader's data-loss warnings (failOnDataLoss=false) reach stderr, where the parent counts them
    jvm.org.apache.logging.log4j.core.config.Configurator.setLevel("io.seglog", jvm.org.apache.logging.log4j.Level.WARN)
    return spark


def _wait(q, stop: Path) -> None:
    """Until `stop` exists; raises at once if the query fails (awaitTermination re-raises its error)."""
    while not stop.exists():
        q.awaitTermination(0.5)
        if not q.isActive:
            q.awaitTermination()        # raises the query's exception, if any
            raise RuntimeError(f"query {q.name} stopped on its own")


def writer_main(src: str, root: str, ckpt: str, stop: str) -> None:
    """The writing query: JSON files (maxFilesPerTrigger=1) -> one sink, each row picking its topic
    (events keyed and keyless, out-of-range timestamps quarantined, compacted keyed with tombstones);
    the record id rides in a header."""
    from seglog.sink import SegmentLogSink

    spark = _session("soak-writer")
    stream = (spark.readStream.schema(INPUT_SCHEMA).option("maxFilesPerTrigger", 1).json(src)
              .selectExpr("t AS topic", "CAST(k AS BINARY) AS key", "CAST(v AS BINARY) AS value",
                          "timestamp_millis(ts) AS timestamp",
                          "array(named_struct('key', 'id', 'value', CAST(CAST(id AS STRING) AS BINARY))) AS headers"))
    sink = SegmentLogSink(root, lock_timeout=300)

    def each(df, batch_id):
        sink(df, batch_id)
        print(f"batch {batch_id}", flush=True)

    q = (stream.writeStream.foreachBatch(each).option("checkpointLocation", ckpt).queryName("soak_writer")
         .trigger(processingTime="300 milliseconds").start())
    print(f"query {q.id}", flush=True)
    _wait(q, Path(stop))
    q.processAllAvailable()
    q.stop()
    print("DONE", flush=True)


def _consumer_stream(spark, root: str, **options):
    import seglog.source

    seglog.source.register(spark)
    reader = (spark.readStream.format("seglog").option("topic", ",".join(SOURCE_TOPICS))
              .option("startingOffsets", "earliest").option("failOnDataLoss", "false").option("includeHeaders", "true"))
    for k, v in options.items():
        reader = reader.option(k, v)
    # what was read, where it came from (topic/partition/offset/timestamp) in a header, into the same
    # partition number of the consumer's own topic
    return reader.load(root).selectExpr(
        "key", "value", "partition",
        "concat(array(named_struct('key', 'src', 'value', CAST(concat_ws('/', topic, CAST(partition AS STRING), "
        "CAST(offset AS STRING), CAST(unix_millis(timestamp) AS STRING)) AS BINARY))), "
        "coalesce(headers, array())) AS headers")


def stream_main(root: str, ckpt: str, out_topic: str, stop: str, max_offsets: str) -> None:
    """Consumer B: processing-time trigger, maxOffsetsPerTrigger."""
    from seglog.sink import SegmentLogSink

    spark = _session("soak-stream-consumer")
    sink = SegmentLogSink(root, topic=out_topic, lock_timeout=300)

    def each(df, batch_id):
        sink(df, batch_id)
        print(f"batch {batch_id}", flush=True)

    q = (_consumer_stream(spark, root, maxOffsetsPerTrigger=max_offsets).writeStream.foreachBatch(each)
         .option("checkpointLocation", ckpt).queryName(out_topic).trigger(processingTime="1 second").start())
    _wait(q, Path(stop))
    q.processAllAvailable()
    q.stop()
    print("DONE", flush=True)


def _log_starts(root: str, topic: str, partitions: int) -> dict[int, int]:
    from seglog.indexer.log import Log

    out = {}
    for p in range(partitions):
        path = Path(root) / f"{topic}-{p}"
        if path.is_dir():
            with Log.open(path, readonly=True) as log:
                out[p] = log.log_start_offset
        else:
            out[p] = 0
    return out


def available_now_main(root: str, ckpt: str, out_topic: str, final: str, replays: str, t_lo: str,
                       period: str, seed: str) -> None:
    """Consumer A: Trigger.AvailableNow, started again every `period` s; after each run a batch replay
    of `events` from a random timestamp, written to `replays/` for the parent to check. Once `final`
    exists, one more run (started after the writer finished), then exit."""
    from seglog.indexer.commit_log import CommitLog
    from seglog.sink import SegmentLogSink

    spark = _session("soak-available-now")
    sink = SegmentLogSink(root, topic=out_topic, lock_timeout=300)
    rng = random.Random(int(seed))
    stream = _consumer_stream(spark, root)

    def each(df, batch_id):
        sink(df, batch_id)
        print(f"batch {batch_id}", flush=True)

    run = 0
    while True:
        last = Path(final).exists()
        q = (stream.writeStream.foreachBatch(each).option("checkpointLocation", ckpt).queryName(out_topic)
             .trigger(availableNow=True).start())
        q.awaitTermination()
        print(f"run {run}", flush=True)
        # a replay from a random timestamp of the last 25 s (retention keeps at most 15 s)
        ts = rng.randint(max(int(t_lo), now_ms() - 25_000), now_ms())
        ends = CommitLog(root, "events").end_offsets()
        before = _log_starts(root, "events", 3)
        rows = (spark.read.format("seglog").option("topic", "events").option("startingTimestamp", ts)
                .option("startingOffsetsByTimestampStrategy", "latest").option("failOnDataLoss", "false")
                .option("includeHeaders", "true").load(root)
                .selectExpr("partition", "offset", "unix_millis(timestamp) AS ts",
                            "CAST(filter(headers, h -> h.key = 'id')[0].value AS STRING) AS id").collect())
        after = _log_starts(root, "events", 3)
        doc = {"ts": ts, "ends": ends, "starts_before": before, "starts_after": after,
               "rows": [[r["partition"], r["offset"], r["ts"], int(r["id"])] for r in rows]}
        tmp = Path(replays) / f".{os.getpid()}-{run}.tmp"
        tmp.write_text(json.dumps(doc))
        tmp.rename(Path(replays) / f"replay-{os.getpid()}-{run:05d}.json")
        print(f"replay {run} {len(rows)}", flush=True)
        run += 1
        if last:
            break
        deadline = time.monotonic() + float(period)
        while time.monotonic() < deadline and not Path(final).exists():
            time.sleep(0.2)
    print("DONE", flush=True)


# ------------------------------------------------------------------------------------------------ parent side
class Child:
    """A child process in its own process group (Spark's JVM and workers with it), restartable: stdout
    lines are pumped into `lines` (`progress` counts `batch`/`run` lines since the last start), stderr
    goes to one file per run. `kill()` SIGKILLs the group; any other exit before `stopping` is set is
    a failure, reported by `check()` with the stderr tail."""

    def __init__(self, name: str, argv: list[str], logs: Path, env: dict | None = None):
        self.name, self.argv, self.logs, self.env = name, argv, logs, env
        self.proc: subprocess.Popen | None = None
        self.runs: list[Path] = []
        self.lines: list[str] = []
        self.kills = 0
        self.progress = 0
        self.batches = 0
        self.started_at = 0.0
        self.stopping = False
        self._pump: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        err = self.logs / f"{self.name}-{len(self.runs)}.err"
        self.runs.append(err)
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYTHONUNBUFFERED="1", **(self.env or {}))
        with open(err, "wb") as errf:
            self.proc = subprocess.Popen(self.argv, cwd=REPO, stdout=subprocess.PIPE, stderr=errf,
                                         stdin=subprocess.DEVNULL, start_new_session=True, env=env, text=True)
        self.progress = 0
        self.started_at = time.monotonic()
        self._pump = threading.Thread(target=self._read, args=(self.proc,), daemon=True)
        self._pump.start()

    def _read(self, proc) -> None:
        for line in proc.stdout:
            line = line.strip()
            with self._lock:
                self.lines.append(line)
                if line.startswith(("batch ", "run ")):
                    self.progress += 1
                if line.startswith("batch "):
                    self.batches += 1
        proc.stdout.close()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the whole group, wait for it, count it."""
        assert self.alive(), f"{self.name} is not running"
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        if self._pump is not None:
            self._pump.join(10)
        self.kills += 1

    def restart_after_kill(self) -> None:
        self.kill()
        self.start()

    def stderr_tail(self, chars: int = 4000) -> str:
        return self.runs[-1].read_text(errors="replace")[-chars:] if self.runs else ""

    def check(self) -> None:
        """An exit we did not cause (a kill) or ask for (`stopping` and exit 0) fails the test."""
        if self.proc is None or self.proc.poll() is None:
            return
        rc = self.proc.returncode
        if self.stopping and rc == 0:
            return
        raise AssertionError(f"{self.name} exited {rc} without being killed (run {len(self.runs) - 1}); "
                             f"stdout tail: {self.lines[-5:]}\nstderr tail:\n{self.stderr_tail()}")

    def wait_stopped(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.alive():
            time.sleep(0.2)
        if self.alive():
            raise AssertionError(f"{self.name} did not stop within {timeout:.0f} s; stdout tail: {self.lines[-5:]}\n"
                                 f"stderr tail:\n{self.stderr_tail()}")
        self.check()
        if self._pump is not None:
            self._pump.join(10)
        assert self.lines and self.lines[-1] == "DONE", f"{self.name}: {self.lines[-5:]}"

    def cleanup(self) -> None:
        """finally: no process left behind."""
        if self.alive():
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(30)

    def stderr_lines(self, needle: str) -> list[str]:
        out = []
        for path in self.runs:
            out += [line for line in path.read_text(errors="replace").splitlines() if needle in line]
        return out


class Ledger:
    """Every record generated: id -> (topic it must land in, key, value, ts); file index -> ids."""

    def __init__(self):
        self.lock = threading.Lock()
        self.records: dict[int, tuple[str, bytes | None, bytes | None, int]] = {}
        self.file_ids: dict[int, list[int]] = {}
        self._file_of: dict[int, int] = {}

    def files(self) -> int:
        with self.lock:
            return len(self.file_ids)

    def file_of(self, rid: int) -> int:
        with self.lock:
            if len(self._file_of) < len(self.records):
                self._file_of = {i: f for f, ids in self.file_ids.items() for i in ids}
            return self._file_of[rid]


class Generator:
    """Drops JSON files into `src` (atomic rename, increasing mtimes), each a mix of records:
    `events` keyed and keyless, a few with timestamps out of `events`' range (days in the past or
    future: quarantined), `compacted` keyed with values `key=seq#id` and some tombstones. A new file
    when the writer has fewer than `backlog` files to do, at most one per `gap` seconds. The `events`
    traffic alternates every `phase` seconds between bursts (size retention's turn) and a trickle
    (time retention's)."""

    def __init__(self, src: Path, ledger: Ledger, committed_files, seed: int, backlog: int = 2, gap: float = 0.8,
                 phase: float = 15.0):
        self.src, self.ledger, self.committed_files = src, ledger, committed_files
        self.rng = random.Random(seed)
        self.backlog, self.gap, self.phase = backlog, gap, phase
        self.t0 = time.monotonic()
        self.next_id = 0
        self.seq: dict[bytes, int] = defaultdict(int)
        self.stop = threading.Event()
        self.errors: list[str] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _record(self, topic_in: str, topic_out: str, key: str | None, value: str | None, ts: int) -> dict:
        i = self.next_id
        self.next_id += 1
        self.ledger.records[i] = (topic_out, None if key is None else key.encode(),
                                  None if value is None else value.encode(), ts)
        return {"id": i, "t": topic_in, "k": key, "v": value, "ts": ts}

    def write_file(self) -> None:
        rng, index = self.rng, self.ledger.files()
        rows = []
        with self.ledger.lock:
            first = self.next_id
            burst = int((time.monotonic() - self.t0) / self.phase) % 2 == 0
            for j in range(150 if burst else 12):
                ts = now_ms()
                key = f"u{rng.randrange(50)}" if j % 2 == 0 else None
                if j % 15 == 7:       # out of range: quarantined
                    ts += (-1 if j % 30 == 7 else 1) * (2 * DAY_MS + rng.randrange(DAY_MS))
                    topic_out = "quarantine"
                else:
                    topic_out = "events"
                rows.append(self._record("events", topic_out, key, f"e{self.next_id}:" + "x" * rng.randrange(10, 120),
                                         ts))
            for n in rng.sample(range(48), 36):
                key = f"c{n:02d}".encode()
                self.seq[key] += 1
                value = None if rng.random() < 0.08 else f"{key.decode()}={self.seq[key]}#{self.next_id}" + "y" * 40
                rows.append(self._record("compacted", "compacted", key.decode(), value, now_ms()))
            self.ledger.file_ids[index] = list(range(first, self.next_id))
        tmp = self.src / f".part-{index:06d}.tmp"
        tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
        os.utime(tmp, (1_700_000_000 + index, 1_700_000_000 + index))   # the file source orders by mtime
        tmp.rename(self.src / f"part-{index:06d}.json")

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                if self.ledger.files() - self.committed_files() >= self.backlog:
                    self.stop.wait(0.1)
                    continue
                self.write_file()
                self.stop.wait(self.gap)
        except BaseException as exc:  # noqa: BLE001 (reported by the test)
            import traceback
            self.errors.append("generator: " + "".join(traceback.format_exception(exc))[-3000:])


class WriterBatches:
    """Which input files each writer micro-batch read, from its checkpoint: the query's offset log
    (`offsets/<b>`, last line: the file source's log offset at the batch's end) and the file source's
    log (`sources/0/<n>`, or `<n>.compact` holding every entry up to n). A batch may read more than one
    file: after a kill, Spark plans the files its killed run had logged together with new ones. The
    children keep every checkpoint file (no cleanup), so old batches can always be looked up."""

    def __init__(self, ckpt: Path):
        self.ckpt = ckpt
        self._log_offset: dict[int, int] = {-1: -1}
        self._source: dict[int, list[int]] = {}
        self._files: dict[int, list[int]] = {}

    def log_offset(self, batch: int) -> int:
        if batch not in self._log_offset:
            lines = (self.ckpt / "offsets" / str(batch)).read_text().splitlines()
            self._log_offset[batch] = int(json.loads(lines[-1])["logOffset"])
        return self._log_offset[batch]

    def source_files(self, sb: int) -> list[int]:
        if sb not in self._source:
            folder = self.ckpt / "sources" / "0"
            names = [str(sb), f"{sb}.compact"]
            path = next((folder / n for n in names if (folder / n).exists()), None)
            if path is None:
                raise AssertionError(f"the writer's file source log has no entry for its batch {sb}")
            found: dict[int, set[int]] = defaultdict(set)
            for line in path.read_text().splitlines()[1:]:
                if line.strip():
                    e = json.loads(line)
                    m = FILE_RE.search(e["path"])
                    assert m, e
                    found[int(e["batchId"])].add(int(m.group(1)))
            for b, files in found.items():
                self._source.setdefault(b, sorted(files))
        return self._source[sb]

    def files(self, batch: int) -> list[int]:
        """The input files of query batch `batch` (committed, so its offset log entry exists)."""
        if batch not in self._files:
            out = []
            for sb in range(self.log_offset(batch - 1) + 1, self.log_offset(batch) + 1):
                out += self.source_files(sb)
            assert out, f"writer batch {batch} read no file"
            self._files[batch] = out
        return self._files[batch]

    def files_through(self, batch: int | None) -> int:
        """How many files batches up to `batch` read (they read them in order: 0, 1, ...)."""
        if batch is None:
            return 0
        files = [f for b in range(batch + 1) for f in self.files(b)]
        assert files == list(range(len(files))), f"writer batches up to {batch} read files {files}"
        return len(files)


def read_partition(root: Path, topic: str, p: int, start: int, end: int, retries: int = 8):
    """Readonly `Log.read` of [start, end) as (offset, Record); records retention deleted under the
    reader (OffsetOutOfRangeError) are skipped: it reopens from the new log start. Returns (rows, log
    start seen last)."""
    from seglog.errors import OffsetOutOfRangeError
    from seglog.indexer.log import Log

    path = root / f"{topic}-{p}"
    rows = []
    if not path.is_dir() or start >= end:
        return rows, None
    pos = start
    for _ in range(retries):
        try:
            with Log.open(path, readonly=True) as log:
                ls = log.log_start_offset
                for r in log.read(max(pos, ls), end):
                    rows.append(r)
                    pos = r.offset + 1
            return rows, ls
        except OffsetOutOfRangeError:
            continue
    raise AssertionError(f"{topic}-{p}: {retries} reads in a row lost a segment under the reader")


def log_start(root: Path, topic: str, p: int) -> int:
    from seglog.indexer.log import Log

    path = root / f"{topic}-{p}"
    if not path.is_dir():
        return 0
    with Log.open(path, readonly=True) as log:
        return log.log_start_offset


def partition_state(root: Path, topic: str, p: int) -> tuple[int, int]:
    """(log start offset, bytes in its segments) of one partition, from a readonly open; opened again
    when retention deletes a segment under it (SegmentDeletedError, an OffsetOutOfRangeError)."""
    from seglog.errors import OffsetOutOfRangeError
    from seglog.indexer.log import Log

    path = root / f"{topic}-{p}"
    if not path.is_dir():
        return 0, 0
    for _ in range(8):
        try:
            with Log.open(path, readonly=True) as log:
                return log.log_start_offset, log.size_bytes()
        except OffsetOutOfRangeError:
            continue
    raise AssertionError(f"{topic}-{p}: eight opens in a row lost a segment under the reader")


def header(rec, name: str) -> bytes | None:
    for k, v in rec.headers:
        if k == name:
            return v
    return None


def sidecar_events(logs: list[Path], killed: list[bool]) -> list[dict]:
    """The sidecar's JSON-line events over all its runs. A line that does not parse is a failure,
    except the last of a run that was SIGKILLed (cut mid-write)."""
    out = []
    for path, was_killed in zip(logs, killed):
        lines = path.read_text(errors="replace").splitlines()
        for n, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except ValueError:
                if was_killed and n == len(lines) - 1:
                    continue
                raise AssertionError(f"{path}: line {n + 1} is not a JSON event: {line[:300]}")
    return out


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    {"writer": writer_main, "stream": stream_main, "available-now": available_now_main}[mode](*args)
