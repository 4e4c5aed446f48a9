"""The comparison users make (issue 41): a Kafka broker read and written through Spark's own Kafka connector
(`format("kafka")`, spark-sql-kafka-0-10 at the venv's pyspark version) beside `format("seglog")`, in one
Spark session, on the same rows.

The broker: Kafka 4.1 (tests/kafka_broker.py: KRaft, one node, loopback only), started with the JVM options
kafka-run-class.sh ships (bench/cleaner_vs_kafka.py). The connector's jars: scripts/kafka-connector-jars.sh
(Maven, cached; a second run is offline). The producer is tuned for throughput (PRODUCER below: large batches,
a short linger), with Kafka's default acks=all (one replica here).

What each side fsyncs before a write returns:
- seglog: each written partition's .log (the .log and indexes of segments it sealed), each partition folder, then
  the commit file and its folder, at commit (bench/write_breakdown.py counts them: 10 for a 1,000-row write
  into 4 partitions);
- Kafka ("kafka"): nothing; the broker acknowledges once the records are in its page cache (the topic's
  flush.messages is Kafka's default, never) and leaves the writeback to the OS;
- Kafka with flush.messages=1 ("kafka_flush1", a topic config): the broker fsyncs the partition's segment after
  every append, before it acknowledges.

Cases (rows: 16-byte keys, 200-byte values, timestamps, bench/sink.py's `_frame`; 4 log partitions, 4 topic
partitions; Kafka gets key and value, its records are stamped with the producer's send time):
- write: a cached DataFrame of 1e6 rows (4 input tasks) into a fresh log / a fresh topic per run;
- micro_batch: consecutive writes of a cached 1,000-row DataFrame (1 input task) into one log (with
  txnAppId/txnVersion, what a foreachBatch function writes) / one topic;
- replay_last_1pct: the last 1% of every partition (startingOffsets, the same offsets on both sides: the
  same rows) into Spark's `noop` sink (every row reaches the JVM, none the driver); Kafka with the connector's
  defaults ("kafka") and with its consumer tuned (CONSUMER below, "kafka_fetch10");
- replay_full: the whole log / topic into `noop`, and `sum(length(value))` of it, the same three sides;
- stream: one `trigger(availableNow=True)` query over the whole log / topic into a fresh log / topic
  (fresh checkpoint; Kafka's consumer tuned), the query's wall time from start() to its end.

Method (bench/method.py): one session, one broker; every case warmed up; interleaved rounds whose order
alternates; os.sync() untimed before every writer's run (neither side pays for the other's dirty pages);
fresh outputs made and removed outside the timed span; the median of per-round ratios (seglog's time /
Kafka's) with min and max. The load average is recorded before and after every comparison.
Reads go through each connector's defaults: Spark's Kafka source gives every batch query a group id of its
own, so its consumers are made anew per query (a fixed `kafka.group.id` would let its pool reuse them).
Needs the test set-up (scripts/setup-test.sh: confluent-kafka for topic admin, Kafka's jars through Maven).
Run: `python -m bench --only kafka [--quick] [--no-readme]`.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import method  # noqa: E402
from bench.sink import _frame  # noqa: E402

PARTITIONS = 4
# The producer as a throughput-minded user sets it through Spark (`kafka.`-prefixed options); acks=all and
# idempotence are kafka-clients' defaults, written out so the record says what was measured.
PRODUCER = {"kafka.batch.size": str(512 << 10), "kafka.linger.ms": "5", "kafka.acks": "all",
            "kafka.compression.type": "none", "kafka.enable.idempotence": "true"}
FLUSH_EACH = {"flush.messages": "1"}           # the topic config of the "kafka_flush1" side
# The consumer tuned for a read that ends at the log's end ("kafka_fetch10" in the replays, both Kafka sides of
# the stream): kafka-clients' fetch.max.wait.ms (500) holds each task's last fetch at the end of the topic for
# half a second (measured: the last 1% of 100,000 rows 1.4-1.6 s with it, 0.4-0.8 s at 10 ms).
CONSUMER = {"kafka.fetch.max.wait.ms": "10"}
FSYNCS = {
    "seglog": "fsyncs, before the write returns, each written partition's .log (and the .log and indexes of "
              "segments it sealed), each partition folder and, beside them, the commit file; then, after the "
              "commit file's link, its folder",
    "kafka": "acks=all (one replica) from the broker's page cache: nothing fsynced before the ack "
             "(flush.messages at Kafka's default)",
    "kafka_flush1": "topic flush.messages=1: the broker fsyncs the partition's segment after every append, "
                    "before the ack",
}


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _connector_jars() -> None:
    """Resolve Spark's Kafka connector once (Maven, cached); the script is a no-op when it is cached."""
    proc = subprocess.run(["bash", str(REPO / "scripts" / "kafka-connector-jars.sh")], capture_output=True,
                          text=True, env=dict(os.environ, PYTHON=sys.executable))
    if proc.returncode != 0:
        raise RuntimeError(f"scripts/kafka-connector-jars.sh exited {proc.returncode}:\n{proc.stderr[-4000:]}")


class Broker:
    """One Kafka broker for the whole run, with topics made and removed around the timed spans."""

    def __init__(self, work: Path):
        from bench.cleaner_vs_kafka import _shipped_broker

        self.broker = _shipped_broker(work / "kafka", extra_config={
            "num.partitions": str(PARTITIONS),
            # deleted topics' files go at once (they are removed outside the timed spans)
            "log.segment.delete.delay.ms": "1000"})
        self.broker.start()
        self.bootstrap = self.broker.bootstrap
        self.n = 0
        try:
            from tests.kafka_clients import admin

            self.admin = admin(self.broker)     # one client, alive while its futures resolve
        except BaseException:
            self.broker.stop()                  # its own session: it would outlive this process
            raise

    def topic(self, name: str, flush_each: bool) -> str:
        from tests.kafka_clients import create_topic

        self.n += 1
        topic = f"{name}-{self.n}"
        create_topic(self.broker, topic, PARTITIONS, dict(FLUSH_EACH) if flush_each else {})
        self._wait_metadata(topic)
        return topic

    def _wait_metadata(self, topic: str) -> None:
        """The broker knows every partition's leader before anything is timed against the topic."""
        deadline = time.monotonic() + 60
        while True:
            md = self.admin.list_topics(topic, timeout=10).topics.get(topic)
            if md is not None and md.error is None and len(md.partitions) == PARTITIONS \
                    and all(p.leader >= 0 for p in md.partitions.values()):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"topic {topic}: no leader for every partition within 60 s")
            time.sleep(0.05)

    def delete(self, topic: str) -> None:
        for f in self.admin.delete_topics([topic], operation_timeout=30).values():
            f.result(60)

    def stop(self) -> None:
        self.broker.stop()


def _kafka_write(df, bootstrap: str, topic: str) -> None:
    w = df.select("key", "value").write.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for k, v in PRODUCER.items():
        w = w.option(k, v)
    w.option("topic", topic).save()


def _seglog_write(df, path: Path, topic: str, txn: tuple[str, int] | None = None) -> None:
    w = df.write.format("seglog").mode("append").option("topic", topic).option("partitions", str(PARTITIONS))
    if txn is not None:
        w = w.option("txnAppId", txn[0]).option("txnVersion", str(txn[1]))
    w.save(str(path))


def _timed(fn, after=None) -> float:
    t0 = time.perf_counter()
    fn()
    took = time.perf_counter() - t0
    if after is not None:
        after()
    return took


def _compare(times: dict[str, list[float]], base: str = "seglog") -> dict:
    """seglog's time over each Kafka side's, per round."""
    return {f"{base}_over_{k}": method.ratio(times[base], v) for k, v in times.items() if k != base}


def write(spark, broker: Broker, work: Path, rows: int, rounds: int) -> dict:
    df = _frame(spark, rows, 4).cache()
    df.count()
    n = [0]

    def seglog() -> float:
        n[0] += 1
        out = work / f"write-{n[0]}"
        return _timed(lambda: _seglog_write(df, out, "bench"), lambda: shutil.rmtree(out))

    def kafka(flush_each: bool):
        def case() -> float:
            topic = broker.topic("write-flush" if flush_each else "write", flush_each)
            return _timed(lambda: _kafka_write(df, broker.bootstrap, topic), lambda: broker.delete(topic))
        return case

    load = _load()
    try:
        times = method.interleaved({"seglog": seglog, "kafka": kafka(False), "kafka_flush1": kafka(True)},
                                   rounds, warmup=2, settle=os.sync)
    finally:
        df.unpersist()
    return {"rows": rows, "input_tasks": 4, "time_multiple": _compare(times),
            "seconds": {k: method.summary(v) for k, v in times.items()},
            "rows_per_s": {k: rows / method.summary(v)["median_s"] for k, v in times.items()},
            "load_before": load, "load_after": _load()}


def micro_batch(spark, broker: Broker, work: Path, rounds: int) -> dict:
    small = _frame(spark, 1000, 1).cache()
    small.count()
    version = [0]
    topics = {flush: broker.topic("mb-flush" if flush else "mb", flush) for flush in (False, True)}

    def seglog():
        _seglog_write(small, work / "mb-seglog", "small", ("bench", version[0]))
        version[0] += 1

    def kafka(flush_each: bool):
        return lambda: _kafka_write(small, broker.bootstrap, topics[flush_each])

    # the floor (issue 41): the same DataFrame written to Spark's noop sink, plus one fsync of the bytes a seglog
    # write adds to its log (counted on a first write, untimed)
    logs = work / "mb-seglog"
    seglog()
    payload = os.urandom(sum(p.stat().st_size for p in logs.rglob("*.log")))

    def noop_fsync():
        _noop(small)
        fd = os.open(work / "floor.bin", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)

    load = _load()
    try:
        times = method.interleaved({"seglog": seglog, "kafka": kafka(False), "kafka_flush1": kafka(True),
                                    "noop_fsync": noop_fsync}, rounds, warmup=3, settle=os.sync)
    finally:
        small.unpersist()
        for t in topics.values():
            broker.delete(t)
        shutil.rmtree(logs, ignore_errors=True)
    ratios = _compare({k: v for k, v in times.items() if k != "noop_fsync"})
    return {"rows": 1000, "time_multiple": ratios,
            "spread_max_over_min": {k: r["max"] / r["min"] for k, r in ratios.items()},
            "floor": {"what": "the same DataFrame written to Spark's noop sink plus one fsync of the bytes one seglog "
                              f"write adds ({len(payload)} bytes)",
                      "seglog_over_floor": method.ratio(times["seglog"], times["noop_fsync"]),
                      "floor_over_kafka": method.ratio(times["noop_fsync"], times["kafka"])},
            "seconds": {k: method.summary(v) for k, v in times.items()},
            "batches_written": version[0], "load_before": load, "load_after": _load()}


def _partition_ends(df) -> dict[int, tuple[int, int]]:
    """partition -> (first offset, end offset) of what a batch read of `df` sees."""
    from pyspark.sql import functions as F

    got = df.groupBy("partition").agg(F.min("offset").alias("lo"), F.max("offset").alias("hi")).collect()
    return {r["partition"]: (r["lo"], r["hi"] + 1) for r in got}


def _noop(df) -> None:
    df.write.format("noop").mode("overwrite").save()


def _sum_len(df) -> int:
    from pyspark.sql import functions as F

    return df.agg(F.sum(F.length("value"))).collect()[0][0]


def _sum_len_case(df) -> None:
    """A timed case returns None (bench/method.py takes a number for the seconds it measured itself)."""
    _sum_len(df)


def replay(spark, broker: Broker, work: Path, rows: int, rounds: int) -> tuple[dict, str, Path]:
    """The same rows written once (untimed) as a log and a topic, then read by both connectors. Returns the
    result, the topic and the log (the stream cases read them)."""
    df = _frame(spark, rows, 4).cache()
    df.count()
    log, topic = work / "data-seglog", broker.topic("data", False)
    try:
        _seglog_write(df, log, "data")
        _kafka_write(df, broker.bootstrap, topic)
    finally:
        df.unpersist()

    def seglog_df(start: str | None = None):
        r = spark.read.format("seglog").option("topic", "data")
        return (r.option("startingOffsets", start) if start else r).load(str(log))

    def kafka_df(start: str | None = None, tuned: bool = False):
        r = (spark.read.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
             .option("subscribe", topic).option("startingOffsets", start or "earliest")
             .option("endingOffsets", "latest"))
        for k, v in (CONSUMER if tuned else {}).items():
            r = r.option(k, v)
        return r.load()

    ends = {"seglog": _partition_ends(seglog_df()), "kafka": _partition_ends(kafka_df())}
    for side, e in ends.items():
        if sum(hi - lo for lo, hi in e.values()) != rows:
            raise RuntimeError(f"{side} holds {sum(hi - lo for lo, hi in e.values())} rows, not {rows}: {e}")

    def last_1pct(side: str, name: str) -> tuple[str, int]:
        start = {str(p): hi - max(1, (hi - lo) // 100) for p, (lo, hi) in sorted(ends[side].items())}
        return json.dumps({name: start}), sum(ends[side][int(p)][1] - s for p, s in start.items())

    s_start, s_rows = last_1pct("seglog", "data")
    k_start, k_rows = last_1pct("kafka", topic)
    if seglog_df(s_start).count() != s_rows or kafka_df(k_start).count() != k_rows:
        raise RuntimeError("the last-1% reads do not return the rows their offsets name")
    if _sum_len(seglog_df()) != _sum_len(kafka_df()):
        raise RuntimeError("the log and the topic hold different values")
    out: dict = {"rows": rows, "narrow_rows": {"seglog": s_rows, "kafka": k_rows}}
    for name, cases in (
            ("last_1pct", {"seglog": lambda: _noop(seglog_df(s_start)), "kafka": lambda: _noop(kafka_df(k_start)),
                           "kafka_fetch10": lambda: _noop(kafka_df(k_start, tuned=True))}),
            ("full", {"seglog": lambda: _noop(seglog_df()), "kafka": lambda: _noop(kafka_df()),
                      "kafka_fetch10": lambda: _noop(kafka_df(tuned=True))}),
            ("full_sum_length", {"seglog": lambda: _sum_len_case(seglog_df()),
                                 "kafka": lambda: _sum_len_case(kafka_df()),
                                 "kafka_fetch10": lambda: _sum_len_case(kafka_df(tuned=True))})):
        load = _load()
        times = method.interleaved(cases, rounds, warmup=2)
        out[name] = {"time_multiple": _compare(times), "seconds": {k: method.summary(v) for k, v in times.items()},
                     "load_before": load, "load_after": _load()}
    return out, topic, log


def stream(spark, broker: Broker, work: Path, topic: str, log: Path, rows: int, rounds: int) -> dict:
    """availableNow over the whole log / topic into a fresh log / topic."""
    n = [0]

    def run(q) -> None:
        q.awaitTermination()
        if q.exception() is not None:
            raise RuntimeError(f"bench kafka stream: {q.exception()}")
        written = sum(p["numInputRows"] for p in q.recentProgress)
        if written != rows:
            raise RuntimeError(f"bench kafka stream: {written} rows read, not {rows}")

    def seglog() -> float:
        n[0] += 1
        out, ckpt = work / f"st-{n[0]}", work / f"st-{n[0]}-ckpt"
        src = spark.readStream.format("seglog").option("topic", "data").option("startingOffsets", "earliest").load(str(log))

        def go():
            run(src.select("key", "value", "timestamp").writeStream.format("seglog").option("topic", "s")
                .option("partitions", str(PARTITIONS)).option("checkpointLocation", str(ckpt))
                .trigger(availableNow=True).start(str(out)))
        return _timed(go, lambda: (shutil.rmtree(out), shutil.rmtree(ckpt)))

    def kafka(flush_each: bool):
        def case() -> float:
            n[0] += 1
            out, ckpt = broker.topic("st-flush" if flush_each else "st", flush_each), work / f"st-{n[0]}-ckpt"
            src = spark.readStream.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
            for k, v in CONSUMER.items():
                src = src.option(k, v)
            src = src.option("subscribe", topic).option("startingOffsets", "earliest").load()

            def go():
                w = src.select("key", "value").writeStream.format("kafka").option("kafka.bootstrap.servers",
                                                                                  broker.bootstrap)
                for k, v in PRODUCER.items():
                    w = w.option(k, v)
                run(w.option("topic", out).option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start())
            return _timed(go, lambda: (broker.delete(out), shutil.rmtree(ckpt)))
        return case

    load = _load()
    times = method.interleaved({"seglog": seglog, "kafka": kafka(False), "kafka_flush1": kafka(True)}, rounds,
                               warmup=1, settle=os.sync)
    return {"rows": rows, "time_multiple": _compare(times), "seconds": {k: method.summary(v) for k, v in times.items()},
            "load_before": load, "load_after": _load()}


def run(quick: bool = False) -> dict:
    from seglog.sink.session import local_session

    rows = 100_000 if quick else 1_000_000
    rounds = 3 if quick else 7
    mb_rounds = 6 if quick else 21
    _connector_jars()
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-kafka-"))
    broker = spark = None
    out: dict = {"method": __doc__.split("Method (bench/method.py): ")[1].split("Reads go")[0].strip().replace("\n", " "),
                 "fsyncs": FSYNCS, "producer": PRODUCER, "consumer_tuned": CONSUMER, "partitions": PARTITIONS,
                 "load_start": _load(),
                 "rounds": rounds, "micro_batch_rounds": mb_rounds,
                 "target": "1,000-row micro-batch write <= 0.5x Kafka's time, spread (max/min) under 3 (issue 41)"}
    try:
        broker = Broker(work)
        spark = local_session("seglog-bench-kafka", with_kafka=True, driver_memory="8g")
        import pyspark
        out["versions"] = {"pyspark": pyspark.__version__, "kafka_broker": _broker_version(),
                           "kafka_connector": f"spark-sql-kafka-0-10_2.13-{pyspark.__version__}"}
        for sub in ("write", "mb", "replay", "stream"):
            (work / sub).mkdir()
        out["write"] = write(spark, broker, work / "write", rows, rounds)
        out["micro_batch_1000_rows"] = micro_batch(spark, broker, work / "mb", mb_rounds)
        replays, topic, log = replay(spark, broker, work / "replay", rows, rounds)
        out["replay"] = replays
        out["stream_available_now"] = stream(spark, broker, work / "stream", topic, log, rows, rounds)
        out["load_end"] = _load()
        return out
    finally:
        if spark is not None:
            spark.stop()
        if broker is not None:
            broker.stop()
        shutil.rmtree(work, ignore_errors=True)


def _broker_version() -> str:
    from tests.kafka_tools import KAFKA_VERSION
    return KAFKA_VERSION


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2, default=float))
