"""Kernel releases and the timer behaviours that changed between them.

``Config(kernel=...)`` and ``tl.hierarchy(kernel=...)`` take a release ("6.12",
"6.12.95", "6.18") or "latest". Each behaviour below says which release first
has it; stable backports are not tracked (a behaviour counts from the first
mainline release that has it).
"""
from __future__ import annotations

import re

LATEST = (99, 0)

# name: (first release, what it is, where it came from)
BEHAVIOURS = {
    "deferrable_no_ipi": ((6, 8), "deferrable timers never wake a remote idle CPU", "timers: (v6.8 preparation of the pull model)"),
    "pull_model": ((6, 9), "timers are queued locally and idle CPUs' global timers are pulled by a migrator "
                           "(timer migration hierarchy)", "timers-core-2024-03-10, 7ee988770326"),
    "numa_tree_fix": ((6, 18), "hierarchy groups below the crossnode level hold one NUMA node only",
                      "5eb579dfd46b timers/migration: Fix imbalanced NUMA trees (Oct 2025)"),
    "teo_tick_intercepts_fix": ((6, 19), "teo counts tick intercepts below the tick length (teo_update)",
                                "cpuidle: governors: teo: Fix tick_intercepts handling in teo_update() (late 2025)"),
    "remote_expires_self": (LATEST, "remote handling also expires the migrator's own global timers",
                            "d486b4934a8e timers/migration: Fix livelock in tmigr_handle_remote_up() (2026)"),
}


def parse_kernel(kernel) -> tuple[int, int]:
    """(major, minor) of a release string, or LATEST for "latest"."""
    if kernel == "latest":
        return LATEST
    if not isinstance(kernel, str) or not re.fullmatch(r"\d+\.\d+(\.\d+)?", kernel):
        raise ValueError(f"kernel={kernel!r} is not a release like '6.12', '6.12.95' or 'latest'")
    major, minor = (int(x) for x in kernel.split(".")[:2])
    if (major, minor) < (4, 0):
        raise ValueError(f"kernel={kernel!r}: timerlab models releases from 4.0 on (the modern timer wheel)")
    return major, minor


def kernel_has(kernel, behaviour: str) -> bool:
    """Whether this release has the behaviour (see BEHAVIOURS)."""
    return parse_kernel(kernel) >= BEHAVIOURS[behaviour][0]


def kernel_has_numa_tree_fix(kernel) -> bool:
    return kernel_has(kernel, "numa_tree_fix")
