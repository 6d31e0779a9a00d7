"""Wakeup latency against idle-state limits: cyclictest and nanosleep sleepers
under PM QoS 0, C1 only, C6 allowed and no limit (hrtimers-and-latency.md §B, §C).

    python experiments/latency_vs_idle/run.py [--quick] [--out DIR]

A 4-CPU package, almost idle (tl.workloads.idle()), with the skx and spr
idle tables, under menu and teo. Each idle-state limit is a PM QoS
(/dev/cpu_dma_latency) request: 0 (POLL only, cyclictest's default), the
C1 exit latency (the tightest limit that admits C1: 2 µs skx, 1 µs spr),
the C6 exit latency (the tightest that admits C6: 133 / 290 µs) and none.
Two workloads, run apart:

* ``cyclictest``: ``cyclictest -S -p99 -i1000 -h1000 --latency=N`` (``--laptop``
  for no limit): one SCHED_FIFO thread per CPU on clock_nanosleep ABS, slack 0;
  latency = its own measure (user-space clock minus the requested time);
* ``nanosleep_slack50`` / ``nanosleep_slack0``: one SCHED_OTHER task per
  CPU sleeping 0.2-2 ms in nanosleep with the default 50 µs timer slack, or
  with slack 0; the limit is held by another process. Latency = the
  hrtimer_wakeup's handler time minus its soft expiry (the requested
  wakeup), as hrtimers-and-latency.md §A.2 decodes it from traces.

Per run: latency min/avg/p50/p99/max (µs), a cyclictest-style 1 µs histogram
(non-empty bins and their counts as list columns; HIST_US and above count as
overflows), wakeups per CPU per second, energy, power per CPU, time in C6,
each state's share of idle time and, for cyclictest, the mean of each
latency part. Saves DIR/latency_vs_idle.parquet.
A plain loop, not tl.sweep: the histograms need each run's samples, and a
sweep keeps only the summary.
"""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

import timerlab as tl
from timerlab.experiment import run_main

TABLES = ("skx", "spr")
GOVERNORS = ("menu", "teo")
SETTINGS = ("qos0", "c1_only", "c6_allowed", "unlimited")
WORKLOADS = ("cyclictest", "nanosleep_slack50", "nanosleep_slack0")
CPUS = 4
HIST_US = 1000  # cyclictest -h1000: spr's C6 exit (290 µs) fits with room to spare


def qos_limit_ns(states: str, setting: str) -> int | None:
    """The PM QoS value for a setting: the exit latency of the deepest state
    it allows, since the governors skip only states whose exit latency
    exceeds the limit."""
    st = tl.idle_states.preset(states).states.set_index("name")["exit_latency_ns"]
    return {"qos0": 0, "c1_only": int(st["C1"]), "c6_allowed": int(st["C6"]), "unlimited": None}[setting]


def workload(name: str, limit_ns: int | None) -> tl.workloads.Workload:
    background = tl.workloads.idle()
    if name == "cyclictest":
        return background + tl.workloads.cyclictest(
            interval_us=1000, priority=99, latency_us=None if limit_ns is None else limit_ns // 1000)
    slack = {"nanosleep_slack50": 50_000, "nanosleep_slack0": 0}[name]
    return background + tl.workloads.nanosleepers(
        run_ns=tl.dist.exponential(50_000), sleep_ns=tl.dist.uniform(200_000, 2_000_000), sleep="nanosleep",
        timer_slack_ns=slack)


def samples_ns(res, name: str) -> np.ndarray:
    """Each measured wakeup's latency (ns), as the workload's tool sees it."""
    if name == "cyclictest":
        lat = res.latency[res.latency["tool"] == "cyclictest"]
        return lat["latency_ns"].to_numpy(dtype=np.int64)
    hr = res.hrtimers
    hr = hr[(hr["function"] == "hrtimer_wakeup") & (hr["outcome"] == "expired")]
    return (hr["expired_ns"].to_numpy(dtype=np.int64) - hr["softexpires_ns"].to_numpy(dtype=np.int64))


def histogram(res, name: str, lat_ns: np.ndarray) -> tuple[list, list, int]:
    """Non-empty 1 µs bins (as cyclictest 2.x prints them), their counts and
    the overflows; cyclictest's own histogram for its runs."""
    if name == "cyclictest":
        out = res.cyclictest(histogram_us=HIST_US)
        counts = out.histogram.sum(axis=1).to_numpy()
        over = int(out.threads["overflows"].sum())
    else:
        us = lat_ns // 1000  # truncated, as cyclictest's calcdiff does
        counts = np.bincount(us[(us >= 0) & (us < HIST_US)], minlength=HIST_US)
        over = int((us >= HIST_US).sum())
    bins = np.flatnonzero(counts)
    return bins.tolist(), counts[bins].tolist(), over


def one_run(states: str, governor: str, setting: str, name: str, seed: int, duration_ns: int) -> dict:
    limit = qos_limit_ns(states, setting)
    cfg = tl.Config(cpus=CPUS, nodes=1, idle_states=states, governor=governor, workload=workload(name, limit),
                    latency_req_ns=None if name == "cyclictest" else limit, duration_ns=duration_ns, seed=seed)
    res = tl.simulate(cfg)
    s, lat = res.summary, samples_ns(res, name)
    q = np.percentile(lat, [50, 99]) / 1e3
    bins, counts, over = histogram(res, name, lat)
    row = dict(workload=name, idle_states=states, governor=governor, setting=setting,
               qos_limit_us=np.nan if limit is None else limit / 1e3, seed=seed, samples=len(lat),
               latency_us_min=lat.min() / 1e3, latency_us_avg=lat.mean() / 1e3, latency_us_p50=q[0],
               latency_us_p99=q[1], latency_us_max=lat.max() / 1e3, hist_bins_us=bins, hist_counts=counts,
               hist_overflows=over, wakeups_per_cpu_per_s=s["wakeups_per_cpu_per_s"], energy_uj=s["energy_uj"],
               power_mw_per_cpu=s["avg_power_mw"] / CPUS, c6_residency_fraction=s["deepest_state_residency_fraction"],
               tick_stops=s["tick_stops"])
    # Where the idle time went: the §C PM QoS anchor reports residency, not latency.
    per_state = res.residency.groupby("state", observed=True)["total_ns"].sum()
    for state, ns in (per_state / per_state.sum()).items():
        row[f"idle_share_{str(state).lower()}"] = ns
    if name == "cyclictest":
        lt = res.latency
        for part in ("window_ns", "wake_ns", "exit_latency_ns", "sched_ns"):
            row[f"{part[:-3]}_us_mean"] = lt[part].mean() / 1e3
    return row


def run(quick: bool) -> pd.DataFrame:
    duration_ns = (200 if quick else 60_000) * 1_000_000
    seeds = range(1, 2 if quick else 4)
    return pd.DataFrame([one_run(*key, duration_ns)
                         for key in itertools.product(TABLES, GOVERNORS, SETTINGS, WORKLOADS, seeds)])


def table(df: pd.DataFrame) -> pd.DataFrame:
    """Means over seeds (max: the worst seed), settings in their order."""
    cols = dict(latency_us_p50="mean", latency_us_p99="mean", latency_us_max="max", wakeups_per_cpu_per_s="mean",
                power_mw_per_cpu="mean", c6_residency_fraction="mean")
    t = df.groupby(["workload", "idle_states", "governor", "setting"], sort=False).agg(cols)
    return t.sort_index(level=["workload", "idle_states", "governor"], sort_remaining=False)


if __name__ == "__main__":
    raise SystemExit(run_main(__doc__, __file__, "latency_vs_idle", run, table,
                             headline="§C: deep idle adds its exit latency to cyclictest's max; "
                                      "PM QoS 0 removes it at the cost of power"))
