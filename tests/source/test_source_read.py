"""The seglog source's task side without Spark: a segment deleted by retention in the middle of a read."""
from __future__ import annotations

import pytest

from seglog.errors import OffsetOutOfRangeError
from seglog.indexer.log import Log
from seglog.source.reader import arrow_schema, read_slice
from seglog.source.options import parse_options
from seglog.source.planning import ScanBounds, Slice
from test_source_spark import CONFIG, write_old_then_recent


@pytest.mark.parametrize("fail_on_data_loss", [True, False])
def test_segment_deleted_mid_read(tmp_path, fail_on_data_loss):
    config = dict(CONFIG, **{"retention.ms": 3_600_000})
    write_old_then_recent(tmp_path / "t-0", config)
    opts = parse_options({"path": str(tmp_path), "topic": "t", "maxrowsperbatch": "5",
                          "failondataloss": str(fail_on_data_loss).lower()})
    batches = read_slice(opts, ScanBounds(), Slice("t", 0, 0, 300), arrow_schema(False))
    first = next(batches)
    assert first.column("offset").to_pylist() == [0, 1, 2, 3, 4]
    with Log.open(tmp_path / "t-0", config) as log:        # the sidecar's retention runs now
        log.seal_inactive()
        log.apply_retention()
        log_start = log.log_start_offset
    assert 5 < log_start <= 200
    if fail_on_data_loss:
        with pytest.raises(OffsetOutOfRangeError, match=rf"t-0: offsets \d+ to {log_start - 1} are no longer"):
            list(batches)
        return
    offsets = [o for b in batches for o in b.column("offset").to_pylist()]
    # what the open segment still held, then a skip to the new log start, then everything after it
    assert offsets == sorted(offsets) and offsets[-1] == 299
    assert set(range(log_start, 300)) <= set(offsets)
    assert all(o < 5 + 200 for o in offsets if o < log_start)
