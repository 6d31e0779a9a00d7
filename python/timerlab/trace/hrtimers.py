"""A trace's hrtimers as a table: one row per armed instance, from its
hrtimer_start to its end, like a run's ``res.hrtimers`` — with the trace's
own latency of each expiry (its handler's clock reading, hrtimer_expire_entry
``now=``, minus its hard expiry).

Both trace forms are read (pre-9-kernels.md §1.2): with ``was_armed=`` and no
cancel on a restart (2026 kernels and backports), or a cancel logged before
every restart and every expiry (older kernels), which is no end of its own.
hrtimer events carry no CPU of their base: where a timer expired is the
``[CPU]`` of its hrtimer_expire_entry. An expiry whose start precedes the
trace is an instance armed before it (``armed_ts_ns`` missing).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .events import TICK_FUNCTIONS, column
from .rows import event_in, previous_on_cpu, select_events, str_isin

__all__ = ["hrtimer_table", "hrtimer_detaches"]

_EVENTS = ("hrtimer_start", "hrtimer_cancel", "hrtimer_expire_entry")


def hrtimer_detaches(start_or_expiry, cancel, cpu, ptr) -> set:
    """Positions of hrtimer_cancel lines that are no removal: before the 2026
    change the kernel logged a cancel ahead of every restart and expiry — the
    next hrtimer event on that CPU is then the same timer's start or expiry.
    ``start_or_expiry`` and ``cancel``: masks of the rows' events (read off
    the event codes: a string compare per row cost more)."""
    ptr = np.asarray(ptr, dtype=np.uint64)
    prev = previous_on_cpu(cpu)
    i = np.flatnonzero(start_or_expiry & (prev >= 0))
    j = prev[i]
    return set(j[cancel[j] & (ptr[j] == ptr[i])].tolist())


def hrtimer_table(trace, *, tick: bool = False) -> pd.DataFrame:
    """One row per hrtimer instance of ``trace`` (a Trace or its events):
    hrtimer (pointer), function, mode, cpu_armed, armed_ts_ns, softexpires_ns,
    expires_ns (CLOCK_MONOTONIC), outcome ("expired", "cancelled", "rearmed",
    "pending"), end_ts_ns, cpu_expired, now_ns (the handler's clock reading),
    latency_ns (now - hard expiry), line (of its end, or its start).
    ``tick=False`` leaves out the tick's own hrtimer."""
    ev = trace.events if hasattr(trace, "events") else trace
    sel = select_events(ev, _EVENTS, ("cpu", "ts_ns", "line", "hrtimer", "function", "mode", "expires_ns",
                                      "softexpires_ns", "now_ns"))
    ptr = (sel["hrtimer"].to_numpy(dtype=np.uint64, na_value=0) if "hrtimer" in sel
           else np.zeros(len(sel), dtype=np.uint64))
    detach = np.zeros(len(sel), dtype=bool)
    detach[sorted(hrtimer_detaches(event_in(sel, ("hrtimer_start", "hrtimer_expire_entry")),
                                    event_in(sel, ("hrtimer_cancel",)), sel["cpu"].to_numpy(), ptr))] = True
    keep = np.arange(len(sel))
    if not tick and "function" in sel:  # leave out every event of a pointer the tick's callback names
        ticks = np.unique(ptr[str_isin(sel["function"], TICK_FUNCTIONS)])
        keep = np.flatnonzero(~np.isin(ptr, ticks))
    sel = sel.iloc[keep]
    event, cpu, ts, line = column(sel, "event"), column(sel, "cpu"), column(sel, "ts_ns"), column(sel, "line")
    ptr, detach = ptr[keep].tolist(), detach[keep].tolist()
    function, mode = column(sel, "function", None), column(sel, "mode")
    expires, softexp, now = column(sel, "expires_ns"), column(sel, "softexpires_ns"), column(sel, "now_ns")
    # Rows as tuples in the columns' order; an open instance is its first 7
    # columns and its start's line (dicts per row cost more than the loop).
    rows, open_ = [], {}

    def close(p, outcome, i, c_exp=None, now_=None):
        r = open_.pop(p, None)
        if r is not None:
            rows.append(r[:7] + (outcome, ts[i], c_exp, now_, line[i]))

    for i, e in enumerate(event):
        p = ptr[i]
        if e == "hrtimer_start":
            close(p, "rearmed", i)
            soft = softexp[i] if softexp[i] is not None else expires[i]
            open_[p] = (p, function[i], mode[i], cpu[i], ts[i], soft, expires[i], line[i])
        elif e == "hrtimer_cancel":
            if not detach[i]:
                close(p, "cancelled", i)
        else:
            if p not in open_:  # armed before the trace
                open_[p] = (p, function[i], None, None, None, None, None, line[i])
            close(p, "expired", i, cpu[i], now[i])
    rows += [r[:7] + ("pending", None, None, None, r[7]) for r in open_.values()]
    return _table(rows)


_COLUMNS = ("hrtimer", "function", "mode", "cpu_armed", "armed_ts_ns", "softexpires_ns", "expires_ns", "outcome",
            "end_ts_ns", "cpu_expired", "now_ns", "line")
_INTS = ("cpu_armed", "armed_ts_ns", "softexpires_ns", "expires_ns", "end_ts_ns", "cpu_expired", "now_ns")
_TEXTS = ("function", "mode", "outcome")


def _table(rows: list) -> pd.DataFrame:
    """hrtimer_table's frame of its rows (tuples of _COLUMNS), sorted by line."""
    if not rows:  # pandas' own empty frame: object columns
        cols = dict(pd.DataFrame(rows, columns=list(_COLUMNS)).items())
    else:
        # Each column as pandas infers it from the tuples, without a frame of them (its string
        # columns, inferred as Arrow strings, were converted back to objects for the Categoricals).
        cols = {c: _inferred(v, c in _TEXTS) for c, v in zip(_COLUMNS, zip(*rows))}
    # The Categoricals of object Series: their categories stay objects (of an array, str).
    out = {c: pd.array(v, dtype="Int64") if c in _INTS else pd.Categorical(pd.Series(v, dtype=object))
           if c in _TEXTS else v for c, v in cols.items()}
    out["hrtimer"] = np.asarray(out["hrtimer"]).astype(np.uint64)
    out["latency_ns"] = out["now_ns"] - out["expires_ns"]
    return pd.DataFrame(out).sort_values("line", kind="stable").reset_index(drop=True)


def _inferred(values: tuple, text: bool) -> np.ndarray:
    """A column of Python values as pandas infers it from rows of tuples:
    integers with a missing value as float64 (NaN: exact below 2**53, as
    there), integers alone as int64 (uint64 beyond), missing alone or text
    as objects."""
    if text or all(v is None for v in values):
        return np.array(values, dtype=object)
    if any(v is None for v in values):
        return np.array(values, dtype=np.float64)
    return np.array(values)
