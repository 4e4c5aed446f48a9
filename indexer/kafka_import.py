"""Register a Kafka broker's partition folders as a seglog topic (docs/kafka.md, "Importing a broker's data").

A Kafka partition folder is already seglog's format (the same `.log`, `.index` and `.timeindex`), so an
import copies (or hard-links) the files byte for byte and rewrites nothing. What a Kafka folder lacks
is seglog's metadata: the topic record (partition count, configuration) and a commit log entry, since
readers never read past the committed end offsets (docs/spec.md §4). The import writes both.

Order, so that a crash at any point leaves nothing half visible: every partition's checks first (CRCs,
structure, offsets, leader epochs, the broker's log start checkpoint, open transactions; nothing is
written when one fails), then each partition folder is copied under a temporary name (a missing
`.index` or `.timeindex` rebuilt there from the `.log`, as Kafka's broker rebuilds one at load); then, under the
topic's writer lock, the checks that the topic and its folders are still absent, each folder renamed into place
(under its partition's lock too), the log start offsets, the topic record, with `abort_open_transactions` an ABORT
marker for each open transaction (indexer/transactions.py), and last the commit that makes the records visible.

Invariant (indexer/partition_folder.py's): a partition folder appears only under its topic's writer lock. A
`format("seglog")` write holds that lock from its topic's creation to its commit or its restore, and a failed
write's restore cuts and removes the folders it made for a topic it created (DriverCommit.restore): renamed in
beside such a write without the lock, an imported folder could be cut to nothing or removed under the import,
which then committed its end offsets over the loss.

A transaction without its COMMIT/ABORT marker would stay open for good under seglog (no coordinator
ends it): read_committed readers would stop at its first offset and never see what the sink appends
after it. An import refuses such a folder unless told to abort them (OpenTransactionError names them).

Kafka's other files travel along untouched (`leader-epoch-checkpoint`, which tells seglog the folder
may hold any leader epoch, `partition.metadata`, `.snapshot`, `.txnindex`).
"""
from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from seglog.errors import CorruptRecordError, SeglogError
from seglog.indexer.fsutil import fsync_dir, make_dirs, share_created
from seglog.indexer.names import (INDEX_SUFFIX, LOG_SUFFIX, META_DIR, TIME_INDEX_SUFFIX, log_bases,
                                  parse_partition_dir, parse_segment_file, partition_dir_name, segment_file,
                                  validate_topic)
from seglog.indexer.transactions import EndedTransaction, OpenTransaction

IMPORT_WRITER = "seglog-import"
# An import keeps every record until the user says otherwise: a broker's old data must not be
# deleted by the sidecar's default retention the moment it lands.
IMPORT_DEFAULTS = {"retention.ms": -1, "retention.bytes": -1}


class KafkaImportError(SeglogError):
    """An import was refused; nothing was changed."""


class OpenTransactionError(KafkaImportError):
    """A partition folder holds a transaction with no COMMIT/ABORT marker (`transactions` names each:
    producer id, epoch, first offset); refused unless the import is told to abort them."""

    def __init__(self, message: str, folder: Path, transactions: list[OpenTransaction]):
        super().__init__(message)
        self.folder = folder
        self.transactions = transactions


@dataclass(frozen=True)
class ImportedPartition:
    topic: str
    partition: int
    source: Path
    log_start_offset: int
    log_end_offset: int
    segments: int
    rebuilt_indexes: tuple[str, ...] = ()              # index files that were missing, rebuilt in the copy
    open_transactions: tuple[OpenTransaction, ...] = ()
    aborted: tuple[EndedTransaction, ...] = ()         # the ABORT markers the import appended


def kafka_partition_folders(source: str | os.PathLike) -> list[Path]:
    """The partition folders `source` names: itself (a `<topic>-<partition>` folder holding a `.log`),
    or those inside it (a broker's log dir), without Kafka's internal topics (`__consumer_offsets`,
    `__transaction_state`, ...) and folders Kafka is deleting or moving (`.delete`, `.future`)."""
    src = Path(source)
    if not src.is_dir():
        raise KafkaImportError(f"{src}: not a folder (expected a Kafka partition folder or a broker's log dir)")
    if parse_partition_dir(src.name) is not None and log_bases(src):
        return [src]
    found = [p for p in sorted(src.iterdir()) if p.is_dir() and parse_partition_dir(p.name) is not None
             and not p.name.startswith("__") and p.name != META_DIR]
    for p in found:
        _refuse_link(p)
    if not found:
        raise KafkaImportError(f"{src}: no Kafka partition folders (<topic>-<partition>) found")
    return found


def _refuse_link(path: Path) -> None:
    """The import never follows a symbolic link in its source: a link could name any file this process may
    read (another topic's data, a private key) and copy it into the root for every reader of the root."""
    if path.is_symlink():
        raise KafkaImportError(f"{path}: a symbolic link in the import's source; an import never follows one "
                               f"(it could copy a file from outside the broker's folder into the root); replace "
                               f"it with the file itself; nothing was imported")


def _refuse_links_in(folder: Path) -> None:
    for entry in os.scandir(folder):
        _refuse_link(Path(entry.path))


@dataclass(frozen=True)
class _Checked:
    start: int
    end: int
    bases: list[int]
    missing_indexes: list[Path]
    open_transactions: list[OpenTransaction]


class _LogFile:
    """One segment's `.log` for `segment.read_checked`, without its indexes (which may be missing)."""

    def __init__(self, folder: Path, base: int, max_leader_epoch: int, dense: bool):
        self.log_path = segment_file(folder, base, LOG_SUFFIX)
        self.base_offset = base
        self.max_leader_epoch = max_leader_epoch
        self.dense = dense
        self._fd = os.open(self.log_path, os.O_RDONLY | os.O_NOFOLLOW)
        self.size = os.fstat(self._fd).st_size

    def pread(self, position: int, length: int) -> bytes:
        return os.pread(self._fd, length, position)

    def close(self) -> None:
        os.close(self._fd)


def _check_partition(folder: Path, log_start_hint: int | None) -> _Checked:
    """A Kafka partition folder checked from its `.log` files alone: every batch (CRCs, structure,
    dense offsets, leader epochs), offsets rising across segments, which index files are missing, and
    which transactions are open. Raises KafkaImportError naming the fault."""
    from seglog.conf.topic_config import validate_topic_config
    from seglog.indexer.compaction.cleaner_checkpoint import may_have_gaps
    from seglog.indexer.leader_epochs import max_leader_epoch
    from seglog.indexer.segment import read_checked
    from seglog.indexer.transactions import OpenTransactions, marker_of
    from seglog.indexer.codec.records import decode_batch

    _refuse_links_in(folder)                   # first: nothing below reads through a link
    bases = log_bases(folder)
    dense = not may_have_gaps(folder, validate_topic_config(None))
    max_epoch = max_leader_epoch(folder)
    tracker = OpenTransactions()
    missing: list[Path] = []
    prev_next = None
    end = bases[-1] if bases else 0
    try:
        for base in bases:
            missing += [f for f in (segment_file(folder, base, INDEX_SUFFIX), segment_file(folder, base, TIME_INDEX_SUFFIX))
                        if not f.exists()]
            seg = _LogFile(folder, base, max_epoch, dense)
            try:
                first = None
                for _, buf, scan in read_checked(seg, 0, base - 1):
                    if not scan.headers:
                        continue
                    if first is None:
                        first = scan.headers[0].base_offset
                        if prev_next is not None and first < prev_next:
                            raise KafkaImportError(f"{seg.log_path}: offsets go backwards across segments; "
                                                   f"nothing was imported")
                    positions = scan.positions

                    def marker_epoch(k: int, buf=buf, positions=positions) -> int:
                        return marker_of(decode_batch(buf, int(positions[k])))[1]

                    tracker.feed(scan.headers, marker_epoch)
                    prev_next = scan.headers[-1].next_offset
                    end = prev_next
            finally:
                seg.close()
            if base == bases[-1] and first is None:
                end = base                   # an empty last segment: the log ends at its base
    except CorruptRecordError as exc:
        raise KafkaImportError(f"{exc}; nothing was imported") from None
    start = bases[0] if bases else 0
    if log_start_hint is not None:
        start = max(start, log_start_hint)
    return _Checked(start, end, bases, missing, tracker.open())


def _broker_log_starts(folder: Path) -> dict[tuple[str, int], int]:
    """The broker's own log-start-offset-checkpoint (same format as seglog's), when it is there. A
    malformed one refuses the import (naming the file and line): a broker would start each log at its
    first segment, showing records the checkpoint hid; remove the file to import on that footing."""
    from seglog.indexer.checkpoint import CorruptCheckpointError, read_log_start_offsets

    try:
        return read_log_start_offsets(folder.parent)
    except CorruptCheckpointError as exc:
        raise KafkaImportError(f"{exc}; nothing was imported (remove the file to start each partition at its "
                               f"first segment, as Kafka's log manager would)") from None


def _temporary_folder(dest: Path) -> Path:
    """Where a partition folder is copied before its rename to `dest`: a name no reader or writer takes for a
    partition (it starts with a dot)."""
    return dest.parent / f".import-{dest.name}.tmp"


def _copy_folder(src: Path, dest: Path, link: bool, private_bases: set[int] = frozenset(),
                 repair=None) -> Path:
    """`src` copied (or hard-linked) under a temporary name beside `dest`, `repair(tmp)` run on the copy; the
    temporary folder, made durable, is returned for `_rename_into_place`. The files of `private_bases` are
    always copied: they are about to be written."""
    tmp = _temporary_folder(dest)
    if tmp.exists():
        shutil.rmtree(tmp)                    # a previous import interrupted here: never visible
    make_dirs(tmp)
    try:
        for entry in sorted(src.iterdir()):
            _refuse_link(entry)               # checked before; a link planted since is refused too
            if not entry.is_file():
                continue
            target = tmp / entry.name
            parsed = parse_segment_file(entry.name)
            if link and not (parsed and parsed[0] in private_bases):
                try:
                    os.link(entry, target)
                    continue
                except OSError:
                    pass                      # another filesystem: copy instead
            shutil.copyfile(entry, target, follow_symlinks=False)
            with open(target, "rb+") as fh:
                share_created(fh.fileno(), tmp)
                _keep_at_most(fh.fileno(), stat.S_IMODE(entry.lstat().st_mode))
                os.fsync(fh.fileno())
        if repair is not None:
            repair(tmp)
        fsync_dir(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return tmp


def _rename_into_place(tmp: Path, dest: Path, lock_timeout: float | None) -> None:
    """The copy `tmp` renamed to the partition folder `dest`, under the partition's lock; the caller holds the
    topic's writer lock (the order every writer takes them in). The partition appears whole, or not at all."""
    from seglog.indexer.locks import partition_lock

    with partition_lock(dest).acquire(lock_timeout):
        if os.path.lexists(dest):             # a rename onto an empty folder would replace it: checked, never done
            raise KafkaImportError(f"{dest} already exists; nothing more was imported")
        os.rename(tmp, dest)
    fsync_dir(dest.parent)


def _keep_at_most(fd: int, source_mode: int) -> None:
    """A copy is never more readable than its source (a 0600 `.snapshot` stays 0600): the copy's mode, cut to
    the source's bits, plus the owner's read and write (seglog writes its files) and, in a group-shared root
    (fsutil), the group's write where the group may read (the sidecar writes the segments)."""
    allowed = source_mode | stat.S_IRUSR | stat.S_IWUSR | (stat.S_IWGRP if source_mode & stat.S_IRGRP else 0)
    mode = stat.S_IMODE(os.fstat(fd).st_mode)
    if mode & ~allowed:
        os.fchmod(fd, mode & allowed)


def _rebuild_indexes(folder: Path, bases: list[int], missing: list[Path], cfg) -> list[str]:
    """Both indexes of every segment with a missing one, rebuilt from its `.log` (recovery's rebuild:
    `recovery.rebuild_indexes`), as Kafka's broker does when it loads a segment without its index;
    a segment below the last sealed again, the last one's indexes trimmed as a clean close leaves them."""
    from seglog.indexer.compaction.cleaner_checkpoint import may_have_gaps
    from seglog.indexer.recovery import rebuild_indexes
    from seglog.indexer.segment import LogSegment

    targets = sorted({parse_segment_file(f.name)[0] for f in missing})
    report: list[str] = []
    for base in targets:
        i = bases.index(base)
        seg = LogSegment(folder, base, cfg, writable=True, active=True)
        seg.dense = not may_have_gaps(folder, cfg)
        try:
            rebuild_indexes(seg, report)
            seg.load_state()
            if i + 1 < len(bases):
                seg.seal(bases[i + 1])
            else:
                seg.offset_index.trim(fsync=True)
                seg.time_index.trim(fsync=True)
        finally:
            seg.close()
    return report


def import_kafka(source: str | os.PathLike, root: str | os.PathLike, *, topic: str | None = None,
                 link: bool = False, config: Mapping[str, Any] | None = None,
                 abort_open_transactions: bool = False, lock_timeout: float | None = 30.0) -> list[ImportedPartition]:
    """Import the Kafka partition folder(s) at `source` into the seglog root `root` (see the module
    doc). `topic` renames (one source topic) or selects (a broker's log dir holding several);
    `config` overrides `IMPORT_DEFAULTS` and seglog's defaults for the topic record. Refuses, before
    changing anything, a topic that already exists under `root`, a folder that fails its checks, and
    a folder with an open transaction unless `abort_open_transactions` (then each gets the ABORT
    marker Kafka's coordinator writes past transaction.timeout.ms, before the commit). `lock_timeout`: seconds
    to wait for each topic's writer lock and each partition's lock (None: for ever); PartitionLockedError past
    it, with nothing of that topic imported."""
    from seglog.conf.topic_config import validate_topic_config
    from seglog.indexer.checkpoint import CorruptCheckpointError, read_log_start_offsets, update_log_start_offsets
    from seglog.indexer.commit_log import CommitLog
    from seglog.indexer.locks import topic_writer_lock
    from seglog.indexer.topics import check_no_collision, create_topic, load_topic

    root = Path(root)
    folders = kafka_partition_folders(source)
    by_name = {f: parse_partition_dir(f.name) for f in folders}
    source_topics = sorted({t for t, _ in by_name.values()})
    if topic is not None:
        validate_topic(topic)
        if len(source_topics) > 1:
            folders = [f for f in folders if by_name[f][0] == topic]
            if not folders:
                raise KafkaImportError(f"{source}: no partition folder of topic {topic!r} (found: "
                                   f"{', '.join(source_topics)})")
            source_topics = [topic]
    plan: dict[str, list[tuple[int, Path]]] = {}
    for f in folders:
        src_topic, partition = by_name[f]
        plan.setdefault(topic or src_topic, []).append((partition, f))
    cfg = validate_topic_config({**IMPORT_DEFAULTS, **(config or {})}, where="import configuration")
    try:
        read_log_start_offsets(root)          # the import merges into it: it must read
    except CorruptCheckpointError as exc:
        raise KafkaImportError(f"{exc}; nothing was imported (`seglog recover {root}` rewrites it)") from None

    checked: list[ImportedPartition] = []
    facts: dict[tuple[str, int], _Checked] = {}
    for name, parts in plan.items():
        if load_topic(root, name) is not None:
            raise KafkaImportError(f"topic {name!r} already exists under {root}; nothing was imported")
        check_no_collision(root, name, plan)    # 'a.b' next to 'a_b' (Kafka refuses it), before anything is copied
        for partition, f in parts:
            if (root / partition_dir_name(name, partition)).exists():
                raise KafkaImportError(f"{root / partition_dir_name(name, partition)} already exists; "
                                   f"nothing was imported")
            hint = _broker_log_starts(f).get(by_name[f])
            c = _check_partition(f, hint)
            if c.open_transactions and not abort_open_transactions:
                raise OpenTransactionError(
                    f"{f}: {len(c.open_transactions)} transaction(s) without a COMMIT or ABORT marker: "
                    f"{'; '.join(t.describe() for t in c.open_transactions)}. Nothing in seglog would ever end "
                    f"them, so read_committed readers would stop at offset {c.open_transactions[0].first_offset} "
                    f"for good; nothing was imported. Let the broker end them first, or pass "
                    f"--abort-open-transactions to end each with an ABORT marker (what Kafka's coordinator "
                    f"writes past transaction.timeout.ms)", f, c.open_transactions)
            facts[(name, partition)] = c
            checked.append(ImportedPartition(name, partition, f, c.start, c.end, len(c.bases),
                                             tuple(str(p) for p in c.missing_indexes), tuple(c.open_transactions)))

    make_dirs(root)
    copies: dict[tuple[str, int], Path] = {}
    try:
        for p in checked:
            c = facts[(p.topic, p.partition)]
            private = {parse_segment_file(m.name)[0] for m in c.missing_indexes}
            if c.open_transactions:
                private.add(c.bases[-1])          # the ABORT markers are appended to the last segment

            def repair(tmp: Path, c=c) -> None:
                if c.missing_indexes:
                    _rebuild_indexes(tmp, c.bases, c.missing_indexes, cfg)

            copies[(p.topic, p.partition)] = _copy_folder(p.source, root / partition_dir_name(p.topic, p.partition),
                                                          link, private, repair)
        done: list[ImportedPartition] = []
        for name in plan:
            mine = [p for p in checked if p.topic == name]
            # Held from the checks below to the commit: a write's commit or restore of this topic, or a DROP of it,
            # runs wholly before or wholly after (module doc).
            with topic_writer_lock(root, name).acquire(lock_timeout):
                if load_topic(root, name) is not None:
                    raise KafkaImportError(f"topic {name!r} was created under {root} during the import; nothing of "
                                           f"it was imported")
                check_no_collision(root, name, plan)
                for p in mine:
                    _rename_into_place(copies.pop((name, p.partition)), root / partition_dir_name(name, p.partition),
                                       lock_timeout)
                starts = {(name, p.partition): p.log_start_offset for p in mine}
                if starts:
                    update_log_start_offsets(root, starts)
                create_topic(root, name, max(p.partition for p in mine) + 1, cfg.overrides() | {
                    k: cfg[k] for k in IMPORT_DEFAULTS})
                mine = [_abort_open(root, p, lock_timeout) if p.open_transactions else p for p in mine]
                CommitLog(root, name).commit(IMPORT_WRITER, 0, {p.partition: p.log_end_offset for p in mine})
            done += mine
    finally:
        for tmp in copies.values():           # copies not renamed in (a refusal, a lock not taken): never visible
            shutil.rmtree(tmp, ignore_errors=True)
    return done


def _abort_open(root: Path, p: ImportedPartition, lock_timeout: float | None) -> ImportedPartition:
    """The imported partition's open transactions ended with ABORT markers (under its lock), before the
    import's commit makes anything visible."""
    import dataclasses

    from seglog.indexer.root import LogRoot
    from seglog.indexer.transactions import abort_transactions, open_transactions

    with LogRoot(root).open_log(p.topic, p.partition, lock_timeout=lock_timeout) as log:
        ended = abort_transactions(log, open_transactions(log))
        log.flush()
        end = log.log_end_offset
    return dataclasses.replace(p, log_end_offset=end, aborted=tuple(ended))
