"""The sidecar's clean job, `seglog compact` and `seglog describe` on a compacted topic (docs/spec.md §3.9),
on real partitions: the job cleans when the dirty ratio passes min.cleanable.dirty.ratio and not
before, its metrics show the dirty ratio, bytes cleaned, records removed and duration; retention
leaves a `compact`-only topic alone; the CLI cleans once now and describe shows the checkpoint."""
from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path

from seglog.compactor.config import parse_config
from seglog.compactor.jobs import Jobs
from seglog.compactor.metrics import Metrics
from seglog.indexer import Log, Record
from seglog.indexer.compaction.cleaner_checkpoint import read_cleaner_offsets
from seglog.indexer.topics import create_topic

from tests.compactor.test_compactor_jobs import metrics_samples, pmetric

COMPACT = {"cleanup.policy": "compact", "segment.bytes": 1024, "segment.ms": 1 << 62, "index.interval.bytes": 64,
           "retention.ms": 1, "delete.retention.ms": 1000, "min.cleanable.dirty.ratio": 0.5}


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def fill(root: Path, topic: str, rounds: int, keys: int = 5, cfg=COMPACT) -> list[tuple]:
    create_topic(root, topic, 1, cfg)
    with Log.open(root / f"{topic}-0", cfg) as log:
        for r in range(rounds):
            log.append([Record(key=b"key-%d" % k, value=b"round-%d-" % r + b"x" * 40, timestamp=now_ms() - 60_000)
                        for k in range(keys)])
        return [(x.offset, x.key, x.value) for x in log.read()]


def latest_per_key(rows):
    out = {}
    for off, k, v in rows:
        out[k] = (off, v)
    return out


def test_clean_job_compacts_when_dirty_and_reports_metrics(tmp_path):
    before = fill(tmp_path, "state", 30)
    metrics = Metrics()
    jobs = Jobs(parse_config({"root": str(tmp_path), "schedule": {"log.cleaner.dedupe.buffer.size": 1 << 20}},
                             source="test"), metrics)
    res = jobs.run("clean")
    assert res.ok and "state-0" in res.done, res.summary()
    with Log.open(tmp_path / "state-0", readonly=True) as log:
        after = [(x.offset, x.key, x.value) for x in log.read()]
        assert log.verify() == []
    assert len(after) < len(before) / 3
    # every key's latest record is there, at its offset
    assert {k: v for k, v in latest_per_key(after).items()} == latest_per_key(before)
    samples = metrics_samples(metrics)
    assert samples[("seglog_compactor_records_removed_total", ())] == len(before) - len(after)
    assert samples[("seglog_compactor_cleaned_dirty_bytes_total", ())] > 0
    assert samples[("seglog_compactor_clean_duration_seconds_count", ())] == 1
    assert pmetric(samples, "seglog_partition_dirty_ratio", "state", 0) < 0.5
    assert pmetric(samples, "seglog_partition_cleaner_checkpoint", "state", 0) == read_cleaner_offsets(tmp_path)[("state", 0)]
    # Nothing dirty any more: a second pass changes nothing; retention.ms=1 deletes nothing (compact only).
    res = jobs.run("clean")
    assert "state-0" not in res.done
    jobs.run("retention")
    with Log.open(tmp_path / "state-0", readonly=True) as log:
        assert [(x.offset, x.key, x.value) for x in log.read()] == after


def test_clean_job_waits_for_the_dirty_ratio(tmp_path):
    fill(tmp_path, "state", 30)
    jobs = Jobs(parse_config({"root": str(tmp_path)}, source="test"), Metrics())
    assert "state-0" in jobs.run("clean").done
    with Log.open(tmp_path / "state-0", COMPACT) as log:   # a little more dirt: ratio below 0.5
        log.append([Record(key=b"key-%d" % k, value=b"new", timestamp=now_ms() - 60_000) for k in range(5)])
        log.roll()
        log.append([Record(key=b"key-0", value=b"newer", timestamp=now_ms() - 60_000)])
    metrics = Metrics()
    jobs = Jobs(parse_config({"root": str(tmp_path)}, source="test"), metrics)
    assert "state-0" not in jobs.run("clean").done
    ratio = pmetric(metrics_samples(metrics), "seglog_partition_dirty_ratio", "state", 0)
    assert 0 < ratio < 0.5 and not math.isnan(ratio)


def seglog(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "seglog", *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def test_seglog_compact_and_describe(tmp_path):
    before = fill(tmp_path, "state", 12)
    desc = json.loads(seglog("describe", tmp_path, "--json").stdout)["partitions"][0]
    assert desc["cleaner_checkpoint"] is None and desc["dirty_ratio"] == 1.0 and desc["clean_due"]
    done = seglog("compact", tmp_path, "--topic", "state", "--partition", "0")
    assert done.returncode == 0, done.stderr
    assert "state-0: cleaned" in done.stdout
    desc = json.loads(seglog("describe", tmp_path, "--json").stdout)["partitions"][0]
    assert desc["cleaner_checkpoint"] == read_cleaner_offsets(tmp_path)[("state", 0)] > 0
    assert desc["dirty_ratio"] == 0.0
    text = seglog("describe", tmp_path).stdout
    assert f"cleaner checkpoint {desc['cleaner_checkpoint']}, dirty ratio 0.000" in text
    with Log.open(tmp_path / "state-0", readonly=True) as log:
        assert latest_per_key([(x.offset, x.key, x.value) for x in log.read()]) == latest_per_key(before)
    assert seglog("verify", tmp_path).returncode == 0
    # A topic that is not compacted is refused, naming the policy.
    fill(tmp_path, "events", 2, cfg=dict(COMPACT, **{"cleanup.policy": "delete"}))
    refused = seglog("compact", tmp_path, "--topic", "events")
    assert refused.returncode == 2 and "cleanup.policy='delete'" in refused.stderr


def test_the_pass_skips_a_clean_another_cleaner_holds_and_runs_its_other_steps(tmp_path):
    """A partition's maintenance lock held (another sidecar or `seglog compact` cleaning it): the pass
    skips its clean and merge (reported, counted), cleans nothing, and still rolls, seals, applies
    retention; once free, the next pass cleans it beside the writer."""
    from seglog.indexer.locks import maintenance_lock

    before = fill(tmp_path, "state", 30)
    jobs = Jobs(parse_config({"root": str(tmp_path)}, source="test"), Metrics())
    busy = maintenance_lock(tmp_path / "state-0").acquire(0)
    try:
        res = jobs.full_pass()
    finally:
        busy.release()
    did = res.done["state-0"]
    assert res.ok and "clean_skipped" in did and "merge_skipped" in did and "cleaned" not in did, did
    assert "state-0" not in res.skipped
    assert read_cleaner_offsets(tmp_path) == {}
    res = jobs.full_pass()
    assert "cleaned" in res.done["state-0"], res.done
    with Log.open(tmp_path / "state-0", readonly=True) as log:
        assert latest_per_key([(x.offset, x.key, x.value) for x in log.read()]) == latest_per_key(before)
