"""What each CPU did, as a replay reads it off a trace: when it ran tasks
and when its idle task (task_intervals), the interrupts that ended idle
periods and that the simulation does not model (device_interrupts), and the
kernel's tick decisions in idle (tick_policies, hidden_tick_policies,
initial_ticks).

Not here: the clocks (clocks.py), timer operations (script.py).
"""
from __future__ import annotations

import numpy as np

from ..trace.events import CPU_IDLE_EXIT, TICK_FUNCTIONS, column, need_resched
from .ops import OP_BUSY, OP_EXIT, OP_IDLE, OP_IRQ
from .clocks import tick_events


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
    sel = ev[ev["event"].isin(events)]
    event, cpu, line, timer = column(sel, "event"), column(sel, "cpu"), column(sel, "line"), column(sel, "timer")
    wakee, target, next_pid = column(sel, "wakee_pid"), column(sel, "target_cpu"), column(sel, "next_pid")
    flags, hrtimer, function = column(sel, "flags", ""), column(sel, "hrtimer"), column(sel, "function", "")
    deferrable = {}  # timer -> its last timer_start had D
    in_callback, woken, out = {}, {}, {}  # CPU -> (kind, pointer); (CPU, pid) -> (kind, pointer)
    for i, e in enumerate(event):
        c = cpu[i]
        if e == "timer_start":
            deferrable[timer[i]] = "D" in str(flags[i] or "").split("|")
        elif e == "timer_expire_entry":
            if not deferrable.get(timer[i], False):
                in_callback[c] = ("timer", timer[i])
        elif e == "timer_expire_exit":
            in_callback.pop(c, None)
        elif e == "hrtimer_expire_entry" and str(function[i]) == "hrtimer_wakeup":
            in_callback[c] = ("hrtimer", hrtimer[i])
        elif e == "sched_wakeup":
            t = in_callback.get(c)
            if t is not None and target[i] is not None:
                woken[(target[i], wakee[i])] = t
            else:
                woken.pop((target[i], wakee[i]), None)
            if t is not None and t[0] == "hrtimer":
                in_callback.pop(c)
        elif e == "sched_switch":
            if next_pid[i] is not None:
                t = woken.pop((c, next_pid[i]), None)
                if t is not None:
                    out[line[i]] = t
        if e.startswith("hrtimer_") and e != "hrtimer_expire_entry" or (
                e == "hrtimer_expire_entry" and str(function[i]) != "hrtimer_wakeup"):
            if in_callback.get(c, ("",))[0] == "hrtimer":
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
    rows, state, first, missing = [], {}, {}, set()
    event, cpu, ts, line = column(ev, "event"), column(ev, "cpu"), column(ev, "ts_ns"), column(ev, "line")
    pid, prev_pid, next_pid = column(ev, "pid"), column(ev, "prev_pid"), column(ev, "next_pid")
    idle_state, now_ns, target = column(ev, "state"), column(ev, "now_ns"), column(ev, "target_cpu")
    need = need_resched(ev)
    wake = {}  # CPU -> (ts, line) of the first event after its latest idle entry
    # CPU -> [flags known, ts when a task was first enqueued on it (None before)] since it woke, for
    # the time it stays idle_cpu(); absent: the interrupt found need-resched already set.
    pulled = {}
    for i, e in enumerate(event):
        c = cpu[i]
        if c not in first:
            first[c] = pid[i]
        w = target[i] if e == "sched_wakeup" else c if need[i] else None
        if w is not None and w in pulled and pulled[w][1] is None:
            pulled[w][1] = ts[i]
        if e == "cpu_idle":
            if idle_state[i] != CPU_IDLE_EXIT:
                wake[c] = None
                pulled.pop(c, None)
                if state.get(c) == "busy":
                    # Only the idle task enters an idle state: the switch to it went unlogged.
                    rows.append((ts[i], line[i], c, OP_IDLE, 0, 0, 0, 0, c, 0))
                    state[c] = "idle"
            elif wake.get(c, 0) is None:
                wake[c] = (ts[i], line[i])
                if not need[i]:
                    pulled[c] = [need[i] is not None, None]
            continue
        if wake.get(c, 0) is None:
            if not need[i]:
                pulled[c] = [need[i] is not None, ts[i] if e == "sched_wakeup" and target[i] == c else None]
            # The handler's own time: its clock reading (now=) may come long before it runs (a vCPU
            # descheduled in between), and the simulated tick fires when the handler ran (clocks.py).
            ran = e == "hrtimer_expire_entry" and now_ns[i] is not None
            t = max(now_ns[i] + clock_offset, ts[i]) if ran else ts[i]
            wake[c] = (t, line[i])
        if e == "sched_switch" and prev_pid[i] is not None and next_pid[i] is not None:
            if prev_pid[i] == 0 and next_pid[i] != 0:
                if state.get(c) != "busy":
                    t, ln = (wake.get(c) or (ts[i], line[i])) if c in idle_cpus else (ts[i], line[i])
                    # idle_cpu() until a task was enqueued: a sched_wakeup, or need-resched seen (the CPU
                    # pulled one itself, or was handed one), else the switch; without flags, a wakeup only.
                    known, enq = pulled.pop(c, (False, None))
                    runnable = (enq if enq is not None else ts[i] if known else t) - t
                    flag, key = woken_by.get(line[i], (0, 0))
                    rows.append((t, ln, c, OP_BUSY, key, 0, flag, 0, c, max(0, runnable)))
                state[c] = "busy"
                wake.pop(c, None)
            elif next_pid[i] == 0 and prev_pid[i] != 0:
                if state.get(c) != "idle":
                    rows.append((ts[i], line[i], c, OP_IDLE, 0, 0, 0, 0, c, 0))
                state[c] = "idle"
                if c in idle_cpus:
                    # Woken before its idle entry was logged (or got that far), the CPU runs the next
                    # task from the interrupt on, as after an idle period.
                    wake[c] = None
                    pulled.pop(c, None)
        elif state.get(c) == "idle" and pid[i] not in (None, 0):
            rows.append((ts[i], line[i], c, OP_BUSY, 0, 0, 0, 0, c, 0))
            state[c] = "busy"
            missing.add(c)
    initial = []
    for c in range(nr_cpus):
        p = first.get(c)
        initial.append(int(c not in idle_cpus) if p is None else int(p != 0))
    return rows, initial, sorted(missing)


def device_interrupts(ev, cpus_with_idle, initial_busy, hrtimer_expiries=frozenset()):
    """External interrupts and idle-loop exits: (t_ts, cpu, duration_ns,
    line, op) for idle periods ended by something the simulation does not
    model (see the module doc), the period in progress at the start
    included. ``op`` is OP_EXIT where the CPU then left the idle loop without
    running a task — need-resched set with nothing to run, as 6.12's fair
    server timer (dl_task_timer) does: the hierarchy sees it active
    (timer_base_idle is_idle=0, tmigr_cpu_active) before it idles afresh —
    else OP_IRQ. An idle period the tick ended, then left the same way, is
    an OP_EXIT at the tick. ``hrtimer_expiries``: lines of the hrtimer
    expiries the replay simulates (hrtimers.py), which end their idle periods
    as the tick does (6.12's fair server, dl_task_timer, mostly leaves the
    loop so: an OP_EXIT at its expiry)."""
    out = []
    sub = ev[ev["cpu"].isin(cpus_with_idle)]
    event = column(sub, "event")
    cpu = column(sub, "cpu")
    ts = column(sub, "ts_ns")
    line = column(sub, "line")
    state = column(sub, "state")
    function = column(sub, "function", "")
    prev_pid = column(sub, "prev_pid")
    next_pid = column(sub, "next_pid")
    is_idle = column(sub, "is_idle")
    # Per CPU: "idle" (entered, nothing seen yet), "woken" (first event seen;
    # a pending candidate waits to see whether a task runs next, and whether
    # the CPU leaves the idle loop).
    phase, pending = {c: "idle" for c in cpus_with_idle if not initial_busy[c]}, {}

    def settle(c, t_end, task_runs):
        p = pending.pop(c, None)
        if p is None:
            return
        kind, t0, ln, left = p
        if task_runs and kind in ("task", "tick"):
            return
        if kind == "tick" and (task_runs or not left):
            return  # the tick, or a replayed hrtimer: simulated
        # Left the loop for a task: the busy_start that follows does it.
        out.append((t0, c, max(0, t_end - t0), ln, OP_EXIT if left and not task_runs else OP_IRQ))

    for i, e in enumerate(event):
        c = cpu[i]
        if e == "cpu_idle":
            if state[i] != CPU_IDLE_EXIT:
                settle(c, ts[i], False)
                phase[c] = "idle"
            elif phase.get(c) == "idle":  # exit with no event during the sleep
                pending[c] = ("irq", ts[i], line[i], False)
                phase[c] = "woken"
            continue
        if e == "sched_switch" and prev_pid[i] == 0 and next_pid[i] != 0:
            settle(c, ts[i], True)
            phase[c] = None
            continue
        if (e == "tmigr_cpu_active" or (e == "timer_base_idle" and is_idle[i] == 0)) and c in pending:
            pending[c] = pending[c][:3] + (True,)
            continue
        if phase.get(c) != "idle":
            continue
        phase[c] = "woken"
        kind = ("tick" if e == "hrtimer_expire_entry" and (str(function[i]) in TICK_FUNCTIONS
                                                            or line[i] in hrtimer_expiries)
                else "task" if e == "sched_wakeup" else "irq")
        pending[c] = (kind, ts[i], line[i], False)
    for c in list(pending):
        settle(c, int(ts[-1]) if ts else 0, False)
    return out


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
    sub = ev[ev["cpu"].isin(cpus_with_idle)]
    idle = sub[sub["event"] == "cpu_idle"]
    entries = idle[idle["state"] != CPU_IDLE_EXIT].groupby("cpu")["ts_ns"].min()
    exits = idle[idle["state"] == CPU_IDLE_EXIT].groupby("cpu")["ts_ns"].min()
    ticks = tick_events(sub)
    first_tick = ticks.groupby("cpu")[["ts_ns", "now_ns"]].first()
    grid = (start_mono // tick_ns + 1) * tick_ns  # the first tick due after the start
    never = np.iinfo(np.int64).max
    for c in cpus_with_idle:
        if initial_busy[c]:
            continue
        runs = (c in first_tick.index and int(first_tick.loc[c, "now_ns"]) < start_mono + 2 * tick_ns
                and int(first_tick.loc[c, "ts_ns"]) < int(entries.get(c, never)))
        if runs:
            # Left idle only after a grid point with no tick before: the tick was stopped (its first tick
            # then comes in the busy period that follows).
            t, now = int(first_tick.loc[c, "ts_ns"]), int(first_tick.loc[c, "now_ns"])
            runs = not (int(exits.get(c, never)) < t and int(exits.get(c, never)) - (t - now) > grid)
        out[c] = 1 if runs else 2
    return out


def entries_before_first_tick(ev) -> set:
    """Lines of the idle entries between a task switching out (or the CPU
    leaving the idle loop without one) and the CPU's next tick: where the
    engine's tick model (Config rcu_needs_cpu) keeps the tick itself."""
    sub = ev[ev["event"].isin(("cpu_idle", "sched_switch", "hrtimer_expire_entry", "timer_base_idle"))]
    event, cpu, line, state = column(sub, "event"), column(sub, "cpu"), column(sub, "line"), column(sub, "state")
    next_pid, function, is_idle = column(sub, "next_pid"), column(sub, "function", ""), column(sub, "is_idle")
    fresh, out = set(), set()
    for i, e in enumerate(event):
        c = cpu[i]
        if e == "sched_switch" or e == "timer_base_idle":
            # A switch to the idle task, or leaving the idle loop without one (is_idle=0).
            if next_pid[i] == 0 or is_idle[i] == 0:
                fresh.add(c)
        elif e == "hrtimer_expire_entry":
            if str(function[i]) in TICK_FUNCTIONS:
                fresh.discard(c)
        elif state[i] != CPU_IDLE_EXIT and c in fresh:
            out.add(line[i])
    return out


def tick_policies(ev, cpus_with_idle, t_start, tick_ns):
    """(t_ts, cpu, policy, line, entry line): the trace's tick decision at
    each idle entry (2: the tick is stopped in that idle period, 1: kept),
    in force from two ticks before that entry — or from just after the
    previous entry, if that is later — so that it is in force when the
    simulation reaches the same entry (its idle entries precede the trace's
    by the few µs the kernel spends between the switch to the idle task and
    cpu_idle, or follow a tick that came earlier), but not at passes the
    simulation makes long before it, which the kernel's reason for that
    entry need not cover. A CPU's first entry's is set at ``t_start`` (the
    idle period in progress then has the script's initial_tick)."""
    out = []
    sub = ev[ev["cpu"].isin(cpus_with_idle) & ev["event"].isin(("cpu_idle", "tick_stop", "sched_switch"))]
    event, cpu, ts, line = column(sub, "event"), column(sub, "cpu"), column(sub, "ts_ns"), column(sub, "line")
    state, prev_pid = column(sub, "state"), column(sub, "prev_pid")
    stopped, last_entry = {}, {}
    # The tick stops just before the cpu_idle of its entry and stays stopped
    # until the CPU leaves the idle loop.
    for i, e in enumerate(event):
        c = cpu[i]
        if e == "tick_stop":
            stopped[c] = True
        elif e == "sched_switch" and prev_pid[i] == 0:
            stopped[c] = False  # tick_nohz_idle_exit restarts the tick
        elif e == "cpu_idle" and state[i] != CPU_IDLE_EXIT:
            prev = last_entry.get(c)
            t_set = max(prev[0] + 1, ts[i] - 2 * tick_ns) if prev is not None else t_start
            out.append((t_set, c, 2 if stopped.get(c, False) else 1, prev[1] if prev is not None else line[i],
                        line[i]))
            last_entry[c] = (ts[i], line[i])
    return out


def hidden_tick_policies(ev, cpus):
    """(t_ts, cpu, policy, line) for CPUs that log no cpu_idle (nor
    tick_stop): each idle period — swapper running, until another task logs
    an event — with its tick re-armed periodically (the tick handler's own
    hrtimer_start, mode ABS; a stopped tick is programmed ABS|PINNED|HARD)
    kept the tick (1); for the others the simulation decides (0). Set just
    before the period begins."""
    sub = ev[ev["cpu"].isin(cpus)]
    event, cpu, ts, line = column(sub, "event"), column(sub, "cpu"), column(sub, "ts_ns"), column(sub, "line")
    pid, next_pid, mode = column(sub, "pid"), column(sub, "next_pid"), column(sub, "mode", "")
    function = column(sub, "function", "")
    out, period = [], {}  # CPU -> [t_set, line, periodic tick seen]
    for i, e in enumerate(event):
        c = cpu[i]
        p = period.get(c)
        if e == "sched_switch" and next_pid[i] == 0:
            period[c] = [ts[i] - 1, line[i], False]
        elif p is not None and pid[i] not in (None, 0):
            out.append((p[0], c, int(p[2]), p[1]))
            period[c] = None
        elif p is not None and e == "hrtimer_start" and str(function[i]) in TICK_FUNCTIONS and str(mode[i]) == "ABS":
            p[2] = True
    out += [(p[0], c, int(p[2]), p[1]) for c, p in period.items() if p is not None]  # open at the end
    return out


def clock_wake_ends(ev, cpus_with_idle, hrtimer_expiries=frozenset()) -> dict:
    """{line of a tick's hrtimer_expire_entry: timestamp its interrupt ended}
    for each clock interrupt (the tick, or a stopped tick's programmed
    wakeup) that ended an idle period and after which the CPU idled again
    with neither a task run nor the idle loop left: how long the kernel's CPU
    stayed awake there. The interrupt, with the softirqs it raised (TIMER,
    RCU, SCHED: nohz idle balancing), ends where do_idle's loop takes over
    again, which cpu_idle's exit marks where it is logged after the handler
    ran (default_idle_call); where it is logged first, the next idle entry.
    ``hrtimer_expiries``: lines of replayed hrtimers' expiries, which count
    as clock wakeups too."""
    out = {}
    sub = ev[ev["cpu"].isin(cpus_with_idle)]
    event, cpu, ts, line = column(sub, "event"), column(sub, "cpu"), column(sub, "ts_ns"), column(sub, "line")
    state, function, is_idle = column(sub, "state"), column(sub, "function", ""), column(sub, "is_idle")
    prev_pid, next_pid = column(sub, "prev_pid"), column(sub, "next_pid")
    # CPU -> "idle" (nothing seen since the entry but perhaps its exit); CPU -> [line, end or None]
    phase, cand = {}, {}
    for i, e in enumerate(event):
        c = cpu[i]
        if e == "cpu_idle":
            if state[i] != CPU_IDLE_EXIT:
                p = cand.pop(c, None)
                if p is not None:
                    out[p[0]] = ts[i] if p[1] is None else p[1]
                phase[c] = "idle"
            elif c in cand and cand[c][1] is None:
                cand[c][1] = ts[i]
            continue
        first = phase.pop(c, None) == "idle"
        if first and e == "hrtimer_expire_entry" and (str(function[i]) in TICK_FUNCTIONS or line[i] in hrtimer_expiries):
            cand[c] = [line[i], None]
        elif (e == "sched_switch" and prev_pid[i] == 0 and next_pid[i] != 0) or \
                e == "tmigr_cpu_active" or (e == "timer_base_idle" and is_idle[i] == 0):
            cand.pop(c, None)
    return out
