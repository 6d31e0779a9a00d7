"""predict(trace, kernel=..., against=...): a kernel upgrade (or downgrade)
predicted from one trace, and checked against the other kernel's real run.

The trace is replayed twice with the same workload — its timer operations,
tasks and device interrupts (:mod:`timerlab.replay`): under its own kernel
(``replayed``, the model's baseline) and under ``kernel`` (``predicted``:
that kernel's placement, hierarchy and behaviours, :mod:`timerlab.kernel`).
A trace of the same machine and workload recorded on that kernel
(``against``) gives the real values. Each rate (:mod:`~.rates`) is
compared on its own, without matching events of the two runs:

* ``predicted_change``: predicted against replayed, in ``change_unit``:
  "%" (relative), "points" (percentage points, for shares) or "absolute"
  (in the rate's own unit, from a rate of 0) — what the model says the
  kernel changes;
* ``real_change``: the other run against this one, at this run's pace;
* ``verdict``: whether the prediction moved the right way by about the
  right amount.

What a prediction cannot know, and how it is handled: the other trace is
another run of the workload, which under emulation runs at another pace —
rates that grow with the workload (wakeups, idle entries, tick stops,
remote expiries, IPIs) are compared at this run's pace (the other run's
value times the ratio of the two workload paces, user sleeps per second);
and the emulation's timing (late ticks, which CPU updates jiffies when) is
this run's, replayed, not the other's. The ``bounds`` table holds the two
figures an upgrade study leans on most: the share of global timers expired
by another CPU (within 5 points) and the wakeups per CPU (within 10 %).

Not here: the replay (:mod:`timerlab.replay`), validation against the same
kernel (validate.py).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..config import Config
from ..kernel import kernel_has, parse_kernel
from ..replay import VALIDATE_EVENTS, build_script, require_events, script_of, to_config
from ..trace.features import node_of_cpu
from .rates import PACED, RATES, result_rates, trace_rates

__all__ = ["predict", "Prediction"]

# rate -> (unit, bound): the error allowed, in that unit.
BOUNDS = {"global_expired_remote_fraction": ("points", 5.0), "wakeups_per_cpu_per_s": ("%", 10.0)}
# Below these a change is noise: 5 % of a rate, 2 points of a share; any
# change from nothing counts.
_NOISE = {"%": 5.0, "points": 2.0, "absolute": 0.0}


@dataclass
class Prediction:
    """What :func:`predict` found (see the module doc): ``table`` (one row
    per rate), ``bounds``, ``per_cpu`` (per-CPU rates of the four runs),
    ``notes``, and the two simulations with their configs."""

    trace: str
    against: str | None
    kernel_from: str
    kernel_to: str
    table: pd.DataFrame
    bounds: pd.DataFrame | None
    per_cpu: pd.DataFrame
    notes: list
    replayed: object
    predicted: object
    config: Config
    pace_ratio: float | None = None

    def __str__(self) -> str:
        lines = [f"Prediction of kernel {self.kernel_to} from {os.path.basename(self.trace)} (kernel {self.kernel_from})"
                 + (f", checked against {os.path.basename(self.against)}" if self.against else "")]
        with pd.option_context("display.width", 160, "display.max_columns", 20, "display.float_format",
                               "{:.3g}".format):
            lines.append(self.table.to_string())
            if self.bounds is not None:
                lines += ["", "Bounds:", self.bounds.to_string()]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    __repr__ = __str__


def _load(trace):
    from ..trace import read_ftrace

    return read_ftrace(trace) if isinstance(trace, (str, os.PathLike)) else trace


def _visible(trace) -> list:
    ev = trace.events
    return sorted(ev.loc[ev["event"] == "cpu_idle", "cpu"].unique().tolist())


def predict(trace, *, kernel: str, against=None, **overrides) -> Prediction:
    """Predict ``kernel`` from ``trace`` (a :class:`~timerlab.Trace` or a path)
    and, with ``against`` (a trace of that kernel on the same machine and
    workload), check the prediction (see the module doc). The replays use
    :func:`~timerlab.replay.to_config` with ``tick="kept"`` (the kept ticks no
    model explains, read off this trace) and the kernel's placement; any
    option overrides. A trace that does not show its NUMA layout takes the
    other trace's (same machine)."""
    from ..simulate import simulate

    parse_kernel(kernel)
    trace = _load(trace)
    other = _load(against) if against is not None else None
    require_events(trace, VALIDATE_EVENTS, "predict")
    notes = []
    overrides.setdefault("tick", "kept")
    if node_of_cpu(trace.events, trace.nr_cpus) is None and other is not None \
            and not {"nodes", "node_of_cpu", "topology", "layout"} & set(overrides):
        nodes = node_of_cpu(other.events, other.nr_cpus)
        if nodes is not None and len(nodes) == max(trace.nr_cpus, int(trace.events["cpu"].max()) + 1):
            overrides["node_of_cpu"] = nodes
            notes.append("NUMA layout from the other trace's hierarchy set-up (this one does not show it)")
    own = to_config(trace, **overrides)
    to = to_config(trace, **{"placement": "pull" if kernel_has(kernel, "pull_model") else "push", **overrides,
                             "kernel": kernel, "workload": own.workload})
    s = script_of(own.workload)
    cpus = _visible(trace)
    rates = {"trace": trace_rates(trace, s, cpus)}
    replayed, predicted = simulate(own), simulate(to)
    pace = rates["trace"][0]["workload_pace_per_s"]
    rates["replayed"] = result_rates(replayed, cpus, pace)
    rates["predicted"] = result_rates(predicted, cpus, pace)
    pace_ratio = None
    if other is not None:
        require_events(other, VALIDATE_EVENTS, "predict (against)")
        rates["other"] = trace_rates(other, build_script(other), _visible(other))
        other_pace = rates["other"][0]["workload_pace_per_s"]
        pace_ratio = pace / other_pace if other_pace else None
    table = _table(rates, pace_ratio)
    per_cpu = pd.concat({name: r[1].set_index("cpu") for name, r in rates.items()}, axis=1)
    notes += _notes(trace, other, own, to, pace_ratio)
    return Prediction(trace.path, None if other is None else other.path, own.kernel, kernel, table,
                      None if other is None else _bounds(table), per_cpu, notes, replayed, predicted, to,
                      pace_ratio)


def _table(rates, pace_ratio) -> pd.DataFrame:
    rows = []
    for rate in RATES:
        row = {"rate": rate}
        for name, (summary, _) in rates.items():
            row[name] = summary[rate]
        kind = "points" if rate.endswith("fraction") else "%"
        if kind == "%" and not (row["replayed"] and row["trace"]):
            kind = "absolute"  # a change from nothing has no relative size: in the rate's own unit
        row["change_unit"] = kind
        row["predicted_change"] = _change(row["replayed"], row["predicted"], kind)
        if "other" in row:
            scale = pace_ratio if rate in PACED and pace_ratio else 1.0
            row["other_at_trace_pace"] = row["other"] * scale
            row["real_change"] = _change(row["trace"], row["other_at_trace_pace"], kind)
            row["verdict"] = _verdict(row["predicted_change"], row["real_change"], kind)
        rows.append(row)
    return pd.DataFrame(rows).set_index("rate")


def _change(before, after, kind) -> float:
    """after against before, in the unit ``kind`` ("%", "points", "absolute")."""
    if not (np.isfinite(before) and np.isfinite(after)):
        return np.nan
    if kind == "%":
        return 100 * (after - before) / before if before else np.nan
    return 100 * (after - before) if kind == "points" else after - before


def _verdict(predicted, real, kind) -> str:
    if not (np.isfinite(predicted) and np.isfinite(real)):
        return "not comparable"
    noise = _NOISE[kind]
    if abs(real) < noise:
        return "no change, as predicted" if abs(predicted) < noise else "predicted a change that did not come"
    if abs(predicted) < noise or np.sign(predicted) != np.sign(real):
        return "missed the change" if abs(predicted) < noise else "wrong way"
    ratio = abs(predicted) / abs(real)
    return "right way, about right" if 0.5 <= ratio <= 2 else ("right way, too little" if ratio < 0.5
                                                              else "right way, too much")


def _bounds(table) -> pd.DataFrame:
    rows = []
    for rate, (unit, bound) in BOUNDS.items():
        pred, real = table.loc[rate, "predicted"], table.loc[rate, "other_at_trace_pace"]
        err = _change(real, pred, unit)  # the prediction against the real run
        rows.append({"rate": rate, "predicted": pred, "real": real, "error": err, "bound": bound, "unit": unit,
                     "within": bool(np.isfinite(err) and abs(err) <= bound)})
    return pd.DataFrame(rows).set_index("rate")


def _notes(trace, other, own, to, pace_ratio) -> list:
    notes = [f"replayed: this trace under its own kernel {own.kernel} ({own.placement}); predicted: under {to.kernel} "
             f"({to.placement}); both with this trace's timer operations, tasks, interrupts, emulation timing "
             "(late ticks, the jiffies duty) and the kept ticks no model explains"]
    if other is not None:
        notes.append("the other trace is another run of the workload: it cannot match event for event, and its "
                     "emulation timing (which CPU's tick is late, who updates jiffies when) is its own")
        if pace_ratio:
            notes.append(f"the workload ran at {1 / pace_ratio:.2f}x this run's pace in the other run (user sleeps "
                         "per second): wakeups, idle entries, tick stops, remote expiries and IPIs are compared at "
                         "this run's pace (other_at_trace_pace)")
        if "ipi_send_cpu" not in set(other.event_counts().index) or "ipi_send_cpu" not in set(
                trace.event_counts().index):
            notes.append("IPIs: a trace without ipi_send_cpu (kernels before 6.4, or not recorded) shows none")
        else:
            notes.append("IPIs: a trace counts every IPI (function calls, TLB shootdowns, reschedules); the "
                         "simulation only timer and wakeup IPIs")
    missing = [c for c in range(own.topology.cpus) if c not in _visible(trace)]
    if missing:
        notes.append(f"CPU(s) {missing} log no cpu_idle: left out of the per-CPU rates")
    return notes
