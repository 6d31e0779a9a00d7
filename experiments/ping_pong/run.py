"""The ping-pong of the pull-model cover letter (seeds), simulated.

    python experiments/ping_pong/run.py [--quick] [--out DIR]

"During testing on a mostly idle machine a ping pong game could be observed:
a process_timeout timer is expired remotely on a non idle CPU. Then the CPU
where the schedule_timeout() was executed [...] comes out of idle and
restarts the timer [...] and goes back to idle again." A 16-CPU, 2-node
machine, almost idle, with one schedule_timeout sleeper on each of CPUs 2, 6
and 11 (sleeps of 2-20 ms); push (6.8) against pull. Per sleeper CPU: how
its wakeups come about (its own timer, or an IPI after another CPU expired
its process_timeout), and the wakeups the other CPUs pay for it. Saves
DIR/ping_pong.parquet.
"""
from __future__ import annotations

import itertools

import pandas as pd

import timerlab as tl
from timerlab.experiment import run_main

SLEEPERS = [2, 6, 11]


def run(quick: bool) -> pd.DataFrame:
    w = tl.workloads.idle() + tl.workloads.sleepers(cpus=SLEEPERS, sleep_ns=tl.dist.uniform(2_000_000, 20_000_000))
    rows = []
    for placement, seed in itertools.product(("push", "pull"), range(1, 3 if quick else 6)):
        cfg = tl.Config(cpus=16, nodes=2, placement=placement, kernel="6.8" if placement == "push" else "latest",
                        workload=w, duration_ns=(1 if quick else 10) * 1_000_000_000, seed=seed)
        r = tl.simulate(cfg)
        pc = r.per_cpu
        sleepers = pc.loc[SLEEPERS]
        others = pc.drop(index=SLEEPERS)
        rows.append(dict(placement=placement, seed=seed, sleeps=int(sleepers["tasks_woken"].sum()),
                         sleeper_wakeups=int(sleepers["wakeups"].sum()),
                         sleeper_wakeups_timer=int(sleepers["wakeups_timer"].sum()),
                         sleeper_wakeups_ipi=int(sleepers["wakeups_ipi"].sum() + sleepers["wakeups_task"].sum()),
                         sleeper_wakeups_remote_duty=int(sleepers["wakeups_remote_duty"].sum()),
                         # The tick kept after the task ran (Config.rcu_needs_cpu) ends many sleeps' first idle period.
                         sleeper_wakeups_tick=int(sleepers["wakeups_tick"].sum()),
                         sleeper_wakeups_irq=int(sleepers["wakeups_irq"].sum()),
                         other_wakeups=int(others["wakeups"].sum()),
                         remote_expiries=int(r.summary["timers_expired_remote"]),
                         energy_uj=r.summary["energy_uj"]))
    return pd.DataFrame(rows)


def table(df: pd.DataFrame) -> pd.DataFrame:
    t = df.groupby("placement").sum(numeric_only=True).drop(columns="seed")
    t["wakeups_per_sleep"] = (t["sleeper_wakeups"] + t["other_wakeups"]) / t["sleeps"]
    return t.T[["push", "pull"]]


if __name__ == "__main__":
    raise SystemExit(run_main(__doc__, __file__, "ping_pong", run, table,
                             headline="seed: under pull, a sleeper's process_timeout is expired remotely and its CPU "
                                      "is woken by IPI"))
