"""Bad records and bad timestamp columns are refused with a typed error naming the record, and the
log is left byte for byte as it was (issue: raw ValueError/OverflowError, silent wraps)."""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from seglog.errors import InvalidRecordError
from seglog.indexer import Log, Record


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(p.name.encode())
            h.update(p.read_bytes())
    return h.hexdigest()


@pytest.fixture
def log(tmp_path):
    with Log.open(tmp_path / "events-0", {"segment.bytes": 4096}) as lg:
        lg.append([Record(key=b"k", value=b"v", timestamp=1_700_000_000_000)])
        lg.flush()
        yield lg


@pytest.mark.parametrize("record, needle", [
    (Record(value=b"v", timestamp="123"), "timestamp '123' is a str"),
    (Record(value=b"v", timestamp=1.5), "timestamp 1.5 is a float"),
    (Record(value=b"v", timestamp=True), "timestamp True is a bool"),
    (Record(value=b"v", timestamp=2 ** 63), "out of range"),
    (Record(value=b"v", timestamp=-2), "out of range"),
    (Record(value=b"v", headers={"h": b"x"}), "headers is a dict"),
    (Record(value=b"v", headers=(("h", "text"),)), "header ('h', 'text')"),
    (Record(value=b"v", headers=(("h",),)), "header ('h',)"),
    (Record(value="text"), "value is a str"),
    (Record(key=7, value=b"v"), "key is a int"),
])
def test_bad_records_are_refused_and_nothing_is_written(log, record, needle):
    before = _digest(log.path)
    end = log.log_end_offset
    with pytest.raises(InvalidRecordError) as info:
        log.append([Record(value=b"ok", timestamp=1), record])
    assert needle in str(info.value) and "record 1" in str(info.value)
    assert log.log_end_offset == end and _digest(log.path) == before


def test_uint64_timestamps_that_would_wrap_are_refused(log):
    before = _digest(log.path)
    for column in (np.array([1, 2 ** 64 - 1], dtype=np.uint64), pa.array([1, 2 ** 64 - 1], type=pa.uint64())):
        with pytest.raises(InvalidRecordError, match=r"record 1 has timestamp 18446744073709551615"):
            log.append_columns([b"a", b"b"], timestamps=column)
    assert _digest(log.path) == before
    info = log.append_columns([b"a"], timestamps=np.array([5], dtype=np.uint64))
    assert info.max_timestamp == 5


def test_a_time_column_before_the_epoch_is_refused_not_stored_as_no_timestamp(log):
    before = _digest(log.path)
    column = pa.array([0, -1000], type=pa.timestamp("us", tz="UTC"))      # -1 ms
    with pytest.raises(InvalidRecordError, match=r"record 1 has a timestamp -1 ms before the epoch"):
        log.append_columns([b"a", b"b"], timestamps=column)
    assert _digest(log.path) == before
    # -1 in an integer column still means "no timestamp", as in Kafka
    info = log.append_columns([b"a"], timestamps=np.array([-1], dtype=np.int64))
    assert info.max_timestamp == -1


@pytest.mark.parametrize("offset", [-1, -5, 1.5, "3", True])
def test_truncate_to_a_bad_offset_is_refused_and_changes_nothing(log, offset):
    from seglog.errors import OffsetOutOfRangeError

    before = _digest(log.path)
    with pytest.raises(OffsetOutOfRangeError, match="cannot truncate to offset"):
        log.truncate_to(offset)
    assert _digest(log.path) == before and [r.offset for r in log.read()] == [0]
    log.close()
    with Log.open(log.path) as again:      # every later open still works
        assert again.log_end_offset == 1
