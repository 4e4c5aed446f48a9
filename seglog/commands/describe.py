"""`seglog describe ROOT|PARTITION_DIR [--topic T] [--json] [--now MS]`.

Per partition: log start and end offsets, the committed end (the sink's high watermark, from the
topic's commit log), size, largest timestamp, its segments (base, next offset, state active /
inactive / sealed, size, largest timestamp), and its retention state: retention.ms, and the
far-future timestamp that blocks time retention, if any (docs/spec.md §3.7). A partition with tiered
segments (docs/tiered-storage.md) lists its remote segments too, each segment with its tier (remote,
local, or both), and its log start is the remote tier's. Read-only.
"""
from __future__ import annotations

import json
import sys
import time

from seglog.commands.common import EXIT_FAULT, EXIT_OK, find_partitions, open_readonly
from seglog.commands.progress import progress


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "describe", help="partitions, segments, offsets, timestamps and retention state",
        description="Describe every partition under ROOT (or one partition folder): offsets, the "
                    "committed end, segments, largest timestamps, and partitions whose retention "
                    "is blocked by far-future timestamps.")
    p.add_argument("root", metavar="ROOT", help="a log root, or one <topic>-<partition> folder")
    p.add_argument("--topic", help="only this topic's partitions")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.add_argument("--now", type=int, default=None, metavar="MS",
                   help="judge retention as of this time (ms since the epoch; default: now)")
    p.set_defaults(run=run)


def _committed_ends(root, topic: str, cache: dict) -> dict[int, int] | str:
    key = (str(root), topic)
    if key not in cache:
        from seglog.indexer.commit_log import CommitLog
        from seglog.errors import SeglogError

        try:
            cache[key] = CommitLog(root, topic).end_offsets()
        except (SeglogError, OSError, ValueError) as exc:
            cache[key] = f"unreadable commit log: {exc}"
    return cache[key]


def describe_partition(part, now: int, commits: dict) -> dict:
    from seglog.errors import SeglogError

    doc: dict = {"topic": part.topic, "partition": part.partition, "path": str(part.path)}
    ends = _committed_ends(part.root, part.topic, commits)
    if isinstance(ends, str):
        doc["committed_end_offset"] = None
        doc["error"] = ends
    else:
        doc["committed_end_offset"] = ends.get(part.partition)
    try:
        log = open_readonly(part)
    except (SeglogError, OSError) as exc:
        doc["error"] = f"cannot open the partition: {exc}"
        return doc
    try:
        segments = log.segments()
        tiers = _tiers(part, log)
        doc.update({
            "log_start_offset": tiers["log_start_offset"] if tiers else log.log_start_offset,
            "local_log_start_offset": log.log_start_offset,
            "log_end_offset": log.log_end_offset,
            "size_bytes": sum(s.size_bytes for s in segments),    # the local tier's
            "largest_timestamp": log.largest_timestamp,
            "retention_ms": log.config["retention.ms"],
            "retention_bytes": log.config["retention.bytes"],
            "retention_blocked_by": log.retention_blocked(now),
            "cleanup_policy": log.config["cleanup.policy"],
            **_cleaner_state(log, now),
            "segments": (tiers["remote"] if tiers else []) + [
                {"base_offset": s.base_offset, "next_offset": s.next_offset, "state": s.state,
                 "size_bytes": s.size_bytes, "largest_timestamp": s.largest_timestamp,
                 "retention_timestamp": s.retention_timestamp, "log_path": str(s.log_path),
                 "tier": tiers["tier"].get(s.base_offset, "local") if tiers else "local"}
                for s in segments],
        })
    except (SeglogError, OSError) as exc:
        doc["error"] = f"cannot describe the partition: {exc}"
    finally:
        log.close()
    return doc


def _tiers(part, log) -> dict | None:
    """The remote segments below the local log start (as segment documents) and each local segment's
    tier, from the partition's remote segment metadata log; None when nothing was tiered."""
    from seglog.indexer.remote import metadata

    if not metadata.metadata_path(part.root, part.topic, part.partition).exists():
        return None
    state = metadata.read_state(part.root, part.topic, part.partition)
    local_start = log.log_start_offset
    remote = [{"base_offset": s.base, "next_offset": s.next, "state": "tiered", "size_bytes": s.size,
               "largest_timestamp": s.max_ts, "retention_timestamp": s.max_ts if s.max_ts >= 0 else s.at,
               "log_path": None, "tier": "remote"} for s in state.segments() if s.base < local_start]
    bases = log.segment_bases()
    nexts = dict(zip(bases, bases[1:]))
    tier = {b: "both" for b, s in state.live.items() if b in nexts and nexts[b] == s.next}
    return {"remote": remote, "tier": tier,
            "log_start_offset": remote[0]["base_offset"] if remote else local_start}


def _cleaner_state(log, now: int) -> dict:
    """The cleaner checkpoint (first dirty offset) and, for a compacted topic, the dirty ratio (docs/spec.md §3.9)."""
    from seglog.indexer.compaction.cleaner import current_plan
    from seglog.indexer.compaction.cleaner_checkpoint import cleaner_offset

    state: dict = {"cleaner_checkpoint": cleaner_offset(log.path), "dirty_ratio": None}
    if log.config.compacted:
        plan = current_plan(log, now)
        state.update({"dirty_ratio": round(plan.dirty_ratio, 6), "first_dirty_offset": plan.first_dirty,
                      "first_uncleanable_offset": plan.first_uncleanable, "clean_due": plan.due})
    return state


def _fmt_ts(ts) -> str:
    if ts is None or ts < 0:
        return "-"
    return f"{ts} ({time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(ts / 1000))})"


def _print_text(docs: list[dict], now: int) -> None:
    for d in docs:
        print(f"{d['topic']}-{d['partition']}  {d['path']}")
        if "log_start_offset" in d:
            committed = d["committed_end_offset"]
            print(f"  offsets: start {d['log_start_offset']}, end {d['log_end_offset']}, committed end "
                  f"{'-' if committed is None else committed}")
            print(f"  size: {d['size_bytes']} bytes in {len(d['segments'])} segment(s); largest timestamp "
                  f"{_fmt_ts(d['largest_timestamp'])}")
            blocked = d["retention_blocked_by"]
            if blocked is not None:
                print(f"  retention: BLOCKED by a far-future timestamp {_fmt_ts(blocked)} "
                      f"({blocked - now} ms after now); retention.ms {d['retention_ms']}")
            else:
                print(f"  retention: retention.ms {d['retention_ms']}, retention.bytes {d['retention_bytes']}")
            if d.get("dirty_ratio") is not None:
                print(f"  compaction: cleaner checkpoint {d['cleaner_checkpoint'] if d['cleaner_checkpoint'] is not None else '-'}"
                      f", dirty ratio {d['dirty_ratio']:.3f} (dirty {d['first_dirty_offset']} to "
                      f"{d['first_uncleanable_offset']}), clean due: {'yes' if d['clean_due'] else 'no'}")
            if d["local_log_start_offset"] != d["log_start_offset"]:
                # the remote range as recorded, never assumed to reach the local tier
                remote_end = max(s["next_offset"] for s in d["segments"] if s["tier"] == "remote")
                gap = (f"; offsets {remote_end} to {d['local_log_start_offset'] - 1} are on neither tier"
                       if remote_end < d["local_log_start_offset"] else "")
                print(f"  tiered: the remote tier holds offsets {d['log_start_offset']} to "
                      f"{remote_end - 1}; the local tier starts at {d['local_log_start_offset']}{gap}")
            for s in d["segments"]:
                print(f"    {s['base_offset']:>20}  {s['state']:<8}  {s['tier']:<6}  next {s['next_offset']:<12} "
                      f"{s['size_bytes']:>12} B  largest ts {_fmt_ts(s['largest_timestamp'])}")
        if "error" in d:
            print(f"  ERROR: {d['error']}")


def run(args) -> int:
    parts = find_partitions(args.root, args.topic)
    now = args.now if args.now is not None else time.time_ns() // 1_000_000
    commits: dict = {}
    docs = [describe_partition(p, now, commits) for p in progress(parts, len(parts), "describe")]
    if args.json:
        blocked = [f"{d['topic']}-{d['partition']}" for d in docs if d.get("retention_blocked_by") is not None]
        json.dump({"root": str(args.root), "now_ms": now, "partitions": docs,
                   "retention_blocked": blocked}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_text(docs, now)
    return EXIT_FAULT if any("error" in d for d in docs) else EXIT_OK
