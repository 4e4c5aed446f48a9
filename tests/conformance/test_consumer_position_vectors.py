"""tests/conformance/consumer_positions.json, the Python side: indexer/consumer_positions.py parses each valid file
to its position and refuses each invalid one naming the field (the JVM's writer is held to the same texts by
ConsumerPositionsTest)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from seglog.indexer.consumer_positions import CorruptConsumerPositionError, parse_consumer_position

VECTORS = json.loads((Path(__file__).parent / "consumer_positions.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", VECTORS["valid"], ids=lambda c: c["text"][:60])
def test_valid_files_parse_to_their_position(case):
    got = parse_consumer_position(case["text"].encode("utf-8"), case["file_name"])
    want = case["position"]
    assert (got.query_id, got.name, got.checkpoint, got.committed_ms) == (
        want["query_id"], want["name"], want["checkpoint"], want["committed_ms"])
    assert dict(got.offsets) == {(t, p): o for t, p, o in want["offsets"]}


@pytest.mark.parametrize("case", VECTORS["invalid"], ids=lambda c: c["refused"])
def test_invalid_files_are_refused_naming_the_file_and_field(case):
    with pytest.raises(CorruptConsumerPositionError) as err:
        parse_consumer_position(case["text"].encode("utf-8"), case["file_name"])
    assert str(err.value).startswith(case["file_name"] + ": ")
    assert case["refused"] in str(err.value)
