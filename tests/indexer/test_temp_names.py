"""Temporary names are unique among a process's threads (fsutil.temp_suffix; AtomicFileTest pins the JVM's
twin): two sinks of one foreachBatch, each on a pool thread, once read one clock tick while creating their
topics' metadata, and the second write failed with FileAlreadyExists."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from seglog.indexer.fsutil import temp_path
from seglog.indexer.topics import create_topic, load_topic


def test_threads_never_share_a_temporary_name(tmp_path):
    with ThreadPoolExecutor(8) as pool:
        names = [n for chunk in pool.map(lambda _: [temp_path(tmp_path / "x.json") for _ in range(5000)], range(8))
                 for n in chunk]
    assert len(set(names)) == len(names) == 40_000
    assert all(n.name.startswith(".tmp-") and n.parent == tmp_path for n in names)   # recovery's prefix


def test_topics_created_at_once_from_many_threads_are_all_recorded(tmp_path):
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: create_topic(tmp_path, f"t{i}", 2, {}), range(64)))
    assert [load_topic(tmp_path, f"t{i}").partitions for i in range(64)] == [2] * 64
