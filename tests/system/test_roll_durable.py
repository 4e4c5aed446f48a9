"""A roll's new segment files are durable with their names: the storage API's flush after a roll fsyncs the
partition folder as well as the files (indexer/segment_list.py `flush_rolled`), as the JVM's publish does. A crash
could otherwise keep the bytes a flush forced and lose the folder's entry naming them. Read from strace: no crash
short of a block-level one would show it."""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap

from tests.system.syscall_trace import calls, strace

CONFIG = {"segment.bytes": 2048, "index.interval.bytes": 256}


def test_a_flush_after_a_roll_fsyncs_the_partition_folder(tmp_path):
    path = tmp_path / "events-0"
    marker = tmp_path / "flushed"
    trace = tmp_path / "trace"
    script = textwrap.dedent(f"""
        import os
        from seglog.indexer import Log, Record
        log = Log.open({str(path)!r}, {CONFIG!r})
        log.append([Record(value=b"a" * 40, timestamp=1_000)])
        log.flush()
        log.roll()
        log.append([Record(value=b"b" * 40, timestamp=2_000)])
        log.flush()
        fd = os.open({str(marker)!r}, os.O_CREAT | os.O_WRONLY)   # the flush has returned
        os.fsync(fd)
        os._exit(0)                                              # no close: nothing after the flush counts
    """)
    subprocess.run([strace(), "-f", "--seccomp-bpf", "-qq", "-y", "-e", "signal=none", "-e",
                    "trace=openat,fsync,fdatasync", "-o", str(trace), sys.executable, "-c", script],
                   check=True, capture_output=True, timeout=120)
    lines = calls(trace)
    second = re.compile(rf'openat\(.*"{re.escape(str(path))}/00000000000000000001\.log", [^)]*O_CREAT')
    created = next(i for i, c in enumerate(lines) if second.search(c))
    done = next(i for i, c in enumerate(lines) if re.search(rf"fsync\(\d+<{re.escape(str(marker))}>", c))
    folder = re.compile(rf"f(?:data)?sync\(\d+<{re.escape(str(path))}>\)")
    assert created < done
    assert any(folder.search(c) for c in lines[created:done]), \
        "no fsync of the partition folder between the roll's new segment and the flush's return:\n" + \
        "\n".join(lines[created:done])
