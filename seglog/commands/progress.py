"""A progress bar on stderr for long work, drawn only when stderr is a terminal (stdlib only)."""
from __future__ import annotations

import sys
import time
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")
_WIDTH = 30
_MIN_INTERVAL = 0.1       # seconds between redraws


def progress(items: Iterable[T], total: int, label: str, *, stream=None) -> Iterator[T]:
    """Yield `items`, drawing `label [#####.....] i/total` on a terminal; silent otherwise (pipes,
    files, tests), so the command's own output stays clean."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    if total <= 1 or not (isatty and isatty()):
        yield from items
        return
    last = 0.0
    done = 0

    def draw(final: bool = False) -> None:
        filled = _WIDTH * done // total
        stream.write(f"\r{label} [{'#' * filled}{'.' * (_WIDTH - filled)}] {done}/{total}")
        if final:
            stream.write("\r" + " " * (len(label) + _WIDTH + 2 * len(str(total)) + 6) + "\r")
        stream.flush()

    try:
        for item in items:
            now = time.monotonic()
            if now - last >= _MIN_INTERVAL:
                draw()
                last = now
            yield item
            done += 1
    finally:
        draw(final=True)
