"""Config: everything that defines a simulation run, validated on creation.

Every option is keyword-only; a bad value raises ValueError (or TypeError)
naming the option and what is allowed. A Config is immutable:
``cfg.replace(cpus=64)`` gives a new one (that is what sweeps do).
"""
from __future__ import annotations

from . import _core
from ._checks import check_choice, check_hz, check_int
from .callbacks import HRTIMER_DEFAULT_NS, check_callback_ns, per_function
from .kernel import kernel_has, parse_kernel, tick_function
from .idle_states import IdleStates, preset as idle_preset, table as idle_table
from .topology import LAYOUTS, Topology
from .wake_latency import WakeLatency, preset as wake_preset
from .workloads import Workload, mixed

PLACEMENTS = ("push", "pull")
REMOTE_WAKEUPS = ("lazy", "always")
DEFERRABLE_POLICIES = ("legacy", "global", "global_nowake")
GOVERNORS = ("menu", "teo", "none", "oracle", "shallowest", "deepest")
# Costs of timer code (ns) for the overhead model (engine.hpp, OverheadModel).
OVERHEAD_DEFAULTS = dict(enqueue_ns=62.0, dequeue_ns=47.0, push_target_ns=36.0, push_domain_ns=20.0,
                         tmigr_level_ns=40.0, remote_cpu_ns=250.0, expire_ns=80.0)
# The fair server's defaults (kernel/sched/fair.c fair_server_init): runtime
# 50 ms per 1 s period, deferred to the zero-laxity point; the 6.12 traces
# arm dl_task_timer 950 ms after a task starts (144 of 226 arms).
FAIR_SERVER_DEFER_NS = 1_000_000_000 - 50_000_000
# The latency model (engine.hpp, LatencyModel; res.latency): costs on the way
# from a clock interrupt to the task it wakes. Assumed figures of a current
# x86 server, of the order of the minima cyclictest and rtla timerlat report
# on bare metal with idle=poll (hrtimers-and-latency.md §B), not measured by
# timerlab: interrupt entry 0.5 µs, the switch to the woken task 0.7 µs, the
# return to user space 0.3 µs.
LATENCY_DEFAULTS = dict(irq_entry_ns=500, context_switch_ns=700, return_to_user_ns=300)
RECORD_HRTIMERS = ("no_tick", "all", "none")

_DEFAULTS = dict(
    cpus=None, nodes=None, node_of_cpu=None, layout="contiguous", smt=1, llc_size=0, bringup_order=None,
    topology=None, hz=250, placement=None, remote_wakeup="lazy", deferrable="legacy", kernel="latest", workload=None,
    duration_ns=1_000_000_000, seed=1, start_ns=0, ipi_latency_ns=1000, irq_ns=2000, record_events=False,
    record_timers=True, check_invariants=False, idle_states="skx", governor="menu", busy_power_mw=None,
    latency_req_ns=None, record_idle=True, overhead=None, rcu_needs_cpu=True, wake_latency="bare_metal",
    callback_ns=None, timer_migration=True, latency_model=None, resume_latency_ns=None, record_hrtimers=None,
    max_memory_bytes=8 << 30,
)


class Config:
    """A simulation run.

    Machine: ``cpus``, ``nodes``, ``layout`` ("contiguous" blocks of CPUs per
    node, or "interleaved": CPU c on node c % nodes) or an explicit
    ``node_of_cpu`` list, ``smt``, ``llc_size``, ``bringup_order`` — or a
    ready ``topology=``. ``hz``: 100, 250, 300 or 1000.

    Kernel: ``kernel`` ("latest", or a release like "6.12") fixes the
    behaviours that changed between releases (timerlab.kernel.BEHAVIOURS).
    ``placement``: "pull" (6.9+: timers stay local, the timer-migration
    hierarchy expires idle CPUs' global timers) or "push" (before 6.9: a
    timer armed on an idle CPU goes to the nearest busy one); default: the
    kernel's. ``remote_wakeup``: "lazy" (an idle CPU is woken only for its
    new first timer) or "always" (before 2015: on every enqueue).
    ``deferrable``: where non-pinned deferrable timers go (pull only):
    "legacy" (the local deferrable base: they never wake an idle CPU and run
    when it is next awake; every kernel), "global" (they are global timers:
    the hierarchy hands them to an awake CPU and the last idle CPU wakes for
    them), "global_nowake" (global, but a fully idle system never wakes for
    them — no kernel has it). Pinned deferrable timers stay local.
    ``rcu_needs_cpu`` (default True): a CPU that switched away from a task
    keeps its tick at idle entries until its next tick has run, as the real
    text traces here show at 99.8-100 % of such entries (not cyclictest's:
    its sleeps queue no callbacks, and the kernel stopped the tick at 91 %
    of them; a replay's Config takes the trace's, replay.script.rcu_keeps_tick). The kernel keeps
    the tick when tick_nohz_next_event finds the CPU needed — RCU callbacks
    queued (rcu_needs_cpu, the likeliest here), irq_work or a pending timer
    softirq; the traces do not say which, so the model is empirical. Ticks
    kept longer (12-60 % of the entries one tick later: callbacks waiting
    for a grace period?) are not modelled. False: timers alone decide.

    Idle: ``idle_states`` (a preset of timerlab.idle_states: "skx" (default),
    "icx", "spr", "skl", "acpi", "vm", "none"; or a table: list of dicts or
    DataFrame), ``busy_power_mw`` (overrides the table's), ``governor``
    ("menu", "teo", "none" — no cpuidle driver: the first state, the tick
    always offered to stop —, "oracle", "shallowest", "deepest"), ``latency_req_ns``
    (a /dev/cpu_dma_latency PM QoS limit on exit latency, ns; None: none; a
    workload's own request, e.g. cyclictest's 0, applies too: the smaller
    wins), ``resume_latency_ns`` (the per-CPU PM QoS resume latency limit,
    ns: one number for every CPU, a list per CPU or {cpu: ns}; None: none).
    ``overhead``: costs (ns) of timer code, overriding config.OVERHEAD_DEFAULTS.

    hrtimers: ``timer_migration`` (kernel.timer_migration, default True: a
    non-pinned hrtimer armed on an idle CPU goes to a busy one, never as its
    first timer); ``latency_model``: the costs from a clock interrupt to a
    woken task, overriding config.LATENCY_DEFAULTS (``irq_entry_ns``,
    ``context_switch_ns``, ``return_to_user_ns``); ``record_hrtimers``:
    which hrtimer instances res.hrtimers keeps ("no_tick" — all but the
    tick's periodic re-arms —, "all", "none"; default: "no_tick" with
    ``record_timers``, else "none").

    Run: ``workload`` (timerlab.workloads; default ``workloads.mixed()``),
    ``duration_ns``, ``seed`` (fixes everything), ``start_ns`` (monotonic
    time at the start), ``ipi_latency_ns``, ``irq_ns`` (time an interrupt
    keeps an idle CPU awake), ``wake_latency`` (how late the clock wakes an
    idle CPU: "bare_metal" (default, a few µs), "vm" (a qemu/KVM guest),
    "none" (on time: equal times go to the lowest CPU), or a
    :class:`~timerlab.WakeLatency`, e.g. ``tl.wake_latency_of(trace)``; see
    timerlab.wake_latency), ``callback_ns`` (how long timer callbacks run:
    None — 2 µs each —, a number of ns, or {function: ns}; a replay's timers
    run as long as traced; see timerlab.callbacks). ``record_events`` keeps a tracepoint log,
    ``record_timers`` one row per armed timer; ``check_invariants`` checks
    the models' invariants after every step (slow, for tests).
    ``max_memory_bytes`` (default 8 GiB; None: no limit) stops a run whose
    results and queues outgrow it with :class:`timerlab.RunawayError`, as
    the engine stops a model that loops at one instant or a workload that
    arms timers faster than they end (cpp/include/timerlab/guard.hpp).
    """

    __slots__ = ("_args", "topology", "hz", "placement", "remote_wakeup", "deferrable", "kernel", "workload",
                 "duration_ns", "seed", "start_ns", "ipi_latency_ns", "irq_ns", "record_events", "record_timers",
                 "check_invariants", "idle_states", "governor", "latency_req_ns", "record_idle", "overhead",
                 "rcu_needs_cpu", "wake_latency", "callback_ns", "timer_migration", "latency_model",
                 "resume_latency_ns", "record_hrtimers", "max_memory_bytes")

    def __init__(self, **kwargs):
        unknown = sorted(set(kwargs) - set(_DEFAULTS))
        if unknown:
            raise TypeError(f"Config got unknown option(s) {unknown}; options are {sorted(_DEFAULTS)}")
        args = {**_DEFAULTS, **kwargs}
        set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
        set_("_args", args)
        set_("topology", _topology(args))
        set_("hz", check_hz(args["hz"]))
        set_("kernel", args["kernel"])
        parse_kernel(args["kernel"])
        placement = args["placement"]
        if placement is None:
            placement = "pull" if kernel_has(args["kernel"], "pull_model") else "push"
        check_choice("placement", placement, PLACEMENTS)
        if placement == "pull" and not kernel_has(args["kernel"], "pull_model"):
            raise ValueError(f"placement='pull' needs kernel >= 6.9 (the timer migration hierarchy); "
                             f"kernel={args['kernel']!r}")
        set_("placement", placement)
        set_("remote_wakeup", check_choice("remote_wakeup", args["remote_wakeup"], REMOTE_WAKEUPS))
        set_("deferrable", check_choice("deferrable", args["deferrable"], DEFERRABLE_POLICIES))
        if self.deferrable != "legacy" and placement != "pull":
            raise ValueError(f"deferrable={self.deferrable!r} needs placement='pull' (the timer migration "
                             "hierarchy); with push only 'legacy' exists")
        workload = args["workload"] if args["workload"] is not None else mixed()
        if not isinstance(workload, Workload):
            raise TypeError(f"workload must be built with timerlab.workloads, got {type(workload).__name__}")
        set_("workload", workload)
        set_("duration_ns", check_int("duration_ns", args["duration_ns"], minimum=1, maximum=1 << 62))
        set_("seed", check_int("seed", args["seed"], minimum=0, maximum=(1 << 64) - 1))
        set_("start_ns", check_int("start_ns", args["start_ns"], minimum=0, maximum=1 << 62))
        if self.start_ns + self.duration_ns > 1 << 62:
            raise ValueError(f"duration_ns={self.duration_ns}: start_ns + duration_ns must be <= 2**62 "
                             f"(start_ns={self.start_ns})")
        set_("ipi_latency_ns", check_int("ipi_latency_ns", args["ipi_latency_ns"], minimum=0, maximum=10**9))
        set_("irq_ns", check_int("irq_ns", args["irq_ns"], minimum=0, maximum=10**9))
        set_("idle_states", _idle_states(args["idle_states"], args["busy_power_mw"]))
        set_("governor", check_choice("governor", args["governor"], GOVERNORS))
        latency = args["latency_req_ns"]
        set_("latency_req_ns", None if latency is None else check_int("latency_req_ns", latency, minimum=0))
        set_("overhead", _overhead(args["overhead"]))
        set_("callback_ns", check_callback_ns(args["callback_ns"]))
        mem = args["max_memory_bytes"]
        set_("max_memory_bytes", None if mem is None else check_int("max_memory_bytes", mem, minimum=1 << 20,
                                                                     maximum=(1 << 63) - 1))
        set_("latency_model", _costs("latency_model", args["latency_model"], LATENCY_DEFAULTS, integer=True))
        set_("resume_latency_ns", _per_cpu_ns("resume_latency_ns", args["resume_latency_ns"], self.topology.cpus))
        rh = args["record_hrtimers"]
        if rh is None:  # with the timers' rows, or without
            rh = "no_tick" if args["record_timers"] else "none"
        set_("record_hrtimers", check_choice("record_hrtimers", rh, RECORD_HRTIMERS))
        for flag in ("record_events", "record_timers", "check_invariants", "record_idle", "rcu_needs_cpu",
                     "timer_migration"):
            if not isinstance(args[flag], bool):
                raise TypeError(f"{flag} must be True or False, got {args[flag]!r}")
            set_(flag, args[flag])
        # Resolve the workload's CPU sets now, so that a bad one fails here.
        names = self.workload.to_core(self.topology, self.irq_ns)["function_names"] + self._engine_hrtimers()
        # The engine's runaway guard (guard.hpp) stops a run whose pending timers
        # pass its limit; a workload bound to pass it is refused here, before anything runs.
        pending = self.workload.pending_bound(self.topology, self.duration_ns)
        limit = _core.guard_pending_limit(self.topology.cpus)
        if pending > limit:
            raise ValueError(f"workload: its timers would reach about {pending:,.0f} pending (arming rate x "
                             f"mean lifetime), over the engine's limit of {limit:,} for {self.topology.cpus} CPUs: lengthen "
                             "its tasks' run_ns + sleep_ns, shorten timeout_ns, raise cancel_p or arm fewer timeouts")
        # The engine's hrtimers of other releases may be named too (a replay's config
        # replaced with another kernel keeps its durations).
        unknown = set(self.callback_ns) - set(names) - set(HRTIMER_DEFAULT_NS) if isinstance(self.callback_ns, dict) \
            else ()
        if unknown:
            raise ValueError(f"callback_ns names callback(s) {sorted(unknown)} that the workload does not arm; its "
                             f"callbacks are {sorted(set(names))}")
        wl = args["wake_latency"]
        if isinstance(wl, str):
            wl = wake_preset(wl)
        elif not isinstance(wl, WakeLatency):
            raise TypeError(f"wake_latency must be a preset name or a timerlab.WakeLatency, got {type(wl).__name__}")
        wl.check_cpus(self.topology.cpus)
        set_("wake_latency", wl)

    def __setattr__(self, name, value):
        raise AttributeError("Config is immutable; use cfg.replace(...)")

    def __reduce__(self):
        # Rebuilt (and validated again) from its options, e.g. in a worker process.
        return _rebuild, (self._args,)

    def replace(self, **changes) -> "Config":
        """A new Config with some options changed (validated again)."""
        args = dict(self._args)
        if {"cpus", "nodes", "layout"} & set(changes) and "node_of_cpu" not in changes:
            args["node_of_cpu"] = None  # an explicit layout does not follow a new CPU count
        if "topology" not in changes and set(changes) & {"cpus", "nodes", "layout", "node_of_cpu", "smt", "llc_size"}:
            args["topology"] = None
        args.update(changes)
        return Config(**args)

    def _engine_hrtimers(self) -> list:
        """The callbacks of the hrtimers the engine itself arms: the tick, the fair server."""
        return [tick_function(self.kernel), "dl_task_timer"]

    def to_core(self) -> dict:
        """The dict _core.simulate takes."""
        t = self.topology
        workload = self.workload.to_core(self.topology, self.irq_ns)
        names = workload["function_names"]  # the engine's own hrtimers' callbacks join them
        names.extend(f for f in self._engine_hrtimers() if f not in names)
        tick_fn, fair_fn = (names.index(f) for f in self._engine_hrtimers())
        qos = [x for x in (self.latency_req_ns, self.workload.pm_qos_ns()) if x is not None]
        return {
            "cpus": t.cpus, "nodes": t.nodes, "node_of_cpu": list(t.node_of_cpu), "smt": t.smt,
            "llc_size": t.llc_size, "bringup_order": list(t.bringup_order), "hz": self.hz,
            "pull_model": self.placement == "pull", "lazy_wakeup": self.remote_wakeup == "lazy",
            "deferrable": self.deferrable,
            "first_timer_by_bucket": kernel_has(self.kernel, "first_timer_by_bucket"),
            "jiffies_stall_check": kernel_has(self.kernel, "jiffies_stall_check"),
            "numa_tree_fix": kernel_has(self.kernel, "numa_tree_fix"),
            "remote_expires_self": kernel_has(self.kernel, "remote_expires_self"),
            "rcu_needs_cpu": self.rcu_needs_cpu,
            # A replay's trace has the kernel's own fair-server wakeups (idle_exit items).
            "fair_server_defer_ns": FAIR_SERVER_DEFER_NS if kernel_has(self.kernel, "fair_server")
            and not any(c.kind == "script" for c in self.workload.components) else 0,
            "start_ns": self.start_ns, "duration_ns": self.duration_ns, "seed": self.seed,
            "ipi_latency_ns": self.ipi_latency_ns, "wake_latency": self.wake_latency.to_core(),
            "record_events": self.record_events,
            "record_timers": self.record_timers, "check_invariants": self.check_invariants,
            "record_idle": self.record_idle, "idle": self.idle_states.to_core(), "governor": self.governor,
            "latency_req_ns": min(qos) if qos else (1 << 63) - 1,
            "resume_latency_ns": list(self.resume_latency_ns or ()),
            "timer_migration": self.timer_migration,
            "hrtimer_keep_local": kernel_has(self.kernel, "hrtimer_keep_local"),
            "tick_function": tick_fn, "fair_server_function": fair_fn,
            "latency": dict(self.latency_model),
            "record_hrtimers": {"none": 0, "no_tick": 1, "all": 2}[self.record_hrtimers],
            "teo_tick_intercepts_fixed": kernel_has(self.kernel, "teo_tick_intercepts_fix"),
            "overhead": dict(self.overhead),
            "workload": workload,
            "callback_ns": per_function(self.callback_ns, workload["function_names"]),
            "max_memory_bytes": 0 if self.max_memory_bytes is None else self.max_memory_bytes,
        }

    def as_dict(self) -> dict:
        """The options as given (defaults filled in), for tables and sweeps."""
        d = {k: v for k, v in self._args.items() if k != "topology"}
        d.update(cpus=self.topology.cpus, nodes=self.topology.nodes, placement=self.placement)
        return d

    def __eq__(self, other):
        return isinstance(other, Config) and self.to_core() == other.to_core()

    def __hash__(self):
        return hash(repr(self))

    def __repr__(self) -> str:
        shown = [f"topology={self.topology!r}", f"hz={self.hz}", f"kernel={self.kernel!r}",
                 f"placement={self.placement!r}", f"remote_wakeup={self.remote_wakeup!r}",
                 f"deferrable={self.deferrable!r}",
                 f"idle_states={self.idle_states.name!r}", f"governor={self.governor!r}",
                 f"duration_ns={self.duration_ns:_}", f"seed={self.seed}", f"workload={self.workload!r}"]
        for k in ("start_ns", "ipi_latency_ns", "irq_ns", "record_events", "record_timers", "check_invariants",
                  "record_idle", "latency_req_ns", "rcu_needs_cpu", "callback_ns", "timer_migration",
                  "resume_latency_ns", "record_hrtimers", "latency_model", "max_memory_bytes"):
            if self._args[k] != _DEFAULTS[k]:
                shown.append(f"{k}={getattr(self, k)!r}")
        if self.wake_latency.name != _DEFAULTS["wake_latency"]:
            shown.append(f"wake_latency={self.wake_latency.name!r}")
        return "Config(\n    " + ",\n    ".join(shown) + ",\n)"


def _rebuild(args: dict) -> Config:
    return Config(**args)


def _topology(args) -> Topology:
    if args["topology"] is not None:
        if not isinstance(args["topology"], Topology):
            raise TypeError("topology must be a timerlab.Topology")
        return args["topology"]
    cpus = args["cpus"] if args["cpus"] is not None or args["node_of_cpu"] is not None else 8
    return Topology(cpus=cpus, nodes=args["nodes"], node_of_cpu=args["node_of_cpu"], layout=args["layout"],
                    smt=args["smt"], llc_size=args["llc_size"], bringup_order=args["bringup_order"])


def _idle_states(value, busy_power_mw) -> IdleStates:
    if isinstance(value, str):
        table = idle_preset(value)
    elif isinstance(value, IdleStates):
        table = value
    elif isinstance(value, (list, tuple)) or hasattr(value, "columns"):
        if busy_power_mw is None:
            raise ValueError("busy_power_mw: give the busy power (mW) of a core with a custom idle_states table")
        return idle_table(value, busy_power_mw=busy_power_mw)
    else:
        raise TypeError(f"idle_states must be a preset name, a list of dicts or a DataFrame, got {value!r}")
    if busy_power_mw is not None:
        table = idle_table(table.states, busy_power_mw=busy_power_mw, name=table.name)
    return table


def _costs(option, value, defaults, integer=False) -> dict:
    """A dict of costs in ns over its defaults (overhead, latency_model)."""
    if value is None:
        return dict(defaults)
    if not isinstance(value, dict):
        raise TypeError(f"{option} must be a dict of costs in ns, got {value!r}")
    unknown = sorted(set(value) - set(defaults))
    if unknown:
        raise ValueError(f"{option}: unknown cost(s) {unknown}; known: {sorted(defaults)}")
    out = dict(defaults)
    for k, v in value.items():
        kind = int if integer else (int, float)
        if isinstance(v, bool) or not isinstance(v, kind) or not 0 <= v <= 10**9:
            raise ValueError(f"{option}.{k} must be a{'n integer' if integer else ''} number of ns in [0, 1e9], "
                             f"got {v!r}")
        out[k] = v if integer else float(v)
    return out


def _overhead(value) -> dict:
    return _costs("overhead", value, OVERHEAD_DEFAULTS)


def _per_cpu_ns(option, value, cpus):
    """None, or one limit (ns) per CPU from a number, a list or {cpu: ns}."""
    if value is None:
        return None
    if isinstance(value, dict):
        bad = [c for c in value if isinstance(c, bool) or not isinstance(c, int) or not 0 <= c < cpus]
        if bad:
            raise ValueError(f"{option}: CPUs {bad} do not exist (cpus={cpus})")
        limit = (1 << 63) - 1
        return tuple(check_int(f"{option}[{c}]", value.get(c, limit), minimum=0) for c in range(cpus))
    if isinstance(value, (list, tuple)):
        if len(value) != cpus:
            raise ValueError(f"{option} has {len(value)} entries for {cpus} CPUs")
        return tuple(check_int(f"{option}[{c}]", v, minimum=0) for c, v in enumerate(value))
    return (check_int(option, value, minimum=0),) * cpus
