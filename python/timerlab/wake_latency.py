"""The platform's wake latency: how late a hardware wakeup of an idle CPU
arrives (the core's model is cpp/include/timerlab/wake_latency.hpp).

Two distributions, each a table of evenly spaced quantiles in ns: the
stopped tick's programmed wakeup (``stopped``) and the running tick of an
idle CPU (``tick``), for every CPU alike or one table per CPU. Where several
idle CPUs hold the timer-migration duty for one event they all programmed
the same nanosecond, and the lateness decides which of them takes it: on time
(``"none"``), equal times go to the lowest CPU number.

Presets (``Config(wake_latency=...)``):

* ``"bare_metal"`` (default) — a few µs: the timer interrupt's latency on an
  idle bare-metal CPU without its idle state's exit latency (paid on top by
  the idle-state model), from rtla timerlat's documentation example (IRQ
  latency averages 4-5 µs, maxima 13-24 µs; hrtimers-and-latency.md §B.2).
* ``"vm"`` — a qemu/KVM guest: fitted by :func:`wake_latency_of` from the
  shared trace ``qemu-6.12.95-16cpu-2node-idle`` (pooled over its CPUs;
  stopped-tick wakeups p10/p50/p90 0.33/0.74/1.67 ms, ticks of idle CPUs
  0.12/0.18/0.48 ms, to when their handlers ran). ``tests/test_wake_latency.py`` re-fits it from the
  trace and checks the preset.
* ``"none"`` — every wakeup on time.

Not here: the exit latency of idle states (:mod:`timerlab.idle_states`),
IPI latency (``Config(ipi_latency_ns=)``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

POINTS = 21  # quantiles per table: min, 5 %, ..., max


@dataclass(frozen=True)
class WakeLatency:
    """Wake-latency tables (ns): ``stopped`` and ``tick``, each a tuple of
    tables (one for every CPU, or one per CPU; empty: on time), each table a
    sorted tuple of evenly spaced quantiles."""

    name: str
    stopped: tuple = ()
    tick: tuple = ()
    source: str = ""

    def __post_init__(self):
        for what in ("stopped", "tick"):
            tables = tuple(tuple(int(v) for v in t) for t in getattr(self, what))
            for i, t in enumerate(tables):
                if not t:
                    raise ValueError(f"wake_latency {what} table {i} is empty")
                if any(v < 0 or v > 10**9 for v in t):
                    raise ValueError(f"wake_latency {what} table {i}: values must be in [0, 1 s] (ns)")
                if any(b < a for a, b in zip(t, t[1:])):
                    raise ValueError(f"wake_latency {what} table {i}: quantiles must be sorted")
            object.__setattr__(self, what, tables)

    def check_cpus(self, cpus: int) -> None:
        for what in ("stopped", "tick"):
            n = len(getattr(self, what))
            if n > 1 and n != cpus:
                raise ValueError(f"wake_latency {self.name!r}: {n} per-CPU {what} tables for {cpus} CPUs")

    def to_core(self) -> dict:
        return {"stopped": [list(t) for t in self.stopped], "tick": [list(t) for t in self.tick]}

    def describe(self) -> pd.DataFrame:
        """p10 / p50 / p90 (ns) of each table: one row per (kind, table)."""
        rows = []
        for what in ("stopped", "tick"):
            for i, t in enumerate(getattr(self, what)):
                q = np.asarray(t, dtype=float)
                x = np.linspace(0, 1, len(q))
                rows.append((what, i, *(int(np.interp(p, x, q)) for p in (0.1, 0.5, 0.9))))
        return pd.DataFrame(rows, columns=["kind", "table", "p10_ns", "p50_ns", "p90_ns"])


def _quantiles(samples, points=POINTS) -> tuple:
    return tuple(int(round(v)) for v in np.quantile(np.asarray(samples, dtype=float), np.linspace(0, 1, points)))


# rtla timerlat's documented IRQ latencies (avg 4-5 µs, max 13-24 µs): min 1 µs, median 4 µs, max 20 µs.
_BARE_METAL = (1000, 1500, 2000, 2300, 2600, 2900, 3200, 3400, 3600, 3800, 4000, 4300, 4600, 4900, 5300, 5800,
               6500, 7500, 9000, 12000, 20000)
# wake_latency_of(read_ftrace("qemu-6.12.95-16cpu-2node-idle.trace.txt.xz"), per_cpu=False)
_VM_STOPPED = (161933, 262883, 329933, 354283, 387533, 448933, 504133, 526283, 566333, 667033, 738933, 782883,
               891133, 1051933, 1140633, 1305433, 1446933, 1555833, 1668533, 2209883, 5288933)
_VM_TICK = (105933, 113933, 122433, 125933, 127933, 134683, 141933, 149183, 160933, 172683, 184933, 200183,
            214933, 229683, 247433, 273433, 308933, 371933, 475933, 849183, 1976933)

PRESETS = {
    "none": WakeLatency("none"),
    "bare_metal": WakeLatency("bare_metal", (_BARE_METAL,), (_BARE_METAL,), "rtla timerlat documentation"),
    "vm": WakeLatency("vm", (_VM_STOPPED,), (_VM_TICK,), "qemu-6.12.95-16cpu-2node-idle"),
}


def preset(name: str) -> WakeLatency:
    if name not in PRESETS:
        raise ValueError(f"wake_latency={name!r}; choose one of {sorted(PRESETS)} or a WakeLatency "
                         "(timerlab.wake_latency_of(trace))")
    return PRESETS[name]


def wake_latency_of(trace, *, per_cpu: bool = False, points: int = POINTS, min_samples: int = 20,
                    hz: int | None = None) -> WakeLatency:
    """The wake latency read off a trace (a :class:`~timerlab.Trace` or a path):
    every tick expiry that ended an idle period, its lateness being when its
    handler ran (the event's timestamp on CLOCK_MONOTONIC; never before its
    ``now=``) minus the time its hrtimer was programmed for — the stopped
    tick's wakeups and the running ticks apart. ``per_cpu``: one table per
    CPU (a CPU with fewer than ``min_samples`` wakeups of a kind gets the
    pooled table). Needs hrtimer_start, hrtimer_expire_entry, cpu_idle and
    tick_stop."""
    from .replay.clocks import clock_offset, tick_wakeups
    from .replay.script import require_events
    from .trace import read_ftrace

    if not hasattr(trace, "events"):
        trace = read_ftrace(trace)
    require_events(trace, ("hrtimer_start", "hrtimer_expire_entry", "cpu_idle", "tick_stop"), "wake_latency_of")
    hz = hz or trace.features.hz or 250
    if not isinstance(points, int) or points < 2:
        raise ValueError(f"points must be an integer >= 2, got {points!r}")
    tick_ns = (1_000_000_000 + hz // 2) // hz
    nr_cpus = max(int(trace.nr_cpus), int(trace.events["cpu"].max()) + 1)
    w = tick_wakeups(trace.events, tick_ns, clock_offset(trace.events))
    tables = {}
    for what in ("stopped", "tick"):
        tables[what] = fit_tables(w, what == "stopped", nr_cpus, per_cpu, points, min_samples)
        if not tables[what]:
            raise ValueError(f"wake_latency_of: {trace.path} has no {what}-tick wakeup of an idle CPU to fit")
    return WakeLatency("fitted", tables["stopped"], tables["tick"], str(trace.path))


def fit_tables(wakeups, stopped: bool, nr_cpus: int, per_cpu: bool, points: int = POINTS,
               min_samples: int = 20) -> tuple:
    """Quantile tables of the lateness of the tick wakeups that ended an idle
    period (rows of :func:`timerlab.replay.clocks.tick_wakeups`), of the
    stopped tick (``stopped``) or the running one: one pooled table, or one
    per CPU (the pooled one where a CPU has fewer than ``min_samples``).
    Empty if there is none."""
    d = np.array([w[1] for w in wakeups if w[5] and w[4] == stopped], dtype=np.int64)
    c = np.array([w[2] for w in wakeups if w[5] and w[4] == stopped], dtype=np.int64)
    if not len(d):
        return ()
    pooled = _quantiles(d, points)
    if not per_cpu:
        return (pooled,)
    return tuple(_quantiles(d[c == k], points) if (c == k).sum() >= min_samples else pooled for k in range(nr_cpus))
