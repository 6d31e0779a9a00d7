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
    >>> tl.plot.prediction(tl.predict(tr61, kernel="6.12", against=tr612))  # per-CPU wakeups of the three runs
    >>> df = tl.sweep(cfg, {"cpus": [8, 64, 256], "placement": ["push", "pull"]}, seeds=range(5))
    >>> tl.plot.wakeups(df, x="cpus", hue="placement")  # = tl.plot.sweep(df, x=..., y="wakeups_per_cpu_per_s")
    >>> tl.plot.save(fig, "figures/wakeups")      # figures/wakeups.png and .pdf

Confidence bands of :func:`sweep` are Student-t intervals of the mean over
seeds; the t quantile is computed here from the closed-form t distribution
for integer degrees of freedom (numpy and the standard library only).
"""
from ._common import _CROSSNODE_COLOR, _node_color, axis_label, save
from .cpus import CAUSE_COLUMNS, SWEEP_WAKEUPS, residency, wakeups
from .curves import latency_cdf, sweep, t_quantile
from .lanes import TIMELINE_DEFAULT_NS, timeline
from .predict import prediction
from .tree import HIERARCHY_MAX_CPUS, hierarchy

__all__ = ["wakeups", "residency", "timeline", "sweep", "latency_cdf", "hierarchy", "prediction", "save", "t_quantile",
           "axis_label"]
