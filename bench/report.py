"""Turn bench/results/*.json into the README's table and PNG plots."""
from __future__ import annotations

import json
from pathlib import Path

BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def _load(results: Path, name: str) -> dict | None:
    path = results / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _ok(value: float, target: float, higher_is_better: bool = True) -> str:
    met = value >= target if higher_is_better else value <= target
    return "met" if met else "**not met**"


def _med(ratio) -> float:
    """A ratio from bench/method.py ({median, min, max}), or a plain number from an older result."""
    return ratio["median"] if isinstance(ratio, dict) else float(ratio)


def _span(ratio, fmt: str = ".2f") -> str:
    """'0.41 (0.38-0.44)': the median of per-round ratios with min and max."""
    if not isinstance(ratio, dict):
        return format(float(ratio), fmt)
    return f"{ratio['median']:{fmt}} ({ratio['min']:{fmt}}-{ratio['max']:{fmt}})"


def summary_markdown(results: Path) -> str:
    rows = ["| what | seglog | baseline (same run) | ratio | target | |", "| --- | --- | --- | --- | --- | --- |"]
    meta = []
    st = _load(results, "storage")
    if st:
        for a in st["append"]:
            rows.append(f"| bulk append, {a['value_bytes']} B values | {a['seglog_MBps']:.0f} MB/s | raw write "
                        f"{a['raw_write_MBps']:.0f} MB/s | {_span(a['ratio_vs_raw'])} | >= 0.5 | "
                        f"{_ok(_med(a['ratio_vs_raw']), 0.5)} |")
        for lk in st["lookup"]:
            rows.append(f"| offset_for_timestamp, {lk['segments']:,} segments | {lk['median_us']:.0f} us cold, "
                        f"{lk['warm_median_us']:.0f} us warm | linear walk {lk['linear_walk_median_us']:.0f} us | "
                        f"{_span(lk['speedup_vs_linear'], '.1f')}x faster | <= 100 us | cold {_ok(lk['median_us'], 100, False)}, "
                        f"warm {_ok(lk['warm_median_us'], 100, False)} |")
        rows.append(f"| lookup cost, 10x segments | x{st['lookup_growth_10x']:.2f} | | | < 2x | "
                    f"{_ok(st['lookup_growth_10x'], 2, False)} |")
        rb = st["rebuild"]
        rows.append(f"| index rebuild (recovery) | {rb['rebuild_MBps']:.0f} MB/s | raw read {rb['raw_read_MBps']:.0f} MB/s "
                    f"| {_span(rb['ratio_vs_raw'])} | >= 0.5 | {_ok(_med(rb['ratio_vs_raw']), 0.5)} |")
        meta.append(f"storage {st['_meta']['load_avg'][0]:.1f}")
    sk = _load(results, "sink")
    if sk:
        t = sk["throughput"]
        rows.append(f"| sink throughput ({sk['rows']:,} rows) | {t['seglog']['rows_per_s'] / 1e3:.0f}k rows/s, "
                    f"{t['seglog']['MB_per_s']:.0f} MB/s | Delta {t['delta']['rows_per_s'] / 1e3:.0f}k rows/s | "
                    f"{sk['ratio_vs_delta']:.2f} | >= 1.5 | {_ok(sk['ratio_vs_delta'], 1.5)} |")
        rows.append(f"| sink vs the Python-sink ceiling | | mapInArrow count {t['ceiling_mapInArrow_count']['rows_per_s'] / 1e3:.0f}k "
                    f"rows/s | {sk['ratio_vs_ceiling']:.2f} | >= 0.8 | {_ok(sk['ratio_vs_ceiling'], 0.8)} |")
        rows.append(f"| sink vs Parquet | | Parquet {t['parquet']['rows_per_s'] / 1e3:.0f}k rows/s | "
                    f"{sk['ratio_vs_parquet']:.2f} | | |")
        sb = sk["small_batch_s"]
        rows.append(f"| per-batch time, 1,000-row batches | {sb['seglog']:.2f} s | Delta {sb['delta']:.2f} s | "
                    f"{sk['small_batch_overhead_vs_delta']:.2f} | <= 0.33 | "
                    f"{_ok(sk['small_batch_overhead_vs_delta'], 1 / 3, False)} |")
        meta.append(f"sink {sk['_meta']['load_avg'][0]:.1f}")
    rp = _load(results, "replay")
    if rp:
        c, r, t = rp["cases"], rp["ratios"], rp["time_to_first_row_s"]
        for label in ("1%", "10%"):
            ratio = c[f"seglog_{label}"]["seconds"] / c[f"delta_{label}"]["seconds"]
            target = "<= 0.5" if label == "1%" else ""
            rows.append(f"| replay the last {label} from a timestamp | {c[f'seglog_{label}']['seconds']:.2f} s | "
                        f"Delta where(timestamp >= T) {c[f'delta_{label}']['seconds']:.2f} s | {ratio:.2f} | {target} | "
                        + (_ok(ratio, 0.5, False) if label == "1%" else "") + " |")
        rows.append(f"| replay 100% from a timestamp | {c['seglog_100%']['rows'] / c['seglog_100%']['seconds'] / 1e3:.0f}k rows/s | "
                    f"Python-source ceiling {c['ceiling_100%']['rows'] / c['ceiling_100%']['seconds'] / 1e3:.0f}k rows/s | "
                    f"{r['wide_100pct_seglog_over_ceiling_throughput']:.2f} | >= 0.8 | "
                    f"{_ok(r['wide_100pct_seglog_over_ceiling_throughput'], 0.8)} |")
        rows.append(f"| narrow replay floor of any Python source | | ceiling 1% {c['ceiling_1%']['seconds']:.2f} s vs Delta "
                    f"{c['delta_1%']['seconds']:.2f} s | {r['narrow_1pct_ceiling_over_delta_time']:.2f} | | |")
        rows.append(f"| full scan | {c['seglog_full_scan']['seconds']:.2f} s | Delta {c['delta_full_scan']['seconds']:.2f} s "
                    f"| {r['full_scan_seglog_over_delta_time']:.2f} | | |")
        rows.append(f"| time to first row, log 10x larger | {t['seglog_small']:.2f} s -> {t['seglog_large']:.2f} s | "
                    f"Delta {t['delta_small']:.2f} s | x{r['ttfr_large_over_small']:.2f} | flat | "
                    f"{_ok(r['ttfr_large_over_small'], 1.25, False)} |")
        meta.append(f"replay (quick: 250 MB and 2.5 GB logs) {rp['_meta']['load_avg'][0]:.1f}")
    sc = _load(results, "sidecar")
    if sc:
        base = sc["baseline_empty_root"]
        for ps in sc["passes"]:
            rows.append(f"| sidecar `--once`, {ps['partitions']:,} partitions x {ps['segments_per_partition']} segments "
                        f"| sealing pass {ps['sealing_pass']['seconds']:.1f} s, steady pass {ps['steady_pass']['seconds']:.1f} s, "
                        f"{ps['sealing_pass']['peak_rss_mb']:.0f} MB peak | empty root {base['seconds']:.1f} s, "
                        f"{base['peak_rss_mb']:.0f} MB | | | |")
        rows.append(f"| sidecar, 10x segments (100 partitions) | sealing time x{sc['time_growth_10x_segments']:.1f}, "
                    f"steady time x{sc['steady_time_growth_10x_segments']:.1f}, memory "
                    f"x{sc['memory_growth_10x_segments']:.2f} | | | memory flat | "
                    f"{_ok(sc['memory_growth_10x_segments'], 1.2, False)} |")
    cp = _load(results, "compaction")
    if cp:
        for c in cp["cases"]:
            r = c["clean_vs_raw_ratio"]
            rows.append(f"| compaction clean, {c['log_mb']} MB dirty log | {c['clean_mb_per_s_median']:.0f} MB/s, peak RSS "
                        f"+{c['peak_rss_growth_mb']:.0f} MB (map {c['map_mb']:.1f} MB, budget {c['dedupe_budget_mb']:.0f} MB) "
                        f"| raw read {c['raw_read_mb_per_s_median']:.0f} MB/s | x{r['median']:.3f} "
                        f"(min {r['min']:.3f}, max {r['max']:.3f}) | | |")
    note = ("Measured on the 2-core development machine, sometimes while other work ran (load average at "
            "the start of each part: " + "; ".join(meta) + "): absolute figures are noisy, every ratio is "
            "taken within one run.")
    cmd = "Reproduce: `bash scripts/setup.sh && .venv/bin/python -m bench` (`--quick` for a few minutes)."
    pngs = sorted(p.name for p in results.glob("*.png"))
    pics = "\n".join(f"![{p}](bench/results/{p})" for p in pngs)
    return "\n".join([cmd, "", *rows, "", note, "", pics]).strip()


def write_readme(readme: Path, table: str) -> None:
    text = readme.read_text(encoding="utf-8")
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    readme.write_text(text[:start] + "\n" + table + "\n" + text[end:], encoding="utf-8")


def draw_plots(results: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sk = _load(results, "sink")
    if sk:
        t = sk["throughput"]
        names = ["ceiling_mapInArrow_count", "seglog", "delta", "parquet"]
        labels = ["Python-sink ceiling\n(mapInArrow count)", "seglog sink", "Delta", "Parquet"]
        fig, ax = plt.subplots(figsize=(7, 3.5))
        ax.bar(labels, [t[n]["rows_per_s"] / 1e3 for n in names], color=["#999", "#2a7", "#47b", "#b74"])
        ax.set_ylabel("thousand rows/s")
        ax.set_title(f"Writing the same {sk['rows']:,}-row micro-batch")
        fig.tight_layout()
        fig.savefig(results / "sink.png", dpi=100)
        plt.close(fig)
    st = _load(results, "storage")
    if st:
        lk = st["lookup"]
        fig, ax = plt.subplots(figsize=(7, 3.5))
        segs = [x["segments"] for x in lk]
        ax.plot(segs, [x["median_us"] for x in lk], "o-", label="seglog, segment not open yet (cold)")
        ax.plot(segs, [x["warm_median_us"] for x in lk], "o-", label="seglog, segment open (warm)")
        ax.plot(segs, [x["linear_walk_median_us"] for x in lk], "s--", label="linear walk of segments")
        ax.axhline(100, color="#c33", lw=0.8, label="target 100 us")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("segments in the partition")
        ax.set_ylabel("median offset_for_timestamp (us)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(results / "lookup.png", dpi=100)
        plt.close(fig)
    rp = _load(results, "replay")
    if rp:
        c = rp["cases"]
        labels = ["1%", "10%", "100%", "full scan"]
        keys = ["1%", "10%", "100%", "full_scan"]
        p = {"labels": [f"last {x}" if x.endswith("%") else x for x in labels], "title": "Replay from a timestamp "
             "(seconds, lower is better)",
             "series": {"seglog": [c[f"seglog_{k}"]["seconds"] for k in keys],
                        "Delta where(timestamp >= T)": [c[f"delta_{k}"]["seconds"] for k in keys],
                        "Python-source ceiling": [c.get(f"ceiling_{k}", {}).get("seconds", 0) for k in keys]}}
        fig, ax = plt.subplots(figsize=(8, 3.8))
        n = len(p["labels"])
        width = 0.8 / max(1, len(p["series"]))
        for k, (name, values) in enumerate(p["series"].items()):
            ax.bar([i + k * width for i in range(n)], values, width, label=name)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(n)])
        ax.set_xticklabels(p["labels"])
        ax.set_ylabel("seconds")
        ax.set_title(p.get("title", "Replay from a timestamp"))
        ax.legend()
        fig.tight_layout()
        fig.savefig(results / "replay.png", dpi=100)
        plt.close(fig)
