"""The Python core and the Python source's planner on the damaged files of test_jvm_reader_faults.py
(issue 23, items 3 and 6; issue 27): the same faults reported the same way on both sides, never read as
fewer rows, and a skip that failOnDataLoss=false allows is logged (as Spark's Kafka source does)."""
from __future__ import annotations

import logging
import os

import pytest

from seglog.errors import CorruptRecordError
from seglog.indexer.checkpoint import update_log_start_offsets
from seglog.indexer.log import Log
from seglog.source.options import parse_options
from seglog.source.planning import ScanBounds, plan
from tests.source.test_jvm_reader_faults import N, batch_positions, build, core_read, seg_log


def planned_offsets(root, **options):
    opts = parse_options({"path": str(root), "topic": "t", **{k.lower(): str(v) for k, v in options.items()}})
    tasks = plan(opts, ScanBounds(), cores=2)
    return sorted(o for task in tasks for s in task for o in range(s.start, s.end))


def test_a_sealed_segment_cut_at_a_batch_boundary_is_reported_by_the_core(tmp_path):
    part, bases = build(tmp_path)
    victim = seg_log(part, bases[1])
    os.truncate(victim, batch_positions(victim)[-2])          # whole batches gone: offsets 100 to 119
    with pytest.raises(CorruptRecordError, match=r"00000000000000000060\.log: offsets 100 to 119 are lost"):
        core_read(part)
    with pytest.raises(CorruptRecordError, match=r"00000000000000000060\.log: offsets 105 to 119 are lost"):
        core_read(part, 105)
    assert core_read(part, 120) == list(range(120, N))
    assert core_read(part, 0, 100) == list(range(100))         # a read that ends before the damage


def test_an_active_segment_torn_below_the_committed_end_is_reported(tmp_path):
    part, bases = build(tmp_path)
    active = seg_log(part, bases[-1])
    os.truncate(active, active.stat().st_size - 30)          # committed records torn: not an in-flight write
    with Log.open(part, readonly=True) as ro:                 # a reader's end is what the file holds whole
        assert ro.log_end_offset == 290 and [r.offset for r in ro.read()] == list(range(290))
    with pytest.raises(CorruptRecordError, match=r"00000000000000000240\.log: batch at position \d+ \(offset 290\) has "
                                                 r"length \d+, past the end at \d+; \S*t-0: offsets 290 to 299 were "
                                                 r"committed but the log ends at offset 290: those records are lost"):
        planned_offsets(tmp_path, startingOffsets="earliest")
    assert planned_offsets(tmp_path, startingOffsets="earliest", endingOffsets='{"t": {"0": 290}}') \
        == list(range(290))


def test_a_log_start_beyond_the_log_end_is_reported_by_the_planner(tmp_path):
    build(tmp_path)
    update_log_start_offsets(tmp_path, {("t", 0): 10_000})
    with pytest.raises(CorruptRecordError, match=r"log start offset 10000 .* is beyond the log end offset 300"):
        planned_offsets(tmp_path, startingOffsets="earliest")


def test_a_skip_allowed_by_fail_on_data_loss_false_is_logged(tmp_path, caplog):
    part, bases = build(tmp_path)
    update_log_start_offsets(tmp_path, {("t", 0): 120})        # offsets below 120 gone (as retention does)
    with caplog.at_level(logging.WARNING, logger="seglog.source"):
        got = planned_offsets(tmp_path, startingOffsets='{"t": {"0": 30}}', failOnDataLoss="false")
    assert got == list(range(120, N))
    assert any("offsets 30 to 119 are no longer in the log" in r.getMessage() and "failOnDataLoss=false" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]
