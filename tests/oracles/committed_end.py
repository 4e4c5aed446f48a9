"""Rolling a partition back to its committed end (docs/spec.md §4): the test oracle of the JVM's
format.CommittedEndRollBack (docs/internals.md "Test oracles"), which the write's driver runs.

Records past a partition's committed end belong to no committed batch: a delivery that crashed, or
one that was refused, wrote them. They are cut (a crash-safe truncation, docs/spec.md §3.6) and
nothing below the committed end changes; a truncation that takes appends back leaves the files byte
for byte as they were before them (docs/format.md "Time index").
"""
from __future__ import annotations


def roll_back_to_committed(log, committed: int, *, flush: bool = False) -> bool:
    """Cut `log` (open writable, its lock held) back to `committed` if it ends past it; returns
    whether it cut. `flush` fsyncs the cut log before returning (a sink about to commit on top)."""
    if log.log_end_offset <= committed:
        return False
    log.truncate_to(committed)
    if flush:
        log.flush()
    return True
