"""Switching tiering off a topic with tiered segments (issue 36 item 15; docs/tiered-storage.md §4a), as Kafka 3.9+
does it (KIP-950): refused unless remote.log.delete.on.disable = true, which deletes the remote data with it; and
in every case local retention never deletes a segment the remote tier does not hold while it holds live segments
of the partition: no offsets are ever on neither tier."""
from __future__ import annotations

from seglog.compactor.config import parse_config
from seglog.compactor.jobs import Jobs
from seglog.compactor.metrics import Metrics
from seglog.conf import validate_topic_config
from seglog.indexer import Log, Record
from seglog.indexer.remote import metadata
from seglog.indexer.remote.tier import DISABLE_REFUSED
from seglog.indexer.remote.tiered_log import TieredLog
from seglog.indexer.topics import create_topic
from tests.cli.test_cli import seglog

T0 = 1_700_000_000_000
CFG = {"segment.bytes": 1024, "segment.ms": 1 << 62, "index.interval.bytes": 64, "remote.storage.enable": True,
       "retention.ms": -1, "local.retention.bytes": 2048}


def append(root, lo, hi):
    with Log.open(root / "t-0", CFG) as log:
        for i in range(lo, hi):
            log.append([Record(key=b"k%d" % i, value=b"v" * 300, timestamp=T0 + i * 1000)])
        log.seal_inactive()


def jobs_for(root, tmp_path, **topic):
    raw = {"root": str(root), "schedule": {"partition.lock.timeout.ms": 100},
           "remote": {"uri": f"file://{tmp_path}/remote"}, "topics": {"t": topic} if topic else {}}
    return Jobs(parse_config(raw, source="test"), Metrics())


def tiered_then_more(root, tmp_path):
    """Tiered with local retention, then more sealed segments that were never tiered."""
    (tmp_path / "remote").mkdir()
    create_topic(root, "t", 1, CFG)
    append(root, 0, 40)
    jobs = jobs_for(root, tmp_path)
    jobs.record_remote()
    assert jobs.full_pass().ok
    state = metadata.read_state(root, "t", 0)
    append(root, 40, 80)
    with TieredLog(root, "t", 0) as log:
        assert log.log_start_offset == 0 and log.local_log_start_offset > 0
        assert log.local.segment_bases()[-2] >= state.end                     # sealed, never tiered
    return state


def every_offset(root) -> list[int]:
    with TieredLog(root, "t", 0) as log:
        return [r.offset for r in log.read(log.log_start_offset)]


def test_switching_tiering_off_is_refused_and_opens_no_hole(tmp_path):
    root = tmp_path / "root"
    state = tiered_then_more(root, tmp_path)
    with TieredLog(root, "t", 0) as log:
        local_before = log.local.segment_bases()
    jobs = jobs_for(root, tmp_path, **{"remote.storage.enable": False, "retention.bytes": 2048})
    for _ in range(2):
        result = jobs.full_pass()
        assert [p for p, _ in result.failed] == ["t-0"], result.summary()
        assert DISABLE_REFUSED in result.failed[0][1]
        result = jobs.run("retention")                   # the retention job alone: only what the remote tier holds
        assert result.ok, result.summary()
    assert every_offset(root) == list(range(80))
    with TieredLog(root, "t", 0) as log:
        assert [b for b in local_before if b >= state.end] == [b for b in log.local.segment_bases() if b >= state.end]
    assert metadata.read_state(root, "t", 0).live == state.live           # the remote data stays
    seglog("verify", root, "--remote", check_rc=0)
    proc = seglog("offsets-for-times", root, "--topic", "t", "--time", "earliest", check_rc=0)
    assert "0" in proc.stdout
    seglog("offsets-for-times", root, "--topic", "t", "--time", "latest", check_rc=0)


def test_delete_on_disable_deletes_the_remote_data_and_the_log_starts_locally(tmp_path):
    root = tmp_path / "root"
    state = tiered_then_more(root, tmp_path)
    jobs = jobs_for(root, tmp_path, **{"remote.storage.enable": False, "remote.log.delete.on.disable": True})
    result = jobs.full_pass()
    assert result.ok, result.summary()
    assert sorted(result.done["t-0"]["tier"]["remote_deleted"]) == sorted(state.live)
    after = metadata.read_state(root, "t", 0)
    assert not after.live and after.end == state.end
    assert not [p for p in (tmp_path / "remote" / "t-0").iterdir() if p.suffix == ".log"]
    with TieredLog(root, "t", 0) as log:
        start = log.log_start_offset
        assert start == log.local_log_start_offset
    assert every_offset(root) == list(range(start, 80))
    seglog("verify", root, "--remote", check_rc=0)


def test_local_retention_never_outruns_the_remote_tier(tmp_path):
    """The core rule (metadata.locally_deletable), whatever the configuration: Log.apply_retention of a partition
    whose remote tier holds live segments deletes only local segments the remote tier holds too."""
    root = tmp_path / "root"
    state = tiered_then_more(root, tmp_path)
    off = validate_topic_config({**CFG, "remote.storage.enable": False, "retention.bytes": 0, "local.retention.bytes": -2})
    with Log.open(root / "t-0", off) as log:
        log.apply_retention()
        assert log.segment_bases()[0] <= state.end
    assert every_offset(root) == list(range(80))


def test_describe_reports_the_remote_range_as_recorded(tmp_path):
    """describe printed the remote range as reaching the local log start; a hole (made here by hand: no job
    makes one now) is reported as offsets on neither tier."""
    root = tmp_path / "root"
    state = tiered_then_more(root, tmp_path)
    with TieredLog(root, "t", 0) as log:
        remote_end = max(s.next for s in log.remote)
        local_start = log.local_log_start_offset
    out = seglog("describe", root, check_rc=0).stdout
    assert f"the remote tier holds offsets 0 to {remote_end - 1}; the local tier starts at {local_start}\n" in out
    with Log.open(root / "t-0", CFG) as log:                 # the hole retention used to open
        bases = log.segment_bases()
        k = next(i for i, b in enumerate(bases) if b >= state.end) + 1
        log.delete_oldest_segments(k)
        local_start = log.log_start_offset
    out = seglog("describe", root).stdout + seglog("describe", root).stderr
    assert f"offsets {state.end} to {local_start - 1} are on neither tier" in out, out
