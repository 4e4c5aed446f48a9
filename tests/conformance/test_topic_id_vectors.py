"""tests/conformance/topic_ids.json, the Python side: source/options.py's _check_topic_ids, reached through
parse_options (the reader's options), takes or refuses each case's '@topicIds' as the vectors say, the error naming
every text the vector lists (the JVM's ReadOptions.checkTopicIds is held to the same file by TopicIdsVectorsTest)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from seglog.errors import ConfigError
from seglog.indexer.topics import topic_file
from seglog.source.options import parse_options

VECTORS = json.loads((Path(__file__).parent / "topic_ids.json").read_text(encoding="utf-8"))


def _root(tmp_path: Path, recorded: dict) -> Path:
    """A root recording each topic with its id (null: a topic recorded before topic ids)."""
    root = tmp_path / "root"
    for name, topic_id in recorded.items():
        doc = {**VECTORS["metadata"], "name": name, **({"topic_id": topic_id} if topic_id is not None else {})}
        path = topic_file(root, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, sort_keys=True, indent=1))
    return root


def test_the_vectors_cover_every_kind_of_case():
    refused = [c for c in VECTORS["cases"] if c["refused"] is not None]
    assert refused and len(refused) < len(VECTORS["cases"])


@pytest.mark.parametrize("case", VECTORS["cases"], ids=lambda c: c["why"][:70])
def test_topic_ids_as_the_vectors_say(case, tmp_path):
    options = {"path": str(_root(tmp_path, case["recorded"])), "subscribe": case["subscribe"],
               case["option"]: case["value"]}
    if case["refused"] is None:
        parse_options(options)
        return
    with pytest.raises(ConfigError) as err:
        parse_options(options)
    for text in case["refused"]:
        assert text in str(err.value), str(err.value)
