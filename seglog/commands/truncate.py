"""`seglog truncate ROOT --topic T --partition P --to-offset N [--yes]`: the operator's truncation.

Removes exactly the records at or after N from one partition (docs/spec.md §3.6), under the partition's
lock, and lowers the topic's committed end for that partition to N when it was above.

Order, for crash safety: with the lock held, the committed end is lowered FIRST, then the log is
cut. A crash in between leaves records above a committed end that hides them (the state a
partly-written sink batch leaves, which the sink already repairs by truncating); the reverse order
could leave a committed end above the log's end, so that the next records appended there would be
visible before the sink commits them. Stop the writing query first: the lock keeps an appending
task out while this runs, but a sink commit that follows may raise the end again.
"""
from __future__ import annotations

import sys

from seglog.commands.common import (EXIT_FAULT, EXIT_OK, UsageError, add_lock_timeout, find_partitions,
                                    non_negative_int, open_committing)

OPERATOR = "operator"       # the writer id of the operator's commits


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "truncate", help="remove the records at or after an offset from one partition",
        description="Remove every record at or after --to-offset from one partition (under its lock) "
                    "and lower the committed end offset to it. Asks for confirmation unless --yes.")
    p.add_argument("root", metavar="ROOT", help="a log root")
    p.add_argument("--topic", required=True, help="the topic")
    p.add_argument("--partition", required=True, type=non_negative_int, metavar="P", help="the partition")
    p.add_argument("--to-offset", required=True, type=non_negative_int, metavar="N",
                   help="the first offset to remove (records below it are kept)")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    add_lock_timeout(p, "the topic's writer lock and the partition's lock")
    p.set_defaults(run=run)


def _confirm(question: str) -> bool:
    if not sys.stdin.isatty():
        raise UsageError("truncation removes records: pass --yes to confirm (stdin is not a terminal)")
    answer = input(f"{question} [y/N] ")
    return answer.strip().lower() in ("y", "yes")


def _refuse_what_cannot_go(part, n: int, start: int, end: int) -> None:
    """Every refusal, before anything changes (the committed end included): a refused truncation changes
    nothing. Records below the local log start may still be on the remote tier: "already gone" only when
    they are on neither tier; tiered records are immutable (docs/tiered-storage.md §4)."""
    from seglog.indexer.remote import metadata

    state = metadata.read_state(part.root, part.topic, part.partition)
    first = start if state.start is None else min(start, state.start)
    if n < first:
        raise UsageError(f"--to-offset {n} is below the log start offset {first} of {part.name}: "
                         f"those records are already gone (allowed: {first} to {end})")
    metadata.refuse_below_remote_end(part.path, n, f"truncate to offset {n}")


def run(args) -> int:
    from seglog.indexer.commit_log import CommitLog

    (part,) = find_partitions(args.root, args.topic, args.partition)
    n = args.to_offset
    with open_committing(part, args.lock_timeout) as log:
        for line in log.recovery_report:
            print(f"{part.name}: recovery: {line}")
        start, end = log.log_start_offset, log.log_end_offset
        commits = CommitLog(part.root, part.topic)
        committed = commits.end_offsets().get(part.partition)
        _refuse_what_cannot_go(part, n, start, end)
        lower_commit = committed is not None and committed > n
        if n >= end and not lower_commit:
            print(f"{part.name}: nothing to do: the log ends at {end} (<= {n}); committed end "
                  f"{'-' if committed is None else committed}")
            return EXIT_OK
        removing = max(0, end - n)
        if not args.yes and not _confirm(
                f"remove offsets {n} to {end - 1} ({removing} offset(s)) from {part.path}?"):
            print("not truncated")
            return EXIT_FAULT
        if lower_commit:
            commits.commit(OPERATOR, -1, {part.partition: n}, allow_lower=True)
            print(f"{part.name}: committed end lowered from {committed} to {n}")
        if n < end:
            log.truncate_to(n)
            log.flush()
            print(f"{part.name}: truncated to {n} (removed {removing} offset(s); log end was {end}, now "
                  f"{log.log_end_offset})")
    return EXIT_OK
