"""Shared plumbing of the tl.plot figures: the Axes to draw into, column
checks, axis labels with units, the palette, saving."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

_TICK_LABELS_MAX = 64    # per-CPU axes label every k-th CPU above this many CPUs

_BUSY_COLOR = "tab:orange"
_CROSSNODE_COLOR = "0.85"
_UNITS = {"ns": "ns", "us": "µs", "ms": "ms", "s": "s", "uj": "µJ", "mj": "mJ", "j": "J", "mw": "mW",
          "w": "W", "jiffies": "jiffies", "fraction": "fraction", "x": "×"}


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


def _node_color(node: int):
    import matplotlib

    return matplotlib.colormaps["tab10"](int(node) % 10)


def _state_colors(n: int):
    import matplotlib

    cmap = matplotlib.colormaps["Blues"]
    return [cmap(v) for v in (np.linspace(0.3, 0.95, n) if n > 1 else [0.6])]


def save(fig, path) -> list[Path]:
    """Write ``fig`` as ``path``.png and ``path``.pdf (a .png/.pdf suffix
    of ``path`` is dropped), make the folder, close the figure; returns the
    paths. Same as the experiments' ``timerlab.experiment.save_figure``."""
    from ..experiment import save_figure

    p = Path(path)
    if p.suffix.lower() in (".png", ".pdf"):
        p = p.with_suffix("")
    return save_figure(fig, p.parent, p.name)
