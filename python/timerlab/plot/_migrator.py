"""Who was the timer-migration migrator when, read from a run's tmigr event log."""
from __future__ import annotations

import numpy as np
import pandas as pd

_MIGRATOR_EVENTS = ("tmigr_group_set_cpu_active", "tmigr_group_set_cpu_inactive")
TMIGR_NONE = 0xFF


def _migrator_intervals(events: pd.DataFrame, lo: int, hi: int) -> pd.DataFrame | None:
    """Intervals [start_ns, end_ns) in [lo, hi) during which a CPU was the
    migrator of groups up to ``level`` of the timer-migration hierarchy.

    The hierarchy is read from the boot events (tmigr_connect_cpu_parent,
    tmigr_connect_child_parent: which child is which bit of its parent);
    each group's migrator (the child bit, 0xff for none) from the state the
    tmigr_group_set_cpu_active/inactive events print after each update. The
    migrator of a group is the migrator of its migrator child, down to a
    CPU. None when the log has no hierarchy (push model, trimmed log)."""
    if "event" not in events.columns:
        return None
    kind = events["event"].astype(str)
    cpu_links = events[kind == "tmigr_connect_cpu_parent"]
    grp_links = events[kind == "tmigr_connect_child_parent"]
    sets = events[kind.isin(_MIGRATOR_EVENTS) & (events["ts_ns"] < hi)]
    if not len(cpu_links) or not len(sets):
        return None
    children: dict[int, dict[int, tuple]] = {}
    for r in cpu_links[["parent", "groupmask", "cpu_id"]].itertuples(index=False):
        children.setdefault(int(r.parent), {})[int(r.groupmask)] = ("cpu", int(r.cpu_id))
    for r in grp_links[["parent", "groupmask", "group"]].itertuples(index=False):
        children.setdefault(int(r.parent), {})[int(r.groupmask)] = ("group", int(r.group))
    level = {int(g): int(lv) for g, lv in zip(sets["group"], sets["lvl"])}
    for r in events[kind == "tmigr_group_set"][["group", "lvl"]].itertuples(index=False):
        level[int(r.group)] = int(r.lvl)
    mig: dict[int, int] = {}
    before = sets[sets["ts_ns"] < lo]
    if len(before):
        last = before.groupby("group", sort=False)["migrator"].last()
        mig.update({int(g): int(m) for g, m in last.items()})

    def roles() -> dict[int, int]:
        """cpu -> highest level it is the migrator of."""
        memo: dict[int, int | None] = {}

        def cpu_of(g: int, depth=0):
            if g in memo:
                return memo[g]
            memo[g] = None
            bit = mig.get(g, TMIGR_NONE)
            child = children.get(g, {}).get(bit) if bit != TMIGR_NONE else None
            if child is not None and depth < 64:
                memo[g] = child[1] if child[0] == "cpu" else cpu_of(child[1], depth + 1)
            return memo[g]

        out: dict[int, int] = {}
        for g in children:
            c = cpu_of(g)
            if c is not None:
                out[c] = max(out.get(c, -1), level.get(g, 0))
        return out

    rows = []
    current, since = roles(), lo
    inside = sets[sets["ts_ns"] >= lo]
    ts = inside["ts_ns"].to_numpy(dtype=np.int64)
    grp = inside["group"].to_numpy(dtype=np.int64)
    mg = inside["migrator"].to_numpy(dtype=np.int64)
    i = 0
    while i < len(ts):
        t = ts[i]
        while i < len(ts) and ts[i] == t:   # a walk up the hierarchy happens at one instant
            mig[int(grp[i])] = int(mg[i])
            i += 1
        new = roles()
        if new != current:
            if t > since:
                rows.extend((c, since, t, lvl) for c, lvl in current.items())
            current, since = new, t
    if hi > since:
        rows.extend((c, since, hi, lvl) for c, lvl in current.items())
    return pd.DataFrame(rows, columns=["cpu", "start_ns", "end_ns", "level"])
