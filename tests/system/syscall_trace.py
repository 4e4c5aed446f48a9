"""A real process's mkdir, fsync, link and rename calls, in order, read from strace (Debian's, installed by
scripts/debian-packages.sh): the durability tests (tests/system/test_new_partition_durable.py,
tests/system/test_publish_fsyncs.py) check the order of a write's calls, which no crash short of a block-level one
would show. Without strace those tests fail; they never skip."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

STRACE = shutil.which("strace")
# 123  mkdir("/r/events-0", 0777) = 0   and   123  fsync(5</r>) = 0   (bench's trace adds a time after the thread
# id and a duration at the end)
HEAD = r"^\d+\s+(?:\d+\.\d+\s+)?"
MKDIR = re.compile(HEAD + r'mkdir(?:at)?\((?:[^,]*, )?"(?P<path>[^"]+)", \d+\)\s+= 0(?:\s+<[\d.]+>)?$')
FSYNC = re.compile(HEAD + r"f(?:data)?sync\(\d+<(?P<path>[^>]+)>")


def strace() -> str:
    if STRACE is None:
        pytest.fail("strace is not installed: `bash scripts/debian-packages.sh` as root (run by "
                    "scripts/setup-test.sh) installs Debian's")
    return STRACE


def calls(trace: Path) -> list[str]:
    """The trace's lines, an interrupted call joined with its resumption (strace splits a call that
    overlapped another thread's into `<unfinished ...>` and `<... x resumed>`)."""
    pending: dict[str, str] = {}
    out = []
    for line in trace.read_text().splitlines():
        tid = line.split(None, 1)[0]
        if line.endswith("<unfinished ...>"):
            pending[tid] = line[: -len("<unfinished ...>")].rstrip()
        elif " resumed>" in line and tid in pending:
            out.append(pending.pop(tid) + line.split(" resumed>", 1)[1])
        else:
            out.append(line)
    return out


def spark_calls(tmp_path: Path, script: str, traced: str | None = None) -> list[str]:
    """Run `script` (Python source; it starts its own local Spark session) with the driver JVM under strace
    (bench/write_breakdown.py's wrapper: mkdir, fsync, link and rename among others, or the calls `traced` names in
    strace's -e trace= syntax); its calls, in order."""
    from bench.write_breakdown import _TRACED, java_home_under_strace

    trace = tmp_path / "trace"
    strace()
    home = java_home_under_strace(tmp_path / "java", trace, traced or _TRACED)
    assert home is not None, "strace cannot trace here (ptrace refused): this test needs it"
    env = dict(os.environ, JAVA_HOME=home)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return calls(trace)


def commit_link(root: Path, topic: str) -> re.Pattern:
    """The link (or rename) that publishes one of `topic`'s commit files under `root`."""
    return re.compile(rf'(?:link|rename)\w*\(.*"{re.escape(str(root))}/_seglog/commits/{topic}/\d+\.json"')
