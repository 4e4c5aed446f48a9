"""The sidecar's merge job and `seglog merge` (docs/spec.md §3.10) on real partitions: small sealed
segments become fewer, larger ones with the same records; the metrics count segments and bytes; a
partition the sink holds is skipped; the committed end bounds the merge; the CLI merges one topic."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from seglog.compactor.config import parse_config
from seglog.compactor.jobs import PASS_ORDER, Jobs
from seglog.compactor.metrics import Metrics
from seglog.indexer import Log, Record
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.topics import create_topic

from tests.compactor.test_compactor_jobs import metrics_samples

CFG = {"segment.bytes": 1 << 20, "index.interval.bytes": 256}


def fill(root: Path, topic: str, partitions: int = 2, segments: int = 8) -> dict[str, list]:
    create_topic(root, topic, partitions, CFG)
    now = time.time_ns() // 1_000_000
    rows = {}
    for p in range(partitions):
        with Log.open(root / f"{topic}-{p}", CFG, outside_commit_log=True) as log:
            for s in range(segments):
                log.append([Record(key=b"k", value=b"%s-%d-%d-%d" % (topic.encode(), p, s, i) * 20, timestamp=now + i)
                            for i in range(30)])
                log.roll()
            log.flush()
            rows[f"{topic}-{p}"] = [(r.offset, r.value) for r in log.read()]
    return rows


def read_all(root: Path, name: str) -> tuple[list, int]:
    with Log.open(root / name, readonly=True) as log:
        return [(r.offset, r.value) for r in log.read()], len(log.segment_bases())


def test_merge_job_merges_and_counts(tmp_path):
    rows = fill(tmp_path, "events")
    assert PASS_ORDER.index("seal") < PASS_ORDER.index("merge") < PASS_ORDER.index("retention")
    metrics = Metrics()
    jobs = Jobs(parse_config({"root": str(tmp_path)}, source="test"), metrics)
    res = jobs.run("merge")
    assert res.ok and sorted(res.done) == ["events-0", "events-1"]
    assert res.done["events-0"]["merged"] == [[0, 30, 60, 90, 120, 150, 180, 210]]
    total = 0
    for name, expected in rows.items():
        got, segments = read_all(tmp_path, name)
        assert got == expected and segments == 2        # one merged segment and the (empty) active one
        total += sum(f.stat().st_size for f in (tmp_path / name).glob("*.log"))
    samples = metrics_samples(metrics)
    assert samples[("seglog_compactor_segments_merged_total", ())] == 16
    assert samples[("seglog_compactor_merged_bytes_total", ())] == total
    assert jobs.run("merge").done == {}                 # nothing left: idempotent


def test_merge_job_skips_a_locked_partition_and_stops_at_the_committed_end(tmp_path):
    rows = fill(tmp_path, "events")
    CommitLog(tmp_path, "events").commit("sink", 0, {0: 90, 1: 0})
    jobs = Jobs(parse_config({"root": str(tmp_path), "schedule": {"partition.lock.timeout.ms": 0}}, source="test"),
                Metrics())
    with Log.open(tmp_path / "events-1", CFG, outside_commit_log=True):         # the sink writing partition 1
        res = jobs.run("merge")
    assert res.skipped == ["events-1"]
    assert res.done["events-0"]["merged"] == [[0, 30, 60]]     # below the committed end 90 only
    assert read_all(tmp_path, "events-0") == (rows["events-0"], 9 - 3 + 1)
    assert read_all(tmp_path, "events-1") == (rows["events-1"], 9)


def seglog(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "seglog", *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def test_seglog_merge_cli(tmp_path):
    rows = {**fill(tmp_path, "events"), **fill(tmp_path, "clicks", partitions=1)}
    done = seglog("merge", tmp_path, "--topic", "events")
    assert done.returncode == 0, done.stderr
    assert "events-0: merged 8 segments into 1" in done.stdout and "clicks" not in done.stdout
    assert read_all(tmp_path, "clicks-0") == (rows["clicks-0"], 9)
    again = seglog("merge", tmp_path, "--config", "segment.merge.small.bytes=0")
    assert again.returncode == 0 and "clicks-0: nothing to merge (9 segments)" in again.stdout
    done = seglog("merge", tmp_path)
    assert "clicks-0: merged 8 segments into 1" in done.stdout and "events-0: nothing to merge" in done.stdout
    for name, expected in rows.items():
        assert read_all(tmp_path, name)[0] == expected
    assert seglog("verify", tmp_path).returncode == 0
    bad = seglog("merge", tmp_path, "--config", "segment.merge.small.bytes=-5")
    assert bad.returncode == 2 and "segment.merge.small.bytes" in bad.stderr
