"""No path leaves the root, no file outside it is touched (issue 36, items 5 to 8): a symbolic link inside a
root is never followed (a linked segment file, a linked partition folder), a hard-linked file is never
changed in place (`seglog import --link`), an import never follows a link in its source nor widens a file's
mode, and a segment file name past int64 is refused by name. Each through the public path: the sidecar's
`--once` pass (start-up recovery, retention), the CLI, the storage API."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from seglog.errors import SegmentNameError, SymlinkInRootError
from seglog.indexer import Log, Record
from seglog.indexer.names import parse_segment_file
from tests.cli.helpers import seglog

REPO = Path(__file__).resolve().parents[2]
BROKER = REPO / "tests" / "conformance" / "corpus" / "broker-codecs" / "t-0"
SMALL = {"segment.bytes": 1024}
DAY = 86_400_000


def sha256s(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def write_log(path: Path, n: int, ts: int | None = None, cfg=SMALL) -> None:
    ts = ts if ts is not None else int(time.time() * 1000)
    with Log.open(path, cfg) as log:
        for i in range(n):
            log.append([Record(key=b"k%d" % i, value=b"v" * 300, timestamp=ts)])


def sidecar_once(tmp_path: Path, root: Path, **log_cfg) -> tuple[int, dict, str]:
    cfg = tmp_path / "sidecar.yaml"
    cfg.write_text(yaml.safe_dump({"root": str(root), "log": {"file.delete.delay.ms": 0, **log_cfg},
                                   "http": {"host": "127.0.0.1", "port": 1}}))
    proc = subprocess.run([sys.executable, "-m", "seglog.compactor", "--config", str(cfg), "--once"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


# ---------------------------------------------------------------- 5: symbolic links inside a root
def test_recovery_never_truncates_through_a_symlinked_segment_file(tmp_path):
    root = tmp_path / "root"
    write_log(root / "t-0", 3)
    outside = tmp_path / "outside.bin"
    outside.write_bytes(os.urandom(740))           # not a valid batch: recovery would cut it as a torn tail
    before = outside.read_bytes()
    active = sorted((root / "t-0").glob("*.log"))[-1]      # the active segment: recovery scans its tail
    active.unlink()
    active.symlink_to(outside)
    rc, summary, stderr = sidecar_once(tmp_path, root)
    assert outside.read_bytes() == before          # 740 bytes, byte for byte
    assert rc != 0 and [f.split(":")[0] for f in summary["failed"]] == ["t-0"]
    assert "symbolic link" in summary["failed"][0] and str(active) in summary["failed"][0]
    with pytest.raises(SymlinkInRootError, match=f"{active.name}: a symbolic link"):
        Log.open(root / "t-0")


def test_retention_never_deletes_through_a_symlinked_partition_folder(tmp_path):
    other = tmp_path / "other"
    write_log(other / "t-0", 20, ts=int(time.time() * 1000) - 10 * DAY)
    before = sha256s(other / "t-0")
    assert len([n for n in before if n.endswith(".log")]) > 2
    root = tmp_path / "root"
    root.mkdir()
    (root / "t-0").symlink_to(other / "t-0")
    rc, summary, stderr = sidecar_once(tmp_path, root, **{"retention.ms": 1000})
    assert sha256s(other / "t-0") == before        # nothing deleted, renamed or written in the other root
    assert rc != 0 and [f.split(":")[0] for f in summary["failed"]] == ["t-0"]
    assert "symbolic link" in summary["failed"][0]
    with pytest.raises(SymlinkInRootError):
        Log.open(root / "t-0", readonly=True)


def test_a_symlinked_lock_file_is_refused_and_its_target_never_created(tmp_path):
    root = tmp_path / "root"
    write_log(root / "t-0", 1)
    lock = root / "_seglog" / "locks" / "t-0.lock"
    assert lock.exists()
    lock.unlink()
    target = tmp_path / "elsewhere" / "planted"
    target.parent.mkdir()
    lock.symlink_to(target)
    with pytest.raises(SymlinkInRootError, match="t-0.lock: a symbolic link"):
        Log.open(root / "t-0")
    assert not target.exists()


@pytest.mark.parametrize("linked", ["_seglog", "_seglog/locks", "_seglog/topics"])
def test_a_symlinked_metadata_folder_is_refused_and_nothing_written_through_it(tmp_path, linked):
    """`_seglog` or a folder in it linked elsewhere (another root's metadata, any folder a group member
    can point at): commits, topic files and locks would be written there. Every Python entry refuses it
    by name (the sidecar's pass, the storage API, a topic's creation) and the target stays as it was."""
    from seglog.indexer.topics import create_topic

    root = tmp_path / "root"
    write_log(root / "t-0", 1)
    create_topic(root, "u", 1, {})
    real = root / linked
    target = tmp_path / "elsewhere"
    shutil.move(str(real), str(target))
    real.symlink_to(target)
    before = {p.relative_to(target): p.read_bytes() for p in target.rglob("*") if p.is_file()}
    cfg = tmp_path / "sidecar.yaml"
    cfg.write_text(yaml.safe_dump({"root": str(root), "http": {"host": "127.0.0.1", "port": 1}}))
    proc = subprocess.run([sys.executable, "-m", "seglog.compactor", "--config", str(cfg), "--once"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert f"{real}: a symbolic link inside the log root" in proc.stdout + proc.stderr
    if linked != "_seglog/topics":              # a writable open takes its lock under _seglog/locks
        with pytest.raises(SymlinkInRootError, match=f"{real.name}: a symbolic link"):
            Log.open(root / "t-0")
    if linked != "_seglog/locks":               # a topic's creation writes under _seglog/topics
        with pytest.raises(SymlinkInRootError, match=f"{real.name}: a symbolic link"):
            create_topic(root, "v", 1, {})
    assert {p.relative_to(target): p.read_bytes() for p in target.rglob("*") if p.is_file()} == before


# ---------------------------------------------------------------- 6: hard links are broken before a change
def test_appends_after_import_link_never_change_the_broker_files(tmp_path):
    src = tmp_path / "broker" / "t-0"
    shutil.copytree(BROKER, src)
    before = sha256s(src)
    root = tmp_path / "root"
    res = seglog("import", src, root, "--link")
    assert res.returncode == 0, res.stderr
    linked = [n for n in before if os.stat(root / "t-0" / n).st_nlink > 1]
    assert any(n.endswith(".log") for n in linked)          # the import did link (same filesystem)
    # outside_commit_log: the import committed the topic; this test plays a writer that commits itself
    with Log.open(root / "t-0", outside_commit_log=True) as log:   # recovery, preallocated indexes, an append
        end = log.log_end_offset
        last = log.segment(log.segment_bases()[-1])
        # The broker's own time: a record of now would roll a new segment (segment.ms), not append to its file.
        log.append([Record(key=b"x", value=b"y" * 100, timestamp=last.largest_timestamp())])
        assert log.segment_bases()[-1] == last.base_offset
        log.flush()
    assert sha256s(src) == before
    with Log.open(root / "t-0", readonly=True) as log:
        assert log.log_end_offset == end + 1 and log.verify() == []


def test_break_hard_link_keeps_bytes_and_mode(tmp_path):
    from seglog.indexer.fsutil import open_in_root

    a = tmp_path / "00000000000000000000.log"
    a.write_bytes(b"abc")
    os.chmod(a, 0o640)
    b = tmp_path / "other-name"
    os.link(a, b)
    fd = open_in_root(a, os.O_RDWR | os.O_TRUNC)
    os.write(fd, b"new")
    os.close(fd)
    assert b.read_bytes() == b"abc" and a.read_bytes() == b"new"
    assert stat.S_IMODE(os.stat(a).st_mode) == 0o640 and os.stat(b).st_nlink == 1


# ---------------------------------------------------------------- 7: an import never follows a link in its source
def test_import_refuses_a_symlink_in_the_source(tmp_path):
    src = tmp_path / "broker" / "t-0"
    shutil.copytree(BROKER, src)
    secret = tmp_path / "secret"
    secret.write_bytes(b"private")
    os.chmod(secret, 0o600)
    (src / "00000000000000000026.snapshot").unlink()
    (src / "00000000000000000026.snapshot").symlink_to(secret)
    root = tmp_path / "root"
    res = seglog("import", src, root)
    assert res.returncode != 0
    assert "00000000000000000026.snapshot" in res.stderr and "symbolic link" in res.stderr
    assert not (root / "t-0").exists()


def test_import_never_widens_a_files_mode(tmp_path):
    src = tmp_path / "broker" / "t-0"
    shutil.copytree(BROKER, src)
    os.chmod(src / "00000000000000000026.snapshot", 0o600)
    root = tmp_path / "root"
    res = seglog("import", src, root)
    assert res.returncode == 0, res.stderr
    assert stat.S_IMODE(os.stat(root / "t-0" / "00000000000000000026.snapshot").st_mode) == 0o600


# ---------------------------------------------------------------- 8: segment file names past int64
VECTORS = REPO / "tests" / "conformance" / "segment_names.json"


def test_segment_name_vectors():
    """tests/conformance/segment_names.json: the one rule, held here and by Java's SegmentNameTest."""
    cases = json.loads(VECTORS.read_text())
    assert cases
    for c in cases:
        if c.get("error"):
            with pytest.raises(SegmentNameError, match=c["name"].replace(".", r"\.")):
                parse_segment_file(c["name"])
        elif c.get("base") is None:
            assert parse_segment_file(c["name"]) is None, c
        else:
            assert parse_segment_file(c["name"])[0] == int(c["base"]), c


def test_a_segment_named_past_int64_is_refused_by_name_everywhere(tmp_path):
    root = tmp_path / "root"
    write_log(root / "t-0", 3)
    real = root / "t-0" / "00000000000000000000.log"
    bad = root / "t-0" / "99999999999999999999.log"
    shutil.copyfile(real, bad)
    bytes_before = bad.read_bytes()
    rc, summary, stderr = sidecar_once(tmp_path, root)
    assert rc != 0 and [f.split(":")[0] for f in summary["failed"]] == ["t-0"]
    assert "99999999999999999999.log" in summary["failed"][0]
    assert bad.read_bytes() == bytes_before            # never cut as a torn tail
    for cmd in (("describe", root), ("verify", root), ("dump", bad)):
        res = seglog(*cmd)
        assert res.returncode != 0 and "99999999999999999999.log" in res.stdout + res.stderr, (cmd, res.stdout, res.stderr)
    with pytest.raises(SegmentNameError):
        Log.open(root / "t-0", readonly=True)
