"""Writing a simulated run as ftrace text: ``Result.to_ftrace(path)``.

The output is what tracefs' ``trace`` file prints for the same tracepoints
(include/trace/events/timer.h, timer_migration.h, power.h, sched.h, ipi.h),
so that :func:`timerlab.read_ftrace`, Perfetto's ftrace text importer and
scripts written for real traces read a simulated run like a recorded one::

    # tracer: nop
    #
    # entries-in-buffer/entries-written: 1210/1210   #P:8
    #
    #                                _-----=> irqs-off/BH-disabled
    ...
    #           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
    #              | |         |   |||||     |         |
              <idle>-0       [003] d..1.     0.005106: cpu_idle: state=4294967295 cpu_id=3
              <idle>-0       [003] d..2.     0.005106: sched_wakeup: comm=task3 pid=3 prio=120 target_cpu=003
              <idle>-0       [003] dN.2.     0.005108: tmigr_cpu_active: cpu=3 parent=0000000000000001 wakeup=...
               sim/3-1000003 [003] d..1.     0.005108: timer_start: timer=0000000000000012 function=...

Line layout (the kernel's ``%16s-%-7d [%03d] %s %5lu.%06lu: %s: %s``):
task name right-aligned in 16 columns, ``-pid``, ``[cpu]``, a 5-character
irq-flags column, the timestamp as seconds.microseconds (tracefs' default:
the simulator's ns are truncated to µs), the event name and its payload in the
kernel's TP_printk format, key for key (see ``_PAYLOADS`` below).

What the simulator does not know is filled in plausibly, the same way on every
run (the file is a deterministic function of the Result):

* task on the line: ``<idle>-0`` while the CPU runs its idle task, from the
  first event of its way into idle (tmigr_group_set_cpu_inactive,
  tmigr_cpu_idle, timer_base_idle is_idle=1, tick_stop, cpu_idle) through the
  interrupts and softirqs it serves while idle, to its way out
  (timer_base_idle is_idle=0, tmigr_cpu_active, tmigr_group_set_cpu_active);
  a timer_start outside a timer callback also ends it (a task armed it).
  A CPU's events before its first idle entry (boot) are not idle. An
  idle period left with the tick running logs no way out, so its idle context
  lasts to that next timer_start or the next idle entry. Every other event is
  put on ``sim/<cpu>-<1000000 + cpu>``, one stand-in task per CPU (the
  simulator logs no task switches); its pids stay clear of the simulated
  tasks' pids (their index, shown by sched_wakeup).
* irq-flags: one typical value per event, taken from real 6.12 traces
  (e.g. ``d..1.`` for timer_start, ``..s1.`` for an expiry in softirq).
* kernel pointers (timer, group, parent, child): the simulator's opaque ids
  as 16 hex digits, as the kernel prints hashed ``%p`` (NULL is
  ``0000000000000000``, as in real tmigr_update_events lines).
* sched_wakeup: ``comm=task<pid>`` and ``prio=120``.
* ipi_send_cpu: ``callsite``/``callback`` name the kernel path (without the
  ``+off/size`` a ``%pS`` of a real kernel adds): ``ttwu_queue_wakelist`` /
  ``generic_smp_call_function_single_interrupt`` right after a sched_wakeup
  of a task on the target CPU, else ``wake_up_nohz_cpu`` / ``0x0`` (a new
  timer for an idle CPU).
* tick_stop: ``dependency=`` from the Result's ``dependency`` column
  (``NONE``: the simulator stops the tick only when nothing depends on it).

Written as the Result has them, which a given kernel may print differently:
event names as the simulator logs them (``tmigr_cpu_online``, which newer
trees call ``tmigr_cpu_available``); tmigr_connect_* without the
``capacity=`` of the newest kernels (as 6.12 prints them); timer_start always
with ``bucket_expiry=`` (6.8+) and timer_expire_entry with ``baseclk=``,
whatever ``Config(kernel=)`` says. Callback names with whitespace are written
with '_' (with a warning): a space would split the payload token. Rows of an
event without a format here are left out, with a warning, rather than
written in a form the reader would reject.

Output is plain text, or compressed when the path ends in ``.gz``, ``.xz`` or
``.bz2``. The text is built column-wise with NumPy's string ufuncs, a block
of rows at a time, so a run of a million events is written in seconds.
"""
from __future__ import annotations

import bz2
import gzip
import lzma
import os
import re
import warnings

import numpy as np
import pandas as pd

try:
    from numpy.dtypes import StringDType
except ImportError:  # numpy < 2: no variable-width strings, no np.strings
    StringDType = None

__all__ = ["to_ftrace", "SIM_TASK_PID_BASE"]

_S = StringDType() if StringDType is not None else None
# Rows formatted at a time: bounds the memory the text of a long run takes.
_BLOCK_ROWS = 1 << 18
# pid of the stand-in task of CPU c: SIM_TASK_PID_BASE + c (below pid_max).
SIM_TASK_PID_BASE = 1_000_000
_CPU_IDLE_EXIT = 4294967295

_HEADER = """\
# tracer: nop
#
# entries-in-buffer/entries-written: {n}/{n}   #P:{cpus}
#
#                                _-----=> irqs-off/BH-disabled
#                               / _----=> need-resched
#                              | / _---=> hardirq/softirq
#                              || / _--=> preempt-depth
#                              ||| / _-=> migrate-disable
#                              |||| /     delay
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
"""

# How a value is printed: the kernel's conversion for it.
_DEC = "dec"  # %d, %u, %lu, %llu (the column's own sign)
_PTR = "ptr"  # %p: 16 hex digits
_HEX = "hex"  # %0x / %x: hex without leading zeros
_STR = "str"  # %s, %ps: a categorical column's text
_CPU3 = "cpu3"  # %03d

# event -> (irq-flags, payload pieces). A piece is (text before the value,
# column, conversion); the payload is the pieces joined. Columns starting
# with '_' are made up by _derived_columns.
_TMIGR_GROUP_STATE = [("group=", "group", _PTR), (" lvl=", "lvl", _DEC), (" numa=", "numa", _DEC),
                      (" active=", "active", _HEX), (" migrator=", "migrator", _HEX),
                      (" parent=", "parent", _PTR), (" childmask=", "childmask", _HEX)]
_TMIGR_CPU = [("cpu=", "cpu_id", _DEC), (" parent=", "parent", _PTR), (" wakeup=", "wakeup_ns", _DEC)]
_TMIGR_CPU_IDLE = [("cpu=", "cpu_id", _DEC), (" parent=", "parent", _PTR), (" nextevt=", "nextevt_ns", _DEC),
                   (" wakeup=", "wakeup_ns", _DEC)]
_TMIGR_CONNECT = [("groupmask=", "groupmask", _HEX), (" parent=", "parent", _PTR), (" lvl=", "lvl", _DEC),
                  (" numa=", "numa", _DEC), (" num_children=", "num_children", _DEC)]
_PAYLOADS: dict[str, tuple[str, list]] = {
    # include/trace/events/timer.h
    "timer_start": ("d..1.", [("timer=", "timer", _PTR), (" function=", "function", _STR),
                              (" expires=", "expires_jiffies", _DEC), (" [timeout=", "timeout_jiffies", _DEC),
                              ("] bucket_expiry=", "bucket_expiry_jiffies", _DEC), (" cpu=", "base_cpu", _DEC),
                              (" idx=", "idx", _DEC), (" flags=", "flags", _STR)]),
    "timer_cancel": ("d..1.", [("timer=", "timer", _PTR)]),
    "timer_expire_entry": ("..s1.", [("timer=", "timer", _PTR), (" function=", "function", _STR),
                                     (" now=", "now_jiffies", _DEC), (" baseclk=", "baseclk_jiffies", _DEC)]),
    "timer_expire_exit": ("..s1.", [("timer=", "timer", _PTR)]),
    "timer_base_idle": ("d..3.", [("is_idle=", "is_idle", _DEC), (" cpu=", "cpu_id", _DEC)]),
    "tick_stop": ("d..1.", [("success=", "success", _DEC), (" dependency=", "_dependency", _STR)]),
    # include/trace/events/power.h, sched.h, ipi.h
    "cpu_idle": ("d..1.", [("state=", "state", _DEC), (" cpu_id=", "cpu_id", _DEC)]),
    "sched_wakeup": ("d..2.", [("comm=", "_wakee_comm", _STR), (" pid=", "wakee_pid", _DEC),
                               (" prio=", "_wakee_prio", _DEC), (" target_cpu=", "target_cpu", _CPU3)]),
    "ipi_send_cpu": ("d..1.", [("cpu=", "target_cpu", _DEC), (" callsite=", "_callsite", _STR),
                               (" callback=", "_callback", _STR)]),
    # include/trace/events/timer_migration.h (6.12: no capacity= yet)
    "tmigr_group_set": (".....", [("group=", "group", _PTR), (" lvl=", "lvl", _DEC), (" numa=", "numa", _DEC)]),
    "tmigr_connect_child_parent": (".....", [("group=", "group", _PTR), (" ", None, None)] + _TMIGR_CONNECT),
    "tmigr_connect_cpu_parent": (".....", [("cpu=", "cpu_id", _DEC), (" ", None, None)] + _TMIGR_CONNECT),
    "tmigr_group_set_cpu_active": ("dN.2.", _TMIGR_GROUP_STATE),
    "tmigr_group_set_cpu_inactive": ("d..4.", _TMIGR_GROUP_STATE),
    "tmigr_cpu_online": ("d..1.", _TMIGR_CPU),
    "tmigr_cpu_offline": ("d..1.", _TMIGR_CPU),
    "tmigr_cpu_active": ("dN.2.", _TMIGR_CPU),
    "tmigr_cpu_new_timer": ("d..4.", _TMIGR_CPU),
    "tmigr_handle_remote_cpu": ("d.s1.", _TMIGR_CPU),
    "tmigr_cpu_idle": ("d..4.", _TMIGR_CPU_IDLE),
    "tmigr_cpu_new_timer_idle": ("d..4.", _TMIGR_CPU_IDLE),
    "tmigr_update_events": ("d..5.", [("child=", "child", _PTR), (" group=", "group", _PTR),
                                      (" group_lvl=", "group_lvl", _DEC), (" child_active=", "child_active", _HEX),
                                      (" group_active=", "group_active", _HEX), (" nextevt=", "nextevt_ns", _DEC),
                                      (" next_expiry=", "next_expiry_ns", _DEC),
                                      (" child_evt_expiry=", "child_evt_expiry_ns", _DEC),
                                      (" child_evtcpu=", "child_evtcpu", _DEC)]),
    "tmigr_handle_remote": ("..s1.", [("group=", "group", _PTR), (" lvl=", "lvl", _DEC)]),
    # include/trace/events/timer.h: hrtimers, in the 2026 form (was_armed=, no cancel before a restart)
    "hrtimer_start": ("d..2.", [("hrtimer=", "hrtimer", _PTR), (" function=", "function", _STR),
                                (" expires=", "expires_ns", _DEC), (" softexpires=", "softexpires_ns", _DEC),
                                (" mode=", "mode", _STR), (" was_armed=", "was_armed", _DEC)]),
    "hrtimer_cancel": ("d..2.", [("hrtimer=", "hrtimer", _PTR)]),
    "hrtimer_expire_entry": ("d.h1.", [("hrtimer=", "hrtimer", _PTR), (" function=", "function", _STR),
                                       (" now=", "now_ns", _DEC)]),
    "hrtimer_expire_exit": ("d.h1.", [("hrtimer=", "hrtimer", _PTR)]),
}

# The idle task's own events (the CPU is in its idle task from here on), and
# those of its way out (the CPU runs something else after them).
# hrtimer events are neither: the tick's is re-armed on the way in and on the way out alike.
_INTO_IDLE = ["tmigr_group_set_cpu_inactive", "tmigr_cpu_idle", "tick_stop", "cpu_idle", "tmigr_cpu_new_timer_idle"]
_OUT_OF_IDLE = ["tmigr_cpu_active", "tmigr_group_set_cpu_active"]

_OPENERS = {".gz": "gzip", ".xz": "xz", ".bz2": "bzip2"}


def to_ftrace(result, path) -> None:
    """Write ``result.events`` to ``path`` as tracefs ftrace text (see the
    module documentation for the format); ``.gz``, ``.xz`` and ``.bz2`` paths
    are compressed. Needs a run with ``Config(record_events=True)``.

    Raises ValueError without events, TypeError for a path that is not one,
    and OSError (naming the path) when the file cannot be written; a file
    left half-written by an error is removed.
    """
    events = getattr(result, "events", None)
    if events is None:
        raise ValueError("to_ftrace needs the event log of the run: simulate with "
                         "Config(record_events=True)")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"to_ftrace: path must be a str or os.PathLike, not {type(path).__name__}")
    if _S is None:
        raise ImportError(f"to_ftrace needs numpy >= 2.0 (its string ufuncs); numpy {np.__version__} is installed")
    name = os.fspath(path)
    events = _writable(events)
    cpus = int(result.config.topology.cpus)
    raw = open(name, "wb")  # OSError names the path
    try:
        with _compressor(name, raw) as out:
            out.write(_HEADER.format(n=len(events), cpus=cpus).encode())
            for start in range(0, len(events), _BLOCK_ROWS):
                out.write(_lines(events.iloc[start:start + _BLOCK_ROWS]).encode())
    except BaseException:
        raw.close()
        if os.path.isfile(name):  # not a device or a pipe the caller named
            os.remove(name)
        raise
    raw.close()


def _compressor(name: str, raw):
    """A binary stream into `raw`, compressing by the suffix of `name`."""
    kind = _OPENERS.get(os.path.splitext(name)[1].lower())
    if kind == "gzip":
        # mtime=0: the same run gives the same bytes.
        return gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0)
    if kind == "xz":
        return lzma.LZMAFile(raw, "wb", preset=3)
    if kind == "bzip2":
        return bz2.BZ2File(raw, "wb")
    return _Unclosed(raw)


class _Unclosed:
    """`raw` as a context manager that leaves closing to to_ftrace."""

    def __init__(self, raw):
        self.write = raw.write

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _writable(events: pd.DataFrame) -> pd.DataFrame:
    """The rows to write, in time order, with the columns the payloads need
    that the simulator does not log."""
    counts = events["event"].value_counts()
    unknown = sorted(e for e, k in counts.items() if k and e not in _PAYLOADS)
    if unknown:
        warnings.warn("to_ftrace: no ftrace format for " + ", ".join(f"{e} ({counts[e]} rows)" for e in unknown)
                      + "; those rows are left out", stacklevel=3)
        events = events[~events["event"].isin(unknown)]
    ts = events["ts_ns"].to_numpy()
    if len(ts) and np.any(ts[1:] < ts[:-1]):  # tracefs merges CPUs by time
        events = events.iloc[np.argsort(ts, kind="stable")]
    events = events.reset_index(drop=True)
    return _derived_columns(events)


def _derived_columns(ev: pd.DataFrame) -> pd.DataFrame:
    n = len(ev)
    names = [str(c) for c in ev["event"].cat.categories]
    codes = ev["event"].cat.codes.to_numpy()

    def is_(*events: str) -> np.ndarray:
        return np.isin(codes, [names.index(e) for e in events if e in names])

    cpu = ev["cpu"].to_numpy()
    out = {}
    for column in ("function", "flags"):
        if column in ev:
            out[column] = _safe_tokens(ev[column], column)
    is_stop = is_("tick_stop")
    if is_stop.any():
        # Rows without a dependency (and runs that log none) print NONE.
        dep = ev["dependency"] if "dependency" in ev else pd.Series(pd.Categorical([None] * n))
        cats = ["NONE"] + [str(c) for c in dep.cat.categories if c != "NONE"]
        dep = np.maximum(pd.Categorical(dep.astype(object), categories=cats).codes, 0)
        out["_dependency"] = pd.Categorical.from_codes(np.where(is_stop, dep, -1), categories=cats)
    is_wakeup = is_("sched_wakeup")
    if is_wakeup.any():
        pid = ev["wakee_pid"].to_numpy(dtype=np.int64, na_value=0)
        pids, code = np.unique(pid, return_inverse=True)
        out["_wakee_comm"] = pd.Categorical.from_codes(np.where(is_wakeup, code, -1),
                                                       categories=[f"task{p}" for p in pids.tolist()])
        out["_wakee_prio"] = pd.arrays.IntegerArray(np.full(n, 120, dtype=np.int64), ~is_wakeup)
    is_ipi = is_("ipi_send_cpu")
    if is_ipi.any():
        # An IPI right after a wakeup of a task on the same target, by the same
        # CPU, is try_to_wake_up's; any other is a new timer for an idle CPU.
        target = ev["target_cpu"].to_numpy(dtype=np.int64, na_value=-1)
        ttwu = np.zeros(n, dtype=bool)
        ttwu[1:] = is_ipi[1:] & is_wakeup[:-1] & (target[1:] == target[:-1]) & (cpu[1:] == cpu[:-1])
        which = np.where(is_ipi, np.where(ttwu, 0, 1), -1)
        out["_callsite"] = pd.Categorical.from_codes(which, categories=["ttwu_queue_wakelist", "wake_up_nohz_cpu"])
        out["_callback"] = pd.Categorical.from_codes(
            which, categories=["generic_smp_call_function_single_interrupt", "0x0"])
    out["_idle"] = _idle_context(ev, is_, cpu)
    return ev.assign(**out)


def _safe_tokens(col: pd.Series, what: str) -> pd.Series:
    """A categorical column whose values may go in a payload token: whitespace
    (a user-chosen callback name) would split the token, so it becomes '_'."""
    cats = [str(c) for c in col.cat.categories]
    safe = [re.sub(r"\s", "_", c) for c in cats]
    if safe == cats:
        return col
    bad = [c for c, s in zip(cats, safe) if c != s]
    warnings.warn(f"to_ftrace: {what} names with whitespace written with '_' instead: {bad[:5]!r}", stacklevel=5)
    values = np.array(safe + [None], dtype=object)[col.cat.codes.to_numpy()]  # code -1 -> None
    return pd.Series(pd.Categorical(values), index=col.index)


def _idle_context(ev: pd.DataFrame, is_, cpu: np.ndarray) -> np.ndarray:
    """Whether each row runs in its CPU's idle task (see the module doc)."""
    is_idle = ev["is_idle"].to_numpy(dtype=np.int64, na_value=-1) if "is_idle" in ev else np.full(len(ev), -1)
    base_idle = is_("timer_base_idle")
    into = is_(*_INTO_IDLE) | (base_idle & (is_idle == 1))
    out_of = is_(*_OUT_OF_IDLE) | (base_idle & (is_idle == 0))
    # A callback runs from its timer_expire_entry to its timer_expire_exit,
    # on the CPU that logged both: a timer_start elsewhere is a task's.
    entry = is_("timer_expire_entry").astype(np.int64)
    leave = is_("timer_expire_exit").astype(np.int64)
    depth = pd.Series(entry - leave).groupby(cpu).cumsum().to_numpy() + leave
    task = is_("timer_start") & (depth <= 0)
    # Whether the CPU is idle after each row, carried forward per CPU (before
    # its first event a CPU is not idle: boot). The way out is idle itself:
    # for its rows, the state before the way out began counts.
    def before(after: np.ndarray) -> np.ndarray:
        state = pd.Series(after).groupby(cpu).ffill()
        return state.groupby(cpu).shift(1).fillna(0.0).to_numpy() == 1.0

    after = np.full(len(ev), np.nan)
    after[into] = 1.0
    after[task] = 0.0
    idle_before_way_out = before(after)
    after[out_of] = 0.0
    return into | (out_of & idle_before_way_out) | (~out_of & ~task & before(after))


def _lines(ev: pd.DataFrame) -> str:
    """The text of a block of rows, one line each, newline-terminated."""
    n = len(ev)
    if not n:
        return ""
    event = ev["event"]
    names = [str(c) for c in event.cat.categories]
    codes = event.cat.codes.to_numpy()
    cpu = ev["cpu"].to_numpy().astype(np.int64)
    idle = ev["_idle"].to_numpy()

    # "<task>-<pid> [cpu] flags ": one text per (cpu, idle?, event) in the block.
    cpus = np.unique(cpu)
    flags = [_PAYLOADS.get(e, (".....",))[0] for e in names]
    heads = []
    for c in cpus.tolist():
        for task in (f"{f'sim/{c}':>16}-{SIM_TASK_PID_BASE + c:<7}", f"{'<idle>':>16}-{0:<7}"):
            heads.extend(f"{task} [{c:03d}] {f} " for f in flags)
    which = (2 * np.searchsorted(cpus, cpu) + idle.astype(np.int64)) * len(names) + codes
    head = np.array(heads, dtype=_S)[which]
    ts = ev["ts_ns"].to_numpy().astype(np.int64)
    secs = np.strings.rjust((ts // 1_000_000_000).astype(_S), 5)
    usecs = np.strings.zfill((ts % 1_000_000_000 // 1000).astype(_S), 6)

    # ": event: payload"
    tail = np.empty(n, dtype=_S)
    for code in np.unique(codes).tolist():
        rows = np.flatnonzero(codes == code)
        tail[rows] = _payload(ev, rows, f": {names[code]}: ", _PAYLOADS[names[code]][1])

    add = np.strings.add
    line = add(add(head, add(add(secs, "."), usecs)), tail)
    return "\n".join(line.tolist()) + "\n"


def _payload(ev: pd.DataFrame, rows: np.ndarray, text: str, pieces: list) -> np.ndarray:
    """`text` followed by the payload of `rows` (all of one event)."""
    for before, column, conv in pieces:
        value = before if column is None else np.strings.add(before, _values(ev[column], rows, conv))
        text = np.strings.add(text, value)
    return text


def _values(col: pd.Series, rows: np.ndarray, conv: str) -> np.ndarray:
    """The text of `col` at `rows`, printed by conversion `conv`."""
    if conv == _STR:
        cats = np.array([str(c) for c in col.cat.categories] + [""], dtype=_S)
        return cats[col.cat.codes.to_numpy()[rows]]  # code -1 (missing) -> ""
    values = col.array[rows]  # the rows of one event all have its columns
    v = values.to_numpy(dtype=values.dtype.numpy_dtype, na_value=0) if isinstance(
        values, pd.arrays.IntegerArray) else np.asarray(values)
    if conv == _DEC:
        return v.astype(_S)
    if conv == _CPU3:
        return np.strings.zfill(v.astype(_S), 3)
    digits = _hex16(v.astype(np.uint64))
    if conv == _PTR:
        return digits
    short = np.strings.lstrip(digits, "0")
    return np.where(short == "", "0", short).astype(_S)


_HEX_DIGITS = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def _hex16(v: np.ndarray) -> np.ndarray:
    """uint64 -> 16 lower-case hex digits, zero-padded."""
    be = v.astype(">u8").view(np.uint8).reshape(-1, 8)
    nibbles = np.empty((len(v), 16), dtype=np.uint8)
    nibbles[:, 0::2] = be >> 4
    nibbles[:, 1::2] = be & 15
    return _HEX_DIGITS[nibbles].view("S16").ravel().astype(_S)
