"""Register a Kafka broker's partition folders as a seglog topic (docs/kafka.md, "Importing a broker's data").

A Kafka partition folder is already seglog's format (the same `.log`, `.index` and `.timeindex`), so an
import copies (or hard-links) the files byte for byte and rewrites nothing. What a Kafka folder lacks
is seglog's metadata: the topic record (partition count, configuration) and a commit log entry, since
readers never read past the committed end offsets (docs/spec.md §4). The import writes both.

Order, so that a crash at any point leaves nothing half visible: every partition's checks first (CRCs,
structure, offsets, leader epochs; nothing is written when one fails), then each partition folder is
copied under a temporary name and renamed into place, then the log start offsets, the topic record,
and last the commit that makes the records visible.

Kafka's other files travel along untouched (`leader-epoch-checkpoint`, which tells seglog the folder
may hold any leader epoch, `partition.metadata`, `.snapshot`, `.txnindex`).
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from seglog.errors import CorruptRecordError, SeglogError
from seglog.indexer.fsutil import fsync_dir
from seglog.indexer.names import META_DIR, log_bases, parse_partition_dir, partition_dir_name, validate_topic

IMPORT_WRITER = "seglog-import"
# An import keeps every record until the user says otherwise: a broker's old data must not be
# deleted by the sidecar's default retention the moment it lands.
IMPORT_DEFAULTS = {"retention.ms": -1, "retention.bytes": -1}


class KafkaImportError(SeglogError):
    """An import was refused; nothing was changed."""


@dataclass(frozen=True)
class ImportedPartition:
    topic: str
    partition: int
    source: Path
    log_start_offset: int
    log_end_offset: int
    segments: int


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
    if not found:
        raise KafkaImportError(f"{src}: no Kafka partition folders (<topic>-<partition>) found")
    return found


def _check_partition(folder: Path, log_start_hint: int | None) -> tuple[int, int, int]:
    """(log start, log end, segments) of a Kafka partition folder, after checking every batch
    (CRCs, structure, dense offsets, leader epochs). Raises KafkaImportError naming the fault."""
    from seglog.indexer.log import Log

    try:
        with Log.open(folder, readonly=True) as log:
            bases = log.segment_bases()
            prev_next = None
            for base in bases:
                seg = log.segment(base)
                scan = seg.scan(0, seg.size, check_crc=True, strict=True)
                if scan.error:
                    raise KafkaImportError(f"{seg.log_path}: {scan.error}; nothing was imported")
                if len(scan.positions):
                    first = int(scan.base_offsets[0])
                    if prev_next is not None and first < prev_next:
                        raise KafkaImportError(f"{seg.log_path}: offsets go backwards across segments; "
                                           f"nothing was imported")
                    prev_next = int(scan.last_offsets[-1]) + 1
            start = bases[0] if bases else 0
            if log_start_hint is not None:
                start = max(start, log_start_hint)
            return start, log.log_end_offset, len(bases)
    except CorruptRecordError as exc:
        raise KafkaImportError(f"{folder}: {exc}; nothing was imported") from None


def _broker_log_starts(folder: Path) -> dict[tuple[str, int], int]:
    """The broker's own log-start-offset-checkpoint (same format as seglog's), when it is there."""
    from seglog.indexer.checkpoint import read_log_start_offsets

    try:
        return read_log_start_offsets(folder.parent)
    except SeglogError:
        return {}


def _copy_folder(src: Path, dest: Path, link: bool) -> None:
    tmp = dest.parent / f".import-{dest.name}.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)                    # a previous import interrupted here: never visible
    tmp.mkdir()
    try:
        for entry in sorted(src.iterdir()):
            if not entry.is_file():
                continue
            target = tmp / entry.name
            if link:
                try:
                    os.link(entry, target)
                    continue
                except OSError:
                    pass                      # another filesystem: copy instead
            shutil.copyfile(entry, target)
            with open(target, "rb+") as fh:
                os.fsync(fh.fileno())
        fsync_dir(tmp)
        os.rename(tmp, dest)                  # the partition appears whole, or not at all
        fsync_dir(dest.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def import_kafka(source: str | os.PathLike, root: str | os.PathLike, *, topic: str | None = None,
                 link: bool = False, config: Mapping[str, Any] | None = None) -> list[ImportedPartition]:
    """Import the Kafka partition folder(s) at `source` into the seglog root `root` (see the module
    doc). `topic` renames (one source topic) or selects (a broker's log dir holding several);
    `config` overrides `IMPORT_DEFAULTS` and seglog's defaults for the topic record. Refuses, before
    changing anything, a topic that already exists under `root` or a folder that fails its checks."""
    from seglog.conf.topic_config import validate_topic_config
    from seglog.indexer.checkpoint import update_log_start_offsets
    from seglog.indexer.commit_log import CommitLog
    from seglog.indexer.topics import create_topic, load_topic

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

    checked: list[ImportedPartition] = []
    for name, parts in plan.items():
        if load_topic(root, name) is not None:
            raise KafkaImportError(f"topic {name!r} already exists under {root}; nothing was imported")
        for partition, f in parts:
            if (root / partition_dir_name(name, partition)).exists():
                raise KafkaImportError(f"{root / partition_dir_name(name, partition)} already exists; "
                                   f"nothing was imported")
            hint = _broker_log_starts(f).get(by_name[f])
            start, end, segments = _check_partition(f, hint)
            checked.append(ImportedPartition(name, partition, f, start, end, segments))

    root.mkdir(parents=True, exist_ok=True)
    for p in checked:
        _copy_folder(p.source, root / partition_dir_name(p.topic, p.partition), link)
    for name in plan:
        mine = [p for p in checked if p.topic == name]
        starts = {(name, p.partition): p.log_start_offset for p in mine}
        if starts:
            update_log_start_offsets(root, starts)
        create_topic(root, name, max(p.partition for p in mine) + 1, cfg.overrides() | {
            k: cfg[k] for k in IMPORT_DEFAULTS})
        CommitLog(root, name).commit(IMPORT_WRITER, 0, {p.partition: p.log_end_offset for p in mine})
    return checked
