"""One page of the console's record browser: records of one partition from an offset or a timestamp.

The one console route that reads files: it opens the one partition asked for, read-only (both tiers
when it has tiered segments, as `seglog dump` and the Python reader do), never past the topic's
committed end (docs/spec.md §4), and decodes at most `limit` records. Keys, values and headers are
shown as text, JSON or hex, each cut at `max_bytes`; a page's templates escape every byte of them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

FORMATS = ("text", "json", "hex")


@dataclass(frozen=True)
class ShownRecord:
    offset: int
    timestamp: int
    key: str
    value: str
    headers: tuple[tuple[str, str], ...]
    value_bytes: int            # the value's whole length (-1: null)


@dataclass(frozen=True)
class RecordPage:
    records: tuple[ShownRecord, ...]
    start: int                  # the first offset asked for (after a timestamp lookup)
    next_offset: int | None     # where the next page starts; None: the committed end is reached
    log_start: int
    end: int                    # the committed end the read stopped at


def read_page(root_path, topic: str, partition: int, cfg, *, offset: int | None, timestamp: int | None, limit: int,
              fmt: str, max_bytes: int, store=None) -> RecordPage:
    from seglog.indexer.commit_log import CommitLog
    from seglog.indexer.log import Log
    from seglog.indexer.names import partition_dir_name
    from seglog.indexer.remote.metadata import metadata_path
    from seglog.indexer.remote.tiered_log import TieredLog

    if metadata_path(root_path, topic, partition).exists():
        log = TieredLog(root_path, topic, partition, cfg, store=store)
    else:
        log = Log.open(root_path / partition_dir_name(topic, partition), cfg, readonly=True)
    with log:
        committed = CommitLog(root_path, topic).end_offsets().get(partition)
        end = log.log_end_offset if committed is None else min(committed, log.log_end_offset)
        start = log.log_start_offset
        if timestamp is not None:
            found = log.offset_for_timestamp(timestamp)
            first = end if found is None else found
        else:
            first = start if offset is None else offset
        first = min(max(first, start), end)
        shown: list[ShownRecord] = []
        last = None
        if first < end:
            for rec in log.read(first, end):
                if len(shown) == limit:
                    break
                shown.append(_show(rec, fmt, max_bytes))
                last = rec.offset
        next_offset = None if last is None or last + 1 >= end or len(shown) < limit else last + 1
        return RecordPage(tuple(shown), first, next_offset, start, end)


def _show(rec, fmt: str, max_bytes: int) -> ShownRecord:
    return ShownRecord(rec.offset, rec.timestamp if rec.timestamp is not None else -1,
                       render(rec.key, fmt, max_bytes), render(rec.value, fmt, max_bytes),
                       tuple((_text(name.encode("utf-8", "replace"), max_bytes), render(v, fmt, max_bytes))
                             for name, v in rec.headers),
                       -1 if rec.value is None else len(rec.value))


def render(data: bytes | None, fmt: str, max_bytes: int) -> str:
    """Bytes as text (non-printable characters escaped), pretty JSON (text when it is not JSON), or hex."""
    if data is None:
        return "null"
    cut = data[:max_bytes]
    more = f" … ({len(data)} bytes)" if len(data) > max_bytes else ""
    if fmt == "hex":
        return cut.hex(" ") + more
    if fmt == "json" and not more:
        try:
            return json.dumps(json.loads(data), indent=2, ensure_ascii=False)
        except (ValueError, RecursionError):
            pass
    return _text(cut, max_bytes) + more


def _text(data: bytes, max_bytes: int) -> str:
    text = data[:max_bytes].decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() or c in "\n\t" else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}"
                   for c in text)
