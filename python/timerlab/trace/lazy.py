"""A :class:`~timerlab.trace.Trace` over a store (:mod:`timerlab.trace.store`):
opened from the file's footer in milliseconds, its events read on first use.

``open_trace(path)`` (or ``read_ftrace(path)`` on a store) gives a
:class:`StoredTrace`: ``nr_cpus``, ``lost_events``, ``loss_markers``, ``skipped_lines``,
``event_counts()``, ``duration_ns`` and ``repr`` come from the metadata;
``events`` and ``features`` read the store once, then behave exactly as for
the text (the same DataFrame, the same feature detection).
``of(event)`` before that reads that event's rows alone;
``between(start_ns, end_ns)`` is a window of time of it, loaded on its own
(what validate replays a window at a time).
"""
from __future__ import annotations

import os

import numpy as np
import pandas as pd

from .. import _core
from .features import detect
from .losses import loss_frame, losses_within, no_losses
from .read import _LINE_COLUMNS, Trace
from .store import read_store, store_metadata

# Columns detect() may rewrite with what the whole trace shows.
_REWRITTEN = {"function", "mode", "flags", "bucket_expiry_jiffies"}


class StoredTrace(Trace):
    """A Trace whose events stay on disk until used (module doc).

    ``store_path`` is the store; ``path`` the text it was converted from
    (what reports name, and where the release may be read from)."""

    def __init__(self, store_path, meta: dict, *, kernel=None, columns=None, window=(None, None)):
        # Trace.__init__ is not called: it needs the events.
        self.store_path = os.fspath(store_path)
        self.path = meta["text_path"]
        self._meta = meta
        self._kernel = kernel
        self._events = None
        self._features = None
        self._columns = columns  # None: every column
        self._window = tuple(window)  # (start_ns, end_ns): the rows start_ns <= ts_ns < end_ns; None: open
        self.nr_cpus = int(meta["nr_cpus"])
        self.skipped_lines = int(meta["skipped_lines"])
        self.skipped_examples = list(meta["skipped_examples"])
        self.lost_events = int(meta["lost_events"])
        self.loss_markers = int(meta.get("loss_markers", 0))  # a store written before it was kept: 0
        self._losses = None

    def _load(self) -> None:
        start_ns, end_ns = self._window
        events = read_store(self.store_path, columns=self._columns, start_ns=start_ns, end_ns=end_ns)
        self._events, self._features = detect(events, self.path, source=self._meta["source"], kernel=self._kernel)

    def narrowed(self, columns) -> "StoredTrace":
        """The same trace, whose events will hold only ``columns`` (those it
        has): what a consumer that names its columns needs loaded."""
        return StoredTrace(self.store_path, self._meta, kernel=self._kernel, columns=list(columns),
                           window=self._window)

    def between(self, start_ns=None, end_ns=None, *, kernel=None) -> "StoredTrace":
        """The rows ``start_ns <= ts_ns < end_ns`` of the store (None: open
        on that side) as a trace of their own, not loaded yet: what validate
        replays one window at a time. ``kernel``: the release, when this
        stretch alone would not tell it (default: this trace's)."""
        return StoredTrace(self.store_path, self._meta, kernel=kernel or self._kernel, columns=self._columns,
                           window=(start_ns, end_ns))

    @property
    def _whole(self) -> bool:
        """Whether the metadata's counts describe these rows (no window)."""
        return self._window == (None, None)

    @property
    def events(self) -> pd.DataFrame:
        if self._events is None:
            self._load()
        return self._events

    @property
    def features(self):
        if self._features is None:
            self._load()
        return self._features

    @property
    def loaded(self) -> bool:
        """Whether the events have been read into memory."""
        return self._events is not None

    def event_counts(self) -> pd.Series:
        if self.loaded or not self._whole:
            return super().event_counts()
        names = self._meta["categories"].get("event", [])
        counts = [self._meta["event_counts"].get(n, 0) for n in names]
        index = pd.CategoricalIndex(names, categories=names, name="event")
        counts = pd.Series(counts, index=index, dtype="int64", name="count")
        return counts[counts > 0].sort_values(ascending=False, kind="stable")

    def of(self, event: str) -> pd.DataFrame:
        # Before the events are loaded, an event whose columns detect() may
        # rewrite (names, flags, a derived bucket_expiry: facts of the whole
        # trace) loads them; any other comes from the store alone, indexed
        # by its rows' positions as in ``events``.
        schema = _core.ftrace_schema()
        own = [col for _key, col, _kind, _req in schema.get(event, [])]
        if self.loaded or self._columns is not None or not self._whole \
                or event not in self._meta["event_counts"] or set(own) & _REWRITTEN:
            return super().of(event)
        positions = np.flatnonzero(read_store(self.store_path, columns=["event"])["event"] == event)
        rows = read_store(self.store_path, events=[event]).set_axis(positions)
        cols = [c for c in _LINE_COLUMNS + ["tgid", "latency_flags"] + own if c in rows.columns]
        if "payload" in rows.columns and rows["payload"].notna().any():
            cols.append("payload")
        return rows[cols]

    @property
    def losses(self):
        """Trace.losses: from the store's metadata (a store written before they were kept has none), the
        times read off the store only when there are some."""
        if self._losses is None:
            marks = self._meta.get("losses", [])
            if not marks:
                self._losses = no_losses()
            else:
                ts = read_store(self.store_path, columns=["ts_ns"])["ts_ns"].to_numpy()
                whole = loss_frame(*zip(*marks), ts)
                start_ns, end_ns = self._window
                keep = np.ones(len(ts), dtype=bool)
                if start_ns is not None:
                    keep &= ts >= start_ns
                if end_ns is not None:
                    keep &= ts < end_ns
                self._losses = whole if keep.all() else losses_within(whole, keep)
        return self._losses

    @losses.setter
    def losses(self, value) -> None:
        self._losses = value

    @property
    def duration_ns(self) -> int:
        if not self._whole:
            return super().duration_ns
        lo, hi = self._meta["ts_min_ns"], self._meta["ts_max_ns"]
        return int(hi - lo) if lo is not None else 0

    def __repr__(self) -> str:
        m = self._meta
        if not self._whole:
            start_ns, end_ns = self._window
            return f"StoredTrace({self.store_path!r}: the events {start_ns} <= ts_ns < {end_ns})"
        span = "no events"
        if m["ts_min_ns"] is not None:
            first, last = m["ts_min_ns"], m["ts_max_ns"]
            span = f"{first / 1e9:.6f} s .. {last / 1e9:.6f} s ({(last - first) / 1e9:.3f} s)"
        kinds = sum(1 for c in m["event_counts"].values() if c)
        return (f"StoredTrace({self.store_path!r}: {m['rows']} events of {kinds} kinds, "
                f"{self.nr_cpus} CPUs, {span}{self._damage()})")


def open_trace(path, *, kernel: str | None = None) -> StoredTrace:
    """The trace in store ``path`` (written by :func:`timerlab.trace.convert`
    or ``timerlab convert``), opened lazily. Raises FileNotFoundError, or
    StoreError naming the file if it is not a complete store."""
    if kernel is not None:
        from ..kernel import parse_kernel
        parse_kernel(kernel)
    name = os.fspath(path)
    return StoredTrace(name, store_metadata(name), kernel=kernel)
