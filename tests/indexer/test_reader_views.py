"""A reader (read-only `Log`, no lock) that opens while the writer changes the folder sees one
consistent state, never a corruption report for a state that only existed for an instant (docs/spec.md
§4); a state that stays inconsistent is reported."""
from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pytest

from seglog.errors import CorruptRecordError
from seglog.indexer import Log
from seglog.indexer.checkpoint import reset_log_start_offset, update_log_start_offsets


def _append(log: Log, n: int) -> None:
    base = log.log_end_offset
    log.append_columns(pa.array([b"%d" % (base + i) for i in range(n)]),
                       timestamps=np.arange(base, base + n, dtype=np.int64) + 1_000_000)


def _transient_state(tmp_path):
    """The instant inside a truncation below the log start: every old segment gone, the log
    restarted empty at 20, the checkpoint still saying 30."""
    with Log.open(tmp_path / "t-0", {"segment.bytes": 1024}) as log:
        _append(log, 40)
        log.roll()
        _append(log, 5)
        log.flush()
    for f in (tmp_path / "t-0").iterdir():
        f.unlink()
    for suffix in (".index", ".timeindex", ".log"):
        (tmp_path / "t-0" / f"{20:020d}{suffix}").touch()
    update_log_start_offsets(tmp_path, {("t", 0): 30})


def test_a_reader_that_opens_inside_a_full_truncation_sees_its_end(tmp_path):
    """The writer lowers the checkpoint a moment later: the reader's open waits that out and sees
    one consistent state (start = end = 20), not a corruption."""
    _transient_state(tmp_path)
    finisher = threading.Timer(0.02, lambda: reset_log_start_offset(tmp_path, "t", 0, 20))
    finisher.start()
    try:
        with Log.open(tmp_path / "t-0", readonly=True) as reader:
            assert (reader.log_start_offset, reader.log_end_offset, list(reader.read())) == (20, 20, [])
    finally:
        finisher.join()


def test_a_state_that_stays_inconsistent_is_reported_by_readers_and_writers(tmp_path):
    _transient_state(tmp_path)
    with Log.open(tmp_path / "t-0", readonly=True) as reader:
        with pytest.raises(CorruptRecordError, match="beyond the log end"):
            list(reader.read())
    with Log.open(tmp_path / "t-0", {"segment.bytes": 1024}) as writer:
        with pytest.raises(CorruptRecordError, match="beyond the log end"):
            list(writer.read())


def test_a_truncation_below_the_log_start_leaves_start_and_end_together(tmp_path):
    with Log.open(tmp_path / "t-0", {"segment.bytes": 1024, "retention.bytes": 0}) as log:
        _append(log, 40)
        log.roll()
        _append(log, 10)
        log.apply_retention()
        assert log.log_start_offset > 0
        cut = log.log_start_offset - 5
        log.truncate_to(cut)
        assert log.log_start_offset == log.log_end_offset == cut
    with Log.open(tmp_path / "t-0", readonly=True) as reader:
        assert (reader.log_start_offset, reader.log_end_offset, list(reader.read())) == (cut, cut, [])
