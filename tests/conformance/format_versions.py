"""The format-version half of the JSON file vectors (commit_files.json, topic_metadata.json): one check of the
typed error a newer version gets, shared by their Python runners."""
from __future__ import annotations

import pytest

from seglog.errors import UnsupportedFormatVersionError


def assert_newer_refused(read, path, case: dict, doc: dict) -> None:
    """`read()` refuses the case's file (its `newer_version`) naming the file, its version and the version read."""
    with pytest.raises(UnsupportedFormatVersionError) as err:
        read()
    assert str(path) in str(err.value)
    assert f"format version {case['newer_version']};" in str(err.value)
    assert f"up to version {doc['written_version']}:" in str(err.value)
