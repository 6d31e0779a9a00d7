"""Figures of runs, sweeps and hierarchies (matplotlib, object-oriented API).

Every function returns the :class:`matplotlib.figure.Figure` it drew on and
takes ``ax=``: draw into that Axes, or (default) into a new figure. Nothing
else touches pyplot's state and nothing calls ``show``, so the functions work
under Agg, in scripts, in notebooks and in paper-figure pipelines. Axis
labels carry units. A frame without the columns a plot needs, an unknown CPU
or an empty time window raises ``ValueError`` naming the problem.

    >>> import timerlab as tl
    >>> res = tl.simulate(tl.Config(cpus=8, nodes=2, record_events=True))
    >>> tl.plot.wakeups(res)                      # per CPU, by node, stacked by cause
    >>> tl.plot.residency(res)                    # busy + idle states per CPU
    >>> tl.plot.timeline(res, end_ns=20_000_000)  # lanes: busy/idle, expiries, migrator
    >>> tl.plot.latency_cdf({"pull": res, "push": other})
    >>> tl.plot.hierarchy(tl.hierarchy(cpus=64, nodes=4))
    >>> df = tl.sweep(cfg, {"cpus": [8, 64, 256], "placement": ["push", "pull"]}, seeds=range(5))
    >>> tl.plot.wakeups(df, x="cpus", hue="placement")  # = tl.plot.sweep(df, x=..., y="wakeups_per_cpu_per_s")
    >>> tl.plot.save(fig, "figures/wakeups")      # figures/wakeups.png and .pdf

Confidence bands of :func:`sweep` are Student-t intervals of the mean over
seeds; the t quantile is computed here from the closed-form t distribution
for integer degrees of freedom (numpy and the standard library only).
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from .hierarchy import Hierarchy, hierarchy as _build_hierarchy
from .simulate import CAUSES, Result

__all__ = ["wakeups", "residency", "timeline", "sweep", "latency_cdf", "hierarchy", "save", "t_quantile", "axis_label"]

CAUSE_COLUMNS = [f"wakeups_{c}" for c in CAUSES]
SWEEP_WAKEUPS = "wakeups_per_cpu_per_s"
TIMELINE_DEFAULT_NS = 50_000_000
HIERARCHY_MAX_CPUS = 64  # above this many CPUs, tl.plot.hierarchy draws level-0 groups with CPU counts
_TICK_LABELS_MAX = 64    # per-CPU axes label every k-th CPU above this many CPUs

_CAUSE_COLORS = {"timer": "tab:blue", "remote_duty": "tab:purple", "ipi": "tab:red", "task": "tab:green",
                 "tick": "tab:gray", "irq": "tab:orange", "other": "black"}
_BUSY_COLOR = "tab:orange"
_CROSSNODE_COLOR = "0.85"
_UNITS = {"ns": "ns", "us": "µs", "ms": "ms", "s": "s", "uj": "µJ", "mj": "mJ", "j": "J", "mw": "mW",
          "w": "W", "jiffies": "jiffies", "fraction": "fraction", "x": "×"}


# ---------------------------------------------------------------------------
# Small helpers


def _axes(ax, figsize):
    """(figure, axes): the given Axes' root figure, or a new figure."""
    if ax is None:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=figsize, layout="constrained")
        return fig, ax
    from matplotlib.axes import Axes

    if not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    fig = ax.get_figure(root=True) if _mpl_has_root() else ax.figure
    return fig, ax


def _mpl_has_root() -> bool:
    import matplotlib

    return tuple(int(p) for p in matplotlib.__version__.split(".")[:2]) >= (3, 10)


def _need(df: pd.DataFrame, columns, what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{what}: missing column{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))} "
                         f"(has {', '.join(map(str, df.columns))})")


def axis_label(column: str) -> str:
    """A column name as an axis label with its unit: 'energy_uj' -> 'energy (µJ)',
    'wakeups_per_cpu_per_s' -> 'wakeups per CPU per s', 'lateness_ns_p99' -> 'lateness p99 (ns)'."""
    words = str(column).split("_")

    def pretty(ws):
        return " ".join({"cpu": "CPU", "cpus": "CPUs"}.get(w, w) for w in ws)

    if "per" in words[1:]:          # a rate spells its unit out
        return pretty(words)
    for i in range(1, len(words)):
        w = words[i]
        if w in _UNITS and (w != "x" or i == len(words) - 1):
            return f"{pretty(words[:i] + words[i + 1:])} ({_UNITS[w]})"
    return pretty(words)


def _per_cpu_positions(per_cpu: pd.DataFrame, by):
    """CPUs in drawing order and their x positions; by='node' leaves a gap between nodes."""
    if by == "node":
        order = per_cpu.sort_values(["node", "cpu"], kind="stable")
        node = order["node"].to_numpy()
        gaps = np.concatenate([[0], np.cumsum(node[1:] != node[:-1])])
        return order, np.arange(len(order)) + gaps
    order = per_cpu.sort_values("cpu", kind="stable")
    return order, np.arange(len(order), dtype=float)


def _node_color(node: int):
    import matplotlib

    return matplotlib.colormaps["tab10"](int(node) % 10)


def _decorate_cpu_axis(ax, order: pd.DataFrame, x: np.ndarray, by) -> None:
    """Tick labels (thinned out on big machines) and, by node, shaded node bands with labels."""
    import matplotlib.transforms as mtransforms

    step = max(1, math.ceil(len(order) / _TICK_LABELS_MAX))
    ax.set_xticks(x[::step])
    ax.set_xticklabels([str(c) for c in order["cpu"].to_numpy()[::step]], fontsize="small",
                       rotation=90 if len(order) > 32 and step == 1 else 0)
    ax.set_xlim(x.min() - 0.7, x.max() + 0.7)
    if by == "node":
        trans = mtransforms.blended_transform_factory(ax.transData, ax.transAxes)
        for node, rows in pd.Series(x, index=order["node"].to_numpy()).groupby(level=0):
            lo, hi = rows.min() - 0.5, rows.max() + 0.5
            ax.axvspan(lo, hi, color=_node_color(node), alpha=0.08, lw=0, zorder=0)
            ax.text((lo + hi) / 2, 1.0, f"node {node}", transform=trans, ha="center", va="bottom",
                    fontsize="small", color=_node_color(node))
        for label, node in zip(ax.get_xticklabels(), order["node"].to_numpy()[::step]):
            label.set_color(_node_color(node))
        ax.set_xlabel("CPU (grouped by NUMA node)")
    else:
        ax.set_xlabel("CPU")


# ---------------------------------------------------------------------------
# wakeups


def wakeups(data, *, by="node", ax=None, cause: bool = True, x=None, hue=None, y=None, ci=0.95):
    """Wakeups per CPU, as bars grouped by NUMA node, stacked by cause.

    ``data``: a Result or its ``per_cpu`` frame. ``by``: "node" (CPUs of a
    node side by side, nodes shaded and labelled) or "cpu" (CPU order).
    ``cause=True`` stacks the ``wakeups_<cause>`` columns (timer,
    remote_duty, ipi, task, tick, irq; an "other" segment if they fall short
    of ``wakeups``); ``cause=False`` draws ``wakeups`` colored by node.

    A sweep frame (``tl.sweep``: one row per (point, seed)) with ``x=``
    (and optionally ``hue=``) draws :func:`sweep` of ``y`` (default
    ``wakeups_per_cpu_per_s``) against ``x``, with its ``ci`` band.
    """
    if x is not None:
        if not isinstance(data, pd.DataFrame):
            raise TypeError(f"wakeups(x=...) takes a sweep DataFrame, got {type(data).__name__}")
        return sweep(data, x=x, y=y or SWEEP_WAKEUPS, hue=hue, ax=ax, ci=ci)
    if hue is not None or y is not None:
        raise ValueError("wakeups: hue= and y= are for a sweep frame and need x= (e.g. x='cpus')")
    per_cpu = _per_cpu_frame(data, "wakeups")
    if by not in ("node", "cpu"):
        raise ValueError(f"wakeups: by={by!r} is not allowed; choose 'node' or 'cpu'")
    need = ["cpu"] + (["node"] if by == "node" else []) + (CAUSE_COLUMNS if cause else ["wakeups"])
    _need(per_cpu, need, "wakeups(per_cpu)")
    order, xs = _per_cpu_positions(per_cpu, by)
    fig, ax = _axes(ax, (max(6.0, min(0.22 * len(order) + 2, 18.0)), 3.6))
    width = 0.8
    if cause:
        bottom = np.zeros(len(order))
        parts = [(c, order[f"wakeups_{c}"].to_numpy(dtype=float)) for c in CAUSES]
        if "wakeups" in order:
            other = order["wakeups"].to_numpy(dtype=float) - sum(v for _, v in parts)
            if (other > 0).any():
                parts.append(("other", np.clip(other, 0, None)))
        for name, v in parts:
            ax.bar(xs, v, width, bottom=bottom, color=_CAUSE_COLORS[name], label=name, gid=f"wakeups:{name}")
            bottom += v
        ax.legend(title="cause", fontsize="small", ncols=2 if len(parts) > 4 else 1)
    else:
        colors = [_node_color(n) for n in order["node"]] if by == "node" else "tab:blue"
        ax.bar(xs, order["wakeups"].to_numpy(dtype=float), width, color=colors, gid="wakeups:all")
    _decorate_cpu_axis(ax, order, xs, by)
    ax.set_ylabel("wakeups (count)")
    title = "Wakeups per CPU"
    if isinstance(data, Result):
        title += f" ({data.config.duration_ns / 1e6:g} ms, {data.config.placement})"
    ax.set_title(title, pad=14 if by == "node" else None)
    return fig


def _per_cpu_frame(data, what: str) -> pd.DataFrame:
    if isinstance(data, Result):
        return data.per_cpu
    if isinstance(data, pd.DataFrame):
        if "cpu" not in data.columns and SWEEP_WAKEUPS in data.columns:
            raise ValueError(f"{what}: this looks like a sweep frame (no 'cpu' column); give x= (and hue=) to plot "
                             "the sweep, or pass one run's Result / per_cpu frame")
        _need(data, ["cpu"], f"{what}(per_cpu)")
        if data["cpu"].duplicated().any():
            raise ValueError(f"{what}: several rows per cpu (a sweep's per_cpu frame?); select one run's rows first")
        return data
    raise TypeError(f"{what} takes a timerlab Result or a per_cpu DataFrame, got {type(data).__name__}")


# ---------------------------------------------------------------------------
# residency


def residency(data, *, ax=None, normalize: bool = True):
    """Time in each idle state per CPU, plus busy time, as stacked bars.

    ``data``: a Result (busy time from ``per_cpu.busy_ns``, states from
    ``residency``, CPUs grouped by node) or a ``residency`` frame alone (no
    busy time; shares are then of the CPU's idle time). ``normalize=True``:
    share of the run on each CPU (busy + idle = 1); False: milliseconds.
    States are stacked shallow (bottom, light) to deep (top, dark), busy at
    the bottom.
    """
    if isinstance(data, Result):
        res, per_cpu = data.residency, data.per_cpu
        _need(per_cpu, ["cpu", "node", "busy_ns", "idle_ns"], "residency(per_cpu)")
    elif isinstance(data, pd.DataFrame):
        res, per_cpu = data, None
    else:
        raise TypeError(f"residency takes a timerlab Result or a residency DataFrame, got {type(data).__name__}")
    _need(res, ["cpu", "state", "total_ns"], "residency")
    if res.duplicated(["cpu", "state"]).any():
        raise ValueError("residency: several rows per (cpu, state) (a sweep's frame?); select one run's rows first")
    states = list(res["state"].cat.categories) if isinstance(res["state"].dtype, pd.CategoricalDtype) else list(
        pd.unique(res["state"]))
    table = (res.pivot_table(index="cpu", columns="state", values="total_ns", aggfunc="sum", observed=False)
             .reindex(columns=states).fillna(0).astype(float))
    states = [str(st) for st in states]
    table.columns = states
    if per_cpu is not None:
        frame = per_cpu.set_index("cpu")
        unknown = sorted(set(table.index) - set(frame.index))
        if unknown:
            raise ValueError(f"residency: CPUs {unknown} are in residency but not in per_cpu")
        table = table.reindex(frame.index, fill_value=0.0)
        table.insert(0, "busy", frame["busy_ns"].astype(float))
        total = (frame["busy_ns"] + frame["idle_ns"]).astype(float)
        by, layout = "node", per_cpu[["cpu", "node"]]
    else:
        total = table.sum(axis=1)
        by, layout = "cpu", pd.DataFrame({"cpu": table.index})
    if normalize:
        table = table.div(total.where(total > 0), axis=0).fillna(0.0)
        ylabel = "share of the run" if per_cpu is not None else "share of idle time"
    else:
        table = table / 1e6
        ylabel = "time (ms)"
    order, xs = _per_cpu_positions(layout, by)
    table = table.loc[order["cpu"].to_numpy()]
    fig, ax = _axes(ax, (max(6.0, min(0.22 * len(order) + 2, 18.0)), 3.6))
    colors = _state_colors(len(states))
    bottom = np.zeros(len(order))
    for name in table.columns:
        color = _BUSY_COLOR if name == "busy" and per_cpu is not None else colors[states.index(name)]
        v = table[name].to_numpy()
        ax.bar(xs, v, 0.8, bottom=bottom, color=color, label=str(name), gid=f"residency:{name}")
        bottom += v
    _decorate_cpu_axis(ax, order, xs, by)
    ax.set_ylabel(ylabel)
    if normalize:
        ax.set_ylim(0, 1.0)
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles[::-1], labels[::-1], title="state", fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.set_title("Idle-state residency per CPU", pad=14 if by == "node" else None)
    return fig


def _state_colors(n: int):
    import matplotlib

    cmap = matplotlib.colormaps["Blues"]
    return [cmap(v) for v in (np.linspace(0.3, 0.95, n) if n > 1 else [0.6])]


# ---------------------------------------------------------------------------
# timeline


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


_MIGRATOR_EVENTS = ("tmigr_group_set_cpu_active", "tmigr_group_set_cpu_inactive")
TMIGR_NONE = 0xFF


def _migrator_intervals(events: pd.DataFrame, lo: int, hi: int) -> pd.DataFrame | None:
    """Intervals [start_ns, end_ns) in [lo, hi) during which a CPU was the
    migrator of groups up to ``level`` of the timer-migration hierarchy.

    The hierarchy is read from the boot events (tmigr_connect_cpu_parent,
    tmigr_connect_child_parent: which child is which bit of its parent);
    each group's migrator (the child bit, 0xff for none) from the state the
    tmigr_group_set_cpu_active/inactive events print after each update. The
    migrator of a group is the migrator of its migrator child, down to a
    CPU. None when the log has no hierarchy (push model, trimmed log)."""
    if "event" not in events.columns:
        return None
    kind = events["event"].astype(str)
    cpu_links = events[kind == "tmigr_connect_cpu_parent"]
    grp_links = events[kind == "tmigr_connect_child_parent"]
    sets = events[kind.isin(_MIGRATOR_EVENTS) & (events["ts_ns"] < hi)]
    if not len(cpu_links) or not len(sets):
        return None
    children: dict[int, dict[int, tuple]] = {}
    for r in cpu_links[["parent", "groupmask", "cpu_id"]].itertuples(index=False):
        children.setdefault(int(r.parent), {})[int(r.groupmask)] = ("cpu", int(r.cpu_id))
    for r in grp_links[["parent", "groupmask", "group"]].itertuples(index=False):
        children.setdefault(int(r.parent), {})[int(r.groupmask)] = ("group", int(r.group))
    level = {int(g): int(lv) for g, lv in zip(sets["group"], sets["lvl"])}
    for r in events[kind == "tmigr_group_set"][["group", "lvl"]].itertuples(index=False):
        level[int(r.group)] = int(r.lvl)
    mig: dict[int, int] = {}
    before = sets[sets["ts_ns"] < lo]
    if len(before):
        last = before.groupby("group", sort=False)["migrator"].last()
        mig.update({int(g): int(m) for g, m in last.items()})

    def roles() -> dict[int, int]:
        """cpu -> highest level it is the migrator of."""
        memo: dict[int, int | None] = {}

        def cpu_of(g: int, depth=0):
            if g in memo:
                return memo[g]
            memo[g] = None
            bit = mig.get(g, TMIGR_NONE)
            child = children.get(g, {}).get(bit) if bit != TMIGR_NONE else None
            if child is not None and depth < 64:
                memo[g] = child[1] if child[0] == "cpu" else cpu_of(child[1], depth + 1)
            return memo[g]

        out: dict[int, int] = {}
        for g in children:
            c = cpu_of(g)
            if c is not None:
                out[c] = max(out.get(c, -1), level.get(g, 0))
        return out

    rows = []
    current, since = roles(), lo
    inside = sets[sets["ts_ns"] >= lo]
    ts = inside["ts_ns"].to_numpy(dtype=np.int64)
    grp = inside["group"].to_numpy(dtype=np.int64)
    mg = inside["migrator"].to_numpy(dtype=np.int64)
    i = 0
    while i < len(ts):
        t = ts[i]
        while i < len(ts) and ts[i] == t:   # a walk up the hierarchy happens at one instant
            mig[int(grp[i])] = int(mg[i])
            i += 1
        new = roles()
        if new != current:
            if t > since:
                rows.extend((c, since, t, lvl) for c, lvl in current.items())
            current, since = new, t
    if hi > since:
        rows.extend((c, since, hi, lvl) for c, lvl in current.items())
    return pd.DataFrame(rows, columns=["cpu", "start_ns", "end_ns", "level"])


# ---------------------------------------------------------------------------
# sweep


def t_quantile(confidence: float, dof: int) -> float:
    """Two-sided Student-t quantile: the t with P(|T| <= t) = ``confidence``
    for ``dof`` degrees of freedom (e.g. t_quantile(0.95, 4) = 2.776).

    Exact up to float precision: bisection on the closed-form CDF of |T| for
    integer degrees of freedom (Abramowitz & Stegun 26.7.3-4); above 1000
    degrees of freedom, the normal quantile."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    dof = int(dof)
    if dof < 1:
        raise ValueError(f"dof must be >= 1, got {dof}")
    if dof > 1000:
        return statistics.NormalDist().inv_cdf((1 + confidence) / 2)
    if dof == 1:
        return math.tan(math.pi * confidence / 2)

    def abs_cdf(t: float) -> float:
        theta = math.atan(t / math.sqrt(dof))
        c2, sin = math.cos(theta) ** 2, math.sin(theta)
        if dof % 2:  # odd: (2/π)(θ + sinθ cosθ (1 + 2/3 cos² + 2·4/(3·5) cos⁴ + ...))
            term, acc = 1.0, 1.0
            for k in range(1, (dof - 1) // 2):
                term *= c2 * (2 * k) / (2 * k + 1)
                acc += term
            return 2 / math.pi * (theta + sin * math.cos(theta) * acc)
        term, acc = 1.0, 1.0  # even: sinθ (1 + 1/2 cos² + 1·3/(2·4) cos⁴ + ...)
        for k in range(1, dof // 2):
            term *= c2 * (2 * k - 1) / (2 * k)
            acc += term
        return sin * acc

    a, b = 0.0, 1.0
    while abs_cdf(b) < confidence:
        b *= 2
    for _ in range(200):
        m = (a + b) / 2
        if abs_cdf(m) < confidence:
            a = m
        else:
            b = m
        if b - a <= 1e-13 * b:
            break
    return (a + b) / 2


def sweep(df: pd.DataFrame, *, x: str, y: str, hue=None, ax=None, ci=0.95):
    """Mean of ``y`` over seeds against ``x``, one line per value of ``hue``,
    with a confidence band.

    ``df``: a sweep frame (``tl.sweep``: one row per (point, seed)). The
    band is the Student-t interval of the mean, mean ± t(ci, n-1)·s/√n,
    where n is the number of rows (seeds) at the point and s their sample
    standard deviation; no band where n = 1, or with ``ci=None``. The x
    axis is logarithmic when numeric x spans more than a decade. Rows that
    share (x, hue, seed) mean another option varies too: select the rows
    first or use it as ``hue`` (that raises ValueError).
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"sweep takes a DataFrame (tl.sweep's), got {type(df).__name__}")
    if ci is not None and not (isinstance(ci, (int, float)) and 0 < ci < 1):
        raise ValueError(f"ci must be a confidence level in (0, 1) or None, got {ci!r}")
    keys = [x] + ([hue] if hue is not None else [])
    _need(df, keys + [y], "sweep")
    if len(df) == 0:
        raise ValueError("sweep: the frame is empty")
    if not pd.api.types.is_numeric_dtype(df[y]):
        raise ValueError(f"sweep: y={y!r} is not numeric ({df[y].dtype})")
    if "seed" in df.columns:
        dup = df.duplicated(keys + ["seed"], keep=False)
        if dup.any():
            raise ValueError(f"sweep: {int(dup.sum())} rows share ({', '.join(keys + ['seed'])}): another grid option "
                             "varies too; select one value of it or pass it as hue=")
    stats = df.groupby(keys, sort=True, observed=True, dropna=True)[y].agg(["mean", "std", "count"]).reset_index()
    numeric_x = pd.api.types.is_numeric_dtype(df[x])
    fig, ax = _axes(ax, (6.0, 4.0))
    groups = [(None, stats)] if hue is None else list(stats.groupby(hue, sort=True, observed=True))
    for value, rows in groups:
        xs = rows[x].to_numpy() if numeric_x else rows[x].astype(str).to_numpy()
        label = axis_label(y) if hue is None else str(value)
        (line,) = ax.plot(xs, rows["mean"].to_numpy(dtype=float), marker="o", ms=4, label=label,
                          gid=f"sweep:{'mean' if hue is None else value}")
        if ci is not None:
            n = rows["count"].to_numpy()
            half = np.array([t_quantile(ci, k - 1) if k > 1 else np.nan for k in n]) * (
                rows["std"].to_numpy(dtype=float) / np.sqrt(n))
            m = rows["mean"].to_numpy(dtype=float)
            if not np.isfinite(half).any():
                continue
            band = ax.fill_between(xs, m - half, m + half, color=line.get_color(), alpha=0.2, lw=0)
            band.set_gid(f"sweep:band:{'mean' if hue is None else value}")
    if numeric_x:
        pos = stats[x][stats[x] > 0]
        if len(pos) == len(stats) and pos.max() / pos.min() > 10:
            ax.set_xscale("log")
            ticks = np.sort(stats[x].unique())
            if len(ticks) <= 12:
                ax.set_xticks(ticks, [f"{v:g}" for v in ticks])
                ax.minorticks_off()
    ax.set_xlabel(axis_label(x))
    ax.set_ylabel(axis_label(y))
    seeds = stats["count"]
    n_text = f"{seeds.min()}" if seeds.min() == seeds.max() else f"{seeds.min()}–{seeds.max()}"
    note = f"mean of {n_text} seed{'s' if seeds.max() > 1 else ''}"
    if ci is not None and seeds.max() > 1:
        note += f", {ci:.0%} t-interval"
    if hue is not None:
        ax.legend(title=f"{hue} ({note})", fontsize="small")
    else:
        ax.set_title(note, fontsize="small")
    return fig


# ---------------------------------------------------------------------------
# latency CDF


def latency_cdf(data, *, ax=None, label=None, column: str = "lateness_ns"):
    """Empirical CDF of timer lateness, in µs on a log axis.

    ``data``: a Result, a ``timers`` frame, or {label: Result or frame} to
    overlay several runs. ``column``: any ``*_ns`` column of ``timers``
    (``lateness_ns``, or a part of it: ``wheel_slack_ns``, ``remote_delay_ns``
    ...). NA values (timers that did not expire) are left out; each
    remaining timer is one step of the curve, which ends at 1. Values <= 0
    cannot be placed on the log axis: they count in the CDF (the curve
    starts at their share) but are not drawn.
    """
    if not str(column).endswith("_ns"):
        raise ValueError(f"latency_cdf: column={column!r} must be a time in ns (a name ending in '_ns')")
    if isinstance(data, Mapping):
        if label is not None:
            raise ValueError("latency_cdf: label= is for one run; a dict's keys are the labels")
        if not data:
            raise ValueError("latency_cdf: the dict of runs is empty")
        runs = list(data.items())
    else:
        runs = [(label, data)]
    series = []
    for name, run in runs:
        frame = run.timers if isinstance(run, Result) else run
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(f"latency_cdf takes a Result, a timers DataFrame or a dict of them, got "
                            f"{type(run).__name__}")
        what = "latency_cdf" + (f"[{name!r}]" if name is not None else "")
        _need(frame, [column], what)
        v = frame[column].dropna().to_numpy(dtype=np.float64)
        if not len(v):
            raise ValueError(f"{what}: no values in {column!r} (no timer expired; is record_timers on?)")
        series.append((name, np.sort(v) / 1e3))
    fig, ax = _axes(ax, (6.0, 4.0))
    for name, us in series:
        n = len(us)
        text = f"{name} (n={n})" if name is not None else f"n={n}"
        ax.plot(us, np.arange(1, n + 1) / n, drawstyle="steps-post", label=text, gid=f"latency_cdf:{name}")
    ax.set_xscale("log", nonpositive="mask")
    pos = np.concatenate([us[us > 0] for _, us in series])
    if len(pos):  # whole decades, so that a narrow spread still gets labelled ticks
        lo_dec, hi_dec = math.floor(math.log10(pos.min())), math.ceil(math.log10(pos.max()))
        ax.set_xlim(10.0 ** lo_dec, 10.0 ** max(hi_dec, lo_dec + 1))
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(axis_label(column).replace("(ns)", "(µs)"))
    ax.set_ylabel("fraction of expired timers")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    return fig


# ---------------------------------------------------------------------------
# hierarchy


def hierarchy(h, *, ax=None, max_cpus: int = HIERARCHY_MAX_CPUS):
    """The timer-migration hierarchy as a tree: CPUs at the bottom, the
    groups of each level above, edges from each child to its parent.

    ``h``: a :class:`timerlab.Hierarchy` (``tl.hierarchy(...)``) or a Result
    (its topology and kernel). CPUs and node-local groups are colored by
    NUMA node, cross-node groups grey. Above ``max_cpus`` CPUs the CPUs are
    not drawn: each level-0 group shows its CPU count instead (group labels
    are dropped when a level holds too many groups to read).
    """
    if isinstance(h, Result):
        h = _build_hierarchy(topology=h.config.topology, kernel=h.config.kernel)
    if not isinstance(h, Hierarchy):
        raise TypeError(f"hierarchy takes a timerlab Hierarchy (tl.hierarchy(...)) or a Result, got "
                        f"{type(h).__name__}")
    if not isinstance(max_cpus, (int, np.integer)) or max_cpus < 1:
        raise ValueError(f"max_cpus must be a positive integer, got {max_cpus!r}")
    from matplotlib.collections import LineCollection
    from matplotlib.patches import Patch, Rectangle

    groups, cpus = h.groups, h.cpus
    ncpu = len(cpus)
    collapse = ncpu > max_cpus and len(groups) > 0
    kids: dict[int, list] = {}            # group -> [(groupmask, kind, id)]
    for r in groups.itertuples(index=False):
        if r.parent >= 0:
            kids.setdefault(int(r.parent), []).append((int(r.groupmask), "group", int(r.group)))
    if not collapse:
        for r in cpus.itertuples(index=False):
            if r.group >= 0:
                kids.setdefault(int(r.group), []).append((int(r.groupmask), "cpu", int(r.cpu)))
    # Leaves left to right in depth-first order from the roots, so edges do not cross.
    leaves: list[tuple] = []
    seen: set = set()

    def walk(kind, ident):
        seen.add((kind, ident))
        children = sorted(kids.get(ident, [])) if kind == "group" else []
        if not children:
            leaves.append((kind, ident))
        for _, k, i in children:
            walk(k, i)

    for r in groups[groups["parent"] < 0].sort_values("group").itertuples(index=False):
        walk("group", int(r.group))
    for r in groups.itertuples(index=False):          # anything unreachable from a root, still drawn
        if ("group", int(r.group)) not in seen:
            walk("group", int(r.group))
    if not collapse:
        for c in cpus["cpu"]:
            if ("cpu", int(c)) not in seen:
                walk("cpu", int(c))
    xpos: dict[tuple, float] = {leaf: float(i) for i, leaf in enumerate(leaves)}

    def place(kind, ident):
        if (kind, ident) in xpos:
            return xpos[(kind, ident)]
        xs = [place(k, i) for _, k, i in kids.get(ident, [])]
        xpos[(kind, ident)] = (min(xs) + max(xs)) / 2
        return xpos[(kind, ident)]

    for g in groups["group"]:
        place("group", int(g))
    cpu_row = 0                                      # y of the CPUs (not drawn when collapsed)
    base = 0 if collapse else 1                      # y of level 0

    def y_of(level):
        return base + level

    level_of = dict(zip(groups["group"].astype(int), groups["level"].astype(int)))
    per_level = groups.groupby("level").size().to_dict()
    fig, ax = _axes(ax, (max(6.0, min(0.28 * max(len(leaves), 1) + 1.5, 22.0)),
                         1.3 + 1.1 * (h.levels + (0 if collapse else 1))))

    def span(kind, ident):
        """Leftmost and rightmost leaf x under a node."""
        if kind == "cpu" or not kids.get(ident):
            return xpos[(kind, ident)], xpos[(kind, ident)]
        ends = [span(k, i) for _, k, i in kids[ident]]
        return min(e[0] for e in ends), max(e[1] for e in ends)

    segs = []
    for r in groups.itertuples(index=False):
        g, lvl = int(r.group), int(r.level)
        x0, y0 = xpos[("group", g)], y_of(lvl)
        left, right = span("group", g)
        w = right - left + 0.8                      # a group's box spans the leaves under it
        color = _CROSSNODE_COLOR if r.numa < 0 else _node_color(r.numa)
        ax.add_patch(Rectangle((left - 0.4, y0 - 0.2), w, 0.4, facecolor=color, edgecolor="0.3", lw=0.6,
                               alpha=0.9, gid=f"hierarchy:group:{g}", zorder=2))
        crowded = per_level.get(lvl, 0)
        if crowded <= 64:
            text = f"{len(r.cpus)}" if collapse and lvl == 0 else f"g{g}"
            ax.text(x0, y0, text, ha="center", va="center", zorder=3,
                    fontsize="x-small" if crowded > 16 else "small", rotation=90 if crowded > 32 and w < 2 else 0)
        if r.parent >= 0:
            segs.append([(x0, y0 + 0.2), (xpos[("group", int(r.parent))], y_of(level_of[int(r.parent)]) - 0.2)])
    if not collapse:
        for r in cpus.itertuples(index=False):
            x0 = xpos[("cpu", int(r.cpu))]
            ax.add_patch(Rectangle((x0 - 0.35, cpu_row - 0.15), 0.7, 0.3, facecolor=_node_color(r.node),
                                   edgecolor="0.3", lw=0.5, alpha=0.55, gid=f"hierarchy:cpu:{int(r.cpu)}", zorder=2))
            ax.text(x0, cpu_row, str(int(r.cpu)), ha="center", va="center", zorder=3,
                    fontsize="xx-small" if ncpu > 32 else "small", rotation=90 if ncpu > 32 else 0)
            if r.group >= 0:
                segs.append([(x0, cpu_row + 0.15), (xpos[("group", int(r.group))], y_of(level_of[int(r.group)]) - 0.2)])
    edges = LineCollection(segs, colors="0.45", linewidths=0.7, zorder=1)
    edges.set_gid("hierarchy:edges")
    ax.add_collection(edges)
    sizes = groups.loc[groups["level"] == 0, "cpus"].map(len)
    counts = f"{sizes.min()}" if sizes.min() == sizes.max() else f"{sizes.min()}–{sizes.max()}"
    nlev = max(h.levels, int(groups["level"].max()) + 1 if len(groups) else 0)
    ticks, labels = [], []
    if not collapse:
        ticks.append(cpu_row)
        labels.append("CPUs")
    for lvl in range(nlev):
        ticks.append(y_of(lvl))
        labels.append(f"level {lvl}" + (" (crossnode)" if lvl == h.crossnode_level and h.topology.nodes > 1 else "")
                      + (f"\n({counts} CPUs each)" if collapse and lvl == 0 else ""))
    ax.set_yticks(ticks, labels, fontsize="small")
    ax.set_xticks([])
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    ax.set_xlim(-0.8, max(len(leaves), 1) - 0.2)
    ax.set_ylim(min(ticks, default=0) - 0.5, max(ticks, default=0) + 0.5)
    nodes = sorted(set(int(n) for n in cpus["node"]))
    handles = [Patch(facecolor=_node_color(n), edgecolor="0.3", label=f"node {n}") for n in nodes[:10]]
    if (groups["numa"] < 0).any():
        handles.append(Patch(facecolor=_CROSSNODE_COLOR, edgecolor="0.3", label="cross-node"))
    if len(nodes) <= 10:
        ax.legend(handles=handles, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.set_title(f"Timer-migration hierarchy: {ncpu} CPUs, {h.topology.nodes} nodes, kernel {h.kernel}"
                 + (" (CPUs counted per level-0 group)" if collapse else ""), fontsize="medium")
    return fig


# ---------------------------------------------------------------------------
# saving


def save(fig, path) -> list[Path]:
    """Write ``fig`` as ``path``.png and ``path``.pdf (a .png/.pdf suffix
    of ``path`` is dropped), make the folder, close the figure; returns the
    paths. Same as the experiments' ``timerlab.experiment.save_figure``."""
    from .experiment import save_figure

    p = Path(path)
    if p.suffix.lower() in (".png", ".pdf"):
        p = p.with_suffix("")
    return save_figure(fig, p.parent, p.name)
