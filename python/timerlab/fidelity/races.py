"""Races for the timer-migration duty: which idle CPUs held it for a global
timer's expiry, in the trace and in the simulation.

When the whole hierarchy is idle, the last CPU to go idle and every CPU that
tmigr_handle_remote re-armed program their stopped tick for the same group
event, to the nanosecond. Whichever of them runs its timer softirq first
takes the event; which one that is, is decided by how late each wakeup
arrives (the platform's wake order, timerlab.wake_latency), not by the
model. So an exact expiring CPU is a fair measure only where the kernel had
a single eligible CPU — an active CPU (woken by anything but its stopped
tick: its running tick, a task, an interrupt) or a lone duty holder — and
for a race the fair measure is whether the simulated winner was one of the
kernel's duty holders, and how far the two holder sets overlap.

A CPU holds the duty for the event programmed at P if, at time P, the last
wakeup its stopped tick was programmed for is P (hrtimer_start of the tick
after a tick_stop) and it has not left the idle loop since. The same
definition reads the trace and the simulation's event log (which logs
hrtimer_start for the stopped tick's wakeup).

Not here: the comparison of expiring CPUs itself (validate.py).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..trace.events import TICK_FUNCTIONS, column
from ..trace.rows import (event_in, latest_on_cpu, previous_on_cpu, rows, rows_frame, select_events, str_isin,
                          values)


def stopped_programs(ev, offset_ns: int = 0) -> pd.DataFrame:
    """One row per programming of a stopped tick's wakeup: cpu, from_ns (when
    programmed), until_ns (the next programming of that CPU's tick, or its
    leaving the idle loop), programmed_ns. Times are ``ts_ns - offset_ns``
    (CLOCK_MONOTONIC for a trace with its clock offset). Rows in the order
    they end (those still open at the end last, in the order they began)."""
    sel = _program_events(ev)
    cpu = sel["cpu"].to_numpy()
    stop = event_in(sel, ("tick_stop",))
    start = event_in(sel, ("hrtimer_start",))
    # A successful tick_stop stops the CPU's tick (a failed one changes nothing), any event but a tick
    # programming restarts it; a programming while stopped opens a program, the CPU's next event but
    # a tick_stop ends it.
    stopped = latest_on_cpu(cpu, np.where(stop, np.where(values(sel, "success", -1) != 0, 1, -1),
                                          np.where(start, -1, 0))) == 1
    known = sel["expires_ns"].notna().to_numpy() if "expires_ns" in sel else np.zeros(len(sel), dtype=bool)
    opens = start & stopped & known
    ends = np.flatnonzero(~stop)
    before = previous_on_cpu(cpu[ends])
    closing = np.flatnonzero(before >= 0)
    closing = closing[opens[ends[before[closing]]]]
    closed, by = ends[closing], ends[before[closing]]
    by = np.concatenate([by, np.setdiff1d(np.flatnonzero(opens), by)])  # then those open at the end
    ts = sel["ts_ns"].to_numpy() - offset_ns
    until = ts[closed].tolist()
    if len(by) > len(closed):
        until += [int(ev["ts_ns"].max()) - offset_ns + 1] * (len(by) - len(closed))
    programmed = [int(p) for p in column(rows(sel, by, ("expires_ns",)), "expires_ns")]
    return rows_frame(list(zip(cpu[by].tolist(), ts[by].tolist(), until, programmed)),
                      ["cpu", "from_ns", "until_ns", "programmed_ns"])


def _program_events(ev) -> pd.DataFrame:
    """The events stopped_programs reads, less those that change nothing
    there: the starts of hrtimers other than the tick (the simulation logs
    only the stopped tick's, with no function; a trace every hrtimer's),
    switches from a task and timer_base_idle other than an exit."""
    sel = select_events(ev, ("hrtimer_start", "tick_stop", "sched_switch", "timer_base_idle"),
                        ("cpu", "ts_ns", "function", "expires_ns", "success", "prev_pid", "is_idle"))
    start = event_in(sel, ("hrtimer_start",))
    if "function" in sel:
        start &= sel["function"].isna().to_numpy() | str_isin(sel["function"], TICK_FUNCTIONS)
    switch_out = event_in(sel, ("sched_switch",)) & (values(sel, "prev_pid", -1) == 0)
    loop_exit = event_in(sel, ("timer_base_idle",)) & (values(sel, "is_idle", -1) == 0)
    keep = event_in(sel, ("tick_stop",)) | start | switch_out | loop_exit
    return sel.iloc[np.flatnonzero(keep)]


def holders(programs: pd.DataFrame, p_ns: int) -> frozenset:
    """The CPUs whose stopped tick was programmed for ``p_ns`` at that time."""
    return _holder_sets(programs, [p_ns])[0]


def _holder_sets(programs: pd.DataFrame, times) -> list:
    """holders(programs, p) of each p of ``times`` (frozenset() for None),
    the table's columns read once: pandas per expiry cost more than the masks."""
    programmed, from_ns, until_ns, cpu = (programs[c].to_numpy() for c in ("programmed_ns", "from_ns", "until_ns",
                                                                          "cpu"))
    return [frozenset() if p is None else
            frozenset(cpu[(programmed == p) & (from_ns <= p) & (until_ns > p)].tolist()) for p in times]


def winner_programs(programs: pd.DataFrame, cpus, times) -> list:
    """For each (cpu, expiry time): the wakeup P its stopped tick was
    programmed for, if that wakeup was due and still programmed when the CPU
    ran the expiry (its timer softirq runs in the interrupt of that wakeup,
    before the idle path reprograms the tick) — else None: the CPU was
    active (woken otherwise, its tick running)."""
    # Per CPU, its programs' columns as arrays (in the table's order): a
    # pandas mask per expiry cost more than the rest of validate's races.
    by_cpu = {c: (g["from_ns"].to_numpy(), g["until_ns"].to_numpy(), g["programmed_ns"].to_numpy())
              for c, g in programs.groupby("cpu")}
    out = []
    for c, t in zip(cpus, times):
        g = by_cpu.get(c)
        if g is None or t is None:
            out.append(None)
            continue
        from_ns, until_ns, programmed = g
        m = np.flatnonzero((from_ns < t) & (until_ns >= t) & (programmed <= t))
        out.append(int(programmed[m[-1]]) if len(m) else None)
    return out


def race_columns(x: pd.DataFrame, trace, script, res, sim_events=None) -> pd.DataFrame:
    """``x`` (validate's expiring-CPU table) with the duty holders of each
    expiry: holders_trace, holders_sim (frozensets; the winner alone where it
    was active), race (the kernel had two or more holders), in_holders (the
    simulated winner is one of the kernel's holders), jaccard. ``sim_events``:
    the simulation's event log if not ``res.events`` (validate's, with the
    columns read here)."""
    ev = trace.events
    off = script.clock_offset_ns
    tr_prog = stopped_programs(ev, off)
    # ts_ns by line (a Series of the two columns: set_index would copy every column of the trace)
    ts_of = pd.Series(ev["ts_ns"].to_numpy(), index=ev["line"].to_numpy())
    t_exp = ts_of.loc[x["line"].to_numpy()].to_numpy(np.int64) - off if len(x) else []
    p_tr = winner_programs(tr_prog, x["cpu_trace"].tolist(), [int(t) for t in t_exp])
    sim_ev = res.events if sim_events is None else sim_events
    sim_prog = stopped_programs(sim_ev, 0)
    cpu_sim = [None if pd.isna(c) else int(c) for c in x["cpu_sim"]]
    t_sim = [None if s < 0 else int(s) for s in x["expired_ns_sim"].fillna(-1).astype(np.int64)]
    p_sim = winner_programs(sim_prog, cpu_sim, t_sim)
    h_tr = _holder_sets(tr_prog, p_tr)
    h_tr = [h if h else frozenset({int(c)}) for h, c in zip(h_tr, x["cpu_trace"])]
    h_sim = _holder_sets(sim_prog, p_sim)
    h_sim = [h if h or c is None else frozenset({c}) for h, c in zip(h_sim, cpu_sim)]
    out = x.copy()
    out["holders_trace"] = h_tr
    out["holders_sim"] = h_sim
    out["race"] = [len(h) >= 2 for h in h_tr]
    out["in_holders"] = [c is not None and c in h for c, h in zip(cpu_sim, h_tr)]
    out["jaccard"] = [len(a & b) / len(a | b) if a | b else np.nan for a, b in zip(h_tr, h_sim)]
    return out
