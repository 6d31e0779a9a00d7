"""Reading ftrace text into one pandas DataFrame.

``read_ftrace(path)`` reads what tracefs' ``trace`` file or ``trace-cmd report``
printed, plain or compressed (.xz, .gz, .bz2, recognised by their magic bytes).
The parsing is done in C++ (``timerlab._core.FtraceParser``, schema in
``timerlab._core.ftrace_schema()``); this module decompresses
(:mod:`timerlab.trace.source`) on a background thread while the parser works
on the previous chunk, both without the GIL, and assembles the columns into a
DataFrame without copying them.

Columns of ``Trace.events``, one row per event line, in file order:

========== ======================================================================
ts_ns      timestamp, integer nanoseconds (int64; the text's sec.usec, exactly)
cpu        CPU that logged the event (int32)
task, pid  the task running there (categorical, int32)
event      event name, without the system (categorical)
line       1-based line number in the (decompressed) text (int64)
tgid       thread-group id, if the text has that column (Int64; <NA> for ``(-------)``)
latency_   tracefs' flags column as printed (``dNh1.``: irqs off, need-resched,
flags      hard/soft irq, preempt depth; categorical), if the text has it
           (trace-cmd report prints it with ``-l`` only)
...        one column per payload field that occurs in the file, units in the
           name (``expires_jiffies``, ``expires_ns``, ...); <NA> where an event
           does not have it. Numbers are nullable Int64/UInt64, kernel pointers
           and %x masks UInt64, strings categorical.
payload    raw payload text of events the schema does not describe (and of known
           events with an unknown key); None elsewhere. Only if such rows exist.
========== ======================================================================
"""
from __future__ import annotations

import contextlib
import inspect
import os
import queue
import threading
import warnings

import numpy as np
import pandas as pd

from .. import _core
from .dat import DatError, is_trace_dat, read_dat
from .features import Features, category_index, detect
from .losses import loss_frame, no_losses
from .source import CHUNK_BYTES as _CHUNK_BYTES, CorruptData, NotAFile, TruncatedData, open_text

_LINE_COLUMNS = ["ts_ns", "cpu", "task", "pid", "event", "line"]
# pandas >= 2.1 can skip checking the codes of a Categorical.
_FROM_CODES_VALIDATES = "validate" in inspect.signature(pd.Categorical.from_codes).parameters


class TraceFormatError(ValueError):
    """A trace that cannot be read: a malformed line (the message names the file
    and the 1-based line), or corrupt or truncated compressed data."""


class Trace:
    """A trace read by :func:`read_ftrace`.

    Attributes
    ----------
    path : str
        The file it was read from.
    events : pandas.DataFrame
        One row per event (see the module documentation for the columns).
    nr_cpus : int
        CPU count from the trace header (tracefs ``#P:N``, trace-cmd ``cpus=N``),
        else 1 + the highest CPU that logged an event.
    skipped_lines : int
        Malformed lines skipped (``strict=False`` only).
    skipped_examples : list of str
        ``"line N: reason"`` for the first few of them.
    lost_events : int
        Events the ring buffer reported lost (``CPU:N [LOST n EVENTS]`` lines).
    loss_markers : int
        How many such reports, those of a loss of unknown size
        (``[EVENTS DROPPED]``) included: the points where events were lost.
    losses : pandas.DataFrame
        Each of those points: the row of ``events`` it comes before, that
        row's ``ts_ns``, the ``cpu`` that lost events and how many
        (``lost_events``, <NA> where not said) (:mod:`timerlab.trace.losses`).
    features : Features
        The kernel features the trace shows and what the reader made of them
        (:mod:`timerlab.trace.features`): e.g. ``features.bucket_expiry`` is
        "derived" for a kernel before 6.8.
    kernel : str
        The release a replay models (``features.release``): given to
        :func:`read_ftrace`, from the file name, or from the features.
    """

    def __init__(self, path, events, nr_cpus, skipped_lines=0, skipped_examples=(), lost_events=0, *,
                 source="tracefs", kernel=None, loss_markers=0, losses=None):
        self.path = str(path)
        self.features: Features
        self.events, self.features = detect(events, path, source=source, kernel=kernel)
        self.nr_cpus = int(nr_cpus)
        self.skipped_lines = int(skipped_lines)
        self.skipped_examples = list(skipped_examples)
        self.lost_events = int(lost_events)
        self.loss_markers = int(loss_markers)
        # (rows, cpus, lost) as the reader's take() gives them
        self.losses = no_losses() if losses is None else loss_frame(*losses, self.events["ts_ns"].to_numpy())

    @property
    def kernel(self) -> str:
        return self.features.release

    def event_counts(self) -> pd.Series:
        """Number of rows per event name, most frequent first."""
        counts = self.events["event"].value_counts()
        return counts[counts > 0].rename("count")

    def of(self, event: str) -> pd.DataFrame:
        """Rows of one event with the line columns and that event's own fields only
        (the index is kept, so rows can be joined back to ``events``)."""
        names = set(self.events["event"].cat.categories)
        schema = _core.ftrace_schema()
        if event not in names and event not in schema:
            raise ValueError(f"event={event!r} is not in {self.path}; events there: {sorted(names)}")
        rows = self.events[self.events["event"] == event]
        own = [col for _key, col, _kind, _req in schema.get(event, [])]
        cols = [c for c in _LINE_COLUMNS + ["tgid", "latency_flags"] + own if c in rows.columns]
        if "payload" in rows.columns and rows["payload"].notna().any():
            cols.append("payload")
        return rows[cols]

    def to_workload(self, *, hz: int | None = None, tick: str = "simulated", jiffies: str = "auto",
                    rcu_needs_cpu="auto"):
        """This trace as a workload replaying its timer operations, tasks and
        device interrupts (:func:`timerlab.replay.to_workload`)."""
        from ..replay import to_workload
        return to_workload(self, hz=hz, tick=tick, jiffies=jiffies, rcu_needs_cpu=rcu_needs_cpu)

    def to_config(self, **overrides):
        """A Config replaying this trace on its own machine (CPUs, nodes, HZ,
        kernel, start, length); options override (:func:`timerlab.replay.to_config`)."""
        from ..replay import to_config
        return to_config(self, **overrides)

    @property
    def duration_ns(self) -> int:
        """Time from the first to the last event, in ns (0 without events)."""
        ts = self.events["ts_ns"]
        return int(ts.max() - ts.min()) if len(ts) else 0

    def __repr__(self) -> str:
        ev = self.events
        span = "no events"
        if len(ev):
            first, last = int(ev["ts_ns"].min()), int(ev["ts_ns"].max())
            span = f"{first / 1e9:.6f} s .. {last / 1e9:.6f} s ({(last - first) / 1e9:.3f} s)"
        return (f"Trace({self.path!r}: {len(ev)} events of {self.event_counts().size} kinds, "
                f"{self.nr_cpus} CPUs, {span}{self._damage()})")

    def _damage(self) -> str:
        """What the repr adds of lines skipped and events lost: a replay of such a trace is less exact."""
        said = f", {self.skipped_lines} lines skipped" if self.skipped_lines else ""
        if self.loss_markers or self.lost_events:
            said += f", events lost at {self.loss_markers} point(s) ({self.lost_events} counted)"
        return said


def read_ftrace(path, *, strict: bool = True, kernel: str | None = None, buffer: str = "",
                progress=None) -> Trace:
    """Read an ftrace text trace, or trace-cmd's binary trace.dat, into a :class:`Trace`.

    Parameters
    ----------
    path : str or os.PathLike
        tracefs ``trace`` / ``trace_pipe`` text or ``trace-cmd report`` output
        (µs or ns timestamps, with or without its sched plugin's formats), or
        a trace-cmd trace.dat (file format 6 or 7, zstd/zlib sections);
        plain, .xz, .gz or .bz2 (recognised by content, not by name). A
        trace.dat gives the rows and columns its ``trace-cmd report`` text
        gives (:mod:`timerlab.trace.dat`).
    strict : bool, keyword-only
        True (default): the first malformed line raises :class:`TraceFormatError`
        naming ``file:line`` and the problem. False: malformed lines are skipped,
        counted in ``Trace.skipped_lines``, and a warning is issued. A
        compressed file cut short counts its partial last line and the lost
        rest as skipped; corrupt compressed data is an error either way. A
        trace.dat: a record whose payload its event's columns refuse is skipped
        (``record N`` in the examples); damage to the file's structure is an
        error either way.
    kernel : str, keyword-only
        The release that recorded the trace ("6.1", "5.15.0", ...), when the
        file name does not say it; None (default): the file name or the
        trace's features tell (:func:`timerlab.trace.features.release_of`).
    buffer : str, keyword-only
        trace.dat only: the buffer (ftrace instance) to read, "" (default)
        the top one; :func:`timerlab.trace.dat.buffers` lists them.
    progress : callable, keyword-only
        Called with the number of lines parsed so far after each chunk of
        text (the CLI's progress bars); None (default): not called.

    A store written by :func:`timerlab.trace.convert` is opened lazily
    instead (:func:`timerlab.trace.open_trace`).

    Raises
    ------
    FileNotFoundError
        No such file.
    TraceFormatError
        A malformed line (strict): one that does not parse, a last line
        without its newline (a cut file), an over-long line, CR-only line
        endings, a CPU beyond the header's count; corrupt compressed data, or
        truncated data (strict); a FIFO, a device or ``trace_pipe`` (they
        need not end); a truncated or corrupt trace.dat (naming the section
        and the byte offset).
    """
    if not isinstance(strict, bool):
        raise TypeError(f"strict must be True or False, not {strict!r}")
    if not isinstance(buffer, str):
        raise TypeError(f"buffer must be a str (an instance name, \"\" for the top one), not {buffer!r}")
    if kernel is not None:
        from ..kernel import parse_kernel
        parse_kernel(kernel)
    name = os.fspath(path)
    if os.path.isfile(name) and is_trace_dat(name):
        return _read_dat(name, strict=strict, kernel=kernel, buffer=buffer)
    if buffer:
        raise ValueError(f"buffer={buffer!r}: {name} is not a trace.dat (text traces have one buffer)")
    from .lazy import open_trace
    from .store import is_store
    if is_store(name):  # a store written by `timerlab convert`: opened lazily
        return open_trace(name, kernel=kernel)
    each = None if progress is None else (lambda parser: progress(parser.lines))
    parser, skipped, examples = _parse(name, strict, each, stacklevel=3)
    cols = parser.take()
    return Trace(name, _frame(cols), parser.nr_cpus, skipped, examples,
                 parser.lost_events, source="trace-cmd report" if parser.trace_cmd_header else "tracefs",
                 kernel=kernel, loss_markers=parser.loss_markers, losses=cols["losses"])


def _parse(name: str, strict: bool, each=None, stacklevel: int = 2):
    """(parser after finish(), skipped lines, their examples): the text of file
    `name` fed to an FtraceParser, the errors raised as read_ftrace documents.
    ``each(parser)``, if given, runs after every chunk (the store takes the
    rows parsed so far, so that a trace larger than memory never is whole)."""
    parser = _core.FtraceParser(strict=strict)
    cut = None
    try:
        with contextlib.closing(_chunks_in_background(name)) as chunks:
            for chunk in chunks:
                parser.feed(chunk)  # C++, without the GIL
                if each is not None:
                    each(parser)
                if parser.error_line:
                    break
    except TruncatedData as e:
        cut = e
    except (CorruptData, NotAFile) as e:
        raise TraceFormatError(f"{name}: {e}") from e
    if cut is not None and strict and not parser.error_line:
        raise TraceFormatError(f"{name}:{parser.lines + 1}: truncated {cut.kind} data: {cut.reason}; the text "
                               f"stops after {cut.text_bytes} bytes, in or after line {parser.lines + 1}") from cut
    parser.finish()
    if parser.error_line:
        raise TraceFormatError(f"{name}:{parser.error_line}: {parser.error_reason}")
    skipped, examples = parser.skipped_lines, list(parser.skipped_examples)
    if cut is not None:  # lenient: the rest of the text is lost, and counted
        skipped += 1
        examples.append(f"after line {parser.lines}: truncated {cut.kind} data, the rest is lost ({cut.reason})")
    if skipped:
        warnings.warn(f"{name}: skipped {skipped} malformed lines, e.g. {examples[0]}", stacklevel=stacklevel)
    return parser, skipped, examples


def _read_dat(name: str, *, strict: bool, kernel, buffer: str) -> Trace:
    parser, skipped, examples = _parse_dat(name, strict, buffer, stacklevel=4)
    cols = parser.take()
    return Trace(name, _frame(cols), parser.nr_cpus, skipped, examples, parser.lost_events,
                 source="trace-cmd report", kernel=kernel, loss_markers=parser.loss_markers, losses=cols["losses"])


def _parse_dat(name: str, strict: bool, buffer: str = "", stacklevel: int = 2, each=None, rows: int = 0):
    """(parser, skipped records, their examples) of a trace.dat, as _parse gives them for text;
    ``each(parser)`` as read_dat calls it."""
    try:
        parser, _dat = read_dat(name, buffer=buffer, strict=strict, each=each, rows=rows)
    except DatError as e:
        raise TraceFormatError(f"{name}: {e}") from e
    if parser.error_line:
        raise TraceFormatError(f"{name}: record {parser.error_line}: {parser.error_reason}")
    skipped, examples = parser.skipped_lines, [e.replace("line ", "record ", 1) for e in parser.skipped_examples]
    if skipped:
        warnings.warn(f"{name}: skipped {skipped} records, e.g. {examples[0]}", stacklevel=stacklevel)
    return parser, skipped, examples


def _open(name: str):
    """(chunks of the file's text, "plain" or its compression): source.open_text."""
    return open_text(name, _CHUNK_BYTES)


def _chunks_in_background(name: str):
    """Yield the text of file `name` in chunks, read (and decompressed) by a helper
    thread one chunk ahead, so that decompression and parsing overlap on two cores."""
    source, _kind = _open(name)
    chunks: queue.Queue = queue.Queue(maxsize=2)
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                chunks.put(item, timeout=0.1)
                return True
            except queue.Full:
                pass
        return False

    def read() -> None:
        try:
            for chunk in source:
                if not put(chunk):
                    return
            put(b"")
        except BaseException as e:  # handed to the consumer, which would otherwise wait forever
            put(e)
        finally:
            source.close()

    reader = threading.Thread(target=read, name="timerlab-read-ftrace", daemon=True)
    reader.start()
    try:
        while True:
            item = chunks.get()
            if isinstance(item, BaseException):
                raise item
            if not item:
                return
            yield item
    finally:
        stop.set()
        reader.join()


def _frame(cols: dict) -> pd.DataFrame:
    """The DataFrame of the columns FtraceParser.take() returned. NumPy arrays and
    IntegerArrays wrap the C++ buffers without copying; Categoricals may narrow
    their int32 codes to a smaller dtype."""
    def categorical(codes, categories):
        # The reader's codes are in range by construction: checking them
        # again is a pass over every row of every string column.
        if _FROM_CODES_VALIDATES:
            return pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(category_index(categories)),
                                             validate=False)
        return pd.Categorical.from_codes(codes, categories=category_index(categories))

    data = {
        "ts_ns": cols["ts_ns"],
        "cpu": cols["cpu"],
        "task": categorical(*cols["task"]),
        "pid": cols["pid"],
        "event": categorical(*cols["event"]),
        "line": cols["line"],
    }
    for name, storage, values, missing, categories in cols["fields"]:
        if storage == "category":
            data[name] = categorical(values, categories)
        else:
            data[name] = pd.arrays.IntegerArray(values, missing.view(np.bool_), copy=False)
    rows, texts = cols["payload"]
    if len(rows):
        payload = np.full(len(cols["ts_ns"]), None, dtype=object)
        payload[rows] = texts
        data["payload"] = pd.Series(payload, dtype=object, copy=False)
    return pd.DataFrame(data, copy=False)
