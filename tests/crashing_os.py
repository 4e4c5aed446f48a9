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
