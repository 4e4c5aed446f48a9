"""Run the whole benchmark suite: `python -m bench [--quick] [--only storage,sink,...] [--no-readme]`.

Each part measures seglog against a baseline in the same run (raw writes and reads, a linear walk,
Delta, Parquet, the ceilings of any Python sink or source); results go to bench/results/<part>.json,
plots to bench/results/*.png, and the summary table into README.md (between the bench markers).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
README = HERE.parent / "README.md"
PARTS = ("storage", "sidecar", "open", "sink", "replay", "stream", "trigger", "compaction", "cleaner_vs_kafka",
         "clean_lock", "write", "tier", "reader_memory", "kafka",
         "write_breakdown")


def _machine() -> dict:
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "load_avg": os.getloadavg(),
            "time": time.strftime("%Y-%m-%d %H:%M:%S %Z")}


def run_part(name: str, quick: bool) -> dict:
    module = __import__(f"bench.{name}", fromlist=["run"])
    started = time.time()
    result = module.run(quick=quick)
    result["_meta"] = dict(_machine(), quick=quick, seconds=time.time() - started)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2, default=float))
    if hasattr(module, "table"):        # a part with a table of its own prints it (write_breakdown)
        print(module.table(result), flush=True)
    return result


def load(name: str) -> dict | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a few minutes in all")
    parser.add_argument("--only", help="comma list of parts: " + ",".join(PARTS))
    parser.add_argument("--no-readme", action="store_true", help="do not rewrite README.md's table")
    args = parser.parse_args(argv)
    parts = args.only.split(",") if args.only else list(PARTS)
    for name in parts:
        if name not in PARTS:
            parser.error(f"unknown part {name!r}; parts: {', '.join(PARTS)}")
    for name in parts:
        print(f"[bench] {name} ...", flush=True)
        if len(parts) > 1:
            # each part in a process of its own: a Spark session's jars (Delta's, Kafka's, S3A's) are fixed when
            # its JVM starts, and PySpark keeps one JVM per process whatever sessions come after
            cmd = [sys.executable, "-m", "bench", "--only", name, "--no-readme"] + (["--quick"] if args.quick else [])
            subprocess.run(cmd, check=True, cwd=HERE.parent)
            continue
        result = run_part(name, args.quick)
        print(f"[bench] {name} done in {result['_meta']['seconds']:.0f} s -> {RESULTS / (name + '.json')}", flush=True)
    from bench.report import draw_plots, summary_markdown, write_readme

    draw_plots(RESULTS)
    table = summary_markdown(RESULTS)
    print(table)
    if not args.no_readme:
        write_readme(README, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
