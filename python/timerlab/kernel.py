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
    "first_timer_by_bucket": ((5, 9), "the 5.9 wheel rework: a remote idle CPU is woken only when the new timer's "
                                      "bucket is its base's first (before: when the requested expiry precedes the "
                                      "next_expiry the idle path left); the softirq runs only when a bucket is due and "
                                      "base->clk is forwarded at every enqueue (before: every tick, clk = jiffies + 1 "
                                      "on a busy CPU; not modelled)",
                              "1f32cab0db4b timers: Use only bucket expiry for base->next_expiry value; d4f7dae87096 "
                              "timers: Spare timer softirq until next expiry (v5.9)"),
    "jiffies_stall_check": ((5, 18), "a CPU whose own ticks see jiffies unchanged 5 times updates them itself "
                                     "(tick_sched_do_timer; replays with the jiffies duty)",
                            "a1ff03cd6fb9 tick: Detect and fix jiffies update stall (tip timers/core, Mar 2022)"),
    "deferrable_no_ipi": ((6, 8), "deferrable timers never wake a remote idle CPU (before: only a nohz_full one, "
                                  "which timerlab does not model: the same here, so no option follows it)",
                          "d124c3393e79 timers: Do not IPI for deferrable timers (v6.8)"),
    "is_idle_on_stop_only": ((6, 9), "a timer base is marked idle only when the tick stops (before: by the "
                                     "sleep-length query when the next event is over a tick away, and cleared when "
                                     "the tick is kept; the same for wakeups, as query and decision are one step); "
                                     "follows placement (pull: 6.9+), not the release",
                             "the 6.9 pull-model series (7ee988770326 and its preparation)"),
    "local_global_bases": ((6, 9), "pinned timers on BASE_LOCAL, the others on BASE_GLOBAL, deferrable on BASE_DEF "
                                   "(before: BASE_STD and BASE_DEF); follows placement (pull: 6.9+), not the "
                                   "release",
                           "timers: Keep the pinned timers separate from the others (6.9 series)"),
    "pull_model": ((6, 9), "timers are queued locally and idle CPUs' global timers are pulled by a migrator "
                           "(timer migration hierarchy)", "timers-core-2024-03-10, 7ee988770326"),
    "fair_server": ((6, 12), "the fair server (a deferred SCHED_DEADLINE server, runtime 50 ms per 1 s): a task "
                             "starting to run arms its CPU's dl_task_timer 950 ms ahead; firing on an idle CPU it "
                             "ends the idle loop without a task (tick_nohz_idle_exit, tmigr_cpu_activate). "
                             "Simulations only: a replay's trace has its own (idle_exit items)",
                    "sched/deadline: Deferrable dl server; sched/fair: Fair server interface (v6.12)"),
    "numa_tree_fix": ((6, 18), "hierarchy groups below the crossnode level hold one NUMA node only",
                      "5eb579dfd46b timers/migration: Fix imbalanced NUMA trees (Oct 2025)"),
    "teo_tick_intercepts_fix": ((6, 19), "teo counts tick intercepts below the tick length (teo_update)",
                                "cpuidle: governors: teo: Fix tick_intercepts handling in teo_update() (late 2025)"),
    "remote_expires_self": (LATEST, "remote handling also expires the migrator's own global timers",
                            "d486b4934a8e timers/migration: Fix livelock in tmigr_handle_remote_up() (2026)"),
    "hrtimer_keep_local": ((7, 1), "a non-pinned hrtimer stays on its CPU while that CPU's tick runs (or "
                                   "need-resched is set); it is pushed to get_nohz_timer_target only from a CPU "
                                   "whose tick is stopped (before: from any idle CPU, and a busy one keeps it)",
                           "3288cd486376 hrtimer: Optimize for local timers; c939191457fe hrtimer: Use NOHZ "
                           "information for locality (tip sched/hrtick, Feb 2026, mainline ~7.1)"),
}

# The tick's hrtimer callback by release (kernel/time/tick-sched.c): renamed
# tick_nohz_highres_handler in a late-2023 cleanup (first release assumed
# 6.8), then tick_nohz_handler when the low- and high-resolution handlers
# merged (6.10). The traces show tick_sched_timer on 6.1, tick_nohz_handler
# on 6.12 and 6.18.
_TICK_FUNCTIONS = (((6, 10), "tick_nohz_handler"), ((6, 8), "tick_nohz_highres_handler"), ((0, 0), "tick_sched_timer"))


def tick_function(kernel) -> str:
    """The name of the tick's hrtimer callback in this release."""
    v = parse_kernel(kernel)
    return next(name for first, name in _TICK_FUNCTIONS if v >= first)


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
