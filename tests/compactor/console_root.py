"""A root for the console's tests: several topics (one compacted, one with hostile record bytes, one
tiered), written through the storage API and committed through the commit log as the sink commits, and
the figures each page must show, read back from the files (never from the sidecar)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

from seglog.indexer import Log, Record
from seglog.indexer.commit_log import CommitLog
from seglog.indexer.topics import create_topic

REPO = Path(__file__).resolve().parents[2]
T0 = time.time_ns() // 1_000_000 - 2 * 3_600_000      # two hours ago: inside every retention here
SMALL = {"segment.bytes": 2048, "segment.ms": 1 << 62, "index.interval.bytes": 128}
TOPICS = {
    "orders": (3, dict(SMALL, **{"retention.ms": 30 * 86_400_000})),
    "profiles": (1, dict(SMALL, **{"cleanup.policy": "compact", "min.cleanable.dirty.ratio": 0.99})),
    "hostile": (1, dict(SMALL)),
    "archive": (1, dict(SMALL, **{"remote.storage.enable": True, "local.retention.bytes": 0, "retention.ms": -1})),
}
# Two streaming queries' positions, as the connector writes them (indexer/consumer_positions.py; the format is
# pinned for both languages by tests/conformance/consumer_positions.json): one behind on orders, one caught up.
QUERIES = {"6f1c2a3b-0000-4000-8000-00000000000a": ("billing", {"orders": {"0": 12, "1": 50, "2": 33}}),
           "6f1c2a3b-0000-4000-8000-00000000000b": (None, {"profiles": {"0": 40}})}
HOSTILE_VALUE = b"<script>document.title='pwned'</script>\x00\x1b[31m\xff\xfe"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_root(root: Path) -> None:
    for topic, (partitions, cfg) in TOPICS.items():
        create_topic(root, topic, partitions, cfg)
        ends = {}
        for p in range(partitions):
            with Log.open(root / f"{topic}-{p}", cfg) as log:
                for i in range(40 + 10 * p):
                    if topic == "hostile":
                        rec = Record(key=b"<b>k%d</b>" % i, value=HOSTILE_VALUE,
                                     headers=(("<i>h</i>", b"\x01\x02<img src=x>"),), timestamp=T0 + i * 1000)
                    elif topic == "profiles":
                        rec = Record(key=b"user-%d" % (i % 7), value=json.dumps({"n": i}).encode(),
                                     timestamp=T0 + i * 1000)
                    else:
                        rec = Record(key=b"k%d" % i, value=json.dumps({"topic": topic, "i": i, "pad": "x" * 200}).encode(),
                                     headers=(("source", b"test"),), timestamp=T0 + i * 1000)
                    log.append([rec])
                log.flush()
                ends[p] = log.log_end_offset
        commits = CommitLog(root, topic)
        commits.commit(f"query-{topic}-a", 3, ends)
        commits.commit(f"query-{topic}-b", 7, ends)
    (root / "_seglog" / "consumers").mkdir(parents=True, exist_ok=True)
    for query_id, (name, offsets) in QUERIES.items():
        (root / "_seglog" / "consumers" / f"{query_id}.json").write_text(json.dumps({
            "format": 1, "query_id": query_id, "name": name, "checkpoint": f"file:/ckpt/{query_id}/sources/0",
            "offsets": offsets, "committed_ms": time.time_ns() // 1_000_000}))


def write_config(path: Path, root: Path, port: int, *, remote: dict | None, **http) -> Path:
    path.write_text(yaml.safe_dump({
        "root": str(root),
        "schedule": {"seal.interval.ms": 200, "roll.interval.ms": 300, "retention.check.interval.ms": 300,
                     "delete.check.interval.ms": 300, "clean.interval.ms": 300, "merge.interval.ms": 300,
                     "tier.interval.ms": 300, "partition.lock.timeout.ms": 100},
        "http": {"host": "127.0.0.1", "port": port, **http},
        "consumer": {"lag.interval.ms": 300},
        "console": {"records.enable": True, "page.size": 10, "sample.interval.ms": 200, "records.page.max": 50},
        **({"remote": remote} if remote else {}),
    }))
    return path


class Sidecar:
    """`python -m seglog compactor run --config F`, stopped by its pid (SIGTERM, exit 0) at the end."""

    def __init__(self, tmp_path: Path, config: Path, port: int, token: str | None = None):
        self.port, self.token = port, token
        self.log = tmp_path / f"sidecar-{port}.log"
        self._err = open(self.log, "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "seglog", "compactor", "run", "--config", str(config)],
                                     cwd=REPO, stdout=subprocess.DEVNULL, stderr=self._err, env=dict(os.environ))
        self.wait_for(lambda: self.get("/readyz")[0] == 200, "ready")

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def get(self, path: str, method: str = "GET", headers: dict | None = None) -> tuple[int | None, bytes, dict]:
        headers = dict(headers or {})
        if self.token and "Authorization" not in headers:
            headers["Authorization"] = f"Bearer {self.token}"
        req = urllib.request.Request(self.url(path), method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read(), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read(), dict(e.headers)
        except OSError:
            return None, b"", {}

    def wait_for(self, condition, what: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert self.proc.poll() is None, self.log.read_text()[-3000:]
            assert time.monotonic() < deadline, f"{what}: " + self.log.read_text()[-3000:]
            time.sleep(0.2)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            assert self.proc.wait(timeout=60) == 0, self.log.read_text()[-3000:]
        finally:
            self._err.close()
        assert "Traceback" not in self.log.read_text(), self.log.read_text()[-3000:]
