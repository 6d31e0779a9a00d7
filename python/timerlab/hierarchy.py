"""The timer-migration hierarchy of a machine, as the kernel builds it at boot.

``tl.hierarchy(cpus=32, nodes=2, kernel="6.12")`` builds the groups of
kernel/time/timer_migration.c for a topology (the C++ model in
cpp/include/timerlab/tmigr.hpp) and returns them as DataFrames, with the
tracepoints the kernel emits while building them (tmigr_group_set,
tmigr_connect_*), so they can be compared with a real boot trace.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import _core
from .trace.events import events_frame
from .kernel import kernel_has, kernel_has_numa_tree_fix
from .topology import Topology


@dataclass(frozen=True)
class Hierarchy:
    """Groups and CPUs of a built hierarchy.

    ``groups``: one row per group in creation order (group, level, numa,
    parent, groupmask, num_children, cpus). ``cpus``: cpu, node, group,
    groupmask. ``boot_events``: the tracepoints emitted while building.
    ``levels`` and ``crossnode_level`` as the kernel computes them.
    """

    topology: Topology
    kernel: str
    levels: int
    crossnode_level: int
    groups: pd.DataFrame
    cpus: pd.DataFrame
    boot_events: pd.DataFrame

    def node_pure_below_crossnode(self) -> bool:
        """True if every group below the crossnode level holds CPUs of one node."""
        below = self.groups[self.groups["level"] < self.crossnode_level]
        return all(len({self.topology.node_of_cpu[c] for c in cpus}) <= 1 for cpus in below["cpus"])

    def __repr__(self) -> str:
        per_level = self.groups.groupby("level").size().to_dict()
        return (f"Hierarchy({self.topology.cpus} CPUs, {self.topology.nodes} nodes, kernel={self.kernel!r}: "
                f"{self.levels} levels, crossnode level {self.crossnode_level}, groups per level {per_level})")


def hierarchy(*, cpus: int | None = None, nodes: int | None = None, node_of_cpu=None, layout: str = "contiguous",
              smt: int = 1, llc_size: int = 0, bringup_order=None, kernel: str = "latest",
              topology: Topology | None = None) -> Hierarchy:
    """Build the timer-migration hierarchy of a topology.

    Give either ``topology=`` or the topology options (``cpus``, ``nodes``,
    ``node_of_cpu``, ...; see :class:`timerlab.Topology`). ``kernel`` picks
    how the hierarchy is built: before the fix for imbalanced NUMA trees
    ("6.12" and older) or after it ("6.18", "latest").
    """
    if topology is not None:
        given = [k for k, v in dict(cpus=cpus, nodes=nodes, node_of_cpu=node_of_cpu, bringup_order=bringup_order).items()
                 if v is not None] + (["smt"] if smt != 1 else []) + (["llc_size"] if llc_size else []) + (
                     ["layout"] if layout != "contiguous" else [])
        if given:
            raise ValueError(f"hierarchy: give topology= or the topology options, not both (got {', '.join(given)})")
        if not isinstance(topology, Topology):
            raise TypeError("topology must be a timerlab.Topology")
        topo = topology
    else:
        topo = Topology(cpus=cpus, nodes=nodes, node_of_cpu=node_of_cpu, layout=layout, smt=smt,
                        llc_size=llc_size, bringup_order=bringup_order)
    if not kernel_has(kernel, "pull_model"):
        raise ValueError(f"kernel={kernel!r}: the timer migration hierarchy exists from 6.9 on")
    fixed = kernel_has_numa_tree_fix(kernel)
    h = _core.Hierarchy(topo.cpus, topo.nodes, list(topo.node_of_cpu), topo.smt, topo.llc_size,
                        list(topo.bringup_order), fixed)
    problem = h.check_invariants()
    if problem:
        raise AssertionError(f"hierarchy invariant violated: {problem}")
    g = h.groups()
    c = h.cpus()
    cpus_of = [[] for _ in range(len(g["level"]))]
    for cpu, grp in enumerate(c["group"].tolist()):
        while grp >= 0:
            cpus_of[grp].append(cpu)
            grp = int(g["parent"][grp])
    groups = pd.DataFrame({
        "group": np.arange(len(g["level"])),
        "level": g["level"],
        "numa": g["numa"],
        "parent": g["parent"],
        "groupmask": g["groupmask"],
        "num_children": g["num_children"],
        "cpus": cpus_of,
    })
    cpus_df = pd.DataFrame({"cpu": np.arange(topo.cpus), "node": c["node"], "group": c["group"],
                            "groupmask": c["groupmask"]})
    return Hierarchy(topo, kernel, int(h.levels), int(h.crossnode_level), groups, cpus_df,
                     events_frame(h.boot_events()))
