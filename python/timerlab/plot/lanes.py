"""tl.plot.timeline: one lane per CPU over a time window (busy/idle, expiries, migrator)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..simulate import Result
from ._common import _BUSY_COLOR, _TICK_LABELS_MAX, _axes, _need, _node_color, _state_colors
from ._migrator import _migrator_intervals

TIMELINE_DEFAULT_NS = 50_000_000


def timeline(res, *, start_ns=None, end_ns=None, cpus=None, ax=None):
    """One lane per CPU over a time window: what the CPU was doing and which
    timers it expired.

    Lanes show busy time (orange) and idle periods shaded by the idle
    state's depth (light = shallow, dark = deep), from ``res.idle_periods``;
    busy is the complement. The idle period still open at the end of the run
    (counted in ``res.residency`` but not a row of ``idle_periods``) is drawn
    too, so a whole-run timeline adds up to ``per_cpu`` and ``residency``.
    Markers: timer expiries on the CPU that ran them (``cpu_expired``),
    local ones as ▼, remote ones (``cpu_expired != base_cpu``) as ✕. With
    an event log (``record_events=True``, pull model) a strip under each
    lane shows when the CPU was the timer-migration migrator, colored by
    the highest level of the hierarchy it was migrator of.

    ``start_ns``/``end_ns``: the window on the run's clock (the Result's
    ``*_ns`` columns; runs start at ``config.start_ns``); default: the first
    50 ms, or the whole run if shorter. ``cpus``: the CPUs to show (default
    all).
    """
    if not isinstance(res, Result):
        raise TypeError(f"timeline takes a timerlab Result, got {type(res).__name__}")
    if res.idle_periods is None:
        raise ValueError("timeline: res.idle_periods is None; run with Config(record_idle=True)")
    cfg = res.config
    run_lo, run_hi = int(cfg.start_ns), int(cfg.start_ns) + int(cfg.duration_ns)
    lo = run_lo if start_ns is None else int(start_ns)
    hi = min(run_hi, lo + TIMELINE_DEFAULT_NS) if end_ns is None else int(end_ns)
    if hi <= lo:
        raise ValueError(f"timeline: empty window: start_ns={lo} must be before end_ns={hi}")
    if hi <= run_lo or lo >= run_hi:
        raise ValueError(f"timeline: window [{lo}, {hi}) ns is outside the run [{run_lo}, {run_hi}) ns")
    lo, hi = max(lo, run_lo), min(hi, run_hi)
    ncpu = cfg.topology.cpus
    if cpus is None:
        cpus = list(range(ncpu))
    else:
        cpus = [cpus] if isinstance(cpus, (int, np.integer)) else list(cpus)
        if not cpus:
            raise ValueError("timeline: cpus is empty")
        unknown = [c for c in cpus if not isinstance(c, (int, np.integer)) or not 0 <= c < ncpu]
        if unknown:
            raise ValueError(f"timeline: unknown cpus {unknown}: this run has CPUs 0..{ncpu - 1}")
        if len(set(cpus)) != len(cpus):
            raise ValueError(f"timeline: cpus has repeats: {cpus}")
    lane = {int(c): i for i, c in enumerate(cpus)}
    states = list(res.residency["state"].cat.categories)
    periods = _idle_periods_with_open_end(res, run_hi)
    periods = periods[periods["cpu"].isin(lane) & (periods["start_ns"] < hi) & (periods["end_ns"] > lo)]
    s = periods["start_ns"].clip(lower=lo).to_numpy()
    e = periods["end_ns"].clip(upper=hi).to_numpy()
    y = periods["cpu"].map(lane).to_numpy()
    code = periods["state"].cat.codes.to_numpy()

    fig, ax = _axes(ax, (10.0, min(1.2 + 0.32 * len(cpus), 24.0)))
    ms = 1e-6
    top, bottom = -0.4, 0.22           # a lane's bar; the migrator strip sits just below it
    colors = _state_colors(len(states))
    # Busy: the window minus the idle periods, per lane.
    busy = []
    for c, i in lane.items():
        sel = y == i
        edges = np.column_stack([s[sel], e[sel]])
        edges = edges[np.argsort(edges[:, 0])] if len(edges) else edges
        t = lo
        for a, b in edges:
            if a > t:
                busy.append((i, t, a))
            t = max(t, b)
        if t < hi:
            busy.append((i, t, hi))
    _lane_rects(ax, [(i, a * ms, b * ms) for i, a, b in busy], top, bottom, _BUSY_COLOR, "busy", "timeline:busy")
    for k, name in enumerate(states):
        sel = code == k
        rects = list(zip(y[sel], s[sel] * ms, e[sel] * ms))
        if rects:
            _lane_rects(ax, rects, top, bottom, colors[k], f"idle {name}", f"timeline:idle:{name}")
    # Migrator role from the tmigr events.
    # Only the pull model has migrators (push runs log the hierarchy's boot events all the same).
    roles = _migrator_intervals(res.events, lo, hi) if res.events is not None and cfg.placement == "pull" else None
    if roles is not None and len(roles):
        roles = roles[roles["cpu"].isin(lane)]
        import matplotlib

        cmap = matplotlib.colormaps["Greens"]
        nlev = int(roles["level"].max()) + 1 if len(roles) else 1
        for lvl, rows in roles.groupby("level"):
            rects = list(zip(rows["cpu"].map(lane), rows["start_ns"] * ms, rows["end_ns"] * ms))
            _lane_rects(ax, rects, bottom + 0.04, bottom + 0.16, cmap(0.45 + 0.5 * lvl / max(nlev - 1, 1)),
                        f"migrator, level {lvl}", f"timeline:migrator:{lvl}")
    # Expiries.
    t = res.timers
    if len(t):
        _need(t, ["expired_ns", "cpu_expired", "base_cpu"], "timeline(timers)")
        ok = t["expired_ns"].notna() & t["cpu_expired"].notna()
        t = t[ok]
        when = t["expired_ns"].to_numpy(dtype=np.int64)
        where = t["cpu_expired"].to_numpy(dtype=np.int64)
        inwin = (when >= lo) & (when < hi) & np.isin(where, list(lane))
        remote = where != t["base_cpu"].to_numpy(dtype=np.int64)
        for sel, marker, face, edge, label in ((inwin & ~remote, "v", "white", "black", "expiry (local)"),
                                               (inwin & remote, "X", "crimson", "white", "expiry (remote)")):
            if sel.any():
                ax.scatter(when[sel] * ms, [lane[c] for c in where[sel]], marker=marker, s=36, facecolors=face,
                           edgecolors=edge, linewidths=0.6, zorder=4, label=label, gid=f"timeline:{label}")
    ax.set_xlim(lo * ms, hi * ms)
    ax.set_ylim(len(cpus) - 0.5, -0.5)
    step = max(1, math.ceil(len(cpus) / _TICK_LABELS_MAX))
    ax.set_yticks(range(0, len(cpus), step))
    nodes = cfg.topology.node_of_cpu
    ax.set_yticklabels([f"CPU {c}" for c in cpus[::step]], fontsize="small")
    if cfg.topology.nodes > 1:
        for label, c in zip(ax.get_yticklabels(), cpus[::step]):
            label.set_color(_node_color(nodes[c]))
    ax.set_xlabel("time (ms)")
    ax.set_title(f"Timeline {lo * ms:g}–{hi * ms:g} ms ({cfg.placement})")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig


def _lane_rects(ax, rects, top, bottom, color, label, gid):
    """One PolyCollection of rectangles [(lane, x0, x1)] spanning lane+top..lane+bottom."""
    from matplotlib.collections import PolyCollection

    verts = [[(a, i + top), (b, i + top), (b, i + bottom), (a, i + bottom)] for i, a, b in rects]
    coll = PolyCollection(verts, facecolors=[color], edgecolors="none", label=label, zorder=2)
    coll.set_gid(gid)
    ax.add_collection(coll)
    return coll


def _idle_periods_with_open_end(res: Result, run_hi: int) -> pd.DataFrame:
    """idle_periods (cpu, start_ns, end_ns, state) plus the period open at the
    end of the run: residency counts it, idle_periods does not (no hit yet)."""
    ip = res.idle_periods
    _need(ip, ["cpu", "start_ns", "duration_ns", "state"], "timeline(idle_periods)")
    out = pd.DataFrame({"cpu": ip["cpu"].to_numpy(dtype=np.int64), "start_ns": ip["start_ns"].to_numpy(dtype=np.int64),
                        "end_ns": (ip["start_ns"] + ip["duration_ns"]).to_numpy(dtype=np.int64), "state": ip["state"]})
    closed = ip.groupby(["cpu", "state"], observed=False)["duration_ns"].sum()
    rest = (res.residency.set_index(["cpu", "state"])["total_ns"] - closed.reindex(
        res.residency.set_index(["cpu", "state"]).index, fill_value=0))
    rest = rest[rest > 0]
    if not len(rest):
        return out
    extra = []
    for cpu, rows in rest.groupby(level=0):
        t = run_hi
        for (_, state), ns in rows.items():
            extra.append((cpu, t - int(ns), t, state))
            t -= int(ns)
    add = pd.DataFrame(extra, columns=["cpu", "start_ns", "end_ns", "state"])
    add["state"] = pd.Categorical(add["state"], categories=ip["state"].cat.categories)
    return pd.concat([out, add], ignore_index=True)
