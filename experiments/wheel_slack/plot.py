"""Figure: the wheel's worst and mean slack against the timeout, per HZ.

    python experiments/wheel_slack/plot.py [--results DIR] [--out DIR]

Reads what run.py saved; writes wheel_slack_by_hz.png and .pdf.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

HERE = Path(__file__).resolve().parent


def load(results: Path) -> pd.DataFrame:
    for name, reader in (("wheel_slack.parquet", pd.read_parquet), ("wheel_slack.csv", pd.read_csv)):
        if (results / name).exists():
            return reader(results / name)
    raise FileNotFoundError(f"{results}: no wheel_slack results; run experiments/wheel_slack/run.py first")


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
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "wheel_slack_by_hz.png", out / "wheel_slack_by_hz.pdf"]
    for p in paths:
        fig.savefig(p, dpi=150)
    plt.close(fig)
    return paths


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=HERE / "results")
    ap.add_argument("--out", type=Path, default=HERE / "figures")
    args = ap.parse_args(argv)
    for p in plot(load(args.results), args.out):
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
