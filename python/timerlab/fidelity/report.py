"""What :func:`~timerlab.validate` found: one :class:`FidelityItem` per
comparison of the simulation with the kernel, gathered in a
:class:`FidelityReport` that prints as a table."""
from __future__ import annotations

import os
from dataclasses import dataclass

import pandas as pd

from ..config import Config


@dataclass
class FidelityItem:
    """One comparison: how many cases agree, and the ones that do not."""

    name: str
    agreement: float | None      # None: not compared
    compared: int
    agreeing: int
    disagreements: pd.DataFrame
    note: str = ""


@dataclass
class FidelityReport:
    """What :func:`validate` found. ``items``: one :class:`FidelityItem` per
    comparison (also as attributes: ``wheel``, ``placement``,
    ``expiring_cpu``, ``expiring_cpu_single``, ``expiring_cpu_race``,
    ``duty_overlap``, ``expiry_time``, ``deferrable_expiries``, ``hrtimer``,
    ``hrtimer_wakeups``, ``idle_entries``, ``tick_stops``, ``tmigr``); ``per_cpu``: idle entries and
    tick stops per CPU, trace vs simulation; ``result``: the simulation;
    ``windows``: for a trace replayed in windows of time (validate's
    ``window_events``), one row per window with its first and last
    timestamp, events and each item's agreement on it alone (None: replayed
    whole)."""

    trace: str
    config: Config
    items: list
    per_cpu: pd.DataFrame
    expiries: pd.DataFrame
    result: object
    notes: list
    windows: pd.DataFrame | None = None

    def __getattr__(self, name):
        for item in self.__dict__.get("items", ()):
            if item.name == name:
                return item
        raise AttributeError(name)

    def to_frame(self) -> pd.DataFrame:
        """One row per comparison: agreement (0..1), compared, agreeing, disagreeing, note."""
        return pd.DataFrame({
            "item": [i.name for i in self.items],
            "agreement": pd.array([i.agreement for i in self.items], dtype="Float64"),
            "compared": [i.compared for i in self.items],
            "agreeing": [i.agreeing for i in self.items],
            "disagreeing": [len(i.disagreements) for i in self.items],
            "note": [i.note for i in self.items],
        }).set_index("item")

    def __str__(self) -> str:
        lines = [f"FidelityReport of {os.path.basename(self.trace)} "
                 f"({self.config.topology.cpus} CPUs, kernel {self.config.kernel}, placement {self.config.placement})"]
        w = max(len(i.name) for i in self.items)
        lines.append(f"  {'item':<{w}}  agreement  compared  note")
        for i in self.items:
            a = "      n/a" if i.agreement is None else f"{100 * i.agreement:8.2f}%"
            lines.append(f"  {i.name:<{w}}  {a}  {i.compared:>8}  {i.note}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    __repr__ = __str__
