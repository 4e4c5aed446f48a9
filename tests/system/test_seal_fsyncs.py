"""A durable seal of a partition's inactive segments (`Log.seal_inactive`, the sidecar's job) forces each segment
file once: the seal forces the .log and both indexes, and the recovery point raised after it covers those segments
without forcing them again (indexer/log.py `_advance_recovery_point`). Read from strace, for segments already there
at open (a writer killed before its close) and for segments this Log rolled itself."""
from __future__ import annotations

import collections
import subprocess
import sys
import textwrap

from seglog.indexer import Log
from tests.system.syscall_trace import FSYNC, calls, strace

CONFIG = {"segment.bytes": 2048, "index.interval.bytes": 256}


def test_a_durable_seal_forces_each_segment_file_once(tmp_path):
    path = tmp_path / "events-0"
    # a writer that rolls and flushes, then dies without its close: the recovery point stays below its segments
    subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import os
        from seglog.indexer import Log, Record
        log = Log.open({str(path)!r}, {CONFIG!r})
        for i in range(200):
            log.append([Record(value=b"%d" % i + b"x" * 40, timestamp=1_000 + i)])
        log.flush()
        os._exit(0)
    """)], check=True, timeout=120)
    trace = tmp_path / "trace"
    script = textwrap.dedent(f"""
        from seglog.indexer import Log, Record
        with Log.open({str(path)!r}, {CONFIG!r}) as log:
            for i in range(100):                # segments rolled by this Log too, flushed by no one yet
                log.append([Record(value=b"y" * 40, timestamp=5_000 + i)])
            log.roll()
            log.seal_inactive()
    """)
    subprocess.run([strace(), "-f", "--seccomp-bpf", "-qq", "-y", "-e", "signal=none", "-e", "trace=fsync,fdatasync",
                    "-o", str(trace), sys.executable, "-c", script], check=True, capture_output=True, timeout=120)
    forced = collections.Counter(m["path"] for c in calls(trace) if (m := FSYNC.match(c)))
    with Log.open(path, CONFIG, readonly=True) as log:
        bases = log.segment_bases()
    segment_files = [f"{path}/{b:020d}{s}" for b in bases[:-1] for s in (".log", ".index", ".timeindex")]
    assert len(bases) > 4 and all(forced[f] >= 1 for f in segment_files), (bases, forced)
    twice = {f: n for f, n in forced.items() if n > 1 and f in segment_files}
    assert twice == {}, f"segment files forced more than once by one seal: {twice}"
