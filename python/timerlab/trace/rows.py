"""Selecting and ordering a trace's rows fast: the replay and validate read a
few events and a few columns of traces with millions of rows, so they pick
rows by the event column's Categorical codes (not a string compare per
row), take only the columns they read (a boolean selection copies all of
them), and follow each CPU's rows through a stable sort by CPU instead of a
groupby. Every helper gives exactly what its pandas spelling gives.

Not here: a column as a Python list (``events.column``), the event
vocabulary (``events``).
"""
from __future__ import annotations

from itertools import chain

import numpy as np
import pandas as pd

_FEW_EVENTS = 8  # event_in: up to this many names, a compare per name


def event_rows(ev: pd.DataFrame, names) -> np.ndarray:
    """Positions of the rows of the events ``names``, in order."""
    return np.flatnonzero(event_in(ev, names))


def event_in(ev, names) -> np.ndarray:
    """Per row, whether its event is one of ``names``. Read off the
    Categorical's codes: a string compare of every row was a sizeable share
    of validate's time on large traces, and so was ``np.isin`` of the codes
    (it widens them first). A few names are compared code by code (a compare
    of the narrow codes is some forty times faster than the table lookup
    that more names take)."""
    e = ev["event"]
    if not isinstance(e.dtype, pd.CategoricalDtype):
        return e.isin(names).to_numpy(dtype=bool)
    cats = e.dtype.categories
    codes = e.array.codes  # the Categorical's own array (.cat.codes builds a Series of it)
    wanted = [cats.get_loc(n) for n in dict.fromkeys(names) if n in cats]
    if len(wanted) <= _FEW_EVENTS:
        out = np.zeros(len(codes), dtype=bool)
        for k in wanted:
            out |= codes == k  # a missing event (code -1) is none of them
        return out
    table = np.zeros(len(cats) + 1, dtype=bool)  # the last: code -1, a missing event
    table[wanted] = True
    return table.take(codes)  # take: no widening of the codes to a fancy index first


def select_events(ev: pd.DataFrame, names, columns) -> pd.DataFrame:
    """``ev[ev["event"].isin(names)]`` with only ``columns`` (those ``ev``
    has): a boolean selection copies every column of the trace, some sixty,
    where a reader wants a few."""
    return rows(ev, event_rows(ev, names), dict.fromkeys(("event",) + tuple(columns)))


def rows(ev, where, names) -> pd.DataFrame:
    """The rows ``where`` (a mask, or positions), with only the columns
    ``names`` (those ``ev`` has; column() fills the others): a selection of
    the whole frame copies some forty columns to read a few."""
    where = np.flatnonzero(where) if where.dtype == bool else where
    names = [n for n in names if n in ev]
    if not ev.columns.is_unique:
        return ev.iloc[where, ev.columns.get_indexer(names)]  # which raises, as pandas does
    # Each column's own take, into a frame that keeps them (iloc's path through
    # the block manager cost as much again on a large selection).
    return pd.DataFrame({n: ev[n].array.take(where) for n in names}, index=ev.index[where], copy=False)


def values(ev, name, na) -> np.ndarray:
    """A column of integers as an int64 array, missing values (or a missing column) as ``na``."""
    if name not in ev:
        return np.full(len(ev), na, dtype=np.int64)
    return ev[name].to_numpy(dtype=np.int64, na_value=na)


def str_isin(s: pd.Series, names) -> np.ndarray:
    """``s.astype(str).isin(names)`` as a NumPy mask (a missing value is "nan")."""
    names = set(names)
    return str_test(s, lambda v: v in names)


def str_test(s: pd.Series, pred) -> np.ndarray:
    """``pred(str(value))`` of each row as a NumPy mask, a missing value
    tested as "nan"; for a Categorical once per category: a string per row
    cost more than the rest."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        hit = np.array([bool(pred(c)) for c in s.dtype.categories.astype(str)] + [bool(pred("nan"))], dtype=bool)
        return hit[s.array.codes]  # code -1 (missing) takes the last
    return np.array([bool(pred(str(v))) for v in s.to_numpy(dtype=object, na_value="nan")], dtype=bool)


def function_in(ev, names) -> np.ndarray:
    """Per row, whether ``str(function)`` is one of ``names`` (False where the trace has no function column)."""
    return str_isin(ev["function"], names) if "function" in ev else np.zeros(len(ev), dtype=bool)


def cpu_order(cpu) -> np.ndarray:
    """The positions of the rows by CPU, each CPU's in their order."""
    cpu = np.asarray(cpu)
    if len(cpu) and cpu.min() >= 0 and cpu.max() < 1 << 16:
        cpu = cpu.astype(np.uint16)  # a stable sort of 16-bit keys is a radix sort
    return np.argsort(cpu, kind="stable")


def previous_on_cpu(cpu) -> np.ndarray:
    """Per row, the position of the row before it with the same CPU (-1: none)."""
    cpu = np.asarray(cpu)
    order = cpu_order(cpu)
    prev = np.full(len(cpu), -1, dtype=np.int64)
    if len(cpu):
        # In CPU order, each row's predecessor, but at each CPU's first row: one scatter of every row.
        cs = cpu[order]
        before = np.empty(len(cpu), dtype=np.int64)
        before[0] = -1
        before[1:] = order[:-1]
        before[1:][cs[1:] != cs[:-1]] = -1
        prev[order] = before
    return prev


def previous_flag_on_cpu(cpu: np.ndarray, flag: np.ndarray, first: bool) -> np.ndarray:
    """Per row, ``flag`` of the previous row of the same CPU (``first`` for
    a CPU's first row). The replay's state machines keep per-CPU state:
    rows that cannot change it, given the row before them on their CPU, are
    left out of their loops."""
    prev = previous_on_cpu(cpu)
    return np.where(prev >= 0, flag[prev], first)


def latest_on_cpu(cpu: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Per row (in time order), the last ``value`` >= 0 of its CPU at or
    before it, -1 where none: a per-CPU state that some events set and the
    others keep."""
    order = cpu_order(cpu)
    c, v = cpu[order], value[order]
    out = np.empty_like(v)
    if not len(c):
        return out
    n = np.arange(len(c))
    first = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])  # where each CPU's rows begin
    start = np.repeat(first, np.diff(np.r_[first, len(c)]))
    last = np.maximum.accumulate(np.where(v >= 0, n, -1))
    out[order] = np.where(last >= start, v[last], -1)
    return out


def rows_frame(rows: list, columns) -> pd.DataFrame:
    """``pd.DataFrame(rows, columns=columns)`` of a list of tuples, the same
    frame. When every value is a Python int within int64 (a script's rows)
    the columns are int64 straight away: pandas' inference, object by
    object, was most of the cost of a large table; any other mix (None,
    floats, bools, NumPy scalars, larger ints) is left to it."""
    # The types are checked on the tuples themselves (an object array of
    # every value cost as much as the conversion); the values are read as
    # one stream (np.array of the tuples took twice as long).
    k = len(columns)
    if rows and set(map(len, rows)) == {k} and set(map(type, chain.from_iterable(rows))) == {int}:
        try:
            ints = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=len(rows) * k)
        except OverflowError:  # beyond int64
            pass
        else:
            return pd.DataFrame(ints.reshape(len(rows), k), columns=columns)
    return pd.DataFrame(rows, columns=columns)
