"""Run every byte-reading kernel and command on fuzzed segment files (tests/indexer/test_fuzz_kernels.py).

Usage: python -m tests.indexer.fuzz_worker CASES_DIR. Each case is CASES_DIR/<n>/f-0/00000000000000000000.log.
Run in a subprocess so that a crash (a signal) is seen by the test as a negative return code. Typed
errors (seglog.errors) are the expected answer to bad bytes; any other exception is printed as
"UNTYPED <case> <where>: <error>" and makes the exit code 3.
"""
from __future__ import annotations

import io
import os
import sys
import traceback
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np

from seglog.errors import SeglogError
from seglog.indexer.codec import native
from seglog.indexer.codec.columns import decode_to_arrow
from seglog.indexer.codec.compression import inflate_batch
from seglog.indexer.codec.records import (BATCH_HEADER_SIZE, HEADER_STRUCT, BatchHeader, decode_batch,
                                    first_offset_at_or_after, scan_batches)

untyped: list[str] = []
calls = {"ran": 0, "typed": 0}


def attempt(case: str, where: str, fn, *args, **kw):
    calls["ran"] += 1
    try:
        return fn(*args, **kw)
    except SeglogError:
        calls["typed"] += 1
        return None
    except Exception as exc:             # noqa: BLE001  (reported: bad bytes must give a typed error)
        untyped.append(f"UNTYPED {case} {where}: {type(exc).__name__}: {exc}\n"
                       + "".join(traceback.format_exception(exc)[-3:]))
        return None


def raw_headers(data: bytes):
    """Every header position a naive walk finds (no checks at all): what a lying header looks like."""
    pos, out = 0, []
    while pos + BATCH_HEADER_SIZE <= len(data) and len(out) < 64:
        h = BatchHeader._make(HEADER_STRUCT.unpack_from(data, pos))
        out.append((pos, h))
        if h.batch_length <= 0:
            break
        pos += h.size
    return out


def run_case(case: Path) -> None:
    name = case.name
    log_file = case / "f-0" / "00000000000000000000.log"
    data = log_file.read_bytes()
    a = np.frombuffer(data, dtype=np.uint8)
    heads = raw_headers(data)
    positions = np.array([p for p, _ in heads] or [0], dtype=np.int64)
    scanned = scan_batches(data, 0, check_crc=False).positions
    for start, end in ((0, 1 << 62), (3, 40), (-(1 << 62), 1 << 62)):
        for pos_set in (positions, scanned):
            attempt(name, "native.decode_batches", native.decode_batches, a, pos_set, start, end)
            for no_numba in ("0", "1"):
                os.environ["SEGLOG_NO_NUMBA"] = no_numba
                attempt(name, f"decode_to_arrow numba={no_numba == '0'}", decode_to_arrow, data, pos_set,
                        start_offset=start, end_offset=end)
    os.environ["SEGLOG_NO_NUMBA"] = "0"
    for pos, h in heads:
        for ts in (0, h.base_timestamp, h.max_timestamp, 1 << 62):
            attempt(name, "native.first_at_or_after", native.first_at_or_after, data, pos, h, ts, 0)
            attempt(name, "first_offset_at_or_after", first_offset_at_or_after, data, pos, h, ts, 0)
        attempt(name, "decode_batch", decode_batch, data, pos, h)
        if h.compression_codec and 0 <= pos and pos + h.size <= len(data) and h.size >= BATCH_HEADER_SIZE:
            attempt(name, "inflate_batch", inflate_batch, data, pos, h.size)
    from seglog.cli import main

    sink = io.StringIO()
    with redirect_stdout(sink), redirect_stderr(sink):
        for argv in (["dump", "--deep-iteration", "--print-data", str(log_file)], ["verify", str(case)],
                     ["offsets-for-times", str(case), "--topic", "f", "--time", "1700000000100"],
                     ["offsets-for-times", str(case), "--topic", "f", "--time", "0"]):
            try:
                main(argv)
            except SystemExit:
                pass
            except Exception as exc:     # noqa: BLE001  (the CLI must turn every failure into an exit code)
                untyped.append(f"UNTYPED {name} seglog {argv[0]}: {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    for case in sorted(Path(sys.argv[1]).iterdir()):
        run_case(case)
    for line in untyped[:20]:
        print(line)
    print(f"calls {calls['ran']} typed-errors {calls['typed']}")
    sys.exit(3 if untyped else 0)
