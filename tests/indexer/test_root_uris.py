"""Log roots given as file URIs (issue 36 item 3): `indexer.root.local_root` against
tests/conformance/root_uris.json (Java's RootPath is held to the same vectors, RootPathTest), and every
Python entry that takes a root (the sink, the reader's options, the sidecar's configuration) reads
file:///abs as /abs and refuses another scheme naming the option."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from seglog.errors import ConfigError
from seglog.indexer.root import local_root

VECTORS = Path(__file__).resolve().parents[1] / "conformance" / "root_uris.json"


def test_root_uri_vectors():
    cases = json.loads(VECTORS.read_text())
    assert cases
    for c in cases:
        if c.get("error"):
            with pytest.raises(ConfigError, match="option 'path'"):
                local_root(c["raw"], "option 'path'")
        else:
            assert local_root(c["raw"], "option 'path'") == c["path"], c


def test_every_python_entry_reads_a_file_uri_as_its_path(tmp_path):
    from seglog.compactor.config import parse_config
    from seglog.sink import SegmentLogSink
    from seglog.source.options import parse_options

    assert SegmentLogSink(f"file://{tmp_path}/log", topic="t").root == f"{tmp_path}/log"
    assert parse_options({"path": f"file:{tmp_path}/log", "subscribe": "t"}).root == f"{tmp_path}/log"
    assert parse_config({"root": f"file://{tmp_path}/log"}).root == tmp_path / "log"
    with pytest.raises(ConfigError, match="SegmentLogSink root = 's3://b/log'"):
        SegmentLogSink("s3://b/log", topic="t")
    with pytest.raises(ConfigError, match="option 'path' = 'file:log'"):
        parse_options({"path": "file:log", "subscribe": "t"})


def test_the_cli_reads_a_file_uri_root(tmp_path):
    from seglog.indexer import Log, Record
    from tests.cli.helpers import seglog

    with Log.open(tmp_path / "log" / "t-0", outside_commit_log=True) as log:
        log.append([Record(key=b"k", value=b"v", timestamp=1_700_000_000_000)])
    res = seglog("offsets-for-times", f"file://{tmp_path}/log", "--topic", "t", "--time", "latest")
    assert res.returncode == 0 and res.stdout.split() == ["t:0:1"], res.stdout + res.stderr
    res = seglog("describe", "s3://bucket/log")
    assert res.returncode == 2 and "ROOT = 's3://bucket/log': scheme 's3' is not supported" in res.stderr
