"""Reads across both tiers (indexer/remote/tiered_log.py, docs/tiered-storage.md §6): the same records,
offsets and timestamp lookups after tiering as before, through file:// and the loopback S3, GCS
(fake-gcs-server) and Azure (Azurite) servers;
`verify_remote` against the manifests."""
from __future__ import annotations

import json
import uuid

import pytest

from seglog.conf import validate_topic_config
from seglog.errors import CorruptRecordError, OffsetOutOfRangeError
from seglog.indexer import Log, Record
from seglog.indexer.log import EARLIEST, LATEST
from seglog.indexer.remote import metadata
from seglog.indexer.remote.location import RemoteLocation, record_location
from seglog.indexer.remote.store import RemoteStore
from seglog.indexer.remote.tier import tier_partition
from seglog.indexer.remote.tiered_log import TieredLog
from seglog.indexer.topics import create_topic

T0 = 1_700_000_000_000
CFG = {"segment.bytes": 2048, "segment.ms": 1 << 62, "index.interval.bytes": 128, "remote.storage.enable": True,
       "retention.ms": -1, "local.retention.bytes": 4096}


def build(root, n=200):
    create_topic(root, "t", 1, CFG)
    with Log.open(root / "t-0", CFG, outside_commit_log=True) as log:
        for i in range(0, n, 3):           # batches of up to 3 records; timestamps with ties and steps back
            log.append([Record(key=b"k%d" % j, value=b"v%d" % j * 20, timestamp=T0 + (j // 2) * 1000 - (j % 5) * 300,
                               headers=[("h", b"%d" % j)]) for j in range(i, min(i + 3, n))])
        log.seal_inactive()
    return validate_topic_config(CFG)


def snapshot(log, lookups):
    return ([(r.offset, r.timestamp, r.key, r.value, r.headers) for r in log.read()],
            [log.offset_for_timestamp(ts) for ts in lookups])


@pytest.fixture(params=["file", "s3", "gs", "abfs"])
def location(request, tmp_path):
    if request.param == "file":
        (tmp_path / "remote").mkdir()
        return RemoteLocation(f"file://{tmp_path}/remote")
    if request.param == "gs":          # fake-gcs-server on loopback (skips where it is not installed)
        server = request.getfixturevalue("gcs_server")
        return RemoteLocation(server.make_bucket(f"r-{uuid.uuid4().hex[:10]}") + "/x", endpoint=server.endpoint)
    if request.param == "abfs":        # Azurite on loopback
        server = request.getfixturevalue("azurite_server")
        return RemoteLocation(server.make_container(f"r-{uuid.uuid4().hex[:10]}") + "/x", endpoint=server.endpoint)
    server = request.getfixturevalue("s3_server")
    return RemoteLocation(server.make_bucket(f"r-{uuid.uuid4().hex[:10]}") + "/x", endpoint=server.endpoint,
                          region="us-east-1")


def test_a_tiered_log_reads_as_the_log_did_before_tiering(tmp_path, location):
    root = tmp_path / "root"
    cfg = build(root)
    lookups = [T0 - 5000, T0, T0 + 1, T0 + 17_000, T0 + 50_500, T0 + 99_000, T0 + 99_001, T0 + 500_000, EARLIEST, LATEST]
    with Log.open(root / "t-0", cfg, readonly=True) as log:
        before = snapshot(log, lookups)
        from_ts = {ts: [(r.offset, r.value) for r in log.read(log.offset_for_timestamp(ts))]
                   for ts in (T0 + 3_000, T0 + 60_000)}
    record_location(root, location)
    res = tier_partition(root, "t", 0, cfg, RemoteStore(location))
    assert res.copied and res.local_deleted                            # both tiers hold part of the log
    with TieredLog(root, "t", 0, cfg) as tiered:
        assert tiered.local_log_start_offset > 0 and tiered.log_start_offset == 0
        assert snapshot(tiered, lookups) == before
        first_local = tiered.local_log_start_offset
        for ts, rows in from_ts.items():                               # replays from a timestamp
            start = tiered.offset_for_timestamp(ts)
            assert start < first_local < rows[-1][0]                   # it starts remote and ends local
            assert [(r.offset, r.value) for r in tiered.read(start)] == rows
        tiers = [s.tier for s in tiered.segments()]
        assert tiers[0] == "remote" and tiers[-1] == "local" and "remote" in tiers
        assert tiered.verify_remote() == []
        for at in range(0, first_local + 10, 7):                       # any start, any end across the boundary
            assert [r.offset for r in tiered.read(at, at + 25)] == list(range(at, min(at + 25, 200)))


def test_remote_retention_moves_the_log_start_and_verify_finds_a_changed_object(tmp_path):
    root = tmp_path / "root"
    cfg = build(root)
    (tmp_path / "remote").mkdir()
    loc = RemoteLocation(f"file://{tmp_path}/remote")
    record_location(root, loc)
    tier_partition(root, "t", 0, cfg, RemoteStore(loc))
    total = validate_topic_config({**CFG, "retention.bytes": 8192})
    tier_partition(root, "t", 0, total, RemoteStore(loc))
    state = metadata.read_state(root, "t", 0)
    with TieredLog(root, "t", 0, total) as tiered:
        assert tiered.log_start_offset == state.start > 0
        with pytest.raises(OffsetOutOfRangeError):
            list(tiered.read(0, 5))
        seg = state.segments()[0]
        victim = tmp_path / "remote" / "t-0" / f"{seg.base:020d}.log"
        data = bytearray(victim.read_bytes())
        data[100] ^= 0xFF
        victim.write_bytes(bytes(data))
        faults = tiered.verify_remote()
        assert len(faults) == 1 and f"{seg.base:020d}.log" in faults[0]
        with pytest.raises(CorruptRecordError):
            list(tiered.read(seg.base, seg.next))


def test_an_open_view_lists_a_segment_deleted_locally_under_it_on_the_remote_tier(tmp_path):
    """A view opened before the tier pass's local retention still lists every segment once, with no hole:
    the ones deleted locally since as remote (their bytes counted), the log start unchanged; a segment
    gone from both tiers since is left out with everything older (the soak read a log start of 63 with
    63-327 missing from the listing, and so 15,897 bytes where over 32,768 were held)."""
    root = tmp_path / "root"
    keep_local = validate_topic_config({**CFG, "local.retention.bytes": -1})
    build(root)
    (tmp_path / "remote").mkdir()
    loc = RemoteLocation(f"file://{tmp_path}/remote")
    record_location(root, loc)
    tier_partition(root, "t", 0, keep_local, RemoteStore(loc))           # copied, every local copy kept
    with TieredLog(root, "t", 0, keep_local) as before:
        whole = [(s.base_offset, s.next_offset, s.size_bytes) for s in before.segments()]
    assert len(whole) > 3 and all(s.tier != "remote" for s in TieredLog(root, "t", 0, keep_local).segments())

    with TieredLog(root, "t", 0, keep_local) as view:
        res = tier_partition(root, "t", 0, validate_topic_config(CFG), RemoteStore(loc))   # local retention
        assert len(res.local_deleted) >= 2
        segs = view.segments()
        assert [(s.base_offset, s.next_offset, s.size_bytes) for s in segs] == whole
        assert [s.tier for s in segs[:len(res.local_deleted)]] == ["remote"] * len(res.local_deleted)

    with TieredLog(root, "t", 0, keep_local) as view:
        gone = tier_partition(root, "t", 0, validate_topic_config({**CFG, "retention.bytes": 8192}),
                              RemoteStore(loc)).remote_deleted
        assert gone
        listed = [(s.base_offset, s.next_offset, s.size_bytes) for s in view.segments()]
        # as the open saw it, or without what went from both tiers since: either way whole, with no hole
        assert listed == [w for w in whole if w[0] >= listed[0][0]]
        assert listed[0][0] in (0, metadata.read_state(root, "t", 0).start)


def test_the_cli_sees_both_tiers(tmp_path):
    from tests.cli.test_cli import seglog

    root = tmp_path / "root"
    cfg = build(root)
    with Log.open(root / "t-0", cfg, readonly=True) as log:
        expected = {ts: log.offset_for_timestamp(ts) for ts in (T0 + 2_000, T0 + 90_000)}
    (tmp_path / "remote").mkdir()
    loc = RemoteLocation(f"file://{tmp_path}/remote")
    record_location(root, loc)
    tier_partition(root, "t", 0, cfg, RemoteStore(loc))
    with TieredLog(root, "t", 0, cfg) as tiered:
        local_start = tiered.local_log_start_offset
    assert expected[T0 + 2_000] < local_start                       # the lookup's answer is on the remote tier
    for ts, offset in expected.items():
        out = seglog("offsets-for-times", root, "--topic", "t", "--time", ts, check_rc=0).stdout
        assert out.strip() == f"t:0:{offset}"
    assert seglog("offsets-for-times", root, "--topic", "t", "--time", "earliest", check_rc=0).stdout.strip() == "t:0:0"
    doc = json.loads(seglog("describe", root, "--json", check_rc=0).stdout)["partitions"][0]
    assert doc["log_start_offset"] == 0 and doc["local_log_start_offset"] == local_start
    tiers = [s["tier"] for s in doc["segments"]]
    assert tiers[0] == "remote" and "both" in tiers and tiers[-1] == "local"
    assert "remote" in seglog("describe", root, check_rc=0).stdout
    assert "clean" in seglog("verify", root, "--remote", check_rc=0).stdout
    state = metadata.read_state(root, "t", 0)
    victim = tmp_path / "remote" / "t-0" / f"{state.segments()[1].base:020d}.timeindex"
    victim.write_bytes(victim.read_bytes()[:-12])                    # a tiered object cut short
    out = seglog("verify", root, "--remote", check_rc=1).stdout
    assert victim.name in out
    seglog("verify", root, check_rc=0)                                # the local tier alone is fine


def test_the_python_source_reads_across_both_tiers(tmp_path):
    """The `seglog` Python data source's planning and tasks (source/), without Spark: the same rows from
    the earliest offset and from a timestamp on the remote tier, before and after tiering, cut into
    several tasks."""
    import pyarrow as pa

    from seglog.indexer.commit_log import CommitLog
    from seglog.source.options import parse_options
    from seglog.source.planning import ScanBounds, plan
    from seglog.source.reader import arrow_schema, read_slice

    root = tmp_path / "root"
    cfg = build(root)
    CommitLog(root, "t").commit("w", 0, {0: 200})

    def rows(**options):
        opts = parse_options({"path": str(root), "topic": "t", "maxbytespertask": "1024", **options})
        tasks = plan(opts, ScanBounds(), cores=2)
        out = [b for task in tasks for sl in task for b in read_slice(opts, ScanBounds(), sl, arrow_schema(True))]
        table = pa.Table.from_batches(out).sort_by("offset")
        return len(tasks), table.select(["offset", "timestamp", "key", "value"]).to_pylist()

    before = {k: rows(**o) for k, o in {"earliest": {}, "ts": {"startingtimestamp": str(T0 + 7_000)}}.items()}
    (tmp_path / "remote").mkdir()
    loc = RemoteLocation(f"file://{tmp_path}/remote")
    record_location(root, loc)
    assert tier_partition(root, "t", 0, cfg, RemoteStore(loc)).local_deleted
    for k, o in {"earliest": {}, "ts": {"startingtimestamp": str(T0 + 7_000)}}.items():
        tasks, got = rows(**o)
        assert tasks > 1 and got == before[k][1] and got[0]["offset"] < 20
