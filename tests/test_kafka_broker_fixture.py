"""The Kafka broker fixture itself (tests/kafka_broker.py): it serves, keeps old timestamps, and a
restart raises the partition leader epoch (what tests/indexer/test_kafka_broker_read.py relies on)."""
from __future__ import annotations

import pytest

from tests.kafka_clients import consume_all, create_topic, offsets_for_times, produce

pytestmark = pytest.mark.kafka


def _leader_epochs(partition_dir) -> list[int]:
    """leader-epoch-checkpoint: version, count, then "epoch start-offset" lines."""
    lines = (partition_dir / "leader-epoch-checkpoint").read_text().split("\n")
    return [int(line.split()[0]) for line in lines[2:] if line.strip()]


def test_broker_serves_and_a_restart_raises_the_leader_epoch(kafka_broker):
    topic = "fixture-smoke"
    create_topic(kafka_broker, topic)
    old = 1_500_000_000_000                  # 2017: kept because log.retention.ms=-1
    produce(kafka_broker, topic, [{"key": b"k", "value": b"a", "timestamp": old},
                                  {"key": None, "value": b"b", "timestamp": old + 5}])
    got = consume_all(kafka_broker, topic)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in got] == [(0, old, b"k", b"a"), (1, old + 5, None, b"b")]
    assert offsets_for_times(kafka_broker, topic, [old + 1, -1, -2]) == {old + 1: 1, -1: 2, -2: 0}

    epoch_before = max(_leader_epochs(kafka_broker.partition_dir(topic)))
    kafka_broker.restart()
    produce(kafka_broker, topic, [{"value": b"c", "timestamp": old + 9}])
    assert [r.value for r in consume_all(kafka_broker, topic)] == [b"a", b"b", b"c"]
    assert max(_leader_epochs(kafka_broker.partition_dir(topic))) > epoch_before
