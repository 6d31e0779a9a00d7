"""simulate(cfg) -> Result: run the C++ engine (without the GIL) and shape its
columns into pandas DataFrames with units in their names."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import _core
from .trace.events import events_frame, timer_flags_text
from .config import Config

__all__ = ["simulate", "Result", "RunawayError", "tick_nsec", "initial_jiffies"]

# A run that stops making progress, or whose queues or memory outgrow their
# limits (a RuntimeError; cpp/include/timerlab/guard.hpp).
RunawayError = _core.RunawayError

OUTCOMES = ["pending", "expired", "cancelled", "rearmed"]
CAUSES = ["timer", "remote_duty", "ipi", "task", "tick", "irq", "hrtimer"]
TOOLS = ["none", "cyclictest", "timerlat"]
HRTIMER_MODES = ["ABS", "REL", "ABS|PINNED", "REL|PINNED", "ABS|SOFT", "REL|SOFT", "ABS|PINNED|SOFT", "REL|PINNED|SOFT",
                 "ABS|HARD", "REL|HARD", "ABS|PINNED|HARD", "REL|PINNED|HARD"]


def tick_nsec(hz: int) -> int:
    """TICK_NSEC: the length of a jiffy in ns, rounded as the kernel does."""
    return (1_000_000_000 + hz // 2) // hz


def initial_jiffies(hz: int) -> int:
    """INITIAL_JIFFIES on a 64-bit kernel: jiffies at boot, (u32)(-300 * HZ)."""
    return (1 << 32) - 300 * hz


@dataclass
class Result:
    """What a run produced.

    ``per_cpu``: one row per CPU (time in ns, counts). ``timers``: one row per
    armed timer, from timer_start to its end (expired, cancelled, rearmed or
    still pending), with lateness_ns = callback time - requested expiry.
    The lateness of an expired timer is split into ``wheel_slack_ns``
    (bucket expiry - requested expiry), ``tick_alignment_ns`` (waiting for
    the CPU's tick or wakeup), ``exit_latency_ns`` (the CPU had to leave an
    idle state first) and ``remote_delay_ns`` (waiting for a remote
    migrator, for timers expired on another CPU); ``callback_ns``: how long
    its callback ran (the CPU's softirq ran the callbacks one after another:
    ``expired_ns`` is when this one started).
    ``residency``: one row per (cpu, state), as idlestat shows.
    ``idle_periods``: one row per idle period (``record_idle=True``) with the
    state, what the governor predicted, what ended it (``cause``; "hrtimer":
    an hrtimer other than the tick, whose callback ``function`` names — for
    clock wakeups ``function`` is the first hrtimer the interrupt ran, the
    tick's included) and the kernel's above/below misses.
    ``hrtimers``: one row per armed hrtimer instance (``Config(record_hrtimers=)``),
    from hrtimer_start to its end, with its window (softexpires_ns,
    expires_ns) and, if it expired, when its handler ran (``expired_ns``),
    where, and ``latency_ns`` = handler - hard expiry.
    ``latency``: one row per wakeup a latency tool measured (workloads
    cyclictest and timerlat), split into its parts (see :mod:`timerlab.latency`);
    :meth:`cyclictest` and :meth:`timerlat` print the tools' own output.
    ``summary``: headline figures. ``events``: the tracepoint log (same
    columns as :func:`timerlab.read_ftrace`) when ``record_events=True``.
    """

    config: Config
    per_cpu: pd.DataFrame
    timers: pd.DataFrame
    residency: pd.DataFrame
    idle_periods: pd.DataFrame | None
    summary: pd.Series
    events: pd.DataFrame | None
    wall_s: float
    hrtimers: pd.DataFrame = None
    latency: pd.DataFrame = None

    def __post_init__(self):
        if isinstance(self.__dict__.get("events"), _LazyEvents):
            self._lazy_events = self.__dict__.pop("events")

    def __getattr__(self, name):
        # Only ``events`` is ever missing: its frame, built on first use from the raw log.
        lazy = self.__dict__.get("_lazy_events")
        if name != "events" or lazy is None:
            raise AttributeError(name)
        self.events = events = lazy.frame()
        del self._lazy_events
        return events

    def _events_columns(self, columns) -> pd.DataFrame | None:
        """The event log with only ``columns`` among its fields (every row;
        ts_ns, cpu and event always): what validate compares, without the
        whole frame. The whole frame if it was already built."""
        lazy = self.__dict__.get("_lazy_events")
        return self.events if lazy is None else lazy.frame(columns)

    def cyclictest(self, histogram_us: int | None = None, *, quiet: bool = False, frame: bool = False):
        """What cyclictest prints for this run's cyclictest threads: the
        ``T: …`` line per thread, and with ``histogram_us`` its ``-h``
        histogram (1 µs bins up to that bound, overflows counted) with the
        ``# Min/Avg/Max Latencies`` and overflow lines (``quiet``, as ``-q``:
        the histogram only); ``frame=True``: the same as a DataFrame (one row
        per thread). See :mod:`timerlab.latency`."""
        from .latency import cyclictest_output
        return cyclictest_output(self, histogram_us, frame=frame, quiet=quiet)

    def timerlat(self, *, hist: bool = False, bucket_us: int = 1, entries: int = 256):
        """rtla timerlat's ``top`` table for this run's timerlat threads (per
        CPU: IRQ and thread latency cur/min/avg/max, and an ALL row), or with
        ``hist=True`` its ``hist`` table. See :mod:`timerlab.latency`."""
        from .latency import timerlat_output
        return timerlat_output(self, hist=hist, bucket_us=bucket_us, entries=entries)

    def to_ftrace(self, path) -> None:
        """Write the event log as ftrace text, in the kernel's own event
        formats, as tracefs' ``trace`` file prints them (``.gz``, ``.xz`` and
        ``.bz2`` paths are compressed). Needs ``Config(record_events=True)``;
        :func:`timerlab.read_ftrace` reads the file back. See
        :mod:`timerlab.trace.export` for the format and what is made up."""
        from .trace.export import to_ftrace
        to_ftrace(self, path)

    def __repr__(self) -> str:
        s = self.summary
        return (f"Result({self.config.topology!r}, placement={self.config.placement!r}, "
                f"{s['duration_s']:g} s: {int(s['wakeups'])} wakeups, {int(s['timers_armed'])} timers armed, "
                f"{int(s['timers_expired_remote'])} expired remotely; ran {s['sim_speed_x_realtime']:.0f}x real time)")


class _LazyEvents:
    """The raw event log of a run and its function names: Result.events' frame, not yet built."""

    def __init__(self, arrays: dict, names):
        self.arrays, self.names = arrays, names

    def frame(self, columns=None) -> pd.DataFrame:
        return events_frame(self.arrays, self.names, columns)


def simulate(cfg: Config, *, time_limit_s: float | None = None) -> Result:
    """Run one simulation of ``cfg``.

    Ctrl-C stops it (KeyboardInterrupt) within about 50 ms although the
    engine runs without the GIL. ``time_limit_s``: wall time after which the
    run stops with TimeoutError (None: none). A model that stops making
    progress, or a run whose queues or memory outgrow their limits, stops
    with :class:`RunawayError` naming the CPU, the event and the time.
    """
    if not isinstance(cfg, Config):
        raise TypeError(f"simulate takes a timerlab.Config, got {type(cfg).__name__}")
    if time_limit_s is not None and (isinstance(time_limit_s, bool) or not isinstance(time_limit_s, (int, float))
                                     or not time_limit_s > 0):
        raise ValueError(f"time_limit_s must be a number of seconds > 0, got {time_limit_s!r}")
    for c in cfg.workload.components:
        if c.kind == "script" and c.params["script"].hz != cfg.hz:
            raise ValueError(f"hz={cfg.hz}: the replayed trace's script is in jiffies of HZ={c.params['script'].hz}; "
                             f"replay it with hz={c.params['script'].hz} (or rebuild it: trace.to_workload(hz=...))")
    core = cfg.to_core()
    t0 = time.perf_counter()
    raw = _core.simulate(core, None if time_limit_s is None else float(time_limit_s))
    wall = time.perf_counter() - t0
    names = core["workload"]["function_names"]
    states = list(cfg.idle_states.states["name"])
    per_cpu = _per_cpu(cfg, raw["per_cpu"])
    timers = _timers(cfg, raw["timers"], names, core["workload"])
    residency = _residency(raw["residency"], states)
    idle = _idle_periods(raw["idle_periods"], states, names) if cfg.record_idle else None
    # The event log's frame is built on first use (Result.events): validate reads a few of its columns.
    events = _LazyEvents(raw["events"], names) if cfg.record_events else None
    hrtimers = _hrtimers(raw["hrtimers"], names)
    latency = _latency(raw["latency"], states)
    summary = _summary(cfg, raw, per_cpu, timers, residency, wall, hrtimers, latency)
    return Result(cfg, per_cpu, timers, residency, idle, summary, events, wall, hrtimers, latency)


# The frames below wrap the core's fresh arrays (copy=False): pandas would
# otherwise copy every column into blocks, a few % of a large run's time.

def _per_cpu(cfg: Config, cols: dict) -> pd.DataFrame:
    avg_power_mw = cols["energy_uj"] / (cfg.duration_ns / 1e9) / 1000
    return pd.DataFrame({"cpu": np.arange(cfg.topology.cpus), "node": np.asarray(cfg.topology.node_of_cpu),
                         **cols, "avg_power_mw": avg_power_mw}, copy=False)


def _residency(cols: dict, states: list) -> pd.DataFrame:
    hits = cols["hits"]
    avg = pd.array(cols["total_ns"] / np.where(hits > 0, hits, 1), dtype="Float64")
    avg[hits == 0] = pd.NA
    return pd.DataFrame({"cpu": cols["cpu"], "state": pd.Categorical.from_codes(cols["state"], categories=states),
                         "hits": hits, "total_ns": cols["total_ns"], "avg_ns": avg,
                         "min_ns": cols["min_ns"], "max_ns": cols["max_ns"],
                         "above": cols["above"], "below": cols["below"]}, copy=False)


def _idle_periods(cols: dict, states: list, names) -> pd.DataFrame:
    return pd.DataFrame({
        "cpu": cols["cpu"], "start_ns": cols["start_ns"], "duration_ns": cols["duration_ns"],
        "state": pd.Categorical.from_codes(cols["state"], categories=states),
        "predicted_ns": cols["predicted_ns"],
        "cause": pd.Categorical.from_codes(cols["cause"].astype(np.int8), categories=CAUSES),
        "function": pd.Categorical.from_codes(cols["function"], categories=list(names)),
        "above": cols["above"].astype(bool), "below": cols["below"].astype(bool),
    }, copy=False)


def _hrtimers(cols: dict, names) -> pd.DataFrame:
    expired = cols["outcome"] == 1
    end = cols["end_ns"]
    return pd.DataFrame({
        "hrtimer": cols["hrtimer"],
        "function": pd.Categorical.from_codes(cols["function"].astype(np.int32), categories=list(names)),
        "mode": pd.Categorical.from_codes(cols["mode"].astype(np.int8) & 0x0F, categories=HRTIMER_MODES),
        "cpu_armed": cols["cpu_armed"],
        "base_cpu": cols["base_cpu"],
        "armed_ns": cols["armed_ns"],
        "softexpires_ns": cols["softexpires_ns"],
        "expires_ns": cols["expires_ns"],
        "outcome": pd.Categorical.from_codes(cols["outcome"].astype(np.int8), categories=OUTCOMES),
        "end_ns": pd.arrays.IntegerArray(end, end < 0),
        "expired_ns": pd.arrays.IntegerArray(end, ~expired),
        "cpu_expired": pd.arrays.IntegerArray(cols["cpu_expired"].astype(np.int64), ~expired),
        "latency_ns": pd.arrays.IntegerArray(end - cols["expires_ns"], ~expired),
        "callback_ns": pd.arrays.IntegerArray(cols["callback_ns"], ~expired),
        "exit_latency_ns": pd.arrays.IntegerArray(cols["exit_latency_ns"].astype(np.int64), ~expired),
    })


def _latency(cols: dict, states: list) -> pd.DataFrame:
    state = cols["state"]
    return pd.DataFrame({
        "tool": pd.Categorical.from_codes(cols["tool"].astype(np.int8), categories=TOOLS),
        "cpu": cols["cpu"], "task": cols["task"],
        "state": pd.Categorical.from_codes(state, categories=states),
        "requested_ns": cols["requested_ns"], "expires_ns": cols["expires_ns"],
        "latency_ns": cols["latency_ns"],
        **{k: cols[k] for k in LATENCY_PARTS},
        "irq_latency_ns": cols["irq_latency_ns"],
    }, copy=False)


# The parts of a measured wakeup's latency, in order (engine.hpp, LatencyRow); they add up to latency_ns.
LATENCY_PARTS = ("window_ns", "wake_ns", "exit_latency_ns", "irq_entry_ns", "handler_wait_ns", "sched_ns", "user_ns")


def _timers(cfg: Config, cols: dict, function_names, core_workload: dict) -> pd.DataFrame:
    n = len(cols["timer"])
    outcome = pd.Categorical.from_codes(cols["outcome"].astype(np.int8), categories=OUTCOMES)
    expired = cols["outcome"] == 1
    end = cols["end_ns"]
    j0 = core_workload.get("initial_jiffies")  # a replay brings its own
    j0 = np.uint64(initial_jiffies(cfg.hz) if j0 is None else j0)
    tick = tick_nsec(cfg.hz)
    requested_ns = (cols["expires_jiffies"] - j0).astype(np.int64) * tick
    bucket_ns = (cols["bucket_expiry_jiffies"] - j0).astype(np.int64) * tick
    exit_ns = cols["exit_latency_ns"].astype(np.int64)
    remote = expired & (cols["cpu_expired"] != cols["base_cpu"])
    after_bucket = end - bucket_ns - exit_ns
    remote_ns = np.where(remote, after_bucket, 0)
    return pd.DataFrame({
        "timer": cols["timer"],
        "function": pd.Categorical.from_codes(cols["function"].astype(np.int32), categories=list(function_names)),
        "flags": pd.Categorical(timer_flags_text(cols["flags"])),
        "cpu_armed": cols["cpu_armed"],
        "base_cpu": cols["base_cpu"],
        "armed_ns": cols["armed_ns"],
        "expires_jiffies": cols["expires_jiffies"],
        "bucket_expiry_jiffies": cols["bucket_expiry_jiffies"],
        "outcome": outcome,
        "cancelled": cols["outcome"] == 2,
        "end_ns": pd.arrays.IntegerArray(end, end < 0),
        "expired_ns": pd.arrays.IntegerArray(end, ~expired),
        "cpu_expired": pd.arrays.IntegerArray(cols["cpu_expired"].astype(np.int64), ~expired),
        "lateness_ns": pd.arrays.IntegerArray(end - requested_ns, ~expired),
        "wheel_slack_ns": pd.arrays.IntegerArray(bucket_ns - requested_ns, ~expired),
        "tick_alignment_ns": pd.arrays.IntegerArray(after_bucket - remote_ns, ~expired),
        "exit_latency_ns": pd.arrays.IntegerArray(exit_ns, ~expired),
        "remote_delay_ns": pd.arrays.IntegerArray(remote_ns, ~expired),
        "callback_ns": pd.arrays.IntegerArray(cols["callback_ns"].astype(np.int64), ~expired),
    }, index=pd.RangeIndex(n))


def _summary(cfg: Config, raw: dict, per_cpu: pd.DataFrame, timers: pd.DataFrame, residency: pd.DataFrame,
             wall: float, hrtimers: pd.DataFrame, latency: pd.DataFrame) -> pd.Series:
    duration_s = cfg.duration_ns / 1e9
    late = timers["lateness_ns"].dropna().to_numpy(dtype=np.int64)
    q = np.percentile(late, [50, 99, 99.9]) if len(late) else [np.nan] * 3
    total = per_cpu["busy_ns"] + per_cpu["idle_ns"]
    expired = per_cpu["timers_expired_local"].sum() + per_cpu["timers_expired_remote"].sum()
    entries = residency["hits"].sum()
    deepest = residency[residency["state"] == residency["state"].cat.categories[-1]]["total_ns"].sum()
    return pd.Series({
        "cpus": cfg.topology.cpus,
        "nodes": cfg.topology.nodes,
        "placement": cfg.placement,
        "governor": cfg.governor,
        "idle_states": cfg.idle_states.name,
        "duration_s": duration_s,
        "energy_uj": float(per_cpu["energy_uj"].sum()),
        "avg_power_mw": float(per_cpu["avg_power_mw"].sum()),
        "deepest_state_residency_fraction": float(deepest / total.sum()),
        "above_fraction": float(residency["above"].sum() / entries) if entries else 0.0,
        "below_fraction": float(residency["below"].sum() / entries) if entries else 0.0,
        "timer_overhead_ns": float(per_cpu["timer_overhead_ns"].sum()),
        "wakeups": int(per_cpu["wakeups"].sum()),
        "wakeups_per_cpu_per_s": per_cpu["wakeups"].sum() / cfg.topology.cpus / duration_s,
        **{f"wakeups_{c}": int(per_cpu[f"wakeups_{c}"].sum()) for c in CAUSES},
        "idle_fraction": float(per_cpu["idle_ns"].sum() / total.sum()),
        "tick_stops": int(per_cpu["tick_stops"].sum()),
        "ticks": int(per_cpu["ticks"].sum()),
        "ipis": int(per_cpu["ipis_received"].sum()),
        "timers_armed": int(per_cpu["timers_armed"].sum()),
        "timers_cancelled": int(per_cpu["timers_cancelled"].sum()),
        "timers_expired": int(expired),
        "timers_expired_remote": int(per_cpu["timers_expired_remote"].sum()),
        "lateness_ns_p50": float(q[0]),
        "lateness_ns_p99": float(q[1]),
        "lateness_ns_p999": float(q[2]),
        "hrtimers_armed": int(per_cpu["hrtimers_armed"].sum()),
        "hrtimers_expired": int(per_cpu["hrtimers_expired"].sum()),
        "hrtimer_interrupts": int(per_cpu["hrtimer_interrupts"].sum()),
        "hrtimer_hangs": int(per_cpu["hrtimer_hangs"].sum()),
        "latency_samples": len(latency),
        # Only with samples: a run without a latency tool has no figures to give.
        **({"latency_us_max": float(latency["latency_ns"].max() / 1e3),
            "latency_us_avg": float(latency["latency_ns"].mean() / 1e3)} if len(latency) else {}),
        "timer_events": int(raw["timer_events"]),
        "peak_pending_timers": int(raw["peak_pending"]),
        "steps": int(raw["steps"]),
        "wall_s": wall,
        "sim_speed_x_realtime": duration_s / wall if wall > 0 else float("inf"),
        "timer_events_per_wall_s": raw["timer_events"] / wall if wall > 0 else float("inf"),
    })
