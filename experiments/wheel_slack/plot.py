"""Figure: the wheel's worst and mean slack against the timeout, per HZ.

    python experiments/wheel_slack/plot.py [--results DIR] [--out DIR]

Reads what run.py saved; writes wheel_slack_by_hz.png and .pdf.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from timerlab.experiment import plot_main, save_figure  # noqa: E402


def plot(df: pd.DataFrame, out: Path) -> list[Path]:
    fig, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
    for hz, g in df.groupby("hz"):
        line, = ax.plot(g["timeout_ms"], g["slack_ms_max"] / g["timeout_ms"] * 100, label=f"HZ={hz}, worst")
        ax.plot(g["timeout_ms"], g["slack_ms_mean"] / g["timeout_ms"] * 100, "--", color=line.get_color(),
                label=f"HZ={hz}, mean")
    ax.axhline(800 / 63, color="k", lw=0.8, ls=":", label="8/63 (levels >= 1)")
    ax.set(xscale="log", yscale="log", xlabel="timeout (ms)", ylabel="slack (% of the timeout)",
           title="When a timer fires: slack added by the timer wheel")
    ax.legend(fontsize="small", ncol=2)
    return save_figure(fig, out, "wheel_slack_by_hz")


if __name__ == "__main__":
    raise SystemExit(plot_main(__doc__, __file__, ["wheel_slack"], lambda out, wheel_slack: plot(wheel_slack, out)))
