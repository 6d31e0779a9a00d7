"""simulate(cfg) -> Result: run the C++ engine (without the GIL) and shape its
columns into pandas DataFrames with units in their names."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import _core
from ._events import events_frame, timer_flags_text
from .config import Config

__all__ = ["simulate", "Result", "tick_nsec", "initial_jiffies"]

OUTCOMES = ["pending", "expired", "cancelled", "rearmed"]


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
    ``summary``: headline figures. ``events``: the tracepoint log (same
    columns as :func:`timerlab.read_ftrace`) when ``record_events=True``.
    """

    config: Config
    per_cpu: pd.DataFrame
    timers: pd.DataFrame
    summary: pd.Series
    events: pd.DataFrame | None
    wall_s: float

    def __repr__(self) -> str:
        s = self.summary
        return (f"Result({self.config.topology!r}, placement={self.config.placement!r}, "
                f"{s['duration_s']:g} s: {int(s['wakeups'])} wakeups, {int(s['timers_armed'])} timers armed, "
                f"{int(s['timers_expired_remote'])} expired remotely; ran {s['sim_speed_x_realtime']:.0f}x real time)")


def simulate(cfg: Config) -> Result:
    """Run one simulation of ``cfg``."""
    if not isinstance(cfg, Config):
        raise TypeError(f"simulate takes a timerlab.Config, got {type(cfg).__name__}")
    core = cfg.to_core()
    t0 = time.perf_counter()
    raw = _core.simulate(core)
    wall = time.perf_counter() - t0
    names = core["workload"]["function_names"]
    per_cpu = _per_cpu(cfg, raw["per_cpu"])
    timers = _timers(cfg, raw["timers"], names)
    events = events_frame(raw["events"], names) if cfg.record_events else None
    return Result(cfg, per_cpu, timers, _summary(cfg, raw, per_cpu, timers, wall), events, wall)


def _per_cpu(cfg: Config, cols: dict) -> pd.DataFrame:
    df = pd.DataFrame({"cpu": np.arange(cfg.topology.cpus), "node": np.asarray(cfg.topology.node_of_cpu)})
    for name, values in cols.items():
        df[name] = values
    return df


def _timers(cfg: Config, cols: dict, function_names) -> pd.DataFrame:
    n = len(cols["timer"])
    outcome = pd.Categorical.from_codes(cols["outcome"].astype(np.int8), categories=OUTCOMES)
    expired = cols["outcome"] == 1
    end = cols["end_ns"]
    requested_ns = ((cols["expires_jiffies"] - np.uint64(initial_jiffies(cfg.hz))).astype(np.int64)
                    * tick_nsec(cfg.hz))
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
    }, index=pd.RangeIndex(n))


def _summary(cfg: Config, raw: dict, per_cpu: pd.DataFrame, timers: pd.DataFrame, wall: float) -> pd.Series:
    duration_s = cfg.duration_ns / 1e9
    late = timers["lateness_ns"].dropna().to_numpy(dtype=np.int64)
    q = np.percentile(late, [50, 99, 99.9]) if len(late) else [np.nan] * 3
    total = per_cpu["busy_ns"] + per_cpu["idle_ns"]
    expired = per_cpu["timers_expired_local"].sum() + per_cpu["timers_expired_remote"].sum()
    return pd.Series({
        "cpus": cfg.topology.cpus,
        "nodes": cfg.topology.nodes,
        "placement": cfg.placement,
        "duration_s": duration_s,
        "wakeups": int(per_cpu["wakeups"].sum()),
        "wakeups_per_cpu_per_s": per_cpu["wakeups"].sum() / cfg.topology.cpus / duration_s,
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
        "timer_events": int(raw["timer_events"]),
        "peak_pending_timers": int(raw["peak_pending"]),
        "steps": int(raw["steps"]),
        "wall_s": wall,
        "sim_speed_x_realtime": duration_s / wall if wall > 0 else float("inf"),
        "timer_events_per_wall_s": raw["timer_events"] / wall if wall > 0 else float("inf"),
    })
