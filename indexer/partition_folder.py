"""A writable open's partition folder: locked, and made only where its topic exists (docs/spec.md §4).

Invariant: a partition folder is made only under its partition's lock and its topic's writer lock, and only for a
topic that exists then. DROP TABLE ... PURGE (format/TopicAdmin.java) holds the topic's writer lock for its whole
run and each partition's lock while it moves the folders away, so a check made under both locks cannot be
overtaken by a delete: a writable open either finds the folder (the delete has not reached it) or finds the topic
gone and makes nothing. Made before the lock (as a writable open once did), a folder came back empty after a
delete: the sidecar, opening a partition it had listed just before a DROP, gave the deleted topic an empty
partition folder, which SHOW TABLES then listed, CREATE TABLE refused as existing, and reads and `seglog verify`
took for an empty topic with default configuration.

A topic "exists" for a new folder when it is recorded (`_seglog/topics/<topic>.json`), or has another partition
folder (a root written before topics were recorded), or the root records no topic at all (a root only the storage
API writes: no `_seglog/topics/` folder, as before). Lock files are made as any lock's are; they hold no state and
DROP keeps them.
"""
from __future__ import annotations

import os
from pathlib import Path

from seglog.errors import UnknownTopicOrPartitionError
from seglog.indexer.fsutil import make_dirs, refuse_symlink
from seglog.indexer.locks import FileLock, partition_lock, topic_writer_lock
from seglog.indexer.names import parse_partition_dir


def lock_partition(path: Path, timeout: float | None, *, create: bool) -> FileLock:
    """The partition's lock, held, with its folder there. A missing folder is made only when `create` and its
    topic exists (above); else UnknownTopicOrPartitionError, and nothing is made."""
    lock = partition_lock(path).acquire(timeout)
    if _is_folder(path):
        return lock
    lock.release()          # the writer lock comes first (TopicAdmin's and DriverCommit's order): retaken below
    parsed = parse_partition_dir(path.name)
    if not create:
        raise UnknownTopicOrPartitionError(
            f"partition folder {path} does not exist (its topic deleted, e.g. by DROP TABLE ... PURGE, or the folder "
            f"removed): this open makes no folder; nothing was created")
    if parsed is None:      # a folder not named <topic>-<partition> has no topic to ask about
        lock = partition_lock(path).acquire(timeout)
        try:
            make_dirs(path)
        except BaseException:
            lock.release()
            raise
        return lock
    root, topic = path.parent, parsed[0]
    with topic_writer_lock(root, topic).acquire(timeout):
        lock = partition_lock(path).acquire(timeout)
        try:
            if not _is_folder(path):
                _check_topic_exists(root, topic, path)
                make_dirs(path)     # group-writable in a shared root, and durable in it before any record (fsutil)
        except BaseException:
            lock.release()
            raise
    return lock


def _is_folder(path: Path) -> bool:
    refuse_symlink(path)    # a link planted since the open's first look is refused, never followed
    return path.is_dir()


def _check_topic_exists(root: Path, topic: str, path: Path) -> None:
    from seglog.indexer.root import LogRoot
    from seglog.indexer.topics import load_topic, topics_dir

    if load_topic(root, topic) is not None or LogRoot(root).partitions(topic) or not os.path.isdir(topics_dir(root)):
        return
    raise UnknownTopicOrPartitionError(
        f"topic {topic!r} does not exist under {os.fspath(root)!r} (no metadata in {topics_dir(root)} and no partition "
        f"folder: deleted, e.g. by DROP TABLE ... PURGE, or never created): a root that records its topics gets a "
        f"partition folder only for a recorded topic (record it with create_topic, or write it with "
        f"format(\"seglog\")); {path} was not created")
