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


def test_idempotent_and_values_equal_to_defaults_are_recorded(tmp_path):
    # A value equal to the built-in default is still what the topic asked for: it is recorded, so
    # that a sidecar file's `log:` defaults can never override it (issue: 7-day topic, 2-hour file).
    a = create_topic(tmp_path, "t", 2, {"segment.bytes": 1 << 30})
    assert a.config == {"segment.bytes": 1 << 30}
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


def test_recorded_default_value_wins_over_the_sidecar_files_log_section(tmp_path):
    from seglog.indexer.root import LogRoot

    week = 7 * 86_400_000
    create_topic(tmp_path, "weekly", 1, {"retention.ms": week})          # equal to Kafka's default
    create_topic(tmp_path, "plain", 1, None)
    root = LogRoot(tmp_path)
    file_log_section = {"retention.ms": 3_600_000}
    assert root.topic_config("weekly", base=file_log_section)["retention.ms"] == week
    assert root.topic_config("plain", base=file_log_section)["retention.ms"] == 3_600_000
    assert root.topic_config("weekly", overrides={"retention.ms": 5}, base=file_log_section)["retention.ms"] == 5


def test_topic_names_ending_in_a_newline_are_refused(tmp_path):
    from seglog.indexer.names import parse_partition_dir, validate_topic

    for bad in ("events\n", "events\r", "\nevents"):
        with pytest.raises(InvalidTopicError):
            validate_topic(bad)
    assert parse_partition_dir("events-0\n") is None


def test_longest_valid_topic_names_work_end_to_end(tmp_path):
    from seglog.indexer import Log, Record
    from seglog.indexer.commit_log import CommitLog
    from seglog.indexer.names import partition_dir_name

    for n in (230, 249):
        topic = "t" * (n - 1) + str(n % 10)
        create_topic(tmp_path, topic, 3, {"segment.bytes": 4096})
        with Log.open(tmp_path / partition_dir_name(topic, 2), outside_commit_log=True) as log:
            log.append([Record(value=b"v", timestamp=1)])
            log.flush()
        CommitLog(tmp_path, topic).commit("w", 0, {2: 1})
        assert load_topic(tmp_path, topic).partitions == 3
        assert CommitLog(tmp_path, topic).end_offsets() == {2: 1}
    assert sorted(list_topics(tmp_path), key=len)[-1].endswith("9")


def test_a_topic_colliding_with_one_of_the_root_is_refused_and_nothing_created(tmp_path):
    """Issue 37 item 11: Kafka refuses 'a_b' next to 'a.b' ('.' and '_' name one metric: Topic.hasCollision); so
    does create_topic (the storage API, and every Python creator), naming the topic it collides with, and writes
    nothing. A topic known only by its partition folder counts; the topic itself is no collision."""
    create_topic(tmp_path, "a.b", 2)
    with pytest.raises(InvalidTopicError, match=r"topic 'a_b' collides with existing topic 'a.b'"):
        create_topic(tmp_path, "a_b", 2)
    assert list_topics(tmp_path) == ["a.b"] and not topic_file(tmp_path, "a_b").exists()
    assert create_topic(tmp_path, "a.b", 2).name == "a.b"
    (tmp_path / "x_y-0").mkdir()
    with pytest.raises(InvalidTopicError, match=r"topic 'x.y' collides with existing topic 'x_y'"):
        create_topic(tmp_path, "x.y", 1)
    assert load_topic(tmp_path, "x.y") is None
    assert create_topic(tmp_path, "a-b", 1).name == "a-b"      # '-' is no collision
