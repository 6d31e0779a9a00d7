// nohz.hpp — NOHZ idle: when an idle CPU stops its tick and when it wakes.
//
// Models kernel/time/tick-sched.c (tick_nohz_idle_enter,
// tick_nohz_next_event, tick_nohz_idle_stop_tick / tick_nohz_stop_tick,
// tick_nohz_idle_exit / tick_nohz_restart_sched_tick) and the idle loop of
// kernel/sched/idle.c (do_idle, cpuidle_idle_call), as the engine runs them
// (cpp/src/engine_idle.cpp). Reference: kernel-timers.md §5.
//
// Theory of operation
// -------------------
//   idle entry / every pass of the idle loop:
//     1. tick_nohz_next_event: if something needs the CPU's next tick (the
//        kernel asks rcu_needs_cpu, irq_work_needs_cpu and whether the
//        timer softirq is pending; modelled: a task ran since the CPU's last
//        tick, see below) the next event is the next tick; else the next
//        timer event (timer_cpu.hpp). If it is at most a tick away and the
//        tick still runs -> keep the tick.
//     2. tick_nohz_stop_tick: try to mark the timer base idle (6.9+: this
//        deactivates the CPU in the timer-migration hierarchy, which may
//        hand back the system's first global event); if the base could not
//        be marked idle -> keep the tick. Else stop it (trace tick_stop on
//        the first stop) and re-arm the tick's hrtimer for the earlier of
//        the two answers (cancel it for none): the clock event device fires
//        for the first of it and every other hrtimer (hrtimer.hpp), so the
//        CPU wakes for its first hrtimer too. The governor's sleep length is
//        the earlier of that next event and the first hrtimer other than
//        the tick (tick_nohz_get_sleep_length: hrtimer_next_event_without).
//     3. sleep (trace cpu_idle state=1) until an interrupt: the programmed
//        wakeup or a kept tick (cause: timer), another hrtimer (cause:
//        hrtimer, its function named), an IPI (cause: ipi), a device
//        interrupt (cause: irq). The interrupt runs (tick work, softirq),
//        then either a task is runnable -> leave the idle loop:
//        tick_nohz_idle_exit restarts the tick on its grid and
//        timer_clear_idle activates the CPU in the hierarchy (trace
//        timer_base_idle is_idle=0) — or the loop goes round again from 1,
//        where 6.9+ takes the tmigr_cpu_new_timer path (the base is idle).
//
// A reschedule IPI with no task to run (a remote enqueue woke the CPU so it
// re-evaluates its timers) still takes the CPU out of the idle loop and back
// in, through tick_nohz_idle_exit: the hierarchy sees it active for a moment.
//
// The governor (idle.hpp) chooses the state and whether to offer the tick
// to stop at each pass; without a cpuidle driver (governor "none") the tick
// is always offered, as cpuidle_idle_call does.
//
// Simplifications vs. the kernel
//   * "Something needs the next tick" is modelled empirically (Config
//     rcu_needs_cpu): from a task switching out to the CPU's next tick.
//     Every real trace here (6.12, 6.18) shows the kernel keeping the tick
//     at 99.8-100 % of the idle entries in that window; they do not show
//     which of the three checks said so — RCU callbacks queued by the task
//     (rcu_needs_cpu) is the likeliest, hence the name. One tick later the
//     kernel still keeps the tick at 12-60 % of the entries (callbacks
//     waiting for a grace period?): not modelled. Kernels before 5.17
//     (RCU_FAST_NO_HZ, rcu_needs_cpu with a next-event time) may differ;
//     the option is not tied to a kernel version.
//   * The jiffies-update duty (tick_do_timer_cpu) is modelled only for
//     replays (SimConfig::jiffies_duty), with tick_sched_do_timer's stall
//     check (a CPU whose own ticks see jiffies unchanged MAX_STALLED_JIFFIES
//     times updates them itself); its max-deferment cap is not.
#pragma once

namespace timerlab {

// cpuidle state index traced while idle, and the exit marker (PWR_EVENT_EXIT).
inline constexpr unsigned kDefaultIdleState = 1;
inline constexpr unsigned long long kCpuIdleExit = 4294967295ull;
// tick_sched_do_timer: own ticks with jiffies unchanged before a CPU updates them itself.
inline constexpr unsigned kMaxStalledJiffies = 5;

}  // namespace timerlab
