"""Option parsing of the seglog data source: Spark's Kafka source names, precedence and refusals."""
from __future__ import annotations

import pytest

from seglog.errors import ConfigError
from seglog.source.options import DEFAULT_MAX_BYTES_PER_TASK, parse_options


def opts(**kw):
    base = {"path": "/data/log", "topic": "events"}
    base.update({k.lower(): str(v) for k, v in kw.items()})
    return parse_options(base)


def test_defaults_read_everything_committed():
    o = opts()
    assert o.root == "/data/log" and o.topics == ("events",)
    assert o.starting.kind == "earliest" and o.ending.kind == "latest"
    assert o.strategy == "error" and o.fail_on_data_loss is True and o.include_headers is False
    assert o.max_bytes_per_task == DEFAULT_MAX_BYTES_PER_TASK and o.min_partitions is None


def test_check_crcs_is_kafkas_check_crcs_default_true():
    assert opts().check_crcs is True
    assert opts(checkCrcs="False").check_crcs is False


def test_keys_are_case_insensitive_and_topic_list():
    o = parse_options({"PATH": "/r", "Topic": "a, b,a", "includeHeaders": "TRUE", "FailOnDataLoss": "false"})
    assert o.topics == ("a", "b")
    assert o.include_headers is True and o.fail_on_data_loss is False


def test_subscribe_alias():
    assert parse_options({"path": "/r", "subscribe": "x"}).topics == ("x",)
    with pytest.raises(ConfigError, match="exactly one of 'subscribe' .*given: topic, subscribe"):
        parse_options({"path": "/r", "subscribe": "x", "topic": "x"})


def test_subscribe_pattern_and_assign_exactly_one_of_the_three():
    o = parse_options({"path": "/r", "subscribePattern": "ev.*", "startingOffsets": '{"events": {"0": 1}}'})
    assert o.selection.kind == "pattern" and o.selection.may_read("events") and not o.selection.may_read("xevents")
    o = parse_options({"path": "/r", "assign": '{"b": [1, 0, 1], "a": [2]}'})
    assert o.selection.assigned == {"a": (2,), "b": (0, 1)} and o.topics == ("a", "b")
    for given in ({"subscribePattern": "a", "assign": '{"a": [0]}'}, {"topic": "a", "subscribePattern": "a"}):
        with pytest.raises(ConfigError, match="exactly one of"):
            parse_options({"path": "/r", **given})
    with pytest.raises(ConfigError, match="names topic 'other', which is not read .subscribePattern: pattern 'ev.*'"):
        parse_options({"path": "/r", "subscribePattern": "ev.*", "startingOffsets": '{"other": {"0": 1}}'})
    for bad in ("events", "[0]", "{}", '{"e": []}', '{"e": [-1]}', '{"e": ["0"]}', '{"e": true}', '{"e/x": [0]}'):
        with pytest.raises(ConfigError, match="'assign'"):
            parse_options({"path": "/r", "assign": bad})
    with pytest.raises(ConfigError, match="for option 'subscribePattern'"):
        parse_options({"path": "/r", "subscribePattern": "ev-(["})


@pytest.mark.parametrize("key", ["kafka.bootstrap.servers", "kafka.group.id", "groupIdPrefix",
                                 "fetchOffset.numRetries"])
def test_options_that_need_a_broker_are_refused_saying_why(key):
    from seglog.errors import BrokerOptionError

    with pytest.raises(BrokerOptionError, match=f"option '{key}' configures Spark's Kafka source's use of a broker"):
        parse_options({"path": "/r", "topic": "t", key.lower(): "x"})
    with pytest.raises(BrokerOptionError, match="did you mean 'kafka.isolation.level'"):
        parse_options({"path": "/r", "topic": "t", "kafka.isolation.levle": "read_committed"})
    with pytest.raises(ConfigError, match="unknown option 'bootstrap'") as caught:
        parse_options({"path": "/r", "topic": "t", "bootstrap": "x"})
    assert not isinstance(caught.value, BrokerOptionError)


def test_by_timestamp_jsons_take_minus_one_and_minus_two_and_max_records_per_partition():
    o = opts(startingOffsetsByTimestamp='{"events": {"0": -1, "1": -2}}', maxRecordsPerPartition=500)
    assert dict(o.starting.values) == {("events", 0): -1, ("events", 1): -2} and o.max_records_per_partition == 500
    with pytest.raises(ConfigError, match="'endingOffsetsByTimestamp'.*-1 for the latest offset"):
        opts(endingOffsetsByTimestamp='{"events": {"0": -3}}')
    with pytest.raises(ConfigError, match="'maxRecordsPerPartition'"):
        opts(maxRecordsPerPartition=0)


def test_offsets_json():
    o = opts(startingOffsets='{"events": {"0": 23, "1": -2}}', endingOffsets='{"events": {"0": 50, "1": -1}}')
    assert o.starting.kind == "offsets" and dict(o.starting.values) == {("events", 0): 23, ("events", 1): -2}
    assert o.ending.kind == "offsets" and dict(o.ending.values) == {("events", 0): 50, ("events", 1): -1}


def test_timestamp_precedence_as_kafka():
    o = opts(startingTimestamp=1000, startingOffsetsByTimestamp='{"events": {"0": 5}}', startingOffsets="earliest",
             endingTimestamp=2000, endingOffsetsByTimestamp='{"events": {"0": 7}}', endingOffsets="latest")
    assert (o.starting.kind, o.starting.timestamp) == ("timestamp", 1000)
    assert (o.ending.kind, o.ending.timestamp) == ("timestamp", 2000)
    o = opts(startingOffsetsByTimestamp='{"events": {"0": 5}}', startingOffsets="earliest",
             endingOffsetsByTimestamp='{"events": {"0": 7}}')
    assert o.starting.kind == "timestamps" and dict(o.starting.values) == {("events", 0): 5}
    assert o.ending.kind == "timestamps" and dict(o.ending.values) == {("events", 0): 7}


def test_strategy():
    assert opts(startingOffsetsByTimestampStrategy="LATEST").strategy == "latest"
    with pytest.raises(ConfigError, match=r"startingOffsetsByTimestampStrategy.*'error' or 'latest'"):
        opts(startingOffsetsByTimestampStrategy="earliest")


@pytest.mark.parametrize("key,value,needle", [
    ("startingOffsets", "latest", "not allowed for a batch read"),
    ("startingOffsets", '{"events": {"0": -1}}', "-1, latest, is not allowed"),
    ("startingOffsets", '{"events": {"0": "x"}}', "an offset >= 0"),
    ("startingOffsets", '{"events": {"zero": 1}}', "partition keys are non-negative integers"),
    ("startingOffsets", "{not json", "a JSON object"),
    ("startingOffsets", '{"other": {"0": 1}}', "names topic 'other', which is not read"),
    ("endingOffsets", "earliest", "not allowed for endingOffsets"),
    ("endingOffsets", '{"events": {"0": -2}}', "-2, earliest, is not allowed"),
    ("startingTimestamp", "yesterday", "startingTimestamp"),
    ("endingTimestamp", "-5", "endingTimestamp"),
    ("startingOffsetsByTimestamp", '{"events": {"0": -3}}', "a timestamp in milliseconds"),
    ("failOnDataLoss", "yes", "'true' or 'false'"),
    ("includeHeaders", "1", "'true' or 'false'"),
    ("minPartitions", "0", "minPartitions"),
    ("maxBytesPerTask", "lots", "maxBytesPerTask"),
    ("checkCrcs", "sometimes", "'true' or 'false'"),
])
def test_bad_values_name_option_and_what_is_allowed(key, value, needle):
    with pytest.raises(ConfigError) as e:
        opts(**{key: value})
    assert needle in str(e.value)
    assert key in str(e.value) or "topic" in needle


def test_shadowed_start_option_still_checked():
    with pytest.raises(ConfigError, match="startingOffsets"):
        opts(startingTimestamp=5, startingOffsets="bogus")


def test_unknown_option_suggests_nearest():
    with pytest.raises(ConfigError, match="did you mean 'startingTimestamp'"):
        opts(startingTimestmap=5)


def test_missing_path_and_topic():
    with pytest.raises(ConfigError, match="no path given"):
        parse_options({"topic": "events"})
    with pytest.raises(ConfigError, match="'topic' is required"):
        parse_options({"path": "/r"})
    with pytest.raises(ConfigError, match="invalid topic name"):
        parse_options({"path": "/r", "topic": "../etc"})


def test_isolation_level_spark_and_plain_spellings():
    assert opts().isolation_level == "read_uncommitted"          # the Kafka consumer's default, as Spark's
    assert parse_options({"path": "/r", "topic": "t", "kafka.isolation.level": "read_committed"}
                         ).isolation_level == "read_committed"
    assert parse_options({"path": "/r", "topic": "t", "isolation.level": "READ_COMMITTED"}
                         ).isolation_level == "read_committed"
    with pytest.raises(ConfigError, match="'kafka.isolation.level'.*'read_uncommitted' or 'read_committed'"):
        parse_options({"path": "/r", "topic": "t", "kafka.isolation.level": "serializable"})
    with pytest.raises(ConfigError, match="disagree"):
        parse_options({"path": "/r", "topic": "t", "kafka.isolation.level": "read_committed",
                       "isolation.level": "read_uncommitted"})
