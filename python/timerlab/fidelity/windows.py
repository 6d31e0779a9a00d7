"""validate on traces larger than memory: windows, replayed apart.

A replay holds, besides the trace's events, its script and the simulation's
event log: some 700 bytes per traced event at its peak (11 GB for a 2 GB
text of 14.8 M events, replayed whole). So :func:`~timerlab.fidelity.validate` cuts a trace of more
than ``window_events`` events (default :data:`WINDOW_EVENTS`) into windows
of about that many events and replays each as a trace of its own, in
``workers`` processes at once where the windows can be loaded there: the
replay starts each window as it starts any trace, in the middle of things
(timers armed before it are known by their expiries only, an idle period in
progress is not counted), so each cut costs the comparisons a few timers
(the report's notes say how many windows). The windows after the first
are replayed on the first one's machine (its NUMA nodes, shown by the
trace's boot-time set-up events, HZ and release). The items are then built
from every window's comparisons together (items.py).

Where the windows come from: a trace in memory is cut at timestamps (its
windows replayed here, one after the other); a store at timestamps, each
window reading its row groups; a plain text file at line ends, each window
parsing its own byte range (trace/ranges.py); a compressed file (it cannot
be entered in the middle) or trace.dat of more than WHOLE_TEXT_BYTES of
text is first converted into a temporary store
(:func:`timerlab.trace.convert`, a row group at a time), a smaller one read
whole and cut in memory.

Not here: the comparisons (validate.py) and the items (items.py).
"""
from __future__ import annotations

import contextlib
import copy
import os
import tempfile
from dataclasses import dataclass

import numpy as np

from ..trace.losses import losses_within, stretch_starts
from ..trace.rows import rows

# Events per window: a window of 1 M events of a qemu trace replays in about
# 1 GB (two at once on two CPUs); a trace with fewer is replayed whole.
WINDOW_EVENTS = 1_000_000
# The fewest events of a window: fewer would be mostly its edges.
MIN_WINDOW_EVENTS = 10_000
# A trace file read whole into memory at most (its text: compressed files
# count at ten times their size); a larger one goes through a store.
WHOLE_TEXT_BYTES = 512 << 20


def check_window_events(window_events) -> int:
    """``window_events`` as validate takes it: None is :data:`WINDOW_EVENTS`, 0 no windows."""
    if window_events is None:
        return WINDOW_EVENTS
    if not isinstance(window_events, (int, np.integer)) or isinstance(window_events, bool) or window_events < 0:
        raise ValueError(f"window_events={window_events!r}: the events per window (a positive integer), "
                         "0 for the whole trace at once, or None for the default")
    if 0 < window_events < MIN_WINDOW_EVENTS:
        raise ValueError(f"window_events={window_events!r}: windows of fewer than {MIN_WINDOW_EVENTS:,} events would be "
                         "mostly their edges; 0 replays the whole trace at once")
    return int(window_events)


def _stored_whole(trace) -> bool:
    """Whether ``trace`` is a whole store not loaded yet (its windows load apart)."""
    return not getattr(trace, "loaded", True) and getattr(trace, "_whole", False)


@dataclass(frozen=True)
class TextFile:
    """A plain text trace to be cut into windows (or too large to read
    whole): validate reads it in byte ranges of whole lines
    (trace/ranges.py), one per window, ``rows`` its estimated events."""

    path: str
    rows: int


@dataclass(frozen=True)
class _Whole:
    trace: object

    def load(self, kernel=None):
        return self.trace


@dataclass(frozen=True)
class _Slice:
    """Rows of a trace in memory (not for another process: it would copy the trace)."""
    trace: object
    start_ns: int | None
    end_ns: int | None
    after_loss: bool = False  # starts where the ring buffer lost events

    def load(self, kernel=None):
        return window_of(self.trace, self.start_ns, self.end_ns)


@dataclass(frozen=True)
class _StoreWindow:
    """Rows start_ns <= ts_ns < end_ns of a store: loaded where it is replayed."""
    store: str
    columns: tuple | None
    start_ns: int | None
    end_ns: int | None
    after_loss: bool = False

    def load(self, kernel=None):
        from ..trace import open_trace
        whole = open_trace(self.store)
        if self.columns is not None:
            whole = whole.narrowed(self.columns)
        return whole.between(self.start_ns, self.end_ns, kernel=kernel)


@dataclass(frozen=True)
class _Range:
    range: object

    @property
    def after_loss(self) -> bool:
        return self.range.after_loss

    def load(self, kernel=None):
        from ..trace.ranges import read_range
        return read_range(self.range, kernel=kernel)


def windows_of(trace, window_events=None) -> list:
    """The windows validate replays ``trace`` (as :func:`opened` gives it)
    in: each with ``load(kernel)``, its rows as a trace of their own; one,
    the whole trace, when it has at most ``window_events`` events (None:
    :data:`WINDOW_EVENTS`; 0: always whole) and lost none. A plain text too
    large to read whole is cut at line ends, a store or a trace in memory
    at timestamps, into windows of about ``window_events`` events, and
    where the ring buffer lost events (:func:`timerlab.trace.losses.stretch_starts`):
    what a loss took (an arm, an expiry, a switch to the idle task) leaves
    the replay's state apart from the kernel's until the end, where a
    window starting there starts as the kernel is (on the 16-CPU trace
    with 50 events of CPU 13 cut out and marked, tmigr 0.46 replayed whole,
    1.0 cut there)."""
    per = check_window_events(window_events)
    if isinstance(trace, TextFile):
        from ..trace.ranges import text_ranges
        return [_Range(r) for r in text_ranges(trace.path, per or 1 << 62, MIN_WINDOW_EVENTS if per else None)]
    stored = _stored_whole(trace)
    n = int(trace._meta["rows"]) if stored else len(trace.events)
    lossy = bool(per) and (trace.loss_markers > 0)
    if not per or (n <= per and not lossy):
        return [_Whole(trace)]
    if stored:
        from ..trace.store import read_store
        ts = read_store(trace.store_path, columns=["ts_ns"])["ts_ns"].to_numpy()
    else:
        ts = trace.events["ts_ns"].to_numpy()
    k = -(-n // per)
    order = np.argsort(ts, kind="stable")
    ts = ts[order]
    by_count = np.unique(ts[(np.arange(1, k) * n) // k]).tolist()
    after_loss = set()
    if lossy:
        after_loss = set(stretch_starts(trace.losses, ts, MIN_WINDOW_EVENTS, _replayable(trace, stored, order)))
        # A cut by count next to a loss's would leave a window of a few events: the loss's stays.
        near = np.searchsorted(ts, sorted(after_loss))
        by_count = [c for c, p in zip(by_count, np.searchsorted(ts, by_count))
                    if not len(near) or np.abs(near - p).min() >= MIN_WINDOW_EVENTS]
    cuts = sorted(set(by_count) | after_loss)
    if not cuts:
        return [_Whole(trace)]
    edges = [None] + cuts + [None]
    if stored:
        columns = None if trace._columns is None else tuple(trace._columns)
        return [_StoreWindow(trace.store_path, columns, a, b, a in after_loss) for a, b in zip(edges[:-1], edges[1:])]
    return [_Slice(trace, a, b, a in after_loss) for a, b in zip(edges[:-1], edges[1:])]


def _replayable(trace, stored: bool, order):
    """usable(a, b) for stretch_starts: whether the events a .. b (positions
    in time order, ``order`` of the rows) hold every event a replay needs
    (a stretch without them is not replayed apart)."""
    from ..replay import REQUIRED_EVENTS
    if stored:
        from ..trace.store import read_store
        names = read_store(trace.store_path, columns=["event"])["event"]
    else:
        names = trace.events["event"]
    names = np.asarray(names.astype(object))[order]
    where = [np.flatnonzero(names == e) for e in REQUIRED_EVENTS]
    return lambda a, b: all(np.searchsorted(w, a) < np.searchsorted(w, b) for w in where)


def large(trace, window_events=None) -> bool:
    """Whether ``trace`` (as :func:`opened` gives it) will be cut into
    windows that load apart: a text too large to read whole, or a store of
    more than a window's events (known before the windows are cut: worker
    processes start early)."""
    per = check_window_events(window_events)
    if isinstance(trace, TextFile):
        return bool(per) and trace.rows > per
    return bool(per) and _stored_whole(trace) and int(trace._meta["rows"]) > per


def parallel(windows) -> bool:
    """Whether the windows can be replayed in other processes (they load their own rows there)."""
    return len(windows) > 1 and not any(isinstance(w, (_Whole, _Slice)) for w in windows)


def window_of(trace, start_ns, end_ns, kernel=None):
    """The rows ``start_ns <= ts_ns < end_ns`` of ``trace`` as a trace of
    their own (a store's not loaded yet; ``kernel``: its release, for a
    stretch that alone would not tell it)."""
    if (start_ns, end_ns) == (None, None):
        return trace
    if _stored_whole(trace):
        return trace.between(start_ns, end_ns, kernel=kernel)
    ev = trace.events
    ts = ev["ts_ns"].to_numpy()
    keep = np.ones(len(ts), dtype=bool)
    if start_ns is not None:
        keep &= ts >= start_ns
    if end_ns is not None:
        keep &= ts < end_ns
    part = rows(ev, keep, ev.columns)
    part.index = range(len(part))  # as a trace read on its own, and as a store's window
    view = copy.copy(trace)
    view.losses = losses_within(trace.losses, keep)
    if hasattr(view, "_events"):  # a loaded StoredTrace
        view._events = part
    else:
        view.events = part
    return view


# A trace.dat's equivalent text, as a multiple of its size: a record takes
# about half its text line (the shared v6 file: 5.2 MB, its report 9.8 MB);
# zstd- or zlib-compressed sections about a sixteenth (v7: 0.8 MB, 13.2 MB).
DAT_TEXT_PER_BYTE = {"none": 2, "zstd": 16, "zlib": 16}
# Bytes of text a line, to guess a trace.dat's events (the report texts: 129).
TEXT_BYTES_PER_EVENT = 128


def _text_bytes(name: str) -> int:
    """The size of a file's text, a compressed one's guessed at ten times its
    size, a trace.dat's from its size and its sections' compression."""
    from ..trace import dat
    from ..trace.ranges import is_plain
    size = os.path.getsize(name)
    if dat.is_trace_dat(name):
        with open(name, "rb") as f:
            algorithm = dat._algorithm(f.read(128))
        return size * DAT_TEXT_PER_BYTE.get(algorithm, 16) * (1 if is_plain(name) else 10)
    return size if is_plain(name) else size * 10


@contextlib.contextmanager
def opened(trace, window_events=None, *, read=None, convert=None):
    """``trace`` (a Trace or a path) as validate reads it: a Trace as it is;
    a store opened lazily; a plain text of more than ``window_events``
    events (or WHOLE_TEXT_BYTES) as a :class:`TextFile`, read window by
    window; a compressed file of more than WHOLE_TEXT_BYTES of text, or a
    trace.dat of more than ``window_events`` events (guessed from its
    size), converted into a temporary store (``convert``, default
    timerlab.trace.convert), removed on leaving; any other file read whole
    (``read``, default read_ftrace)."""
    if not isinstance(trace, (str, os.PathLike)):
        yield trace
        return
    from ..trace import convert as convert_trace, open_trace, read_ftrace
    from ..trace.dat import is_trace_dat
    from ..trace.ranges import estimated_rows, is_plain
    from ..trace.store import is_store
    name = os.fspath(trace)
    per = check_window_events(window_events)
    if is_store(name):
        yield open_trace(name)
        return
    plain = is_plain(name) and not is_trace_dat(name)
    rows = estimated_rows(name) if plain and per else 0
    text = _text_bytes(name) if os.path.isfile(name) else 0
    # A trace.dat cannot be entered in the middle either: more events than a
    # window, and it goes through the store, whose convert holds a row group
    # at a time.
    big = text > WHOLE_TEXT_BYTES or (per and is_trace_dat(name) and text // TEXT_BYTES_PER_EVENT > per)
    if plain and per and (rows > per or os.path.getsize(name) > WHOLE_TEXT_BYTES):
        yield TextFile(name, rows)
    elif not os.path.isfile(name) or not big or not per:
        yield (read or read_ftrace)(name)
    else:
        with tempfile.TemporaryDirectory(prefix="timerlab-validate-") as tmp:
            store = (convert or convert_trace)(name, os.path.join(tmp, "trace.parquet"))
            yield open_trace(store)
