"""Retention never deletes past the sink's committed end (its high watermark), as Kafka deletes only
segments below the high watermark (UnifiedLog.deletableSegments). Found by the system soak (issue 36): a
writer killed between its publish and its commit left a rolled segment of expired records past the
committed end; the tier job's total retention deleted it, the log start passed the committed end, a
consumer skipped those offsets as deleted (a data-loss warning), and the writer's re-run rolled the log
back and committed the same offsets again, now readable: committed records the consumer never read.
Reached through the sidecar's jobs: `retention` (an untiered topic) and `tier` (a tiered one)."""
from __future__ import annotations

import time

import pytest

from seglog.compactor.config import parse_config
from seglog.compactor.jobs import Jobs
from seglog.compactor.metrics import Metrics
from seglog.indexer import Log, Record
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.topics import create_topic

HOUR = 3_600_000


@pytest.mark.parametrize("tiered", [False, True], ids=["retention-job", "tier-job"])
def test_expired_records_past_the_committed_end_stay(tmp_path, tiered):
    root, remote = tmp_path / "root", tmp_path / "remote"
    remote.mkdir()
    cfg = {"segment.bytes": 4096, "retention.ms": 60_000, "file.delete.delay.ms": 0}
    if tiered:
        cfg.update({"remote.storage.enable": True, "local.retention.ms": 1000})
    create_topic(root, "t", 1, cfg)
    old = int(time.time() * 1000) - HOUR                      # every record expired by retention.ms

    def append(n):
        with Log.open(root / "t-0", cfg, outside_commit_log=True) as log:
            log.append([Record(value=b"v%d" % i + b"x" * 200, timestamp=old + i) for i in range(n)])
            log.roll()
            log.flush()
            return log.log_end_offset

    committed = append(30)
    CommitLog(root, "t").commit("w", 0, {0: committed})
    end = append(30)                                          # published, never committed: a killed writer's
    assert end > committed
    config = {"root": str(root)} | ({"remote": {"uri": f"file://{remote}"}} if tiered else {})
    jobs = Jobs(parse_config(config, source="test"), Metrics())
    for job in ("seal", "tier", "retention") if tiered else ("seal", "retention"):
        assert jobs.run(job).ok
    with Log.open(root / "t-0", cfg, readonly=True) as log:
        start = log.log_start_offset
    # the committed records went (expired), the uncommitted ones stay for the writer to take back
    assert 0 < start <= committed, (start, committed, end)


@pytest.mark.parametrize("tiered", [False, True], ids=["retention-job", "tier-job"])
def test_uncommitted_bytes_do_not_count_toward_retention_bytes(tmp_path, tiered):
    """A killed writer's uncommitted segments (cut by its next run) are not bytes retention.bytes keeps:
    counted, they once made size retention delete young committed records, leaving the partition below
    retention.bytes once the writer cut them (found by the system soak's retention check)."""
    root, remote = tmp_path / "root", tmp_path / "remote"
    remote.mkdir()
    cfg = {"segment.bytes": 4096, "retention.ms": HOUR, "retention.bytes": 16_384, "file.delete.delay.ms": 0}
    if tiered:
        cfg.update({"remote.storage.enable": True, "local.retention.bytes": 1})
    create_topic(root, "t", 1, cfg)
    now = int(time.time() * 1000)

    def append(n):
        with Log.open(root / "t-0", cfg, outside_commit_log=True) as log:
            log.append([Record(value=b"v%d" % i + b"x" * 300, timestamp=now + i) for i in range(n)])
            log.roll()
            log.flush()
            return log.log_end_offset, log.size_bytes()

    committed, committed_bytes = append(40)                   # about 13 KB: below retention.bytes
    assert committed_bytes < cfg["retention.bytes"]
    CommitLog(root, "t").commit("w", 0, {0: committed})
    _, total = append(60)                                     # published, never committed: a killed writer's
    assert total > cfg["retention.bytes"] + 8192              # counted, they would let the oldest go
    config = {"root": str(root)} | ({"remote": {"uri": f"file://{remote}"}} if tiered else {})
    jobs = Jobs(parse_config(config, source="test"), Metrics())
    for job in ("seal", "tier", "retention") if tiered else ("seal", "retention"):
        assert jobs.run(job).ok
    from seglog.indexer.remote.tiered_log import TieredLog

    with TieredLog(root, "t", 0) as log:
        assert log.log_start_offset == 0                     # no committed record went: 13 KB < retention.bytes
    CommitLog(root, "t").commit("w", 1, {0: committed + 60})  # committed now: size retention takes the oldest
    for job in ("tier", "retention") if tiered else ("retention",):
        assert jobs.run(job).ok
    with TieredLog(root, "t", 0) as log:
        assert log.log_start_offset > 0
        assert sum(s.size_bytes for s in log.segments()) >= cfg["retention.bytes"]
