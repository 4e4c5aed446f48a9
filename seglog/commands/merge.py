"""`seglog merge ROOT [--topic T] [--partition P] [--config KEY=VALUE ...]`: merge small segments now.

Merges each partition's small sealed segments once (docs/spec.md §3.10, indexer/compaction/segment_merge.py), beside
its writer (the partition's lock only for recovery first and for each group's swap), as the sidecar's merge job does: never the active segment, never anything at or
above the committed end. Each topic's recorded configuration applies, with `--config` on top (as the
sidecar's `topics:` section would set it), e.g. segment.merge.small.bytes.
"""
from __future__ import annotations

from seglog.commands.common import EXIT_OK, add_lock_timeout, find_partitions, key_values, non_negative_int


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "merge", help="merge small sealed segments into larger ones, now",
        description="Merge runs of small sealed segments of every partition (of --topic, or only --partition) "
                    "into segments an append could have written: within segment.bytes and segment.ms, records "
                    "and offsets unchanged.")
    p.add_argument("root", metavar="ROOT", help="a log root")
    p.add_argument("--topic", help="only this topic")
    p.add_argument("--partition", type=non_negative_int, metavar="P", help="only this partition (with --topic)")
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                   help="a topic configuration override (repeatable), e.g. segment.merge.small.bytes=1048576")
    add_lock_timeout(p, "a partition's lock")
    p.set_defaults(run=run)


def run(args) -> int:
    from seglog.indexer import Log, LogRoot
    from seglog.indexer.compaction.segment_merge import merge_partition
    from seglog.indexer.names import log_bases

    parts = find_partitions(args.root, args.topic, args.partition)
    overrides = key_values(args.config)
    configs = {}
    for part in parts:
        if part.topic not in configs:
            configs[part.topic] = LogRoot(part.root).topic_config(part.topic, overrides=overrides)
        with Log.open(part.path, configs[part.topic], lock_timeout=args.lock_timeout, create=False) as log:   # recovery first
            for line in log.recovery_report:
                print(f"{part.name}: recovery: {line}")
            before = len(log.segment_bases())
        res = merge_partition(part.path, configs[part.topic], lock_timeout=args.lock_timeout,
                              maintenance_timeout=args.lock_timeout)
        if res.given_up is not None:
            print(f"{part.name}: merge given up ({res.given_up}); {len(res.groups)} group(s) merged before it")
            continue
        if not res.groups:
            print(f"{part.name}: nothing to merge ({before} segments)")
            continue
        print(f"{part.name}: merged {res.segments_merged} segments into {len(res.groups)} "
              f"({res.bytes_merged} bytes, {res.duration_ms:.0f} ms); {len(log_bases(part.path))} segments now")
    return EXIT_OK
