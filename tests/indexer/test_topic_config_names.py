"""Kafka's topic configuration names and values (docs/spec.md §5): KIP-937's two timestamp bounds with
the older names as aliases, compression.type's topic values, cleanup.policy as a list."""
from __future__ import annotations

import time

import pytest

from seglog.conf.topic_config import validate_topic_config
from seglog.errors import ConfigError, TimestampOutOfRangeError
from seglog.indexer.log import Log
from seglog.indexer.codec.records import Record
from tests.indexer.test_log_recovery import snapshot


@pytest.mark.parametrize("alias", ["max.message.time.difference.ms", "message.timestamp.difference.max.ms"])
def test_old_names_set_both_bounds_and_new_names_win(alias):
    cfg = validate_topic_config({alias: 5000})
    assert (cfg["message.timestamp.before.max.ms"], cfg["message.timestamp.after.max.ms"]) == (5000, 5000)
    assert alias not in cfg
    cfg = validate_topic_config({"message.timestamp.after.max.ms": 7, alias: 5000})
    assert (cfg["message.timestamp.before.max.ms"], cfg["message.timestamp.after.max.ms"]) == (5000, 7)
    with pytest.raises(ConfigError, match=f"'{alias}' sets it.*out of range"):
        validate_topic_config({alias: -1})


def test_before_and_after_are_checked_separately(tmp_path):
    now = int(time.time() * 1000)
    hour = 3_600_000
    with Log.open(tmp_path / "t-0", {"message.timestamp.before.max.ms": hour,
                                     "message.timestamp.after.max.ms": 60_000}) as log:
        log.append([Record(value=b"a", timestamp=now - hour // 2), Record(value=b"b", timestamp=now + 30_000)])
        before = snapshot(tmp_path / "t-0")
        with pytest.raises(TimestampOutOfRangeError, match="record 1 .*message.timestamp.after.max.ms=60000"):
            log.append([Record(value=b"c", timestamp=now), Record(value=b"d", timestamp=now + 10 * 60_000)])
        with pytest.raises(TimestampOutOfRangeError, match="record 0 .*message.timestamp.before.max.ms=3600000"):
            log.append([Record(value=b"e", timestamp=now - 2 * hour)])
        assert snapshot(tmp_path / "t-0") == before
        log.append([Record(value=b"f", timestamp=-1)])      # no timestamp: nothing to judge
        assert log.log_end_offset == 3


def test_compression_type_takes_kafkas_topic_values():
    for value in ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"):
        assert validate_topic_config({"compression.type": value})["compression.type"] == value
    with pytest.raises(ConfigError, match="'none' is not allowed; allowed: one of producer, uncompressed, gzip"):
        validate_topic_config({"compression.type": "none"})


def test_cleanup_policy_is_a_list():
    assert validate_topic_config({"cleanup.policy": "delete"})["cleanup.policy"] == "delete"
    assert validate_topic_config({"cleanup.policy": ["delete"]})["cleanup.policy"] == "delete"
    for both in ("compact,delete", "delete, compact", ["delete", "compact"]):
        cfg = validate_topic_config({"cleanup.policy": both})
        assert cfg["cleanup.policy"] == "compact,delete" and cfg.compacted and cfg.deletes
    cfg = validate_topic_config({"cleanup.policy": "compact"})
    assert cfg.compacted and not cfg.deletes


def test_compaction_settings_have_kafkas_names_and_defaults():
    cfg = validate_topic_config({})
    assert (cfg["min.cleanable.dirty.ratio"], cfg["min.compaction.lag.ms"], cfg["delete.retention.ms"]) == \
        (0.5, 0, 86_400_000)
    assert cfg["max.compaction.lag.ms"] == (1 << 63) - 1
    assert validate_topic_config({"min.cleanable.dirty.ratio": "0.25"})["min.cleanable.dirty.ratio"] == 0.25
    with pytest.raises(ConfigError, match="'min.cleanable.dirty.ratio' = 1.5 is out of range"):
        validate_topic_config({"min.cleanable.dirty.ratio": 1.5})
    with pytest.raises(ConfigError, match="is not a number"):
        validate_topic_config({"min.cleanable.dirty.ratio": "half"})
    with pytest.raises(ConfigError, match="'delete,shred' is not allowed"):
        validate_topic_config({"cleanup.policy": "delete,shred"})


def test_a_topic_recorded_with_none_by_seglog_0_2_still_opens(tmp_path):
    import json

    from seglog.indexer.root import LogRoot
    from seglog.indexer.topics import create_topic, topic_file

    create_topic(tmp_path, "old", 1, {"compression.type": "uncompressed"})
    path = topic_file(tmp_path, "old")
    doc = json.loads(path.read_text())
    doc["config"]["compression.type"] = "none"          # what seglog 0.2 accepted and recorded
    path.write_text(json.dumps(doc))
    assert LogRoot(tmp_path).topic_config("old")["compression.type"] == "uncompressed"
