"""A log root: the folder holding <topic>-<partition> folders and _seglog/ metadata (docs/spec.md §2.1)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from seglog.conf.topic_config import TopicConfig, validate_topic_config
from seglog.indexer.names import META_DIR, parse_partition_dir, partition_dir_name


class LogRoot:
    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def partition_path(self, topic: str, partition: int) -> Path:
        # partition_dir_name validates the topic, so no path ever leaves the root
        return self.path / partition_dir_name(topic, partition)

    def partitions(self, topic: str | None = None) -> list[tuple[str, int]]:
        if not self.path.is_dir():
            return []
        found = []
        for entry in os.scandir(self.path):
            if entry.is_dir() and entry.name != META_DIR:
                parsed = parse_partition_dir(entry.name)
                if parsed and (topic is None or parsed[0] == topic):
                    found.append(parsed)
        return sorted(found)

    def topics(self) -> list[str]:
        """Topics with a partition folder or recorded metadata (a topic may have no folder yet)."""
        from seglog.indexer.topics import list_topics

        return sorted({t for t, _ in self.partitions()} | set(list_topics(self.path)))

    def topic_partitions(self, topic: str) -> list[int]:
        """A topic's partitions: 0 to its recorded count (a partition the sink never wrote has no
        folder, and reads as empty), plus any partition folder found."""
        from seglog.indexer.topics import load_topic

        meta = load_topic(self.path, topic)
        found = {p for _, p in self.partitions(topic)}
        return sorted(found | set(range(meta.partitions if meta is not None else 0)))

    def topic_config(self, topic: str, overrides: Mapping[str, Any] | None = None,
                     base: Mapping[str, Any] | None = None) -> TopicConfig:
        """Precedence, highest first: `overrides`, the topic's recorded configuration, `base`,
        the built-in defaults (docs/spec.md §9)."""
        from seglog.indexer.topics import load_topic

        cfg = validate_topic_config(base, where="log configuration")
        meta = load_topic(self.path, topic)
        if meta is not None and meta.config:
            cfg = cfg.with_overrides(meta.config, where=f"recorded configuration of topic {topic}")
        if overrides:
            cfg = cfg.with_overrides(overrides, where=f"configuration of topic {topic}")
        return cfg

    def open_log(self, topic: str, partition: int, config: Mapping[str, Any] | TopicConfig | None = None, **kw):
        from seglog.indexer.log import Log

        if config is None:
            config = self.topic_config(topic)
        return Log.open(self.partition_path(topic, partition), config, **kw)
