"""Latency as the field's tools report it: cyclictest (rt-tests) and rtla
timerlat, from a run's measured wakeups (``res.latency``) or from a real
cyclictest's own ``-h`` output.

``res.latency`` has one row per measured wakeup (workloads
:func:`~timerlab.workloads.cyclictest` and :func:`~timerlab.workloads.timerlat`),
its ``latency_ns`` split into parts that add up to it, along the way from the
requested time to the task reading its clock (hrtimers-and-latency.md §B):

=================  ==========================================================
``window_ns``      requested time -> the time the clock interrupt that ran
                   the timer was programmed for: the timer's slack window
                   (negative when an earlier event's late interrupt ran it)
``wake_ns``        -> the interrupt reaches the CPU: the platform's wake
                   latency (``Config(wake_latency=)``), or the wait of an
                   interrupt pending while the CPU could not take it
``exit_latency_ns`` -> the CPU has left its idle state (its exit latency)
``irq_entry_ns``   -> interrupt entry, before the first handler
``handler_wait_ns`` -> this timer's handler runs: waiting behind the
                   handlers ahead of it in hard-expiry order (the tick's,
                   another timer's; earlier passes of a hanging interrupt)
``sched_ns``       -> the woken task runs: the rest of the interrupt and its
                   softirqs, higher priorities, the context switch
``user_ns``        -> back in user space (cyclictest reads its clock there;
                   0 for timerlat's kernel thread)
=================  ==========================================================

``irq_latency_ns`` is timerlat's IRQ latency: the handler's clock minus the
hard expiry. For cyclictest ``latency_ns`` is what it measures (user-space
clock minus ``next``, slack included: a SCHED_OTHER cyclictest sleeps with
the task's 50 µs window); for timerlat the thread latency.

The tools' outputs: :func:`cyclictest_output` (``Result.cyclictest``) and
:func:`timerlat_output` (``Result.timerlat``) format them line for line as
the tools print them (rt-tests' print_stat/print_hist; rtla's timerlat_top
and timerlat_hist), and :func:`read_cyclictest_hist` reads a real
cyclictest ``-h`` output into the same shape, for comparisons.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["CyclictestOutput", "TimerlatOutput", "cyclictest_output", "timerlat_output", "read_cyclictest_hist",
           "cyclictest_us"]

# cyclictest's thread ids as printed in its T: line: made up, one per thread.
_TID_BASE = 10_000


def cyclictest_us(now_ns, next_ns) -> np.ndarray:
    """cyclictest's latency in µs (its calcdiff): whole seconds apart times a
    million, plus the nanosecond parts' difference divided by 1000,
    truncated toward zero — as the tool computes it from two timespecs."""
    now_ns, next_ns = np.asarray(now_ns, dtype=np.int64), np.asarray(next_ns, dtype=np.int64)
    sec = now_ns // 1_000_000_000 - next_ns // 1_000_000_000
    nsec = now_ns % 1_000_000_000 - next_ns % 1_000_000_000
    return sec * 1_000_000 + np.sign(nsec) * (np.abs(nsec) // 1000)


@dataclass
class CyclictestOutput:
    """cyclictest's output: ``text`` as it prints it, ``threads`` (one row per
    thread: cycles, min/act/avg/max µs, overflows) and, with a histogram,
    ``histogram`` (1 µs bins, one column per thread) and ``overflow_cycles``."""

    text: str
    threads: pd.DataFrame
    histogram: pd.DataFrame | None = None
    overflow_cycles: dict | None = None

    def __str__(self) -> str:
        return self.text


def _thread_stats(lat_us: list) -> dict:
    a = np.asarray(lat_us, dtype=np.int64)
    n = len(a)
    # stat->avg is a double sum; the print casts sum / cycles to long.
    return dict(cycles=n, min_us=int(a.min()) if n else 0, act_us=int(a[-1]) if n else 0,
                avg_us=int(float(a.sum()) / n) if n else 0, max_us=int(a.max()) if n else 0)


def cyclictest_output(res, histogram_us: int | None = None, *, frame: bool = False, quiet: bool = False):
    """What cyclictest prints for ``res``'s cyclictest threads (see
    :meth:`timerlab.Result.cyclictest`). ``quiet`` (``-q``) with a histogram
    prints the histogram only, as the tool does."""
    lat = res.latency
    lat = lat[lat["tool"] == "cyclictest"] if lat is not None else None
    if lat is None or not len(lat):
        raise ValueError("cyclictest: the run has no cyclictest samples; add tl.workloads.cyclictest() to its workload")
    if histogram_us is not None and (isinstance(histogram_us, bool) or not isinstance(histogram_us, int)
                                     or not 1 <= histogram_us <= 10_000_000):
        raise ValueError(f"cyclictest: histogram_us must be an int in [1, 10000000], got {histogram_us!r}")
    rows, per_thread = [], []
    for thread, (task, g) in enumerate(lat.groupby("task", sort=True)):
        us = cyclictest_us(g["requested_ns"].to_numpy() + g["latency_ns"].to_numpy(), g["requested_ns"].to_numpy())
        comp = _component_of(res, int(task))
        interval_us = int(comp.params["sleep_ns"].mean // 1000) if comp is not None else 0
        prio = comp.params.get("priority", 0) if comp is not None else 0
        rows.append(dict(thread=thread, tid=_TID_BASE + int(task), cpu=int(g["cpu"].iloc[0]), priority=prio,
                         interval_us=interval_us, **_thread_stats(us)))
        per_thread.append(us)
    threads = pd.DataFrame(rows)
    lines = []
    if not (quiet and histogram_us):
        fmt = "T:{thread:2d} ({tid:5d}) P:{priority:2d} I:{interval_us} C:{cycles:7d} Min:{min_us:7d} " \
              "Act:{act_us:5d} Avg:{avg_us:5d} Max:{max_us:8d}"
        lines += [fmt.format(**r) for r in rows]
    hist = outliers = None
    if histogram_us:
        counts = np.zeros((histogram_us, len(per_thread)), dtype=np.int64)
        outliers, over = {}, []
        for j, us in enumerate(per_thread):
            inside = (us >= 0) & (us < histogram_us)
            np.add.at(counts[:, j], us[inside], 1)
            cycles = np.flatnonzero(us >= histogram_us)
            outliers[j] = cycles
            over.append(len(cycles))
        threads["overflows"] = over
        hist = pd.DataFrame(counts, columns=[f"thread_{j}" for j in range(len(per_thread))])
        hist.index.name = "latency_us"
        lines.append("# Histogram")
        lines += [f"{i:06d} " + "\t".join(f"{c:06d}" for c in counts[i]) for i in range(histogram_us)]
        lines.append("# Total:" + "".join(f" {c:09d}" for c in counts.sum(axis=0)))
        lines.append("# Min Latencies:" + "".join(f" {r['min_us']:05d}" for r in rows))
        lines.append("# Avg Latencies:" + "".join(f" {r['avg_us']:05d}" for r in rows))
        lines.append("# Max Latencies:" + "".join(f" {r['max_us']:05d}" for r in rows))
        lines.append("# Histogram Overflows:" + "".join(f" {n:05d}" for n in over))
        lines.append("# Histogram Overflow at cycle number:")
        for j, cycles in outliers.items():
            kept = cycles[:histogram_us]  # the tool keeps as many cycle numbers as it has bins
            line = f"# Thread {j}:" + "".join(f" {c:05d}" for c in kept)
            if len(kept) < len(cycles):
                line += f" # {len(cycles) - len(kept):05d} others"
            lines.append(line)
        lines.append("")
    out = CyclictestOutput("\n".join(lines) + "\n", threads, hist, outliers)
    return out.threads if frame else out


def _component_of(res, task: int):
    """The workload component a task belongs to (tasks are numbered in the
    workload's order: per component, per CPU, per_cpu each)."""
    topo = res.config.topology
    n = 0
    for c in res.config.workload.components:
        if c.kind != "tasks":
            continue
        k = len(c.where.resolve(topo, c.kind)) * c.params["per_cpu"]
        if task < n + k:
            return c
        n += k
    return None


def read_cyclictest_hist(path) -> CyclictestOutput:
    """A real cyclictest ``-h`` output (its ``.hist`` text) in the shape of
    :func:`cyclictest_output`: the histogram, the per-thread Min/Avg/Max and
    overflows, the overflow cycle numbers. Raises ValueError naming the file
    and line of anything it cannot read."""
    name = os.fspath(path)
    with open(name, encoding="ascii") as f:
        text = f.read()
    bins, summary, outliers = [], {}, {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line or line == "# Histogram" or line == "# Histogram Overflow at cycle number:":
            continue
        try:
            if line.startswith("# Thread "):
                head, _, rest = line[len("# Thread "):].partition(":")
                outliers[int(head)] = np.array([int(x) for x in rest.split("#")[0].split()], dtype=np.int64)
            elif line.startswith("# "):
                key, _, rest = line[2:].partition(":")
                summary[key] = [int(x) for x in rest.split()]
            else:
                fields = line.split()
                bins.append([int(x) for x in fields])
        except ValueError as e:
            raise ValueError(f"{name}:{lineno}: not a cyclictest histogram line: {line!r} ({e})") from None
    if not bins or "Min Latencies" not in summary:
        raise ValueError(f"{name}: no cyclictest histogram found (a '# Histogram' block and its summary lines)")
    arr = np.asarray(bins, dtype=np.int64)
    nthreads = arr.shape[1] - 1
    hist = pd.DataFrame(arr[:, 1:], index=pd.Index(arr[:, 0], name="latency_us"),
                        columns=[f"thread_{j}" for j in range(nthreads)])
    threads = pd.DataFrame({
        "thread": range(nthreads),
        "cycles": np.asarray(summary.get("Total", [0] * nthreads)) + np.asarray(
            summary.get("Histogram Overflows", [0] * nthreads)),
        "min_us": summary["Min Latencies"], "avg_us": summary["Avg Latencies"], "max_us": summary["Max Latencies"],
        "overflows": summary.get("Histogram Overflows", [0] * nthreads),
    })
    return CyclictestOutput(text, threads, hist, outliers)


@dataclass
class TimerlatOutput:
    """rtla timerlat's tables: ``text`` as ``rtla timerlat top`` (or ``hist``)
    prints it, ``cpus`` one row per CPU (IRQ and thread latency count, cur,
    min, avg, max in µs), and with ``hist=True`` ``histogram`` (one column
    per CPU and context)."""

    text: str
    cpus: pd.DataFrame
    histogram: pd.DataFrame | None = None

    def __str__(self) -> str:
        return self.text


def _duration(ns: int) -> str:
    s = int(ns // 1_000_000_000)  # rtla's get_duration: days hh:mm:ss
    return f"{s // 86400:3d} {s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d}"


def timerlat_output(res, *, hist: bool = False, bucket_us: int = 1, entries: int = 256) -> TimerlatOutput:
    """rtla timerlat top (or hist) for ``res``'s timerlat threads (see
    :meth:`timerlab.Result.timerlat`): kernel threads, µs, no user-space
    column. Latencies are truncated to µs, as rtla divides the tracer's ns."""
    lat = res.latency
    lat = lat[lat["tool"] == "timerlat"] if lat is not None else None
    if lat is None or not len(lat):
        raise ValueError("timerlat: the run has no timerlat samples; add tl.workloads.timerlat() to its workload")
    for name, v, hi in (("bucket_us", bucket_us, 999_999), ("entries", entries, 9_999_999)):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= hi:
            raise ValueError(f"timerlat: {name} must be an int in [1, {hi}], got {v!r}")
    rows = []
    per_cpu = {}
    for cpu, g in lat.groupby("cpu", sort=True):
        irq = np.maximum(g["irq_latency_ns"].to_numpy(), 0) // 1000
        thr = np.maximum(g["latency_ns"].to_numpy(), 0) // 1000
        per_cpu[int(cpu)] = (irq, thr)
        rows.append(dict(cpu=int(cpu), count=len(g), irq_cur_us=int(irq[-1]), irq_min_us=int(irq.min()),
                         irq_avg_us=int(irq.sum() // len(irq)), irq_max_us=int(irq.max()),
                         thread_cur_us=int(thr[-1]), thread_min_us=int(thr.min()),
                         thread_avg_us=int(thr.sum() // len(thr)), thread_max_us=int(thr.max())))
    cpus = pd.DataFrame(rows)
    duration = _duration(res.config.duration_ns)
    if not hist:
        lines = [" " * 37 + "Timer Latency" + " " * 46,
                 f"{duration:<6s}   |          IRQ Timer Latency (us)        |         Thread Timer Latency (us)",
                 "CPU COUNT      |      cur       min       avg       max |      cur       min       avg       max"]
        for r in rows:
            lines.append(f"{r['cpu']:3d} #{r['count']:<9d} |{r['irq_cur_us']:9d} {r['irq_min_us']:9d} "
                         f"{r['irq_avg_us']:9d} {r['irq_max_us']:9d} |{r['thread_cur_us']:9d} "
                         f"{r['thread_min_us']:9d} {r['thread_avg_us']:9d} {r['thread_max_us']:9d}")
        count, e = int(cpus["count"].sum()), 0
        while count > 999999:
            e, count = e + 1, count // 10
        split = "-" * 40
        lines.append(f"{split[:15]}|{split[:40]}|{split[:39]}")
        irq_all = np.concatenate([v[0] for v in per_cpu.values()])
        thr_all = np.concatenate([v[1] for v in per_cpu.values()])
        lines.append(f"ALL #{count:<6d} e{e} |          {int(irq_all.min()):9d} {int(irq_all.sum() // len(irq_all)):9d} "
                     f"{int(irq_all.max()):9d} |          {int(thr_all.min()):9d} "
                     f"{int(thr_all.sum() // len(thr_all)):9d} {int(thr_all.max()):9d}")
        return TimerlatOutput("\n".join(lines) + "\n", cpus)
    counts = {}
    for cpu, (irq, thr) in per_cpu.items():
        for ctx, v in (("IRQ", irq), ("Thr", thr)):
            b = np.minimum(v // bucket_us, entries)  # the last bucket counts overflows
            counts[f"{ctx}-{cpu:03d}"] = np.bincount(b, minlength=entries + 1)
    table = pd.DataFrame(counts)
    lines = ["# RTLA timerlat histogram", "# Time unit is microseconds (us)", f"# Duration: {duration}",
             "Index" + "".join(f"   {c}" for c in table.columns)]
    for i in range(entries):
        row = table.iloc[i].to_numpy()
        if row.sum():
            lines.append(f"{i * bucket_us:<6d}" + "".join(f"{int(c):9d} " for c in row))
    lines.append("over: " + "".join(f"{int(c):9d} " for c in table.iloc[entries]))
    stat = lambda key: "".join(f"{r[f'irq_{key}_us']:9d} {r[f'thread_{key}_us']:9d} " for r in rows)  # noqa: E731
    lines.append("count:" + "".join(f"{r['count']:9d} {r['count']:9d} " for r in rows))
    lines += ["min:  " + stat("min"), "avg:  " + stat("avg"), "max:  " + stat("max")]
    irq_all = np.concatenate([v[0] for v in per_cpu.values()])
    thr_all = np.concatenate([v[1] for v in per_cpu.values()])
    lines += ["ALL:        IRQ       Thr", f"count:{len(irq_all):9d} {len(thr_all):9d} ",
              f"min:  {int(irq_all.min()):9d} {int(thr_all.min()):9d} ",
              f"avg:  {int(irq_all.sum() // len(irq_all)):9d} {int(thr_all.sum() // len(thr_all)):9d} ",
              f"max:  {int(irq_all.max()):9d} {int(thr_all.max()):9d} "]
    hist_frame = table.iloc[:entries].copy()
    hist_frame.index = pd.Index(np.arange(entries) * bucket_us, name="latency_us")
    return TimerlatOutput("\n".join(lines) + "\n", cpus, hist_frame)


def cyclictest_from_trace(trace, histogram_us: int | None = None) -> CyclictestOutput:
    """cyclictest's output rebuilt from a trace recorded while it ran: each of
    its measuring threads (task ``cyclictest`` arming hrtimer_wakeup sleeps;
    the main thread, which sleeps far less often, left out; in pid order)
    sleeps until ``next`` (its hrtimer's soft expiry) and is measured when it
    is switched in (sched_switch) — what the trace can see of the clock read
    cyclictest does next in user space, a few µs later (the return to user
    space, its own clock_gettime). Where the switch-in is not traced (a CPU
    whose switches away from the idle task are missing), when its hrtimer
    woke it instead (``measured_at`` "wakeup"), which leaves out the switch as
    well. In the shape of :func:`cyclictest_output`, to set beside
    cyclictest's own :func:`read_cyclictest_hist`."""
    from .replay.clocks import clock_offset
    from .trace.events import column

    ev = trace.events
    offset = clock_offset(ev)
    sel = ev[ev["event"].isin(("hrtimer_start", "hrtimer_expire_entry", "sched_switch", "sched_wakeup"))]
    event, pid, task, ts = column(sel, "event"), column(sel, "pid"), column(sel, "task", ""), column(sel, "ts_ns")
    function, soft, next_pid = column(sel, "function", ""), column(sel, "softexpires_ns"), column(sel, "next_pid")
    cpu, ptr, wakee = column(sel, "cpu"), column(sel, "hrtimer"), column(sel, "wakee_pid")
    sleeping, woken, samples, where = {}, {}, {}, {}  # pid -> (next, hrtimer); pid -> (next, t); pid -> [...]
    by_ptr = {}  # hrtimer -> sleeping pid
    last_expired = {}  # CPU -> the sleeper whose hrtimer just expired there
    for e, p, tk, t, fn, s_, np_, c, h, wk in zip(event, pid, task, ts, function, soft, next_pid, cpu, ptr, wakee):
        if e == "hrtimer_start":
            if str(tk) == "cyclictest" and str(fn) == "hrtimer_wakeup" and s_ is not None:
                if p in woken:  # it ran without a traced switch-in: measured at its wakeup
                    samples.setdefault(p, []).append(woken.pop(p) + (0,))
                sleeping[p] = s_
                by_ptr[h] = p
                where[p] = c
        elif e == "hrtimer_expire_entry":
            last_expired[c] = by_ptr.pop(h, None)
        elif e == "sched_wakeup":
            if wk is not None and wk == last_expired.pop(c, None) and wk in sleeping:
                woken[wk] = (sleeping.pop(wk), t - offset)
        elif np_ in woken:
            nxt, _ = woken.pop(np_)
            samples.setdefault(np_, []).append((nxt, t - offset, 1))
    for p, (nxt, t) in woken.items():
        samples.setdefault(p, []).append((nxt, t, 0))
    if not samples:
        raise ValueError(f"cyclictest_from_trace: {getattr(trace, 'path', 'the trace')} shows no cyclictest thread "
                         "(task 'cyclictest' sleeping on hrtimer_wakeup)")
    most = max(len(v) for v in samples.values())
    rows, per_thread = [], []
    for p in sorted(q for q, v in samples.items() if len(v) >= most // 2):
        nxt, run, switched = np.array(sorted(samples[p]), dtype=np.int64).T
        us = cyclictest_us(run, nxt)
        rows.append(dict(thread=len(rows), tid=int(p), cpu=int(where[p]), **_thread_stats(us),
                         measured_at="switch" if switched.mean() > 0.5 else "wakeup"))
        per_thread.append(us)
    threads = pd.DataFrame(rows)
    hist = None
    if histogram_us:
        counts = np.zeros((histogram_us, len(per_thread)), dtype=np.int64)
        for j, us in enumerate(per_thread):
            inside = (us >= 0) & (us < histogram_us)
            np.add.at(counts[:, j], us[inside], 1)
        threads["overflows"] = [int((us >= histogram_us).sum()) for us in per_thread]
        hist = pd.DataFrame(counts, columns=[f"thread_{j}" for j in range(len(per_thread))])
        hist.index.name = "latency_us"
    text = "\n".join(f"T:{r['thread']:2d} ({r['tid']:5d}) C:{r['cycles']:7d} Min:{r['min_us']:7d} "
                     f"Avg:{r['avg_us']:5d} Max:{r['max_us']:8d}" for r in rows) + "\n"
    return CyclictestOutput(text, threads, hist)
