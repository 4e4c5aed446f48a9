"""Writer names a user may give (`SegmentLogSink(writer_id=)`, the write's `writerId`/`txnAppId`): the Python
half of one rule whose home on the JVM is `WriterIds` (tests/conformance/writer_ids.json pins both).

The commit log's skip rule compares a version only with the same writer's last one, so seglog's own writers
(a plain append's counter, `@append...`) live where no user name reaches ('@' is outside the allowed set), and
the names earlier versions used for their own writers (`append`, `default`, `seglog-import`) are refused by
name: an upgraded commit log still holds them. `.` and `..` are refused: a writer names a staging folder.
"""
from __future__ import annotations

import re

from seglog.sink.input_schema import SinkInputError

_USER = re.compile(r"[A-Za-z0-9._-]{1,200}")   # fullmatch: `$` lets "id\n" through
RESERVED = frozenset({"append", "default", "seglog-import", ".", ".."})


def refusal(name: object) -> str | None:
    """None if `name` is a writer a user may name, else why not."""
    if not isinstance(name, str) or not _USER.fullmatch(name):
        return "allowed: 1 to 200 characters of [A-Za-z0-9._-]"
    if name in RESERVED:
        return (f"reserved: {', '.join(sorted(RESERVED))} name seglog's own writers (plain appends, calls outside a "
                f"query, imports) in commit logs of earlier versions; give another name")
    return None


def check_writer_id(name: object, where: str) -> str:
    why = refusal(name)
    if why is not None:
        raise SinkInputError(f"{where} = {name!r}; {why}")
    return name  # type: ignore[return-value]
