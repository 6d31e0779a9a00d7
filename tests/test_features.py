"""Reading by feature, not by version (timerlab.trace.features): the fields
each release prints, the bucket recomputed where a release does not print
it, what a Trace says it saw, and how a missing event is named."""
import lzma

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import timerlab as tl
from timerlab.wheel import bucket_expiry_from_idx

from conftest import RECORDINGS, TRACE_DIR
from trace_formats import as_release, as_trace_cmd, rewrite, with_module

TRACE_61 = TRACE_DIR / "qemu-6.1.176-16cpu-2node-mixed.trace.txt.xz"
WITH_BUCKET = [p for p in RECORDINGS if "6.1." not in p.name]


@pytest.fixture(scope="module")
def text_61():
    with lzma.open(TRACE_61, "rt") as f:
        return f.read()


@pytest.mark.parametrize("path", WITH_BUCKET, ids=lambda p: p.name.split(".trace")[0])
def test_the_bucket_is_recomputed_as_the_kernel_printed_it(path):
    """§2.2 against every timer_start of the 6.12 and 6.18 traces, which
    print bucket_expiry (measured: 6,557 of 6,557)."""
    s = tl.read_ftrace(path).of("timer_start")
    bucket, ok = bucket_expiry_from_idx(s["expires_jiffies"].to_numpy(np.uint64),
                                        s["timeout_jiffies"].to_numpy(np.int64), s["idx"].to_numpy(np.int64))
    assert ok.all()
    assert (bucket == s["bucket_expiry_jiffies"].to_numpy(np.uint64)).all()


def test_the_references_worked_example():
    """pre-6.9-kernels.md §2.2: expires=4294895959 [timeout=1] idx=24 -> 4294895960."""
    bucket, ok = bucket_expiry_from_idx([4294895959], [1], [24])
    assert ok[0] and int(bucket[0]) == 4294895960
    _, ok = bucket_expiry_from_idx([4294895959], [1], [25])  # no clock near jiffies gives slot 25
    assert not ok[0]


@settings(max_examples=400, deadline=None)
@given(j=st.integers(1000, 2**40), delta=st.integers(-300, 2 * 10**9), lag=st.sampled_from([-1, 0, 1]),
       hz=st.sampled_from([100, 250, 1000]))
def test_the_bucket_of_any_placement_is_recovered(j, delta, lag, hz):
    """Whatever the base clock (jiffies, jiffies + 1 as on 5.4, jiffies - 1),
    the level and delta: the index the wheel computed gives back its bucket,
    expired and clamped timers included."""
    expires = j + delta
    idx, bucket = tl.calc_wheel_index(expires, j + lag, hz=hz)
    got, ok = bucket_expiry_from_idx([expires], [delta], [idx], hz=hz)
    assert ok[0] and int(got[0]) == bucket


def test_a_6_1_trace_says_what_it_has():
    tr = tl.read_ftrace(TRACE_61)
    f = tr.features
    assert (f.bucket_expiry, f.timer_base_idle, f.pull_model, f.was_armed) == ("derived", False, False, True)
    assert (f.source, f.hz, f.hrtimer_modes, f.timer_flags) == ("tracefs", 250, "symbolic", "traced")
    assert (tr.kernel, f.release_from) == ("6.1", "file name")
    assert tr.events.loc[tr.events["event"] == "timer_start", "bucket_expiry_jiffies"].notna().all()
    assert any("derived" in n for n in f.notes) and "bucket_expiry" in str(f)
    tr612 = tl.read_ftrace(TRACE_DIR / "qemu-6.12.95-16cpu-2node-mixed.trace.txt.xz")
    assert (tr612.features.bucket_expiry, tr612.features.pull_model, tr612.kernel) == ("traced", True, "6.12")
    assert tl.read_ftrace(TRACE_61, kernel="6.1.176").kernel == "6.1.176"
    with pytest.raises(ValueError, match="kernel="):
        tl.read_ftrace(TRACE_61, kernel="six")


def test_5_4_and_6_6_text_reads_like_the_original(tmp_path, text_61):
    """4-character flags, hex HARD modes, no was_armed, a module's symbol:
    the same events and fields (modes decoded, module kept in the name)."""
    original = tl.read_ftrace(TRACE_61).events
    for release in ("5.4", "6.6"):
        text = rewrite(text_61, lambda ln: with_module(as_release(ln, release), "process_timeout", "fake_mod"))
        path = tmp_path / f"format-{release}.trace.txt"
        path.write_text(text)
        tr = tl.read_ftrace(path)
        ev = tr.events
        assert len(ev) == len(original) and (ev["event"] == original["event"]).all()
        assert tr.kernel == release and not tr.features.was_armed and tr.features.module_symbols
        assert tr.features.hrtimer_modes == ("hex" if release == "5.4" else "symbolic")
        modes = original["mode"].astype(object).fillna("")
        assert (ev["mode"].astype(object).fillna("") == modes).all()  # hex decoded to the names
        fn = ev["function"].astype(object).fillna("").str.replace(" [fake_mod]", "", regex=False)
        assert (fn == original["function"].astype(object).fillna("")).all()
        assert (ev["bucket_expiry_jiffies"] == original["bucket_expiry_jiffies"]).fillna(True).all()


def test_trace_cmd_report_text_reads_like_tracefs(tmp_path, text_61):
    """Debian's trace-cmd 3.1.6 prints hrtimer callbacks as sym/0x0 (read as
    sym) and flags=D|P|I on every timer_start (read as unknown: none)."""
    path = tmp_path / "report.txt"
    path.write_text(rewrite(text_61, as_trace_cmd, header=["cpus=16"]))
    tr, original = tl.read_ftrace(path), tl.read_ftrace(TRACE_61)
    f = tr.features
    assert (f.source, f.timer_flags, f.hrtimer_modes, tr.nr_cpus) == ("trace-cmd report", "unreliable", "none", 16)
    ev, orig = tr.events, original.events
    assert len(ev) == len(orig)
    both = ev["function"].notna()
    assert (ev.loc[both, "function"].astype(str) == orig.loc[both, "function"].astype(str)).all()
    starts = ev["event"] == "timer_start"
    assert (ev.loc[starts, "flags"].astype(str) == "").all()
    assert any("D|P|I" in n for n in f.notes)


def test_the_release_is_read_off_the_features(tmp_path, text_61):
    """Without a version in the file name: no bucket_expiry and clocks at
    jiffies -> the 5.9-6.7 wheel; timer_migration events -> the pull model."""
    path = tmp_path / "machine.trace.txt"
    path.write_text(rewrite(text_61, lambda ln: ln))
    tr = tl.read_ftrace(path)
    assert (tr.kernel, tr.features.release_from) == ("6.6", "features")
    assert tr.to_config().placement == "push"
    with lzma.open(TRACE_DIR / "vm2-fsync-sleep-hz250.trace.txt.xz", "rt") as f:
        (tmp_path / "vm.trace.txt").write_text(f.read())
    assert tl.read_ftrace(tmp_path / "vm.trace.txt").kernel == "latest"


def test_a_missing_event_is_named_with_how_to_record_it():
    tr = tl.read_ftrace(TRACE_61)
    ev = tr.events[tr.events["event"] != "tick_stop"].reset_index(drop=True)
    rep = tl.validate(tl.Trace(tr.path, ev, tr.nr_cpus))
    msg = " ".join(rep.notes)
    assert "the trace shows no tick_stop" in msg
    assert "/sys/kernel/tracing/events/timer/tick_stop/enable" in msg and "trace-cmd record -e timer:tick_stop" in msg
    assert rep.tick_stops.agreement is None and "simulation stopped" in rep.tick_stops.note
    ev = tr.events[tr.events["event"] != "sched_switch"].reset_index(drop=True)
    with pytest.raises(ValueError) as e:  # what the replay itself needs is required
        tl.validate(tl.Trace(tr.path, ev, tr.nr_cpus))
    assert "lacks the event(s) ['sched_switch']" in str(e.value)
    assert "trace-cmd record -e sched:sched_switch" in str(e.value)


def test_features_of_every_recording():
    for path in RECORDINGS:
        f = tl.read_ftrace(path).features
        assert f.hz == 250 and f.source == "tracefs" and f.timer_flags == "traced", path.name
        assert f.bucket_expiry == ("derived" if "6.1." in path.name else "traced"), path.name
        assert f.pull_model == ("6.1." not in path.name), path.name
        assert f.tick_stop_dependencies == ("NONE",), path.name
    frame = pd.DataFrame([vars(tl.read_ftrace(p).features) for p in RECORDINGS[:2]])
    assert {"release", "bucket_expiry", "was_armed"} <= set(frame.columns)


def _frame(rows, **columns):
    """A few events as the reader gives them (categorical names)."""
    ev = pd.DataFrame(rows, columns=["ts_ns", "cpu", "event", *columns])
    ev["event"] = ev["event"].astype("category")
    return ev


def test_a_remote_re_arm_from_its_own_callback_is_not_a_push():
    """6.9+ expires an idle CPU's timers remotely; re-armed by its own
    callback, a timer keeps the remote base (not a push). Another timer
    put on another CPU's base unpinned is the 6.8 push."""
    rows = [(1, 1, "timer_expire_entry", 0xA, 3, "", 100, 0, 5, 101), (2, 1, "timer_start", 0xA, 3, "", 200, 99, 70, 200),
            (3, 1, "timer_expire_exit", 0xA, 3, "", None, None, None, None)]
    cols = dict(timer=0, base_cpu=0, flags=0, expires_jiffies=0, timeout_jiffies=0, idx=0, bucket_expiry_jiffies=0)
    ev = _frame(rows, **cols)
    detect = tl.trace.features.detect
    assert detect(ev, "machine.trace.txt", source="tracefs")[1].release == "latest"
    ev.loc[1, "timer"] = 0xB
    assert detect(ev, "machine.trace.txt", source="tracefs")[1].release == "6.8"
    ev.loc[1, "flags"] = "P"  # add_timer_on: pinned where it was put
    assert detect(ev, "machine.trace.txt", source="tracefs")[1].release == "latest"


def test_a_file_name_gives_a_release_only_if_it_reads_as_one():
    ev = _frame([(1, 0, "timer_start", 0xA, 100, 10)], timer=0, expires_jiffies=0, timeout_jiffies=0)
    detect = tl.trace.features.detect
    f = detect(ev, "ubuntu-22.04-box.trace.txt", source="tracefs")[1]
    assert f.release_from == "features"
    assert detect(ev, "box-5.15.0-91.trace.txt", source="tracefs")[1].release == "5.15"
    # timer_start without idx: nothing to derive the bucket from, and no crash.
    assert f.bucket_expiry == "none" and any("not derived" in n for n in f.notes)
