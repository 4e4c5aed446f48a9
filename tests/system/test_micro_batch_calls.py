"""Issue 41, the small micro-batch: what one 1,000-row format("seglog") append into an existing 4-partition topic
asks of the file system, counted from the driver JVM's calls under strace (tasks included: local mode), as
tests/system/test_publish_fsyncs.py reads them (no skip without strace: that file's rule). Each count is one cut:
- the write task stages no file: its 4 small segments travel whole in its report (InlineSegmentBudget; before, its
  folder and 3 files a segment, each staged segment's open making the folder again before an earlier cut);
- the root's log-start-offset-checkpoint is read once by the commit (once per partition before);
- the topic's commit log is read once, for the tasks' skip hint at planning: under the writer lock two file checks
  find no commit since, and the commit starts from that state (it was read there again, and by the commit itself);
- the commit file is written and forced while the partitions force their segments, and linked only after all of
  them (it was written after them: one more journal commit to wait for);
- the topic's metadata file is read twice (planning, the commit): the gap rule takes the commit's read (a third);
- the staging run's lock file is opened once, created and locked at once (FileLock.acquireNew: its folder is new):
  it was tried as an existing file first (a failed open), created, closed and opened again;
- no partition folder is fsynced: the copies append to each active segment's existing files, and a folder needs its
  fsync only when its entries changed (StagedPublisher's entriesChanged; one fsync a partition before)."""
from __future__ import annotations

import re

import pytest

from tests.system.syscall_trace import FSYNC, commit_link, spark_calls

TRACED = "openat,getdents64,mkdir,mkdirat,fsync,fdatasync,link,linkat,rename,renameat,renameat2,unlink,unlinkat,flock"
WRITES = 3


@pytest.fixture(scope="module")
def last_write(tmp_path_factory) -> tuple[list[str], str]:
    """The calls of the last of WRITES micro-batches (the first creates the topic), between two marker folders the
    driver makes; and the root."""
    tmp = tmp_path_factory.mktemp("micro-batch-calls")
    root, marks = tmp / "root", tmp / "marks"
    marks.mkdir()
    calls = spark_calls(tmp, f"""
        from seglog.sink.session import local_session
        spark = local_session("micro-batch-calls")
        # one input task, keys spread over the 4 partitions: bench/kafka.py's micro-batch
        df = (spark.range(1000).coalesce(1)
              .selectExpr("cast(id as string) as key", "repeat(cast(id as string), 40) as value").cache())
        df.count()
        mark = spark._jvm.java.io.File
        for v in range({WRITES}):
            if v == {WRITES} - 1:
                mark({str(marks / "start")!r}).mkdir()
            (df.write.format("seglog").mode("append").option("topic", "small").option("partitions", "4")
               .option("txnAppId", "app").option("txnVersion", str(v)).save({str(root)!r}))
        mark({str(marks / "end")!r}).mkdir()
        assert spark.read.format("seglog").option("topic", "small").load({str(root)!r}).count() == {WRITES} * 1000
        spark.stop()
    """, traced=TRACED)
    start = next(i for i, c in enumerate(calls) if f'"{marks / "start"}"' in c)
    end = next(i for i, c in enumerate(calls) if f'"{marks / "end"}"' in c)
    return calls[start + 1:end], str(root)


def _opened(calls: list[str], path: str) -> list[str]:
    return [c for c in calls if re.search(rf'openat\([^"]*"{path}"', c)]


@pytest.mark.slow
def test_a_small_write_stages_no_file(last_write):
    calls, root = last_write
    task = re.compile(rf'mkdir\("{re.escape(root)}/_seglog/staging/[^"]+/t\d+-\d+"')
    made = [c for c in calls if task.search(c)]
    staged = re.compile(rf'openat\([^"]*"{re.escape(root)}/_seglog/staging/[^"]+/t\d+-\d+/[^"]*", [^)]*O_CREAT')
    created = [c for c in calls if staged.search(c)]
    # 4 small staged segments (one per partition, all copied by the driver) travel whole in the task's report
    # (InlineSegmentBudget): before, the task's folder made once and 3 files per segment (.log, .index, .timeindex)
    assert made == [], f"the task's staging folder was made: {made}"
    assert created == [], f"the task created {len(created)} staging file(s): {created}"


@pytest.mark.slow
def test_the_commit_reads_the_log_start_checkpoint_once(last_write):
    calls, root = last_write
    reads = _opened(calls, re.escape(f"{root}/log-start-offset-checkpoint"))
    assert len(reads) == 1, f"log-start-offset-checkpoint opened {len(reads)} times by one write (4 partitions)"


@pytest.mark.slow
def test_the_commit_log_is_read_once_per_write(last_write):
    calls, root = last_write
    reads = _opened(calls, re.escape(f"{root}/_seglog/commits/small/") + r"\d{20}\.json")
    # a listing's first getdents64 returns its entries (the last, 0: the end)
    listing = re.compile(rf"getdents64\(\d+<{re.escape(root)}/_seglog/commits/small>.*= [1-9]")
    listings = [c for c in calls if listing.search(c)]
    # the skip hint at planning: the commit under the writer lock starts from it (3 reads and 3 listings on main)
    assert len(reads) == 1, f"commit files opened {len(reads)} times by one write: {reads}"
    assert len(listings) == 1, f"the commit log listed {len(listings)} times by one write: {listings}"


@pytest.mark.slow
def test_the_commit_file_is_forced_beside_the_segments_and_linked_after_them(last_write):
    calls, root = last_write
    segment = re.compile(rf"^{re.escape(root)}/small-\d/\d{{20}}\.log$")
    forced = [i for i, c in enumerate(calls) if (m := FSYNC.match(c)) and segment.match(m["path"])]
    assert len(forced) == 4, f"expected one .log fsync per partition: {len(forced)}"
    temp = re.compile(rf'openat\([^"]*"{re.escape(root)}/_seglog/commits/small/\.\d{{20}}\.json\.tmp-[^"]*", [^)]*O_CREAT')
    created = [i for i, c in enumerate(calls) if temp.search(c)]
    assert len(created) == 1, f"expected one commit temp file: {[calls[i] for i in created]}"
    # written before the segments are forced (a joined line is placed where its call returned: a segment fsync that
    # started first and returned after the create is after it here too)
    assert created[0] < forced[0], "the commit file was written only after the partitions' segments were forced"
    links = [i for i, c in enumerate(calls) if commit_link(root, "small").search(c)]
    assert len(links) == 1 and links[0] > max(forced), "the commit was linked before every segment was forced"


@pytest.mark.slow
def test_a_steady_micro_batch_fsyncs_no_partition_folder(last_write):
    calls, root = last_write
    folder = re.compile(rf"^{re.escape(root)}/small-\d$")
    forced = [c for c in calls if (m := FSYNC.match(c)) and folder.match(m["path"])]
    # each write after the first appends to the 4 active segments it finds: no file made, renamed or removed there
    assert forced == [], f"a steady micro-batch fsynced {len(forced)} partition folder(s): {forced}"


@pytest.mark.slow
def test_the_commit_reads_the_topic_metadata_once(last_write):
    calls, root = last_write
    reads = _opened(calls, re.escape(f"{root}/_seglog/topics/small.json"))
    # the write's planning reads it (the topic checked before any task runs) and the commit under the writer lock;
    # the gap rule (OffsetGaps) takes the commit's read instead of a third one
    assert len(reads) == 2, f"the topic's metadata file opened {len(reads)} times by one write: {reads}"


@pytest.mark.slow
def test_the_run_lock_is_opened_once(last_write):
    calls, root = last_write
    run_lock = re.escape(f"{root}/_seglog/staging/") + r"[^\"]+/\.run\.lock"
    opens = _opened(calls, run_lock)
    # the run's lock file, new in the run's new folder, is created and opened by one open (O_CREAT|O_EXCL); before,
    # an open that failed (ENOENT), the create, and the open that the lock was taken on
    assert len(opens) == 1, f"the staging run's lock file opened {len(opens)} times: {opens}"
    assert "O_CREAT" in opens[0] and "O_EXCL" in opens[0], opens[0]
