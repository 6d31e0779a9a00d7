"""The 6.12 fair server's dl_task_timer and the idle-loop exits it causes
(kernel behaviour "fair_server"; SimConfig.fair_server_defer_ns), against the
real 6.12 idle trace."""
import numpy as np
import pytest

import timerlab as tl
from timerlab.config import FAIR_SERVER_DEFER_NS
from timerlab.replay import OP_EXIT, build_script
from timerlab.replay.clocks import clock_offset



MS = 1_000_000


def test_the_trace_arms_the_fair_server_950_ms_after_a_task_starts(idle16):
    ev = idle16.events
    arms = ev[(ev["event"] == "hrtimer_start") & (ev["function"].astype(str) == "dl_task_timer") & (ev["pid"] != 0)]
    ahead = arms["expires_ns"].to_numpy(np.int64) - (arms["ts_ns"].to_numpy(np.int64) - clock_offset(ev))
    near = np.abs(ahead - FAIR_SERVER_DEFER_NS) < MS
    assert len(arms) > 100 and near.mean() > 0.8


def test_the_traces_idle_loop_exits_are_replayed_and_mostly_the_fair_servers(idle16):
    s = build_script(idle16)
    exits = s.items[s.items["op"] == OP_EXIT]
    assert 76 <= len(exits) <= 178  # the count per trace
    first = idle16.events.set_index("line").loc[exits["line"].to_numpy()]
    assert (first["function"].astype(str) == "dl_task_timer").mean() > 0.7
    # In the replay each one leaves the idle loop: the hierarchy sees the CPU active again.
    res = tl.simulate(idle16.to_config(record_events=True))
    e = res.events
    active = e[e["event"] == "tmigr_cpu_active"]
    t_exit = exits["t_ns"].to_numpy(np.int64)
    for cpu, t in zip(exits["cpu"], t_exit):
        a = active[(active["cpu"] == cpu) & (active["ts_ns"] >= t)]["ts_ns"]
        assert len(a) and a.iloc[0] - t < MS


def _exits_without_task(kernel):
    cfg = tl.Config(cpus=2, kernel=kernel, duration_ns=4000 * MS, record_events=True, idle_states="none",
                    governor="none", wake_latency="none",
                    workload=tl.workloads.tasks(cpus=[0], run_ns=tl.dist.const(100_000),
                                                sleep_ns=tl.dist.const(1500 * MS)))
    e = tl.simulate(cfg).events
    runs = e.loc[e["event"] == "sched_wakeup", "ts_ns"].to_numpy(np.int64)
    left = e.loc[(e["event"] == "timer_base_idle") & (e["is_idle"] == 0), "ts_ns"].to_numpy(np.int64)
    # Leaving the idle loop for the task itself is not an exit without a task.
    return runs, np.array([t for t in left if not (np.abs(runs - t) < MS).any()])


def test_a_simulated_612_cpu_leaves_its_idle_loop_950_ms_after_a_task_ran():
    runs, exits = _exits_without_task("6.12")
    assert len(runs) == 2 and len(exits) == 2
    assert (np.abs(exits - runs - FAIR_SERVER_DEFER_NS) < MS).all()
    runs, exits = _exits_without_task("6.11")  # before the fair server
    assert len(runs) == 2 and len(exits) == 0
    assert "fair_server" in tl.kernel.BEHAVIOURS
