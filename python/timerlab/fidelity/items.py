"""validate's items and notes from what it compared in each window of a trace.

:func:`~timerlab.fidelity.validate` replays a trace whole, or in windows of
time when it is large (windows.py); each window gives a :class:`Compared`:
the rows it compared (timer_starts, expiries, hrtimer expiries) and its
counts (idle entries, tick stops, hand-overs, deferrable expiries). The
items are built once from all windows together, the rows concatenated and
the counts summed, so that an item's agreement, its disagreements and its
note are those of the whole trace; a trace replayed whole is one window and
gives the report it always gave.

Not here: the replay and the comparisons themselves (validate.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..trace.features import record_hint
from .hrtimers import hrtimer_item, wakeups_item
from .report import FidelityItem

_EXPIRY_WINDOW_NS = 250_000


@dataclass
class Compared:
    """What validate compared in one window (see validate.py's _compare)."""

    cfg: object
    notes: list                    # the replay's own notes (the script's)
    wheel: pd.DataFrame            # wheel_replay's placement: one row per timer_start
    placement: pd.DataFrame        # the base of every scripted arm, trace vs simulation
    expiries: pd.DataFrame         # global timers' expiries (validate's expiring-CPU table)
    blind: np.ndarray              # per expiry: a disagreement involving a CPU that logs no cpu_idle
    hidden: list                   # CPUs that log no cpu_idle in this window
    unknown: int                   # expiries of timers armed before the window
    races: str                     # "compared", "no hrtimer_start", or "" (nothing to compare)
    deferrable: tuple              # (expiries in the trace, in the simulation)
    hrtimers: pd.DataFrame | None  # hrtimers.hrtimer_expiries
    wakeups: pd.DataFrame | None   # hrtimers.wakeup_counts
    absent: list                   # VALIDATE_EVENTS the window shows none of
    per_cpu: pd.DataFrame
    handovers: tuple               # (rows, hidden CPUs, why not compared): validate._handover_rows
    result: object = None
    events: int = 0
    jiffies: tuple = ()            # (the jiffies model replayed, *Script.jiffies_fit)
    rcu: tuple = ()                # (the tick model replayed: rcu_needs_cpu, *Script.after_tasks)
    losses: tuple = (0, 0)         # the ring buffer's in the window: (Trace.lost_events, Trace.loss_markers)
    span_ns: tuple = (None, None)  # the window's first and last timestamp


def _cat(frames):
    """The frames one after the other (the one frame itself if it is alone)."""
    frames = list(frames)
    if len(frames) == 1:
        return frames[0]
    kept = [f for f in frames if len(f)] or frames[:1]
    return pd.concat(kept, ignore_index=True)


def build(parts: list, overrides: dict, cfg=None) -> tuple:
    """(items, notes, per_cpu, expiries) of validate's report from the windows' ``parts``
    (``cfg``: the first window's config, if not ``parts[0].cfg``)."""
    cfg = cfg or parts[0].cfg
    notes = _window_notes(parts)
    items = []
    p = _cat(c.wheel for c in parts)
    items.append(FidelityItem("wheel", float(p["agrees"].mean()) if len(p) else 1.0, len(p), int(p["agrees"].sum()),
                              p[~p["agrees"]], "timer_start idx and bucket_expiry, replayed base clocks"))
    items.append(_placement_item(_cat(c.placement for c in parts)))
    x = _cat(c.expiries for c in parts)
    items += _expiry_items(x, parts, cfg, notes)
    n_trace = sum(c.deferrable[0] for c in parts)
    n_sim = sum(c.deferrable[1] for c in parts)
    items.append(_deferrable_item(n_trace, n_sim))
    m = [c.hrtimers for c in parts if c.hrtimers is not None]
    items.append(hrtimer_item(_cat(m) if m else None))
    w = [c.wakeups for c in parts if c.wakeups is not None]
    items.append(wakeups_item(None if not w else w[0] if len(w) == 1 else pd.concat(w).groupby(level=[0, 1]).sum()))
    absent = [e for e in parts[0].absent if all(e in c.absent for c in parts)]
    if absent:
        notes.append(f"the trace shows no {' and no '.join(absent)}: not recorded ({record_hint(absent)}), or none "
                     "happened (a CPU kept from deeper idle keeps its tick: cyclictest's PM QoS 0); what depends on "
                     "them is not compared")
    per_cpu = _sum_per_cpu([c.per_cpu for c in parts])
    items += _idle_items(per_cpu, absent, overrides, cfg, notes)
    items.append(_handovers_item([c.handovers for c in parts]))
    return items, notes, per_cpu, x


def _window_notes(parts) -> list:
    """The replay's notes: once if every window has it, else with its window."""
    if len(parts) == 1:
        return list(parts[0].notes)
    everywhere = set.intersection(*(set(c.notes) for c in parts))
    notes = [n for n in parts[0].notes if n in everywhere]
    for k, c in enumerate(parts):
        notes += [f"window {k + 1}: {n}" for n in c.notes if n not in everywhere]
    return notes


def _placement_item(m: pd.DataFrame) -> FidelityItem:
    agree = (m["base_cpu_sim"] == m["base_cpu_trace"]).fillna(False).astype(bool)
    moved = m["base_cpu_trace"] != m["cpu"]
    pushed = int((moved & (m["place"] == "placement")).sum())
    note = (f"the base CPU (cpu=) of every timer_start: {int(moved.sum())} on another CPU than the arming one "
            f"({pushed} by the placement policy, the rest add_timer_on or re-armed from a remote callback)")
    return FidelityItem("placement", float(agree.mean()) if len(m) else None, len(m), int(agree.sum()), m[~agree],
                        note)


def _expiry_items(x, parts, cfg, notes) -> list:
    """expiring_cpu, its race split (6.9+) and expiry_time."""
    hidden = sorted(set().union(*(c.hidden for c in parts)))
    blind = np.concatenate([c.blind for c in parts]) if len(parts) > 1 else parts[0].blind
    if hidden and blind.any():
        seen = x[~blind]
        # The others' expiring CPU may still hinge on them: the simulation ran them there.
        there = int((~x["agrees"] & ~blind & x["cpu_sim"].isin(hidden).fillna(False)).sum())
        notes.append(f"{int(blind.sum())} of {int((~x['agrees']).sum())} expiring_cpu disagreements involve "
                     f"CPU(s) {hidden}, whose idle periods and ticks the trace does not show (the timer was "
                     f"theirs or the kernel ran it there), {there} more the simulation ran there; on the other "
                     f"timers the agreement is {100 * seen['agrees'].mean():.1f} %")
    unknown = sum(c.unknown for c in parts)
    items = [FidelityItem(
        "expiring_cpu", float(x["agrees"].mean()) if len(x) else None, len(x), int(x["agrees"].sum()),
        x.loc[~x["agrees"], x.columns[:x.columns.get_loc("why") + 1]],  # without the races' and times' columns
        f"global timers; {unknown} expiries of timers armed before the trace left out")]
    if cfg.placement == "pull" and len(x):
        if any(c.races == "no hrtimer_start" for c in parts):
            # Who held the duty shows only in the stopped ticks' hrtimer_start.
            why = f"not compared: the trace has no hrtimer_start ({record_hint(['hrtimer_start'])})"
            items += [FidelityItem(n, None, 0, 0, pd.DataFrame(), why)
                      for n in ("expiring_cpu_single", "expiring_cpu_race", "duty_overlap")]
        else:
            items += _race_items(x.drop(columns="error_ns"), notes)  # their tables: without the time error
    err = x["error_ns"].dropna()
    items.append(FidelityItem(
        "expiry_time", float((err <= _EXPIRY_WINDOW_NS).mean()) if len(err) else None, len(err),
        int((err <= _EXPIRY_WINDOW_NS).sum()), x[~(x["error_ns"] <= _EXPIRY_WINDOW_NS).fillna(False).astype(bool)],
        f"global timers: |simulated - traced expiry time| <= 250 µs; median error "
        f"{err.median() / 1e3:.0f} µs" if len(err) else "global timers: none expired in both"))
    return items


def _race_items(x, notes) -> list:
    """The expiring CPU split by what the kernel had to choose from (races.py):
    exact where a single CPU was eligible, membership and holder-set overlap
    for races."""
    single, race = x[~x["race"].astype(bool)], x[x["race"].astype(bool)]
    items = [FidelityItem("expiring_cpu_single", float(single["agrees"].mean()) if len(single) else None,
                          len(single), int(single["agrees"].sum()), single[~single["agrees"]],
                          "global timers the kernel had a single eligible CPU for (an active one, or one idle "
                          "duty holder): the exact CPU"),
             FidelityItem("expiring_cpu_race", float(race["in_holders"].mean()) if len(race) else None,
                          len(race), int(race["in_holders"].sum()), race[~race["in_holders"].astype(bool)],
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


def _deferrable_item(n_trace: int, n_sim: int) -> FidelityItem:
    agreement = max(0.0, 1 - abs(n_sim - n_trace) / n_trace) if n_trace else None
    return FidelityItem("deferrable_expiries", agreement, n_trace, min(n_sim, n_trace),
                        pd.DataFrame({"expiries_trace": [n_trace], "expiries_sim": [n_sim]}),
                        f"deferrable timers armed in the trace that expired: {n_trace} in the trace, {n_sim} "
                        "simulated; 1 - |sim - trace| / trace")


def _sum_per_cpu(frames) -> pd.DataFrame:
    """Per CPU, the windows' counts summed; visible if it logs cpu_idle in any."""
    if len(frames) == 1:
        return frames[0]
    out = frames[0].copy()
    for f in frames[1:]:
        for c in ("idle_entries_trace", "idle_entries_sim", "tick_stops_trace", "tick_stops_sim"):
            out[c] += f[c]
        out["visible"] |= f["visible"]
    return out


def _idle_items(per_cpu, absent, overrides, cfg, notes) -> list:
    """idle_entries and tick_stops per CPU, and the notes on what they leave out."""
    items = []
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
    hidden = per_cpu.loc[~per_cpu["visible"], "cpu"].tolist()
    if hidden:
        notes.append(f"CPU(s) {hidden} log no cpu_idle: idle entries and tick stops not compared there")
    if cfg.governor == "none" and not {"idle_states", "governor"} & set(overrides):
        notes.append("idle: no cpuidle driver, inferred from cpu_idle showing state 1 only (default_idle_call; "
                     "a driver whose only state used is 1 looks the same: pass idle_states= and governor=)")
    return items


def _handovers_item(windows) -> FidelityItem:
    """``tmigr``: each window's (rows, hidden CPUs, why not compared) of
    validate._handover_rows, the hand-overs of a group summed over windows."""
    name, note = "tmigr", "migrator hand-overs per level-0 group, 1 - sum|sim-trace|/sum trace"
    counted = [w for w in windows if not w[2]]
    if not counted:
        return FidelityItem(name, None, 0, 0, pd.DataFrame(), windows[0][2])
    groups, hidden = {}, set()
    for rows, h, _why in counted:
        hidden |= h
        for cpus, n, sim in rows:
            t, s = groups.get(tuple(cpus), (0, 0))
            groups[tuple(cpus)] = (t + n, s + sim)  # pd.NA (no simulated group) stays NA
    groups = _fold_subgroups(groups)
    if not groups:
        return FidelityItem(name, None, 0, 0, pd.DataFrame(),
                            f"not compared: CPU(s) {sorted(hidden)} log no hierarchy events")
    if hidden:
        note += f"; groups with CPU(s) {sorted(hidden)}, which log no hierarchy events, left out"
    df = pd.DataFrame([(list(k), t, s) for k, (t, s) in sorted(groups.items())],
                      columns=["cpus", "handovers_trace", "handovers_sim"])
    df["handovers_sim"] = df["handovers_sim"].astype("Int64")
    known = df[df["handovers_sim"].notna()]
    total = known["handovers_trace"].sum()
    diff = (known["handovers_sim"] - known["handovers_trace"]).abs()
    agreement = max(0.0, float(1 - diff.sum() / total)) if total else None
    off = df["handovers_sim"].isna() | ((df["handovers_sim"] - df["handovers_trace"]).abs()
                                        > 0.05 * df["handovers_trace"].clip(lower=1)).fillna(True)
    return FidelityItem(name, agreement, len(df), int((~off).sum()), df[off], note)


def _fold_subgroups(groups: dict) -> dict:
    """A group is known by the CPUs that logged its events, and a window may
    not show all of them: its counts go to the one group of another window
    that shows more (two or more such: it stays apart)."""
    out = dict(groups)
    for k in sorted(groups, key=len):
        wider = [w for w in out if w != k and set(k) < set(w)]
        if len(wider) == 1:
            t, s = out.pop(k)
            wt, ws = out[wider[0]]
            out[wider[0]] = (wt + t, ws + s)
    return out
