"""validate(trace): replay a real trace with the kernel's own policy and say how
closely the simulation agrees with what the kernel recorded (a
:class:`~timerlab.fidelity.FidelityReport`). The replay itself is
:mod:`timerlab.replay`."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd

from ..replay import OP_ARM, REQUIRED_EVENTS, VALIDATE_EVENTS, Script, require_events, script_of, to_config
from ..replay.arms import PLACE_NAMES
from ..replay.columns import narrowed
from ..replay.phantoms import PHANTOM_FUNCTION
from ..trace.events import CPU_IDLE_EXIT, column
from ..trace.features import record_hint
from ..trace.rows import event_rows, select_events
from .hrtimers import hrtimer_item, wakeups_item
from .races import race_columns
from .report import FidelityItem, FidelityReport
from .wheel import base_of_flags, wheel_replay


# The fields of the simulation's event log validate reads (_idle_counts, _handovers, races.stopped_programs).
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
    event, cpu, timer = column(tev, "event"), column(tev, "cpu"), column(tev, "timer")
    expires, flags, function = column(tev, "expires_jiffies"), column(tev, "flags", ""), column(tev, "function", "")
    base_cpu, line, ts = column(tev, "base_cpu"), column(tev, "line"), column(tev, "ts_ns")
    last, arms = {}, {}
    rows = []
    unknown = 0
    for i, e in enumerate(event):
        if e == "timer_start":
            arms[timer[i]] = arms.get(timer[i], -1) + 1
            last[timer[i]] = (expires[i], flags[i], base_cpu[i], arms[timer[i]])
        elif e == "timer_expire_entry":
            s = last.pop(timer[i], None)
            if s is None:
                unknown += 1
                continue
            if base_of_flags(s[1]) == "GLOBAL":
                rows.append((line[i], ts[i], timer[i], str(function[i]), int(s[0]), s[2], cpu[i], s[3]))
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


def validate(trace, *, progress=None, **overrides) -> FidelityReport:
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
      agreement being 1 - sum |sim - trace| / sum trace over groups.

    ``tick`` (default ``"kept"``): the kernel keeps the tick of an idle CPU
    for reasons a trace does not record — RCU callbacks waiting for a grace
    period (rcu_needs_cpu), irq_work, the architecture — so by default the
    replay reads them off the trace as "the kernel kept the tick at this
    idle entry" (where the engine's tick model, below, does not already
    keep it); every tick stop, every idle state, timer, wakeup and the
    hierarchy stay the simulation's — including the engine's tick model
    (``Config(rcu_needs_cpu=True)``: the tick kept from a task switching out
    to the CPU's next tick), which can also keep the tick where the kernel
    stopped it. ``tick="simulated"`` decides every tick itself, with that
    model; ``tick="trace"`` imposes every tick decision (then ``tick_stops``
    is no measure).

    ``report.per_cpu`` counts leave out each CPU's idle period in progress at
    the start (its entry and tick stop precede the trace); the result's own
    ``per_cpu`` counts it. The run always keeps its event log.

    ``trace``: a :class:`~timerlab.Trace` or the path of a trace file.
    * ``hrtimer`` — each replayed hrtimer's expiry (not the tick's) on the
      kernel's CPU and within 250 µs of its handler; ``hrtimer_wakeups`` —
      the idle periods hrtimers ended, per CPU and callback
      (:mod:`timerlab.fidelity.hrtimers`).

    ``progress``: a callable told the name of each of VALIDATE_STAGES as it
    begins (the CLI's progress bar); None (default): nothing is told.

    Raises ValueError listing the missing events if the trace lacks any of
    the replay's REQUIRED_EVENTS; cpu_idle and tick_stop, if the trace shows
    none, are said in the notes and their items are not compared.
    """
    from ..simulate import simulate
    from ..trace import read_ftrace

    if isinstance(trace, (str, os.PathLike)):
        trace = read_ftrace(trace)
    trace = narrowed(trace)  # a store loads only the columns read here
    require_events(trace, REQUIRED_EVENTS, "validate")
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a callable taking a stage name, not {progress!r}")
    step = progress or (lambda _stage: None)
    step(VALIDATE_STAGES[0])
    overrides.setdefault("tick", "kept")
    overrides.setdefault("hrtimer_wakeups", "trace")  # the kernel's own policy: the trace's timing of tasks
    cfg = to_config(trace, **{**overrides, "record_events": True})  # the comparisons read the event log
    script = script_of(cfg.workload)
    res = simulate(cfg)
    # The simulation's event log, only the fields compared below (every row): not its whole frame.
    sim_ev = res._events_columns(SIM_COLUMNS)
    notes = list(script.notes)
    items = []

    step(VALIDATE_STAGES[1])
    wr = wheel_replay(trace, hz=cfg.hz)
    p = wr.placement
    items.append(FidelityItem("wheel", wr.placement_agreement, len(p), int(p["agrees"].sum()), p[~p["agrees"]],
                              "timer_start idx and bucket_expiry, replayed base clocks"))

    step(VALIDATE_STAGES[2])
    items.append(_placement(script, res))
    ev = trace.events
    idle_cpus = sorted(np.unique(ev["cpu"].to_numpy()[event_rows(ev, ("cpu_idle",))]).tolist())
    hidden = [c for c in range(cfg.topology.cpus) if c not in idle_cpus]
    x, unknown = _expiring_cpu(trace, script, res)
    if hidden:
        # What the trace cannot show: the idle periods and ticks of a CPU that
        # logs no cpu_idle — the timer was its own, or the kernel ran it there.
        blind = ~x["agrees"] & (x["cpu_trace"].isin(hidden) | x["base_cpu"].isin(hidden))
        x.loc[blind, "why"] += f" (CPU(s) {hidden}: idle periods and ticks not in the trace)"
        if blind.any():
            seen = x[~blind]
            # The others' expiring CPU may still hinge on them: the simulation ran them there.
            there = int((~x["agrees"] & ~blind & x["cpu_sim"].isin(hidden).fillna(False)).sum())
            notes.append(f"{int(blind.sum())} of {int((~x['agrees']).sum())} expiring_cpu disagreements involve "
                         f"CPU(s) {hidden}, whose idle periods and ticks the trace does not show (the timer was "
                         f"theirs or the kernel ran it there), {there} more the simulation ran there; on the other "
                         f"timers the agreement is {100 * seen['agrees'].mean():.1f} %")
    items.append(FidelityItem(
        "expiring_cpu", float(x["agrees"].mean()) if len(x) else None, len(x), int(x["agrees"].sum()),
        x[~x["agrees"]],
        f"global timers; {unknown} expiries of timers armed before the trace left out"))
    if cfg.placement == "pull" and len(x):
        if len(event_rows(ev, ("hrtimer_start",))):
            x = race_columns(x, trace, script, res, sim_events=sim_ev)
            items += _race_items(x, notes)
        else:
            # Who held the duty shows only in the stopped ticks' hrtimer_start.
            why = f"not compared: the trace has no hrtimer_start ({record_hint(['hrtimer_start'])})"
            items += [FidelityItem(n, None, 0, 0, pd.DataFrame(), why)
                      for n in ("expiring_cpu_single", "expiring_cpu_race", "duty_overlap")]
    x["error_ns"] = (x["expired_ns_sim"] - (x["ts_ns"] - script.clock_offset_ns)).abs()
    err = x["error_ns"].dropna()
    items.append(FidelityItem(
        "expiry_time", float((err <= 250_000).mean()) if len(err) else None, len(err), int((err <= 250_000).sum()),
        x[~(x["error_ns"] <= 250_000).fillna(False).astype(bool)],
        f"global timers: |simulated - traced expiry time| <= 250 µs; median error "
        f"{err.median() / 1e3:.0f} µs" if len(err) else "global timers: none expired in both"))
    step(VALIDATE_STAGES[3])
    items.append(_deferrable(trace, script, res))
    items.append(hrtimer_item(trace, script, res))
    items.append(wakeups_item(trace, res, idle_cpus))
    # An event a trace shows no instance of is a fact to report: not recorded,
    # or it never happened (cyclictest's PM QoS 0 keeps every tick running).
    absent = [e for e in VALIDATE_EVENTS if e not in REQUIRED_EVENTS and not len(event_rows(ev, (e,)))]
    if absent:
        notes.append(f"the trace shows no {' and no '.join(absent)}: not recorded ({record_hint(absent)}), or none "
                     "happened (a CPU kept from deeper idle keeps its tick: cyclictest's PM QoS 0); what depends on "
                     "them is not compared")
    entries, stops = _idle_counts(ev)
    # The simulation's idle period in progress at the start (its entry and
    # tick stop happened before the trace, which cannot show them) is not counted.
    sim_entries, sim_stops = _idle_counts(sim_ev[sim_ev["ts_ns"] > cfg.start_ns])
    n = cfg.topology.cpus
    per_cpu = pd.DataFrame({
        "cpu": np.arange(n),
        "idle_entries_trace": [int(entries.get(c, 0)) for c in range(n)],
        "idle_entries_sim": [int(sim_entries.get(c, 0)) for c in range(n)],
        "tick_stops_trace": [int(stops.get(c, 0)) for c in range(n)],
        "tick_stops_sim": [int(sim_stops.get(c, 0)) for c in range(n)],
        "visible": [c in idle_cpus for c in range(n)],
    })
    for what, note in (("idle_entries", "cpu_idle entries per CPU"), ("tick_stops", "tick_stop per CPU")):
        v = per_cpu[per_cpu["visible"]]
        if what == "tick_stops" and "tick_stop" in absent:
            items.append(FidelityItem(what, None, 0, 0, pd.DataFrame(),
                                      f"not compared: the trace shows no tick_stop; the simulation stopped "
                                      f"{int(per_cpu['tick_stops_sim'].sum())}"))
            continue
        tr_, sim_ = v[f"{what}_trace"].to_numpy(), v[f"{what}_sim"].to_numpy()
        total = tr_.sum()
        agreement = 1 - np.abs(sim_ - tr_).sum() / total if total else None
        off = np.abs(sim_ - tr_) > 0.05 * np.maximum(tr_, 1)
        bad = v[off][["cpu", f"{what}_trace", f"{what}_sim"]].assign(
            rel_diff=(v[off][f"{what}_sim"] - v[off][f"{what}_trace"]) / np.maximum(v[off][f"{what}_trace"], 1))
        items.append(FidelityItem(what, None if agreement is None else max(0.0, float(agreement)), len(v),
                                  int((~off).sum()), bad,
                                  f"{note}, 1 - sum|sim-trace|/sum trace; CPUs off by > 5 % listed"))
    v = per_cpu[per_cpu["visible"]]
    kept = v[v["tick_stops_sim"] > 1.05 * v["tick_stops_trace"] + 1]
    if overrides.get("tick", "simulated") == "simulated" and len(kept):
        # What the rest is: the kernel kept the tick for reasons the trace does not show.
        worst = kept.loc[(kept["tick_stops_sim"] - kept["tick_stops_trace"]).idxmax()]
        notes.append(f"on CPU(s) {kept['cpu'].tolist()} the kernel stopped the tick less often than the simulation "
                     f"(CPU {int(worst['cpu'])}: {int(worst['tick_stops_trace'])} vs {int(worst['tick_stops_sim'])}) "
                     "for reasons a trace does not show (RCU callbacks waiting for a grace period, irq_work; the "
                     "simulation keeps the tick only from a task switching out to the CPU's next tick); a CPU whose "
                     "tick runs expires its own global timers, so most expiring_cpu disagreements follow. validate(trace) "
                     "(tick='kept', the default) reads the ticks the kernel kept off the trace, tick='trace' all its "
                     "tick decisions")
    if hidden:
        notes.append(f"CPU(s) {hidden} log no cpu_idle: idle entries and tick stops not compared there")
    if cfg.governor == "none" and not {"idle_states", "governor"} & set(overrides):
        notes.append("idle: no cpuidle driver, inferred from cpu_idle showing state 1 only (default_idle_call; "
                     "a driver whose only state used is 1 looks the same: pass idle_states= and governor=)")
    items.append(_handovers(trace, res, cfg.start_ns + script.clock_offset_ns, sim_ev))
    return FidelityReport(trace.path, cfg, items, per_cpu, x, res, notes)


def _race_items(x, notes) -> list:
    """The expiring CPU split by what the kernel had to choose from (races.py):
    exact where a single CPU was eligible, membership and holder-set overlap
    for races."""
    single, race = x[~x["race"]], x[x["race"]]
    items = [FidelityItem("expiring_cpu_single", float(single["agrees"].mean()) if len(single) else None,
                          len(single), int(single["agrees"].sum()), single[~single["agrees"]],
                          "global timers the kernel had a single eligible CPU for (an active one, or one idle "
                          "duty holder): the exact CPU"),
             FidelityItem("expiring_cpu_race", float(race["in_holders"].mean()) if len(race) else None,
                          len(race), int(race["in_holders"].sum()), race[~race["in_holders"]],
                          "races (2+ idle CPUs programmed for the event): the simulated CPU is one of the "
                          "kernel's duty holders"),
             FidelityItem("duty_overlap", float(race["jaccard"].mean()) if len(race) else None, len(race),
                          int((race["jaccard"] >= 0.8).sum()), race[race["jaccard"] < 0.8],
                          "races: mean Jaccard overlap of the duty-holder sets, trace vs simulation")]
    if len(race):
        notes.append(f"{len(race)} of {len(x)} global timers were races: {race['holders_trace'].map(len).median():.0f} "
                     "idle CPUs (median) had programmed their stopped tick for the same event, and whichever wakeup "
                     "arrives first takes it — the platform's wake order, not the model; the exact CPU agrees on "
                     f"{int(race['agrees'].sum())} of them (replayed with each traced wakeup's lateness)")
    return items


def _deferrable(trace, script: Script, res) -> FidelityItem:
    """Expiries of deferrable timers armed in the trace: how many the kernel
    ran and how many the simulation did (a deferrable timer runs only when
    its CPU is awake for something else: the idle model decides)."""
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
    agreement = max(0.0, 1 - abs(n_sim - n_trace) / n_trace) if n_trace else None
    return FidelityItem("deferrable_expiries", agreement, n_trace, min(n_sim, n_trace),
                        pd.DataFrame({"expiries_trace": [n_trace], "expiries_sim": [n_sim]}),
                        f"deferrable timers armed in the trace that expired: {n_trace} in the trace, {n_sim} "
                        "simulated; 1 - |sim - trace| / trace")


def _placement(script: Script, res) -> FidelityItem:
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
    agree = (m["base_cpu_sim"] == m["base_cpu_trace"]).fillna(False).astype(bool)
    moved = m["base_cpu_trace"] != m["cpu"]
    pushed = int((moved & (m["place"] == "placement")).sum())
    note = (f"the base CPU (cpu=) of every timer_start: {int(moved.sum())} on another CPU than the arming one "
            f"({pushed} by the placement policy, the rest add_timer_on or re-armed from a remote callback)")
    return FidelityItem("placement", float(agree.mean()) if len(m) else None, len(m), int(agree.sum()), m[~agree],
                        note)


def _idle_counts(ev) -> tuple:
    """Idle entries and successful tick stops per CPU of an event log (a
    trace's or the simulation's: same event names and fields)."""
    ci = select_events(ev, ("cpu_idle",), ("cpu", "state"))
    ts = select_events(ev, ("tick_stop",), ("cpu", "success"))
    ts = ts[ts["success"].fillna(1) == 1] if "success" in ts else ts
    return ci[ci["state"] != CPU_IDLE_EXIT].groupby("cpu").size(), ts.groupby("cpu").size()


def _handovers(trace, res, start_ts, sim_events=None) -> FidelityItem:
    """Migrator hand-overs per level-0 group of the hierarchy: how often the
    group's migrator changed (tmigr_group_set_cpu_active/inactive), trace vs
    simulation. Groups are matched by the CPUs whose events they carry."""
    name, note = "tmigr", "migrator hand-overs per level-0 group, 1 - sum|sim-trace|/sum trace"
    sim_events = res.events if sim_events is None else sim_events
    if sim_events is None:
        return FidelityItem(name, None, 0, 0, pd.DataFrame(), "not compared: the run kept no events")

    if res.config.placement != "pull":
        return FidelityItem(name, None, 0, 0, pd.DataFrame(), "not compared: no hierarchy before 6.9 (push model)")

    def count(ev, t0):
        ev = select_events(ev, ("tmigr_group_set_cpu_active", "tmigr_group_set_cpu_inactive"),
                           ("lvl", "ts_ns", "group", "cpu", "migrator"))
        if not len(ev):
            return {}
        ev = ev[(ev["lvl"] == 0) & (ev["ts_ns"] > t0)]
        cpus, changes, last = {}, {}, {}
        for g, c, m in zip(ev["group"].tolist(), ev["cpu"].tolist(), ev["migrator"].tolist()):
            cpus.setdefault(g, set()).add(int(c))
            if g in last and last[g] != m:
                changes[g] = changes.get(g, 0) + 1
            last[g] = m
        return {tuple(sorted(v)): changes.get(g, 0) for g, v in cpus.items()}

    tr_counts = count(trace.events, start_ts)
    if not tr_counts:
        return FidelityItem(name, None, 0, 0, pd.DataFrame(), "not compared: the trace has no level-0 group events")
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
    if not rows:
        return FidelityItem(name, None, 0, 0, pd.DataFrame(),
                            f"not compared: CPU(s) {sorted(hidden)} log no hierarchy events")
    if hidden:
        note += f"; groups with CPU(s) {sorted(hidden)}, which log no hierarchy events, left out"
    df = pd.DataFrame(rows, columns=["cpus", "handovers_trace", "handovers_sim"])
    df["handovers_sim"] = df["handovers_sim"].astype("Int64")
    known = df[df["handovers_sim"].notna()]
    total = known["handovers_trace"].sum()
    diff = (known["handovers_sim"] - known["handovers_trace"]).abs()
    agreement = max(0.0, float(1 - diff.sum() / total)) if total else None
    off = df["handovers_sim"].isna() | ((df["handovers_sim"] - df["handovers_trace"]).abs()
                                        > 0.05 * df["handovers_trace"].clip(lower=1)).fillna(True)
    return FidelityItem(name, agreement, len(df), int((~off).sum()), df[off], note)
