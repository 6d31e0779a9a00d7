// engine.hpp — the discrete-event simulation of a machine's timer subsystem.
//
// Ties the models together: per-CPU timer bases (timer_cpu.hpp) and the
// timer API (mod_timer.hpp), placement (push: get_nohz_timer_target; pull:
// always local), remote wakeups (trigger_dyntick_cpu), the timer-migration
// hierarchy (tmigr.hpp), the tick and NOHZ idle (kernel/time/tick-sched.c:
// tick_nohz_next_event, tick_nohz_stop_tick, tick_nohz_idle_exit), and the
// workload (workload.hpp). Reference: kernel-timers.md §2-§5.
//
// Theory of operation
// -------------------
// Time is CLOCK_MONOTONIC in int64 ns; jiffies = INITIAL_JIFFIES +
// mono / TICK_NSEC, so values look like a real trace's. All CPUs' ticks fall
// on the same TICK_NSEC grid (no tick skew), as the kernel's default.
//
// Each CPU is in one of three activities:
//
//     run  --(nothing runnable)-->  idle (in a cpuidle state, tick stopped
//      ^                              |     or kept)
//      |                              | interrupt: tick / programmed wakeup /
//      |                              v            IPI / device
//      +--(a task is runnable)---  irq (awake irq_ns, then back to the idle
//                                       loop, or out of it to run a task)
//
// Every CPU has a handful of pending sources (its clock event — the periodic
// tick or the stopped tick's programmed wakeup —, an IPI in flight, the end
// of an interrupt, and its workload items); the engine keeps the earliest of
// each CPU in an indexed heap over CPUs and processes sources in (time, CPU,
// source) order, so a run is deterministic. The kernel code that runs at each
// step is the models': an idle entry runs tick_nohz_next_event and
// tick_nohz_stop_tick (which deactivate the CPU in the hierarchy and program
// its wakeup); a tick runs run_local_timers and, if needed, the TIMER softirq
// (own bases, then tmigr_handle_remote); an exit from idle restarts the tick
// (timer_clear_idle activates the CPU in the hierarchy).
//
// Simplifications vs. the kernel
//   * No idle governor yet: every idle entry tries to stop the tick (the
//     default-idle path) and sleeps in state 1; exit latency is 0.
//   * Softirq work, callbacks and the hierarchy walks take no time; an
//     interrupt from idle keeps the CPU awake irq_ns.
//   * The jiffies-update duty and timekeeping_max_deferment are not
//     modelled: jiffies is always current.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "timerlab/event_log.hpp"
#include "timerlab/random.hpp"
#include "timerlab/timer_cpu.hpp"
#include "timerlab/topology.hpp"
#include "timerlab/workload.hpp"

namespace timerlab {

struct SimConfig {
  TopologySpec topology;
  unsigned hz = 250;
  bool pull_model = true;          // 6.9+: pull at expiry; false: pre-6.9 push at enqueue
  bool lazy_wakeup = true;         // wake an idle CPU only for its new first timer
  bool deferrable_no_ipi = true;   // 6.8+: deferrable timers never IPI
  TmigrSetup tmigr_setup = TmigrSetup::fixed;
  bool remote_expires_self = true;
  std::int64_t start_ns = 0;  // CLOCK_MONOTONIC at the start (jiffies = INITIAL_JIFFIES at 0)
  std::int64_t duration_ns = 1'000'000'000;
  std::uint64_t seed = 1;
  std::int64_t ipi_latency_ns = 1000;
  bool record_events = false;
  bool record_timers = true;
  bool check_invariants = false;  // after every step (slow; for tests)
  WorkloadSpec workload;

  void validate() const;  // throws std::invalid_argument naming the option
};

struct CpuCounters {
  std::int64_t busy_ns = 0, idle_ns = 0;
  std::uint64_t idle_entries = 0, wakeups = 0, tick_stops = 0, ticks = 0, softirqs = 0;
  std::uint64_t wakeups_timer = 0, wakeups_ipi = 0, wakeups_irq = 0;
  std::uint64_t timers_armed = 0, timers_cancelled = 0;
  std::uint64_t timers_expired_local = 0;   // timers of this CPU's bases it expired itself
  std::uint64_t timers_expired_remote = 0;  // timers of this CPU's bases expired by another CPU
  std::uint64_t remote_expiries_done = 0;   // timers of other CPUs this CPU expired
  std::uint64_t ipis_sent = 0, ipis_received = 0;
  std::uint64_t tasks_woken = 0;
};

enum class TimerOutcome : std::uint8_t { pending = 0, expired = 1, cancelled = 2, rearmed = 3 };

// One armed timer instance: from timer_start to its end.
struct TimerRow {
  TimerId timer;
  std::uint16_t function;
  std::uint32_t flags;  // TIMER_PINNED | TIMER_DEFERRABLE
  std::int32_t cpu_armed, base_cpu, cpu_expired;
  std::int64_t armed_ns, end_ns;
  jiffies_t expires_jiffies, bucket_expiry_jiffies;
  TimerOutcome outcome;
};

struct SimResult {
  std::vector<CpuCounters> cpus;
  std::vector<TimerRow> timers;
  std::vector<EventRow> events;
  std::uint64_t steps = 0;        // sources processed
  std::uint64_t timer_events = 0; // timer_start + timer_cancel + expiries
  std::uint64_t pending_at_end = 0;
  std::uint64_t peak_pending = 0;
  std::int64_t end_ns = 0;
};

class Engine;  // defined in engine_impl.hpp (a private header of the engine sources)

// Runs one simulation. Throws std::invalid_argument for a bad config.
SimResult simulate(const SimConfig& cfg);

}  // namespace timerlab
