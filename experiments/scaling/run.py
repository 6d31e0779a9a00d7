"""Scaling study: wakeups and energy against CPU count and node count, push vs pull.

    python experiments/scaling/run.py [--quick] [--out DIR]

The server workload (tl.workloads.server: network and block timeouts from
interrupts, schedule_timeout sleepers, deferrable housekeeping, a quarter of
the CPUs busy) on machines of 8 to 1024 CPUs in 1, 2 or 4 nodes (contiguous
layout), under push (kernel 6.8) and pull (latest), several seeds, run with
tl.sweep (all local cores). Records the summary of every run, and the CPU time spent in timer code
(overhead model) per CPU. Saves
DIR/scaling.parquet; plot.py draws wakeups and power per CPU against CPUs.
"""
from __future__ import annotations

import pandas as pd

import timerlab as tl
from timerlab.experiment import run_main


def run(quick: bool) -> pd.DataFrame:
    base = tl.Config(workload=tl.workloads.server(), duration_ns=(100 if quick else 1000) * 1_000_000)
    cpus = [8, 32] if quick else [8, 16, 32, 64, 128, 256, 512, 1024]
    frames = []
    for placement, kernel in (("push", "6.8"), ("pull", "latest")):
        grid = {"cpus": cpus, "nodes": [1, 2] if quick else [1, 2, 4]}
        df = tl.sweep(base.replace(placement=placement, kernel=kernel), grid,
                      seeds=range(1, 3 if quick else 4), backend="serial" if quick else "processes",
                      progress=not quick)
        frames.append(df.assign(placement=placement))
    df = pd.concat(frames, ignore_index=True)
    df["power_mw_per_cpu"] = df["avg_power_mw"] / df["cpus"]
    df["timer_overhead_us_per_cpu_per_s"] = df["timer_overhead_ns"] / 1e3 / df["cpus"] / df["duration_s"]
    return df


def table(df: pd.DataFrame) -> pd.DataFrame:
    cols = ["wakeups_per_cpu_per_s", "power_mw_per_cpu", "timer_overhead_us_per_cpu_per_s"]
    return df.groupby(["nodes", "cpus", "placement"])[cols].mean().unstack("placement")


if __name__ == "__main__":
    raise SystemExit(run_main(__doc__, __file__, "scaling", run, table))
