"""validate(trace): replay a real trace with the kernel's own policy and say how
closely the simulation agrees with what the kernel recorded (a
:class:`~timerlab.fidelity.FidelityReport`). The replay itself is
:mod:`timerlab.replay`."""
from __future__ import annotations

import contextlib
import os

import numpy as np
import pandas as pd

from ..replay import OP_ARM, REQUIRED_EVENTS, VALIDATE_EVENTS, Script, require_events, script_of, to_config
from ..replay.arms import PLACE_NAMES
from ..replay.columns import narrowed
from ..replay.phantoms import PHANTOM_FUNCTION
from ..replay.script import jiffies_model, jiffies_note, rcu_keeps_tick, rcu_note
from ..trace.events import CPU_IDLE_EXIT, column
from ..trace.features import node_of_cpu
from ..trace.rows import event_in, event_rows, select_events
from .hrtimers import hrtimer_expiries, wakeup_counts
from .items import Compared, build
from .races import race_columns
from .report import FidelityReport
from .wheel import base_of_flags, wheel_replay
from .windows import TextFile, check_window_events, large, opened, parallel, windows_of
from .workers import Pool


# The fields of the simulation's event log validate reads (_idle_counts, _handover_rows, races.stopped_programs).
SIM_COLUMNS = ("state", "success", "lvl", "group", "migrator", "function", "expires_ns", "prev_pid", "is_idle")

# What validate does, in order: the steps a progress callback is told of.
VALIDATE_STAGES = ("replay and simulation", "wheel", "expiring CPU", "idle, hrtimers and hierarchy")


def _expiring_cpu(trace, script: Script, res) -> tuple:
    """Global timers' expiring CPU, trace vs simulation. The i-th timer_start
    of a timer in the trace is the i-th arm of it in the simulation (every
    scripted arm enqueues once), whatever its expiry became there (a task's
    run moved by its wakeup keeps its timeouts, not their jiffies)."""
    ev = trace.events
    tev = select_events(ev, ("timer_start", "timer_expire_entry"), ("cpu", "timer", "expires_jiffies", "flags",
                                                                    "function", "base_cpu", "line", "ts_ns"))
    cpu, timer = column(tev, "cpu"), column(tev, "timer")
    expires, flags, function = column(tev, "expires_jiffies"), column(tev, "flags", ""), column(tev, "function", "")
    base_cpu, line, ts = column(tev, "base_cpu"), column(tev, "line"), column(tev, "ts_ns")
    # An expiry belongs to its timer's last start before it, if no expiry
    # came in between: in the rows sorted by timer (stably), the row just
    # before it, if that is a start of the same timer. A start's arm is the
    # number of starts of its timer before it.
    start = event_in(tev, ("timer_start",))
    order = np.argsort(tev["timer"].to_numpy(np.uint64, na_value=0), kind="stable")
    t_sorted, s_sorted = tev["timer"].to_numpy(np.uint64, na_value=0)[order], start[order]
    same = np.r_[False, t_sorted[1:] == t_sorted[:-1]]
    matched = ~s_sorted & np.r_[False, s_sorted[:-1]] & same
    unknown = int((~s_sorted).sum() - matched.sum())
    starts = np.cumsum(s_sorted)
    first_of_timer = np.maximum.accumulate(np.where(same, 0, np.arange(len(order))))
    arm = starts - 1 - np.where(first_of_timer > 0, starts[first_of_timer - 1], 0)
    at = np.flatnonzero(matched)
    pairs = sorted(zip(order[at].tolist(), order[at - 1].tolist(), arm[at - 1].tolist()))  # in the trace's order
    is_global = {f: base_of_flags(f) == "GLOBAL" for f in {flags[j] for _i, j, _a in pairs}}
    rows = []
    for i, j, a in pairs:
        if is_global[flags[j]]:
            rows.append((line[i], ts[i], timer[i], str(function[i]), int(expires[j]), base_cpu[j], cpu[i], a))
    trace_x = pd.DataFrame(rows, columns=["line", "ts_ns", "timer", "function", "expires_jiffies", "base_cpu",
                                          "cpu_trace", "arm"])
    t = res.timers
    t = t[t["timer"] < len(script.pointers)]
    sim = pd.DataFrame({"timer": script.pointers[t["timer"].to_numpy(np.int64)],
                        "arm": t.groupby("timer").cumcount().to_numpy(),
                        "expired": (t["outcome"] == "expired").to_numpy(),
                        "cpu_sim": t["cpu_expired"].to_numpy(dtype=np.int64, na_value=-1),
                        "expired_ns_sim": t["expired_ns"].to_numpy(dtype=np.int64, na_value=-1)})
    sim = sim[sim["expired"]].drop(columns="expired")
    trace_x["expires_jiffies"] = trace_x["expires_jiffies"].astype(np.uint64).astype(np.int64)
    trace_x["timer"] = trace_x["timer"].astype(np.uint64)
    m = trace_x.merge(sim, on=["timer", "arm"], how="left").drop(columns="arm")
    m["cpu_sim"] = m["cpu_sim"].astype("Int64")
    m["agrees"] = (m["cpu_sim"] == m["cpu_trace"]).fillna(False).astype(bool)
    m["why"] = np.where(m["cpu_sim"].isna(), "not expired in the simulation",
                        np.where(m["agrees"], "", "expired on another CPU"))
    return m, unknown


def validate(trace, *, window_events=None, workers=None, progress=None, **overrides) -> FidelityReport:
    """Replay ``trace`` with the kernel's own policy (:func:`to_config`, options
    overridable) and compare the simulation with what the kernel recorded:

    * ``wheel`` — bucket index and expiry of every timer_start
      (:func:`timerlab.fidelity.wheel_replay`);
    * ``expiring_cpu`` — the CPU that ran each global timer's expiry, matched
      by timer pointer and arm ordinal (the n-th timer_start of a pointer in
      the trace is the n-th arm of its key in the simulation; timers armed
      before the trace are left out); with the hierarchy (6.9+) also split
      (races.py): ``expiring_cpu_single`` the exact CPU where the kernel had a
      single eligible CPU, ``expiring_cpu_race`` whether the simulated CPU was
      one of the kernel's duty holders in a race, ``duty_overlap`` the mean
      Jaccard overlap of the holder sets;
    * ``expiry_time`` — the share of those global timers expired within
      250 µs of the kernel's time (the median error in its note);
    * ``deferrable_expiries`` — how many deferrable timers armed in the trace
      expired, trace vs simulation;
    * ``idle_entries`` and ``tick_stops`` — per CPU, the agreement being
      1 - sum |sim - trace| / sum trace over CPUs that log cpu_idle;
    * ``tmigr`` — migrator hand-overs of each level-0 group of the hierarchy
      (changes of the migrator in tmigr_group_set_cpu_active/inactive), the
      agreement being 1 - sum |sim - trace| / sum trace over groups;
    * ``hrtimer`` — each replayed hrtimer's expiry (not the tick's) on the
      kernel's CPU and within 250 µs of its handler; ``hrtimer_wakeups`` —
      the idle periods hrtimers ended, per CPU and callback
      (:mod:`timerlab.fidelity.hrtimers`).

    ``tick`` (default ``"kept"``): the kernel keeps the tick of an idle CPU
    for reasons a trace does not record — RCU callbacks waiting for a grace
    period (rcu_needs_cpu), irq_work, the architecture — so by default the
    replay reads them off the trace as "the kernel kept the tick at this
    idle entry" (where the engine's tick model, below, does not already
    keep it); every tick stop, every idle state, timer, wakeup and the
    hierarchy stay the simulation's — including the engine's tick model
    (``Config(rcu_needs_cpu=True)``: the tick kept from a task switching out
    to the CPU's next tick; "auto", the default, turns it off for a trace
    whose kernel mostly stopped the tick there, as cyclictest's), which can
    also keep the tick where the kernel stopped it. ``tick="simulated"``
    decides every tick itself, with that model; ``tick="trace"`` imposes
    every tick decision (then ``tick_stops`` is no measure).

    ``report.per_cpu`` counts leave out each CPU's idle period in progress at
    the start (its entry and tick stop precede the trace); the result's own
    ``per_cpu`` counts it. The run always keeps its event log.

    ``trace``: a :class:`~timerlab.Trace` or the path of a trace file (text,
    trace.dat or a store; a plain text of more than ``window_events`` events
    is read window by window; a compressed one of more than 512 MB of text,
    or a trace.dat of more than ``window_events`` events, through a
    temporary store: windows.py).

    ``window_events`` (default None: 1 000 000): a trace of more events is
    replayed in windows of time of about that many events, one at a time, so
    that a trace larger than memory is validated in bounded memory; 0
    replays it whole however large. Where the ring buffer lost events
    (``Trace.losses``), a window also starts, unless ``window_events`` is 0:
    the replay's state after a loss would part from the kernel's until the
    end. Each window starts the replay afresh
    (timers armed before it are left out, as before a trace's start), with
    the jiffies and tick models (``jiffies``, ``rcu_needs_cpu``, when left to
    "auto") that the whole trace's evidence chooses; the
    items are those of every window's comparisons together, and
    ``report.windows`` has each window's span and agreements. A report of
    several windows keeps no simulation (``report.result`` is None: one per
    window would not fit either); its ``config`` is the first window's.
    ``workers`` (default None: 2, or 1 on a single CPU): the processes that
    replay windows at once, each holding one window (about 1 GB per
    million events); windows of a trace in memory are replayed here, one
    after the other. The report does not depend on it.

    ``progress``: a callable told the name of each of VALIDATE_STAGES as it
    begins (the CLI's progress bar; with windows, each window's stages,
    named "stage (window k of n)"); None (default): nothing is told.

    Raises ValueError listing the missing events if the trace lacks any of
    the replay's REQUIRED_EVENTS; cpu_idle and tick_stop, if the trace shows
    none, are said in the notes and their items are not compared.
    """
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a callable taking a stage name, not {progress!r}")
    check_window_events(window_events)
    workers = _check_workers(workers)
    overrides.setdefault("tick", "kept")
    overrides.setdefault("hrtimer_wakeups", "trace")  # the kernel's own policy: the trace's timing of tasks
    with opened(trace, window_events) as trace, contextlib.ExitStack() as stack:
        if not isinstance(trace, TextFile):
            trace = narrowed(trace)  # a store loads only the columns read here
            require_events(trace, REQUIRED_EVENTS, "validate")
        # Worker processes start before the windows are cut: they import while that is done.
        pool = None
        if workers > 1 and large(trace, window_events):
            pool = stack.enter_context(Pool(workers, preload=[__name__]))
        windows = windows_of(trace, window_events)
        told = _teller(progress, len(windows))
        first = narrowed(windows[0].load())
        model_notes = []
        if len(windows) == 1:
            parts = [_compare(first, overrides, told(0))]
        else:
            machine = _machine_of(first, overrides)
            if pool is not None and parallel(windows):
                first = None  # each window is loaded where it is replayed

            def compare(only, fixed):
                return _compare_windows(pool, windows, only, {**overrides, **fixed}, {**machine, **fixed}, told, first)
            parts = compare(range(len(windows)), {})
            model_notes = _whole_trace_models(parts, overrides, compare)
    items, notes, per_cpu, x = build(parts, overrides)
    # A text read window by window counts its losses window by window; a trace or a store knows its own.
    lost, points = ((trace.lost_events, trace.loss_markers) if hasattr(trace, "lost_events")
                    else (sum(c.losses[0] for c in parts), sum(c.losses[1] for c in parts)))
    after_loss = sum(bool(getattr(w, "after_loss", False)) for w in windows)
    if points:
        then = ("; so the replay starts afresh after them (the windows below)" if after_loss else
                ", and its state after a loss may part from the kernel's, so agreement there suffers")
        notes.append(f"the ring buffer lost events at {points:,} point(s) of the trace ({lost:,} counted: the "
                     "[LOST n EVENTS] / [n EVENTS DROPPED] markers, [EVENTS DROPPED] does not say how many): the "
                     f"replay lacks what they held — arms, expiries, idle periods —{then}")
    windows_frame = None
    if len(parts) > 1:
        notes += model_notes
        cut = f", {after_loss} of them starting where the ring buffer lost events" if after_loss else ""
        notes.append(f"replayed in {len(parts)} windows of about {check_window_events(window_events):,} events"
                     f"{cut} (report.windows): each window's replay starts afresh, leaving out the timers armed "
                     "before it")
        windows_frame = _windows_frame(parts, overrides)
    return FidelityReport(trace.path, parts[0].cfg, items, per_cpu, x, parts[0].result, notes, windows_frame)


def _check_workers(workers) -> int:
    if workers is None:
        return min(2, os.cpu_count() or 1)
    if not isinstance(workers, (int, np.integer)) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f"workers={workers!r}: the processes replaying windows at once (a positive integer)")
    return int(workers)


def _teller(progress, n: int):
    """step(k) -> the progress callable of window k's stages."""
    def told(k):
        def step(stage):
            if progress is not None:
                progress(stage if n == 1 else f"{stage} (window {k + 1} of {n})")
        return step
    return told


def _machine_of(first, overrides) -> dict:
    """The options of the windows after the first: the caller's, and the
    first window's machine (the trace's set-up events, which show its NUMA
    nodes, lead it; HZ and the release are the whole trace's). ``kernel``
    is the release the windows are read with, not an option."""
    machine = dict(overrides)
    machine.setdefault("hz", first.features.hz or 250)
    nr_cpus = max(int(first.nr_cpus), int(first.events["cpu"].max()) + 1)
    nodes = node_of_cpu(first.events, nr_cpus)
    if nodes is not None and not {"cpus", "nodes", "layout", "topology", "node_of_cpu"} & set(overrides):
        machine["node_of_cpu"] = nodes
    machine["kernel"] = first.kernel
    return machine


def _window(trace, options, step, keep_config=False) -> Compared:
    """One window's comparisons, without its simulation (or its config, the
    script's columns, but for the first window's: the report's)."""
    options = {k: v for k, v in options.items() if k != "kernel"}
    part = _compare(trace, options, step)
    part.result = None
    if not keep_config:
        part.cfg = None
    return part


def _load_and_compare(window, options, keep_config) -> Compared:
    """A worker process's task: load a window and compare it (_window)."""
    return _window(narrowed(window.load(options.get("kernel"))), options, lambda _stage: None, keep_config)


def _compare_windows(pool, windows, only, overrides, machine, told, first=None) -> list:
    """The Compared of windows ``only`` (positions in ``windows``), in the
    pool's processes (workers.py) when the windows load their own rows
    there, else here (window 0 is ``first`` if it is still loaded). The first
    window gets ``overrides`` and keeps its config, the others ``machine``."""
    only = list(only)
    if pool is not None and parallel(windows):
        # Each process loads its window's rows: a window never crosses between processes, only its comparisons.
        def done(i):
            for stage in VALIDATE_STAGES:
                told(only[i])(stage)
        return pool.run([(_load_and_compare, (windows[k], overrides if k == 0 else machine, k == 0)) for k in only],
                        done)
    return [_window(first if k == 0 and first is not None else narrowed(windows[k].load(machine["kernel"])),
                    overrides if k == 0 else machine, told(k), keep_config=k == 0) for k in only]


def _whole_trace_models(parts, overrides, compare) -> list:
    """Every window replayed with the models a replay of the whole trace
    would choose from it (those the caller left to "auto"): the jiffies
    model that gives the kernel's recorded jiffies most often over all
    windows, and the tick model (rcu_needs_cpu) of the tick decisions after
    tasks in all windows. A window alone may choose otherwise where the
    evidence is close or thin, and its jiffies or ticks would then part
    from its neighbours'. Those windows are compared again (``compare(
    positions, options)``, in place in ``parts``); the windows' own notes of
    their choice give way to the returned notes."""
    fixed, notes = {}, []
    if overrides.get("jiffies", "auto") == "auto":
        n = max(sum(c.jiffies[3] for c in parts), 1)
        fit = {m: sum(round(c.jiffies[k] * c.jiffies[3]) for c in parts) / n for k, m in ((1, "kernel"), (2, "grid"))}
        fixed["jiffies"] = jiffies_model(fit)
        notes.append(jiffies_note(fixed["jiffies"], fit) + ", over all windows")
    if overrides.get("rcu_needs_cpu", "auto") == "auto":
        kept, stopped = (sum(c.rcu[k] for c in parts) for k in (1, 2))
        fixed["rcu_needs_cpu"] = rcu_keeps_tick(kept, stopped)
        if not fixed["rcu_needs_cpu"]:
            notes.append(rcu_note(kept, stopped) + ", over all windows")
    chose = {"jiffies": lambda c: c.jiffies[0], "rcu_needs_cpu": lambda c: c.rcu[0]}
    redo = [k for k, c in enumerate(parts) if any(chose[o](c) != v for o, v in fixed.items())]
    for c in parts:
        c.notes = [note for note in c.notes if note not in (jiffies_note(c.jiffies[0], dict(
            kernel=c.jiffies[1], grid=c.jiffies[2])), rcu_note(*c.rcu[1:]))]
    if redo:
        for k, c in zip(redo, compare(redo, fixed)):
            parts[k] = c
        notes.append(f"window(s) {[k + 1 for k in redo]} alone chose otherwise, and were replayed again with "
                     f"the whole trace's {', '.join(f'{o}={v!r}' for o, v in fixed.items())}")
    return notes


def _windows_frame(parts, overrides) -> pd.DataFrame:
    """One row per window: its span, events, and each item's agreement on that window alone."""
    rows = []
    for k, c in enumerate(parts):
        items, _notes, _per_cpu, _x = build([c], overrides, parts[0].cfg)
        rows.append({"window": k + 1, "first_ts_ns": c.span_ns[0], "last_ts_ns": c.span_ns[1], "events": c.events,
                     **{i.name: i.agreement for i in items}})
    return pd.DataFrame(rows)


def _compare(trace, overrides, step) -> Compared:
    """Replay one window (or the whole trace) and keep what validate compares (items.Compared)."""
    from ..simulate import simulate

    step(VALIDATE_STAGES[0])
    cfg = to_config(trace, **{**overrides, "record_events": True})  # the comparisons read the event log
    script = script_of(cfg.workload)
    res = simulate(cfg)
    # The simulation's event log, only the fields compared below (every row): not its whole frame.
    sim_ev = res._events_columns(SIM_COLUMNS)

    step(VALIDATE_STAGES[1])
    wheel = wheel_replay(trace, hz=cfg.hz).placement

    step(VALIDATE_STAGES[2])
    placement = _placement_rows(script, res)
    ev = trace.events
    idle_cpus = sorted(np.unique(ev["cpu"].to_numpy()[event_rows(ev, ("cpu_idle",))]).tolist())
    hidden = [c for c in range(cfg.topology.cpus) if c not in idle_cpus]
    x, unknown = _expiring_cpu(trace, script, res)
    blind = np.zeros(len(x), dtype=bool)
    if hidden:
        # What the trace cannot show: the idle periods and ticks of a CPU that
        # logs no cpu_idle — the timer was its own, or the kernel ran it there.
        blind = (~x["agrees"] & (x["cpu_trace"].isin(hidden) | x["base_cpu"].isin(hidden))).to_numpy()
        x.loc[blind, "why"] += f" (CPU(s) {hidden}: idle periods and ticks not in the trace)"
    races = ""
    if cfg.placement == "pull" and len(x):
        races = "compared" if len(event_rows(ev, ("hrtimer_start",))) else "no hrtimer_start"
        if races == "compared":
            x = race_columns(x, trace, script, res, sim_events=sim_ev)
    x["error_ns"] = (x["expired_ns_sim"] - (x["ts_ns"] - script.clock_offset_ns)).abs()

    step(VALIDATE_STAGES[3])
    # An event a trace shows no instance of is a fact to report: not recorded,
    # or it never happened (cyclictest's PM QoS 0 keeps every tick running).
    absent = [e for e in VALIDATE_EVENTS if e not in REQUIRED_EVENTS and not len(event_rows(ev, (e,)))]
    part = Compared(
        cfg=cfg, notes=list(script.notes), wheel=wheel, placement=placement, expiries=x, blind=blind,
        hidden=hidden, unknown=unknown, races=races, deferrable=_deferrable(trace, script, res),
        hrtimers=hrtimer_expiries(trace, script, res), wakeups=wakeup_counts(trace, res, idle_cpus), absent=absent,
        per_cpu=_per_cpu(ev, sim_ev, cfg, idle_cpus), result=res, events=len(ev),
        jiffies=("kernel" if script.jiffies_duty else "grid", *script.jiffies_fit),
        rcu=(script.rcu_needs_cpu, *script.after_tasks),
        losses=(int(getattr(trace, "lost_events", 0)), int(getattr(trace, "loss_markers", 0))),
        handovers=_handover_rows(trace, res, cfg.start_ns + script.clock_offset_ns, sim_ev))
    if len(ev):
        part.span_ns = (int(ev["ts_ns"].min()), int(ev["ts_ns"].max()))
    return part


def _per_cpu(ev, sim_ev, cfg, idle_cpus) -> pd.DataFrame:
    """Idle entries and tick stops per CPU, trace vs simulation."""
    entries, stops = _idle_counts(ev)
    # The simulation's idle period in progress at the start (its entry and
    # tick stop happened before the trace, which cannot show them) is not counted.
    sim_entries, sim_stops = _idle_counts(sim_ev[sim_ev["ts_ns"] > cfg.start_ns])
    n = cfg.topology.cpus
    return pd.DataFrame({
        "cpu": np.arange(n),
        "idle_entries_trace": [int(entries.get(c, 0)) for c in range(n)],
        "idle_entries_sim": [int(sim_entries.get(c, 0)) for c in range(n)],
        "tick_stops_trace": [int(stops.get(c, 0)) for c in range(n)],
        "tick_stops_sim": [int(sim_stops.get(c, 0)) for c in range(n)],
        "visible": [c in idle_cpus for c in range(n)],
    })


def _deferrable(trace, script: Script, res) -> tuple:
    """Expiries of deferrable timers armed in the trace: (how many the kernel
    ran, how many the simulation did). A deferrable timer runs only when its
    CPU is awake for something else: the idle model decides."""
    ev = trace.events
    sel = select_events(ev, ("timer_start", "timer_expire_entry"), ("timer", "flags"))
    deferrable, n_trace = {}, 0
    for e, t, f in zip(column(sel, "event"), column(sel, "timer"), column(sel, "flags", "")):
        if e == "timer_start":
            deferrable[t] = "D" in str(f or "").split("|")
        elif deferrable.pop(t, False):
            n_trace += 1
    t = res.timers
    t = t[(t["timer"] < len(script.pointers)) & (t["outcome"] == "expired")]
    n_sim = int(t["flags"].astype(str).str.split("|").map(lambda f: "D" in f).sum())
    return n_trace, n_sim


def _placement_rows(script: Script, res) -> pd.DataFrame:
    """The base each timer_start went to (its ``cpu=``), trace vs simulation:
    the i-th arm of a timer in the script is the i-th timer_start of that
    timer in the run (every scripted arm enqueues)."""
    it = script.items
    arms = it[it["op"] == OP_ARM]
    # A phantom (a timer armed before the trace, replay/phantoms.py) has no timer_start to compare with.
    arms = arms[arms["function"] != script.function_names.index(PHANTOM_FUNCTION)] \
        if PHANTOM_FUNCTION in script.function_names else arms
    tr = pd.DataFrame({"line": arms["line"].to_numpy(), "cpu": arms["cpu"].to_numpy(np.int64),
                       "timer": arms["key"].to_numpy(np.int64), "place": arms["place"].to_numpy(np.int64),
                       "function": [script.function_names[f] for f in arms["function"].tolist()],
                       "base_cpu_trace": arms["target_cpu"].to_numpy(np.int64)})
    t = res.timers
    sim = pd.DataFrame({"timer": t["timer"].to_numpy(np.int64), "base_cpu_sim": t["base_cpu"].to_numpy(np.int64)})
    sim = sim[sim["timer"] < len(script.pointers)]
    for df in (tr, sim):
        df["n"] = df.groupby("timer").cumcount()
    m = tr.merge(sim, on=["timer", "n"], how="left").drop(columns="n")
    m["base_cpu_sim"] = m["base_cpu_sim"].astype("Int64")
    m["place"] = pd.Categorical.from_codes(m["place"], categories=list(PLACE_NAMES))
    return m


def _idle_counts(ev) -> tuple:
    """Idle entries and successful tick stops per CPU of an event log (a
    trace's or the simulation's: same event names and fields)."""
    ci = select_events(ev, ("cpu_idle",), ("cpu", "state"))
    ts = select_events(ev, ("tick_stop",), ("cpu", "success"))
    ts = ts[ts["success"].fillna(1) == 1] if "success" in ts else ts
    return ci[ci["state"] != CPU_IDLE_EXIT].groupby("cpu").size(), ts.groupby("cpu").size()


def _handover_rows(trace, res, start_ts, sim_events) -> tuple:
    """Migrator hand-overs per level-0 group of the hierarchy: how often the
    group's migrator changed (tmigr_group_set_cpu_active/inactive), trace vs
    simulation, as (rows of (cpus, trace, sim), CPUs left out, why not
    compared: "" if compared). Groups are matched by the CPUs whose events
    they carry."""
    if sim_events is None:
        return [], set(), "not compared: the run kept no events"
    if res.config.placement != "pull":
        return [], set(), "not compared: no hierarchy before 6.9 (push model)"

    def count(ev, t0):
        ev = select_events(ev, ("tmigr_group_set_cpu_active", "tmigr_group_set_cpu_inactive"),
                           ("lvl", "ts_ns", "group", "cpu", "migrator"))
        if not len(ev):
            return {}
        ev = ev[(ev["lvl"] == 0) & (ev["ts_ns"] > t0)]
        # Per group (its rows in order, by a stable sort): the CPUs it showed and how often its migrator changed.
        groups, code = np.unique(ev["group"].to_numpy(np.uint64, na_value=0), return_inverse=True)
        cpu = ev["cpu"].to_numpy(np.int64)
        migrator = ev["migrator"].to_numpy(np.int64, na_value=np.iinfo(np.int64).min)
        order = np.argsort(code, kind="stable")
        g, m = code[order], migrator[order]
        changes = np.bincount(g[1:][(g[1:] == g[:-1]) & (m[1:] != m[:-1])], minlength=len(groups))
        width = int(cpu.max()) + 1 if len(cpu) else 1
        pairs = np.unique(code * width + cpu)  # (group, cpu), sorted
        cpus = {}
        for k, c in zip((pairs // width).tolist(), (pairs % width).tolist()):
            cpus.setdefault(k, []).append(c)
        return {tuple(v): int(changes[k]) for k, v in cpus.items()}

    tr_counts = count(trace.events, start_ts)
    if not tr_counts:
        return [], set(), "not compared: the trace has no level-0 group events"
    sim_counts = count(sim_events, res.config.start_ns)
    rows, hidden = [], set()
    for cpus, n in sorted(tr_counts.items()):
        # A simulated group holds every CPU its trace group showed (the trace
        # shows only CPUs that went idle or active there).
        m = [k for k in sim_counts if set(cpus) <= set(k)]
        if len(m) == 1 and len(m[0]) > len(cpus):
            hidden.update(set(m[0]) - set(cpus))  # their hand-overs are invisible in the trace
            continue
        rows.append((list(cpus), n, sim_counts[m[0]] if len(m) == 1 else pd.NA))
    return rows, hidden, ""
