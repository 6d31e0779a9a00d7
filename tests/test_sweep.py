"""tl.sweep: one tidy frame per grid x seeds, identical whatever the backend,
the worker count or the cache; bad grids and cache paths refused before
anything runs; failed points reported with their values. Real runs, small
configs."""
import itertools

import pandas as pd
import pytest

import timerlab as tl
from timerlab.sweep import WALL_CLOCK, SweepError, sweep

CFG = tl.Config(cpus=4, duration_ns=20_000_000)
GRID = {"cpus": [4, 8], "placement": ["push", "pull"]}
SEEDS = range(5)
UNREACHABLE = "tcp://127.0.0.1:1"


def summary_row(cfg: tl.Config) -> dict:
    return {k: v for k, v in tl.simulate(cfg).summary.items() if k not in WALL_CLOCK}


@pytest.fixture(scope="module")
def serial() -> pd.DataFrame:
    return sweep(CFG, GRID, seeds=SEEDS, backend="serial", progress=False)


def test_rows_in_grid_then_seed_order_with_summary_columns(serial):
    assert list(serial.columns[:3]) == ["cpus", "placement", "seed"]
    assert not set(WALL_CLOCK) & set(serial.columns)
    expected = [(c, p, s) for c, p in itertools.product(*GRID.values()) for s in SEEDS]
    assert list(serial[["cpus", "placement", "seed"]].itertuples(index=False, name=None)) == expected
    assert serial.attrs["computed"] == 20 and serial.attrs["cached"] == 0
    # The grid's columns are the values as given; the summary's duplicate is not repeated.
    assert list(serial.columns).count("cpus") == 1
    assert (serial.groupby("seed")["wakeups"].nunique() > 1).any()


@pytest.mark.parametrize("backend", ["processes", "dask"])
def test_backends_give_identical_frames(serial, backend, capsys):
    df = sweep(CFG, GRID, seeds=SEEDS, backend=backend, workers=2, progress=backend == "processes")
    pd.testing.assert_frame_equal(df, serial)
    if backend == "processes":
        assert "20/20" in capsys.readouterr().err


def test_same_point_same_row_in_any_sweep(serial):
    other = sweep(CFG, {"placement": ["pull"], "cpus": [8, 16]}, seeds=[7, 3], backend="serial", progress=False)
    a = serial[(serial.cpus == 8) & (serial.placement == "pull") & (serial.seed == 3)].iloc[0]
    b = other[(other.cpus == 8) & (other.seed == 3)].iloc[0]
    pd.testing.assert_series_equal(a[serial.columns], b[serial.columns], check_names=False)
    assert a.drop(["cpus", "placement", "seed"]).to_dict() == {
        k: v for k, v in summary_row(CFG.replace(cpus=8, placement="pull", seed=3)).items()
        if k not in ("cpus", "placement")}


def test_empty_grid_runs_the_base_config_with_its_seed():
    df = sweep(CFG.replace(seed=9), {}, backend="serial", progress=False)
    assert len(df) == 1 and df.columns[0] == "seed" and df.seed[0] == 9
    assert df.drop(columns="seed").iloc[0].to_dict() == summary_row(CFG.replace(seed=9))


def test_dotted_name_changes_one_key_of_a_dict_option():
    df = sweep(CFG, {"overhead.enqueue_ns": [62.0, 500.0]}, backend="serial", progress=False)
    assert list(df["overhead.enqueue_ns"]) == [62.0, 500.0]
    merged = CFG.replace(overhead={**CFG.overhead, "enqueue_ns": 500.0})
    assert df.timer_overhead_ns[1] == summary_row(merged)["timer_overhead_ns"] > df.timer_overhead_ns[0]


def test_cached_rerun_computes_nothing(serial, tmp_path):
    cache = tmp_path / "sweep.parquet"
    first = sweep(CFG, GRID, seeds=SEEDS, backend="serial", progress=False, cache=cache)
    again = sweep(CFG, GRID, seeds=SEEDS, backend="serial", progress=False, cache=cache)
    assert (first.attrs["computed"], again.attrs["computed"], again.attrs["cached"]) == (20, 0, 20)
    pd.testing.assert_frame_equal(again, serial)
    pd.testing.assert_frame_equal(first, serial)


def test_partly_cached_grid_computes_only_the_missing_points(serial, tmp_path):
    cache = str(tmp_path / "sweep.parquet")
    part = sweep(CFG, {"cpus": [8], "placement": ["push", "pull"]}, seeds=SEEDS, backend="processes", workers=2,
                 progress=False, cache=cache)
    assert part.attrs["computed"] == 10
    full = sweep(CFG, GRID, seeds=SEEDS, backend="serial", progress=False, cache=cache)
    assert (full.attrs["computed"], full.attrs["cached"]) == (10, 10)
    pd.testing.assert_frame_equal(full, serial)
    # The file keeps the union: another grid in between loses nothing.
    sweep(CFG, {"hz": [1000]}, backend="serial", progress=False, cache=cache)
    assert sweep(CFG, GRID, seeds=SEEDS, backend="serial", progress=False, cache=cache).attrs["computed"] == 0


def test_per_cpu_rows_and_their_cache(tmp_path):
    cache = tmp_path / "cpus.parquet"
    df = sweep(CFG, {"cpus": [4, 8]}, seeds=[1, 2], per_cpu=True, backend="serial", progress=False, cache=cache)
    assert len(df) == (4 + 8) * 2 and list(df.columns[:4]) == ["cpus", "seed", "cpu", "node"]
    rows = df[(df.cpus == 8) & (df.seed == 2)].drop(columns=["cpus", "seed"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(rows, tl.simulate(CFG.replace(cpus=8, seed=2)).per_cpu)
    again = sweep(CFG, {"cpus": [4, 8]}, seeds=[1, 2], per_cpu=True, backend="serial", progress=False, cache=cache)
    assert again.attrs["computed"] == 0
    pd.testing.assert_frame_equal(again, df)
    with pytest.raises(ValueError, match="holds per_cpu rows"):
        sweep(CFG, {"cpus": [4]}, backend="serial", progress=False, cache=cache)


# Each is refused before anything runs: with an unreachable scheduler, running would be a ConnectionError.
@pytest.mark.parametrize("grid, error, match", [
    ({"nope": [1]}, ValueError, r"unknown option 'nope'.*'cpus'.*'placement'"),
    ({"cpus": []}, ValueError, r"grid\['cpus'\] is an empty list"),
    ({"cpus": 4}, TypeError, r"grid\['cpus'\] must be a list"),
    ({"placement": "pull"}, TypeError, r"grid\['placement'\] must be a list"),
    ({"overhead.nope": [1.0]}, ValueError, r"'overhead' has no key 'nope'; keys are \[.*'enqueue_ns'"),
    ({"hz.x": [1]}, ValueError, r"option 'hz' is not a dict"),
    ({"nope.x": [1]}, ValueError, r"unknown option 'nope'"),
    ({"overhead": [None], "overhead.enqueue_ns": [1.0]}, ValueError, "not both"),
    ({"seed": [1, 2]}, ValueError, "seeds="),
    ([("cpus", [4])], TypeError, "grid must be a dict"),
])
def test_bad_grid_fails_fast(grid, error, match):
    with pytest.raises(error, match=match):
        sweep(CFG, grid, backend="dask", scheduler=UNREACHABLE, progress=False)


def test_bad_seeds_and_backend():
    with pytest.raises(ValueError, match="seeds is empty"):
        sweep(CFG, {}, seeds=[], backend="serial")
    with pytest.raises(ValueError, match="seeds must be >= 0"):
        sweep(CFG, {}, seeds=[-1], backend="serial")
    with pytest.raises(ValueError, match="backend='threads'.*'serial'"):
        sweep(CFG, {}, backend="threads")


def test_unwritable_cache_path_fails_fast(tmp_path):
    missing = tmp_path / "no" / "such" / "sweep.parquet"
    with pytest.raises(ValueError, match=f"cache='{missing}'.*does not exist"):
        sweep(CFG, GRID, backend="dask", scheduler=UNREACHABLE, progress=False, cache=missing)
    with pytest.raises(ValueError, match=f"cache='{tmp_path}' is a directory"):
        sweep(CFG, GRID, backend="dask", scheduler=UNREACHABLE, progress=False, cache=tmp_path)
    junk = tmp_path / "junk.parquet"
    junk.write_text("not parquet")
    with pytest.raises(ValueError, match="not a readable Parquet file"):
        sweep(CFG, GRID, backend="dask", scheduler=UNREACHABLE, progress=False, cache=junk)


def test_unreachable_scheduler_is_a_clear_error():
    # The message names the short connect timeout sweep uses (not distributed's default).
    with pytest.raises(ConnectionError, match=f"cannot reach the dask scheduler at {UNREACHABLE} .*within 5 s"):
        sweep(CFG, {}, backend="dask", scheduler=UNREACHABLE, progress=False)


def test_failed_points_are_reported_after_the_others_ran(tmp_path):
    cache = tmp_path / "sweep.parquet"
    grid = {"kernel": ["6.6", "latest"], "placement": ["pull"]}
    with pytest.raises(SweepError) as info:
        sweep(CFG, grid, seeds=[1, 2], backend="processes", workers=2, progress=False, cache=cache)
    err = info.value
    assert isinstance(err, RuntimeError)
    assert "2 of 4 sweep runs failed" in str(err)
    assert "kernel='6.6', placement='pull', seed=2: ValueError: placement='pull' needs kernel >= 6.9" in str(err)
    assert [(f["kernel"], f["seed"]) for f in err.failures] == [("6.6", 1), ("6.6", 2)]
    assert list(err.results.kernel) == ["latest", "latest"] and list(err.results.seed) == [1, 2]
    # What succeeded was cached.
    ok = sweep(CFG, {"kernel": ["latest"], "placement": ["pull"]}, seeds=[1, 2], backend="serial", progress=False,
               cache=cache)
    assert ok.attrs["computed"] == 0
    pd.testing.assert_frame_equal(ok, err.results)
