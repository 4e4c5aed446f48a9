"""A cleaner process beside the tests' writer (tests/indexer/test_clean_beside_writer.py).

Usage: python -m tests.indexer.clean_worker PARTITION_DIR CONFIG_JSON ROUNDS [clean|merge|both]. Runs
`clean_partition` (force: whatever the dirty ratio) and/or `merge_partition` ROUNDS times, or until the
file PARTITION_DIR/../stop appears; prints one JSON line per call: what it swapped in, what it
gave up and why, and every hold of the partition's lock it recorded (ms).
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from seglog.errors import MaintenanceLockedError
from seglog.indexer.compaction.cleaner import clean_partition
from seglog.indexer.compaction.segment_merge import merge_partition


def main() -> None:
    path, cfg, rounds = Path(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
    ops = (sys.argv[4:] or ["clean"])[0]
    print(json.dumps({"op": "start"}), flush=True)      # imports done: the work begins
    for _ in range(rounds):
        if (path.parent / "stop").exists():
            break
        try:
            if ops in ("clean", "both"):
                res = clean_partition(path, cfg, force=True, lock_timeout=60, maintenance_timeout=60)
                print(json.dumps({"op": "clean", "groups": res.groups, "given_up": res.given_up,
                                  "holds_ms": res.lock_holds_ms, "cleaned": res.cleaned,
                                  "duration_ms": res.duration_ms}), flush=True)
            if ops in ("merge", "both"):
                m = merge_partition(path, cfg, lock_timeout=60, maintenance_timeout=60)
                print(json.dumps({"op": "merge", "groups": m.groups, "given_up": m.given_up,
                                  "holds_ms": m.lock_holds_ms, "duration_ms": m.duration_ms}), flush=True)
        except MaintenanceLockedError as exc:
            print(json.dumps({"op": "skipped", "error": str(exc)}), flush=True)
        time.sleep(0.01)


if __name__ == "__main__":
    main()
