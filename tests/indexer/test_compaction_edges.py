"""Compaction's edges with the rest of the log (docs/spec.md §3.9): a truncation through a cleaned
batch keeps the offsets of the records it keeps; nothing at or above the sink's committed end (the
high watermark, which a sink roll back may take back) is cleaned."""
from __future__ import annotations

from seglog.indexer import Log, Record
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.segment import read_checked
from seglog.indexer.topics import create_topic

CFG = {"cleanup.policy": "compact", "segment.bytes": 2048, "index.interval.bytes": 64, "delete.retention.ms": 3_600_000}
NOW = 2_000_000_000_000


def fill(log: Log, batches: int = 40) -> None:
    for i in range(batches):
        log.append([Record(key=b"k%d" % ((i * 5 + j) % 13), value=b"v%d-%d" % (i, j), timestamp=1_000_000 + i)
                    for j in range(5)])
    log.roll()


def test_truncating_inside_a_cleaned_batch_keeps_offsets(tmp_path):
    with Log.open(tmp_path / "state-0", CFG, outside_commit_log=True) as log:
        fill(log)
        # one batch whose surviving records will have a gap between them: x, y, x, z, x keeps y, z, x
        log.append([Record(key=bytes([k]), value=b"last-%d" % i, timestamp=2_000_000) for i, k in enumerate(b"xyxzx")])
        log.roll()
        log.clean(NOW, force=True)
        before = [(r.offset, r.key, r.value) for r in log.read()]
        cut = None
        for base in log.segment_bases()[:-1]:
            seg = log.segment(base)
            for _, buf, scan in read_checked(seg, 0, base - 1):
                for h in scan.headers:
                    offs = [o for o, _, _ in before if h.base_offset <= o <= h.last_offset]
                    gaps = [b for a, b in zip(offs, offs[1:]) if b > a + 1]
                    if gaps and cut is None:
                        cut = gaps[0]
        assert cut is not None
        log.truncate_to(cut)
        assert [(r.offset, r.key, r.value) for r in log.read()] == [b for b in before if b[0] < cut]
        assert log.verify() == []
    with Log.open(tmp_path / "state-0", CFG, outside_commit_log=True) as log:
        assert log.recovery_report == []
        assert [(r.offset, r.key, r.value) for r in log.read()] == [b for b in before if b[0] < cut]


def test_nothing_at_or_above_the_committed_end_is_cleaned(tmp_path):
    create_topic(tmp_path, "state", 1, CFG)
    with Log.open(tmp_path / "state-0", CFG, outside_commit_log=True) as log:
        fill(log)
        all_records = [(r.offset, r.key, r.value) for r in log.read()]
        bases = log.segment_bases()
        committed = bases[len(bases) // 2]
        CommitLog(tmp_path, "state").commit("w", 0, {0: committed})
        res = log.clean(NOW, force=True)
        assert res.cleaned and res.first_dirty_after == committed
        after = [(r.offset, r.key, r.value) for r in log.read()]
    assert [a for a in after if a[0] >= committed] == [a for a in all_records if a[0] >= committed]
    assert len([a for a in after if a[0] < committed]) < len([a for a in all_records if a[0] < committed])
