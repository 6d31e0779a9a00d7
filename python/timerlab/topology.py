"""The machine: CPU count, NUMA nodes, SMT siblings, LLCs, bring-up order.

Validated here with errors naming the option; the C++ model
(cpp/include/timerlab/topology.hpp) checks again.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ._checks import check_int

LAYOUTS = ("contiguous", "interleaved")


@dataclass(frozen=True)
class Topology:
    """A machine's CPUs and how they are grouped.

    ``cpus``: CPU count. ``nodes``: NUMA nodes; ``layout`` "contiguous"
    splits the CPUs into blocks per node, "interleaved" puts CPU c on node
    c % nodes; or ``node_of_cpu`` lists each CPU's node. ``smt``: threads per core (consecutive
    CPUs of a node). ``llc_size``: CPUs per last-level cache (0: one per
    node). ``bringup_order``: the order CPUs come online (default by number);
    the timer-migration hierarchy fills its groups in that order.
    """

    cpus: int
    nodes: int = 1
    node_of_cpu: tuple = field(default=())
    smt: int = 1
    llc_size: int = 0
    bringup_order: tuple = field(default=())

    def __init__(self, *, cpus=None, nodes=None, node_of_cpu=None, layout="contiguous", smt=1, llc_size=0,
                 bringup_order=None):
        if layout not in LAYOUTS:
            raise ValueError(f"layout={layout!r} is not allowed; choose one of {', '.join(map(repr, LAYOUTS))}")
        if layout == "interleaved" and node_of_cpu is None and cpus is not None:
            n = check_int("nodes", 1 if nodes is None else nodes, minimum=1)
            if n > check_int("cpus", cpus, minimum=1):
                raise ValueError(f"nodes={n} exceeds cpus={cpus}: every node needs a CPU")
            node_of_cpu = [c % n for c in range(cpus)]
        if cpus is None and node_of_cpu is not None:
            cpus = len(node_of_cpu)
        if cpus is None:
            raise ValueError("cpus: give the CPU count (or node_of_cpu)")
        cpus = check_int("cpus", cpus, minimum=1, maximum=1 << 18)
        if node_of_cpu is not None:
            try:
                node_of_cpu = tuple(check_int(f"node_of_cpu[{i}]", n, minimum=0) for i, n in enumerate(node_of_cpu))
            except TypeError as e:
                raise TypeError(f"node_of_cpu must be a list of node numbers: {e}") from None
            if len(node_of_cpu) != cpus:
                raise ValueError(f"node_of_cpu has {len(node_of_cpu)} entries but cpus={cpus}")
            used = max(node_of_cpu) + 1
            if nodes is None:
                nodes = used
            missing = sorted(set(range(check_int("nodes", nodes, minimum=1))) - set(node_of_cpu))
            if used > nodes:
                raise ValueError(f"node_of_cpu uses node {used - 1} but nodes={nodes}")
            if missing:
                raise ValueError(f"node_of_cpu leaves node(s) {missing} without a CPU")
        nodes = check_int("nodes", 1 if nodes is None else nodes, minimum=1)
        if nodes > cpus:
            raise ValueError(f"nodes={nodes} exceeds cpus={cpus}: every node needs a CPU")
        if node_of_cpu is None:
            node_of_cpu = tuple(c * nodes // cpus for c in range(cpus))
        smt = check_int("smt", smt, minimum=1)
        llc_size = check_int("llc_size", llc_size, minimum=0)
        if llc_size and llc_size % smt:
            raise ValueError(f"llc_size={llc_size} must be a multiple of smt={smt} (a core cannot span two LLCs)")
        if not llc_size and cpus % smt:
            raise ValueError(f"smt={smt} must divide cpus={cpus}: the CPUs form whole cores of smt threads "
                             "(with llc_size=0 the core model cuts the machine's CPUs into cores)")
        if bringup_order is None:
            bringup_order = tuple(range(cpus))
        else:
            bringup_order = tuple(check_int("bringup_order", c, minimum=0) for c in bringup_order)
            if sorted(bringup_order) != list(range(cpus)):
                raise ValueError("bringup_order must list every CPU exactly once")
        for name, value in (("cpus", cpus), ("nodes", nodes), ("node_of_cpu", node_of_cpu), ("smt", smt),
                            ("llc_size", llc_size), ("bringup_order", bringup_order)):
            object.__setattr__(self, name, value)

    @property
    def interleaved(self) -> bool:
        return self.nodes > 1 and any(self.node_of_cpu[i] > self.node_of_cpu[i + 1] for i in range(self.cpus - 1))

    def __repr__(self) -> str:
        layout = "interleaved" if self.interleaved else "contiguous"
        extra = (f", smt={self.smt}" if self.smt > 1 else "") + (f", llc_size={self.llc_size}" if self.llc_size else "")
        return f"Topology(cpus={self.cpus}, nodes={self.nodes}, {layout}{extra})"
