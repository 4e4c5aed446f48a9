"""The broker writes, seglog reads (docs/kafka.md, "Reading a Kafka broker's folders").

A real Kafka 4.1 broker (tests/kafka_broker.py) writes topics with every codec, keys and null keys,
tombstones, headers, non-monotonic CreateTime timestamps, transactions (committed, aborted, two
transactional producers interleaved with a plain one), and a leader epoch raised by a broker restart.
seglog reads each partition folder in place, read-only, while the broker serves; then:

- `Log.read` and `Log.read_arrow` return exactly what a consumer returns (every record and offset),
  with read_committed and with read_uncommitted;
- every `offset_for_timestamp` probe (each distinct timestamp and its neighbours, -1, -2, -3) equals the
  broker's ListOffsets answer, through the API and through `seglog offsets-for-times`;
- `seglog verify` finds nothing wrong and `seglog dump` reads every batch (producer ids shown).
"""
from __future__ import annotations

import random
import subprocess
import sys

import pytest

from seglog.indexer.log import Log
from tests.kafka_clients import consume_all, create_topic, offsets_for_times, produce, producer

pytestmark = pytest.mark.kafka

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
T0 = 1_600_000_000_000            # 2020: kept only because the broker runs with log.retention.ms=-1


def broker_records(rng: random.Random, n: int, distinct_ts: int = 80, shift_ms: int = 0):
    out = []
    for i in range(n):
        key = None if i % 7 == 0 else b"key-%d" % rng.randrange(20)
        value = None if i % 11 == 5 else bytes(rng.randrange(256) for _ in range(rng.randrange(0, 120)))
        headers = [("h%d" % j, None if j == 1 else b"v%d" % i) for j in range(i % 3)] or None
        # Non-monotonic CreateTime: a random walk over a small set, so timestamps repeat and go back.
        out.append({"key": key, "value": value, "timestamp": T0 + shift_ms + 1000 * rng.randrange(distinct_ts),
                    "headers": headers})
    return out


def transaction_producers(broker, topic: str, rng: random.Random):
    """A plain producer, two transactional ones (one to commit, one to leave open), and send(p, n):
    n random records through p to partition 0 of `topic`, flushed."""
    plain = producer(broker)
    committed, open_ = (producer(broker, transactional_id=f"{topic}-{n}") for n in "co")
    for p in (committed, open_):
        p.init_transactions(60)

    def send(p, n):
        for r in broker_records(rng, n):
            p.produce(topic, partition=0, key=r["key"], value=r["value"], timestamp=r["timestamp"])
        assert p.flush(30) == 0

    return plain, committed, open_, send


def _rows(records):
    return [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in records]


def _arrow_rows(log, isolation):
    out = []
    for batch in log.read_arrow(log.log_start_offset, isolation_level=isolation):
        d = batch.to_pydict()
        out += [(o, t, k, v, tuple((h["key"], h["value"]) for h in hs))
                for o, t, k, v, hs in zip(d["offset"], d["timestamp"], d["key"], d["value"], d["headers"])]
    return out


def write_transactions(broker, topic: str, rng: random.Random) -> None:
    """Two transactional producers (one lz4) interleaved with a plain one; some transactions abort."""
    tx = [producer(broker, transactional_id=f"{topic}-a"), producer(broker, compression="lz4",
                                                                    transactional_id=f"{topic}-b")]
    plain = producer(broker, compression="gzip")
    for p in tx:
        p.init_transactions(60)
    for round_ in range(12):
        for p in tx:
            p.begin_transaction()
        for i, r in enumerate(broker_records(rng, 30)):
            target = tx[i % 2] if i % 5 else plain
            target.produce(topic, partition=0, key=r["key"], value=r["value"], timestamp=r["timestamp"],
                           headers=r["headers"])
            target.poll(0)
            if i % 10 == 9:
                for p in tx:
                    p.flush(30)
        plain.flush(30)
        for k, p in enumerate(tx):
            if (round_ + k) % 3 == 0:
                p.abort_transaction(60)
            else:
                p.commit_transaction(60)
    assert plain.flush(30) == 0


@pytest.fixture(scope="module")
def broker_topics(kafka_broker):
    """Topics the broker wrote, by name; the broker is running when tests start."""
    rng = random.Random(11)
    topics = {}
    for codec in CODECS:
        name = f"read-{codec}"
        # segment.ms 10 s: CreateTime going 10 s past a segment's first timestamp rolls it, so the
        # broker writes rolled segments (sealed the broker's way) and an active one.
        create_topic(kafka_broker, name, config={"segment.ms": "10000", "index.interval.bytes": "256"})
        for chunk in range(4):          # several produce calls: several batches, some with many records
            produce(kafka_broker, name, broker_records(rng, 150, shift_ms=60_000 * chunk), compression=codec,
                    linger_ms=5 + 20 * chunk)
        topics[name] = codec
    create_topic(kafka_broker, "read-txn")
    write_transactions(kafka_broker, "read-txn", rng)
    topics["read-txn"] = "txn"
    for codec in CODECS:
        assert len(list(kafka_broker.partition_dir(f"read-{codec}").glob("*.log"))) > 2, "the broker must roll"
    create_topic(kafka_broker, "read-epoch")
    produce(kafka_broker, "read-epoch", broker_records(rng, 100), compression="zstd")
    kafka_broker.restart()              # a new leader epoch for every partition
    produce(kafka_broker, "read-epoch", broker_records(rng, 100), compression="snappy")
    topics["read-epoch"] = "epoch"
    return topics


TOPICS = [f"read-{c}" for c in CODECS] + ["read-txn", "read-epoch"]


@pytest.mark.parametrize("topic", TOPICS)
@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
def test_records_equal_what_a_consumer_returns(kafka_broker, broker_topics, topic, isolation):
    expected = _rows(consume_all(kafka_broker, topic, isolation=isolation))
    assert expected
    with Log.open(kafka_broker.partition_dir(topic), readonly=True) as log:
        got = [(r.offset, r.timestamp, r.key, r.value, r.headers)
               for r in log.read(isolation_level=isolation)]
        assert got == expected
        assert _arrow_rows(log, isolation) == expected


def test_transactions_are_really_there(kafka_broker, broker_topics):
    """The transactional topic holds aborted records and markers, so the test above judges them."""
    committed = consume_all(kafka_broker, "read-txn", isolation="read_committed")
    everything = consume_all(kafka_broker, "read-txn", isolation="read_uncommitted")
    assert len(everything) > len(committed) > 0
    with Log.open(kafka_broker.partition_dir("read-txn"), readonly=True) as log:
        assert log.log_end_offset > len(everything)          # control markers take offsets


def test_the_restart_raised_the_leader_epoch(kafka_broker, broker_topics):
    from seglog.indexer.codec.records import scan_batches

    data = b"".join(p.read_bytes() for p in sorted(kafka_broker.partition_dir("read-epoch").glob("*.log")))
    epochs = [h.partition_leader_epoch for h in scan_batches(data, 0).headers]
    assert epochs == sorted(epochs) and epochs[-1] > epochs[0]


@pytest.mark.parametrize("topic", TOPICS)
def test_every_timestamp_lookup_equals_list_offsets(kafka_broker, broker_topics, topic):
    everything = consume_all(kafka_broker, topic, isolation="read_uncommitted")
    probes = sorted({r.timestamp + d for r in everything for d in (-1, 0, 1)} | {0, T0 + 10**9})
    broker = offsets_for_times(kafka_broker, topic, probes + [-1, -2, -3])
    with Log.open(kafka_broker.partition_dir(topic), readonly=True) as log:
        ours = {t: log.offset_for_timestamp(t) for t in probes + [-1, -2, -3]}
    wrong = {t: (ours[t], broker[t]) for t in broker if ours[t] != broker[t]}
    assert not wrong, f"{len(wrong)} of {len(broker)} lookups differ (ours, broker's): {list(wrong.items())[:10]}"


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "seglog", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("topic", ["read-lz4", "read-zstd", "read-txn"])
def test_cli_reads_the_broker_folder(kafka_broker, broker_topics, topic):
    everything = consume_all(kafka_broker, topic, isolation="read_uncommitted")
    probes = sorted({r.timestamp for r in everything})[:: max(1, len(everything) // 15)]
    broker = offsets_for_times(kafka_broker, topic, probes + [-3])
    for t in probes + ["max-timestamp"]:
        res = _cli("offsets-for-times", kafka_broker.log_dir, "--topic", topic, "--time", t)
        assert res.returncode == 0, res.stderr
        answer = broker[-3 if t == "max-timestamp" else t]
        want = "-" if answer is None else str(answer)
        assert res.stdout.strip() == f"{topic}:0:{want}"
    logs = sorted(kafka_broker.partition_dir(topic).glob("*.log"))
    res = _cli("dump", "--deep-iteration", *logs)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "producerId:" in res.stdout and "partitionLeaderEpoch:" in res.stdout
    if topic == "read-txn":
        assert "isTransactional: true" in res.stdout and "endTxnMarker: ABORT" in res.stdout
        assert "endTxnMarker: COMMIT" in res.stdout
    res = _cli("verify", kafka_broker.log_dir, "--topic", topic)
    # Records, CRCs, codecs, epochs, offsets and Kafka's own indexes (rolled segments included): no fault.
    faults = [line for line in res.stdout.splitlines() if line.startswith("FAULT")]
    assert res.returncode == 0 and not faults and not res.stderr, res.stdout[-3000:] + res.stderr[-3000:]


def test_an_open_transaction_ends_a_read_committed_read(kafka_broker):
    """A transaction without its marker yet: a read_committed consumer stops at its first offset (the
    last stable offset), also for other producers' records after it; seglog stops there too."""
    topic = "read-open-txn"
    create_topic(kafka_broker, topic)
    rng = random.Random(3)
    plain, committed, open_, send = transaction_producers(kafka_broker, topic, rng)

    committed.begin_transaction()
    send(committed, 20)
    committed.commit_transaction(60)
    send(plain, 10)
    open_.begin_transaction()
    send(open_, 15)                       # flushed, never committed while we read
    send(plain, 10)
    try:
        for isolation in ("read_committed", "read_uncommitted"):
            expected = _rows(consume_all(kafka_broker, topic, isolation=isolation))
            with Log.open(kafka_broker.partition_dir(topic), readonly=True) as log:
                assert [(r.offset, r.timestamp, r.key, r.value, r.headers)
                        for r in log.read(isolation_level=isolation)] == expected
                assert _arrow_rows(log, isolation) == expected
        assert len(_rows(consume_all(kafka_broker, topic, isolation="read_committed"))) == 30
    finally:
        open_.abort_transaction(60)
