"""Hostile sidecar configuration files (issue 37, items 4 and 9), through the real command a user runs:
`seglog compactor run --config FILE`, in a subprocess with a timeout and a memory limit. Each file is
refused at once with exit 2 and one JSON log line naming the file and what is wrong: no hang, no
traceback, no value silently dropped (conf/files.py)."""
from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from seglog.conf.files import MAX_BYTES, MAX_DEPTH, load_yaml
from seglog.errors import ConfigError, shown

REPO = Path(__file__).resolve().parents[2]
MEMORY_LIMIT = 2 << 30      # the 464-byte alias bomb reached 4 GiB before MemoryError, after 99 s
SECONDS = 10                # each refusal is an import and a parse: ~1 s on a loaded machine


def _alias_bomb() -> str:
    """Nine levels of nine aliases each: 9**9 strings once walked, in under 500 bytes."""
    levels = ["&a [x, x, x, x, x, x, x, x, x]"]
    for prev, name in zip("abcdefgh", "bcdefghi"):
        levels.append(f"&{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    return "root: [" + ", ".join(levels) + "]\n"


CASES = {
    # item 4: the value was expanded into the error message; now anchors and aliases are refused
    "alias_bomb": (_alias_bomb(), ["line 1, column 8", "anchor '&a' is not allowed"]),
    "alias_in_schedule": ("root: /tmp/x\nschedule: {seal.interval.ms: &n 100, roll.interval.ms: *n}\n",
                          ["line 2", "anchor '&n'"]),
    # item 9: each of these was a traceback and exit 1
    "huge_int": ("root: /tmp/x\nschedule: {seal.interval.ms: " + "9" * 5000 + "}\n",
                 ["line 2", "an integer of 5000 characters"]),
    "huge_int_text": ("root: /tmp/x\nlog: {segment.bytes: '" + "9" * 5000 + "'}\n",
                      ["'segment.bytes' = '999", "...", "is not an integer"]),
    "not_utf8": (b"root: /tmp/caf\xe9\n", ["not UTF-8 text", "line 1"]),
    "control_character": (b"root: /tmp/x\n\x11\n", ["not valid YAML", "#x0011"]),   # found by tests/test_fuzz_parsers.py
    "deep_brackets": ("root: /tmp/x\nlog: " + "[" * 10_000 + "]" * 10_000 + "\n",
                      [f"nested more than {MAX_DEPTH} levels deep", "line 2"]),
    "deep_mappings": ("root: /tmp/x\nlog: " + "{a: " * 10_000 + "1" + "}" * 10_000 + "\n",
                      [f"nested more than {MAX_DEPTH} levels deep"]),
    # item 9: the last `root:` won silently
    "duplicate_root": ("root: /tmp/a\nroot: /tmp/b\n", ["line 2, column 1", "key 'root' appears twice"]),
    "duplicate_nested": ("root: /tmp/a\nschedule:\n  seal.interval.ms: 100\n  seal.interval.ms: 200\n",
                         ["line 4", "key 'seal.interval.ms' appears twice"]),
    "too_large": ("root: /tmp/a\n" + "#" * MAX_BYTES + "\n", [f"larger than {MAX_BYTES} bytes"]),
}


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_file_is_refused_at_once_with_exit_2(tmp_path, name):
    text, expected = CASES[name]
    path = tmp_path / f"{name}.yaml"
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "seglog", "compactor", "run", "--config", str(path)],
                          cwd=REPO, capture_output=True, text=True, timeout=60, preexec_fn=_limit_memory)
    elapsed = time.monotonic() - started
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    line = json.loads(lines[0])
    assert line["event"] == "compactor.failed" and line["level"] == "error"
    assert line["error"].startswith("invalid configuration: ") and str(path) in line["error"]
    for fragment in expected:
        assert fragment in line["error"], (fragment, line["error"])
    assert len(line["error"]) < 400                 # a bounded message, never the value expanded
    assert elapsed < SECONDS, elapsed


def test_merge_keys_without_anchors_still_load(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("root: /tmp/x\nschedule:\n  <<: {seal.interval.ms: 100}\n  roll.interval.ms: 200\n")
    assert load_yaml(path) == {"root": "/tmp/x", "schedule": {"seal.interval.ms": 100, "roll.interval.ms": 200}}


def test_a_directory_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot be read"):
        load_yaml(tmp_path)


@pytest.mark.parametrize("value, expected", [
    (10 ** 5000, "<an integer of 16610 bits>"),
    ("x" * 1000, "'" + "x" * 37 + "..." + "x" * 38 + "'"),
    (-5, "-5"),
    ("segment.bytes", "'segment.bytes'"),
], ids=["huge_int", "long_str", "small_int", "short_str"])
def test_shown_is_a_bounded_repr(value, expected):
    assert shown(value) == expected


def test_shown_never_walks_a_shared_structure():
    """What an alias bomb builds: 9**9 leaves, shared. repr() would never finish; shown() is instant."""
    value: object = ["x"] * 9
    for _ in range(9):
        value = [value] * 9
    started = time.monotonic()
    assert len(shown(value)) <= 80
    assert time.monotonic() - started < 1


@pytest.mark.parametrize("raw", [b"[" * 100_000 + b"]" * 100_000,
                                 b'{"name": "events", "partitions": ' + b"9" * 5000 + b"}",
                                 b"[1, 2]"], ids=["deep", "huge_int", "not_an_object"])
def test_a_hostile_recorded_topic_configuration_is_a_typed_error(tmp_path, raw):
    """The topic configuration the sink recorded (<root>/_seglog/topics/<topic>.json) is read by every
    sidecar pass: a RecursionError or AttributeError there escaped as a crash."""
    from seglog.errors import InvalidTopicError
    from seglog.indexer.topics import load_topic, topic_file

    f = topic_file(tmp_path, "events")
    f.parent.mkdir(parents=True)
    f.write_bytes(raw)
    with pytest.raises(InvalidTopicError, match=r"topic metadata .*events.json is unreadable") as err:
        load_topic(tmp_path, "events")
    assert len(str(err.value)) < 400
