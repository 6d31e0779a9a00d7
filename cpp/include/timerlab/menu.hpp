// menu.hpp — the menu cpuidle governor.
//
// Models drivers/cpuidle/governors/menu.c as of Linux v6.15–v6.17 (the form
// without the iowait multiplier, with the repeating-interval detector run
// before the sleep length is read): menu_select, menu_reflect, menu_update,
// get_typical_interval, which_bucket, menu_update_intervals.
// Reference: kernel-timers.md §6.1.
//
// Theory of operation
// -------------------
// menu guesses how long the coming idle period will be and picks the deepest
// state whose target residency fits the guess. Two predictors, the smaller
// wins:
//
//   typical   the repeating-interval detector: over the last INTERVALS (8)
//             measured idle periods (µs), accept the mean when the spread is
//             small (variance <= 400 µs², or mean > 6 standard deviations
//             with at least 6 samples); otherwise discard the extreme sample
//             on the side further from the mean and try again. With only 6
//             samples left it gives up: the largest remaining value if at
//             least 4 remain, else "no prediction" (UINT_MAX).
//   timer     the sleep length (time to the next timer event, from the NOHZ
//             code) scaled by a correction factor: a running average of
//             measured/sleep-length, one per decade of the sleep length
//             ("bucket"), fixed point with 1.0 == RESOLUTION * DECAY.
//
//   bucket  sleep length      correction_factor[bucket] starts at 8192 (1.0)
//     0      < 10 µs          factor <- factor - factor/DECAY
//     1      < 100 µs                   + RESOLUTION * measured / sleep length
//     2      < 1 ms           (a measured period >= MAX_INTERESTING counts
//     3      < 10 ms           as a perfect prediction: + RESOLUTION)
//     4      < 100 ms
//     5      >= 100 ms        (also: sleep length not read)
//
// The sleep length runs the NOHZ next-event path, which is costly, so since
// v6.15 it is read only when the typical interval exceeds
// RESIDENCY_THRESHOLD_NS: a CPU that keeps waking within 15 µs goes to a
// shallow state without asking (next_timer = "infinite", the next tick
// assumed half a tick away).
//
// select, in order:
//   1. apply the update pending from the last period (menu_update);
//   2. typical interval; sleep length only if typical > 15 µs;
//   3. state 0 at once if there is no real choice (one state, a zero latency
//      limit, or the timer / latency limit rules out state 1);
//   4. tick already stopped and a prediction under a tick: trust the timer
//      instead (a shallow state with no tick could be stuck there long);
//   5. scan the enabled states shallow to deep (rules in menu.cpp);
//   6. keep the tick when the pick polls or the prediction is under a tick,
//      and then step down to a state that fits before the next tick.
//
// update (at the next select, as in the kernel — reflect only records):
//   measured = residency - exit latency (or residency / 2 when it is not
//   more than twice the exit latency); a tick wakeup while the timer was more
//   than a tick away means the tick should have been stopped: measured =
//   9/10 MAX_INTERESTING; clamp to the sleep length; update the bucket's
//   factor; push measured (µs) into the ring of intervals.
//
// Protocol with the engine: every select() is followed by one reflect().
// reflect(entered < 0, ...) — or a select() with no reflect() since the
// previous one — stands for a driver rejection (the kernel does not call the
// governor's reflect then and cpuidle sets last_residency_ns to 0): no
// update, and the ring gets UINT_MAX so the stale period is not used.
//
// Invariants: correction factors stay in [1, RESOLUTION*DECAY] (a measured
// period is clamped to the sleep length, so no ratio exceeds 1.0), and
// select returns an index of the table (a disabled one only where the kernel
// would too: state 0 when there is no choice).
//
// Simplifications vs. the kernel
//   * POLL's poll_time_limit is not modelled (idle.hpp), so the update branch
//     "polling state left by its time limit -> measured = sleep length" never
//     runs.
//   * Arithmetic that would wrap in the kernel saturates here: the scaled
//     sleep length is computed without overflow and timer_us is clamped to
//     UINT_MAX (the kernel's u64 product wraps for sleep lengths beyond
//     ~2.2e15 ns, which timekeeping_max_deferment normally prevents but the
//     engine does not model); measured µs pushed to the ring are clamped to
//     UINT_MAX - 1 (the kernel truncates to 32 bits).
//   * A fresh governor starts with an empty ring and no pending update; the
//     kernel's zeroed per-CPU device would make its very first select record
//     one "rejected" interval (UINT_MAX), a boot artefact we skip.
#pragma once

#include <array>
#include <cstdint>

#include "timerlab/idle.hpp"

namespace timerlab {

namespace menu {
inline constexpr int BUCKETS = 6;
inline constexpr unsigned INTERVAL_SHIFT = 3;
inline constexpr unsigned INTERVALS = 1u << INTERVAL_SHIFT;
inline constexpr unsigned RESOLUTION = 1024;
inline constexpr unsigned DECAY = 8;
inline constexpr std::uint64_t MAX_INTERESTING = 50'000'000;  // ns (50 ms)
inline constexpr unsigned NO_INTERVAL = 0xFFFFFFFFu;          // UINT_MAX: "no prediction"
}  // namespace menu

// Decade of the sleep length (ns) -> correction-factor bucket 0..5.
int which_bucket(std::uint64_t duration_ns);

// The repeating-interval detector over a ring of measured intervals (µs).
// Returns the typical interval in µs, or menu::NO_INTERVAL.
unsigned get_typical_interval(const std::array<unsigned, menu::INTERVALS>& intervals);

// Aligned to a cache line: select reads and writes nearly all of its ~190
// bytes at every idle entry, three lines rather than the four an unaligned
// allocation straddles (cold again by the next entry at 256 CPUs).
class alignas(64) MenuGovernor final : public Governor {
 public:
  explicit MenuGovernor(const GovernorParams& params);

  int select(IdleContext& ctx, bool* stop_tick) override;
  void reflect(int entered, std::int64_t last_residency_ns, bool got_tick) override;
  std::int64_t predicted_ns() const override { return predicted_ns_; }

  // Introspection for tests and results.
  unsigned correction_factor(int bucket) const { return correction_factor_.at(static_cast<std::size_t>(bucket)); }
  const std::array<unsigned, menu::INTERVALS>& intervals() const { return intervals_; }
  int bucket() const { return bucket_; }
  std::int64_t next_timer_ns() const { return next_timer_ns_; }
  // The detector over the ring as select keeps it (sorted, with running
  // sums): always get_typical_interval(intervals()).
  unsigned typical_interval_us() const;

 private:
  void menu_update();
  void menu_update_intervals(unsigned interval_us);

  const IdleTable* table_;
  std::int64_t tick_nsec_;
  std::int64_t latency_req_ns_;

  // struct menu_device
  bool needs_update_ = false;
  bool tick_wakeup_ = false;
  std::int64_t next_timer_ns_ = 0;
  int bucket_ = 0;
  std::array<unsigned, menu::BUCKETS> correction_factor_{};
  std::array<unsigned, menu::INTERVALS> intervals_{};
  unsigned interval_ptr_ = 0;
  // The ring as the detector reads it, kept by menu_update_intervals: the
  // samples in ascending order and the wrapped sums of them and of their
  // squares (the same numbers get_typical_interval computes afresh).
  std::array<unsigned, menu::INTERVALS> sorted_{};
  std::uint64_t sum_ = 0;
  std::uint64_t sum_sq_ = 0;

  // The parts of struct cpuidle_device menu reads.
  int last_state_idx_ = 0;
  std::int64_t last_residency_ns_ = 1;  // non-zero: no rejected entry yet
  bool awaiting_reflect_ = false;

  std::int64_t predicted_ns_ = 0;
};

}  // namespace timerlab
