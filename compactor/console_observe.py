"""What a pass adds to the console's view (compactor/console_view.py) for a partition it has open: its
segments (with index sizes and time range), its remote tier, and what retention would delete now; and
each topic's newest commit state. Called from compactor/jobs.py where the metrics are observed, so the
console costs a pass a few stats per changed partition, never a request a scan.

Reads only: a stat per index file, one batch header per new segment (its first timestamp; a segment's
row is kept while its size and state hold), the partition's remote metadata log when it has one, and
a topic's newest commit file when its commit folder changed.
"""
from __future__ import annotations

import os
import time
from typing import Any

from seglog.compactor.console_view import ConsoleView, PartitionView, SegmentRow
from seglog.compactor.metrics import PartitionStats


def partition_view(view: ConsoleView, root_path, log, stats: PartitionStats, cfg, segments, now: int) -> PartitionView:
    from seglog.indexer import retention
    from seglog.indexer.remote.metadata import locally_deletable, metadata_path, read_state

    previous = view.previous_segments(stats.topic, stats.partition)
    remote_segs: list = []
    if metadata_path(root_path, stats.topic, stats.partition).exists():
        remote_segs = read_state(root_path, stats.topic, stats.partition).segments()
    tiered_bases = {s.base for s in remote_segs}
    local_start = segments[0].base_offset if segments else stats.log_start_offset
    # a segment once local keeps the first timestamp read then (the remote metadata has none)
    rows = [SegmentRow(s.base, s.next, s.size, "tiered", previous[s.base].first_timestamp if s.base in previous else -1,
                       s.max_ts, _file_size(s.files, "index"), _file_size(s.files, "timeindex"), True)
            for s in remote_segs if s.base < local_start]
    for seg in segments:
        old = previous.get(seg.base_offset)
        if old is not None and old.state == seg.state == "sealed" and old.size_bytes == seg.size_bytes \
                and old.tiered == (seg.base_offset in tiered_bases):
            rows.append(old)
            continue
        rows.append(SegmentRow(seg.base_offset, seg.next_offset, seg.size_bytes, seg.state,
                               _first_timestamp(seg.log_path) if seg.size_bytes else -1, seg.largest_timestamp,
                               _size(seg.log_path.with_suffix(".index")), _size(seg.log_path.with_suffix(".timeindex")),
                               seg.base_offset in tiered_bases))
    # What the next retention pass deletes, as retention itself plans it (indexer/retention.py), capped
    # as apply_retention caps it while the remote tier holds the partition.
    todo = retention.plan(log.retention_facts(), cfg, now).count
    cap = locally_deletable(log.path, [s.base_offset for s in segments])
    if cap is not None:
        todo = min(todo, cap)
    return PartitionView(
        stats=stats, segments=tuple(rows), cleanup_policy=cfg["cleanup.policy"], retention_bytes=cfg["retention.bytes"],
        remote_bytes=sum(s.size for s in remote_segs), remote_segments=len(remote_segs),
        remote_start=min(tiered_bases) if tiered_bases else -1,
        retention_next_segments=todo, retention_next_bytes=sum(s.size_bytes for s in segments[:todo]))


def observe_commits(view: ConsoleView, root_path, topic: str) -> None:
    """The topic's newest commit state, read again only when its commit folder changed."""
    from seglog.indexer.commit_log import CommitLog, commits_dir

    try:
        st = os.stat(commits_dir(root_path, topic))
        signature: Any = (st.st_mtime_ns, st.st_ino)
    except FileNotFoundError:
        signature = None
    if signature is not None and signature == view.commits_signature(topic):
        return
    state = CommitLog(root_path, topic).latest() if signature else None
    if signature is not None and time.time_ns() - st.st_mtime_ns < _MTIME_SLACK_NS:
        signature = ("changed lately", st.st_mtime_ns)    # a commit in the same clock tick keeps the mtime: read again
    view.observe_commits(topic, signature, state)


_MTIME_SLACK_NS = 2_000_000_000      # as compactor/partition_memo.py's: mtimes come from a coarse clock


def _file_size(files: dict, kind: str) -> int:
    try:
        return int(files[kind]["size"])
    except (KeyError, TypeError, ValueError):
        return -1


def _size(path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return -1


def _first_timestamp(log_path) -> int:
    """The first batch's base timestamp (-1 when it cannot be read: the row is informative only)."""
    from seglog.errors import SeglogError
    from seglog.indexer.codec.records import BATCH_HEADER_SIZE, parse_header

    try:
        with open(log_path, "rb") as fh:
            return parse_header(fh.read(BATCH_HEADER_SIZE), 0).base_timestamp
    except (OSError, SeglogError):
        return -1
