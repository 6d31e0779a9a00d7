"""validate's hrtimer items: where and when the replayed hrtimers expired,
and which idle periods they ended, simulation vs kernel.

* ``hrtimer`` — each expiry of an hrtimer other than the tick (the replay's
  own: replay/hrtimers.py) on the kernel's CPU and within 250 µs of the
  kernel's handler. The n-th instance of a pointer in the trace is the n-th
  arm of its key in the simulation (key k is HrtimerId nr_cpus + k).
* ``hrtimer_wakeups`` — idle periods ended by an hrtimer other than the tick,
  per CPU and callback, trace vs simulation: 1 - sum|sim - trace| / sum
  trace (CPUs that log cpu_idle; the agreement of each CPU is in the table,
  and the note names those below 95 %).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..trace.events import CPU_IDLE_EXIT, TICK_FUNCTIONS, column
from ..trace.hrtimers import hrtimer_table
from ..trace.rows import cpu_order, event_rows, str_isin
from .report import FidelityItem

_WINDOW_NS = 250_000


def hrtimer_expiries(trace, script, res) -> pd.DataFrame | None:
    """Each traced expiry of a replayed hrtimer with the simulation's (None:
    no hrtimer other than the tick was replayed)."""
    keys = {int(p): k for k, p in enumerate(script.hrtimer_pointers)}
    if not keys:
        return None
    t = hrtimer_table(trace)
    t = t[t["hrtimer"].isin(keys)].copy()
    # Instances in the order of their start (those armed before the trace first), as the script arms them.
    t["_order"] = t["armed_ts_ns"].fillna(-1)
    t = t.sort_values(["hrtimer", "_order", "line"], kind="stable")
    t["key"] = t["hrtimer"].map(keys).astype(np.int64)
    t["arm"] = t.groupby("key").cumcount()
    t = t[t["outcome"] == "expired"]
    n = res.config.topology.cpus
    h = res.hrtimers
    h = h[(h["hrtimer"] >= n) & (h["hrtimer"] < n + len(keys))].copy()
    h["key"] = h["hrtimer"].astype(np.int64) - n
    h["arm"] = h.groupby("key").cumcount()
    m = t.merge(h[["key", "arm", "cpu_expired", "expired_ns"]].rename(
        columns={"cpu_expired": "cpu_sim", "expired_ns": "expired_ns_sim"}), on=["key", "arm"], how="left")
    off = script.clock_offset_ns
    # The kernel's handler ran at its clock reading, or later (a vCPU descheduled in between).
    handler = np.maximum(m["now_ns"].to_numpy(dtype=np.float64, na_value=np.nan),
                         m["end_ts_ns"].to_numpy(dtype=np.float64, na_value=np.nan) - off)
    m["expired_ns_trace"] = pd.array(np.where(np.isnan(handler), pd.NA, handler), dtype="Int64")
    m["error_ns"] = (m["expired_ns_sim"] - m["expired_ns_trace"]).abs()
    return m


def hrtimer_item(m: pd.DataFrame | None) -> FidelityItem:
    """The ``hrtimer`` item of :func:`hrtimer_expiries`' table (of one
    window of the trace, or of several concatenated)."""
    name = "hrtimer"
    if m is None:
        return FidelityItem(name, None, 0, 0, pd.DataFrame(),
                            "not compared: no hrtimer other than the tick replayed (the trace has no hrtimer_start)")
    same_cpu = (m["cpu_sim"] == m["cpu_expired"]).fillna(False).astype(bool)
    on_time = (m["error_ns"] <= _WINDOW_NS).fillna(False).astype(bool)
    ok = same_cpu & on_time
    cols = ["line", "function", "key", "arm", "cpu_expired", "cpu_sim", "expired_ns_trace", "expired_ns_sim",
            "error_ns"]
    note = (f"expiries of the replayed hrtimers (not the tick): on the kernel's CPU and within 250 µs of its "
            f"handler; same CPU {100 * same_cpu.mean():.2f} %, median error "
            f"{m['error_ns'].median() / 1e3:.0f} µs" if len(m) else "no replayed hrtimer expired in the trace")
    return FidelityItem(name, float(ok.mean()) if len(m) else None, len(m), int(ok.sum()), m.loc[~ok, cols], note)


def _ended_by_hrtimer(ev, cpus) -> pd.Series:
    """(cpu, function) -> idle periods of a trace whose first event after the
    entry was the expiry of an hrtimer other than the tick."""
    cols = [c for c in ("event", "cpu", "state", "function") if c in ev]
    sel = ev.iloc[np.flatnonzero(ev["cpu"].isin(cpus).to_numpy()), ev.columns.get_indexer(cols)]
    ended = sel.iloc[_first_after_entry(sel)]
    out = {}
    for c, fn in zip(column(ended, "cpu"), column(ended, "function", "")):
        out[(c, str(fn))] = out.get((c, str(fn)), 0) + 1
    return pd.Series(out, dtype=np.int64)


def _first_after_entry(sel) -> np.ndarray:
    """Positions of the expiries of hrtimers other than the tick that are
    the first event (cpu_idle aside: the exit may be logged before the
    handler) on their CPU after an idle entry — an entry on that CPU since
    its previous such event."""
    if not len(sel):
        return np.zeros(0, dtype=np.int64)
    cpu = sel["cpu"].to_numpy()
    entry = np.zeros(len(sel), dtype=bool)
    entry[event_rows(sel, ("cpu_idle",))] = True
    other = ~entry
    if "state" in sel:  # a missing state is no exit
        entry &= sel["state"].to_numpy(dtype=np.int64, na_value=-1) != CPU_IDLE_EXIT
    # Entries counted per CPU, in each CPU's order of events (stable).
    order = cpu_order(cpu)
    cpu_s = cpu[order]
    count = np.cumsum(entry[order])
    starts = np.r_[True, cpu_s[1:] != cpu_s[:-1]]
    first = np.maximum.accumulate(np.where(starts, np.arange(len(cpu_s)), 0))  # each CPU's first position
    before_cpu = np.where(first > 0, count[first - 1], 0)
    q = np.flatnonzero(other[order])
    since = before_cpu[q]  # entries before the previous other event of the CPU (or its first event)
    same = cpu_s[q[1:]] == cpu_s[q[:-1]]
    since[1:][same] = count[q[:-1]][same]
    hrtimer = np.zeros(len(sel), dtype=bool)
    hrtimer[event_rows(sel, ("hrtimer_expire_entry",))] = True
    if "function" in sel:
        hrtimer &= ~str_isin(sel["function"], TICK_FUNCTIONS)
    rows = order[q[count[q] > since]]
    return np.sort(rows[hrtimer[rows]])


def wakeup_counts(trace, res, visible) -> pd.DataFrame | None:
    """Idle periods ended by an hrtimer other than the tick, per (cpu,
    function): columns trace and sim (None: no CPU logs cpu_idle)."""
    if res.idle_periods is None or not visible:
        return None
    tr = _ended_by_hrtimer(trace.events, visible)
    p = res.idle_periods
    # The idle period in progress at the start began before the trace, which cannot show its entry.
    p = p[(p["cause"] == "hrtimer") & p["cpu"].isin(visible) & (p["start_ns"] > res.config.start_ns)]
    sim = p.groupby(["cpu", p["function"].astype(str)]).size()
    return pd.concat([tr.rename("trace"), sim.rename("sim")], axis=1).fillna(0).astype(np.int64)


def wakeups_item(df: pd.DataFrame | None) -> FidelityItem:
    """The ``hrtimer_wakeups`` item of :func:`wakeup_counts`' table (of one
    window, or summed over several)."""
    name = "hrtimer_wakeups"
    if df is None:
        return FidelityItem(name, None, 0, 0, pd.DataFrame(), "not compared: no CPU logs cpu_idle")
    if not len(df) or not df["trace"].sum():
        return FidelityItem(name, None, 0, 0, pd.DataFrame(),
                            f"not compared: no idle period ended by an hrtimer other than the tick in the trace "
                            f"({int(df['sim'].sum()) if len(df) else 0} in the simulation)")
    df.index = df.index.set_names(["cpu", "function"])
    df = df.reset_index()
    df["diff"] = (df["sim"] - df["trace"]).abs()
    per_cpu = df.groupby("cpu")[["trace", "diff"]].sum()
    per_cpu["agreement"] = 1 - per_cpu["diff"] / per_cpu["trace"].clip(lower=1)
    low = per_cpu[per_cpu["agreement"] < 0.95]
    agreement = max(0.0, float(1 - df["diff"].sum() / df["trace"].sum()))
    note = (f"idle periods ended by an hrtimer other than the tick, per CPU and callback, 1 - sum|sim-trace|/sum "
            f"trace; lowest CPU {100 * per_cpu['agreement'].min():.1f} %"
            + (f"; below 95 %: CPU(s) {low.index.tolist()}" if len(low) else ""))
    return FidelityItem(name, agreement, len(per_cpu), int((per_cpu["agreement"] >= 0.95).sum()),
                        df[df["diff"] > 0], note)
