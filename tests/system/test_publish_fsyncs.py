"""Issue 41: a format("seglog") publish forces each segment file it makes durable once, and no staging folder. A
write that renames its staged segments in seals the partition's active segment (the previous write's last one); the publish forced
that segment (.log and both indexes) after sealing it, then again when it raised the recovery point over it,
3 fsyncs a partition for nothing. Read from the order of the driver JVM's calls under strace, as
tests/system/test_new_partition_durable.py reads it (no skip without strace: that test's rule)."""
from __future__ import annotations

import collections
import re

import pytest

from tests.system.syscall_trace import FSYNC, commit_link, spark_calls


@pytest.mark.slow
def test_a_publish_forces_each_segment_file_once(tmp_path):
    root = tmp_path / "root"
    # renameMinBytes=0 (hidden, for tests): every staged segment is renamed in, so the second write seals the
    # segment the first one left active
    calls = spark_calls(tmp_path, f"""
        from seglog.sink.session import local_session
        spark = local_session("publish-fsyncs")
        df = spark.range(2000).selectExpr("cast(id as string) as key", "cast(id as string) as value")
        for _ in range(2):
            (df.write.format("seglog").option("topic", "events").option("partitions", "2")
                .option("renameMinBytes", "0").mode("append").save({str(root)!r}))
        assert spark.read.format("seglog").option("topic", "events").load({str(root)!r}).count() == 4000
        spark.stop()
    """)
    commit = commit_link(root, "events")
    commits = [i for i, c in enumerate(calls) if commit.search(c)]
    assert len(commits) >= 2, f"expected two commits in the trace: {len(commits)}"
    segment = re.compile(rf"^{re.escape(str(root))}/events-\d/\d{{20}}\.(?:log|index|timeindex)$")
    forced = collections.Counter(m["path"] for c in calls[commits[0] + 1:commits[1]]
                                 if (m := FSYNC.match(c)) and segment.match(m["path"]))
    assert forced, "the second write's publish forced no segment file in the partition folders"
    twice = {p: n for p, n in forced.items() if n > 1}
    assert twice == {}, f"segment files forced more than once by one publish: {twice}"
    # a staging run's folders (remade by every write: a run's end removes its writer's empty folders) and lock files'
    # are named by no commit, and are never fsynced into their parents (GroupShared.createScratchDirectories)
    staging = re.compile(rf"^{re.escape(str(root))}/_seglog/staging(?:/[^/.]+|/\.new-[^/.]+)*$")   # folders only
    scratch = [m["path"] for c in calls[commits[0] + 1:commits[1]] if (m := FSYNC.match(c)) and staging.match(m["path"])]
    assert scratch == [], f"the second write fsynced staging folders: {scratch}"
