"""Kafka clients for tests that talk to the real broker (tests/kafka_broker.py), on confluent-kafka.

- ``create_topic(broker, name, partitions=1, config=None)``
- ``produce(broker, topic, records, compression="none", transactional_id=None, ...)``
- ``consume_all(broker, topic, partition=0, isolation="read_committed")``: every record a consumer
  returns, as ``ConsumedRecord`` tuples (offset, timestamp, key, value, headers), until the end offset.
- ``offsets_for_times(broker, topic, timestamps)``: the broker's ListOffsets answer per timestamp
  (-1 latest, -2 earliest, -3 max timestamp included), ``None`` where the broker has no offset.
"""
from __future__ import annotations

from typing import NamedTuple

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

QUIET = {"log_level": 2}   # librdkafka logs reconnects (e.g. across a broker restart) at info level


class ConsumedRecord(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


def admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap, **QUIET})


def create_topic(broker, name: str, partitions: int = 1, config: dict[str, str] | None = None) -> None:
    client = admin(broker)        # kept alive until the futures resolve (a dropped client cancels them)
    futures = client.create_topics([NewTopic(name, partitions, 1, config=config or {})])
    for future in futures.values():
        future.result(60)


def producer(broker, *, compression: str = "none", transactional_id: str | None = None,
             linger_ms: int = 20, **extra) -> Producer:
    conf = {"bootstrap.servers": broker.bootstrap, "compression.type": compression,
            "linger.ms": linger_ms, "enable.idempotence": True, **QUIET, **extra}
    if transactional_id is not None:
        conf["transactional.id"] = transactional_id
    return Producer(conf)


def produce(broker, topic: str, records, *, partition: int = 0, compression: str = "none", **extra) -> None:
    """``records``: iterable of dicts with key, value, timestamp and optional headers."""
    p = producer(broker, compression=compression, **extra)
    errors: list = []
    for r in records:
        p.produce(topic, partition=partition, key=r.get("key"), value=r.get("value"),
                  timestamp=r.get("timestamp", 0), headers=r.get("headers"),
                  on_delivery=lambda err, msg: errors.append(err) if err is not None else None)
        p.poll(0)
    left = p.flush(60)
    if left or errors:
        raise KafkaException(f"produce to {topic}: {left} undelivered, errors {errors[:3]}")


def end_offset(broker, topic: str, partition: int = 0, isolation: str = "read_committed") -> int:
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "seglog-tests-watermarks",
                  "isolation.level": isolation, **QUIET})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)[1]
    finally:
        c.close()


def consume_all(broker, topic: str, partition: int = 0, isolation: str = "read_committed",
                timeout_s: float = 60.0) -> list[ConsumedRecord]:
    """Every record a consumer with ``isolation`` returns from the log start to the end offset
    (the last stable offset under read_committed)."""
    import time

    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"seglog-tests-{topic}",
                  "isolation.level": isolation, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "enable.partition.eof": True, **QUIET})
    out: list[ConsumedRecord] = []
    try:
        end = c.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)[1]
        c.assign([TopicPartition(topic, partition, -2)])      # OFFSET_BEGINNING
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            msg = c.poll(1.0)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    if c.position([TopicPartition(topic, partition)])[0].offset >= end:
                        return out
                    continue
                raise KafkaException(msg.error())
            out.append(ConsumedRecord(msg.offset(), msg.timestamp()[1], msg.key(), msg.value(),
                                      tuple(msg.headers() or ())))
        raise TimeoutError(f"consuming {topic}-{partition} did not reach offset {end} in {timeout_s} s")
    finally:
        c.close()


IN_FLIGHT = 32
_SPECS = {-1: OffsetSpec.latest, -2: OffsetSpec.earliest, -3: OffsetSpec.max_timestamp}


def offsets_for_times(broker, topic: str, timestamps, partition: int = 0,
                      isolation: str = "read_committed") -> dict[int, int | None]:
    """The broker's ListOffsets answer for each timestamp: the offset, or None for "no offset"."""
    from confluent_kafka import IsolationLevel

    level = IsolationLevel.READ_COMMITTED if isolation == "read_committed" else IsolationLevel.READ_UNCOMMITTED
    a = admin(broker)
    answers: dict[int, int | None] = {}
    timestamps = list(dict.fromkeys(int(t) for t in timestamps))
    # One request per timestamp (a request maps each partition to one spec), IN_FLIGHT at once: 500 in
    # flight through one AdminClient once crashed librdkafka (confluent-kafka 2.16.1) with a SIGSEGV.
    for i in range(0, len(timestamps), IN_FLIGHT):
        chunk = timestamps[i:i + IN_FLIGHT]
        pending = {}
        for t in chunk:
            spec = _SPECS[t]() if t in _SPECS else OffsetSpec.for_timestamp(t)
            pending[t] = a.list_offsets({TopicPartition(topic, partition): spec}, isolation_level=level)
        for t, fut in pending.items():
            res = fut[TopicPartition(topic, partition)].result(60)
            answers[t] = None if res.offset < 0 else res.offset
    return answers
