"""The timer-migration hierarchy through the public API (tl.hierarchy, tl.Topology).

Ground truth, in order of weight:
- real 6.12.95 boot traces (tests/data/traces/*.boot.txt.xz): the kernel's own
  tmigr_* tracepoints while it built the hierarchy;
- the reference (kernel-timers.md §4.2 worked examples, §9 item 11);
- properties that hold for any topology, checked with hypothesis, with the
  level counts computed here from the formula of §4.2, not taken from the model.
"""
from __future__ import annotations

import math
import random
from collections import Counter

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import timerlab as tl

from conftest import TRACE_DIR

TMIGR_CHILDREN_PER_GROUP = 8
KTIME_MAX = (1 << 63) - 1

# The tracepoints emitted while the hierarchy is built and its CPUs come
# online, and the payload fields each prints (include/trace/events/timer_migration.h).
BOOT_FIELDS = {
    "tmigr_group_set": ("group", "lvl", "numa"),
    "tmigr_connect_child_parent": ("group", "groupmask", "parent", "lvl", "numa", "num_children"),
    "tmigr_connect_cpu_parent": ("cpu_id", "groupmask", "parent", "lvl", "numa", "num_children"),
    "tmigr_cpu_online": ("cpu_id", "parent", "wakeup_ns"),
    "tmigr_cpu_active": ("cpu_id", "parent", "wakeup_ns"),
    "tmigr_group_set_cpu_active": ("group", "lvl", "numa", "active", "migrator", "parent", "childmask"),
}
POINTER_FIELDS = ("group", "parent")

# The two real boots: file, CPUs, node of each CPU (from the traces' README).
BOOTS = {
    "16cpu": ("qemu-6.12.95-16cpu-2node-mixed.boot.txt.xz", 16, [0] * 8 + [1] * 8),
    "32cpu": ("qemu-6.12.95-32cpu-2node-mixed.boot.txt.xz", 32, [0] * 16 + [1] * 16),
}


# ---------------------------------------------------------------------------
# Helpers written from the reference, independent of the model.

def order_base_2(n: int) -> int:
    return 0 if n <= 1 else (n - 1).bit_length()


def expected_levels(cpus: int, nodes: int) -> tuple[int, int]:
    """(levels, crossnode level) by the formula of reference §4.2 (tmigr_init)."""
    if cpus == 1:
        return 0, 0
    cpus_per_node = math.ceil(cpus / nodes)
    cpulvl = math.ceil(order_base_2(cpus_per_node) / 3)
    nodelvl = math.ceil(order_base_2(nodes) / 3)
    return cpulvl + nodelvl, cpulvl


def boot_window(events: pd.DataFrame) -> pd.DataFrame:
    """The tmigr events of the boot: everything before the first tmigr event of
    another kind (the first idle entry, update or remote expiry)."""
    tmigr = events[events["event"].astype(str).str.startswith("tmigr_")]
    other = ~tmigr["event"].isin(list(BOOT_FIELDS))
    end = int(other.to_numpy().argmax()) if other.any() else len(tmigr)
    return tmigr.iloc[:end]


def normalize(events: pd.DataFrame) -> list[tuple]:
    """(event, field values...) per event; group pointers become ids in order of
    creation (tmigr_group_set), NULL becomes None."""
    ids: dict[int, int] = {}
    for g in events.loc[events["event"] == "tmigr_group_set", "group"]:
        ids.setdefault(int(g), len(ids))
    out = []
    for row in events.itertuples(index=False):
        rec = [str(row.event)]
        for f in BOOT_FIELDS[str(row.event)]:
            v = getattr(row, f)
            assert not pd.isna(v), f"{row.event} without {f}"
            v = int(v)
            if f in POINTER_FIELDS:
                v = ids[v] if v else None
            rec.append((f, v))
        out.append(tuple(rec))
    return out


def structure_from_trace(events: pd.DataFrame):
    """Groups (id -> dict) and CPUs (cpu -> (group id, groupmask)) as the kernel
    printed them while building the hierarchy."""
    rows = normalize(events)
    groups: dict[int, dict] = {}
    cpus: dict[int, tuple[int, int]] = {}
    for rec in rows:
        ev, fields = rec[0], dict(rec[1:])
        if ev == "tmigr_group_set":
            groups[fields["group"]] = {"level": fields["lvl"], "numa": fields["numa"], "parent": -1,
                                       "groupmask": None, "num_children": 0}
        elif ev == "tmigr_connect_child_parent":
            g = groups[fields["group"]]
            g["parent"], g["groupmask"] = fields["parent"], fields["groupmask"]
            groups[fields["parent"]]["num_children"] = fields["num_children"]
        elif ev == "tmigr_connect_cpu_parent":
            cpus[fields["cpu_id"]] = (fields["parent"], fields["groupmask"])
            groups[fields["parent"]]["num_children"] = fields["num_children"]
    return groups, cpus


def children_of(h: tl.Hierarchy) -> dict[int, list[tuple[str, int, int]]]:
    """group -> [(kind, id, groupmask)] of its children (CPUs or groups)."""
    kids: dict[int, list] = {int(g): [] for g in h.groups["group"]}
    for cpu, grp, mask in zip(h.cpus["cpu"], h.cpus["group"], h.cpus["groupmask"]):
        kids[int(grp)].append(("cpu", int(cpu), int(mask)))
    for grp, parent, mask in zip(h.groups["group"], h.groups["parent"], h.groups["groupmask"]):
        if parent >= 0:
            kids[int(parent)].append(("group", int(grp), int(mask)))
    return kids


def check_hierarchy(h: tl.Hierarchy, topo: tl.Topology, kernel: str) -> None:
    """The structural properties every built hierarchy has (see module doc)."""
    levels, crossnode = expected_levels(topo.cpus, topo.nodes)
    assert (h.levels, h.crossnode_level) == (levels, crossnode)
    g, c = h.groups, h.cpus
    assert c["cpu"].tolist() == list(range(topo.cpus))
    assert c["node"].tolist() == list(topo.node_of_cpu)
    if topo.cpus == 1:
        assert g.empty and (c["group"] == -1).all()
        return
    assert g["group"].tolist() == list(range(len(g)))
    level = dict(zip(g["group"], g["level"]))
    # Every CPU is in exactly one level-0 group, and appears below it.
    assert all(level[grp] == 0 for grp in c["group"])
    below = Counter(cpu for cpus in g.loc[g["level"] == 0, "cpus"] for cpu in cpus)
    assert below == Counter(range(topo.cpus))
    # Children: at most 8, groupmasks BIT(0)..BIT(n-1), num_children counts them.
    kids = children_of(h)
    for grp, n in zip(g["group"], g["num_children"]):
        masks = sorted(m for _, _, m in kids[grp])
        assert 1 <= n <= TMIGR_CHILDREN_PER_GROUP
        assert masks == [1 << i for i in range(n)], (grp, masks, n)
    # Parents are exactly one level up; every group sits below the computed levels.
    for grp, parent in zip(g["group"], g["parent"]):
        if parent >= 0:
            assert level[parent] == level[grp] + 1
    assert g["level"].max() < levels
    # Exactly one root. The 6.12 set-up may end with two parentless groups on
    # the last computed level: after its cross-node adoptions a node can need
    # one group more there than the level budget has, and 6.12 stops at that
    # level whatever it holds (§9 item 11; see test_612_forest_of_two_roots).
    roots = g[g["parent"] < 0]
    if len(roots) != 1:
        assert kernel != "latest", roots
        assert len(roots) > 1 and (roots["level"] == levels - 1).all(), roots
    assert (roots["level"] == g["level"].max()).all()
    # NUMA labels: the node below the crossnode level, NUMA_NO_NODE (-1) above.
    assert (g.loc[g["level"] >= crossnode, "numa"] == -1).all()
    assert (g.loc[g["level"] < crossnode, "numa"] >= 0).all()
    if kernel == "latest":
        assert h.node_pure_below_crossnode()
        for numa, cpus in zip(g.loc[g["level"] < crossnode, "numa"], g.loc[g["level"] < crossnode, "cpus"]):
            assert {topo.node_of_cpu[cpu] for cpu in cpus} == {numa}


# ---------------------------------------------------------------------------
# The real boots.

@pytest.fixture(scope="module", params=list(BOOTS), ids=list(BOOTS))
def boot(request):
    name, cpus, node_of_cpu = BOOTS[request.param]
    events = tl.read_ftrace(TRACE_DIR / name).events
    return cpus, node_of_cpu, events


def test_boot_window_holds_the_whole_bring_up(boot):
    cpus, _, events = boot
    window = boot_window(events)
    kinds = Counter(window["event"].astype(str))
    assert kinds["tmigr_cpu_online"] == kinds["tmigr_connect_cpu_parent"] == cpus
    assert sorted(window.loc[window["event"] == "tmigr_cpu_online", "cpu_id"].astype(int)) == list(range(cpus))
    # After it, the hierarchy never changes again (no hotplug in these boots).
    rest = events.loc[events.index > window.index[-1]]
    assert not rest["event"].isin(["tmigr_group_set", "tmigr_connect_child_parent", "tmigr_connect_cpu_parent",
                                   "tmigr_cpu_online"]).any()


def test_boot_events_reproduce_the_real_boot(boot):
    """tl.hierarchy(kernel="6.12").boot_events prints what 6.12.95 printed,
    event for event and field for field (group pointers by creation order)."""
    cpus, _, events = boot
    real = normalize(boot_window(events))
    h = tl.hierarchy(cpus=cpus, nodes=2, kernel="6.12")
    sim = normalize(h.boot_events[h.boot_events["event"].isin(list(BOOT_FIELDS))])
    assert len(sim) == len(h.boot_events), "boot_events holds other events than the boot ones"
    for i, (r, s) in enumerate(zip(real, sim)):
        assert r == s, f"event {i}: kernel {r} vs timerlab {s}"
    assert len(sim) == len(real)
    assert len(real) == {16: 71, 32: 147}[cpus]


def test_boot_events_are_logged_on_the_cpu_that_emits_them(boot):
    cpus, _, events = boot
    window = boot_window(events)
    h = tl.hierarchy(cpus=cpus, nodes=2, kernel="6.12")
    assert h.boot_events["cpu"].tolist() == window["cpu"].tolist()


def test_final_structure_matches_the_real_boot(boot):
    cpus, node_of_cpu, events = boot
    groups, cpu_groups = structure_from_trace(boot_window(events))
    h = tl.hierarchy(cpus=cpus, nodes=2, kernel="6.12")
    assert h.topology.node_of_cpu == tuple(node_of_cpu)
    g = h.groups.set_index("group")
    assert sorted(groups) == g.index.tolist()
    for gid, kg in groups.items():
        row = g.loc[gid]
        got = {"level": int(row["level"]), "numa": int(row["numa"]), "parent": int(row["parent"]),
               "num_children": int(row["num_children"])}
        want = {k: kg[k] for k in got}
        assert got == want, gid
        if kg["parent"] >= 0:
            assert int(row["groupmask"]) == kg["groupmask"], gid
    for cpu, (grp, mask) in cpu_groups.items():
        assert (int(h.cpus.loc[cpu, "group"]), int(h.cpus.loc[cpu, "groupmask"])) == (grp, mask)
    levels = max(k["level"] for k in groups.values()) + 1
    assert h.levels == levels == {16: 2, 32: 3}[cpus]
    assert h.groups.groupby("level").size().tolist() == {16: [2, 1], 32: [4, 2, 1]}[cpus]
    # Contiguous nodes: node-pure with or without the 2025 fix, and the fixed
    # set-up builds the same groups (in another order).
    assert h.node_pure_below_crossnode()
    fixed = tl.hierarchy(cpus=cpus, nodes=2, kernel="latest")
    assert fixed.groups.groupby("level").size().tolist() == h.groups.groupby("level").size().tolist()
    assert sorted(map(tuple, fixed.groups["cpus"])) == sorted(map(tuple, h.groups["cpus"]))


# ---------------------------------------------------------------------------
# The reference's worked examples (§4.2, §9 item 11).

@pytest.mark.parametrize("kernel", ["6.12", "latest"])
@pytest.mark.parametrize(
    "cpus, nodes, levels, crossnode, per_level",
    [
        (4, 1, 1, 1, [1]),
        (8, 1, 1, 1, [1]),
        (9, 1, 2, 2, [2, 1]),
        (64, 1, 2, 2, [8, 1]),
        (65, 1, 3, 3, [9, 2, 1]),
        (512, 1, 3, 3, [64, 8, 1]),
        (48, 2, 3, 2, [6, 2, 1]),   # 2 nodes x 24: the kernel's own example
        (16, 2, 2, 1, [2, 1]),      # 2 nodes x 8
        (256, 2, 4, 3, [32, 4, 2, 1]),  # 2 nodes x 128
    ],
)
def test_reference_4_2_examples(cpus, nodes, levels, crossnode, per_level, kernel):
    h = tl.hierarchy(cpus=cpus, nodes=nodes, kernel=kernel)
    assert (h.levels, h.crossnode_level) == (levels, crossnode)
    assert h.groups.groupby("level").size().tolist() == per_level
    check_hierarchy(h, h.topology, "latest" if kernel == "latest" else "6.12")


def test_two_nodes_of_24_cpus_as_in_the_kernel_diagram():
    h = tl.hierarchy(cpus=48, nodes=2)
    g = h.groups.set_index("group")
    lvl0 = g[g["level"] == 0]
    assert sorted(map(tuple, lvl0["cpus"])) == [tuple(range(i, i + 8)) for i in range(0, 48, 8)]
    lvl1 = g[g["level"] == 1]
    assert sorted(map(tuple, lvl1["cpus"])) == [tuple(range(24)), tuple(range(24, 48))]
    assert sorted(lvl1["numa"]) == [0, 1]
    (top,) = g.index[g["level"] == 2]
    assert (lvl1["parent"] == top).all() and g.loc[top, "numa"] == -1


def test_uniprocessor_has_no_hierarchy():
    h = tl.hierarchy(cpus=1)
    assert h.levels == 0 and h.groups.empty
    assert h.cpus["group"].tolist() == [-1]


@pytest.mark.parametrize("kernel", ["6.12", "6.12.95", "6.17"])
def test_item11_interleaved_32_cpus_mix_nodes_before_the_fix(kernel):
    node_of_cpu = [c % 2 for c in range(32)]
    h = tl.hierarchy(node_of_cpu=node_of_cpu, kernel=kernel)
    assert (h.levels, h.crossnode_level) == (3, 2)
    assert not h.node_pure_below_crossnode()
    g = h.groups.set_index("group")
    # Node 1's level-1 group adopted node 0's first level-0 group (CPUs 0, 2, ..., 14).
    grp0 = int(h.cpus.loc[0, "group"])
    assert g.loc[grp0, "cpus"] == list(range(0, 16, 2))
    parent = g.loc[grp0, "parent"]
    assert g.loc[parent, "level"] == 1 and g.loc[parent, "numa"] == 1
    assert {node_of_cpu[c] for c in g.loc[parent, "cpus"]} == {0, 1}


@pytest.mark.parametrize("kernel", ["6.18", "latest"])
def test_item11_interleaved_32_cpus_node_pure_after_the_fix(kernel):
    node_of_cpu = [c % 2 for c in range(32)]
    h = tl.hierarchy(node_of_cpu=node_of_cpu, kernel=kernel)
    assert h.node_pure_below_crossnode()
    assert h.groups.groupby("level").size().tolist() == [4, 2, 1]
    check_hierarchy(h, h.topology, "latest")
    for _, row in h.groups[h.groups["level"] < 2].iterrows():
        assert {node_of_cpu[c] for c in row["cpus"]} == {row["numa"]}


def test_612_forest_of_two_roots():
    """512 CPUs on 8 interleaved nodes: with the 6.12 set-up node 1's level-1
    groups (which adopted node 0's first group) need a 9th child slot at the
    top level; 6.12 creates a second top group and stops there, leaving two
    parentless groups (6.12.y: WARN "Assert single root"). The fix gives one
    root and node-pure groups."""
    topo = tl.Topology(cpus=512, nodes=8, node_of_cpu=[c % 8 for c in range(512)])
    old = tl.hierarchy(topology=topo, kernel="6.12")
    roots = old.groups[old.groups["parent"] < 0]
    assert roots["level"].tolist() == [2, 2]
    check_hierarchy(old, topo, "6.12")
    new = tl.hierarchy(topology=topo, kernel="latest")
    assert (new.groups["parent"] < 0).sum() == 1
    check_hierarchy(new, topo, "latest")


# ---------------------------------------------------------------------------
# Properties over random topologies.

@st.composite
def topologies(draw, max_cpus=4096):
    cpus = draw(st.one_of(st.integers(1, 80), st.integers(1, max_cpus),
                          st.sampled_from([8, 9, 64, 65, 72, 450, 512, 513, 4096])))
    nodes = draw(st.integers(1, min(16, cpus)))
    layout = draw(st.sampled_from(["contiguous", "interleaved"]))
    node_of_cpu = None if layout == "contiguous" else [c % nodes for c in range(cpus)]
    order = None
    if draw(st.booleans()):
        order = list(range(cpus))
        random.Random(draw(st.integers(0, 2**32 - 1))).shuffle(order)
    return tl.Topology(cpus=cpus, nodes=nodes, node_of_cpu=node_of_cpu, bringup_order=order)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(topo=topologies(), kernel=st.sampled_from(["6.12", "latest"]))
def test_hierarchy_properties(topo, kernel):
    h = tl.hierarchy(topology=topo, kernel=kernel)
    check_hierarchy(h, topo, kernel)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(topo=topologies(max_cpus=1200))
def test_the_fix_changes_only_node_mixing_trees(topo):
    """Level-0 groups fill in bring-up order the same way in both set-ups; if
    the 6.12 tree is node-pure with one root, the fix builds the same groups
    (only in another order)."""
    old = tl.hierarchy(topology=topo, kernel="6.12")
    new = tl.hierarchy(topology=topo, kernel="latest")
    assert (old.levels, old.crossnode_level) == (new.levels, new.crossnode_level)

    def groups_of(h, level=None):
        g = h.groups if level is None else h.groups[h.groups["level"] == level]
        return sorted((lvl, tuple(cpus)) for lvl, cpus in zip(g["level"], g["cpus"]))

    assert groups_of(old, 0) == groups_of(new, 0)
    assert h_cpus(old) == h_cpus(new)
    if old.node_pure_below_crossnode() and (old.groups["parent"] < 0).sum() == 1:
        assert groups_of(old) == groups_of(new)


def h_cpus(h):
    """cpu -> (CPUs of its level-0 group, its groupmask)."""
    cpus_of = dict(zip(h.groups["group"], h.groups["cpus"]))
    return {c: (tuple(cpus_of.get(g, ())), m) for c, g, m in zip(h.cpus["cpu"], h.cpus["group"], h.cpus["groupmask"])}


def test_boot_events_are_consistent_with_the_structure():
    """For any topology, the connect events printed at boot describe the
    final structure (as for the real boots)."""
    for kernel in ("6.12", "latest"):
        for topo in (tl.Topology(cpus=100, nodes=3), tl.Topology(cpus=70, node_of_cpu=[c % 4 for c in range(70)])):
            h = tl.hierarchy(topology=topo, kernel=kernel)
            groups, cpu_groups = structure_from_trace(h.boot_events)
            g = h.groups.set_index("group")
            assert sorted(groups) == g.index.tolist()
            for gid, kg in groups.items():
                assert (kg["level"], kg["numa"], kg["parent"]) == (g.loc[gid, "level"], g.loc[gid, "numa"],
                                                                    g.loc[gid, "parent"])
                assert kg["num_children"] == g.loc[gid, "num_children"]
            assert cpu_groups == {c: (int(grp), int(m)) for c, grp, m in
                                  zip(h.cpus["cpu"], h.cpus["group"], h.cpus["groupmask"])}
            online = h.boot_events[h.boot_events["event"] == "tmigr_cpu_online"]
            assert sorted(online["cpu_id"].astype(int)) == list(range(topo.cpus))
            assert (online["wakeup_ns"] == KTIME_MAX).all()


# ---------------------------------------------------------------------------
# Bad input: ValueError (bad value) or TypeError (bad type) naming the option.

@pytest.mark.parametrize(
    "kwargs, exc, option",
    [
        (dict(cpus=0), ValueError, "cpus"),
        (dict(cpus=-3), ValueError, "cpus"),
        (dict(cpus=1 << 20), ValueError, "cpus"),
        (dict(), ValueError, "cpus"),
        (dict(cpus="8"), TypeError, "cpus"),
        (dict(cpus=8.0), TypeError, "cpus"),
        (dict(cpus=True), TypeError, "cpus"),
        (dict(cpus=4, nodes=5), ValueError, "nodes"),
        (dict(cpus=4, nodes=0), ValueError, "nodes"),
        (dict(cpus=4, nodes="2"), TypeError, "nodes"),
        (dict(cpus=4, node_of_cpu=[0, 1, 0]), ValueError, "node_of_cpu"),
        (dict(cpus=2, node_of_cpu=[0, 1, 0]), ValueError, "node_of_cpu"),
        (dict(cpus=4, nodes=3, node_of_cpu=[0, 0, 1, 1]), ValueError, "node_of_cpu"),
        (dict(cpus=4, nodes=2, node_of_cpu=[0, 0, 1, 5]), ValueError, "node_of_cpu"),
        (dict(cpus=2, node_of_cpu=[0, -1]), ValueError, "node_of_cpu"),
        (dict(cpus=2, node_of_cpu=[0, "1"]), TypeError, "node_of_cpu"),
        (dict(cpus=2, node_of_cpu=[0, 1.0]), TypeError, "node_of_cpu"),
        (dict(cpus=4, bringup_order=[0, 1, 2]), ValueError, "bringup_order"),
        (dict(cpus=4, bringup_order=[0, 1, 2, 2]), ValueError, "bringup_order"),
        (dict(cpus=4, bringup_order=[0, 1, 2, 4]), ValueError, "bringup_order"),
        (dict(cpus=4, bringup_order=[0, 1, 2, 3, 0]), ValueError, "bringup_order"),
        (dict(cpus=4, bringup_order=[0, 1, 2, -3]), ValueError, "bringup_order"),
        (dict(cpus=4, bringup_order=[0, 1, 2, "3"]), TypeError, "bringup_order"),
        (dict(cpus=4, kernel="6.x"), ValueError, "kernel"),
        (dict(cpus=4, kernel="linux-6.12"), ValueError, "kernel"),
        (dict(cpus=4, kernel=""), ValueError, "kernel"),
        (dict(cpus=4, kernel="3.10"), ValueError, "kernel"),
        (dict(cpus=4, kernel="Latest"), ValueError, "kernel"),
    ],
)
def test_bad_input_names_the_option(kwargs, exc, option):
    with pytest.raises(exc, match=option):
        tl.hierarchy(**kwargs)


@pytest.mark.parametrize("kernel", [6.12, 612, None, ("6", "12")])
def test_kernel_of_the_wrong_type(kernel):
    with pytest.raises((TypeError, ValueError), match="kernel"):
        tl.hierarchy(cpus=4, kernel=kernel)


@pytest.mark.parametrize(
    "kwargs, exc, option",
    [
        (dict(cpus=0), ValueError, "cpus"),
        (dict(cpus=3, nodes=4), ValueError, "nodes"),
        (dict(node_of_cpu=[1, 1]), ValueError, "node_of_cpu"),
        (dict(cpus=3, node_of_cpu=[0, 0]), ValueError, "node_of_cpu"),
        (dict(cpus=2, bringup_order=[1, 1]), ValueError, "bringup_order"),
        (dict(cpus=4, smt=0), ValueError, "smt"),
        (dict(cpus=4, smt=2, llc_size=3), ValueError, "llc_size"),
    ],
)
def test_bad_topology_names_the_option(kwargs, exc, option):
    with pytest.raises(exc, match=option):
        tl.Topology(**kwargs)


def test_options_are_keyword_only():
    with pytest.raises(TypeError):
        tl.hierarchy(8)  # noqa
    with pytest.raises(TypeError):
        tl.Topology(8)  # noqa


def test_good_input_forms():
    # node_of_cpu alone gives the CPU and node counts; numpy integers are integers.
    import numpy as np

    h = tl.hierarchy(node_of_cpu=np.array([0, 1, 0, 1]), bringup_order=np.array([3, 2, 1, 0]), kernel="6.12.95")
    assert (h.topology.cpus, h.topology.nodes) == (4, 2)
    assert h.topology.bringup_order == (3, 2, 1, 0)
    check_hierarchy(h, h.topology, "6.12")
    assert repr(h).startswith("Hierarchy(4 CPUs, 2 nodes")


def test_no_hierarchy_before_6_9():
    with pytest.raises(ValueError, match="kernel"):
        tl.hierarchy(cpus=8, kernel="6.8")


def test_topology_and_topology_options_are_exclusive():
    with pytest.raises(ValueError, match="cpus"):
        tl.hierarchy(topology=tl.Topology(cpus=8), cpus=4)
