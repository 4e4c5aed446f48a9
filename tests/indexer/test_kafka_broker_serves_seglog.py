"""seglog writes, a Kafka broker serves (docs/kafka.md, "Kafka reading seglog's folders").

seglog writes a partition with current, non-monotonic CreateTime timestamps, keys and null keys,
tombstones and headers, many small segments in every state a folder can be copied in: sealed by the
sidecar's seal, rolled by the writer and never flushed or sealed, and the active segment of a cleanly
closed log. The folder replaces the files of the same partition in a stopped broker's log dir (the
broker created the topic, so its metadata and topic id are its own). After the broker starts again:

- a consumer reads every record identically (offset, timestamp, key, value, headers);
- the broker's ListOffsets answer equals brute force for every distinct timestamp and its
  neighbours, and for -1, -2 and -3 (KIP-734), and equals seglog's own `offset_for_timestamp`;
- with the topic at Kafka's default retention (7 days) and retention checks every second, the
  broker deletes nothing: no index it reads holds a zero-filled tail it could take for "largest
  timestamp 0" (KAFKA-10207).

This broker is its own (not the session's): it needs retention checks that start at once.
"""
from __future__ import annotations

import random
import shutil
import time

import pytest

from seglog.indexer.log import Log
from seglog.indexer.codec.records import Record
from seglog.indexer.segment import now_ms
from tests.kafka_clients import consume_all, create_topic, offsets_for_times

pytestmark = pytest.mark.kafka

TOPIC = "from-seglog"
CONFIG = {"segment.bytes": 2048, "index.interval.bytes": 200, "segment.index.bytes": 4096}


def seglog_records(rng: random.Random, n: int, now: int) -> list[Record]:
    out = []
    for i in range(n):
        key = None if i % 7 == 0 else b"key-%d" % rng.randrange(30)
        value = None if i % 11 == 5 else bytes(rng.randrange(256) for _ in range(rng.randrange(0, 90)))
        headers = tuple(("h%d" % j, None if j == 1 else b"v%d" % i) for j in range(i % 3))
        # Current time, going back and forth over a few minutes, repeating.
        out.append(Record(key, value, now - 1000 * rng.randrange(240), headers))
    return out


def write_folder(part, rng: random.Random) -> list[Record]:
    """Returns the records with their offsets. Sealed, rolled-unflushed and active segments."""
    now = now_ms()
    written: list[Record] = []
    with Log.open(part, CONFIG) as log:
        for round_ in range(3):
            for _ in range(20):
                recs = seglog_records(rng, rng.randrange(1, 12), now)
                first = log.append(recs).first_offset
                written += [Record(r.key, r.value, r.timestamp, r.headers, first + i) for i, r in enumerate(recs)]
            if round_ == 0:
                log.flush()
                log.seal_inactive()        # the sidecar's seal: fsynced
        # the later rolls were never flushed nor sealed by a sidecar; close trims the active segment
    with Log.open(part, readonly=True) as log:
        states = [s.state for s in log.segments()]
    assert states[-1] == "active" and len(states) > 12, states
    return written


def place_into(broker_part, seglog_part) -> None:
    """Swap the broker's segment files for seglog's, keeping the broker's own metadata files."""
    for p in broker_part.iterdir():
        if p.suffix in {".log", ".index", ".timeindex", ".snapshot", ".txnindex"}:
            p.unlink()
    for p in seglog_part.iterdir():
        if p.suffix in {".log", ".index", ".timeindex"}:
            shutil.copy2(p, broker_part / p.name)


@pytest.fixture(scope="module")
def fast_retention_broker(tmp_path_factory):
    from tests.kafka_broker import KafkaBroker

    broker = KafkaBroker(tmp_path_factory.mktemp("kafka-retention"),
                         extra_config={"log.retention.check.interval.ms": "1000",
                                       "log.initial.task.delay.ms": "0",
                                       "log.segment.delete.delay.ms": "0"})
    try:
        broker.start()
        yield broker
    finally:
        broker.stop()


def test_a_broker_serves_seglog_folders_exactly_and_deletes_nothing(fast_retention_broker, tmp_path):
    broker = fast_retention_broker
    rng = random.Random(20261122)
    create_topic(broker, TOPIC, 1, {"retention.ms": str(7 * 24 * 3600 * 1000)})   # Kafka's default
    seglog_part = tmp_path / f"{TOPIC}-0"
    written = write_folder(seglog_part, rng)
    with Log.open(seglog_part, readonly=True) as log:
        ours = {t: log.offset_for_timestamp(t) for t in (-1, -2, -3)}

    broker.stop()                      # a clean shutdown: the broker trusts the files it finds
    place_into(broker.partition_dir(TOPIC), seglog_part)
    copied = sorted(p.name for p in broker.partition_dir(TOPIC).glob("*.log"))
    broker.start()

    got = consume_all(broker, TOPIC, isolation="read_uncommitted")
    assert [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in got] == \
        [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in written]

    distinct = sorted({r.timestamp for r in written})
    probes = sorted({t + d for t in distinct for d in (-1, 0, 1)})

    def brute(t: int) -> int | None:
        return next((r.offset for r in written if r.timestamp >= t), None)

    answers = offsets_for_times(broker, TOPIC, probes + [-1, -2, -3], isolation="read_uncommitted")
    wrong = {t: (answers[t], brute(t)) for t in probes if answers[t] != brute(t)}
    assert not wrong, f"{len(wrong)} of {len(probes)} ListOffsets answers differ from brute force: " \
                      f"{dict(list(wrong.items())[:5])}"
    largest = max(r.timestamp for r in written)
    assert answers[-3] == brute(largest) == ours[-3]
    assert answers[-2] == 0 == ours[-2]
    assert answers[-1] == len(written) == ours[-1]

    time.sleep(5)                      # five retention checks
    assert sorted(p.name for p in broker.partition_dir(TOPIC).glob("*.log")) == copied
    assert not list(broker.partition_dir(TOPIC).glob("*.deleted"))
    assert "due to retention" not in broker.log_tail(200_000) or TOPIC not in broker.log_tail(200_000)
