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

from ..trace.events import TICK_FUNCTIONS, column
from ..trace.hrtimers import hrtimer_detaches
from ..trace.rows import event_in, previous_on_cpu, select_events, str_isin

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
    tick = str_isin(sel["function"], TICK_FUNCTIONS)
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

    sel = select_events(run, HRTIMER_EVENTS + _CALLBACK_ENDS, ("cpu", "ts_ns", "line", "hrtimer", "function", "mode",
                                                              "expires_ns", "softexpires_ns", "now_ns"))
    # The tick's pointers off the selection, which has every start and expiry (not a pass over the run).
    work, own_start, detach = _hrtimer_positions(sel, tick_pointers(sel))
    w = sel.iloc[work]
    event, cpu, ts, line = column(w, "event"), column(w, "cpu"), column(w, "ts_ns"), column(w, "line")
    ptr = column(w, "hrtimer", 0)
    function, mode = column(w, "function", ""), column(w, "mode")
    expires, softexp, now = column(w, "expires_ns"), column(w, "softexpires_ns"), column(w, "now_ns")
    own_start, detach = own_start.tolist(), detach.tolist()
    keys, pointers, rows, late, expiries, own = {}, [], [], {}, {}, set()
    armed = {}  # pointer -> (hard expiry, line) of its last start
    seen = {}  # pointer -> timestamp of its last event

    def key(p):
        k = keys.get(p)
        if k is None:
            k = keys[p] = len(pointers)
            pointers.append(p)
        return k

    # A callback's code, extending fcode: a dict of its own, str() once per name (not per start).
    codes = {}

    def code(name):
        k = codes.get(name)
        if k is None:
            k = codes[name] = fcode.setdefault(str(name), len(fcode))
        return k

    for i, (e, p, c, t) in enumerate(zip(event, ptr, cpu, ts)):
        since, seen[p] = seen.get(p), t
        if e == "hrtimer_start":
            hard = expires[i]
            if hard is None:
                continue
            soft = softexp[i] if softexp[i] is not None else hard
            if own_start[i]:
                own.add(line[i])  # __run_hrtimer's restart, on the base it ran from
            rows.append((t, line[i], c, OP_HR_ARM, key(p), int(soft), mode_bits(mode[i]), code(function[i]), c,
                         max(0, int(hard) - int(soft))))
            armed[p] = (int(hard), line[i])
        elif e == "hrtimer_cancel":
            if not detach[i] and p in keys:
                rows.append((t, line[i], c, OP_HR_CANCEL, keys[p], 0, 0, 0, c, 0))
            armed.pop(p, None)
        else:  # hrtimer_expire_entry
            handler = max(int(now[i]), t - offset) if now[i] is not None else t - offset
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
    return rows, own, pointers, late, expiries


def _hrtimer_positions(sel, ticks) -> tuple:
    """(work, own_start, detach): the positions in ``sel`` of the events of
    hrtimers other than the tick — the only ones hrtimer_rows replays — and,
    for each of them, whether it is a start that is __run_hrtimer's restart
    on the base it ran from (the CPU's last expiry, start or callback end
    before it was that timer's expiry), and whether it is a cancel that is a
    detach (hrtimer_detaches)."""
    # Masks of the event codes and NumPy columns: object arrays of every row's name and pointer (a
    # Python list first) cost more than the rest.
    cpu = sel["cpu"].to_numpy()
    ptr = (sel["hrtimer"].to_numpy(dtype=np.uint64, na_value=0) if "hrtimer" in sel
           else np.zeros(len(sel), dtype=np.uint64))
    is_hr = event_in(sel, HRTIMER_EVENTS)
    is_start = event_in(sel, ("hrtimer_start",))
    hr = np.flatnonzero(is_hr)
    detach = np.zeros(len(sel), dtype=bool)
    detach[hr[sorted(hrtimer_detaches(event_in(sel, ("hrtimer_start", "hrtimer_expire_entry"))[hr],
                                      event_in(sel, ("hrtimer_cancel",))[hr], cpu[hr], ptr[hr]))]] = True
    tick = np.isin(ptr, np.array(sorted(ticks), dtype=np.uint64))
    work = is_hr & ~tick
    has_expiry = sel["expires_ns"].notna().to_numpy() if "expires_ns" in sel else np.zeros(len(sel), dtype=bool)
    start = work & is_start & has_expiry
    expiry = work & event_in(sel, ("hrtimer_expire_entry",))
    # What ends a callback's run on its CPU (a start without an expiry is not replayed and ends nothing).
    ends = (~is_hr | (tick & ~is_start)) | start | expiry
    at = np.flatnonzero(ends)
    prev = previous_on_cpu(cpu[at])
    k = np.flatnonzero(start[at] & (prev >= 0))
    before = at[prev[k]]
    own_start = np.zeros(len(sel), dtype=bool)
    own_start[at[k][expiry[before] & (ptr[before] == ptr[at[k]])]] = True
    pos = np.flatnonzero(work)
    return pos, own_start[pos], detach[pos]
