"""Figure: share of idle periods in a too-deep (above) or too-shallow (below)
state per governor, and the energy each spends relative to the oracle.

    python experiments/governor_misses/plot.py [--results DIR] [--out DIR]

Reads what run.py saved; writes governor_misses.png and .pdf.
"""
from __future__ import annotations

from pathlib import Path
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from timerlab.experiment import plot_main, save_figure  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import table  # noqa: E402


def plot(out: Path, governor_misses) -> list[Path]:
    t = table(governor_misses)
    tables = t.index.get_level_values(0).unique()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8), layout="constrained")
    width = 0.8 / len(tables)
    for i, states in enumerate(tables):
        sub = t.xs(states, level="idle_states")
        x = np.arange(len(sub)) + i * width
        axes[0].bar(x, sub["above_fraction"] * 100, width, label=f"{states}: above", color=f"C{2 * i}")
        axes[0].bar(x, sub["below_fraction"] * 100, width, bottom=sub["above_fraction"] * 100,
                    label=f"{states}: below", color=f"C{2 * i + 1}")
        axes[1].bar(x, (sub["energy_vs_oracle"] - 1) * 100, width, label=states, color=f"C{2 * i}")
    for ax in axes:
        ax.set_xticks(np.arange(len(sub)) + width * (len(tables) - 1) / 2, sub.index)
    axes[0].set(ylabel="idle periods (%)", title="cpu_idle_miss: above / below")
    axes[1].set(ylabel="energy above the oracle's (%)", title="energy", yscale="symlog")
    axes[0].legend(fontsize="small")
    axes[1].legend(fontsize="small")
    return save_figure(fig, out, "governor_misses")


if __name__ == "__main__":
    raise SystemExit(plot_main(__doc__, __file__, ["governor_misses"], plot))
