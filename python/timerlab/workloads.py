"""Workloads: what the simulated machine runs (the model is cpp/include/timerlab/workload.hpp).

Generators, each on a set of CPUs, combined with ``+``::

    w = (tl.workloads.tasks(run_ns=tl.dist.exponential(200_000), sleep_ns=tl.dist.exponential(10_000_000))
         + tl.workloads.periodic(period_ns=20_000_000, flags="D")
         + tl.workloads.busy(fraction=0.25))

CPUs are chosen with ``cpus=`` (numbers), ``nodes=`` (all CPUs of these
nodes), or neither (every CPU); ``busy`` takes a ``fraction`` of the CPUs,
spread evenly. Times are ns; a plain number is a constant, or use the
distributions of :mod:`timerlab.dist`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import dist as _dist
from ._checks import check_int
from .wheel import parse_timer_flags

__all__ = ["Workload", "tasks", "timeouts", "periodic", "busy", "busy_fraction", "remote_enqueuer", "enqueue_dequeue",
           "mixed", "server", "devfreq", "sleepers", "idle", "SERVER_TIMERS", "nanosleepers", "cyclictest", "timerlat",
           "SLEEPS"]

# How a task sleeps (the core's SleepKind, in its order) and the callback of its timer.
SLEEPS = {"timer": "process_timeout", "external": None, "nanosleep": "hrtimer_wakeup",
          "clock_nanosleep": "hrtimer_wakeup", "poll": "hrtimer_wakeup", "usleep_range": "hrtimer_wakeup",
          "timerlat": "timerlat_irq"}
_MEASURES = {None: 0, "cyclictest": 1, "timerlat": 2}


# Tasks per CPU, timeouts armed at once: the core arms them in one step
# (workload.hpp, kMaxPerOccasion).
MAX_PER_OCCASION = 10_000
# The shortest mean run + sleep cycle of a task (workload.hpp, kMinTaskCycleNs).
MIN_TASK_CYCLE_NS = 1000


@dataclass(frozen=True)
class CpuSelection:
    cpus: tuple | None = None
    nodes: tuple | None = None

    def resolve(self, topology, what: str) -> list[int]:
        if self.cpus is not None:
            bad = [c for c in self.cpus if c >= topology.cpus]
            if bad:
                raise ValueError(f"{what}: cpus {bad} do not exist (cpus={topology.cpus})")
            return list(self.cpus)
        if self.nodes is not None:
            bad = [n for n in self.nodes if n >= topology.nodes]
            if bad:
                raise ValueError(f"{what}: nodes {bad} do not exist (nodes={topology.nodes})")
            return [c for c in range(topology.cpus) if topology.node_of_cpu[c] in self.nodes]
        return list(range(topology.cpus))

    def __repr__(self) -> str:
        if self.cpus is not None:
            return f"cpus={list(self.cpus)}"
        return f"nodes={list(self.nodes)}" if self.nodes is not None else "all CPUs"


def _selection(cpus, nodes, what) -> CpuSelection:
    if cpus is not None and nodes is not None:
        raise ValueError(f"{what}: give cpus= or nodes=, not both")
    if cpus is not None:
        cpus = tuple(check_int(f"{what}.cpus", c, minimum=0) for c in cpus)
        if not cpus:
            raise ValueError(f"{what}: cpus is empty")
    if nodes is not None:
        nodes = tuple(check_int(f"{what}.nodes", n, minimum=0) for n in nodes)
        if not nodes:
            raise ValueError(f"{what}: nodes is empty")
    return CpuSelection(cpus, nodes)


def _probability(name, p) -> float:
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
        raise ValueError(f"{name} must be a probability in [0, 1], got {p!r}")
    return float(p)


def _rate(name, r) -> float:
    if isinstance(r, bool) or not isinstance(r, (int, float)) or not 0 < r <= 1e7:
        raise ValueError(f"{name} must be a rate in (0, 1e7] Hz, got {r!r}")
    return float(r)


# Task parameters left out of a component's repr at these values (most tasks).
_QUIET_DEFAULTS = dict(priority=0, nice=0, timer_slack_ns=50_000, range_ns=0, measure=None, pm_qos_ns=None)
_SHOWN = object()


@dataclass(frozen=True)
class Component:
    kind: str
    where: CpuSelection
    params: dict = field(hash=False, compare=True)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items() if _QUIET_DEFAULTS.get(k, _SHOWN) != v)
        return f"{self.kind}({self.where!r}{', ' if args else ''}{args})"


@dataclass(frozen=True)
class Workload:
    """A sum of generators; build with the functions of this module and ``+``."""

    components: tuple = ()

    def __add__(self, other: "Workload") -> "Workload":
        if not isinstance(other, Workload):
            return NotImplemented
        return Workload(self.components + other.components)

    def __repr__(self) -> str:
        return " + ".join(map(repr, self.components)) or "Workload()"

    def pm_qos_ns(self):
        """The tightest /dev/cpu_dma_latency request its programs hold (ns), or None."""
        reqs = [c.params["pm_qos_ns"] for c in self.components if c.params.get("pm_qos_ns") is not None]
        return min(reqs) if reqs else None

    def pending_bound(self, topology, duration_ns: int) -> float:
        """An upper bound on how many timers its components keep pending on
        average (Little's law: arming rate x mean lifetime, the lifetime at
        most the run): a task arms its timeouts once per run + sleep cycle at
        most (the engine adds context switches and latencies, never removes
        time), a cancelled timeout lives at most its mean delay to the
        cancel. The count at one instant fluctuates around that mean."""
        total = 0.0
        for c in self.components:
            p = c.params
            if c.kind == "tasks":
                n = len(c.where.resolve(topology, c.kind)) * p["per_cpu"]
                rate = n * p["timeouts"] / max(p["run_ns"].mean + p["sleep_ns"].mean, 1.0)
                total += n  # each task's own sleep timer
            elif c.kind == "timeouts":
                rate = len(c.where.resolve(topology, c.kind)) * p["rate_hz"] * p["count"] / 1e9
            else:
                continue
            life = (1 - p["cancel_p"]) * p["timeout_ns"].mean + p["cancel_p"] * min(
                p["cancel_after_ns"].mean, p["timeout_ns"].mean)
            total += rate * min(life, duration_ns)
        return total

    def to_core(self, topology, irq_ns: int) -> dict:
        """The dict _core.simulate takes, with CPU sets resolved on ``topology``."""
        names: list[str] = []

        def fn(name):
            if name not in names:
                names.append(name)
            return names.index(name)

        def timeout_spec(p, count):
            return {"count": count, "timeout_ns": p["timeout_ns"].core(), "cancel_p": p["cancel_p"],
                    "cancel_after_ns": p["cancel_after_ns"].core(), "flags": parse_timer_flags(p["flags"]),
                    "function": fn(p["function"])}

        out = {"tasks": [], "streams": [], "periodic": [], "remote": [], "loops": [], "busy_cpus": [],
               "irq_ns": irq_ns}
        for c in self.components:
            p = c.params
            cpus = c.where.resolve(topology, c.kind)
            if c.kind == "tasks":
                callback = SLEEPS[p["sleep"]]
                out["tasks"].append({
                    "cpus": cpus, "per_cpu": p["per_cpu"], "run_ns": p["run_ns"].core(),
                    "sleep_ns": p["sleep_ns"].core(), "sleep_kind": list(SLEEPS).index(p["sleep"]),
                    "sleep_function": fn(callback) if callback else 0, "rt_priority": p.get("priority", 0),
                    "nice": p.get("nice", 0), "timer_slack_ns": p.get("timer_slack_ns", 50_000),
                    "range_ns": p.get("range_ns", 0), "measure": _MEASURES[p.get("measure")],
                    "timeouts": timeout_spec(p, p["timeouts"])})
            elif c.kind == "timeouts":
                out["streams"].append({"cpus": cpus, "rate_hz": p["rate_hz"], "timeouts": timeout_spec(p, p["count"])})
            elif c.kind == "periodic":
                out["periodic"].append({"cpus": cpus, "period_ns": p["period_ns"].core(),
                                        "flags": parse_timer_flags(p["flags"]), "function": fn(p["function"])})
            elif c.kind == "busy":
                if p["fraction"] is not None:
                    k = round(p["fraction"] * len(cpus))
                    cpus = [cpus[(i * len(cpus)) // k] for i in range(k)] if k else []
                out["busy_cpus"].extend(cpus)
            elif c.kind == "remote_enqueuer":
                to = list(p["to_cpus"])
                for cpu in [p["from_cpu"], *to]:
                    if cpu >= topology.cpus:
                        raise ValueError(f"remote_enqueuer: CPU {cpu} does not exist (cpus={topology.cpus})")
                out["remote"].append({"from_cpu": p["from_cpu"], "to_cpus": to, "rate_hz": p["rate_hz"],
                                      "timeout_ns": p["timeout_ns"].core(), "function": fn(p["function"])})
            elif c.kind == "enqueue_dequeue":
                if p["cpu"] >= topology.cpus:
                    raise ValueError(f"enqueue_dequeue: CPU {p['cpu']} does not exist (cpus={topology.cpus})")
                out["loops"].append({"cpu": p["cpu"], "pairs": p["pairs"], "timeout_ns": p["timeout_ns"].core(),
                                     "function": fn(p["function"])})
            elif c.kind == "script":
                # A replayed trace (timerlab.replay.Script): its timed operations and its jiffies.
                if "script" in out:
                    raise ValueError("a workload holds at most one script (one replayed trace)")
                out["script"], out["initial_jiffies"], out["jiffies_duty"] = p["script"].to_core(fn, topology)
        out["busy_cpus"] = sorted(set(out["busy_cpus"]))
        out["function_names"] = names or ["timer"]
        return out


def _one(kind, where, **params) -> Workload:
    return Workload((Component(kind, where, params),))


def tasks(*, cpus=None, nodes=None, per_cpu: int = 1, run_ns=200_000, sleep_ns=10_000_000, sleep: str = "timer",
          timeouts: int = 0, timeout_ns=_dist.uniform(10_000_000, 300_000_000), cancel_p: float = 0.9,
          cancel_after_ns=_dist.exponential(2_000_000), timeout_flags: str = "",
          timeout_function: str = "tcp_write_timer", priority: int = 0, nice: int = 0,
          timer_slack_ns: int = 50_000, range_ns: int = 0) -> Workload:
    """Tasks alternating running (``run_ns``) and sleeping (``sleep_ns``).

    ``sleep``: how the task sleeps (the hrtimer sleeps' window is the kernel's
    slack rule, hrtimers-and-latency.md §A.2):

    * ``"timer"``: schedule_timeout, a process_timeout wheel timer whose
      expiry wakes the task on its CPU;
    * ``"external"``: an interrupt wakes it;
    * ``"nanosleep"``: nanosleep / clock_nanosleep REL, an hrtimer_wakeup
      hrtimer with a window of the task's ``timer_slack_ns``;
    * ``"clock_nanosleep"``: clock_nanosleep ABS at the next period boundary
      (the previous one + ``sleep_ns``, missed ones skipped), as cyclictest;
    * ``"poll"``: a poll/select/epoll_wait timeout of ``sleep_ns``, window
      max(slack, 0.1 % of the timeout — 0.5 % with ``nice`` > 0), at most 100 ms;
    * ``"usleep_range"``: usleep_range(sleep_ns, sleep_ns + ``range_ns``).

    ``priority``: 0 for SCHED_OTHER, 1-99 for SCHED_FIFO (preempts lower
    priorities; an RT task's window is 0). At the start of each run the task
    arms ``timeouts`` wheel timeouts (``timeout_ns``), each cancelled with
    probability ``cancel_p`` after ``cancel_after_ns``.
    """
    if sleep not in SLEEPS or sleep == "timerlat":
        raise ValueError(f"tasks: sleep={sleep!r}; choose one of {[k for k in SLEEPS if k != 'timerlat']}")
    return _task_component(cpus, nodes, per_cpu, run_ns, sleep_ns, sleep, priority, nice, timer_slack_ns, range_ns,
                           None, None, timeouts=timeouts, timeout_ns=timeout_ns, cancel_p=cancel_p,
                           cancel_after_ns=cancel_after_ns, timeout_flags=timeout_flags,
                           timeout_function=timeout_function)


def _task_component(cpus, nodes, per_cpu, run_ns, sleep_ns, sleep, priority, nice, timer_slack_ns, range_ns,
                    measure, pm_qos_ns, *, timeouts=0, timeout_ns=_dist.uniform(10_000_000, 300_000_000),
                    cancel_p=0.9, cancel_after_ns=_dist.exponential(2_000_000), timeout_flags="",
                    timeout_function="tcp_write_timer", what="tasks") -> Workload:
    run, slept = _dist.as_dist(f"{what}.run_ns", run_ns), _dist.as_dist(f"{what}.sleep_ns", sleep_ns)
    if not run.mean + slept.mean >= MIN_TASK_CYCLE_NS:
        raise ValueError(f"{what}.run_ns + {what}.sleep_ns must average at least {MIN_TASK_CYCLE_NS} ns, got "
                         f"{run.mean + slept.mean:g}: a task's cycle has two context switches, and a shorter one "
                         "would take a simulation step per ns")
    return _one("tasks", _selection(cpus, nodes, what),
                per_cpu=check_int(f"{what}.per_cpu", per_cpu, minimum=1, maximum=MAX_PER_OCCASION),
                run_ns=run, sleep_ns=slept,
                sleep=sleep, timeouts=check_int(f"{what}.timeouts", timeouts, minimum=0, maximum=MAX_PER_OCCASION),
                timeout_ns=_dist.as_dist(f"{what}.timeout_ns", timeout_ns),
                cancel_p=_probability(f"{what}.cancel_p", cancel_p),
                cancel_after_ns=_dist.as_dist(f"{what}.cancel_after_ns", cancel_after_ns),
                flags=_check_flags(f"{what}.timeout_flags", timeout_flags), function=timeout_function,
                priority=check_int(f"{what}.priority", priority, minimum=0, maximum=99),
                nice=check_int(f"{what}.nice", nice, minimum=-20, maximum=19),
                timer_slack_ns=check_int(f"{what}.timer_slack_ns", timer_slack_ns, minimum=0, maximum=10**9),
                range_ns=check_int(f"{what}.range_ns", range_ns, minimum=0, maximum=10**9),
                measure=measure, pm_qos_ns=pm_qos_ns)


def timeouts(*, rate_hz: float, cpus=None, nodes=None, count: int = 1,
             timeout_ns=_dist.uniform(10_000_000, 300_000_000), cancel_p: float = 0.9,
             cancel_after_ns=_dist.exponential(2_000_000), flags: str = "",
             function: str = "blk_rq_timed_out_timer") -> Workload:
    """Interrupts arriving at ``rate_hz`` per CPU, each arming ``count`` timeouts
    from interrupt context (on an idle CPU, the push model moves them away)."""
    return _one("timeouts", _selection(cpus, nodes, "timeouts"), rate_hz=_rate("timeouts.rate_hz", rate_hz),
                count=check_int("timeouts.count", count, minimum=1, maximum=MAX_PER_OCCASION),
                timeout_ns=_dist.as_dist("timeouts.timeout_ns", timeout_ns),
                cancel_p=_probability("timeouts.cancel_p", cancel_p),
                cancel_after_ns=_dist.as_dist("timeouts.cancel_after_ns", cancel_after_ns),
                flags=_check_flags("timeouts.flags", flags), function=function)


def periodic(*, period_ns=20_000_000, cpus=None, nodes=None, flags: str = "D",
             function: str = "delayed_work_timer_fn") -> Workload:
    """One timer per CPU re-armed from its own callback every ``period_ns``
    (default: deferrable delayed work every 20 ms)."""
    return _one("periodic", _selection(cpus, nodes, "periodic"),
                period_ns=_dist.as_dist("periodic.period_ns", period_ns),
                flags=_check_flags("periodic.flags", flags), function=function)


def busy(*, fraction: float | None = None, cpus=None, nodes=None) -> Workload:
    """CPUs kept running all the time: ``fraction`` of the selected CPUs, spread
    evenly (e.g. 0.25 of 8 CPUs: 0 and 4), or exactly the ``cpus`` given."""
    if fraction is not None:
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 <= fraction <= 1:
            raise ValueError(f"busy.fraction must be in [0, 1], got {fraction!r}")
        fraction = float(fraction)
    elif cpus is None and nodes is None:
        raise ValueError("busy: give fraction=, cpus= or nodes=")
    return _one("busy", _selection(cpus, nodes, "busy"), fraction=fraction)


def remote_enqueuer(*, from_cpu: int, to_cpus, rate_hz: float, timeout_ns=_dist.uniform(4_000_000, 400_000_000),
                    function: str = "remote_timer_fn") -> Workload:
    """One CPU (kept busy) arming timers on others with add_timer_on at
    ``rate_hz``, each on a random CPU of ``to_cpus`` with a random timeout —
    the test of the lazy-wakeup patch in the seeds."""
    to = tuple(check_int("remote_enqueuer.to_cpus", c, minimum=0) for c in to_cpus)
    if not to:
        raise ValueError("remote_enqueuer: to_cpus is empty")
    return _one("remote_enqueuer", CpuSelection(), from_cpu=check_int("remote_enqueuer.from_cpu", from_cpu, minimum=0),
                to_cpus=to, rate_hz=_rate("remote_enqueuer.rate_hz", rate_hz),
                timeout_ns=_dist.as_dist("remote_enqueuer.timeout_ns", timeout_ns), function=function)


def enqueue_dequeue(*, cpu: int = 0, pairs: int = 1000, timeout_ns=_dist.uniform(4_000_000, 400_000_000),
                    function: str = "bench_timer_fn") -> Workload:
    """The seeds' micro benchmark: on one CPU (kept busy) arm and delete one
    timer ``pairs`` times in a row at the start of the run. With the overhead
    model, ``timer_overhead_ns`` of that CPU / pairs is the cost per pair."""
    return _one("enqueue_dequeue", CpuSelection(), cpu=check_int("enqueue_dequeue.cpu", cpu, minimum=0),
                pairs=check_int("enqueue_dequeue.pairs", pairs, minimum=1, maximum=10**8),
                timeout_ns=_dist.as_dist("enqueue_dequeue.timeout_ns", timeout_ns), function=function)


def mixed(*, busy_fraction: float = 0.25) -> Workload:
    """The default: a quarter of the CPUs busy, tasks on every CPU sleeping on
    timers and arming network-like timeouts, and deferrable periodic work."""
    return (busy(fraction=busy_fraction)
            + tasks(run_ns=_dist.exponential(200_000), sleep_ns=_dist.exponential(10_000_000), timeouts=2)
            + periodic(period_ns=1_000_000_000, flags="D"))


def busy_fraction(fraction: float = 0.25, *, cpus=None, nodes=None) -> Workload:
    """A share of the (selected) CPUs kept busy, spread evenly — the seeds'
    "a quarter of the CPUs kept busy"."""
    return busy(fraction=fraction, cpus=cpus, nodes=nodes)


def devfreq(*, cpu: int = 0, period_ns=20_000_000, flags: str = "D", function: str = "delayed_work_timer_fn") -> Workload:
    """The reviewer's example in the pull-model seeds: a devfreq governor's
    deferrable delayed work polling every 20 ms (devfreq_monitor, queued
    without a CPU: a non-pinned deferrable timer). Under deferrable="legacy"
    it runs only when its CPU is awake anyway; "global" wakes the last idle
    CPU for it; "global_nowake" runs it on whichever CPU is awake. Like
    delayed work, it is re-armed on the CPU that ran it."""
    return periodic(cpus=[check_int("devfreq.cpu", cpu, minimum=0)], period_ns=period_ns, flags=flags,
                    function=function)


def sleepers(*, cpus=None, nodes=None, per_cpu: int = 1, run_ns=_dist.exponential(100_000),
             sleep_ns=_dist.uniform(1_000_000, 20_000_000)) -> Workload:
    """Tasks that run briefly and sleep with schedule_timeout: each sleep arms
    a non-pinned process_timeout timer on the task's CPU, and its expiry
    wakes the task on that same CPU (the fair scheduler's preference for the
    previous CPU). Under pull, an idle CPU's process_timeout is expired by
    the migrator, which then has to wake the sleeper's CPU with an IPI: the
    ping-pong of the pull-model cover letter."""
    return tasks(cpus=cpus, nodes=nodes, per_cpu=per_cpu, run_ns=run_ns, sleep_ns=sleep_ns, sleep="timer")


# The timer mix of a server, per callback class: share of timer starts,
# timeout, flags, probability of being cancelled (or re-armed) before expiry.
# Shares and timeouts are those of the 16-CPU Debian 6.12 trace in
# tests/data/traces (28.8 s; process_timeout is in `sleepers`): tcp_write_timer
# 325 starts (50-250 jiffies, none expired), tcp_keepalive_timer 101 (60 s to
# 2 h), tw_timer_handler 67 (60 s), reqsk_timer_handler 65 (1 s, pinned),
# tcp_delack_timer 63 (40 ms), delayed_work 137 (~1 s, deferrable).
SERVER_TIMERS = (
    ("tcp_write_timer", 325, _dist.uniform(200_000_000, 1_000_000_000), "", 0.98),
    ("tcp_keepalive_timer", 101, _dist.uniform(60e9, 7200e9), "", 0.99),
    ("tw_timer_handler", 67, 60_000_000_000, "", 0.2),
    ("reqsk_timer_handler", 65, 1_000_000_000, "P", 0.95),
    ("tcp_delack_timer", 63, 40_000_000, "", 0.9),
    ("blk_rq_timed_out_timer", 60, 30_000_000_000, "", 0.999),
)


def server(*, cpus=None, nodes=None, rate_hz: float = 200.0, busy_fraction: float = 0.25,
           sleepers_per_cpu: int = 1) -> Workload:
    """A busy server: network and block timeouts armed from interrupts at
    ``rate_hz`` per CPU in total, split by class as in SERVER_TIMERS (almost
    all cancelled or re-armed before they expire), ``sleepers_per_cpu``
    schedule_timeout sleepers per CPU, deferrable per-CPU housekeeping every
    second (vmstat-like), and ``busy_fraction`` of the CPUs kept busy. The
    rate is a model parameter: the traced guest was lightly loaded (about
    1 timer start per CPU per second); busy hosts arm hundreds."""
    total = sum(share for _, share, *_ in SERVER_TIMERS)
    w = Workload()
    for function, share, timeout, flags, cancel_p in SERVER_TIMERS:
        w = w + timeouts(rate_hz=_rate("server.rate_hz", rate_hz) * share / total, cpus=cpus, nodes=nodes,
                         timeout_ns=timeout, cancel_p=cancel_p, flags=flags, function=function,
                         cancel_after_ns=_dist.exponential(20_000_000))
    if sleepers_per_cpu:
        w = w + sleepers(cpus=cpus, nodes=nodes, per_cpu=sleepers_per_cpu)
    return (w + periodic(cpus=cpus, nodes=nodes, period_ns=1_000_000_000, flags="D")
            + busy(fraction=busy_fraction, cpus=cpus, nodes=nodes))


def idle(*, cpus=None, nodes=None) -> Workload:
    """An almost idle system: per-CPU deferrable housekeeping every second
    (vmstat_update-like delayed work) and one non-deferrable periodic timer
    every 4 s per CPU (e.g. a watchdog)."""
    return (periodic(cpus=cpus, nodes=nodes, period_ns=1_000_000_000, flags="D")
            + periodic(cpus=cpus, nodes=nodes, period_ns=4_000_000_000, flags="", function="watchdog_timer_fn"))


def _check_flags(name, flags) -> str:
    bits = parse_timer_flags(flags) if isinstance(flags, str) else None
    if bits is None:
        raise TypeError(f"{name} must be a string of flag letters like 'D|P', got {flags!r}")
    if bits & ~(parse_timer_flags("D|P")):
        raise ValueError(f"{name}={flags!r}: only D (deferrable) and P (pinned) are allowed")
    return flags


def nanosleepers(*, cpus=None, nodes=None, per_cpu: int = 1, run_ns=_dist.exponential(100_000),
                 sleep_ns=_dist.uniform(1_000_000, 20_000_000), sleep: str = "nanosleep", priority: int = 0,
                 timer_slack_ns: int = 50_000) -> Workload:
    """Tasks that run briefly and sleep on an hrtimer (``sleep``: "nanosleep",
    "clock_nanosleep", "poll" or "usleep_range"; see :func:`tasks`): user
    space's sleepers, whose hrtimer_wakeup ends idle periods the wheel's
    next event does not show (hrtimers-and-latency.md §A.6)."""
    return tasks(cpus=cpus, nodes=nodes, per_cpu=per_cpu, run_ns=run_ns, sleep_ns=sleep_ns, sleep=sleep,
                 priority=priority, timer_slack_ns=timer_slack_ns)


def cyclictest(*, interval_us: int = 1000, cpus=None, nodes=None, threads_per_cpu: int = 1, priority: int = 0,
               latency_us: int | None = 0, run_ns=2_000, timer_slack_ns: int = 50_000) -> Workload:
    """cyclictest's measuring threads (rt-tests): on each selected CPU (``-a``,
    one thread each as with ``-t N -a`` or ``-S``) a thread loops on
    clock_nanosleep(TIMER_ABSTIME, next), reads the clock, and advances next
    by ``interval_us`` (missed periods skipped); each wakeup is a sample of
    res.latency (tool "cyclictest"; :meth:`Result.cyclictest` prints its
    output). ``priority``: ``-p`` (0 = SCHED_OTHER, cyclictest's default,
    whose sleeps carry the task's 50 µs slack; 1-99 = SCHED_FIFO, slack 0).
    ``latency_us``: the value cyclictest writes to /dev/cpu_dma_latency and
    holds for the run (its default 0: no idle state deeper than polling);
    None for ``--laptop`` (no PM QoS request). ``run_ns``: the thread's own
    work per cycle."""
    if latency_us is not None:
        latency_us = check_int("cyclictest.latency_us", latency_us, minimum=0, maximum=2_000_000_000)
    return _task_component(cpus, nodes, threads_per_cpu, run_ns,
                           check_int("cyclictest.interval_us", interval_us, minimum=1, maximum=10**9) * 1000,
                           "clock_nanosleep", priority, 0, timer_slack_ns, 0, "cyclictest",
                           None if latency_us is None else latency_us * 1000, what="cyclictest")


def timerlat(*, period_us: int = 1000, cpus=None, nodes=None, priority: int = 95, run_ns=1_000) -> Workload:
    """The timerlat tracer (kernel/trace/trace_osnoise.c, rtla timerlat): one
    kthread per selected CPU, SCHED_FIFO ``priority`` (95 by default), that
    arms a per-CPU hrtimer ABS|PINNED|HARD at each absolute period boundary
    (``period_us``; past boundaries skipped) and sleeps; the timer's callback
    (timerlat_irq) records the IRQ latency and wakes the thread, which records
    the thread latency. Samples go to res.latency (tool "timerlat");
    :meth:`Result.timerlat` prints rtla's tables."""
    return _task_component(cpus, nodes, 1, run_ns,
                           check_int("timerlat.period_us", period_us, minimum=1, maximum=10**9) * 1000,
                           "timerlat", priority, 0, 0, 0, "timerlat", None, what="timerlat")
