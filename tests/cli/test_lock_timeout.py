"""`--lock-timeout` of every subcommand that takes a partition's lock (issue 23, item 14): a value that
is not a finite number of seconds >= 0 (`nan` waited forever on a locked partition, `-1` gave up before
trying) is a usage error naming the flag (exit 2), checked before anything runs; valid values still
wait and give up as asked. The sidecar's `partition.lock.timeout.ms` is checked the same way."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from seglog.indexer import Log, Record
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.locks import partition_lock
from seglog.indexer.topics import create_topic
from tests.cli.helpers import digest

CFG = {"segment.bytes": 4096, "cleanup.policy": "compact"}

COMMANDS = {
    "recover": ["recover", "{root}"],
    "merge": ["merge", "{root}", "--topic", "events"],
    "compact": ["compact", "{root}", "--topic", "events"],
    "truncate": ["truncate", "{root}", "--topic", "events", "--partition", "0", "--to-offset", "5", "--yes"],
    "abort-transaction": ["abort-transaction", "{root}", "--topic", "events", "--partition", "0", "--all-open"],
}
BAD = ["nan", "NaN", "-1", "-0.5", "inf", "-inf", "1e400", "soon", ""]


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lock-timeout") / "root"
    create_topic(root, "events", 1, CFG)
    with Log.open(root / "events-0", CFG) as log:
        log.append([Record(key=b"k%d" % (i % 7), value=b"v%d" % i, timestamp=1_000 + i) for i in range(100)])
        end = log.log_end_offset
    CommitLog(root, "events").commit("w", 0, {0: end})
    return root


@pytest.fixture
def locked(root):
    """The partition's lock held by this process, as a writer holds it."""
    lock = partition_lock(root / "events-0").acquire(0)
    try:
        yield root
    finally:
        lock.release()


def run(argv: list[str], root: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "seglog", *[a.format(root=root) for a in argv]],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("value", BAD)
def test_a_lock_timeout_that_is_not_finite_and_non_negative_is_a_usage_error(locked, command, value):
    before = digest(locked)
    started = time.monotonic()
    done = run(COMMANDS[command] + ["--lock-timeout", value], locked, timeout=30)   # nan used to hang here
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "--lock-timeout" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert time.monotonic() - started < 25
    assert digest(locked) == before


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_valid_lock_timeout_still_gives_up_on_a_locked_partition(locked, command):
    before = digest(locked)
    started = time.monotonic()
    done = run(COMMANDS[command] + ["--lock-timeout", "0.3"], locked)
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "locked by another writer" in done.stdout + done.stderr
    assert 0.25 <= time.monotonic() - started < 20
    assert digest(locked) == before


def test_zero_tries_once_and_a_free_partition_is_taken(root):
    done = run(COMMANDS["recover"] + ["--lock-timeout", "0"], root)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("value", [".nan", "-1", ".inf", "1.5", "'soon'"])
def test_the_sidecars_partition_lock_timeout_is_checked_too(root, tmp_path, value):
    config = tmp_path / "compactor.yaml"
    config.write_text(f"root: {root}\nschedule: {{partition.lock.timeout.ms: {value}}}\n")
    before = digest(root)
    done = run(["compactor", "run", "--once", "--config", str(config)], root)
    assert done.returncode not in (0, None) and "partition.lock.timeout.ms" in done.stderr, done.stderr
    assert digest(root) == before


@pytest.mark.parametrize("command", ["abort-transaction", "truncate"])
def test_a_command_that_commits_waits_for_the_topics_writer_lock(root, command):
    """truncate and abort-transaction commit to the topic's commit log, so they hold its writer lock as every
    committer does (a write's commit removes the temporary commit files it sees under that lock as dead ones:
    CommitLogWriter.removeDeadTemps). Held elsewhere, the command gives up past --lock-timeout naming it, changing
    nothing."""
    from seglog.indexer.locks import topic_writer_lock

    before = digest(root)
    with topic_writer_lock(root, "events").acquire(0):
        started = time.monotonic()
        done = run(COMMANDS[command] + ["--lock-timeout", "0.3"], root)
        assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
        assert "topic events (sink writer) is locked by another writer" in done.stdout + done.stderr
        assert 0.25 <= time.monotonic() - started < 20
    assert digest(root) == before
