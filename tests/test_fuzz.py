"""The fuzz targets (fuzz/targets.py) on every change, driven by hypothesis
for a bounded number of inputs (tens of seconds in all; the long runs are
`python fuzz/run.py`, fuzz/README.md), and a regression test for each
finding of the fuzzers (issue 17). The C++ targets run under ctest, in the
ASan + UBSan build in CI."""
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import timerlab as tl
from strategies import WORKLOAD_ERRORS, any_options, invalid_options

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))
import targets  # noqa: E402



def fuzz(n: int):
    return settings(max_examples=n, deadline=None, suppress_health_check=[
        HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])


@fuzz(2000)
@given(data=st.binary(min_size=64, max_size=128))
def test_fuzz_trace_lines(data):
    targets.trace_lines(data)


@fuzz(200)
@given(data=st.binary(min_size=32, max_size=64))
def test_fuzz_compressed_files(data, tmp_path):
    targets.compressed_file(data, tmp_path)


@fuzz(100)
@given(options=any_options(max_cpus=256, max_duration_ns=5_000_000))
def test_fuzz_valid_configs_run(options):
    targets.config_runs(options)


@fuzz(300)
@given(case=invalid_options())
def test_fuzz_invalid_configs_fail_at_config_naming_the_option(case):
    targets.config_refused(*case)


@pytest.mark.parametrize("builder, kwargs, name", WORKLOAD_ERRORS, ids=lambda x: getattr(x, "__name__", None))
def test_workload_errors_name_the_option(builder, kwargs, name):
    with pytest.raises((ValueError, TypeError), match=name.split(".")[-1]):
        builder(**kwargs)


@fuzz(300)
@given(data=st.binary(min_size=32, max_size=64))
def test_fuzz_config_files(data, tmp_path):
    targets.config_file(data, tmp_path)


@fuzz(10)
@given(data=st.binary(min_size=64, max_size=128))
def test_fuzz_replay_of_damaged_traces(data, tmp_path):
    targets.replay(data, tmp_path)


# ---------------------------------------------------------------------------
# What the fuzzers found.

@pytest.mark.parametrize("kwargs, words", [
    (dict(cpus=6, smt=4), "smt=4 must divide cpus=6"),  # was: llc_size=6 ..., from the core at simulate time
    (dict(start_ns=2**62 - 10, duration_ns=2**61), "start_ns \\+ duration_ns must be <= 2\\*\\*62"),
    (dict(cpus=4, nodes=5, layout="interleaved"), "nodes=5 exceeds cpus=4"),  # was: node_of_cpu leaves ...
])
def test_config_errors_found_by_fuzzing(kwargs, words):
    with pytest.raises(ValueError, match=words):
        tl.Config(**kwargs)


def test_tasks_that_take_no_time_fail_where_they_are_built():
    """Was: the core refused run_ns + sleep_ns = 0 at simulate time; and a
    1-ns cycle (a damaged config file) took a step per ns, minutes per run."""
    for run, sleep in ((0, 0), (0, 1), (200, 700)):
        with pytest.raises(ValueError, match="tasks.run_ns \\+ tasks.sleep_ns must average at least 1000 ns"):
            tl.workloads.tasks(run_ns=run, sleep_ns=sleep)
    tl.workloads.tasks(run_ns=0, sleep_ns=1000)


def test_a_bad_distribution_in_a_config_file_names_the_file(tmp_path):
    path = tmp_path / "d.toml"
    path.write_text('[[workload]]\nkind = "tasks"\nsleep_ns = {uniform = [2e7, 1e6]}\n')
    with pytest.raises(ValueError, match=r"d.toml: workload\[0\].sleep_ns: uniform: high=1e\+06 < low=2e\+07"):
        tl.config_file.load_config(path)


def test_a_config_file_that_is_not_utf8_names_the_file(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_bytes(b"cpus = 8\nname = \"\xff\"\n")
    with pytest.raises(ValueError, match="bad.toml: not valid TOML"):
        tl.config_file.load_config(path)


def test_replay_of_a_trace_without_cpu_idle_events(tmp_path):
    """A KeyError ('state') when no event of the trace had a state= field."""
    text = Path(targets.TRACES / "vm2-fsync-sleep-hz250.trace.txt.xz")
    import lzma
    lines = lzma.decompress(text.read_bytes()).split(b"\n")[:3000]
    kept = [line for line in lines if b"cpu_idle" not in line]
    path = tmp_path / "no-idle.txt"
    path.write_bytes(b"\n".join(kept) + b"\n")
    tr = tl.read_ftrace(path)
    assert "state" not in tr.events
    res = tl.simulate(tr.to_config())
    assert res.summary["timers_armed"] > 0


def test_features_of_a_timer_start_without_flags(tmp_path):
    """A timer_start whose flags= was cut off by damage (flags is optional): the
    flags check of features.py split the missing value (TypeError)."""
    line = ("  x-1 [000] d..1. 1.0000{:02d}: timer_start: timer=0000000000000001 function=process_timeout "
            "expires=4294892297 [timeout=1] bucket_expiry=4294892298 cpu=0 idx=10{}\n")
    path = tmp_path / "t.txt"
    path.write_text(line.format(1, " flags=D") + line.format(2, "") + line.format(3, " flags=P"))
    tr = tl.read_ftrace(path)
    assert tr.features.timer_flags == "traced" and tr.events["flags"].isna().sum() == 1


def test_a_huge_time_in_a_workload_is_refused_not_overflowed():
    """run_ns={exponential = 2e54} (a damaged config file): the task's start
    phase overflowed int64 in the core, the clock went negative and the run
    never ended. Times are now bounded by 2**62 ns, in Python and in the core."""
    with pytest.raises(ValueError, match="exponential mean must be <= 4.61169e\\+18"):
        tl.dist.exponential(2e54)
    with pytest.raises(ValueError, match="lognormal sigma must be <= 10"):
        tl.dist.lognormal(1e6, 40)
    w = tl.workloads.tasks(run_ns=tl.dist.lognormal(2**61, 10), sleep_ns=1e6)  # a mean beyond any time
    res = tl.simulate(tl.Config(cpus=2, duration_ns=2_000_000, workload=w), time_limit_s=60)
    assert (res.per_cpu["busy_ns"] + res.per_cpu["idle_ns"] == 2_000_000).all()


def test_replay_of_a_timer_start_without_flags(tmp_path):
    """A timer_start whose optional flags= was lost (a damaged line read
    leniently): build_script parsed the missing value as flags (TypeError)."""
    import lzma
    import re
    lines = lzma.decompress((targets.TRACES / "vm2-fsync-sleep-hz250.trace.txt.xz").read_bytes()).split(b"\n")[:3000]
    i = next(k for k, line in enumerate(lines) if b"timer_start:" in line and b" flags=" in line)
    lines[i] = re.sub(rb" flags=\S*", b"", lines[i])
    path = tmp_path / "t.txt"
    path.write_bytes(b"\n".join(lines) + b"\n")
    tr = tl.read_ftrace(path)
    assert tr.of("timer_start")["flags"].isna().sum() == 1
    assert tl.simulate(tr.to_config()).summary["timers_armed"] > 0
