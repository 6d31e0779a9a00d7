"""tl.Config and tl.simulate: validation, determinism, and the properties every
run must have, checked over random topologies, workloads and seeds.

The "no missed timer" check uses an oracle written apart from the engine: one
flat queue of all pending non-deferrable timers, rebuilt from the run's own
tracepoint log (timer_start / timer_cancel / timer_expire_entry). Whatever the
placement model and the hierarchy do, every such timer must be expired by
the end of the jiffy after its bucket expiry (+ the exit latency of the CPU
that runs it, 0 until idle states are modelled), or be cancelled before.
"""
import heapq
import threading
import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings

import timerlab as tl
from timerlab.simulate import LATENCY_PARTS, initial_jiffies, tick_nsec
from strategies import configs  # the project's generator of configs (shared with the fuzz tests)


def missed_timers(result: tl.Result) -> list:
    """The oracle: a flat queue of pending non-deferrable timers from the log."""
    cfg = result.config
    tick = tick_nsec(cfg.hz)
    j0 = initial_jiffies(cfg.hz)
    # The CPU that runs a timer may first have to leave its idle state, its
    # wakeup may come late (wake_latency), and the callbacks before it in
    # the same softirq take their time (a generous 64 of them).
    exit_latency = int(cfg.idle_states.states["exit_latency_ns"].max())
    wl = cfg.wake_latency
    exit_latency += max([t[-1] for t in wl.stopped + wl.tick], default=0)
    exit_latency += 64 * max(tl.Config.to_core(cfg)["callback_ns"], default=0)
    ev = result.events
    ev = ev[ev["event"].isin(["timer_start", "timer_cancel", "timer_expire_entry"])]
    if ev.empty:
        return []
    deadline = {}  # timer pointer -> latest time it may still be pending (ns)
    queue = []  # (deadline, pointer) — a flat queue over all CPUs
    missed = []
    cols = zip(ev["ts_ns"].to_numpy(), ev["event"].astype(str).to_numpy(), ev["timer"].to_numpy(dtype=np.int64),
               ev["flags"].astype(object).to_numpy(), ev["bucket_expiry_jiffies"].to_numpy(dtype=np.float64, na_value=0))

    def check(now):
        while queue and queue[0][0] < now:
            d, ptr = heapq.heappop(queue)
            if deadline.get(ptr) == d:
                missed.append((ptr, d, now))
                del deadline[ptr]

    for ts, event, ptr, flags, bucket in cols:
        check(ts)
        if event == "timer_start":
            if "D" in (flags or ""):
                continue
            d = (int(bucket) - j0) * tick + tick + exit_latency
            deadline[ptr] = d
            heapq.heappush(queue, (d, ptr))
        else:
            deadline.pop(ptr, None)
    check(cfg.start_ns + cfg.duration_ns)
    return missed


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=configs())
def test_properties_of_every_run(cfg):
    r = tl.simulate(cfg)
    t = r.timers
    # Every armed timer ends exactly once (expired, cancelled or re-armed) or
    # is pending at the end: one start per row, one end at most.
    starts = int((r.events["event"] == "timer_start").sum())
    assert len(t) == starts == r.summary["timers_armed"]
    ended = t["outcome"] != "pending"
    assert t["end_ns"].notna().eq(ended).all()
    assert (t.loc[ended, "end_ns"].astype("int64") >= t.loc[ended, "armed_ns"]).all()
    live = t.loc[~ended, "timer"]
    assert live.is_unique
    # No timer expires before its bucket expiry.
    tick, j0 = tick_nsec(cfg.hz), initial_jiffies(cfg.hz)
    exp = t[t["outcome"] == "expired"]
    bucket_ns = (exp["bucket_expiry_jiffies"].astype("int64") - j0) * tick
    assert (exp["expired_ns"].astype("int64") >= bucket_ns).all()
    # No non-deferrable timer is missed (the flat-queue oracle).
    assert missed_timers(r) == []
    # Time adds up on every CPU, and the idle time is the residency in states.
    assert ((r.per_cpu["busy_ns"] + r.per_cpu["idle_ns"]) == cfg.duration_ns).all()
    in_states = r.residency.groupby("cpu")["total_ns"].sum().to_numpy()
    assert ((r.per_cpu["busy_ns"] + in_states) == cfg.duration_ns).all()
    # Closed periods are the rows of idle_periods; the one open at the end
    # is counted in the residency only.
    assert r.idle_periods["duration_ns"].sum() <= in_states.sum()
    assert r.residency["hits"].sum() == len(r.idle_periods)
    # Every hrtimer instance (the tick's left out) ends once; none runs before
    # its soft expiry; a measured wakeup's parts add up to its latency.
    h = r.hrtimers
    starts = r.events[(r.events["event"] == "hrtimer_start") & (r.events["hrtimer"] > cfg.topology.cpus)]
    assert len(h) == len(starts)
    assert h["end_ns"].notna().eq(h["outcome"] != "pending").all()
    done = h[h["outcome"] == "expired"]
    assert (done["expired_ns"].astype("int64") >= done["softexpires_ns"]).all()
    lat = r.latency
    assert (lat[list(LATENCY_PARTS)].sum(axis=1) == lat["latency_ns"]).all()


def test_same_seed_same_run_bit_for_bit():
    cfg = tl.Config(cpus=12, nodes=2, duration_ns=300_000_000, record_events=True, seed=7)
    a, b = tl.simulate(cfg), tl.simulate(cfg)
    pd.testing.assert_frame_equal(a.per_cpu, b.per_cpu)
    pd.testing.assert_frame_equal(a.timers, b.timers)
    pd.testing.assert_frame_equal(a.events, b.events)
    c = tl.simulate(cfg.replace(seed=8))
    assert not a.timers.equals(c.timers)


def test_events_built_on_first_use_and_by_columns():
    """Result.events is built from the raw log on first use; a few of its
    columns (what validate reads) come out as the whole frame has them."""
    cfg = tl.Config(cpus=12, nodes=2, duration_ns=300_000_000, record_events=True, seed=7)
    r = tl.simulate(cfg)
    part = r._events_columns(["state", "success", "lvl", "migrator", "dependency"])
    assert "events" not in vars(r)  # not built by that
    full = r.events
    assert list(part.columns) == [c for c in full.columns if c in
                                  ("ts_ns", "cpu", "event", "state", "success", "lvl", "migrator", "dependency")]
    pd.testing.assert_frame_equal(part, full[list(part.columns)])
    assert r._events_columns(["state"]) is full  # once built, the whole frame
    assert tl.simulate(cfg.replace(record_events=False)).events is None


def test_push_and_pull_see_the_same_workload():
    """Random draws belong to the workload's generators, not to the kernel
    policy: each task draws the same timeouts, in the same order, under push
    and pull (when it runs may differ: that is what is being compared)."""
    cfg = tl.Config(cpus=8, duration_ns=300_000_000, seed=3)
    pull, push = tl.simulate(cfg), tl.simulate(cfg.replace(placement="push", kernel="6.8"))
    tick, j0 = tick_nsec(cfg.hz), initial_jiffies(cfg.hz)

    def draws(r):
        t = r.timers[r.timers["function"] == "tcp_write_timer"]
        timeout = t["expires_jiffies"].astype("int64") - (t["armed_ns"] // tick + j0)
        return {cpu: list(g) for cpu, g in timeout.groupby(t["cpu_armed"])}

    a, b = draws(pull), draws(push)
    assert a.keys() == b.keys()
    for cpu in a:
        n = min(len(a[cpu]), len(b[cpu]))
        assert n > 5 and a[cpu][:n] == b[cpu][:n]
    assert pull.summary["timers_expired_remote"] > 0 == push.summary["timers_expired_remote"]


def test_result_columns_carry_units():
    r = tl.simulate(tl.Config(cpus=4, duration_ns=100_000_000))
    for name in r.per_cpu.columns:
        assert not name.endswith(("_time", "_s")) or name.endswith("_ns")
    assert {"busy_ns", "idle_ns", "wakeups", "tick_stops", "timers_expired_local", "timers_expired_remote",
            "remote_expiries_done", "ipis_received"} <= set(r.per_cpu.columns)
    assert {"armed_ns", "expires_jiffies", "bucket_expiry_jiffies", "expired_ns", "cpu_expired",
            "lateness_ns", "cancelled"} <= set(r.timers.columns)
    assert r.summary["duration_s"] == 0.1


def test_simulate_releases_the_gil():
    cfg = tl.Config(cpus=64, nodes=2, duration_ns=3_000_000_000, record_timers=False)
    ticks = []
    done = threading.Event()

    def count():
        while not done.is_set():
            ticks.append(1)
            time.sleep(0.0005)

    t = threading.Thread(target=count)
    t.start()
    before = len(ticks)
    tl.simulate(cfg)
    during = len(ticks) - before
    done.set()
    t.join()
    assert during > 10  # the other thread kept running while the core worked


@pytest.mark.parametrize(
    "kwargs, exc, words",
    [
        (dict(cpus=0), ValueError, "cpus"),
        (dict(cpus=4, nodes=8), ValueError, "nodes"),
        (dict(cpus=4, node_of_cpu=[0, 1, 0]), ValueError, "node_of_cpu"),
        (dict(cpus=4, placement="sideways"), ValueError, "placement"),
        (dict(cpus=4, placement="pull", kernel="6.6"), ValueError, "placement"),
        (dict(cpus=4, remote_wakeup="never"), ValueError, "remote_wakeup"),
        (dict(cpus=4, duration_ns=-1), ValueError, "duration_ns"),
        (dict(cpus=4, duration_ns=1.5), TypeError, "duration_ns"),
        (dict(cpus=4, hz=200), ValueError, "hz"),
        (dict(cpus=4, kernel="linux"), ValueError, "kernel"),
        (dict(cpus=4, layout="random"), ValueError, "layout"),
        (dict(cpus=4, seed=-1), ValueError, "seed"),
        (dict(cpus=4, record_events="yes"), TypeError, "record_events"),
        (dict(cpus=4, workload="server"), TypeError, "workload"),
        (dict(cpus=4, workload=tl.workloads.busy(cpus=[9])), ValueError, "busy"),
        (dict(cpus=4, colour="blue"), TypeError, "colour"),
    ],
)
def test_bad_configs_name_the_option(kwargs, exc, words):
    with pytest.raises(exc, match=words):
        tl.Config(**kwargs)


def test_bad_workload_parameters_name_the_option():
    with pytest.raises(ValueError, match="cancel_p"):
        tl.workloads.tasks(cancel_p=1.5)
    with pytest.raises(ValueError, match="rate_hz"):
        tl.workloads.timeouts(rate_hz=0)
    with pytest.raises(TypeError, match="run_ns"):
        tl.workloads.tasks(run_ns="fast")
    with pytest.raises(ValueError, match="uniform"):
        tl.dist.uniform(5, 1)
    with pytest.raises(ValueError, match="flags"):
        tl.workloads.periodic(flags="X")
    with pytest.raises(TypeError):
        tl.simulate({"cpus": 4})


def test_config_pickles_to_an_equal_config():
    import pickle

    cfg = tl.Config(cpus=6, nodes=2, deferrable="global", governor="teo", workload=tl.workloads.server(),
                    overhead={"enqueue_ns": 70.0})
    back = pickle.loads(pickle.dumps(cfg))
    assert back == cfg and repr(back) == repr(cfg)
    assert tl.simulate(back.replace(duration_ns=20_000_000)).per_cpu.equals(
        tl.simulate(cfg.replace(duration_ns=20_000_000)).per_cpu)


def test_config_repr_and_replace():
    cfg = tl.Config(cpus=16, nodes=2, layout="interleaved")
    assert "interleaved" in repr(cfg) and "placement='pull'" in repr(cfg)
    bigger = cfg.replace(cpus=32)
    assert bigger.topology.cpus == 32 and bigger.topology.node_of_cpu[:4] == (0, 1, 0, 1)
    assert cfg.topology.cpus == 16
    with pytest.raises(AttributeError):
        cfg.cpus = 3


def test_rcu_needs_cpu_option():
    """The tick model after a task (Config.rcu_needs_cpu): a bool, shown in
    the repr when off, carried by replace and pickle, and it changes a run
    with tasks (the tick kept after each task wakes the CPU) but not one
    without."""
    import pickle

    with pytest.raises(TypeError, match="rcu_needs_cpu"):
        tl.Config(rcu_needs_cpu="no")
    w = tl.workloads.sleepers(cpus=[1], sleep_ns=tl.dist.uniform(5_000_000, 20_000_000)) + tl.workloads.idle()
    on = tl.Config(cpus=4, workload=w, duration_ns=500_000_000)
    off = on.replace(rcu_needs_cpu=False)
    assert "rcu_needs_cpu" not in repr(on) and "rcu_needs_cpu=False" in repr(off)
    assert pickle.loads(pickle.dumps(off)) == off != on
    r_on, r_off = tl.simulate(on).per_cpu, tl.simulate(off).per_cpu
    assert r_on.loc[1, "wakeups_tick"] > 0.9 * r_on.loc[1, "tasks_woken"] and r_off.loc[1, "wakeups_tick"] == 0
    idle = tl.Config(cpus=4, workload=tl.workloads.idle(), duration_ns=500_000_000)
    assert tl.simulate(idle).per_cpu.equals(tl.simulate(idle.replace(rcu_needs_cpu=False)).per_cpu)


def test_a_tick_due_during_the_interrupt_entry_is_forwarded_past_it():
    """Found by the property test: a clock interrupt served 442 ns before a
    tick grid point (CPU 4 at 89 ms) ran the tick, whose handler then
    forwarded it from the interrupt's arrival instead of its clock (arrival +
    the 500 ns entry): still due, it ran again, forever. The tick forwards
    past the interrupt's clock (hrtimer_forward)."""
    w = (tl.workloads.tasks(run_ns=tl.dist.exponential(300000), sleep_ns=tl.dist.exponential(1e6), sleep="poll",
                            priority=50)
         + tl.workloads.timerlat(period_us=900))
    cfg = tl.Config(cpus=9, nodes=2, hz=1000, kernel="6.12", remote_wakeup="always", deferrable="global",
                    idle_states="vm", governor="oracle", duration_ns=95_000_000, seed=420, workload=w)
    r = tl.simulate(cfg)
    assert r.summary["steps"] < 50_000
    assert r.per_cpu["ticks"].max() <= 95 + 1  # at most one tick per ms
