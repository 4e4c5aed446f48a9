"""Text generated from a declaration into a document, between two marker lines (README's configuration and
option references): one home for reading and rewriting such a block, so a test can compare it with the
declaration and `--write` can refresh it."""
from __future__ import annotations

from pathlib import Path


def between(text: str, begin: str, end: str) -> str:
    """The block between the markers, without its surrounding blank lines."""
    start, stop = text.index(begin) + len(begin), text.index(end)
    return text[start:stop].strip("\n")


def rewrite_between(path: Path, begin: str, end: str, body: str) -> None:
    """`path` with the block between the markers replaced by `body`."""
    text = path.read_text(encoding="utf-8")
    start, stop = text.index(begin) + len(begin), text.index(end)
    path.write_text(text[:start] + "\n" + body + "\n" + text[stop:], encoding="utf-8")
