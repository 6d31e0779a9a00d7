"""Figure: deep-idle residency and wakeups of an idle system, push vs pull.

    python experiments/idle_residency/plot.py [--results DIR] [--out DIR]
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from timerlab.experiment import plot_main, save_figure  # noqa: E402


def plot(out: Path, idle_residency) -> list[Path]:
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), layout="constrained")
    for placement, g in idle_residency.groupby("placement"):
        m = g.groupby("cpus").mean(numeric_only=True)
        axes[0].plot(m.index, m["deepest_state_residency_fraction"] * 100, "o-", label=placement)
        axes[1].plot(m.index, m["wakeups_per_cpu_per_s"], "o-", label=placement)
    axes[0].set(xscale="log", xlabel="CPUs", ylabel="time in C6 (%)", title="deep-idle residency")
    axes[1].set(xscale="log", xlabel="CPUs", ylabel="wakeups per CPU per s", title="wakeups")
    for ax in axes:
        ax.legend()
    return save_figure(fig, out, "idle_residency")


if __name__ == "__main__":
    raise SystemExit(plot_main(__doc__, __file__, ["idle_residency"], plot))
