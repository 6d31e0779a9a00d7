"""``timerlab wheel [TRACE]``: replays the timer events of a real kernel trace
(bundled, or TRACE) through timerlab's timer wheel, shows that every
placement the kernel printed is reproduced, and tabulates the slack the wheel
adds (how much later than requested a timer's bucket expires), per wheel
level and per callback. Writes a figure of slack against timeout.
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from .cli_progress import read_trace
from .experiment import save_figure

BUNDLED_TRACE = "vm2-fsync-sleep-hz250.trace.txt.xz"


def bundled_trace(name: str = BUNDLED_TRACE) -> Path:
    """Path of a real trace shipped with the package (python/timerlab/data)."""
    return Path(str(resources.files("timerlab") / "data" / name))


def slack_tables(placement: pd.DataFrame, hz: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Slack of each placed timer (bucket expiry - expires), per level and per callback."""
    p = placement.assign(
        level=placement["idx_kernel"] // 64,
        slack_jiffies=(placement["bucket_expiry_kernel"] - placement["expires_jiffies"]).astype(np.int64),
    )
    tick_ms = 1000 / hz
    p["slack_ms"] = p["slack_jiffies"] * tick_ms
    p["timeout_ms"] = p["timeout_jiffies"] * tick_ms
    p["relative_slack"] = p["slack_jiffies"] / p["timeout_jiffies"].clip(lower=1)
    per_level = p.groupby("level").agg(
        timers=("slack_jiffies", "size"),
        timeout_ms_min=("timeout_ms", "min"),
        timeout_ms_max=("timeout_ms", "max"),
        slack_ms_mean=("slack_ms", "mean"),
        slack_ms_max=("slack_ms", "max"),
        relative_slack_max=("relative_slack", "max"),
    )
    per_function = (
        p.groupby("function")
        .agg(timers=("slack_jiffies", "size"), base=("base", lambda b: "/".join(sorted(set(b)))),
             timeout_ms_median=("timeout_ms", "median"), slack_ms_mean=("slack_ms", "mean"))
        .sort_values("timers", ascending=False)
    )
    return per_level, per_function


def _plot_slack(placement: pd.DataFrame, hz: int, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tick_ms = 1000 / hz
    timeout = placement["timeout_jiffies"].clip(lower=0).to_numpy() * tick_ms
    slack = (placement["bucket_expiry_kernel"] - placement["expires_jiffies"]).astype(np.int64).to_numpy() * tick_ms
    level = (placement["idx_kernel"] // 64).to_numpy()
    fig, ax = plt.subplots(figsize=(6.4, 4.0), layout="constrained")
    for lvl in np.unique(level):
        sel = level == lvl
        ax.scatter(timeout[sel] + tick_ms / 2, slack[sel], s=8, label=f"level {lvl}")
    grid = np.logspace(0, np.log10(max(timeout.max(), 10) * 2), 200)
    ax.plot(grid, grid * 8 / 63, "k--", lw=0.8, label="8/63 of the timeout")
    ax.set(xscale="log", yscale="log", xlabel="timeout requested (ms)", ylabel="slack added by the wheel (ms)",
           title=f"Timer wheel slack, HZ={hz}")
    ax.legend(fontsize="small")
    return save_figure(fig, out, "wheel_slack")


def wheel(trace_path: Path | None, out: Path, plot: bool, hz: int) -> int:
    import timerlab as tl
    from timerlab.fidelity import wheel_replay

    path = trace_path or bundled_trace()
    trace = read_trace(path)
    replay = wheel_replay(trace, hz=hz, progress=True)
    p = replay.placement
    if p.empty:
        raise ValueError(f"{path}: the trace has no timer_start events; enable the timer:timer_start event")
    lagging = p[p["explanation"] != "clk == jiffies"]
    print(f"timerlab wheel: the kernel's timer wheel, replayed on {path.name}")
    print(f"  {len(trace.events):,} events, {trace.nr_cpus} CPUs, HZ={hz}\n")
    print(f"Placement: {int(p['agrees'].sum()):,} of {len(p):,} timer_start events reproduced exactly "
          f"(bucket index and bucket expiry), {len(lagging)} of them from a base clock behind jiffies:")
    for row in lagging.itertuples():
        print(f"  line {row.line}: {row.function} ({row.base} base of CPU {row.base_cpu}), clk "
              f"{row.clk_lag_jiffies} jiffies behind: {row.explanation}")
    x = replay.expiries
    known = x["baseclk_replayed"].notna()
    print(f"Expiry: {int(x.loc[known, 'agrees'].sum()):,} of {int(known.sum()):,} timer_expire_entry events "
          f"collected at the kernel's baseclk ({int((~known).sum())} timers were armed before the trace began)\n")
    per_level, per_function = slack_tables(p, hz)
    with pd.option_context("display.float_format", "{:.2f}".format, "display.width", 120):
        print("Slack the wheel adds, per level (ms):")
        print(per_level.to_string())
        print("\nBusiest callbacks:")
        print(per_function.head(10).to_string())
    if plot:
        out.mkdir(parents=True, exist_ok=True)
        for written in _plot_slack(p, hz, out):
            print(f"\nwrote {written}", end="")
        print()
    return 0
