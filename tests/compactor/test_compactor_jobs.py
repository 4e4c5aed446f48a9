"""The sidecar's jobs over real partitions (docs/spec.md §2.5, 3.2, 3.3, 3.7, 3.8, 9), driven in process with a
chosen clock: sealing, idempotence byte for byte, time and size retention, far-future timestamps,
purging `.deleted` files, recovery, and partitions the sink holds."""
from __future__ import annotations

import hashlib
import math
import struct
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.crash_states import unseal_rolled_segments
from seglog.compactor.config import parse_config
from seglog.compactor.jobs import Jobs
from seglog.compactor.metrics import Metrics
from seglog.indexer import Log, Record
from seglog.indexer.checkpoint import read_log_start_offsets
from seglog.errors import OffsetOutOfRangeError
from seglog.indexer.topics import create_topic

DAY = 86_400_000
HOUR = 3_600_000
SMALL = {"segment.bytes": 1024, "segment.ms": 1 << 62, "index.interval.bytes": 64}


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def make_jobs(root: Path, clock=None, **sections) -> Jobs:
    raw = {"root": str(root), "schedule": {"partition.lock.timeout.ms": 100}}
    raw.update(sections)
    return Jobs(parse_config(raw, source="test"), Metrics(), clock=clock or now_ms)


def write_segments(root: Path, topic: str, partition: int, timestamps: list[int], config=None,
                   value_size: int = 700, partitions: int = 2) -> Log:
    """One append of one ~value_size record per timestamp; with segment.bytes 1 KiB each is its own segment."""
    cfg = dict(SMALL, **(config or {}))
    create_topic(root, topic, partitions, cfg)
    log = Log.open(root / f"{topic}-{partition}", cfg)
    for i, ts in enumerate(timestamps):
        log.append([Record(key=b"k%d" % i, value=bytes([i % 251]) * value_size, timestamp=ts)])
    log.flush()
    return log


def segments_of(partition_dir: Path):
    with Log.open(partition_dir, readonly=True) as log:
        return log.segments()


def metrics_samples(metrics: Metrics) -> dict[tuple[str, tuple], float]:
    out = {}
    for fam in text_string_to_metric_families(metrics.render().decode()):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def pmetric(samples, name, topic, partition):
    return samples[(name, (("partition", str(partition)), ("topic", topic)))]


def tree_hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and "locks" not in p.parts}


def assert_sealed_on_disk(partition_dir: Path) -> int:
    """docs/spec.md §2.5 from the files alone: every segment but the last has trimmed indexes and, where it holds
    a timestamp, a last time index entry inside the segment (Kafka's seal entry). Returns how many."""
    bases = sorted(int(p.stem) for p in partition_dir.glob("*.log"))
    for base, next_base in zip(bases, bases[1:]):
        index = (partition_dir / f"{base:020d}.index").read_bytes()
        tindex = (partition_dir / f"{base:020d}.timeindex").read_bytes()
        assert len(index) % 8 == 0 and len(tindex) % 12 == 0
        rel = [struct.unpack_from(">i", index, i)[0] for i in range(0, len(index), 8)]
        assert rel == sorted(set(rel)), f"{base}: offset index not strictly increasing (a preallocated tail?)"
        entries = [struct.unpack_from(">qi", tindex, i) for i in range(0, len(tindex), 12)]
        assert entries, f"segment {base} has timestamps but an empty time index"
        ts = [e[0] for e in entries]
        assert ts == sorted(set(ts))
        assert 0 <= entries[-1][1] < next_base - base, f"segment {base}: last time index entry outside it"
    return len(bases) - 1


def test_seal_pass_seals_every_inactive_segment_and_a_second_pass_changes_no_byte(tmp_path):
    root = tmp_path / "root"
    t0 = now_ms()
    for p in range(2):
        write_segments(root, "events", p, [t0 + i for i in range(12)]).close()
        assert [s.state for s in segments_of(root / f"events-{p}")][:-1] == ["sealed"] * 11  # a roll seals
        assert unseal_rolled_segments(root / f"events-{p}") == 11   # as a writer killed mid-roll leaves them
        states = [s.state for s in segments_of(root / f"events-{p}")]
        assert states[-1] == "active" and "inactive" in states
    jobs = make_jobs(root)
    result = jobs.run("seal")
    assert result.ok and not result.skipped
    assert set(result.done) == {"events-0", "events-1"}
    for p in range(2):
        assert assert_sealed_on_disk(root / f"events-{p}") >= 10
        with Log.open(root / f"events-{p}", readonly=True) as log:
            assert [s.state for s in log.segments()][:-1] == ["sealed"] * (len(log.segments()) - 1)
    samples = metrics_samples(jobs.metrics)
    assert pmetric(samples, "seglog_partition_unsealed_segments", "events", 0) == 0
    assert samples[("seglog_compactor_segments_sealed_total", ())] >= 20

    before = tree_hashes(root)
    again = jobs.run("seal")
    assert again.ok and not again.done
    assert tree_hashes(root) == before
    full = jobs.full_pass()  # roll (not idle: segment.ms is huge), seal, retention (7 days), purge
    assert full.ok and not full.done
    assert tree_hashes(root) == before


def test_time_retention_stops_at_the_first_unexpired_segment(tmp_path):
    root = tmp_path / "root"
    now = now_ms()
    ts = [now - 10 * DAY, now - 9 * DAY, now - HOUR, now - 8 * DAY, now - HOUR, now]
    log = write_segments(root, "events", 0, ts, {"retention.ms": DAY})
    infos = log.segments()
    assert len(infos) == len(ts)
    bases = [s.base_offset for s in infos]
    log.close()
    jobs = make_jobs(root, clock=lambda: now)
    result = jobs.run("retention")
    assert result.ok
    assert result.done["events-0"]["deleted"] == bases[:2]
    with Log.open(root / "events-0", SMALL | {"retention.ms": DAY}, readonly=True) as log:
        # The segment 8 days old stays: an unexpired one is older than it.
        assert [s.base_offset for s in log.segments()] == bases[2:]
        assert log.log_start_offset == bases[2]
        with pytest.raises(OffsetOutOfRangeError):
            list(log.read(bases[0]))
        assert [r.timestamp for r in log.read()] == ts[2:]
    assert read_log_start_offsets(root)[("events", 0)] == bases[2]
    deleted = sorted(p.name for p in (root / "events-0").glob("*.deleted"))
    assert len(deleted) == 6 and all(n.startswith((f"{bases[0]:020d}", f"{bases[1]:020d}")) for n in deleted)
    samples = metrics_samples(jobs.metrics)
    assert pmetric(samples, "seglog_partition_log_start_offset", "events", 0) == bases[2]
    assert pmetric(samples, "seglog_partition_oldest_segment_timestamp_ms", "events", 0) == now - HOUR
    assert pmetric(samples, "seglog_partition_retention_lag_ms", "events", 0) == HOUR - DAY
    assert pmetric(samples, "seglog_partition_retention_blocked", "events", 0) == 0

    # Purge: not before file.delete.delay.ms (default 60 s), then every .deleted file goes.
    assert "purged" not in jobs.run("purge").done.get("events-0", {})
    assert len(list((root / "events-0").glob("*.deleted"))) == 6
    later = make_jobs(root, clock=lambda: now_ms() + 61_000)
    purged = later.run("purge")
    assert sorted(purged.done["events-0"]["purged"]) == deleted
    assert not list((root / "events-0").glob("*.deleted"))


def test_far_future_timestamp_blocks_retention_and_is_reported(tmp_path):
    root = tmp_path / "root"
    now = now_ms()
    future = now + 100 * DAY
    ts = [future, now - 10 * DAY, now - 10 * DAY, now - 10 * DAY]
    log = write_segments(root, "events", 0, ts, {"retention.ms": DAY})
    n = len(log.segments())
    log.close()
    jobs = make_jobs(root, clock=lambda: now)
    result = jobs.run("retention")
    assert result.ok and "deleted" not in result.done.get("events-0", {})
    with Log.open(root / "events-0", readonly=True) as log:
        assert len(log.segments()) == n
        assert log.retention_blocked(now) == future
    samples = metrics_samples(jobs.metrics)
    assert pmetric(samples, "seglog_partition_retention_blocked", "events", 0) == 1
    assert pmetric(samples, "seglog_partition_largest_timestamp_ms", "events", 0) == future


def test_size_retention_keeps_at_least_retention_bytes(tmp_path):
    root = tmp_path / "root"
    now = now_ms()
    log = write_segments(root, "events", 0, [now] * 7, {"retention.ms": -1})
    sizes = [s.size_bytes for s in log.segments()]
    bases = [s.base_offset for s in log.segments()]
    log.close()
    limit = int(sum(sizes) * 0.45)
    # Kafka's rule, brute force: drop the oldest while what remains is still at least the limit.
    expect, remaining = 0, sum(sizes)
    while expect < len(sizes) and remaining - sizes[expect] >= limit:
        remaining -= sizes[expect]
        expect += 1
    assert 0 < expect < len(sizes)
    jobs = make_jobs(root, clock=lambda: now, topics={"events": {"retention.bytes": limit}})
    result = jobs.run("retention")
    assert result.done["events-0"]["deleted"] == bases[:expect]
    with Log.open(root / "events-0", readonly=True) as log:
        left = sum(s.size_bytes for s in log.segments())
        assert left >= limit and left - log.segments()[0].size_bytes < limit  # at most one segment more
    samples = metrics_samples(jobs.metrics)
    assert pmetric(samples, "seglog_partition_size_bytes", "events", 0) == left
    assert pmetric(samples, "seglog_partition_segments", "events", 0) == len(sizes) - expect
    assert math.isnan(pmetric(samples, "seglog_partition_retention_lag_ms", "events", 0))


def test_idle_active_segment_is_rolled_then_sealed_then_expired(tmp_path):
    root = tmp_path / "root"
    now = now_ms()
    cfg = {"segment.ms": HOUR, "retention.ms": DAY, "segment.bytes": 1 << 20}
    log = write_segments(root, "idle", 0, [now - 2 * DAY, now - 2 * DAY + 1], cfg, value_size=10)
    assert len(log.segments()) == 1  # everything in the active segment
    end = log.log_end_offset
    log.close()
    jobs = make_jobs(root, clock=lambda: now)
    result = jobs.full_pass()
    assert result.ok
    did = result.done["idle-0"]
    # The roll sealed the segment it left (docs/spec.md §2.4): nothing left for the seal step.
    assert did["rolled"] and "sealed" not in did and did["deleted"] == [0]
    with Log.open(root / "idle-0", readonly=True) as log:
        assert log.log_start_offset == end == log.log_end_offset
        assert [s.state for s in log.segments()] == ["active"]


def test_partition_held_by_the_sink_is_skipped_then_done_next_pass(tmp_path):
    root = tmp_path / "root"
    t0 = now_ms()
    held = write_segments(root, "events", 0, [t0 + i for i in range(5)])
    write_segments(root, "events", 1, [t0 + i for i in range(5)]).close()
    for p in range(2):
        unseal_rolled_segments(root / f"events-{p}")    # as writers killed mid-roll leave them
    jobs = make_jobs(root)
    result = jobs.run("seal")
    assert result.skipped == ["events-0"] and "events-1" in result.done and result.ok
    samples = metrics_samples(jobs.metrics)
    assert samples[("seglog_compactor_partitions_skipped_total", (("job", "seal"),))] == 1
    # Its metrics still come, from a read-only view.
    assert pmetric(samples, "seglog_partition_unsealed_segments", "events", 0) == 4
    held.close()
    again = jobs.run("seal")
    assert not again.skipped and again.done["events-0"]["sealed"]
    assert assert_sealed_on_disk(root / "events-0") == 4


def test_recover_job_repairs_a_torn_tail_and_reports_it(tmp_path):
    root = tmp_path / "root"
    t0 = now_ms()
    log = write_segments(root, "events", 0, [t0 + i for i in range(4)])
    end = log.log_end_offset
    active = log.segments()[-1].log_path
    log.close()
    with open(active, "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x09\x00\x00\x01\x00torn")  # half a batch header
    jobs = make_jobs(root)
    result = jobs.run("recover")
    assert result.ok and result.done["events-0"]["recovered"]
    assert any("torn" in line or "truncat" in line.lower() for line in map(str, result.done["events-0"]["recovered"]))
    with Log.open(root / "events-0", readonly=True) as log:
        assert log.log_end_offset == end
    assert jobs.full_pass().ok
    with Log.open(root / "events-0", readonly=True) as log:
        assert log.log_end_offset == end and log.verify() == []
        assert len(list(log.read())) == end
    samples = metrics_samples(jobs.metrics)
    assert samples[("seglog_compactor_partitions_recovered_total", ())] == 1
    assert samples[("seglog_compactor_job_runs_total", (("job", "recover"),))] == 1
