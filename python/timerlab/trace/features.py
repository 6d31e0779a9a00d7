"""What a trace shows of the machine and the kernel that recorded it: the
NUMA node of each CPU (from the hierarchy's set-up events), whether it had a
cpuidle driver, and the kernel release.

Not here: reading the text (read.py).
"""
from __future__ import annotations

import os
import re

import numpy as np

from .events import CPU_IDLE_EXIT


def node_of_cpu(ev, nr_cpus):
    """CPU -> NUMA node from the hierarchy's set-up events, if the trace has them."""
    c = ev[ev["event"] == "tmigr_connect_cpu_parent"]
    if not len(c) or "numa" not in c:
        return None
    m = dict(zip(c["cpu_id"].to_numpy(dtype=np.int64, na_value=-1).tolist(),
                 c["numa"].to_numpy(dtype=np.int64, na_value=-1).tolist()))
    if sorted(m) != list(range(nr_cpus)) or min(m.values()) < 0:
        return None
    nodes = sorted(set(m.values()))
    return [nodes.index(m[cpu]) for cpu in range(nr_cpus)]


def default_idle(ev) -> bool:
    """Whether the machine had no cpuidle driver: default_idle_call logs
    cpu_idle with state 1 only (a driver logs its state index, 0 = POLL)."""
    states = ev.loc[ev["event"] == "cpu_idle", "state"]
    states = states[states != CPU_IDLE_EXIT]
    return len(states) > 0 and bool((states == 1).all())


def kernel_of(path) -> str:
    m = re.search(r"(?<![\d.])(\d+\.\d+)(?:\.\d+)?(?![\d.])", os.path.basename(str(path)))
    return m.group(1) if m else "latest"
