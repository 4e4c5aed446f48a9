"""Parts of the system soak (tests/system/test_soak.py): the child processes' code (run as
``python soak_parts.py writer|stream|available-now ...``), a restartable child process, the input
generator and its ledger, and the readers and bookkeeping the checks use.

The children start their own light local Spark (local[1], 1 GB, no UI) and print one line per
micro-batch (``batch N``) or per AvailableNow run (``run N``): the parent's measure of progress. The
Connect client (``connect``) holds no JVM: its two queries run on a Spark Connect server child
(``connect_server_argv``), the foreachBatch function in that server's Python worker; it prints
``batch q:N`` from each query's progress."""
from __future__ import annotations

import json
import logging
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
CONNECT_TOPIC = "cC"                                # the two Connect queries' one topic
CONNECT_QUERIES = 2
FILE_RE = re.compile(r"part-(\d{6})\.json$")
REMOTE_ROWS: dict[str, int] = defaultdict(int)      # rows read_partition read from the remote tier, by topic

class _Counter(logging.Handler):
    """Counts the records logged to it (the product's warnings the summary shows)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


# remote reads the store sent again after the S3 client gave up on a transfer (indexer/remote/store.py `_transient`)
REMOTE_READS_RESENT = _Counter()
logging.getLogger("seglog.remote").addHandler(REMOTE_READS_RESENT)

INPUT_SCHEMA = "id long, t string, k string, v string, ts long"
DAY_MS = 86_400_000


def now_ms() -> int:
    return time.time_ns() // 1_000_000


# ------------------------------------------------------------------------------------------------ children
def _session(name: str, *, s3a: bool = False):
    """`s3a`: S3A's jars and the credentials of the environment (the loopback S3 server's), for a
    reader of `events`, whose older segments are on the remote tier (s3a://, read by the JVM reader)."""
    from seglog.sink.session import local_session

    extra = {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false",
             # keep every checkpoint file: the parent maps batches to input files
             "spark.sql.streaming.minBatchesToRetain": "1000000",
             "spark.sql.streaming.fileSource.log.deletion": "false"}
    if s3a:
        extra.update({"spark.hadoop.fs.s3a.access.key": os.environ["AWS_ACCESS_KEY_ID"],
                      "spark.hadoop.fs.s3a.secret.key": os.environ["AWS_SECRET_ACCESS_KEY"]})
    spark = local_session(name, cores=1, driver_memory="1g", with_s3a=s3a,
                          jvm_options="-XX:+UseSerialGC -XX:TieredStopAtLevel=1", extra_conf=extra)
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
    the record id rides in a header. Each micro-batch fans out on a thread pool: one sink call per
    topic group (events with its quarantine; compacted), each on a worker thread, where no local
    property of the query's thread is set: the sink finds the query from the DataFrame (issue 36 item
    13). The two groups commit to their own topics' commit logs, so a kill between the two commits
    leaves one topic a batch ahead: the restarted batch must skip that one and write the other."""
    from concurrent.futures import ThreadPoolExecutor

    from seglog.sink import SegmentLogSink

    import logging

    # the sink's warnings (a write tried again after the core finished a killed sidecar's swap) on this stderr,
    # where the parent pairs them with Spark's abort lines of the first attempt
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    spark = _session("soak-writer")
    stream = (spark.readStream.schema(INPUT_SCHEMA).option("maxFilesPerTrigger", 1).json(src)
              .selectExpr("t AS topic", "CAST(k AS BINARY) AS key", "CAST(v AS BINARY) AS value",
                          "timestamp_millis(ts) AS timestamp",
                          "array(named_struct('key', 'id', 'value', CAST(CAST(id AS STRING) AS BINARY))) AS headers"))
    # Two concurrent calls of one writer, both by the rows' topic column: they share one staging folder, and
    # each commit sweeps the other runs there whose lock is free (a killed driver's). A run folder is made and
    # locked under a dot-name before it is renamed into place (DriverCommit.startRun): swept between its mkdir
    # and its lock, a live run was once removed and its write failed.
    by_column = SegmentLogSink(root, lock_timeout=300)
    compacted = SegmentLogSink(root, lock_timeout=300)
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="soak-sink")

    def each(df, batch_id):
        calls = [pool.submit(compacted, df.where("topic = 'compacted'"), batch_id),
                 pool.submit(by_column, df.where("topic != 'compacted'"), batch_id)]
        for call in calls:
            try:
                call.result()       # re-raises a call's error here, failing the query
            except BaseException:
                # printed at once: a kill soon after would cut the query's own report (a 30-minute run once
                # logged a write's abort with no cause before its kill)
                import traceback
                traceback.print_exc(file=sys.stderr)
                sys.stderr.flush()
                raise
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
    """Consumer B: processing-time trigger, maxOffsetsPerTrigger; its sink called on a pool's thread."""
    from concurrent.futures import ThreadPoolExecutor

    from seglog.sink import SegmentLogSink

    spark = _session("soak-stream-consumer", s3a=True)
    sink = SegmentLogSink(root, topic=out_topic, lock_timeout=300)
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="soak-sink")

    def each(df, batch_id):
        pool.submit(sink, df, batch_id).result()
        print(f"batch {batch_id}", flush=True)

    q = (_consumer_stream(spark, root, maxOffsetsPerTrigger=max_offsets).writeStream.foreachBatch(each)
         .option("checkpointLocation", ckpt).queryName(out_topic).trigger(processingTime="1 second").start())
    _wait(q, Path(stop))
    q.processAllAvailable()
    q.stop()
    print("DONE", flush=True)


def _log_starts(root: str, topic: str, partitions: int) -> dict[int, int]:
    return {p: log_start(Path(root), topic, p) for p in range(partitions)}


def _local_starts(root: str, topic: str, partitions: int) -> dict[int, int]:
    """The local tier's start per partition (below it, a read goes to the remote tier)."""
    from seglog.indexer.log import Log

    out = {}
    for p in range(partitions):
        path, out[p] = Path(root) / f"{topic}-{p}", 0
        for _ in range(8):
            if not path.is_dir():
                break
            try:
                with Log.open(path, readonly=True) as log:
                    out[p] = log.log_start_offset
                break
            except _retried():
                continue
    return out


def available_now_main(root: str, ckpt: str, out_topic: str, final: str, replays: str, t_lo: str,
                       period: str, seed: str) -> None:
    """Consumer A: Trigger.AvailableNow, started again every `period` s; after each run a batch replay
    of `events` from a random timestamp, written to `replays/` for the parent to check. Once `final`
    exists, one more run (started after the writer finished), then exit."""
    from seglog.indexer.commit_log import CommitLog
    from seglog.sink import SegmentLogSink

    spark = _session("soak-available-now", s3a=True)
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
        local = _local_starts(root, "events", 3)
        rows = (spark.read.format("seglog").option("topic", "events").option("startingTimestamp", ts)
                .option("startingOffsetsByTimestampStrategy", "latest").option("failOnDataLoss", "false")
                .option("includeHeaders", "true").load(root)
                .selectExpr("partition", "offset", "unix_millis(timestamp) AS ts",
                            "CAST(filter(headers, h -> h.key = 'id')[0].value AS STRING) AS id").collect())
        after = _log_starts(root, "events", 3)
        doc = {"ts": ts, "ends": ends, "starts_before": before, "starts_after": after, "local_before": local,
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


def connect_spark_home(folder: Path) -> Path:
    """A SPARK_HOME for the Connect server: the installed pyspark's `bin` and `jars`, and no
    `python/lib/pyspark.zip`. Spark puts that zip first on its Python workers' path, and a zip's modules
    are compiled on every import (no .pyc): the server's foreachBatch worker then spends its fixed 10 s
    to connect back (PythonWorkerFactory, no setting) compiling pyspark when the machine is loaded (11 s
    measured at load 27 on 2 cores, 4.5 s from the installed package). Without the zip the worker
    imports the same installed pyspark, compiled once."""
    import pyspark

    home = Path(pyspark.__file__).parent
    lib = folder / "python" / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    for name in ("bin", "jars"):
        if not (folder / name).exists():
            (folder / name).symlink_to(home / name)
    return folder


# The Connect server's log: errors only, to stderr, each line "HH:mm:ss LEVEL logger: message" (the parent
# looks for " ERROR " in every Spark child's stderr).
SERVER_LOG4J2 = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def connect_server_argv(port: int, log4j: Path) -> list[str]:
    """A Spark Connect server as tests/connect_server.py starts one (seglog's jar on --jars, loopback
    only), its port given: the parent picks a new one per run (a killed server's port may linger); `log4j`
    a file holding SERVER_LOG4J2. Run it with SPARK_HOME=connect_spark_home(...)."""
    import pyspark

    from seglog.jvm import jar_path

    sys.path.insert(0, str(REPO))
    from tests.connect_server import SERVER_CLASS, ConnectServer

    home = Path(pyspark.__file__).parent
    return [str(home / "bin" / "spark-submit"), "--master", "local[2]", "--class", SERVER_CLASS,
            "--jars", ",".join([str(jar_path()), *ConnectServer._server_jars(home)]), "--driver-memory", "1g",
            "--conf", f"spark.connect.grpc.binding.port={port}", "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
            "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=2",
            "--conf", f"spark.driver.extraJavaOptions=-Dlog4j2.configurationFile=file:{log4j} "
                      f"-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
            "--conf", "spark.sql.streaming.minBatchesToRetain=1000000",
            "--conf", "spark.sql.streaming.fileSource.log.deletion=false", "spark-internal"]


def connect_main(url: str, root: str, stop: str, *folders: str) -> None:
    """The Connect client: one query per (input folder, checkpoint) pair, every one into the topic cC
    through foreachBatch(SegmentLogSink), which the server's Python worker runs. Started one after the
    other: each start launches a worker on the server, which Spark gives a fixed time to connect back
    (slow on a loaded machine). The server may still be starting: the first session is retried."""
    from pyspark.sql.connect.session import SparkSession

    from seglog.sink import SegmentLogSink

    deadline = time.monotonic() + 240
    while True:
        try:
            spark = SparkSession.builder.remote(url).create()
            spark.range(1).collect()
            break
        except Exception:  # noqa: BLE001 (the server is not up yet; bounded)
            if time.monotonic() > deadline:
                raise
            time.sleep(1)
    pairs = list(zip(folders[::2], folders[1::2]))
    queries = []
    for n, (src, ckpt) in enumerate(pairs):
        writer = (spark.readStream.schema(INPUT_SCHEMA).option("maxFilesPerTrigger", 1).json(src)
                  .selectExpr("CAST(k AS BINARY) AS key", "CAST(v AS BINARY) AS value",
                              "timestamp_millis(ts) AS timestamp",
                              "array(named_struct('key', 'id', 'value', CAST(CAST(id AS STRING) AS BINARY))) AS headers")
                  .writeStream.foreachBatch(SegmentLogSink(root, topic=CONNECT_TOPIC, lock_timeout=300))
                  .option("checkpointLocation", ckpt).queryName(f"soak_connect_{n}").trigger(processingTime="1 second"))
        until, attempt = time.monotonic() + 600, 0
        while True:
            try:
                q = writer.start()
                break
            except Exception as exc:  # noqa: BLE001 (only the worker's start timeout is retried, for 10 min)
                # Spark gives the server's foreachBatch worker a fixed 10 s to connect back (PythonWorkerFactory,
                # no setting): on a loaded machine its imports alone may take longer. The query did not start
                # (its checkpoint is as it was); a user starts it again, and so does this client.
                if "failed to connect back" not in str(exc) or time.monotonic() > until:
                    raise
                attempt += 1
                print(f"start retry {n} {attempt}", flush=True)
        print(f"query {n} {q.id}", flush=True)
        queries.append(q)
        until = time.monotonic() + 120
        while q.lastProgress is None and q.isActive and time.monotonic() < until:   # its worker is up
            time.sleep(0.5)
    last: dict[int, int] = {}
    while not Path(stop).exists():
        for n, q in enumerate(queries):
            if not q.isActive:
                q.awaitTermination()        # raises the query's exception, if any
                raise RuntimeError(f"query {q.name} stopped on its own")
            for prog in q.recentProgress:
                if prog.numInputRows > 0 and prog.batchId > last.get(n, -1):
                    last[n] = prog.batchId
                    print(f"batch {n}:{prog.batchId}", flush=True)
        time.sleep(0.5)
    for q in queries:
        q.processAllAvailable()
        q.stop()
    print("DONE", flush=True)


# ------------------------------------------------------------------------------------------------ parent side
class Child:
    """A child process in its own process group (Spark's JVM and workers with it), restartable: stdout
    lines are pumped into `lines` (`progress` counts `batch`/`run` lines since the last start), stderr
    goes to one file per run. `kill()` SIGKILLs the group; any other exit before `stopping` is set is
    a failure, reported by `check()` with the stderr tail."""

    def __init__(self, name: str, argv: list[str], logs: Path, env: dict | None = None, cwd: Path = REPO):
        self.name, self.argv, self.logs, self.env, self.cwd = name, argv, logs, env, cwd
        self.proc: subprocess.Popen | None = None
        self.runs: list[Path] = []
        self.lines: list[str] = []
        self.kills = 0
        self.progress = 0
        self.batches = 0
        self.started_at = 0.0
        self.stopping = False
        self.retired = False
        self._pump: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        err = self.logs / f"{self.name}-{len(self.runs)}.err"
        self.runs.append(err)
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYTHONUNBUFFERED="1", **(self.env or {}))
        with open(err, "wb") as errf:
            self.proc = subprocess.Popen(self.argv, cwd=self.cwd, stdout=subprocess.PIPE, stderr=errf,
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
        if self.retired or (self.stopping and rc == 0):
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

    def retire(self) -> None:
        """Ends a child that has no clean stop of its own (the Connect server): SIGKILL, not a failure."""
        self.retired = True
        self.cleanup()

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
        self.connect_ids: list[dict[int, list[int]]] = [{} for _ in range(CONNECT_QUERIES)]   # query -> file -> ids

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
                 phase: float = 15.0, connect: tuple = ()):
        """`connect`: (folder, committed files) per Connect query; each gets a file of `cC` records
        when it has fewer than `backlog` to do, at most one per writer file."""
        self.src, self.ledger, self.committed_files = src, ledger, committed_files
        self.connect = connect
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

    def write_connect_file(self, q: int) -> None:
        """Records for the topic cC, keyed and keyless, each value over half of cC's segment.bytes (1024):
        every append to cC rolls a new segment (the parent checks one micro-batch per segment)."""
        rng, folder = self.rng, self.connect[q][0]
        with self.ledger.lock:
            index, first = len(self.ledger.connect_ids[q]), self.next_id
            rows = [self._record("cC", "cC", f"q{q}k{rng.randrange(20)}" if j % 2 == 0 else None,
                                 f"c{self.next_id}:" + "z" * rng.randrange(600, 700), now_ms()) for j in range(4)]
            self.ledger.connect_ids[q][index] = list(range(first, self.next_id))
        tmp = folder / f".part-{index:06d}.tmp"
        tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
        os.utime(tmp, (1_700_000_000 + index, 1_700_000_000 + index))
        tmp.rename(folder / f"part-{index:06d}.json")

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                for q, (_, committed) in enumerate(self.connect):
                    if len(self.ledger.connect_ids[q]) - committed() < self.backlog:
                        self.write_connect_file(q)
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


# What a reader may meet while retention deletes under it: a local segment gone, or on a tiered topic a remote
# object the tier job deleted after the open read the metadata (both SegmentDeletedError, an
# OffsetOutOfRangeError). Retried from a new open (a bounded number of times); nothing else is.


def _retried():
    from seglog.errors import OffsetOutOfRangeError

    return OffsetOutOfRangeError


def read_partition(root: Path, topic: str, p: int, start: int, end: int, retries: int = 8):
    """`TieredLog.read` of [start, end) (both tiers: below the local start from the remote tier) as
    Records; records retention deleted under the reader are skipped: it reopens from the new log start.
    Returns (rows, log start seen last)."""
    from seglog.indexer.remote.tiered_log import TieredLog

    path = root / f"{topic}-{p}"
    rows = []
    if not path.is_dir() or start >= end:
        return rows, None
    pos = start
    for _ in range(retries):
        try:
            with TieredLog(root, topic, p) as log:
                ls, local = log.log_start_offset, log.local_log_start_offset
                for r in log.read(max(pos, ls), end):
                    rows.append(r)
                    pos = r.offset + 1
                    REMOTE_ROWS[topic] += r.offset < local
            return rows, ls
        except _retried():
            continue
    raise AssertionError(f"{topic}-{p}: {retries} reads in a row lost a segment under the reader")


def partition_state(root: Path, topic: str, p: int) -> tuple[int, int]:
    """(log start offset, bytes in its segments) of one partition across both tiers (a segment on
    both counted once), from a readonly open; opened again when retention deletes under it."""
    from seglog.indexer.remote.tiered_log import TieredLog

    if not (root / f"{topic}-{p}").is_dir():
        return 0, 0
    for _ in range(8):
        try:
            with TieredLog(root, topic, p) as log:
                # the start and the bytes of one listing (TieredLog.segments: one view with no hole)
                segs = log.segments()
                start = segs[0].base_offset if segs and segs[0].tier == "remote" else log.local_log_start_offset
                return start, sum(s.size_bytes for s in segs)
        except _retried():
            continue
    raise AssertionError(f"{topic}-{p}: eight opens in a row lost a segment under the reader")


def tier_history(root: Path, topic: str, p: int, now: int) -> str:
    """What a failed retention check needs to name its cause: the partition's segments on both tiers,
    its committed end, and the tail of its remote metadata log (every copy and delete, with when)."""
    from seglog.indexer.commit_log import CommitLog
    from seglog.indexer.remote.metadata import metadata_path
    from seglog.indexer.remote.tiered_log import TieredLog

    lines = [f"now {now}; committed end {CommitLog(root, topic).end_offsets().get(p)}"]
    try:
        with TieredLog(root, topic, p) as log:
            lines += [f"  {s.tier:6} [{s.base_offset}, {s.next_offset}) {s.size_bytes} B, largest ts "
                      f"{s.largest_timestamp} ({now - s.largest_timestamp} ms ago)" for s in log.segments()]
    except Exception as exc:  # noqa: BLE001 (a diagnostic: whatever it can show)
        lines.append(f"  segments not listed: {exc!r}")
    try:
        for x in metadata_path(root, topic, p).read_text().splitlines()[-40:]:
            rec = json.loads(x[9:])         # each line: its CRC-32C in hex, a space, the JSON record
            size = rec.get("files", {}).get("log", {}).get("size")
            lines.append(f"  metadata: {rec.get('op')} {rec.get('base')}..{rec.get('next')} size {size} "
                         f"max_ts {rec.get('max_ts')} at {rec.get('at')} ({now - rec.get('at', now)} ms ago)")
    except OSError as exc:
        lines.append(f"  no metadata log: {exc!r}")
    return "\n".join(lines)


def log_start(root: Path, topic: str, p: int) -> int:
    """The log start across both tiers (the remote tier's start on a tiered topic)."""
    return partition_state(root, topic, p)[0]


def tier_counts(root: Path, topic: str, p: int) -> tuple[int, int]:
    """(segments on the remote tier now, of which no local copy is left) of one partition."""
    from seglog.indexer.remote.tiered_log import TieredLog

    for _ in range(8):
        try:
            with TieredLog(root, topic, p) as log:
                segs = log.segments()
                return sum(s.tier != "local" for s in segs), sum(s.tier == "remote" for s in segs)
        except _retried():
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
    {"writer": writer_main, "stream": stream_main, "available-now": available_now_main,
     "connect": connect_main}[mode](*args)
