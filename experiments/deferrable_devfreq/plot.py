"""Figure: wakeups per second and devfreq runs per second per deferrable policy.

    python experiments/deferrable_devfreq/plot.py [--results DIR] [--out DIR]
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from timerlab.experiment import plot_main, save_figure  # noqa: E402


def plot(out: Path, deferrable_devfreq) -> list[Path]:
    t = deferrable_devfreq.groupby("policy", sort=False).mean(numeric_only=True)
    x = np.arange(len(t))
    fig, ax = plt.subplots(figsize=(6, 3.6), layout="constrained")
    ax.bar(x - 0.2, t["wakeups_per_s"], 0.4, label="wakeups of the machine")
    ax.bar(x + 0.2, t["devfreq_runs_per_s"], 0.4, label="devfreq work runs")
    ax.axhline(50, color="k", lw=0.8, ls=":", label="every 20 ms")
    ax.set_xticks(x, t.index)
    ax.set(ylabel="per second", title="devfreq's 20 ms deferrable work on an idle machine")
    ax.legend(fontsize="small")
    return save_figure(fig, out, "deferrable_devfreq")


if __name__ == "__main__":
    raise SystemExit(plot_main(__doc__, __file__, ["deferrable_devfreq"], plot))
