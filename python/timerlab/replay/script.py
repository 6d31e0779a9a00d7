"""The Script of a trace: its timer operations, task intervals, device
interrupts and clock items as the core's ScriptSpec takes them
(``build_script``, ``to_workload``); see the package doc for what is
replayed and what is simulated.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from itertools import chain

import numpy as np
import pandas as pd

from ..callbacks import instance_durations
from ..kernel import kernel_has
from ..trace.events import column, expiry_detaches
from ..trace.features import record_hint
from ..trace.rows import event_rows, previous_on_cpu, select_events, str_test, values
from ..wheel import parse_timer_flags
from ..workloads import Component, CpuSelection, Workload
from .activity import (clock_wake_end_lines, device_interrupt_columns, entries_before_first_tick,
                       hidden_tick_policies, idle_marks, initial_ticks, task_intervals, tick_policy_columns,
                       timer_wakeups)
from .arms import PLACE_NAMES, arm_places
from ..wake_latency import fit_tables
from .clocks import clock_offset, initial_duty, jiffies_fit, tick_jiffies_offset, tick_wakeup_columns
from .phantoms import PHANTOM, PHANTOM_FUNCTION, phantom_timers
from .hrtimers import hrtimer_rows
from .ops import (OP_ARM, OP_BUSY, OP_CANCEL, OP_WAKE_PENDING, OP_DELAY, OP_DUTY, OP_HR_ARM, OP_NAMES, OP_TICK, OP_WAKE_IRQ, WAKE_STOPPED,
                  WOKEN_BY_HRTIMER, WOKEN_BY_TIMER)

JIFFIES_MODES = ("auto", "kernel", "grid")
TICK_MODES = ("simulated", "kept", "trace")
HRTIMER_WAKEUPS = ("causal", "trace")
# Events of the boot-time hierarchy set-up, logged long before the recording.
_SETUP_EVENTS = ("tmigr_group_set", "tmigr_connect_cpu_parent", "tmigr_connect_child_parent", "tmigr_cpu_online")
_TIMER_FLAG_BITS = parse_timer_flags("D|P|I")
# The columns of Script.items as they are built (t_ns: ts less the clock offset).
_ITEM_COLUMNS = ("ts", "line", "cpu", "op", "key", "expires_jiffies", "flags", "function", "target_cpu", "duration_ns")

# What to_workload needs, and what validate needs on top.
REQUIRED_EVENTS = ("timer_start", "timer_cancel", "timer_expire_entry", "sched_switch", "hrtimer_expire_entry")
VALIDATE_EVENTS = REQUIRED_EVENTS + ("cpu_idle", "tick_stop")


class _Columns(dict):
    """The script as the core takes it: a dict of NumPy columns that compares by value."""

    def __eq__(self, other):
        if not isinstance(other, dict) or self.keys() != other.keys():
            return False
        return all(np.array_equal(np.asarray(v), np.asarray(other[k])) for k, v in self.items())

    def __ne__(self, other):
        return not self == other

    __hash__ = None


@dataclass(frozen=True, eq=False)
class Script:
    """A trace's timed operations (one row per item of ``items``, sorted by time)
    and what aligns them with the simulation."""

    # t_ns (monotonic), line, cpu, op, key, expires_jiffies, flags, function, target_cpu, duration_ns,
    # place (arms: arms.py), late_ns (hrtimer arms: hrtimers.py)
    items: pd.DataFrame
    function_names: tuple
    pointers: np.ndarray         # key -> the trace's timer pointer
    initial_busy: tuple          # per CPU: running a task at the start
    initial_tick: tuple          # per CPU: tick policy of an idle period begun before the trace (0: none)
    nr_cpus: int
    hz: int
    initial_jiffies: int         # jiffies at monotonic 0
    clock_offset_ns: int         # trace timestamp - CLOCK_MONOTONIC
    start_ns: int                # monotonic
    end_ns: int
    source: str = ""
    notes: tuple = field(default=())
    jiffies_duty: bool = False
    rcu_needs_cpu: bool = True   # the tick model the script was built for (rcu_keeps_tick)
    after_tasks: tuple = ()       # (kept, stopped): ticks_after_tasks
    # (kernel, grid, observations): how often each jiffies model gave the recorded jiffies (clocks.jiffies_fit)
    jiffies_fit: tuple = ()
    # Per CPU: quantiles (ns) of how late the trace's stopped ticks woke it
    # (wake_latency.py), for the simulated wakeups the kernel did not have.
    wake_stopped: tuple = ()
    hrtimer_pointers: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))  # hrtimer key -> pointer

    def __eq__(self, other):
        scalars = ("source", "start_ns", "end_ns", "hz", "initial_jiffies", "jiffies_duty", "initial_busy", "initial_tick",
                   "nr_cpus", "clock_offset_ns", "function_names", "wake_stopped")
        return (isinstance(other, Script) and all(getattr(self, k) == getattr(other, k) for k in scalars)
                and self.items.equals(other.items) and np.array_equal(self.pointers, other.pointers)
                and np.array_equal(self.hrtimer_pointers, other.hrtimer_pointers))

    def __hash__(self):
        return hash((self.source, self.start_ns, len(self.items)))

    def __repr__(self) -> str:
        counts = self.items["op"].value_counts()
        parts = ", ".join(f"{counts.get(i, 0)} {name}" for i, name in enumerate(OP_NAMES))
        return (f"Script({os.path.basename(self.source)!r}: {self.nr_cpus} CPUs, {len(self.pointers)} timers, "
                f"{len(self.hrtimer_pointers)} hrtimers, {parts})")

    def to_core(self, fn, topology) -> tuple:
        """(columns, initial_jiffies, jiffies_duty) for the core; ``fn`` maps a callback name to its code."""
        if self.nr_cpus > topology.cpus:
            raise ValueError(f"script: the trace has {self.nr_cpus} CPUs, the config {topology.cpus}")
        codes = np.array([fn(n) for n in self.function_names] or [0], dtype=np.uint16)
        it = self.items
        pad = [0] * (topology.cpus - self.nr_cpus)
        cols = _Columns(
            t_ns=it["t_ns"].to_numpy(np.int64), cpu=it["cpu"].to_numpy(np.uint32), op=it["op"].to_numpy(np.uint8),
            key=it["key"].to_numpy(np.uint32), expires_jiffies=it["expires_jiffies"].to_numpy(np.uint64),
            flags=it["flags"].to_numpy(np.uint32), function=codes[it["function"].to_numpy(np.int64)],
            target_cpu=it["target_cpu"].to_numpy(np.uint32), duration_ns=it["duration_ns"].to_numpy(np.int64),
            place=it["place"].to_numpy(np.uint8), late_ns=it["late_ns"].to_numpy(np.int64),
            nr_keys=len(self.pointers), nr_hrtimer_keys=len(self.hrtimer_pointers),
            initial_busy=list(self.initial_busy) + pad,
            initial_tick=list(self.initial_tick) + pad)
        return cols, self.initial_jiffies, self.jiffies_duty


# ---------------------------------------------------------------------------
# Trace -> script


def require_events(trace, events, what):
    """Raise ValueError naming the events ``what`` needs and the trace lacks,
    and how to record them."""
    # A store not loaded yet counts its events from its metadata: not loaded for this.
    have = set(trace.event_counts().index) if not getattr(trace, "loaded", True) or len(trace.events) else set()
    missing = [e for e in events if e not in have]
    if missing:
        raise ValueError(f"{what}: {trace.path} lacks the event(s) {missing}: {record_hint(missing)} "
                         f"(needed: {list(events)})")


def to_workload(trace, *, hz: int | None = None, tick: str = "simulated", jiffies: str = "auto",
                rcu_needs_cpu="auto", hrtimers: bool = True, hrtimer_wakeups: str = "trace") -> Workload:
    """The trace as a workload of one ``script`` component (see the module doc).
    ``tick="trace"`` also imposes the trace's tick decisions at each idle
    entry (on CPUs that log cpu_idle), instead of the governor's;
    ``tick="kept"`` imposes only the entries where the kernel kept the tick
    for reasons a trace does not show (RCU callbacks pending, say) and the
    engine's tick model does not cover, and leaves the rest to the
    simulation. ``jiffies``: "auto", "kernel" (the update duty, late ticks
    as traced) or "grid" (module doc, Clocks). ``rcu_needs_cpu``: the
    Config's, whose tick model decides what tick="kept" leaves to it;
    "auto" (default): as the trace shows it (rcu_keeps_tick), and the
    Config the trace gives (to_config) gets that.
    ``hrtimers`` (default True, if the trace has hrtimer_start): replay its
    hrtimers other than the tick as hrtimers (hrtimers.py); False: their
    expiries are device interrupts at their traced times.
    ``hrtimer_wakeups``: "trace" (default) — a task an hrtimer woke runs at
    its traced time (the hrtimer's interrupt is the simulation's) — or
    "causal": it runs when the simulation expires that hrtimer, and its run,
    with the sleeps it arms, moves with it, so that a what-if that changes
    when hrtimers fire (slack, pinning, timer_migration) moves what they
    wake. A run moved once stays moved (its sleeps are relative), so under
    the kernel's own policy small mismatches accumulate: on the 32-CPU qemu
    trace "causal" gives 92.9 % expiring CPU against 97.3 % ("trace")."""
    script = build_script(trace, hz=hz, tick=tick, jiffies=jiffies, rcu_needs_cpu=rcu_needs_cpu, hrtimers=hrtimers,
                          hrtimer_wakeups=hrtimer_wakeups)
    return Workload((Component("script", CpuSelection(), {"script": script}),))


def jiffies_model(fit: dict) -> str:
    """jiffies="auto": the model that gave the kernel's recorded jiffies more often (jiffies_fit)."""
    return "kernel" if fit["kernel"] > fit["grid"] else "grid"


def jiffies_note(model: str, fit: dict) -> str:
    """The note saying which jiffies model a replay chose and how well each fits (jiffies_fit)."""
    other = "grid" if model == "kernel" else "kernel"
    return (f"jiffies={model!r}: it gives the kernel's recorded jiffies at {100 * fit[model]:.1f} % of the timer "
            f"events (the other model: {100 * fit[other]:.1f} %)")


def ticks_after_tasks(policy, entry, fresh) -> tuple:
    """(kept, stopped): the kernel's tick decisions at the idle entries
    between a task switching out and the CPU's next tick (``fresh``), on the
    CPUs that log cpu_idle (tick_policy_columns' ``policy`` and ``entry``)."""
    after_task = np.isin(entry, np.fromiter(fresh, dtype=np.int64, count=len(fresh)))
    return int((policy[after_task] == 1).sum()), int((policy[after_task] == 2).sum())


def rcu_keeps_tick(kept: int, stopped: int) -> bool:
    """rcu_needs_cpu="auto": whether the engine's tick model (a CPU keeps its
    tick at idle entries from a task switching out to its next tick) holds
    for a trace whose kernel ``kept`` and ``stopped`` the tick that many
    times there (ticks_after_tasks): at no fewer kept than stopped (none:
    it holds). The kernel keeps it when the CPU is needed — RCU callbacks
    queued, mostly — which depends on what the tasks did: the qemu and VM
    workloads here queue them, cyclictest's sleeps do not (the kernel
    stopped the tick at 3107 of 3421 such entries on the laptop trace; the
    other traces kept it at 74-100 %)."""
    return kept >= stopped


def rcu_note(kept: int, stopped: int) -> str:
    """The note of a replay whose trace turned the tick model off (rcu_keeps_tick)."""
    return (f"rcu_needs_cpu=False: the kernel stopped the tick at {stopped} of {kept + stopped} idle entries right "
            "after a task switched out (no RCU callbacks queued there): the engine's tick model, which keeps the "
            "tick then, is off")


def build_script(trace, *, hz: int | None = None, tick: str = "simulated", jiffies: str = "auto",
                 rcu_needs_cpu="auto", hrtimers: bool = True, hrtimer_wakeups: str = "trace") -> Script:
    """The :class:`Script` of a trace."""
    if not (isinstance(rcu_needs_cpu, (bool, np.bool_))
            or isinstance(rcu_needs_cpu, str) and rcu_needs_cpu == "auto"):
        raise ValueError(f"rcu_needs_cpu={rcu_needs_cpu!r}; choose True, False or 'auto'")
    if hrtimer_wakeups not in HRTIMER_WAKEUPS:
        raise ValueError(f"hrtimer_wakeups={hrtimer_wakeups!r}; choose one of {HRTIMER_WAKEUPS}")
    if tick not in TICK_MODES:
        raise ValueError(f"tick={tick!r}; choose one of {TICK_MODES}")
    if jiffies not in JIFFIES_MODES:
        raise ValueError(f"jiffies={jiffies!r}; choose one of {JIFFIES_MODES}")
    require_events(trace, REQUIRED_EVENTS, "replay")
    ev = trace.events
    nr_cpus = max(int(trace.nr_cpus), int(ev["cpu"].max()) + 1)
    offset = clock_offset(ev)
    notes = []
    if hz is None:
        hz = trace.features.hz or 250
    tick_ns = (1_000_000_000 + hz // 2) // hz
    run = _without_setup(ev)
    if not len(run):
        raise ValueError(f"replay: {trace.path} has no events to replay")

    # jiffies = monotonic // TICK_NSEC + initial_jiffies
    sel = select_events(run, ("hrtimer_expire_entry", "timer_expire_entry"), ("function", "now_ns", "now_jiffies"))
    j0 = tick_jiffies_offset(column(sel, "event"), column(sel, "function", ""), column(sel, "now_ns"),
                              column(sel, "now_jiffies"), tick_ns)
    starts = select_events(run, ("timer_start",), ("expires_jiffies", "timeout_jiffies", "ts_ns", "timer", "function",
                                                   "line", "cpu", "flags", "base_cpu"))
    start_j = (starts["expires_jiffies"].to_numpy(np.uint64)
               - starts["timeout_jiffies"].to_numpy(np.int64).astype(np.uint64))
    mono_start = starts["ts_ns"].to_numpy(np.int64) - offset
    if j0 is None:
        vals, counts = np.unique(start_j - (mono_start // tick_ns).astype(np.uint64), return_counts=True)
        j0 = int(vals[counts.argmax()])
        notes.append("jiffies offset read off timer_start (no tick / timer expiry pairs)")
    j0 = int(j0) % (1 << 64)

    t_first = int(run["ts_ns"].min())
    t_last = int(run["ts_ns"].max())
    # The first events may be interrupts whose clock reading (now=) precedes
    # their timestamp: the replay starts just before the earliest of them
    # (a few dozen events in; later ones are later than the first timestamp).
    first_now = run["now_ns"].iloc[:64].min() if "now_ns" in run else pd.NA
    start_ns = t_first - offset if pd.isna(first_now) else min(t_first - offset, int(first_now) - 1)
    if start_ns < 0:
        raise ValueError(f"replay: {trace.path}: the trace clock runs {offset} ns ahead of CLOCK_MONOTONIC "
                         "before the first event: cannot align the clocks")

    # Timers: keys in order of first timer_start.
    pointers, key_of = [], {}
    for p in starts["timer"].to_numpy(dtype=np.uint64).tolist():
        if p not in key_of:
            key_of[p] = len(pointers)
            pointers.append(p)
    fnames = [str(f) for f in starts["function"].astype(str).unique()]
    fcode = {f: i for i, f in enumerate(fnames)}

    parts = []  # each source's items, as columns (_items)
    rows = []  # (ts, line, cpu, op, key, expires, flags, function, target, duration)
    # A missing flags value (an optional field absent from a damaged line) is no flags.
    flags_text = [x if isinstance(x, str) else "" for x in starts["flags"].tolist()]
    # An arm's duration: how long its callback ran when it expired (else its function's median).
    took, took_median = instance_durations(run)
    for ts, line, cpu, ptr, exp, fl, fn, base in zip(
            starts["ts_ns"].tolist(), starts["line"].tolist(), starts["cpu"].tolist(),
            starts["timer"].to_numpy(dtype=np.uint64).tolist(), starts["expires_jiffies"].to_numpy(np.uint64).tolist(),
            flags_text, starts["function"].astype(str).tolist(),
            starts["base_cpu"].to_numpy(dtype=np.int64, na_value=-1).tolist()):
        target = cpu if base < 0 or base >= nr_cpus else base
        rows.append((ts, line, cpu, OP_ARM, key_of[ptr], exp, parse_timer_flags(fl) & _TIMER_FLAG_BITS, fcode[fn],
                     target, took.get(line, took_median.get(fn, 0))))
    parts.append(_tuple_items(rows))
    # Global timers armed before the trace, as the hierarchy reports them (phantoms.py).
    phantoms = phantom_timers(run, offset, j0, tick_ns, hz)
    if phantoms:
        fcode.setdefault(PHANTOM_FUNCTION, len(fnames))
        if PHANTOM_FUNCTION not in fnames:
            fnames.append(PHANTOM_FUNCTION)
        notes.append(f"{len(phantoms)} global timer(s) armed before the trace inferred from the hierarchy's "
                     "reports (tmigr_cpu_idle nextevt earlier than any known timer): armed as phantoms")
    rows = []
    for n, (ts, line, cpu, exp, cancel_ts, cancel_line) in enumerate(phantoms):
        key_of[PHANTOM + n] = len(pointers)
        pointers.append(PHANTOM + n)
        rows.append((ts, line, cpu, OP_ARM, key_of[PHANTOM + n], exp, 0, fcode[PHANTOM_FUNCTION], cpu, 0))
        if cancel_ts is not None:
            rows.append((cancel_ts, cancel_line, cpu, OP_CANCEL, key_of[PHANTOM + n], 0, 0, 0, cpu, 0))
    parts.append(_tuple_items(rows))
    # hrtimers other than the tick (hrtimers.py).
    hr_pointers, hr_own, hr_expiries, hr_late = [], set(), {}, {}
    if hrtimers and len(event_rows(run, ("hrtimer_start",))):
        hr_rows, hr_own, hr_pointers, hr_late, hr_expiries = hrtimer_rows(run, offset, fcode, start_ns + offset)
        parts.append(_tuple_items(hr_rows))
        fnames = list(fcode)  # in code order
    tev = select_events(run, ("timer_start", "timer_cancel", "timer_expire_entry", "timer_expire_exit"),
                        ("cpu", "timer", "ts_ns", "line"))
    t_event, t_cpu, t_timer = column(tev, "event"), column(tev, "cpu"), column(tev, "timer")
    detaches = expiry_detaches(t_event, t_cpu, t_timer)
    t_ts, t_line = column(tev, "ts_ns"), column(tev, "line")
    parts.append(_tuple_items([(t_ts[i], t_line[i], t_cpu[i], OP_CANCEL, key_of[t_timer[i]], 0, 0, 0, t_cpu[i], 0)
                               for i, e in enumerate(t_event)
                               if e == "timer_cancel" and i not in detaches and t_timer[i] in key_of]))

    # Tasks: sched_switch from and to the idle task (pid 0).
    idle_cpus = set(np.unique(run["cpu"].to_numpy()[event_rows(run, ("cpu_idle",))]).tolist())
    hr_key = {p: k for k, p in enumerate(hr_pointers)}
    woken_by = {}
    for ln, (kind, p) in timer_wakeups(run, hrtimers=bool(hr_pointers)).items():
        if kind == "timer" and p in key_of:
            woken_by[ln] = (WOKEN_BY_TIMER, key_of[p])
        elif kind == "hrtimer" and hrtimer_wakeups == "causal" and p is not None and int(p) in hr_key:
            woken_by[ln] = (WOKEN_BY_HRTIMER, hr_key[int(p)])
    busy_rows, initial_busy, missing_switch = task_intervals(run, nr_cpus, idle_cpus, offset, woken_by)
    parts.append(_tuple_items(busy_rows))
    sw = select_events(run, ("sched_switch",), ("cpu", "next_pid"))
    next0 = (sw["next_pid"] == 0).to_numpy(dtype=bool, na_value=False)
    if missing_switch:
        notes.append(f"CPU(s) {missing_switch} log no switch away from the idle task: a task's first event "
                     "there marks the end of the idle period")

    # Tasks woken onto CPUs: until they run, those CPUs are not idle to the push heuristic
    # (get_nohz_timer_target: nr_running, ttwu_pending) — where an idle CPU's hrtimer, say, goes.
    # The enqueue (and what it arms: the fair server's timer) precedes the sched_wakeup line: the
    # mark is set just after the waker's previous event, at most 50 µs before it.
    wk = event_rows(run, ("sched_wakeup",))
    ts_all, line_all = run["ts_ns"].to_numpy(), run["line"].to_numpy()
    before = previous_on_cpu(run["cpu"].to_numpy())[wk]
    ts = ts_all[wk]
    # The previous event's time as a groupby shift gave it: through a float (exact below 2**53 ns).
    t = np.where(before >= 0, np.maximum(ts_all[before].astype(np.float64).astype(np.int64) + 1, ts - 50_000), ts)
    target = values(run, "target_cpu", -1)[wk]
    on = (target >= 0) & (target < nr_cpus)
    parts.append(_items(t[on], line_all[wk][on], target[on], OP_WAKE_PENDING))
    # A remote wakeup through the target's wake list marks it ttwu_pending when the waker queues the
    # task and sends its IPI; the sched_wakeup line comes later, from the target's IPI handler.
    if "callsite" in run:
        ipi = select_events(run, ("ipi_send_cpu",), ("callsite", "ts_ns", "line", "target_cpu"))
        ipi = ipi[str_test(ipi["callsite"], lambda c: c.startswith("ttwu_queue_wakelist"))]
        target = values(ipi, "target_cpu", -1)
        on = (target >= 0) & (target < nr_cpus)
        parts.append(_items(ipi["ts_ns"].to_numpy()[on], ipi["line"].to_numpy()[on], target[on], OP_WAKE_PENDING))
    # Device interrupts (CPUs that log cpu_idle only).
    marks = idle_marks(run, set(hr_expiries))  # for the device interrupts and the clock wakeups' ends
    ts, cpu, dur, line, op = device_interrupt_columns(run, sorted(idle_cpus), initial_busy, marks)
    parts.append(_items(ts, line, cpu, op, duration=dur))
    # The state at the start: whose tick runs, who holds the jiffies duty.
    initial_tick = initial_ticks(run, nr_cpus, sorted(idle_cpus), initial_busy, start_ns, tick_ns)
    ticking = [c for c in range(nr_cpus) if initial_busy[c] or initial_tick[c] == 1]
    stall_check = kernel_has(trace.kernel, "jiffies_stall_check")
    duty_cpu = initial_duty(run, offset, j0, tick_ns, ticking, stall_check=stall_check)
    handovers = []  # of the jiffies duty, as the trace's jiffies show them
    fit = jiffies_fit(run, offset, j0, tick_ns, holder=None if duty_cpu < 0 else duty_cpu, handovers=handovers,
                      stall_check=stall_check)
    if jiffies == "auto":
        jiffies = jiffies_model(fit)
        notes.append(jiffies_note(jiffies, fit))
    if jiffies == "kernel":
        if duty_cpu >= 0:  # the holder at the start: an item there, before any tick
            handovers.insert(0, (start_ns + offset, 0, duty_cpu, duty_cpu))
        parts.append(_tuple_items([(ts, line, cpu, OP_DUTY, 0, 0, int(holder is None), 0,
                                    cpu if holder is None else holder, 0) for ts, line, cpu, holder in handovers]))
    # Each tick as late as traced (with either jiffies model: a tick tens of µs
    # late still wakes an idle CPU after an interrupt the trace shows before it),
    # and each stopped tick's wakeup (flags 1: a simulated stopped tick
    # programmed for the same time comes as late; the others draw from the
    # CPU's traced lateness, wake_stopped).
    g, d, cpu, line, stopped, from_idle, running = tick_wakeup_columns(run, tick_ns, offset)
    g, d = g.astype(np.int64), d.astype(np.int64)  # monotonic ns: within int64
    due = g + d >= start_ns
    # Each set just before the tick it delays (perhaps before the start). On a CPU that logs no cpu_idle,
    # a tick a period or more late may as well be a stopped tick's wakeup (its stops do not show): not a
    # stall to replay, unless the CPU ran tasks all the while (running: a busy vCPU held up by its host).
    on = ((d < tick_ns) | np.isin(cpu, list(idle_cpus)) | running) & due
    parts.append(_items(g[on] - 1 + offset, line[on], cpu[on], OP_DELAY, flags=np.where(stopped[on], WAKE_STOPPED, 0),
                        duration=d[on]))
    # How long each clock wakeup of an idle CPU kept it awake (softirqs included), beside its lateness: the
    # order in which CPUs woken by one tick idle again — which of them goes inactive last in the hierarchy —
    # is the order their interrupts end.
    ends = clock_wake_end_lines(run, sorted(idle_cpus), marks)
    known, end = _lookup(ends, line)
    on = known & due
    parts.append(_items(g[on] - 1 + offset, line[on], cpu[on], OP_WAKE_IRQ,
                        duration=np.maximum(0, end[on] - offset - (g[on] + d[on]))))
    hr_cpu = _cpu_of_lines(run, hr_expiries)
    rows = []
    for ln, (e_ns, handler, _) in hr_expiries.items():  # a replayed hrtimer's wakeup, as a tick's
        if ln in ends and e_ns >= start_ns:
            c = hr_cpu[ln]
            rows.append((e_ns - 1 + offset, ln, c, OP_WAKE_IRQ, 0, 0, 0, 0, c, max(0, ends[ln] - offset - handler)))
    parts.append(_tuple_items(rows))
    # The stopped ticks' wakeups of idle CPUs: the only rows fit_tables reads for them.
    at = stopped & from_idle
    wake_stopped = fit_tables([(0, late, c, 0, True, True) for late, c in zip(d[at].tolist(), cpu[at].tolist())],
                              True, nr_cpus, per_cpu=True)
    if not wake_stopped:
        notes.append("no stopped tick wakes an idle CPU in the trace: simulated stopped ticks wake on time")
    ts, cpu, policy, line, entry = tick_policy_columns(run, sorted(idle_cpus), start_ns + offset, tick_ns)
    fresh = entries_before_first_tick(run)
    after_tasks = ticks_after_tasks(policy, entry, fresh)
    if rcu_needs_cpu == "auto":
        rcu_needs_cpu = rcu_keeps_tick(*after_tasks)
        if not rcu_needs_cpu:
            notes.append(rcu_note(*after_tasks))
    if tick in ("trace", "kept"):
        # Without rcu_needs_cpu the engine keeps no tick after a task: all kept ticks are imposed.
        if not rcu_needs_cpu:
            fresh = set()
        if tick == "kept":
            # kept: only the entries where the kernel kept the tick for reasons a trace does not show (RCU
            # callbacks pending, irq_work) and the engine's tick model does not cover (the window from a
            # task switching out to the CPU's next tick) are imposed; everything else is simulated.
            policy = ((policy == 1) & ~np.isin(entry, np.fromiter(fresh, dtype=np.int64, count=len(fresh)))
                      ).astype(np.int64)
        parts.append(_items(ts, line, cpu, OP_TICK, flags=policy))
        notes.append("tick decisions imposed from the trace (tick='trace'): tick stops are not a measure"
                     if tick == "trace" else "the ticks the kernel kept in idle are imposed (tick='kept'); tick "
                     "stops are simulated where the kernel stopped the tick")
    else:
        # The initial tick state holds for the idle period in progress at the start only.
        on = (np.asarray(initial_tick, dtype=np.int64)[cpu] != 0) & (ts == start_ns + offset)
        parts.append(_items(ts[on], line[on], cpu[on], OP_TICK))
    hidden = [c for c in range(nr_cpus) if c not in idle_cpus and (sw["cpu"] == c).any()
              and ((sw["cpu"] == c) & next0).any()]
    if hidden:
        notes.append(f"CPU(s) {hidden} log no cpu_idle: their idle periods are inferred from swapper running, "
                     "and their device interrupts are invisible (not replayed)")
        if tick in ("trace", "kept"):
            # Their tick decisions still show: a tick re-armed periodically while swapper runs was kept.
            parts.append(_tuple_items([(ts, line, cpu, OP_TICK, 0, 0, policy, 0, cpu, 0)
                                       for ts, cpu, policy, line in hidden_tick_policies(run, hidden, tick_ns)]))

    cols = _sorted_items(parts)
    op, line = cols["op"], cols["line"]
    cols["ts"] = cols["ts"] - offset
    cols["op"] = op.astype(np.uint8)
    # How each arm was asked for (arms.py): the policy's placement, add_timer_on, or its own base.
    places = arm_places(run, nr_cpus, kernel_has(trace.kernel, "pull_model"))
    own_base = PLACE_NAMES.index("own_base")
    arm, hr_arm = op == OP_ARM, op == OP_HR_ARM
    place = np.zeros(len(op), dtype=np.uint8)
    place[arm] = [places.get(ln, 0) for ln in line[arm].tolist()]
    place[hr_arm & np.isin(line, np.fromiter(hr_own, dtype=np.int64, count=len(hr_own)))] = own_base
    if phantoms:
        # A phantom stays on the base of the CPU that reported it, whatever the policy, and stays
        # global: "own_base" (its timer's CPU bits name that CPU), not add_timer_on, which pins from 6.9.
        place[arm & (cols["function"] == fcode[PHANTOM_FUNCTION])] = own_base
    # An hrtimer arm's traced lateness when it woke its CPU (-1: none known).
    late = np.full(len(op), -1, dtype=np.int64)
    late[hr_arm] = [hr_late.get(ln, -1) for ln in line[hr_arm].tolist()]
    items = pd.DataFrame({"t_ns" if k == "ts" else k: v for k, v in cols.items()} | {"place": place, "late_ns": late})
    return Script(items=items, function_names=tuple(fnames), pointers=np.array(pointers, dtype=np.uint64),
                  initial_busy=tuple(initial_busy), initial_tick=tuple(initial_tick), nr_cpus=nr_cpus, hz=hz, initial_jiffies=j0,
                  clock_offset_ns=offset, start_ns=start_ns, end_ns=t_last - offset, source=trace.path,
                  notes=tuple(notes), jiffies_duty=jiffies == "kernel", wake_stopped=wake_stopped,
                  jiffies_fit=(fit["kernel"], fit["grid"], fit["observations"]), rcu_needs_cpu=bool(rcu_needs_cpu),
                  after_tasks=after_tasks,
                  hrtimer_pointers=np.array(hr_pointers, dtype=np.uint64))


def _items(ts, line, cpu, op, *, flags=0, duration=0) -> dict:
    """Items of one source as columns (_ITEM_COLUMNS; a scalar is every
    item's): a source's NumPy arrays whole, not a tuple per item. The
    target CPU is the item's own; key, expiry and function are 0."""
    n = len(ts)
    full = {"ts": ts, "line": line, "cpu": cpu, "op": op, "key": 0, "expires_jiffies": 0, "flags": flags,
            "function": 0, "target_cpu": cpu, "duration_ns": duration}
    return {k: np.broadcast_to(np.asarray(v, dtype=np.uint64 if k == "expires_jiffies" else np.int64), n)
            for k, v in full.items()}


def _tuple_items(rows: list) -> dict:
    """Items given as tuples of Python ints (_ITEM_COLUMNS in order) as columns."""
    if not rows:
        return _items(np.zeros(0, dtype=np.int64), 0, 0, 0)
    try:  # the values as one stream: a conversion per column of tuples cost three times as much
        table = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=len(rows) * len(_ITEM_COLUMNS))
    except OverflowError:  # an expiry beyond int64 (an unsigned long's upper half)
        cols = dict(zip(_ITEM_COLUMNS, zip(*rows)))
        return {k: _expiries(v) if k == "expires_jiffies" else np.array(v, dtype=np.int64) for k, v in cols.items()}
    table = table.reshape(len(rows), len(_ITEM_COLUMNS))
    cols = {k: table[:, i] for i, k in enumerate(_ITEM_COLUMNS)}
    cols["expires_jiffies"] = cols["expires_jiffies"].astype(np.uint64)  # a negative one modulo 2**64
    return cols


def _expiries(values) -> np.ndarray:
    """Expiries in jiffies as uint64: a negative one modulo 2**64, as an int64 cast gives it."""
    try:
        return np.array(values, dtype=np.int64).astype(np.uint64)
    except OverflowError:  # beyond int64: an unsigned long's upper half
        return np.array(values, dtype=np.uint64)


def _sorted_items(parts: list) -> dict:
    """The items of every source, in the order the core runs them: by
    timestamp, then line, the sources' order among equals — but a busy
    period a task's first event starts (a CPU that logs no switch away from
    the idle task) before that event's own item: the task armed it, not an
    interrupt of the idle CPU."""
    cols = {k: np.concatenate([p[k] for p in parts]) for k in _ITEM_COLUMNS}
    order = np.lexsort((cols["op"] != OP_BUSY, cols["line"], cols["ts"]))  # stable
    return {k: v[order] for k, v in cols.items()}


def _lookup(mapping: dict, keys: np.ndarray) -> tuple:
    """(whether each of ``keys`` is in ``mapping``, its value there, else 0) of integer keys and values."""
    k = np.fromiter(mapping.keys(), dtype=np.int64, count=len(mapping))
    v = np.fromiter(mapping.values(), dtype=np.int64, count=len(mapping))
    by = np.argsort(k, kind="stable")
    k, v = k[by], v[by]
    at = np.minimum(np.searchsorted(k, keys), max(len(k) - 1, 0))
    known = (k[at] == keys) if len(k) else np.zeros(len(keys), dtype=bool)
    return known, np.where(known, v[at] if len(k) else 0, 0)


def _cpu_of_lines(run: pd.DataFrame, lines) -> dict:
    """{line: its CPU} for ``lines`` (a row's, the last one's if lines repeat)."""
    if not lines:
        return {}
    at = np.flatnonzero(np.isin(run["line"].to_numpy(), np.fromiter(lines, dtype=np.int64, count=len(lines))))
    return dict(zip(run["line"].to_numpy()[at].tolist(), run["cpu"].to_numpy()[at].tolist()))


def _without_setup(ev: pd.DataFrame) -> pd.DataFrame:
    """The events less the boot-time hierarchy set-up. Those lead the trace
    when it has them: then a slice, not a copy of every column (a copy of
    the whole events frame was build_script's largest allocation)."""
    setup = ev["event"].isin(_SETUP_EVENTS).to_numpy()
    n = int(setup.sum())
    if setup[:n].all():
        return ev.iloc[n:]
    return ev[~setup]


def script_of(workload) -> Script:
    return next(c.params["script"] for c in workload.components if c.kind == "script")
