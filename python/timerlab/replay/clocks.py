"""The clocks of a trace, as a replay needs them: the trace clock's offset
from CLOCK_MONOTONIC, jiffies as a function of monotonic time (the
constant, and the model of the jiffies-update duty that fits the recorded
jiffies), and how late each traced tick and stopped-tick wakeup fired.

Not here: what the CPUs did (activity.py), the script itself (script.py).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..trace.events import (CPU_IDLE_EXIT, TICK_FUNCTIONS, is_idle_entry, is_idle_loop_exit, is_tick,
                            is_tick_expiry, is_tick_stop)
from ..trace.rows import event_in, event_rows, function_in, latest_on_cpu, previous_on_cpu, rows, select_events, values

MAX_STALLED_JIFFIES = 5  # tick_sched_do_timer (kernel/time/tick-sched.c); the engine's kMaxStalledJiffies


def clock_offset(ev) -> int:
    """Trace clock - CLOCK_MONOTONIC: the smallest gap between an hrtimer
    expiry's timestamp and its monotonic now= (the entry is logged after now
    was read; timestamps may be truncated to µs, hence the -1 µs slack)."""
    h = select_events(ev, ("hrtimer_expire_entry",), ("ts_ns", "now_ns"))
    d = h["ts_ns"].to_numpy(np.int64) - h["now_ns"].to_numpy(dtype=np.int64, na_value=0)
    d = d[h["now_ns"].notna().to_numpy()]
    if not len(d):
        return 0
    resolution = 1000 if (h["ts_ns"].to_numpy() % 1000 == 0).all() else 1
    return int(d.min()) - (resolution - 1)


def tick_jiffies_offset(event, function, now_ns, now_jiffies, tick_ns):
    """jiffies - monotonic_ns // TICK_NSEC, read off pairs of a tick (whose
    now= is monotonic ns) and the next timer_expire_entry (now= in jiffies);
    the most common value wins. None when the trace lacks either event."""
    ticks = {f for f in set(function) if is_tick("hrtimer_expire_entry", f)}  # each name tested once
    last_tick, votes = None, {}
    for e, f, now, jiffies in zip(event, function, now_ns, now_jiffies):
        if e == "hrtimer_expire_entry":
            if f in ticks:
                last_tick = now // tick_ns
        elif e == "timer_expire_entry" and last_tick is not None:
            off = jiffies - last_tick
            votes[off] = votes.get(off, 0) + 1
    return max(votes, key=votes.get) if votes else None


# jiffies_fit: what an event does (an interrupt, a tick stop or restart, a wakeup, jiffies recorded).
_NONE, _IRQ, _STOP, _RESTART, _WAKE, _OBSERVED = range(6)


def _known(ev, name) -> np.ndarray:
    """Per row, whether it has a value of column ``name``."""
    return ev[name].notna().to_numpy() if name in ev else np.zeros(len(ev), dtype=bool)


def _u64(ev, name) -> np.ndarray:
    """A column of integers as uint64 (negative ones modulo 2**64), missing values as 0."""
    if name not in ev:
        return np.zeros(len(ev), dtype=np.uint64)
    return ev[name].to_numpy(np.int64 if ev[name].dtype.kind == "i" else np.uint64, na_value=0).astype(np.uint64)


def _plus(a: np.ndarray, n: int) -> list:
    """``a + n`` (integers) as Python ints, exactly (n may not fit in an int64)."""
    if len(a) and -(1 << 62) < n < 1 << 62 and -(1 << 62) < a.min() and a.max() < 1 << 62:
        return (a.astype(np.int64) + n).tolist()
    return [x + n for x in a.tolist()]


def jiffies_fit(ev, offset, j0, tick_ns, holder=None, handovers=None, stall_check=True):
    """How often each jiffies model gives the value the kernel recorded (at
    timer_start: expires - timeout; at timer_expire_entry: now): ``grid``
    (jiffies = monotonic // TICK_NSEC + j0) and ``kernel`` (the update duty:
    jiffies catch up when the duty CPU's tick runs — the first ticking CPU
    takes the duty when nobody holds it, a CPU stopping its tick drops it —
    and when a CPU whose tick is stopped leaves idle). ``holder``: the CPU
    holding the duty when the trace begins (None: nobody); ``handovers``, a
    list, receives (ts, line, cpu, new holder or None) at each change;
    ``stall_check``: the kernel has tick_sched_do_timer's stall check (5.18+).
    The result's ``observations``: how many recorded jiffies the fractions
    are of."""
    return _fit(_fit_rows(ev, offset, j0, tick_ns), holder, handovers, stall_check)


def _fit_rows(ev, offset, j0, tick_ns) -> tuple:
    """What jiffies_fit replays, whoever holds the duty: (the jiffies at the
    first event, or None; the per-row lists it reads)."""
    # What each event does to jiffies or the duty (_NONE: nothing; the first event's time starts jiffies).
    irq = event_in(ev, ("hrtimer_expire_entry",)) & _known(ev, "now_ns")
    # A failed stop (nohz_full dependency) keeps the tick and the duty.
    stop = is_tick_stop(ev)
    restart = is_idle_loop_exit(ev)  # the tick restarts
    wake = event_in(ev, ("cpu_idle",)) & (values(ev, "state", -1) == CPU_IDLE_EXIT)
    arm = event_in(ev, ("timer_start",)) & _known(ev, "expires_jiffies") & _known(ev, "timeout_jiffies")
    expiry = event_in(ev, ("timer_expire_entry",)) & _known(ev, "now_jiffies")
    act = np.select([irq, stop, restart, wake, arm | expiry], [_IRQ, _STOP, _RESTART, _WAKE, _OBSERVED], _NONE)
    first = np.flatnonzero(event_in(ev, ("hrtimer_expire_entry", "tick_stop", "cpu_idle", "timer_start",
                                         "timer_expire_entry", "sched_switch", "timer_base_idle")))[:1]
    # Whether the CPU's tick is stopped is its own state: an interrupt or a wakeup on a CPU whose tick
    # runs changes jiffies only if it is the tick (the duty, the stall check).
    on = np.flatnonzero(act != _NONE)
    cpu = ev["cpu"].to_numpy()[on]
    stopped = latest_on_cpu(cpu, np.where(act == _STOP, 1, np.where(act == _RESTART, 0, -1))[on]) == 1
    tick = function_in(ev, TICK_FUNCTIONS)[on] & (act[on] == _IRQ)
    keep = ((act[on] == _IRQ) & (stopped | tick)) | (act[on] == _STOP) | ((act[on] == _WAKE) & stopped) | (
        act[on] == _OBSERVED)
    on, cpu, stopped, tick = on[keep], cpu[keep], stopped[keep].tolist(), tick[keep].tolist()
    ts = ev["ts_ns"].to_numpy()
    grid = _plus((ts[on] - offset) // tick_ns, j0)
    now_j = _plus(_u64(ev, "now_ns")[on] // np.uint64(tick_ns), j0)
    # The jiffies the kernel recorded: at timer_start expires - timeout (mod 2**64), at an expiry now.
    obs = np.where(arm[on], _u64(ev, "expires_jiffies")[on] - _u64(ev, "timeout_jiffies")[on],
                   _u64(ev, "now_jiffies")[on]).tolist()
    jif = _plus((ts[first] - offset) // tick_ns, j0)[0] if len(first) else None
    return jif, (act[on].tolist(), cpu.tolist(), stopped, grid, now_j, tick, obs, ts[on].tolist(),
                 ev["line"].to_numpy()[on].tolist())


def _fit(rows, holder, handovers, stall_check) -> dict:
    """jiffies_fit's replay of ``rows`` (_fit_rows) with ``holder`` holding the duty at the start."""
    # Per row: comparisons rather than max() (jiffies are Python ints: the same values), the action
    # codes as locals; initial_duty replays a prefix once per candidate, jiffies_fit the whole trace.
    irq, stop, wake = _IRQ, _STOP, _WAKE
    jif, columns = rows
    last_seen, stalls = {}, {}
    ok_grid = ok_kernel = total = 0
    for a, c, st, g, nj, tk, o, t, ln in zip(*columns):
        if a == irq:
            if st and nj > jif:
                jif = nj  # tick_nohz_irq_enter: jiffies brought up to date
            if tk:
                if holder is None:
                    holder = c
                    if handovers is not None:
                        handovers.append((t, ln, c, c))
                if holder == c and nj > jif:
                    jif = nj
                # tick_sched_do_timer's stall check: own ticks seeing jiffies unchanged
                if not stall_check:
                    pass
                elif last_seen.get(c) != jif:
                    last_seen[c], stalls[c] = jif, 0
                else:
                    stalls[c] += 1
                    if stalls[c] == MAX_STALLED_JIFFIES:
                        if nj > jif:
                            jif = nj
                        last_seen[c], stalls[c] = jif, 0
        elif a == stop:
            if holder == c:
                holder = None
                if handovers is not None:
                    handovers.append((t, ln, c, None))
        elif a == wake:
            if g > jif:
                jif = g
        else:
            total += 1
            ok_grid += o == g
            ok_kernel += o == jif
            if o > jif:
                jif = o
    return {"grid": ok_grid / total if total else 1.0, "kernel": ok_kernel / total if total else 0.0,
            "observations": total}


def tick_events(ev):
    return ev[is_tick_expiry(ev)]


def initial_duty(ev, offset, j0, tick_ns, candidates, observations=300, stall_check=True):
    """The CPU that holds the jiffies-update duty when the trace begins (the
    trace starts long after boot, so the duty's history is not in it): of
    ``candidates`` (the CPUs whose tick runs at the start), the one whose
    holding the duty best reproduces the jiffies recorded by the first
    ``observations`` timer events; ties go to the first CPU to log a tick."""
    idx = event_rows(ev, ("timer_start", "timer_expire_entry"))
    prefix = ev.iloc[:idx[min(observations, len(idx)) - 1] + 1] if len(idx) else ev
    # The CPUs of the ticks, not tick_events' frame: a boolean selection copies every column.
    first = [c for c in dict.fromkeys(prefix["cpu"].to_numpy()[is_tick_expiry(prefix)].tolist()) if c in candidates]
    order = list(dict.fromkeys(first + sorted(candidates)))
    if not order:
        return -1
    rows = _fit_rows(prefix, offset, j0, tick_ns)  # replayed once per candidate
    fits = [_fit(rows, c, None, stall_check)["kernel"] for c in order]
    return order[int(np.argmax(fits))]


def tick_wakeups(ev, tick_ns, offset=None):
    """(programmed_ns, delay_ns, cpu, line, stopped, from_idle) of each traced
    tick expiry: the time its hrtimer was programmed for (hrtimer_start of
    the same timer on that CPU), how late it fired, whether the tick was
    stopped then (a tick_stop since the CPU last left the idle loop: the
    one-shot wakeup tick_nohz_stop_tick programmed for the next event) and
    whether it ended an idle period (the first event after a cpu_idle
    entry). For a running tick the programmed time is its grid point (the
    one before it fired if the hrtimer_start is not in the trace); a delay
    of a tick or more means the grid point's tick never ran — a stall under
    the hypervisor — and the next one came instead, late.

    With the trace clock's ``offset`` (clock_offset), a tick's lateness runs
    to when its handler ran (the event's timestamp), not to its ``now=``: a
    vCPU can be descheduled between reading the clock and running the
    handler (0.8 ms on the idle trace), and it is the handler that does the
    tick's work — its timer softirq takes the duty's event, and the
    jiffies-update duty's holder advances jiffies there, which other CPUs'
    tick decisions read (tick_nohz_next_event's basej)."""
    return list(zip(*(c.tolist() for c in tick_wakeup_columns(ev, tick_ns, offset)[:6])))


def tick_wakeup_columns(ev, tick_ns, offset=None) -> tuple:
    """tick_wakeups as NumPy columns (programmed_ns and delay_ns uint64):
    the replay's script takes them whole, without a tuple per tick; and a
    seventh, ``running``: the hrtimer_start that armed the tick is in the
    trace and is a running tick's (it programmed the next grid point, at
    most a tick after it ran: tick_sched_timer forwarding the tick, not
    tick_nohz_stop_tick putting it off), and the CPU ran tasks from before
    that grid point until the tick (its idle task logs nothing in between):
    a busy CPU stops its tick only under nohz_full, whose stop tick_stop
    logs (``stopped``), while a stop from idle that the trace does not show
    would leave the same arm behind. Such a tick a period or more late was held up (a
    descheduled vCPU), even on a CPU that logs no cpu_idle.
    Needs ``offset`` (else all False)."""
    tick = event_in(ev, ("hrtimer_start", "hrtimer_expire_entry")) & function_in(ev, TICK_FUNCTIONS)
    stop = is_tick_stop(ev)
    left = is_idle_loop_exit(ev)
    idle = event_in(ev, ("cpu_idle",))
    entry = is_idle_entry(ev)
    on = np.flatnonzero(tick | stop | left | idle)
    cpu = ev["cpu"].to_numpy()[on]
    stopped = latest_on_cpu(cpu, np.where(stop, 1, np.where(left, 0, -1))[on]) == 1
    # In an idle state, nothing seen since: a tick's event is what ended it.
    since = latest_on_cpu(cpu, np.where(entry, 1, np.where(idle | tick, 0, -1))[on])
    prev = previous_on_cpu(cpu)
    from_idle = (prev >= 0) & (since[prev] == 1)
    at = tick[on]
    on, cpu, stopped, from_idle = on[at], cpu[at], stopped[at], from_idle[at]
    sel = rows(ev, on, ("event", "hrtimer", "expires_ns", "now_ns", "ts_ns", "line"))
    arm = event_in(sel, ("hrtimer_start",))
    expiry = ~arm & (sel["now_ns"].notna().to_numpy() if "now_ns" in sel else False)  # one without now= is none
    start = programmed_by(cpu, sel["hrtimer"] if "hrtimer" in sel else pd.Series(np.nan, index=sel.index),
                          arm, expiry)
    expiry = np.flatnonzero(expiry)
    # In uint64, as the columns are: exact, and the lateness is never negative (g <= now <= ran).
    s = start[expiry]
    armed = (s >= 0) & (sel["expires_ns"].notna().to_numpy()[s] if "expires_ns" in sel else False)
    g = sel["expires_ns"].to_numpy(np.uint64, na_value=0)[s] if "expires_ns" in sel else np.zeros(len(s), np.uint64)
    was_stopped = armed & stopped[s]
    now = sel["now_ns"].to_numpy(np.uint64, na_value=0)[expiry]
    tick = np.uint64(tick_ns)
    # A running tick's programmed time is a grid point; else (or none, or later than now) the one before now.
    programmed = armed & (g <= now) & (was_stopped | (g % tick == 0))
    g, was_stopped = np.where(programmed, g, now // tick * tick), was_stopped & programmed
    ran = now
    running = np.zeros(len(expiry), dtype=bool)
    if offset is not None:
        ts = sel["ts_ns"].to_numpy()
        handler = ts[expiry] - offset
        later = (handler >= 0) & (handler.astype(np.uint64) > now)
        ran = np.where(later, handler.astype(np.uint64), now)
        armed_at = ts[np.maximum(s, 0)] - offset  # monotonic ns of the hrtimer_start
        # The idle task's last event on the CPU, at or before each tick (the tick's own, if it interrupted idle).
        all_ts = ev["ts_ns"].to_numpy()
        idle_seen = latest_on_cpu(ev["cpu"].to_numpy(), np.where(ev["pid"].to_numpy() == 0, all_ts, -1))[on[expiry]]
        running = (programmed & ~was_stopped & (armed_at >= 0) & (g <= armed_at.astype(np.uint64) + tick)
                   & (idle_seen - offset < g.astype(np.int64)))
    return g, ran - g, cpu[expiry], sel["line"].to_numpy()[expiry], was_stopped, from_idle[expiry], running


def programmed_by(cpu: np.ndarray, timer: pd.Series, arm: np.ndarray, expiry: np.ndarray) -> np.ndarray:
    """Per row, the position of the ``arm`` an ``expiry`` consumes: the
    latest earlier arm or expiry of the same timer on the same CPU, if an
    arm (-1 where none)."""
    use = np.flatnonzero(arm | expiry)
    codes = pd.factorize(timer.iloc[use])[0]  # missing: -1, a key of its own
    c = cpu[use]
    order = np.lexsort((codes, c))  # stable: time order within each (CPU, timer)
    same = (c[order][1:] == c[order][:-1]) & (codes[order][1:] == codes[order][:-1])
    out = np.full(len(cpu), -1, dtype=np.int64)
    out[use[order[1:]]] = np.where(same & arm[use[order[:-1]]], use[order[:-1]], -1)
    return out

