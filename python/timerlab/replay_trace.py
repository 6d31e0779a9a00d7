"""What a replay reads off a trace beyond its timer operations (used by
replay.py): the trace clock's offset from CLOCK_MONOTONIC, HZ, NUMA nodes,
the kernel release, task/idle intervals, device interrupts, the jiffies
model that fits the recorded jiffies, and the kernel's tick decisions."""
from __future__ import annotations

import os
import re

import numpy as np

from .fidelity import _column

# Script operation codes (the core's ScriptOp, cpp/include/timerlab/workload.hpp).
OP_ARM, OP_CANCEL, OP_BUSY, OP_IDLE, OP_IRQ, OP_TICK, OP_DELAY, OP_DUTY = 0, 1, 2, 3, 4, 5, 6, 7
CPU_IDLE_EXIT = 4294967295
TICK_FUNCTIONS = ("tick_nohz_handler", "tick_sched_timer", "tick_nohz_highres_handler")


def _clock_offset(ev) -> int:
    """Trace clock - CLOCK_MONOTONIC: the smallest gap between an hrtimer
    expiry's timestamp and its monotonic now= (the entry is logged after now
    was read; timestamps may be truncated to µs, hence the -1 µs slack)."""
    h = ev[ev["event"] == "hrtimer_expire_entry"]
    d = h["ts_ns"].to_numpy(np.int64) - h["now_ns"].to_numpy(dtype=np.int64, na_value=0)
    d = d[h["now_ns"].notna().to_numpy()]
    if not len(d):
        return 0
    resolution = 1000 if (h["ts_ns"].to_numpy() % 1000 == 0).all() else 1
    return int(d.min()) - (resolution - 1)


def _infer_hz(ev, clock_offset) -> int | None:
    """HZ from how fast jiffies (timer_start's expires - timeout) advance in
    monotonic time."""
    s = ev[ev["event"] == "timer_start"]
    if len(s) < 2:
        return None
    j = (s["expires_jiffies"].to_numpy(np.uint64) - s["timeout_jiffies"].to_numpy(np.int64).astype(np.uint64))
    t = s["ts_ns"].to_numpy(np.int64)
    dj = float(np.int64(j[-1] - j[0]))
    if dj < 10:
        return None
    per_s = dj / ((t[-1] - t[0]) / 1e9)
    return min((100, 250, 300, 1000), key=lambda hz: abs(hz - per_s))


def _node_of_cpu(ev, nr_cpus):
    """CPU -> NUMA node from the hierarchy's set-up events, if the trace has them."""
    c = ev[ev["event"] == "tmigr_connect_cpu_parent"]
    if not len(c) or "numa" not in c:
        return None
    m = dict(zip(c["cpu_id"].to_numpy(dtype=np.int64, na_value=-1).tolist(),
                 c["numa"].to_numpy(dtype=np.int64, na_value=-1).tolist()))
    if sorted(m) != list(range(nr_cpus)) or min(m.values()) < 0:
        return None
    nodes = sorted(set(m.values()))
    return [nodes.index(m[cpu]) for cpu in range(nr_cpus)]


def _default_idle(ev) -> bool:
    """Whether the machine had no cpuidle driver: default_idle_call logs
    cpu_idle with state 1 only (a driver logs its state index, 0 = POLL)."""
    states = ev.loc[ev["event"] == "cpu_idle", "state"]
    states = states[states != CPU_IDLE_EXIT]
    return len(states) > 0 and bool((states == 1).all())


def _kernel_of(path) -> str:
    m = re.search(r"(?<![\d.])(\d+\.\d+)(?:\.\d+)?(?![\d.])", os.path.basename(str(path)))
    return m.group(1) if m else "latest"


def _device_interrupts(ev, cpus_with_idle, initial_busy):
    """External interrupts: (t_ts, cpu, duration_ns, line) for idle periods
    ended by something the simulation does not model (see the module doc),
    the period in progress at the start included."""
    out = []
    sub = ev[ev["cpu"].isin(cpus_with_idle)]
    event = _column(sub, "event")
    cpu = _column(sub, "cpu")
    ts = _column(sub, "ts_ns")
    line = _column(sub, "line")
    state = _column(sub, "state")
    function = _column(sub, "function", "")
    prev_pid = _column(sub, "prev_pid")
    next_pid = _column(sub, "next_pid")
    # Per CPU: "idle" (entered, nothing seen yet), "woken" (first event seen;
    # a pending external candidate waits to see whether a task runs next).
    phase, pending = {c: "idle" for c in cpus_with_idle if not initial_busy[c]}, {}

    def settle(c, t_end, task_runs):
        p = pending.pop(c, None)
        if p is None:
            return
        kind, t0, ln = p
        if kind == "task" and task_runs:
            return
        out.append((t0, c, max(0, t_end - t0), ln))

    for i, e in enumerate(event):
        c = cpu[i]
        if e == "cpu_idle":
            if state[i] != CPU_IDLE_EXIT:
                settle(c, ts[i], False)
                phase[c] = "idle"
            elif phase.get(c) == "idle":  # exit with no event during the sleep
                pending[c] = ("irq", ts[i], line[i])
                phase[c] = "woken"
            continue
        if e == "sched_switch" and prev_pid[i] == 0 and next_pid[i] != 0:
            settle(c, ts[i], True)
            phase[c] = None
            continue
        if phase.get(c) != "idle":
            continue
        phase[c] = "woken"
        if e == "hrtimer_expire_entry" and str(function[i]) in TICK_FUNCTIONS:
            continue  # the tick: simulated
        pending[c] = ("task" if e == "sched_wakeup" else "irq", ts[i], line[i])
    for c in list(pending):
        settle(c, int(ts[-1]) if ts else 0, False)
    return out


def _task_intervals(ev, nr_cpus, idle_cpus, clock_offset):
    """busy_start / idle_start rows from sched_switch to and from pid 0, the
    CPUs' initial states, and the CPUs whose switches away from the idle task
    are missing (CPU 1 of the 2-CPU VM): there, the first event logged by
    another task while the CPU is thought idle starts the busy period.

    A task woken in an interrupt on an idle CPU runs right after it: the
    kernel's idle loop sees need_resched and does not enter idle again. So
    on CPUs that log cpu_idle, the busy period starts at the interrupt that
    ended the idle period (the clock reading of an hrtimer expiry, i.e. the
    simulated tick's own time), not at the switch some µs later, by which
    the simulation would have re-entered idle once more."""
    rows, state, first, missing = [], {}, {}, set()
    event, cpu, ts, line = _column(ev, "event"), _column(ev, "cpu"), _column(ev, "ts_ns"), _column(ev, "line")
    pid, prev_pid, next_pid = _column(ev, "pid"), _column(ev, "prev_pid"), _column(ev, "next_pid")
    idle_state, now_ns = _column(ev, "state"), _column(ev, "now_ns")
    wake = {}  # CPU -> (ts, line) of the first event after its latest idle entry
    for i, e in enumerate(event):
        c = cpu[i]
        if c not in first:
            first[c] = pid[i]
        if e == "cpu_idle":
            if idle_state[i] != CPU_IDLE_EXIT:
                wake[c] = None
            elif wake.get(c, 0) is None:
                wake[c] = (ts[i], line[i])
            continue
        if wake.get(c, 0) is None:
            t = now_ns[i] + clock_offset if e == "hrtimer_expire_entry" and now_ns[i] is not None else ts[i]
            wake[c] = (t, line[i])
        if e == "sched_switch" and prev_pid[i] is not None and next_pid[i] is not None:
            if prev_pid[i] == 0 and next_pid[i] != 0:
                if state.get(c) != "busy":
                    t, ln = (wake.get(c) or (ts[i], line[i])) if c in idle_cpus else (ts[i], line[i])
                    rows.append((t, ln, c, OP_BUSY, 0, 0, 0, 0, c, 0))
                state[c] = "busy"
                wake.pop(c, None)
            elif next_pid[i] == 0 and prev_pid[i] != 0:
                if state.get(c) != "idle":
                    rows.append((ts[i], line[i], c, OP_IDLE, 0, 0, 0, 0, c, 0))
                state[c] = "idle"
        elif state.get(c) == "idle" and pid[i] not in (None, 0):
            rows.append((ts[i], line[i], c, OP_BUSY, 0, 0, 0, 0, c, 0))
            state[c] = "busy"
            missing.add(c)
    initial = []
    for c in range(nr_cpus):
        p = first.get(c)
        initial.append(int(c not in idle_cpus) if p is None else int(p != 0))
    return rows, initial, sorted(missing)


def _jiffies_fit(ev, offset, j0, tick_ns, holder=None, handovers=None):
    """How often each jiffies model gives the value the kernel recorded (at
    timer_start: expires - timeout; at timer_expire_entry: now): ``grid``
    (jiffies = monotonic // TICK_NSEC + j0) and ``kernel`` (the update duty:
    jiffies catch up when the duty CPU's tick runs — the first ticking CPU
    takes the duty when nobody holds it, a CPU stopping its tick drops it —
    and when a CPU whose tick is stopped leaves idle). ``holder``: the CPU
    holding the duty when the trace begins (None: nobody); ``handovers``, a
    list, receives (ts, line, cpu, new holder or None) at each change."""
    sel = ev[ev["event"].isin(("hrtimer_expire_entry", "tick_stop", "cpu_idle", "timer_start", "timer_expire_entry",
                               "sched_switch"))]
    event, cpu, ts = _column(sel, "event"), _column(sel, "cpu"), _column(sel, "ts_ns")
    function, now_ns, state = _column(sel, "function", ""), _column(sel, "now_ns"), _column(sel, "state")
    expires, timeout = _column(sel, "expires_jiffies"), _column(sel, "timeout_jiffies")
    now_j = _column(sel, "now_jiffies")
    prev_pid, line, success = _column(sel, "prev_pid"), _column(sel, "line"), _column(sel, "success")
    jif, stopped = None, set()
    ok_grid = ok_kernel = total = 0
    for i, e in enumerate(event):
        c = cpu[i]
        grid = (ts[i] - offset) // tick_ns + j0
        jif = grid if jif is None else jif
        if e == "hrtimer_expire_entry":
            if str(function[i]) in TICK_FUNCTIONS and now_ns[i] is not None:
                if holder is None:
                    holder = c
                    if handovers is not None:
                        handovers.append((ts[i], line[i], c, c))
                if holder == c:
                    jif = max(jif, now_ns[i] // tick_ns + j0)
        elif e == "tick_stop":
            if success[i] == 0:  # a failed stop (nohz_full dependency) keeps the tick and the duty
                continue
            stopped.add(c)
            if holder == c:
                holder = None
                if handovers is not None:
                    handovers.append((ts[i], line[i], c, None))
        elif e == "sched_switch":
            if prev_pid[i] == 0:
                stopped.discard(c)
        elif e == "cpu_idle":
            if state[i] == CPU_IDLE_EXIT and c in stopped:
                jif = max(jif, grid)
        elif e == "timer_start" or e == "timer_expire_entry":
            if e == "timer_start":
                if expires[i] is None or timeout[i] is None:
                    continue
                obs = (expires[i] - timeout[i]) % (1 << 64)
            elif now_j[i] is None:
                continue
            else:
                obs = now_j[i]
            total += 1
            ok_grid += obs == grid
            ok_kernel += obs == jif
            jif = max(jif, obs)
    return {"grid": ok_grid / total if total else 1.0, "kernel": ok_kernel / total if total else 0.0}


def _ticks(ev):
    return ev[(ev["event"] == "hrtimer_expire_entry") & ev["function"].astype(str).isin(TICK_FUNCTIONS)]


def _initial_ticks(ev, nr_cpus, cpus_with_idle, initial_busy, start_mono, tick_ns):
    """Per CPU, the tick policy of an idle period in progress when the trace
    begins (1: the tick runs, 2: stopped, 0: not idle or not visible): the
    tick runs if the CPU's first tick comes within two tick periods of the
    start (one period, plus the lateness of a tick under a hypervisor) and
    before it enters idle again; a stopped tick would wake it at its next
    timer instead."""
    out = [0] * nr_cpus
    sub = ev[ev["cpu"].isin(cpus_with_idle)]
    entries = sub[(sub["event"] == "cpu_idle") & (sub["state"] != CPU_IDLE_EXIT)].groupby("cpu")["ts_ns"].min()
    ticks = _ticks(sub)
    first_tick = ticks.groupby("cpu")[["ts_ns", "now_ns"]].first()
    for c in cpus_with_idle:
        if initial_busy[c]:
            continue
        runs = (c in first_tick.index and int(first_tick.loc[c, "now_ns"]) < start_mono + 2 * tick_ns
                and int(first_tick.loc[c, "ts_ns"]) < int(entries.get(c, np.iinfo(np.int64).max)))
        out[c] = 1 if runs else 2
    return out


def _initial_duty(ev, offset, j0, tick_ns, candidates, observations=300):
    """The CPU that holds the jiffies-update duty when the trace begins (the
    trace starts long after boot, so the duty's history is not in it): of
    ``candidates`` (the CPUs whose tick runs at the start), the one whose
    holding the duty best reproduces the jiffies recorded by the first
    ``observations`` timer events; ties go to the first CPU to log a tick."""
    obs = ev["event"].isin(("timer_start", "timer_expire_entry")).to_numpy()
    idx = np.flatnonzero(obs)
    prefix = ev.iloc[:idx[min(observations, len(idx)) - 1] + 1] if len(idx) else ev
    first = [c for c in dict.fromkeys(_ticks(prefix)["cpu"].tolist()) if c in candidates]
    order = list(dict.fromkeys(first + sorted(candidates)))
    if not order:
        return -1
    fits = [_jiffies_fit(prefix, offset, j0, tick_ns, holder=c)["kernel"] for c in order]
    return order[int(np.argmax(fits))]


def _tick_delays(ev, tick_ns):
    """(grid_ns, delay_ns, cpu, line) of each traced tick: the grid point its
    hrtimer was programmed for (hrtimer_start of the same timer on that
    CPU; else the grid point before it fired) and how late it fired. A
    delay of a tick or more means the grid point's tick never ran — a stall
    under the hypervisor — and the next one came instead, late."""
    sel = ev[ev["event"].isin(("hrtimer_start", "hrtimer_expire_entry"))
             & ev["function"].astype(str).isin(TICK_FUNCTIONS)]
    event, cpu, line = _column(sel, "event"), _column(sel, "cpu"), _column(sel, "line")
    hrtimer, expires, now = _column(sel, "hrtimer"), _column(sel, "expires_ns"), _column(sel, "now_ns")
    programmed, out = {}, []
    for i, e in enumerate(event):
        if e == "hrtimer_start":
            programmed[(cpu[i], hrtimer[i])] = expires[i]
        elif now[i] is not None:
            g = programmed.pop((cpu[i], hrtimer[i]), None)
            if g is None or g > now[i] or g % tick_ns:
                g = now[i] // tick_ns * tick_ns
            out.append((g, now[i] - g, cpu[i], line[i]))
    return out


def _hidden_tick_policies(ev, cpus):
    """(t_ts, cpu, policy, line) for CPUs that log no cpu_idle (nor
    tick_stop): each idle period — swapper running, until another task logs
    an event — with its tick re-armed periodically (the tick handler's own
    hrtimer_start, mode ABS; a stopped tick is programmed ABS|PINNED|HARD)
    kept the tick (1); for the others the simulation decides (0). Set just
    before the period begins."""
    sub = ev[ev["cpu"].isin(cpus)]
    event, cpu, ts, line = _column(sub, "event"), _column(sub, "cpu"), _column(sub, "ts_ns"), _column(sub, "line")
    pid, next_pid, mode = _column(sub, "pid"), _column(sub, "next_pid"), _column(sub, "mode", "")
    function = _column(sub, "function", "")
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


def _tick_policies(ev, cpus_with_idle, t_start):
    """(t_ts, cpu, policy, line): the trace's tick decision at each idle entry
    (2: the tick is stopped in that idle period, 1: kept), set just after the
    previous entry so that it is in force when the simulation reaches the
    same entry (its idle entries precede the trace's by the few µs the
    kernel spends between the switch to the idle task and cpu_idle); a
    CPU's first entry's at ``t_start`` (the idle period in progress then has
    the script's initial_tick)."""
    out = []
    sub = ev[ev["cpu"].isin(cpus_with_idle) & ev["event"].isin(("cpu_idle", "tick_stop", "sched_switch"))]
    event, cpu, ts, line = _column(sub, "event"), _column(sub, "cpu"), _column(sub, "ts_ns"), _column(sub, "line")
    state, prev_pid = _column(sub, "state"), _column(sub, "prev_pid")
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
            t_set = prev[0] + 1 if prev is not None else t_start
            out.append((t_set, c, 2 if stopped.get(c, False) else 1, prev[1] if prev is not None else line[i]))
            last_entry[c] = (ts[i], line[i])
    return out
