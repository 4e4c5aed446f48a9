"""A reader (read-only `Log`, no lock) that opens while the writer changes the folder sees one
consistent state or a typed error that says to open again; never a corruption report for a state
that only existed for an instant (docs/spec.md §4)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from seglog.errors import CorruptRecordError, SegmentDeletedError
from seglog.indexer import Log
from seglog.indexer.checkpoint import update_log_start_offsets


def _append(log: Log, n: int) -> None:
    base = log.log_end_offset
    log.append_columns(pa.array([b"%d" % (base + i) for i in range(n)]),
                       timestamps=np.arange(base, base + n, dtype=np.int64) + 1_000_000)


def test_a_reader_between_a_full_truncation_and_its_checkpoint_is_told_to_open_again(tmp_path):
    """The instant inside a truncation below the log start: the log restarted empty at 20 while the
    checkpoint still says 30. A reader gets SegmentDeletedError (open again); a writer's read of a
    folder left that way for good is the corruption it is."""
    with Log.open(tmp_path / "t-0", {"segment.bytes": 1024}) as log:
        _append(log, 40)
        log.roll()
        _append(log, 5)
        log.flush()
    # the transient state: every old segment gone, the new empty one at 20, the checkpoint not yet lowered
    for f in (tmp_path / "t-0").iterdir():
        f.unlink()
    for suffix in (".index", ".timeindex", ".log"):
        (tmp_path / "t-0" / f"{20:020d}{suffix}").touch()
    update_log_start_offsets(tmp_path, {("t", 0): 30})
    with Log.open(tmp_path / "t-0", readonly=True) as reader:
        with pytest.raises(SegmentDeletedError, match="open it again"):
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
