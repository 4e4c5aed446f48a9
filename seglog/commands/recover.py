"""`seglog recover ROOT|PARTITION_DIR [--topic T]`: open every partition writable, which runs
recovery (docs/spec.md §3.8: torn tails cut, indexes rebuilt, interrupted truncations finished) over
every segment, those below the recovery point included, and print each partition's recovery report.
Takes each partition's lock in turn (waits up to --lock-timeout).
"""
from __future__ import annotations

from seglog.commands.common import EXIT_FAULT, EXIT_OK, add_lock_timeout, find_partitions, open_writable
from seglog.commands.progress import progress


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "recover", help="run recovery on every partition and print what was repaired",
        description="Open every partition under ROOT writable (taking its lock), which runs recovery, "
                    "and print what was repaired. Exit 1 if a partition could not be recovered.")
    p.add_argument("root", metavar="ROOT", help="a log root, or one <topic>-<partition> folder")
    p.add_argument("--topic", help="only this topic's partitions")
    add_lock_timeout(p, "a partition's lock")
    p.set_defaults(run=run)


def run(args) -> int:
    from seglog.errors import SeglogError

    parts = find_partitions(args.root, args.topic)
    failed = repaired = 0
    for part in progress(parts, len(parts), "recover"):
        try:
            # every segment examined, those below the recovery point too: a damaged index `verify`
            # found there is rebuilt (a writable open trusts them, as Kafka's loader does)
            with open_writable(part, args.lock_timeout, full_recovery=True) as log:
                report = list(log.recovery_report)
        except (SeglogError, OSError) as exc:
            print(f"{part.name}: FAILED: {exc}")
            failed += 1
            continue
        if report:
            repaired += 1
            for line in report:
                print(f"{part.name}: {line}")
        else:
            print(f"{part.name}: clean")
    print(f"recovered {len(parts)} partition(s): {repaired} repaired, {failed} failed")
    return EXIT_FAULT if failed else EXIT_OK
