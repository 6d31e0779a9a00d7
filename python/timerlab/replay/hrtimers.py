"""A trace's hrtimers as replayed hrtimers: every hrtimer_start and real
hrtimer_cancel of an hrtimer other than the tick (the tick is the
simulation's own), so that a what-if can move, pin, slack or coalesce them
(the hrtimer model, cpp/include/timerlab/hrtimer.hpp):

* ``hrtimer_arm`` items: the pointer's key, the absolute soft expiry and the
  window (a REL start is logged with its absolute expiry), the mode bits
  (PINNED/SOFT/HARD; REL is spent), the callback; ``own_base`` for a restart
  from the timer's own callback (an hrtimer_start after its
  hrtimer_expire_entry on that CPU, with no softirq, idle entry or exit,
  switch or other expiry there in between: __run_hrtimer re-queues it
  there);
  its expiry is an interrupt: what its callback did that the trace shows is
  the script's (a task it woke, below; an idle loop left without a task —
  6.12's fair-server ``dl_task_timer``, when it found fair work — is an
  ``idle_exit`` item where the kernel's CPU left it, activity.py).
* ``hrtimer_cancel`` items: cancels that remove a queued timer. Kernels
  before the 2026 trace change (pre-6.9-kernels.md §1.2) also log a cancel
  before each restart and each expiry: those are not replayed.
* an expiry with no start before it (armed before the trace, or re-armed
  without a trace: a periodic timerfd's restart on read logs none on 6.18)
  is armed at the start, or just after the timer's previous event, pinned
  to the CPU that ran it, for the time its handler read (``now=``): the
  trace does not show its expiry.
* each arm's ``late_ns``: its expiry's traced lateness (its handler's time
  minus its hard expiry), imposed when that hrtimer wakes the simulated CPU
  from idle — wherever and whenever it expires there (a task's run moved by
  its wakeup moves its sleeps: the instance keeps its lateness).
The tasks an hrtimer_wakeup woke wait for the simulated expiry
(activity.timer_wakeups: busy_start woken by hrtimer `key`).

Not here: the tick (clocks.py: its lateness; activity.py: its wakeups), the
items' assembly (script.py).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..trace.events import TICK_FUNCTIONS, column, select_events
from ..trace.hrtimers import hrtimer_detaches

HRTIMER_EVENTS = ("hrtimer_start", "hrtimer_cancel", "hrtimer_expire_entry")
# Events after which an hrtimer callback that ran on that CPU is over: a start
# that follows is not its restart from __run_hrtimer.
_CALLBACK_ENDS = ("softirq_entry", "cpu_idle", "sched_switch")
# The core's hrtimer_arm flags: HRTIMER_MODE_* bits.
_MODE_BITS = {"PINNED": 0x02, "SOFT": 0x04, "HARD": 0x08}


@lru_cache(maxsize=256)  # a trace spells a handful of modes, on every hrtimer_start
def mode_bits(mode) -> int:
    """The PINNED/SOFT/HARD bits of a traced mode ("ABS|PINNED|HARD"; None: none known)."""
    if mode is None:
        return 0
    return sum(_MODE_BITS.get(part, 0) for part in str(mode).split("|"))


def tick_pointers(ev) -> set:
    """Pointers of the tick's hrtimer (one per CPU), by the callback their starts and expiries name."""
    sel = select_events(ev, ("hrtimer_start", "hrtimer_expire_entry"), ("function", "hrtimer"))
    if not len(sel) or "function" not in sel:
        return set()
    tick = sel["function"].astype(str).isin(TICK_FUNCTIONS).to_numpy()
    return set(sel["hrtimer"].to_numpy(dtype=np.uint64, na_value=0)[tick].tolist())


def hrtimer_rows(run, offset, fcode, start_ts) -> tuple:
    """(rows, own_base, pointers, late, expiries): the arm and cancel items
    as script rows (ts, line, cpu, op, key, soft expiry, flags, function,
    cpu, window), the lines of the arms that are restarts from their own
    callback, the key -> pointer list, {line of an arm: its expiry's traced
    lateness}, and {line of a replayed expiry: (its hard expiry ns, its
    handler's time, its callback)} — they end idle periods the simulation
    now ends itself. ``fcode``: callback name -> code (extended here)."""
    from .ops import OP_HR_ARM, OP_HR_CANCEL

    ticks = tick_pointers(run)
    sel = select_events(run, HRTIMER_EVENTS + _CALLBACK_ENDS, ("cpu", "ts_ns", "line", "hrtimer", "function", "mode",
                                                              "expires_ns", "softexpires_ns", "now_ns"))
    event, cpu, ts, line = column(sel, "event"), column(sel, "cpu"), column(sel, "ts_ns"), column(sel, "line")
    ptr = [0 if p is None else int(p) for p in column(sel, "hrtimer")]
    function, mode = column(sel, "function", ""), column(sel, "mode")
    expires, softexp, now = column(sel, "expires_ns"), column(sel, "softexpires_ns"), column(sel, "now_ns")
    hr = [i for i, e in enumerate(event) if e in HRTIMER_EVENTS]  # the detaches are read off these alone
    detaches = {hr[j] for j in hrtimer_detaches([event[i] for i in hr], [cpu[i] for i in hr], [ptr[i] for i in hr])}
    keys, pointers, rows, late, expiries, own = {}, [], [], {}, {}, set()
    armed = {}  # pointer -> (hard expiry, line) of its last start
    seen = {}  # pointer -> timestamp of its last event
    last_entry = {}  # CPU -> pointer whose callback ran there last (a start right after it is its restart)

    def key(p):
        if p not in keys:
            keys[p] = len(pointers)
            pointers.append(p)
        return keys[p]

    def code(name):
        return fcode.setdefault(str(name), len(fcode))

    for i, e in enumerate(event):
        p, c = ptr[i], cpu[i]
        if e in _CALLBACK_ENDS or p in ticks:
            if e != "hrtimer_start":
                last_entry.pop(c, None)  # whatever callback ran there last is over
            continue
        since, seen[p] = seen.get(p), ts[i]
        if e == "hrtimer_start":
            if expires[i] is None:
                continue
            soft = softexp[i] if softexp[i] is not None else expires[i]
            fn = str(function[i])
            flags = mode_bits(mode[i])
            if last_entry.get(c) == p:
                own.add(line[i])  # __run_hrtimer's restart, on the base it ran from
            rows.append((ts[i], line[i], c, OP_HR_ARM, key(p), int(soft), flags, code(fn), c,
                         max(0, int(expires[i]) - int(soft))))
            armed[p] = (int(expires[i]), line[i])
            last_entry.pop(c, None)
        elif e == "hrtimer_cancel":
            if i not in detaches and p in keys:
                rows.append((ts[i], line[i], c, OP_HR_CANCEL, keys[p], 0, 0, 0, c, 0))
            armed.pop(p, None)
        else:  # hrtimer_expire_entry
            handler = max(int(now[i]), ts[i] - offset) if now[i] is not None else ts[i] - offset
            if p not in armed and now[i] is not None:
                # Armed without a trace: at the start or after its last event, pinned where it ran, for its
                # handler's clock reading.
                rows.append((start_ts if since is None else since + 1, line[i], c, OP_HR_ARM, key(p), int(now[i]),
                             _MODE_BITS["PINNED"], code(function[i]), c, 0))
                armed[p] = (int(now[i]), line[i])
            a = armed.pop(p, None)
            if a is not None:
                late[a[1]] = max(0, handler - a[0])
                expiries[line[i]] = (a[0], handler, str(function[i]))
            last_entry[c] = p
    return rows, own, pointers, late, expiries

