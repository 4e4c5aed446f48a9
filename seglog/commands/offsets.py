"""`seglog offsets-for-times ROOT --topic T --time MS [--partition P]`.

Per partition, `Log.offset_for_timestamp(MS)` across both tiers where it has tiered segments
(docs/tiered-storage.md §6): the smallest offset whose record has a timestamp of
at least MS (docs/spec.md §3.5), `-` when there is none. `--time earliest` (-2) and `--time latest` (-1)
give the log start and end offsets, `--time max-timestamp` (-3, KIP-734) the first record holding the
largest timestamp. Prints `topic:partition:offset` lines, as Kafka's
GetOffsetShell. Read-only.
"""
from __future__ import annotations

import argparse

from seglog.commands.common import EXIT_OK, find_partitions, non_negative_int, open_tiered

_NAMED = {"earliest": -2, "latest": -1, "max-timestamp": -3}


def _time(text: str) -> int:
    if text.lower() in _NAMED:
        return _NAMED[text.lower()]
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time: give milliseconds since the epoch, 'earliest' (-2), 'latest' (-1) or "
            f"'max-timestamp' (-3)") from None
    if value < -3:
        raise argparse.ArgumentTypeError(f"{value} is not a time: milliseconds >= 0, or -2 / -1 / -3")
    return value


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "offsets-for-times", help="the first offset at or after a timestamp, per partition",
        description="For each partition of TOPIC, the smallest offset whose record has a timestamp "
                    "of at least MS ('-' when there is none).")
    p.add_argument("root", metavar="ROOT", help="a log root")
    p.add_argument("--topic", required=True, help="the topic")
    p.add_argument("--time", required=True, type=_time, metavar="MS",
                   help="milliseconds since the epoch, or earliest / latest / max-timestamp")
    p.add_argument("--partition", type=non_negative_int, default=None, metavar="P", help="only this partition")
    p.set_defaults(run=run)


def run(args) -> int:
    for part in find_partitions(args.root, args.topic, args.partition):
        with open_tiered(part) as log:
            offset = log.offset_for_timestamp(args.time)
        print(f"{part.topic}:{part.partition}:{'-' if offset is None else offset}")
    return EXIT_OK
