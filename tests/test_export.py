"""Result.to_ftrace: a simulated run written as tracefs ftrace text, read back
with tl.read_ftrace (strict), compared with the run itself and with the line
formats of the real kernel traces in tests/data/traces."""
import bz2
import gzip
import lzma
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import timerlab as tl
from timerlab.trace import export
from timerlab.trace.events import schema as sim_schema

TRACES = Path(__file__).parent / "data" / "traces"
CPU_IDLE_EXIT = 4294967295
# Perfetto's systrace line tokenizer (comm-pid, optional tgid, [cpu], up to 5
# flag characters, sec.frac, event).
PERFETTO_LINE = re.compile(r"-(\d+)\s+\(?\s*(\d+|-+)?\)?\s?\[(\d+)\]\s*[a-zA-Z0-9.]{0,5}\s*(\d+\.\d+):\s+(\S+):")
TRACEFS_LINE = re.compile(r"^( {0,15}\S.{0,15}|.{16,})-(\d+) *\[(\d{3,})\] ([a-zA-Z0-9.]{5}) +(\d+)\.(\d{6}): "
                          r"(\w+): (.*)$")


@pytest.fixture(scope="module")
def run():
    return tl.simulate(tl.Config(cpus=8, nodes=2, duration_ns=100_000_000, record_events=True, seed=3))


@pytest.fixture(scope="module")
def exported(run, tmp_path_factory):
    path = tmp_path_factory.mktemp("export") / "sim.txt"
    run.to_ftrace(path)
    return path, tl.read_ftrace(path)  # strict: any malformed line raises


def counts(events: pd.DataFrame) -> dict:
    c = events["event"].value_counts()
    return {str(k): int(v) for k, v in c.items() if v}


def event_lines(path: Path):
    return [line for line in path.read_text().splitlines() if line and not line.startswith("#")]


# ---------------------------------------------------------------------------
# Round trip

def test_every_event_comes_back(run, exported):
    _, trace = exported
    assert trace.skipped_lines == 0 and trace.lost_events == 0
    assert trace.nr_cpus == 8
    assert counts(trace.events) == counts(run.events)
    assert "payload" not in trace.events  # every key of every event is in the reader's schema


def test_counts_match_the_run(run, exported):
    ev = exported[1].events
    per_cpu = run.per_cpu.set_index("cpu")
    assert (ev["event"] == "timer_start").sum() == per_cpu["timers_armed"].sum() > 0
    assert (ev["event"] == "timer_expire_entry").sum() == run.summary["timers_expired"] > 0
    entries = ev[(ev["event"] == "cpu_idle") & (ev["state"] != CPU_IDLE_EXIT)]
    got = entries.groupby("cpu_id").size().reindex(per_cpu.index, fill_value=0)
    assert got.tolist() == per_cpu["idle_entries"].tolist()
    stops = ev[ev["event"] == "tick_stop"].groupby("cpu").size().reindex(per_cpu.index, fill_value=0)
    assert stops.tolist() == per_cpu["tick_stops"].tolist()


def test_every_field_survives(run, exported):
    """Per event, row for row: cpu, the time to the µs, and every column the
    simulator logs for it (pointers, masks, jiffies, ns, names, flags)."""
    sim, got = run.events, exported[1].events
    assert got["ts_ns"].is_monotonic_increasing
    np.testing.assert_array_equal(got["ts_ns"], sim["ts_ns"] // 1000 * 1000)
    np.testing.assert_array_equal(got["cpu"], sim["cpu"])
    np.testing.assert_array_equal(got["event"].astype(str), sim["event"].astype(str))
    checked = set()
    for name, slots in sim_schema():
        rows = (sim["event"] == name).to_numpy()
        if not rows.any():
            continue
        for column, _kind, _slot in slots:
            want, have = sim.loc[rows, column], got.loc[rows, column]
            if isinstance(want.dtype, pd.CategoricalDtype):
                want, have = want.astype(str), have.astype(str)
            else:
                want, have = want.astype("Int64" if want.dtype == "Int64" else "UInt64"), have
            assert want.tolist() == have.tolist(), (name, column)
            checked.add((name, column))
    assert {("timer_start", "expires_jiffies"), ("timer_start", "idx"), ("timer_start", "bucket_expiry_jiffies"),
            ("tmigr_update_events", "next_expiry_ns"), ("tmigr_group_set_cpu_active", "migrator")} <= checked
    stop = got["event"] == "tick_stop"
    assert (got.loc[stop, "dependency"] == "NONE").all()


def test_tasks_on_the_lines(exported):
    ev = exported[1].events
    idle = ev["pid"] == 0
    assert (ev.loc[idle, "task"] == "<idle>").all()
    others = ev[~idle]
    assert (others["pid"] == export.SIM_TASK_PID_BASE + others["cpu"]).all()
    assert (others["task"].astype(str) == "sim/" + others["cpu"].astype(str)).all()
    # The idle task's own events are always on it; so is a CPU between its
    # cpu_idle entry and exit.
    own = ev["event"].isin(["cpu_idle", "tick_stop", "tmigr_cpu_idle", "tmigr_cpu_new_timer_idle"])
    assert idle[own].all()
    assert idle.any() and (~idle).any()


def test_wakeups_and_ipis_read_like_the_kernels(exported):
    ev = exported[1].events
    wake = ev[ev["event"] == "sched_wakeup"]
    assert len(wake) and (wake["wakee_comm"].astype(str) == "task" + wake["wakee_pid"].astype(str)).all()
    assert (wake["wakee_prio"] == 120).all()
    ipi = ev[ev["event"] == "ipi_send_cpu"]
    assert len(ipi) and set(ipi["callsite"].astype(str)) <= {"ttwu_queue_wakelist", "wake_up_nohz_cpu"}


# ---------------------------------------------------------------------------
# The text itself

def test_header_and_line_layout(exported):
    path, trace = exported
    text = path.read_text()
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert header[0] == "# tracer: nop"
    assert header[2] == f"# entries-in-buffer/entries-written: {len(trace.events)}/{len(trace.events)}   #P:8"
    assert header[-2].split() == ["#", "TASK-PID", "CPU#", "|||||", "TIMESTAMP", "FUNCTION"]
    lines = event_lines(path)
    assert len(lines) == len(trace.events)
    for line in lines:
        assert TRACEFS_LINE.match(line), line
        assert PERFETTO_LINE.search(line), line
    # The kernel's "%16s-%-7d [%03d] ": the [cpu] column lines up.
    assert {line.index(" [") for line in lines} == {24}


def test_payloads_spell_the_real_kernels_keys(exported):
    """For every event also in the real traces, the payload's keys in the same
    order as the 6.12 kernel printed them, and values in the same shape."""
    real = {}
    for name in ("qemu-6.12.95-16cpu-2node-mixed.trace.txt.xz", "qemu-6.12.95-16cpu-2node-mixed.boot.txt.xz"):
        with lzma.open(TRACES / name, "rt") as f:
            for line in f:
                m = TRACEFS_LINE.match(line.rstrip("\n"))
                if m and m.group(7) not in real:
                    real[m.group(7)] = m.group(8)
    ours = {}
    for line in event_lines(exported[0]):
        m = TRACEFS_LINE.match(line)
        ours.setdefault(m.group(7), m.group(8))

    def keys(payload):
        return [tok.strip("[]").split("=", 1)[0] for tok in payload.split()]

    def shape(payload):  # hex pointers of 16 digits, numbers, symbols
        return [re.sub(r"=-?\d+(\]?)$", r"=N\1", re.sub(r"=[0-9a-f]{16}$", "=P", tok)) if "=" in tok else tok
                for tok in payload.split() if not tok.startswith(("comm=", "callsite=", "callback=", "function=", "mode=",
                                                                  "flags=", "active=", "migrator=", "childmask=",
                                                                  "groupmask=", "child_active=", "group_active="))]

    compared = set(ours) & set(real)
    assert len(compared) >= 20, sorted(set(ours) - set(real))
    for event in compared:
        assert keys(ours[event]) == keys(real[event]), (event, ours[event], real[event])
        assert shape(ours[event]) == shape(real[event]), (event, ours[event], real[event])


def test_bad_names_are_not_written_broken(tmp_path):
    """A callback name with a space would split its payload token."""
    wl = tl.workloads.timeouts(rate_hz=200, function="my timer fn", cancel_p=0.0)
    res = tl.simulate(tl.Config(cpus=2, duration_ns=50_000_000, workload=wl, record_events=True, seed=1))
    path = tmp_path / "names.txt"
    with pytest.warns(UserWarning, match="my timer fn"):
        res.to_ftrace(path)
    ev = tl.read_ftrace(path).events
    starts = ev[ev["event"] == "timer_start"]
    assert len(starts) and (starts["function"] == "my_timer_fn").all()
    assert counts(ev) == counts(res.events)


def test_push_model_run(tmp_path):
    """Before 6.9 (push model): the same round trip."""
    res = tl.simulate(tl.Config(cpus=4, kernel="6.6", duration_ns=50_000_000, record_events=True, seed=2))
    assert res.config.placement == "push"
    path = tmp_path / "push.txt"
    res.to_ftrace(path)
    ev = tl.read_ftrace(path).events
    assert counts(ev) == counts(res.events)
    assert (ev["event"] == "cpu_idle").sum() and not (ev["event"] == "timer_base_idle").any()


# ---------------------------------------------------------------------------
# Compression, errors

@pytest.mark.parametrize("suffix, opener", [(".gz", gzip.open), (".xz", lzma.open), (".bz2", bz2.open)])
def test_compressed_by_suffix(run, exported, tmp_path, suffix, opener):
    path = tmp_path / f"sim.txt{suffix}"
    run.to_ftrace(path)
    with opener(path, "rb") as f:
        assert f.read() == exported[0].read_bytes()
    trace = tl.read_ftrace(path)
    assert trace.skipped_lines == 0 and counts(trace.events) == counts(run.events)


def test_same_run_same_bytes(run, tmp_path):
    a, b = tmp_path / "a.txt.gz", tmp_path / "b.txt.gz"
    run.to_ftrace(a)
    run.to_ftrace(str(b))
    assert a.read_bytes() == b.read_bytes()


def test_needs_record_events(tmp_path):
    res = tl.simulate(tl.Config(cpus=2, duration_ns=10_000_000, seed=1))
    with pytest.raises(ValueError, match="record_events=True"):
        res.to_ftrace(tmp_path / "x.txt")
    assert not (tmp_path / "x.txt").exists()


def test_unwritable_paths_are_named(run, tmp_path):
    missing = tmp_path / "no" / "such" / "dir" / "sim.txt"
    with pytest.raises(OSError, match=re.escape(str(missing))):
        run.to_ftrace(missing)
    with pytest.raises(OSError, match=re.escape(str(tmp_path))):
        run.to_ftrace(tmp_path)  # a directory
    with pytest.raises(TypeError, match="path"):
        run.to_ftrace(42)
