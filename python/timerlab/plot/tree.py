"""tl.plot.hierarchy: the timer-migration hierarchy drawn as a tree."""
from __future__ import annotations

import numpy as np

from ..hierarchy import Hierarchy, hierarchy as _build_hierarchy
from ..simulate import Result
from ._common import _CROSSNODE_COLOR, _axes, _node_color

HIERARCHY_MAX_CPUS = 64  # above this many CPUs, tl.plot.hierarchy draws level-0 groups with CPU counts


def hierarchy(h, *, ax=None, max_cpus: int = HIERARCHY_MAX_CPUS):
    """The timer-migration hierarchy as a tree: CPUs at the bottom, the
    groups of each level above, edges from each child to its parent.

    ``h``: a :class:`timerlab.Hierarchy` (``tl.hierarchy(...)``) or a Result
    (its topology and kernel). CPUs and node-local groups are colored by
    NUMA node, cross-node groups grey. Above ``max_cpus`` CPUs the CPUs are
    not drawn: each level-0 group shows its CPU count instead (group labels
    are dropped when a level holds too many groups to read).
    """
    if isinstance(h, Result):
        h = _build_hierarchy(topology=h.config.topology, kernel=h.config.kernel)
    if not isinstance(h, Hierarchy):
        raise TypeError(f"hierarchy takes a timerlab Hierarchy (tl.hierarchy(...)) or a Result, got "
                        f"{type(h).__name__}")
    if not isinstance(max_cpus, (int, np.integer)) or max_cpus < 1:
        raise ValueError(f"max_cpus must be a positive integer, got {max_cpus!r}")
    from matplotlib.collections import LineCollection
    from matplotlib.patches import Patch, Rectangle

    groups, cpus = h.groups, h.cpus
    ncpu = len(cpus)
    collapse = ncpu > max_cpus and len(groups) > 0
    kids: dict[int, list] = {}            # group -> [(groupmask, kind, id)]
    for r in groups.itertuples(index=False):
        if r.parent >= 0:
            kids.setdefault(int(r.parent), []).append((int(r.groupmask), "group", int(r.group)))
    if not collapse:
        for r in cpus.itertuples(index=False):
            if r.group >= 0:
                kids.setdefault(int(r.group), []).append((int(r.groupmask), "cpu", int(r.cpu)))
    # Leaves left to right in depth-first order from the roots, so edges do not cross.
    leaves: list[tuple] = []
    seen: set = set()

    def walk(kind, ident):
        seen.add((kind, ident))
        children = sorted(kids.get(ident, [])) if kind == "group" else []
        if not children:
            leaves.append((kind, ident))
        for _, k, i in children:
            walk(k, i)

    for r in groups[groups["parent"] < 0].sort_values("group").itertuples(index=False):
        walk("group", int(r.group))
    for r in groups.itertuples(index=False):          # anything unreachable from a root, still drawn
        if ("group", int(r.group)) not in seen:
            walk("group", int(r.group))
    if not collapse:
        for c in cpus["cpu"]:
            if ("cpu", int(c)) not in seen:
                walk("cpu", int(c))
    xpos: dict[tuple, float] = {leaf: float(i) for i, leaf in enumerate(leaves)}

    def place(kind, ident):
        if (kind, ident) in xpos:
            return xpos[(kind, ident)]
        xs = [place(k, i) for _, k, i in kids.get(ident, [])]
        xpos[(kind, ident)] = (min(xs) + max(xs)) / 2
        return xpos[(kind, ident)]

    for g in groups["group"]:
        place("group", int(g))
    cpu_row = 0                                      # y of the CPUs (not drawn when collapsed)
    base = 0 if collapse else 1                      # y of level 0

    def y_of(level):
        return base + level

    level_of = dict(zip(groups["group"].astype(int), groups["level"].astype(int)))
    per_level = groups.groupby("level").size().to_dict()
    fig, ax = _axes(ax, (max(6.0, min(0.28 * max(len(leaves), 1) + 1.5, 22.0)),
                         1.3 + 1.1 * (h.levels + (0 if collapse else 1))))

    def span(kind, ident):
        """Leftmost and rightmost leaf x under a node."""
        if kind == "cpu" or not kids.get(ident):
            return xpos[(kind, ident)], xpos[(kind, ident)]
        ends = [span(k, i) for _, k, i in kids[ident]]
        return min(e[0] for e in ends), max(e[1] for e in ends)

    segs = []
    for r in groups.itertuples(index=False):
        g, lvl = int(r.group), int(r.level)
        x0, y0 = xpos[("group", g)], y_of(lvl)
        left, right = span("group", g)
        w = right - left + 0.8                      # a group's box spans the leaves under it
        color = _CROSSNODE_COLOR if r.numa < 0 else _node_color(r.numa)
        ax.add_patch(Rectangle((left - 0.4, y0 - 0.2), w, 0.4, facecolor=color, edgecolor="0.3", lw=0.6,
                               alpha=0.9, gid=f"hierarchy:group:{g}", zorder=2))
        crowded = per_level.get(lvl, 0)
        if crowded <= 64:
            text = f"{len(r.cpus)}" if collapse and lvl == 0 else f"g{g}"
            ax.text(x0, y0, text, ha="center", va="center", zorder=3,
                    fontsize="x-small" if crowded > 16 else "small", rotation=90 if crowded > 32 and w < 2 else 0)
        if r.parent >= 0:
            segs.append([(x0, y0 + 0.2), (xpos[("group", int(r.parent))], y_of(level_of[int(r.parent)]) - 0.2)])
    if not collapse:
        for r in cpus.itertuples(index=False):
            x0 = xpos[("cpu", int(r.cpu))]
            ax.add_patch(Rectangle((x0 - 0.35, cpu_row - 0.15), 0.7, 0.3, facecolor=_node_color(r.node),
                                   edgecolor="0.3", lw=0.5, alpha=0.55, gid=f"hierarchy:cpu:{int(r.cpu)}", zorder=2))
            ax.text(x0, cpu_row, str(int(r.cpu)), ha="center", va="center", zorder=3,
                    fontsize="xx-small" if ncpu > 32 else "small", rotation=90 if ncpu > 32 else 0)
            if r.group >= 0:
                segs.append([(x0, cpu_row + 0.15), (xpos[("group", int(r.group))], y_of(level_of[int(r.group)]) - 0.2)])
    edges = LineCollection(segs, colors="0.45", linewidths=0.7, zorder=1)
    edges.set_gid("hierarchy:edges")
    ax.add_collection(edges)
    sizes = groups.loc[groups["level"] == 0, "cpus"].map(len)
    counts = f"{sizes.min()}" if sizes.min() == sizes.max() else f"{sizes.min()}–{sizes.max()}"
    nlev = max(h.levels, int(groups["level"].max()) + 1 if len(groups) else 0)
    ticks, labels = [], []
    if not collapse:
        ticks.append(cpu_row)
        labels.append("CPUs")
    for lvl in range(nlev):
        ticks.append(y_of(lvl))
        labels.append(f"level {lvl}" + (" (crossnode)" if lvl == h.crossnode_level and h.topology.nodes > 1 else "")
                      + (f"\n({counts} CPUs each)" if collapse and lvl == 0 else ""))
    ax.set_yticks(ticks, labels, fontsize="small")
    ax.set_xticks([])
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    ax.set_xlim(-0.8, max(len(leaves), 1) - 0.2)
    ax.set_ylim(min(ticks, default=0) - 0.5, max(ticks, default=0) + 0.5)
    nodes = sorted(set(int(n) for n in cpus["node"]))
    handles = [Patch(facecolor=_node_color(n), edgecolor="0.3", label=f"node {n}") for n in nodes[:10]]
    if (groups["numa"] < 0).any():
        handles.append(Patch(facecolor=_CROSSNODE_COLOR, edgecolor="0.3", label="cross-node"))
    if len(nodes) <= 10:
        ax.legend(handles=handles, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.set_title(f"Timer-migration hierarchy: {ncpu} CPUs, {h.topology.nodes} nodes, kernel {h.kernel}"
                 + (" (CPUs counted per level-0 group)" if collapse else ""), fontsize="medium")
    return fig
