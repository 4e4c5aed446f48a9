"""Damaged metadata found by the real command (issue 23): a malformed `log-start-offset-checkpoint` is
reported, never ignored (items 12), and a segment whose `.index` or `.timeindex` is missing is named as
such by the read-only commands, rebuilt by the writable ones and by `seglog import` (item 13). Every
refusal changes no file."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from seglog.errors import CorruptIndexError, SeglogError
from seglog.indexer import Log, Record
from seglog.indexer.checkpoint import read_log_start_offsets
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.topics import create_topic
from tests.cli.helpers import seglog, digest

CFG = {"segment.bytes": 2048, "index.interval.bytes": 128, "segment.index.bytes": 4096}
CHECKPOINT = "log-start-offset-checkpoint"


def values(path: Path, **kw) -> list[bytes]:
    with Log.open(path, readonly=True, **kw) as log:
        return [r.value for r in log.read()]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A root with one topic of two partitions, four segments each (sealed, then the active one), committed."""
    root = tmp_path_factory.mktemp("damaged") / "root"
    create_topic(root, "events", 2, CFG)
    for p in (0, 1):
        with Log.open(root / f"events-{p}", CFG, outside_commit_log=True) as log:
            for i in range(60):
                log.append([Record(key=b"k%d" % i, value=b"v%d-%d " % (p, i) * 12, timestamp=1_000 + i)])
            log.seal_inactive()
            assert len(log.segment_bases()) >= 4
            end = log.log_end_offset
        CommitLog(root, "events").commit("w", p, {p: end})
    return root


@pytest.fixture
def root(built, tmp_path) -> Path:
    dst = tmp_path / "root"
    shutil.copytree(built, dst)
    return dst


def _bases(part: Path) -> list[int]:
    return sorted(int(f.stem) for f in part.glob("*.log"))


# ----------------------------------------------------------------------------- item 12: the checkpoint

GARBAGE = [
    (b"garbage\n\x00\xff more garbage\n", 1),
    (b"0\n2\nevents 0 0\nevents one 0\n", 4),          # a partition that is not a number
    (b"0\n3\nevents 0 0\nevents 1 0\n", 2),            # the count says 3, two entry lines follow
    (b"7\n0\n", 1),                                     # an unknown version
    (b"0\n1\nevents 0 1_000\n", 3),                     # Python's int() would take this; Kafka does not
]


@pytest.mark.parametrize("text, line", GARBAGE, ids=[f"line{g[1]}-{i}" for i, g in enumerate(GARBAGE)])
def test_verify_reports_a_malformed_log_start_checkpoint(root, text, line):
    (root / CHECKPOINT).write_bytes(text)
    before = digest(root)
    res = seglog("verify", root)
    assert res.returncode == 1, res.stdout
    assert f"{root / CHECKPOINT} line {line}:" in res.stdout, res.stdout
    assert "clean" not in res.stdout.splitlines()[-1]
    assert digest(root) == before


@pytest.mark.parametrize("text, line", GARBAGE[:3], ids=["garbage", "entry", "count"])
def test_reading_a_malformed_checkpoint_is_a_typed_error_naming_file_and_line(root, text, line):
    (root / CHECKPOINT).write_bytes(text)
    with pytest.raises(CorruptIndexError) as info:
        read_log_start_offsets(root)
    assert f"{root / CHECKPOINT} line {line}:" in str(info.value)


def test_a_well_formed_checkpoint_still_reads(root):
    (root / CHECKPOINT).write_bytes(b"0\n2\nevents 0 0\nevents 1 17\n")
    assert read_log_start_offsets(root) == {("events", 0): 0, ("events", 1): 17}
    assert seglog("verify", root).returncode == 0


def test_recover_resets_a_malformed_checkpoint_as_kafkas_log_manager_does(root):
    """Readers take each partition's log start from its first segment (Kafka's log manager at load);
    the writable open reports the malformed file (file and line) and rewrites it, after which retention
    can checkpoint again and `verify` is clean. What readers see does not change."""
    (root / CHECKPOINT).write_bytes(b"0\n1\nevents 0 zero\n")
    before = {p: values(root / f"events-{p}") for p in (0, 1)}
    res = seglog("recover", root)
    assert res.returncode == 0, res.stderr
    assert f"{root / CHECKPOINT} line 3:" in res.stdout and "rewritten" in res.stdout, res.stdout
    assert read_log_start_offsets(root) == {}
    assert {p: values(root / f"events-{p}") for p in (0, 1)} == before
    assert seglog("verify", root).returncode == 0
    with Log.open(root / "events-0", CFG, outside_commit_log=True) as log:      # retention's checkpoint update works again
        res = log.apply_retention(now=10**13)
    assert read_log_start_offsets(root)[("events", 0)] == res.log_start_offset > 0


def test_import_refuses_a_malformed_checkpoint_on_either_side(built, tmp_path):
    src = tmp_path / "broker"
    shutil.copytree(built / "events-0", src / "events-0")
    (src / CHECKPOINT).write_bytes(b"0\n1\nevents 0 x\n")
    dest = tmp_path / "dest"
    res = seglog("import", src, dest, "--topic", "t")
    assert res.returncode == 1 and f"{src / CHECKPOINT} line 3:" in res.stderr, res.stderr
    assert "nothing was imported" in res.stderr and not dest.exists()
    (src / CHECKPOINT).unlink()
    dest.mkdir()
    (dest / CHECKPOINT).write_bytes(b"garbage\n")
    before = digest(dest)
    res = seglog("import", src, dest, "--topic", "t")
    assert res.returncode == 1 and f"{dest / CHECKPOINT} line 1:" in res.stderr, res.stderr
    assert digest(dest) == before and not (dest / "t-0").exists()


# ----------------------------------------------------------------------------- item 13: a missing index

MISSING = [(0, ".index"), (1, ".timeindex"), (-1, ".index"), (-1, ".timeindex")]   # (segment, file)


@pytest.mark.parametrize("which, suffix", MISSING, ids=[f"seg{w}{s}" for w, s in MISSING])
def test_read_only_commands_name_the_missing_index(root, which, suffix):
    part = root / "events-0"
    base = _bases(part)[which]
    missing = part / f"{base:020d}{suffix}"
    missing.unlink()
    before = digest(root)
    res = seglog("verify", root)
    assert res.returncode == 1
    assert str(missing) in res.stdout and "missing" in res.stdout, res.stdout
    assert "deleted" not in res.stdout, res.stdout
    doc = json.loads(seglog("describe", root, "--json").stdout)
    err = next(p for p in doc["partitions"] if p["partition"] == 0)["error"]
    assert str(missing) in err and "missing" in err and "deleted" not in err, err
    text = seglog("describe", root / "events-0").stdout
    assert str(missing) in text and "deleted" not in text
    with pytest.raises(CorruptIndexError) as info:
        with Log.open(part, readonly=True) as log:
            assert any(str(missing) in problem for problem in log.verify())
            list(log.read())
    assert str(missing) in str(info.value)
    assert digest(root) == before


def test_verify_goes_on_past_a_missing_index(root):
    part = root / "events-0"
    bases = _bases(part)
    (part / f"{bases[0]:020d}.index").unlink()
    (part / f"{bases[2]:020d}.timeindex").unlink()
    res = seglog("verify", root)
    faults = [line for line in res.stdout.splitlines() if line.startswith("FAULT events-0")]
    assert len(faults) == 2, res.stdout
    assert "events-1" not in "".join(faults)


@pytest.mark.parametrize("which, suffix", MISSING, ids=[f"seg{w}{s}" for w, s in MISSING])
def test_recover_rebuilds_the_missing_index(root, which, suffix):
    part = root / "events-0"
    expected = values(part)
    base = _bases(part)[which]
    (part / f"{base:020d}{suffix}").unlink()
    res = seglog("recover", root)
    assert res.returncode == 0 and "rebuilt (missing)" in res.stdout, res.stdout
    assert (part / f"{base:020d}{suffix}").exists()
    assert seglog("verify", root).returncode == 0
    assert values(part) == expected


@pytest.mark.parametrize("link", [False, True], ids=["copy", "link"])
def test_import_rebuilds_a_missing_index_and_leaves_the_source_alone(built, tmp_path, link):
    """As Kafka's broker rebuilds an index it does not find when it loads a segment."""
    src = tmp_path / "broker" / "events-0"
    shutil.copytree(built / "events-0", src)
    bases = _bases(src)
    gone = [src / f"{bases[1]:020d}.index", src / f"{bases[-1]:020d}.timeindex"]
    for f in gone:
        f.unlink()
    before = digest(src.parent)
    dest = tmp_path / "dest"
    res = seglog("import", src, dest, "--topic", "t", *(["--link"] if link else []))
    assert res.returncode == 0, res.stderr
    for f in gone:
        assert f"{f} was missing" in res.stdout, res.stdout
        assert (dest / "t-0" / f.name).exists()
    assert digest(src.parent) == before                       # the broker's files untouched
    assert seglog("verify", dest).returncode == 0
    assert values(dest / "t-0") == values(built / "events-0")
    assert CommitLog(dest, "t").end_offsets() == {0: len(values(built / "events-0"))}


def test_a_refused_read_only_open_is_a_seglog_error(root):
    part = root / "events-1"
    (part / f"{_bases(part)[-1]:020d}.index").unlink()
    with pytest.raises(SeglogError):
        Log.open(part, readonly=True)
