"""The event vocabulary shared by everything that reads or writes traces.

* the constants and helpers that real traces and the simulator's log have in
  common: ``CPU_IDLE_EXIT`` (cpu_idle's state on exit), the tick's hrtimer
  callbacks (``TICK_FUNCTIONS``), a column as a Python list (``column``), the
  detach the kernel logs before each expiry (``expiry_detaches``);
* the simulator's tracepoint log turned into the DataFrame shape of real
  traces (``events_frame``): the C++ log is rows of (ts_ns, cpu, event, 9
  value slots); the schema (from ``_core.sim_event_schema()``) says which
  slot of which event is which column. Columns, names and types match what
  :func:`timerlab.read_ftrace` gives for a real trace, so simulated and
  recorded events can be compared and concatenated.

Not here: parsing text (``read.py`` and the C++ reader), writing it
(``export.py``).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd

from .. import _core
from .rows import event_in, function_in, previous_on_cpu, values

_TIMER_FLAG_LETTERS = ((_core.TIMER_DEFERRABLE, "D"), (_core.TIMER_PINNED, "P"), (_core.TIMER_IRQSAFE, "I"))
CPU_IDLE_EXIT = 4294967295  # cpu_idle's state= when a CPU leaves idle (PWR_EVENT_EXIT as u32)
# The tick's hrtimer callback, by release (tick_sched_timer; 6.x: tick_nohz_handler, tick_nohz_highres_handler).
TICK_FUNCTIONS = ("tick_nohz_handler", "tick_sched_timer", "tick_nohz_highres_handler")
_TIMER_EVENTS = frozenset(("timer_start", "timer_cancel", "timer_expire_entry", "timer_expire_exit"))


def column(ev: pd.DataFrame, name: str, fill=None) -> list:
    """A column as a Python list, missing values as ``fill``."""
    if name not in ev:
        return [fill] * len(ev)
    a = ev[name].array
    # The same Python objects as to_numpy(dtype=object, na_value=fill), built
    # from the codes or the values and mask (the object route was a sizeable
    # share of validate's time on large traces).
    if isinstance(a, pd.Categorical):
        if not len(a.categories):
            return [fill] * len(a)
        missing = a.codes < 0
        if _mostly(missing):
            at = np.flatnonzero(~missing)
            return _filled(len(a), at, np.asarray(a.categories, dtype=object).take(a.codes[at]), fill)
        out = np.asarray(a.categories, dtype=object).take(a.codes)
    elif isinstance(a, pd.arrays.IntegerArray):
        missing = np.asarray(a.isna())
        out = a.to_numpy(dtype=a.dtype.numpy_dtype, na_value=0)
        if not missing.any():
            return out.tolist()  # the same Python ints, without an object array
        if _mostly(missing):
            at = np.flatnonzero(~missing)
            return _filled(len(a), at, out[at], fill)
        out = out.astype(object)
    elif isinstance(a, pd.arrays.NumpyExtensionArray) and a.dtype.kind in "iub":
        return a.to_numpy().tolist()
    else:
        return a.to_numpy(dtype=object, na_value=fill).tolist()
    if missing.any():
        out[missing] = np.array([fill], dtype=object)
    return out.tolist()


def _mostly(missing: np.ndarray) -> bool:
    """Whether three values in four or more are missing: then the few others are set into a list
    of ``fill`` (a column of one event among the rows of several is mostly missing)."""
    return 4 * np.count_nonzero(missing) > 3 * len(missing)


def _filled(n: int, at: np.ndarray, present: np.ndarray, fill) -> list:
    """A list of ``n`` ``fill`` with ``present`` (its Python objects) at the positions ``at``."""
    out = [fill] * n
    for i, v in zip(at.tolist(), present.tolist()):
        out[i] = v
    return out


def need_resched(ev: pd.DataFrame) -> list:
    """Per row, whether the latency flags (``dNh1.``) show need-resched set —
    their second character is not ``.`` (``N``, or one half of it, ``n`` /
    ``p``, or a lazy variant) — as a Python list; None where the text had no
    flags column (trace-cmd report without ``-l``, a trace.dat)."""
    return need_resched_array(ev).tolist()


def need_resched_array(ev: pd.DataFrame) -> np.ndarray:
    """need_resched(ev) as an object array (the replay masks it: no list of every row in between)."""
    if "latency_flags" not in ev:
        return np.full(len(ev), None, dtype=object)
    s = ev["latency_flags"].astype("category")
    cats = s.cat.categories.astype(str)
    set_ = np.array([len(f) > 1 and f[1] != "." for f in cats] + [None], dtype=object)
    return set_[s.cat.codes.to_numpy()]  # code -1 (no flags on that line) takes the last: None


# Per-row masks of what the replay's state machines react to (missing fields
# count as the text spelled nothing: an entry without state=, a stop without
# success=, ...).
def is_idle_entry(ev) -> np.ndarray:
    """cpu_idle entering a state (not its exit)."""
    return event_in(ev, ("cpu_idle",)) & (values(ev, "state", -1) != CPU_IDLE_EXIT)


def is_tick_expiry(ev) -> np.ndarray:
    """The tick's hrtimer running (hrtimer_expire_entry of a TICK_FUNCTIONS callback)."""
    return event_in(ev, ("hrtimer_expire_entry",)) & function_in(ev, TICK_FUNCTIONS)


def is_tick_stop(ev) -> np.ndarray:
    """A tick_stop that stopped the tick (a failed one, a nohz_full dependency, keeps it)."""
    return event_in(ev, ("tick_stop",)) & (values(ev, "success", -1) != 0)


def is_idle_loop_exit(ev) -> np.ndarray:
    """The CPU leaves the idle loop, which restarts a stopped tick: a switch
    to a task, or (6.8+) without one, timer_clear_idle's is_idle=0."""
    return event_in(ev, ("sched_switch", "timer_base_idle")) & (
        (values(ev, "prev_pid", -1) == 0) | (values(ev, "is_idle", -1) == 0))


def expiry_detaches(event, cpu, timer) -> set:
    """Positions of timer_cancel lines that are the detach of an expiring timer
    (the kernel logs an expiry as timer_cancel then timer_expire_entry of the
    same timer on the same CPU; a plain delete has no expire_entry after it):
    the CPU's timer event before an expire_entry is a cancel of that timer."""
    # Only the timer events are converted to arrays (a whole list of every row's name, CPU and pointer
    # cost more than the rest where they are a few of the rows).
    at = np.flatnonzero(np.fromiter(map(_TIMER_EVENTS.__contains__, event), dtype=bool, count=len(event)))
    pos = at.tolist()
    event = np.array([event[i] for i in pos], dtype=object)
    prev = previous_on_cpu(np.array([cpu[i] for i in pos], dtype=np.int64))
    k = np.flatnonzero((event == "timer_expire_entry") & (prev >= 0))
    i, j = k, prev[k]
    timer = np.array([timer[i] for i in pos], dtype=object)  # Python ==: a missing timer (None) matches another
    return set(at[j[(event[j] == "timer_cancel") & (timer[j] == timer[i])]].tolist())


def is_tick(e, function) -> bool:
    return e == "hrtimer_expire_entry" and str(function).startswith("tick_")


@lru_cache(maxsize=1)
def schema() -> list:
    return [(name, list(slots)) for name, slots in _core.sim_event_schema()]


def timer_flags_text(bits: np.ndarray) -> np.ndarray:
    """Trace-style flag letters, e.g. 'D|P|I' ('' when none)."""
    out = np.empty(len(bits), dtype=object)
    for i, b in enumerate(bits.tolist()):
        out[i] = "|".join(letter for bit, letter in _TIMER_FLAG_LETTERS if b & bit)
    return out


def hrtimer_mode_text(mode: int) -> str:
    """An hrtimer mode as the kernel's hrtimer_start prints it, e.g. 'ABS|PINNED|HARD'."""
    return "|".join(["REL" if mode & 1 else "ABS"] + [n for bit, n in ((2, "PINNED"), (4, "SOFT"), (8, "HARD"))
                                                       if mode & bit])


def _text_categorical(vals: np.ndarray, mask: np.ndarray, to_text) -> pd.Categorical:
    """pd.Categorical of to_text(value) where not masked (categories sorted,
    as pd.Categorical makes them), each distinct value spelt once: the log
    of a long run has millions of rows and a handful of flag values."""
    uniq, inverse = np.unique(vals[~mask], return_inverse=True)
    texts = [to_text(int(u)) for u in uniq]
    cats = sorted(set(texts))
    where = {t: i for i, t in enumerate(cats)}
    codes = np.full(len(vals), -1, dtype=np.int32)
    codes[~mask] = np.array([where[t] for t in texts], dtype=np.int32)[inverse]
    return pd.Categorical.from_codes(codes, categories=cats)


def events_frame(arrays: dict, function_names=(), columns=None) -> pd.DataFrame:
    """DataFrame of a raw event log: ts_ns, cpu, event, then one column per field
    (``columns``: only the fields named there, e.g. what validate compares:
    every row, a few columns instead of some forty)."""
    sch = schema()
    codes = arrays["event"].astype(np.int32)
    values = arrays["values"]
    n = len(codes)
    frame = {
        "ts_ns": arrays["ts_ns"],
        "cpu": arrays["cpu"],
        "event": pd.Categorical.from_codes(codes, categories=[name for name, _ in sch]),
    }
    wanted = None if columns is None else set(columns)
    columns: dict[str, tuple] = {}  # column -> (kind, values, mask)
    for code, (name, slots) in enumerate(sch):
        rows = np.flatnonzero(codes == code)
        if not len(rows):
            continue
        for column, kind, slot in slots:
            if wanted is not None and column not in wanted:
                continue
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
            frame[column] = _text_categorical(vals, mask, lambda v: timer_flags_text(np.array([v]))[0])
        elif kind == "hrtimer_mode":
            frame[column] = _text_categorical(vals, mask, hrtimer_mode_text)
        elif kind == "i64":
            frame[column] = pd.arrays.IntegerArray(vals.view(np.int64), mask)
        else:  # u64, ptr, hex
            frame[column] = pd.arrays.IntegerArray(vals, mask)
    tick_stop = codes == [name for name, _ in sch].index("tick_stop")
    if tick_stop.any() and (wanted is None or "dependency" in wanted):
        # The simulator stops the tick only when nothing depends on it.
        frame["dependency"] = pd.Categorical(np.where(tick_stop, "NONE", None))
    return pd.DataFrame(frame)
