"""Where a trace's ring buffer lost events, as ``Trace.losses`` gives it.

A per-CPU ring buffer that fills drops events and says so: tracefs prints
``CPU:N [LOST n EVENTS]``, trace-cmd ``CPU:N [n EVENTS DROPPED]`` (or
``[EVENTS DROPPED]`` when the page did not keep the count), before the
first event it kept after the loss. The readers note each one with the
row it comes before; here that becomes a table:

=========== =============================================================
row         the position in ``Trace.events`` of the first row after the loss
ts_ns       that row's time (<NA> for a loss after the last row)
cpu         the CPU whose buffer lost the events
lost_events how many, <NA> where the marker does not say
=========== =============================================================

Why it matters: what was lost (an arm, an expiry, a switch to the idle
task) leaves a replay's state apart from the kernel's from there on, so
validate replays the stretch after a loss afresh (fidelity/windows.py).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

COLUMNS = ["row", "ts_ns", "cpu", "lost_events"]


def loss_frame(rows, cpus, lost, ts_ns) -> pd.DataFrame:
    """The table of the losses before ``rows`` (positions into the events,
    whose times are ``ts_ns``), on ``cpus``, of ``lost`` events (-1: not said)."""
    rows = np.asarray(rows, dtype=np.int64)
    ts_ns = np.asarray(ts_ns)
    inside = rows < len(ts_ns)
    ts = np.where(inside, ts_ns[np.minimum(rows, max(len(ts_ns) - 1, 0))] if len(ts_ns) else 0, 0)
    lost = np.asarray(lost, dtype=np.int64)
    return pd.DataFrame({
        "row": rows,
        "ts_ns": pd.arrays.IntegerArray(ts.astype(np.int64), ~inside),
        "cpu": np.asarray(cpus, dtype=np.int32),
        "lost_events": pd.arrays.IntegerArray(np.maximum(lost, 0), lost < 0),
    }, columns=COLUMNS)


def no_losses() -> pd.DataFrame:
    return loss_frame([], [], [], [])


def losses_within(losses: pd.DataFrame, keep: np.ndarray) -> pd.DataFrame:
    """The losses of the rows ``keep`` (a mask over the events) selects, as
    a trace of those rows alone has them: a loss counts where its row is
    kept, at that row's new position."""
    if not len(losses):
        return losses
    kept = np.flatnonzero(keep)
    rows = losses["row"].to_numpy()
    inside = rows < len(keep)
    at = inside & keep[np.minimum(rows, max(len(keep) - 1, 0))] if len(keep) else inside
    part = losses[at].copy()
    part["row"] = np.searchsorted(kept, part["row"].to_numpy())
    return part.reset_index(drop=True)


def stretch_starts(losses: pd.DataFrame, ts_sorted: np.ndarray, min_events: int, usable=None) -> list:
    """Times at which a replay should start afresh: each loss's, but of a
    burst of losses less than ``min_events`` events apart only the last's
    (a replay of a few events would be mostly its edges), and only where
    the stretches before and after are ``usable(start, end)`` (positions
    into ``ts_sorted``, every event's time, sorted; default: at least
    ``min_events`` events). A loss near the start or the end stays inside
    the replay."""
    usable = usable or (lambda a, b: b - a >= min_events)
    ts = losses["ts_ns"].dropna().to_numpy(dtype=np.int64)
    at = np.searchsorted(ts_sorted, np.unique(ts))  # events before each loss
    last = np.r_[at[1:] - at[:-1] >= min_events, True] if len(at) else at.astype(bool)
    keep = []
    for p in at[last & (at > 0)].tolist():
        if usable(keep[-1] if keep else 0, p):
            keep.append(p)
    while keep and not usable(keep[-1], len(ts_sorted)):
        keep.pop()
    return [int(ts_sorted[p]) for p in keep]
