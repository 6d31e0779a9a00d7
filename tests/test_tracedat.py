"""trace.dat (issue 16): read_ftrace of a trace-cmd trace.dat, v6 and v7,
equals the text reader on `trace-cmd report -t` of the same file (Debian's
trace-cmd is the reference decoder), and a damaged file is an error naming
the file, the section and the byte offset."""
import functools
import lzma
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import timerlab as tl
from conftest import TRACE_DIR

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))
import targets  # noqa: E402

V7 = TRACE_DIR / "vm2-cyclictest.v7.dat"
V6_XZ = TRACE_DIR / "vm2-cyclictest-laptop.v6.dat.xz"
TRACE_CMD = shutil.which("trace-cmd")
needs_trace_cmd = pytest.mark.skipif(TRACE_CMD is None, reason="trace-cmd is not installed (apt-get install trace-cmd)")


@pytest.fixture(scope="module")
def v6_plain(tmp_path_factory):
    path = tmp_path_factory.mktemp("dat") / "laptop.v6.dat"
    path.write_bytes(lzma.decompress(V6_XZ.read_bytes()))
    return path


def report_text(dat, tmp_path):
    """trace-cmd report -t (ns timestamps) of a plain trace.dat, as a file."""
    out = tmp_path / (dat.name + ".report.txt")
    with open(out, "wb") as f:
        subprocess.run([TRACE_CMD, "report", "-t", "-i", str(dat)], stdout=f, stderr=subprocess.DEVNULL, check=True)
    return out


@pytest.fixture(scope="module")
def pairs(v6_plain, tmp_path_factory):
    """(trace read from the .dat, trace read from its report text) per file;
    the v6 one is read from its .dat.xz, through the decompression path."""
    if TRACE_CMD is None:
        pytest.skip("trace-cmd is not installed (apt-get install trace-cmd)")
    tmp = tmp_path_factory.mktemp("report")
    return {"v7": (tl.read_ftrace(V7), tl.read_ftrace(report_text(V7, tmp))),
            "v6": (tl.read_ftrace(V6_XZ), tl.read_ftrace(report_text(v6_plain, tmp)))}


@needs_trace_cmd
@pytest.mark.parametrize("version", ["v7", "v6"])
def test_every_record_equals_trace_cmd_report(pairs, version):
    dat, text = pairs[version]
    a, b = dat.events, text.events
    assert len(a) > 70_000
    pd.testing.assert_series_equal(dat.event_counts(), text.event_counts())
    assert list(a.columns) == list(b.columns)
    assert (dat.nr_cpus, dat.lost_events, dat.loss_markers) == (text.nr_cpus, text.lost_events, text.loss_markers)
    # The text's line numbers count report's `cpus=` line; the .dat's, records.
    np.testing.assert_array_equal(a["line"].to_numpy() + 1, b["line"].to_numpy())
    for col in a.columns.drop(["line", "flags"]):
        pd.testing.assert_series_equal(a[col], b[col], check_categorical=False, obj=col)
        if isinstance(b[col].dtype, pd.CategoricalDtype):
            assert isinstance(a[col].dtype, pd.CategoricalDtype), col
        else:
            assert a[col].dtype == b[col].dtype, col


@needs_trace_cmd
@pytest.mark.parametrize("version", ["v7", "v6"])
def test_timer_flags_are_the_kernels_where_the_text_has_libtraceevents(pairs, version):
    """The one difference, and the reason: trace-cmd prints flags=D|P|I on every
    timer_start (libtraceevent misreads `flags & (M|D|P|I)`), which the text
    path detects and reads as unknown; the .dat path evaluates the kernel's
    print fmt itself, so a trace.dat has the real flags."""
    dat, text = pairs[version]
    assert text.features.timer_flags == "unreliable" and dat.features.timer_flags == "traced"
    starts = dat.events["event"] == "timer_start"
    flags = dat.events.loc[starts, "flags"].astype(str)
    assert flags.nunique() > 2 and (flags != "D|P|I").any()
    # process_timeout (schedule_timeout) timers are never deferrable.
    assert not flags[dat.events.loc[starts, "function"] == "process_timeout"].str.contains("D").any()


@needs_trace_cmd
def test_validate_of_the_dat_is_validate_of_its_text(pairs):
    """Given the text's (unknown) timer flags, validate of the .dat reports
    exactly what validate of the report text does."""
    dat, text = pairs["v7"]
    ev = dat.events.copy()
    ev["flags"] = text.events["flags"].to_numpy()
    as_text = tl.validate(tl.Trace(text.path, ev, dat.nr_cpus, source="trace-cmd report"))
    assert str(as_text) == str(tl.validate(text))
    assert "the trace shows no tick_stop" in str(as_text)


def test_read_buffer_by_name():
    assert tl.trace.dat.buffers(V7) == [""]
    with pytest.raises(ValueError, match="buffer='nope' is not in .*its buffers: \\[''\\]"):
        tl.read_ftrace(V7, buffer="nope")
    with pytest.raises(ValueError, match="not a trace.dat"):
        tl.read_ftrace(TRACE_DIR / "vm2-idle-hz250.trace.txt.xz", buffer="x")


def test_kallsyms_and_cmdlines_name_functions_and_tasks():
    ev = tl.read_ftrace(V7).events
    assert set(ev.loc[ev["event"] == "timer_start", "function"].astype(str)) >= {"process_timeout", "writeout_period"}
    assert (ev.loc[ev["pid"] == 0, "task"] == "<idle>").all()
    assert "cyclictest" in set(ev["task"].astype(str))


@pytest.mark.parametrize("version", ["v7", "v6"])
def test_direct_decoding_equals_printing_and_parsing(version, v6_plain):
    """The schema's events are decoded straight into the columns; printing
    every record as trace-cmd report does and parsing that text (what the
    other events get) gives the same table: values, dtypes, categories and
    their order."""
    from timerlab import _core
    from timerlab.trace import dat
    from timerlab.trace.read import _frame

    path = str(V7 if version == "v7" else v6_plain)

    def table(direct):
        data = dat._contents(path)
        parser = _core.FtraceParser(strict=True)
        _core.TraceDat(data, dat._decompressor(dat._algorithm(data))).read("", parser, direct=direct)
        parser.finish()
        return _frame(parser.take())

    a, b = table(True), table(False)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    for col in a.columns:
        if isinstance(a[col].dtype, pd.CategoricalDtype):
            assert list(a[col].cat.categories) == list(b[col].cat.categories), col


# ---------------------------------------------------------------------------
# Damage: cut anywhere, bit flips in the header, a format, a page.

@pytest.fixture(scope="module")
def v7_bytes():
    return _v7()


@functools.cache
def _v7() -> bytes:
    # Not a fixture in the fuzz tests: hypothesis would print it with every example.
    return V7.read_bytes()


def read_damaged(tmp_path, data: bytes):
    path = tmp_path / "damaged.dat"
    path.write_bytes(data)
    return path, tl.read_ftrace(path)


def test_cut_in_the_pages_names_cpu_data_and_offset(tmp_path, v6_plain, v7_bytes):
    with pytest.raises(tl.TraceFormatError, match=r"damaged.dat: CPU 1 data at byte \d+: .*truncated"):
        read_damaged(tmp_path, v6_plain.read_bytes()[:-5000])
    # v7 keeps its last options section after the pages.
    with pytest.raises(tl.TraceFormatError, match=r"damaged.dat: options section header at byte 815307: .*truncated"):
        read_damaged(tmp_path, v7_bytes[:-300])


def test_a_flipped_format_is_named(tmp_path, v6_plain):
    data = bytearray(v6_plain.read_bytes())
    at = data.index(b"name: timer_start")
    data[at:at + 4] = b"nam_"
    with pytest.raises(tl.TraceFormatError, match=r"event formats at byte \d+: format of a timer event"):
        read_damaged(tmp_path, bytes(data))


def test_a_corrupt_page_commit_is_named(tmp_path, v6_plain):
    data = bytearray(v6_plain.read_bytes())
    first_page = len(data) - 4096 * 5  # a page of CPU 1 (its data ends the file, page-aligned)
    data[first_page + 8:first_page + 12] = (60000).to_bytes(4, "little")
    with pytest.raises(tl.TraceFormatError, match=r"CPU \d data at byte \d+: page commit of 60000 bytes"):
        read_damaged(tmp_path, bytes(data))


def _small() -> bytes:
    return targets.small_trace_dat()


def test_the_small_v6_reads_its_pages(tmp_path):
    """The fuzz tests' input is a trace.dat of its own: every record of its
    four pages, in the order of the full file."""
    _path, small = read_damaged(tmp_path, _small())
    full = tl.read_ftrace(V6_XZ).events
    assert 100 < len(small.events) < 1000
    per_cpu = [full[full["cpu"] == c].head((small.events["cpu"] == c).sum()) for c in (0, 1)]
    expect = pd.concat(per_cpu).sort_values(["ts_ns", "cpu"], kind="stable")
    np.testing.assert_array_equal(small.events["ts_ns"], expect["ts_ns"])


@settings(max_examples=3000, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.data_too_large])
@given(data=st.binary(min_size=16, max_size=64))
def test_fuzz_small_trace_dat_cut_or_flipped(data, tmp_path):
    """fuzz/targets.trace_dat: the small trace.dat cut anywhere (always an
    error) or with bits flipped (an error, or a trace)."""
    targets.trace_dat(data, tmp_path)


def test_found_by_fuzzing_a_renamed_function_that_is_not_utf8(tmp_path):
    """A flip that leaves a function name of bytes that are not UTF-8, which
    the features' renaming of the functions then gave pandas as a string
    Index (a UnicodeEncodeError, not a trace or an error)."""
    targets.trace_dat(b"\x01" + b"\x00" * 11 + b"\x13\xb7\xd4,\x07", tmp_path)


def test_found_by_fuzzing_a_clock_name_that_is_not_utf8(tmp_path):
    """A flipped bit in the TRACECLOCK option: names from the file are bytes,
    not text (it was a UnicodeDecodeError, not a trace or an error)."""
    data = bytearray(_small())
    at = data.index(b"[local]")
    data[at + 1] = 0xf4
    _path, trace = read_damaged(tmp_path, bytes(data))
    assert len(trace.events) > 100


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=10, max_value=815_300))
def test_fuzz_truncated_anywhere_is_an_error(tmp_path, cut):
    """Every cut that keeps the magic (without it the file is empty text) is
    an error naming the file, a section and
    a byte offset; none crashes or returns fewer rows."""
    with pytest.raises(tl.TraceFormatError, match=r"damaged.dat: .+ at byte \d+: "):
        read_damaged(tmp_path, _v7()[:cut])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(at=st.integers(min_value=0, max_value=815_523), bit=st.integers(min_value=0, max_value=7))
def test_fuzz_bit_flips_error_or_read(tmp_path, at, bit):
    """A flipped bit anywhere: an error naming file, section and offset, or a
    trace (a flip inside a value changes only that value); never a crash or a
    hang (bounded: a read takes well under the time below)."""
    data = bytearray(_v7())
    data[at] ^= 1 << bit
    expect_error_or_trace(tmp_path, bytes(data))


def expect_error_or_trace(tmp_path, data: bytes):
    start = time.monotonic()
    try:
        _path, trace = read_damaged(tmp_path, data)
    except tl.TraceFormatError as e:
        # Structure: section and offset; a payload its event's columns
        # refuse: the record's number; a flip in the magic: not a trace.dat,
        # so text, refused at its first line.
        msg = str(e)
        assert "damaged.dat: " in msg and (" at byte " in msg or ": record " in msg) or "damaged.dat:1: " in msg
    else:
        assert len(trace.events) > 0
    assert time.monotonic() - start < 30
