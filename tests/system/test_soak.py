"""The system soak (issue 23, "a month of production in minutes"): one root, everything at once, for
`SEGLOG_SOAK_MINUTES` (CI: 2.5) after the writer's first commit, every process SIGKILLed at random and
restarted from its checkpoint:

- the writer: a Structured Streaming query (child process, its own local Spark) over JSON files the
  test drops over time (`maxFilesPerTrigger=1`), through one `SegmentLogSink`: `events` (keyed and
  keyless, `message.timestamp.out.of.range.policy=quarantine`: records days away go to `quarantine`)
  and `compacted` (`cleanup.policy=compact`, values `key=seq#id`, some tombstones); every record has a
  unique id (a header);
- two `readStream.format("seglog")` consumers of `events,quarantine` (children, `failOnDataLoss=false`),
  each writing what it read into a topic of its own through the sink, the source's
  topic/partition/offset/timestamp in a header: A runs `Trigger.AvailableNow` every few seconds and
  after each run replays `events` with `spark.read...startingTimestamp` from a random timestamp; B runs a
  processing-time trigger with `maxOffsetsPerTrigger`;
- the real sidecar (`seglog compactor run`) with every job at short intervals: seal, idle roll, time and
  size retention far shorter than the run, merge, clean, purge (`file.delete.delay.ms` 1 s), and tiering:
  `events` has `remote.storage.enable` with small `local.retention.bytes/ms`, its remote tier a loopback
  S3 server (moto, s3a://): the tier job copies sealed segments and local retention deletes them, so the
  readers read below the local start from the remote tier (Python: `TieredLog`; the JVM consumers and
  replays: through s3a);
- thread pools: the writer fans each micro-batch out to one sink call per topic group (events with its
  quarantine; compacted) on a `ThreadPoolExecutor`, and consumer B calls its sink on a pool's thread;
- Spark Connect: a Connect server child (seglog's jar) and a client child with two queries, each with
  its own checkpoint and its own JSON folder, both into ONE topic `cC` through `foreachBatch(
  SegmentLogSink)` (the server's Python worker runs it); the server is SIGKILLed with its client at
  random and both restarted (a new port), the queries from their checkpoints. `cC` rolls at every
  trigger (`segment.bytes` 1024, every record over half of it; merges off).

Checked throughout and at the end (tests/system/soak_parts.py holds the children and the helpers):
- every record anyone read (a reader thread here, both consumers, the replays) is the generated record
  of its id, in the topic and partition it belongs to; one offset never holds two records and no record
  is at two offsets (the writer's exactly once across its kills);
- each consumer's output holds every source offset it read once, in offset order per partition, and
  every source offset it skipped is below that partition's log start (deleted by retention) and named by
  one of its data-loss warnings; at the end each consumer has read every offset not deleted; consumer
  outputs are dense;
- no unexpired record lost: the newest record below `events`' log start is older than retention.ms, or
  the partition still holds retention.bytes (it went by size);
- a replay from timestamp T starts at the first offset with a timestamp >= T (or the log start), skips
  only deleted offsets and reaches the committed end it started from;
- the compacted topic's latest record per key is the model's (the last value written per key among
  committed batches; a tombstone or nothing for a deleted key);
- at the end: every committed offset of `events`/`quarantine` was read by someone or lies below the log
  start; the offsets count the records generated, exactly; no child exited unless killed or asked; no
  ERROR in any child's log; no failed sidecar job; SIGTERM stops the sidecar with 0; `seglog verify
  --remote` clean;
- `cC`: dense, every record of both Connect queries' inputs exactly once (ids), each query's every batch
  (its checkpoint's batches -> input files) landed, both queries recorded as their own writers in the
  commit log with their last batch; no segment holds records of two micro-batches and each partition has
  at least one segment per micro-batch that wrote to it (a roll at every trigger);
- tiering: segments were copied and local copies deleted, rows were read from the remote tier by the
  Python re-reads and the JVM replays.

At the end the soak prints its counts as one JSON line (`soak summary: {...}`).
"""
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
from collections import Counter, defaultdict
from pathlib import Path

import pytest
import yaml

from seglog.indexer.commit_log import CommitLog
from seglog.indexer.topics import create_topic
from seglog.sink.segment_log_sink import RETRIED_AFTER_RECOVERY
from tests.oracles.partitioner import partition_for_key

sys.path.insert(0, str(Path(__file__).resolve().parent))
from soak_parts import (CONNECT_QUERIES, CONNECT_TOPIC, REMOTE_ROWS, REMOTE_READS_RESENT, REPO, SERVER_LOG4J2,  # noqa: E402
                        SOURCE_TOPICS,
                        Child, Generator, Ledger, WriterBatches, connect_server_argv, connect_spark_home, header,
                        log_start, now_ms, partition_state, read_partition, sidecar_events, tier_counts,
                        tier_history)
from tests.ports import free_port  # noqa: E402

SOAK_MIN = float(os.environ.get("SEGLOG_SOAK_MINUTES", "2.5"))
SOAK_S = SOAK_MIN * 60
pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.timeout(int(SOAK_S) + 600)]

PARTS = str(Path(__file__).resolve().parent / "soak_parts.py")
# the `seglog` command of this environment (python -m seglog where it is not installed as a script)
_SCRIPT = Path(sys.executable).with_name("seglog")
SEGLOG = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "seglog"]
DAY = 86_400_000
PARTITIONS = {"events": 3, "quarantine": 3, "compacted": 2, "cA": 3, "cB": 3, "cC": 2}
TOPICS = {
    "events": {"segment.bytes": 8192, "segment.ms": 3000, "index.interval.bytes": 512,
               "retention.ms": 15_000, "retention.bytes": 32 << 10, "file.delete.delay.ms": 1000,
               "message.timestamp.before.max.ms": DAY, "message.timestamp.after.max.ms": 3_600_000,
               "message.timestamp.out.of.range.policy": "quarantine", "quarantine.topic": "quarantine",
               # tiered: the local tier keeps about a segment, the remote one the rest of retention's 15 s
               "remote.storage.enable": True, "local.retention.bytes": 8192, "local.retention.ms": 4000},
    "quarantine": {"segment.bytes": 4096, "segment.ms": 3000, "retention.ms": 15_000, "retention.bytes": 8192,
                   "file.delete.delay.ms": 1000},
    "compacted": {"cleanup.policy": "compact", "segment.bytes": 4096, "segment.ms": 3000,
                  "min.cleanable.dirty.ratio": 0.1, "delete.retention.ms": 4000, "min.compaction.lag.ms": 0,
                  "file.delete.delay.ms": 1000},
    # the consumers' outputs keep everything (the checks read them whole); merged all the same
    "cA": {"segment.bytes": 16384, "segment.ms": 3000, "retention.ms": -1, "retention.bytes": -1,
           "file.delete.delay.ms": 1000},
    "cB": {"segment.bytes": 16384, "segment.ms": 3000, "retention.ms": -1, "retention.bytes": -1,
           "file.delete.delay.ms": 1000},
    # the Connect queries' topic: every record is over half of segment.bytes, so every append rolls a new
    # segment (a roll at every trigger); never merged, so the segments stay as the triggers made them
    "cC": {"segment.bytes": 1024, "retention.ms": -1, "retention.bytes": -1, "segment.merge.small.bytes": 0,
           "file.delete.delay.ms": 1000},
}
SCHEDULE = {"seal.interval.ms": 1000, "roll.interval.ms": 1000, "retention.check.interval.ms": 1000,
            "delete.check.interval.ms": 700, "clean.interval.ms": 1500, "merge.interval.ms": 2000,
            "merge.max.groups.per.pass": 4, "partition.lock.timeout.ms": 100, "leader.retry.interval.ms": 200,
            "tier.interval.ms": 1500}
# a record deleted while younger than retention.ms (minus this margin: clocks, a pass in flight) must have
# gone by size: what is left then holds at least retention.bytes (Kafka's rule), less at most an uncommitted
# batch the sidecar counted and the writer's restart cut away again
TIME_MARGIN_MS, SIZE_SLACK = 2_000, 8 << 10
FAILURE_EVENTS = {"partition.failed", "job.failed", "job.crashed", "compactor.failed", "compactor.scheduler_died"}
MISSING = object()


class Checker:
    """What everyone read, checked against the ledger and against each other."""

    def __init__(self, root: Path, ledger: Ledger, ckpt_writer: Path):
        self.root, self.ledger = root, ledger
        self.batches = WriterBatches(ckpt_writer)
        self.lock = threading.Lock()
        self.slot_id: dict[tuple[str, int, int], int] = {}
        self.id_slot: dict[int, tuple[str, int, int]] = {}
        self.errors: list[str] = []
        self.reads = Counter()                  # records checked, by reader
        self.observer_pos: dict[tuple[str, int], int] = defaultdict(int)
        self.out_pos: dict[str, dict[int, int]] = {"cA": defaultdict(int), "cB": defaultdict(int)}
        self.last_src: dict[str, dict[tuple[str, int], int]] = {"cA": {}, "cB": {}}
        self.skipped: Counter = Counter()       # source offsets a consumer skipped (deleted before it read them)
        self.gaps: dict[str, list] = {"cA": [], "cB": []}   # (topic, partition, first, last) skipped
        self.replays_checked = 0
        self.replay_rows = 0
        self.compacted_checks = 0
        self.compacted_ambiguous = 0            # keys whose last batch had 2+ records of theirs, not all seen
        self.writer_id: str | None = None
        self.retention_checks = Counter()       # log starts checked: "time" (expired) or "size" (by size)
        self.observer_passes = 0
        self.read_by: dict[str, list[int]] = defaultdict(list)   # topic -> per writer batch: when a pass read it
        self.observer_max_s = 0.0
        self.connect_pos: dict[int, int] = defaultdict(int)
        self.connect_history: dict[str, set[int]] = defaultdict(set)  # cC's commit log: writer -> batches seen
        self.tier_rereads = 0
        self.replay_remote_rows = 0             # replay rows below the local start (read through s3a)

    # -- one record, wherever it was read ------------------------------------------------------
    def observe(self, what: str, t: str, p: int, o: int, rid: int, key=MISSING, value=MISSING, ts=MISSING) -> None:
        with self.ledger.lock:
            want = self.ledger.records.get(rid)
        assert want is not None, f"{what}: {t}-{p}@{o} holds id {rid}, which was never generated"
        wt, wk, wv, wts = want
        assert t == wt, f"{what}: record {rid} is in {t}-{p}@{o}; it belongs in {wt}"
        if key is not MISSING:
            assert key == wk, f"{what}: record {rid} at {t}-{p}@{o}: key {key!r} != {wk!r}"
        if value is not MISSING:
            assert value == wv, f"{what}: record {rid} at {t}-{p}@{o}: value {value!r:.80} != {wv!r:.80}"
        if ts is not MISSING:
            assert ts == wts, f"{what}: record {rid} at {t}-{p}@{o}: timestamp {ts} != {wts}"
        if wk is not None:
            assert p == partition_for_key(wk, PARTITIONS[t]), f"{what}: record {rid} (key {wk!r}) in partition {p}"
        with self.lock:
            slot = (t, p, o)
            first = self.slot_id.setdefault(slot, rid)
            assert first == rid, f"{what}: {t}-{p}@{o} holds record {rid}, earlier it held {first}"
            where = self.id_slot.setdefault(rid, slot)
            assert where == slot, f"{what}: record {rid} at {t}-{p}@{o} and at {where[0]}-{where[1]}@{where[2]}"
            self.reads[what] += 1

    # -- the reader thread: every committed record of the writer's topics, soon after its commit --------
    def observer_pass(self) -> None:
        t0 = time.monotonic()
        passed: dict[str, int | None] = {}
        for t in ("events", "quarantine", "compacted"):
            state = CommitLog(self.root, t).latest()
            ends = {} if state is None else state.end_offsets
            passed[t] = None if state is None or self.writer_id is None else state.writers.get(self.writer_id)
            for p in range(PARTITIONS[t]):
                start, end = self.observer_pos[(t, p)], ends.get(p, 0)
                rows, _ = read_partition(self.root, t, p, start, end)
                for r in rows:
                    self.observe("reader", t, p, r.offset, int(header(r, "id")), r.key, r.value, r.timestamp)
                self.observer_pos[(t, p)] = max(start, end)
                if t == "events":
                    self.check_retention(p)
        # this pass read every record of the batches committed when it started, unless deleted first
        done = now_ms()
        for t, b in passed.items():
            seen = self.read_by[t]
            for x in range(len(seen), -1 if b is None else b + 1):
                seen.append(done)
        self.observer_passes += 1
        self.observer_max_s = max(self.observer_max_s, time.monotonic() - t0)

    def check_retention(self, p: int) -> None:
        """No unexpired record lost: the newest record below `events-p`'s log start (timestamps grow
        with offsets there) is older than retention.ms, or retention.bytes is still held after it."""
        ls, size = partition_state(self.root, "events", p)
        now = now_ms()
        with self.lock:
            rid = self.slot_id.get(("events", p, ls - 1))
        if rid is None:
            return
        ts = self.ledger.records[rid][3]
        if ts <= now - TOPICS["events"]["retention.ms"] + TIME_MARGIN_MS:
            self.retention_checks["time"] += 1
            return
        self.retention_checks["size"] += 1
        if size < TOPICS["events"]["retention.bytes"] - SIZE_SLACK:
            raise AssertionError(
                f"events-{p}: record {rid} at offset {ls - 1} was deleted {now - ts} ms after its timestamp "
                f"(retention.ms {TOPICS['events']['retention.ms']}), yet the partition holds {size} bytes, less than "
                f"retention.bytes {TOPICS['events']['retention.bytes']}: an unexpired record lost\n"
                + tier_history(self.root, "events", p, now))

    def observer(self, stop: threading.Event) -> None:
        try:
            while not stop.wait(0.3):
                self.observer_pass()
        except BaseException as exc:  # noqa: BLE001 (reported by the test)
            import traceback
            self.errors.append("reader thread: " + "".join(traceback.format_exception(exc))[-12000:])

    # -- a consumer's output -------------------------------------------------------------------
    def consumer_pass(self, topic: str) -> None:
        ends = CommitLog(self.root, topic).end_offsets()
        for p in range(PARTITIONS[topic]):
            start, end = self.out_pos[topic][p], ends.get(p, 0)
            rows, ls = read_partition(self.root, topic, p, start, end)
            got = [r.offset for r in rows]
            assert got == list(range(start, max(start, end))), (
                f"{topic}-{p}: offsets {got[:5]}...{got[-5:]} in [{start}, {end}) are not dense (log start {ls})")
            for r in rows:
                src = header(r, "src").decode().split("/")
                t, sp, so, sts = src[0], int(src[1]), int(src[2]), int(src[3])
                assert t in SOURCE_TOPICS and sp == p, f"{topic}-{p}@{r.offset}: read from {t}-{sp}"
                last = self.last_src[topic].get((t, sp), -1)
                assert so > last, (f"{topic}-{p}@{r.offset}: {t}-{sp}@{so} after {t}-{sp}@{last}: read twice or "
                                   f"out of offset order")
                if so > last + 1:         # skipped: must have been deleted by retention
                    ls_src = log_start(self.root, t, sp)
                    assert so - 1 < ls_src, (f"consumer {topic} skipped {t}-{sp} offsets [{last + 1}, {so - 1}], "
                                             f"not all below the log start {ls_src}")
                    self.skipped[topic] += so - last - 1
                    self.gaps[topic].append((t, sp, last + 1, so - 1))
                self.last_src[topic][(t, sp)] = so
                self.observe(f"consumer {topic}", t, sp, so, int(header(r, "id")), r.key, r.value, sts)
            self.out_pos[topic][p] = max(start, end)

    def consumer_caught_up(self, topic: str) -> None:
        """Every source offset is read by the consumer or below the log start."""
        for t in SOURCE_TOPICS:
            ends = CommitLog(self.root, t).end_offsets()
            for p in range(PARTITIONS[t]):
                end, last, ls = ends.get(p, 0), self.last_src[topic].get((t, p), -1), log_start(self.root, t, p)
                assert last >= end - 1 or ls >= end, (
                    f"consumer {topic} read {t}-{p} up to {last}; committed end {end}, log start {ls}")
                if last < end - 1:
                    self.skipped[topic] += end - 1 - last
                    self.gaps[topic].append((t, p, last + 1, end - 1))

    # -- the Connect queries' topic ---------------------------------------------------------------
    def connect_pass(self) -> None:
        """cC read on from where the last pass stopped (it keeps everything: dense from 0); its commit
        log's recent history noted (each commit names its writer and batch)."""
        log = CommitLog(self.root, CONNECT_TOPIC)
        for state in log.history():
            self.connect_history[state.writer_id].add(state.batch_id)
        ends = log.end_offsets()
        for p in range(PARTITIONS[CONNECT_TOPIC]):
            start, end = self.connect_pos[p], ends.get(p, 0)
            rows, ls = read_partition(self.root, CONNECT_TOPIC, p, start, end)
            got = [r.offset for r in rows]
            assert got == list(range(start, max(start, end))), (
                f"cC-{p}: offsets {got[:5]}...{got[-5:]} in [{start}, {end}) are not dense (log start {ls})")
            for r in rows:
                self.observe("connect cC", CONNECT_TOPIC, p, r.offset, int(header(r, "id")), r.key, r.value, r.timestamp)
            self.connect_pos[p] = max(start, end)

    # -- the tiered topic, read again across both tiers ------------------------------------------------
    def tier_pass(self) -> None:
        """Every committed record of `events` from its log start (the remote tier's) through TieredLog:
        the same record at each offset as the reader saw when it was new."""
        ends = CommitLog(self.root, "events").end_offsets()
        for p in range(PARTITIONS["events"]):
            rows, _ = read_partition(self.root, "events", p, log_start(self.root, "events", p), ends.get(p, 0))
            for r in rows:
                self.observe("tiered re-read", "events", p, r.offset, int(header(r, "id")), r.key, r.value, r.timestamp)
        self.tier_rereads += 1

    # -- the replays from a timestamp ------------------------------------------------------------
    def replay_pass(self, folder: Path, done: set) -> None:
        for path in sorted(folder.glob("replay-*.json")):
            if path.name in done:
                continue
            doc = json.loads(path.read_text())
            ts0 = doc["ts"]
            by_p: dict[int, list] = defaultdict(list)
            for p, o, ts, rid in doc["rows"]:
                by_p[p].append((o, ts, rid))
            for p in range(PARTITIONS["events"]):
                rows = sorted(by_p.get(p, []))
                end, before, after = doc["ends"].get(str(p), 0), doc["starts_before"][str(p)], doc["starts_after"][str(p)]
                what = f"replay {path.name} (startingTimestamp {ts0}) events-{p}"
                for (o1, _, _), (o2, _, _) in zip(rows, rows[1:]):
                    assert o2 > o1, f"{what}: offset {o2} after {o1}"
                    assert o2 == o1 + 1 or o2 - 1 < after, f"{what}: skipped [{o1 + 1}, {o2 - 1}], log start {after}"
                for o, ts, rid in rows:
                    self.observe("replay", "events", p, o, rid, ts=ts)
                    self.replay_remote_rows += o < doc["local_before"][str(p)]
                with self.lock:
                    slot_id = dict(self.slot_id)
                if rows:
                    first = rows[0][0]
                    assert rows[0][1] >= ts0, f"{what}: first row {first} has timestamp {rows[0][1]} < {ts0}"
                    prev = slot_id.get(("events", p, first - 1))
                    if prev is not None and self.ledger.records[prev][3] >= ts0:
                        assert first <= after, (f"{what}: started at {first}, but {first - 1} has timestamp "
                                                f"{self.ledger.records[prev][3]} >= {ts0} (log start {before}->{after})")
                    assert rows[-1][0] + 1 >= end or end - 1 < after, (
                        f"{what}: ended at {rows[-1][0]}, committed end was {end}, log start {after}")
                elif end > after:
                    last = slot_id.get(("events", p, end - 1))
                    if last is not None:
                        assert self.ledger.records[last][3] < ts0, (
                            f"{what}: no rows, but offset {end - 1} (committed before) has timestamp "
                            f"{self.ledger.records[last][3]} >= {ts0}")
                self.replay_rows += len(rows)
            done.add(path.name)
            self.replays_checked += 1

    # -- the compacted topic against the model -----------------------------------------------------
    def compacted_pass(self) -> int:
        state = CommitLog(self.root, "compacted").latest()
        if state is None or self.writer_id is None or self.writer_id not in state.writers:
            return -1
        batch = state.writers[self.writer_id]
        # the model: per key, its records in the last batch that wrote it (one, unless that batch read
        # more than one file: then the order of its rows is Spark's, and the last is the one at the
        # highest offset)
        model: dict[bytes, list[int]] = {}
        for b in range(batch + 1):
            per_key: dict[bytes, list[int]] = defaultdict(list)
            for f in self.batches.files(b):
                for rid in self.ledger.file_ids[f]:
                    t, key, _, _ = self.ledger.records[rid]
                    if t == "compacted":
                        per_key[key].append(rid)
            model.update(per_key)
        latest: dict[bytes, tuple[int, int]] = {}
        for p in range(PARTITIONS["compacted"]):
            rows, _ = read_partition(self.root, "compacted", p, 0, state.end_offsets.get(p, 0))
            for r in rows:
                rid = int(header(r, "id"))
                self.observe("compacted read", "compacted", p, r.offset, rid, r.key, r.value, r.timestamp)
                latest[r.key] = (r.offset, rid)
        for key, rids in model.items():
            if len(rids) > 1:
                with self.lock:
                    slots = [self.id_slot.get(i) for i in rids]
                if all(slots):
                    rids = [max(zip(slots, rids))[1]]
                else:
                    self.compacted_ambiguous += 1
            got = latest.get(key)
            values = [self.ledger.records[i][2] for i in rids]
            # a tombstone is the latest record, or nothing once delete.retention.ms has passed
            assert (got is None and None in values) or (got is not None and got[1] in rids), (
                f"compacted: key {key!r}: the log's latest record is {got} (offset, id); the model's: "
                f"{rids} (values {[None if v is None else v[:20] for v in values]}; committed batch {batch})")
        assert set(latest) <= set(model), f"compacted: keys never written {set(latest) - set(model)}"
        self.compacted_checks += 1
        return batch


def segment_bases(root: Path, topic: str, p: int) -> list[int]:
    """The base offsets of a partition's local segments, from its `.log` files."""
    return sorted(int(n[:-4]) for n in os.listdir(root / f"{topic}-{p}") if n.endswith(".log") and n[:-4].isdigit())


def rewriting(root: Path) -> bool:
    """A clean's or a merge's rewrite is in progress in some partition (`.cleaned` or `.swap` files)."""
    with os.scandir(root) as parts:
        for part in parts:
            if part.is_dir() and part.name != "_seglog":
                try:
                    if any(n.endswith((".cleaned", ".swap")) for n in os.listdir(part.path)):
                        return True
                except FileNotFoundError:
                    continue
    return False


LOSS_RE = re.compile(r"seglog source: ([A-Za-z0-9._-]+)-(\d+): offsets (\d+) to (\d+) are no longer in the log")


def unannounced(gaps: list, child: Child) -> list:
    """The skipped ranges no data-loss warning of the consumer names ("nothing is skipped silently")."""
    warned = defaultdict(list)
    for line in child.stderr_lines("are no longer in the log"):
        m = LOSS_RE.search(line)
        assert m, line
        warned[(m.group(1), int(m.group(2)))].append((int(m.group(3)), int(m.group(4))))
    out = []
    for t, p, a, b in gaps:
        todo = a
        for lo, hi in sorted(warned[(t, p)]):
            if lo <= todo <= hi:
                todo = hi + 1
        if todo <= b:
            out.append((t, p, a, b))
    return out


def check_connect(root: Path, checker: Checker, ledger: Ledger, batches: list[WriterBatches], qids: list,
                  lasts: list) -> dict:
    """cC at the end: every record of both Connect queries' inputs once; each query its own writer with its
    last batch, every batch of each landed; a roll at every trigger (no segment holds two micro-batches'
    records, at least one segment per micro-batch and partition). Returns the counts."""
    state = CommitLog(root, CONNECT_TOPIC).latest()
    assert all(qids) and len(set(qids)) == CONNECT_QUERIES, qids
    # each query is its own writer (never a shared or `default` one), at the last batch its checkpoint committed
    ckpt_lasts = [max(int(n.name) for n in (b.ckpt / "commits").iterdir() if n.name.isdigit()) for b in batches]
    assert state.writers == dict(zip(qids, ckpt_lasts)) and lasts == ckpt_lasts, (state.writers, qids, ckpt_lasts)
    ids = {i for i, r in ledger.records.items() if r[0] == CONNECT_TOPIC}
    assert sum(state.end_offsets.values()) == len(ids), (
        f"cC: {sum(state.end_offsets.values())} offsets committed for {len(ids)} records")
    with checker.lock:
        slot = {i: checker.id_slot.get(i) for i in ids}
    missing = sorted(i for i, s in slot.items() if s is None)
    assert not missing, f"cC: {len(missing)} records never landed, e.g. {missing[:5]}"
    owner: dict[int, tuple[int, int]] = {}       # record id -> (query, batch)
    for q, (b_of, last) in enumerate(zip(batches, lasts)):
        assert b_of.files_through(last) == len(ledger.connect_ids[q]), (q, last)
        for b in range(last + 1):
            for f in b_of.files(b):
                for i in ledger.connect_ids[q][f]:
                    owner[i] = (q, b)
    segments = 0
    per_partition_batches = 0
    for p in range(PARTITIONS[CONNECT_TOPIC]):
        bases = segment_bases(root, CONNECT_TOPIC, p)
        end = state.end_offsets.get(p, 0)
        by_offset = {s[2]: owner[i] for i, s in slot.items() if s[1] == p}
        assert sorted(by_offset) == list(range(end)), f"cC-{p}: offsets are not dense"
        for base, nxt in zip(bases, [*bases[1:], end]):
            held = {by_offset[o] for o in range(base, min(nxt, end))}
            assert len(held) <= 1, f"cC-{p}: the segment at {base} holds records of micro-batches {sorted(held)}"
        wrote = len(set(by_offset.values()))
        assert len([b for b in bases if b < end]) >= wrote, (
            f"cC-{p}: {len(bases)} segments for {wrote} micro-batches that wrote to it: not a roll at every trigger")
        segments += len([b for b in bases if b < end])
        per_partition_batches += wrote
    seen = {qid: len(checker.connect_history.get(qid, ())) for qid in qids}
    return {"records": len(ids), "batches per query": [last + 1 for last in lasts],
            "batches seen in the commit log per query": list(seen.values()), "segments": segments,
            "micro-batch appends (batch x partition)": per_partition_batches}


# Spark's limit the Connect client retries (soak_parts.connect_main): the server's foreachBatch worker did not
# connect back within Spark's fixed 10 s; the query did not start, and its start is retried
WORKER_START_TIMEOUT = "connect back"
# Spark Connect's reattachable execution: a client that reattaches to an operation (its stream looked stalled
# under load) makes the server end the old response stream with INVALID_CURSOR.DISCONNECTED, which the server
# logs as an ERROR ("RPC error during: async-grpc-response-sender") though the client goes on on the new one
REATTACHED = "async-grpc-response-sender"
# Spark's two lines for a failed format("seglog") write (AppendDataExec / WriteToDataSourceV2Exec)
WRITE_ABORT = re.compile(r"Data source write support \S*SeglogBatchWrite@\w+ (?:is aborting|aborted)\.")


def _spark_children_errors(children: list[Child], retried: Counter | None = None) -> list[str]:
    """ERROR lines (log4j) and Python tracebacks in any Spark child's stderr, but for a Connect query's
    start refused by the worker's start timeout, which the client retries (counted in the summary), and a
    write's abort that the sink said it tried again (a sidecar killed mid-swap leaves `.swap` files the JVM
    refuses; the sink has the core finish them and writes again: SegmentLogSink, RETRIED_AFTER_RECOVERY),
    counted in `retried`. An abort with no such retry after it is reported."""
    bad = []
    for c in children:
        for path in c.runs:
            aborts: list[str] = []            # the abort lines of a write not yet said to be tried again
            for line in path.read_text(errors="replace").splitlines():
                if WORKER_START_TIMEOUT in line or (c.name == "connect-server" and REATTACHED in line):
                    continue
                if RETRIED_AFTER_RECOVERY in line and aborts:
                    aborts.clear()
                    if retried is not None:
                        retried[c.name] += 1
                elif " ERROR " in line and WRITE_ABORT.search(line):
                    aborts.append(f"{path.name}: {line[:400]}")
                elif " ERROR " in line or line.startswith("Traceback"):
                    bad.append(f"{path.name}: {line[:400]}")
            bad += aborts
    return bad


def test_system_soak(tmp_path, s3_server):
    seed = int(os.environ.get("SEGLOG_SOAK_SEED", time.time()))
    rng = random.Random(seed)
    print(f"\nsoak: seed {seed}, {SOAK_MIN} min")
    root, src, logs, replays = tmp_path / "log", tmp_path / "in", tmp_path / "logs", tmp_path / "replays"
    for d in (root, src, logs, replays):
        d.mkdir()
    ckpt = {name: tmp_path / f"ckpt-{name}" for name in ("writer", "cA", "cB")}
    flags = {name: tmp_path / f"stop-{name}" for name in ("writer", "cA", "cB", "connect")}
    c_src = [tmp_path / f"in-c{q}" for q in range(CONNECT_QUERIES)]
    c_ckpt = [tmp_path / f"ckpt-c{q}" for q in range(CONNECT_QUERIES)]
    for d in c_src:
        d.mkdir()
    for topic, cfg in TOPICS.items():
        create_topic(root, topic, PARTITIONS[topic], cfg)
    bucket = s3_server.make_bucket(f"soak-{seed}")
    remote = {"uri": bucket.replace("s3://", "s3a://") + "/tier", "endpoint": s3_server.endpoint, "region": "us-east-1"}
    config = tmp_path / "compactor.yaml"
    config.write_text(yaml.safe_dump({"root": str(root), "log": {"file.delete.delay.ms": 1000}, "remote": remote,
                                      "schedule": SCHEDULE, "http": {"host": "127.0.0.1", "port": 0}}))

    ledger = Ledger()
    checker = Checker(root, ledger, ckpt["writer"])

    def writer_id():
        if checker.writer_id is None:
            state = CommitLog(root, "events").latest()
            if state is not None:
                assert len(state.writers) == 1, state.writers
                checker.writer_id = next(iter(state.writers))
        return checker.writer_id

    def committed_batch(topic: str = "events") -> int | None:
        wid = writer_id()
        return None if wid is None else CommitLog(root, topic).last_batch(wid)

    def committed_files() -> int:
        return checker.batches.files_through(committed_batch())

    c_batches = [WriterBatches(c) for c in c_ckpt]

    def connect_query(q: int) -> str | None:
        """Query q's id (its writer in cC's commit log), from its checkpoint's metadata."""
        try:
            return json.loads((c_ckpt[q] / "metadata").read_text())["id"]
        except (OSError, ValueError):
            return None

    def connect_batch(q: int) -> int | None:
        qid = connect_query(q)
        return None if qid is None else CommitLog(root, CONNECT_TOPIC).last_batch(qid)

    def connect_files(q: int) -> int:
        return c_batches[q].files_through(connect_batch(q))

    gen = Generator(src, ledger, committed_files, seed,
                    connect=tuple((c_src[q], lambda q=q: connect_files(q)) for q in range(CONNECT_QUERIES)))
    sidecar = Child("sidecar", [*SEGLOG, "compactor", "run", "--config", str(config)], logs)
    writer = Child("writer", [sys.executable, PARTS, "writer", str(src), str(root), str(ckpt["writer"]),
                              str(flags["writer"])], logs)
    cons_b = Child("consumer-stream", [sys.executable, PARTS, "stream", str(root), str(ckpt["cB"]), "cB",
                                       str(flags["cB"]), "250"], logs)
    t_lo = now_ms()
    cons_a = Child("consumer-available-now", [sys.executable, PARTS, "available-now", str(root), str(ckpt["cA"]), "cA",
                                              str(flags["cA"]), str(replays), str(t_lo), "3", str(seed)], logs)
    server_log4j = tmp_path / "connect-log4j2.properties"
    server_log4j.write_text(SERVER_LOG4J2)
    server = Child("connect-server", [], logs, cwd=tmp_path,
                   env={"SPARK_HOME": str(connect_spark_home(tmp_path / "spark-home"))})
    client = Child("connect-client", [], logs)

    def start_connect() -> None:
        """The Connect server on a new port, and its client (which waits for it)."""
        port = free_port()
        server.argv = connect_server_argv(port, server_log4j)
        client.argv = [sys.executable, PARTS, "connect", f"sc://127.0.0.1:{port}", str(root), str(flags["connect"]),
                       *[str(x) for q in range(CONNECT_QUERIES) for x in (c_src[q], c_ckpt[q])]]
        server.start()
        client.start()

    children = [sidecar, writer, cons_a, cons_b, server, client]
    spark_children = [writer, cons_a, cons_b, server, client]
    wanted = {writer: max(2, round(SOAK_MIN)), cons_a: max(1, round(SOAK_MIN / 2)),
              cons_b: max(1, round(SOAK_MIN / 2)), sidecar: max(4, round(2 * SOAK_MIN)),
              client: max(1, round(SOAK_MIN / 4))}    # a Connect server takes a minute to start again
    ckpt_of = {writer: ckpt["writer"], cons_a: ckpt["cA"], cons_b: ckpt["cB"]}
    kills_mid_work: Counter = Counter()       # kills mid-batch (Spark children) or mid-rewrite (the sidecar)

    def mid_batch(folder: Path) -> bool:
        def last(sub):
            return max((int(n.name) for n in (folder / sub).glob("[0-9]*") if n.name.isdigit()), default=-1)
        return last("offsets") > last("commits")

    stop_observer = threading.Event()
    observer = threading.Thread(target=checker.observer, args=(stop_observer,), daemon=True)
    replays_done: set[str] = set()
    t_start = time.monotonic()
    timings = {}
    try:
        sidecar.start()
        start_connect()
        gen.write_file()
        for c in (writer, cons_a, cons_b):
            c.start()
        observer.start()

        def healthy():
            assert not gen.errors, gen.errors
            assert not checker.errors, checker.errors[0]
            for c in children:
                c.check()

        deadline = time.monotonic() + 240
        while writer_id() is None:
            healthy()
            assert time.monotonic() < deadline, f"no committed writer batch in 240 s: {writer.stderr_tail()}"
            time.sleep(0.25)
        timings["startup_s"] = time.monotonic() - t_start
        print(f"soak: first writer commit after {timings['startup_s']:.0f} s", flush=True)
        gen.thread.start()

        # ---------------------------------------------------------------- the soak
        soak_start = time.monotonic()
        soak_end = soak_start + SOAK_S
        schedule = {c: sorted(soak_start + rng.uniform(0.08, 0.8) * SOAK_S for _ in range(n))
                    for c, n in wanted.items()}
        armed: dict[Child, float] = {}
        next_check = time.monotonic() + 8
        # at least SOAK_S, and until every planned kill is done (a Spark child takes a while to get going
        # again after one), within a limit
        while time.monotonic() < soak_end or (any(schedule.values()) and time.monotonic() < soak_end + 150):
            healthy()
            now = time.monotonic()
            for c, times in schedule.items():
                if not times or now < times[0]:
                    continue
                ready = (now - c.started_at > 1.0) if c is sidecar else c.progress >= 1
                if ready and c not in armed:
                    armed[c] = now + rng.uniform(0.0, 1.5 if c is sidecar else 2.5)
                # a Spark child preferably while a micro-batch is in flight (planned, not committed); the
                # sidecar preferably while it rewrites segments (a clean's or a merge's file exists)
                inflight = (c in ckpt_of and mid_batch(ckpt_of[c])) or (c is client and any(map(mid_batch, c_ckpt)))
                if c in armed and now >= armed[c] and (inflight or c is sidecar or now >= armed[c] + 5):
                    del armed[c]
                    times.pop(0)
                    if c is sidecar:
                        until = time.monotonic() + 4
                        while not (inflight := rewriting(root)) and time.monotonic() < until:
                            time.sleep(0.002)
                    kills_mid_work[c.name] += inflight
                    if c is client:         # the client, then its server (the queries run there); both anew
                        c.kill()
                        server.kill()
                        start_connect()
                    else:
                        c.restart_after_kill()
                    print(f"soak: t={now - soak_start:.0f}s killed {c.name} (kill {c.kills})", flush=True)
            if now >= next_check:
                for topic in ("cA", "cB"):
                    checker.consumer_pass(topic)
                checker.replay_pass(replays, replays_done)
                checker.compacted_pass()
                checker.connect_pass()
                checker.tier_pass()
                events = sidecar_events(sidecar.runs, [True] * len(sidecar.runs))
                failed = [e for e in events if e.get("event") in FAILURE_EVENTS]
                assert not failed, failed[:3]
                next_check = time.monotonic() + 8
            time.sleep(0.25)
        missed = {c.name: len(t) for c, t in schedule.items() if t}
        assert not missed, f"kills planned but not done (a child never got going again?): {missed}"

        # ---------------------------------------------------------------- drain
        t_drain = time.monotonic()
        timings["soak_s"] = t_drain - soak_start
        gen.stop.set()
        gen.thread.join(30)
        files = ledger.files()
        deadline = time.monotonic() + 240
        while True:
            healthy()
            done = [committed_batch(t) for t in ("events", "quarantine", "compacted")]
            if done[0] is not None and committed_files() == files and len(set(done)) == 1:
                break
            assert time.monotonic() < deadline, f"the writer did not commit all {files} files: {done}"
            time.sleep(0.25)
        last_batch = done[0]
        deadline = time.monotonic() + 240
        while not all(connect_files(q) == len(ledger.connect_ids[q]) for q in range(CONNECT_QUERIES)):
            healthy()
            assert time.monotonic() < deadline, (
                f"the Connect queries did not commit all their files: "
                f"{[(connect_files(q), len(ledger.connect_ids[q])) for q in range(CONNECT_QUERIES)]}")
            time.sleep(0.25)
        client.stopping = True
        flags["connect"].touch()
        writer.stopping = True
        flags["writer"].touch()
        writer.wait_stopped(120)
        for c in (cons_a, cons_b):
            c.stopping = True
        flags["cA"].touch()
        flags["cB"].touch()
        for c in (cons_b, cons_a, client):
            deadline = time.monotonic() + 240
            while c.alive() and time.monotonic() < deadline:
                healthy()
                time.sleep(0.25)
            c.wait_stopped(1)
        server.retire()
        timings["drain_s"] = time.monotonic() - t_drain
        stop_observer.set()
        observer.join(60)
        healthy()
        checker.observer_pass()

        # ---------------------------------------------------------------- the end
        for topic in ("cA", "cB"):
            checker.consumer_pass(topic)
            checker.consumer_caught_up(topic)
        checker.replay_pass(replays, replays_done)
        assert checker.compacted_pass() == last_batch
        checker.connect_pass()
        checker.tier_pass()
        connect = check_connect(root, checker, ledger, c_batches, [connect_query(q) for q in range(CONNECT_QUERIES)],
                                [connect_batch(q) for q in range(CONNECT_QUERIES)])

        # every committed offset of the writer's delete topics: read by someone, or deleted by retention;
        # as many offsets as records generated for the topic
        unread = Counter()
        deleted_records = Counter()
        for t in SOURCE_TOPICS:
            state = CommitLog(root, t).latest()
            assert state.writers == {checker.writer_id: last_batch}, state.writers
            ids = {i for i, r in ledger.records.items() if r[0] == t}
            assert sum(state.end_offsets.values()) == len(ids), (
                f"{t}: {sum(state.end_offsets.values())} offsets committed for {len(ids)} records")
            seen = set()
            for p in range(PARTITIONS[t]):
                ls = log_start(root, t, p)
                deleted_records[t] += ls
                for o in range(state.end_offsets.get(p, 0)):
                    rid = checker.slot_id.get((t, p, o))
                    if rid is None:
                        assert o < ls, f"{t}-{p}@{o}: committed, never read by anyone, yet above the log start {ls}"
                        unread[t] += 1
                    else:
                        seen.add(rid)
            assert len(ids - seen) == unread[t], (t, len(ids - seen), unread[t])
            # a record nobody read was deleted before the reader's first pass after its batch's commit:
            # it had expired by then (a record just committed cannot go by size: retention.bytes holds
            # several batches)
            batch_of = {f: b for b in range(last_batch + 1) for f in checker.batches.files(b)}
            for rid in ids - seen:
                b = batch_of[ledger.file_of(rid)]
                deadline = checker.read_by[t][b] - TOPICS[t]["retention.ms"] + TIME_MARGIN_MS
                assert ledger.records[rid][3] < deadline, (
                    f"{t}: record {rid} (timestamp {ledger.records[rid][3]}, writer batch {b}) was never read: deleted "
                    f"before {checker.read_by[t][b]}, when it was {checker.read_by[t][b] - ledger.records[rid][3]} "
                    f"ms old (retention.ms {TOPICS[t]['retention.ms']}): an unexpired record lost")
        state = CommitLog(root, "compacted").latest()
        # written by the other thread of the writer's pool: the same query, the same writer
        assert state.writers == {checker.writer_id: last_batch}, state.writers
        assert sum(state.end_offsets.values()) == sum(1 for r in ledger.records.values() if r[0] == "compacted")

        writes_retried: Counter = Counter()
        bad = _spark_children_errors(spark_children, writes_retried)
        assert not bad, "\n".join(bad[:20])
        assert checker.replays_checked >= 2, checker.replays_checked
        for c, n in wanted.items():
            assert c.kills >= n, (c.name, c.kills, n)

        # the sidecar: SIGTERM -> 0; what it did, from its JSON-line events
        sidecar.stopping = True
        os.kill(sidecar.proc.pid, signal.SIGTERM)
        try:
            rc = sidecar.proc.wait(60)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the sidecar did not exit within 60 s of SIGTERM: {sidecar.stderr_tail()}")
        assert rc == 0, sidecar.stderr_tail()
        events = sidecar_events(sidecar.runs, [True] * (len(sidecar.runs) - 1) + [False])
        failed = [e for e in events if e.get("event") in FAILURE_EVENTS or e.get("level") == "error"]
        assert not failed, failed[:5]
        assert events[-1]["event"] == "compactor.stopped"
        names = Counter(e["event"] for e in events)
        stats = {
            "segments deleted": sum(len(e["bases"]) for e in events if e["event"] == "segments.deleted"),
            "segments merged": sum(e["segments"] for e in events if e["event"] == "segments.merged"),
            "merges": names["segments.merged"],
            "cleans": names["partition.cleaned"],
            "records cleaned away": sum(e["records_removed"] for e in events if e["event"] == "partition.cleaned"),
            "files purged": sum(len(e["files"]) for e in events if e["event"] == "files.purged"),
            "idle rolls": names["segment.rolled"],
            "seals": names["segments.sealed"],
            "recoveries": names["partition.recovered"],
        }
        tier = {"segments copied": sum(len(e.get("copied", ())) for e in events if e["event"] == "partition.tiered"),
                "local copies deleted": sum(len(e.get("local_deleted", ())) for e in events
                                            if e["event"] == "partition.tiered"),
                "remote segments deleted": sum(len(e.get("remote_deleted", ())) for e in events
                                               if e["event"] == "partition.tiered"),
                "remote segments at the end": sum(tier_counts(root, "events", p)[0] for p in range(PARTITIONS["events"])),
                "python rows read from the remote tier": dict(REMOTE_ROWS),
                "jvm replay rows read from the remote tier": checker.replay_remote_rows,
                "tiered re-reads": checker.tier_rereads}
        assert tier["segments copied"] > 0 and tier["local copies deleted"] > 0 and tier["remote segments deleted"] > 0, tier
        assert REMOTE_ROWS["events"] > 0, f"no read went below the local start of events: {tier}"
        # `events` is tiered: its retention is the tier job's (remote deletes), the others' the retention job's
        assert stats["segments deleted"] + tier["remote segments deleted"] > 0, f"no retention: {dict(names)}"
        for key in ("merges", "cleans", "files purged"):
            assert stats[key] > 0, f"the sidecar did no {key}: {dict(names)}"
        assert deleted_records["events"] > 0

        proc = subprocess.run([*SEGLOG, "verify", "--remote", str(root)], cwd=REPO, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

        data_loss = {c.name: len(c.stderr_lines("Some data may have been lost")) for c in (cons_a, cons_b)}
        silent = {topic: unannounced(checker.gaps[topic], c) for topic, c in (("cA", cons_a), ("cB", cons_b))}
        assert not any(silent.values()), f"offsets skipped without a data-loss warning: {silent}"
        n_records = len(ledger.records)
        by_topic = Counter(r[0] for r in ledger.records.values())
        print(f"soak: {files} files, {n_records} records written ({dict(by_topic)}) in {last_batch + 1} writer "
              f"micro-batches ({writer.batches} deliveries finished)")
        print(f"soak: kills {({c.name: c.kills for c in children})}, of which mid-batch or mid-rewrite {dict(kills_mid_work)}")
        print(f"soak: consumer triggers: A {cons_a.batches} batches in "
              f"{sum(1 for line in cons_a.lines if line.startswith('run '))} AvailableNow runs, B {cons_b.batches}; "
              f"records read: {({k: v for k, v in checker.reads.items()})}")
        print(f"soak: offsets skipped by consumers (deleted first) {dict(checker.skipped)}, data-loss warnings "
              f"{data_loss}, skips without one {silent}; replays {checker.replays_checked} ({checker.replay_rows} rows); compacted model checks "
              f"{checker.compacted_checks} ({checker.compacted_ambiguous} keys only by membership)")
        print(f"soak: retention deleted records below log start {dict(deleted_records)}, of which never read by "
              f"anyone {dict(unread)}; log starts checked {dict(checker.retention_checks)}; reader passes "
              f"{checker.observer_passes} (longest {checker.observer_max_s:.2f} s); sidecar {stats}")
        print(f"soak: Connect {connect}; tiering {tier}")
        timings["total_s"] = time.monotonic() - t_start
        print(f"soak: timings {({k: round(v) for k, v in timings.items()})}")
        summary = {
            "seed": seed, "minutes": SOAK_MIN, "input files": files, "records written": n_records,
            "records by topic": dict(by_topic), "records read (checked), by reader": dict(checker.reads),
            "writer batches": last_batch + 1, "kills": {c.name: c.kills for c in children},
            "kills mid-batch or mid-rewrite": dict(kills_mid_work),
            "consumer batches": {"cA": cons_a.batches, "cB": cons_b.batches},
            "available-now runs": sum(1 for line in cons_a.lines if line.startswith("run ")),
            "replays": checker.replays_checked, "replay rows": checker.replay_rows,
            "offsets skipped by consumers": dict(checker.skipped), "retention deleted": dict(deleted_records),
            "never read (expired first)": dict(unread), "log starts checked": dict(checker.retention_checks),
            "compacted model checks": checker.compacted_checks, "sidecar": stats, "tiering": tier,
            "connect": connect, "timings_s": {k: round(v) for k, v in timings.items()},
            "writes tried again after a killed sidecar's swap": dict(writes_retried),
            "remote reads sent again (a transfer the S3 client gave up on)": REMOTE_READS_RESENT.count,
            "connect query starts retried (worker start timeout)": sum(1 for line in client.lines
                                                                       if line.startswith("start retry")),
        }
        print("soak summary: " + json.dumps(summary, sort_keys=True), flush=True)
    finally:
        stop_observer.set()
        gen.stop.set()
        for c in children:
            c.cleanup()
