"""Cleaning side by side with Kafka's own LogCleaner (issue 24): MB/s on the same records, and the
peak memory of `seglog compact` as a process against its dedupe budget.

Method: one session writes the data once with seglog (keyed updates, ~1% tombstones, random
incompressible values, producer-sized 16 KiB batches, rolled segments, nothing cleaned yet), as three
identical topics, `warm1`, `warm2` and `bench`. Kafka side: a real broker (tests/kafka_broker.py, KRaft, one
node, 4.1, with kafka-run-class.sh's JVM options) created both topics (cleanup.policy=compact, the same segment.bytes); for each of its
runs it is stopped, the partitions' files are replaced by seglog's segment files (the broker reads
seglog's folders as its own: tests/indexer/test_kafka_broker_serves_seglog.py), its cleaner
checkpoint removed, and it is started with one cleaner thread and the same dedupe buffer; the
topics' min.cleanable.dirty.ratio is 1.0 (never due) until the broker has run 8 s (its start-up
done), then 0.01 (the same as seglog's). Its cleaner cleans the three logs, one after the other; the figure is the last one's own statistics
line ("... MB of log processed in ... seconds (... MB/sec)"), so JIT warm-up (C2 still improves on the
second log) falls on the first two. seglog side: one process per run on a fresh copy cleans the three
in the same way and the last is timed (`Log.clean`). Both exclude start-up (the JVM and the broker's log loading; Python's imports) and both
fsync what they write. Rounds interleave (Kafka, seglog, seglog, Kafka, ...), after one warm-up run of
each; reported: the median of per-round ratios (seglog MB/s / Kafka MB/s) with min and max, MB being
the dirty bytes each cleaned (the same segments), and the records each kept.
Memory: `seglog compact` run as a process (the command line, whole), its max RSS from wait4, next
to the max RSS of the same command cleaning a tiny topic (the fixed cost: interpreter, Arrow, numba and
its compiled kernels loaded):
the growth is what cleaning adds, checked against the budget + 64 MiB, once with a map far below
the budget and once with unique keys that fill a small budget. Run: `python -m bench.cleaner_vs_kafka
[--quick]`.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from seglog.indexer import Log  # noqa: E402

TOPICS = ("warm1", "warm2", "bench")      # identical logs: the last cleaned is measured
VALUE = 90
BUDGET = 128 << 20
FULL_BUDGET = 16 << 20            # the case whose unique keys fill the map
MIB = 1 << 20
SETTLE_S = 8
TS = 1_700_000_000_000

_STATS = re.compile(r"cleaned log (?P<log>\S+) \(dirty section = \[(?P<lo>\d+), (?P<hi>\d+)\]\)\s+"
                    r"(?P<mb>[\d,.]+) MB of log processed in (?P<s>[\d,.]+) seconds \((?P<mbps>[\d,.]+) MB/sec\)"
                    r"(?P<rest>.*?)End size: [\d,.]+ MB \((?P<kept>[\d,]+) messages\)", re.S)

_CHILD = r"""
import json, sys, time
from seglog.indexer import Log
root, now, budget, config = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024
out = {}
for topic in ("warm1", "warm2", "bench"):
    with Log.open(f"{root}/{topic}-0", config) as log:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        before = rss("VmRSS:")
        t = time.perf_counter()
        res = log.clean(now, dedupe_buffer_bytes=budget)
        out = {"seconds": time.perf_counter() - t, "dirty_bytes": res.dirty_bytes_cleaned,
               "kept": res.records_read - res.records_removed, "peak_rss_growth": rss("VmHWM:") - before,
               "map_bytes": res.map_bytes}
print(json.dumps(out))
"""


def topic_config(segment_bytes: int, ratio: float = 0.01) -> dict:
    return {"cleanup.policy": "compact", "segment.bytes": segment_bytes, "min.cleanable.dirty.ratio": ratio}


def build(part: Path, n: int, keys_n: int, segment_bytes: int, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    with Log.open(part, topic_config(segment_bytes)) as log:
        step = 50_000
        for lo in range(0, n, step):
            m = min(step, n - lo)
            ks = rng.integers(0, keys_n, m) if keys_n else np.arange(lo, lo + m)
            keys = pa.array([b"key-%08d" % k for k in ks.tolist()], pa.binary())
            blob = rng.bytes(VALUE * m)
            vals = pa.array([None if (lo + i) % 100 == 0 else blob[i * VALUE:(i + 1) * VALUE] for i in range(m)],
                            pa.binary())
            log.append_columns(vals, keys, np.full(m, TS, np.int64), max_batch_bytes=16384)
        log.roll()


def seglog_run(src_root: Path, work: Path, now: int, segment_bytes: int) -> dict:
    run = work / "seglog-run"
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(src_root, run)
    out = subprocess.run([sys.executable, "-c", _CHILD, str(run), str(now), str(BUDGET),
                          json.dumps(topic_config(segment_bytes))],
                         capture_output=True, text=True, check=True)
    shutil.rmtree(run)
    return json.loads(out.stdout)


# kafka-run-class.sh's defaults (KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS): the broker as shipped,
# not the tests' fixture flags (C1 only, serial GC), which start faster and run slower.
KAFKA_JVM = ["-Xmx1G", "-Xms1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
             "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15",
             "-Djava.awt.headless=true"]


def _shipped_broker(workdir: Path, extra_config: dict):
    from tests.kafka_broker import KafkaBroker, broker_classpath
    from tests.kafka_tools import java_executable

    class ShippedBroker(KafkaBroker):
        def _java(self, main_class: str, args: list[str], **popen) -> list[str]:
            return [java_executable(), *KAFKA_JVM, f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}",
                    "-cp", broker_classpath(), main_class, *args]

    return ShippedBroker(workdir, extra_config=extra_config)


class KafkaSide:
    def __init__(self, work: Path, segment_bytes: int):
        from tests.kafka_clients import create_topic

        self.broker = _shipped_broker(work / "kafka", extra_config={
            "log.cleaner.threads": "1", "log.cleaner.dedupe.buffer.size": str(BUDGET),
            "log.cleaner.backoff.ms": "100"})
        self.broker.start()
        for t in TOPICS:
            # Ratio 1.0: never due (Kafka cleans above the ratio, strictly) until `run` lowers it.
            create_topic(self.broker, t, 1, {k: str(v) for k, v in topic_config(segment_bytes, 1.0).items()})
        self.broker.stop()

    def _make_due(self) -> None:
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

        from tests.kafka_clients import admin

        client = admin(self.broker)
        res = [ConfigResource(ResourceType.TOPIC, t, incremental_configs=[ConfigEntry(
            "min.cleanable.dirty.ratio", "0.01", incremental_operation=AlterConfigOpType.SET)]) for t in TOPICS]
        for f in client.incremental_alter_configs(res).values():
            f.result(60)

    def run(self, src_root: Path) -> dict:
        """One broker run over fresh copies; the stats of the log it cleaned last."""
        for t in TOPICS:
            part = self.broker.partition_dir(t)
            for p in part.iterdir():
                if p.name not in ("partition.metadata", "leader-epoch-checkpoint"):
                    p.unlink()
            for p in (src_root / f"{t}-0").iterdir():
                if p.suffix in {".log", ".index", ".timeindex"}:
                    shutil.copy2(p, part / p.name)
        (self.broker.log_dir / "cleaner-offset-checkpoint").unlink(missing_ok=True)
        start = self.broker.broker_log.stat().st_size if self.broker.broker_log.exists() else 0
        self.broker.start()
        try:
            time.sleep(SETTLE_S)                     # the broker's start-up (JIT, metadata) done first
            self._make_due()
            deadline = time.monotonic() + 300
            while True:
                text = self.broker.broker_log.read_bytes()[start:].decode(errors="replace")
                found = [m for m in _STATS.finditer(text) if m["log"].rsplit("-", 1)[0] in TOPICS]
                if len(found) >= len(TOPICS):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Kafka's cleaner did not report both logs; its log:\n{text[-4000:]}")
                time.sleep(0.2)
        finally:
            self.broker.stop()
        m = found[len(TOPICS) - 1]
        num = lambda s: float(s.replace(",", ""))   # noqa: E731
        return {"log": m["log"], "mib": num(m["mb"]), "mib_per_s": num(m["mbps"]),
                "seconds": num(m["mb"]) / num(m["mbps"]), "dirty_end": int(m["hi"]), "kept": int(num(m["kept"]))}


# A child's ru_maxrss keeps the high-water mark of the process it was forked from (Linux carries it
# across exec), so the command is started by a small process of its own and measured there.
_MAX_RSS = r"""
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024)
"""


def compact_max_rss(root: Path, topic: str, budget: int, now: int, segment_bytes: int) -> int:
    """Max RSS (bytes) of `seglog compact` cleaning `topic` as a process of its own."""
    exe = Path(sys.executable).with_name("seglog")
    cmd = [str(exe), "compact", str(root), "--topic", topic, "--dedupe-buffer-size", str(budget), "--now", str(now),
           *[a for k, v in topic_config(segment_bytes).items() for a in ("--config", f"{k}={v}")]]
    out = subprocess.run([sys.executable, "-c", _MAX_RSS, *cmd], capture_output=True, text=True, check=True)
    code, rss = (int(x) for x in out.stdout.split()[-2:])
    if code != 0:
        raise RuntimeError(f"seglog compact exited {code}: {out.stderr[-2000:]}")
    return rss


def memory_case(work: Path, name: str, n: int, keys_n: int, segment_bytes: int, budget: int, now: int) -> dict:
    root = work / f"mem-{name}"
    build(root / "bench-0", n, keys_n, segment_bytes, seed=2)
    build(root / "tiny-0", 2_000, 100, 64 << 10, seed=3)
    peaks, bases = [], []
    for _ in range(2):
        run = work / "mem-run"
        shutil.rmtree(run, ignore_errors=True)
        shutil.copytree(root, run)
        bases.append(compact_max_rss(run, "tiny", budget, now, 64 << 10))
        peaks.append(compact_max_rss(run, "bench", budget, now, segment_bytes))
        shutil.rmtree(run)
    base, peak = min(bases), max(peaks)
    return {"case": name, "records": n, "keys": keys_n or n, "budget_mib": budget / MIB,
            "max_rss_mib": peak / MIB, "max_rss_tiny_topic_mib": base / MIB,
            "growth_mib": (peak - base) / MIB, "within_budget_plus_64mib": peak - base <= budget + 64 * MIB,
            # The whole process, fixed cost included (numba and LLVM alone are ~115 MiB of it).
            "process_within_budget_plus_64mib": peak <= budget + 64 * MIB}


def run(quick: bool = False) -> dict:
    n, keys_n, seg = (500_000, 12_500, 4 << 20) if quick else (2_000_000, 50_000, 16 << 20)
    rounds = 3 if quick else 5
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-cleaner-kafka-"))
    try:
        src = work / "src"
        build(src / f"{TOPICS[0]}-0", n, keys_n, seg)
        for t in TOPICS[1:]:
            shutil.copytree(src / f"{TOPICS[0]}-0", src / f"{t}-0")
        kafka = KafkaSide(work, seg)
        now = int(time.time() * 1000)
        kafka.run(src)                               # warm-up runs, not counted
        seglog_run(src, work, now, seg)
        k_runs, s_runs = [], []
        for r in range(rounds):
            order = ("kafka", "seglog") if r % 2 == 0 else ("seglog", "kafka")
            for side in order:
                if side == "kafka":
                    k_runs.append(kafka.run(src))
                else:
                    s_runs.append(seglog_run(src, work, int(time.time() * 1000), seg))
        ratios, s_mibs, k_mibs = [], [], []
        for s, k in zip(s_runs, k_runs):
            sm = s["dirty_bytes"] / MIB / s["seconds"]
            km = s["dirty_bytes"] / MIB / k["seconds"]   # the same segments: Kafka read mib of them
            s_mibs.append(sm)
            k_mibs.append(km)
            ratios.append(sm / km)
        mem = [memory_case(work, "50k-style keys", n, keys_n, seg, BUDGET, now),
               memory_case(work, "unique keys fill the map", n // 2, 0, seg, FULL_BUDGET, now)]
        return {
            "records": n, "keys": keys_n, "segment_bytes": seg, "dedupe_budget_mib": BUDGET / MIB,
            "dirty_mib": s_runs[-1]["dirty_bytes"] / MIB, "kafka_mib_read": k_runs[-1]["mib"],
            "seglog_mib_per_s_median": statistics.median(s_mibs), "kafka_mib_per_s_median": statistics.median(k_mibs),
            "seglog_vs_kafka": {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios),
                                "rounds": rounds},
            "records_kept": {"seglog": s_runs[-1]["kept"], "kafka": k_runs[-1]["kept"]},
            "seglog_peak_rss_growth_in_process_mib": statistics.median(s["peak_rss_growth"] for s in s_runs) / MIB,
            "memory": mem,
            "rounds_raw": {"seglog": s_runs, "kafka": k_runs},
            "method": __doc__.split("Method: ")[1].split("Run:")[0].strip().replace("\n", " "),
            "machine": {"cpus": os.cpu_count(), "load_avg": os.getloadavg(),
                        "time": time.strftime("%Y-%m-%d %H:%M:%S %Z")}}
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    load_before = os.getloadavg()
    result = run(quick="--quick" in sys.argv)
    result["load_avg_before"] = load_before
    result["quick"] = "--quick" in sys.argv
    out = Path(__file__).resolve().parent / "results" / "cleaner_vs_kafka.json"
    out.write_text(json.dumps(result, indent=2, default=float))
    print(json.dumps({k: v for k, v in result.items() if k not in ("rounds_raw", "method")}, indent=2, default=float))
