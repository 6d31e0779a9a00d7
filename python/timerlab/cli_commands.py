"""The commands of ``timerlab`` (see cli.py); each takes the parsed arguments
and returns the exit status. Errors are raised (ValueError naming the option
or file) and reported as one line by cli.main."""
from __future__ import annotations

import sys
from pathlib import Path

from .cli_progress import convert as convert_trace, read_trace, stages
from .cli_wheel import bundled_trace
from .experiment import print_table

# Headline figures of a run, as the tables show them.
HEADLINE = ["wakeups_per_cpu_per_s", "ipis", "timers_expired_remote", "deepest_state_residency_fraction",
            "avg_power_mw", "lateness_ns_p99", "timer_overhead_ns"]


def _figures(res, out: Path, stem: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from . import plot

    fig, axes = plt.subplots(2, 1, figsize=(9, 7), layout="constrained")
    plot.wakeups(res, ax=axes[0])
    plot.residency(res, ax=axes[1])
    _save(fig, out, stem)


def _save(fig, out: Path, stem: str) -> None:
    from .experiment import save_figure

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
    # The same question on a real machine: a kernel upgrade predicted from one trace.
    old, new = (tl.read_ftrace(bundled_trace(name)) for name in UPGRADE_PAIR)
    pred = tl.predict(old, kernel=new.kernel, against=new)
    print()
    print("\n".join(upgrade_story(pred)))
    if not args.no_plot:
        _prediction_figure(pred, args.out)
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
    import pandas as pd

    import timerlab as tl
    from .kernel import kernel_has

    from .replay.columns import narrowed

    trace = narrowed(read_trace(args.trace))  # a store loads only the columns a replay reads
    base = trace.to_config()
    grid = {k: v for k, v in (("deferrable", args.deferrable), ("governor", args.governor)) if v}
    if "push" in (args.placement or []) and any(d != "legacy" for d in args.deferrable or []):
        raise ValueError("--placement push and --deferrable global/global_nowake do not go together "
                         "(deferrable policies need the pull model); replay them separately")
    print(f"timerlab replay: {args.trace} as {base.topology!r}, kernel {base.kernel}")
    frames = []
    for placement in args.placement or [base.placement]:
        kernel = base.kernel
        if placement == "pull" and not kernel_has(kernel, "pull_model"):
            # The pull model came with 6.9: a what-if of it on an older trace runs the newest behaviours.
            kernel = "latest"
            print(f"  placement pull with kernel 'latest' (the trace's {base.kernel} predates the pull model)")
        cfg = base.replace(placement=placement, kernel=kernel)
        df = tl.sweep(cfg, grid, backend="serial", progress=sys.stderr.isatty())
        frames.append(df.assign(placement=placement))
    index = ["placement"] + list(grid)
    print_table(pd.concat(frames, ignore_index=True).set_index(index)[HEADLINE])
    return 0


def validate(args) -> int:
    import timerlab as tl

    from .fidelity.windows import opened, windows_of

    # A text too large to hold is converted to a temporary store first, and
    # a trace of many events replayed in windows: a bar step per stage of each.
    with opened(args.trace, args.window_events, read=read_trace, convert=convert_trace) as trace:
        n = len(windows_of(trace, args.window_events))
        with stages(n * len(tl.fidelity.VALIDATE_STAGES), "validate") as step:
            report = tl.validate(trace, tick=args.tick, rcu_needs_cpu=False if args.no_rcu_tick else "auto",
                                 progress=step, window_events=args.window_events)
    print(report)
    if report.windows is not None:
        print(report.windows.to_string(index=False))
    return 0


def convert(args) -> int:
    from .trace import store_metadata
    from .trace.dat import is_trace_dat

    if args.out.suffix != ".parquet":
        raise ValueError(f"{args.out}: the store is one Parquet file; name it OUT.parquet")
    out = convert_trace(args.trace, args.out)
    meta = store_metadata(out)
    kind = "trace.dat" if is_trace_dat(str(args.trace)) else "text file"
    print(f"wrote {out}: {meta['rows']:,} events, {meta['nr_cpus']} CPUs, "
          f"{args.out.stat().st_size / 1e6:.1f} MB (the {kind}: {meta['file_bytes'] / 1e6:.1f} MB)")
    return 0


def predict(args) -> int:
    import timerlab as tl

    pred = tl.predict(tl.read_ftrace(args.trace), kernel=args.kernel,
                      against=None if args.against is None else tl.read_ftrace(args.against))
    print(pred)
    if not args.no_plot:
        _prediction_figure(pred, args.out)
    return 0


def _prediction_figure(pred, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from . import plot

    _save(plot.prediction(pred), out, "prediction")


# The bundled pair: Debian's 6.1 and 6.12 on one 16-CPU, 2-node qemu guest, one workload script.
UPGRADE_PAIR = ("qemu-6.1.176-16cpu-2node-mixed.trace.txt.xz", "qemu-6.12.95-16cpu-2node-mixed.trace.txt.xz")


def upgrade_story(pred) -> list[str]:
    """A few plain lines on what a predicted upgrade changes and how close the prediction came."""
    from .kernel import kernel_has

    t = pred.table
    share, wake = t.loc["global_expired_remote_fraction"], t.loc["wakeups_per_cpu_per_s"]
    old, new = pred.kernel_from, pred.kernel_to
    lines = [f"What {new} would do to this {old} machine, predicted from one {old} trace "
             f"({pred.config.topology!r}); "
             + ("before 6.9 a timer is expired where it was queued, from 6.9 a busy CPU pulls an idle one's:"
                if kernel_has(old, "pull_model") != kernel_has(new, "pull_model") else "same placement model:"),
             f"  global timers expired by another CPU than their own: {100 * share['trace']:.0f} % on {old}; "
             f"{100 * share['predicted']:.0f} % predicted on {new}"
             + (f", {100 * share['other']:.0f} % in a real {new} run" if "other" in t else ""),
             f"  wakeups per CPU: {wake['trace']:.1f}/s on {old}; {wake['predicted']:.1f}/s predicted on {new} "
             f"({wake['predicted_change']:+.0f} {'%' if wake['change_unit'] == '%' else '/s'})"
             + (f"; the real {new} run: {wake['other_at_trace_pace']:.1f}/s at the {old} run's workload pace "
                f"({wake['other']:.1f}/s as it ran, {1 / pred.pace_ratio:.2f}x as fast)" if pred.pace_ratio else "")]
    if pred.bounds is not None:
        b = pred.bounds
        names = {"global_expired_remote_fraction": "global timers expired remotely", "wakeups_per_cpu_per_s": "wakeups"}
        lines.append("  how close the prediction came: " + "; ".join(
            f"{names.get(rate, rate)} off by {abs(row.error):.1f} {row.unit} "
            f"({'within' if row.within else 'outside'} ±{row.bound:g} {row.unit})"
            for rate, row in b.iterrows()))
    return lines


def wheel(args) -> int:
    from .cli_wheel import wheel as run_wheel

    return run_wheel(args.trace, args.out, not args.no_plot, args.hz)
