"""`seglog abort-transaction ROOT --topic T --partition P (--producer-id ID [--producer-epoch E] |
--start-offset O | --all-open) [--coordinator-epoch N]`: end a hanging transaction, as Kafka's
`kafka-transactions.sh abort` makes a broker do (docs/kafka.md, "Transactions").

A transaction whose producer died before its COMMIT/ABORT marker stays open in seglog for good (no
coordinator times it out): read_committed readers stop at its first offset, so nothing after it is
visible to them. This appends the ABORT control batch Kafka's coordinator writes (indexer/transactions.py,
`end_transaction_marker`) for the chosen transaction(s), through the Log's append path under the
partition's lock, flushes, and commits the new end through the topic's commit log, so readers see it.

Refused, changing nothing: no open transaction matches; a producer epoch older than the transaction's
(Kafka fences it); records past the partition's committed end (a sink batch being written or to be
rolled back: committing them would make them visible; `seglog truncate --to-offset <committed end>`
removes them, or let the sink finish).
"""
from __future__ import annotations

import argparse

from seglog.commands.common import EXIT_OK, UsageError, add_lock_timeout, find_partitions, non_negative_int, open_committing
from seglog.commands.truncate import OPERATOR

_INT16_MAX = 32767
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1


def _bounded(high: int):
    def parse(text: str) -> int:
        value = non_negative_int(text)
        if value > high:
            raise argparse.ArgumentTypeError(f"{value} is out of range (0 to {high})")
        return value
    return parse


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "abort-transaction", help="end a transaction left open with an ABORT marker (kafka-transactions.sh abort)",
        description="Append the ABORT marker Kafka's transaction coordinator writes for a transaction that has no "
                    "COMMIT/ABORT marker, under the partition's lock, and commit it, so read_committed readers "
                    "see the records after it.")
    p.add_argument("root", metavar="ROOT", help="a log root")
    p.add_argument("--topic", required=True, help="the topic")
    p.add_argument("--partition", required=True, type=non_negative_int, metavar="P", help="the partition")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--producer-id", type=_bounded(_INT64_MAX), metavar="ID",
                       help="the producer id of the open transaction")
    which.add_argument("--start-offset", type=non_negative_int, metavar="O",
                       help="the first offset of the open transaction (as kafka-transactions.sh abort)")
    which.add_argument("--all-open", action="store_true", help="every open transaction of the partition")
    p.add_argument("--producer-epoch", type=_bounded(_INT16_MAX), metavar="E",
                   help="the marker's producer epoch (default: the transaction's; never older)")
    p.add_argument("--coordinator-epoch", type=_bounded(_INT32_MAX), metavar="N",
                   help="the marker's coordinator epoch (default: the producer's latest marker's, else 0)")
    add_lock_timeout(p, "the topic's writer lock and the partition's lock")
    p.set_defaults(run=run)


def run(args) -> int:
    from seglog.indexer.commit_log import CommitLog
    from seglog.indexer.transactions import TransactionStateError, abort_transactions, open_transactions

    if args.producer_epoch is not None and args.producer_id is None:
        raise UsageError("--producer-epoch needs --producer-id (it is the epoch of that producer's marker)")
    (part,) = find_partitions(args.root, args.topic, args.partition)
    commits = CommitLog(part.root, part.topic)
    with open_committing(part, args.lock_timeout) as log:
        for line in log.recovery_report:
            print(f"{part.name}: recovery: {line}")
        found = open_transactions(log)
        if args.all_open:
            chosen = found
        elif args.producer_id is not None:
            chosen = [t for t in found if t.producer_id == args.producer_id]
        else:
            chosen = [t for t in found if t.first_offset == args.start_offset]
        listed = "; ".join(t.describe() for t in found) or "none"
        if not chosen:
            if args.all_open:
                print(f"{part.name}: no open transaction")
                return EXIT_OK
            what = (f"producer id {args.producer_id}" if args.producer_id is not None
                    else f"a transaction starting at offset {args.start_offset}")
            raise TransactionStateError(f"{part.path}: no open transaction of {what} (open: {listed}); nothing "
                                        f"was changed")
        end = log.log_end_offset
        committed = commits.end_offsets().get(part.partition)
        if committed != end:
            raise TransactionStateError(
                f"{part.path}: the log ends at {end} but its committed end is "
                f"{'missing' if committed is None else committed}: an ABORT marker committed now would make "
                f"the records past the committed end visible; let the writer finish or roll back (or run "
                f"`seglog truncate --to-offset {committed or 0}`) first; nothing was changed")
        ended = abort_transactions(log, chosen, producer_epoch=args.producer_epoch,
                                   coordinator_epoch=args.coordinator_epoch)
        log.flush()
        state = commits.commit(OPERATOR, -1, {part.partition: log.log_end_offset})
        for e in ended:
            print(f"{part.name}: aborted the transaction of {e.transaction.describe()}: ABORT marker at offset "
                  f"{e.marker_offset} (producer epoch {e.producer_epoch}, coordinator epoch {e.coordinator_epoch})")
        print(f"{part.name}: committed end now {state.end_offsets[part.partition]}")
    return EXIT_OK
