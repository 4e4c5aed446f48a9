"""`seglog import SOURCE ROOT [--topic T] [--link] [--config KEY=VALUE ...] [--abort-open-transactions]`: a
Kafka broker's data as a seglog topic, without rewriting it (indexer/kafka_import.py; docs/kafka.md,
"Importing a broker's data").

SOURCE is one partition folder copied from a Kafka broker (`<topic>-<partition>`), or a broker's whole
log dir (every topic's partition folders, Kafka's internal topics left out). The files are copied byte
for byte (`--link`: hard-linked where the filesystem allows), the topic is recorded (partition count,
configuration: retention off unless --config says otherwise) and the partitions' end offsets are
committed, so Spark's `seglog` source replays the broker's data offline. The folders are renamed in and the
topic recorded under the topic's writer lock (waiting at most --lock-timeout seconds), as a write's commit is.
Prints one line per partition, and one per index file rebuilt (a segment whose `.index` or `.timeindex` was missing) and per transaction
aborted. A folder with a transaction still open (no COMMIT/ABORT marker) is refused unless
--abort-open-transactions, which ends each with the ABORT marker Kafka's coordinator would write.
"""
from __future__ import annotations

from seglog.commands.common import EXIT_OK, add_lock_timeout, key_values


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "import", help="register a Kafka broker's partition folders as a seglog topic",
        description="Copy a Kafka partition folder, or every partition folder of a broker's log dir, into "
                    "ROOT unchanged, record the topic and commit its end offsets, so seglog's readers "
                    "(and Spark's seglog source) read it. Nothing is changed when a check fails.")
    p.add_argument("source", metavar="SOURCE", help="a Kafka partition folder or a broker's log dir")
    p.add_argument("root", metavar="ROOT", help="the seglog log root to import into")
    p.add_argument("--topic", default=None,
                   help="the topic name under ROOT (one source topic), or the topic to import (a log dir)")
    p.add_argument("--link", action="store_true", help="hard-link the files instead of copying them")
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                   help="topic configuration to record (repeatable; default retention.ms=-1, retention.bytes=-1)")
    p.add_argument("--abort-open-transactions", action="store_true",
                   help="end every transaction left open (no COMMIT/ABORT marker) with an ABORT marker, as "
                        "Kafka's coordinator does past transaction.timeout.ms (default: refuse such a folder)")
    add_lock_timeout(p, "the topic's writer lock (a format(\"seglog\") write of the topic holds it)")
    p.set_defaults(run=run)


def run(args) -> int:
    from seglog.indexer.kafka_import import import_kafka

    # A refused import (a fault in the data, a topic already there) is a SeglogError: exit 1.
    from seglog.indexer.root import local_root

    imported = import_kafka(args.source, local_root(args.root, "ROOT"), topic=args.topic, link=args.link, config=key_values(args.config),
                            abort_open_transactions=args.abort_open_transactions, lock_timeout=args.lock_timeout)
    for p in imported:
        print(f"{p.topic}:{p.partition}: offsets {p.log_start_offset} to {p.log_end_offset} "
              f"({p.segments} segment(s)) from {p.source}")
        for f in p.rebuilt_indexes:
            print(f"{p.topic}:{p.partition}: {f} was missing: the segment's indexes were rebuilt from its .log")
        for e in p.aborted:
            print(f"{p.topic}:{p.partition}: aborted the transaction of {e.transaction.describe()}: ABORT marker "
                  f"at offset {e.marker_offset} (producer epoch {e.producer_epoch}, coordinator epoch "
                  f"{e.coordinator_epoch})")
    return EXIT_OK
