"""Throughput of tl.read_ftrace on the real traces of tests/data/traces.

For each trace: the size of its text (decompressed), and the median over --runs
runs of the end-to-end time of ``tl.read_ftrace`` (file -> DataFrame) on

* plain  the text decompressed to a temporary file first,
* xz     the .xz file as shipped (decompression on a helper thread overlaps
         the parse),
* core   the C++ parser alone on text already in memory (no I/O, no DataFrame),

as MB/s of text and events/s. A last row reads the largest trace repeated
--scale times (plain only), to see the steady state past start-up costs.

    python benchmarks/bench_reader.py [--runs 5] [--scale 8] [--quick]

A benchmark, not a test: nothing here asserts a time.
"""
from __future__ import annotations

import argparse
import lzma
import os
import statistics
import tempfile
import time
from pathlib import Path

import timerlab as tl
from timerlab import _core

TRACES = Path(__file__).resolve().parent.parent / "tests" / "data" / "traces"


def median_seconds(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def core_only(text: bytes) -> None:
    parser = _core.FtraceParser(strict=True)
    chunk = 4 << 20
    for i in range(0, len(text), chunk):
        parser.feed(text[i:i + chunk])
    parser.finish()
    parser.take()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="runs per measurement; the median is shown")
    ap.add_argument("--scale", type=int, default=8, help="repeat the largest trace this many times (0: skip)")
    ap.add_argument("--quick", action="store_true", help="3 runs, no repeated-trace row")
    args = ap.parse_args()
    if args.quick:
        args.runs, args.scale = 3, 0

    header = (f"{'trace':<46} {'MB':>7} {'events':>9} | {'plain MB/s':>10} {'ev/s':>9} | "
              f"{'xz MB/s':>8} {'ev/s':>9} | {'core MB/s':>9}")
    print(f"tl.read_ftrace, median of {args.runs} runs, {os.cpu_count()} CPUs")
    print(header)
    print("-" * len(header))
    largest = b""
    with tempfile.TemporaryDirectory() as tmp:
        for xz in sorted(TRACES.glob("*.txt.xz")):
            text = lzma.open(xz).read()
            largest = max(largest, text, key=len)
            plain = Path(tmp) / xz.name.removesuffix(".xz")
            plain.write_bytes(text)
            events = len(tl.read_ftrace(plain).events)
            mb = len(text) / 1e6
            t_plain = median_seconds(lambda: tl.read_ftrace(plain), args.runs)
            t_xz = median_seconds(lambda: tl.read_ftrace(xz), args.runs)
            t_core = median_seconds(lambda: core_only(text), args.runs)
            print(f"{xz.name:<46} {mb:7.1f} {events:9d} | {mb / t_plain:10.0f} {events / t_plain:9.3g} | "
                  f"{mb / t_xz:8.0f} {events / t_xz:9.3g} | {mb / t_core:9.0f}")
        if args.scale > 0:
            big = Path(tmp) / "largest-repeated.txt"
            with open(big, "wb") as f:
                for _ in range(args.scale):
                    f.write(largest)
            events = len(tl.read_ftrace(big).events)
            mb = big.stat().st_size / 1e6
            t_plain = median_seconds(lambda: tl.read_ftrace(big), max(1, args.runs // 2))
            t_core = median_seconds(lambda: core_only(largest * args.scale), max(1, args.runs // 2))
            name = f"largest trace x{args.scale}"
            print(f"{name:<46} {mb:7.1f} {events:9d} | {mb / t_plain:10.0f} {events / t_plain:9.3g} | "
                  f"{'-':>8} {'-':>9} | {mb / t_core:9.0f}")


if __name__ == "__main__":
    main()
