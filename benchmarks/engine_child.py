"""One engine benchmark configuration in this process (bench_engine.py runs
each in a fresh process; also the command to compare two builds, run in
turn as whole processes, since it only uses API that both sides have):

    python benchmarks/engine_child.py '[CPUS, "pull"|"push", DURATION_NS, PENDING]'
    python benchmarks/engine_child.py '[CPUS, "hrtimers", DURATION_NS, 0]'

Prints one JSON line. PENDING > 0: every CPU arms long timeouts at a steady
rate and never cancels them (the memory cost of a pending timer).
"hrtimers": the hrtimer row — on every CPU nanosleep sleepers (run 100 µs,
sleep 2 ms, task slack 50 µs) beside a cyclictest thread at 1 kHz
(SCHED_FIFO 95, /dev/cpu_dma_latency 0), pull model.
"""
import json
import resource
import sys
import time

import timerlab as tl

cpus, model, duration_ns, pending = json.loads(sys.argv[1])
kind = "hrtimers" if model == "hrtimers" else "timers"
placement = "pull" if kind == "hrtimers" else model
if pending:
    rate = pending / cpus / (duration_ns / 1e9)
    w = tl.workloads.timeouts(rate_hz=rate, timeout_ns=1e12, cancel_p=0.0) + tl.workloads.busy(fraction=1.0)
elif kind == "hrtimers":
    w = (tl.workloads.nanosleepers(run_ns=tl.dist.exponential(100_000), sleep_ns=tl.dist.exponential(2_000_000))
         + tl.workloads.cyclictest(interval_us=1000, priority=95))
else:
    w = (tl.workloads.busy(fraction=0.25)
         + tl.workloads.tasks(run_ns=tl.dist.exponential(100_000), sleep_ns=tl.dist.exponential(4_000_000),
                              timeouts=4, cancel_p=0.9, timeout_ns=tl.dist.uniform(10e6, 300e6)))
cfg = tl.Config(cpus=cpus, nodes=2 if cpus > 1 else 1, placement=placement,
                kernel="latest" if placement == "pull" else "6.8", workload=w, duration_ns=int(duration_ns),
                record_timers=False, seed=1)
t0 = time.perf_counter()
r = tl.simulate(cfg)
wall = time.perf_counter() - t0
s = r.summary
print(json.dumps({"cpus": cpus, "placement": model, "wall_s": wall,
                  "timer_events": int(s["timer_events"]), "steps": int(s["steps"]),
                  "hrtimer_events": int(s.get("hrtimers_armed", 0) + s.get("hrtimers_expired", 0)),
                  "latency_us_max": float(s.get("latency_us_max", float("nan"))),
                  "peak_pending": int(s["peak_pending_timers"]), "levels": tl.hierarchy(topology=cfg.topology).levels,
                  "max_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "duration_s": duration_ns / 1e9}))
