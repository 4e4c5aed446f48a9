"""The JVM publish's copy path against the Python core's (issue 25): the same staged segments, made once by
the JVM stager, published once by `indexer.staged.publish` (through a writable Log, flushed and closed, as the
sink does) and once by the JVM's StagedPublisher, onto twin copies of one starting partition; then every file
of both partition folders must be equal byte for byte (the indexes as the core's clean close leaves them, the
recovery point too), and the JVM's folder must open in the core with nothing to repair."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from seglog.conf.topic_config import validate_topic_config
from seglog.indexer import Record
from seglog.indexer.log import Log
from tests.oracles.staged import publish
from tests.sink.jvm_stage import stage_config, staged_by_slot
from tests import jvm_format_tool as tool

TOPIC = "events"
T0 = 1_700_000_000_000
SMALL = {"segment.bytes": 2048, "index.interval.bytes": 100, "segment.index.bytes": 4096}


@pytest.fixture(scope="module")
def jvm():
    with tool.Server() as server:
        yield server


def _before(log: Log, counts: list[int], size: int = 40) -> None:
    """Batches of `counts` records already in the partition: timestamps rising from T0 (one going back)."""
    start = 0
    for n in counts:
        log.append([Record(key=f"k{i}".encode(), value=bytes([i % 251]) * size,
                           timestamp=T0 + i * 1000 - (5000 if i % 7 == 3 else 0)) for i in range(start, start + n)])
        start += n


def _start(tmp_path: Path, config: dict, counts: list[int], *, killed: bool = False, epoch: int | None = None
           ) -> tuple[Path, Path]:
    """Two roots holding the same partition folder: `counts` batches appended by the core, closed cleanly or
    copied while the writer still has it open (`killed`: preallocated indexes). `epoch`: a folder imported from
    a broker (a leader-epoch-checkpoint; the core appends with that epoch)."""
    src = tmp_path / "src" / f"{TOPIC}-0"
    src.mkdir(parents=True)
    if epoch is not None:
        (src / "leader-epoch-checkpoint").write_text(f"0\n1\n{epoch} 0\n")
    log = Log.open(src, config)
    _before(log, counts)
    log.flush()
    if not killed:
        log.close()
    roots = tmp_path / "a", tmp_path / "b"
    for r in roots:
        shutil.copytree(src.parent, r)
    if killed:
        log.close()
    return roots


def _stage(jvm, tmp_path: Path, name: str, rows: list[dict], config: dict) -> tuple[Path, Path]:
    """One task's staged segments for `rows` (the JVM stager), twice: (report for a, report for b)."""
    staging = tmp_path / f"stage-{name}"
    plan = tmp_path / f"{name}.plan.json"
    plan.write_text(json.dumps({"staging": str(staging), "slots": [stage_config(validate_topic_config(config))],
                                "now": T0 + 10_000_000, "rename_min_bytes": 0}))
    data = tmp_path / f"{name}.rows.json"
    data.write_text(json.dumps(rows))
    report = json.dumps(jvm.call("stage", plan, data))
    out = []
    for side in "ab":
        twin = tmp_path / f"stage-{name}-{side}"
        shutil.copytree(staging, twin)
        path = tmp_path / f"{name}.{side}.report.json"
        path.write_text(report.replace(json.dumps(str(staging))[1:-1], json.dumps(str(twin))[1:-1]))
        out.append(path)
    return out[0], out[1]


def _rows(n: int, *, first: int = 0, size=lambda i: 30 + i % 50, ts=lambda i: T0 + 500 * i) -> list[dict]:
    return [{"base": 0, "n": 1, "p": 0, "key": f"s{i}", "value": "x" * size(i), "ts_ms": ts(i)}
            for i in range(first, first + n)]


def _folder(dir_path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(dir_path.iterdir()) if p.is_file()}


def _publish_both(jvm, a: Path, b: Path, reports: list[tuple[Path, Path]], config: dict, rename_min_bytes: int) -> dict:
    staged = [s for ra, _ in reports for s in staged_by_slot([json.loads(ra.read_text())]).get(0, [])]
    with Log.open(a / f"{TOPIC}-0", config) as log:
        start = log.log_end_offset
        publish(log, staged, rename_min_bytes=rename_min_bytes)
        log.flush()
        end = log.log_end_offset
    answer = jvm.call("publish", b, TOPIC, 0, ",".join(str(rb) for _, rb in reports), 0, rename_min_bytes,
                      *(f"{k}={v}" for k, v in config.items()))
    assert (answer["start"], answer["end"]) == (start, end)
    return answer


def _check_equal_and_sound(a: Path, b: Path, config: dict) -> None:
    left, right = _folder(a / f"{TOPIC}-0"), _folder(b / f"{TOPIC}-0")
    assert sorted(right) == sorted(left)
    for name in left:
        assert right[name] == left[name], f"{name} differs ({len(right[name])} bytes by the JVM, {len(left[name])} by the core)"
    with Log.open(b / f"{TOPIC}-0", config) as log:
        assert log.recovery_report == []
        assert log.verify() == []
        offsets = [r.offset for r in log.read(log.log_start_offset)]
        assert offsets == list(range(log.log_start_offset, log.log_end_offset))


CASES = {
    # name: (config, records before by batch, killed writer, leader epoch, staged rows, rename_min_bytes)
    "into a new partition": (SMALL, [], False, None, 30, 1 << 20),
    "onto a partly filled active segment": (SMALL, [5, 5], False, None, 12, 1 << 20),
    "onto a killed writer's active segment": (SMALL, [5, 5], True, None, 12, 1 << 20),
    "near segment.bytes: the copy rolls": (SMALL, [9, 9, 9, 9], False, None, 150, 1 << 20),
    "an index near full": ({**SMALL, "segment.index.bytes": 48, "index.interval.bytes": 0}, [1] * 4, False, None,
                           40, 1 << 20),
    "a compressed topic (lz4)": ({**SMALL, "compression.type": "lz4"}, [6, 6], False, None, 120, 1 << 20),
    "a compressed topic (gzip)": ({**SMALL, "compression.type": "gzip"}, [6], True, None, 120, 1 << 20),
    "a compressed topic (zstd)": ({**SMALL, "compression.type": "zstd"}, [3], False, None, 60, 1 << 20),
    "an imported topic with a leader epoch": (SMALL, [4, 4], False, 7, 80, 1 << 20),
    "LogAppendTime": ({**SMALL, "message.timestamp.type": "LogAppendTime"}, [3, 3], False, None, 40, 1 << 20),
    "segment.ms rolls by timestamp": ({**SMALL, "segment.ms": 4000, "segment.bytes": 100_000}, [2, 2], False, None,
                                      40, 1 << 20),
    "runs of renames between copies": (SMALL, [5], False, None, 150, 1500),
    "runs of renames between copies, leader epoch": (SMALL, [5], True, 3, 150, 1500),
}


@pytest.mark.parametrize("case", list(CASES))
def test_jvm_copy_leaves_the_python_cores_folder(jvm, tmp_path, case):
    config, before, killed, epoch, n, rename_min = CASES[case]
    a, b = _start(tmp_path, config, before, killed=killed, epoch=epoch)
    # two tasks' outputs in order (the second's segments after the first's), as a write with two tasks
    reports = [_stage(jvm, tmp_path, "t0", _rows(n), config), _stage(jvm, tmp_path, "t1", _rows(n // 3 + 1, first=n), config)]
    answer = _publish_both(jvm, a, b, reports, config, rename_min)
    if rename_min == 1 << 20:
        assert answer["bases"] == [] and answer["copied"] >= 2           # every staged segment copied
    else:
        assert answer["bases"] and answer["copied"]                     # both ways, interleaved
    _check_equal_and_sound(a, b, config)
    with Log.open(b / f"{TOPIC}-0", config, readonly=True) as log:
        keys = [r.key for r in log.read(0)]
    assert keys[sum(before):] == [f"s{i}".encode() for i in range(n + n // 3 + 1)]


def test_a_copy_leaves_one_segment_per_small_write(jvm, tmp_path):
    """Twenty small publishes onto one partition leave one segment (the rename path left twenty)."""
    a, b = _start(tmp_path, SMALL | {"segment.bytes": 1 << 20}, [])
    for w in range(20):
        reports = [_stage(jvm, tmp_path, f"w{w}", _rows(5, first=5 * w), SMALL | {"segment.bytes": 1 << 20})]
        _publish_both(jvm, a, b, reports, SMALL | {"segment.bytes": 1 << 20}, 1 << 20)
    _check_equal_and_sound(a, b, SMALL | {"segment.bytes": 1 << 20})
    assert [p.name for p in (b / f"{TOPIC}-0").glob("*.log")] == [f"{0:020d}.log"]


def test_the_time_index_entry_0_at_the_base_is_dropped_as_the_core_drops_it(jvm, tmp_path):
    """A segment renamed in whose only timestamp is 0 at its base holds the all-zero seal entry (0, base); it
    becomes the active segment, and the copy's append preallocates its time index, where that entry counts as
    none (docs/format.md "Time index"): the close leaves the time index empty."""
    config = {**SMALL, "index.interval.bytes": 0}
    a, b = _start(tmp_path, config, [])
    first = _stage(jvm, tmp_path, "zero", [{"base": 0, "n": 1, "p": 0, "key": "z", "value": "v" * 1100, "ts_ms": 0}], config)
    rest = _stage(jvm, tmp_path, "rest", _rows(10, ts=lambda i: 0), config)
    answer = _publish_both(jvm, a, b, [first, rest], config, 1000)
    assert answer["bases"] == [0] and answer["copied"] == 1
    _check_equal_and_sound(a, b, config)
    assert (b / f"{TOPIC}-0" / f"{0:020d}.timeindex").read_bytes() == b""


# ------------------------------------------------------------------ property: random configs and batches

_configs = st.fixed_dictionaries({
    "segment.bytes": st.sampled_from([1024, 1500, 2048, 4096, 100_000]),
    "index.interval.bytes": st.sampled_from([0, 1, 64, 100, 700, 4096]),
    "segment.index.bytes": st.sampled_from([24, 36, 48, 96, 4096]),
    "compression.type": st.sampled_from(["producer", "lz4", "gzip", "zstd"]),
    "segment.ms": st.sampled_from([2000, 60_000, 604_800_000]),
})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(config=_configs, before=st.lists(st.integers(1, 9), max_size=6), killed=st.booleans(),
       epoch=st.sampled_from([None, None, 4]), writes=st.lists(st.integers(1, 70), min_size=1, max_size=3),
       rename_min=st.sampled_from([0, 700, 1500, 1 << 20]), sizes=st.integers(0, 400), seed=st.integers(0, 2**16))
def test_property_jvm_publish_equals_the_cores(jvm, tmp_path_factory, config, before, killed, epoch, writes,
                                               rename_min, sizes, seed):
    import random

    tmp_path = tmp_path_factory.mktemp("copy")
    rng = random.Random(seed)
    a, b = _start(tmp_path, config, before, killed=killed, epoch=epoch)
    reports, first = [], 0
    for w, n in enumerate(writes):
        # timestamps mostly rising, some going back, some equal, an occasional 0
        stamps = {i: (0 if rng.random() < 0.03 else T0 + 700 * i - rng.choice([0, 0, 0, 3000, 9000])) for i in range(first, first + n)}
        reports.append(_stage(jvm, tmp_path, f"w{w}", _rows(n, first=first, size=lambda i: rng.randint(0, sizes),
                                                            ts=stamps.__getitem__), config))
        first += n
    _publish_both(jvm, a, b, reports, config, rename_min)
    _check_equal_and_sound(a, b, config)


# ------------------------------------------------------------------ a kill part way through a copy

def test_a_copy_killed_part_way_is_cut_by_the_next_roll_back(jvm, tmp_path):
    """The JVM's publish SIGKILLed after its second run of appended batches (past a roll: the old active segment
    sealed, a new one started): the records past the committed end are what the roll back cuts, which leaves
    the files as they were; publishing again then leaves the core's folder."""
    import signal
    import subprocess
    import time

    config = SMALL
    a, b = _start(tmp_path, config, [5, 5])
    original = _folder(b / f"{TOPIC}-0")
    killed_reports = [_stage(jvm, tmp_path, "killed", _rows(150), config)]
    marker = tmp_path / "in-copy"
    cmd = [tool.java_executable(), f"-Dseglog.test.copyCrashPoint={marker}@2", "-cp", tool.classpath(), tool.TOOL,
           "publish", b, TOPIC, 0, killed_reports[0][1], 0, 1 << 20, *(f"{k}={v}" for k, v in config.items())]
    proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert proc.poll() is None, "the publish ended before its crash point"
        assert time.monotonic() < deadline, "the publish never reached its crash point"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert len(list((b / f"{TOPIC}-0").glob("*.log"))) >= 2          # it rolled, then died: bytes past the end
    assert jvm.call("rollback", b, TOPIC, 0, 10, config["segment.index.bytes"]) == {"cut": True, "end": 10}
    for p in (b / f"{TOPIC}-0").glob("*.deleted"):                   # the roll back set the new segment aside
        p.unlink()
    assert _folder(b / f"{TOPIC}-0") == original
    _publish_both(jvm, a, b, [_stage(jvm, tmp_path, "again", _rows(150), config)], config, 1 << 20)
    _check_equal_and_sound(a, b, config)
