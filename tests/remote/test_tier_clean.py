"""The cleaner never rewrites a tiered segment (docs/tiered-storage.md §4): a topic tiered with
`remote.storage.enable`, then switched to `cleanup.policy = compact` (tiering off, as the topic
configuration requires), is cleaned only above its remote end, through the Python API and through the
real sidecar process's clean job. Below the remote end every local file stays byte for byte as copied."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from seglog.conf import validate_topic_config
from seglog.indexer import Log, Record
from seglog.indexer.compaction.cleaner import clean_partition, current_plan
from seglog.indexer.remote import metadata
from seglog.indexer.remote.location import RemoteLocation
from seglog.indexer.remote.store import RemoteStore
from seglog.indexer.remote.tier import tier_partition
from seglog.indexer.topics import create_topic

REPO = Path(__file__).resolve().parents[2]
T0 = 1_700_000_000_000
KEYS = 6                      # few keys: every later segment shadows records of the tiered ones
TIERED = {"segment.bytes": 1024, "segment.ms": 1 << 62, "index.interval.bytes": 64, "remote.storage.enable": True,
          "retention.ms": -1}
# The same topic switched to compaction: tiering off (a compacted topic is never tiered), due at once.
COMPACTED = {"remote.storage.enable": False, "cleanup.policy": "compact", "min.cleanable.dirty.ratio": 0.01,
             "delete.retention.ms": 0}


def append(root: Path, cfg: dict, start: int, n: int) -> None:
    with Log.open(root / "t-0", cfg) as log:
        for i in range(start, start + n):
            log.append([Record(key=b"k%d" % (i % KEYS), value=b"%06d" % i + b"v" * 200, timestamp=T0 + i)])
        log.roll()
        log.seal_inactive()


def tiered_root(tmp_path: Path) -> tuple[Path, dict, int, dict[str, bytes]]:
    """A root whose topic `t` was tiered (every sealed segment copied to a file:// remote), then switched to
    compact, with more records appended past the remote end. Returns the root, the compacted configuration,
    the remote end and the tiered segments' local files (name -> bytes)."""
    root = tmp_path / "root"
    create_topic(root, "t", 1, TIERED)
    append(root, TIERED, 0, 30)
    (tmp_path / "remote").mkdir()
    store = RemoteStore(RemoteLocation(f"file://{tmp_path}/remote"))
    tier_partition(root, "t", 0, validate_topic_config(TIERED), store)
    remote_end = metadata.read_state(root, "t", 0).end
    assert remote_end and remote_end >= 20
    compacted = dict(TIERED, **COMPACTED)
    append(root, compacted, 30, 30)
    tiered = {p.name: p.read_bytes() for p in sorted((root / "t-0").iterdir())
              if p.suffix in (".log", ".index", ".timeindex") and int(p.name.split(".")[0]) < remote_end}
    assert len(tiered) >= 6
    return root, compacted, remote_end, tiered


def assert_tiered_untouched(root: Path, remote_end: int, tiered: dict[str, bytes]) -> None:
    now = {p.name: p.read_bytes() for p in sorted((root / "t-0").iterdir())
           if p.suffix in (".log", ".index", ".timeindex") and int(p.name.split(".")[0]) < remote_end}
    assert now.keys() == tiered.keys()
    changed = [name for name in tiered if now[name] != tiered[name]]
    assert changed == []
    with Log.open(root / "t-0", readonly=True) as log:       # every tiered offset still there, dense
        assert [r.offset for r in log.read(0) if r.offset < remote_end] == list(range(remote_end))


def test_the_cleaner_called_directly_rewrites_nothing_below_the_remote_end(tmp_path):
    root, compacted, remote_end, tiered = tiered_root(tmp_path)
    cfg = validate_topic_config(compacted)
    with Log.open(root / "t-0", cfg, readonly=True) as log:
        plan = current_plan(log)
    assert plan.first_dirty == remote_end and plan.due     # the tiered part is neither clean nor dirty
    res = clean_partition(root / "t-0", cfg, force=True)
    assert res.cleaned and res.records_removed > 0        # the part above the remote end is compacted
    assert res.groups and all(g[0] >= remote_end for g in res.groups)
    assert_tiered_untouched(root, remote_end, tiered)
    with Log.open(root / "t-0", cfg) as log:               # Log.clean (the lock held) keeps the same rule
        log.append([Record(key=b"k0", value=b"again", timestamp=T0 + 99)])
        log.roll()
        log.seal_inactive()
        res = log.clean(force=True)
        assert all(g[0] >= remote_end for g in res.groups)
        latest = {r.key: r.value for r in log.read(remote_end)}
    assert latest[b"k0"] == b"again"
    assert_tiered_untouched(root, remote_end, tiered)


@pytest.mark.slow
def test_the_sidecar_clean_job_rewrites_nothing_below_the_remote_end(tmp_path):
    root, compacted, remote_end, tiered = tiered_root(tmp_path)
    config = tmp_path / "compactor.yaml"
    config.write_text(yaml.safe_dump({
        "root": str(root),
        # the switch, as an operator makes it in the sidecar's file: tiering off needs the remote data deleted
        # with it (KIP-950, docs/tiered-storage.md §4a); the local copies below the remote end stay as they were
        "topics": {"t": {**COMPACTED, "remote.log.delete.on.disable": True}},
        "remote": {"uri": f"file://{tmp_path}/remote"},
        "schedule": {"partition.lock.timeout.ms": 100},
    }))
    proc = subprocess.run([sys.executable, "-m", "seglog.compactor", "--config", str(config), "--once"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["failed"] == [], summary
    cleaned = [json.loads(line) for line in proc.stderr.splitlines()
               if line.startswith("{") and json.loads(line).get("event") == "partition.cleaned"]
    assert cleaned and cleaned[0]["records_removed"] > 0 and cleaned[0]["first_dirty_offset"] > remote_end
    assert_tiered_untouched(root, remote_end, tiered)
    with Log.open(root / "t-0", readonly=True) as log:
        above = [r.offset for r in log.read(remote_end)]
    assert len(above) < 60 - remote_end                    # the clean did remove records above it
