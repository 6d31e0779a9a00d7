"""Slack the timer wheel adds to a timeout, across HZ (reference §1.2-§1.3, §10.3).

    python experiments/wheel_slack/run.py [--quick] [--out DIR]

For every timeout from 1 ms to 1 hour (log-spaced) and a fixed random sample
of start jiffies (uniform over 2^27 jiffies, more than the coarsest granule
reached), arms the timer on a wheel whose clock is jiffies and records when
its bucket expires; timeouts convert to jiffies rounding up, as
msecs_to_jiffies does. Saves the raw table to
DIR/wheel_slack.parquet; plot.py makes the figure.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

import timerlab as tl
from timerlab.experiment import run_main

HZS = (100, 250, 1000)


def run(quick: bool) -> pd.DataFrame:
    timeouts_ms = np.unique(np.logspace(0, np.log10(3.6e6), 60 if quick else 400).round())
    rng = np.random.default_rng(1)
    starts = rng.integers(0, 1 << 27, size=64 if quick else 4096, dtype=np.uint64) + np.uint64(4294667296)
    frames = []
    for hz in HZS:
        timeout_j = np.maximum(1, np.ceil(timeouts_ms * hz / 1000)).astype(np.uint64)
        clk, t = np.meshgrid(starts, timeout_j, indexing="ij")
        idx, bucket = tl.calc_wheel_index(clk + t, clk, hz=hz)
        fired_after_ms = (bucket - clk).astype(np.float64) * 1000 / hz
        frames.append(pd.DataFrame({
            "hz": hz,
            "timeout_ms": np.broadcast_to(timeouts_ms, clk.shape).ravel(),
            "level": (idx // 64).ravel(),
            "fires_after_ms": fired_after_ms.ravel(),
        }))
    df = pd.concat(frames, ignore_index=True)
    df["slack_ms"] = df["fires_after_ms"] - df["timeout_ms"]
    return (df.groupby(["hz", "timeout_ms"])
              .agg(level=("level", "max"), slack_ms_mean=("slack_ms", "mean"), slack_ms_max=("slack_ms", "max"))
              .reset_index())


if __name__ == "__main__":
    raise SystemExit(run_main(__doc__, __file__, "wheel_slack", run))
