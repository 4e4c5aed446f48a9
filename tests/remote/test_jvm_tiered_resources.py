"""What the JVM reader of tiered segments holds between reads (issue 36 items 17, 18; docs/tiered-storage.md §6):
S3 connections only while a chunk is read (a read of more tiered segments than S3A's pool has connections
finishes, every row once), and local copies of tiered indexes as a cache that a /tmp cleaner may empty (the next
seek fetches them again)."""
from __future__ import annotations

import shutil
import threading
import uuid
from pathlib import Path

import pytest

from seglog.conf import validate_topic_config
from seglog.indexer import Log, Record
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.remote import metadata
from seglog.indexer.remote.location import RemoteLocation, record_location
from seglog.indexer.remote.store import RemoteStore
from seglog.indexer.remote.tier import tier_partition
from seglog.indexer.topics import create_topic

T0 = 1_700_000_000_000
CFG = {"segment.bytes": 1 << 20, "segment.ms": 1 << 62, "index.interval.bytes": 64, "remote.storage.enable": True,
       "retention.ms": -1, "local.retention.bytes": 0}
N, PER_SEGMENT = 400, 20                 # 20 segments of about 20 KB, 19 tiered (never the active one)


def build_tiered(root: Path, location: RemoteLocation) -> int:
    create_topic(root, "t", 1, CFG)
    with Log.open(root / "t-0", CFG, outside_commit_log=True) as log:
        for i in range(N):
            log.append([Record(key=b"k%d" % i, value=(b"v%d" % i * 200)[:1000], timestamp=T0 + i * 1000)])
            if i % PER_SEGMENT == PER_SEGMENT - 1:
                log.roll()
        log.seal_inactive()
        end = log.log_end_offset
    CommitLog(root, "t").commit("q", 0, {0: end})
    record_location(root, location)
    tier_partition(root, "t", 0, validate_topic_config(CFG), RemoteStore(location))
    tiered = metadata.read_state(root, "t", 0).segments()
    assert len(tiered) >= 12
    return len(tiered)


def offsets(spark, root, **options) -> list[int]:
    r = spark.read.format("seglog").option("topic", "t")
    for k, v in options.items():
        r = r.option(k, v)
    return sorted(row.offset for row in r.load(str(root)).select("offset").collect())


def finishes(seconds: float, read):
    """`read()`'s value; a failure naming the hang when it has not returned within `seconds` (a read parked
    waiting for a pooled connection never returns: the test fails instead of hanging the run)."""
    box: dict = {}

    def run():
        try:
            box["value"] = read()
        except BaseException as exc:            # reported in the test's thread
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"the read did not finish within {seconds} s: S3A's connection pool exhausted?"
    if "error" in box:
        raise box["error"]
    return box["value"]


@pytest.mark.timeout(600)
def test_a_read_of_more_tiered_segments_than_s3_connections_finishes(spark, tmp_path, s3_server):
    """Item 18: each cached tiered .log kept its object's stream (and a pooled connection) open until eviction:
    with fs.s3a.connection.maximum=8 a read of 12+ tiered segments parked forever waiting for a connection."""
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    conf.set("fs.s3a.access.key", "testing")
    conf.set("fs.s3a.secret.key", "testing")
    bucket = s3_server.make_bucket(f"pool-{uuid.uuid4().hex[:10]}")       # a new bucket: a new S3A client
    location = RemoteLocation(bucket.replace("s3://", "s3a://") + "/x", endpoint=s3_server.endpoint,
                              region="us-east-1")
    root = tmp_path / "root"
    tiered = build_tiered(root, location)
    # small chunks, no read-ahead: a read of a segment's first records leaves the rest of its object unread
    settings = {"fs.s3a.connection.maximum": "8", "fs.s3a.connection.acquisition.timeout": "600s",
                "seglog.remote.read.chunk.bytes": "1024", "seglog.remote.read.ahead.chunks": "0"}
    try:
        for k, v in settings.items():
            spark.conf.set(k, v)
        for seg in range(tiered):                          # the head of each tiered segment, one read each
            first = seg * PER_SEGMENT
            assert finishes(120, lambda: offsets(spark, root, startingOffsets=f'{{"t": {{"0": {first}}}}}',
                                                 endingOffsets=f'{{"t": {{"0": {first + 1}}}}}')) == [first]
        assert finishes(120, lambda: offsets(spark, root)) == list(range(N))
        assert finishes(120, lambda: offsets(spark, root, maxBytesPerTask="20000")) == list(range(N))
        for k in ("seglog.remote.read.chunk.bytes", "seglog.remote.read.ahead.chunks"):
            spark.conf.unset(k)                            # read-ahead (vectored reads) and whole chunks too
        df = spark.read.format("seglog").option("topic", "t").load(str(root))
        assert finishes(120, df.count) == N
    finally:
        for k in settings:
            spark.conf.unset(k)


def test_removed_local_index_copies_are_fetched_again(spark, tmp_path):
    """Item 17: once a /tmp cleaner removed the local copies of tiered indexes, every later seek failed with
    NoSuchFileException until the JVM restarted."""
    (tmp_path / "remote").mkdir()
    root = tmp_path / "root"
    build_tiered(root, RemoteLocation(f"file://{tmp_path}/remote"))
    cache = spark._jvm.io.seglog.spark.format.RemoteSegmentCache

    def seeks():     # reads that start inside tiered segments: they need the offset and time indexes
        return (offsets(spark, root, startingOffsets='{"t": {"0": 47}}'),
                offsets(spark, root, startingTimestamp=str(T0 + 133_000)),
                offsets(spark, root, maxBytesPerTask="1500"))

    want = (list(range(47, N)), list(range(133, N)), list(range(N)))
    assert seeks() == want
    copies = Path(str(cache.indexDir().toString()))
    assert any(copies.iterdir())
    shutil.rmtree(copies)                                   # the cleaner, mid-session
    assert seeks() == want
    for f in copies.iterdir():                              # damaged copies: fetched again too
        f.write_bytes(b"\0" * 5)
    assert seeks() == want
