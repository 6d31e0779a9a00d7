"""What each CPU did, as a replay reads it off a trace: when it ran tasks
and when its idle task (task_intervals), the interrupts that ended idle
periods and that the simulation does not model (device_interrupt_columns),
and the kernel's tick decisions in idle (tick_policy_columns, hidden_tick_policies,
initial_ticks).

Not here: the clocks (clocks.py), timer operations (script.py).
"""
from __future__ import annotations

import numpy as np

from ..trace.events import (CPU_IDLE_EXIT, TICK_FUNCTIONS, column, is_idle_entry, is_tick_expiry,
                            need_resched_array)
from ..trace.rows import (cpu_order, event_in, function_in, latest_on_cpu, previous_flag_on_cpu, previous_on_cpu,
                          rows, values)
from .ops import OP_BUSY, OP_EXIT, OP_IDLE, OP_IRQ


# What an event does to its CPU's idle period (device_interrupt_columns, clock_wake_end_lines): an idle entry or
# exit, a task runs, the idle loop is left without one, other (_CLOCK: a clock wakeup that ended it).
_ENTRY, _EXIT, _RUN, _LEFT, _OTHER, _CLOCK = range(6)
_BY_IRQ, _BY_TASK, _BY_TICK = range(3)  # device_interrupt_columns: what ended an idle period


def idle_actions(ev):
    """Per row, its action (_ENTRY.._OTHER), and whether it is a cpu_idle."""
    idle = event_in(ev, ("cpu_idle",))
    entry = is_idle_entry(ev)
    return np.select([entry, idle, task_runs(ev), loop_left(ev)], [_ENTRY, _EXIT, _RUN, _LEFT], _OTHER), idle


def task_runs(ev) -> np.ndarray:
    """Per row: a switch from the idle task to a task (a missing next_pid counts as one)."""
    return event_in(ev, ("sched_switch",)) & (values(ev, "prev_pid", -1) == 0) & (values(ev, "next_pid", -1) != 0)


def loop_left(ev) -> np.ndarray:
    """Per row: the hierarchy sees the CPU active (tmigr_cpu_active, or timer_base_idle is_idle=0)."""
    return event_in(ev, ("tmigr_cpu_active",)) | event_in(ev, ("timer_base_idle",)) & (values(ev, "is_idle", -1) == 0)


def clock_wakeups(ev, hrtimer_expiries) -> np.ndarray:
    """Per row: an expiry of the tick's hrtimer, or one of the replayed ``hrtimer_expiries`` (lines)."""
    lines = np.fromiter(hrtimer_expiries, dtype=np.int64, count=len(hrtimer_expiries))
    return event_in(ev, ("hrtimer_expire_entry",)) & (
        function_in(ev, TICK_FUNCTIONS) | np.isin(ev["line"].to_numpy(), lines))


def timer_wakeups(ev, hrtimers: bool = True) -> dict:
    """{line of a sched_switch: ("timer" | "hrtimer", pointer)} for every
    switch into a task that a timer's callback woke — a sched_wakeup between
    that timer's timer_expire_entry and _exit (process_timeout waking a task
    asleep in schedule_timeout), or right after an hrtimer_wakeup's
    hrtimer_expire_entry on that CPU (a nanosleep or poll timeout; hrtimer
    callbacks log no exit in these traces, and wake one task): the task runs
    because the timer expired, so a replay starts it when the simulation
    expires that timer. Not for a deferrable timer: its expiry waits for
    whatever else wakes its CPU, which the trace's own timing of the task
    stands for better. ``hrtimers=False``: wheel timers only."""
    events = ("timer_start", "timer_expire_entry", "timer_expire_exit", "sched_wakeup", "sched_switch")
    if hrtimers:
        events += ("hrtimer_expire_entry", "hrtimer_start", "hrtimer_cancel")
    mask = event_in(ev, events)
    # Any hrtimer event but an hrtimer_wakeup's expiry ends that callback: the first one after such an
    # expiry on its CPU only can (the callback state is per CPU; the others do nothing else).
    wakeup = function_in(ev, ("hrtimer_wakeup",))
    ends = mask & (event_in(ev, ("hrtimer_start", "hrtimer_cancel"))
                   | event_in(ev, ("hrtimer_expire_entry",)) & ~wakeup)
    keep = np.flatnonzero(mask)
    cpu = ev["cpu"].to_numpy()[keep]
    began = event_in(ev, ("hrtimer_expire_entry",)) & wakeup
    in_wakeup = latest_on_cpu(cpu, np.where(began, 1, np.where(ends, 0, -1))[keep]) == 1
    keep = keep[~ends[keep] | previous_flag_on_cpu(cpu, in_wakeup, False)]
    sel = rows(ev, keep,
               ("event", "cpu", "line", "timer", "wakee_pid", "target_cpu", "next_pid", "flags", "hrtimer"))
    deferrable = {}  # timer -> its last timer_start had D
    in_callback, woken, out = {}, {}, {}  # CPU -> (kind, pointer); (CPU, pid) -> (kind, pointer)
    for e, c, ln, tm, wk, tg, nxt, fl, hr, wu, end in zip(
            column(sel, "event"), column(sel, "cpu"), column(sel, "line"), column(sel, "timer"),
            column(sel, "wakee_pid"), column(sel, "target_cpu"), column(sel, "next_pid"), column(sel, "flags", ""),
            column(sel, "hrtimer"), wakeup[keep].tolist(), ends[keep].tolist()):
        if e == "timer_start":
            deferrable[tm] = "D" in str(fl or "").split("|")
        elif e == "timer_expire_entry":
            if not deferrable.get(tm, False):
                in_callback[c] = ("timer", tm)
        elif e == "timer_expire_exit":
            in_callback.pop(c, None)
        elif e == "hrtimer_expire_entry" and wu:
            in_callback[c] = ("hrtimer", hr)
        elif e == "sched_wakeup":
            t = in_callback.get(c)
            if t is not None and tg is not None:
                woken[(tg, wk)] = t
            else:
                woken.pop((tg, wk), None)
            if t is not None and t[0] == "hrtimer":
                in_callback.pop(c)
        elif e == "sched_switch":
            if nxt is not None:
                t = woken.pop((c, nxt), None)
                if t is not None:
                    out[ln] = t
        if end and in_callback.get(c, ("",))[0] == "hrtimer":
            in_callback.pop(c)  # the hrtimer_wakeup's callback is over
    return out


def task_intervals(ev, nr_cpus, idle_cpus, clock_offset, woken_by=None):
    """busy_start / idle_start rows from sched_switch to and from pid 0, the
    CPUs' initial states, and the CPUs whose switches away from the idle task
    are missing (CPU 1 of the 2-CPU VM): there, the first event logged by
    another task while the CPU is thought idle starts the busy period.

    A task woken in an interrupt on an idle CPU runs right after it: the
    kernel's idle loop sees need_resched and does not enter idle again. So
    on CPUs that log cpu_idle, the busy period starts at the interrupt that
    ended the idle period (the clock reading of an hrtimer expiry, i.e. the
    simulated tick's own time), not at the switch some µs later, by which
    the simulation would have re-entered idle once more.

    A cpu_idle entry while a task is thought to run ends its busy period:
    only the idle task enters an idle state, so the switch to it went
    unlogged (615 times on the 2-CPU VM's idle trace, 30 on its fsync one;
    read as busy, those CPUs missed every wakeup of the idle period).

    Such a busy period's duration_ns is its runnable delay: how long the
    CPU, out of idle, stayed idle_cpu() to get_nohz_timer_target — until a
    task was enqueued on it (a sched_wakeup targeting it, or, with latency
    flags, need-resched seen: a task it pulled itself in its SCHED softirq),
    else until the switch; without flags and without a wakeup, none. A
    switch to the idle task counts as an idle entry for this, the cpu_idle
    line may never come (woken first).

    ``woken_by``: {line of a sched_switch: (flags, key)} (timer_wakeups): a
    busy period that switch starts waits for that timer's expiry (the
    busy_start's flags: 1 a timer key, 2 an hrtimer key)."""
    woken_by = woken_by or {}
    out, missing = [], set()
    need, on, first = _task_rows(ev)
    sub = rows(ev, on, ("event", "cpu", "ts_ns", "line", "pid", "prev_pid", "next_pid", "state", "now_ns",
                        "target_cpu"))
    kind, woke = _task_kinds(sub), _woke_at(sub, clock_offset)
    # Per-CPU state in lists, not dicts (a lookup per row and state): the CPUs are small non-negative ints.
    cpus = sub["cpu"].to_numpy()
    size = max(nr_cpus, int(cpus.max()) + 1) if len(cpus) else nr_cpus
    if len(cpus) and cpus.min() < 0:
        raise ValueError(f"task_intervals: negative CPU {int(cpus.min())}")
    busy, idle = 1, 2
    state = [0] * size  # 0: not known yet, busy or idle
    has_idle = [c in idle_cpus for c in range(size)]
    wake = [0] * size  # (ts, line) of the first event after its latest idle entry; None: none yet; 0: not idle
    # CPU -> [flags known, ts when a task was first enqueued on it (None before)] since it woke, for
    # the time it stays idle_cpu(); absent: the interrupt found need-resched already set.
    pulled = {}
    entry, exit_, run_, stop, wakeup = _ENTRY, _EXIT, _K_IN, _K_OUT, _K_WAKEUP
    for k, c, ts, line, at, target, task, nr in zip(
            kind.tolist(), cpus.tolist(), sub["ts_ns"].to_numpy().tolist(), sub["line"].to_numpy().tolist(),
            woke.tolist(), values(sub, "target_cpu", -1).tolist(), (values(sub, "pid", 0) != 0).tolist(),
            need[on].tolist()):
        w = target if k == wakeup else c if nr else -1  # -1: no CPU's
        if w >= 0:
            p = pulled.get(w)
            if p is not None and p[1] is None:
                p[1] = ts
        if k == entry:
            wake[c] = None
            pulled.pop(c, None)
            if state[c] == busy:
                # Only the idle task enters an idle state: the switch to it went unlogged.
                out.append((ts, line, c, OP_IDLE, 0, 0, 0, 0, c, 0))
                state[c] = idle
            continue
        if k == exit_:
            if wake[c] is None:
                wake[c] = (ts, line)
                if not nr:
                    pulled[c] = [nr is not None, None]
            continue
        if wake[c] is None:
            if not nr:
                pulled[c] = [nr is not None, ts if k == wakeup and target == c else None]
            wake[c] = (at, line)
        if k == run_:
            if state[c] != busy:
                t, ln = (wake[c] or (ts, line)) if has_idle[c] else (ts, line)
                # idle_cpu() until a task was enqueued: a sched_wakeup, or need-resched seen (the CPU
                # pulled one itself, or was handed one), else the switch; without flags, a wakeup only.
                known, enq = pulled.pop(c, (False, None))
                runnable = (enq if enq is not None else ts if known else t) - t
                flag, key = woken_by.get(line, (0, 0))
                out.append((t, ln, c, OP_BUSY, key, 0, flag, 0, c, max(0, runnable)))
            state[c] = busy
            wake[c] = 0
        elif k == stop:
            if state[c] != idle:
                out.append((ts, line, c, OP_IDLE, 0, 0, 0, 0, c, 0))
            state[c] = idle
            if has_idle[c]:
                # Woken before its idle entry was logged (or got that far), the CPU runs the next
                # task from the interrupt on, as after an idle period.
                wake[c] = None
                pulled.pop(c, None)
        elif k != _K_SWITCH and state[c] == idle and task:
            out.append((ts, line, c, OP_BUSY, 0, 0, 0, 0, c, 0))
            state[c] = busy
            missing.add(c)
    first = dict(zip(ev["cpu"].to_numpy()[first].tolist(), column(ev.iloc[first], "pid")))  # CPU -> its first pid
    # A CPU that logs nothing at all, not even a tick, is idle with its tick stopped (a task would be
    # ticked): CPU 11 of the 16-CPU trace from 22.9 s to 25.8 s, which read as busy held node 1's
    # migrator role for the whole stretch (no hand-over where the kernel made 441).
    initial = [0 if first.get(c) is None else int(first[c] != 0) for c in range(nr_cpus)]
    return out, initial, sorted(missing)


# task_intervals: what a row does besides the idle actions (_ENTRY, _EXIT): a switch from the idle
# task to a task, from a task to it, another switch (both pids known), a wakeup, anything else.
_K_IN, _K_OUT, _K_SWITCH, _K_WAKEUP, _K_OTHER = range(_CLOCK + 1, _CLOCK + 6)


def _task_kinds(sub) -> np.ndarray:
    """Per row, its kind for task_intervals (a switch with a pid missing is another event)."""
    switch = event_in(sub, ("sched_switch",))
    if "prev_pid" in sub and "next_pid" in sub:
        switch &= sub["prev_pid"].notna().to_numpy() & sub["next_pid"].notna().to_numpy()
    prev, nxt = values(sub, "prev_pid", -1), values(sub, "next_pid", -1)
    return np.select([is_idle_entry(sub), event_in(sub, ("cpu_idle",)), switch & (prev == 0) & (nxt != 0),
                      switch & (nxt == 0) & (prev != 0), switch, event_in(sub, ("sched_wakeup",))],
                     [_ENTRY, _EXIT, _K_IN, _K_OUT, _K_SWITCH, _K_WAKEUP], _K_OTHER)


def _woke_at(sub, clock_offset) -> np.ndarray:
    """Per row, when it ended an idle period if it did: its timestamp, but for an hrtimer expiry
    the handler's own time — its clock reading (now=) may come long before it runs (a vCPU
    descheduled in between), and the simulated tick fires when the handler ran (clocks.py)."""
    ts = sub["ts_ns"].to_numpy()
    if "now_ns" not in sub:
        return ts
    ran = event_in(sub, ("hrtimer_expire_entry",)) & sub["now_ns"].notna().to_numpy()
    return np.where(ran, np.maximum(sub["now_ns"].to_numpy(np.int64, na_value=0) + clock_offset, ts), ts)


def _task_rows(ev):
    """need_resched(ev) as an array; the positions of the rows that can
    change task_intervals' state: idle entries, switches, wakeups; the first
    event after an idle entry or a switch to the idle task (an idle exit
    elsewhere changes nothing: the event before it ended the idle period); a
    task's first event after a switch or a cpu_idle (a switch away from the
    idle task not logged); of a run of events with need-resched set on a
    CPU, the first (it marks the CPU's task enqueued; only the CPU's own
    events that need-resched does not mark start that anew); of each CPU's
    first row."""
    need = need_resched_array(ev)
    cpu = ev["cpu"].to_numpy()
    prev = previous_on_cpu(cpu)
    had = prev >= 0
    marks = event_in(ev, ("cpu_idle", "sched_switch"))
    wakeup = event_in(ev, ("sched_wakeup",))
    entry = is_idle_entry(ev)
    idles = entry | (event_in(ev, ("sched_switch",)) & (values(ev, "next_pid", -1) == 0))
    after = had & idles[prev]
    task = values(ev, "pid", 0) != 0
    since = latest_on_cpu(cpu, np.where(marks, 1, np.where(task, 0, -1)))
    first_task = task & (~had | (since[prev] == 1))
    own = need.astype(bool) & ~wakeup
    first_need = own & ~(had & own[prev])
    exits = event_in(ev, ("cpu_idle",)) & ~entry
    return need, np.flatnonzero(marks & ~exits | wakeup | after | first_task | first_need), np.flatnonzero(~had)


def idle_marks(ev, hrtimer_expiries) -> tuple:
    """(actions, is a cpu_idle, clock wakeups): idle_actions and
    clock_wakeups, which device_interrupt_columns and clock_wake_end_lines
    both read (the script computes them once for the two). ``hrtimer_expiries``:
    lines of the hrtimer expiries the replay simulates, clock wakeups too."""
    return idle_actions(ev) + (clock_wakeups(ev, hrtimer_expiries),)


def device_interrupt_columns(ev, cpus_with_idle, initial_busy, marks) -> tuple:
    """External interrupts and idle-loop exits: (t_ts, cpu, duration_ns,
    line, op) as NumPy columns, of the trace's ``marks`` (idle_marks), for
    idle periods ended by something the simulation does not model (see the
    module doc), the period in progress at the start included. ``op`` is
    OP_EXIT where the CPU then left the idle loop without running a task —
    need-resched set with nothing to run, as 6.12's fair server timer
    (dl_task_timer) does: the hierarchy sees it active (timer_base_idle
    is_idle=0, tmigr_cpu_active) before it idles afresh — else OP_IRQ. An
    idle period the tick ended, then left the same way, is an OP_EXIT at the
    tick. The hrtimer expiries the replay simulates (hrtimers.py; marks'
    clock wakeups) end their idle periods as the tick does (6.12's fair
    server, dl_task_timer, mostly leaves the loop so: an OP_EXIT at its
    expiry)."""
    on = ev["cpu"].isin(cpus_with_idle).to_numpy()
    last_ts = int(ev["ts_ns"].to_numpy()[on][-1]) if on.any() else 0
    act, idle, clock = marks
    # Of the other events, only the first after an idle entry or exit (or a CPU's first: it may be idle
    # at the start) can end an idle period.
    on = np.flatnonzero(on)
    on = on[(act[on] != _OTHER) | previous_flag_on_cpu(ev["cpu"].to_numpy()[on], idle[on], True)]
    if not len(on):
        none = np.zeros(0, dtype=np.int64)
        return none, none, none, none, none
    kind = np.where(clock[on], _BY_TICK,
                    np.where(event_in(ev, ("sched_wakeup",))[on], _BY_TASK, _BY_IRQ))
    order = cpu_order(ev["cpu"].to_numpy()[on])
    on, kind = on[order], kind[order]
    act, cpu, ts = act[on], ev["cpu"].to_numpy()[on], ev["ts_ns"].to_numpy()[on]
    # Per CPU: an idle period (after an entry, or at the start) ends at its first event but an entry or a
    # task run — an interrupt of that event's kind (an exit with no event during the sleep: irq) — and
    # the next entry or task run (or the end) settles it, the idle loop left in between or not.
    first = np.r_[True, cpu[1:] != cpu[:-1]]
    after = np.r_[False, act[:-1] == _ENTRY] & ~first
    start = first & np.isin(cpu, [c for c in cpus_with_idle if not initial_busy[c]])
    at = np.flatnonzero((after | start) & (act != _ENTRY) & (act != _RUN))
    kind = np.where(act[at] == _EXIT, _BY_IRQ, kind[at])
    settles = np.flatnonzero((act == _ENTRY) | (act == _RUN))
    end = settles[np.minimum(np.searchsorted(settles, at, side="right"), len(settles) - 1)] if len(settles) else at
    settled = (end > at) & (cpu[end] == cpu[at])
    last_of_cpu = np.r_[np.flatnonzero(first)[1:] - 1, len(cpu) - 1][np.cumsum(first) - 1]
    left_rows = np.cumsum(act == _LEFT)
    left = left_rows[np.where(settled, end - 1, last_of_cpu[at])] > left_rows[at]
    task_runs = settled & (act[end] == _RUN)
    # A task run next: its busy_start does it. The tick, or a replayed hrtimer, is simulated — unless the
    # CPU then left the loop without a task.
    emit = np.where(task_runs, kind == _BY_IRQ, (kind != _BY_TICK) | left)
    t_end = np.where(settled, ts[end], last_ts)
    op = np.where(left & ~task_runs, OP_EXIT, OP_IRQ)
    # In the order they are settled (the ones the end settles last, in the order they began).
    pick = np.flatnonzero(emit)
    pick = pick[np.argsort(np.where(settled, on[end], len(ev) + on[at])[pick], kind="stable")]
    at = at[pick]
    return ts[at], cpu[at], np.maximum(0, t_end[pick] - ts[at]), ev["line"].to_numpy()[on[at]], op[pick]


def initial_ticks(ev, nr_cpus, cpus_with_idle, initial_busy, start_mono, tick_ns):
    """Per CPU, the tick policy of an idle period in progress when the trace
    begins (1: the tick runs, 2: stopped, 0: not idle or not visible): the
    tick runs if the CPU's first tick comes within two tick periods of the
    start (one period, plus the lateness of a tick under a hypervisor) and
    before it enters idle again; a stopped tick would wake it at its next
    timer instead. A CPU that left the idle period after the first grid
    point without a tick before had it stopped."""
    out = [0] * nr_cpus
    if not cpus_with_idle:  # no cpu_idle events (and maybe no state column at all)
        return out
    # Per-CPU firsts of a few hundred rows with NumPy: a groupby per column cost more than the rest.
    on = ev["cpu"].isin(cpus_with_idle).to_numpy()
    cpu, ts = ev["cpu"].to_numpy(), ev["ts_ns"].to_numpy()
    idle = np.flatnonzero(on & event_in(ev, ("cpu_idle",)))
    state, known = values(ev, "state", 0)[idle], ev["state"].notna().to_numpy()[idle]  # a missing state: neither
    entries = _earliest(cpu[idle], ts[idle], known & (state != CPU_IDLE_EXIT))
    exits = _earliest(cpu[idle], ts[idle], known & (state == CPU_IDLE_EXIT))
    ticks = np.flatnonzero(on & is_tick_expiry(ev))
    # The first tick's time and the first clock reading (groupby's first: of the rows that have one).
    first_ts = _first(cpu[ticks], ts[ticks], np.ones(len(ticks), dtype=bool))
    first_now = (_first(cpu[ticks], ev["now_ns"].to_numpy(np.uint64, na_value=0)[ticks],
                        ev["now_ns"].notna().to_numpy()[ticks]) if "now_ns" in ev else {})
    grid = (start_mono // tick_ns + 1) * tick_ns  # the first tick due after the start
    never = np.iinfo(np.int64).max
    for c in cpus_with_idle:
        if initial_busy[c]:
            continue
        runs = (c in first_ts and first_now.get(c) < start_mono + 2 * tick_ns
                and first_ts[c] < entries.get(c, never))
        if runs:
            # Left idle only after a grid point with no tick before: the tick was stopped (its first tick
            # then comes in the busy period that follows).
            t, now = first_ts[c], first_now[c]
            runs = not (exits.get(c, never) < t and exits.get(c, never) - (t - now) > grid)
        out[c] = 1 if runs else 2
    return out


def _first(cpu, value, where) -> dict:
    """{CPU: ``value`` of its first row ``where`` true} (Python ints)."""
    at = np.flatnonzero(where)
    c, first = np.unique(cpu[at], return_index=True)
    return dict(zip(c.tolist(), value[at[first]].tolist()))


def _earliest(cpu, value, where) -> dict:
    """{CPU: the least ``value`` of its rows ``where`` true} (Python ints)."""
    at = np.flatnonzero(where)
    order = np.lexsort((value[at], cpu[at]))
    return _first(cpu[at][order], value[at][order], np.ones(len(at), dtype=bool))


def entries_before_first_tick(ev) -> set:
    """Lines of the idle entries between a task switching out (or the CPU
    leaving the idle loop without one) and the CPU's next tick: where the
    engine's tick model (Config rcu_needs_cpu) keeps the tick itself."""
    # A switch to the idle task, or leaving the idle loop without one (is_idle=0), makes the CPU fresh;
    # its tick does not.
    fresh = event_in(ev, ("sched_switch", "timer_base_idle")) & (
        (values(ev, "next_pid", -1) == 0) | (values(ev, "is_idle", -1) == 0))
    ticked = is_tick_expiry(ev)
    entry = is_idle_entry(ev)
    on = np.flatnonzero(fresh | ticked | entry)
    state = latest_on_cpu(ev["cpu"].to_numpy()[on], np.where(fresh, 1, np.where(ticked, 0, -1))[on])
    return set(ev["line"].to_numpy()[on[entry[on] & (state == 1)]].tolist())


def tick_policy_columns(ev, cpus_with_idle, t_start, tick_ns) -> tuple:
    """(t_ts, cpu, policy, line, entry line) as NumPy columns: the trace's
    tick decision at each idle entry (2: the tick is stopped in that idle
    period, 1: kept),
    in force from two ticks before that entry — or from just after the
    previous entry, if that is later — so that it is in force when the
    simulation reaches the same entry (its idle entries precede the trace's
    by the few µs the kernel spends between the switch to the idle task and
    cpu_idle, or follow a tick that came earlier), but not at passes the
    simulation makes long before it, which the kernel's reason for that
    entry need not cover. A CPU's first entry's is set at ``t_start`` (the
    idle period in progress then has the script's initial_tick)."""
    # The tick stops just before the cpu_idle of its entry and stays stopped
    # until the CPU leaves the idle loop (tick_nohz_idle_exit restarts it).
    stop = event_in(ev, ("tick_stop",))
    restart = event_in(ev, ("sched_switch",)) & (values(ev, "prev_pid", -1) == 0)
    entry = is_idle_entry(ev)
    on = np.flatnonzero(ev["cpu"].isin(cpus_with_idle).to_numpy() & (stop | restart | entry))
    cpu = ev["cpu"].to_numpy()[on]
    stopped = latest_on_cpu(cpu, np.where(stop, 1, np.where(restart, 0, -1))[on]) == 1
    at = entry[on]
    on, cpu, stopped = on[at], cpu[at], stopped[at]
    ts, line = ev["ts_ns"].to_numpy()[on], ev["line"].to_numpy()[on]
    prev = previous_on_cpu(cpu)  # the CPU's previous entry
    first = prev < 0
    t_set = np.where(first, t_start, np.maximum(ts[prev] + 1, ts - 2 * tick_ns))
    return t_set, cpu, np.where(stopped, 2, 1), np.where(first, line, line[prev]), line


def hidden_tick_policies(ev, cpus, tick_ns):
    """(t_ts, cpu, policy, line) for CPUs that log no cpu_idle (nor
    tick_stop): each idle period — swapper running, until another task logs
    an event — with its tick re-armed periodically kept the tick (1); for
    the others the simulation decides (0). Set just before the period
    begins. A periodic re-arm is the tick handler's own hrtimer_start: mode
    ABS (a stopped tick is programmed ABS|PINNED|HARD), or, where the trace
    has no mode (trace-cmd's hrtimer plugin prints none), the next grid
    point, at most a tick after the CPU's last tick ran (a stopped tick is
    put off further: tick_nohz_next_event stops it only for more)."""
    sub = rows(ev, ev["cpu"].isin(cpus).to_numpy(), ("event", "cpu", "ts_ns", "line", "pid", "next_pid", "mode",
                                                      "function", "expires_ns", "now_ns"))
    event, cpu, ts, line = column(sub, "event"), column(sub, "cpu"), column(sub, "ts_ns"), column(sub, "line")
    pid, next_pid, mode = column(sub, "pid"), column(sub, "next_pid"), column(sub, "mode", "")
    function, expires, now = column(sub, "function", ""), column(sub, "expires_ns"), column(sub, "now_ns")
    out, period, last_tick = [], {}, {}  # CPU -> [t_set, line, periodic tick seen]; CPU -> its last tick's now
    for i, e in enumerate(event):
        c = cpu[i]
        p = period.get(c)
        tick = str(function[i]) in TICK_FUNCTIONS
        if e == "hrtimer_expire_entry" and tick and now[i] is not None:
            last_tick[c] = now[i]
        if e == "sched_switch" and next_pid[i] == 0:
            period[c] = [ts[i] - 1, line[i], False]
        elif p is not None and pid[i] not in (None, 0):
            out.append((p[0], c, int(p[2]), p[1]))
            period[c] = None
        elif p is not None and e == "hrtimer_start" and tick and _periodic(mode[i], expires[i], last_tick.get(c),
                                                                           tick_ns):
            p[2] = True
    out += [(p[0], c, int(p[2]), p[1]) for c, p in period.items() if p is not None]  # open at the end
    return out


def _periodic(mode, expires, last_now, tick_ns) -> bool:
    """Whether a tick's hrtimer_start is its handler's periodic re-arm (hidden_tick_policies)."""
    if mode not in (None, ""):
        return str(mode) == "ABS"
    return expires is not None and last_now is not None and expires <= last_now + tick_ns


def clock_wake_end_lines(ev, cpus_with_idle, marks) -> dict:
    """{line of a tick's hrtimer_expire_entry: timestamp its interrupt ended}
    for each clock interrupt (the tick, or a stopped tick's programmed
    wakeup) that ended an idle period and after which the CPU idled again
    with neither a task run nor the idle loop left: how long the kernel's CPU
    stayed awake there. The interrupt, with the softirqs it raised (TIMER,
    RCU, SCHED: nohz idle balancing), ends where do_idle's loop takes over
    again, which cpu_idle's exit marks where it is logged after the handler
    ran (default_idle_call); where it is logged first, the next idle entry.
    ``marks``: idle_marks of the trace (its clock wakeups count the replayed
    hrtimers' expiries too)."""
    act, idle, clock = marks
    on = np.flatnonzero(ev["cpu"].isin(cpus_with_idle).to_numpy())
    cpu, act = ev["cpu"].to_numpy()[on], act[on]
    # The first event after an idle entry (cpu_idle exits aside): a clock wakeup there is a candidate,
    # which a task run or the loop left drops, and the next entry settles.
    since = latest_on_cpu(cpu, np.where(act == _ENTRY, 1, np.where(idle[on], -1, 0)))
    prev = previous_on_cpu(cpu)
    first = (prev >= 0) & (since[prev] == 1) & ~idle[on]
    act = np.where(first & clock[on], _CLOCK, act)
    keep = act != _OTHER
    on, act, cpu = on[keep], act[keep], cpu[keep]
    # Per CPU, the event after a clock wakeup's exits (the next entry, or what drops it) settles it: it
    # ends at its first exit, else at that entry. Items in the order of their entries.
    order = cpu_order(cpu)
    act, cpu, on = act[order], cpu[order], on[order]
    settles = np.flatnonzero(act != _EXIT)
    at = np.flatnonzero(act == _CLOCK)
    nxt = settles[np.minimum(np.searchsorted(settles, at, side="right"), len(settles) - 1)] if len(at) else at
    ok = (nxt > at) & (cpu[nxt] == cpu[at]) & (act[nxt] == _ENTRY)
    at, nxt = at[ok], nxt[ok]
    ends = np.where(at + 1 < nxt, at + 1, nxt)  # rows between are exits
    by_entry = np.argsort(on[nxt], kind="stable")
    ts, line = ev["ts_ns"].to_numpy(), ev["line"].to_numpy()
    return dict(zip(line[on[at[by_entry]]].tolist(), ts[on[ends[by_entry]]].tolist()))
