"""Idle states, governors, energy and the overhead model, end to end through tl.simulate.

The governors' step-by-step choices on scripted sleep lengths are C++ tests
(cpp/tests/test_governors.cpp); here the whole engine runs.
"""
import itertools

import numpy as np
import pandas as pd
import pytest

import timerlab as tl

W = tl.workloads
MS = 1_000_000


@pytest.mark.parametrize("governor", ["menu", "teo", "oracle", "deepest"])
def test_one_cpu_one_periodic_timer_by_hand(governor):
    """One CPU, one pinned timer re-armed every 6 jiffies (24 ms at HZ 250)
    from its callback: every idle period is spent in C6 and ends with the
    timer; the energy is C6 power x residency + one C6 transition per wakeup
    + busy power x each wakeup's interrupt: its entry, the tick's handler and
    the timer's callback (4 µs; the interrupt's minimum, irq_ns, is 2 µs)."""
    cfg = tl.Config(cpus=1, hz=250, idle_states="skx", governor=governor, duration_ns=100 * MS,
                    workload=W.periodic(period_ns=24 * MS, flags="P"), wake_latency="none")  # on time: exact arithmetic
    r = tl.simulate(cfg)
    skx = tl.idle_states.preset("skx").states.set_index("name")
    c6_exit = int(skx.at["C6", "exit_latency_ns"])  # 133 µs
    handlers = cfg.latency_model["irq_entry_ns"] + tl.callbacks.HRTIMER_DEFAULT_NS["tick_nohz_handler"]
    irq = max(cfg.irq_ns, handlers + tl.callbacks.DEFAULT_NS)
    tick = 4 * MS

    expired = r.timers.dropna(subset=["expired_ns"])
    first = int(expired["expired_ns"].iloc[0])
    # The first expiry: the tick of its bucket, then C6's exit latency, the
    # interrupt's entry and the tick's handler (the softirq runs after it).
    assert first % tick == c6_exit + handlers
    # Re-armed at jiffies + 6 from a callback running in jiffy J: bucket J + 7
    # at level 0 (one jiffy of wheel granularity), i.e. every 28 ms.
    n = (100 * MS - first) // (28 * MS) + 1
    expected = [first + k * 28 * MS for k in range(n)]
    assert expired["expired_ns"].astype(np.int64).tolist() == expected
    assert (expired["exit_latency_ns"] == c6_exit).all()
    assert (expired["wheel_slack_ns"] == tick).all()

    p = r.idle_periods
    assert p["state"].tolist() == ["C6"] * n
    assert p["cause"].tolist() == ["timer"] * n
    assert not p["above"].any() and not p["below"].any()
    assert p["start_ns"].tolist() == [0] + [e - handlers + irq for e in expected[:-1]]
    assert p["duration_ns"].tolist() == [first - handlers] + [28 * MS - irq] * (n - 1)

    cpu = r.per_cpu.iloc[0]
    assert cpu["wakeups"] == cpu["wakeups_timer"] == n
    assert cpu["busy_ns"] == n * irq
    res = r.residency.set_index("state")
    assert res.at["C6", "hits"] == n
    assert res.at["C6", "total_ns"] == 100 * MS - n * irq  # the last period is open at the end
    assert res.drop("C6")["total_ns"].sum() == 0
    c6_uj_per_ns = skx.at["C6", "power_mw"] * 1e-6
    transition_uj = 4500 * c6_exit * 1e-6  # busy power over the exit latency
    expected_uj = c6_uj_per_ns * (100 * MS - n * irq) + n * transition_uj + 4500e-6 * n * irq
    assert cpu["energy_uj"] == pytest.approx(expected_uj, rel=1e-12)
    assert cpu["avg_power_mw"] == pytest.approx(expected_uj / 100e-3 * 1e-3, rel=1e-12)


def test_shallowest_polls_and_pays_no_exit_latency():
    cfg = tl.Config(cpus=1, governor="shallowest", duration_ns=100 * MS, workload=W.periodic(period_ns=24 * MS, flags="P"))
    r = tl.simulate(cfg)
    assert set(r.idle_periods["state"]) == {"POLL"}
    assert (r.timers.dropna(subset=["expired_ns"])["exit_latency_ns"] == 0).all()
    poll = tl.idle_states.preset("skx").states.set_index("name").at["POLL", "power_mw"]
    idle = r.per_cpu.at[0, "idle_ns"]
    assert r.per_cpu.at[0, "energy_uj"] == pytest.approx(poll * 1e-6 * idle + 4500e-6 * r.per_cpu.at[0, "busy_ns"])


WORKLOADS = {
    "mixed": W.mixed(),
    "short_external": W.tasks(run_ns=tl.dist.exponential(50_000), sleep_ns=tl.dist.exponential(300_000),
                              sleep="external"),
    "timeouts": W.tasks(run_ns=tl.dist.exponential(100_000), sleep_ns=tl.dist.uniform(MS, 30 * MS), timeouts=3),
    "remote": W.remote_enqueuer(from_cpu=0, to_cpus=[1, 2, 3], rate_hz=2000),
}


@pytest.mark.parametrize("workload, states, seed",
                         list(itertools.product(WORKLOADS, ["skx", "skl", "acpi"], [1, 2, 3])))
def test_oracle_spends_no_more_energy_than_menu_and_teo(workload, states, seed):
    energy = {}
    for g in ("oracle", "menu", "teo"):
        cfg = tl.Config(cpus=4, workload=WORKLOADS[workload], seed=seed, duration_ns=200 * MS, governor=g,
                        idle_states=states)
        energy[g] = tl.simulate(cfg).summary["energy_uj"]
    assert energy["oracle"] <= energy["menu"]
    assert energy["oracle"] <= energy["teo"]


def test_package_states_need_the_whole_package_idle():
    """skl's C8-C10 are package states: with one CPU of the node always busy
    no CPU of that node enters them; on the other, fully idle node they are used."""
    w = W.busy(cpus=[0]) + W.periodic(period_ns=50 * MS, flags="P")
    for g in ("deepest", "oracle", "menu"):
        r = tl.simulate(tl.Config(cpus=4, nodes=2, idle_states="skl", governor=g, workload=w, duration_ns=300 * MS))
        used = r.residency[r.residency["total_ns"] > 0]
        package = used["state"].isin(["C8", "C9", "C10"])
        assert not (package & used["cpu"].isin([0, 1])).any(), g
        assert (package & used["cpu"].isin([2, 3])).any(), g


def test_latency_limit_keeps_deep_states_out():
    w = W.periodic(period_ns=24 * MS, flags="P")
    for g in ("menu", "teo", "oracle", "deepest"):
        r = tl.simulate(tl.Config(cpus=2, governor=g, latency_req_ns=20_000, workload=w, duration_ns=100 * MS))
        assert set(r.idle_periods["state"]) <= {"POLL", "C1", "C1E"}, g


@pytest.mark.parametrize("placement, kernel, per_pair_ns", [("push", "6.8", 145), ("pull", "latest", 109)])
def test_overhead_model_calibration_on_the_seeds_micro_benchmark(placement, kernel, per_pair_ns):
    """A calibration regression test: the defaults of OVERHEAD_DEFAULTS are
    chosen so that the seeds' loop (enqueue+dequeue one timer 1000 times on
    one CPU, a quarter of the CPUs busy) costs what the seeds measured; this
    checks that the engine charges exactly those paths (CPU 0's overhead
    beyond the same run without the loop)."""
    base = tl.Config(cpus=8, placement=placement, kernel=kernel, workload=W.busy(fraction=0.25),
                     duration_ns=10 * MS)
    loop = base.replace(workload=base.workload + W.enqueue_dequeue(cpu=0, pairs=1000))
    cost = tl.simulate(loop).per_cpu.at[0, "timer_overhead_ns"] - tl.simulate(base).per_cpu.at[0, "timer_overhead_ns"]
    assert cost / 1000 == pytest.approx(per_pair_ns, rel=0.05)


def test_overhead_counts_hierarchy_walks_and_remote_expiry():
    """Under pull the migrator pays for other CPUs' timers; an overhead of
    zero for every cost gives zero."""
    w = W.busy(cpus=[0]) + W.periodic(period_ns=8 * MS, flags="")
    cfg = tl.Config(cpus=8, workload=w, duration_ns=200 * MS)
    r = tl.simulate(cfg)
    assert r.per_cpu.at[0, "remote_expiries_done"] > 0
    assert r.per_cpu.at[0, "timer_overhead_ns"] > r.per_cpu.loc[1:, "timer_overhead_ns"].max()
    assert r.summary["timer_overhead_ns"] == r.per_cpu["timer_overhead_ns"].sum()
    zero = tl.simulate(cfg.replace(overhead={k: 0 for k in tl.config.OVERHEAD_DEFAULTS}))
    assert (zero.per_cpu["timer_overhead_ns"] == 0).all()


def test_every_wakeup_has_one_cause():
    r = tl.simulate(tl.Config(cpus=8, nodes=2, duration_ns=300 * MS, placement="push", kernel="6.8",
                              remote_wakeup="always",
                              workload=W.mixed() + W.remote_enqueuer(from_cpu=0, to_cpus=[5, 6], rate_hz=500)))
    causes = [c for c in r.per_cpu if c.startswith("wakeups_")]
    assert (r.per_cpu[causes].sum(axis=1) == r.per_cpu["wakeups"]).all()
    counted = r.idle_periods.groupby(["cpu", "cause"]).size().unstack(fill_value=0)
    for cause in counted:
        assert (counted[cause] == r.per_cpu.loc[counted.index, f"wakeups_{cause}"]).all()
    assert r.per_cpu.loc[[5, 6], "wakeups_ipi"].sum() > 0


def test_custom_table_and_dataframe():
    rows = [dict(name="C1", exit_latency_us=1, target_residency_us=2, power_mw=500),
            dict(name="C6", exit_latency_us=100, target_residency_us=400, power_mw=50)]
    for table in (rows, pd.DataFrame(rows)):
        r = tl.simulate(tl.Config(cpus=2, idle_states=table, busy_power_mw=2000, duration_ns=50 * MS))
        assert set(r.residency["state"]) == {"C1", "C6"}
        assert r.summary["energy_uj"] > 0


@pytest.mark.parametrize("table, words", [
    ([], "no state"),
    ([dict(name="C1", exit_latency_us=1, power_mw=5)], "target_residency_us"),
    ([dict(name="C1", exit_latency_us=-1, target_residency_us=1, power_mw=5)], "exit_latency_ns must be a number >= 0"),
    ([dict(name="C1", exit_latency_us=1, target_residency_us=1, power_mw="x")], "power_mw"),
    ([dict(name="C6", exit_latency_us=100, target_residency_us=400, power_mw=5),
      dict(name="C1", exit_latency_us=1, target_residency_us=2, power_mw=50)], "order the states by depth"),
    ([dict(name="C1", exit_latency_us=1, target_residency_us=2, power_mw=5, transition_uj=-3)], "transition_uj"),
    ([dict(name="C1", exit_latency_us=1, target_residency_us=2, power_mw=5, disabled=True)], "every state is disabled"),
    ([dict(name=f"C{i}", exit_latency_us=i, target_residency_us=i, power_mw=1) for i in range(17)], "at most 16"),
])
def test_bad_tables_raise_value_error_naming_the_problem(table, words):
    with pytest.raises(ValueError, match=words):
        tl.Config(idle_states=table, busy_power_mw=1000)


def test_bad_governor_and_preset_names():
    with pytest.raises(ValueError, match="governor.*'menu'"):
        tl.Config(governor="ladder")
    with pytest.raises(ValueError, match="idle_states='knl' is not a preset"):
        tl.Config(idle_states="knl")
    with pytest.raises(ValueError, match="busy_power_mw"):
        tl.Config(idle_states=[dict(name="C1", exit_latency_us=1, target_residency_us=2, power_mw=5)])
