"""Planning of seglog reads without Spark: cutting work into tasks by bytes, and filter translation."""
from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from pyspark.sql.datasource import (
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringStartsWith,
)

from seglog.source.reader import BoundsBuilder, constant_strings, row_mask
from seglog.source.options import parse_options
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog.indexer import Log, Record
from seglog.source.planning import (MIN_TASK_BYTES, PartitionRange, ScanBounds, Slice, split_with_log, pack,
                                    target_task_bytes, task_slack)

BYTES_PER_OFFSET = 100


def split_uniform(rng, start, end, nbytes):
    """A partition whose records are all BYTES_PER_OFFSET bytes: the last offset holding at most nbytes
    from start (one record when none fits), and the bytes before it."""
    cut = start + max(1, nbytes // BYTES_PER_OFFSET)
    return cut, (cut - start) * BYTES_PER_OFFSET


def rng(p, start, end):
    return PartitionRange("t", p, start, end, (end - start) * BYTES_PER_OFFSET)


def covered(tasks):
    """Every (partition, offset) read, in task order; asserts no offset is read twice."""
    seen = []
    for task in tasks:
        for s in task:
            seen.extend((s.partition, o) for o in range(s.start, s.end))
    assert len(seen) == len(set(seen))
    return set(seen)


def test_small_partitions_share_one_task():
    ranges = [rng(p, 0, 10) for p in range(8)]
    tasks = pack(ranges, 10_000, split_uniform)
    assert len(tasks) == 1 and len(tasks[0]) == 8
    assert covered(tasks) == {(p, o) for p in range(8) for o in range(10)}


def test_large_partition_is_split():
    tasks = pack([rng(0, 0, 1000)], 25_000, split_uniform)
    assert len(tasks) == 4
    assert [t[0].start for t in tasks] == [0, 250, 500, 750]
    assert covered(tasks) == {(0, o) for o in range(1000)}


def test_mixed_partitions_cut_as_one_stream():
    ranges = [rng(0, 0, 150), rng(1, 0, 0), rng(2, 30, 200), rng(3, 5, 10)]
    tasks = pack(ranges, 10_000, split_uniform)
    sizes = [sum((s.end - s.start) * BYTES_PER_OFFSET for s in t) for t in tasks]
    assert all(size <= 10_000 * 9 // 8 for size in sizes)
    assert len(tasks) == 4   # 325 offsets * 100 B / 10 kB
    assert covered(tasks) == ({(0, o) for o in range(150)} | {(2, o) for o in range(30, 200)}
                              | {(3, o) for o in range(5, 10)})


def test_unsplittable_range_stays_whole():
    tasks = pack([rng(0, 0, 1000)], 10_000, lambda *a: None)
    assert tasks == [[Slice("t", 0, 0, 1000)]]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch_sizes=st.lists(st.tuples(st.integers(1, 8), st.integers(0, 300)), min_size=1, max_size=60),
       segment_bytes=st.sampled_from([1024, 2048, 1 << 20]), wanted=st.integers(1, 12), start=st.integers(0, 20))
def test_tasks_hold_at_most_the_target_and_min_partitions_is_met_on_a_real_log(tmp_path_factory, batch_sizes,
                                                                              segment_bytes, wanted, start):
    """The rule both planners keep (docs/spec.md §8), on a real log whose every batch start is indexed:
    the tasks cover the range once, in order; none holds more than the target unless it is one piece
    that cannot be cut (one batch past the cut); minPartitions gets at least that many tasks when no
    batch is larger than the target."""
    path = tmp_path_factory.mktemp("plan") / "t-0"
    with Log.open(path, {"segment.bytes": segment_bytes, "index.interval.bytes": 1}, outside_commit_log=True) as log:
        for n, size in batch_sizes:
            log.append([Record(key=None, value=b"v" * size, timestamp=1_700_000_000_000) for _ in range(n)])
        end = log.log_end_offset
        start = min(start, end - 1)
        total = log.byte_size(start, end)
        opts = parse_options({"path": "/r", "topic": "t", "minpartitions": str(wanted)})
        target = target_task_bytes(total, opts)
        tasks = pack([PartitionRange("t", 0, start, end, total, log)], target, split_with_log, task_slack(target, opts))
        slices = [s for task in tasks for s in task]
        assert [(s.start, s.end) for s in slices] == list(zip([start] + [s.end for s in slices[:-1]],
                                                               [s.end for s in slices]))
        assert slices[0].start == start and slices[-1].end == end
        sizes = [sum(log.byte_size(s.start, s.end) for s in task) for task in tasks]
        batch_bytes = [12 + 49 + n * (size + 10) for n, size in batch_sizes]   # a bound on one batch's size
        for task, size in zip(tasks, sizes):
            assert size <= target or len(task) == 1, (target, sizes, tasks)
        if max(batch_bytes) * 2 <= target:
            assert len(tasks) >= min(wanted, end - start), (target, sizes, tasks)


def test_target_bytes():
    o = parse_options({"path": "/r", "topic": "t"})
    assert target_task_bytes(1 << 20, o, cores=2) == MIN_TASK_BYTES           # modest read: one task
    assert target_task_bytes(100 << 20, o, cores=2) == 50 << 20                # one task per core
    assert target_task_bytes(100 << 30, o, cores=2) == o.max_bytes_per_task    # capped
    o = parse_options({"path": "/r", "topic": "t", "minpartitions": "10"})
    assert target_task_bytes(1000, o) == 100


def us(ms):
    return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=ms)


def push(*filters):
    b = BoundsBuilder()
    handled = [f for f in filters if b.push(f)]
    return b.build(), handled


def test_timestamp_filters_to_ms_bounds():
    bounds, handled = push(GreaterThanOrEqual(("timestamp",), us(1000)), LessThan(("timestamp",), us(2000)),
                           IsNotNull(("timestamp",)))
    assert len(handled) == 3
    assert (bounds.ts_min, bounds.ts_max) == (1000, 1999)
    # sub-millisecond literals: records are whole ms
    half = us(1000) + dt.timedelta(microseconds=500)
    bounds, _ = push(GreaterThanOrEqual(("timestamp",), half), LessThanOrEqual(("timestamp",), half))
    assert (bounds.ts_min, bounds.ts_max) == (1001, 1000) and bounds.is_empty()
    bounds, _ = push(GreaterThan(("timestamp",), us(1000)))
    assert bounds.ts_min == 1001
    bounds, _ = push(In(("timestamp",), (us(5), us(9), half)), EqualTo(("timestamp",), us(9)))
    assert bounds.ts_in == frozenset({9}) and bounds.lowest_timestamp() == 9


def test_offset_partition_topic_filters():
    bounds, handled = push(GreaterThan(("offset",), 10), LessThanOrEqual(("offset",), 20),
                           In(("partition",), (0, 2)), EqualTo(("topic",), "t"))
    assert len(handled) == 4
    assert bounds.offset_range() == (11, 21)
    assert bounds.keeps_partition("t", 2) and not bounds.keeps_partition("t", 1)
    assert not bounds.keeps_partition("u", 0)
    bounds, _ = push(In(("offset",), (7, 3)))
    assert bounds.offset_range() == (3, 8) and bounds.needs_row_filter()


def test_unsupported_filters_are_returned():
    _, handled = push(Not(EqualTo(("offset",), 3)), StringStartsWith(("topic",), "e"),
                      EqualTo(("key",), b"k"), GreaterThan(("offset",), 1.5), IsNotNull(("key",)))
    assert handled == []


def test_row_mask_and_constant_strings():
    batch = pa.record_batch({"offset": pa.array([0, 1, 2, 3], pa.int64()),
                             "timestamp": pa.array([50, 10, 30, -1], pa.int64())})
    mask = row_mask(batch, ScanBounds(ts_min=20, offset_in=frozenset({0, 2, 3})))
    assert batch.filter(mask).column("offset").to_pylist() == [0, 2]
    col = constant_strings("évents", 3)
    col.validate(full=True)
    assert col.to_pylist() == ["évents"] * 3 and constant_strings("x", 0).to_pylist() == []


@pytest.mark.parametrize("n", [1, 7])
def test_empty_scan_bounds(n):
    assert ScanBounds(offset_in=frozenset()).is_empty()
    assert not ScanBounds(offset_min=n).is_empty()


def test_planning_survives_retention_deleting_segments_under_it(tmp_path):
    """The sidecar's retention deletes segments between the planner's open and its split by bytes:
    planning starts again from the new log start instead of failing (issue: planning failed even
    with failOnDataLoss=false)."""
    import time as _time

    import numpy as np
    import pyarrow as pa

    from seglog.indexer.commit_log import CommitLog
    from seglog.indexer.log import Log
    from seglog.source.options import parse_options
    from seglog.source.planning import open_readonly, plan

    config = {"segment.bytes": 2048, "index.interval.bytes": 128, "retention.ms": 3_600_000,
              "file.delete.delay.ms": 0}
    now = int(_time.time() * 1000)
    with Log.open(tmp_path / "t-0", config, outside_commit_log=True) as log:
        for k in range(40):
            ts = now - 7_200_000 if k < 30 else now
            log.append_columns(pa.array([b"v" * 60] * 10), timestamps=np.full(10, ts, np.int64))
        end = log.log_end_offset
    CommitLog(tmp_path, "t").commit("w", 0, {0: end})
    raced = []

    def racing_opener(root, topic, partition):
        reader = open_readonly(root, topic, partition)
        if not raced:                      # the first open only: retention runs right after it
            with Log.open(tmp_path / "t-0", config, outside_commit_log=True) as writer:
                writer.seal_inactive()
                raced.append(writer.apply_retention().log_start_offset)
        return reader

    for fail_on_data_loss in ("false", "true"):
        raced.clear()
        opts = parse_options({"path": str(tmp_path), "topic": "t", "failondataloss": fail_on_data_loss,
                              "maxbytespertask": "1024"})
        tasks = plan(opts, ScanBounds(), cores=2, opener=racing_opener)
        slices = [s for task in tasks for s in task]
        start = min(s.start for s in slices)
        assert raced and 0 < raced[0] == start and max(s.end for s in slices) == end


def test_planning_the_last_offsets_opens_only_their_segments(tmp_path):
    """Issue 24: the byte estimate and the task cuts of the last offsets of a 300-segment partition
    open the segments holding them, not the history before (they once summed every earlier segment's
    size); the estimate stays additive and equals the files' bytes over the whole log."""
    path = tmp_path / "t-0"
    with Log.open(path, {"segment.bytes": 1024, "index.interval.bytes": 1}, outside_commit_log=True) as log:
        while len(log.segments()) < 300:
            log.append([Record(key=None, value=b"v" * 40, timestamp=1_700_000_000_000) for _ in range(4)])
        log.flush()
    with Log.open(path, readonly=True) as log:
        end = log.log_end_offset
        bases = [s.base_offset for s in log.segments()]
        before = {s.base_offset for s in log._segments.open_segments()}
        nbytes = log.byte_size(end - 12, end)
        cut = log.split_offset(end - 12, end, nbytes // 2)
        assert end - 12 < cut < end
        assert cut % 4 == 0     # a batch's first offset (4 records a batch): no batch is read by two tasks (issue 28)
        opened = {s.base_offset for s in log._segments.open_segments()} - before
        holding = {b for b in bases if b >= bases[sum(1 for b in bases if b <= end - 12) - 1]}
        assert opened <= holding, sorted(opened - holding)[:5]
        assert log.byte_size(0, end) == sum(p.stat().st_size for p in path.glob("*.log"))
        for a, b, c in [(0, 5, end), (3, end // 2, end - 1), (end // 3, end // 3, end // 2)]:
            assert log.byte_size(a, c) == log.byte_size(a, b) + log.byte_size(b, c)


def _kafka_root(root):
    """events-0 (120 offsets), events-1 (80), events.eu-0 (30), other-0 (20): committed, batches of 7."""
    import numpy as np

    from seglog.indexer.commit_log import CommitLog

    for topic, p, n in (("events", 0, 120), ("events", 1, 80), ("events.eu", 0, 30), ("other", 0, 20)):
        with Log.open(root / f"{topic}-{p}", {"segment.bytes": 4096, "index.interval.bytes": 256}, outside_commit_log=True) as log:
            for lo in range(0, n, 7):
                k = min(7, n - lo)
                log.append_columns(pa.array([b"v%d" % (lo + i) for i in range(k)]),
                                   timestamps=1_700_000_000_000 + 10 * np.arange(lo, lo + k, dtype=np.int64))
            log.flush()
        commits = CommitLog(root, topic)
        last = commits.last_batch("w")
        commits.commit("w", 0 if last is None else last + 1, {p: n})
    return root


def _planned(root, **options):
    from seglog.source.planning import plan

    o = parse_options({"path": str(root), **{k.lower(): v for k, v in options.items()}})
    return plan(o, ScanBounds(), cores=2)


def test_pattern_and_assign_choose_topics_and_partitions_of_the_root(tmp_path):
    from seglog.errors import InvalidTopicError

    root = _kafka_root(tmp_path)

    def read(**options):
        return sorted((s.topic, s.partition, s.start, s.end) for task in _planned(root, **options) for s in task)

    assert read(subscribePattern="events.*") == [("events", 0, 0, 120), ("events", 1, 0, 80), ("events.eu", 0, 0, 30)]
    assert read(subscribePattern="events") == [("events", 0, 0, 120), ("events", 1, 0, 80)]
    assert read(subscribePattern="nothing") == []
    assert read(assign='{"events": [1], "other": [0]}') == [("events", 1, 0, 80), ("other", 0, 0, 20)]
    assert read(assign='{"events": [1]}', startingOffsets='{"events": {"1": 70}}') == [("events", 1, 70, 80)]
    with pytest.raises(InvalidTopicError, match="'assign' names partitions that topic 'events' does not have: events-7"):
        read(assign='{"events": [0, 7]}')
    with pytest.raises(InvalidTopicError, match="must give every partition of topic 'events'; missing: events-1"):
        read(subscribePattern="events", startingOffsets='{"events": {"0": 1}}')
    # -1 / -2 in a by-timestamp JSON: the latest / the earliest offset
    assert read(topic="events", startingOffsetsByTimestamp='{"events": {"0": -2, "1": -1}}') == [("events", 0, 0, 120)]
    assert read(topic="events", endingOffsetsByTimestamp='{"events": {"0": -1, "1": -2}}') == [("events", 0, 0, 120)]


@pytest.mark.parametrize("maximum", [1000, 200, 64, 30, 7])
def test_max_records_per_partition_tasks_cover_the_read_once(tmp_path, maximum):
    from seglog.source.reader import arrow_schema, read_slice

    root = _kafka_root(tmp_path)
    opts = parse_options({"path": str(root), "topic": "events", "maxrecordsperpartition": str(maximum)})
    tasks = _planned(root, topic="events", maxRecordsPerPartition=str(maximum))
    sizes = [sum(s.end - s.start for s in task) for task in tasks]
    assert len(tasks) == -(-200 // maximum) and max(sizes) <= maximum and max(sizes) - min(sizes) <= 1
    got = sorted((s.partition, o) for task in tasks for s in task
                 for b in read_slice(opts, ScanBounds(), s, arrow_schema(False)) for o in b.column("offset").to_pylist())
    assert got == [(0, o) for o in range(120)] + [(1, o) for o in range(80)]   # cuts inside batches: each offset once
