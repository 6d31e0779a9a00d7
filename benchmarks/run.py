"""Run timerlab's benchmarks and print their figures (a benchmark, not a test).

    python benchmarks/run.py [--quick]

1. bench_wheel (C++, built here in Release with -DTIMERLAB_BENCHMARKS=ON): the
   seeds' micro benchmark, enqueue+dequeue pairs of one timer with 0, 10^5 and
   10^6 other timers pending, for timerlab's wheel and two baselines measured
   in the same run (a lazy-deletion binary heap and std::multimap).
2. bench_reader.py: tl.read_ftrace throughput on the shared traces.

Results go to benchmarks/results/ (JSON lines) and to stdout as tables.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def build_bench(build_dir: Path) -> Path:
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build_dir), *gen, "-DTIMERLAB_BENCHMARKS=ON",
                    "-DCMAKE_BUILD_TYPE=Release"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(build_dir), "--target", "bench_wheel"], check=True,
                   stdout=subprocess.DEVNULL)
    return build_dir / "bench_wheel"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = ap.parse_args()
    results = HERE / "results"
    results.mkdir(exist_ok=True)

    exe = build_bench(ROOT / "build" / "bench")
    out = subprocess.run([str(exe), "31" if args.quick else "301"], check=True, capture_output=True, text=True).stdout
    (results / "wheel.jsonl").write_text(out)
    df = pd.DataFrame([json.loads(line) for line in out.splitlines()])
    table = df.pivot(index="pending", columns="structure", values="ns_per_pair_median")
    table["wheel_speedup_vs_heap"] = table["heap_lazy_delete"] / table["timerlab_wheel"]
    table["wheel_speedup_vs_multimap"] = table["std_multimap"] / table["timerlab_wheel"]
    print("enqueue+dequeue pair, median ns (blocks of 1000 pairs)")
    print(table.round(2).to_string())

    reader = [sys.executable, str(HERE / "bench_reader.py")] + (["--quick"] if args.quick else [])
    print()
    subprocess.run(reader, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
