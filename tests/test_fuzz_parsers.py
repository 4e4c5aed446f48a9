"""The fuzz profile (issue 37): every parser of what a user's process reads (the batch walkers, the index
loaders, the checkpoint and commit parsers, the sidecar's config loader) on mutated inputs, each in a
subprocess under a memory limit (RLIMIT_AS), asserting that only seglog's typed errors come out and that
the process lives (a signal or a MemoryError past the limit fails). A few seconds a target by default;
SEGLOG_FUZZ_SECONDS (per target) runs it longer. The worker: tests/fuzz_parsers_worker.py."""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz_parsers_worker import TARGETS

ROOT = Path(__file__).resolve().parents[1]
SECONDS = float(os.environ.get("SEGLOG_FUZZ_SECONDS", "15"))
# The interpreter with numpy, pyarrow and numba imported maps ~1.5 GiB of address space before it reads a
# byte; the limit leaves room for that, the largest legal inflated batch (64 MiB) and little more.
MEMORY_LIMIT = 3 << 30


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_parsers_answer_mutated_inputs_with_typed_errors_only(target, tmp_path):
    env = dict(os.environ, SEGLOG_NO_NUMBA="1")     # the compiled kernels' own fuzz: tests/indexer/test_fuzz_kernels.py
    proc = subprocess.run([sys.executable, "-m", "tests.fuzz_parsers_worker", target, str(SECONDS), str(tmp_path / "w")],
                          cwd=ROOT, env=env, capture_output=True, text=True, preexec_fn=_limit,
                          timeout=SECONDS + 300)
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}: {proc.stderr[-3000:]}"
    assert "MemoryError" not in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-3000:]
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    ran = json.loads(proc.stdout.splitlines()[0])
    assert ran["target"] == target and ran["examples"] >= 50, ran
