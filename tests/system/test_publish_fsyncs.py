"""Issue 41: a format("seglog") publish forces each segment file it makes durable once, and no staging folder. A
write that renames its staged segments in seals the partition's active segment (the previous write's last one); the publish forced
that segment (.log and both indexes) after sealing it, then again when it raised the recovery point over it,
3 fsyncs a partition for nothing. And it fsyncs each partition folder once: the raised recovery point's name is
made durable by the same fsync as the segments' (its own came after, one more journal commit a partition). Read from
the order of the driver JVM's calls under strace, as tests/system/test_new_partition_durable.py reads it (no skip
without strace: that test's rule)."""
from __future__ import annotations

import collections
import re
from pathlib import Path

import pytest

from tests.system.syscall_trace import FSYNC, commit_link, spark_calls


def _two_renaming_writes(tmp_path) -> tuple[list[str], Path, list[int]]:
    """Two writes into a 2-partition topic, every staged segment renamed in; the driver's calls, the root, and the
    indexes of the two commit links in the calls."""
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
    return calls, root, commits


@pytest.mark.slow
def test_a_publish_forces_each_segment_file_once(tmp_path):
    calls, root, commits = _two_renaming_writes(tmp_path)
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


@pytest.mark.slow
def test_a_publish_fsyncs_each_partition_folder_once(tmp_path):
    calls, root, commits = _two_renaming_writes(tmp_path)
    folder = re.compile(rf"^{re.escape(str(root))}/events-\d$")
    for write, (start, end) in enumerate([(0, commits[0]), (commits[0] + 1, commits[1])]):
        synced = collections.Counter(m["path"] for c in calls[start:end] if (m := FSYNC.match(c)) and folder.match(m["path"]))
        assert sorted(synced) == [f"{root}/events-0", f"{root}/events-1"], f"write {write}: folders fsynced {synced}"
        assert set(synced.values()) == {1}, f"write {write}: a partition folder fsynced more than once: {synced}"
    # and the point was raised (its rename made durable by that one fsync): the second write's first segment's base
    for p in (0, 1):
        bases = sorted(int(f.stem) for f in (root / f"events-{p}").glob("*.log"))
        point = (root / f"events-{p}" / "recovery-point-offset-checkpoint").read_text().split()
        assert len(bases) >= 2 and point[-1] == str(bases[-1]), f"partition {p}: point {point}, segments {bases}"


@pytest.mark.slow
def test_a_commit_patches_every_staged_segment_at_once(tmp_path):
    """Each staged segment renamed in gets its base offsets patched in place and its .log forced before its rename.
    The patches of every partition run at once, each on a thread of the commit's pool (a fresh JVM's first write:
    each submission starts a thread), not one partition's after another inside its publish, a chain of fsyncs per
    partition (issue 41); and each one's force still comes before any rename into the partition folders."""
    root = tmp_path / "root"
    calls = spark_calls(tmp_path, f"""
        from seglog.sink.session import local_session
        spark = local_session("patch-at-once")
        # 4 input tasks, keys over both partitions: 8 staged segments, all renamed in (renameMinBytes=0)
        df = spark.range(4000, numPartitions=4).selectExpr("cast(id as string) as key", "cast(id as string) as value")
        (df.write.format("seglog").option("topic", "events").option("partitions", "2")
            .option("renameMinBytes", "0").mode("append").save({str(root)!r}))
        assert spark.read.format("seglog").option("topic", "events").load({str(root)!r}).count() == 4000
        spark.stop()
    """, traced="pwrite64,fsync,fdatasync,rename,renameat,renameat2,link,linkat,mkdir,mkdirat")
    staged_log = re.compile(rf'^(?P<tid>\d+)\s.*?pwrite64\(\d+<(?P<path>{re.escape(str(root))}/_seglog/staging/[^>]+\.log)>')
    patched = collections.defaultdict(set)
    for c in calls:
        if m := staged_log.match(c):
            patched[m["path"]].add(m["tid"])
    assert len(patched) == 8, f"expected 8 staged segments patched: {sorted(patched)}"
    threads = {t for ts in patched.values() for t in ts}
    assert len(threads) == 8, f"the 8 patches ran on {len(threads)} thread(s): {patched}"
    forced = [i for i, c in enumerate(calls) if (m := FSYNC.match(c)) and m["path"] in patched]
    renamed_in = [i for i, c in enumerate(calls) if re.search(rf'rename\w*\(.*"{re.escape(str(root))}/events-\d/\d{{20}}\.log"', c)]
    assert len(renamed_in) == 8 and forced and max(forced) < min(renamed_in), "a staged .log renamed in before its force"
