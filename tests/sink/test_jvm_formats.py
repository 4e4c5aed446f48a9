"""The JVM's writers of the shared formats against the Python core's (issue 25: the driver's commit moves
to the JVM, and the Python sink, sidecar and tools keep writing the same files). Each test writes with
one side and reads, verifies or contends with the other: the commit log (seq files, link-to-publish,
conflict re-merge, retain), the flock locks, topic metadata and configuration, the roll back to the
committed end and the publish of staged segments by rename."""
from __future__ import annotations

import json
import shutil
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from seglog.conf.topic_config import validate_topic_config
from seglog.errors import PartitionLockedError
from seglog.indexer import Record
from tests.oracles.committed_end import roll_back_to_committed
from seglog.indexer.log import Log
from tests.oracles.staged import publish
from tests.sink.jvm_stage import stage_config, staged_by_slot
from seglog.indexer.commit_log import CommitConflictError, CommitLog, commits_dir
from seglog.indexer.locks import FileLock, lock_path
from tests import jvm_format_tool as tool

TOPIC = "events"


def _python_bytes(doc: dict) -> bytes:
    """The bytes the Python core writes for a state (CommitLog._publish)."""
    return json.dumps(doc, sort_keys=True).encode()


# ------------------------------------------------------------------ commit log

def test_jvm_commits_read_by_the_python_core_byte_for_byte(tmp_path):
    tool.run("commit", tmp_path, TOPIC, "q1", 0, "false", 100, "0=10", "2=5")
    tool.run("commit", tmp_path, TOPIC, "q2", 7, "false", 100, "1=3")
    tool.run("commit", tmp_path, TOPIC, "q1", 1, "false", 100, "0=12", "10=1")
    log = CommitLog(tmp_path, TOPIC)
    state = log.latest()
    assert (state.seq, state.writer_id, state.batch_id) == (2, "q1", 1)
    assert state.end_offsets == {0: 12, 1: 3, 2: 5, 10: 1}       # carried forward, partition 10 added
    assert state.writers == {"q1": 1, "q2": 7}
    assert [s.seq for s in log.history()] == [0, 1, 2]
    for s in log.history():   # each file is what the Python core would have written for its state
        assert (commits_dir(tmp_path, TOPIC) / f"{s.seq:020d}.json").read_bytes() == _python_bytes(s.to_json())
    assert log.last_batch("q1") == 1 and log.last_batch("q2") == 7


def test_python_commits_read_and_merged_by_the_jvm(tmp_path):
    log = CommitLog(tmp_path, TOPIC)
    log.commit("py", 4, {0: 100, 1: 50})
    log.commit("operator", -1, {1: 40}, allow_lower=True)
    seen = tool.run("latest", tmp_path, TOPIC)
    assert seen == log.latest().to_json()
    tool.run("commit", tmp_path, TOPIC, "jvm", 0, "false", 100, "2=9")
    state = log.latest()
    assert state.end_offsets == {0: 100, 1: 40, 2: 9}
    assert state.writers == {"py": 4, "operator": -1, "jvm": 0}
    assert tool.run("latest", tmp_path / "nothing", TOPIC) is None


def test_a_jvm_commit_never_lowers_an_end_unless_asked(tmp_path):
    CommitLog(tmp_path, TOPIC).commit("py", 0, {0: 100})
    err = tool.run("commit", tmp_path, TOPIC, "jvm", 0, "false", 100, "0=99", ok=False)
    assert err["error"] == "CommitConflictException"
    assert "would lower committed end offsets" in err["message"] and "0: (100, 99)" in err["message"]
    assert CommitLog(tmp_path, TOPIC).latest().seq == 0            # refused: nothing written
    tool.run("commit", tmp_path, TOPIC, "operator", -1, "true", 100, "0=99")
    assert CommitLog(tmp_path, TOPIC).end_offsets() == {0: 99}
    with pytest.raises(CommitConflictError):                      # and the Python side keeps its rule on top
        CommitLog(tmp_path, TOPIC).commit("py", 1, {0: 98})


def test_bad_commits_are_refused_by_name(tmp_path):
    err = tool.run("commit", tmp_path, TOPIC, "jvm", 0, "false", 100, "0=-1", ok=False)
    assert err["error"] == "IllegalArgumentException" and "end offset -1 for partition 0" in err["message"]
    err = tool.run("commit", tmp_path, "../x", "jvm", 0, "false", 100, "0=1", ok=False)
    assert "invalid topic name" in err["message"]
    assert CommitLog(tmp_path, TOPIC).latest() is None


def test_the_jvm_keeps_the_last_retain_files(tmp_path):
    for batch in range(6):
        tool.run("commit", tmp_path, TOPIC, "jvm", batch, "false", 3, f"0={batch + 1}")
    log = CommitLog(tmp_path, TOPIC)
    assert [s.seq for s in log.history()] == [3, 4, 5]
    assert log.latest().end_offsets == {0: 6}
    assert not [p for p in commits_dir(tmp_path, TOPIC).iterdir() if p.name.startswith(".")]   # no temp files


def test_concurrent_jvm_and_python_committers_lose_nothing(tmp_path):
    """Two JVMs and the Python core commit at once, each its own partition and writer: every link that
    lost its seq re-read and merged again, so the newest state holds all of them and no seq is skipped."""
    count = 25
    procs = [subprocess.Popen(tool.command("commit-series", tmp_path, TOPIC, f"jvm{p}", p, count),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for p in (0, 1)]

    def python_series():
        log = CommitLog(tmp_path, TOPIC)
        for i in range(count):
            log.commit("py", i, {2: i + 1})

    t = threading.Thread(target=python_series)
    t.start()
    t.join()
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    log = CommitLog(tmp_path, TOPIC)
    state = log.latest()
    assert state.end_offsets == {0: count, 1: count, 2: count}
    assert state.writers == {"jvm0": count - 1, "jvm1": count - 1, "py": count - 1}
    assert state.seq == 3 * count - 1
    history = log.history()
    assert [s.seq for s in history] == list(range(3 * count - 100 if 3 * count > 100 else 0, 3 * count))
    for before, after in zip(history, history[1:]):            # each state carries every end forward
        assert all(after.end_offsets.get(p, 0) >= o for p, o in before.end_offsets.items())


# ------------------------------------------------------------------ locks

def test_lock_paths_agree_even_for_long_names(tmp_path):
    for name in ("events-3", "events.writer", "t" * 249 + "-12", "t" * 249 + ".writer"):
        assert tool.run("lock-path", tmp_path, name) == str(lock_path(tmp_path, name))


def test_a_python_flock_holder_blocks_the_jvm(tmp_path):
    with FileLock(lock_path(tmp_path, "events-0")).acquire(0):
        err = tool.run("lock", tmp_path, "events-0", 0, ok=False)
        assert err["error"] == "LockedException" and "events-0" in err["message"]
    holder = subprocess.Popen(tool.command("lock", tmp_path, "events-0", 0), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert json.loads(holder.stdout.readline()) == {"locked": True}   # released: the JVM gets it
    finally:
        holder.communicate("\n", timeout=60)


def test_a_jvm_holder_blocks_python_until_it_releases_or_dies(tmp_path):
    for ending in ("release", "kill"):
        holder = subprocess.Popen(tool.command("lock", tmp_path, "events-0", 0), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert json.loads(holder.stdout.readline()) == {"locked": True}
            with pytest.raises(PartitionLockedError):
                FileLock(lock_path(tmp_path, "events-0")).acquire(0)
            if ending == "release":
                holder.stdin.write("\n")
                holder.stdin.flush()
                assert json.loads(holder.stdout.readline()) == {"released": True}
            else:
                holder.send_signal(signal.SIGKILL)   # the kernel drops a dead process's flock
            holder.wait(timeout=60)
        finally:
            if holder.poll() is None:
                holder.kill()
        with FileLock(lock_path(tmp_path, "events-0")).acquire(5):
            pass


def test_two_jvm_holders_exclude_each_other(tmp_path):
    holder = subprocess.Popen(tool.command("lock", tmp_path, "events.writer", 0), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert json.loads(holder.stdout.readline()) == {"locked": True}
        err = tool.run("lock", tmp_path, "events.writer", 100, ok=False)
        assert "gave up after 0.1 s" in err["message"]
    finally:
        holder.communicate("\n", timeout=60)


# ------------------------------------------------------------------ topic configuration and metadata

# Keys and values as Spark options give them (text), plus a few typed ones: each is accepted by both
# sides with the same recorded values, or refused by both.
CONFIG_CORPUS = [
    {}, {"segment.bytes": "1024"}, {"segment.bytes": "1023"}, {"segment.bytes": "-5"}, {"segment.bytes": " 4096 "},
    {"segment.bytes": "4e3"}, {"segment.bytes": "--4096"}, {"segment.bytes": "2147483648"}, {"segment.bytes": 1 << 20},
    {"segment.bytes": "1.5"}, {"segment.bytes": ""}, {"retention.ms": "-1"}, {"retention.ms": "-2"},
    {"retention.ms": "9223372036854775807"}, {"retention.ms": "9223372036854775808"}, {"segment.ms": "0"},
    {"segment.index.bytes": "24"}, {"segment.index.bytes": "23"}, {"index.interval.bytes": "0"},
    {"message.timestamp.type": "LogAppendTime"}, {"message.timestamp.type": "logappendtime"},
    {"message.timestamp.before.max.ms": "3600000"}, {"message.timestamp.difference.max.ms": "5000"},
    {"max.message.time.difference.ms": "7", "message.timestamp.after.max.ms": "9"},
    {"message.timestamp.after.max.ms": "9", "message.timestamp.difference.max.ms": "7"},
    {"message.timestamp.out.of.range.policy": "quarantine"},
    {"message.timestamp.out.of.range.policy": "quarantine", "quarantine.topic": "late"},
    {"message.timestamp.out.of.range.policy": "drop"}, {"quarantine.topic": None},
    {"max.message.bytes": "0"}, {"file.delete.delay.ms": "-1"},
    {"cleanup.policy": "compact"}, {"cleanup.policy": "delete,compact"}, {"cleanup.policy": " compact , delete"},
    {"cleanup.policy": "compact,compact"}, {"cleanup.policy": "compact,"}, {"cleanup.policy": "none"},
    {"cleanup.policy": ["delete", "compact"]}, {"min.cleanable.dirty.ratio": "0.25"}, {"min.cleanable.dirty.ratio": "1"},
    {"min.cleanable.dirty.ratio": "1.5"}, {"min.cleanable.dirty.ratio": "nan"}, {"min.cleanable.dirty.ratio": "abc"},
    {"min.cleanable.dirty.ratio": ".5"}, {"min.cleanable.dirty.ratio": "5e-1"}, {"min.cleanable.dirty.ratio": 0.75},
    {"min.compaction.lag.ms": "0"}, {"max.compaction.lag.ms": "0"}, {"delete.retention.ms": "86400000"},
    {"compression.type": "zstd"}, {"compression.type": "none"}, {"compression.type": "ZSTD"},
    {"segment.merge.small.bytes": "-1"}, {"segment.merge.small.bytes": "-2"},
    {"segment.byte": "1024"}, {"retention.hours": "1"}, {"segment.bytes": True},
    # Tiered storage (docs/tiered-storage.md §1): booleans as Kafka parses them, -2 = retention.*, the cross-checks.
    {"remote.storage.enable": True}, {"remote.storage.enable": "TRUE"}, {"remote.storage.enable": " false "},
    {"remote.storage.enable": "yes"}, {"remote.storage.enable": 1}, {"remote.storage.enable": None},
    {"remote.storage.enable": "true", "cleanup.policy": "compact"},
    {"remote.storage.enable": "true", "cleanup.policy": "delete,compact"},
    {"remote.storage.enable": "false", "cleanup.policy": "compact"},
    {"remote.storage.enable": "false", "remote.log.delete.on.disable": "TRUE"},
    {"remote.log.delete.on.disable": "sometimes"}, {"remote.log.delete.on.disable": False},
    {"local.retention.ms": "-2"}, {"local.retention.ms": "-3"}, {"local.retention.ms": "-1"},
    {"local.retention.ms": "-1", "retention.ms": "-1"}, {"local.retention.ms": "604800000"},
    {"local.retention.ms": "604800001"}, {"local.retention.ms": "1000", "retention.ms": "999"},
    {"local.retention.ms": "99999999999", "retention.ms": "-1"}, {"local.retention.bytes": "0"},
    {"local.retention.bytes": "10", "retention.bytes": "9"}, {"local.retention.bytes": "-1", "retention.bytes": "100"},
    {"local.retention.bytes": "100", "retention.bytes": "100"}, {"local.retention.bytes": "1.5"},
]


def _python_requested(config: dict):
    from seglog.conf.topic_config import requested_topic_config
    from seglog.errors import ConfigError

    try:
        return {"ok": requested_topic_config(config, where="config")}
    except ConfigError as exc:
        return {"error": str(exc)}


def test_topic_config_validation_agrees_with_the_python_core():
    proc = subprocess.run(tool.command("validate-configs"), input="\n".join(json.dumps(c) for c in CONFIG_CORPUS),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    jvm_answers = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(jvm_answers) == len(CONFIG_CORPUS)
    refused = 0
    for config, jvm_answer in zip(CONFIG_CORPUS, jvm_answers):
        py_answer = _python_requested(config)
        assert ("ok" in jvm_answer) == ("ok" in py_answer), (config, jvm_answer, py_answer)
        if "ok" in py_answer:
            assert jvm_answer["ok"] == py_answer["ok"], config
        else:
            refused += 1
            for key in config:     # both name the key they refuse (an alias names what it sets)
                if key in py_answer["error"]:
                    assert key in jvm_answer["error"], (config, jvm_answer)
    assert refused >= 20    # the corpus tests refusals, not only acceptances


def test_a_topic_the_jvm_creates_is_the_python_cores(tmp_path):
    from seglog.indexer.topics import create_topic, load_topic, topic_file

    made = tool.run("create-topic", tmp_path, TOPIC, 3, "segment.bytes=4096", "cleanup.policy=delete,compact",
                    "min.cleanable.dirty.ratio=0.25", "message.timestamp.difference.max.ms=5000")
    meta = load_topic(tmp_path, TOPIC)
    assert made == meta.to_json()
    assert meta.partitions == 3
    assert meta.config == {"segment.bytes": 4096, "cleanup.policy": "compact,delete", "min.cleanable.dirty.ratio": 0.25,
                           "message.timestamp.before.max.ms": 5000, "message.timestamp.after.max.ms": 5000}
    assert meta.topic_config().compacted
    # byte for byte what the Python core writes for the same metadata
    assert topic_file(tmp_path, TOPIC).read_bytes() == json.dumps(meta.to_json(), sort_keys=True, indent=1).encode()
    # the same request again is the same topic, on either side; a different one is refused by both
    assert tool.run("create-topic", tmp_path, TOPIC, 3, "segment.bytes=4096") == made
    assert create_topic(tmp_path, TOPIC, 3, {"segment.bytes": 4096}) == meta
    err = tool.run("create-topic", tmp_path, TOPIC, 4, "segment.bytes=8192", ok=False)
    assert err["error"] == "InvalidTopicException"
    assert "already exists and differs: it has 3 partitions, 4 were asked" in err["message"]
    assert "segment.bytes" in err["message"]


def test_a_topic_the_python_core_creates_is_checked_by_the_jvm(tmp_path):
    from seglog.indexer.topics import create_topic

    create_topic(tmp_path, TOPIC, 2, {"compression.type": "lz4", "retention.ms": 1000})
    assert tool.run("create-topic", tmp_path, TOPIC, 2)["partitions"] == 2          # asking nothing: no conflict
    assert tool.run("create-topic", tmp_path, TOPIC, 2, "retention.ms=1000")["config"]["compression.type"] == "lz4"
    err = tool.run("create-topic", tmp_path, TOPIC, 2, "compression.type=zstd", ok=False)
    assert "its configuration is {compression.type=lz4}" in err["message"]


def test_bad_topic_requests_are_refused_and_nothing_is_written(tmp_path):
    from seglog.indexer.topics import topics_dir

    for args, says in (((TOPIC, 0), "partitions = 0"), ((TOPIC, 1 << 21), "partitions = 2097152"),
                       (("a/b", 1), "invalid topic name"), ((TOPIC, 1, "segment.bytes=-5"), "'segment.bytes' = -5 is out of range"),
                       ((TOPIC, 1, "segment.byts=5000"), "did you mean 'segment.bytes'")):
        err = tool.run("create-topic", tmp_path, *args, ok=False)
        assert says in err["message"], err
    assert not topics_dir(tmp_path).exists() or not list(topics_dir(tmp_path).iterdir())


def test_forgetting_an_uncommitted_topic(tmp_path):
    from seglog.indexer.topics import create_topic, load_topic

    create_topic(tmp_path, TOPIC, 2)
    assert tool.run("forget-topic", tmp_path, TOPIC) is True
    assert load_topic(tmp_path, TOPIC) is None
    create_topic(tmp_path, TOPIC, 2)
    CommitLog(tmp_path, TOPIC).commit("py", 0, {0: 1})
    assert tool.run("forget-topic", tmp_path, TOPIC) is False     # committed to: kept
    assert load_topic(tmp_path, TOPIC) is not None


# ------------------------------------------------------------------ roll back and publish: partition files

SMALL = {"segment.bytes": 2048, "index.interval.bytes": 100, "segment.index.bytes": 4096}
T0 = 1_700_000_000_000


def _append(log: Log, n: int, start: int, size: int = 40) -> None:
    """One batch of n records: values of `size` bytes, timestamps rising from T0 (one going back)."""
    log.append([Record(key=f"k{i}".encode(), value=bytes([i % 251]) * size,
                       timestamp=T0 + i * 1000 - (5000 if i % 7 == 3 else 0)) for i in range(start, start + n)])


def _entries(data: bytes, size: int) -> bytes:
    """An index's entries: its bytes without a zero-filled preallocated tail."""
    while len(data) >= size and data[-size:] == bytes(size) and len(data) > size:
        data = data[:-size]
    return data


def _files(dir_path: Path) -> dict[str, bytes]:
    """The segment files of a partition folder, by name: .log bytes whole, index entries (a clean close
    trims a preallocated tail that a kill leaves; the entries are what both sides must agree on)."""
    out = {}
    for p in sorted(dir_path.iterdir()):
        if p.name.endswith((".log", ".log.deleted")):
            out[p.name] = p.read_bytes()
        elif p.name.endswith((".index", ".index.deleted")):
            out[p.name] = _entries(p.read_bytes(), 8)
        elif p.name.endswith((".timeindex", ".timeindex.deleted")):
            out[p.name] = _entries(p.read_bytes(), 12)
    return out


def _twin_roots(tmp_path: Path, build, *, killed: bool) -> tuple[Path, Path]:
    """Two roots holding the same partition folder `events-0`, built by `build(log)`. `killed`: copied
    while the writer still has it open (preallocated indexes, as a killed writer leaves them)."""
    src = tmp_path / "src"
    log = Log.open(src / "events-0", SMALL)
    build(log)
    log.flush()
    if not killed:
        log.close()
    roots = tmp_path / "a", tmp_path / "b"
    for r in roots:
        shutil.copytree(src, r)
    if killed:
        log.close()
    return roots


ROLL_BACK_CASES = {
    # name: (batches of (count) appended, index of the first uncommitted batch)
    "tail in the active segment": ([3, 4, 2, 5], 2),
    "segments rolled since the commit": ([6, 6, 6, 6, 6, 6, 6, 6, 6, 6], 3),
    "cut at a segment's base": ([20, 20, 20, 20], 2),
    "nothing past the committed end": ([5, 5], 2),
}


@pytest.mark.parametrize("killed", [False, True], ids=["closed", "killed writer"])
@pytest.mark.parametrize("case", list(ROLL_BACK_CASES))
def test_jvm_roll_back_leaves_the_python_cores_folder(tmp_path, case, killed):
    counts, first_uncommitted = ROLL_BACK_CASES[case]
    committed = sum(counts[:first_uncommitted])

    def build(log):
        start = 0
        for n in counts:
            _append(log, n, start)
            start += n

    a, b = _twin_roots(tmp_path, build, killed=killed)
    if case == "cut at a segment's base":
        with Log.open(a / "events-0", SMALL, readonly=True) as ro:
            assert committed in ro.segment_bases()     # the case holds what it says
    with Log.open(a / "events-0", SMALL) as log:
        roll_back_to_committed(log, committed, flush=True)
    answer = tool.run("rollback", b, TOPIC, 0, committed, SMALL["segment.index.bytes"])
    assert answer == {"cut": committed < sum(counts), "end": committed}
    assert _files(b / "events-0") == _files(a / "events-0")
    # the Python core opens it with nothing to repair and reads exactly the committed records
    with Log.open(b / "events-0", SMALL) as log:
        assert log.recovery_report == []
        assert log.log_end_offset == committed
        assert [r.key for r in log.read(0)] == [f"k{i}".encode() for i in range(committed)]
        assert log.verify() == []
    assert not (b / "events-0" / "truncate.pending").exists()


def test_jvm_roll_back_cuts_a_torn_tail(tmp_path):
    a, b = _twin_roots(tmp_path, lambda log: [_append(log, 4, 0), _append(log, 4, 4)], killed=False)
    for root in (a, b):
        with open(root / "events-0" / f"{0:020d}.log", "ab") as fh:
            fh.write(b"\x00\x00\x00\x00\x00\x00\x00\x08\x00\x00\x01\x00torn")   # a batch cut short
    with Log.open(a / "events-0", SMALL) as log:          # the core's recovery cuts it at open
        roll_back_to_committed(log, 8, flush=True)
    assert tool.run("rollback", b, TOPIC, 0, 8, SMALL["segment.index.bytes"]) == {"cut": True, "end": 8}
    assert _files(b / "events-0") == _files(a / "events-0")


def test_jvm_roll_back_refuses_what_it_must_not_cut(tmp_path):
    _, b = _twin_roots(tmp_path, lambda log: [_append(log, 4, 0), _append(log, 4, 4)], killed=False)
    before = _files(b / "events-0")
    err = tool.run("rollback", b, TOPIC, 0, 6, SMALL["segment.index.bytes"], ok=False)     # inside a batch
    assert err["error"] == "CorruptLogException" and "straddles the committed end 6" in err["message"]
    err = tool.run("rollback", b, TOPIC, 0, 9, SMALL["segment.index.bytes"], ok=False)     # past the log end
    assert "below its committed end 9: committed records are lost" in err["message"]
    (b / "events-0" / "truncate.pending").write_text('{"offset": 4, "segment": 0, "position": 0, "batch": ""}')
    err = tool.run("rollback", b, TOPIC, 0, 4, SMALL["segment.index.bytes"], ok=False)
    assert err["error"] == "RecoveryNeededException" and "truncate.pending" in err["message"]
    (b / "events-0" / "truncate.pending").unlink()
    assert _files(b / "events-0") == before                 # refused: nothing changed


def _stage(tmp_path: Path, name: str, rows: list[dict], config: dict) -> list[dict]:
    plan = tmp_path / f"{name}.plan.json"
    plan.write_text(json.dumps({"staging": str(tmp_path / name), "slots": [stage_config(validate_topic_config(config))],
                                "now": T0 + 10_000_000, "rename_min_bytes": 0}))
    data = tmp_path / f"{name}.rows.json"
    data.write_text(json.dumps(rows))
    report = tool.run("stage", plan, data)
    (tmp_path / f"{name}.report.json").write_text(json.dumps(report))
    return [report]


PUBLISH_CASES = {
    # name: (records appended before, by batch; killed writer)
    "onto a sealed-and-closed active segment": ([5, 5], False),
    "onto a killed writer's active segment": ([5, 5], True),
    "into a new partition": ([], False),
    "onto an active segment with one batch": ([1], False),
}


@pytest.mark.parametrize("case", list(PUBLISH_CASES))
def test_jvm_publish_by_rename_leaves_the_python_cores_folder(tmp_path, case):
    before, killed = PUBLISH_CASES[case]
    config = dict(SMALL)

    def build(log):
        start = 0
        for n in before:
            _append(log, n, start)
            start += n

    a, b = _twin_roots(tmp_path, build, killed=killed)
    n0 = sum(before)
    rows = [{"base": 0, "n": 1, "p": 0, "key": f"s{i}", "value": "x" * (30 + i % 50), "ts_ms": T0 + 500 * i - (9000 if i % 11 == 5 else 0)}
            for i in range(150)]
    reports_a = _stage(tmp_path, "stage-a", rows, config)
    reports_b = _stage(tmp_path, "stage-b", rows, config)
    staged_a = staged_by_slot(reports_a)[0]
    staged_b = staged_by_slot(reports_b)[0]
    assert len(staged_a) >= 3                                # several staged segments: a run of renames
    for sa, sb in zip(staged_a, staged_b):                   # the stager is deterministic: twins
        assert Path(sa.stem + ".log").read_bytes() == Path(sb.stem + ".log").read_bytes()
    with Log.open(a / "events-0", config) as log:
        publish(log, staged_a, rename_min_bytes=0)
        log.flush()
        end_a = log.log_end_offset
    answer = tool.run("publish", b, TOPIC, 0, tmp_path / "stage-b.report.json", 0, 0, *(f"{k}={v}" for k, v in config.items()))
    assert answer["start"] == n0 and answer["end"] == end_a == n0 + 150 and answer["copied"] == 0
    assert _files(b / "events-0") == _files(a / "events-0")
    assert (b / "events-0" / "recovery-point-offset-checkpoint").read_bytes() == \
        (a / "events-0" / "recovery-point-offset-checkpoint").read_bytes()   # raised as the core's close does
    with Log.open(b / "events-0", config) as log:
        assert log.recovery_report == []
        assert [r.key for r in log.read(0)] == [f"k{i}".encode() for i in range(n0)] + [f"s{i}".encode() for i in range(150)]
        assert log.verify() == []


@pytest.mark.parametrize("config", [
    {}, {"segment.bytes": "1024"}, {"segment.bytes": "100000", "max.message.bytes": "5000"},
    {"compression.type": "zstd", "max.message.bytes": "200000"}, {"compression.type": "lz4"},
    {"message.timestamp.type": "LogAppendTime", "segment.ms": "60000", "index.interval.bytes": "0"},
    {"message.timestamp.difference.max.ms": "3600000", "segment.index.bytes": "24"},
])
def test_the_stagers_rules_agree_with_the_python_sinks(config):
    """The write's per-topic rules for its tasks (io.seglog.spark.write.TopicTarget) against
    tests/sink/jvm_stage.py's stage_config, batch budget included."""
    assert tool.run("stage-config", *(f"{k}={v}" for k, v in config.items())) == \
        stage_config(validate_topic_config(config))


def test_jvm_roll_back_below_the_log_start_restarts_the_log_as_the_core_does(tmp_path):
    """Retention deleted segments holding records past the committed end: the cut is below the log start,
    everything goes and the log restarts empty at the committed end, its start checkpointed there."""
    def build(log):
        for b in range(10):
            _append(log, 6, b * 6)

    a, b = _twin_roots(tmp_path, build, killed=False)
    for root in (a, b):
        with Log.open(root / "events-0", {**SMALL, "retention.bytes": 1}) as log:
            log.apply_retention(now=T0 + 10**9)
            assert log.log_start_offset > 6                  # the committed end is below the log start now
    with Log.open(a / "events-0", SMALL) as log:
        roll_back_to_committed(log, 6, flush=True)
    assert tool.run("rollback", b, TOPIC, 0, 6, SMALL["segment.index.bytes"]) == {"cut": True, "end": 6}
    assert _files(b / "events-0") == _files(a / "events-0")
    assert (b / "log-start-offset-checkpoint").read_text() == (a / "log-start-offset-checkpoint").read_text()
    with Log.open(b / "events-0", SMALL) as log:
        assert (log.log_start_offset, log.log_end_offset) == (6, 6)
        assert log.verify() == []


KILLED_ROLL_BACK_STEPS = ["intent written", "later segments renamed", "log cut", "indexes cut"]


@pytest.mark.parametrize("step", KILLED_ROLL_BACK_STEPS)
def test_a_roll_back_killed_part_way_is_finished_by_the_next_jvm_write(tmp_path, step):
    """A driver killed inside its roll back leaves truncate.pending: the next write's roll back finishes it (the
    core's finish_truncation, file for file) and goes on, instead of refusing the folder until the sidecar or
    `seglog recover` runs. Each kill instant is built by hand from the intent the core computes for the cut."""
    from seglog.indexer.recovery import TRUNCATE_INTENT, rename_deleted, truncation_intent

    counts, first_uncommitted = ROLL_BACK_CASES["segments rolled since the commit"]
    committed = sum(counts[:first_uncommitted])

    def build(log):
        start = 0
        for n in counts:
            _append(log, n, start)
            start += n

    a, b = _twin_roots(tmp_path, build, killed=False)
    with Log.open(a / "events-0", SMALL) as log:
        roll_back_to_committed(log, committed, flush=True)
    d = b / "events-0"
    with Log.open(d, SMALL, readonly=True) as ro:   # the intent as the core computes it (a cut at a batch boundary)
        bases = ro.segment_bases()
        cut_base = max(x for x in bases if x < committed)
        intent = truncation_intent(ro._segments.get(cut_base), committed)
    assert intent["batch"] == "" and intent["segment"] == cut_base
    (d / TRUNCATE_INTENT).write_text(json.dumps(intent))
    steps = KILLED_ROLL_BACK_STEPS.index(step)
    if steps >= 1:
        for base in sorted(bases, reverse=True):
            if base > cut_base:
                rename_deleted(d, base)
    if steps >= 2:
        with open(d / f"{cut_base:020d}.log", "r+b") as fh:
            fh.truncate(intent["position"])
    if steps >= 3:   # the indexes cut as the core cuts them: the core's own truncation of a copy, its index files
        for suffix in (".index", ".timeindex"):
            shutil.copyfile(a / "events-0" / f"{cut_base:020d}{suffix}", d / f"{cut_base:020d}{suffix}")
    answer = tool.run("rollback", b, TOPIC, 0, committed, SMALL["segment.index.bytes"])
    assert answer == {"cut": False, "end": committed}   # the intent finished the cut; nothing was left past the end
    assert not (d / TRUNCATE_INTENT).exists()
    assert _files(d) == _files(a / "events-0")
    with Log.open(d, SMALL) as log:
        assert log.recovery_report == []
        assert [r.key for r in log.read(0)] == [f"k{i}".encode() for i in range(committed)]


def test_a_roll_back_intent_that_is_not_its_offsets_boundary_is_refused(tmp_path):
    _, b = _twin_roots(tmp_path, lambda log: [_append(log, 4, 0), _append(log, 4, 4)], killed=False)
    before = _files(b / "events-0")
    (b / "events-0" / "truncate.pending").write_text('{"offset": 4, "segment": 0, "position": 0, "batch": ""}')
    err = tool.run("rollback", b, TOPIC, 0, 4, SMALL["segment.index.bytes"], ok=False)
    assert err["error"] == "RecoveryNeededException" and "not that offset's batch boundary" in err["message"]
    (b / "events-0" / "truncate.pending").unlink()
    assert _files(b / "events-0") == before                 # refused: nothing changed
