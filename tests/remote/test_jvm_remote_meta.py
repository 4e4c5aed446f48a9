"""The JVM's reader of the remote segment metadata log (jvm/.../format/RemoteSegmentLog.java) and the
Python core's (indexer/remote/metadata.py) agree on the same files: each base's state, the remote log start
and end, a torn last line ignored, damage before it refused naming the line (docs/tiered-storage.md §3)."""
from __future__ import annotations

import json
import random
import re
import subprocess

from seglog.errors import CorruptRecordError
from seglog.indexer.remote import metadata
from tests import jvm_format_tool as tool


def copied(base, nxt, max_ts=1000):
    files = {k: {"size": 100 + base, "sha256": "ab" * 32} for k in ("log", "index", "timeindex")}
    return {"op": "copied", "base": base, "next": nxt, "last": nxt - 1, "max_ts": max_ts, "files": files, "at": 5}


def op(kind, base):
    return {"op": kind, "base": base, "at": 7}


def lines(*records):
    return b"".join(metadata.encode(r) for r in records)


GOOD = lines(copied(0, 10), copied(10, 25, -1), copied(25, 40))
CASES = {
    "empty": b"",
    "three copied": GOOD,
    "deleting and deleted": lines(copied(0, 10), copied(10, 25), op("deleting", 0), copied(25, 40), op("deleted", 0),
                                  op("deleting", 10)),
    "copied again after deleted": lines(copied(0, 10), op("deleting", 0), op("deleted", 0), copied(0, 10, 7)),
    "a copy started, then recorded": lines(op("copying", 0), copied(0, 10), op("copying", 10), copied(10, 25)),
    "a copy started and never recorded": lines(copied(0, 10), op("copying", 10)),
    "a copy started, swept": lines(copied(0, 10), op("copying", 10), op("deleted", 10), copied(10, 20)),
    "deleting an unknown base": lines(copied(0, 10), op("deleting", 99), op("deleted", 98)),
    "torn tail without newline": GOOD + metadata.encode(copied(40, 50))[:-9],
    "torn: a whole last line with a bad CRC": GOOD + b"00000000" + metadata.encode(copied(40, 50))[8:],
    "a bad CRC before the last line": lines(copied(0, 10)) + b"00000000" + metadata.encode(copied(10, 20))[8:] + GOOD,
    "a bad line before a torn tail": lines(copied(0, 10)) + b"junk\n" + b"12",
    "not JSON under a good CRC": lines(copied(0, 10)) + b"%08x not json\n" % 0 + lines(copied(10, 20)),
    "an unknown op, last": GOOD + metadata.encode({"op": "moved", "base": 3}),
    "an unknown op, before the last": metadata.encode({"op": "moved", "base": 3}) + GOOD,
    "a base that is not a number": metadata.encode({"op": "deleting", "base": "3"}) + GOOD,
    "a copied record without its next": GOOD + metadata.encode({k: v for k, v in copied(40, 50).items() if k != "next"}),
    "a short line": b"abc\n" + GOOD,
    "only a newline": b"\n",
}


def python_state(path):
    root = path.parent.parent.parent
    try:
        s = metadata.read_state(root, "t", 0)
    except CorruptRecordError as exc:
        return {"error": str(exc)}
    live = [[x.base, x.next, x.last, x.max_ts, x.size] for x in s.segments()]
    return {"ok": {"live": live, "deleting": sorted(s.deleting), "deleted": sorted(s.deleted), "start": s.start,
                   "end": s.end, "torn": s.torn}}


def random_cases(seed, n=40):
    """Random histories, each damaged at random: a flipped byte or a cut anywhere."""
    rng = random.Random(seed)
    out = {}
    for i in range(n):
        recs, base = [], 0
        for _ in range(rng.randint(1, 8)):
            roll = rng.random()
            if roll < 0.6:
                nxt = base + rng.randint(1, 30)
                recs.append(copied(base, nxt, rng.choice([-1, 5, 10**12])))
                base = nxt
            else:
                recs.append(op(rng.choice(["deleting", "deleted"]), rng.choice([0, base, base + 1])))
        data = bytearray(lines(*recs))
        damage = rng.random()
        if damage < 0.4 and data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif damage < 0.7 and data:
            del data[rng.randrange(len(data)):]
        out[f"random {seed}/{i}"] = bytes(data)
    return out


def test_the_jvm_and_python_readers_agree(tmp_path):
    cases = {**CASES, **random_cases(1), **random_cases(2)}
    paths = []
    for i, data in enumerate(cases.values()):
        path = metadata.metadata_path(tmp_path / f"r{i}", "t", 0)
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
        paths.append(path)
    proc = subprocess.run(tool.command("remote-states", *paths), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    jvm = json.loads(proc.stdout.strip().splitlines()[-1])
    kinds = set()
    for (name, _), path, got in zip(cases.items(), paths, jvm):
        want = python_state(path)
        assert ("ok" in got) == ("ok" in want), (name, got, want)
        if "ok" in want:
            assert got == want, name
            kinds.add("torn" if want["ok"]["torn"] else "whole")
        else:
            # both name the file and the line
            line = re.search(r"line (\d+)", want["error"]).group(1)
            assert str(path) in got["error"] and f"line {line}" in got["error"], (name, got, want)
            kinds.add("damaged")
    assert kinds == {"torn", "whole", "damaged"}          # the corpus reaches every outcome
