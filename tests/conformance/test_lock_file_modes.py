"""The mode of a lock file (indexer/fsutil.py's open_lock_file, issue 37 item 6): 0600 in a private folder,
0660 in a shared (group-writable) one, and an existing one this process owns narrowed to that when it is
opened. lock_file_modes.json pins the rule for Python here and for the JVM's FileLock
(jvm/.../format/LockFileModesTest.java): one rule, one vector file, both implementations."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from seglog.indexer.locks import FileLock

VECTORS = Path(__file__).resolve().parent / "lock_file_modes.json"


@pytest.mark.parametrize("case", json.loads(VECTORS.read_text()), ids=lambda c: f"{c['folder']}-{c['existing']}")
def test_python_lock_file_modes_are_the_vectors(tmp_path, case):
    folder = tmp_path / "locks"
    folder.mkdir()
    folder.chmod(int(case["folder"], 8))
    f = folder / "events-0.lock"
    if case["existing"] is not None:
        f.touch()
        f.chmod(int(case["existing"], 8))
    old = os.umask(0o022)
    try:
        FileLock(f).acquire(0).release()
    finally:
        os.umask(old)
    assert oct(stat.S_IMODE(f.stat().st_mode)) == oct(int(case["expected"], 8))
