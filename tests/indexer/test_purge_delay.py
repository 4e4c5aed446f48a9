"""Purging `.deleted` files after file.delete.delay.ms, on whole milliseconds (docs/spec.md §3.7)."""
from __future__ import annotations

from seglog.indexer import Log, Record

T0 = 1_700_000_000_000


def test_a_delay_of_zero_purges_in_the_millisecond_the_file_was_deleted(tmp_path):
    """The kernel stamps a rename's ctime from its tick clock, with a fraction of a millisecond; a purge
    in that same millisecond (the sidecar's retention then purge, one pass) compared the truncated `now`
    with the fraction and kept the file for the next pass (a full volume stayed full one pass longer)."""
    with Log.open(tmp_path / "t-0", {"segment.bytes": 1024, "file.delete.delay.ms": 0, "retention.ms": 1000}) as log:
        for i in range(40):
            log.append([Record(key=None, value=b"v" * 100, timestamp=T0 + i)])
        log.roll()
        assert log.apply_retention(T0 + 10_000).deleted_bases
        deleted = sorted(p for p in (tmp_path / "t-0").iterdir() if p.name.endswith(".deleted"))
        assert deleted
        assert any(p.stat().st_ctime_ns % 1_000_000 for p in deleted), "no fraction to test (a coarse clock)"
        purged = log.purge_deleted(max(p.stat().st_ctime_ns for p in deleted) // 1_000_000)
        assert sorted(purged) == deleted
        assert not [p for p in (tmp_path / "t-0").iterdir() if p.name.endswith(".deleted")]
