"""THE crash test: a streaming query through the sink, SIGKILLed (JVM included) at random moments and
restarted from its checkpoint until all input is in: every row exactly once, offsets dense, files sound."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from seglog.indexer.commit_log import CommitLog
from seglog.indexer.codec.compression import CODEC_IDS
from seglog.indexer.log import Log
from seglog.indexer.codec.records import scan_batches

pytestmark = [pytest.mark.spark, pytest.mark.slow]

FILES, ROWS = 24, 200          # enough micro-batches that three kills land before the stream ends
PARTITIONS = 3

CHILD = textwrap.dedent("""
    import sys
    from seglog.sink.session import local_session
    from seglog.sink.segment_log_sink import SegmentLogSink
    src, root, ckpt, rename_min, codec = sys.argv[1:6]
    spark = local_session("seglog-crash")
    stream = (spark.readStream.schema("k string, v string").option("maxFilesPerTrigger", 1).json(src)
              .selectExpr("k AS key", "v AS value"))
    sink = SegmentLogSink(root, topic="ev", partitions=%d, config={"segment.bytes": 8192, "compression.type": codec},
                          rename_min_bytes=int(rename_min))
    q = (stream.writeStream.foreachBatch(sink).option("checkpointLocation", ckpt)
         .trigger(availableNow=True).start())
    q.awaitTermination()
    print("DONE", flush=True)
""" % PARTITIONS)


def _start(script, src, root, ckpt, log, rename_min, codec):
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.Popen([sys.executable, str(script), str(src), str(root), str(ckpt), str(rename_min), codec],
                            stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True, env=env)


KILLS = int(os.environ.get("SEGLOG_CRASH_KILLS", "3"))


# The JVM write path both ways: staged segments copied onto the active segment (micro-batches), and
# renamed in as segments with their offsets patched (rename_min_bytes=0: every staged segment); and
# a compressed topic (the tasks compress; renamed in as they are), with fewer kills.
@pytest.mark.parametrize("rename_min,codec", [(1 << 20, "uncompressed"), (0, "uncompressed"), (0, "zstd")],
                         ids=["copy", "rename", "rename-zstd"])
def test_sigkill_anywhere_loses_nothing_duplicates_nothing(tmp_path, rename_min, codec):
    kills_wanted = KILLS if codec == "uncompressed" else max(1, KILLS - 1)
    rng = random.Random(int(os.environ.get("SEGLOG_CRASH_SEED", time.time())))
    src, root, ckpt = tmp_path / "in", tmp_path / "log", tmp_path / "ckpt"
    src.mkdir()
    for i in range(FILES):
        f = src / f"part-{i:02d}.json"
        f.write_text("".join(json.dumps({"k": f"{i}-{j}", "v": f"value-{i}-{j}" * 3}) + "\n" for j in range(ROWS)))
        os.utime(f, (1_700_000_000 + i, 1_700_000_000 + i))
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    kills = 0
    with open(tmp_path / "child.log", "ab") as log:
        for attempt in range(4 * kills_wanted):
            proc = _start(script, src, root, ckpt, log, rename_min, codec)
            if kills < kills_wanted:
                # wait until this run has committed something new (so the kill lands mid-stream), then
                # kill at a random moment of the following batches
                seq0 = (CommitLog(root, "ev").latest() or type("S", (), {"seq": -1})).seq
                deadline = time.monotonic() + 120
                while proc.poll() is None and time.monotonic() < deadline:
                    s = CommitLog(root, "ev").latest()
                    if s is not None and s.seq > seq0:
                        break
                    time.sleep(0.05)
                time.sleep(rng.uniform(0.0, 1.0))
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    kills += 1
                    continue
            assert proc.wait(timeout=300) == 0, (tmp_path / "child.log").read_text()[-3000:]
            if kills >= kills_wanted:
                break
    print(f"sink crash test ({'rename' if rename_min == 0 else 'copy'}, {codec}): {kills} SIGKILLs, "
          f"{attempt + 1} runs")
    assert kills >= kills_wanted
    ends = CommitLog(root, "ev").end_offsets()
    seen = []
    for p in range(PARTITIONS):
        with Log.open(root / f"ev-{p}") as plog:
            assert plog.verify() == []
            recs = list(plog.read(0, ends[p]))
        assert [r.offset for r in recs] == list(range(ends[p]))        # dense from 0
        data = b"".join(f.read_bytes() for f in sorted((root / f"ev-{p}").glob("*.log")))
        codecs = {h.attributes & 7 for h in scan_batches(data, 0).headers}
        assert codecs == {CODEC_IDS.get(codec, 0)}, codecs
        seen += [r.key.decode() for r in recs]
    want = [f"{i}-{j}" for i in range(FILES) for j in range(ROWS)]
    assert len(seen) == len(want) and sorted(seen) == sorted(want)     # exactly once
