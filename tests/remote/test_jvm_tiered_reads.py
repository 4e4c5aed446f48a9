"""format("seglog") across both tiers (docs/tiered-storage.md §6): the JVM reader reads tiered segments
below the local log start through Hadoop's FileSystem (file:// and s3a:// to the loopback S3 server), as
the log read before tiering; a damaged, cut or removed remote object is a typed error, never fewer rows;
remote retention moves the log start and failOnDataLoss judges reads below it as today."""
from __future__ import annotations

import json
import uuid

import pytest

from seglog.conf import validate_topic_config
from seglog.indexer import Log, Record
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.remote import metadata
from seglog.indexer.remote.location import RemoteLocation, record_location
from seglog.indexer.remote.store import RemoteStore
from seglog.indexer.remote.tier import tier_partition
from seglog.indexer.remote.tiered_log import TieredLog
from seglog.indexer.topics import create_topic

T0 = 1_700_000_000_000
CFG = {"segment.bytes": 2048, "segment.ms": 1 << 62, "index.interval.bytes": 128, "remote.storage.enable": True,
       "retention.ms": -1, "local.retention.bytes": 4096}
COLUMNS = ["offset", "unix_millis(timestamp) AS timestamp", "key", "value", "headers"]


def append(root, lo, hi):
    with Log.open(root / "t-0", CFG, outside_commit_log=True) as log:
        for i in range(lo, hi, 3):         # batches of up to 3 records; timestamps with ties and steps back
            log.append([Record(key=b"k%d" % j, value=b"v%d" % j * 20, timestamp=T0 + (j // 2) * 1000 - (j % 5) * 300,
                               headers=[("h", b"%d" % j)]) for j in range(i, min(i + 3, hi))])
        log.roll()
        log.seal_inactive()
        end = log.log_end_offset
    commits = CommitLog(root, "t")
    last = commits.last_batch("tiered")
    commits.commit("tiered", 0 if last is None else last + 1, {0: end})
    return end


def build(root, n=300):
    create_topic(root, "t", 1, CFG)
    append(root, 0, n)
    return validate_topic_config(CFG)


def rows(spark, root, columnar="true", **options):
    r = spark.read.format("seglog").option("topic", "t").option("columnarReads", columnar).option("includeHeaders", "true")
    for k, v in options.items():
        r = r.option(k, json.dumps(v) if isinstance(v, dict) else str(v))
    got = r.load(str(root)).selectExpr(*COLUMNS).collect()
    return sorted((row.offset, row.timestamp, bytes(row.key), bytes(row.value),
                   [(h.key, bytes(h.value)) for h in row.headers]) for row in got)


@pytest.fixture(params=["file", "s3a"])
def location(request, tmp_path, spark):
    if request.param == "file":
        (tmp_path / "remote").mkdir()
        return RemoteLocation(f"file://{tmp_path}/remote")
    return s3a_location(spark, request.getfixturevalue("s3_server"), "r")


def s3a_location(spark, server, prefix):
    """A new bucket of the loopback S3 server, as an s3a:// remote location the session's S3A client reads."""
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    # Credentials come from the session's Hadoop configuration, as a user gives them (moto accepts any).
    conf.set("fs.s3a.access.key", "testing")
    conf.set("fs.s3a.secret.key", "testing")
    bucket = server.make_bucket(f"{prefix}-{uuid.uuid4().hex[:10]}")
    return RemoteLocation(bucket.replace("s3://", "s3a://") + "/x", endpoint=server.endpoint, region="us-east-1")


def tier(root, cfg, location):
    record_location(root, location)
    res = tier_partition(root, "t", 0, cfg, RemoteStore(location))
    assert res.copied and res.local_deleted                            # both tiers hold part of the log
    with TieredLog(root, "t", 0, cfg) as tiered:
        return tiered.local_log_start_offset


@pytest.mark.smoke
def test_a_replay_from_a_timestamp_crosses_the_tiers_as_before_tiering(spark, tmp_path, location):
    root = tmp_path / "root"
    cfg = build(root)
    replays = {ts: rows(spark, root, startingTimestamp=ts) for ts in (T0 + 3_000, T0 + 60_000)}
    whole = rows(spark, root)
    ranged = rows(spark, root, startingOffsets={"t": {"0": 17}}, endingOffsets={"t": {"0": 250}})
    local_start = tier(root, cfg, location)
    for ts, before in replays.items():
        assert before[0][0] < local_start < before[-1][0]              # it starts remote and ends local
        assert rows(spark, root, startingTimestamp=ts) == before
        assert rows(spark, root, "false", startingTimestamp=ts) == before
    assert rows(spark, root) == whole and whole[0][0] == 0
    assert rows(spark, root, startingOffsets={"t": {"0": 17}}, endingOffsets={"t": {"0": 250}}) == ranged
    # Many small tasks, a pushed timestamp filter and endingOffsetsByTimestamp, all across the boundary.
    from pyspark.sql import functions as F
    df = spark.read.format("seglog").option("topic", "t").option("maxBytesPerTask", "600").load(str(root))
    assert df.rdd.getNumPartitions() > 2
    assert sorted(r.offset for r in df.select("offset").collect()) == list(range(300))
    after = df.where(F.col("timestamp") >= F.timestamp_millis(F.lit(T0 + 30_000))).select("offset", "timestamp")
    assert sorted(r.offset for r in after.collect()) == [r[0] for r in whole if r[1] >= T0 + 30_000]
    by_ts = rows(spark, root, startingOffsetsByTimestamp={"t": {"0": T0 + 3_000}})
    assert by_ts == replays[T0 + 3_000]
    until = rows(spark, root, endingOffsetsByTimestamp={"t": {"0": T0 + 100_000}})
    assert until == [r for r in whole if r[0] < next(o for o, ts, *_ in whole if ts >= T0 + 100_000)]


def stream_offsets(spark, root, out, cp, **options):
    """Runs an availableNow query; the offsets written so far and the number of non-empty batches."""
    r = spark.readStream.format("seglog").option("topic", "t")
    for k, v in options.items():
        r = r.option(k, str(v))
    q = (r.load(str(root)).select("offset", "value").writeStream.format("parquet").option("path", str(out))
         .option("checkpointLocation", str(cp)).trigger(availableNow=True).start())
    q.awaitTermination(180)
    assert q.exception() is None, q.exception()
    batches = sum(1 for p in q.recentProgress if p["numInputRows"] > 0)
    return sorted(r.offset for r in spark.read.parquet(str(out)).collect()), batches


def test_a_stream_crosses_the_tiers(spark, tmp_path):
    root = tmp_path / "root"
    cfg = build(root)
    (tmp_path / "remote").mkdir()
    local_start = tier(root, cfg, RemoteLocation(f"file://{tmp_path}/remote"))
    out, cp = tmp_path / "out", tmp_path / "cp"
    got, batches = stream_offsets(spark, root, out, cp, startingOffsets="earliest", maxOffsetsPerTrigger=70)
    assert got == list(range(300)) and batches >= 300 // 70 and local_start > 70
    # More records, tiered again (the remote tier grows under the stream's position), then the next triggers.
    end = append(root, 300, 500)
    tier_partition(root, "t", 0, cfg, RemoteStore(RemoteLocation(f"file://{tmp_path}/remote")))
    with TieredLog(root, "t", 0, cfg) as tiered:
        assert tiered.local_log_start_offset > 300                     # the stream's position is on the remote tier now
    got, batches = stream_offsets(spark, root, out, cp, startingOffsets="earliest", maxOffsetsPerTrigger=70)
    assert got == list(range(end)) and batches >= 2


def file_location(tmp_path, name="remote"):
    (tmp_path / name).mkdir()
    return RemoteLocation(f"file://{tmp_path}/{name}")


def s3a_counter(spark, root, name):
    """A request count of the S3A client of `root`'s bucket (one per bucket and JVM: RemoteTier), made by the first
    read. Not the JVM's global storage statistics: Hadoop hands every S3A client after the first the registered
    one's, so a count read there may be another bucket's client's."""
    fmt = spark._jvm.io.seglog.spark.format
    tier = fmt.RemoteTier(fmt.RemoteLocation.load(spark._jvm.java.io.File(str(root)).toPath()), None)
    return tier.fileSystem().getIOStatistics().counters().get(name)


def test_a_whole_read_of_s3_tiered_segments_sends_no_head(spark, tmp_path, s3_server):
    """A replay of tiered segments through S3A costs their GETs and nothing per segment beside them: no HEAD for an
    object's length (the GET of each .log's last chunk checks it). S3A's request counts are the bucket's own client's
    (`s3a_counter`); the first read makes the client, the second is counted)."""
    location = s3a_location(spark, s3_server, "h")
    root = tmp_path / "root"
    cfg = build(root)
    before = rows(spark, root)
    tier(root, cfg, location)
    tiered = len(metadata.read_state(root, "t", 0).segments())
    assert tiered >= 3

    def heads():
        return s3a_counter(spark, root, "object_metadata_request")

    def gets():
        return s3a_counter(spark, root, "action_http_get_request")

    cache = spark._jvm.io.seglog.spark.format.RemoteSegmentCache
    spark.conf.set("seglog.remote.cache.max.bytes", "0")               # nothing kept: each read fetches anew
    try:
        assert rows(spark, root) == before                              # the bucket's S3A client made, and warm
        n, g, fetched = heads(), gets(), cache.fetchedBytes()
        assert rows(spark, root) == before
    finally:
        spark.conf.unset("seglog.remote.cache.max.bytes")
    # the counters are this bucket's client's: its GETs moved, its HEADs did not
    assert cache.fetchedBytes() > fetched and gets() > g and heads() == n


def test_a_first_read_of_a_prefix_sends_no_head(spark, tmp_path, s3_server):
    """Issue 41: the first read of a prefix in this JVM judges its owner object (docs/tiered-storage.md §2) with one
    GET, no HEAD before it (S3A's plain open sends one for the object's length): a query's planning waits for it.
    Two prefixes of one bucket, one S3A client: the second prefix's first read is counted."""
    first = s3a_location(spark, s3_server, "o")
    root = tmp_path / "root"
    cfg = build(root)
    tier(root, cfg, first)
    before = rows(spark, root)                                      # the bucket's S3A client made
    other = RemoteLocation(first.uri + "-fresh", endpoint=first.endpoint, region=first.region)
    root2 = tmp_path / "root2"
    cfg2 = build(root2)
    tier(root2, cfg2, other)
    heads, gets = (s3a_counter(spark, root2, k) for k in ("object_metadata_request", "action_http_get_request"))
    assert rows(spark, root2) == before                             # the owner judged: this root's
    assert s3a_counter(spark, root2, "action_http_get_request") > gets
    assert s3a_counter(spark, root2, "object_metadata_request") == heads


@pytest.mark.parametrize("ahead", ["0", "2"])
def test_a_replay_through_s3a_fetches_each_chunk_in_one_get(spark, tmp_path, s3_server, ahead):
    """Issue 41: a tiered .log's chunks are read into reused buffers, each in one GET, whether the walk fetches
    it (a vectored read of one range: S3A's positioned reads into a small array would each be a GET of their own)
    or the read-ahead does (ranges S3A may merge). Chunks of 256 KiB, four bounce arrays' worth each."""
    location = s3a_location(spark, s3_server, "g")
    root = tmp_path / "root"
    big = dict(CFG, **{"segment.bytes": 1 << 20, "local.retention.bytes": 1, "index.interval.bytes": 4096})
    create_topic(root, "t", 1, big)
    with Log.open(root / "t-0", big, outside_commit_log=True) as log:
        for i in range(0, 3000, 10):
            log.append([Record(key=b"k%d" % j, value=b"%06d" % j * 170, timestamp=T0 + j) for j in range(i, i + 10)])
        log.roll()
        log.seal_inactive()
        end = log.log_end_offset
    CommitLog(root, "t").commit("tiered", 0, {0: end})
    local_start = tier(root, validate_topic_config(big), location)
    store = RemoteStore(location)
    chunk = 256 << 10
    sizes = [store.size(f"t-0/{name}") for name in store.list("t-0") if name.endswith(".log") and int(name[:-4]) < local_start]
    chunks = sum(-(-size // chunk) for size in sizes)
    assert len(sizes) >= 2 and chunks >= 2 * len(sizes), sizes

    jvm = spark._jvm

    def gets():
        return s3a_counter(spark, root, "action_http_get_request")

    def replay():
        got = spark.read.format("seglog").option("topic", "t").load(str(root)).selectExpr("offset").collect()
        assert sorted(r.offset for r in got) == list(range(end))
        assert jvm.io.seglog.spark.format.RemoteSegmentCache.awaitReadAheads(10_000)

    settings = {"seglog.remote.read.chunk.bytes": str(chunk), "seglog.remote.read.ahead.chunks": ahead,
                "seglog.remote.cache.max.bytes": "0"}          # nothing kept: the second replay fetches anew
    try:
        for k, v in settings.items():
            spark.conf.set(k, v)
        replay()
        n = gets()
        replay()
        # each chunk once or, where two tasks' walks meet inside one, twice; in one GET or fewer (merged ranges)
        assert 0 < gets() - n <= chunks + len(sizes), (gets() - n, chunks)
    finally:
        for k in settings:
            spark.conf.unset(k)


@pytest.mark.parametrize("change", ["cut", "grow"])
def test_a_remote_log_of_another_length_than_its_manifest_is_named(spark, tmp_path, location, change):
    """A tiered .log shorter or longer than its manifest, through S3A as through file://: the read that reaches its
    end names the object and both lengths (the last chunk's GET asks for a byte past the manifest's end; no HEAD
    per segment), never fewer or more rows."""
    root = tmp_path / "root"
    cfg = build(root)
    tier(root, cfg, location)
    store = RemoteStore(location)
    key = f"t-0/{metadata.read_state(root, 't', 0).segments()[1].base:020d}.log"
    data = store.read(key)
    store.put_bytes(key, data[:-30] if change == "cut" else data + b"\0" * 7)
    now = len(data) - 30 if change == "cut" else len(data) + 7
    for columnar in ("true", "false"):
        with pytest.raises(Exception, match=f"RemoteObjectException: \\S*{key.split('/')[1]}: the object is "
                                            f"{now} bytes but its manifest records {len(data)}"):
            rows(spark, root, columnar)


@pytest.mark.parametrize("damage", ["flip", "cut", "remove", "index"])
def test_a_damaged_or_missing_remote_object_is_an_error_not_fewer_rows(spark, tmp_path, damage):
    root = tmp_path / "root"
    cfg = build(root)
    tier(root, cfg, file_location(tmp_path))
    seg = metadata.read_state(root, "t", 0).segments()[1]
    victim = tmp_path / "remote" / "t-0" / f"{seg.base:020d}{'.index' if damage == 'index' else '.log'}"
    data = bytearray(victim.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x01                                   # a flipped bit inside a batch
        victim.write_bytes(bytes(data))
        expected = r"RemoteObjectException: file:\S*" + victim.name
    elif damage == "cut":
        victim.write_bytes(bytes(data[:-30]))
        expected = r"RemoteObjectException: file:\S*" + victim.name + r": the object is \d+ bytes but its manifest records"
    elif damage == "index":
        data[-1] ^= 0x01
        victim.write_bytes(bytes(data))
        expected = r"RemoteObjectException: file:\S*" + victim.name + r": SHA-256"
    else:
        victim.unlink()
        expected = r"RemoteObjectGoneException: file:\S*" + victim.name + r": a tiered segment's object is missing"
    for columnar in ("true", "false"):
        if damage == "index":
            # A read from the log's start needs no index of a tiered segment (nothing fetches it): every row, each
            # checked by its batch's CRC. A read that seeks into the segment needs it, and is refused below.
            assert [r[0] for r in rows(spark, root, columnar)] == list(range(300))
            continue
        with pytest.raises(Exception, match=expected):
            rows(spark, root, columnar)
    with pytest.raises(Exception, match=expected):                     # also when the read starts past the damage
        rows(spark, root, startingOffsets={"t": {"0": seg.base + 1}}, endingOffsets={"t": {"0": seg.next}})


def test_remote_retention_moves_the_log_start_and_failondataloss_judges_as_today(spark, tmp_path):
    root = tmp_path / "root"
    cfg = build(root)
    loc = file_location(tmp_path)
    tier(root, cfg, loc)
    tier_partition(root, "t", 0, validate_topic_config({**CFG, "retention.bytes": 8192}), RemoteStore(loc))
    start = metadata.read_state(root, "t", 0).start
    assert start > 0
    assert [r[0] for r in rows(spark, root)] == list(range(start, 300))      # earliest is the remote log start
    with pytest.raises(Exception, match=f"offsets 0 to {start - 1} are no longer in the log"):
        rows(spark, root, startingOffsets={"t": {"0": 0}})
    assert [r[0] for r in rows(spark, root, startingOffsets={"t": {"0": 0}}, failOnDataLoss="false")] == \
        list(range(start, 300))
    # A stream whose position is below the remote log start: the same judgement.
    got, _ = stream_offsets(spark, root, tmp_path / "out", tmp_path / "cp", startingOffsets='{"t": {"0": 0}}',
                            failOnDataLoss="false")
    assert got == list(range(start, 300))
    with pytest.raises(Exception, match=f"offsets 0 to {start - 1} are no longer in the log"):
        stream_offsets(spark, root, tmp_path / "out2", tmp_path / "cp2", startingOffsets='{"t": {"0": 0}}')


def test_the_hadoop_configuration_is_shipped_once_until_it_changes(spark, tmp_path):
    """A read of a tiered root ships the session's Hadoop configuration to executors (RemoteConf): reads, and a
    stream's triggers, reuse its broadcast while every entry is the same (a stream's session is a clone with
    entries of its own: one broadcast for all its triggers); a changed entry is shipped with the next read,
    and a setting the read rejects is rejected at once, never masked by a reused broadcast."""
    root = tmp_path / "root"
    cfg = build(root)
    before = rows(spark, root)                                         # the log before tiering: the reference
    tier(root, cfg, file_location(tmp_path))
    shipped = spark._jvm.io.seglog.spark.read.RemoteConf
    assert rows(spark, root) == before
    n = shipped.broadcasts()
    for columnar in ("true", "false"):
        assert rows(spark, root, columnar) == before
    got, batches = stream_offsets(spark, root, tmp_path / "out", tmp_path / "cp", startingOffsets="earliest",
                                  maxOffsetsPerTrigger=70)
    assert got == list(range(300)) and batches >= 300 // 70
    assert shipped.broadcasts() <= n + 1                                # every trigger of the stream: one at most
    n = shipped.broadcasts()
    assert rows(spark, root) == before and shipped.broadcasts() == n    # the batch reads' one is kept beside it
    key = "seglog.remote.read.chunk.bytes"
    other = tmp_path / "other"                          # objects this JVM has not read: their settings are read anew
    build(other)
    tier(other, cfg, file_location(tmp_path, "remote2"))
    try:
        spark.conf.set(key, "100")                                      # below its minimum: the read names it
        with pytest.raises(Exception, match=key):
            spark.read.format("seglog").option("topic", "t").load(str(other)).collect()
        spark.conf.set(key, str(64 << 10))                              # a valid change: a new broadcast, same rows
        assert rows(spark, other) == before
        assert shipped.broadcasts() > n
    finally:
        spark.conf.unset(key)
    n = shipped.broadcasts()
    assert rows(spark, root) == before and shipped.broadcasts() == n    # back to the first entries: kept, reused


def test_a_tight_cache_bound_reads_every_record_once_and_fetches_each_chunk_once(spark, tmp_path):
    """The executors' bound on tiered bytes held in memory, set in the session as a user sets it (0: nothing kept
    past a read), with small chunks and read-ahead: batch reads (both row paths) and a stream's triggers return
    every record once and right, and a whole read fetches about the tiered .logs' bytes (a walk keeps the chunks
    it reads from, and chunks fetched ahead stay until read), never a chunk per batch."""
    root = tmp_path / "root"
    cfg = build(root)
    before = rows(spark, root)
    local_start = tier(root, cfg, file_location(tmp_path))
    # the segments read from the remote tier: those below the local log start (the others are read locally)
    logs = sum(p.stat().st_size for p in (tmp_path / "remote").rglob("*.log") if int(p.stem) < local_start)
    indexes = sum(p.stat().st_size for p in (tmp_path / "remote").rglob("*index") if int(p.stem) < local_start)
    cache = spark._jvm.io.seglog.spark.format.RemoteSegmentCache
    settings = {"seglog.remote.cache.max.bytes": "0", "seglog.remote.read.chunk.bytes": "1024",
                "seglog.remote.read.ahead.chunks": "2"}
    try:
        for k, v in settings.items():
            spark.conf.set(k, v)
        # several reads: a walk that fetches a chunk itself before the read-ahead asked for it runs must not see
        # that chunk fetched again by the read-ahead (a race: it showed in about half the reads)
        for columnar in ("true", "false") * 4:
            # a fetch ahead may outlive the read that started it: its bytes are that read's, not the next one's
            assert cache.awaitReadAheads(10_000), "a read-ahead still runs after 10 s"
            fetched = cache.fetchedBytes()
            assert rows(spark, root, columnar) == before
            assert cache.awaitReadAheads(10_000), "a read-ahead still runs after 10 s"
            # each chunk once (one task reads each segment here), plus the indexes planning may read
            assert logs <= cache.fetchedBytes() - fetched <= logs + indexes
        got, batches = stream_offsets(spark, root, tmp_path / "out", tmp_path / "cp", startingOffsets="earliest",
                                      maxOffsetsPerTrigger=70)
        assert got == list(range(300)) and batches >= 300 // 70
    finally:
        for k in settings:
            spark.conf.unset(k)


def test_a_spark_connect_client_reads_both_tiers_with_its_own_settings(remote, tmp_path):
    """Through a real Spark Connect server: a client's read of a tiered root crosses both tiers as the log read
    before tiering (whole, and from a timestamp), and the client's own session settings are the ones its read
    uses (a remote read setting the reader rejects comes back to the client, naming it)."""
    root = tmp_path / "root"
    cfg = build(root)
    before = rows(remote, root)
    local_start = tier(root, cfg, file_location(tmp_path))
    assert rows(remote, root) == before and local_start > 0
    since = T0 + 40_000
    assert rows(remote, root, startingTimestamp=since) == [r for r in before if r[0] >= min(
        o for o, ts, *_ in before if ts >= since)]
    other = tmp_path / "other"                          # objects the server has not read yet
    build(other)
    tier(other, cfg, file_location(tmp_path, "remote2"))
    key = "seglog.remote.read.chunk.bytes"
    remote.conf.set(key, "100")
    try:
        with pytest.raises(Exception, match=key):
            remote.read.format("seglog").option("topic", "t").load(str(other)).collect()
    finally:
        remote.conf.unset(key)
    assert rows(remote, other) == before
