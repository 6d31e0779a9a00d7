"""Curves: sweep means with Student-t bands (t_quantile) and the lateness CDF."""
from __future__ import annotations

import math
import statistics
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..simulate import Result
from ._common import _axes, _need, axis_label


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
        ax.legend(title=f"{hue} ({note})", fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    else:
        ax.set_title(note, fontsize="small")
    return fig


def latency_cdf(data, *, ax=None, label=None, column: str = "lateness_ns"):
    """Empirical CDF of timer lateness, in µs on a log axis.

    ``data``: a Result, a ``timers`` frame, or {label: Result or frame} to
    overlay several runs. ``column``: any ``*_ns`` column of ``timers``
    (``lateness_ns``, or a part of it: ``wheel_slack_ns``, ``remote_delay_ns``
    ...). NA values (timers that did not expire) are left out; each
    remaining timer is one step of the curve, which ends at 1. Values <= 0
    cannot be placed on the log axis: they count in the CDF (the curve
    starts at their share) but are not drawn; when no value is positive the
    axis stays linear.
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
    pos = np.concatenate([us[us > 0] for _, us in series])
    if len(pos):  # log scale in whole decades, so that a narrow spread still gets labelled ticks
        ax.set_xscale("log", nonpositive="mask")
        lo_dec, hi_dec = math.floor(math.log10(pos.min())), math.ceil(math.log10(pos.max()))
        ax.set_xlim(10.0 ** lo_dec, 10.0 ** max(hi_dec, lo_dec + 1))
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(axis_label(column).replace("(ns)", "(µs)"))
    ax.set_ylabel("fraction of expired timers")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    return fig
