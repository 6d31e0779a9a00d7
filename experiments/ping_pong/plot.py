"""Figure: wakeups per sleep of schedule_timeout sleepers, push vs pull, by cause.

    python experiments/ping_pong/plot.py [--results DIR] [--out DIR]
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from timerlab.experiment import plot_main, save_figure  # noqa: E402

PARTS = [("sleeper_wakeups_timer", "sleeper CPU: its timer"),
         ("sleeper_wakeups_ipi", "sleeper CPU: IPI after remote expiry"),
         ("sleeper_wakeups_remote_duty", "sleeper CPU: migrator duty"),
         ("sleeper_wakeups_tick", "sleeper CPU: the tick kept after the task"),
         ("sleeper_wakeups_irq", "sleeper CPU: device interrupt"),
         ("other_wakeups", "other CPUs")]


def plot(out: Path, ping_pong) -> list[Path]:
    t = ping_pong.groupby("placement").sum(numeric_only=True).loc[["push", "pull"]]
    fig, ax = plt.subplots(figsize=(5.6, 3.8), layout="constrained")
    bottom = 0
    for col, label in PARTS:
        h = t[col] / t["sleeps"]
        ax.bar(t.index, h, bottom=bottom, label=label)
        bottom = bottom + h
    ax.set(ylabel="wakeups per sleep", title="schedule_timeout sleepers: the pull-model ping-pong")
    ax.legend(fontsize="small")
    return save_figure(fig, out, "ping_pong")


if __name__ == "__main__":
    raise SystemExit(plot_main(__doc__, __file__, ["ping_pong"], plot))
