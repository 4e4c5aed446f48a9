"""A folder seglog makes is durable in its parent before anything is put in it (indexer/fsutil.py's make_dirs,
the JVM's GroupShared.createDirectories). A folder's own fsync covers only its entries, not its name in its
parent: a first write that fsynced its segment files and commit but not the root after making `<topic>-<p>`
(or `_seglog/commits/<topic>`) could, after a crash on a file system that does not order directory updates,
lose the folder the commit names. A lost directory entry needs a block-level crash to show, so this reads the
order of the calls instead: each public write path runs in a real process under strace, and every folder it
made under the root must have had its parent fsynced after its mkdir and before the write's first data fsync
(the Python API) or its commit (format("seglog")).

Needs strace (scripts/debian-packages.sh installs Debian's, run by scripts/setup-test.sh); without it the
test fails, it never skips."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.system.syscall_trace import FSYNC, MKDIR, commit_link, spark_calls, strace
from tests.system.syscall_trace import calls as traced_calls

# made per write and never named by a commit: their loss in a crash loses nothing (StagingRuns, locks.py)
UNCOMMITTED = ("_seglog/staging", "_seglog/locks")

def _unsynced_folders(calls: list[str], root: Path, until: re.Pattern) -> tuple[list[str], bool]:
    """The folders made under `root` (the uncommitted ones aside) whose parent had no fsync after their mkdir
    and before the first call matching `until`; and whether `until` was reached at all."""
    made: dict[str, bool] = {}          # folder -> its parent fsynced since
    for call in calls:
        if until.search(call):
            return [f for f, synced in made.items() if not synced], True
        if m := MKDIR.match(call):
            path = m["path"]
            inside = os.path.relpath(path, root)
            if not inside.startswith("..") and inside != "." and not inside.startswith(UNCOMMITTED):
                made[path] = False
        elif m := FSYNC.match(call):
            for folder in made:
                if os.path.dirname(folder) == m["path"]:
                    made[folder] = True
    return [f for f, synced in made.items() if not synced], False


def test_python_api_makes_a_new_partition_folder_durable_before_its_first_record(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    trace = tmp_path / "trace"
    script = textwrap.dedent(f"""
        from seglog.indexer import Log, Record
        with Log.open({str(root / 'events-0')!r}) as log:
            log.append([Record(key=b"k", value=b"v", timestamp=1_700_000_000_000)])
    """)
    subprocess.run([strace(), "-f", "--seccomp-bpf", "-qq", "-y", "-e", "signal=none", "-e",
                    "trace=mkdir,mkdirat,fsync,fdatasync", "-o", str(trace), sys.executable, "-c", script],
                   check=True, capture_output=True, timeout=120)
    calls = traced_calls(trace)
    # the first record's data fsync: everything the folder must hold by then
    first_data = re.compile(rf"f(?:data)?sync\(\d+<{re.escape(str(root / 'events-0'))}/\d+\.log>")
    unsynced, reached = _unsynced_folders(calls, root, first_data)
    assert reached, "the append's fsync of its segment was not seen in the trace:\n" + "\n".join(calls[-40:])
    assert any(MKDIR.match(c) and c.count(f'"{root / "events-0"}"') for c in calls), "events-0 was not made here"
    assert unsynced == [], f"folders made without an fsync of their parent before the first record's: {unsynced}"


@pytest.mark.slow
def test_format_seglog_write_makes_new_folders_durable_before_its_commit(tmp_path):
    """The JVM's write: a new topic's partition folders and its commit-log folder, made by the driver's
    publish and commit (StagedPublisher, CommitLogWriter), in a Spark session whose JVM runs under strace."""
    root = tmp_path / "root"
    calls = spark_calls(tmp_path, f"""
        from seglog.sink.session import local_session
        from seglog.source import register
        spark = local_session("durable-folders")
        register(spark)
        (spark.range(100).selectExpr("cast(id as string) as value").write.format("seglog")
            .option("topic", "events").option("partitions", "3").mode("append").save({str(root)!r}))
        assert spark.read.format("seglog").option("topic", "events").load({str(root)!r}).count() == 100
        spark.stop()
    """)
    unsynced, reached = _unsynced_folders(calls, root, commit_link(root, "events"))
    assert reached, "the commit's link was not seen in the trace"
    made = [c for c in calls if MKDIR.match(c) and re.search(r'/(events-\d|commits/events)"', c)]
    assert len(made) == 4, f"expected the 3 partition folders and the commit-log folder made by this write: {made}"
    assert unsynced == [], f"folders made without an fsync of their parent before the commit: {unsynced}"


@pytest.mark.slow
def test_format_seglog_first_write_fsyncs_the_root_once_for_its_new_partition_folders(tmp_path):
    """Issue 41: a first write into 8 new partitions makes their folders together (DriverCommit, GroupShared
    .createSiblings) and fsyncs the root once for all of them, after the last mkdir and before any file goes in
    one; it fsynced the root once per partition, at the head of each partition's publish."""
    root = tmp_path / "root"
    calls = spark_calls(tmp_path, f"""
        from seglog.sink.session import local_session
        spark = local_session("sibling-folders")
        (spark.range(1000).selectExpr("cast(id as string) as key", "cast(id as string) as value").write
            .format("seglog").option("topic", "events").option("partitions", "8").mode("append").save({str(root)!r}))
        spark.stop()
    """)
    partition = re.compile(rf'"{re.escape(str(root))}/events-\d"')
    commit = commit_link(root, "events")
    first = next(i for i, c in enumerate(calls) if MKDIR.match(c) and partition.search(c))
    end = next(i for i, c in enumerate(calls) if commit.search(c))
    window = calls[first:end]
    made = [c for c in window if MKDIR.match(c) and partition.search(c)]
    root_syncs = [c for c in window if (m := FSYNC.match(c)) and m["path"] == str(root)]
    assert len(made) == 8, made
    assert len(root_syncs) == 1, f"the root fsynced {len(root_syncs)} times for 8 new partition folders: {root_syncs}"
    unsynced, reached = _unsynced_folders(calls, root, commit)
    assert reached and unsynced == [], unsynced
