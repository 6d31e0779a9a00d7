"""How each traced timer_start was asked for, as far as the trace tells.

A timer_start shows where the timer went (``cpu=``, the base's CPU), not
which call put it there. A replay under another policy needs the call, since
the placement is the simulation's to decide (reference pre-6.9-kernels.md
§2.1, §3.3; kernel-timers.md §1.6):

=========== ===================================================================
placement   mod_timer/add_timer: the policy places it (push before 6.9: the
            current CPU if busy, else the nearest busy one; pull: local)
on_cpu      add_timer_on(cpu): on that CPU's base whatever the policy
own_base    re-armed by its own callback: it stays on the base it expired
            from (its callback is running there), wherever that base is
=========== ===================================================================

Read off the trace:

* a timer_start between the timer's own timer_expire_entry and _exit on the
  same CPU is ``own_base``;
* from 6.9 (the pull model queues every timer locally) a timer on another
  CPU's base is ``on_cpu``; so before 6.9, unless the push heuristic
  explains it — the arming CPU idle (running its idle task with no task woken
  onto it) and the base's CPU busy, by the trace's sched_switch and
  sched_wakeup;
* before 6.9, a timer kept on an idle arming CPU while another CPU was busy,
  not pinned, is ``on_cpu`` too (add_timer_on of the current CPU, as
  add_interrupt_randomness does): the push heuristic would have moved it.

Everything else is ``placement``.
"""
from __future__ import annotations

import numpy as np

from ..trace.events import column
from ..trace.rows import select_events

PLACE_POLICY, PLACE_ON_CPU, PLACE_OWN_BASE = 0, 1, 2  # the core's ArmPlace
PLACE_NAMES = ("placement", "on_cpu", "own_base")


def arm_places(ev, nr_cpus: int, pull_model: bool) -> dict:
    """{line of a timer_start: its place code} for every timer_start of ``ev``."""
    # Who runs and who was woken matter to the push model only (idle()): the pull model reads the
    # timer events alone.
    tasks = () if pull_model else ("sched_switch", "sched_wakeup", "sched_wakeup_new")
    sel = select_events(ev, ("timer_start", "timer_expire_entry", "timer_expire_exit") + tasks,
                        ("cpu", "line", "timer", "pid", "next_pid", "target_cpu", "base_cpu", "flags"))
    event, cpu, line, timer = column(sel, "event"), column(sel, "cpu"), column(sel, "line"), column(sel, "timer")
    pid, next_pid, target = column(sel, "pid"), column(sel, "next_pid"), column(sel, "target_cpu")
    base, flags = column(sel, "base_cpu"), column(sel, "flags", "")
    running = {}   # CPU -> pid it runs (from its first event, then sched_switch)
    woken = set()  # CPUs with a task woken onto them, not yet switched in
    in_callback = {}  # CPU -> timer whose callback runs there
    out = {}

    def idle(c) -> bool:
        return running.get(c, 1) == 0 and c not in woken

    for i, e in enumerate(event):
        c = cpu[i]
        running.setdefault(c, pid[i])
        if e == "sched_switch":
            running[c] = next_pid[i]
            woken.discard(c)
        elif e in ("sched_wakeup", "sched_wakeup_new"):
            if target[i] is not None:
                woken.add(target[i])
        elif e == "timer_expire_entry":
            in_callback[c] = timer[i]
        elif e == "timer_expire_exit":
            in_callback.pop(c, None)
        elif e == "timer_start":
            b = c if base[i] is None or not 0 <= base[i] < nr_cpus else base[i]
            if in_callback.get(c) == timer[i]:
                place = PLACE_OWN_BASE
            elif pull_model:
                place = PLACE_ON_CPU if b != c else PLACE_POLICY
            elif b != c:
                place = PLACE_POLICY if idle(c) and not idle(b) else PLACE_ON_CPU
            else:
                pinned = "P" in str(flags[i] or "").split("|")
                busy_elsewhere = any(not idle(o) for o in range(nr_cpus) if o != c)
                place = PLACE_ON_CPU if idle(c) and busy_elsewhere and not pinned else PLACE_POLICY
            out[line[i]] = place
    return out


def place_counts(places) -> dict:
    """{name: how many} of a sequence of place codes."""
    codes = np.asarray(list(places), dtype=np.int64)
    return {name: int((codes == k).sum()) for k, name in enumerate(PLACE_NAMES)}
