"""The timer wheel through the public API: calc_wheel_index and TimerWheel.

Expected values come from the reference (kernel-timers.md §1 and §10) and
from an independent oracle written from its level table (§1.2), not from the
C++ code under test.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import timerlab as tl

U64 = 1 << 64


def oracle(expires: int, clk: int, hz: int):
    """calc_wheel_index from the reference's level table, in plain Python ints."""
    depth = 9 if hz > 100 else 8
    delta = (expires - clk) % U64
    # Upper ends (exclusive) of each level's delta range, §1.2.
    ends = [63 * 8**n for n in range(depth)]
    for lvl in range(depth - 1):
        if delta < ends[lvl]:
            break
    else:
        if delta >= 1 << 63:  # negative as a signed long: already expired
            return clk % 64, clk
        cutoff = 63 * 8 ** (depth - 1)
        if delta >= cutoff:
            expires = (clk + cutoff - 8 ** (depth - 1)) % U64
        lvl = depth - 1
    gran = 8**lvl
    bucket = ((expires // gran + 1) * gran) % U64
    return 64 * lvl + (expires // gran + 1) % 64, bucket


def test_done_when_example():
    idx, bucket = tl.calc_wheel_index([4294938528], [4294938527], hz=250)
    assert idx.tolist() == [33] and bucket.tolist() == [4294938529]
    assert idx.dtype == np.uint32 and bucket.dtype == np.uint64


@pytest.mark.parametrize(
    "delta, idx, bucket",
    [(1, 2, 1_000_002), (63, 80, 1_000_064), (64, 81, 1_000_072), (500, 71, 1_000_504),
     (10_000, 245, 1_010_176), (0, 1, 1_000_001), (62, 63, 1_000_063), (503, 71, 1_000_504),
     (504, 145, 1_000_512)],
)
def test_reference_10_1(delta, idx, bucket):
    assert tl.calc_wheel_index(1_000_000 + delta, 1_000_000, hz=1000) == (idx, bucket)


def test_reference_10_2_and_10_3_and_10_4():
    j = 1_000_003
    got = tl.calc_wheel_index(np.array([1, 63, 64, 500, 10_000]) + j, j, hz=1000)
    assert got[0].tolist() == [5, 81, 81, 71, 245]
    assert got[1].tolist() == [1_000_005, 1_000_072, 1_000_072, 1_000_504, 1_010_176]
    assert tl.calc_wheel_index(1_000_125, 1_000_000, hz=250) == (88, 1_000_128)
    assert tl.calc_wheel_index(1_002_500, 1_000_000, hz=250) == (177, 1_002_560)
    assert tl.calc_wheel_index(1_000_000 + 2 * 10**9, 1_000_000, hz=250) == (575, 1_056_964_608)
    assert tl.calc_wheel_index(1_000_000 + 2 * 10**9, 1_000_000, hz=100) == (511, 132_120_576)


def test_broadcasting_and_shapes():
    expires = np.arange(100, 110, dtype=np.uint64).reshape(2, 5)
    idx, bucket = tl.calc_wheel_index(expires, 100, hz=250)
    assert idx.shape == (2, 5) and bucket.shape == (2, 5)
    assert bucket.ravel().tolist() == [e + 1 for e in range(100, 110)]


@settings(max_examples=3000, deadline=None)
@given(
    clk=st.integers(0, U64 - 1),
    delta=st.one_of(st.integers(0, 600), st.integers(0, 2 * 10**9), st.integers(0, U64 - 1)),
    hz=st.sampled_from([100, 250, 300, 1000]),
)
def test_matches_oracle(clk, delta, hz):
    expires = (clk + delta) % U64
    assert tl.calc_wheel_index(expires, clk, hz=hz) == oracle(expires, clk, hz)


@settings(max_examples=500, deadline=None)
@given(clk=st.integers(0, U64 - 1), delta=st.integers(0, 1_056_964_607))
def test_never_early_and_slack_bounded(clk, delta):
    expires = (clk + delta) % U64
    idx, bucket = tl.calc_wheel_index(expires, clk, hz=250)
    slack = (bucket - expires) % U64
    assert 1 <= slack <= 8 ** (idx // 64)
    if idx >= 64:
        assert slack / delta <= 8 / 63 + 1e-12


@pytest.mark.parametrize(
    "kwargs, exc, words",
    [
        (dict(expires=-1, clk=0), ValueError, "expires"),
        (dict(expires=[5, -3], clk=0), ValueError, "expires"),
        (dict(expires=1.5, clk=0), TypeError, "expires"),
        (dict(expires=[1.0], clk=0), TypeError, "expires"),
        (dict(expires=True, clk=0), TypeError, "expires"),
        (dict(expires=["10"], clk=0), TypeError, "expires"),
        (dict(expires=10, clk=-1), ValueError, "clk"),
        (dict(expires=[1 << 64], clk=0), ValueError, "expires"),
        (dict(expires=10, clk=0, hz=200), ValueError, "hz"),
        (dict(expires=10, clk=0, hz=250.0), TypeError, "hz"),
        (dict(expires=[1, 2, 3], clk=[1, 2]), ValueError, "broadcast"),
    ],
)
def test_bad_input_is_named(kwargs, exc, words):
    with pytest.raises(exc, match=words):
        tl.calc_wheel_index(**kwargs)


def test_wheel_constants():
    c = tl.wheel_constants(100)
    assert c["LVL_DEPTH"] == 8 and c["WHEEL_SIZE"] == 512 and c["WHEEL_TIMEOUT_MAX"] == 130_023_424
    assert tl.wheel_constants(1000)["LVL_START"][1:] == [63 * 8**n for n in range(9)]


# -- TimerWheel ------------------------------------------------------------

def test_wheel_runs_timers_in_kernel_order_at_bucket_expiry():
    w = tl.TimerWheel(hz=1000, clk=0)
    l2 = w.add_timer(505)  # level 2, bucket 512
    w.run(400)
    l1 = w.add_timer(507)  # delta 107: level 1, bucket 512
    w.run(500)
    a, b = w.add_timer(511), w.add_timer(511)  # level 0, bucket 512
    assert w.timer(l2)["level"] == 2 and w.timer(l1)["level"] == 1
    fired = w.run(512)
    assert fired["timer"].tolist() == [l2, l1, b, a]  # highest level first, newest first
    assert set(fired["baseclk_jiffies"]) == {512}
    assert w.pending_count == 0
    w.check_invariants()


def test_callback_rearms_for_next_jiffy_and_events_are_logged():
    w = tl.TimerWheel(hz=250, clk=1000)
    t = w.add_timer(1003)
    seen = []

    def cb(timer, baseclk):
        seen.append((timer, baseclk, w.jiffies))
        w.mod_timer(timer, w.jiffies)  # "now" -> next jiffy

    w.run(1010, callback=cb)
    assert seen == [(t, 1004, 1010)]
    assert w.timer(t)["bucket_expiry_jiffies"] == 1011
    ev = w.events
    assert ev["event"].tolist() == ["timer_start", "timer_cancel", "timer_expire_entry", "timer_start"]
    assert ev["bucket_expiry_jiffies"].tolist() == [1004, 1004, 1004, 1011]


def test_same_bucket_shortcut_and_lazy_next_expiry():
    w = tl.TimerWheel(hz=1000, clk=1_000_003)
    t = w.add_timer(1_000_003 + 63)
    n = len(w.events)
    assert w.mod_timer(t, 1_000_003 + 64) == 1
    assert len(w.events) == n  # same bucket: no trace event
    u = w.add_timer(1_000_003 + 5)
    assert w.next_expiry == 1_000_009
    w.del_timer(u)
    assert w.next_expiry_recalc and w.next_expiry == 1_000_009
    w.forward(1_000_020)
    assert w.clk == 1_000_009  # held back by the stale next_expiry
    assert w.next_timer_interrupt(1_000_020) == 1_000_072


def test_callback_error_propagates_and_leaves_wheel_consistent():
    w = tl.TimerWheel(hz=250, clk=0)
    for e in (5, 5, 6):
        w.add_timer(e)

    def boom(timer, baseclk):
        raise RuntimeError("callback failed")

    with pytest.raises(RuntimeError, match="callback failed"):
        w.run(10, callback=boom)
    assert w.pending_count == 0
    w.check_invariants()


def test_wheel_bad_input():
    with pytest.raises(ValueError, match="hz"):
        tl.TimerWheel(hz=64)
    with pytest.raises(TypeError):
        tl.TimerWheel(250)  # keyword-only
    w = tl.TimerWheel(hz=250, clk=100)
    with pytest.raises(ValueError, match="forward"):
        w.run(99)
    with pytest.raises(ValueError, match="flags"):
        w.add_timer(200, flags="X")
    with pytest.raises((ValueError, IndexError), match="timer"):
        w.del_timer(12345)
    with pytest.raises(ValueError, match="expires"):
        w.add_timer(-5)
    with pytest.raises(TypeError, match="callback"):
        w.run(200, callback=3)
