"""A roll's new segment files are durable with their names: the storage API's flush after a roll fsyncs the
partition folder as well as the files (indexer/segment_list.py `flush_rolled`), as the JVM's publish does. A crash
could otherwise keep the bytes a flush forced and lose the folder's entry naming them. Read from strace: no crash
short of a block-level one would show it. The JVM's publish fsyncs a partition folder only when its entries changed
(a steady micro-batch's does not: tests/system/test_micro_batch_calls.py); a copy that rolls changes them."""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest

from tests.system.syscall_trace import FSYNC, calls, commit_link, spark_calls, strace

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


@pytest.mark.slow
def test_a_format_seglog_copy_that_rolls_fsyncs_the_partition_folder_before_its_commit(tmp_path):
    root = tmp_path / "root"
    # one partition, small segments: the second write's copy onto the first's active segment rolls it
    calls_ = spark_calls(tmp_path, f"""
        from seglog.sink.session import local_session
        spark = local_session("roll-durable")
        df = spark.range(200).coalesce(1).selectExpr("cast(id as string) as key", "repeat('v', 40) as value")
        for _ in range(2):
            (df.write.format("seglog").option("topic", "events").option("partitions", "1")
                .option("segment.bytes", "8192").mode("append").save({str(root)!r}))
        assert spark.read.format("seglog").option("topic", "events").load({str(root)!r}).count() == 400
        spark.stop()
    """, traced="openat,fsync,fdatasync,link,linkat,rename,renameat,renameat2")
    commit = commit_link(root, "events")
    commits = [i for i, c in enumerate(calls_) if commit.search(c)]
    assert len(commits) == 2, f"expected two commits in the trace: {len(commits)}"
    folder = str(root / "events-0")
    made = re.compile(rf'openat\(.*"{re.escape(folder)}/\d{{20}}\.log", [^)]*O_CREAT')
    rolled = [i for i in range(commits[0] + 1, commits[1]) if made.search(calls_[i])]
    assert rolled, "the second write's copy rolled no segment (segment.bytes too large for the test?)"
    synced = [i for i in range(rolled[-1] + 1, commits[1])
              if (m := FSYNC.match(calls_[i])) and m["path"] == folder]
    assert synced, "no fsync of the partition folder between the roll's new segment and the commit"
