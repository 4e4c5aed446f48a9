"""tests/conformance/checkpoints.json against the Python core's reader of Kafka's offset checkpoint text
(indexer/checkpoint.py read_offsets_file); the JVM's LogStartCheckpoint.parse is held to the same vectors
(jvm CheckpointVectorsTest): one rule, both languages (issue 36 item 12)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from seglog.indexer.checkpoint import CorruptCheckpointError, read_offsets_file

VECTORS = json.loads((Path(__file__).parent / "checkpoints.json").read_text())["cases"]


@pytest.mark.parametrize("case", VECTORS, ids=[c["name"] for c in VECTORS])
def test_checkpoint_text_reads_as_the_vectors_say(tmp_path, case):
    path = tmp_path / "log-start-offset-checkpoint"
    if not case.get("missing"):
        path.write_bytes(bytes.fromhex(case["hex"]) if "hex" in case else case["text"].encode())
    if "entries" in case:
        got = read_offsets_file(path)
        assert {f"{t}-{p}": o for (t, p), o in got.items()} == case["entries"]
        return
    with pytest.raises(CorruptCheckpointError) as caught:
        read_offsets_file(path)
    assert caught.value.line == case["error_line"]
    assert str(path) in str(caught.value) and f"line {case['error_line']}:" in str(caught.value)
