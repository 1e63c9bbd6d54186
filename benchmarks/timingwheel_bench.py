"""The timing wheel against heapq and loop.call_at, and its live driver's lateness.

    .venv/bin/python benchmarks/timingwheel_bench.py            # 1M timers, ~25 min
    .venv/bin/python benchmarks/timingwheel_bench.py --quick    # 100k timers, ~3 min

Every run is a fresh subprocess (`timingwheel_structure.py`, `timingwheel_live.py`,
whose docstrings describe the workloads), so no run inherits another's heap or
collector state. With `--repeat N` each figure is the median of N runs, except
the worst stalls and maxima, which are the worst seen. Prints two tables.
Structure columns: operations per CPU second per phase and overall, resident
bytes per timer, and the step stalls (the p99.99 and worst wall time of one
`advance`, and the worst in thread CPU time).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
STRUCTURE_RUNS = [
    *((impl, "uniform") for impl in ("wheel", "wheel1024", "wheel3", "heapq", "asyncio", "uvloop")),
    *((impl, "burst") for impl in ("wheel", "wheel1024", "wheel3", "heapq")),
]
RATES = (1_000, 10_000, 50_000)


def child(script: str, *args: object) -> dict[str, Any]:
    command = [sys.executable, str(HERE / script), *map(str, args)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    parsed: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return parsed


def combine(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians of the figures, worst of the stalls and lateness maxima."""
    merged = dict(runs[0])
    for key, value in runs[0].items():
        values = [run[key] for run in runs if run[key] is not None]
        if not isinstance(value, int | float) or isinstance(value, bool) or not values:
            continue
        worst = key.startswith("worst") or key in ("max_ms", "full_collections")
        merged[key] = max(values) if worst else statistics.median(values)
    return merged


def structure(n: int, repeat: int, gc_mode: str, span_s: float) -> None:
    print(f"\nStructure: {n:,} timers, 10 % cancelled, the rest expired (GC {gc_mode})")
    header = (
        f"{'impl':<9} {'dist':<8} {'insert/s':>10} {'cancel/s':>10} {'expire/s':>10} "
        f"{'all ops/s':>10} {'cpu s':>7} {'B/timer':>8} {'p99.99':>7} {'stall ms':>9} {'cpu ms':>7}"
    )
    print(header)
    print("-" * len(header))
    for impl, dist in STRUCTURE_RUNS:
        runs = [
            child("timingwheel_structure.py", impl, n, dist, gc_mode, span_s) for _ in range(repeat)
        ]
        r = combine(runs)
        total_s = r["insert_s"] + r["cancel_s"] + r["expire_s"]
        ops = n + r["cancelled"] + r["fired"]
        stall = "n/a" if r["worst_stall_ms"] is None else f"{r['worst_stall_ms']:.2f}"
        p9999 = "n/a" if r["p9999_stall_ms"] is None else f"{r['p9999_stall_ms']:.2f}"
        cpu = "n/a" if r["worst_stall_cpu_ms"] is None else f"{r['worst_stall_cpu_ms']:.2f}"
        print(
            f"{impl:<9} {dist:<8} {n / r['insert_s']:>10,.0f} "
            f"{r['cancelled'] / r['cancel_s']:>10,.0f} {r['fired'] / r['expire_s']:>10,.0f} "
            f"{ops / total_s:>10,.0f} {total_s:>7.2f} {r['rss_grown'] / n:>8.0f} "
            f"{p9999:>7} {stall:>9} {cpu:>7}"
        )


def live(n: int, repeat: int, seconds: float) -> None:
    print(f"\nLive driver: {n:,} timers pending, uvloop, {seconds:g} s per run")
    header = (
        f"{'rate/s':>7} {'gc':<8} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>8} {'cpu %':>6} "
        f"{'wakeups/s':>9} {'full GCs':>8} {'GC pause ms':>11} {'fired':>10}"
    )
    print(header)
    print("-" * len(header))
    for rate in RATES:
        for gc_mode in ("default", "managed"):
            runs = [child("timingwheel_live.py", rate, gc_mode, n, seconds) for _ in range(repeat)]
            r = combine(runs)
            print(
                f"{rate:>7,} {gc_mode:<8} {r['p50_ms']:>7.2f} {r['p99_ms']:>7.2f} "
                f"{r['max_ms']:>8.2f} {r['cpu_pct']:>6.1f} {r['wakeups_per_s']:>9.0f} "
                f"{r['full_collections']:>8.0f} {r['worst_gc_pause_ms']:>11.1f} "
                f"{r['fired_in_window']:>5,.0f}/{r['expected_in_window']:,.0f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100k timers, short live runs")
    parser.add_argument("--only", choices=["structure", "live"])
    parser.add_argument("--repeat", type=int, default=1, help="runs per row (median)")
    parser.add_argument("--gc", choices=["default", "off"], default="default", dest="gc_mode")
    args = parser.parse_args()
    n = 100_000 if args.quick else 1_000_000
    if args.only != "live":
        structure(n, args.repeat, args.gc_mode, span_s=3.0 if args.quick else 30.0)
    if args.only != "structure":
        live(n, args.repeat, seconds=5.0 if args.quick else 20.0)


if __name__ == "__main__":
    main()
