"""The lazy-wakeup patch's test (seeds/lazy-nohz-wakeup-patch.txt), simulated.

    python experiments/lazy_wakeup/run.py [--quick] [--out DIR]

32 CPUs in 2 nodes; CPU 15 (kept busy) continuously arms timers with
add_timer_on on CPUs 8-11, with random expiry; the rest of the machine is
almost idle. For 10 s, count the idle entries of CPUs 8-11 when every
enqueue wakes the target (remote_wakeup="always", before the patch) and when
only a new first timer does ("lazy"). The patch's kernel (2015) used the push
model; the enqueues are add_timer_on, which place a timer on the target CPU
under either model. The enqueue rate and expiry range are not given by the
patch: 60 enqueues/s in total, expiry uniform in [4 ms, 4 s] (assumptions).
Saves DIR/lazy_wakeup.parquet; plot.py draws the figure.
"""
from __future__ import annotations

import pandas as pd

import timerlab as tl
from timerlab.experiment import run_main

TARGETS = [8, 9, 10, 11]
SEED_TABLE = pd.DataFrame({"cpu": TARGETS, "seed_without_lazy": [135, 238, 157, 172],
                           "seed_with_lazy": [88, 43, 83, 70]})


def run(quick: bool) -> pd.DataFrame:
    w = (tl.workloads.remote_enqueuer(from_cpu=15, to_cpus=TARGETS, rate_hz=60,
                                      timeout_ns=tl.dist.uniform(4_000_000, 4_000_000_000))
         + tl.workloads.idle())
    rows = []
    for seed in range(1, 3 if quick else 6):
        for wake in ("always", "lazy"):
            cfg = tl.Config(cpus=32, nodes=2, placement="push", kernel="4.2", remote_wakeup=wake, workload=w,
                            duration_ns=(1 if quick else 10) * 1_000_000_000, seed=seed)
            pc = tl.simulate(cfg).per_cpu.loc[TARGETS]
            for r in pc.itertuples():
                rows.append(dict(seed=seed, remote_wakeup=wake, cpu=r.cpu, idle_entries=r.idle_entries,
                                 wakeups_ipi=r.wakeups_ipi, wakeups_timer=r.wakeups_timer))
    return pd.DataFrame(rows)


def table(df: pd.DataFrame) -> pd.DataFrame:
    """Idle entries per target CPU (mean over seeds) beside the seed's."""
    t = df.pivot_table(index="cpu", columns="remote_wakeup", values="idle_entries", aggfunc="mean")
    t = t.rename(columns={"always": "sim_without_lazy", "lazy": "sim_with_lazy"})
    return SEED_TABLE.merge(t.reset_index(), on="cpu").set_index("cpu")


if __name__ == "__main__":
    raise SystemExit(run_main(__doc__, __file__, "lazy_wakeup", run, table,
                             headline="idle entries of the target CPUs (seed: 10 s; --quick: 1 s)"))
