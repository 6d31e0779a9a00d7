"""Timer callbacks take time (timerlab.callbacks, SimConfig.callback_ns): one
CPU runs them one after another, a replay runs each as long as traced, and
CPUs waking while a duty holder is busy take the events it has not reached."""
import numpy as np
import pytest

import timerlab as tl
from timerlab.callbacks import DEFAULT_NS, callback_durations_of, instance_durations
from timerlab.replay import OP_ARM, build_script

from conftest import IDLE16

MS = 1_000_000


def test_traced_durations_are_read_per_instance(idle16):
    took, median = instance_durations(idle16.events)
    assert median == callback_durations_of(IDLE16)
    # Under qemu TCG, tens to hundreds of µs (the issue: softirqs of 50-600 µs).
    assert 5_000 < median["process_timeout"] < 300_000 and 5_000 < median["delayed_work_timer_fn"] < 300_000
    s = build_script(idle16)
    arms = s.items[s.items["op"] == OP_ARM]
    traced = arms["line"].map(took)
    assert traced.notna().mean() > 0.5
    assert (arms.loc[traced.notna(), "duration_ns"] == traced.dropna()).all()


def test_a_replay_runs_each_callback_as_long_as_traced(idle16):
    res = tl.simulate(idle16.to_config())
    t = res.timers
    t = t[t["outcome"] == "expired"]
    took = set(instance_durations(idle16.events)[0].values())
    assert t["callback_ns"].isin(took).mean() > 0.9


def _sleepers(callback_ns, seed=1):
    cfg = tl.Config(cpus=16, nodes=2, kernel="6.12", duration_ns=3000 * MS, seed=seed, idle_states="none",
                    governor="none", wake_latency="vm", callback_ns=callback_ns,
                    workload=tl.workloads.sleepers(per_cpu=2, sleep_ns=tl.dist.const(100 * MS)))
    return tl.simulate(cfg).timers


def test_a_cpu_runs_one_callback_at_a_time():
    t = _sleepers(300_000)
    e = t[t["outcome"] == "expired"].sort_values(["cpu_expired", "expired_ns"])
    assert (e["callback_ns"] == 300_000).all()
    for _, g in e.groupby("cpu_expired"):
        start, took = g["expired_ns"].to_numpy(np.int64), g["callback_ns"].to_numpy(np.int64)
        assert (start[1:] >= start[:-1] + took[:-1]).all()
    assert (_sleepers(None)["callback_ns"].dropna() == DEFAULT_NS).all()


def test_busy_duty_holders_share_a_jiffys_events():
    """With long callbacks (under qemu) a later waker takes events the first
    has not reached: more jiffies' remote expiries are done by two or more
    CPUs (measured 301 vs 194 over 5 seeds)."""
    def shared(callback_ns):
        n = 0
        for seed in range(1, 6):
            t = _sleepers(callback_ns, seed)
            remote = t[(t["outcome"] == "expired") & (t["cpu_expired"] != t["base_cpu"])]
            n += int((remote.groupby("bucket_expiry_jiffies")["cpu_expired"].nunique() > 1).sum())
        return n
    assert shared(300_000) > 1.3 * shared(0)


@pytest.mark.parametrize("bad, exc, words", [
    (-1, ValueError, "callback_ns"), ("fast", ValueError, "callback_ns"), ({"process_timeout": 2.5}, ValueError,
                                                                            "callback_ns['process_timeout']"),
    ({3: 100}, TypeError, "function names"),
])
def test_bad_callback_durations_name_the_option(bad, exc, words):
    with pytest.raises(exc) as e:
        tl.Config(cpus=2, callback_ns=bad)
    assert words in str(e.value)


def test_a_callback_the_workload_does_not_arm_is_refused():
    """A misspelt callback name would otherwise change nothing, silently."""
    with pytest.raises(ValueError, match=r"callback_ns names callback\(s\) \['proces_timeout'\]"):
        tl.Config(cpus=2, workload=tl.workloads.sleepers(), callback_ns={"proces_timeout": 5000})
    assert tl.Config(cpus=2, workload=tl.workloads.sleepers(), callback_ns={"process_timeout": 5000}).callback_ns
