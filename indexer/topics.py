"""Topic metadata: a topic's partition count and configuration overrides, recorded at creation.

Stored as JSON at <root>/_seglog/topics/<topic>.json. Creation is first-writer-wins across
processes: the file is written under a temporary name, fsynced, then `os.link`ed to its final name,
which fails if it already exists (no rename-over: a second creator never replaces the first's file).
Every later creator reads the recorded metadata and must ask for the same thing.

A topic's id (`topic_id`, Kafka's topic ID, KIP-516) is a random UUID drawn at creation and kept by every change to
the file: a topic dropped and created again under its name gets another, so a stream's checkpointed offsets of the
old topic are never taken for the new one's (docs/spec.md §8). A file written before topic ids has none (None).

Invariant: once <topic>.json exists only Kafka's admin operations change it (the SQL catalog's ALTER TABLE, the
JVM's format/TopicAdmin.java: the overrides, and a partition count that only grows), by a whole new file renamed
over it under the topic's writer lock; every reader reads it afresh (the sidecar on each pass).
"""
from __future__ import annotations

import json
import os
import re
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from seglog.conf.topic_config import TopicConfig, requested_topic_config, validate_topic_config
from seglog.errors import InvalidTopicError, shown
from seglog.indexer.format_version import TOPIC_METADATA_VERSION, read_version
from seglog.indexer.fsutil import fsync_dir, make_dirs, meta_path, publish_by_link, temp_path
from seglog.indexer.names import colliding_topic, validate_topic

MAX_PARTITIONS = 1 << 20  # a sanity bound; Kafka has none but a folder per partition makes this plenty


@dataclass(frozen=True)
class TopicMetadata:
    name: str
    partitions: int
    # Every key the creator asked for, even one equal to a built-in default: a topic's recorded
    # configuration always wins over the sidecar file's `log:` defaults (docs/spec.md §5, §9).
    config: dict[str, Any] = field(default_factory=dict)
    created_ms: int = 0
    topic_id: str | None = None     # None: recorded before topic ids

    def topic_config(self) -> TopicConfig:
        """The defaults with this topic's overrides applied."""
        return validate_topic_config(self.config, where=f"topic {self.name!r}")

    def to_json(self) -> dict[str, Any]:
        doc = {"version": TOPIC_METADATA_VERSION, "name": self.name, "partitions": self.partitions,
               "config": dict(self.config), "created_ms": self.created_ms}
        if self.topic_id is not None:
            doc["topic_id"] = self.topic_id
        return doc


TOPIC_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def new_topic_id() -> str:
    """A new topic's id: a random UUID in its canonical text (the JVM's TopicMetadata.newTopicId)."""
    return str(uuid.uuid4())


def _topic_id(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not TOPIC_ID.fullmatch(value):
        raise ValueError(f"topic_id is {shown(repr(value), 60)}, not a UUID")
    return value


def topics_dir(root: str | os.PathLike) -> Path:
    return meta_path(root, "topics")


def topic_file(root: str | os.PathLike, topic: str) -> Path:
    return topics_dir(root) / f"{validate_topic(topic)}.json"


def _check_partitions(topic: str, partitions: object) -> int:
    if isinstance(partitions, bool) or not isinstance(partitions, int) or not 1 <= partitions <= MAX_PARTITIONS:
        raise InvalidTopicError(f"topic {topic!r}: partitions = {partitions!r}; allowed: an integer from 1 "
                                f"to {MAX_PARTITIONS}")
    return partitions


def _parse(path: Path, raw: bytes) -> TopicMetadata:
    try:
        doc = json.loads(raw)
        read_version(doc, TOPIC_METADATA_VERSION, path, "topic metadata")   # first: a newer file is refused whole
        config = dict(doc.get("config") or {})
        if config.get("compression.type") == "none":
            # Recorded by seglog 0.2, which accepted the producer's name; Kafka's topic value is
            # `uncompressed` (docs/kafka.md, "Compression"), and new configurations must say so.
            config["compression.type"] = "uncompressed"
        meta = TopicMetadata(name=str(doc["name"]), partitions=int(doc["partitions"]),
                             config=config, created_ms=int(doc.get("created_ms", 0)),
                             topic_id=_topic_id(doc.get("topic_id")))
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:   # nested 10,000 deep: RecursionError
        raise InvalidTopicError(f"topic metadata {path} is unreadable: {type(exc).__name__}: "
                                f"{shown(str(exc), 200)}") from None
    _check_partitions(meta.name, meta.partitions)
    return meta


def load_topic(root: str | os.PathLike, topic: str) -> TopicMetadata | None:
    """The recorded metadata of `topic`, or None if it was never created."""
    path = topic_file(root, topic)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    meta = _parse(path, raw)
    if meta.name != topic:
        raise InvalidTopicError(f"topic metadata {path} names topic {meta.name!r}, not {topic!r}")
    return meta


def list_topics(root: str | os.PathLike) -> list[str]:
    d = topics_dir(root)
    if not d.is_dir():
        return []
    return sorted(p.stem for p in d.glob("*.json"))


def create_topic(root: str | os.PathLike, topic: str, partitions: int,
                 config: Mapping[str, Any] | TopicConfig | None = None) -> TopicMetadata:
    """Record `topic` with `partitions` and `config`; idempotent for the same request.

    A topic already recorded with a different partition count or configuration raises
    InvalidTopicError naming both. Two concurrent creators agree: exactly one link wins.
    """
    validate_topic(topic)
    _check_partitions(topic, partitions)
    overrides = requested_topic_config(config, where=f"config of topic {topic!r}")
    existing = load_topic(root, topic)
    if existing is None:
        check_no_collision(root, topic)
        path = topic_file(root, topic)
        make_dirs(path.parent)
        meta = TopicMetadata(topic, partitions, overrides, int(time.time() * 1000), new_topic_id())
        # False when another creator got there first: read what the winner recorded, below
        if publish_by_link(path, temp_path(path), json.dumps(meta.to_json(), sort_keys=True, indent=1).encode(),
                           what=f"topic metadata {path}: cannot publish it"):
            return meta
        existing = load_topic(root, topic)
        if existing is None:  # the file that beat our link is gone: only an operator removes it
            raise InvalidTopicError(f"topic {topic!r}: its metadata file {path} vanished while creating it")
    _check_same(existing, partitions, overrides)
    return existing


def check_no_collision(root: str | os.PathLike, topic: str, others: Iterable[str] = ()) -> None:
    """Kafka's rule (names.colliding_topic): a new topic whose name differs from a topic of the root (recorded, or a
    partition folder), or from one of `others` (created alongside it), only by '.' against '_' is refused, naming
    that topic, before anything is written. Two creators racing to create two colliding new names are not
    serialised here (Kafka's controller does)."""
    from seglog.indexer.root import LogRoot

    other = colliding_topic(topic, [*LogRoot(root).topics(), *others])
    if other is not None:
        raise InvalidTopicError(f"topic {topic!r} collides with existing topic {other!r} under {os.fspath(root)!r}: "
                                f"'.' and '_' name one metric in Kafka, so a root holds only one of them; nothing "
                                f"was created")


def _check_same(existing: TopicMetadata, partitions: int, overrides: Mapping[str, Any]) -> None:
    problems = []
    if existing.partitions != partitions:
        problems.append(f"it has {existing.partitions} partitions, {partitions} were asked")
    # Asking for nothing (or for what the topic has) is no conflict: an existing topic keeps its own.
    effective = existing.topic_config()
    differing = {k: v for k, v in overrides.items() if effective[k] != v}
    if differing:
        problems.append(f"its configuration is {dict(sorted((k, effective[k]) for k in differing))}, "
                        f"{dict(sorted(differing.items()))} were asked")
    if problems:
        raise InvalidTopicError(f"topic {existing.name!r} already exists and differs: " + "; ".join(problems)
                                + " (an existing topic keeps its partition count and configuration)")


def forget_uncommitted_topic(root: str | os.PathLike, topic: str) -> bool:
    """Remove a topic's metadata if nothing was ever committed to it: a creator whose first batch
    was refused leaves no trace, so a corrected request (another partition count) is not refused.
    Returns True if it removed the metadata."""
    from seglog.indexer.commit_log import CommitLog

    if CommitLog(root, topic).latest() is not None:
        return False
    try:
        os.unlink(topic_file(root, topic))
    except FileNotFoundError:
        return False
    fsync_dir(topics_dir(root))
    return True
