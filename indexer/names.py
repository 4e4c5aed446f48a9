"""File and folder names of the on-disk layout (docs/spec.md §2.1), and Kafka's topic naming rule."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable

from seglog.errors import InvalidTopicError, SegmentNameError

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"       # renamed first, unlinked after file.delete.delay.ms
CLEANED_SUFFIX = ".cleaned"       # a rewrite in progress (truncation of a straddling batch)
SWAP_SUFFIX = ".swap"             # a finished rewrite waiting to replace the original
META_DIR = "_seglog"              # metadata: topics, commit log, locks
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"

_TOPIC_RE = re.compile(r"[a-zA-Z0-9._-]{1,249}")   # always fullmatch: `$` would let "name\n" through
_PARTITION_DIR_RE = re.compile(r"(?P<topic>[a-zA-Z0-9._-]{1,249})-(?P<partition>\d+)")


def validate_topic(topic: object) -> str:
    """Kafka's rule: [a-zA-Z0-9._-], 1 to 249 characters, not '.' or '..' (so no path leaves the root)."""
    if not isinstance(topic, str) or not _TOPIC_RE.fullmatch(topic) or topic in (".", ".."):
        raise InvalidTopicError(
            f"invalid topic name {topic!r}: a topic is 1 to 249 characters of [a-zA-Z0-9._-], not '.' or '..'")
    return topic


def partition_dir_name(topic: str, partition: int) -> str:
    validate_topic(topic)
    if isinstance(partition, bool) or not isinstance(partition, int) or partition < 0:
        raise InvalidTopicError(f"invalid partition {partition!r} for topic {topic!r}: a partition is an int >= 0")
    return f"{topic}-{partition}"


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """(topic, partition) for a folder named <topic>-<partition>, else None."""
    m = _PARTITION_DIR_RE.fullmatch(name)
    if not m or m.group("topic") in (".", ".."):
        return None
    return m.group("topic"), int(m.group("partition"))


NAME_MAX = 255   # bytes in one path component on Linux filesystems


def short_file_name(name: str, suffix: str) -> str:
    """`name + suffix`, or, when that would pass NAME_MAX (a 249-character topic plus a partition and a
    suffix can), a prefix of `name` plus a hash of all of it: distinct names stay distinct."""
    if len((name + suffix).encode()) <= NAME_MAX:
        return name + suffix
    import hashlib

    digest = hashlib.sha256(name.encode()).hexdigest()[:32]
    return f"{name[:NAME_MAX - len(suffix) - 33]}~{digest}{suffix}"


def segment_file(dir_path: str | os.PathLike, base_offset: int, suffix: str) -> Path:
    return Path(dir_path) / f"{base_offset:020d}{suffix}"


# Every segment file name: 20 digits, then one of these tails (kind, extra suffix). A dict lookup and
# str methods instead of a regex: an open of a 10,000-segment folder parses 30,000 names.
_SEGMENT_TAILS = {f".{kind}{extra}": (kind, extra) for kind in ("log", "index", "timeindex")
                  for extra in ("", DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX)}


MAX_BASE_OFFSET = (1 << 63) - 1
_MAX_STEM = f"{MAX_BASE_OFFSET:020d}"   # 20-digit stems compare as strings as their values do


def parse_segment_file(name: str) -> tuple[int, str, str] | None:
    """(base offset, kind 'log'|'index'|'timeindex', extra suffix '' or '.deleted'...) or None for a
    name that is no segment file. The one rule for segment file names (Java's: SegmentName.java, both
    held to tests/conformance/segment_names.json): a stem of ASCII digits before a segment tail is a
    segment file, and must be exactly 20 digits of at most 2^63-1, else SegmentNameError naming it (Kafka
    parses any such stem as a long and refuses the log when it does not fit)."""
    tail = _SEGMENT_TAILS.get(name[20:])
    digits = name[:20]
    if tail is not None and digits.isascii() and digits.isdigit():
        if digits > _MAX_STEM:
            raise SegmentNameError(f"segment file {name!r}: base offset {digits} is past 2^63-1 "
                                   f"({MAX_BASE_OFFSET}); a segment file name is 20 digits of at most that")
        return int(digits), tail[0], tail[1]
    dot = name.find(".")
    stem = name[:dot]
    if dot > 0 and name[dot:] in _SEGMENT_TAILS and stem.isascii() and stem.isdigit():
        raise SegmentNameError(f"segment file {name!r}: its base offset has {len(stem)} digits; a segment file "
                               f"name is exactly 20 digits (zero-padded) of at most {MAX_BASE_OFFSET}")
    return None


_PLAIN_TAILS = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)


class FolderListing:
    """One listing of a partition folder, every name parsed once: what recovery's steps share (a
    writable open lists the folder once, and again only after a step that changed it). The plain
    segment files (almost every name) are grouped by tail in one pass and their 20-digit stems
    checked in one call per group; only the other names are parsed one by one."""

    def __init__(self, dir_path: str | os.PathLike):
        self.names: list[str] = os.listdir(dir_path)
        names = self.names
        stems: dict[str, list[str]] = {tail: [] for tail in _PLAIN_TAILS}
        rest = []
        group_of = stems.get
        for n in names:          # one pass: a slice and a dict lookup per name
            group = group_of(n[20:])
            if group is None:
                rest.append(n)
            else:
                group.append(n[:20])
        if not all(joined.isascii() and joined.isdigit() for joined in map("".join, stems.values())) \
                or any(s and max(s) > _MAX_STEM for s in stems.values()):
            # A name shaped like a segment's but with a stem that is not 20 ASCII digits, or one past
            # 2^63-1: every name the slow way (parse_segment_file refuses a stem of digits that is no
            # valid base offset; another stem is no segment file).
            stems = {tail: [n[:20] for n in names if n[20:] == tail and parse_segment_file(n)] for tail in _PLAIN_TAILS}
            rest = [n for n in names if not (n[20:] in _PLAIN_TAILS and parse_segment_file(n))]
        logs, indexes, times = (set(stems[t]) for t in _PLAIN_TAILS)
        self.bases: list[int] = sorted(map(int, logs))          # a segment exists when its .log does
        self.indexed: set[int] = set(map(int, logs & indexes & times))   # bases with all three files
        # Index files whose .log is missing (a crash between their creation and the .log's).
        self.orphan_indexes: list[str] = sorted([f"{s}{INDEX_SUFFIX}" for s in indexes - logs]
                                                + [f"{s}{TIME_INDEX_SUFFIX}" for s in times - logs])
        self.extras: list[tuple[str, int, str, str]] = []   # (name, base, kind, extra suffix): .deleted, .swap...
        self.others: list[str] = []                          # every name that is no segment file
        for n in rest:
            parsed = parse_segment_file(n)
            if parsed is None:
                self.others.append(n)
            else:
                self.extras.append((n, *parsed))
        self.swaps: list[int] = [b for _, b, kind, extra in self.extras if kind == "log" and extra == SWAP_SUFFIX]

    def with_extra(self, extra: str) -> list[tuple[str, int, str, str]]:
        return [f for f in self.extras if f[3] == extra]


def log_bases(dir_path: str | os.PathLike) -> list[int]:
    """Base offsets of the segments in a partition folder, sorted: a segment exists when its .log
    does (index files alone, or `.deleted` ones, are not segments)."""
    return FolderListing(dir_path).bases


def log_bases_and_swaps(dir_path: str | os.PathLike) -> tuple[list[int], list[int]]:
    """`log_bases`, and from the same listing the bases of `.log.swap` files: a clean or merge being
    swapped in (docs/spec.md §3.9), whose group a listing taken now may lack in part or whole."""
    listing = FolderListing(dir_path)
    return listing.bases, listing.swaps


def colliding_topic(topic: str, existing: Iterable[str]) -> str | None:
    """Kafka's `Topic.hasCollision`: '.' and '_' name one metric, so a new topic that differs from an existing one
    only there collides with it (Kafka refuses it: "collides with existing topics"). The existing topic it
    collides with (the first in sorted order), or None; a topic never collides with itself."""
    key = topic.replace(".", "_")
    return next((t for t in sorted(existing) if t != topic and t.replace(".", "_") == key), None)
