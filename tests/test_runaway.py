"""The core cannot run away (issue 17): the config that looped now runs, the
guard stops what would grow without bound with an error that says where, and
Ctrl-C stops a long run although its loop runs without the GIL."""
import signal
import subprocess
import sys
import textwrap

import pytest

import timerlab as tl

ITEM1 = dict(cpus=1, governor="oracle", irq_ns=0, duration_ns=3_000_000,
             workload=tl.workloads.tasks(run_ns=62_000, sleep_ns=100_000))


def test_the_config_that_looped_runs_with_sane_results():
    """irq_ns=0: the task's wakeup (a device interrupt) woke the idle CPU,
    whose interrupt then ended before its handler ran, at the same instant,
    forever. The task now wakes once (at a random phase of its cycle), runs
    62 µs and sleeps on a 1-jiffy timer that expires after the 3 ms."""
    res = tl.simulate(tl.Config(**ITEM1))
    cpu = res.per_cpu.iloc[0]
    assert cpu["tasks_woken"] == 1 and cpu["wakeups"] == 1 and cpu["busy_ns"] == 62_000
    assert cpu["busy_ns"] + cpu["idle_ns"] == 3_000_000
    assert res.summary["timers_armed"] == 1 and res.summary["steps"] < 100
    # Longer, it keeps cycling: one wakeup per task cycle (4 ms timer + 62 µs run).
    long = tl.simulate(tl.Config(**{**ITEM1, "duration_ns": 400_000_000}))
    assert 95 <= long.summary["wakeups"] <= 101
    assert long.summary["steps"] < 10_000


def test_a_run_over_its_memory_limit_stops_with_the_option_named():
    cfg = tl.Config(cpus=16, record_events=True, duration_ns=100_000_000_000, max_memory_bytes=16 << 20)
    with pytest.raises(tl.RunawayError, match=r"max_memory_bytes=16777216 at t=\d+ ns on CPU \d+"):
        tl.simulate(cfg)
    assert issubclass(tl.RunawayError, RuntimeError)
    with pytest.raises(ValueError, match="max_memory_bytes must be >= 1048576"):
        tl.Config(max_memory_bytes=1000)


def test_ctrl_c_stops_a_long_run():
    """SIGINT while the engine runs without the GIL: KeyboardInterrupt, and the
    process lives on (the engine polls for signals every 50 ms of wall time)."""
    script = textwrap.dedent("""
        import sys, time, timerlab as tl
        cfg = tl.Config(cpus=64, duration_ns=10**12, record_timers=False, record_idle=False)
        print("running", flush=True)
        t = time.perf_counter()
        try:
            tl.simulate(cfg)
        except KeyboardInterrupt:
            print(f"interrupted after {time.perf_counter() - t:.1f} s", flush=True)
            sys.exit(3)
    """)
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "running"
        import time
        time.sleep(1.5)  # well inside simulate
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=60) == 3  # a hang guard, not a timing
        assert p.stdout.readline().startswith("interrupted after")
    finally:
        p.kill()
        p.wait()


def test_a_workload_bound_to_outgrow_the_guard_is_refused_by_config():
    """Found by `python fuzz/run.py configs` (10^4 configs, one finding): 192
    tasks on a ~1 µs cycle, each arming two ~0.12 s timeouts it never
    cancels, passed Config and stopped inside the run with the guard's
    "runaway queue" error. Config now bounds the pending timers (arming rate x
    lifetime, at most the run) and refuses it, naming the workload."""
    w = tl.workloads.busy(fraction=1.0) + tl.workloads.tasks(
        per_cpu=2, run_ns=10, sleep_ns=tl.dist.lognormal(1000, 0.402662), sleep="clock_nanosleep", timeouts=2,
        timeout_ns=tl.dist.lognormal(6.57698e7, 1.10196), cancel_p=3.7e-82, priority=99, timeout_flags="D")
    opts = dict(cpus=96, nodes=2, smt=2, layout="interleaved", kernel="5.10", placement="push", hz=300, irq_ns=0,
                workload=w, start_ns=10**9, seed=855265)
    with pytest.raises(ValueError, match=r"^workload: its timers would reach about [\d,]+ pending .* 4,393,216 for 96"):
        tl.Config(**opts, duration_ns=20_000_000)
    # A run too short to reach the limit is accepted and ends (the bound counts the run's length).
    res = tl.simulate(tl.Config(**opts, duration_ns=200_000))
    assert ((res.per_cpu["busy_ns"] + res.per_cpu["idle_ns"]) == 200_000).all()
