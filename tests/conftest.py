"""Shared fixtures. One real local Spark session (local[2]) and one real Kafka broker (KRaft, loopback)
for the whole run, each created on first use."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark():
    from seglog.sink.session import local_session
    from seglog.source import register

    session = local_session("seglog-tests", with_delta=True)
    register(session)  # the seglog data source, for this session
    yield session
    session.stop()


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    """A real Kafka 4.1 broker for the session (tests/kafka_broker.py): ``.bootstrap``, ``.log_dir``,
    ``.partition_dir(topic, p)``, ``.restart()``. Stopped by its pid when the session ends, also after
    failures. Tests that stop or restart it leave it running again."""
    from tests.kafka_broker import KafkaBroker

    broker = KafkaBroker(tmp_path_factory.mktemp("kafka-broker"))
    try:
        broker.start()
        yield broker
    finally:
        broker.stop()
