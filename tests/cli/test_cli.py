"""The `seglog` command, run for real (`python -m seglog ...` in a subprocess) on logs written by
the indexer: dump, verify, describe, offsets-for-times, recover, truncate, the delegating
subcommands, exit codes and one-line errors."""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from seglog.indexer import Log, Record
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.topics import create_topic

T0 = 1_600_000_000_000                    # long ago: every segment is past retention.ms
FAR_FUTURE = int(time.time() * 1000) + 10 * 365 * 86_400_000
CFG = {"segment.bytes": 2048, "index.interval.bytes": 128, "segment.index.bytes": 4096}
ROOT_DIR = Path(__file__).resolve().parents[2]


def seglog(*args, input_text: str | None = None, check_rc: int | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT_DIR), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run([sys.executable, "-m", "seglog", *map(str, args)], capture_output=True, text=True,
                          input=input_text if input_text is not None else "", env=env, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    if check_rc is not None:
        assert proc.returncode == check_rc, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def _write_partition(root: Path, partition: int, far_future: bool) -> None:
    with Log.open(root / f"events-{partition}", CFG, outside_commit_log=True) as log:
        for i in range(120):
            recs = [Record(key=None if i % 6 == 0 else f"k{partition}-{i}-{j}".encode(),
                           value=f"value {partition}/{i}/{j}".encode(),
                           timestamp=T0 + 1000 * i - 2500 * (i % 3) + j,
                           headers=(("h", f"{i}".encode()),) if i % 4 == 0 else ())
                    for j in range(1 + i % 3)]
            log.append(recs)
        if far_future:
            log.append([Record(b"future", b"far", FAR_FUTURE)])
            for i in range(5):
                log.append([Record(b"after", f"{i}".encode(), T0 + 200_000 + i)])
        log.seal_inactive()
        end = log.log_end_offset
    CommitLog(root, "events").commit("query-1", partition, {partition: end})


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    r = tmp_path_factory.mktemp("cli") / "log"
    r.mkdir()
    create_topic(r, "events", 2, CFG)
    _write_partition(r, 0, far_future=False)
    _write_partition(r, 1, far_future=True)
    return r


@pytest.fixture
def scratch(root, tmp_path) -> Path:
    """A private copy of the root, for commands that change it (or tests that break it)."""
    dst = tmp_path / "log"
    shutil.copytree(root, dst)
    return dst


def _segments(part: Path) -> list[Path]:
    return sorted(part.glob("*.log"))


# ----------------------------------------------------------------------------- dump

_BATCH = re.compile(r"^baseOffset: (\d+) lastOffset: (\d+) count: (\d+) baseSequence: -1 lastSequence: -1 "
                    r"producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false "
                    r"isControl: false deleteHorizonMs: OptionalLong.empty position: (\d+) "
                    r"(CreateTime|LogAppendTime): (-?\d+) size: (\d+) magic: 2 compresscodec: none "
                    r"crc: (\d+) isvalid: (true|false)$")
_RECORD = re.compile(r"^\| offset: (\d+) CreateTime: (-?\d+) keySize: (-?\d+) valueSize: (-?\d+) sequence: -1 "
                     r"headerKeys: \[([^\]]*)\] key: (.*) payload: (.*?)( headers: (.*))?$")


def test_dump_log_batches_and_records(root):
    part = root / "events-0"
    seg = _segments(part)[1]
    proc = seglog("dump", "--print-data", seg, check_rc=0)
    lines = proc.stdout.splitlines()
    assert lines[0] == f"Dumping {seg}" and lines[1] == f"Log starting offset: {int(seg.stem)}"
    batches = [_BATCH.match(line).groups() for line in lines if line.startswith("baseOffset:")]
    records = [_RECORD.match(line).groups() for line in lines if line.startswith("| offset:")]
    assert batches and all(b[8] == "true" for b in batches)
    positions = [int(b[3]) for b in batches]
    sizes = [int(b[6]) for b in batches]
    assert positions == [sum(sizes[:i]) for i in range(len(sizes))] and sum(sizes) == seg.stat().st_size
    assert int(batches[0][0]) == int(seg.stem)
    with Log.open(part, CFG, readonly=True) as log:
        next_base = int(_segments(part)[2].stem)
        expected = list(log.read(int(seg.stem), next_base))
    assert [int(r[0]) for r in records] == [r.offset for r in expected]
    for got, want in zip(records, expected):
        assert int(got[1]) == want.timestamp
        assert got[5] == ("null" if want.key is None else want.key.decode())
        assert got[6] == want.value.decode()
        assert (got[8] or "") == ",".join(f"{k}={v.decode()}" for k, v in want.headers)
    # each batch's max timestamp and count are the records'
    for b in batches:
        inside = [r for r in expected if int(b[0]) <= r.offset <= int(b[1])]
        assert int(b[2]) == len(inside) and int(b[5]) == max(r.timestamp for r in inside)


def test_dump_shallow_and_index_files(root):
    part = root / "events-0"
    seg = _segments(part)[0]
    proc = seglog("dump", seg, seg.with_suffix(".index"), seg.with_suffix(".timeindex"), check_rc=0)
    out = proc.stdout
    assert "| offset:" not in out                     # shallow: batches only
    sections = re.split(r"^Dumping .*$", out, flags=re.M)[1:]
    index_entries = [tuple(map(int, m)) for m in re.findall(r"^offset: (\d+) position: (\d+)$", sections[1], re.M)]
    time_entries = [tuple(map(int, m)) for m in re.findall(r"^timestamp: (\d+) offset: (\d+)$", sections[2], re.M)]
    from seglog.indexer.indexes.offset_index import OffsetIndex
    from seglog.indexer.indexes.time_index import TimeIndex
    with OffsetIndex(seg.with_suffix(".index"), int(seg.stem), 4096, writable=False, preallocate=False) as oi:
        assert index_entries == [oi.entry(i) for i in range(oi.entries)] and oi.entries > 0
    with TimeIndex(seg.with_suffix(".timeindex"), int(seg.stem), 4096, writable=False, preallocate=False) as ti:
        assert time_entries == [ti.entry(i) for i in range(ti.entries)] and ti.entries > 0
    # the sealed segment's last time index entry holds its largest timestamp, at the last offset of
    # the first batch holding it (docs/spec.md §2.4, Kafka's seal entry)
    with Log.open(part, readonly=True) as log:
        records = list(log.read(int(seg.stem), max_offset=int(_segments(part)[1].stem)))
    largest = max(r.timestamp for r in records)
    assert time_entries[-1][0] == largest
    assert int(seg.stem) <= time_entries[-1][1] < int(_segments(part)[1].stem)


def test_dump_reports_a_corrupt_log(scratch):
    seg = _segments(scratch / "events-0")[0]
    from seglog.indexer.codec.records import parse_header
    data = bytearray(seg.read_bytes())
    data[parse_header(data, 0).size + 66] ^= 0x40       # inside the second batch's records
    seg.write_bytes(bytes(data[:-7]))
    proc = seglog("dump", seg, check_rc=1)
    assert "isvalid: false" in proc.stdout
    assert re.search(r"Found \d+ invalid bytes at the end of 00000000000000000000\.log", proc.stdout)


# ----------------------------------------------------------------------------- verify and recover

def test_verify_clean(root):
    proc = seglog("verify", root, check_rc=0)
    assert "verified 2 partition(s): clean" in proc.stdout and "FAULT" not in proc.stdout
    seglog("verify", root / "events-1", check_rc=0)     # one partition folder


def test_verify_flipped_byte_in_a_sealed_segment(scratch):
    seg = _segments(scratch / "events-1")[2]
    data = bytearray(seg.read_bytes())
    data[len(data) // 2] ^= 0x01
    seg.write_bytes(bytes(data))
    proc = seglog("verify", scratch, check_rc=1)
    faults = [line for line in proc.stdout.splitlines() if line.startswith("FAULT")]
    assert faults and all(line.startswith("FAULT events-1:") for line in faults)
    assert str(seg) in faults[0] and re.search(r"position \d+", faults[0])
    assert re.search(r"verified 2 partition\(s\): \d+ fault\(s\) in 1 partition\(s\)", proc.stdout)


def test_verify_torn_tail_then_recover(scratch):
    active = _segments(scratch / "events-0")[-1]
    with open(active, "ab") as fh:
        fh.write(b"\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x40partial")   # a torn batch
    proc = seglog("verify", scratch, check_rc=1)
    assert f"FAULT events-0: {active}" in proc.stdout
    proc = seglog("recover", scratch, "--topic", "events", check_rc=0)
    assert re.search(r"^events-0: .+", proc.stdout, re.M) and "events-0: clean" not in proc.stdout
    assert "events-1: clean" in proc.stdout
    seglog("verify", scratch, check_rc=0)


# ----------------------------------------------------------------------------- describe

def test_describe_json(root):
    proc = seglog("describe", root, "--json", check_rc=0)
    doc = json.loads(proc.stdout)
    parts = {(p["topic"], p["partition"]): p for p in doc["partitions"]}
    assert sorted(parts) == [("events", 0), ("events", 1)]
    ends = CommitLog(root, "events").end_offsets()
    for (topic, n), p in parts.items():
        with Log.open(root / f"{topic}-{n}", CFG, readonly=True) as log:
            segs = log.segments()
            assert (p["log_start_offset"], p["log_end_offset"]) == (log.log_start_offset, log.log_end_offset)
            assert p["largest_timestamp"] == log.largest_timestamp
        assert p["committed_end_offset"] == ends[n] == p["log_end_offset"]
        assert [s["base_offset"] for s in p["segments"]] == [s.base_offset for s in segs]
        assert [s["state"] for s in p["segments"]] == ["sealed"] * (len(segs) - 1) + ["active"]
        assert [s["largest_timestamp"] for s in p["segments"]] == [s.largest_timestamp for s in segs]
        assert p["size_bytes"] == sum(f.stat().st_size for f in (root / f"{topic}-{n}").glob("*.log"))
    assert parts[("events", 1)]["retention_blocked_by"] == FAR_FUTURE
    assert parts[("events", 0)]["retention_blocked_by"] is None
    assert doc["retention_blocked"] == ["events-1"]


def test_describe_text(root):
    proc = seglog("describe", root, check_rc=0)
    assert "events-1" in proc.stdout and "BLOCKED by a far-future timestamp" in proc.stdout
    assert proc.stdout.count("BLOCKED") == 1 and "sealed" in proc.stdout and "active" in proc.stdout


# ----------------------------------------------------------------------------- offsets-for-times

def test_offsets_for_times(root):
    times = [0, T0 + 1, T0 + 61_234, T0 + 10**9, "earliest", "latest"]
    for t in times:
        proc = seglog("offsets-for-times", root, "--topic", "events", "--time", t, check_rc=0)
        got = dict(line.rsplit(":", 1) for line in proc.stdout.splitlines())
        assert sorted(got) == ["events:0", "events:1"]
        ms = {"earliest": -2, "latest": -1}.get(t, t)
        for n in (0, 1):
            with Log.open(root / f"events-{n}", CFG, readonly=True) as log:
                want = log.offset_for_timestamp(ms)
            assert got[f"events:{n}"] == ("-" if want is None else str(want)), (t, n)
    proc = seglog("offsets-for-times", root, "--topic", "events", "--time", T0 + 5000, "--partition", 1,
                  check_rc=0)
    assert proc.stdout.startswith("events:1:") and len(proc.stdout.splitlines()) == 1


# ----------------------------------------------------------------------------- truncate

def test_truncate_lowers_the_log_and_the_committed_end(scratch):
    part = scratch / "events-0"
    with Log.open(part, CFG, readonly=True) as log:
        end = log.log_end_offset
        kept = list(log.read(0, 100))
    assert CommitLog(scratch, "events").end_offsets()[0] == end > 100
    # no --yes and no terminal: refused, nothing changed
    proc = seglog("truncate", scratch, "--topic", "events", "--partition", 0, "--to-offset", 100, check_rc=2)
    assert "--yes" in proc.stderr
    assert CommitLog(scratch, "events").end_offsets()[0] == end
    proc = seglog("truncate", scratch, "--topic", "events", "--partition", 0, "--to-offset", 100, "--yes",
                  check_rc=0)
    assert "truncated to 100" in proc.stdout and f"lowered from {end} to 100" in proc.stdout
    with Log.open(part, CFG, readonly=True) as log:
        assert log.log_end_offset == 100
        assert list(log.read(0)) == kept
    ends = CommitLog(scratch, "events").end_offsets()
    assert ends[0] == 100 and ends[1] > 100        # the other partition's end is carried forward
    seglog("verify", scratch, check_rc=0)
    # at or past the end, with the committed end already there: nothing to do
    proc = seglog("truncate", scratch, "--topic", "events", "--partition", 0, "--to-offset", 500, "--yes",
                  check_rc=0)
    assert "nothing to do" in proc.stdout


# ----------------------------------------------------------------------------- usage and errors

@pytest.mark.parametrize("args, needle", [
    ([], "required"),
    (["frobnicate"], "invalid choice"),
    (["dump"], "FILE"),
    (["dump", "/nonexistent/00000000000000000000.log"], "/nonexistent/00000000000000000000.log: no such file"),
    (["verify", "/nonexistent-root"], "/nonexistent-root: no such folder"),
    (["offsets-for-times", "{root}", "--time", "5"], "--topic"),
    (["offsets-for-times", "{root}", "--topic", "events", "--time", "yesterday"], "'yesterday' is not a time"),
    (["offsets-for-times", "{root}", "--topic", "../etc", "--time", "5"], "invalid topic name '../etc'"),
    (["offsets-for-times", "{root}", "--topic", "nope", "--time", "5"], "no partitions of topic 'nope'"),
    (["offsets-for-times", "{root}", "--topic", "events", "--time", "5", "--partition", "7"], "no partition 7"),
    (["truncate", "{root}", "--topic", "events", "--partition", "0", "--to-offset", "-3"], "-3"),
    (["describe", "{root}/_seglog/topics/events.json"], "not a folder"),
    (["compactor", "walk"], "invalid choice: 'walk'"),
])
def test_bad_arguments_exit_2(root, args, needle):
    proc = seglog(*[a.replace("{root}", str(root)) for a in args], check_rc=2)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert needle in proc.stderr, proc.stderr
    assert lines[-1].startswith("seglog") and proc.stdout == ""


def test_dump_refuses_a_file_of_another_kind(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("hello")
    proc = seglog("dump", f, check_rc=2)
    assert proc.stderr.strip() == f"seglog: error: {f}: cannot dump a .txt file; expected .log, .index or .timeindex"


def test_truncate_below_log_start_is_refused(scratch):
    with Log.open(scratch / "events-0", CFG, outside_commit_log=True) as log:
        log.seal_inactive()
        log.apply_retention()          # every record is years old: all but the active segment go
        start = log.log_start_offset
    assert start > 1
    proc = seglog("truncate", scratch, "--topic", "events", "--partition", 0, "--to-offset", 1, "--yes",
                  check_rc=2)
    assert f"--to-offset 1 is below the log start offset {start} of events-0" in proc.stderr


def test_compactor_and_demo_delegate(tmp_path):
    proc = seglog("compactor", "run", "--help", check_rc=0)
    assert "--config" in proc.stdout and "--once" in proc.stdout
    import importlib.util
    proc = seglog("demo", "--help")
    if importlib.util.find_spec("seglog.demo") is None:
        assert proc.returncode == 1 and "seglog.demo is missing" in proc.stderr
    else:
        assert proc.returncode == 0


def test_progress_bar_only_on_a_terminal():
    from seglog.commands.progress import progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty, pipe = Tty(), io.StringIO()
    assert list(progress(range(5), 5, "verify", stream=tty)) == list(range(5))
    assert list(progress(range(5), 5, "verify", stream=pipe)) == list(range(5))
    assert "verify [" in tty.getvalue() and pipe.getvalue() == ""
