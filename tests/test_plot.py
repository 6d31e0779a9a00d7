"""tl.plot: each figure draws exactly the data it is given.

Real simulations (no mocks); the drawn artists are read back (bar heights,
rectangle widths, line data, patches) and compared with the Result's
DataFrames, computed independently here.
"""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import timerlab as tl  # noqa: E402
from timerlab import plot as tlplot  # noqa: E402

CAUSES = ["timer", "remote_duty", "ipi", "task", "tick", "irq", "hrtimer"]
MS = 1e6


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def run():
    return tl.simulate(tl.Config(cpus=8, nodes=2, duration_ns=50_000_000, record_events=True))


@pytest.fixture(scope="module")
def server():
    return tl.simulate(tl.Config(cpus=16, nodes=2, duration_ns=100_000_000, record_events=True,
                                 workload=tl.workloads.server(), seed=3))


@pytest.fixture(scope="module")
def sweep_df():
    """A frame shaped like tl.sweep's: grid columns, seed, then the summary."""
    rows = []
    for cpus in (2, 8, 32):
        for placement in ("push", "pull"):
            for seed in range(3):
                r = tl.simulate(tl.Config(cpus=cpus, placement=placement, seed=seed, duration_ns=20_000_000))
                rows.append({"cpus": cpus, "placement": placement, "seed": seed,
                             **r.summary.drop(["cpus", "placement"]).to_dict()})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------
# Reading artists back


def bars_by_cpu(ax) -> dict[str, dict[int, float]]:
    """{container label: {cpu: bar height}}, CPUs from the x tick labels."""
    cpu_at = {round(x, 6): int(t.get_text()) for x, t in zip(ax.get_xticks(), ax.get_xticklabels())}
    out = {}
    for cont in ax.containers:
        out[cont.get_label()] = {cpu_at[round(p.get_x() + p.get_width() / 2, 6)]: p.get_height()
                                 for p in cont.patches}
    return out


def collection(ax, gid):
    found = [c for c in ax.collections if c.get_gid() == gid]
    assert len(found) <= 1
    return found[0] if found else None


def rects_per_lane(coll) -> dict[int, list[tuple[float, float]]]:
    """{lane: [(x0, x1)]} of a timeline PolyCollection of rectangles."""
    out: dict[int, list] = {}
    for path in coll.get_paths():
        v = path.vertices
        lane = int(round(v[:, 1].mean()))
        out.setdefault(lane, []).append((v[:, 0].min(), v[:, 0].max()))
    return out


def total_width(coll) -> dict[int, float]:
    return {lane: sum(b - a for a, b in rects) for lane, rects in rects_per_lane(coll).items()} if coll else {}


def gids(ax) -> list[str]:
    return [p.get_gid() for p in ax.patches]


# ---------------------------------------------------------------------------
# wakeups


def test_wakeups_stacks_causes_and_adds_up_to_per_cpu(run):
    fig = tlplot.wakeups(run)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    bars = bars_by_cpu(ax)
    assert list(bars) == CAUSES  # causes add up to wakeups here: no "other" segment
    pc = run.per_cpu.set_index("cpu")
    for cause in CAUSES:
        assert bars[cause] == {c: float(v) for c, v in pc[f"wakeups_{cause}"].items()}
    total = {c: sum(bars[k][c] for k in bars) for c in pc.index}
    assert total == {c: float(v) for c, v in pc["wakeups"].items()}
    # Stacked: each segment starts where the one below ends.
    for below, above in zip(ax.containers, ax.containers[1:]):
        for p, q in zip(below.patches, above.patches):
            assert q.get_y() == pytest.approx(p.get_y() + p.get_height())
    assert "wakeups" in ax.get_ylabel() and "count" in ax.get_ylabel()


def test_legends_sit_beside_the_data():
    """The wakeup and residency panels (timerlab demo's figure) keep their
    legends outside the axes, so no bar (node 1's were covered) is hidden."""
    res = tl.simulate(tl.Config(cpus=32, nodes=2, duration_ns=100_000_000, seed=2))
    fig, axes = plt.subplots(2, 1, figsize=(9, 7), layout="constrained")
    tlplot.wakeups(res, ax=axes[0])
    tlplot.residency(res, ax=axes[1])
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in axes:
        legend, frame = ax.get_legend().get_window_extent(renderer), ax.get_window_extent(renderer)
        assert legend.x0 >= frame.x1 - 1, (legend, frame)


def test_wakeups_groups_cpus_by_node_with_a_gap():
    r = tl.simulate(tl.Config(cpus=8, nodes=2, layout="interleaved", duration_ns=20_000_000))
    ax = tlplot.wakeups(r, cause=False).axes[0]
    order = [int(t.get_text()) for t in ax.get_xticklabels()]
    node = dict(zip(r.per_cpu["cpu"], r.per_cpu["node"]))
    assert order == [0, 2, 4, 6, 1, 3, 5, 7]
    assert [node[c] for c in order] == [0] * 4 + [1] * 4
    xs = list(ax.get_xticks())
    assert xs[4] - xs[3] > xs[1] - xs[0]  # nodes are separated
    (cont,) = ax.containers
    assert [p.get_height() for p in cont.patches] == [float(r.per_cpu.set_index("cpu").loc[c, "wakeups"])
                                                        for c in order]
    # Colored by node.
    colors = {tuple(p.get_facecolor()) for p in cont.patches[:4]}, {tuple(p.get_facecolor()) for p in cont.patches[4:]}
    assert len(colors[0]) == len(colors[1]) == 1 and colors[0] != colors[1]
    assert {t.get_text() for t in ax.texts} == {"node 0", "node 1"}


def test_wakeups_takes_a_per_cpu_frame_and_cpu_order(run):
    ax = tlplot.wakeups(run.per_cpu, by="cpu").axes[0]
    bars = bars_by_cpu(ax)
    assert [int(t.get_text()) for t in ax.get_xticklabels()] == list(range(8))
    assert {c: sum(b[c] for b in bars.values()) for c in range(8)} == {
        c: float(v) for c, v in run.per_cpu.set_index("cpu")["wakeups"].items()}


def test_wakeups_other_segment_when_causes_fall_short(run):
    pc = run.per_cpu.copy()
    pc["wakeups"] += 2
    bars = bars_by_cpu(tlplot.wakeups(pc).axes[0])
    assert bars["other"] == {c: 2.0 for c in range(8)}
    assert {c: sum(b[c] for b in bars.values()) for c in range(8)} == {
        c: float(v) for c, v in pc.set_index("cpu")["wakeups"].items()}


def test_wakeups_bad_input(run, sweep_df):
    with pytest.raises(ValueError, match="wakeups_ipi"):
        tlplot.wakeups(run.per_cpu.drop(columns=["wakeups_ipi"]))
    with pytest.raises(ValueError, match="node"):
        tlplot.wakeups(run.per_cpu.drop(columns=["node"]))
    tlplot.wakeups(run.per_cpu.drop(columns=["node"]), by="cpu")  # no node needed then
    with pytest.raises(ValueError, match="by="):
        tlplot.wakeups(run, by="socket")
    with pytest.raises(ValueError, match="sweep frame.*x="):
        tlplot.wakeups(sweep_df)
    with pytest.raises(ValueError, match="need x="):
        tlplot.wakeups(run, hue="placement")
    with pytest.raises(ValueError, match="several rows per cpu"):
        tlplot.wakeups(pd.concat([run.per_cpu, run.per_cpu]))
    with pytest.raises(TypeError):
        tlplot.wakeups([1, 2, 3])


def test_wakeups_of_a_sweep_frame_is_the_sweep_curve(sweep_df):
    ax = tlplot.wakeups(sweep_df, x="cpus", hue="placement").axes[0]
    mean = sweep_df.groupby(["placement", "cpus"])["wakeups_per_cpu_per_s"].mean()
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert set(lines) == {"push", "pull"}
    for placement, ln in lines.items():
        assert list(ln.get_xdata()) == [2, 8, 32]
        np.testing.assert_allclose(ln.get_ydata(), mean.loc[placement].to_numpy(), rtol=1e-12)
    assert ax.get_xscale() == "log"  # 2..32 spans more than a decade
    assert ax.get_ylabel() == "wakeups per CPU per s"
    ax = tlplot.wakeups(sweep_df, x="cpus", hue="placement", y="energy_uj").axes[0]
    assert ax.get_ylabel() == "energy (µJ)"


# ---------------------------------------------------------------------------
# sweep


@pytest.mark.parametrize("confidence,dof,table", [
    (0.95, 1, 12.7062), (0.95, 2, 4.3027), (0.95, 3, 3.1824), (0.95, 4, 2.7764), (0.95, 10, 2.2281),
    (0.99, 5, 4.0321), (0.90, 30, 1.6973), (0.80, 7, 1.4149), (0.95, 2000, 1.9600)])
def test_t_quantile_matches_the_table(confidence, dof, table):
    assert tlplot.t_quantile(confidence, dof) == pytest.approx(table, abs=1e-4)


def test_sweep_mean_and_t_band(sweep_df):
    ax = tlplot.sweep(sweep_df, x="cpus", y="energy_uj", hue="placement", ci=0.95).axes[0]
    stats = sweep_df.groupby(["placement", "cpus"])["energy_uj"].agg(["mean", "std", "count"])
    assert (stats["count"] == 3).all()
    t = 4.302652729911275  # t(0.975, 2 dof)
    for placement in ("push", "pull"):
        (line,) = [ln for ln in ax.get_lines() if ln.get_label() == placement]
        s = stats.loc[placement]
        np.testing.assert_allclose(line.get_ydata(), s["mean"], rtol=1e-12)
        band = collection(ax, f"sweep:band:{placement}")
        v = band.get_paths()[0].vertices
        for x, m, sd in zip(s.index, s["mean"], s["std"]):
            ys = v[np.isclose(v[:, 0], x), 1]
            half = t * sd / np.sqrt(3)
            assert ys.min() == pytest.approx(m - half, rel=1e-9)
            assert ys.max() == pytest.approx(m + half, rel=1e-9)
        assert band.get_facecolor()[0][:3] == pytest.approx(matplotlib.colors.to_rgb(line.get_color()))
    assert "95% t-interval" in ax.get_legend().get_title().get_text()


def test_sweep_without_hue_linear_x_and_no_band(sweep_df):
    one = sweep_df[sweep_df["placement"] == "pull"]
    ax = tlplot.sweep(one[one["cpus"] <= 8], x="cpus", y="wakeups", ci=None).axes[0]
    (line,) = ax.get_lines()
    np.testing.assert_allclose(line.get_ydata(), one[one["cpus"] <= 8].groupby("cpus")["wakeups"].mean())
    assert ax.get_xscale() == "linear"  # 2..8: less than a decade
    assert not ax.collections


def test_sweep_categorical_x(sweep_df):
    ax = tlplot.sweep(sweep_df, x="placement", y="energy_uj", hue="cpus").axes[0]
    assert {ln.get_label() for ln in ax.get_lines()} == {"2", "8", "32"}
    assert [t.get_text() for t in ax.get_xticklabels()] == ["pull", "push"]


def test_sweep_single_seed_has_no_band(sweep_df):
    ax = tlplot.sweep(sweep_df[sweep_df["seed"] == 0], x="cpus", y="wakeups", hue="placement").axes[0]
    assert len(ax.get_lines()) == 2 and not ax.collections
    assert "t-interval" not in ax.get_legend().get_title().get_text()


def test_sweep_bad_input(sweep_df):
    with pytest.raises(ValueError, match="'nope'"):
        tlplot.sweep(sweep_df, x="cpus", y="nope")
    with pytest.raises(ValueError, match="'colour'"):
        tlplot.sweep(sweep_df, x="cpus", y="wakeups", hue="colour")
    two = pd.concat([sweep_df.assign(nodes=1), sweep_df.assign(nodes=2)])
    with pytest.raises(ValueError, match="another grid option varies"):
        tlplot.sweep(two, x="cpus", y="wakeups", hue="placement")
    with pytest.raises(ValueError, match="ci"):
        tlplot.sweep(sweep_df, x="cpus", y="wakeups", ci=95)
    with pytest.raises(ValueError, match="empty"):
        tlplot.sweep(sweep_df.iloc[:0], x="cpus", y="wakeups")
    with pytest.raises(ValueError, match="not numeric"):
        tlplot.sweep(sweep_df, x="cpus", y="governor")


# ---------------------------------------------------------------------------
# residency


def test_residency_shares_sum_to_one_per_cpu(server):
    ax = tlplot.residency(server).axes[0]
    bars = bars_by_cpu(ax)
    states = list(server.residency["state"].cat.categories)
    assert list(bars) == ["busy"] + states  # busy at the bottom, then shallow to deep
    duration = server.config.duration_ns
    pc = server.per_cpu.set_index("cpu")
    res = server.residency.set_index(["cpu", "state"])["total_ns"]
    for cpu in pc.index:
        assert sum(b[cpu] for b in bars.values()) == pytest.approx(1.0, abs=1e-12)
        assert bars["busy"][cpu] == pytest.approx(pc.loc[cpu, "busy_ns"] / duration, rel=1e-12)
        for s in states:
            assert bars[s][cpu] == pytest.approx(res.loc[(cpu, s)] / duration, rel=1e-12, abs=1e-15)
    assert ax.get_ylabel() == "share of the run"


def test_residency_in_ms_and_residency_frame_alone(server):
    bars = bars_by_cpu(tlplot.residency(server, normalize=False).axes[0])
    pc = server.per_cpu.set_index("cpu")
    for cpu in pc.index:
        assert bars["busy"][cpu] == pytest.approx(pc.loc[cpu, "busy_ns"] / MS)
        assert sum(b[cpu] for b in bars.values()) == pytest.approx(server.config.duration_ns / MS)
    ax = tlplot.residency(server.residency).axes[0]
    bars = bars_by_cpu(ax)
    assert "busy" not in bars and ax.get_ylabel() == "share of idle time"
    for cpu in pc.index[pc["idle_ns"] > 0]:
        assert sum(b[cpu] for b in bars.values()) == pytest.approx(1.0)


def test_residency_bad_input(server):
    with pytest.raises(ValueError, match="total_ns"):
        tlplot.residency(server.residency.drop(columns=["total_ns"]))
    with pytest.raises(ValueError, match="several rows per"):
        tlplot.residency(pd.concat([server.residency, server.residency]))
    with pytest.raises(TypeError):
        tlplot.residency("run")


# ---------------------------------------------------------------------------
# timeline


def test_timeline_of_the_whole_run_adds_up(run):
    cfg = run.config
    ax = tlplot.timeline(run, start_ns=0, end_ns=cfg.duration_ns).axes[0]
    assert ax.get_xlim() == (0.0, cfg.duration_ns / MS)
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"CPU {c}" for c in range(8)]
    busy = total_width(collection(ax, "timeline:busy"))
    pc = run.per_cpu.set_index("cpu")
    for cpu in range(8):
        assert busy.get(cpu, 0.0) == pytest.approx(pc.loc[cpu, "busy_ns"] / MS, abs=1e-9)
    res = run.residency.set_index(["cpu", "state"])["total_ns"]
    for state in run.residency["state"].cat.categories:
        drawn = total_width(collection(ax, f"timeline:idle:{state}"))
        for cpu in range(8):
            assert drawn.get(cpu, 0.0) == pytest.approx(res.loc[(cpu, state)] / MS, abs=1e-9)
    # Busy and idle never overlap on a lane.
    for cpu in range(8):
        spans = sorted(s for c in ax.collections if c.get_gid().startswith(("timeline:busy", "timeline:idle"))
                       for s in rects_per_lane(c).get(cpu, []))
        assert all(b[0] >= a[1] - 1e-9 for a, b in zip(spans, spans[1:]))


def test_timeline_marks_every_expiry_in_the_window(server):
    lo, hi = 10_000_000, 60_000_000
    ax = tlplot.timeline(server, start_ns=lo, end_ns=hi).axes[0]
    t = server.timers
    t = t[t["expired_ns"].notna()]
    t = t[(t["expired_ns"] >= lo) & (t["expired_ns"] < hi)]
    remote = t["cpu_expired"] != t["base_cpu"]
    assert remote.any() and (~remote).any()
    for gid, rows in (("timeline:expiry (local)", t[~remote]), ("timeline:expiry (remote)", t[remote])):
        (sc,) = [c for c in ax.collections if c.get_gid() == gid]
        drawn = sorted(map(tuple, sc.get_offsets().data))
        want = sorted(zip(rows["expired_ns"].to_numpy(dtype=float) / MS, rows["cpu_expired"].to_numpy(dtype=float)))
        np.testing.assert_allclose(drawn, want)


def test_timeline_migrator_role(run):
    """One top-level migrator at every instant (CPUs 0 and 4 never idle), and
    at most one migrator per level-0 group at a time."""
    ax = tlplot.timeline(run).axes[0]
    h = tl.hierarchy(topology=run.config.topology, kernel=run.config.kernel)
    top = h.levels - 1
    lanes = {lvl: rects_per_lane(collection(ax, f"timeline:migrator:{lvl}"))
             for lvl in range(h.levels) if collection(ax, f"timeline:migrator:{lvl}") is not None}
    assert top in lanes
    spans = sorted(s for rects in lanes[top].values() for s in rects)
    assert spans[0][0] == 0.0 and spans[-1][1] == pytest.approx(50.0)
    assert all(b[0] == pytest.approx(a[1]) for a, b in zip(spans, spans[1:]))  # no gap, no overlap
    # A CPU that is the top migrator is also its level-0 group's: per group,
    # the intervals of all levels never overlap between CPUs.
    for cpus in h.groups.loc[h.groups["level"] == 0, "cpus"]:
        spans = sorted(s for rects in lanes.values() for c, r in rects.items() if c in cpus for s in r)
        assert all(b[0] >= a[1] - 1e-9 for a, b in zip(spans, spans[1:]))
    assert any(t.get_text().startswith("migrator") for t in ax.get_legend().get_texts())


def test_timeline_migrator_agrees_with_remote_handling():
    """The migrator strips are rebuilt from tmigr_group_set_cpu_* events;
    tmigr_handle_remote is an independent witness: a CPU that is migrator up
    to level L walks up to level L + 1 (where it finds another migrator), or
    to the top. Sleepers only: CPUs all go idle and the role moves around."""
    # Callbacks without duration: a walk is never split (remote_yield) and goes up in one piece.
    r = tl.simulate(tl.Config(cpus=16, nodes=2, duration_ns=100_000_000, record_events=True, seed=2,
                              workload=tl.workloads.sleepers(), callback_ns=0))
    h = tl.hierarchy(topology=r.config.topology, kernel=r.config.kernel)
    top = h.levels - 1
    ax = tlplot.timeline(r, start_ns=0, end_ns=r.config.duration_ns).axes[0]
    roles = [(cpu, a * MS, b * MS, lvl) for lvl in range(h.levels)
             for cpu, rects in rects_per_lane(collection(ax, f"timeline:migrator:{lvl}")).items() for a, b in rects]
    assert len(roles) > 20  # the role changes hands
    tops = sorted((a, b) for _, a, b, lvl in roles if lvl == top)
    assert all(b[0] >= a[1] - 1 for a, b in zip(tops, tops[1:]))  # one top migrator at a time (1 ns of float slack)
    walks = r.events[r.events["event"] == "tmigr_handle_remote"].groupby(["ts_ns", "cpu"])["lvl"].max()
    checked = 0
    for (ts, cpu), highest in walks.items():
        level = max((lvl for c, a, b, lvl in roles if c == cpu and a - 1 <= ts < b - 1), default=-1)
        if level >= 0:  # an idle CPU also walks through groups that have no migrator: not checked
            assert highest == min(level + 1, top), (ts, cpu)
            checked += 1
    assert checked >= 10


def test_timeline_without_events_or_migration(run):
    quiet = tl.simulate(run.config.replace(record_events=False))
    ax = tlplot.timeline(quiet).axes[0]
    assert not any(c.get_gid().startswith("timeline:migrator") for c in ax.collections)
    push = tl.simulate(run.config.replace(placement="push"))
    ax = tlplot.timeline(push).axes[0]
    assert not any(c.get_gid().startswith("timeline:migrator") for c in ax.collections)


def test_timeline_default_window_and_cpus(server):
    ax = tlplot.timeline(server).axes[0]
    assert ax.get_xlim() == (0.0, 50.0)  # the first 50 ms of a 100 ms run
    short = tl.simulate(tl.Config(cpus=2, duration_ns=20_000_000, start_ns=1_000_000_000))
    ax = tlplot.timeline(short).axes[0]
    assert ax.get_xlim() == (1000.0, 1020.0)  # the whole run, on the run's clock
    ax = tlplot.timeline(server, cpus=[3, 1]).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["CPU 3", "CPU 1"]
    assert set(total_width(collection(ax, "timeline:busy"))) <= {0, 1}


def test_timeline_bad_input(run):
    with pytest.raises(ValueError, match="empty window"):
        tlplot.timeline(run, start_ns=10_000_000, end_ns=10_000_000)
    with pytest.raises(ValueError, match="outside the run"):
        tlplot.timeline(run, start_ns=60_000_000, end_ns=70_000_000)
    with pytest.raises(ValueError, match=r"unknown cpus \[8\]"):
        tlplot.timeline(run, cpus=[0, 8])
    with pytest.raises(ValueError, match="cpus is empty"):
        tlplot.timeline(run, cpus=[])
    no_idle = tl.simulate(run.config.replace(record_idle=False))
    with pytest.raises(ValueError, match="record_idle"):
        tlplot.timeline(no_idle)
    with pytest.raises(TypeError):
        tlplot.timeline(run.per_cpu)


# ---------------------------------------------------------------------------
# latency CDF


def test_latency_cdf_steps_through_every_expired_timer(server):
    ax = tlplot.latency_cdf(server).axes[0]
    (line,) = ax.get_lines()
    late = server.timers["lateness_ns"].dropna().to_numpy(dtype=float)
    assert len(late) < len(server.timers)  # some timers did not expire: NA left out
    x, y = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
    assert len(x) == len(late)
    np.testing.assert_array_equal(x, np.sort(late) / 1e3)
    np.testing.assert_allclose(y, np.arange(1, len(late) + 1) / len(late))
    assert y[-1] == 1.0 and line.get_drawstyle() == "steps-post"
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "lateness (µs)"


def test_latency_cdf_overlays_runs_and_frames(run, server):
    ax = tlplot.latency_cdf({"8 CPUs": run, "server": server.timers}).axes[0]
    lines = ax.get_lines()
    assert [ln.get_label() for ln in lines] == [f"8 CPUs (n={run.timers['lateness_ns'].notna().sum()})",
                                                f"server (n={server.timers['lateness_ns'].notna().sum()})"]
    assert all(ln.get_ydata()[-1] == 1.0 for ln in lines)
    ax = tlplot.latency_cdf(server, column="remote_delay_ns", label="remote").axes[0]
    assert ax.get_xlabel() == "remote delay (µs)"


def test_latency_cdf_bad_input(run):
    with pytest.raises(ValueError, match="'nope_ns'"):
        tlplot.latency_cdf(run, column="nope_ns")
    with pytest.raises(ValueError, match="_ns"):
        tlplot.latency_cdf(run, column="cpu_armed")
    with pytest.raises(ValueError, match="no values"):
        tlplot.latency_cdf(run.timers[run.timers["lateness_ns"].isna()])
    with pytest.raises(ValueError, match="empty"):
        tlplot.latency_cdf({})
    with pytest.raises(ValueError, match="label"):
        tlplot.latency_cdf({"a": run}, label="b")


# ---------------------------------------------------------------------------
# hierarchy


@pytest.mark.parametrize("cpus,nodes,kernel", [(16, 2, "latest"), (64, 4, "latest"), (24, 3, "6.12"), (1, 1, "latest")])
def test_hierarchy_draws_each_group_and_cpu_once(cpus, nodes, kernel):
    h = tl.hierarchy(cpus=cpus, nodes=nodes, kernel=kernel)
    ax = tlplot.hierarchy(h).axes[0]
    patches = {p.get_gid(): p for p in ax.patches}
    assert len(patches) == len(ax.patches)  # each gid once
    assert set(patches) == ({f"hierarchy:group:{g}" for g in h.groups["group"]}
                            | {f"hierarchy:cpu:{c}" for c in h.cpus["cpu"]})
    # One edge per child: every CPU with a group, every group with a parent.
    (edges,) = [c for c in ax.collections if c.get_gid() == "hierarchy:edges"]
    assert len(edges.get_segments()) == int((h.cpus["group"] >= 0).sum() + (h.groups["parent"] >= 0).sum())

    def y(gid):
        p = patches[gid]
        return p.get_y() + p.get_height() / 2

    def x(gid):
        p = patches[gid]
        return p.get_x() + p.get_width() / 2

    for g in h.groups.itertuples():
        if g.parent >= 0:
            assert y(f"hierarchy:group:{g.parent}") > y(f"hierarchy:group:{g.group}")
        color = tlplot._CROSSNODE_COLOR if g.numa < 0 else tlplot._node_color(g.numa)
        assert patches[f"hierarchy:group:{g.group}"].get_facecolor()[:3] == pytest.approx(
            matplotlib.colors.to_rgb(color))
        # A group's box spans the CPUs under it.
        box = patches[f"hierarchy:group:{g.group}"]
        for c in g.cpus:
            assert box.get_x() <= x(f"hierarchy:cpu:{c}") <= box.get_x() + box.get_width()
    for c in h.cpus.itertuples():
        assert patches[f"hierarchy:cpu:{c.cpu}"].get_facecolor()[:3] == pytest.approx(
            matplotlib.colors.to_rgb(tlplot._node_color(c.node)))
        if c.group >= 0:
            assert y(f"hierarchy:group:{c.group}") > y(f"hierarchy:cpu:{c.cpu}")


def test_hierarchy_collapses_cpus_of_big_machines():
    h = tl.hierarchy(cpus=512, nodes=4)
    ax = tlplot.hierarchy(h).axes[0]
    assert sorted(gids(ax)) == sorted(f"hierarchy:group:{g}" for g in h.groups["group"])  # no CPU patches
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("8") == (h.groups["level"] == 0).sum()  # CPU count per level-0 group
    assert "(8 CPUs each)" in ax.get_yticklabels()[0].get_text()
    ax = tlplot.hierarchy(h, max_cpus=1024).axes[0]
    assert sum(g.startswith("hierarchy:cpu:") for g in gids(ax)) == 512


def test_hierarchy_bad_input(run):
    with pytest.raises(TypeError, match="Hierarchy"):
        tlplot.hierarchy(run.per_cpu)
    with pytest.raises(ValueError, match="max_cpus"):
        tlplot.hierarchy(tl.hierarchy(cpus=8), max_cpus=0)
    ax = tlplot.hierarchy(run).axes[0]  # a Result: its topology and kernel
    assert sum(g.startswith("hierarchy:cpu:") for g in gids(ax)) == 8


# ---------------------------------------------------------------------------
# All functions: ax=, pyplot state, saving


def _calls(run, sweep_df):
    return {
        "wakeups": lambda ax: tlplot.wakeups(run, ax=ax),
        "wakeups_sweep": lambda ax: tlplot.wakeups(sweep_df, x="cpus", hue="placement", ax=ax),
        "residency": lambda ax: tlplot.residency(run, ax=ax),
        "timeline": lambda ax: tlplot.timeline(run, ax=ax),
        "sweep": lambda ax: tlplot.sweep(sweep_df, x="cpus", y="energy_uj", hue="placement", ax=ax),
        "latency_cdf": lambda ax: tlplot.latency_cdf(run, ax=ax),
        "hierarchy": lambda ax: tlplot.hierarchy(tl.hierarchy(cpus=16, nodes=2), ax=ax),
    }


def test_ax_draws_into_the_given_axes(run, sweep_df):
    for name, call in _calls(run, sweep_df).items():
        fig, (left, right) = plt.subplots(1, 2)
        before = plt.get_fignums()
        assert call(right) is fig, name
        assert plt.get_fignums() == before, name  # no new figure
        assert right.has_data() or right.patches or right.collections, name
        assert not left.has_data() and not left.patches and not left.collections, name
        plt.close(fig)


def test_new_figures_are_saved_as_png_and_pdf(run, sweep_df, tmp_path):
    for name, call in _calls(run, sweep_df).items():
        fig = call(None)
        assert isinstance(fig, Figure) and len(fig.axes) == 1
        paths = tlplot.save(fig, tmp_path / "figs" / f"{name}.png")
        assert [p.name for p in paths] == [f"{name}.png", f"{name}.pdf"]
        assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert paths[1].read_bytes()[:5] == b"%PDF-"
        assert fig.number not in plt.get_fignums()  # save closes it


def test_axis_labels_carry_units():
    assert tlplot.axis_label("energy_uj") == "energy (µJ)"
    assert tlplot.axis_label("lateness_ns_p99") == "lateness p99 (ns)"
    assert tlplot.axis_label("wakeups_per_cpu_per_s") == "wakeups per CPU per s"
    assert tlplot.axis_label("avg_power_mw") == "avg power (mW)"
    assert tlplot.axis_label("cpus") == "CPUs"
