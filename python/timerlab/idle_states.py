"""CPU idle-state tables: the kernel's presets and user tables.

Exit latency and target residency are the kernel's (drivers/idle/intel_idle.c,
v6.17; reference §7); on x86 the cpuidle core adds state 0 = POLL (0/0,
polling) in front. drivers/acpi/processor_idle.c sets each ACPI C-state's
target residency to twice its exit latency.

Power figures are **model parameters, not kernel data**: the kernel does not
know them and vendors do not publish per-state figures (reference §7). The
defaults are assumptions for one core, meant for comparing policies, not for
absolute watts:

* busy: 4500 mW per server core (a 28-core Skylake-SP near its 205 W TDP
  spends roughly 4-5 W per core), 3000 mW per client core;
* POLL: two thirds of busy (the core spins, with `pause`);
* C1 (clock gated): one third of busy; C1E (lower voltage): a fifth;
* C3: 1/15 of busy; C6 and deeper (core power gated): 1/45 to 1/150 of busy
  — consistent with the one measured data point in the reference (C6/C7
  saving about 3 W at the wall on a 4-core desktop, ~0.75 W per core);
* a transition (entry + exit) costs busy power over the exit latency.

Package states (``package=True``) are entered only when every CPU of the
package (NUMA node) is idle; the client table marks C8-C10, which need the
whole package idle to pay off.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["IdleStates", "preset", "table", "PRESETS"]

_REQUIRED = ("name", "power_mw")


@dataclass(frozen=True)
class IdleStates:
    """An idle-state table: ``states`` (DataFrame, shallow to deep) and the
    power of a busy core."""

    name: str
    states: pd.DataFrame
    busy_power_mw: float

    def to_core(self) -> dict:
        return {"busy_power_mw": float(self.busy_power_mw), "states": [
            {"name": str(r.name), "exit_latency_ns": int(r.exit_latency_ns),
             "target_residency_ns": int(r.target_residency_ns), "power_mw": float(r.power_mw),
             "transition_uj": float(r.transition_uj), "polling": bool(r.polling), "package": bool(r.package),
             "disabled": bool(r.disabled)} for r in self.states.itertuples()]}

    def __repr__(self) -> str:
        return f"IdleStates({self.name!r}: {', '.join(self.states['name'])})"


def _server(busy, c1, c1e, c6):
    return [("POLL", 0, 0, busy * 2 / 3, True, False),
            ("C1", c1[0], c1[1], busy / 3, False, False),
            ("C1E", c1e[0], c1e[1], busy / 5, False, False),
            ("C6", c6[0], c6[1], busy / 45, False, False)]


# name: (busy mW, [(state, exit µs, target µs, power mW, polling, package)], description)
PRESETS = {
    "skx": (4500, _server(4500, (2, 2), (10, 20), (133, 600)), "Skylake-SP / Cascade Lake (intel_idle skx)"),
    "icx": (4500, _server(4500, (1, 1), (4, 4), (170, 600)), "Ice Lake-SP (intel_idle icx)"),
    "spr": (4500, _server(4500, (1, 1), (2, 4), (290, 800)), "Sapphire / Emerald Rapids (intel_idle spr)"),
    "skl": (3000, [("POLL", 0, 0, 2000, True, False), ("C1", 2, 2, 1000, False, False),
                   ("C1E", 10, 20, 600, False, False), ("C3", 70, 100, 200, False, False),
                   ("C6", 85, 200, 66, False, False), ("C7s", 124, 800, 50, False, False),
                   ("C8", 200, 800, 40, False, True), ("C9", 480, 5000, 30, False, True),
                   ("C10", 890, 5000, 20, False, True)], "Skylake client, 8 states (intel_idle skl)"),
    "acpi": (4000, [("POLL", 0, 0, 4000 * 2 / 3, True, False), ("C1", 1, 2, 4000 / 3, False, False),
                    ("C2", 20, 40, 4000 / 6, False, False), ("C3", 100, 200, 4000 / 15, False, False)],
             "generic ACPI _CST C1/C2/C3 (processor_idle: target = 2 x latency)"),
    "vm": (4000, [("POLL", 0, 0, 4000 * 2 / 3, True, False), ("haltpoll", 1, 1, 4000 / 3, False, False)],
           "virtual machine, halt only (cpuidle-haltpoll)"),
    # With governor="none": the kernel runs default_idle_call and logs cpu_idle state 1.
    "none": (4000, [("default", 1, 0, 4000 / 3, False, False)],
             "no cpuidle driver: the architecture's default idle (x86 HLT), e.g. a VM without haltpoll"),
}


def preset(name: str) -> IdleStates:
    """One of the built-in tables: skx, icx, spr, skl, acpi, vm, none."""
    if name not in PRESETS:
        raise ValueError(f"idle_states={name!r} is not a preset; choose one of {', '.join(map(repr, PRESETS))} "
                         "or pass a table (list of dicts or DataFrame)")
    busy, rows, _ = PRESETS[name]
    df = pd.DataFrame(rows, columns=["name", "exit_latency_us", "target_residency_us", "power_mw", "polling",
                                     "package"])
    return table(df, busy_power_mw=busy, name=name)


def table(states, *, busy_power_mw: float, name: str = "custom") -> IdleStates:
    """A user table: a DataFrame or list of dicts, shallow to deep, with
    ``name``, ``power_mw``, exit latency and target residency in µs
    (``exit_latency_us``, ``target_residency_us``) or ns (``..._ns``), and
    optionally ``transition_uj``, ``polling``, ``package``, ``disabled``."""
    df = pd.DataFrame(states).copy() if not isinstance(states, pd.DataFrame) else states.copy()
    if df.empty:
        raise ValueError("idle_states: the table has no state")
    missing = [c for c in _REQUIRED if c not in df]
    for base in ("exit_latency", "target_residency"):
        if f"{base}_ns" not in df and f"{base}_us" not in df:
            missing.append(f"{base}_us (or _ns)")
    if missing:
        raise ValueError(f"idle_states: missing column(s) {missing}")
    if len(df) > 16:
        raise ValueError(f"idle_states: {len(df)} states; at most 16 (the kernel's CPUIDLE_STATE_MAX is 10)")
    for base in ("exit_latency", "target_residency"):
        if f"{base}_ns" not in df:
            df[f"{base}_ns"] = np.round(np.asarray(df[f"{base}_us"], dtype=float) * 1000)
    for col in ("exit_latency_ns", "target_residency_ns", "power_mw", "transition_uj"):
        if col not in df:
            continue  # transition_uj is optional
        values = pd.to_numeric(df[col], errors="coerce")
        if values.isna().any() or (values < 0).any() or not np.isfinite(values).all():
            bad = df.loc[values.isna() | ~(values >= 0), "name"].tolist()
            raise ValueError(f"idle_states: {col} must be a number >= 0 (states {bad})")
        df[col] = values
    if not isinstance(busy_power_mw, (int, float)) or isinstance(busy_power_mw, bool) or not busy_power_mw >= 0:
        raise ValueError(f"busy_power_mw must be a number >= 0, got {busy_power_mw!r}")
    for col in ("polling", "package", "disabled"):
        df[col] = df[col].astype(bool) if col in df else False
    if "transition_uj" not in df:
        df["transition_uj"] = busy_power_mw / 1000 * df["exit_latency_ns"] / 1000
    depth = df[["exit_latency_ns", "target_residency_ns"]].to_numpy()
    for i in range(1, len(df)):
        if (depth[i] < depth[i - 1]).any():
            raise ValueError(f"idle_states: state {i} ({df['name'].iat[i]}) is shallower than state {i - 1} "
                             f"({df['name'].iat[i - 1]}): order the states by depth")
    if df["polling"].iloc[1:].any():
        raise ValueError("idle_states: only state 0 may be a polling state")
    if df["disabled"].all():
        raise ValueError("idle_states: every state is disabled")
    cols = ["name", "exit_latency_ns", "target_residency_ns", "power_mw", "transition_uj", "polling", "package",
            "disabled"]
    out = df[cols].reset_index(drop=True)
    out["exit_latency_ns"] = out["exit_latency_ns"].astype(np.int64)
    out["target_residency_ns"] = out["target_residency_ns"].astype(np.int64)
    return IdleStates(name, out, float(busy_power_mw))
