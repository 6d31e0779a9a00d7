"""Who held each level-0 group's migrator role when the trace began, as the
hierarchy's first report of the group shows it.

A replay starts the hierarchy as after boot (every CPU active) and lets the
CPUs idle at the start go idle; the role then goes as the kernel hands it
over (to the lowest active child: kernel/time/timer_migration.c,
tmigr_inactive_up). The kernel's holder came from a history the trace does
not show. Mostly that does not matter: the role moves at every hand-over.
But a CPU that never goes idle (a task running all along) keeps the role
it has, so a wrong guess lasts the whole replay: on the 16-CPU trace
replayed from 14.6 s, CPU 1 kept it where the kernel's CPU 2 did, and took
the group's remote expiries (expiring_cpu 0.59 against 0.99).

The trace says who held it: every tmigr_group_set_cpu_active/inactive
prints the group's ``migrator`` after the change, as a child bit. The
first report of a group gives the holder before it, except where a CPU
going active took a role nobody held (then nobody held it: no word). The
bit goes to the CPU that logged the report, which is in the group: the
core gives the role to that group's child of that bit (the holder itself
may never log a report, running all along).

Not here: groups above level 0 (their children are groups; the role
follows from the CPUs' activity below).
"""
from __future__ import annotations

import numpy as np

from ..trace.rows import select_events

_NONE = 0xFF  # TMIGR_NONE


def initial_migrators(ev, nr_cpus: int) -> tuple:
    """Per CPU, the migrator (a child bit) of its level-0 group before the
    group's first report, where that CPU logged it; 0 elsewhere (the
    script's initial_migrator)."""
    out = [0] * nr_cpus
    if not {"group", "lvl", "childmask", "migrator"} <= set(ev.columns):
        return tuple(out)
    g = select_events(ev, ("tmigr_group_set_cpu_active", "tmigr_group_set_cpu_inactive"),
                      ("cpu", "group", "lvl", "childmask", "migrator"))
    g = g[(g["lvl"] == 0).to_numpy(dtype=bool, na_value=False)].dropna(subset=["group", "childmask", "migrator"])
    if not len(g):
        return tuple(out)
    _, first = np.unique(g["group"].to_numpy(np.uint64), return_index=True)
    g = g.iloc[np.sort(first)]
    for cpu, child, m, went_active in zip(g["cpu"].tolist(), g["childmask"].tolist(), g["migrator"].tolist(),
                                          (g["event"] == "tmigr_group_set_cpu_active").tolist()):
        single = m > 0 and m & (m - 1) == 0 and m < _NONE
        if single and not (went_active and m == child) and 0 <= cpu < nr_cpus:
            out[cpu] = int(m)
    return tuple(out)
