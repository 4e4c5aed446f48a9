"""What a writer committed to a topic, read back by the Python core: the tests' one reference for "every row
exactly once" checks (each partition read up to the commit log's end, optionally verified first)."""
from __future__ import annotations

from seglog.indexer import Log
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.topics import load_topic


def committed_keys(root, topic, *, verify: bool = False) -> list[bytes]:
    """Every committed key of `topic`, sorted; with `verify`, each partition must verify clean first."""
    meta = load_topic(root, topic)
    ends = CommitLog(root, topic).end_offsets()
    out = []
    for p in range(meta.partitions):
        if (root / f"{topic}-{p}").is_dir():
            with Log.open(root / f"{topic}-{p}", meta.config, readonly=True) as log:
                if verify:
                    assert log.verify() == []
                out += [r.key for r in log.read(0, ends.get(p, 0))]
    return sorted(out)
