"""Plumbing shared by the scripts of experiments/: save and load result
tables (Parquet), write figures as PNG and PDF, and the two command lines
every experiment has (``run.py [--quick] [--out DIR]``,
``plot.py [--results DIR] [--out DIR]``)."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable

import pandas as pd

__all__ = ["save_table", "load_table", "save_figure", "print_table", "run_main", "plot_main"]


def save_table(df: pd.DataFrame, out: Path, name: str) -> Path:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.parquet"
    df.to_parquet(path)
    return path


def load_table(results: Path, name: str, made_by: str) -> pd.DataFrame:
    path = Path(results) / f"{name}.parquet"
    if not path.exists():
        raise FileNotFoundError(f"{path}: no results; run {made_by} first")
    return pd.read_parquet(path)


def save_figure(fig, out: Path, stem: str) -> list[Path]:
    import matplotlib.pyplot as plt

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.png", out / f"{stem}.pdf"]
    for p in paths:
        fig.savefig(p, dpi=150)
    plt.close(fig)
    return paths


def print_table(df: pd.DataFrame) -> None:
    """A results table in full, numbers to 4 significant digits."""
    with pd.option_context("display.width", 200, "display.max_columns", 30, "display.max_rows", 200,
                           "display.float_format", "{:.4g}".format):
        print(df.to_string())


def run_main(doc: str, script: str, name: str, run: Callable[[bool], pd.DataFrame],
             table: Callable[[pd.DataFrame], pd.DataFrame] | None = None, headline: str = "", argv=None) -> int:
    """``run(quick)`` makes the results, saved in --out as ``name``; ``table``
    (if given) summarises them for the terminal, after ``headline`` (the
    seed's claim the table is set beside)."""
    here = Path(script).resolve().parent
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a small version that runs in seconds")
    ap.add_argument("--out", type=Path, default=here / "results")
    args = ap.parse_args(argv)
    df = run(args.quick)
    if headline:
        print(headline)
    if table is not None:
        print_table(table(df))
    print(f"wrote {save_table(df, args.out, name)}")
    return 0


def plot_main(doc: str, script: str, names: list[str], plot: Callable[..., list], argv=None) -> int:
    """``plot(out, **tables)`` gets the saved tables by name and returns the paths written."""
    here = Path(script).resolve().parent
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=here / "results")
    ap.add_argument("--out", type=Path, default=here / "figures")
    args = ap.parse_args(argv)
    made_by = f"{here.name}/run.py"
    tables = {n: load_table(args.results, n, made_by) for n in names}
    for p in plot(args.out, **tables):
        print(f"wrote {p}")
    return 0
