// teo.hpp — the teo ("timer events oriented") cpuidle governor.
//
// Models drivers/cpuidle/governors/teo.c as of Linux v6.17 (after the
// 2024–2025 reworks that dropped the recent-intercepts window and the
// utilization threshold and made the sleep-length read lazy; before the
// late-2025 series "Rework the handling of tick wakeups" / "Simplify
// intercepts-based state lookup"): teo_update, teo_state_ok,
// teo_find_shallower_state, teo_select, teo_reflect.
// Reference: kernel-timers.md §6.2 and §9 item 9.
//
// Theory of operation
// -------------------
// teo trusts timers — the sleep length is when the next timer would wake the
// CPU — and learns how often something else wakes it first. Each state i
// owns a bin of idle durations [target(i), target(i+1)); the last bin is
// open-ended:
//
//   state   POLL     C1       C1E       C6            (skx, µs)
//   bin     [0,2)    [2,20)   [20,600)  [600, inf)
//
// After every period (applied at the next select): the sleep length falls in
// bin T, the measured duration in bin D (D <= T: only bins the sleep length
// reached count). D == T is a "hit" (the timer woke us); D < T an "intercept"
// (something else did, earlier). Every counter decays by 1/8 per period
// (DECAY_SHIFT) and grows by PULSE, so each is a recency-weighted count of
// periods scaled by 1024; `total` is the weighted count of all periods.
//
//   measured   = residency - exit/2 (half the exit latency as a typical
//                wakeup delay), or residency/2 if shorter than the exit latency
//   short_idles   += PULSE when measured < RESIDENCY_THRESHOLD_NS
//   tick_intercepts += PULSE on an intercept under the tick condition (below)
//   "artificial" wakeup (the tick woke a CPU whose sleep length exceeded a
//   tick): measured = infinite — the tick should have been stopped.
//
// select:
//   1. candidate = deepest enabled state; sums of intercepts and hits of the
//      bins below it; constraint_idx = deepest enabled state within the
//      latency limit.
//   2. If 2 x (intercepts below the candidate) > total - (hits below it) —
//      early wakeups are the majority of the periods that were not timer
//      hits below the candidate — walk down accumulating intercepts and take
//      the first state where the running sum passes half of the intercepts
//      below (it must be enabled, and with a stopped tick deep enough:
//      target >= TICK; else the deepest suitable state seen on the way).
//   3. Clamp to constraint_idx.
//   4. State 0 or target < 15 µs, and short idles are at least half of all
//      periods (or the latency limit < LATENCY_THRESHOLD_NS): keep the tick
//      and return WITHOUT reading the sleep length (costly NOHZ path).
//   5. Read the sleep length; a candidate whose target exceeds it steps down
//      to the deepest enabled state that fits (if OK with a stopped tick).
//   6. target < TICK and tick_intercepts > 5/8 of total: duration = TICK/2.
//   7. Stop the tick unless the pick polls or duration < TICK (a stopped tick
//      stays stopped); when keeping it, step down so target <= delta_tick.
//
// The tick condition of teo_update: the v6.17 snapshot counts an intercept in
// tick_intercepts when measured >= TICK — reversed: the counter is meant for
// intercepts *before* the tick. Linux fixed it in late 2025 ("cpuidle:
// governors: teo: Fix tick_intercepts handling in teo_update()", for 6.19,
// Cc stable) with measured <= TICK. GovernorParams::teo_tick_intercepts_fixed
// picks the fixed (default) or the snapshot's condition.
//
// predicted_ns(): the duration teo used for its tick decision — the sleep
// length (or TICK/2 by step 6); when the sleep length was not read, the
// chosen state's target residency (the duration the kernel assumes on its
// single-state path).
//
// Protocol with the engine: every select() is followed by one reflect().
// reflect(entered < 0, ...), or no reflect() before the next select(), stands
// for a driver rejection: as in the kernel, nothing is learnt from it.
//
// Invariants: counters are unsigned 32-bit with the kernel's arithmetic
// (including its unsigned wrap in step 2's "total - hits below"); select
// returns an index of the table.
//
// Simplifications vs. the kernel
//   * POLL's poll_time_limit is not modelled (idle.hpp), so the only
//     artificial wakeup is the tick one.
//   * A fresh governor has no period to learn from: its first select applies
//     no update (the kernel's zeroed per-CPU device state could count one
//     empty period at boot).
#pragma once

#include <cstdint>
#include <vector>

#include "timerlab/idle.hpp"

namespace timerlab {

namespace teo {
inline constexpr std::int64_t LATENCY_THRESHOLD_NS = RESIDENCY_THRESHOLD_NS / 2;
inline constexpr std::uint32_t PULSE = 1024;
inline constexpr unsigned DECAY_SHIFT = 3;
}  // namespace teo

// struct teo_bin
struct TeoBin {
  std::uint32_t intercepts = 0;
  std::uint32_t hits = 0;
};

class TeoGovernor final : public Governor {
 public:
  explicit TeoGovernor(const GovernorParams& params);

  int select(IdleContext& ctx, bool* stop_tick) override;
  void reflect(int entered, std::int64_t last_residency_ns, bool got_tick) override;
  std::int64_t predicted_ns() const override { return predicted_ns_; }

  // Introspection for tests and results.
  const std::vector<TeoBin>& bins() const { return state_bins_; }
  std::uint32_t total() const { return total_; }
  std::uint32_t tick_intercepts() const { return tick_intercepts_; }
  std::uint32_t short_idles() const { return short_idles_; }
  std::int64_t sleep_length_ns() const { return sleep_length_ns_; }

 private:
  void teo_update();
  bool teo_state_ok(int i, bool tick_stopped) const;
  int teo_find_shallower_state(int state_idx, std::int64_t duration_ns, bool no_poll) const;

  const IdleTable* table_;
  std::int64_t tick_nsec_;
  std::int64_t latency_req_ns_;
  bool tick_intercepts_fixed_;

  // struct teo_cpu
  std::int64_t sleep_length_ns_ = 0;
  std::vector<TeoBin> state_bins_;
  std::uint32_t total_ = 0;
  std::uint32_t tick_intercepts_ = 0;
  std::uint32_t short_idles_ = 0;
  bool artificial_wakeup_ = false;

  // The parts of struct cpuidle_device teo reads; -1: nothing to learn.
  int last_state_idx_ = -1;
  std::int64_t last_residency_ns_ = 0;

  std::int64_t predicted_ns_ = 0;
};

}  // namespace timerlab
