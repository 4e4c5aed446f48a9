"""The benchmark method (docs/DEVELOPING.md, "Standards"), in one place for every part of bench/:

1. one process and one session for all cases of a comparison;
2. every case warmed up (run and discarded) before anything is timed;
3. interleaved rounds: each round runs every case once (A, B, A, B, ...; the order alternates from round
   to round so that drift in the machine's load falls on both sides alike);
4. a comparison is the median of the per-round ratios, reported with their min and max;
5. a comparison of writers may settle the machine before every run, untimed (`settle`, e.g. `os.sync`):
   each run then starts with no dirty pages left by the other case, so neither pays for the other's
   deferred writeback (a writer that fsyncs still pays for its own, one that does not still does not).

A case is a callable; it returns None (the call is timed) or the seconds it measured itself (when it
has set-up to leave out of the figure).
"""
from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Callable

Case = Callable[[], "float | None"]


def _time(case: Case) -> float:
    t0 = time.perf_counter()
    measured = case()
    return float(measured) if measured is not None else time.perf_counter() - t0


def interleaved(cases: dict[str, Case], rounds: int, warmup: int = 1,
                settle: Callable[[], None] | None = None) -> dict[str, list[float]]:
    """Seconds per round for each case, after `warmup` discarded runs of every case; `settle` runs,
    untimed, before every run."""
    names = list(cases)

    def run(name: str) -> float:
        if settle is not None:
            settle()
        return _time(cases[name])

    for _ in range(warmup):
        for name in names:
            run(name)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in (names if r % 2 == 0 else reversed(names)):
            times[name].append(run(name))
    return times


def ratio(numerator: list[float], denominator: list[float]) -> dict:
    """numerator[i] / denominator[i] per round: median, min, max (and the rounds' count)."""
    if len(numerator) != len(denominator) or not numerator:
        raise ValueError("a ratio needs the same, non-zero number of rounds on both sides")
    per_round = [a / b for a, b in zip(numerator, denominator)]
    return {"median": statistics.median(per_round), "min": min(per_round), "max": max(per_round),
            "rounds": len(per_round)}


def summary(seconds: list[float]) -> dict:
    return {"median_s": statistics.median(seconds), "min_s": min(seconds), "max_s": max(seconds)}


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system, all threads) a live process has used, from /proc (Linux). A case whose server
    runs on the same cores (a loopback S3 server) is bounded by the CPU both sides need, not only by its wall
    time: this tells that floor."""
    after_name = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(after_name[11]) + int(after_name[12])) / os.sysconf("SC_CLK_TCK")   # utime, stime: fields 14, 15


class CpuMeter:
    """CPU seconds that named processes use over timed spans: `before = meter.read()`, the span, then
    `meter.since(before)` -> {name: seconds}."""

    def __init__(self, pids: dict[str, int]):
        self.pids = dict(pids)

    def read(self) -> dict[str, float]:
        return {name: cpu_seconds(pid) for name, pid in self.pids.items()}

    def since(self, before: dict[str, float]) -> dict[str, float]:
        now = self.read()
        return {name: now[name] - before[name] for name in self.pids}
