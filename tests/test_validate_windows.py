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
    assert (w["first_ts_ns"].iloc[1:].to_numpy() > w["last_ts_ns"].iloc[:-1].to_numpy()).all()
    ts = mixed16.events["ts_ns"]
    assert w["first_ts_ns"].iloc[0] == ts.min() and w["last_ts_ns"].iloc[-1] == ts.max()
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
    w = rep.windows
    return [windows.window_of(trace, int(a), int(b) + 1) for a, b in zip(w["first_ts_ns"], w["last_ts_ns"])]


def test_cutting_a_trace_costs_its_items_little(whole, windowed):
    rep, _ = windowed
    for name in ("wheel", "placement", "expiring_cpu", "expiry_time", "hrtimer", "hrtimer_wakeups", "idle_entries",
                 "tick_stops", "tmigr"):
        a, b = getattr(whole, name).agreement, getattr(rep, name).agreement
        assert abs(a - b) < 0.03, (name, a, b)
    assert rep.tmigr.compared == whole.tmigr.compared  # a group seen whole in one window is that group in another
    assert rep.wheel.compared == whole.wheel.compared and rep.placement.compared == whole.placement.compared


@pytest.mark.parametrize("name, items", [
    ("qemu-6.1.176-16cpu-2node-mixed.trace.txt.xz", ("expiry_time", "deferrable_expiries", "tick_stops")),
    ("vm2-fsync-sleep-hz250.trace.txt.xz", ("expiring_cpu", "expiry_time", "tick_stops")),
])
def test_a_window_starts_as_the_whole_trace_is_there(name, items):
    """Cut in three, these traces once gave a window a state the whole replay did not have. On the 6.1
    trace, CPU 5 runs a task throughout and logs one cpu_idle, in the first window: in the last, its ticks
    held up by the hypervisor (up to 16 ms) were not replayed as stalls, its replayed ticks kept jiffies
    ahead of the kernel's, and CPU 1's process_timeouts expired 1-2 jiffies late (expiry_time 0.83 against
    0.97). On the fsync trace the last window alone fits jiffies to the grid (99.0 % against 98.9 %): it is
    replayed with the whole trace's model, jiffy updates by the duty's holder."""
    trace = tl.read_ftrace(TRACE_DIR / name)
    whole = tl.validate(trace)
    rep = tl.validate(trace, window_events=len(trace.events) // 3 + 1)
    for item in items:
        a, b = getattr(whole, item).agreement, getattr(rep, item).agreement
        assert abs(a - b) < 0.01, (item, a, b)
    models = [n for n in rep.notes if "over all windows" in n]
    assert len(models) == 1 and models[0].startswith("jiffies='kernel'")
    assert not any(n.startswith("window ") and "jiffies=" in n for n in rep.notes)
    again = "window(s) [3] alone chose otherwise, and were replayed again with the whole trace's jiffies='kernel'"
    assert any(n.startswith(again) for n in rep.notes) == ("fsync" in name)


def test_a_stores_windows_give_the_in_memory_report(tmp_path, windowed):
    rep, _ = windowed
    store = convert(MIXED16, tmp_path / "m16.parquet", rows_per_group=20_000)
    # Two worker processes, each loading its windows from the store; then one, here.
    for workers in (2, 1):
        stored = tl.validate(store, window_events=PER_WINDOW, workers=workers)
        _same_report(stored, rep)


def _same_report(a, b):
    assert str(a) == str(b)
    pd.testing.assert_frame_equal(a.windows, b.windows)
    pd.testing.assert_frame_equal(a.per_cpu, b.per_cpu)
    pd.testing.assert_frame_equal(a.expiries, b.expiries)
    for x, y in zip(a.items, b.items):
        pd.testing.assert_frame_equal(x.disagreements.reset_index(drop=True), y.disagreements.reset_index(drop=True))


def test_a_stores_window_loads_the_rows_of_the_window(tmp_path, mixed16):
    store = tl.trace.open_trace(convert(MIXED16, tmp_path / "m16.parquet", rows_per_group=20_000))
    ts = mixed16.events["ts_ns"]
    a, b = int(ts.iloc[40_000]), int(ts.iloc[70_000])
    w = store.between(a, b)
    assert not w.loaded and "ts_ns < " in repr(w)
    expected = windows.window_of(mixed16, a, b).events
    pd.testing.assert_frame_equal(w.events, expected)
    assert w.event_counts().sum() == len(expected)


def test_a_large_compressed_file_goes_through_a_temporary_store(tmp_path, monkeypatch, whole):
    import gzip

    # A compressed text cannot be entered in the middle: it is converted to a store, windows read from there.
    text = tmp_path / (MIXED16.stem + ".gz")  # the release is in the name, as in the original's
    text.write_bytes(gzip.compress(lzma.decompress(MIXED16.read_bytes())))
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


def test_a_trace_dat_of_more_events_than_a_window_goes_through_a_store(tmp_path):
    """The v7 trace.dat (0.8 MB, zstd sections, 116 606 events) is guessed at
    about 100 000 events: read whole with windows of a million, through a
    temporary store with windows of 50 000."""
    dat = TRACE_DIR / "vm2-cyclictest.v7.dat"
    made, read = [], []

    def convert_spy(name, out):
        made.append(out)
        return convert(name, out, rows_per_group=20_000)

    def read_spy(name):
        read.append(name)
        return tl.read_ftrace(name)

    with windows.opened(dat, convert=convert_spy, read=read_spy) as tr:
        assert isinstance(tr, tl.Trace) and len(tr.events) == 116_606
    with windows.opened(dat, 50_000, convert=convert_spy, read=read_spy) as tr:
        assert not tr.loaded and tr.event_counts().sum() == 116_606
    assert len(made) == 1 and not os.path.exists(made[0]) and read == [str(dat)]


@pytest.mark.parametrize("bad", [-1, 5, 1.5, True, "3"])
def test_window_events_and_workers_mistakes_name_the_option(mixed16, bad):
    with pytest.raises(ValueError, match="window_events"):
        tl.validate(mixed16, window_events=bad)
    if bad != 5:
        with pytest.raises(ValueError, match="workers"):
            tl.validate(mixed16, workers=bad if bad != -1 else 0)


def test_the_validate_command_replays_in_windows(capsys, windowed):
    import timerlab.cli as cli

    rep, _ = windowed
    assert cli.main(["validate", str(MIXED16), "--window-events", str(PER_WINDOW)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(str(rep) + "\n")
    assert rep.windows.to_string(index=False) in out
    assert cli.main(["validate", str(MIXED16), "--window-events", "-3"]) != 0
    assert "window_events=-3" in capsys.readouterr().err


def test_a_large_plain_text_is_read_a_window_at_a_time(tmp_path, monkeypatch, mixed16):
    from timerlab.trace.ranges import read_range, text_ranges

    text = tmp_path / MIXED16.stem
    text.write_bytes(lzma.decompress(MIXED16.read_bytes()))
    ranges = text_ranges(text, PER_WINDOW)
    assert len(ranges) == 4 and ranges[0].start == 0 and ranges[-1].end == text.stat().st_size
    assert all(a.end == b.start for a, b in zip(ranges, ranges[1:]))
    parts = [read_range(r).events for r in ranges]
    # The ranges' rows are the file's rows: every column, the line numbers of the whole file.
    joined = pd.concat(parts, ignore_index=True)
    for col in mixed16.events.columns:
        a, b = joined[col], mixed16.events[col]
        if isinstance(b.dtype, pd.CategoricalDtype):
            a, b = a.astype(object), b.astype(object)
        pd.testing.assert_series_equal(a, b, check_dtype=False, obj=col)
    monkeypatch.setattr(windows, "WHOLE_TEXT_BYTES", 1 << 20)
    rep = tl.validate(text, window_events=PER_WINDOW)
    assert rep.windows["events"].sum() == len(mixed16.events)
    # Cut at line ends instead of timestamps: the same trace, other edges, much the same items.
    stored = tl.validate(mixed16, window_events=PER_WINDOW)
    for a, b in zip(rep.items, stored.items):
        assert a.compared == pytest.approx(b.compared, rel=0.05, abs=2), a.name
        assert (a.agreement is None) == (b.agreement is None), a.name
        assert a.agreement is None or abs(a.agreement - b.agreement) < 0.03, a.name


def test_events_the_ring_buffer_lost_are_said(tmp_path, monkeypatch):
    """A ring buffer that overflowed twice: 40 and 10 event lines of the fsync trace cut out, a marker in
    their place (the second of a loss of unknown size). validate says so, whole and read window by
    window (each range counts its own)."""
    lines = lzma.decompress((TRACE_DIR / "vm2-fsync-sleep-hz250.trace.txt.xz").read_bytes()).splitlines(True)
    at = len(lines) // 2
    text = tmp_path / "lossy.trace.txt"
    text.write_bytes(b"".join(lines[:at] + [b"CPU:1 [LOST 40 EVENTS]\n"] + lines[at + 40:at + 9000]
                              + [b"CPU:0 [EVENTS DROPPED]\n"] + lines[at + 9010:]))
    said = "the ring buffer lost events at 2 point(s) of the trace (40 counted"
    assert any(n.startswith(said) for n in tl.validate(text).notes)
    monkeypatch.setattr(windows, "WHOLE_TEXT_BYTES", 1 << 20)
    rep = tl.validate(text, window_events=20_000)
    assert len(rep.windows) == 3 and any(n.startswith(said) for n in rep.notes)
    stored = tl.read_ftrace(convert(text, tmp_path / "lossy.parquet"))
    assert (stored.lost_events, stored.loss_markers) == (40, 2)  # kept in the store's metadata
    for trace in (tl.read_ftrace(text), stored):
        assert repr(trace).endswith(", events lost at 2 point(s) (40 counted))")
    assert not any("ring buffer lost" in n for n in tl.validate(TRACE_DIR / "vm2-idle-hz250.trace.txt.xz").notes)


def _lossy(tmp_path, cpu, first, count) -> "Path":
    """The 16-CPU trace with ``count`` events of ``cpu`` from its ``first`` on lost, marked as tracefs marks it."""
    lines = lzma.decompress(MIXED16.read_bytes()).splitlines(keepends=True)
    mine = [i for i, ln in enumerate(lines) if b"[%03d]" % cpu in ln[:40]]
    gone = set(mine[first:first + count])
    at = mine[first]
    text = tmp_path / f"qemu-6.12.95-16cpu-2node-mixed-lost{cpu}.trace.txt"
    text.write_bytes(b"".join(lines[:at] + [b"CPU:%d [LOST %d EVENTS]\n" % (cpu, len(gone))]
                              + [ln for i, ln in enumerate(lines[at:], at) if i not in gone]))
    return text


def test_the_replay_starts_afresh_after_a_loss(tmp_path, monkeypatch):
    """50 events of CPU 13 of the 16-CPU trace lost early on (its 43rd to 92nd), marked as tracefs marks
    them. Replayed whole, the hierarchy never recovers from what they held: the migrator hand-overs
    agree at 0.46. validate starts a window at the loss (Trace.losses says where), and agrees as on
    the whole trace (tmigr 1.0, expiring_cpu 0.99); so does a store of it, and a text read in line
    ranges (a loss in its middle)."""
    text = _lossy(tmp_path, 13, 42, 50)
    trace = tl.read_ftrace(text)
    (loss,) = trace.losses.itertuples(index=False)
    first_after = trace.events.iloc[loss.row]
    assert (loss.cpu, loss.lost_events, loss.ts_ns) == (13, 50, first_after.ts_ns)
    lines = text.read_bytes().splitlines()
    assert lines[first_after.line - 2] == b"CPU:13 [LOST 50 EVENTS]"  # the line before (1-based)

    whole = {i.name: i.agreement for i in tl.validate(trace, window_events=0).items}
    rep = tl.validate(trace)
    after = {i.name: i.agreement for i in rep.items}
    assert whole["tmigr"] < 0.6 and after["tmigr"] > 0.99, (whole, after)
    assert after["expiring_cpu"] > whole["expiring_cpu"] and after["expiring_cpu"] > 0.98
    assert list(rep.windows["first_ts_ns"])[1] == loss.ts_ns
    assert any("1 of them starting where the ring buffer lost events" in n for n in rep.notes)

    stored = tl.read_ftrace(convert(text, tmp_path / "lossy.parquet", rows_per_group=20_000))
    pd.testing.assert_frame_equal(stored.losses, trace.losses)  # rows over every row group
    assert {i.name: i.agreement for i in tl.validate(stored).items} == after

    monkeypatch.setattr(windows, "WHOLE_TEXT_BYTES", 1 << 20)  # too large to read whole: line ranges
    middle = _lossy(tmp_path, 13, 150, 50)
    ranged = tl.validate(middle, window_events=PER_WINDOW)
    assert tl.read_ftrace(middle).losses["ts_ns"].iloc[0] in set(ranged.windows["first_ts_ns"])
    assert next(i.agreement for i in ranged.items if i.name == "tmigr") > 0.99


@pytest.mark.parametrize("workers", [1, 2])
def test_a_malformed_line_in_a_range_names_the_line_of_the_file(tmp_path, monkeypatch, workers):
    text = tmp_path / MIXED16.stem
    lines = lzma.decompress(MIXED16.read_bytes()).splitlines(keepends=True)
    bad = 100_000
    lines[bad - 1] = b"this is not an event line\n"
    text.write_bytes(b"".join(lines))
    monkeypatch.setattr(windows, "WHOLE_TEXT_BYTES", 1 << 20)
    with pytest.raises(tl.trace.TraceFormatError, match=f"{text.name}:{bad}:"):
        tl.validate(text, window_events=PER_WINDOW, workers=workers)  # raised in a worker process, or here
