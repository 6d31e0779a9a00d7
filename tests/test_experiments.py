"""Every experiment's --quick mode runs, and its plot step reads what it saved;
studies with physical claims check them on their quick results."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import timerlab as tl

EXPERIMENTS_DIR = Path(__file__).parent.parent / "experiments"
EXPERIMENTS = sorted(p.parent for p in EXPERIMENTS_DIR.glob("*/run.py"))


@pytest.mark.parametrize("folder", EXPERIMENTS, ids=lambda p: p.name)
def test_experiment_quick_run_and_plot(folder, tmp_path):
    results, figures = tmp_path / "results", tmp_path / "figures"
    subprocess.run([sys.executable, str(folder / "run.py"), "--quick", "--out", str(results)], check=True)
    assert any(results.iterdir())
    subprocess.run([sys.executable, str(folder / "plot.py"), "--results", str(results), "--out", str(figures)],
                   check=True)
    written = {p.suffix for p in figures.iterdir()}
    assert {".png", ".pdf"} <= written


def _load_run(folder):
    spec = importlib.util.spec_from_file_location(f"experiment_{folder}", EXPERIMENTS_DIR / folder / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_latency_vs_idle_quick_is_physical():
    """The latency study's quick run obeys what idle states imply: polling
    pays no exit latency and keeps the tick, deep idle adds its exit latency
    to cyclictest's worst case, a limit equal to a state's exit latency
    admits it, deeper limits cost latency and save power, and a 50 µs slack
    adds its window (and lets the kept tick's interrupt end a sleep early)."""
    run = _load_run("latency_vs_idle")
    df = run.run(quick=True)
    key = ["workload", "idle_states", "governor"]
    costs = sum(tl.config.LATENCY_DEFAULTS.values())
    callbacks = tl.callbacks.HRTIMER_DEFAULT_NS["tick_nohz_handler"] + tl.callbacks.HRTIMER_DEFAULT_NS["hrtimer_wakeup"]
    wake_max_us = max(tl.Config(cpus=1).wake_latency.stopped[0]) / 1e3
    for (name, states, governor), g in df.groupby(key):
        by = g.set_index("setting")
        exit_us = tl.idle_states.preset(states).states.set_index("name")["exit_latency_ns"] / 1e3
        what = f"{name} {states} {governor}"
        assert (by.loc["qos0", "tick_stops"] == 0) and by.loc["qos0", "c6_residency_fraction"] == 0, what
        # Polling beats the shallowest real state: no exit, no wake latency (only the sleep's slack).
        window_us = 50 if name == "nanosleep_slack50" else 0
        assert by.loc["qos0", "latency_us_max"] < window_us + exit_us["C1"] + (costs + callbacks) / 1e3, what
        assert by.loc["qos0", "latency_us_avg"] < by.loc["c1_only", "latency_us_avg"] \
            < by.loc["unlimited", "latency_us_avg"], what
        assert by.loc["qos0", "power_mw_per_cpu"] > by.loc["c1_only", "power_mw_per_cpu"] \
            > by.loc["unlimited", "power_mw_per_cpu"], what
        # The governors skip a state only if its exit latency exceeds the limit: C6's own admits it.
        same = by.drop(columns=["qos_limit_us", "hist_bins_us", "hist_counts"])
        assert same.loc["c6_allowed"].equals(same.loc["unlimited"]), what
        if name == "cyclictest":
            # cyclictest -p99 has slack 0: its window adds nothing (negative when an earlier event's
            # late interrupt ran it). Deep idle adds its exit latency to the worst case, plus at most
            # the platform's wake latency and the background's timers sharing the interrupt.
            assert (g["window_us_mean"] <= 0).all(), what
            grown = by.loc["unlimited", "latency_us_max"] - by.loc["qos0", "latency_us_max"]
            bound = exit_us["C6"] + wake_max_us + 2 * tl.callbacks.DEFAULT_NS / 1e3
            assert exit_us["C6"] <= grown <= bound, (what, grown, bound)
    slack = df[df["workload"] != "cyclictest"].set_index(key[1:] + ["setting", "workload"])
    for setting in ("qos0", "c1_only"):  # states that do not depend on the sleep's length
        s = slack.xs(setting, level="setting")
        window = s.xs("nanosleep_slack50", level="workload")["latency_us_p50"] \
            - s.xs("nanosleep_slack0", level="workload")["latency_us_p50"]
        assert ((window - 50).abs() < 5).all(), window
    # The kept tick's interrupt inside a 50 µs window ends the sleep before the window closes.
    assert (slack.xs(("qos0", "nanosleep_slack50"), level=["setting", "workload"])["latency_us_min"] < 50).all()
