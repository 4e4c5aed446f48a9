"""The format versions of seglog's JSON files (docs/format.md, "Format versions"): each file carries one integer,
`version`, that its writer wrote; a reader reads the versions it knows and refuses a newer one with
UnsupportedFormatVersionError naming both versions and the file, never reading it in part (as Delta's protocol
action carries the minimum reader version). A file without the field is an older seglog's: version 1.

The JVM's twin is jvm/.../format/FormatVersion.java; tests/conformance/commit_files.json and topic_metadata.json
pin both."""
from __future__ import annotations

import os

from seglog.errors import UnsupportedFormatVersionError

COMMIT_FILE_VERSION = 1        # <root>/_seglog/commits/<topic>/<seq>.json (indexer/commit_log.py)
TOPIC_METADATA_VERSION = 1     # <root>/_seglog/topics/<topic>.json (indexer/topics.py)


def read_version(doc: dict, supported: int, path: str | os.PathLike, what: str) -> int:
    """The version of a parsed file (`doc`, its JSON object), checked before any other field: 1 when missing;
    ValueError when it is not an integer >= 1 (the caller's corrupt-file error); UnsupportedFormatVersionError
    when it is above `supported`."""
    version = doc.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version < 1 << 63:
        raise ValueError(f"version is {version!r}, not an integer >= 1 within int64")
    if version > supported:
        raise UnsupportedFormatVersionError(
            f"{what} {os.fspath(path)} has format version {version}; this seglog reads up to version {supported}: "
            f"a newer seglog wrote it, so upgrade seglog (the wheel and its jar) to read it")
    return version
