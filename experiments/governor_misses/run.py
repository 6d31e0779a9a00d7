"""How often menu and teo pick the wrong idle state, beside the oracle.

    python experiments/governor_misses/run.py [--quick] [--out DIR]

A 16-CPU, 2-node machine runs the default mixed workload (a quarter of the
CPUs busy, tasks sleeping on timers and arming network-like timeouts,
deferrable periodic work) plus a share of short sleeps woken by interrupts,
which no timer predicts. For each governor (menu, teo, oracle, and the
bounds shallowest/deepest), each idle-state table (skx, skl) and each seed,
records the kernel's miss counts (cpu_idle_miss: above = the state's target
residency was not reached; below = a deeper state would have paid off), the
energy and the timers' exit-latency share of lateness. Saves
DIR/governor_misses.parquet; plot.py draws the figure.
"""
from __future__ import annotations

import itertools

import pandas as pd

import timerlab as tl
from timerlab.experiment import run_main

GOVERNORS = ("menu", "teo", "oracle", "shallowest", "deepest")


def workload() -> tl.workloads.Workload:
    return tl.workloads.mixed() + tl.workloads.tasks(
        nodes=[1], run_ns=tl.dist.exponential(50_000), sleep_ns=tl.dist.exponential(400_000), sleep="external")


def run(quick: bool) -> pd.DataFrame:
    seeds = range(1, 3 if quick else 6)
    base = tl.Config(cpus=16, nodes=2, workload=workload(), duration_ns=200_000_000 if quick else 2_000_000_000)
    rows = []
    for governor, states, seed in itertools.product(GOVERNORS, ("skx", "skl"), seeds):
        r = tl.simulate(base.replace(governor=governor, idle_states=states, seed=seed))
        s, res = r.summary, r.residency
        rows.append(dict(governor=governor, idle_states=states, seed=seed, idle_periods=int(res["hits"].sum()),
                         above=int(res["above"].sum()), below=int(res["below"].sum()),
                         above_fraction=s["above_fraction"], below_fraction=s["below_fraction"],
                         energy_uj=s["energy_uj"], avg_power_mw=s["avg_power_mw"],
                         wakeups=s["wakeups"], exit_latency_ns_mean=r.timers["exit_latency_ns"].mean(),
                         lateness_ns_p99=s["lateness_ns_p99"]))
    return pd.DataFrame(rows)


def table(df: pd.DataFrame) -> pd.DataFrame:
    """Means over seeds, energy relative to the oracle's."""
    t = df.groupby(["idle_states", "governor"], sort=False)[
        ["above_fraction", "below_fraction", "energy_uj", "wakeups", "lateness_ns_p99"]].mean()
    oracle = t.xs("oracle", level="governor")["energy_uj"]
    t["energy_vs_oracle"] = t["energy_uj"] / oracle.reindex(t.index.get_level_values(0)).to_numpy()
    return t.sort_index(level="idle_states", sort_remaining=False)


if __name__ == "__main__":
    raise SystemExit(run_main(__doc__, __file__, "governor_misses", run, table))
