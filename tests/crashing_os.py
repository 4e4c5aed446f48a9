"""`os` as crash-safe file code sees it in a fault test: the n-th `os.replace` raises `Crash` instead
of renaming (the cleaner's and the merge's swap, docs/spec.md §3.9), every other call is the real one."""
from __future__ import annotations

import os


class Crash(Exception):
    pass


class CrashingOs:
    """Fails the n-th os.replace (0-based); counts the renames done in `calls`."""

    def __init__(self, n: int):
        self.n = n
        self.calls = 0

    def replace(self, a, b):
        if self.calls == self.n:
            raise Crash(f"crash before rename {self.n}: {a} -> {b}")
        self.calls += 1
        return os.replace(a, b)

    def __getattr__(self, name):
        return getattr(os, name)


def abandon(log) -> None:
    """What a killed process leaves of an open writable Log: nothing closed cleanly, its lock gone."""
    log._segments.close_all()
    log._closed = True
    log._lock.release()


def run_crashing_at(monkeypatch, n: int, path, cfg, work) -> bool:
    """Open `path` writable, run `work(log)` with the n-th rename of the swap failing (in clean_swap
    and in recovery), and leave what a killed process leaves. Returns whether the crash happened."""
    from seglog.indexer import Log, recovery
    from seglog.indexer.compaction import clean_swap

    fake = CrashingOs(n)
    monkeypatch.setattr(clean_swap, "os", fake)
    monkeypatch.setattr(recovery, "os", fake)
    log = Log.open(path, cfg)
    try:
        work(log)
        crashed = False
    except Crash:
        crashed = True
    abandon(log)
    monkeypatch.undo()
    return crashed
