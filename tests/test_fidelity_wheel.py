"""Fidelity of the timer wheel on real kernel traces (Linux 6.18 and 6.12, HZ=250).

For every timer_start the kernel printed, timerlab must compute the same bucket
index and bucket expiry. Most are placed from a base clock equal to jiffies;
the few that are not must each be explained by the clock the kernel used, and
that clock must come out of a replay of the base, not be fitted.
"""
import lzma

import pytest

import timerlab as tl
from timerlab.fidelity import wheel_replay

from conftest import RECORDINGS


def count_lines(path, needle):
    """Independent count of a trace's lines holding an event (plain text scan)."""
    with lzma.open(path, "rt") as f:
        return sum(1 for line in f if not line.startswith("#") and needle in line)


@pytest.fixture(scope="module", params=RECORDINGS, ids=lambda p: p.name.split(".trace")[0])
def replayed(request):
    return request.param, wheel_replay(tl.read_ftrace(request.param), hz=250)


# What the replay cannot know: a base whose clock lagged before the trace began
# (the idle trace's tcp_orphan_update on CPU 7's DEF base, idle since before
# it): its first arm is explained, not replayed, and its expiry follows.
UNKNOWN_BEFORE = "base state before the trace unknown"


def _known(r):
    """The placement rows and the expiries whose base the trace shows."""
    p = r.placement
    unknown = set(p.loc[p["explanation"].str.contains(UNKNOWN_BEFORE), "timer"])
    assert len(unknown) <= 1
    return p[~p["timer"].isin(unknown)], r.expiries[~r.expiries["timer"].isin(unknown)]


def test_every_timer_start_is_replayed(replayed):
    path, r = replayed
    assert len(r.placement) == count_lines(path, " timer_start: ") > 150
    p, _ = _known(r)
    bad = p[~p["agrees"]]
    assert bad.empty, bad.to_string()


def test_lagging_clocks_are_explained_by_the_replay(replayed):
    path, r = replayed
    assert not (r.placement["explanation"] == "UNEXPLAINED").any()
    p, _ = _known(r)
    lag = p[p["explanation"] != "clk == jiffies"]
    # Each is reproduced by the replay (not merely inferred), from a clock
    # strictly behind jiffies that gives the kernel's bucket.
    assert lag["explanation"].str.startswith("lagging clk reproduced by replay").all(), lag.to_string()
    assert (lag["clk_lag_jiffies"] > 0).all()
    assert (lag["clk_used"].astype("uint64") == lag["clk_replayed"]).all()
    idx, bucket = tl.calc_wheel_index(lag["expires_jiffies"].to_numpy(), lag["clk_used"].to_numpy(dtype="uint64"))
    assert (idx == lag["idx_kernel"].to_numpy()).all() and (bucket == lag["bucket_expiry_kernel"].to_numpy()).all()
    # ... and at jiffies the same timers would have landed elsewhere.
    assert (lag["idx_at_jiffies"] != lag["idx_kernel"]).all()


def test_every_placement_at_jiffies_is_exact(replayed):
    _, r = replayed
    p = r.placement[r.placement["explanation"] == "clk == jiffies"]
    assert (p["idx_at_jiffies"] == p["idx_kernel"]).all()
    assert (p["bucket_expiry_at_jiffies"] == p["bucket_expiry_kernel"]).all()


def test_expiries_collect_at_the_kernels_baseclk(replayed):
    path, r = replayed
    assert len(r.expiries) == count_lines(path, " timer_expire_entry: ")
    _, x = _known(r)
    known = x[x["baseclk_replayed"].notna()]
    # Only timers armed before the trace began are unknown to the replay.
    assert len(known) >= 0.8 * len(x)
    bad = known[~known["agrees"]]
    assert bad.empty, bad.to_string()
