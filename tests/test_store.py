"""The on-disk store (timerlab.trace.store, .lazy, `timerlab convert`): a trace
converted and re-opened is the trace read from its text, restricted reads are
the DataFrame filtered, validate agrees, and damaged stores say which file."""
import lzma

import pandas as pd
import pyarrow.parquet as pq
import pytest

import timerlab as tl
import timerlab.cli as cli
from timerlab.trace import StoreError, StoredTrace, convert, open_trace, read_store

from conftest import TRACE_DIR

MIXED16 = TRACE_DIR / "qemu-6.12.95-16cpu-2node-mixed.trace.txt.xz"
VM2 = TRACE_DIR / "vm2-idle-hz250.trace.txt.xz"


@pytest.fixture(scope="module")
def mixed16():
    return tl.read_ftrace(MIXED16)


@pytest.fixture(scope="module")
def mixed16_store(tmp_path_factory):
    # Small row groups: many dictionaries to unify, columns absent from some groups.
    return convert(MIXED16, tmp_path_factory.mktemp("store") / "mixed16.parquet", rows_per_group=7_000)


def test_reopened_store_equals_the_text_every_column_every_row(mixed16, mixed16_store):
    tr = tl.read_ftrace(mixed16_store)
    assert isinstance(tr, StoredTrace) and not tr.loaded
    assert (tr.nr_cpus, tr.lost_events, tr.skipped_lines, tr.duration_ns) == \
           (mixed16.nr_cpus, mixed16.lost_events, mixed16.skipped_lines, mixed16.duration_ns)
    pd.testing.assert_series_equal(tr.event_counts().sort_index(), mixed16.event_counts().sort_index())
    pd.testing.assert_frame_equal(tr.events, mixed16.events)  # dtypes, category order, <NA>s
    assert tr.features == mixed16.features and tr.kernel == mixed16.kernel


def test_a_trace_dat_converts_to_the_same_store(tmp_path):
    """`timerlab convert` takes trace-cmd's trace.dat too: the store re-opens
    as the .dat reads (every column, every row). The decoder hands over a
    row group whenever it holds rows_per_group rows, so a large trace.dat is
    never in memory whole."""
    dat = TRACE_DIR / "vm2-cyclictest.v7.dat"
    direct, stored = tl.read_ftrace(dat), tl.read_ftrace(convert(dat, tmp_path / "dat.parquet", rows_per_group=9_000))
    assert isinstance(stored, StoredTrace) and stored.nr_cpus == direct.nr_cpus
    pd.testing.assert_frame_equal(stored.events, direct.events)
    groups = pq.ParquetFile(tmp_path / "dat.parquet").metadata
    assert groups.num_row_groups == -(-len(direct.events) // 9_000)
    assert all(groups.row_group(i).num_rows == 9_000 for i in range(groups.num_row_groups - 1))


@pytest.mark.parametrize("event", ["sched_switch", "timer_start", "tmigr_cpu_idle"])
def test_one_event_from_the_store_equals_of(mixed16, mixed16_store, event):
    pd.testing.assert_frame_equal(open_trace(mixed16_store).of(event), mixed16.of(event))


def test_restricted_reads_equal_the_filtered_frame(mixed16, mixed16_store):
    raw = read_store(mixed16_store)
    ts = mixed16.events["ts_ns"]
    start, end = int(ts.iloc[20_000]), int(ts.iloc[90_000])
    cases = [dict(events=["timer_start", "cpu_idle"]), dict(cpus=[0, 9]), dict(start_ns=start, end_ns=end),
             dict(events="hrtimer_start", cpus=3, start_ns=start, end_ns=end)]
    for case in cases:
        keep = pd.Series(True, index=raw.index)
        if "events" in case:
            keep &= raw["event"].isin([case["events"]] if isinstance(case["events"], str) else case["events"])
        if "cpus" in case:
            keep &= raw["cpu"].isin([case["cpus"]] if isinstance(case["cpus"], int) else case["cpus"])
        if "start_ns" in case:
            keep &= (raw["ts_ns"] >= case["start_ns"]) & (raw["ts_ns"] < case["end_ns"])
        got = read_store(mixed16_store, **case)
        assert 0 < len(got) < len(raw), case
        pd.testing.assert_frame_equal(got, raw[keep].reset_index(drop=True), obj=str(case))
    two = read_store(mixed16_store, columns=["ts_ns", "timer", "no_such_column_in_this_trace"][:2])
    pd.testing.assert_frame_equal(two, raw[["ts_ns", "timer"]])


def test_restriction_mistakes_name_the_option(mixed16_store):
    with pytest.raises(ValueError, match="events=.*no_such_event"):
        read_store(mixed16_store, events=["no_such_event"])
    with pytest.raises(ValueError, match="cpus="):
        read_store(mixed16_store, cpus=[-1])
    with pytest.raises(TypeError, match="start_ns"):
        read_store(mixed16_store, start_ns=1.5)
    with pytest.raises(ValueError, match="columns="):
        read_store(mixed16_store, columns=["nonsense"])


def test_validate_over_the_store_gives_the_texts_report(tmp_path):
    store = convert(VM2, tmp_path / "vm2.parquet", rows_per_group=10_000)
    stages = []
    text, stored = tl.validate(tl.read_ftrace(VM2.resolve())), tl.validate(store, progress=stages.append)
    assert str(stored) == str(text)
    assert stages == list(tl.fidelity.VALIDATE_STAGES)
    for a, b in zip(stored.items, text.items):
        pd.testing.assert_frame_equal(a.disagreements.reset_index(drop=True), b.disagreements.reset_index(drop=True))


def test_strings_that_are_not_utf8_and_raw_payloads_survive(tmp_path):
    # A task name with a byte that is not UTF-8, and an event the schema lacks (kept as payload).
    lines = [b"# tracer: nop\n", b"#P:2\n",
             b"  t\xffsk-12 [001] d..1.   100.000001: sched_wakeup: comm=a pid=3 prio=120 target_cpu=000\n",
             b"  task-12 [000] d..1.   100.000002: my_event: foo=1 bar=x\n",
             b"  task-12 [001] d..1.   100.000003: sched_wakeup: comm=b pid=4 prio=120 target_cpu=001\n"]
    text = tmp_path / "odd.txt"
    text.write_bytes(b"".join(lines))
    store = convert(text, tmp_path / "odd.parquet", rows_per_group=1)
    pd.testing.assert_frame_equal(open_trace(store).events, tl.read_ftrace(text).events)
    assert open_trace(store).events["payload"].notna().sum() == 1


def test_convert_command_writes_a_store_the_commands_open(tmp_path, capsys):
    out = tmp_path / "vm2.parquet"
    assert cli.main(["convert", str(VM2), str(out)]) == 0
    assert "65,962 events" in capsys.readouterr().out
    assert cli.main(["wheel", str(out), "--no-plot", "--out", str(tmp_path)]) == 0
    assert "65,962 events, 2 CPUs" in capsys.readouterr().out
    assert cli.main(["convert", str(VM2), str(tmp_path / "vm2.store")]) == 2
    assert "OUT.parquet" in capsys.readouterr().err
    assert cli.main(["convert", str(tmp_path / "missing.txt"), str(out)]) == 2
    assert "missing.txt" in capsys.readouterr().err
    assert cli.main(["convert", str(VM2), str(tmp_path / "nodir" / "x.parquet")]) == 2
    assert "nodir: no such directory" in capsys.readouterr().err


def test_a_failed_convert_leaves_no_store(tmp_path):
    text = tmp_path / "bad.txt"
    good = lzma.open(VM2).read().splitlines(keepends=True)[:2000]
    text.write_bytes(b"".join(good) + b"this line does not frame\n")
    with pytest.raises(tl.TraceFormatError, match="bad.txt:2001"):
        convert(text, tmp_path / "bad.parquet", rows_per_group=100)
    assert not (tmp_path / "bad.parquet").exists() and not (tmp_path / "bad.parquet.tmp").exists()


def test_damaged_stores_raise_errors_naming_the_file(tmp_path, mixed16_store):
    data = mixed16_store.read_bytes() if hasattr(mixed16_store, "read_bytes") else open(mixed16_store, "rb").read()
    with pytest.raises(FileNotFoundError):
        open_trace(tmp_path / "none.parquet")
    with pytest.raises(StoreError, match="dir.parquet.*directory"):
        (tmp_path / "dir.parquet").mkdir()
        open_trace(tmp_path / "dir.parquet")
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(StoreError, match="cut.parquet"):
        tl.read_ftrace(cut)
    plain = tmp_path / "plain.parquet"
    pd.DataFrame({"x": [1, 2]}).to_parquet(plain)
    with pytest.raises(StoreError, match="plain.parquet.*not written by `timerlab convert`"):
        open_trace(plain)
    # Bytes flipped inside the row groups' data: the footer reads, the data does not.
    flipped = bytearray(data)
    for at in range(1_000, len(data) // 2, 997):
        flipped[at] ^= 0xFF
    bad = tmp_path / "flipped.parquet"
    bad.write_bytes(bytes(flipped))
    with pytest.raises(StoreError, match="flipped.parquet"):
        open_trace(bad).events
