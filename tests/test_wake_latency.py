"""The platform's wake latency (timerlab.wake_latency, cpp/include/timerlab/wake_latency.hpp):
how late a hardware wakeup of an idle CPU arrives, in simulations and in
replays of real traces."""
import numpy as np
import pandas as pd
import pytest

import timerlab as tl
from timerlab.fidelity.races import stopped_programs
from timerlab.replay import build_script
from timerlab.replay.clocks import clock_offset, tick_wakeups
from timerlab.wake_latency import PRESETS, WakeLatency

from conftest import IDLE16

MS = 1_000_000


def test_vm_preset_is_the_fit_of_the_shared_idle_trace(idle16):
    fit = tl.wake_latency_of(idle16)
    assert fit.stopped == PRESETS["vm"].stopped and fit.tick == PRESETS["vm"].tick
    d = fit.describe().set_index("kind")
    # The reading of the idle traces: stopped-tick wakeups hundreds of µs to ms late.
    assert 100_000 < d.at["stopped", "p10_ns"] < d.at["stopped", "p50_ns"] < 1_000_000 < d.at["stopped", "p90_ns"]
    assert d.at["tick", "p50_ns"] < d.at["stopped", "p50_ns"]
    per_cpu = tl.wake_latency_of(idle16, per_cpu=True)
    assert len(per_cpu.stopped) == 16 and len(set(per_cpu.stopped)) > 1


def _clock_wakeups(res):
    """(cpu, programmed_ns, lateness_ns, handler_ns) of each simulated idle
    period ended by the stopped tick's programmed wakeup (cause timer or
    remote_duty): when the wakeup came (the period's end less its state's
    exit latency) minus the time it was programmed for, and the same to when
    its handler ran (the period's end: a traced lateness includes the exit)."""
    prog = stopped_programs(res.events, 0)
    p = res.idle_periods
    p = p[p["cause"].isin(["timer", "remote_duty"])]
    exit_ns = res.config.idle_states.states.set_index("name")["exit_latency_ns"]
    out = []
    for cpu, start, dur, state in zip(p["cpu"], p["start_ns"], p["duration_ns"], p["state"]):
        end = int(start + dur) - int(exit_ns[state])
        g = prog[(prog["cpu"] == cpu) & (prog["from_ns"] < end) & (prog["until_ns"] >= end)
                 & (prog["programmed_ns"] <= end)]
        if len(g):
            late = end - int(g["programmed_ns"].iloc[-1])
            out.append((int(cpu), int(g["programmed_ns"].iloc[-1]), late, late + int(exit_ns[state])))
    return pd.DataFrame(out, columns=["cpu", "programmed_ns", "lateness_ns", "handler_ns"])


def test_a_replay_imposes_each_traced_wakeups_lateness(idle16):
    cfg = idle16.to_config(record_events=True)
    assert cfg.wake_latency.name == "trace" and not cfg.wake_latency.tick  # ticks: the trace's own items
    res = tl.simulate(cfg)
    sim = _clock_wakeups(res)
    offset = clock_offset(idle16.events)
    traced = {(c, g): d for g, d, c, _, stopped, _ in tick_wakeups(idle16.events, 4 * MS, offset) if stopped}
    sim["traced"] = [traced.get((c, p)) for c, p in zip(sim["cpu"], sim["programmed_ns"])]
    matched = sim[sim["traced"].notna()]
    assert len(matched) >= 100
    # Exactly as late as the kernel's wakeup for the same programmed time on the same CPU.
    assert (matched["handler_ns"] == matched["traced"]).mean() >= 0.98
    # The others draw from that CPU's traced distribution.
    other = sim[sim["traced"].isna()]
    assert len(other)
    tables = build_script(idle16).wake_stopped
    for c, late in zip(other["cpu"], other["lateness_ns"]):
        assert tables[c][0] <= late <= tables[c][-1]


def test_simulated_wakeups_follow_the_preset_and_the_seed():
    base = dict(cpus=8, nodes=2, duration_ns=2000 * MS, kernel="6.12", record_events=True,
                workload=tl.workloads.sleepers(cpus=[0], sleep_ns=tl.dist.uniform(20 * MS, 60 * MS)))
    on_time = tl.simulate(tl.Config(**base, wake_latency="none"))
    assert (_clock_wakeups(on_time)["lateness_ns"] == 0).all()
    runs = {}
    for preset in ("bare_metal", "vm"):
        r = tl.simulate(tl.Config(**base, wake_latency=preset))
        late = _clock_wakeups(r)["lateness_ns"]
        q = PRESETS[preset].stopped[0]
        assert len(late) and late.between(q[0], q[-1]).all()
        runs[preset] = r
    assert _clock_wakeups(runs["vm"])["lateness_ns"].median() > 100 * _clock_wakeups(runs["bare_metal"])[
        "lateness_ns"].median()
    # One seed fixes the draws; another seed draws others.
    again = tl.simulate(tl.Config(**base, wake_latency="vm"))
    assert again.idle_periods.equals(runs["vm"].idle_periods) and again.events.equals(runs["vm"].events)
    other = tl.simulate(tl.Config(**base, wake_latency="vm", seed=2))
    assert not other.idle_periods.equals(runs["vm"].idle_periods)


def test_bare_metal_is_the_default_and_bad_tables_are_refused():
    assert tl.Config(cpus=2).wake_latency.name == "bare_metal"
    with pytest.raises(ValueError, match="wake_latency='vmm'"):
        tl.Config(cpus=2, wake_latency="vmm")
    with pytest.raises(TypeError, match="wake_latency"):
        tl.Config(cpus=2, wake_latency=5)
    with pytest.raises(ValueError, match="sorted"):
        WakeLatency("x", stopped=((3, 2),))
    with pytest.raises(ValueError, match="empty"):
        WakeLatency("x", stopped=((),))
    with pytest.raises(ValueError, match=r"3 per-CPU stopped tables for 2 CPUs"):
        tl.Config(cpus=2, wake_latency=WakeLatency("x", stopped=((1,), (2,), (3,))))
    tr = tl.read_ftrace(IDLE16)
    no_stops = tl.Trace(tr.path, tr.events[tr.events["event"] != "tick_stop"].reset_index(drop=True), tr.nr_cpus,
                        kernel=tr.kernel)
    with pytest.raises(ValueError, match=r"lacks the event\(s\) \['tick_stop'\]"):
        tl.wake_latency_of(no_stops)
