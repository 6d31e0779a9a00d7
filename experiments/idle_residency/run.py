"""Deep-idle residency of an idle system, push versus pull (seeds: "the
impact of residence in deep idle states of an idle system was investigated.
The patch queue doesn't downgrade this behavior").

    python experiments/idle_residency/run.py [--quick] [--out DIR]

An almost idle machine (tl.workloads.idle(): per-CPU deferrable housekeeping
every second, a non-deferrable timer every 4 s per CPU, plus a few
schedule_timeout sleepers every ~100 ms) at several CPU counts, 2 nodes,
menu governor, skx idle states; push (kernel 6.8) against pull (latest).
Records the share of time in the deepest state (C6), wakeups per CPU per
second and energy. Saves DIR/idle_residency.parquet.
"""
from __future__ import annotations

import itertools

import pandas as pd

import timerlab as tl
from timerlab.experiment import run_main


def workload() -> tl.workloads.Workload:
    return tl.workloads.idle() + tl.workloads.sleepers(
        cpus=[1, 5], sleep_ns=tl.dist.uniform(50_000_000, 150_000_000))


def run(quick: bool) -> pd.DataFrame:
    rows = []
    cpus_list = (8, 32) if quick else (8, 32, 128)
    for cpus, placement, seed in itertools.product(cpus_list, ("push", "pull"), range(1, 3 if quick else 4)):
        cfg = tl.Config(cpus=cpus, nodes=2, placement=placement, kernel="6.8" if placement == "push" else "latest",
                        workload=workload(), duration_ns=(2 if quick else 20) * 1_000_000_000, seed=seed)
        s = tl.simulate(cfg).summary
        rows.append(dict(cpus=cpus, placement=placement, seed=seed,
                         deepest_state_residency_fraction=s["deepest_state_residency_fraction"],
                         wakeups_per_cpu_per_s=s["wakeups_per_cpu_per_s"], energy_uj=s["energy_uj"],
                         timers_expired_remote=s["timers_expired_remote"]))
    return pd.DataFrame(rows)


def table(df: pd.DataFrame) -> pd.DataFrame:
    return df.groupby(["cpus", "placement"])[["deepest_state_residency_fraction", "wakeups_per_cpu_per_s",
                                              "energy_uj"]].mean().unstack("placement")


if __name__ == "__main__":
    raise SystemExit(run_main(__doc__, __file__, "idle_residency", run, table,
                             headline="seed: pull does not downgrade deep-idle residency of an idle system"))
