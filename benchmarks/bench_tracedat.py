"""Throughput of tl.read_ftrace on trace-cmd's trace.dat against the text path
(issue 16), in one run, on the trace.dat files of tests/data/traces.

For each trace.dat, the median over --runs runs of the end-to-end time
(file -> Trace), the measurements taken in turn (A B C A B C ...), of

* dat        tl.read_ftrace(the .dat) (a .dat.xz is decompressed to a plain
             file first, as shipped it is xz only for storage);
* text       tl.read_ftrace(its `trace-cmd report -t` text, plain file);
* text.xz    the same text as .xz;
* trace-cmd  `trace-cmd report -t` itself, to /dev/null (the step the text path
             needs first);
* dat core   the C++ decoder alone (metadata, pages, columns; no DataFrame),
* printed    the same, every record printed and parsed (direct=False: what
             the decoder did before it staged the schema's events directly),

as MB/s of equivalent text (the size of the report text) and events/s, and
the ratios to the dat time of: the text read, and the text path as a user
without a trace.dat reader takes it (`trace-cmd report` then the text read).

Then, per path, where the time of read_ftrace goes (medians, ms): parse (the
C++ reader filling its columns: decoding the .dat, or parsing the text),
take (the dense columns laid out, handed to NumPy), frame (the DataFrame:
Categoricals, nullable integer arrays) and detect (the features of the
trace, timerlab.trace.features.detect); the last three are the same code for
both paths.

    python benchmarks/bench_tracedat.py [--runs 7] [--quick]

A benchmark, not a test: nothing here asserts a time. Needs trace-cmd.
"""
from __future__ import annotations

import argparse
import lzma
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import timerlab as tl
from timerlab import _core
from timerlab.trace import dat as D
from timerlab.trace import read as R
from timerlab.trace.features import detect

from bench_reader import median_seconds  # run as python benchmarks/bench_tracedat.py

TRACES = Path(__file__).resolve().parent.parent / "tests" / "data" / "traces"


def dat_core(path: Path, direct: bool = True) -> None:
    data = D._contents(str(path))
    dat = _core.TraceDat(data, D._decompressor(D._algorithm(data)))
    parser = _core.FtraceParser(strict=True)
    dat.read("", parser, direct=direct)
    parser.finish()
    parser.take()


def interleaved(fns, runs: int) -> list[float]:
    """Median seconds of each function, run in turn (A B C A B C ...): the
    machine is shared, and a load that comes and goes then falls on all of
    them alike rather than on whichever ran at the time."""
    times = [[] for _ in fns]
    for _ in range(runs):
        for fn, t in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            t.append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def stages(path: Path, times: dict) -> None:
    """One read_ftrace(path), as it runs its stages; their ms appended to times."""
    t0 = time.perf_counter()
    if D.is_trace_dat(str(path)):
        parser = R._parse_dat(str(path), True)[0]
    else:
        parser = R._parse(str(path), True)[0]
    t1 = time.perf_counter()
    cols = parser.take()
    t2 = time.perf_counter()
    events = R._frame(cols)
    t3 = time.perf_counter()
    detect(events, path, source="trace-cmd report")
    t4 = time.perf_counter()
    for k, a, b in (("parse", t0, t1), ("take", t1, t2), ("frame", t2, t3), ("detect", t3, t4)):
        times.setdefault(k, []).append((b - a) * 1e3)


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
              f"{'ev/s':>8} | {'text.xz':>7} | {'trace-cmd':>9} | {'dat core':>8} {'printed':>8} | {'text/dat':>8} "
              f"{'t-cmd+text/dat':>14}")
    print(header)
    print("-" * len(header))
    breakdown = []
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

            t_dat, t_text, t_xz, t_core, t_printed = interleaved(
                [lambda: tl.read_ftrace(dat), lambda: tl.read_ftrace(text), lambda: tl.read_ftrace(text_xz),
                 lambda: dat_core(dat), lambda: dat_core(dat, direct=False)], args.runs)
            t_cmd = median_seconds(report, max(1, args.runs // 2))
            print(f"{src.name:<34} {mb:5.1f} {events:7d} | {mb / t_dat:8.0f} {events / t_dat:8.3g} | "
                  f"{mb / t_text:9.0f} {events / t_text:8.3g} | {mb / t_xz:7.0f} | {mb / t_cmd:9.0f} | "
                  f"{mb / t_core:8.0f} {mb / t_printed:8.0f} | {t_text / t_dat:7.2f}x "
                  f"{(t_cmd + t_text) / t_dat:13.1f}x")
            per_path = {"dat": {}, "text": {}}
            for _ in range(args.runs):
                stages(dat, per_path["dat"])
                stages(text, per_path["text"])
            breakdown += [(src.name, p, {k: statistics.median(v) for k, v in t.items()}) for p, t in per_path.items()]
    print(f"\nwhere the time goes, median ms\n{'trace':<34} {'path':<5} {'parse':>6} {'take':>6} {'frame':>6} "
          f"{'detect':>6} {'total':>6}")
    for name, path, t in breakdown:
        print(f"{name:<34} {path:<5} {t['parse']:6.1f} {t['take']:6.1f} {t['frame']:6.1f} {t['detect']:6.1f} "
              f"{sum(t.values()):6.1f}")


if __name__ == "__main__":
    main()
