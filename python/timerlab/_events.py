"""Turn the simulator's tracepoint log into the DataFrame shape of real traces.

The C++ log is rows of (ts_ns, cpu, event, 9 value slots); the schema (from
``_core.sim_event_schema()``) says which slot of which event is which column.
Columns, names and types match what :func:`timerlab.read_ftrace` gives for a
real trace, so simulated and recorded events can be compared and concatenated.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd

from . import _core

_TIMER_FLAG_LETTERS = ((_core.TIMER_DEFERRABLE, "D"), (_core.TIMER_PINNED, "P"), (_core.TIMER_IRQSAFE, "I"))


@lru_cache(maxsize=1)
def schema() -> list:
    return [(name, list(slots)) for name, slots in _core.sim_event_schema()]


def timer_flags_text(bits: np.ndarray) -> np.ndarray:
    """Trace-style flag letters, e.g. 'D|P|I' ('' when none)."""
    out = np.empty(len(bits), dtype=object)
    for i, b in enumerate(bits.tolist()):
        out[i] = "|".join(letter for bit, letter in _TIMER_FLAG_LETTERS if b & bit)
    return out


def events_frame(arrays: dict, function_names=()) -> pd.DataFrame:
    """DataFrame of a raw event log: ts_ns, cpu, event, then one column per field."""
    sch = schema()
    codes = arrays["event"].astype(np.int32)
    values = arrays["values"]
    n = len(codes)
    frame = {
        "ts_ns": arrays["ts_ns"],
        "cpu": arrays["cpu"],
        "event": pd.Categorical.from_codes(codes, categories=[name for name, _ in sch]),
    }
    columns: dict[str, tuple] = {}  # column -> (kind, values, mask)
    for code, (name, slots) in enumerate(sch):
        rows = np.flatnonzero(codes == code)
        if not len(rows):
            continue
        for column, kind, slot in slots:
            if column not in columns:
                columns[column] = (kind, np.zeros(n, dtype=np.uint64), np.ones(n, dtype=bool))
            _, vals, mask = columns[column]
            vals[rows] = values[rows, slot]
            mask[rows] = False
    for column, (kind, vals, mask) in columns.items():
        if kind == "function":
            cats = list(function_names)
            c = np.where(mask, -1, vals.astype(np.int64)).astype(np.int32)
            frame[column] = pd.Categorical.from_codes(c, categories=cats) if cats else pd.Categorical([None] * n)
        elif kind == "timer_flags":
            text = timer_flags_text(vals)
            text[mask] = None
            frame[column] = pd.Categorical(text)
        elif kind == "i64":
            frame[column] = pd.arrays.IntegerArray(vals.view(np.int64), mask)
        else:  # u64, ptr, hex
            frame[column] = pd.arrays.IntegerArray(vals, mask)
    tick_stop = codes == [name for name, _ in sch].index("tick_stop")
    if tick_stop.any():
        # The simulator stops the tick only when nothing depends on it.
        frame["dependency"] = pd.Categorical(np.where(tick_stop, "NONE", None))
    return pd.DataFrame(frame)
