"""validate in windows of time (timerlab.fidelity.windows, .items): the
windows partition the trace, a store's windows load the rows an in-memory
trace's windows slice, the merged items are the windows' comparisons
together, and cutting a real trace into windows costs its items little."""
import lzma
import os

import numpy as np
import pandas as pd
import pytest

import timerlab as tl
import timerlab.fidelity.windows as windows
from timerlab.trace import convert

from conftest import TRACE_DIR

MIXED16 = TRACE_DIR / "qemu-6.12.95-16cpu-2node-mixed.trace.txt.xz"
PER_WINDOW = 30_000  # four windows of the 16-CPU trace's 114 572 events


@pytest.fixture(scope="module")
def mixed16():
    return tl.read_ftrace(MIXED16)


@pytest.fixture(scope="module")
def whole(mixed16):
    return tl.validate(mixed16)


@pytest.fixture(scope="module")
def windowed(mixed16):
    stages = []
    rep = tl.validate(mixed16, window_events=PER_WINDOW, progress=stages.append)
    return rep, stages


def test_windows_partition_the_trace(mixed16, windowed):
    rep, stages = windowed
    w = rep.windows
    assert len(w) == 4 and w["window"].tolist() == [1, 2, 3, 4]
    assert pd.isna(w["start_ns"].iloc[0]) and pd.isna(w["end_ns"].iloc[-1])
    assert (w["start_ns"].iloc[1:].to_numpy() == w["end_ns"].iloc[:-1].to_numpy()).all()
    assert w["events"].sum() == len(mixed16.events)
    assert w["events"].max() - w["events"].min() <= 1  # equal shares of the events, cut between timestamps
    assert rep.result is None and whole_config_matches(rep.config, mixed16)
    assert len(stages) == 4 * len(tl.fidelity.VALIDATE_STAGES)
    assert stages[-1] == f"{tl.fidelity.VALIDATE_STAGES[-1]} (window 4 of 4)"
    assert any(n.startswith("replayed in 4 windows") for n in rep.notes)


def whole_config_matches(cfg, trace) -> bool:
    """The first window's machine is the trace's: its CPUs and both NUMA nodes."""
    return cfg.topology.cpus == trace.nr_cpus and len(set(cfg.topology.node_of_cpu)) == 2


def test_items_are_the_windows_comparisons_together(windowed):
    rep, _ = windowed
    # Every timer_start of the trace is in exactly one window: the wheel and
    # the placement compare each once.
    # Each window replayed alone, on the first window's machine (the trace's NUMA nodes show in its set-up
    # events, at the start), as validate replays the windows after the first.
    first, *rest = _window_traces(rep)
    per = [tl.validate(first, window_events=0)]
    machine = dict(hz=per[0].config.hz, node_of_cpu=list(per[0].config.topology.node_of_cpu))
    per += [tl.validate(w, window_events=0, **machine) for w in rest]
    for name in ("wheel", "placement", "expiring_cpu", "expiry_time", "hrtimer"):
        merged = getattr(rep, name)
        assert merged.compared == sum(getattr(p, name).compared for p in per), name
        assert merged.agreeing == sum(getattr(p, name).agreeing for p in per), name
        assert len(merged.disagreements) == sum(len(getattr(p, name).disagreements) for p in per), name
    for col in ("idle_entries_trace", "idle_entries_sim", "tick_stops_trace", "tick_stops_sim"):
        assert rep.per_cpu[col].tolist() == np.sum([p.per_cpu[col] for p in per], axis=0).tolist(), col
    assert rep.deferrable_expiries.compared == sum(p.deferrable_expiries.compared for p in per)
    # The windows frame's agreements are those of each window alone.
    for k, p in enumerate(per):
        for i in p.items:
            got = rep.windows.loc[k, i.name]
            assert (got is None and i.agreement is None) or got == pytest.approx(i.agreement), (k, i.name)


def _window_traces(rep):
    """The windows of the report's trace as traces of their own (window_of)."""
    trace = tl.read_ftrace(MIXED16)
    first = windows.window_of(trace, None, rep.windows["end_ns"].iloc[0])
    out = [first]
    for s, e in zip(rep.windows["start_ns"].iloc[1:], rep.windows["end_ns"].iloc[1:]):
        out.append(windows.window_of(trace, int(s), None if pd.isna(e) else int(e)))
    return out


def test_cutting_a_trace_costs_its_items_little(whole, windowed):
    rep, _ = windowed
    for name in ("wheel", "placement", "expiring_cpu", "expiry_time", "hrtimer", "hrtimer_wakeups", "idle_entries",
                 "tick_stops", "tmigr"):
        a, b = getattr(whole, name).agreement, getattr(rep, name).agreement
        assert abs(a - b) < 0.03, (name, a, b)
    assert rep.tmigr.compared == whole.tmigr.compared  # a group seen whole in one window is that group in another
    assert rep.wheel.compared == whole.wheel.compared and rep.placement.compared == whole.placement.compared


def test_a_stores_windows_give_the_in_memory_report(tmp_path, windowed):
    rep, _ = windowed
    store = convert(MIXED16, tmp_path / "m16.parquet", rows_per_group=20_000)
    stored = tl.validate(store, window_events=PER_WINDOW)
    assert str(stored) == str(rep)
    pd.testing.assert_frame_equal(stored.windows, rep.windows)
    for a, b in zip(stored.items, rep.items):
        pd.testing.assert_frame_equal(a.disagreements.reset_index(drop=True), b.disagreements.reset_index(drop=True))


def test_a_stores_window_loads_the_rows_of_the_window(tmp_path, mixed16):
    store = tl.trace.open_trace(convert(MIXED16, tmp_path / "m16.parquet", rows_per_group=20_000))
    ts = mixed16.events["ts_ns"]
    a, b = int(ts.iloc[40_000]), int(ts.iloc[70_000])
    w = store.between(a, b)
    assert not w.loaded and "ts_ns < " in repr(w)
    expected = windows.window_of(mixed16, a, b).events
    pd.testing.assert_frame_equal(w.events, expected)
    assert w.event_counts().sum() == len(expected)


def test_a_large_text_file_goes_through_a_temporary_store(tmp_path, monkeypatch, mixed16, whole):
    text = tmp_path / MIXED16.stem  # the release is in the name, as in the original's
    text.write_bytes(lzma.decompress(MIXED16.read_bytes()))
    made = []

    def convert_spy(name, out):
        made.append(out)
        return convert(name, out)

    monkeypatch.setattr(windows, "WHOLE_TEXT_BYTES", 1 << 20)
    with windows.opened(text, convert=convert_spy) as tr:
        assert not tr.loaded and tr.path == str(text)
        rep = tl.validate(tr)
    assert len(made) == 1 and not os.path.exists(made[0])  # removed on leaving
    assert rep.to_frame().equals(whole.to_frame())
    assert tl.validate(text).to_frame().equals(whole.to_frame())  # validate(path) takes the same way


@pytest.mark.parametrize("bad", [-1, 5, 1.5, True, "3"])
def test_window_events_mistakes_name_the_option(mixed16, bad):
    with pytest.raises(ValueError, match="window_events"):
        tl.validate(mixed16, window_events=bad)


def test_the_validate_command_replays_in_windows(capsys, windowed):
    import timerlab.cli as cli

    rep, _ = windowed
    assert cli.main(["validate", str(MIXED16), "--window-events", str(PER_WINDOW)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(str(rep) + "\n")
    assert rep.windows.to_string(index=False) in out
    assert cli.main(["validate", str(MIXED16), "--window-events", "-3"]) != 0
    assert "window_events=-3" in capsys.readouterr().err
