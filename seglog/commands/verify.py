"""`seglog verify ROOT|PARTITION_DIR [--topic T]`: every partition checked read-only.

Per partition, `Log.verify()` (CRCs, batch structure, offsets, offset index entries, time index
order and promises, sealed segments really sealed); a partition that cannot even be opened is a
fault too. Each fault is printed on one line naming the file and position. Exit 1 on any fault.
`--remote` also checks every tiered segment's objects against its record and manifest (sizes,
SHA-256; docs/tiered-storage.md §6).
Takes no lock and never writes, so it is safe next to a running writer.
"""
from __future__ import annotations

import sys

from seglog.commands.common import EXIT_FAULT, EXIT_OK, find_partitions, open_readonly, topic_config
from seglog.commands.progress import progress


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "verify", help="check CRCs, offsets and indexes of every partition (exit 1 on a fault)",
        description="Check every partition under ROOT (or one partition folder), read-only: CRCs, "
                    "batch structure, offsets, offset and time indexes. Exit 1 on any fault.")
    p.add_argument("root", metavar="ROOT", help="a log root, or one <topic>-<partition> folder")
    p.add_argument("--topic", help="only this topic's partitions")
    p.add_argument("--quiet", "-q", action="store_true", help="print faults only, no summary")
    p.add_argument("--remote", action="store_true",
                   help="also check the tiered segments' objects against their manifests (docs/tiered-storage.md)")
    p.set_defaults(run=run)


def verify_partition(part, remote: bool = False) -> list[str]:
    from seglog.errors import SeglogError

    try:
        log = open_readonly(part)
    except (SeglogError, OSError) as exc:
        return [f"{part.path}: cannot open the partition: {exc}"]
    try:
        faults = list(log.verify())
    except (SeglogError, OSError) as exc:
        faults = [f"{part.path}: verification stopped: {exc}"]
    finally:
        log.close()
    if remote:
        faults += verify_remote(part)
    return faults


def verify_remote(part) -> list[str]:
    from seglog.errors import SeglogError
    from seglog.indexer.remote.metadata import metadata_path
    from seglog.indexer.remote.tiered_log import TieredLog

    if not metadata_path(part.root, part.topic, part.partition).exists():
        return []
    try:
        with TieredLog(part.root, part.topic, part.partition, topic_config(part)) as tiered:
            return tiered.verify_remote()
    except (SeglogError, OSError) as exc:
        return [f"{part.path}: the remote tier could not be verified: {exc}"]


def run(args) -> int:
    parts = find_partitions(args.root, args.topic)
    total = 0
    bad_parts = 0
    for part in progress(parts, len(parts), "verify"):
        faults = verify_partition(part, remote=args.remote)
        for fault in faults:
            print(f"FAULT {part.name}: {fault}")
        total += len(faults)
        bad_parts += bool(faults)
    sys.stdout.flush()
    if not args.quiet:
        verdict = "clean" if not total else f"{total} fault(s) in {bad_parts} partition(s)"
        print(f"verified {len(parts)} partition(s): {verdict}")
    return EXIT_FAULT if total else EXIT_OK
