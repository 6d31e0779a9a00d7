"""The project's generators of configs (hypothesis strategies), shared by the
property tests, the fuzz tests and the long fuzz runs (fuzz/README.md).

``configs()``: small machines and the common workloads, for the properties
of every run (test_simulate.py). ``any_configs()``: every topology up to
4096 CPUs, every workload generator and every policy, short runs — what the
engine must survive. ``invalid_options()``: a valid set of options with one
made invalid, and the name of that option, which the error must carry.
"""
from __future__ import annotations

from hypothesis import assume
from hypothesis import strategies as st

import timerlab as tl
from timerlab import workloads as W
from timerlab.idle_states import PRESETS as IDLE_PRESETS
from timerlab.wake_latency import PRESETS as WAKE_PRESETS

KERNELS = ["5.4", "5.10", "5.15", "6.1", "6.6", "6.8", "6.9", "6.12", "latest"]
PULL_KERNELS = ["6.9", "6.12", "latest"]
GOVERNORS = ["menu", "teo", "none", "oracle", "shallowest", "deepest"]


@st.composite
def configs(draw):
    cpus = draw(st.sampled_from([1, 2, 3, 5, 8, 9, 12, 16, 24]))
    nodes = draw(st.integers(1, min(cpus, 3)))
    placement = draw(st.sampled_from(["push", "pull"]))
    kernel = draw(st.sampled_from(["6.12", "latest"])) if placement == "pull" else draw(st.sampled_from(["6.6", "latest"]))
    w = tl.workloads.tasks(run_ns=tl.dist.exponential(draw(st.sampled_from([50e3, 300e3, 3e6]))),
                           sleep_ns=tl.dist.exponential(draw(st.sampled_from([1e6, 8e6, 60e6]))),
                           sleep=draw(st.sampled_from(["timer", "external", "nanosleep", "clock_nanosleep", "poll",
                                                       "usleep_range"])),
                           priority=draw(st.sampled_from([0, 0, 50])), range_ns=draw(st.sampled_from([0, 200_000])),
                           timeouts=draw(st.integers(0, 2)), cancel_p=draw(st.floats(0, 1)),
                           timeout_ns=tl.dist.uniform(1e6, 80e6))
    if draw(st.booleans()):
        w = w + tl.workloads.busy(fraction=draw(st.sampled_from([0.0, 0.25, 0.5])))
    if draw(st.booleans()):
        w = w + tl.workloads.periodic(period_ns=draw(st.sampled_from([3e6, 20e6])),
                                      flags=draw(st.sampled_from(["", "D", "P"])))
    if draw(st.booleans()):
        w = w + tl.workloads.timeouts(rate_hz=draw(st.sampled_from([20, 400])), flags=draw(st.sampled_from(["", "P"])),
                                      timeout_ns=tl.dist.uniform(1e6, 40e6))
    if cpus > 1 and draw(st.booleans()):
        w = w + tl.workloads.remote_enqueuer(from_cpu=0, to_cpus=list(range(1, cpus)), rate_hz=200)
    if draw(st.booleans()):  # a latency tool: cyclictest (PM QoS 0 or --laptop) or timerlat
        w = w + draw(st.sampled_from([tl.workloads.cyclictest(interval_us=700, priority=99),
                                      tl.workloads.cyclictest(interval_us=1500, latency_us=None),
                                      tl.workloads.timerlat(period_us=900)]))
    return tl.Config(cpus=cpus, nodes=nodes, layout=draw(st.sampled_from(["contiguous", "interleaved"])),
                     idle_states=draw(st.sampled_from(["skx", "skl", "vm"])),
                     governor=draw(st.sampled_from(["menu", "teo", "oracle", "shallowest", "deepest"])),
                     hz=draw(st.sampled_from([100, 250, 1000])), placement=placement, kernel=kernel,
                     remote_wakeup=draw(st.sampled_from(["lazy", "always"])), workload=w,
                     deferrable=draw(st.sampled_from(["legacy", "global", "global_nowake"])) if placement == "pull"
                     else "legacy",
                     duration_ns=200_000_000, seed=draw(st.integers(0, 2**32)), record_events=True)


# ---------------------------------------------------------------------------
# Every topology, workload and policy.

def _ns(draw, lo: float, hi: float):
    """A time in ns: a constant or one of the distributions, between lo and hi."""
    a = draw(st.floats(lo, hi))
    kind = draw(st.sampled_from(["const", "uniform", "exponential", "lognormal"]))
    if kind == "const":
        return int(a)
    if kind == "uniform":
        return tl.dist.uniform(a, a + draw(st.floats(0, hi)))
    if kind == "exponential":
        return tl.dist.exponential(a)
    return tl.dist.lognormal(max(a, 1.0), draw(st.floats(0, 2)))


def _cpu_subset(draw, cpus: int):
    if draw(st.booleans()):
        return None
    return sorted(set(draw(st.lists(st.integers(0, cpus - 1), min_size=1, max_size=8))))


def _generator(draw, kind: str, cpus: int, nodes: int) -> W.Workload:
    flags = st.sampled_from(["", "D", "P", "D|P"])
    if kind == "tasks":
        return W.tasks(cpus=_cpu_subset(draw, cpus), per_cpu=draw(st.integers(1, 3)), run_ns=_ns(draw, 0, 5e6),
                       sleep_ns=_ns(draw, W.MIN_TASK_CYCLE_NS, 50e6),
                       sleep=draw(st.sampled_from(["timer", "external", "nanosleep", "clock_nanosleep", "poll",
                                                   "usleep_range"])),
                       priority=draw(st.sampled_from([0, 0, 1, 99])), nice=draw(st.integers(-20, 19)),
                       timer_slack_ns=draw(st.sampled_from([0, 50_000, 1_000_000])),
                       range_ns=draw(st.sampled_from([0, 100_000])),
                       timeouts=draw(st.integers(0, 3)), timeout_ns=_ns(draw, 0, 300e6),
                       cancel_p=draw(st.floats(0, 1)), cancel_after_ns=_ns(draw, 0, 10e6),
                       timeout_flags=draw(flags))
    if kind == "timeouts":
        return W.timeouts(rate_hz=draw(st.sampled_from([1, 50, 1000, 20_000])), cpus=_cpu_subset(draw, cpus),
                          count=draw(st.integers(1, 3)), timeout_ns=_ns(draw, 0, 300e6),
                          cancel_p=draw(st.floats(0, 1)), flags=draw(flags))
    if kind == "periodic":
        return W.periodic(period_ns=_ns(draw, 0, 100e6), cpus=_cpu_subset(draw, cpus), flags=draw(flags))
    if kind == "busy":
        return W.busy(fraction=draw(st.sampled_from([0.0, 0.1, 0.5, 1.0])))
    if kind == "remote_enqueuer":
        return W.remote_enqueuer(from_cpu=draw(st.integers(0, cpus - 1)),
                                 to_cpus=sorted(set(draw(st.lists(st.integers(0, cpus - 1), min_size=1, max_size=8)))),
                                 rate_hz=draw(st.sampled_from([10, 1000, 50_000])), timeout_ns=_ns(draw, 0, 400e6))
    if kind == "enqueue_dequeue":
        return W.enqueue_dequeue(cpu=draw(st.integers(0, cpus - 1)), pairs=draw(st.integers(1, 2000)))
    if kind == "mixed":
        return W.mixed(busy_fraction=draw(st.sampled_from([0.0, 0.25, 0.5])))
    if kind == "server":
        return W.server(rate_hz=draw(st.sampled_from([10.0, 200.0, 2000.0])),
                        busy_fraction=draw(st.sampled_from([0.0, 0.25])))
    if kind == "devfreq":
        return W.devfreq(cpu=draw(st.integers(0, cpus - 1)), period_ns=_ns(draw, 1e6, 50e6))
    if kind == "sleepers":
        return W.sleepers(cpus=_cpu_subset(draw, cpus), per_cpu=draw(st.integers(1, 2)))
    if kind == "nanosleepers":
        return W.nanosleepers(cpus=_cpu_subset(draw, cpus), per_cpu=draw(st.integers(1, 2)),
                              sleep=draw(st.sampled_from(["nanosleep", "clock_nanosleep", "poll", "usleep_range"])))
    if kind == "cyclictest":
        return W.cyclictest(interval_us=draw(st.sampled_from([50, 500, 1000])), cpus=_cpu_subset(draw, cpus),
                            priority=draw(st.sampled_from([0, 99])), latency_us=draw(st.sampled_from([0, 100, None])))
    if kind == "timerlat":
        return W.timerlat(period_us=draw(st.sampled_from([100, 1000])), cpus=_cpu_subset(draw, cpus))
    return W.idle(nodes=[draw(st.integers(0, nodes - 1))] if draw(st.booleans()) else None)


GENERATORS = ["tasks", "timeouts", "periodic", "busy", "remote_enqueuer", "enqueue_dequeue", "mixed", "server",
              "devfreq", "sleepers", "idle", "nanosleepers", "cyclictest", "timerlat"]


@st.composite
def machines(draw, max_cpus: int = 4096) -> dict:
    cpus = draw(st.sampled_from([c for c in (1, 2, 3, 4, 6, 8, 16, 24, 64, 96, 128, 256, 512, 1024, 2048, 4096)
                                 if c <= max_cpus]))
    smt = draw(st.sampled_from([s for s in (1, 2, 4) if cpus % s == 0]))
    m = dict(cpus=cpus, nodes=draw(st.integers(1, min(cpus, 8))), smt=smt,
             layout=draw(st.sampled_from(["contiguous", "interleaved"])))
    if draw(st.booleans()):
        m["llc_size"] = smt * draw(st.integers(1, max(1, cpus // smt)))
    return m


@st.composite
def any_options(draw, max_cpus: int = 4096, max_duration_ns: int = 20_000_000) -> dict:
    """Keyword options of a valid Config: any machine, workload and policy."""
    o = draw(machines(max_cpus))
    cpus, nodes = o["cpus"], o["nodes"]
    kernel = draw(st.sampled_from(KERNELS))
    pull = kernel in PULL_KERNELS and draw(st.booleans())
    kinds = draw(st.lists(st.sampled_from(GENERATORS), min_size=1, max_size=4))
    w = W.Workload()
    for k in kinds:
        w = w + _generator(draw, k, cpus, nodes)
    o.update(kernel=kernel, placement="pull" if pull else "push", workload=w,
             remote_wakeup=draw(st.sampled_from(["lazy", "always"])),
             deferrable=draw(st.sampled_from(["legacy", "global", "global_nowake"])) if pull else "legacy",
             hz=draw(st.sampled_from([100, 250, 300, 1000])), idle_states=draw(st.sampled_from(sorted(IDLE_PRESETS))),
             governor=draw(st.sampled_from(GOVERNORS)), wake_latency=draw(st.sampled_from(sorted(WAKE_PRESETS))),
             rcu_needs_cpu=draw(st.booleans()), irq_ns=draw(st.sampled_from([0, 1, 2000, 50_000])),
             ipi_latency_ns=draw(st.sampled_from([0, 1000, 100_000])),
             callback_ns=draw(st.sampled_from([None, 0, 5000])),
             latency_req_ns=draw(st.sampled_from([None, 0, 20_000])),
             timer_migration=draw(st.booleans()), record_hrtimers=draw(st.sampled_from([None, "all", "none"])),
             resume_latency_ns=draw(st.sampled_from([None, 0, 50_000])),
             latency_model=draw(st.sampled_from([None, {"irq_entry_ns": 0}, {"context_switch_ns": 5000}])),
             duration_ns=draw(st.one_of(st.integers(1, max_duration_ns),
                                        st.sampled_from([max_duration_ns // 4, max_duration_ns]))), start_ns=draw(st.sampled_from([0, 10**9, 2**40])),
             seed=draw(st.integers(0, 2**64 - 1)), record_events=draw(st.booleans()))
    # Valid means Config accepts it: a workload bound to keep more timers pending than
    # the engine's guard allows (arming faster than they end) is an option error.
    try:
        tl.Config(**o)
    except ValueError as e:
        assume(not str(e).startswith("workload: its timers would reach"))
        raise
    return o


@st.composite
def any_configs(draw, max_cpus: int = 4096, max_duration_ns: int = 20_000_000) -> tl.Config:
    return tl.Config(**draw(any_options(max_cpus, max_duration_ns)))


# ---------------------------------------------------------------------------
# Invalid options: (option name, bad value), each judged with valid others.

def _bad_values(o: dict) -> list:
    cpus = o["cpus"]
    return [
        ("cpus", 0), ("cpus", -3), ("cpus", 2**18 + 1), ("cpus", 2.5), ("cpus", "8"), ("cpus", True),
        ("nodes", 0), ("nodes", cpus + 1), ("smt", 0), ("smt", 3 if cpus % 3 else cpus + 1),
        ("llc_size", -1), ("layout", "spiral"), ("bringup_order", [0] * (cpus + 1)), ("node_of_cpu", [0] * (cpus + 1)),
        ("hz", 123), ("hz", "250"), ("placement", "sideways"), ("remote_wakeup", "eager"), ("deferrable", "lazy"),
        ("kernel", "7.x"), ("kernel", 6.12), ("kernel", "2.6"), ("duration_ns", 0), ("duration_ns", -1),
        ("duration_ns", 1.5), ("duration_ns", 2**63), ("seed", -1), ("seed", 2**64), ("start_ns", -1),
        ("ipi_latency_ns", -1), ("ipi_latency_ns", 10**10), ("irq_ns", -5), ("idle_states", "moon"),
        ("idle_states", 5), ("governor", "ladder"), ("latency_req_ns", -1), ("overhead", {"bogus_ns": 1}),
        ("overhead", {"enqueue_ns": -1}), ("overhead", 3), ("callback_ns", -5), ("callback_ns", {"no_such_fn": 1}),
        ("wake_latency", "moon"), ("wake_latency", 3), ("record_events", "yes"), ("record_timers", 1),
        ("check_invariants", None), ("record_idle", "no"), ("rcu_needs_cpu", 0), ("max_memory_bytes", 10),
        ("busy_power_mw", -1), ("workload", "mixed"), ("topology", "big"), ("colour", "blue"),
        ("timer_migration", "on"), ("record_hrtimers", "some"), ("resume_latency_ns", [0] * (cpus + 1)),
        ("resume_latency_ns", -1), ("latency_model", {"irq_entry_ns": -1}), ("latency_model", {"bogus_ns": 1}),
    ]


@st.composite
def invalid_options(draw, max_cpus: int = 64) -> tuple:
    """(options, name): valid options with the option `name` made invalid."""
    o = draw(any_options(max_cpus, 1_000_000))
    name, value = draw(st.sampled_from(_bad_values(o)))
    o = dict(o)
    if name == "smt":
        o.pop("llc_size", None)
    o[name] = value
    return o, name


WORKLOAD_ERRORS = [  # (builder, kwargs, option named)
    (W.tasks, dict(per_cpu=0), "tasks.per_cpu"), (W.tasks, dict(run_ns=-1), "tasks.run_ns"),
    (W.tasks, dict(run_ns=0, sleep_ns=0), "tasks.run_ns"), (W.tasks, dict(run_ns=1, sleep_ns=10), "tasks.sleep_ns"), (W.tasks, dict(cancel_p=2), "tasks.cancel_p"),
    (W.tasks, dict(sleep="nap"), "sleep"), (W.tasks, dict(timeouts=10**6), "tasks.timeouts"),
    (W.tasks, dict(priority=100), "tasks.priority"), (W.tasks, dict(nice=20), "tasks.nice"),
    (W.cyclictest, dict(interval_us=0), "cyclictest.interval_us"), (W.cyclictest, dict(latency_us=-1), "latency_us"),
    (W.timerlat, dict(period_us=0), "timerlat.period_us"),
    (W.timeouts, dict(rate_hz=0), "timeouts.rate_hz"), (W.timeouts, dict(rate_hz=1, count=0), "timeouts.count"),
    (W.timeouts, dict(rate_hz=1, flags="X"), "timeouts.flags"), (W.periodic, dict(period_ns=float("nan")), "period_ns"),
    (W.busy, dict(fraction=1.5), "fraction"), (W.remote_enqueuer, dict(from_cpu=0, to_cpus=[], rate_hz=1), "to_cpus"),
    (W.enqueue_dequeue, dict(pairs=0), "enqueue_dequeue.pairs"), (W.tasks, dict(cpus=[]), "tasks"),
    (W.sleepers, dict(per_cpu=-1), "per_cpu"), (W.server, dict(rate_hz=-1), "rate_hz"),
]
