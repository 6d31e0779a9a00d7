"""The rates a prediction compares, measured the same way on a real trace and
on a simulated run, none of which needs two runs to match event for event:

================================= ============================================================
wakeups_per_cpu_per_s             idle periods ended, per CPU that shows them (cpu_idle)
idle_entries_per_cpu_per_s        cpu_idle entries
tick_stops_per_cpu_per_s          tick_stop success=1
global_expired_remote_fraction    of the global timers' expiries (neither pinned nor
                                  deferrable), the share run by another CPU than the one
                                  whose base held the timer
remote_expiries_per_cpu_per_s     expiries of another CPU's timers
ipis_per_s                        IPIs sent (a trace: ipi_send_cpu of every kind, 6.4+; a
                                  simulation: timer and wakeup IPIs only)
deep_idle_fraction                idle time in the deepest state used
lateness_us_p50, _p90, _p99       a timer's expiry minus its requested expiry
workload_pace_per_s               the workload's own pace: user sleeps ended
                                  (hrtimer_wakeup), else task switch-ins
================================= ============================================================

A trace is measured over its replay window (the Script's start and end: the
boot-time hierarchy set-up at the top of a file is left out), on the CPUs
that log cpu_idle; a simulation over its run, on the same CPUs.

Not here: the prediction itself (predict.py).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..trace.events import CPU_IDLE_EXIT, column

RATES = ("wakeups_per_cpu_per_s", "idle_entries_per_cpu_per_s", "tick_stops_per_cpu_per_s",
         "global_expired_remote_fraction", "remote_expiries_per_cpu_per_s", "ipis_per_s", "deep_idle_fraction",
         "lateness_us_p50", "lateness_us_p90", "lateness_us_p99")
# Rates that grow with how fast the workload runs (compared at one pace); the others are shares.
PACED = ("wakeups_per_cpu_per_s", "idle_entries_per_cpu_per_s", "tick_stops_per_cpu_per_s",
         "remote_expiries_per_cpu_per_s", "ipis_per_s")
PER_CPU = ("wakeups_per_s", "idle_entries_per_s", "tick_stops_per_s", "remote_expiries_per_s")


def _global(flags) -> bool:
    """A timer with these trace flags is global: neither pinned nor deferrable."""
    letters = str(flags or "").split("|")
    return "P" not in letters and "D" not in letters


def _is_global(flags) -> np.ndarray:
    return np.array([_global(f) for f in pd.Series(flags).astype(str).tolist()], dtype=bool)


def _percentiles(lateness_ns) -> dict:
    x = np.asarray(lateness_ns, dtype=float)
    x = x[np.isfinite(x)]
    return {f"lateness_us_p{q}": float(np.percentile(x, q)) / 1e3 if len(x) else np.nan for q in (50, 90, 99)}


def _summary(per_cpu: pd.DataFrame, seconds: float, remote_fraction, ipis, deep, lateness, pace) -> dict:
    n = max(len(per_cpu), 1)
    out = {
        "wakeups_per_cpu_per_s": per_cpu["wakeups_per_s"].sum() / n,
        "idle_entries_per_cpu_per_s": per_cpu["idle_entries_per_s"].sum() / n,
        "tick_stops_per_cpu_per_s": per_cpu["tick_stops_per_s"].sum() / n,
        "global_expired_remote_fraction": remote_fraction,
        "remote_expiries_per_cpu_per_s": per_cpu["remote_expiries_per_s"].sum() / n,
        "ipis_per_s": np.nan if ipis is None else ipis / seconds,
        "deep_idle_fraction": deep,
        **_percentiles(lateness),
        "workload_pace_per_s": pace / seconds,
    }
    return {k: float(v) if v is not None else np.nan for k, v in out.items()}


def trace_rates(trace, script, cpus) -> tuple[dict, pd.DataFrame]:
    """The rates of a real trace over its script's window, on ``cpus``."""
    off = script.clock_offset_ns
    ev = trace.events
    ev = ev[(ev["ts_ns"] >= script.start_ns + off) & (ev["ts_ns"] <= script.end_ns + off)]
    seconds = max(script.end_ns - script.start_ns, 1) / 1e9
    ci = ev[ev["event"] == "cpu_idle"]
    entry = ci["state"] != CPU_IDLE_EXIT
    stops = ev[ev["event"] == "tick_stop"]
    if "success" in stops:
        stops = stops[stops["success"].fillna(1) == 1]
    remote_by_cpu, remote_fraction, lateness = _trace_expiries(ev, script)
    per_cpu = pd.DataFrame({
        "cpu": cpus,
        "wakeups_per_s": [int(((ci["cpu"] == c) & ~entry).sum()) / seconds for c in cpus],
        "idle_entries_per_s": [int(((ci["cpu"] == c) & entry).sum()) / seconds for c in cpus],
        "tick_stops_per_s": [int((stops["cpu"] == c).sum()) / seconds for c in cpus],
        "remote_expiries_per_s": [remote_by_cpu.get(c, 0) / seconds for c in cpus],
    })
    ipis = int((ev["event"] == "ipi_send_cpu").sum()) if "ipi_send_cpu" in set(trace.event_counts().index) else None
    deep = _trace_deep_idle(ci)
    hw = int(((ev["event"] == "hrtimer_expire_entry") & (ev["function"].astype(str) == "hrtimer_wakeup")).sum()) \
        if "function" in ev else 0
    pace = hw or int(((ev["event"] == "sched_switch") & (ev["next_pid"] != 0)).sum())
    return _summary(per_cpu, seconds, remote_fraction, ipis, deep, lateness, pace), per_cpu


def _trace_expiries(ev, script):
    """Remote expiries per expiring CPU, the global timers' remote share, and
    the lateness (ns) of every expiry of a timer armed in the window."""
    sel = ev[ev["event"].isin(("timer_start", "timer_expire_entry"))]
    event, cpu, timer, ts = column(sel, "event"), column(sel, "cpu"), column(sel, "timer"), column(sel, "ts_ns")
    base, flags, expires = column(sel, "base_cpu"), column(sel, "flags", ""), column(sel, "expires_jiffies")
    tick_ns = (1_000_000_000 + script.hz // 2) // script.hz
    last, by_cpu, lateness = {}, {}, []
    n_global = n_remote = 0
    for i, e in enumerate(event):
        if e == "timer_start":
            last[timer[i]] = (cpu[i] if base[i] is None else base[i], flags[i], expires[i])
            continue
        s = last.pop(timer[i], None)
        if s is None:
            continue
        remote = cpu[i] != s[0]
        if remote:
            by_cpu[cpu[i]] = by_cpu.get(cpu[i], 0) + 1
        if _global(s[1]):
            n_global += 1
            n_remote += remote
        due_mono = ((s[2] - script.initial_jiffies) % (1 << 64)) * tick_ns
        lateness.append(ts[i] - script.clock_offset_ns - due_mono)
    return by_cpu, (n_remote / n_global if n_global else np.nan), lateness


def _trace_deep_idle(ci) -> float:
    """Share of idle time in the deepest state the trace shows."""
    cpu, state, ts = ci["cpu"].to_numpy(), ci["state"].to_numpy(dtype=np.int64), ci["ts_ns"].to_numpy(np.int64)
    open_, time = {}, {}
    for c, s, t in zip(cpu.tolist(), state.tolist(), ts.tolist()):
        if s != CPU_IDLE_EXIT:
            open_[c] = (s, t)
        elif c in open_:
            st, t0 = open_.pop(c)
            time[st] = time.get(st, 0) + t - t0
    total = sum(time.values())
    return time[max(time)] / total if total else np.nan


def result_rates(res, cpus, pace_per_s: float) -> tuple[dict, pd.DataFrame]:
    """The rates of a simulated run, on ``cpus``; its workload's pace is the
    replayed trace's (``pace_per_s``)."""
    seconds = res.config.duration_ns / 1e9
    pc = res.per_cpu.set_index("cpu").loc[cpus]
    per_cpu = pd.DataFrame({
        "cpu": cpus,
        "wakeups_per_s": pc["wakeups"].to_numpy() / seconds,
        "idle_entries_per_s": pc["idle_entries"].to_numpy() / seconds,
        "tick_stops_per_s": pc["tick_stops"].to_numpy() / seconds,
        "remote_expiries_per_s": pc["remote_expiries_done"].to_numpy() / seconds,
    })
    t = res.timers
    done = t[t["outcome"] == "expired"]
    g = done[_is_global(done["flags"])]
    remote_fraction = float((g["cpu_expired"] != g["base_cpu"]).mean()) if len(g) else np.nan
    r = res.residency
    r = r[r["cpu"].isin(cpus)]
    used = r[r["hits"] > 0]
    depth = used["state"].cat.codes  # the table's order: shallow to deep
    deep = float(used.loc[depth == depth.max(), "total_ns"].sum() / used["total_ns"].sum()) \
        if len(used) and used["total_ns"].sum() else np.nan
    ipis = float(res.per_cpu["ipis_sent"].sum())
    lateness = done["lateness_ns"].to_numpy(dtype=float, na_value=np.nan)
    return _summary(per_cpu, seconds, remote_fraction, ipis, deep, lateness, pace_per_s * seconds), per_cpu
