"""`seglog compact ROOT --topic T [--partition P] [--config KEY=VALUE ...] [--now MS]`: one clean now.

Cleans each named partition of a compacted topic once (docs/spec.md §3.9), beside its writer (the
partition's lock only for recovery first and for each group's swap), whatever its dirty ratio (min.cleanable.dirty.ratio is the sidecar's trigger; the compaction lags and
the active segment still hold). The topic's recorded configuration applies, with `--config` on top
(as the sidecar's `topics:` section would set it).
"""
from __future__ import annotations

from seglog.commands.common import (EXIT_OK, UsageError, add_lock_timeout, find_partitions, key_values,
                                    non_negative_int)


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "compact", help="clean the partitions of a compacted topic once, now",
        description="Clean every partition of --topic (or only --partition) once: keep the latest record "
                    "per key, drop tombstones past delete.retention.ms. Needs cleanup.policy compact.")
    p.add_argument("root", metavar="ROOT", help="a log root")
    p.add_argument("--topic", required=True, help="the topic")
    p.add_argument("--partition", type=non_negative_int, metavar="P", help="only this partition")
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                   help="a topic configuration override (repeatable), e.g. cleanup.policy=compact")
    p.add_argument("--dedupe-buffer-size", type=non_negative_int, default=None, metavar="BYTES",
                   help="memory of the key -> offset map (log.cleaner.dedupe.buffer.size; default 128 MiB)")
    p.add_argument("--now", type=non_negative_int, default=None, metavar="MS",
                   help="clean as of this time (ms since the epoch; default: now)")
    add_lock_timeout(p, "a partition's lock")
    p.set_defaults(run=run)


def run(args) -> int:
    from seglog.indexer import Log, LogRoot
    from seglog.indexer.compaction.cleaner import DEFAULT_DEDUPE_BUFFER_BYTES, clean_partition

    parts = find_partitions(args.root, args.topic, args.partition)
    cfg = LogRoot(parts[0].root).topic_config(args.topic, overrides=key_values(args.config))
    if not cfg.compacted:
        raise UsageError(f"topic {args.topic!r} has cleanup.policy={cfg['cleanup.policy']!r}: only a compacted "
                         f"topic is cleaned (record it with compact, or pass --config cleanup.policy=compact)")
    for part in parts:
        with Log.open(part.path, cfg, lock_timeout=args.lock_timeout, create=False) as log:    # recovery first, briefly locked
            for line in log.recovery_report:
                print(f"{part.name}: recovery: {line}")
        budget = DEFAULT_DEDUPE_BUFFER_BYTES if args.dedupe_buffer_size is None else args.dedupe_buffer_size
        res = clean_partition(part.path, cfg, now=args.now, dedupe_buffer_bytes=budget, force=True,
                              lock_timeout=args.lock_timeout, maintenance_timeout=args.lock_timeout)
        if res.given_up is not None:
            print(f"{part.name}: clean given up, cleaner checkpoint unchanged ({res.given_up}); "
                  f"{len(res.groups)} group(s) swapped in before it")
            continue
        if not res.cleaned:
            print(f"{part.name}: nothing to clean ({res.plan.reason}; dirty ratio {res.plan.dirty_ratio:.3f})")
            continue
        print(f"{part.name}: cleaned {len(res.groups)} segment group(s): {res.records_read} records read, "
              f"{res.records_removed} removed; {res.bytes_read} bytes -> {res.bytes_written} bytes; dirty ratio "
              f"was {res.plan.dirty_ratio:.3f}; cleaner checkpoint now {res.first_dirty_after} "
              f"({res.duration_ms:.0f} ms, the partition's lock held at most {res.longest_lock_hold_ms:.0f} ms)")
    return EXIT_OK
