"""tests/conformance/topic_metadata.json against the Python core's topic metadata reader and writer
(indexer/topics.py); the JVM's TopicCatalog is held to the same vectors (jvm TopicMetadataVectorsTest): a newer
format version is refused with a typed error naming both versions and the file in both languages."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from seglog.errors import InvalidTopicError
from seglog.indexer.topics import create_topic, load_topic, topic_file
from tests.conformance.format_versions import assert_newer_refused

DOC = json.loads((Path(__file__).parent / "topic_metadata.json").read_text())
VECTORS = DOC["cases"]


@pytest.mark.parametrize("case", VECTORS, ids=[c["name"] for c in VECTORS])
def test_topic_metadata_reads_as_the_vectors_say(tmp_path, case):
    path = topic_file(tmp_path, "t")
    path.parent.mkdir(parents=True)
    path.write_text(case["text"], encoding="utf-8")
    read = lambda: load_topic(tmp_path, "t")  # noqa: E731
    if "newer_version" in case:
        assert_newer_refused(read, path, case, DOC)
    elif case.get("error"):
        with pytest.raises(InvalidTopicError, match=str(path)):
            read()
    else:
        assert read().partitions == case["partitions"]
        if "topic_id" in case:
            assert read().topic_id == case["topic_id"]


def test_a_new_topic_writes_the_vectors_version(tmp_path):
    create_topic(tmp_path, "w", 1)
    assert json.loads(topic_file(tmp_path, "w").read_text())["version"] == DOC["written_version"]


def test_a_topic_created_again_gets_another_topic_id(tmp_path):
    """Kafka's topic IDs: a new topic's id is a UUID, read back as written; another creation of the name draws
    another (what tells a stream's checkpoint of the old topic from the new one, docs/spec.md §8)."""
    first = create_topic(tmp_path, "w", 1).topic_id
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", first)
    assert load_topic(tmp_path, "w").topic_id == first
    topic_file(tmp_path, "w").unlink()
    assert create_topic(tmp_path, "w", 1).topic_id != first
