"""How long timer callbacks run (the core's SimConfig.callback_ns): a CPU's
timer softirq takes the sum of its callbacks, so a CPU that woke for the
hierarchy's duty is still busy when the next duty holder wakes, and that one
takes the events left (tmigr_handle_remote_up takes one event per hold of the
group lock) — several CPUs share one jiffy's events, as the kernel's do.

* Simulations: one duration per callback function, ``Config(callback_ns=)``:
  a number for every function, or ``{function: ns}`` over the default,
  ``DEFAULT_NS`` (2 µs: the order of a wake_up_process or queue_work on bare
  metal; no published per-function figures — fit a machine's own with
  :func:`callback_durations_of`); hrtimer callbacks default to
  ``HRTIMER_DEFAULT_NS`` (the tick 1.5 µs, hrtimer_wakeup 0.3 µs).
* Replays: each timer instance's own traced duration (timer_expire_entry to
  timer_expire_exit), else its function's median in the trace
  (:func:`instance_durations`). Under qemu TCG they are 30-600 µs.

Not here: the rest of the softirq (its entry, the hierarchy walk: the
overhead model, config.OVERHEAD_DEFAULTS).
"""
from __future__ import annotations

import numbers

import numpy as np

from .trace.events import column
from .trace.rows import select_events

DEFAULT_NS = 2000
# hrtimer callbacks (hard interrupt context) in simulations: assumed figures
# of the order rtla timerlat's auto-analysis shows for a timer IRQ's handlers
# on bare metal (a few µs for the tick's update_process_times and scheduler
# tick; well under a µs to wake a task); a replay's are its trace's (0 when
# the trace has no hrtimer_expire_exit).
HRTIMER_DEFAULT_NS = {"tick_nohz_handler": 1500, "tick_nohz_highres_handler": 1500, "tick_sched_timer": 1500,
                      "hrtimer_wakeup": 300, "timerlat_irq": 500, "dl_task_timer": 500}


def instance_durations(ev) -> tuple[dict, dict]:
    """({line of a timer_start: ns its callback ran}, {function: median ns})
    of a trace: each expiry paired with the timer_start before it of the same
    timer, its duration from timer_expire_entry to the timer_expire_exit on
    the same CPU."""
    sel = select_events(ev, ("timer_start", "timer_expire_entry", "timer_expire_exit"),
                        ("cpu", "ts_ns", "timer", "line", "function"))
    event, cpu, ts = column(sel, "event"), column(sel, "cpu"), column(sel, "ts_ns")
    timer, line, function = column(sel, "timer"), column(sel, "line"), column(sel, "function", "")
    last_start, running, out, by_fn = {}, {}, {}, {}
    for i, e in enumerate(event):
        if e == "timer_start":
            last_start[timer[i]] = line[i]
        elif e == "timer_expire_entry":
            running[cpu[i]] = (timer[i], ts[i], last_start.pop(timer[i], None), str(function[i]))
        else:
            r = running.pop(cpu[i], None)
            if r is None or r[0] != timer[i]:
                continue
            d = ts[i] - r[1]
            by_fn.setdefault(r[3], []).append(d)
            if r[2] is not None:
                out[r[2]] = d
    return out, {f: int(np.median(v)) for f, v in by_fn.items()}


def callback_durations_of(trace) -> dict:
    """{function: median ns its callback ran} in a trace (a Trace or a path),
    for ``Config(callback_ns=...)``."""
    from .trace import read_ftrace

    if not hasattr(trace, "events"):
        trace = read_ftrace(trace)
    return instance_durations(trace.events)[1]


def check_callback_ns(value):
    """The option as given: None, a number of ns, or {function name: ns}."""
    def ok(name, v):
        if not isinstance(v, numbers.Integral) or isinstance(v, bool) or not 0 <= v <= 10**9:
            raise ValueError(f"callback_ns{name} must be an integer number of ns in [0, 1e9], got {v!r}")
        return int(v)

    if value is None:
        return None
    if isinstance(value, dict):
        for k in value:
            if not isinstance(k, str):
                raise TypeError(f"callback_ns keys must be callback function names, got {k!r}")
        return {k: ok(f"[{k!r}]", v) for k, v in value.items()}
    return ok("", value)


def per_function(value, function_names) -> list:
    """The core's list: one duration per function code."""
    if value is None or isinstance(value, dict):
        table = value or {}
        return [table.get(f, HRTIMER_DEFAULT_NS.get(f, DEFAULT_NS)) for f in function_names]
    return [value] * len(function_names)
