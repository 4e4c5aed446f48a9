"""tests/conformance/commit_files.json against the Python core's commit log reader (indexer/commit_log.py); the
JVM's CommitLogReader is held to the same vectors (jvm CommitFileVectorsTest): a damaged commit file is a typed
error naming it in both languages, never read one way here and another there (issue 36 item 12)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from seglog.indexer.commit_log import CommitLog, CorruptCommitError
from tests.conformance.format_versions import assert_newer_refused

DOC = json.loads((Path(__file__).parent / "commit_files.json").read_text())
VECTORS = DOC["cases"]


@pytest.mark.parametrize("case", VECTORS, ids=[c["name"] for c in VECTORS])
def test_commit_files_read_as_the_vectors_say(tmp_path, case):
    log = CommitLog(tmp_path, "t")
    log.dir.mkdir(parents=True)
    path = log.dir / f"{0:020d}.json"
    path.write_text(case["text"], encoding="utf-8")
    if "newer_version" in case:
        for read in (log.latest, log.end_offsets):
            assert_newer_refused(read, path, case, DOC)
        return
    if case.get("error"):
        with pytest.raises(CorruptCommitError, match=str(path)):
            log.latest()
        with pytest.raises(CorruptCommitError, match=str(path)):
            log.end_offsets()
        return
    state = log.latest()
    assert {str(p): o for p, o in state.end_offsets.items()} == case["ends"]
    assert state.writers == case["writers"] and state.batch_id == case["batch_id"]
    assert log.end_offsets() == {int(p): o for p, o in case["ends"].items()}


def test_a_commit_writes_the_vectors_version(tmp_path):
    log = CommitLog(tmp_path, "t")
    state = log.commit("w", 0, {0: 1})
    written = json.loads((log.dir / f"{state.seq:020d}.json").read_text())
    assert written["version"] == DOC["written_version"]
