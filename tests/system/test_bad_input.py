"""A bad-input matrix over the command line, the sidecar's YAML and the Python API: every case ends
in a typed, named error (exit code 2 or 1 with a message naming the thing, never a traceback) and
leaves every file under the root byte for byte as it was (docs/reliability.md)."""
from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest

from seglog.errors import SeglogError
from seglog.sink.segment_log_sink import SegmentLogSink
from seglog.indexer import Log, Record
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.topics import create_topic


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad-input") / "root"
    create_topic(root, "events", 2, {"segment.bytes": 4096})
    with Log.open(root / "events-0", {"segment.bytes": 4096}, outside_commit_log=True) as log:
        log.append([Record(key=b"k", value=b"v%d" % i, timestamp=1_000 + i) for i in range(100)])
        end = log.log_end_offset
    CommitLog(root, "events").commit("w", 0, {0: end})
    return root


def digest(root) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and "locks" not in p.parts:
            h.update(str(p.relative_to(root)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


CLI_CASES = [
    (["offsets-for-times", "{root}", "--topic", "events", "--time", "yesterday"], "--time"),
    (["offsets-for-times", "{root}", "--topic", "bad/topic", "--time", "5"], "topic"),
    (["offsets-for-times", "{root}", "--topic", "nope", "--time", "5"], "nope"),
    (["truncate", "{root}", "--topic", "events", "--partition", "0", "--to-offset", "-1", "--yes"], "--to-offset"),
    (["truncate", "{root}", "--topic", "events", "--partition", "9", "--to-offset", "5", "--yes"], "9"),
    (["truncate", "{root}", "--topic", "events\n", "--partition", "0", "--to-offset", "5", "--yes"], "topic"),
    (["dump", "{root}/events-0/no-such-file.log"], "no-such-file"),
    (["verify", "{root}/does-not-exist"], "does-not-exist"),
    (["describe", "{root}", "--now", "soon"], "--now"),
    (["recover", "{root}", "--lock-timeout", "never"], "--lock-timeout"),
    (["recover", "{root}", "--lock-timeout", "nan"], "--lock-timeout"),
    (["merge", "{root}", "--lock-timeout", "-1"], "--lock-timeout"),
    (["abort-transaction", "{root}", "--topic", "events", "--partition", "0", "--producer-id", "42"], "producer id 42"),
]


@pytest.mark.parametrize("argv, needle", CLI_CASES, ids=[" ".join(c[0][:1] + c[0][2:4]) for c in CLI_CASES])
def test_command_line(root, argv, needle):
    before = digest(root)
    done = subprocess.run([sys.executable, "-m", "seglog", *[a.format(root=root) for a in argv]],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode in (1, 2), (done.returncode, done.stderr[-1500:])
    assert "Traceback" not in done.stderr and needle in done.stderr + done.stdout, done.stderr[-1500:]
    assert digest(root) == before


YAML_CASES = [
    ("root: {root}\nlog: {{segment.bytes: '--4096'}}\n", "segment.bytes"),
    ("root: {root}\nlog: {{segment.byte: 4096}}\n", "segment.bytes"),          # the nearest key is named
    ("root: {root}\nlog: {{retention.ms: 1.5}}\n", "retention.ms"),
    ("root: {root}\nschedule: {{seal.interval.ms: -3}}\n", "seal.interval.ms"),
    ("root: {root}\ntopics: {{'bad/name': {{retention.ms: 5}}}}\n", "bad/name"),
    ("root: {root}\nhttp: {{port: 70000}}\n", "http.port"),
    ("root: {root}\nlog: [1, 2]\n", "log"),
    ("root: [unclosed\n", "YAML"),
    ("log: {{retention.ms: 5}}\n", "root"),
    ("root: {root}\nschedule: {{partition.lock.timeout.ms: .nan}}\n", "partition.lock.timeout.ms"),
]


@pytest.mark.parametrize("text, needle", YAML_CASES, ids=[c[1] + str(i) for i, c in enumerate(YAML_CASES)])
def test_sidecar_yaml(root, tmp_path, text, needle):
    config = tmp_path / "compactor.yaml"
    config.write_text(text.format(root=root))
    before = digest(root)
    done = subprocess.run([sys.executable, "-m", "seglog", "compactor", "run", "--once", "--config", str(config)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and done.returncode > 0
    assert "Traceback" not in done.stderr and needle in done.stderr, done.stderr[-1500:]
    assert digest(root) == before


API_CASES = [
    (lambda log: log.append([Record(value=b"v", timestamp="123")]), "timestamp"),
    (lambda log: log.append([Record(value=b"v", headers={"a": b"b"})]), "headers"),
    (lambda log: log.append([Record(value=b"v", timestamp=2 ** 63)]), "timestamp"),
    (lambda log: log.append(b"not a list"), "sequence"),
    (lambda log: log.append_columns([b"a", b"b"], timestamps=[1]), "timestamps"),
    (lambda log: log.truncate_to(-1), "offset"),
    (lambda log: log.offset_for_timestamp(-7), "timestamp"),
    (lambda log: list(log.read(-5)), "offset"),
    (lambda log: Log.open(log.path.parent / "events\n-0"), "topic"),
    (lambda log: Log.open(log.path, {"segment.bytes": "--4096"}), "segment.bytes"),
    (lambda log: Log.open(log.path, {"segment.byte": 4096}), "segment.bytes"),
    # a lock timeout of nan or -1 waited for ever on a locked partition (issue 23, item 14)
    (lambda log: Log.open(log.path.parent / "fresh-0", lock_timeout=float("nan")), "lock timeout nan"),
    (lambda log: SegmentLogSink(str(log.path.parent), topic="events", lock_timeout=-1), "lock timeout -1"),
]


@pytest.mark.parametrize("call, needle", API_CASES, ids=[c[1] + str(i) for i, c in enumerate(API_CASES)])
def test_python_api(root, call, needle):
    before = digest(root)
    with Log.open(root / "events-0", {"segment.bytes": 4096}, outside_commit_log=True) as log:
        with pytest.raises(SeglogError) as info:
            call(log)
        assert needle in str(info.value)
    assert digest(root) == before


def test_the_matrix_size():
    print(f"bad-input matrix: {len(CLI_CASES)} command lines, {len(YAML_CASES)} sidecar files, "
          f"{len(API_CASES)} API calls")
    assert len(CLI_CASES) + len(YAML_CASES) + len(API_CASES) >= 30
