"""The conformance corpus's cases a real Kafka 4.1 broker writes (tests/kafka_broker.py), for
tests/conformance/generate.py:

- broker-codecs: every codec (none, gzip, snappy, lz4, zstd) in one partition, keys and null keys,
  tombstones, headers, CreateTime going back and forth; segments rolled by segment.ms;
- broker-transactions: two transactional producers (one lz4) interleaved with a plain one (gzip),
  transactions committed and aborted, then a third (zstd) left open with plain records after it;
- broker-leader-epochs: records, a broker restart (a new partition leader epoch), more records; the
  folder's leader-epoch-checkpoint.

The model is what the generator sent: records in send order (each produce call flushed, so offsets
run on in that order), every commit or abort a marker taking the next offset (the generator waits for
the high watermark to pass it before going on). What the broker decides is read from its files with the
generator's own header parser: segment bases, and the markers' timestamps (the coordinator's clock).
Before a case is written, its model is held to the broker itself: a consumer's records under both
isolation levels, and ListOffsets for every probe.
"""
from __future__ import annotations

import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from tests.conformance.generate import CORPUS, PART, copy_partition, write_commit
from tests.conformance.model import Model, Rec, expected, walk

T0 = 1_600_000_000_000          # 2020 (the broker runs with log.retention.ms=-1)
CASES = ("broker-codecs", "broker-transactions", "broker-leader-epochs")


def records(rng: random.Random, n: int, t0: int) -> list[dict]:
    out = []
    t = t0
    for i in range(n):
        t = max(t0, t + rng.choice([-2000, -1, 0, 1, 3, 500, 1000]))
        out.append({"key": None if rng.random() < 0.15 else b"key-%d" % rng.randrange(10),
                    "value": None if rng.random() < 0.1 else rng.randbytes(rng.randrange(0, 24)),
                    "timestamp": t,
                    "headers": None if rng.random() < 0.7 else
                    [("h%d" % j, None if j == 1 else rng.randbytes(3)) for j in range(rng.randrange(1, 3))]})
    return out


class Partition:
    """One topic's partition 0 as the generator wrote it: the model records, the markers' offsets."""

    def __init__(self, broker, topic: str):
        self.broker, self.topic = broker, topic
        self.recs: list[Rec] = []
        self.markers: dict[int, tuple[str, str]] = {}     # offset -> (producer, COMMIT/ABORT)

    def send(self, p, rs: list[dict], producer_name: str | None = None) -> None:
        for r in rs:
            p.produce(self.topic, partition=0, key=r["key"], value=r["value"], timestamp=r["timestamp"],
                      headers=r["headers"])
        assert p.flush(60) == 0
        for r in rs:
            self.recs.append(Rec(len(self.recs), r["timestamp"], r["key"], r["value"],
                                 tuple((k, v) for k, v in (r["headers"] or ())), producer_name))
        self.wait_end()

    def end(self, p, producer_name: str, commit: bool) -> None:
        (p.commit_transaction if commit else p.abort_transaction)(60)
        self.markers[len(self.recs)] = (producer_name, "COMMIT" if commit else "ABORT")
        # a placeholder: the marker's timestamp is the coordinator's, read from the files later
        self.recs.append(Rec(len(self.recs), -1, producer=producer_name, control="COMMIT" if commit else "ABORT"))
        self.wait_end()

    def wait_end(self) -> None:
        """The broker's high watermark reaches the model's end (a marker is written after the
        coordinator answers the producer: the next send must come after it)."""
        from tests.kafka_clients import end_offset

        deadline = time.monotonic() + 60
        while (hw := end_offset(self.broker, self.topic, isolation="read_uncommitted")) != len(self.recs):
            assert hw < len(self.recs) and time.monotonic() < deadline, (self.topic, hw, len(self.recs))
            time.sleep(0.05)

    def model(self) -> Model:
        """The model with the markers' timestamps and the segment bases from the broker's files."""
        d = self.broker.partition_dir(self.topic)
        logs = sorted(d.glob("*.log"))
        bases = [int(p.stem) for p in logs]
        heads = [h for p in logs for h in walk(p)]
        controls = {h.base_offset: h for h in heads if h.control}
        assert sorted(controls) == sorted(self.markers), (self.topic, sorted(controls), sorted(self.markers))
        assert heads[-1].last_offset + 1 == len(self.recs), (self.topic, heads[-1], len(self.recs))
        recs = [Rec(r.offset, controls[r.offset].max_timestamp, producer=r.producer, control=r.control)
                if r.control else r for r in self.recs]
        n = len(recs)
        return Model(recs, bases, [True] * (len(bases) - 1) + [False], n, n)


def check_against_broker(part: Partition, model: Model) -> None:
    """The model agrees with the broker's consumer (both isolation levels) and its ListOffsets."""
    from tests.kafka_clients import consume_all, offsets_for_times

    for iso in ("read_uncommitted", "read_committed"):
        got = [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in
               consume_all(part.broker, part.topic, isolation=iso)]
        want = [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in model.visible(iso)]
        assert got == want, (part.topic, iso, [(g, w) for g, w in zip(got, want) if g != w][:3], len(got), len(want))
    probes = model.probes()
    broker = offsets_for_times(part.broker, part.topic, probes, isolation="read_uncommitted")
    wrong = {t: (broker[t], model.offset_for_timestamp(t)) for t in probes if broker[t] != model.offset_for_timestamp(t)}
    assert not wrong, (part.topic, "ListOffsets (broker, model)", list(wrong.items())[:8])


def generate(only: set[str] | None) -> None:
    if only and not (set(CASES) & only):
        return
    from tests.kafka_broker import KafkaBroker
    from tests.kafka_clients import create_topic, producer

    rng = random.Random(27)
    with tempfile.TemporaryDirectory(prefix="conformance-broker-") as tmp:
        broker = KafkaBroker(Path(tmp))
        started = time.monotonic()
        broker.start()
        try:
            # -- every codec; segment.ms 10 s with CreateTime jumping 60 s per codec: the broker rolls
            create_topic(broker, "codecs", config={"segment.ms": "10000", "index.interval.bytes": "200"})
            codecs = Partition(broker, "codecs")
            for i, codec in enumerate(["none", "gzip", "snappy", "lz4", "zstd"]):
                p = producer(broker, compression=codec, linger_ms=1000)
                for chunk in range(2):
                    codecs.send(p, records(rng, rng.randrange(6, 14), T0 + 60_000 * i + 3000 * chunk))

            # -- transactions
            create_topic(broker, "txn", config={"index.interval.bytes": "200"})
            txn = Partition(broker, "txn")
            plain = producer(broker, compression="gzip", linger_ms=1000)
            a = producer(broker, transactional_id="conformance-a", linger_ms=1000)
            b = producer(broker, compression="lz4", transactional_id="conformance-b", linger_ms=1000)
            # left open: its transaction must outlive the run (the coordinator aborts one after its timeout)
            c = producer(broker, compression="zstd", transactional_id="conformance-c", linger_ms=1000,
                         **{"transaction.timeout.ms": 900_000})
            keep = [plain, a, b, c]      # alive until the broker stops: a destroyed producer could end its transaction
            for p in (a, b, c):
                p.init_transactions(60)
            t = T0 + 3_600_000
            txn.send(plain, records(rng, 3, t))
            a.begin_transaction()
            b.begin_transaction()
            txn.send(a, records(rng, 4, t + 10_000), "a")
            txn.send(b, records(rng, 3, t + 20_000), "b")
            txn.send(plain, records(rng, 2, t + 30_000))
            txn.send(a, records(rng, 2, t + 40_000), "a")
            txn.end(a, "a", commit=True)
            txn.end(b, "b", commit=False)
            a.begin_transaction()
            txn.send(a, records(rng, 3, t + 50_000), "a")
            txn.end(a, "a", commit=False)
            b.begin_transaction()
            txn.send(b, records(rng, 2, t + 60_000), "b")
            txn.send(plain, records(rng, 2, t + 70_000))
            txn.end(b, "b", commit=True)
            c.begin_transaction()
            txn.send(c, records(rng, 3, t + 80_000), "c")      # left open: read_committed stops at it
            txn.send(plain, records(rng, 3, t + 90_000))

            # -- leader epochs: records, a restart, more records
            create_topic(broker, "epochs", config={"index.interval.bytes": "200"})
            epochs = Partition(broker, "epochs")
            p = producer(broker, compression="zstd", linger_ms=1000)
            for chunk in range(2):
                epochs.send(p, records(rng, 8, T0 + 7_200_000 + 1000 * chunk))
            broker.restart()
            p = producer(broker, compression="snappy", linger_ms=1000)
            keep.append(p)
            for chunk in range(2):
                epochs.send(p, records(rng, 8, T0 + 7_300_000 + 1000 * chunk))

            parts = {"broker-codecs": codecs, "broker-transactions": txn, "broker-leader-epochs": epochs}
            models = {}
            for case, part in parts.items():
                models[case] = part.model()
                check_against_broker(part, models[case])
            heads = [h for f in sorted(broker.partition_dir("epochs").glob("*.log")) for h in walk(f)]
            assert heads[0].leader_epoch < heads[-1].leader_epoch, "the restart must raise the leader epoch"
            assert len(models["broker-codecs"].bases) >= 3, "the broker must roll"
        finally:
            broker.stop()
        keep.clear()
        descriptions = {
            "broker-codecs": "A Kafka 4.1 broker's folder: batches of every codec (none, gzip, snappy, lz4, zstd), "
                             "keys, null keys, tombstones, headers, CreateTime going back and forth; segments rolled "
                             "by segment.ms, sealed the broker's way.",
            "broker-transactions": "A Kafka 4.1 broker's folder: two transactional producers (one lz4) and a plain one "
                                   "(gzip) interleaved, transactions committed and aborted (COMMIT/ABORT markers take "
                                   "offsets; lookups by timestamp see the markers, as ListOffsets does), then a "
                                   "transaction left open: read_committed stops at its first offset.",
            "broker-leader-epochs": "A Kafka 4.1 broker's folder: zstd records, a broker restart that raises the "
                                    "partition leader epoch, snappy records; the folder's leader-epoch-checkpoint.",
        }
        from tests.conformance.generate import write_case
        for case, part in parts.items():
            if only and case not in only:
                continue
            root = CORPUS / case
            shutil.rmtree(root, ignore_errors=True)
            copy_partition(broker.partition_dir(part.topic), root / PART)
            write_commit(root, models[case].committed_end)
            write_case(expected(models[case], case, "broker", descriptions[case]))
        print(f"broker cases: {time.monotonic() - started:.1f} s", file=sys.stderr)
