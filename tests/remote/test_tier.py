"""The tier pass (indexer/remote/tier.py, docs/tiered-storage.md §4, 5) over real partitions and a
file:// remote tier (one case through the loopback S3 server): what is copied and recorded, crash
instants between objects and records, local and total retention, merge staying off tiered segments,
the metadata log's torn tail, and the sidecar's `tier` job."""
from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path

import pytest

from seglog.compactor.config import parse_config
from seglog.compactor.jobs import Jobs
from seglog.compactor.metrics import Metrics
from seglog.conf import validate_topic_config
from seglog.errors import ConfigError, CorruptRecordError
from seglog.indexer import Log, Record
from seglog.indexer.compaction.segment_merge import merge_partition
from seglog.indexer.remote import metadata
from seglog.indexer.remote.location import RemoteLocation, load_location, record_location
from seglog.indexer.remote.store import RemoteStore
from seglog.indexer.remote.tier import tier_partition
from seglog.indexer.topics import create_topic

T0 = 1_700_000_000_000
TIERED = {"segment.bytes": 1024, "segment.ms": 1 << 62, "index.interval.bytes": 64, "remote.storage.enable": True,
          "retention.ms": -1}


class Crash(Exception):
    """Stands for the process dying at an instant (the SIGKILL tests kill the real sidecar)."""


def fill(root: Path, n: int, config=None, topic="t", start=0, value=b"v" * 300, roll_every=0) -> dict:
    cfg = dict(TIERED, **(config or {}))
    if not (root / "_seglog").exists() or start == 0:
        create_topic(root, topic, 1, cfg)
    with Log.open(root / f"{topic}-0", cfg, outside_commit_log=True) as log:
        for i in range(start, start + n):
            log.append([Record(key=b"k%d" % i, value=value, timestamp=T0 + i * 1000)])
            if roll_every and i % roll_every == roll_every - 1:
                log.roll()
        log.seal_inactive()
    return cfg


def store_at(tmp_path: Path) -> RemoteStore:
    (tmp_path / "remote").mkdir(exist_ok=True)
    return RemoteStore(RemoteLocation(f"file://{tmp_path}/remote"))


def local_bases(root: Path, topic="t") -> list[int]:
    with Log.open(root / f"{topic}-0", readonly=True) as log:
        return log.segment_bases()


def objects(store: RemoteStore, topic="t") -> list[str]:
    return store.list(f"{topic}-0")


def test_sealed_segments_are_copied_whole_then_recorded_and_a_second_pass_does_nothing(tmp_path):
    root = tmp_path / "root"
    cfg = validate_topic_config(fill(root, 30))
    store = store_at(tmp_path)
    bases = local_bases(root)
    res = tier_partition(root, "t", 0, cfg, store)
    assert res.copied == bases[:-1]                        # every sealed segment, never the active one
    state = metadata.read_state(root, "t", 0)
    assert [s.base for s in state.segments()] == bases[:-1]
    assert state.end == bases[-1]
    for seg in state.segments():
        for name, suffix in (("log", ".log"), ("index", ".index"), ("timeindex", ".timeindex")):
            local = (root / "t-0" / f"{seg.base:020d}{suffix}").read_bytes()
            remote = store.read(f"t-0/{seg.base:020d}{suffix}")
            assert remote == local
            assert seg.files[name] == {"size": len(local), "sha256": hashlib.sha256(local).hexdigest()}
        manifest = json.loads(store.read(f"t-0/{seg.base:020d}.manifest.json"))
        assert manifest == seg.manifest("t", 0)
    before = metadata.metadata_path(root, "t", 0).read_bytes()
    assert tier_partition(root, "t", 0, cfg, store).summary() == {}
    assert metadata.metadata_path(root, "t", 0).read_bytes() == before


def test_a_pass_records_where_it_tiers_before_it_records_a_segment(tmp_path):
    """A root made after the sidecar started (or tiered by other means) records no remote tier: the pass records
    it before any segment, so readers find it; a root that records another URI is refused before anything
    changes (segments tiered there would be orphaned)."""
    root = tmp_path / "root"
    cfg = validate_topic_config(fill(root, 30))
    store = store_at(tmp_path)
    assert load_location(root) is None
    assert tier_partition(root, "t", 0, cfg, store).copied
    assert load_location(root) == store.location
    other = tmp_path / "other"
    cfg = validate_topic_config(fill(other, 30))
    (tmp_path / "elsewhere").mkdir()
    elsewhere = RemoteLocation(f"file://{tmp_path}/elsewhere")
    record_location(other, elsewhere)
    (tmp_path / "remote2").mkdir()
    store2 = RemoteStore(RemoteLocation(f"file://{tmp_path}/remote2"))
    before = local_bases(other)
    with pytest.raises(ConfigError, match="elsewhere"):
        tier_partition(other, "t", 0, cfg, store2)
    assert load_location(other) == elsewhere and local_bases(other) == before
    assert not metadata.metadata_path(other, "t", 0).exists() and objects(store2) == []   # nothing changed


def test_a_crash_between_the_objects_and_the_record_leaves_unrecorded_objects_the_next_pass_sweeps(tmp_path):
    root = tmp_path / "root"
    cfg = validate_topic_config(fill(root, 30))
    store = store_at(tmp_path)
    bases = local_bases(root)

    def crash_at_third(base):
        if base == bases[2]:
            raise Crash

    with pytest.raises(Crash):
        tier_partition(root, "t", 0, cfg, store, before_record=crash_at_third)
    state = metadata.read_state(root, "t", 0)
    assert sorted(state.live) == bases[:2]                 # objects of the third are there, unrecorded
    assert f"{bases[2]:020d}.manifest.json" in objects(store)
    res = tier_partition(root, "t", 0, cfg, store)
    assert f"{bases[2]:020d}.log" in res.swept
    assert res.copied == bases[2:-1]
    assert sorted(metadata.read_state(root, "t", 0).live) == bases[:-1]


def test_local_retention_deletes_only_recorded_segments(tmp_path):
    root = tmp_path / "root"
    cfg = validate_topic_config(fill(root, 30, {"local.retention.bytes": 0}))
    store = store_at(tmp_path)
    bases = local_bases(root)

    def crash_at_fourth(base):
        if base == bases[3]:
            raise Crash

    with pytest.raises(Crash):
        tier_partition(root, "t", 0, cfg, store, before_record=crash_at_fourth)
    assert local_bases(root) == bases                      # the crash came before any local deletion
    res = tier_partition(root, "t", 0, cfg, store)
    assert res.local_deleted == bases[:-1]                 # all recorded now; the active one stays
    assert local_bases(root) == bases[-1:]
    with Log.open(root / "t-0", readonly=True) as log:
        assert log.log_start_offset == bases[-1]           # the local log start moved; the remote tier holds the rest


def test_local_retention_waits_for_the_copy(tmp_path):
    root = tmp_path / "root"
    cfg = validate_topic_config(fill(root, 30, {"local.retention.bytes": 0}))
    from seglog.indexer.commit_log import CommitLog  # noqa: F401  (the committed end bounds the copy)
    store = store_at(tmp_path)
    bases = local_bases(root)
    # Nothing recorded: local retention alone (no copy) may delete nothing.
    state = metadata.read_state(root, "t", 0)
    from seglog.indexer.remote.tier import local_expired
    with Log.open(root / "t-0", readonly=True) as log:
        assert local_expired(state, log.retention_facts(), log.segment_bases(), cfg, T0) == 0
    assert tier_partition(root, "t", 0, cfg, store).local_deleted == bases[:-1]


def test_total_retention_records_deleting_first_and_a_crash_there_is_finished_next_pass(tmp_path):
    root = tmp_path / "root"
    cfg = validate_topic_config(fill(root, 30, {"retention.ms": 100_000, "local.retention.ms": 0}))
    store = store_at(tmp_path)
    bases = local_bases(root)
    now = T0 + 30_000                                      # every record expired locally, none in total
    res = tier_partition(root, "t", 0, cfg, store, now=now)
    assert res.local_deleted == bases[:-1] and not res.remote_deleted
    now = T0 + 100_000 + 15_000                            # about half of the records expired in total
    seen = []

    def crash_once(base):
        seen.append(base)
        raise Crash

    with pytest.raises(Crash):
        tier_partition(root, "t", 0, cfg, store, now=now, before_delete=crash_once)
    state = metadata.read_state(root, "t", 0)
    assert seen[0] in state.deleting and seen[0] not in state.live      # gone for readers already
    assert f"{seen[0]:020d}.log" in objects(store)                       # its objects not yet
    res = tier_partition(root, "t", 0, cfg, store, now=now)
    assert seen[0] in res.finished
    state = metadata.read_state(root, "t", 0)
    assert seen[0] in state.deleted and not state.deleting
    gone = set(res.finished) | set(res.remote_deleted)
    assert all(not n.startswith(f"{b:020d}.") for b in gone for n in objects(store))
    # What stays is a suffix of the log, every kept segment expired later than every removed one.
    live = [s.base for s in state.segments()]
    assert live and live == sorted(live) and max(gone) < min(live)
    assert all(s.max_ts >= now - 100_000 for s in state.segments())


def test_merge_never_touches_a_tiered_segment(tmp_path):
    root = tmp_path / "root"
    cfg = validate_topic_config(fill(root, 30, {"segment.merge.small.bytes": 1024}, value=b"v" * 100, roll_every=2))
    store = store_at(tmp_path)
    bases = local_bases(root)
    tier_partition(root, "t", 0, cfg, store)
    assert merge_partition(root / "t-0", cfg).groups == []          # all sealed ones are tiered
    assert local_bases(root) == bases
    fill(root, 30, cfg, start=30, value=b"v" * 100, roll_every=2)      # new small segments past the remote end
    res = merge_partition(root / "t-0", cfg)
    assert res.groups and all(g[0] >= bases[-1] for g in res.groups)


def test_a_torn_metadata_tail_reads_as_absent_and_is_cut_by_the_next_append(tmp_path):
    root = tmp_path / "root"
    cfg = validate_topic_config(fill(root, 20))
    store = store_at(tmp_path)
    tier_partition(root, "t", 0, cfg, store)
    path = metadata.metadata_path(root, "t", 0)
    whole = path.read_bytes()
    live = sorted(metadata.read_state(root, "t", 0).live)
    path.write_bytes(whole + metadata.encode({"op": "deleting", "base": live[0]})[:-7])   # a torn append
    state = metadata.read_state(root, "t", 0)
    assert state.torn and sorted(state.live) == live
    metadata.append(root, "t", 0, {"op": "deleting", "base": live[0]}, state)
    assert path.read_bytes() == whole + metadata.encode({"op": "deleting", "base": live[0]})
    damaged = bytearray(whole)
    damaged[12] ^= 0x01                                      # inside the first line: damage, not a torn tail
    path.write_bytes(bytes(damaged))
    with pytest.raises(CorruptRecordError, match="line 1"):
        metadata.read_state(root, "t", 0)


def test_the_sidecar_tier_job_records_the_location_tiers_and_leaves_other_topics(tmp_path):
    root = tmp_path / "root"
    fill(root, 20, {"local.retention.bytes": 0})
    fill(root, 20, {"remote.storage.enable": False}, topic="plain")
    (tmp_path / "remote").mkdir()
    raw = {"root": str(root), "schedule": {"partition.lock.timeout.ms": 100},
           "remote": {"uri": f"file://{tmp_path}/remote"}}
    jobs = Jobs(parse_config(raw, source="test"), Metrics())
    jobs.record_remote()
    assert load_location(root) == RemoteLocation(f"file://{tmp_path}/remote")
    result = jobs.full_pass()
    assert result.ok, result.summary()
    assert "tier" in result.done["t-0"] and "tier" not in result.done.get("plain-0", {})
    assert not (tmp_path / "remote" / "plain-0").exists()
    assert len(metadata.read_state(root, "t", 0).live) == len(result.done["t-0"]["tier"]["copied"])
    # Without a remote: section a tiered topic's pass fails by name; the others go on.
    jobs = Jobs(parse_config({"root": str(root)}, source="test.yaml"), Metrics())
    result = jobs.run("tier")
    assert [p for p, _ in result.failed] == ["t-0"] and "no remote: section" in result.failed[0][1]


def test_tiering_through_the_loopback_s3_server(tmp_path, s3_server):
    root = tmp_path / "root"
    cfg = validate_topic_config(fill(root, 20, {"local.retention.bytes": 0}))
    uri = s3_server.make_bucket(f"tier-{uuid.uuid4().hex[:10]}") + "/p"
    store = RemoteStore(RemoteLocation(uri, endpoint=s3_server.endpoint, region="us-east-1"))
    bases = local_bases(root)
    res = tier_partition(root, "t", 0, cfg, store)
    assert res.copied == bases[:-1] and res.local_deleted == bases[:-1]
    for seg in metadata.read_state(root, "t", 0).segments():
        assert store.hash(f"t-0/{seg.base:020d}.log") == seg.files["log"]


def test_truncation_below_the_remote_end_is_refused_and_changes_nothing(tmp_path):
    from seglog.errors import OffsetOutOfRangeError

    root = tmp_path / "root"
    cfg = validate_topic_config(fill(root, 30))
    tier_partition(root, "t", 0, cfg, store_at(tmp_path))
    remote_end = metadata.read_state(root, "t", 0).end
    with Log.open(root / "t-0", cfg, outside_commit_log=True) as log:
        end = log.log_end_offset
        with pytest.raises(OffsetOutOfRangeError, match="tiered"):
            log.truncate_to(remote_end - 1)
        assert log.log_end_offset == end
        log.truncate_to(remote_end)                          # at or above the remote end: as before
        assert log.log_end_offset == remote_end


def _cli(*args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "seglog", *map(str, args)], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("local_gone", [False, True])
def test_a_refused_cli_truncation_below_the_remote_end_changes_nothing(tmp_path, local_gone):
    """Issue 36 item 16: the refusal came after the committed end was lowered (records hidden from readers,
    lowered again by a second try); with the local copies gone the records were called "already gone"."""
    from seglog.indexer.commit_log import CommitLog

    root = tmp_path / "root"
    cfg = validate_topic_config(fill(root, 30, {"local.retention.bytes": 0} if local_gone else None))
    with Log.open(root / "t-0", cfg, readonly=True) as log:
        end = log.log_end_offset
    CommitLog(root, "t").commit("q", 0, {0: end})
    tier_partition(root, "t", 0, cfg, store_at(tmp_path))
    remote_end = metadata.read_state(root, "t", 0).end
    assert (local_bases(root)[0] == remote_end) is local_gone
    for _ in range(2):
        proc = _cli("truncate", root, "--topic", "t", "--partition", 0, "--to-offset", remote_end - 1, "--yes")
        assert proc.returncode != 0, proc.stdout
        assert "tiered" in proc.stderr and "already gone" not in proc.stderr, proc.stderr
        assert "lowered" not in proc.stdout and "Traceback" not in proc.stderr
        assert CommitLog(root, "t").end_offsets()[0] == end
        with Log.open(root / "t-0", cfg, readonly=True) as log:
            assert log.log_end_offset == end
