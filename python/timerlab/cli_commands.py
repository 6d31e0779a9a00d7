"""The commands of ``timerlab`` (see cli.py); each takes the parsed arguments
and returns the exit status. Errors are raised (ValueError naming the option
or file) and reported as one line by cli.main."""
from __future__ import annotations

from pathlib import Path

from .experiment import print_table

# Headline figures of a run, as the tables show them.
HEADLINE = ["wakeups_per_cpu_per_s", "ipis", "timers_expired_remote", "deepest_state_residency_fraction",
            "avg_power_mw", "lateness_ns_p99", "timer_overhead_ns"]


def _figures(res, out: Path, stem: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from . import plot
    from .experiment import save_figure

    fig, axes = plt.subplots(2, 1, figsize=(9, 7), layout="constrained")
    plot.wakeups(res, ax=axes[0])
    plot.residency(res, ax=axes[1])
    for p in save_figure(fig, out, stem):
        print(f"wrote {p}")


def demo(args) -> int:
    import timerlab as tl

    if args.cpus < 2:
        raise ValueError(f"--cpus={args.cpus}: the demo needs at least 2 CPUs")
    # A server, plus the lazy-wakeup patch's remote enqueuer (add_timer_on from the last CPU onto a few
    # others): without remote enqueues lazy and always wakeups would not differ.
    targets = list(range(args.cpus // 2, min(args.cpus // 2 + 4, args.cpus - 1))) or [0]
    workload = tl.workloads.server() + tl.workloads.remote_enqueuer(from_cpu=args.cpus - 1, to_cpus=targets,
                                                                     rate_hz=60)
    base = tl.Config(cpus=args.cpus, nodes=args.nodes, duration_ns=int(args.seconds * 1e9), workload=workload)
    print(f"timerlab demo: {base.topology!r}, server workload + CPU {args.cpus - 1} arming timers on CPUs "
          f"{targets}, {args.seconds:g} s x {args.seeds} seeds per row\n")
    grid = {"placement": ["push", "pull"], "remote_wakeup": ["always", "lazy"]}
    df = tl.sweep(base, grid, seeds=range(1, args.seeds + 1), backend="serial")
    print_table(df.groupby(list(grid), sort=False)[HEADLINE].mean())
    if not args.no_plot:
        for placement in ("push", "pull"):
            _figures(tl.simulate(base.replace(placement=placement)), args.out, f"demo_{placement}")
    return 0


def run(args) -> int:
    import timerlab as tl
    from .config_file import load_config

    cfg = load_config(args.config).config
    res = tl.simulate(cfg)
    print(repr(res))
    print_table(res.summary.to_frame("value"))
    args.out.mkdir(parents=True, exist_ok=True)
    for name in ("per_cpu", "timers", "residency", "idle_periods"):
        table = getattr(res, name)
        if table is not None:
            table.to_parquet(args.out / f"{name}.parquet")
    print(f"wrote per_cpu, timers, residency, idle_periods tables to {args.out}/")
    if not args.no_plot:
        _figures(res, args.out, "run")
    return 0


def sweep(args) -> int:
    import timerlab as tl
    from .config_file import load_config

    f = load_config(args.config)
    if "grid" not in f.sweep:
        raise ValueError(f"{f.path}: no [sweep] grid = {{option = [values, ...]}}")
    opts = dict(f.sweep)
    grid = opts.pop("grid")
    if not isinstance(grid, dict):
        raise ValueError(f"{f.path}: [sweep] grid must be a table {{option = [values, ...]}}, got {grid!r}")
    if args.backend:
        opts["backend"] = args.backend
    if args.scheduler:
        opts["scheduler"] = args.scheduler
    df = tl.sweep(f.config, grid, **opts)
    out = args.out
    df.to_csv(out, index=False) if out.suffix == ".csv" else df.to_parquet(out)
    # Per-CPU rows (per_cpu = true) have no summary figures: show their own means.
    shown = HEADLINE if "cpu" not in df else ["wakeups", "ipis_received", "timers_expired_remote", "avg_power_mw"]
    print_table(df.groupby(list(grid) or ["seed"], sort=False)[shown].mean())
    print(f"wrote {len(df)} rows to {out}")
    return 0


def export(args) -> int:
    import timerlab as tl
    from .config_file import load_config

    cfg = load_config(args.config).config.replace(record_events=True)
    res = tl.simulate(cfg)
    res.to_ftrace(args.out)
    print(f"wrote {len(res.events):,} events of {res!r} to {args.out}")
    return 0


def replay(args) -> int:
    import timerlab as tl

    trace = tl.read_ftrace(args.trace)
    base = trace.to_config()
    grid = {k: v for k, v in (("placement", args.placement), ("deferrable", args.deferrable),
                              ("governor", args.governor)) if v}
    if "push" in (args.placement or []) and any(d != "legacy" for d in args.deferrable or []):
        raise ValueError("--placement push and --deferrable global/global_nowake do not go together "
                         "(deferrable policies need the pull model); replay them separately")
    df = tl.sweep(base, grid or {"placement": [base.placement]}, backend="serial", progress=False)
    print(f"timerlab replay: {args.trace} as {base.topology!r}, kernel {base.kernel}")
    print_table(df.set_index(list(grid or {"placement": 0}))[HEADLINE])
    return 0


def validate(args) -> int:
    import timerlab as tl

    print(tl.validate(tl.read_ftrace(args.trace), tick=args.tick, rcu_needs_cpu=not args.no_rcu_tick))
    return 0


def wheel(args) -> int:
    from .cli_wheel import wheel as run_wheel

    return run_wheel(args.trace, args.out, not args.no_plot, args.hz)
