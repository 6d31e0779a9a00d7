"""tl.read_ftrace on the real traces of tests/data/traces, checked against an
independent plain-Python reading of the same text, plus the trace-cmd report
format, compression, and every error path."""
import gzip
import lzma
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import timerlab as tl
from timerlab import _core

from trace_formats import sched_plugin_payload

TRACE_DIR = Path(__file__).parent / "data" / "traces"
# The 6.1 .boot file says only that 6.1 has no hierarchy to set up: no event lines.
TRACES = sorted(p for p in TRACE_DIR.glob("*.txt.xz") if p.name != "qemu-6.1.176-16cpu-2node-mixed.boot.txt.xz")
QEMU16_BOOT = TRACE_DIR / "qemu-6.12.95-16cpu-2node-mixed.boot.txt.xz"
QEMU16 = TRACE_DIR / "qemu-6.12.95-16cpu-2node-mixed.trace.txt.xz"
LINE_COLUMNS = ["ts_ns", "cpu", "task", "pid", "event", "line"]
SCHEMA = _core.ftrace_schema()


def text_of(path: Path) -> str:
    return lzma.open(path, "rt").read()


def simple_events(text: str):
    """(line number, head, event, payload) of every event line, by plain splitting."""
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        head, event, payload = line.split(": ", 2)
        yield n, head, event.strip(), payload.strip()


def simple_fields(event: str, payload: str) -> dict:
    """key -> value text of a key=value payload (the traces' comms have no spaces)."""
    return dict(tok.strip("[]").split("=", 1) for tok in payload.split() if tok != "==>")


def expected_value(kind: str, text: str):
    if kind in ("ptr", "hex"):
        return int(text, 16)
    if kind in ("i64", "u64"):
        return int(text)
    return text


@pytest.fixture(scope="module", params=TRACES, ids=lambda p: p.name)
def real(request):
    return request.param, tl.read_ftrace(request.param), text_of(request.param)


def test_there_are_real_traces():
    assert len(TRACES) == 9  # 6 recordings, 3 boot traces


def test_event_counts_match_plain_splitting(real):
    path, trace, text = real
    counts = pd.Series([ev for _, _, ev, _ in simple_events(text)]).value_counts()
    got = trace.event_counts()
    assert got.to_dict() == counts.to_dict()
    assert len(trace.events) == counts.sum()
    assert trace.skipped_lines == 0 and trace.lost_events == 0


def test_line_columns(real):
    path, trace, text = real
    ev = trace.events
    assert list(ev.columns[:6]) == LINE_COLUMNS
    assert ev["ts_ns"].dtype == np.int64 and ev["line"].dtype == np.int64
    assert ev["cpu"].dtype.kind == "i" and ev["pid"].dtype.kind == "i"
    assert isinstance(ev["task"].dtype, pd.CategoricalDtype)
    assert isinstance(ev["event"].dtype, pd.CategoricalDtype)
    assert "payload" not in ev  # every event of these traces is in the schema
    expected = re.search(r"#P:(\d+)", text)
    assert trace.nr_cpus == int(expected.group(1)) > ev["cpu"].max()
    # Line numbers, CPUs, pids, tasks and exact timestamps of every row.
    rows = list(simple_events(text))
    assert ev["line"].tolist() == [n for n, *_ in rows]
    heads = [re.match(r"\s*(.*)-(\d+)\s+\[(\d+)\]\s+\S+\s+(\d+)\.(\d{6})$", h).groups() for _, h, _, _ in rows]
    assert ev["task"].astype(object).tolist() == [h[0] for h in heads]
    assert ev["pid"].tolist() == [int(h[1]) for h in heads]
    assert ev["cpu"].tolist() == [int(h[2]) for h in heads]
    assert ev["ts_ns"].tolist() == [int(h[3]) * 1_000_000_000 + int(h[4]) * 1000 for h in heads]


def test_every_field_of_every_row(real):
    """Each payload value of each line, as plain Python reads it, is in the frame."""
    path, trace, text = real
    ev = trace.events
    columns = {name: ev[name].astype(object).where(ev[name].notna(), None).tolist()
               for name in ev.columns[6:] if name not in ("tgid", "latency_flags")}
    checked = 0
    for row, (_, _, event, payload) in enumerate(simple_events(text)):
        fields = simple_fields(event, payload)
        for key, column, kind, _required in SCHEMA[event]:
            want = expected_value(kind, fields[key]) if key in fields else None
            got = columns[column][row] if column in columns else None  # a column only if it occurs
            if column == "bucket_expiry_jiffies" and trace.features.bucket_expiry == "derived":
                continue  # not printed by this release: recomputed (test_features.py)
            assert got == want, (path.name, row, event, key)
            checked += 1
        # ... and nothing else: columns of other events are <NA> on this row.
        own = {column for _, column, _, _ in SCHEMA[event]}
        if row % 97 == 0:
            assert all(columns[c][row] is None for c in columns if c not in own)
    assert checked > len(ev)


def test_specific_lines():
    idle = tl.read_ftrace(TRACES[-1])
    assert TRACES[-1].name == "vm2-idle-hz250.trace.txt.xz"
    ev = idle.events.set_index("line")
    r = ev.loc[75]  # kworker/1:0-23 [001] d..1. 204.016688: timer_start: ... flags=D|P|I
    assert (r["task"], r["pid"], r["cpu"], r["ts_ns"]) == ("kworker/1:0", 23, 1, 204_016_688_000)
    assert r["timer"] == 0x8E790473 and r["function"] == "delayed_work_timer_fn"
    assert (r["expires_jiffies"], r["timeout_jiffies"], r["bucket_expiry_jiffies"]) == (4294943497, 249, 4294943504)
    assert (r["base_cpu"], r["idx"], r["flags"]) == (1, 98, "D|P|I")
    assert r["latency_flags"] == "d..1." and ev.loc[1218, "latency_flags"] == "dNh4."  # sched_wakeup in an irq
    assert pd.isna(r["now_jiffies"]) and pd.isna(r["state"])
    r = ev.loc[385]  # tmigr_group_set_cpu_inactive: ... active=0 migrator=ff parent=0000000000000000
    assert (r["active"], r["migrator"], r["parent"], r["childmask"]) == (0, 0xFF, 0, 1)

    qemu16 = tl.read_ftrace(QEMU16)
    r = qemu16.events.set_index("line").loc[24]  # tmigr_group_set: group=000000007cc94409 lvl=1 numa=-1
    assert (r["event"], r["group"], r["lvl"], r["numa"]) == ("tmigr_group_set", 0x7CC94409, 1, -1)
    starts = qemu16.of("tmigr_cpu_idle")
    assert starts["wakeup_ns"].dtype == "UInt64"
    assert (starts["wakeup_ns"] == 9223372036854775807).any()
    assert qemu16.events["timer"].dtype == "UInt64" and qemu16.events["numa"].dtype == "Int64"


def test_trace_api(real):
    path, trace, text = real
    assert trace.path == str(path)
    starts = trace.of("timer_start") if "timer_start" in trace.event_counts() else trace.of("tmigr_group_set")
    assert (starts["event"] == starts["event"].iloc[0]).all()
    assert set(starts.columns) - set(LINE_COLUMNS) - {"latency_flags"} == \
        {c for _, c, _, _ in SCHEMA[starts["event"].iloc[0]]}
    assert starts.index.isin(trace.events.index).all()
    assert "events" in repr(trace) and f"{trace.nr_cpus} CPUs" in repr(trace) and path.name in repr(trace)
    assert trace.duration_ns == trace.events["ts_ns"].max() - trace.events["ts_ns"].min()
    with pytest.raises(ValueError, match="timer_strat"):
        trace.of("timer_strat")


def test_small_chunks_give_the_same_frame(monkeypatch):
    path = TRACES[-1]
    whole = tl.read_ftrace(path).events
    monkeypatch.setattr("timerlab.trace.read._CHUNK_BYTES", 4093)  # lines cut everywhere
    pd.testing.assert_frame_equal(tl.read_ftrace(path).events, whole)


def test_plain_and_gzip_and_misleading_suffix(tmp_path):
    path = QEMU16_BOOT
    text = text_of(path)
    plain = tmp_path / "trace.txt"
    plain.write_text(text)
    gz = tmp_path / "trace.txt.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    disguised = tmp_path / "trace.txt"  # xz content under a plain name: magic bytes decide
    xz_named_txt = tmp_path / "really-xz.txt"
    xz_named_txt.write_bytes(path.read_bytes())
    reference = tl.read_ftrace(path).events
    for p in (plain, gz, xz_named_txt, str(disguised)):
        pd.testing.assert_frame_equal(tl.read_ftrace(p).events, reference)


# ---------------------------------------------------------------------------
# trace-cmd report text, derived from real tracefs lines.

PTR = {"ptr"}


def as_trace_cmd(line: str) -> str:
    """A tracefs line as `trace-cmd report -t` prints it (plugins loaded)."""
    m = re.match(r"\s*(.*-\d+)\s+\[(\d+)\]\s+\S+\s+(\d+\.\d+): (\w+): (.*)$", line)
    task, cpu, ts, event, payload = m.groups()
    f = simple_fields(event, payload)
    kinds = {key: kind for key, _, kind, _ in SCHEMA[event]}
    if event in ("sched_switch", "sched_wakeup"):
        payload = sched_plugin_payload(event, f)
    else:
        if event == "hrtimer_start":  # trace-cmd's hrtimer plugin
            f = {k: f[k] for k in ("hrtimer", "function", "expires", "softexpires")}
        elif event == "hrtimer_expire_entry":
            f = {k: f[k] for k in ("hrtimer", "now")}
        toks = []
        for k, v in f.items():
            if kinds.get(k) in PTR:
                v = f"0x{int(v, 16):x}" if int(v, 16) else "(nil)"
            toks.append(f"[{k}={v}]" if k in ("timeout", "action") else f"{k}={v}")
        payload = " ".join(toks)
    pad = " " * max(0, 20 - len(event))  # trace-cmd pads event names to 20 columns
    return f"{task:>22} [{int(cpu):03d}] {ts}000: {event}: {pad}{payload}"


def test_trace_cmd_report_matches_tracefs(tmp_path):
    text = text_of(TRACES[-1])
    body = [l for l in text.splitlines() if l.strip() and not l.startswith("#")][:3000]
    tracefs = tmp_path / "tracefs.txt"
    tracefs.write_text("\n".join(body) + "\n")
    report = tmp_path / "report.txt"
    report.write_text("version = 6\nCPU 1 is empty\ncpus=2\n" + "\n".join(map(as_trace_cmd, body)) + "\n")
    a = tl.read_ftrace(tracefs)
    b = tl.read_ftrace(report)
    assert b.nr_cpus == 2 and len(b.events) == len(a.events) == 3000
    assert (b.events["line"] == a.events["line"] + 3).all()
    for col in ["ts_ns", "cpu", "task", "pid", "event"]:
        pd.testing.assert_series_equal(b.events[col], a.events[col], check_categorical=False)
    plugin_dropped = {"hrtimer_start": {"mode", "was_armed"}, "hrtimer_expire_entry": {"function"}}
    # tracefs prints the latency flags; trace-cmd report only with -l.
    assert "latency_flags" in a.events and "latency_flags" not in b.events
    for col in a.events.columns.drop("latency_flags")[6:]:
        x = a.events[col]
        y = b.events[col] if col in b.events else pd.Series(pd.NA, index=x.index, dtype=object)
        if col == "prev_state":
            x = x.astype(object).str.rstrip("+")
        keep = ~a.events["event"].isin([e for e, cols in plugin_dropped.items() if col in cols])
        assert x[keep].astype(object).fillna(-1).tolist() == y[keep].astype(object).fillna(-1).tolist(), col
        assert y[~keep].isna().all(), col


# ---------------------------------------------------------------------------
# Errors.

@pytest.fixture()
def damaged(tmp_path):
    """A real trace with line 191's expires made bad (a timer_start)."""
    lines = text_of(TRACES[-1]).splitlines(keepends=True)
    assert "timer_start:" in lines[190]
    lines[190] = lines[190].replace("expires=4294943278", "expires=12x")
    path = tmp_path / "trace.txt"
    path.write_text("".join(lines))
    return path, len(lines)


def test_strict_error_names_file_and_line(damaged):
    path, _ = damaged
    with pytest.raises(tl.TraceFormatError) as e:
        tl.read_ftrace(path)
    assert str(e.value) == f"{path}:191: timer_start: expires='12x' is not a number"
    assert isinstance(e.value, ValueError)


def test_lenient_counts_and_skips(damaged):
    path, _ = damaged
    with pytest.warns(UserWarning, match="skipped 1 malformed"):
        trace = tl.read_ftrace(path, strict=False)
    assert trace.skipped_lines == 1
    assert trace.skipped_examples == ["line 191: timer_start: expires='12x' is not a number"]
    assert 191 not in trace.events["line"].values
    assert len(trace.events) == len(tl.read_ftrace(TRACES[-1]).events) - 1


def test_truncated_last_line(tmp_path):
    text = text_of(TRACES[-1])
    cut = text.rindex("timer_start: timer=") + len("timer_start: timer=000000")
    path = tmp_path / "cut.txt"
    path.write_text(text[:cut])
    n = text[:cut].count("\n") + 1
    with pytest.raises(tl.TraceFormatError, match=rf"cut.txt:{n}: partial last line: no newline .*cut short"):
        tl.read_ftrace(path)


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_corrupt_xz(tmp_path, damage):
    data = bytearray(TRACES[-1].read_bytes())
    if damage == "flip":
        for i in range(len(data) // 2, len(data) // 2 + 64):
            data[i] ^= 0x5A
    else:
        data = data[: len(data) // 2]
    path = tmp_path / "bad.txt.xz"
    path.write_bytes(bytes(data))
    with pytest.raises(tl.TraceFormatError, match=r"bad\.txt\.xz:?\d*: (corrupt|truncated) xz data"):
        tl.read_ftrace(path)


def test_corrupt_gzip(tmp_path):
    data = gzip.compress(text_of(QEMU16_BOOT).encode())
    path = tmp_path / "bad.gz"
    path.write_bytes(data[: len(data) - 100])
    with pytest.raises(tl.TraceFormatError, match=r"bad.gz:\d+: truncated gzip data"):
        tl.read_ftrace(path)


def test_missing_file(tmp_path):
    path = tmp_path / "nope.txt"
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        tl.read_ftrace(path)


def test_a_broken_trace_dat_names_section_and_offset(tmp_path):
    """A file with trace.dat's magic is read as one (tests/test_tracedat.py);
    this one is all zeros after its header."""
    path = tmp_path / "trace.dat"
    path.write_bytes(b"\x17\x08\x44tracing6\x00" + bytes(100))
    with pytest.raises(tl.TraceFormatError, match=r"trace.dat: file header at byte 14: long size 0"):
        tl.read_ftrace(path)


@pytest.mark.parametrize("content", ["", "# tracer: nop\n#\n# entries-in-buffer/entries-written: 0/0   #P:4\n"])
def test_empty_and_eventless(tmp_path, content):
    path = tmp_path / "empty.txt"
    path.write_text(content)
    trace = tl.read_ftrace(path)
    assert list(trace.events.columns) == LINE_COLUMNS
    assert len(trace.events) == 0
    assert trace.events["ts_ns"].dtype == np.int64
    assert isinstance(trace.events["event"].dtype, pd.CategoricalDtype)
    assert trace.nr_cpus == (4 if content else 0)
    assert trace.event_counts().empty and "no events" in repr(trace)


def test_unknown_events_keep_their_payload(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text(
        "  x-1 [000] d..2. 1.000000: irq_handler_entry: irq=11 name=virtio0\n"
        "  x-1 [001] d..2. 1.000001: timer_cancel: timer=0000000000000010\n"
        "  x-1 [001] d..2. 1.000002: timer_cancel: timer=0000000000000011 newkey=5\n")
    trace = tl.read_ftrace(path)
    ev = trace.events
    assert ev["payload"].dtype == object
    assert ev["payload"].tolist() == ["irq=11 name=virtio0", None, "timer=0000000000000011 newkey=5"]
    assert ev["timer"].tolist() == [pd.NA, 16, 17]
    assert list(trace.of("irq_handler_entry").columns) == LINE_COLUMNS + ["latency_flags", "payload"]
    assert ev["latency_flags"].tolist() == ["d..2.", "d..2.", "d..2."]
    assert trace.nr_cpus == 2


def test_strict_must_be_a_bool():
    with pytest.raises(TypeError, match="strict"):
        tl.read_ftrace(QEMU16_BOOT, strict="no")


def test_reader_thread_errors_reach_the_caller(tmp_path, monkeypatch):
    def failing():
        yield b"  x-1 [000] d..2. 1.000000: timer_init: timer=1\n"
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("timerlab.trace.read._open", lambda name: (failing(), "plain"))
    with pytest.raises(RuntimeError, match="disk on fire"):
        tl.read_ftrace(tmp_path / "whatever.txt")


def test_bytes_that_are_not_utf8(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(b"  caf\xe9-1 [000] d..2. 1.000000: timer_init: timer=1\n"
                     b"  cafe-2 [000] d..2. 1.000001: foo: \xff\xfe\n")
    ev = tl.read_ftrace(path).events
    assert ev["task"].tolist() == ["caf\udce9", "cafe"]  # undecodable bytes kept as surrogates
    assert ev["payload"].tolist() == [None, "\udcff\udcfe"]
    path.write_bytes(b"  x-1 [000] d..2. 1.000000: timer_init: timer=\xff\n")
    with pytest.raises(tl.TraceFormatError, match=r"t.txt:1: timer_init: timer='\\xff' is not a pointer"):
        tl.read_ftrace(path)


def test_columns_are_not_copied():
    """Numeric columns are views of the arrays the C++ parser filled (their
    base is the capsule that owns the C++ vector)."""
    ev = tl.read_ftrace(QEMU16_BOOT).events

    def owner(a):
        while isinstance(a.base, np.ndarray):
            a = a.base
        return type(a.base).__name__

    assert owner(ev["ts_ns"].to_numpy()) == "PyCapsule"
    assert owner(ev["line"].to_numpy()) == "PyCapsule"
    assert owner(ev["lvl"].array._data) == "PyCapsule"
    assert owner(ev["lvl"].array._mask) == "PyCapsule"
