"""The sidecar's configuration (docs/spec.md §5, 9): validation at start-up with errors that name the key, the
value and what is allowed, and the precedence of topic configuration."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from seglog.compactor.config import SCHEDULE_RULES, load_config, parse_config
from seglog.compactor.jobs import Jobs
from seglog.compactor.metrics import Metrics
from seglog.conf import TOPIC_DEFAULTS, default_file
from seglog.errors import ConfigError
from seglog.indexer.topics import create_topic

REPO = Path(__file__).resolve().parents[2]


def cfg(**sections):
    raw = {"root": "/data/log"}
    raw.update(sections)
    return parse_config(raw, source="test.yaml")


def refused(raw) -> str:
    with pytest.raises(ConfigError) as err:
        parse_config(raw, source="test.yaml")
    return str(err.value)


def test_shipped_default_file_is_valid():
    c = load_config(default_file("compactor.yaml"))
    assert str(c.root) == "/data/log"
    assert c.schedule.seal_interval_ms == 10_000
    assert c.schedule.retention_check_interval_ms == 300_000
    assert (c.http.host, c.http.port) == ("127.0.0.1", 9400)
    assert c.log_config["retention.ms"] == 604_800_000


def test_defaults_for_missing_sections():
    c = parse_config({"root": "/r"})
    assert c.log == {} and c.topics == {}
    assert c.schedule.seal_interval_ms == SCHEDULE_RULES["seal.interval.ms"].default
    assert c.schedule.partition_lock_timeout_ms == 500
    assert c.log_config == TOPIC_DEFAULTS
    assert (c.consumer.lag_interval_ms, c.consumer.idle_forget_ms) == (30_000, 7 * 86_400_000)


@pytest.mark.parametrize("raw, expected", [
    ({"root": "/r", "schedul": {}}, ["unknown key 'schedul'", "did you mean 'schedule'"]),
    ({"root": "/r", "topic": {}}, ["unknown key 'topic'", "did you mean 'topics'"]),
    ({"root": "/r", "log": {"retention.msec": 5}}, ["'retention.msec'", "did you mean 'retention.ms'"]),
    ({"root": "/r", "topics": {"events": {"segment.byte": 1}}}, ["topics.events", "did you mean 'segment.bytes'"]),
    ({"root": "/r", "schedule": {"seal.intervall.ms": 5}},
     ["'schedule.seal.intervall.ms'", "did you mean 'schedule.seal.interval.ms'"]),
    ({"root": "/r", "http": {"prot": 80}}, ["'http.prot'", "did you mean 'http.port'"]),
    ({"root": "/r", "consumer": {"idle.forget.msec": 5}},
     ["'consumer.idle.forget.msec'", "did you mean 'consumer.idle.forget.ms'"]),
])
def test_unknown_keys_name_the_nearest(raw, expected):
    msg = refused(raw)
    assert msg.startswith("test.yaml")
    for part in expected:
        assert part in msg, msg


@pytest.mark.parametrize("raw, expected", [
    ({"root": "/r", "schedule": {"seal.interval.ms": "often"}}, ["'schedule.seal.interval.ms'", "'often'", "not an integer"]),
    ({"root": "/r", "schedule": {"seal.interval.ms": 1.5}}, ["'schedule.seal.interval.ms'", "not an integer"]),
    ({"root": "/r", "schedule": {"seal.interval.ms": True}}, ["not an integer"]),
    ({"root": "/r", "schedule": {"retention.check.interval.ms": 0}}, ["out of range", "from 10 to"]),
    ({"root": "/r", "schedule": {"roll.interval.ms": -5}}, ["'schedule.roll.interval.ms' = -5", "out of range"]),
    ({"root": "/r", "schedule": {"partition.lock.timeout.ms": 600_001}}, ["out of range", "0 to 600000"]),
    ({"root": "/r", "schedule": []}, ["'schedule'", "not a mapping"]),
    ({"root": "/r", "http": {"port": 70000}}, ["'http.port' = 70000", "0 to 65535"]),
    ({"root": "/r", "http": {"port": "http"}}, ["'http.port'", "not an integer"]),
    ({"root": "/r", "http": {"host": ""}}, ["'http.host'"]),
    ({"root": "/r", "consumer": {"idle.forget.ms": 0}}, ["'consumer.idle.forget.ms' = 0", "out of range"]),
    ({"root": "/r", "consumer": {"lag.interval.ms": "soon"}}, ["'consumer.lag.interval.ms'", "not an integer"]),
    ({"root": "/r", "consumer": 7}, ["'consumer'", "not a mapping"]),
    ({"root": "/r", "log": {"retention.ms": "a week"}}, ["'retention.ms'", "not an integer"]),
    ({"root": "/r", "log": {"segment.bytes": 10}}, ["'segment.bytes' = 10", "out of range"]),
    ({"root": "/r", "topics": {"events": {"message.timestamp.type": "Now"}}}, ["topics.events", "CreateTime"]),
    ({"root": "/r", "topics": {"bad/topic": {}}}, ["topics.bad/topic", "invalid topic name"]),
    ({"root": "/r", "topics": {"events": 5}}, ["'topics.events'", "not a mapping"]),
    ({"log": {}}, ["'root' is required"]),
    ({"root": 5}, ["'root' = 5"]),
    ([1, 2], ["expected a mapping"]),
])
def test_bad_values_are_refused_with_key_value_and_allowed(raw, expected):
    msg = refused(raw)
    for part in expected:
        assert part in msg, msg


def test_string_integers_are_accepted_like_the_topic_rules():
    c = cfg(schedule={"seal.interval.ms": "250"}, http={"port": "9401"})
    assert c.schedule.seal_interval_ms == 250 and c.http.port == 9401


def test_relative_root_is_relative_to_the_file(tmp_path):
    (tmp_path / "c.yaml").write_text("root: data/log\n")
    assert load_config(tmp_path / "c.yaml").root == tmp_path / "data" / "log"


def test_missing_and_broken_files(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")
    (tmp_path / "bad.yaml").write_text("root: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(tmp_path / "bad.yaml")


def test_precedence_file_topic_over_recorded_over_file_log_over_defaults(tmp_path):
    root = tmp_path / "root"
    # Recorded when the sink created the topics.
    create_topic(root, "events", 1, {"retention.ms": 3_000, "segment.ms": 30_000})
    create_topic(root, "clicks", 1, {"segment.ms": 40_000})
    c = cfg(root=str(root),
            log={"retention.ms": 1_000, "segment.ms": 10_000, "retention.bytes": 4096},
            topics={"events": {"retention.ms": 2_000}})
    jobs = Jobs(c, Metrics())
    events = jobs.topic_config("events")
    assert events["retention.ms"] == 2_000          # file topics.events beats the recorded 3000
    assert events["segment.ms"] == 30_000           # recorded beats the file's log
    assert events["retention.bytes"] == 4096        # file's log beats the default
    assert events["segment.bytes"] == TOPIC_DEFAULTS["segment.bytes"]
    clicks = jobs.topic_config("clicks")
    assert clicks["retention.ms"] == 1_000 and clicks["segment.ms"] == 40_000
    unrecorded = jobs.topic_config("other")
    assert unrecorded["retention.ms"] == 1_000 and unrecorded["segment.ms"] == 10_000


def test_process_refuses_a_bad_file_naming_the_key(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"root": str(tmp_path), "schedule": {"seal.interval.ms": -1}}))
    proc = subprocess.run([sys.executable, "-m", "seglog.compactor", "--config", str(path)], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "'schedule.seal.interval.ms' = -1 is out of range" in proc.stderr
    import json
    line = json.loads(proc.stderr.strip().splitlines()[-1])
    assert line["level"] == "error" and line["event"] == "compactor.failed"


@pytest.mark.parametrize("text", ["--4096", "4e3", "1_000", " - 5", "0x10"])
def test_malformed_integer_text_is_a_config_error_naming_key_and_value(text):
    from seglog.conf import validate_topic_config

    with pytest.raises(ConfigError, match=r"'segment.bytes' = '.*' is not an integer"):
        validate_topic_config({"segment.bytes": text})
    with pytest.raises(ConfigError, match=r"schedule.seal.interval.ms"):
        parse_config({"root": "/tmp/x", "schedule": {"seal.interval.ms": text}}, source="test.yaml")
