"""A kernel upgrade predicted from a trace (tl.predict): per-CPU wakeups of
this run, the prediction and the other kernel's real run, side by side."""
from __future__ import annotations

import numpy as np

from ._common import _axes

_RUNS = (("trace", "this trace", "tab:gray"), ("predicted", "predicted", "tab:blue"),
         ("other", "other kernel's run", "tab:orange"))


def prediction(pred, *, ax=None):
    """Wakeups per second of each CPU: the trace (its kernel), the prediction
    (the other kernel, same workload) and, when the prediction was checked,
    the other kernel's real run at this run's workload pace. The title gives
    the share of global timers expired by another CPU in each."""
    from ..fidelity.predict import Prediction

    if not isinstance(pred, Prediction):
        raise TypeError(f"prediction takes what tl.predict returns, got {type(pred).__name__}")
    per_cpu = pred.per_cpu
    runs = [r for r in _RUNS if r[0] in per_cpu.columns.get_level_values(0)]
    fig, ax = _axes(ax, (max(6.0, 0.45 * len(per_cpu) + 2), 3.6))
    width = 0.8 / len(runs)
    xs = np.arange(len(per_cpu))
    for k, (name, label, color) in enumerate(runs):
        v = per_cpu[(name, "wakeups_per_s")].to_numpy(dtype=float)
        if name == "other" and pred.pace_ratio:
            v = v * pred.pace_ratio
            label += " (at this pace)"
        ax.bar(xs + (k - (len(runs) - 1) / 2) * width, v, width, color=color, label=label, gid=f"prediction:{name}")
    ax.set_xticks(xs, [str(c) for c in per_cpu.index])
    ax.set_xlabel("CPU")
    ax.set_ylabel("wakeups (1/s)")
    share = pred.table.loc["global_expired_remote_fraction"]
    parts = [f"{label.split(' (')[0]} {100 * share[name]:.0f} %" for name, label, _ in runs if np.isfinite(share[name])]
    ax.set_title(f"kernel {pred.kernel_from} \u2192 {pred.kernel_to}\nglobal timers expired by another CPU: "
                 + ", ".join(parts), fontsize="medium")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    return fig
