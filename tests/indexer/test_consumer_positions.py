"""indexer/consumer_positions.py over real folders: a bad file (a link, too big, not a regular file, damaged) is
named with its reason and skipped, the good ones still read; nothing is followed out of the root."""
from __future__ import annotations

import json
import os

from seglog.indexer.consumer_positions import MAX_FILE_BYTES, consumers_dir, read_consumer_positions

Q = "3deca994-f2e6-4aa7-bef2-e98aa0858b0c"


def position(query_id: str) -> str:
    return json.dumps({"format": 1, "query_id": query_id, "name": None, "checkpoint": "file:/cp/sources/0",
                       "offsets": {"t": {"0": 5}}, "committed_ms": 1})


def test_bad_files_are_named_and_skipped_and_good_ones_read(tmp_path):
    d = consumers_dir(tmp_path)
    d.mkdir(parents=True)
    (d / f"{Q}.json").write_text(position(Q))
    outside = tmp_path / "outside.json"
    outside.write_text(position("00000000-0000-0000-0000-000000000001"))
    os.symlink(outside, d / "00000000-0000-0000-0000-000000000001.json")
    (d / "00000000-0000-0000-0000-000000000002.json").write_bytes(b" " * (MAX_FILE_BYTES + 1))
    os.mkfifo(d / "00000000-0000-0000-0000-000000000003.json")
    (d / "00000000-0000-0000-0000-000000000004.json").write_text("[" * 100_000)
    (d / ".tmp-1-2").write_text("in flight")
    bad: list = []
    got = read_consumer_positions(tmp_path, bad)
    assert [p.query_id for p in got] == [Q] and dict(got[0].offsets) == {("t", 0): 5}
    reasons = {os.path.basename(p): r for p, r in bad}
    assert set(reasons) == {f"00000000-0000-0000-0000-00000000000{i}.json" for i in range(1, 5)}
    assert "symbolic link" in reasons["00000000-0000-0000-0000-000000000001.json"]
    assert "over the" in reasons["00000000-0000-0000-0000-000000000002.json"]
    assert "not a regular file" in reasons["00000000-0000-0000-0000-000000000003.json"]
    assert "not JSON" in reasons["00000000-0000-0000-0000-000000000004.json"]


def test_a_linked_consumers_folder_is_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / f"{Q}.json").write_text(position(Q))
    (tmp_path / "root" / "_seglog").mkdir(parents=True)
    os.symlink(elsewhere, consumers_dir(tmp_path / "root"))
    bad: list = []
    assert read_consumer_positions(tmp_path / "root", bad) == []
    assert len(bad) == 1 and "symbolic link" in bad[0][1]


def test_no_folder_is_no_positions(tmp_path):
    assert read_consumer_positions(tmp_path) == []
