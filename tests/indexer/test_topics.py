"""Topic metadata: recorded once, idempotent, conflicts named, concurrent creators agree."""
from __future__ import annotations

import json
import multiprocessing as mp

import pytest

from seglog.errors import ConfigError, InvalidTopicError
from seglog.indexer.topics import create_topic, list_topics, load_topic, topic_file


def test_create_then_load(tmp_path):
    meta = create_topic(tmp_path, "events", 4, {"segment.bytes": 4096})
    assert meta.partitions == 4 and meta.config == {"segment.bytes": 4096} and meta.created_ms > 0
    assert load_topic(tmp_path, "events") == meta
    assert json.loads(topic_file(tmp_path, "events").read_text())["partitions"] == 4
    assert meta.topic_config()["segment.bytes"] == 4096
    assert list_topics(tmp_path) == ["events"]


def test_load_missing_is_none(tmp_path):
    assert load_topic(tmp_path, "nothing") is None


def test_idempotent_and_default_values_are_not_overrides(tmp_path):
    a = create_topic(tmp_path, "t", 2, {"segment.bytes": 1 << 30})   # the default: no override
    assert a.config == {}
    assert create_topic(tmp_path, "t", 2, None) == a
    assert create_topic(tmp_path, "t", 2, {}) == a


def test_conflicting_partitions_and_config_name_both(tmp_path):
    create_topic(tmp_path, "t", 2, {"retention.ms": 1000})
    with pytest.raises(InvalidTopicError, match=r"2 partitions, 3 were asked"):
        create_topic(tmp_path, "t", 3, {"retention.ms": 1000})
    with pytest.raises(InvalidTopicError, match=r"'retention.ms': 1000.*'retention.ms': 2000"):
        create_topic(tmp_path, "t", 2, {"retention.ms": 2000})


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../x", "x" * 250, "sp ace"])
def test_bad_names_refused(tmp_path, name):
    with pytest.raises(InvalidTopicError):
        create_topic(tmp_path, name, 1, None)
    assert not (tmp_path / "_seglog").exists() or not any((tmp_path / "_seglog").rglob("*.json"))


@pytest.mark.parametrize("partitions", [0, -1, True, 1.5, "2"])
def test_bad_partition_counts_refused(tmp_path, partitions):
    with pytest.raises(InvalidTopicError, match="partitions"):
        create_topic(tmp_path, "t", partitions, None)


def test_bad_config_refused(tmp_path):
    with pytest.raises(ConfigError, match="segment.byte"):
        create_topic(tmp_path, "t", 1, {"segment.byte": 4096})
    assert load_topic(tmp_path, "t") is None


def _create(args):
    root, partitions = args
    try:
        return create_topic(root, "race", partitions, None).partitions
    except InvalidTopicError:
        return -1


def test_concurrent_creators_agree(tmp_path):
    # 8 processes race to create the topic with 1..8 partitions: exactly one wins, every other sees
    # the winner's count (and is refused unless it asked the same).
    with mp.get_context("fork").Pool(8) as pool:
        results = pool.map(_create, [(str(tmp_path), n) for n in range(1, 9)])
    winner = load_topic(tmp_path, "race").partitions
    assert results.count(winner) == 1 and results.count(-1) == 7
    assert [p.name for p in topic_file(tmp_path, "race").parent.iterdir()] == ["race.json"]
