"""A trace as a whole :class:`~timerlab.Config`: its machine (CPUs, NUMA
nodes, HZ), kernel release, idle, start and length, with the trace's script
as the workload.

Not here: building the script (script.py).
"""
from __future__ import annotations

from ..config import LATENCY_DEFAULTS, Config
from ..trace.events import TICK_FUNCTIONS
from ..wake_latency import WakeLatency
from ..trace.features import default_idle, node_of_cpu
from .script import script_of, to_workload


def to_config(trace, **overrides) -> Config:
    """A :class:`~timerlab.Config` replaying ``trace``: its CPUs, NUMA nodes
    (from the hierarchy's set-up events; else one node), HZ (inferred; 250 if
    the trace cannot tell), kernel release (``trace.kernel``: given to
    read_ftrace, from the file name, e.g. "qemu-6.12.95-..." -> "6.12", or
    from the trace's features), start and length, and its
    idle: a trace whose cpu_idle events all say state 1 comes from a machine
    without a cpuidle driver (default_idle_call; idle_states="none",
    governor="none"), else idle states "vm" with the menu governor; its
    wake latency (each CPU's traced stopped-tick lateness, for the wakeups
    the kernel did not have; the traced ones are imposed). Any
    option can be overridden; ``rcu_needs_cpu`` (default "auto") is the
    trace's (script.rcu_keeps_tick) unless given;
    ``tick=``, ``jiffies=``, ``hrtimers=`` and ``hrtimer_wakeups=`` are those of :func:`to_workload`."""
    hz = overrides.get("hz")
    tick = overrides.pop("tick", "simulated")
    jiffies = overrides.pop("jiffies", "auto")
    hrtimers = overrides.pop("hrtimers", True)
    hrtimer_wakeups = overrides.pop("hrtimer_wakeups", "trace")
    workload = overrides.pop("workload", None) or to_workload(
        trace, hz=hz, tick=tick, jiffies=jiffies, rcu_needs_cpu=overrides.get("rcu_needs_cpu", "auto"),
        hrtimers=hrtimers, hrtimer_wakeups=hrtimer_wakeups)
    s = script_of(workload)
    nodes = node_of_cpu(trace.events, s.nr_cpus)
    # The trace's own idle only when the caller sets neither part of it.
    idle = "none" if not {"idle_states", "governor"} & set(overrides) and default_idle(trace.events) else "vm"
    args = dict(cpus=s.nr_cpus, hz=s.hz, kernel=trace.kernel, idle_states=idle, rcu_needs_cpu=s.rcu_needs_cpu,
                governor="none" if idle == "none" else "menu",
                start_ns=s.start_ns, duration_ns=max(1, s.end_ns - s.start_ns + 1), workload=workload,
                # The ticks' lateness is the trace's (tick_delay items); a stopped tick the
                # kernel did not have is as late as the CPU's traced ones.
                wake_latency=WakeLatency("trace", stopped=s.wake_stopped, source=str(trace.path)))
    # The trace's timing already holds the interrupts' entry and handlers
    # (its hrtimer_expire_entry times), which it does not time apart.
    args.update(latency_model={k: 0 for k in LATENCY_DEFAULTS},
                callback_ns={f: 0 for f in (*TICK_FUNCTIONS, "dl_task_timer")})
    if nodes is not None:
        args.update(node_of_cpu=nodes)
    if {"cpus", "nodes", "layout", "topology"} & set(overrides):
        args.pop("node_of_cpu", None)
    args.update(overrides)
    if args["rcu_needs_cpu"] == "auto":
        args["rcu_needs_cpu"] = s.rcu_needs_cpu  # as the script was built: the trace's
    return Config(**args)
