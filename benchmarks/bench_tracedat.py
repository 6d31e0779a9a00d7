"""Throughput of tl.read_ftrace on trace-cmd's trace.dat against the text path
(issue 16), in one run, on the trace.dat files of tests/data/traces.

For each trace.dat, the median over --runs runs of the end-to-end time
(file -> Trace) of

* dat        tl.read_ftrace(the .dat) (a .dat.xz is decompressed to a plain
             file first, as shipped it is xz only for storage);
* text       tl.read_ftrace(its `trace-cmd report -t` text, plain file);
* text.xz    the same text as .xz;
* trace-cmd  `trace-cmd report -t` itself, to /dev/null (the step the text path
             needs first);
* dat core   the C++ decoder alone (metadata, pages, columns; no DataFrame),

as MB/s of equivalent text (the size of the report text) and events/s, and
the ratios to the dat time of: the text read, and the text path as a user
without a trace.dat reader takes it (`trace-cmd report` then the text read).

    python benchmarks/bench_tracedat.py [--runs 7] [--quick]

A benchmark, not a test: nothing here asserts a time. Needs trace-cmd.
"""
from __future__ import annotations

import argparse
import lzma
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import timerlab as tl
from timerlab import _core
from timerlab.trace import dat as D

from bench_reader import median_seconds  # run as python benchmarks/bench_tracedat.py

TRACES = Path(__file__).resolve().parent.parent / "tests" / "data" / "traces"


def dat_core(path: Path) -> None:
    data = D._contents(str(path))
    dat = _core.TraceDat(data, D._decompressor(D._algorithm(data)))
    parser = _core.FtraceParser(strict=True)
    dat.read("", parser)
    parser.finish()
    parser.take()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="runs per measurement; the median is shown")
    ap.add_argument("--quick", action="store_true", help="3 runs")
    args = ap.parse_args()
    if args.quick:
        args.runs = 3
    trace_cmd = shutil.which("trace-cmd")
    if trace_cmd is None:
        raise SystemExit("trace-cmd is not installed (apt-get install trace-cmd)")

    print(f"tl.read_ftrace of trace.dat vs its trace-cmd report text, median of {args.runs} runs, "
          f"{os.cpu_count()} CPUs; MB = MB of report text")
    header = (f"{'trace':<34} {'MB':>5} {'events':>7} | {'dat MB/s':>8} {'ev/s':>8} | {'text MB/s':>9} "
              f"{'ev/s':>8} | {'text.xz':>7} | {'trace-cmd':>9} | {'dat core':>8} | {'text/dat':>8} "
              f"{'t-cmd+text/dat':>14}")
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as tmp:
        for src in sorted(TRACES.glob("*.dat*")):
            dat = Path(tmp) / src.name.removesuffix(".xz")
            if src.suffix == ".xz":
                dat.write_bytes(lzma.decompress(src.read_bytes()))
            else:
                shutil.copy(src, dat)
            text = Path(tmp) / (dat.name + ".report.txt")
            with open(text, "wb") as f:
                subprocess.run([trace_cmd, "report", "-t", "-i", str(dat)], stdout=f, stderr=subprocess.DEVNULL,
                               check=True)
            text_xz = Path(str(text) + ".xz")
            text_xz.write_bytes(lzma.compress(text.read_bytes(), preset=6))
            events = len(tl.read_ftrace(dat).events)
            mb = text.stat().st_size / 1e6

            def report():
                with open(os.devnull, "wb") as null:
                    subprocess.run([trace_cmd, "report", "-t", "-i", str(dat)], stdout=null,
                                   stderr=subprocess.DEVNULL, check=True)

            t_dat = median_seconds(lambda: tl.read_ftrace(dat), args.runs)
            t_text = median_seconds(lambda: tl.read_ftrace(text), args.runs)
            t_xz = median_seconds(lambda: tl.read_ftrace(text_xz), args.runs)
            t_cmd = median_seconds(report, max(1, args.runs // 2))
            t_core = median_seconds(lambda: dat_core(dat), args.runs)
            print(f"{src.name:<34} {mb:5.1f} {events:7d} | {mb / t_dat:8.0f} {events / t_dat:8.3g} | "
                  f"{mb / t_text:9.0f} {events / t_text:8.3g} | {mb / t_xz:7.0f} | {mb / t_cmd:9.0f} | "
                  f"{mb / t_core:8.0f} | {t_text / t_dat:7.2f}x {(t_cmd + t_text) / t_dat:13.1f}x")


if __name__ == "__main__":
    main()
