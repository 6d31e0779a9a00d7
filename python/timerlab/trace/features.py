"""What a trace shows of the machine and the kernel that recorded it.

Traces are read by feature, not by version (reference pre-6.9-kernels.md
§1, §2.3, §6): each release prints what it has, and the reader takes
whatever is there. :func:`detect` finds out what a trace has, makes the
fields that a release left out or printed differently look the same as in
the newest releases, and says what it did (:class:`Features`):

==================== ==================================================================
bucket_expiry        "traced" (6.8+), "derived" (recomputed from expires, timeout and idx,
                     §2.2), or "none" (no timer_start)
timer_base_idle      the event occurs (6.8+)
pull_model           timer_migration events occur (6.9+)
was_armed            hrtimer_start prints was_armed= (the 2026 change, backported to
                     6.1.175+, 6.6.141+, 6.12.y, 6.18.y)
hrtimer_modes        "symbolic", "hex" (HARD modes as 0x8..0xb before the 2023 decode fix:
                     turned into names), or "none" (trace-cmd's hrtimer plugin prints none)
timer_flags          "traced", or "unreliable": trace-cmd printed flags=D|P|I on every
                     timer_start (libtraceevent evaluates ``flags & (M|D|P|I)`` wrongly), so
                     the flags are unknown and read as none
tick_stop_dependencies the names seen (an open set: RCU from ~5.5, RCU_EXP from ~6.4)
module_symbols       some function= carries " [module]"
source               "tracefs" or "trace-cmd report"
hz                   from how fast jiffies advance (None: cannot tell)
release, release_from  the kernel release the replay models: given, from the file name
                     ("qemu-6.1.176-..." -> "6.1"), or the features (see ``release_of``)
==================== ==================================================================

Also here: the NUMA node of each CPU (from the hierarchy's set-up events)
and whether the machine had a cpuidle driver.

Not here: parsing the text (read.py and the C++ reader).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..kernel import parse_kernel
from ..wheel import bucket_expiry_from_idx
from .events import CPU_IDLE_EXIT

# The system of each event timerlab reads, for the tracefs path and trace-cmd's -e name.
EVENT_SYSTEMS = {
    **{e: "timer" for e in ("timer_init", "timer_start", "timer_cancel", "timer_expire_entry", "timer_expire_exit",
                            "timer_base_idle", "tick_stop", "hrtimer_init", "hrtimer_setup", "hrtimer_start",
                            "hrtimer_cancel", "hrtimer_expire_entry", "hrtimer_expire_exit")},
    **{e: "power" for e in ("cpu_idle", "cpu_idle_miss", "cpu_frequency")},
    **{e: "sched" for e in ("sched_switch", "sched_wakeup", "sched_waking", "sched_wakeup_new",
                            "sched_wake_idle_without_ipi")},
    **{e: "irq" for e in ("softirq_entry", "softirq_exit", "softirq_raise")},
    **{e: "ipi" for e in ("ipi_send_cpu", "ipi_send_cpumask")},
}
# decode_hrtimer_mode's names of the mode bits ABS=0, REL=1, PINNED=2, SOFT=4, HARD=8.
_MODE_BITS = ((2, "PINNED"), (4, "SOFT"), (8, "HARD"))


def record_hint(events) -> str:
    """How to record events: the tracefs enable files and trace-cmd's -e options."""
    names = [f"{EVENT_SYSTEMS.get(e, 'timer_migration' if e.startswith('tmigr_') else '?')}/{e}" for e in events]
    files = "; ".join(f"echo 1 > /sys/kernel/tracing/events/{n}/enable" for n in names)
    options = " ".join("-e " + n.replace("/", ":") for n in names)
    return f"record with tracefs ({files}) or with `trace-cmd record {options}`"


@dataclass(frozen=True)
class Features:
    """The kernel features a trace shows (see the module doc)."""

    source: str
    hz: int | None
    release: str
    release_from: str
    bucket_expiry: str
    timer_base_idle: bool
    pull_model: bool
    was_armed: bool
    hrtimer_modes: str
    timer_flags: str
    module_symbols: bool
    tick_stop_dependencies: tuple = ()
    notes: tuple = field(default=())

    def __str__(self) -> str:
        rows = [(k, getattr(self, k)) for k in self.__dataclass_fields__ if k != "notes"]
        w = max(len(k) for k, _ in rows)
        return "\n".join([f"{k:<{w}}  {v}" for k, v in rows] + [f"note: {n}" for n in self.notes])


def detect(events: pd.DataFrame, path, *, source: str, kernel: str | None = None) -> tuple[pd.DataFrame, Features]:
    """The events with the older releases' fields made like the newest ones'
    (a derived bucket_expiry column, mode and function names as the newest
    kernels and tracefs print them; no row changes), and the Features."""
    notes = []
    names = _event_names(events)
    starts = (events["event"] == "timer_start").to_numpy()
    hz = infer_hz(events, starts)
    # The columns made or renamed, assigned at once: each assign of a column
    # builds a new frame of every column.
    changed = {}
    bucket = "none"
    if starts.any():
        bucket = "traced"
        if "bucket_expiry_jiffies" not in events or events["bucket_expiry_jiffies"].isna().to_numpy()[starts].any():
            derived = _derive_bucket_expiry(events, starts, hz or 250, notes)
            if derived is not None:
                changed["bucket_expiry_jiffies"] = derived
            bucket = "derived" if derived is not None else "none"
    flags = "traced"
    if starts.sum() >= 2 and "flags" in events and _every_start_flagged_dpi(events["flags"], starts):
        flags = "unreliable"
        changed["flags"] = _recode(events["flags"], lambda c: "M" if "M" in c.split("|") else "")
        notes.append("trace-cmd printed flags=D|P|I on every timer_start (a libtraceevent bug): the timer "
                     "flags are unknown and read as none; record with tracefs to have them")
    modes = "none"
    if "mode" in events and events["mode"].notna().any():
        modes = "hex" if any(c.startswith("0x") for c in _values(events, "mode")) else "symbolic"
        if modes == "hex":
            changed["mode"] = _recode(events["mode"], _mode_name)
    functions = _values(events, "function") if "function" in events else []
    if "function" in events:
        # trace-cmd's hrtimer plugin prints "sym/0x0": the symbol is what %ps
        # prints. Looked for before it is taken off.
        if source == "tracefs" and any(_PLUGIN_OFFSET.search(c) for c in functions):
            source = "trace-cmd report"
        changed["function"] = _recode(events["function"], lambda c: _PLUGIN_OFFSET.sub("", c))
        functions = list(dict.fromkeys(_PLUGIN_OFFSET.sub("", c) for c in functions))
    changed = {k: v for k, v in changed.items() if v is not None}
    if changed:
        events = events.assign(**changed)
    deps = ()
    if "dependency" in events:
        deps = tuple(sorted(_values_at(events["dependency"], (events["event"] == "tick_stop").to_numpy())))
    f = dict(source=source, hz=hz, bucket_expiry=bucket, timer_base_idle="timer_base_idle" in names,
             pull_model=any(n.startswith("tmigr_") for n in names),
             was_armed=bool("was_armed" in events and events["was_armed"].notna().any()), hrtimer_modes=modes,
             timer_flags=flags, module_symbols=any(c.endswith("]") and " [" in c for c in functions),
             tick_stop_dependencies=deps)
    release, release_from = release_of(events, path, kernel, f)
    return events, Features(release=release, release_from=release_from, notes=tuple(notes), **f)


_PLUGIN_OFFSET = re.compile(r"(\+0x[0-9a-f]+)?/0x[0-9a-f]+$")


def _values(events, column) -> list[str]:
    """The distinct values of a column (categorical or not), as strings."""
    col = events[column]
    values = col.cat.categories if isinstance(col.dtype, pd.CategoricalDtype) else col.dropna().unique()
    return [str(v) for v in values]


def category_index(categories) -> pd.Index:
    """The categories of a column as an Index; bytes that were not UTF-8 (kept
    as surrogates) cannot be a string Index: an object one then."""
    try:
        return pd.Index(categories)
    except UnicodeEncodeError:
        return pd.Index(categories, dtype=object)


def _as_categorical(col: pd.Series) -> pd.Series:
    """A column as a categorical one (the C++ reader's string columns are)."""
    return col if isinstance(col.dtype, pd.CategoricalDtype) else col.astype("category")


def _recode(col, rename) -> pd.Categorical | None:
    """A column with its values renamed (names that become equal merge), the
    rows untouched; None when no name changes."""
    col = _as_categorical(col)
    old = [str(c) for c in col.cat.categories]
    new = [rename(c) for c in old]
    if new == old:
        return None
    cats = list(dict.fromkeys(new))
    where = {c: i for i, c in enumerate(cats)}
    lookup = np.array([where[c] for c in new] + [-1], dtype=np.int32)  # code -1 (missing) stays -1
    codes = lookup[col.cat.codes.to_numpy()]
    return pd.Categorical.from_codes(codes, categories=category_index(cats))


def _event_names(events) -> set[str]:
    """The names of the events that occur (by their codes: a category
    without rows does not count)."""
    if not len(events):
        return set()
    col = _as_categorical(events["event"])
    present = np.zeros(len(col.cat.categories) + 1, dtype=bool)
    present[col.cat.codes.to_numpy()] = True  # a missing one (-1) marks the extra last slot
    return {str(c) for c, p in zip(col.cat.categories.tolist(), present) if p}


def _values_at(col, rows) -> list[str]:
    """The distinct values a column has in these rows (a boolean mask), as
    strings; missing ones left out."""
    col = _as_categorical(col)
    codes = np.unique(col.cat.codes.to_numpy()[rows])
    cats = col.cat.categories
    return [str(cats[c]) for c in codes if c >= 0]


def _every_start_flagged_dpi(flags, starts) -> bool:
    """Whether the flags of every timer_start row hold D, P and I (a missing
    value, a damaged line read leniently, does not)."""
    flags = _as_categorical(flags)
    dpi = [{"D", "P", "I"} <= set(str(c).split("|")) for c in flags.cat.categories]
    return bool(np.array(dpi + [False])[flags.cat.codes.to_numpy()[starts]].all())


def release_of(events, path, kernel, f) -> tuple[str, str]:
    """The release to model, and where it came from: given (``kernel=``), the
    file name, or the features: timer_migration events -> the pull model
    ("latest"); no bucket_expiry -> before 6.8, with the 5.9 wheel when the
    kernel placed timers from clk == jiffies ("6.6": 5.10-6.7 behave alike
    here) and the wheel before it when from jiffies + 1 ("5.4");
    bucket_expiry but no timer_migration events -> "6.8" if the kernel pushed
    a timer (a timer_start whose cpu= is not the arming CPU, without P, and
    not a re-arm from the timer's own callback, which keeps its base in
    every release; not looked for when the flags are unreliable) or marked a base idle that kept its tick, else "latest".

    A release from the features is a class, not a version: "6.6" stands for
    5.10 to 6.7, so a 5.10 or 5.15 trace read that way gets the 5.18 jiffies
    stall check (BEHAVIOURS["jiffies_stall_check"]); pass ``kernel=`` when it
    matters."""
    if kernel is not None:
        return kernel, "given"
    m = re.search(r"(?<![\d.])(\d+\.\d+)(?:\.\d+)?(?!\d|\.\d)", os.path.basename(str(path)))
    if m and _plausible_release(m.group(1)):
        return m.group(1), "file name"
    if f["pull_model"]:
        return "latest", "features"
    if f["bucket_expiry"] == "derived":
        return ("5.4" if _wheel_clock_ahead(events, f["hz"] or 250) else "6.6"), "features"
    # Unreliable flags hide which timers were pinned (add_timer_on): no push test.
    pushed = f["timer_flags"] != "unreliable" and _pushed_a_timer(events)
    return ("6.8" if pushed or _idle_base_kept_tick(events) else "latest"), "features"


def _plausible_release(text) -> bool:
    """Whether a number in a file name reads as a kernel release timerlab
    models ("6.1"), not a version of something else ("1.5", "12.04")."""
    try:
        major, _ = parse_kernel(text)
    except ValueError:
        return False
    return 4 <= major <= 9


def _pushed_a_timer(events) -> bool:
    """Whether a timer was queued on another CPU's base by the push
    heuristic: not pinned, and not re-armed by its own callback (running on
    a remote base, it stays there in the pull model too)."""
    need = {"timer", "base_cpu", "flags"}
    if not need <= set(events.columns):
        return False
    sel = events[events["event"].isin(("timer_start", "timer_expire_entry", "timer_expire_exit"))]
    running = {}  # CPU -> the timer whose callback it runs
    for e, cpu, timer, base_cpu, flags in zip(sel["event"].tolist(), sel["cpu"].tolist(), sel["timer"].tolist(),
                                              sel["base_cpu"].tolist(), sel["flags"].astype(str).tolist()):
        if e == "timer_expire_entry":
            running[cpu] = timer
        elif e == "timer_expire_exit":
            running.pop(cpu, None)
        elif (not pd.isna(base_cpu) and base_cpu != cpu and "P" not in flags.split("|")
              and running.get(cpu) != timer):
            return True
    return False


def _idle_base_kept_tick(events) -> bool:
    """Whether a base was marked idle (timer_base_idle is_idle=1) and cleared
    again before the tick stopped: 6.8 marks it in the sleep-length query and
    clears it when the tick is kept; 6.9+ marks it only on the stop path."""
    sel = events[events["event"].isin(("timer_base_idle", "tick_stop"))]
    marked = set()
    for e, cpu, is_idle in zip(sel["event"].tolist(), sel["cpu"].tolist(),
                               sel["is_idle"].tolist() if "is_idle" in sel else [None] * len(sel)):
        if e == "tick_stop":
            marked.discard(cpu)
        elif is_idle == 1:
            marked.add(cpu)
        elif cpu in marked:
            return True
    return False


def _wheel_clock_ahead(events, hz) -> bool:
    """Whether the kernel placed timers from clk == jiffies + 1 (the wheel
    before 5.9, whose softirq runs every tick) more often than from jiffies."""
    from ..wheel import calc_wheel_index

    s = _starts_with(events, ("expires_jiffies", "timeout_jiffies", "idx"))
    if s is None:
        return False
    expires = s["expires_jiffies"].to_numpy(np.uint64)
    j = expires - s["timeout_jiffies"].to_numpy(np.int64).astype(np.uint64)
    idx = s["idx"].to_numpy(np.int64)
    at_j = calc_wheel_index(expires, j, hz=hz)[0] == idx
    at_j1 = calc_wheel_index(expires, j + np.uint64(1), hz=hz)[0] == idx
    return int((at_j1 & ~at_j).sum()) > int((at_j & ~at_j1).sum())


def _starts_with(events, columns, starts=None) -> dict | None:
    """The timer_start rows' values (of these columns and ts_ns, as arrays)
    if every one has all these columns, else None. Only those columns are
    taken: selecting rows of every column of a large trace costs more than
    the rest of detect. `starts`: the timer_start mask, if known."""
    if not set(columns) <= set(events.columns):
        return None
    if starts is None:
        starts = (events["event"] == "timer_start").to_numpy()
    rows = np.flatnonzero(starts)
    taken = {c: events[c].array.take(rows) for c in ("ts_ns", *columns)}
    if not len(rows) or any(taken[c].isna().any() for c in columns):
        return None
    return taken


def _derive_bucket_expiry(events, starts, hz, notes) -> pd.arrays.IntegerArray | None:
    """The bucket_expiry_jiffies column recomputed for timer_start (`starts`,
    its rows' mask), or None where that cannot be done."""
    s = _starts_with(events, ("expires_jiffies", "timeout_jiffies", "idx"), starts)
    if s is None:
        notes.append("bucket_expiry not derived: timer_start lacks expires, timeout or idx")
        return None
    bucket, ok = bucket_expiry_from_idx(s["expires_jiffies"].to_numpy(np.uint64),
                                        s["timeout_jiffies"].to_numpy(np.int64), s["idx"].to_numpy(np.int64), hz=hz)
    values = np.zeros(len(events), dtype=np.uint64)
    mask = np.ones(len(events), dtype=bool)
    rows = np.flatnonzero(starts)
    values[rows] = bucket
    mask[rows] = ~ok
    if (~ok).any():
        notes.append(f"bucket_expiry not derived for {int((~ok).sum())} timer_start lines: idx fits no clock near "
                     "jiffies (a vendor-modified wheel?)")
    notes.append("bucket_expiry derived from expires, timeout and idx (the kernel before 6.8 does not print it)")
    return pd.arrays.IntegerArray(values, mask)


def _mode_name(mode) -> str:
    m = str(mode)
    if not m.startswith("0x"):
        return m
    bits = int(m, 16)
    return "|".join(["REL" if bits & 1 else "ABS"] + [name for bit, name in _MODE_BITS if bits & bit])


def infer_hz(ev, starts=None) -> int | None:
    """HZ from how fast jiffies (timer_start's expires - timeout) advance in
    trace time. `starts`: the timer_start rows' mask, if known."""
    s = _starts_with(ev, ("expires_jiffies", "timeout_jiffies"), starts)
    if s is None or len(s["ts_ns"]) < 2:
        return None
    j = (s["expires_jiffies"].to_numpy(np.uint64) - s["timeout_jiffies"].to_numpy(np.int64).astype(np.uint64))
    t = s["ts_ns"].to_numpy(np.int64)
    dj = float((int(j[-1]) - int(j[0]) + 2**63) % 2**64 - 2**63)  # jiffies wrap: the difference mod 2^64, signed
    if dj < 10 or t[-1] <= t[0]:
        return None
    per_s = dj / ((t[-1] - t[0]) / 1e9)
    return min((100, 250, 300, 1000), key=lambda hz: abs(hz - per_s))


def node_of_cpu(ev, nr_cpus):
    """CPU -> NUMA node from the hierarchy's set-up events, if the trace has them."""
    c = ev[ev["event"] == "tmigr_connect_cpu_parent"]
    if not len(c) or "numa" not in c:
        return None
    m = dict(zip(c["cpu_id"].to_numpy(dtype=np.int64, na_value=-1).tolist(),
                 c["numa"].to_numpy(dtype=np.int64, na_value=-1).tolist()))
    if sorted(m) != list(range(nr_cpus)) or min(m.values()) < 0:
        return None
    nodes = sorted(set(m.values()))
    return [nodes.index(m[cpu]) for cpu in range(nr_cpus)]


def default_idle(ev) -> bool:
    """Whether the machine had no cpuidle driver: default_idle_call logs
    cpu_idle with state 1 only (a driver logs its state index, 0 = POLL)."""
    if "state" not in ev:  # no cpu_idle events at all
        return False
    states = ev.loc[ev["event"] == "cpu_idle", "state"]
    states = states[states != CPU_IDLE_EXIT]
    return len(states) > 0 and bool((states == 1).all())
