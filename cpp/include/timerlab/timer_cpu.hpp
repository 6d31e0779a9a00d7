// timer_cpu.hpp — the timer bases of one CPU and what the idle and tick paths
// ask of them.
//
// Models the per-CPU, NOHZ side of kernel/time/timer.c: the bases (6.9+:
// BASE_LOCAL, BASE_GLOBAL, BASE_DEF; before: BASE_STD and BASE_DEF), base
// selection from the timer flags (get_timer_cpu_base), the next-event
// computation of an idling CPU (fetch_next_timer_interrupt,
// __get_next_timer_interrupt with timer_use_tmigr, the pre-6.9
// get_next_timer_interrupt), marking bases idle (timer_base_try_to_set_idle)
// and busy again (timer_clear_idle), and the tick's check for due work
// (run_local_timers). Reference: kernel-timers.md §1.8, §2, §5.
//
// Theory of operation
// -------------------
//   flags            6.9+ base (pull model)      before 6.9 (push model)
//   none             BASE_GLOBAL                 BASE_STD
//   PINNED           BASE_LOCAL                  BASE_STD
//   DEFERRABLE (+P)  BASE_DEF                    BASE_DEF
// Before 6.9 BASE_STD is stored in slot BASE_LOCAL and BASE_GLOBAL is unused.
//
// Deferrable policies (what-ifs from the pull-model review; pinned
// deferrable timers stay on BASE_DEF under every policy):
//   legacy         non-pinned deferrable timers on BASE_DEF (every kernel)
//   global         they go to BASE_GLOBAL: ordinary global timers, which
//                  may wake the last idle CPU (the series' "next step")
//   global_nowake  they go to BASE_GDEF, a fourth base whose first expiry
//                  is handed to the hierarchy like a global one (so an
//                  active migrator expires it), but the wakeup of the last
//                  CPU going idle counts BASE_GLOBAL only: a fully idle
//                  system never wakes for them (the reviewer's request; no
//                  kernel has it)
//
// Going idle (6.9+): the first LOCAL and GLOBAL bucket expiries give the
// next event. If it is at most one jiffy away, nothing else happens. Else the
// first GLOBAL expiry (only if it precedes the first LOCAL one) goes to the
// hierarchy: tmigr_quick_check while the CPU is still active (for the sleep
// estimate), tmigr_cpu_deactivate on the tick-stop path, tmigr_cpu_new_timer
// once the base is idle; a wakeup the hierarchy hands back replaces the local
// event if earlier. The DEF base is never consulted: deferrable timers never
// wake an idle CPU. Jiffies convert to CLOCK_MONOTONIC on the tick grid:
// ns = basem + (bucket_expiry - basej) * TICK_NSEC.
//
// Simplifications vs. the kernel
//   * Low-resolution hrtimers are not modelled (high-resolution mode: the
//     hrtimer term of cmp_next_hrtimer_event is KTIME_MAX).
//   * No nohz_full CPUs (the BASE_GLOBAL is_idle of nohz_full, §9 item 5).
#pragma once

#include <array>
#include <cstdint>

#include "timerlab/tmigr.hpp"
#include "timerlab/wheel.hpp"

namespace timerlab {

enum BaseIdx : unsigned { BASE_LOCAL = 0, BASE_GLOBAL = 1, BASE_DEF = 2, BASE_GDEF = 3, NR_BASES = 4 };
inline constexpr unsigned BASE_STD = BASE_LOCAL;  // the pre-6.9 single standard base

enum class DeferrablePolicy : std::uint8_t { legacy, global, global_nowake };

// get_timer_cpu_base / get_timer_this_cpu_base: which base a timer goes to.
// The policies other than legacy need the pull model (a hierarchy).
constexpr unsigned timer_base_index(std::uint32_t flags, bool pull_model,
                                    DeferrablePolicy def = DeferrablePolicy::legacy) {
  if (flags & TIMER_DEFERRABLE) {
    if (!pull_model || (flags & TIMER_PINNED) || def == DeferrablePolicy::legacy) return BASE_DEF;
    return def == DeferrablePolicy::global ? BASE_GLOBAL : BASE_GDEF;
  }
  if (!pull_model) return BASE_STD;
  return (flags & TIMER_PINNED) ? BASE_LOCAL : BASE_GLOBAL;
}

// The first BASE_GLOBAL expiry of the whole system (ns, KTIME_MAX if none):
// under global_nowake, the only global events the last idle CPU wakes for.
class HardGlobalEvents {
 public:
  virtual ~HardGlobalEvents() = default;
  virtual std::uint64_t first_hard_global(jiffies_t basej, std::uint64_t basem) = 0;
};

struct TimerEvents {
  std::uint64_t local = KTIME_MAX;
  std::uint64_t global = KTIME_MAX;
};

// Where the caller of __get_next_timer_interrupt stands.
enum class NextEventPath : std::uint8_t {
  sleep_estimate,  // tick_nohz_next_event (get_next_timer_interrupt)
  tick_stop,       // timer_base_try_to_set_idle
};

class TimerCpu {
 public:
  // `hard` is non-null only under global_nowake.
  TimerCpu(TimerPool& pool, unsigned hz, jiffies_t jiffies, unsigned cpu, HardGlobalEvents* hard = nullptr);

  TimerBase& base(unsigned idx) { return bases_[idx]; }
  const TimerBase& base(unsigned idx) const { return bases_[idx]; }
  unsigned cpu() const { return cpu_; }

  // fetch_next_timer_interrupt (6.9+): fills tevt, returns nextevt in jiffies.
  jiffies_t fetch_next_timer_interrupt(jiffies_t basej, std::uint64_t basem, TimerEvents& tevt,
                                       std::uint64_t tick_nsec);
  // __get_next_timer_interrupt (6.9+). For the tick-stop path `*idle` is in
  // (base already idle) and out (base now idle); for the estimate, null.
  std::uint64_t get_next_timer_interrupt(jiffies_t basej, std::uint64_t basem, std::uint64_t tick_nsec,
                                         Tmigr* tmigr, bool* idle);
  // timer_base_try_to_set_idle: KTIME_MAX at once if already idle.
  std::uint64_t timer_base_try_to_set_idle(jiffies_t basej, std::uint64_t basem, std::uint64_t tick_nsec,
                                           Tmigr* tmigr, bool* idle);
  // get_next_timer_interrupt before 6.9 (one BASE_STD): also marks the base
  // idle when the next event is more than a tick away, whether or not the
  // tick is then stopped.
  std::uint64_t get_next_timer_interrupt_push(jiffies_t basej, std::uint64_t basem, std::uint64_t tick_nsec);
  // timer_clear_idle: the LOCAL (or STD) base is busy again; returns true if
  // it was idle (the caller then traces timer_base_idle and activates the
  // CPU in the hierarchy).
  bool timer_clear_idle();
  // run_local_timers: is any base due at `jiffies`? (The hierarchy's check,
  // tmigr_requires_handle_remote, is the caller's.)
  bool any_base_due(jiffies_t jiffies, bool pull_model) const;
  // This CPU's first BASE_GLOBAL expiry in ns (KTIME_MAX if none).
  std::uint64_t next_hard_global(jiffies_t basej, std::uint64_t basem, std::uint64_t tick_nsec);

 private:
  std::array<TimerBase, NR_BASES> bases_;
  unsigned cpu_;
  HardGlobalEvents* hard_;
};

}  // namespace timerlab
