"""Every experiment's --quick mode runs, and its plot step reads what it saved."""
import subprocess
import sys
from pathlib import Path

import pytest

EXPERIMENTS = sorted(p.parent for p in (Path(__file__).parent.parent / "experiments").glob("*/run.py"))


@pytest.mark.parametrize("folder", EXPERIMENTS, ids=lambda p: p.name)
def test_experiment_quick_run_and_plot(folder, tmp_path):
    results, figures = tmp_path / "results", tmp_path / "figures"
    subprocess.run([sys.executable, str(folder / "run.py"), "--quick", "--out", str(results)], check=True)
    assert any(results.iterdir())
    subprocess.run([sys.executable, str(folder / "plot.py"), "--results", str(results), "--out", str(figures)],
                   check=True)
    written = {p.suffix for p in figures.iterdir()}
    assert {".png", ".pdf"} <= written
