"""Where a 1,000-row `format("seglog")` write's time goes (issue 41, the small micro-batch), against the floor
of the same DataFrame written to Spark's `noop` sink in the same session, and noop plus one fsync of the
bytes the seglog write adds to its log. It measures only; nothing here changes a write.

Cases (bench/method.py: one session, warm-up, interleaved rounds, os.sync() untimed before every run):
- seglog: a cached 1,000-row DataFrame (bench/sink.py's `_frame`, 1 input task) appended to one log of 4
  partitions with txnAppId/txnVersion (what a foreachBatch function writes), one batch after another;
- noop: the same DataFrame to `format("noop")`;
- noop_fsync: the same noop write, then the bytes one seglog write adds to its log (measured after the
  warm-up) written to a file beside the log and fsynced once.

Each run's wall time is split with Spark's own event log (spark.eventLog.enabled, ms timestamps, parsed after
the session stops) and, where `strace` is installed, a trace of the driver JVM's fsync/fdatasync/rename/link
calls, and its unlink/mkdir/flock calls (strace --seccomp-bpf: only those calls stop the JVM; their
timestamps and durations, and which file; each traced call costs the traced side a stop of ~10-50 us):
- before_execution: from the Python call to Spark's SQL execution start (analysis, optimisation, py4j);
- to_job: the execution's start to its job's submission (physical planning, the writer's set-up on the driver);
- job_scheduling: the job's submission to its first task's launch;
- tasks: the first task's launch to the last one's end (seglog: encoding and staging the records);
- task_to_job_end: the last task's end to the job's end;
- after_job: the job's end to the execution's end (seglog: the driver's commit: locks, publish, fsyncs, the
  commit file); fsyncs inside it by the kind of file (segments, staging, commit file, folders); with the trace,
  split at the commit file's fsync into publish (locks, roll-back check, the segments published and forced)
  and commit (the commit file written, fsynced and linked, the staging run removed);
- after_execution: the execution's end to the Python call's return.
Run: `python -m bench --only write_breakdown [--quick] [--no-readme]`; another shape of write, printed and not
saved: `python bench/write_breakdown.py --rows 1000000 --partitions 32 --tasks 4` (issue 41's 1e6-row writes; the
noop_fsync case then fsyncs the same bytes in one file). task_cpu_ms is the tasks' own CPU time (Spark's executor
CPU time: user and kernel), beside task_run_ms (their wall time): a write's tasks waiting on the disk show as the
difference.
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

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import method  # noqa: E402
from bench.sink import _frame  # noqa: E402

PARTITIONS = 4
PHASES = ("before_execution", "to_job", "job_scheduling", "tasks", "task_to_job_end", "after_job", "after_execution")
# few per write (a JVM makes none of them in its idle loops): each traced call costs a stop of ~10-50 us
_TRACED = "fsync,fdatasync,rename,renameat,renameat2,link,linkat,unlink,unlinkat,mkdir,mkdirat,flock"
_FAMILY = {"fsync": "fsync", "fdatasync": "fsync", "rename": "rename_link", "renameat": "rename_link",
           "renameat2": "rename_link", "link": "rename_link", "linkat": "rename_link", "unlink": "unlink",
           "unlinkat": "unlink", "mkdir": "mkdir", "mkdirat": "mkdir", "flock": "flock"}
# 12345 1795861892.106619 fsync(3</tmp/x>) = 0 <0.012201>
_CALL = re.compile(r"^(?P<tid>\d+)\s+(?P<t>\d+\.\d+)\s+(?P<call>\w+)\((?P<args>.*)\)\s+=\s+(?P<ret>-?\d+).*<(?P<dur>[\d.]+)>$")
# 12345 1795861892.106619 fsync(3</tmp/x> <unfinished ...>   then   12345 1795861892.108 <... fsync resumed>) = 0 <0.0014>
_UNFINISHED = re.compile(r"^(?P<tid>\d+)\s+(?P<t>\d+\.\d+)\s+(?P<call>\w+)\((?P<args>.*?)\s*<unfinished \.\.\.>$")
_RESUMED = re.compile(r"^(?P<tid>\d+)\s+\d+\.\d+\s+<\.\.\. \w+ resumed>(?P<rest>.*)$")


def java_home_under_strace(folder: Path, trace: Path, traced: str = _TRACED) -> str | None:
    """A JAVA_HOME whose bin/java runs the real java under strace (the driver JVM, tasks included in
    local mode), tracing the calls `traced` names (strace's -e trace=); None where strace or java is missing or
    tracing is not allowed (the breakdown then has no fsync figures). tests/system/syscall_trace.py reads its trace
    too."""
    strace, java = shutil.which("strace"), _real_java()
    if strace is None or java is None:
        return None
    # where tracing is not allowed (no ptrace in a container) the JVM runs untraced
    probe = subprocess.run([strace, "-f", "--seccomp-bpf", "-qq", "-e", "trace=fsync", "-o", os.devnull, "true"],
                           capture_output=True)
    if probe.returncode != 0:
        return None
    (folder / "bin").mkdir(parents=True)
    wrapper = folder / "bin" / "java"
    # spark-class runs java twice (its launcher, then the driver); -o truncates, so the driver's trace stays
    wrapper.write_text(f"#!/bin/sh\nexec {strace} -f --seccomp-bpf -qq -y -ttt -T -e signal=none "
                       f"-e trace={traced} -o {trace} {java} \"$@\"\n")
    wrapper.chmod(0o755)
    return str(folder)


def _real_java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


def _events(folder: Path) -> list[dict]:
    """The session's event log: one file, or (rolling logs, Spark 4's default) a folder of
    `events_<n>_<app>` files, read in their order."""
    def order(p: Path) -> tuple[int, str]:
        m = re.match(r"events_(\d+)_", p.name)
        return (int(m.group(1)) if m else 0, p.name)
    files = sorted((p for p in folder.rglob("*") if p.is_file() and not p.name.startswith((".", "appstatus"))), key=order)
    if not files:
        raise RuntimeError(f"no event log under {folder}")
    events = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            events.extend(json.loads(line) for line in fh if line.strip())
    return events


def _executions(events: list[dict]) -> dict[int, dict]:
    """execution id -> its start, end, jobs (submission, completion) and tasks (launch, finish), in ms."""
    ex: dict[int, dict] = {}
    stage_job: dict[int, int] = {}
    jobs: dict[int, dict] = {}
    for e in events:
        kind = e.get("Event", "")
        if kind.endswith("SparkListenerSQLExecutionStart"):
            ex.setdefault(e["executionId"], {"jobs": []})["start"] = e["time"]
        elif kind.endswith("SparkListenerSQLExecutionEnd"):
            ex.setdefault(e["executionId"], {"jobs": []})["end"] = e["time"]
        elif kind == "SparkListenerJobStart":
            eid = (e.get("Properties") or {}).get("spark.sql.execution.id")
            job = {"submit": e["Submission Time"], "tasks": []}
            jobs[e["Job ID"]] = job
            for s in e.get("Stage IDs", []):
                stage_job[s] = e["Job ID"]
            if eid is not None:
                ex.setdefault(int(eid), {"jobs": []})["jobs"].append(job)
        elif kind == "SparkListenerJobEnd":
            jobs[e["Job ID"]]["end"] = e["Completion Time"]
        elif kind == "SparkListenerTaskEnd":
            info, metrics = e["Task Info"], e.get("Task Metrics") or {}
            job = jobs.get(stage_job.get(e["Stage ID"], -1))
            if job is not None:
                job["tasks"].append({"launch": info["Launch Time"], "finish": info["Finish Time"],
                                     "run_ms": metrics.get("Executor Run Time", 0),
                                     "cpu_ms": metrics.get("Executor CPU Time", 0) / 1e6})
    return ex


def _trace(path: Path) -> list[dict]:
    """The traced calls; a call that overlapped another thread's (the driver's commit forces its partitions at
    once) is split by strace into `<unfinished ...>` and `<... call resumed>` lines, joined here by thread (so
    overlapping calls' ms add up to more than the wall time they took together)."""
    if not path.exists():
        return []
    out = []
    pending: dict[str, tuple[str, str]] = {}
    for line in path.read_text(errors="replace").splitlines():
        m = _UNFINISHED.match(line)
        if m:
            pending[m["tid"]] = (m["t"], f"{m['call']}({m['args']}")
            continue
        m = _RESUMED.match(line)
        if m and m["tid"] in pending:
            t, head = pending.pop(m["tid"])
            line = f"{m['tid']} {t} {head}{m['rest']}"
        m = _CALL.match(line)
        if m:
            out.append({"t_ms": float(m["t"]) * 1000, "call": m["call"], "args": m["args"],
                        "dur_ms": float(m["dur"]) * 1000})
    return out


def _kind(args: str) -> str:
    """Which file an fsync was for, from strace -y's `fd</path>`."""
    m = re.search(r"<([^>]*)>", args)
    path = m.group(1) if m else args
    if "/_seglog/staging" in path:
        return "staging"
    if ".json" in path and "/_seglog/" in path:
        return "commit_file"
    if path.endswith((".log", ".index", ".timeindex", ".txnindex", ".snapshot")):
        return "segment"
    if "noop-fsync" in path:
        return "noop_fsync"
    return "folder_or_other"


def _split(run: dict, ex: dict | None, calls: list[dict]) -> dict:
    """One run's phases (ms) and the fsyncs inside them."""
    t0, t1 = run["t0"] * 1000, run["t1"] * 1000
    out: dict = {"wall_ms": t1 - t0}
    if ex is None or "start" not in ex or "end" not in ex or not ex["jobs"]:
        return out
    job = ex["jobs"][0]
    tasks = [t for j in ex["jobs"] for t in j["tasks"]]
    last_job_end = max(j.get("end", ex["end"]) for j in ex["jobs"])
    first_launch = min(t["launch"] for t in tasks) if tasks else job["submit"]
    last_finish = max(t["finish"] for t in tasks) if tasks else last_job_end
    out.update({"jobs": len(ex["jobs"]), "task_count": len(tasks),
                "task_run_ms": sum(t["run_ms"] for t in tasks), "task_cpu_ms": sum(t["cpu_ms"] for t in tasks),
                "before_execution": ex["start"] - t0, "to_job": job["submit"] - ex["start"],
                "job_scheduling": first_launch - job["submit"], "tasks": last_finish - first_launch,
                "task_to_job_end": last_job_end - last_finish, "after_job": ex["end"] - last_job_end,
                "after_execution": t1 - ex["end"]})
    syncs: dict[str, dict] = {}
    families: dict[str, dict] = {}
    # ms timestamps: a call is in a window if it started in it (the event log rounds to the ms)
    for c in calls:
        if not t0 <= c["t_ms"] <= t1:
            continue
        where = "before_job" if c["t_ms"] < job["submit"] else "job" if c["t_ms"] < last_job_end + 1 else "after_job"
        f = families.setdefault(f"{where}:{_FAMILY.get(c['call'], c['call'])}", {"count": 0, "ms": 0.0})
        f["count"] += 1
        f["ms"] += c["dur_ms"]
        if c["call"] not in ("fsync", "fdatasync"):
            continue
        key = f"{where}:{_kind(c['args'])}"
        s = syncs.setdefault(key, {"count": 0, "ms": 0.0})
        s["count"] += 1
        s["ms"] += c["dur_ms"]
    out["syscalls"] = families
    out["fsyncs"] = syncs
    out["fsync_ms"] = sum(s["ms"] for s in syncs.values())
    out["fsync_count"] = sum(s["count"] for s in syncs.values())
    commit_at = [c["t_ms"] for c in calls if c["call"] in ("fsync", "fdatasync") and _kind(c["args"]) == "commit_file"
                 and last_job_end - 1 <= c["t_ms"] <= ex["end"] + 1]
    if commit_at:
        out["publish"] = commit_at[0] - last_job_end
        out["commit"] = ex["end"] - commit_at[0]
    if "own_fsync_ms" in run:                  # noop_fsync's fsync is Python's, outside the JVM's trace
        out["own_fsync_ms"] = run["own_fsync_ms"]
    return out


def _median_breakdown(splits: list[dict]) -> dict:
    keys = ["wall_ms", *PHASES, "publish", "commit", "task_run_ms", "task_cpu_ms", "fsync_ms", "fsync_count", "own_fsync_ms", "jobs",
            "task_count"]
    med = {k: statistics.median(s[k] for s in splits) for k in keys if all(k in s for s in splits)}
    for group in ("fsyncs", "syscalls"):
        kinds = sorted({k for s in splits for k in s.get(group, {})})
        med[group] = {k: {"count": statistics.median(s.get(group, {}).get(k, {}).get("count", 0) for s in splits),
                          "ms": statistics.median(s.get(group, {}).get(k, {}).get("ms", 0.0) for s in splits)}
                      for k in kinds}
    return med


def run(quick: bool = False, shape: list[str] | None = None) -> dict:
    """The measurement in a Python process of its own: PySpark keeps one driver JVM per process, so a part run
    after another (`python -m bench`) would otherwise reuse a JVM that was not started under strace."""
    with tempfile.TemporaryDirectory(prefix="seglog-bench-breakdown-out-") as tmp:
        out = Path(tmp) / "result.json"
        cmd = ([sys.executable, str(Path(__file__).resolve()), "--measure", str(out)] + (["--quick"] if quick else [])
               + (shape or []))
        proc = subprocess.run(cmd, cwd=REPO)
        if proc.returncode != 0 or not out.exists():
            raise RuntimeError(f"bench/write_breakdown.py --measure exited {proc.returncode}")
        return json.loads(out.read_text())


def measure(quick: bool = False, rows: int = 1000, partitions: int = PARTITIONS, tasks: int = 1) -> dict:
    from seglog.sink.session import local_session

    rounds = 6 if quick else 21
    work = Path(tempfile.mkdtemp(prefix="seglog-bench-breakdown-"))
    evdir, trace = work / "events", work / "driver.strace"
    evdir.mkdir()
    java_home = java_home_under_strace(work / "java", trace)
    saved = os.environ.get("JAVA_HOME")
    if java_home:
        os.environ["JAVA_HOME"] = java_home
    spark = None
    load = [round(x, 2) for x in os.getloadavg()]
    try:
        spark = local_session("seglog-bench-breakdown", driver_memory="4g",
                              extra_conf={"spark.eventLog.enabled": "true", "spark.eventLog.dir": str(evdir),
                                          "spark.eventLog.compress": "false"})
        small = _frame(spark, rows, tasks).cache()
        small.count()
        log = work / "log"
        version = [0]
        runs: dict[str, list[dict]] = {"seglog": [], "noop": [], "noop_fsync": []}
        nbytes = [0]

        def log_bytes() -> int:
            return sum(p.stat().st_size for p in log.rglob("*.log")) if log.exists() else 0

        def timed(name: str, fn):
            def case() -> float:
                t0 = time.time()
                extra = fn()
                t1 = time.time()
                runs[name].append({"t0": t0, "t1": t1, **(extra or {})})
                return t1 - t0
            return case

        def seglog():
            (small.write.format("seglog").mode("append").option("topic", "small")
             .option("partitions", str(partitions)).option("txnAppId", "bench")
             .option("txnVersion", str(version[0])).save(str(log)))
            version[0] += 1

        def noop():
            small.write.format("noop").mode("overwrite").save()

        payload = [b""]

        def noop_fsync():
            noop()
            fd = os.open(work / "noop-fsync.bin", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, payload[0])
                t = time.perf_counter()
                os.fsync(fd)
                return {"own_fsync_ms": (time.perf_counter() - t) * 1000}
            finally:
                os.close(fd)

        # the bytes one seglog write adds, measured on a warm-up write, are what noop_fsync writes
        before = log_bytes()
        seglog()
        nbytes[0] = log_bytes() - before
        payload[0] = os.urandom(nbytes[0])
        cases = {"seglog": timed("seglog", seglog), "noop": timed("noop", noop),
                 "noop_fsync": timed("noop_fsync", noop_fsync)}
        times = method.interleaved(cases, rounds, warmup=3, settle=os.sync)
        small.unpersist()
    finally:
        if spark is not None:
            spark.stop()
        if java_home:
            if saved is None:
                os.environ.pop("JAVA_HOME", None)
            else:
                os.environ["JAVA_HOME"] = saved
    try:
        executions = _executions(_events(evdir))
        calls = _trace(trace)
        breakdown = {}
        for name, rs in runs.items():
            timed_runs = rs[-rounds:]          # the warm-up's runs come first
            splits = []
            for r in timed_runs:
                inside = [e for e in executions.values() if "start" in e and r["t0"] * 1000 - 1 <= e["start"] <= r["t1"] * 1000 + 1]
                # the write's execution is the one with a job (a write plans no other here)
                ex = next((e for e in inside if e["jobs"]), inside[0] if inside else None)
                splits.append(_split(r, ex, calls))
            breakdown[name] = {"median_ms": _median_breakdown(splits), "runs": splits}
        return {
            "rows": rows, "partitions": partitions, "input_tasks": tasks, "rounds": rounds, "bytes_per_seglog_write": nbytes[0],
            "method": __doc__.split("Cases (")[0].strip().replace("\n", " "),
            "phases": list(PHASES), "fsync_trace": "strace --seccomp-bpf" if java_home else "none (strace not found)",
            "time_multiple": {"seglog_over_noop": method.ratio(times["seglog"], times["noop"]),
                              "seglog_over_noop_fsync": method.ratio(times["seglog"], times["noop_fsync"])},
            "seconds": {k: method.summary(v) for k, v in times.items()},
            "breakdown": breakdown, "load_before": load, "load_after": [round(x, 2) for x in os.getloadavg()]}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def table(result: dict) -> str:
    """The median breakdown, one column per case, for the terminal."""
    names = list(result["breakdown"])
    meds = {n: result["breakdown"][n]["median_ms"] for n in names}
    lines = [f"{'ms (median of ' + str(result['rounds']) + ' rounds)':<34}" + "".join(f"{n:>12}" for n in names)]
    for k in ["wall_ms", *PHASES, "  publish", "  commit", "task_run_ms", "task_cpu_ms", "fsync_ms", "fsync_count", "own_fsync_ms"]:
        lines.append(f"{k:<34}" + "".join(f"{meds[n].get(k.strip(), float('nan')):>12.1f}" for n in names))
    for group, label in (("fsyncs", "fsync "), ("syscalls", "")):
        for kind in sorted({k for n in names for k in meds[n].get(group, {})}):
            lines.append(f"{'  ' + label + kind:<34}" + "".join(
                f"{meds[n][group].get(kind, {}).get('ms', 0.0):>7.1f} ({meds[n][group].get(kind, {}).get('count', 0):>2.0f})"
                for n in names))
    return "\n".join(lines)


def _shape(argv: list[str]) -> dict:
    """--rows, --partitions, --tasks from the command line (the defaults: bench/sink.py's micro-batch)."""
    out = {}
    for flag, key in (("--rows", "rows"), ("--partitions", "partitions"), ("--tasks", "tasks")):
        if flag in argv:
            out[key] = int(argv[argv.index(flag) + 1])
    return out


if __name__ == "__main__":
    shape = _shape(sys.argv)
    if "--measure" in sys.argv:          # the child run() starts
        dest = Path(sys.argv[sys.argv.index("--measure") + 1])
        dest.write_text(json.dumps(measure(quick="--quick" in sys.argv, **shape), default=float))
    else:
        res = run(quick="--quick" in sys.argv, shape=[a for k, v in shape.items() for a in (f"--{k}", str(v))])
        print(table(res))
        print(json.dumps({k: v for k, v in res.items() if k != "breakdown"}, indent=2, default=float))
