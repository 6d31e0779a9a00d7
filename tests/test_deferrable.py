"""Deferrable-timer policies (Config(deferrable=...)) on the seeds' devfreq example."""
import pytest

import timerlab as tl

W = tl.workloads
S = 1_000_000_000


def devfreq_run(policy, **kw):
    """An idle 8-CPU, 2-node machine with devfreq's 20 ms deferrable work on CPU 3."""
    cfg = tl.Config(cpus=8, nodes=2, deferrable=policy, duration_ns=2 * S, check_invariants=True,
                    workload=W.devfreq(cpu=3, function="devfreq_monitor") + W.idle(), **kw)
    r = tl.simulate(cfg)
    return r, r.timers[r.timers["function"] == "devfreq_monitor"]


def test_global_wakes_the_last_idle_cpu_every_20ms_legacy_and_nowake_do_not():
    legacy, dev_legacy = devfreq_run("legacy")
    glob, dev_global = devfreq_run("global")
    nowake, dev_nowake = devfreq_run("global_nowake")
    # global: the work runs about every 24 ms (5 jiffies + a jiffy of wheel
    # slack), on the CPU that went idle last, which wakes for it.
    expired = dev_global[dev_global["outcome"] == "expired"]
    assert len(expired) >= 2 * S / 28_000_000
    last = expired["cpu_expired"].mode().iat[0]
    assert glob.per_cpu.at[last, "wakeups"] >= len(expired)
    assert glob.summary["wakeups"] > 5 * max(legacy.summary["wakeups"], nowake.summary["wakeups"])
    # legacy: CPU 3 never wakes, so its deferrable work never runs; nowake:
    # the work runs only when some CPU is awake anyway.
    assert (dev_legacy["outcome"] == "expired").sum() == 0
    assert nowake.summary["wakeups"] == legacy.summary["wakeups"]
    assert 0 < (dev_nowake["outcome"] == "expired").sum() < len(expired) / 4


def test_pinned_deferrable_timers_stay_local_under_every_policy():
    for policy in ("legacy", "global", "global_nowake"):
        r = tl.simulate(tl.Config(cpus=4, deferrable=policy, duration_ns=S // 2,
                                  workload=W.periodic(period_ns=8_000_000, flags="D|P") + W.busy(cpus=[0])))
        ran = r.timers.dropna(subset=["cpu_expired"])
        assert (ran["cpu_expired"] == ran["base_cpu"]).all(), policy
        assert r.summary["wakeups"] == 0, policy  # deferrable: idle CPUs 1-3 never wake


def test_global_deferrable_work_of_idle_cpus_runs_on_the_busy_migrator():
    w = W.busy(cpus=[0]) + W.periodic(period_ns=20_000_000, flags="D")
    for policy, remote in (("legacy", False), ("global", True), ("global_nowake", True)):
        r = tl.simulate(tl.Config(cpus=4, deferrable=policy, workload=w, duration_ns=S // 2))
        assert (r.per_cpu.at[0, "remote_expiries_done"] > 0) == remote, policy
        assert r.summary["wakeups"] == 0, policy


def test_policies_other_than_legacy_need_pull():
    with pytest.raises(ValueError, match="deferrable='global' needs placement='pull'"):
        tl.Config(deferrable="global", placement="push", kernel="6.8")
    with pytest.raises(ValueError, match="deferrable.*'legacy'"):
        tl.Config(deferrable="sometimes")
