"""Figure: wakeups, power and timer-code time per CPU against CPU count, per node count, push vs pull
(mean and 95 % band across seeds, tl.plot.sweep).

    python experiments/scaling/plot.py [--results DIR] [--out DIR]
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from timerlab import plot as tlplot  # noqa: E402
from timerlab.experiment import plot_main, save_figure  # noqa: E402


def plot(out: Path, scaling) -> list[Path]:
    nodes = sorted(scaling["nodes"].unique())
    fig, axes = plt.subplots(3, len(nodes), figsize=(4 * len(nodes), 9), layout="constrained", squeeze=False)
    for j, n in enumerate(nodes):
        sub = scaling[scaling["nodes"] == n]
        tlplot.sweep(sub, x="cpus", y="wakeups_per_cpu_per_s", hue="placement", ax=axes[0][j])
        tlplot.sweep(sub, x="cpus", y="power_mw_per_cpu", hue="placement", ax=axes[1][j])
        tlplot.sweep(sub, x="cpus", y="timer_overhead_us_per_cpu_per_s", hue="placement", ax=axes[2][j])
        axes[0][j].set_title(f"{n} node{'s' if n > 1 else ''}")
    return save_figure(fig, out, "scaling")


if __name__ == "__main__":
    raise SystemExit(plot_main(__doc__, __file__, ["scaling"], plot))
