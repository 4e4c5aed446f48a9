"""The long-running sidecar's steady pass (compactor/partition_memo.py): a partition whose files did not
change and that has nothing due is not opened (no lock, no recovery); one the sink wrote, one whose time
came (retention, idle roll, purge), one whose folder changed in the observation's clock tick, and one
whose topic configuration changed are. Counted from the jobs' own results and metrics, never timed."""
from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

from seglog.compactor.partition_memo import MTIME_SLACK_NS
from seglog.indexer import Log, Record
from seglog.indexer.topics import create_topic
from tests.compactor.test_compactor_jobs import DAY, SMALL, make_jobs, metrics_samples, pmetric

T0 = 1_700_000_000_000
PARTS = 4


def build(root: Path, config=None):
    cfg = dict(SMALL, **{"retention.ms": 7 * DAY, "file.delete.delay.ms": 0}, **(config or {}))
    create_topic(root, "t", PARTS, cfg)
    for p in range(PARTS):
        with Log.open(root / f"t-{p}", cfg) as log:
            for i in range(4):
                log.append([Record(value=b"v" * 700, timestamp=T0 + i * 1000)])
    return cfg


def age(root: Path, seconds: float = 2 * MTIME_SLACK_NS / 1e9) -> None:
    """Every file and folder under the partitions written `seconds` ago: no later change shares their tick."""
    then = time.time() - seconds
    for d in root.glob("t-*"):
        for f in [d, *d.iterdir()]:
            os.utime(f, (then, then))


def test_a_steady_pass_opens_only_what_changed_or_came_due(tmp_path):
    build(tmp_path)
    clock = [T0 + DAY]
    jobs = make_jobs(tmp_path, clock=lambda: clock[0])
    for job in ("roll", "seal", "retention", "purge"):
        jobs.run(job)
    age(tmp_path)
    assert jobs.run("seal").unchanged == 0        # the files changed since the memos (aged): opened
    for job in ("seal", "retention"):
        res = jobs.run(job)
        assert (res.partitions, res.unchanged) == (PARTS, PARTS)          # nothing changed, nothing due
    samples = metrics_samples(jobs.metrics)
    assert pmetric(samples, "seglog_partition_observed_timestamp_seconds", "t", 0) == clock[0] / 1000
    assert samples[("seglog_compactor_partitions_unchanged_total", (("job", "seal"),))] == PARTS

    with Log.open(tmp_path / "t-2", SMALL) as log:                        # the sink writes one partition
        log.append([Record(value=b"w" * 700, timestamp=T0 + 9000)])
    res = jobs.run("seal")
    assert res.unchanged == PARTS - 1                                     # it alone is opened

    clock[0] = T0 + 8 * DAY                                               # retention's time came for all
    res = jobs.run("retention")
    assert res.unchanged == 0 and sorted(res.done) == [f"t-{p}" for p in range(PARTS)]


def test_deleted_files_make_the_purge_due(tmp_path):
    build(tmp_path)
    jobs = make_jobs(tmp_path)                                            # the real clock: purge judges ctimes
    jobs.run("retention")                                                 # records of 2023: all but the active go
    assert len(jobs.run("purge").done) == PARTS                           # delay 0: purged at once
    age(tmp_path)
    jobs.run("purge")
    assert jobs.run("purge").unchanged == PARTS                           # purged: nothing left to do
    jobs.run("retention")                                                 # nothing expired since: nothing deleted
    with Log.open(tmp_path / "t-3", SMALL) as log:
        log.append([Record(value=b"w" * 700, timestamp=1_000)] * 2)       # rolls; the next retention deletes
    assert "t-3" in jobs.run("retention").done
    res = jobs.run("purge")                                               # file.delete.delay.ms 0: due at once
    assert res.unchanged == PARTS - 1 and "t-3" in res.done


def test_a_change_in_the_observations_clock_tick_counts_as_changed(tmp_path):
    build(tmp_path)
    jobs = make_jobs(tmp_path, clock=lambda: T0 + DAY)
    jobs.run("seal")
    jobs.run("seal")            # nothing changed, but every mtime is within the slack of its memo
    assert jobs.run("seal").unchanged == 0


def test_an_idle_roll_comes_due_by_segment_ms(tmp_path):
    build(tmp_path, {"segment.ms": DAY})
    clock = [T0 + 1000]
    jobs = make_jobs(tmp_path, clock=lambda: clock[0])
    jobs.run("roll")
    age(tmp_path)
    jobs.run("roll")
    assert jobs.run("roll").unchanged == PARTS
    clock[0] = T0 + 3000 + DAY + 1                                        # the active's first timestamp + segment.ms
    res = jobs.run("roll")
    assert res.unchanged == 0 and len(res.done) == PARTS


def test_a_changed_topic_configuration_or_a_held_lock_opens_it_again(tmp_path):
    build(tmp_path)
    jobs = make_jobs(tmp_path, clock=lambda: T0 + DAY)
    jobs.run("retention")
    age(tmp_path)
    jobs.run("retention")
    assert jobs.run("retention").unchanged == PARTS
    jobs.config = dataclasses.replace(jobs.config, topics={"t": {"retention.ms": 1}})   # an override
    res = jobs.run("retention")
    assert res.unchanged == 0 and len(res.done) == PARTS                  # every segment but the active expired
    age(tmp_path)
    jobs.run("retention")
    with Log.open(tmp_path / "t-1", SMALL) as sink:                      # the sink holds one and writes
        sink.append([Record(value=b"w", timestamp=T0)])
        res = jobs.run("retention")
        assert res.skipped == ["t-1"] and res.unchanged == PARTS - 1
    assert jobs.run("retention").unchanged == PARTS - 1                   # its memo forgotten: opened again
