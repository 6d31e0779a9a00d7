"""Figure: latency CDF per idle-state limit beside the power each costs, per
idle table (rows): cyclictest, then the nanosleep sleepers with 50 µs and 0
slack (menu solid, teo dashed; dotted verticals: the table's exit
latencies), then power per CPU per setting.

    python experiments/latency_vs_idle/plot.py [--results DIR] [--out DIR]

Reads what run.py saved; writes latency_vs_idle.png and .pdf.
"""
from __future__ import annotations

from pathlib import Path
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import timerlab as tl  # noqa: E402
from timerlab.experiment import plot_main, save_figure  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import HIST_US, SETTINGS, WORKLOADS  # noqa: E402

LABELS = {"qos0": "PM QoS 0 (POLL)", "c1_only": "C1 only", "c6_allowed": "C6 allowed", "unlimited": "no limit"}
TITLES = {"cyclictest": "cyclictest -p99 -i1000", "nanosleep_slack50": "nanosleep, 50 µs slack",
          "nanosleep_slack0": "nanosleep, slack 0"}


def cdf(g) -> tuple[np.ndarray, np.ndarray]:
    """The pooled histogram of the runs in ``g`` (seeds) as a CDF over the
    bins' upper edges (a bin b holds [b, b+1) µs; overflows count at the end)."""
    counts = np.zeros(HIST_US + 1)
    for bins, c, over in zip(g["hist_bins_us"], g["hist_counts"], g["hist_overflows"]):
        np.add.at(counts, np.asarray(bins, dtype=int), np.asarray(c, dtype=float))
        counts[HIST_US] += over
    keep = counts > 0
    x, y = np.arange(1, HIST_US + 2)[keep], np.cumsum(counts[keep]) / counts.sum()
    return np.r_[x[0], x], np.r_[0.0, y]  # start at 0 so a single bin still draws its step


def plot(out: Path, latency_vs_idle) -> list[Path]:
    df = latency_vs_idle
    tables = list(dict.fromkeys(df["idle_states"]))
    fig, axes = plt.subplots(len(tables), len(WORKLOADS) + 1, figsize=(16, 3.6 * len(tables)),
                             layout="constrained", squeeze=False)
    colours = {s: f"C{i}" for i, s in enumerate(SETTINGS)}
    for row, states in zip(axes, tables):
        for ax, name in zip(row, WORKLOADS):
            for (governor, setting), g in df[(df["idle_states"] == states) & (df["workload"] == name)].groupby(
                    ["governor", "setting"], sort=False):
                x, y = cdf(g)
                # c6_allowed equals no limit on tables whose deepest state is C6: draw it thin on top.
                top = setting == "c6_allowed"
                ax.step(x, y, where="post", color=colours[setting], lw=1.0 if top else 2.0, zorder=3 if top else 2,
                        ls=("-" if governor == "menu" else "--") if not top else (":" if governor == "menu" else "-."),
                        label=f"{LABELS[setting]}, {governor}")
            _exit_latencies(ax, states)
            ax.set(xscale="log", xlim=(0.5, HIST_US + 1), ylim=(0, 1.01), xlabel="latency (µs, bin upper edge)",
                   ylabel="share of wakeups", title=f"{states}: {TITLES[name]}")
            ax.grid(alpha=0.3)
        _power(row[-1], df[df["idle_states"] == states], states)
    fig.legend(*axes[0][0].get_legend_handles_labels(), loc="outside lower center", ncol=8, fontsize="small")
    return save_figure(fig, out, "latency_vs_idle")


def _exit_latencies(ax, states) -> None:
    """The table's (published, intel_idle) exit latencies, for the eye to
    measure each CDF's step against."""
    for r in tl.idle_states.preset(states).states.itertuples():
        if r.exit_latency_ns > 0:
            ax.axvline(r.exit_latency_ns / 1e3, color="0.6", lw=0.8, ls=":", zorder=1)
            ax.text(r.exit_latency_ns / 1e3, 0.02, f" {r.name} exit", rotation=90, fontsize=6, color="0.4",
                    va="bottom", ha="right")


def _power(ax, df, states) -> None:
    """Bars: menu's power per CPU per setting and workload; teo as a black tick."""
    width = 0.8 / len(WORKLOADS)
    m = df.groupby(["workload", "governor", "setting"])["power_mw_per_cpu"].mean()
    for i, name in enumerate(WORKLOADS):
        x = np.arange(len(SETTINGS)) + (i - (len(WORKLOADS) - 1) / 2) * width
        ax.bar(x, [m[name, "menu", s] for s in SETTINGS], width, color=f"C{i + 4}", label=f"{name} (menu)")
        ax.plot(x, [m[name, "teo", s] for s in SETTINGS], "k_", ms=9, label="teo" if i == 0 else None)
    ax.set_xticks(np.arange(len(SETTINGS)), [LABELS[s] for s in SETTINGS], rotation=20, fontsize="small")
    ax.set(ylabel="power per CPU (mW = mJ per CPU-s)", title=f"{states}: energy per setting")
    ax.legend(fontsize="x-small")


if __name__ == "__main__":
    raise SystemExit(plot_main(__doc__, __file__, ["latency_vs_idle"], plot))
