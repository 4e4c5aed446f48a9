"""Kafka's codecs as seglog runs them (indexer/codec/compression.py) against cramjam's defaults and the
per-codec packages.

`python -m bench.codecs [--quick]`: compress and decompress the records section of a realistic batch
(JSON-like values, 1 MiB of records) with
- seglog: `compression.compress` / `decompress` (gzip on stdlib zlib; lz4 and zstd on cramjam, lz4 in
  its fast mode),
- cramjam with its defaults (what "just use cramjam" gives: gzip level 6, lz4 level 4),
- the per-codec package a project would otherwise use: stdlib zlib for gzip, `lz4` (lz4.frame) and
  `zstandard` (both only in the `bench` extra). snappy has no independent package to compare
  (python-snappy itself runs on cramjam).
Warm-up, then interleaved rounds A,B,A,B; each figure is the median of per-round ratios (other time /
seglog time; above 1 = seglog faster) with min and max. Results: bench/results/codecs.json.
"""
from __future__ import annotations

import gzip
import json
import statistics
import sys
import time
import zlib
from pathlib import Path

import cramjam

RESULTS = Path(__file__).resolve().parent / "results"


def _payload(n_bytes: int) -> bytes:
    rows, i = [], 0
    while sum(map(len, rows)) < n_bytes:
        rows.append(json.dumps({"id": i, "user": f"user-{i % 977}", "event": ["view", "click", "buy"][i % 3],
                                "amount": (i * 7919) % 10_000 / 100, "ts": 1_700_000_000_000 + i}).encode())
        i += 1
    return b"".join(rows)[:n_bytes]


def _others():
    out = {"gzip": (lambda d: gzip.compress(d, 6), lambda c: zlib.decompress(c, 31))}
    try:
        import lz4.frame as lz4f
        out["lz4"] = (lambda d: lz4f.compress(d, block_linked=False, content_checksum=False), lz4f.decompress)
    except ImportError:
        pass
    try:
        import zstandard
        cz, dz = zstandard.ZstdCompressor(level=3), zstandard.ZstdDecompressor()
        out["zstd"] = (cz.compress, dz.decompress)
    except ImportError:
        pass
    return out


def _cramjam_defaults():
    def lz4_compress(d):
        c = cramjam.lz4.Compressor(content_checksum=False, block_linked=False)
        c.compress(d)
        return bytes(c.finish())
    return {"gzip": (lambda d: bytes(cramjam.gzip.compress(d)), lambda c: bytes(cramjam.gzip.decompress(c))),
            "lz4": (lz4_compress, lambda c: bytes(cramjam.lz4.decompress(c))),
            "zstd": (lambda d: bytes(cramjam.zstd.compress(d)), lambda c: bytes(cramjam.zstd.decompress(c)))}


def _seglog():
    from seglog.indexer.codec import compression as c

    return {name: (lambda d, i=c.CODEC_IDS[name]: c.compress(i, d), lambda p, i=c.CODEC_IDS[name]: c.decompress(i, p))
            for name in ("gzip", "lz4", "zstd")}


def _time(fn, arg, reps: int) -> float:
    t = time.perf_counter()
    for _ in range(reps):
        fn(arg)
    return (time.perf_counter() - t) / reps


def run(quick: bool = False) -> dict:
    data = _payload(1 << 20)
    rounds, reps = (3, 3) if quick else (7, 10)
    ours = _seglog()
    results = {}
    candidates = [(f"{codec} package", codec, fns) for codec, fns in _others().items()]
    candidates += [(f"{codec} cramjam defaults", codec, fns) for codec, fns in _cramjam_defaults().items()]
    for label, codec, (ocomp, odec) in candidates:
        ccomp, cdec = ours[codec]
        packed = ccomp(data)
        assert odec(packed) == data and cdec(ocomp(data)) == data      # interchangeable streams
        for fn in (ccomp, ocomp, cdec, odec):                          # warm-up
            fn(data if fn in (ccomp, ocomp) else packed)
        ratios = {"compress": [], "decompress": []}
        for _ in range(rounds):
            for what, (c_fn, o_fn, arg) in {"compress": (ccomp, ocomp, data),
                                            "decompress": (cdec, odec, packed)}.items():
                a1 = _time(c_fn, arg, reps)
                b1 = _time(o_fn, arg, reps)
                a2 = _time(c_fn, arg, reps)
                b2 = _time(o_fn, arg, reps)
                ratios[what].append((b1 + b2) / (a1 + a2))
        results[label] = {
            what: {"median_other_over_seglog": statistics.median(r), "min": min(r), "max": max(r)}
            for what, r in ratios.items()}
        results[label]["size_ratio_seglog"] = len(packed) / len(data)
        results[label]["size_ratio_other"] = len(ocomp(data)) / len(data)
        results[label]["seglog_decompress_mb_s"] = len(data) / _time(cdec, packed, reps) / 1e6
        results[label]["seglog_compress_mb_s"] = len(data) / _time(ccomp, data, reps) / 1e6
    return results


if __name__ == "__main__":
    res = run(quick="--quick" in sys.argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "codecs.json").write_text(json.dumps(res, indent=2))
    print(json.dumps(res, indent=2))
