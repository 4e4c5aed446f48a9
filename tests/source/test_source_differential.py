"""The Python storage core is the reference: the JVM reader (format("seglog")) and `Log.read` read the
same folders and must return the same rows, for every codec, sparse offsets (the gaps compaction
leaves), empty and missing partitions, the committed-end bound, timestamp seeks, and transactions
written by a real Kafka broker (read_committed and read_uncommitted)."""
from __future__ import annotations

import json
import random
import shutil
import struct

import crc32c
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog.indexer.codec.batch_layout import ATTRIBUTES_OFFSET, BATCH_HEADER_SIZE, CRC_OFFSET, HEADER_STRUCT, LOG_OVERHEAD
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.log import Log
from seglog.indexer.codec.records import write_varint
from seglog.indexer.topics import create_topic

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000
CODECS = ["uncompressed", "gzip", "snappy", "lz4", "zstd"]
CONFIG = {"segment.bytes": 8192, "index.interval.bytes": 512}


def core_rows(root, topic, partition, start=None, end=None, isolation="read_uncommitted"):
    """What the Python core returns for [start, end) of one partition, as comparable tuples."""
    with Log.open(root / f"{topic}-{partition}", readonly=True) as log:
        return [(partition, r.offset, r.key, r.value, r.timestamp, r.timestamp_type,
                 tuple((k, v) for k, v in r.headers))
                for r in log.read(start, end, isolation_level=isolation)]


def jvm_rows(spark, root, topic, **options):
    r = spark.read.format("seglog").option("topic", topic).option("includeHeaders", "true")
    for k, v in options.items():
        r = r.option(k, str(v))
    t = r.load(str(root)).toArrow()
    ts = t.column("timestamp").cast(pa.int64()).to_pylist()
    rows = [(p, o, k, v, None if us is None else us // 1000, tt, tuple((h["key"], h["value"]) for h in hs))
            for p, o, k, v, us, tt, hs in zip(
                t.column("partition").to_pylist(), t.column("offset").to_pylist(), t.column("key").to_pylist(),
                t.column("value").to_pylist(), ts, t.column("timestampType").to_pylist(),
                t.column("headers").to_pylist())]
    return sorted(rows, key=lambda r: (r[0], r[1]))


def commit(root, topic, ends):
    commits = CommitLog(root, topic)
    last = commits.last_batch("diff")
    commits.commit("diff", 0 if last is None else last + 1, ends)


def append_random(log, rng, n, chunks=5):
    for _ in range(chunks):
        k = n // chunks
        values = pa.array([None if rng.random() < 0.05 else rng.randbytes(rng.randrange(0, 300)) for _ in range(k)],
                          pa.binary())
        keys = pa.array([None if rng.random() < 0.2 else b"k%d" % rng.randrange(30) for _ in range(k)], pa.binary())
        ts = T0 + np.array([rng.randrange(0, 200) * 10 for _ in range(k)], np.int64)   # CreateTime back and forth
        headers = pa.array([[{"key": f"h{j}", "value": None if j == 1 else b"x%d" % i} for j in range(i % 3)]
                            for i in range(k)], pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])))
        log.append_columns(values, keys=keys, timestamps=ts, headers=headers)


@pytest.fixture(scope="module")
def codec_root(tmp_path_factory):
    """One topic per codec, 2 partitions, many segments, written by the Python core and committed."""
    root = tmp_path_factory.mktemp("diff-codecs")
    rng = random.Random(5)
    for codec in CODECS:
        topic = f"c-{codec}"
        create_topic(root, topic, 2, dict(CONFIG, **{"compression.type": codec}))
        ends = {}
        for p in range(2):
            with Log.open(root / f"{topic}-{p}", dict(CONFIG, **{"compression.type": codec}), outside_commit_log=True) as log:
                append_random(log, rng, 400)
                log.flush()
                ends[p] = log.log_end_offset
        commit(root, topic, ends)
    return root


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_same_rows(spark, codec_root, codec):
    topic = f"c-{codec}"
    want = core_rows(codec_root, topic, 0) + core_rows(codec_root, topic, 1)
    assert len(want) == 800 and len(list((codec_root / f"{topic}-0").glob("*.log"))) > 2
    assert jvm_rows(spark, codec_root, topic) == want


@pytest.mark.parametrize("codec", ["uncompressed", "zstd"])
def test_timestamp_seeks_same_rows(spark, codec_root, codec):
    """startingTimestamp and `where timestamp >= T` against the core's offset_for_timestamp, at ties,
    between records and past the end."""
    topic = f"c-{codec}"
    for t in (T0, T0 + 5, T0 + 990, T0 + 1990, T0 + 5000):
        want = []
        for p in range(2):
            with Log.open(codec_root / f"{topic}-{p}", readonly=True) as log:
                start = log.offset_for_timestamp(t)
            want += [] if start is None else core_rows(codec_root, topic, p, start)
        got = jvm_rows(spark, codec_root, topic, startingTimestamp=t, startingOffsetsByTimestampStrategy="latest")
        assert got == want, t
        filtered = sorted((r for r in want if r[4] >= t), key=lambda r: (r[0], r[1]))
        r = spark.read.format("seglog").option("topic", topic).load(str(codec_root))
        assert r.where(f"timestamp >= timestamp_millis({t})").count() == len(filtered)


def sparse_batch(base: int, offsets: list[int], last: int, ts: int) -> bytes:
    """One batch holding records at `offsets` (gaps inside, as Kafka's cleaner leaves them) whose
    lastOffsetDelta still says `last`, so the next batch starts at last + 1 (offsets stay dense
    between batches)."""
    body = bytearray()
    for i, off in enumerate(offsets):
        r = bytearray([0])
        write_varint(r, i)                     # timestamp delta
        write_varint(r, off - base)            # offset delta: skips
        key, value = b"k%d" % off, b"v%d" % off * 3
        write_varint(r, len(key))
        r += key
        write_varint(r, len(value))
        r += value
        write_varint(r, 0)
        write_varint(body, len(r))
        body += r
    out = bytearray(HEADER_STRUCT.pack(base, BATCH_HEADER_SIZE - LOG_OVERHEAD + len(body), 0, 2, 0, 0, last - base,
                                       ts, ts + len(offsets) - 1, -1, -1, -1, len(offsets)))
    crc = crc32c.crc32c(body, value=crc32c.crc32c(bytes(out[ATTRIBUTES_OFFSET:])))
    struct.pack_into(">I", out, CRC_OFFSET, crc)
    return bytes(out + body)


def test_sparse_offsets_same_rows(spark, tmp_path):
    """Two segments of batches with gaps inside; the indexes are built by the core's recovery."""
    rng = random.Random(8)
    part = tmp_path / "sparse-0"
    part.mkdir()
    next_offset = 0
    for seg in range(2):
        blob = bytearray()
        base_of_segment = next_offset
        for _ in range(30):
            last = next_offset + rng.randrange(3, 20)
            kept = sorted(rng.sample(range(next_offset, last + 1), rng.randrange(1, 4)))
            if last not in kept and rng.random() < 0.5:
                kept.append(last)
            blob += sparse_batch(next_offset, kept, last, T0 + next_offset)
            next_offset = last + 1
        (part / f"{base_of_segment:020d}.log").write_bytes(bytes(blob))
    with Log.open(part, CONFIG, outside_commit_log=True) as log:       # recovery builds both indexes from the records
        end = log.log_end_offset
        assert end == next_offset
    commit(tmp_path, "sparse", {0: end})
    want = core_rows(tmp_path, "sparse", 0)
    offsets = [r[1] for r in want]
    assert len(offsets) < end - 100            # really sparse
    assert jvm_rows(spark, tmp_path, "sparse") == want
    # seeks into the gaps: an offset range starting and ending inside them
    lo, hi = offsets[10] - 1, offsets[40] + 1
    got = jvm_rows(spark, tmp_path, "sparse", startingOffsets=f'{{"sparse": {{"0": {lo}}}}}',
                   endingOffsets=f'{{"sparse": {{"0": {hi}}}}}')
    assert got == [r for r in want if lo <= r[1] < hi]


def test_empty_missing_and_committed_end(spark, tmp_path):
    """Partition 1 never written (no folder), 2 with a folder and no records, 0 and 3 with records
    appended past their committed ends."""
    rng = random.Random(2)
    create_topic(tmp_path, "mixed", 4, CONFIG)
    ends = {}
    for p in (0, 3):
        with Log.open(tmp_path / f"mixed-{p}", CONFIG, outside_commit_log=True) as log:
            append_random(log, rng, 300)
            log.flush()
            ends[p] = log.log_end_offset - (57 if p == 0 else 0)
            append_random(log, rng, 50)           # appended, never committed
            log.flush()
    with Log.open(tmp_path / "mixed-2", CONFIG, outside_commit_log=True) as log:
        log.flush()
    commit(tmp_path, "mixed", ends)
    want = core_rows(tmp_path, "mixed", 0, None, ends[0]) + core_rows(tmp_path, "mixed", 3, None, ends[3])
    assert len(want) == 300 - 57 + 300
    assert jvm_rows(spark, tmp_path, "mixed") == want


@pytest.mark.kafka
def test_broker_folders_codecs_and_transactions(spark, kafka_broker, tmp_path):
    """A real broker writes every codec and interleaved transactions (some aborted); the folders are
    copied into a log root and committed at their log end: both readers return the same rows, with
    read_committed and read_uncommitted."""
    from tests.indexer.test_kafka_broker_read import broker_records, write_transactions
    from tests.kafka_clients import create_topic as broker_topic
    from tests.kafka_clients import produce

    rng = random.Random(13)
    topics = []
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"]:
        name = f"diff-{codec}"
        broker_topic(kafka_broker, name, config={"segment.ms": "10000", "index.interval.bytes": "256"})
        for chunk in range(3):
            produce(kafka_broker, name, broker_records(rng, 120, shift_ms=60_000 * chunk), compression=codec)
        topics.append(name)
    broker_topic(kafka_broker, "diff-txn")
    write_transactions(kafka_broker, "diff-txn", rng)
    topics.append("diff-txn")
    for name in topics:
        shutil.copytree(kafka_broker.partition_dir(name), tmp_path / f"{name}-0")
        with Log.open(tmp_path / f"{name}-0", readonly=True) as log:
            commit(tmp_path, name, {0: log.log_end_offset})
    for name in topics:
        for isolation in ("read_uncommitted", "read_committed"):
            want = core_rows(tmp_path, name, 0, isolation=isolation)
            assert want, name
            assert jvm_rows(spark, tmp_path, name, **{"kafka.isolation.level": isolation}) == want, (name, isolation)
    committed = core_rows(tmp_path, "diff-txn", 0, isolation="read_committed")
    assert len(committed) < len(core_rows(tmp_path, "diff-txn", 0))     # some transactions aborted


# ---------------------------------------------------------------------------------------------
# Property: any offset range and pushed filters, against a brute-force filter of the core's records.



@pytest.fixture(scope="module")
def model_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("diff-model")
    rng = random.Random(21)
    create_topic(root, "h", 2, CONFIG)
    ends = {}
    for p in range(2):
        with Log.open(root / f"h-{p}", CONFIG, outside_commit_log=True) as log:
            append_random(log, rng, 250)
            log.flush()
            ends[p] = log.log_end_offset - 10          # the last ten appended, never committed
    commit(root, "h", ends)
    records = {p: core_rows(root, "h", p) for p in range(2)}
    return root, ends, records


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=st.integers(0, 260), end=st.one_of(st.none(), st.integers(0, 300)),
       ts_lo=st.one_of(st.none(), st.integers(-20, 2100)), ts_hi=st.one_of(st.none(), st.integers(-20, 2100)),
       off_in=st.one_of(st.none(), st.sets(st.integers(0, 260), max_size=6)), part=st.sampled_from([None, 0, 1]))
def test_any_range_and_filters_match_a_brute_force_filter(spark, model_root, start, end, ts_lo, ts_hi, off_in, part):
    root, ends, records = model_root
    starting = {"h": {"0": start, "1": start}}
    ending = {"h": {"0": -1 if end is None else end, "1": -1 if end is None else end}}
    if start > min(ends.values()) or (end is not None and start > end):
        return                                     # a start past the end is refused (tested elsewhere)
    df = (spark.read.format("seglog").option("topic", "h").option("includeHeaders", "true")
          .option("startingOffsets", json.dumps(starting)).option("endingOffsets", json.dumps(ending))
          .load(str(root)))
    where = []
    if ts_lo is not None:
        where.append(f"timestamp >= timestamp_millis({T0 + ts_lo})")
    if ts_hi is not None:
        where.append(f"timestamp < timestamp_millis({T0 + ts_hi})")
    if off_in is not None:
        where.append(f"offset in ({', '.join(map(str, sorted(off_in)))})" if off_in else "offset in (-1)")
    if part is not None:
        where.append(f"partition = {part}")
    if where:
        df = df.where(" and ".join(where))
    t = df.toArrow()
    got = sorted(zip(t.column("partition").to_pylist(), t.column("offset").to_pylist(),
                     t.column("value").to_pylist()))
    want = sorted((r[0], r[1], r[3]) for p in (0, 1) for r in records[p]
                  if start <= r[1] < min(ends[p], end if end is not None else ends[p])
                  and (ts_lo is None or r[4] >= T0 + ts_lo) and (ts_hi is None or r[4] < T0 + ts_hi)
                  and (off_in is None or r[1] in off_in) and (part is None or r[0] == part))
    assert got == want


# ---------------------------------------------------------------------------------------------
# Cleaned partitions (docs/compaction.md): real cleans leave offset gaps between batches (and bare
# batches kept for their last offset); the JVM reader must read them exactly as the core does.

COMPACT = {"cleanup.policy": "compact", "segment.bytes": 2048, "index.interval.bytes": 256,
           "min.cleanable.dirty.ratio": 0.01, "delete.retention.ms": 5_000, "compression.type": "producer"}


def keyed_appends(log, rng, now, n):
    """n keyed records over few keys (updates), ~15% tombstones, CreateTime back and forth."""
    for _ in range(4):
        k = n // 4
        keys = pa.array([b"key-%d" % rng.randrange(25) for _ in range(k)], pa.binary())
        values = pa.array([None if rng.random() < 0.15 else rng.randbytes(rng.randrange(0, 120)) for _ in range(k)],
                          pa.binary())
        ts = now + np.array([rng.randrange(-300, 300) * 10 for _ in range(k)], np.int64)
        log.append_columns(values, keys=keys, timestamps=ts)


def build_cleaned(root, topic, seed, partitions=2, rounds=6):
    """A compacted topic under several real cleans; returns {partition: committed end}."""
    rng = random.Random(seed)
    create_topic(root, topic, partitions, COMPACT)
    ends = {}
    for p in range(partitions):
        now = T0
        with Log.open(root / f"{topic}-{p}", COMPACT, outside_commit_log=True) as log:
            for _ in range(rounds):
                keyed_appends(log, rng, now, rng.randrange(40, 160))
                log.roll()
                now += 4_000                      # tombstones outlive one clean, not three
                log.clean(now, force=True)
            keyed_appends(log, rng, now, 60)      # an active, never cleaned tail
            log.flush()
            ends[p] = log.log_end_offset - (7 if p == 0 else 0)   # partition 0: a committed end below the log end
    commit(root, topic, ends)
    return ends


@pytest.fixture(scope="module")
def cleaned_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("diff-cleaned")
    ends = build_cleaned(root, "cc", seed=31)
    records = {p: core_rows(root, "cc", p, None, ends[p]) for p in ends}
    for p in ends:
        offsets = [r[1] for r in records[p]]
        assert len(offsets) < ends[p] / 2                    # the cleans removed most records
        assert any(b > a + 1 for a, b in zip(offsets, offsets[1:]))
    assert (root / "cleaner-offset-checkpoint").exists()
    return root, ends, records


def interesting_starts(records, end):
    """Every offset at the edges of a gap: the last survivor, the first missing, the last missing, the
    next survivor; plus 0 and the end."""
    offsets = [r[1] for r in records]
    out = {0, end}
    for a, b in zip([-1] + offsets, offsets + [end]):
        if b > a + 1:
            out.update({max(a, 0), a + 1, b - 1, b})
    return sorted(o for o in out if 0 <= o <= end)


def test_cleaned_partitions_full_read_same_rows(spark, cleaned_root):
    root, ends, records = cleaned_root
    assert jvm_rows(spark, root, "cc") == records[0] + records[1]
    # Dense partitions keep their exact checks: the same rule says a dense topic without a cleaner
    # entry is dense, and the codec topics above (never cleaned) read through those checks.


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), mode=st.sampled_from(["offsets", "offsets", "timestamp"]),
       ts_lo=st.one_of(st.none(), st.integers(-3500, 26000)), off_in=st.one_of(st.none(), st.booleans()),
       part=st.sampled_from([None, 0, 1]))
def test_cleaned_any_start_and_filters_match_the_core(spark, cleaned_root, data, mode, ts_lo, off_in, part):
    """Starting offsets at every edge of the gaps (and the offsets of surviving records around them),
    starting timestamps (the core's offset_for_timestamp is the model) and pushed filters: the JVM reader
    returns exactly the core's records, brute-force filtered."""
    root, ends, records = cleaned_root
    r = spark.read.format("seglog").option("topic", "cc")
    if mode == "offsets":
        starts = {p: data.draw(st.sampled_from(interesting_starts(records[p], ends[p])), label=f"start{p}")
                  for p in ends}
        r = r.option("startingOffsets", json.dumps({"cc": {str(p): s for p, s in starts.items()}}))
    else:
        ts = T0 + data.draw(st.integers(-3500, 26000), label="startingTimestamp")
        starts = {}
        for p in ends:
            with Log.open(root / f"cc-{p}", readonly=True) as log:
                found = log.offset_for_timestamp(ts)
            starts[p] = ends[p] if found is None or found >= ends[p] else found
        r = r.option("startingTimestamp", str(ts)).option("startingOffsetsByTimestampStrategy", "latest")
    df = r.load(str(root))
    where = []
    picked = set()
    if ts_lo is not None:
        where.append(f"timestamp >= timestamp_millis({T0 + ts_lo})")
    if off_in:
        picked = {o for p in ends for o in interesting_starts(records[p], ends[p])[::3]}
        where.append(f"offset in ({', '.join(map(str, sorted(picked)))})")
    if part is not None:
        where.append(f"partition = {part}")
    if where:
        df = df.where(" and ".join(where))
    t = df.toArrow()
    got = sorted(zip(t.column("partition").to_pylist(), t.column("offset").to_pylist(), t.column("value").to_pylist()))
    want = sorted((row[0], row[1], row[3]) for p in ends for row in records[p]
                  if row[1] >= starts[p] and (ts_lo is None or row[4] >= T0 + ts_lo)
                  and (not off_in or row[1] in picked) and (part is None or row[0] == part))
    assert got == want


def test_cleaned_byte_split_tasks_same_rows(spark, cleaned_root):
    """Tasks cut at offset index entries inside cleaned segments (a tiny maxBytesPerTask): same rows."""
    root, ends, records = cleaned_root
    df = spark.read.format("seglog").option("topic", "cc").option("maxBytesPerTask", "600").load(str(root))
    assert df.rdd.getNumPartitions() > 4
    t = df.toArrow()
    got = sorted(zip(t.column("partition").to_pylist(), t.column("offset").to_pylist(), t.column("value").to_pylist()))
    assert got == [(r[0], r[1], r[3]) for p in ends for r in records[p]]


@pytest.mark.kafka
def test_broker_cleaned_partition_same_rows(spark, kafka_broker, tmp_path):
    """A partition cleaned by Kafka's own LogCleaner (a compacted topic on the real broker), copied with
    the broker's cleaner-offset-checkpoint (the same file, the same format): the JVM reader, the core
    and a Kafka consumer of the broker return the same records at the same offsets."""
    import time

    from tests.kafka_clients import consume_all, produce
    from tests.kafka_clients import create_topic as broker_topic

    rng = random.Random(41)
    name = "diff-compacted"
    broker_topic(kafka_broker, name, config={"cleanup.policy": "compact", "segment.ms": "10000",
                                             "min.cleanable.dirty.ratio": "0.01", "index.interval.bytes": "128"})
    for chunk in range(4):     # CreateTime 60 s apart per chunk: each chunk rolls a segment
        produce(kafka_broker, name, [{"key": b"key-%d" % rng.randrange(15),
                                      "value": None if rng.random() < 0.1 else rng.randbytes(rng.randrange(1, 80)),
                                      "timestamp": T0 + 60_000 * chunk + i, "headers": None} for i in range(150)])
    checkpoint = kafka_broker.log_dir / "cleaner-offset-checkpoint"
    deadline = time.monotonic() + 120           # the broker's cleaner wakes every 15 s
    while not (checkpoint.exists() and f"{name} 0 " in checkpoint.read_text()):
        assert time.monotonic() < deadline, "the broker's cleaner did not clean the partition"
        time.sleep(1)
    consumed = consume_all(kafka_broker, name)
    shutil.copytree(kafka_broker.partition_dir(name), tmp_path / f"{name}-0")
    shutil.copy(checkpoint, tmp_path / "cleaner-offset-checkpoint")
    with Log.open(tmp_path / f"{name}-0", readonly=True) as log:
        end = log.log_end_offset
    commit(tmp_path, name, {0: end})
    want = core_rows(tmp_path, name, 0)
    offsets = [r[1] for r in want]
    assert len(offsets) < end - 100             # the broker cleaned most of it
    assert [(r.offset, r.key, r.value) for r in consumed] == [(r[1], r[2], r[3]) for r in want]
    assert jvm_rows(spark, tmp_path, name) == want
    gap = next(o + 1 for o, n in zip(offsets, offsets[1:]) if n > o + 1)
    assert jvm_rows(spark, tmp_path, name, startingOffsets=json.dumps({name: {"0": gap}})) == [
        r for r in want if r[1] >= gap]


def test_gap_rule_is_the_cores_two_facts(spark, cleaned_root, tmp_path):
    """The same cleaned folder under a root with neither fact keeps the dense checks (both readers refuse
    it, naming the file and the offsets); with the cleaner checkpoint naming it, or with its topic
    recorded compacted, both read it, and read the same rows."""
    from seglog.errors import CorruptRecordError

    root, ends, records = cleaned_root
    shutil.copytree(root / "cc-0", tmp_path / "cc-0")
    commit(tmp_path, "cc", {0: ends[0]})
    with pytest.raises(CorruptRecordError, match="cc-0.*expected"):
        core_rows(tmp_path, "cc", 0, None, ends[0])
    with pytest.raises(Exception, match=r"CorruptLogException: .*cc-0/\d{20}\.log: the batch at position \d+ starts at"):
        jvm_rows(spark, tmp_path, "cc")
    shutil.copy(root / "cleaner-offset-checkpoint", tmp_path / "cleaner-offset-checkpoint")
    assert core_rows(tmp_path, "cc", 0, None, ends[0]) == records[0]
    assert jvm_rows(spark, tmp_path, "cc") == records[0]
    (tmp_path / "cleaner-offset-checkpoint").unlink()
    create_topic(tmp_path, "cc", 1, COMPACT)
    with Log.open(tmp_path / "cc-0", COMPACT, readonly=True) as log:
        assert [r.offset for r in log.read(None, ends[0])] == [r[1] for r in records[0]]
    assert jvm_rows(spark, tmp_path, "cc") == records[0]
    # the Python fallback source opens partitions with the topic's recorded configuration too
    from seglog.source.planning import open_readonly
    with open_readonly(str(tmp_path), "cc", 0) as log:
        assert [r.offset for r in log.read(None, ends[0])] == [r[1] for r in records[0]]


# The log itself random too: keyed appends (updates, tombstones), rolls, clock ticks and cleans under
# random settings; the core is the brute-force model of what the JVM reader must return.
_rec = st.tuples(st.sampled_from([b"a", b"b", b"c", b"d", b"e", b"long-key-f"]),
                 st.one_of(st.none(), st.binary(min_size=0, max_size=40)), st.integers(-50, 50))
_op = st.one_of(st.tuples(st.just("append"), st.lists(_rec, min_size=1, max_size=30)),
                st.tuples(st.just("append"), st.lists(_rec, min_size=1, max_size=30)),
                st.tuples(st.just("roll"), st.none()),
                st.tuples(st.just("tick"), st.sampled_from([1_000, 40_000])),
                st.tuples(st.just("clean"), st.none()),
                st.tuples(st.just("clean"), st.none()))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(segment_bytes=st.sampled_from([1024, 1400, 4096]), interval=st.sampled_from([0, 100, 4096]),
       codec=st.sampled_from(["producer", "gzip", "lz4", "zstd"]), retention=st.sampled_from([0, 30_000]),
       ops=st.lists(_op, min_size=3, max_size=20), held_back=st.integers(0, 5), data=st.data())
def test_random_cleaned_logs_read_as_the_core_reads_them(spark, tmp_path_factory, segment_bytes, interval, codec,
                                                         retention, ops, held_back, data):
    from seglog.indexer import Record

    root = tmp_path_factory.mktemp("diff-random-clean")
    cfg = dict(COMPACT, **{"segment.bytes": segment_bytes, "index.interval.bytes": interval,
                           "compression.type": codec, "delete.retention.ms": retention})
    create_topic(root, "r", 1, cfg)
    now = T0
    with Log.open(root / "r-0", cfg, outside_commit_log=True) as log:
        for kind, arg in ops + [("roll", None), ("clean", None)]:
            if kind == "append":
                log.append([Record(key=k, value=v, timestamp=now + dt) for k, v, dt in arg])
                now += 10
            elif kind == "roll":
                log.roll()
            elif kind == "tick":
                now += arg
            else:
                log.clean(now, force=True)
        log.flush()
        end = max(log.log_start_offset, log.log_end_offset - held_back)
    commit(root, "r", {0: end})
    want = core_rows(root, "r", 0, None, end)
    assert jvm_rows(spark, root, "r") == want
    start = data.draw(st.sampled_from(interesting_starts(want, end)), label="start")
    assert jvm_rows(spark, root, "r", startingOffsets=json.dumps({"r": {"0": start}})) == [r for r in want if r[1] >= start]
    ts = data.draw(st.integers(-60, 400_000), label="startingTimestamp") + T0
    with Log.open(root / "r-0", readonly=True) as log:
        found = log.offset_for_timestamp(ts)
    first = end if found is None or found >= end else found
    assert jvm_rows(spark, root, "r", startingTimestamp=ts, startingOffsetsByTimestampStrategy="latest") == [
        r for r in want if r[1] >= first]
    shutil.rmtree(root, ignore_errors=True)


def test_a_cleaned_segment_whose_kept_batch_starts_at_the_committed_end(spark, tmp_path):
    """Found by the random test above: tombstones at offsets 0 and 1 cleaned away (delete.retention.ms=0), the
    emptied batch at offset 2 kept (a cleaned segment keeps its last offset), and the committed end 2. The
    read's walk of segment 0 meets that batch at the bound and draws nothing: the offsets below it are a
    cleaner's gap, not a swap in progress, so the read returns no row (it failed with SegmentGoneException)."""
    from seglog.indexer import Record

    cfg = dict(COMPACT, **{"segment.bytes": 1024, "delete.retention.ms": 0})
    create_topic(tmp_path, "r", 1, cfg)
    with Log.open(tmp_path / "r-0", cfg, outside_commit_log=True) as log:
        for i in range(3):
            log.append([Record(key=b"a", value=None, timestamp=T0 + i)])
        log.roll()
        log.clean(T0 + 1_000_000, force=True)
        log.flush()
        assert log.log_end_offset == 3
    commit(tmp_path, "r", {0: 2})
    assert core_rows(tmp_path, "r", 0, None, 2) == []
    assert jvm_rows(spark, tmp_path, "r") == []
    assert jvm_rows(spark, tmp_path, "r", startingOffsets=json.dumps({"r": {"0": 1}})) == []
