"""The command line: `timerlab demo` and its errors."""
import lzma
import subprocess
import sys

import timerlab.cli as cli


def test_demo_prints_tables_and_writes_figures(tmp_path, capsys):
    with lzma.open(cli._bundled_trace(), "rt") as f:
        starts = sum(" timer_start: " in line for line in f)
    assert cli.main(["demo", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"{starts:,} of {starts:,} timer_start events reproduced exactly" in out
    assert "Slack the wheel adds, per level" in out
    assert (tmp_path / "wheel_slack.png").stat().st_size > 0
    assert (tmp_path / "wheel_slack.pdf").stat().st_size > 0


def test_user_mistakes_print_one_line(tmp_path):
    missing = tmp_path / "nope.txt"
    r = subprocess.run([sys.executable, "-m", "timerlab.cli", "demo", "--trace", str(missing), "--no-plot"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "nope.txt" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "timerlab.cli", "demo", "--hz", "64", "--no-plot"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "hz" in r.stderr and "Traceback" not in r.stderr
