"""Global timers armed before the trace began, as the hierarchy shows them.

A replay knows the timers the trace arms; the ones armed before it are
invisible — until an idle CPU reports its first global event to the
hierarchy (tmigr_cpu_idle, tmigr_cpu_new_timer_idle: ``nextevt``). Where
that event is earlier than every global timer the trace has pending on that
CPU, a timer the trace never armed is due then: the kernel's CPUs will wake
for it, and for the duty of expiring it, and run whatever else is due on
their bases (deferrable timers, say). A replay without it has no reason to
wake them then.

So each such event becomes a phantom: a global timer armed on that CPU
(add_timer_on) at the first report, placed so that its bucket is the
reported one, and deleted at the first later report that no longer shows
it before it is due (the kernel deleted or moved it). Phantoms have keys of
their own (``PHANTOM`` pointers, never a trace's) and the callback name
``PHANTOM_FUNCTION``; validate leaves them out of its comparisons.

Not here: timers armed before the trace that are not global (a CPU's local
and deferrable bases do not report to the hierarchy), and what a phantom's
callback did (nothing: its effects, if any, are the trace's own items).
"""
from __future__ import annotations

import numpy as np

from .. import _core
from .._checks import check_hz
from ..trace.events import column, expiry_detaches
from ..trace.rows import event_in, rows
from ..wheel import parse_timer_flags

PHANTOM_FUNCTION = "(armed before the trace)"
PHANTOM = 0xFFFF_FFFF_0000_0000  # + n: pointer of phantom n (a kernel pointer is never this)
KTIME_MAX = (1 << 63) - 1
_PINNED_OR_DEFERRABLE = parse_timer_flags("P|D")


def phantom_timers(ev, offset, j0, tick_ns, hz) -> list:
    """(arm_ts, arm_line, cpu, expires_jiffies, cancel_ts or None, cancel_line)
    of each global timer the hierarchy reports and the trace never armed;
    ``offset`` is the trace clock's offset from CLOCK_MONOTONIC, ``j0``
    jiffies at monotonic 0."""
    reports = event_in(ev, ("tmigr_cpu_idle", "tmigr_cpu_new_timer_idle"))
    if not reports.any():
        return []
    # A report without nextevt changes nothing.
    reports &= ev["nextevt_ns"].notna().to_numpy() if "nextevt_ns" in ev else False
    sel = rows(ev, reports | event_in(ev, ("timer_start", "timer_cancel", "timer_expire_entry", "timer_expire_exit")),
               ("event", "cpu", "ts_ns", "line", "timer", "flags", "base_cpu", "bucket_expiry_jiffies", "nextevt_ns"))
    event, cpu, ts, line = column(sel, "event"), column(sel, "cpu"), column(sel, "ts_ns"), column(sel, "line")
    timer, flags, base_cpu = column(sel, "timer"), column(sel, "flags", ""), column(sel, "base_cpu")
    bucket, nextevt = column(sel, "bucket_expiry_jiffies"), column(sel, "nextevt_ns")
    detaches = expiry_detaches(event, cpu, timer)
    local = {f: bool(parse_timer_flags(f or "") & _PINNED_OR_DEFERRABLE)  # by flags text
             for f in {f for f, e in zip(flags, event) if e == "timer_start"}}
    pending = _Pending()  # known global timers: timer -> (base CPU, bucket ns)
    out, open_ = [], {}  # phantoms; CPU -> its phantom still pending
    for i, (e, tm, nx) in enumerate(zip(event, timer, nextevt)):
        if e == "timer_start":
            pending.pop(tm)
            if not local[flags[i]] and bucket[i] is not None:
                pending.put(tm, base_cpu[i], (int(bucket[i]) - j0) * tick_ns)
        elif e == "timer_cancel":
            if i not in detaches:
                pending.pop(tm)
        elif e == "timer_expire_entry":
            pending.pop(tm)
        elif e != "timer_expire_exit" and nx is not None:
            c, t_mono, nxt = cpu[i], ts[i] - offset, int(nx)
            p = open_.get(c)
            if p is not None and p["due_ns"] <= t_mono:
                del open_[c]  # its time has come: the simulation expires it
            elif p is not None:
                if nxt > p["due_ns"]:  # reported no longer before it is due: deleted or moved
                    p["cancel"] = (ts[i], line[i])
                    del open_[c]
                continue
            # The CPU's earliest known timer last: the dearest test.
            if nxt == KTIME_MAX or nxt <= t_mono or nxt >= pending.earliest(c):
                continue
            j = nxt // tick_ns + j0
            expires = _expires_for_bucket(j, t_mono // tick_ns + j0, hz)
            if expires is not None:
                open_[c] = {"arm": (ts[i], line[i]), "cpu": c, "expires": expires, "due_ns": nxt, "cancel": None}
                out.append(open_[c])
    return [(p["arm"][0], p["arm"][1], p["cpu"], p["expires"]) + (p["cancel"] or (None, None)) for p in out]


class _Pending:
    """Known pending global timers by base CPU: the earliest bucket of one
    CPU without a scan of every CPU's timers at each hierarchy report."""

    def __init__(self):
        self.cpu_of, self.by_cpu = {}, {}  # timer -> base CPU; base CPU -> {timer: bucket ns}

    def put(self, t, cpu, bucket_ns):
        self.cpu_of[t] = cpu
        self.by_cpu.setdefault(cpu, {})[t] = bucket_ns

    def pop(self, t):
        if t in self.cpu_of:
            del self.by_cpu[self.cpu_of.pop(t)][t]

    def earliest(self, cpu) -> int:
        return min(self.by_cpu.get(cpu, {}).values(), default=KTIME_MAX)


def _expires_for_bucket(bucket_j, clk, hz):
    """The latest expiry that an enqueue on a base at ``clk`` puts in bucket
    ``bucket_j`` (the wheel rounds up to its level's granularity), or None."""
    lo = max(clk + 1, bucket_j - 4096)
    if bucket_j <= lo:
        return None
    cand = np.arange(lo, bucket_j + 1, dtype=np.uint64)
    # The core's own function: calc_wheel_index's checks and broadcasting of
    # its arguments cost four times the computation, at every report.
    _, b = _core.calc_wheel_index(cand, np.full_like(cand, clk), check_hz(hz))
    hit = cand[b == np.uint64(bucket_j)]
    return int(hit.max()) if len(hit) else None
