"""Tiered storage benchmark (issue 26, docs/tiered-storage.md), against a real S3 server on loopback (moto's
server mode, as the tests run it), in one session:

- replay: `format("seglog")` reading a whole topic whose sealed segments are on the remote tier (s3a://, the
  loopback server; only the active segment local) against the same records all on the local tier; a `noop`
  write, so every row reaches the JVM. The reader keeps fetched byte ranges in an executor-side cache, so each
  remote round reads a freshly tiered copy (its own prefix: nothing cached); ratio = remote / local time. A
  third and a fourth case download the same .log objects plainly (one after another; in parallel ranged
  GETs): the server's own floor for any remote replay. Each round's objects are removed after it, so every
  round meets the server in the same state. The same replay and floors again at 10x history (10x the rows and
  segments), which tells costs per query (planning, the first fetch) from costs per byte (the server's rate);
- copy: the sidecar's tier pass (`tier_partition`: objects streamed and hashed, manifests, metadata records,
  local retention) against a plain upload of the same segment files to the same server (pyarrow.fs, the
  client the tier job uses); ratio = tier pass / plain upload time;
- memory: the peak RSS of a fresh process running one tier pass (the log built beforehand by another), at 1x and
  10x segment size (the same bytes in fewer, larger segments) and at 1x and 10x segment count (10x the bytes);
  flat is 1.

Method (bench/method.py): every case warmed up, interleaved rounds, median of per-round ratios with min and max.
"""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench import _spark_bench as sb
from bench import method

REPO = Path(__file__).resolve().parent.parent
TOPIC = "t"
BASE_CFG = {"segment.ms": 1 << 62, "retention.ms": -1}


def build_log(root: Path, rows: int, segment_bytes: int, tiered: bool) -> int:
    """`rows` records (16-byte keys, 200-byte values) in one partition, committed; sealed segments below the
    active one. Returns the log's bytes."""
    from seglog.indexer import Log
    from seglog.indexer.commit_log import CommitLog
    from seglog.indexer.topics import create_topic

    cfg = dict(BASE_CFG, **{"segment.bytes": segment_bytes})
    if tiered:
        cfg.update({"remote.storage.enable": True, "local.retention.bytes": 1})
    create_topic(root, TOPIC, 1, cfg)
    pool = sb._pool(9)
    with Log.open(root / f"{TOPIC}-0", cfg) as log:
        for lo in range(0, rows, 50_000):
            hi = min(rows, lo + 50_000)
            g, keys, values = sb.global_rows(lo, hi, 1, pool)
            log.append_columns(values, keys, sb.TS0 + g)
        log.roll()
        log.seal_inactive()
        end, size = log.log_end_offset, log.size_bytes()
    CommitLog(root, TOPIC).commit("bench", 0, {0: end})
    return size


def tier(root: Path, location) -> dict:
    from seglog.conf.topic_config import validate_topic_config
    from seglog.indexer.remote.location import record_location
    from seglog.indexer.remote.store import RemoteStore
    from seglog.indexer.remote.tier import tier_partition
    from seglog.indexer.topics import load_topic

    record_location(root, location)
    cfg = validate_topic_config(load_topic(root, TOPIC).config)
    res = tier_partition(root, TOPIC, 0, cfg, RemoteStore(location))
    if not res.copied or not res.local_deleted:
        raise RuntimeError(f"bench tier: the pass copied {res.copied} and deleted {res.local_deleted} locally")
    return {"copied": len(res.copied), "local_deleted": len(res.local_deleted)}


def plain_upload(folder: Path, location, prefix: str) -> None:
    """The same segment files uploaded as they are, streamed in the tier job's chunk size."""
    from seglog.indexer.remote.store import CHUNK, RemoteStore

    store = RemoteStore(location)
    for f in sorted(folder.iterdir()):
        if f.suffix in (".log", ".index", ".timeindex"):
            with open(f, "rb") as src, store.fs.open_output_stream(store.path(f"{prefix}/{f.name}")) as dst:
                while chunk := src.read(CHUNK):
                    dst.write(chunk)


def _drop(location) -> None:
    """Removes a round's objects from the server: every round meets a server holding the same (small) state."""
    from seglog.indexer.remote.store import RemoteStore

    store = RemoteStore(location)
    store.fs.delete_dir_contents(store.path(""), missing_dir_ok=True)


def _location(server, bucket: str):
    from seglog.indexer.remote.location import RemoteLocation

    return RemoteLocation(f"s3a://{bucket}/{uuid.uuid4().hex[:12]}", endpoint=server.endpoint, region="us-east-1")


def _peak_rss_mb(args: list[str], env: dict) -> float:
    """Peak RSS of a fresh process running `bench.tier --memory-case ...`."""
    out = subprocess.run([sys.executable, "-m", "bench.tier", "--memory-case", *args], cwd=REPO, env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"bench tier memory case failed: {out.stderr[-2000:]}")
    return float(out.stdout.strip().splitlines()[-1])


def memory_case(root: str, endpoint: str, bucket: str) -> None:
    """In a fresh process: one tier pass over a log built beforehand; prints the process's peak RSS (MiB)."""
    import resource

    from seglog.indexer.remote.location import RemoteLocation

    tier(Path(root), RemoteLocation(f"s3a://{bucket}/{uuid.uuid4().hex[:12]}", endpoint=endpoint, region="us-east-1"))
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def replay_cases(spark, server, bucket: str, work: Path, local_root: Path, source: Path, rows: int, rounds: int,
                 plain: bool) -> tuple[dict[str, list[float]], dict[str, list[dict[str, float]]]]:
    """Seconds per round of a whole `format("seglog")` read (a `noop` write, so every row reaches the JVM) of a
    freshly tiered copy of `source` (its own prefix: nothing in the reader's cache) against the same records on the
    local tier (`local_root`), and of the server's floors: the same .log objects downloaded plainly (pyarrow.fs), one
    after another in 1 MiB reads (`plain`), and in 4 MiB ranges 8 at a time (S3's guidance for throughput: parallel
    ranged GETs). Each round's objects are removed after it, so every round meets the server in the same state; the
    last tiered copy is read once more and its rows counted.

    Also returns, per case and round, the CPU seconds the S3 server, Spark's JVM and this process used over the
    timed span: the server (moto, one Python process) and the reader share this machine's cores, so a remote
    replay can be no faster than the CPU both need (`cpu_floor`)."""
    from concurrent.futures import ThreadPoolExecutor

    from seglog.indexer.remote.store import RemoteStore

    n = [0]
    last_remote: list[tuple[Path, object]] = []
    meter = method.CpuMeter({"server": server.proc.pid, "jvm": spark.sparkContext._gateway.proc.pid,
                             "bench": os.getpid()})
    cpu: dict[str, list[dict[str, float]]] = {}
    beans = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()

    def jvm_gc() -> tuple[float, float]:
        """The JVM's collections so far and their seconds, all collectors (less noisy than wall time on a shared
        machine: a replay's heap churn shows here)."""
        return (float(sum(b.getCollectionCount() for b in beans)),
                sum(b.getCollectionTime() for b in beans) / 1000)

    def metered(name: str, span) -> float:
        gc_before, before, t0 = jvm_gc(), meter.read(), time.perf_counter()
        span()
        took = time.perf_counter() - t0
        used = meter.since(before)
        gc_after = jvm_gc()
        used["jvm_gc_count"], used["jvm_gc_s"] = gc_after[0] - gc_before[0], gc_after[1] - gc_before[1]
        cpu.setdefault(name, []).append(used)
        return took

    def noop(root: Path) -> None:
        (spark.read.format("seglog").option("topic", TOPIC).load(str(root))
         .write.format("noop").mode("overwrite").save())

    def fresh_tiered_copy(kind: str):
        n[0] += 1
        root = work / f"{kind}-{rows}-{n[0]}"
        shutil.copytree(source, root)
        loc = _location(server, bucket)
        tier(root, loc)
        return root, loc

    def remote_case() -> float:
        root, loc = fresh_tiered_copy("remote")
        took = metered("remote", lambda: noop(root))
        for old_root, old_loc in last_remote:        # the last copy stays for the row count below
            shutil.rmtree(old_root)
            _drop(old_loc)
        last_remote[:] = [(root, loc)]
        return took

    def download(parallel: bool) -> float:
        root, loc = fresh_tiered_copy("download")
        store = RemoteStore(loc)
        keys = [f"{TOPIC}-0/{name}" for name in store.list(f"{TOPIC}-0") if name.endswith(".log")]
        sizes = {key: store.size(key) for key in keys}

        def get(job):
            key, lo = job
            with store.fs.open_input_file(store.path(key)) as f:
                f.read_at(min(4 << 20, sizes[key] - lo), lo)

        def transfer() -> None:
            if parallel:
                with ThreadPoolExecutor(8) as pool:
                    list(pool.map(get, [(k, lo) for k in keys for lo in range(0, sizes[k], 4 << 20)]))
            else:
                for key in keys:
                    with store.fs.open_input_stream(store.path(key)) as f:
                        while f.read(1 << 20):
                            pass

        took = metered("parallel_download" if parallel else "plain_download", transfer)
        shutil.rmtree(root)
        _drop(loc)
        return took

    count = spark.read.format("seglog").option("topic", TOPIC).load(str(local_root)).count()
    if count != rows:
        raise RuntimeError(f"bench tier: the local log reads {count} rows, not {rows}")
    cases = {"remote": remote_case, "local": lambda: metered("local", lambda: noop(local_root))}
    if plain:
        cases["plain_download"] = lambda: download(False)
    cases["parallel_download"] = lambda: download(True)
    times = method.interleaved(cases, rounds, warmup=1)
    cpu = {name: spans[-rounds:] for name, spans in cpu.items()}     # the warm-up's spans are not rounds
    probe, probe_loc = last_remote[0]
    remote_count = spark.read.format("seglog").option("topic", TOPIC).load(str(probe)).count()
    if remote_count != rows:
        raise RuntimeError(f"bench tier: the tiered log reads {remote_count} rows, not {rows}")
    shutil.rmtree(probe)
    _drop(probe_loc)
    return times, cpu


def cpu_floor(times: dict[str, list[float]], cpu: dict[str, list[dict[str, float]]]) -> dict:
    """The floor of a remote replay on this machine, per round: the CPU the JVM needs to read the records (the local
    replay's) plus the CPU the server needs to send their bytes (the parallel download's), over the machine's
    cores, and never below the parallel download's own time. A remote reader can overlap fetching with decoding,
    but not past the cores both sides share. The remote replay's own CPU per side is reported beside it."""
    cores = os.cpu_count() or 1
    floor = [max(dl, (local["jvm"] + served["server"]) / cores)
             for dl, local, served in zip(times["parallel_download"], cpu["local"], cpu["parallel_download"])]

    def median_of(name: str, side: str) -> float:
        return statistics.median(span[side] for span in cpu[name])

    return {
        "cores": cores,
        "floor_s": method.summary(floor),
        "replay_remote_over_cpu_floor": method.ratio(times["remote"], floor),
        "cpu_s_median": {name: {side: median_of(name, side) for side in ("server", "jvm", "bench")} for name in cpu},
        "jvm_gc_median": {name: {"count": median_of(name, "jvm_gc_count"), "seconds": median_of(name, "jvm_gc_s")}
                          for name in cpu},
        "what": "floor = max(parallel download's time, (the local replay's JVM CPU + the parallel download's "
                "server CPU) / cores): the S3 server (moto, one Python process) and Spark share this machine's cores",
    }


def run(quick: bool = False) -> dict:
    sys.path.insert(0, str(REPO))
    from tests.s3_server import S3Server

    from seglog.sink.session import local_session

    rows = 100_000 if quick else 400_000
    rounds = 3 if quick else 5
    segment_bytes = 8 << 20
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-tier-"))
    server = S3Server(work / "s3")
    os.environ.update(S3Server.env())
    server.start()
    spark = None
    try:
        bucket = server.make_bucket(f"bench-{uuid.uuid4().hex[:8]}").removeprefix("s3://")
        local_root, source = work / "local", work / "source"
        log_bytes = build_log(local_root, rows, segment_bytes, tiered=False)
        build_log(source, rows, segment_bytes, tiered=True)

        # copy: the tier pass on a fresh copy of the source root vs a plain upload of its files
        n = [0]

        def tier_case() -> float:
            n[0] += 1
            root = work / f"tier-{n[0]}"
            shutil.copytree(source, root)
            loc = _location(server, bucket)
            t0 = time.perf_counter()
            tier(root, loc)
            took = time.perf_counter() - t0
            shutil.rmtree(root)
            _drop(loc)
            return took

        def upload_case() -> float:
            loc = _location(server, bucket)
            t0 = time.perf_counter()
            plain_upload(source / f"{TOPIC}-0", loc, "plain")
            took = time.perf_counter() - t0
            _drop(loc)
            return took

        copy_times = method.interleaved({"tier_pass": tier_case, "plain_upload": upload_case}, rounds, warmup=1)

        # replay: a whole read of a freshly tiered copy (nothing cached) vs the same records local, at 1x and at 10x
        # history (the second tells fixed costs per query from costs per byte)
        spark = local_session("seglog-bench-tier", with_s3a=True, driver_memory="6g")
        conf = spark.sparkContext._jsc.hadoopConfiguration()
        conf.set("fs.s3a.access.key", "testing")
        conf.set("fs.s3a.secret.key", "testing")
        replay_times, replay_cpu = replay_cases(spark, server, bucket, work, local_root, source, rows, rounds, plain=True)
        replay_10x = None
        if not quick:
            local_10x, source_10x = work / "local-10x", work / "source-10x"
            log_bytes_10x = build_log(local_10x, rows * 10, segment_bytes, tiered=False)
            build_log(source_10x, rows * 10, segment_bytes, tiered=True)
            t10, cpu10 = replay_cases(spark, server, bucket, work, local_10x, source_10x, rows * 10, 3, plain=False)
            shutil.rmtree(local_10x)
            shutil.rmtree(source_10x)
            replay_10x = {
                "rows": rows * 10, "log_bytes": log_bytes_10x, "rounds": 3,
                "replay_remote_over_local": method.ratio(t10["remote"], t10["local"]),
                "replay_remote_over_parallel_download": method.ratio(t10["remote"], t10["parallel_download"]),
                "parallel_download_over_local": method.ratio(t10["parallel_download"], t10["local"]),
                "replay_seconds": {k: method.summary(v) for k, v in t10.items()},
                "cpu_floor": cpu_floor(t10, cpu10),
            }
        spark.stop()
        spark = None

        # memory: fresh processes, 1x and 10x segment size, 1x and 10x segment count
        env = dict(os.environ, PYTHONPATH=str(REPO))
        small_rows = 50_000 if quick else 100_000     # ~10 / ~21 MB: several segments even at 10 MiB each
        seg = 1 << 20
        mem_rounds = 2 if quick else 3
        cases = {"1x": (small_rows, seg), "10x_size": (small_rows, seg * 10), "10x_count": (small_rows * 10, seg)}
        mem: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(mem_rounds):
            for name, (r, s) in cases.items():
                d = work / f"mem-{uuid.uuid4().hex[:8]}"
                build_log(d, r, s, tiered=True)
                mem[name].append(_peak_rss_mb([str(d), server.endpoint, bucket], env))
                shutil.rmtree(d, ignore_errors=True)
        return {
            "rows": rows, "log_bytes": log_bytes, "segment_bytes": segment_bytes, "rounds": rounds,
            "method": "warm-up, then interleaved rounds; median of per-round ratios with min and max; each remote "
                      "replay reads a freshly tiered copy (own prefix, nothing in the reader's cache)",
            "replay_remote_over_local": method.ratio(replay_times["remote"], replay_times["local"]),
            "replay_remote_over_plain_download": method.ratio(replay_times["remote"], replay_times["plain_download"]),
            "replay_remote_over_parallel_download": method.ratio(replay_times["remote"], replay_times["parallel_download"]),
            "parallel_download_over_local": method.ratio(replay_times["parallel_download"], replay_times["local"]),
            "replay_seconds": {k: method.summary(v) for k, v in replay_times.items()},
            "cpu_floor": cpu_floor(replay_times, replay_cpu),
            "replay_10x": replay_10x,
            "tier_pass_over_plain_upload": method.ratio(copy_times["tier_pass"], copy_times["plain_upload"]),
            "copy_seconds": {k: method.summary(v) for k, v in copy_times.items()},
            "tier_pass_process_peak_rss_mb": mem,
            "memory_cases": {k: {"rows": r, "segment_bytes": s} for k, (r, s) in cases.items()},
            "memory_10x_size_over_1x": method.ratio(mem["10x_size"], mem["1x"]),
            "memory_10x_count_over_1x": method.ratio(mem["10x_count"], mem["1x"]),
            "targets": {"replay_remote_over_local": "<= 2", "tier_pass_over_plain_upload": "<= 2",
                        "memory": "flat with segment size and count"},
        }
    finally:
        if spark is not None:
            spark.stop()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    import json

    if "--memory-case" in sys.argv:
        i = sys.argv.index("--memory-case")
        memory_case(*sys.argv[i + 1:i + 4])
    else:
        print(json.dumps(run(quick="--quick" in sys.argv), indent=2, default=float))
