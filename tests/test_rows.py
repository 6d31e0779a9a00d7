"""timerlab.trace.rows: each fast row helper against its plain pandas (or
loop) spelling, on a real trace's events."""
import numpy as np
import pandas as pd
import pytest

from timerlab.trace.events import TICK_FUNCTIONS
from timerlab.trace.rows import (cpu_order, event_in, event_rows, function_in, latest_on_cpu, previous_flag_on_cpu,
                                 previous_on_cpu, rows_frame, select_events, str_isin, str_test)

NAMES = ("hrtimer_expire_entry", "timer_start", "cpu_idle", "no_such_event")


@pytest.fixture(scope="module")
def ev(idle16):
    return idle16.events


def test_event_selection_is_isin(ev):
    mask = ev["event"].isin(NAMES).to_numpy()
    assert np.array_equal(event_rows(ev, NAMES), np.flatnonzero(mask))
    assert np.array_equal(event_in(ev, NAMES), mask)
    # A plain string column (not a Categorical) takes the other path to the same rows.
    plain = ev[["event"]].astype({"event": str})
    assert np.array_equal(event_rows(plain, NAMES), np.flatnonzero(mask))
    # Any number of names: compared one by one, or through a table of the categories.
    cats = list(ev["event"].cat.categories)
    for k in (1, 8, 9, len(cats)):
        assert np.array_equal(event_in(ev, cats[:k] + ["no_such_event"]), ev["event"].isin(cats[:k]).to_numpy())
    cols = ["cpu", "function", "expires_ns", "no_such_column"]
    got = select_events(ev, NAMES, cols)
    pd.testing.assert_frame_equal(got, ev.loc[mask, ["event", "cpu", "function", "expires_ns"]])


def test_string_tests_are_astype_str(ev):
    f = ev["function"]
    assert np.array_equal(str_isin(f, TICK_FUNCTIONS), f.astype(str).isin(TICK_FUNCTIONS).to_numpy())
    assert np.array_equal(function_in(ev, TICK_FUNCTIONS), str_isin(f, TICK_FUNCTIONS))
    assert not function_in(ev[["event"]], TICK_FUNCTIONS).any()
    starts = str_test(f, lambda s: s.startswith("tick"))
    assert np.array_equal(starts, np.array([str(v).startswith("tick") for v in f.astype(str)]))
    # Missing values read as "nan", in a Categorical and in an object column alike.
    s = pd.Series(["a", None, "b"], dtype="category")
    assert str_isin(s, ["nan"]).tolist() == [False, True, False]
    assert str_isin(s.astype(object), ["nan", "b"]).tolist() == [False, True, True]


def test_per_cpu_order_and_neighbours(ev):
    cpu = ev["cpu"].to_numpy()
    assert np.array_equal(cpu_order(cpu), np.argsort(cpu, kind="stable"))
    pos = pd.Series(np.arange(len(cpu)))
    expect = pos.groupby(cpu).shift(1).fillna(-1).astype(np.int64).to_numpy()
    assert np.array_equal(previous_on_cpu(cpu), expect)
    flag = ev["event"].eq("cpu_idle").to_numpy()
    want = np.where(expect >= 0, flag[np.maximum(expect, 0)], True)
    assert np.array_equal(previous_flag_on_cpu(cpu, flag, True), want)


def test_latest_on_cpu_is_the_last_set_value(ev):
    cpu = ev["cpu"].to_numpy()
    value = np.where(ev["event"].eq("cpu_idle").to_numpy(), np.arange(len(cpu)) % 7, -1)
    last, expect = {}, []
    for c, v in zip(cpu.tolist(), value.tolist()):
        if v >= 0:
            last[c] = v
        expect.append(last.get(c, -1))
    assert latest_on_cpu(cpu, value).tolist() == expect


@pytest.mark.parametrize("rows", [
    [(1, 2, 3), (4, 5, 6)],
    [(1, None, 3), (4, 5, 6)],          # a None: left to pandas
    [(1, 2**63, 3)],                    # beyond int64
    [(1, 2.5, 3)],
    [(1, True, 3)],                     # a bool: object column
    [(1, np.int64(2), 3)],              # a NumPy scalar: left to pandas
    [],
])
def test_rows_frame_is_the_dataframe_constructor(rows):
    pd.testing.assert_frame_equal(rows_frame(rows, ["a", "b", "c"]), pd.DataFrame(rows, columns=["a", "b", "c"]))


@pytest.mark.filterwarnings("ignore:Constructing a DataFrame from a list of sequences with mismatched lengths")
def test_rows_frame_refuses_rows_of_another_length():
    # As many values as 2 rows of 3, not read as one stream of them: pandas says the rows do not fit.
    with pytest.raises(ValueError):
        rows_frame([(1, 2, 3, 4), (5, 6)], ["a", "b", "c"])
