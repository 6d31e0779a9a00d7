"""Figure: idle entries of the target CPUs without and with lazy wakeup,
simulated beside the patch's measurement.

    python experiments/lazy_wakeup/plot.py [--results DIR] [--out DIR]
"""
from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from timerlab.experiment import plot_main, save_figure  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import table  # noqa: E402


def plot(out: Path, lazy_wakeup) -> list[Path]:
    t = table(lazy_wakeup)
    fig, ax = plt.subplots(figsize=(6.4, 3.8), layout="constrained")
    x = np.arange(len(t))
    for i, (col, label) in enumerate([("seed_without_lazy", "patch: without lazy"),
                                      ("seed_with_lazy", "patch: with lazy"),
                                      ("sim_without_lazy", "timerlab: always"),
                                      ("sim_with_lazy", "timerlab: lazy")]):
        ax.bar(x + (i - 1.5) * 0.2, t[col], 0.2, label=label, hatch="//" if col.startswith("seed") else None)
    ax.set_xticks(x, [f"CPU {c}" for c in t.index])
    ax.set(ylabel="idle entries", title="Remote enqueues to CPUs 8-11 (lazy NOHZ wakeup)")
    ax.legend(fontsize="small")
    return save_figure(fig, out, "lazy_wakeup")


if __name__ == "__main__":
    raise SystemExit(plot_main(__doc__, __file__, ["lazy_wakeup"], plot))
