"""Per-CPU bar charts: wakeups by cause and idle-state residency, CPUs grouped by NUMA node."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..simulate import CAUSES, Result
from ._common import _BUSY_COLOR, _TICK_LABELS_MAX, _axes, _need, _node_color, _state_colors
from .curves import sweep

CAUSE_COLUMNS = [f"wakeups_{c}" for c in CAUSES]
SWEEP_WAKEUPS = "wakeups_per_cpu_per_s"
_CAUSE_COLORS = {"timer": "tab:blue", "remote_duty": "tab:purple", "ipi": "tab:red", "task": "tab:green",
                 "tick": "tab:gray", "irq": "tab:orange", "hrtimer": "tab:cyan", "other": "black"}


def wakeups(data, *, by="node", ax=None, cause: bool = True, x=None, hue=None, y=None, ci=0.95):
    """Wakeups per CPU, as bars grouped by NUMA node, stacked by cause.

    ``data``: a Result or its ``per_cpu`` frame. ``by``: "node" (CPUs of a
    node side by side, nodes shaded and labelled) or "cpu" (CPU order).
    ``cause=True`` stacks the ``wakeups_<cause>`` columns (timer,
    remote_duty, ipi, task, tick, irq, hrtimer; an "other" segment if they fall short
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
        # Beside the axes, never over the bars (node 1's were covered inside).
        ax.legend(title="cause", fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
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


def _per_cpu_positions(per_cpu: pd.DataFrame, by):
    """CPUs in drawing order and their x positions; by='node' leaves a gap between nodes."""
    if by == "node":
        order = per_cpu.sort_values(["node", "cpu"], kind="stable")
        node = order["node"].to_numpy()
        gaps = np.concatenate([[0], np.cumsum(node[1:] != node[:-1])])
        return order, np.arange(len(order)) + gaps
    order = per_cpu.sort_values("cpu", kind="stable")
    return order, np.arange(len(order), dtype=float)


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
