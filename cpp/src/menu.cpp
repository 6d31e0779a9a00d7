// menu.cpp — the menu governor of Linux v6.15–v6.17 (see menu.hpp).
#include "timerlab/menu.hpp"

#include <algorithm>
#include <cassert>
#include <climits>
#include <stdexcept>

namespace timerlab {

namespace {

constexpr std::int64_t kKtimeMax = INT64_MAX;
constexpr std::uint64_t kNsecPerUsec = 1000;

}  // namespace

int which_bucket(std::uint64_t duration_ns) {
  // One bucket per decade from 10 µs: factors differ by order of magnitude
  // (a long expected sleep is far likelier to be cut short).
  std::uint64_t limit = 10 * kNsecPerUsec;
  for (int b = 0; b < menu::BUCKETS - 1; ++b, limit *= 10) {
    if (duration_ns < limit) return b;
  }
  return menu::BUCKETS - 1;
}

namespace {

// Sorts the ring with Knuth's 19-comparator network for 8 inputs: fixed
// compare-exchanges without branches, where a sort's branches would be coin
// tosses.
std::array<unsigned, menu::INTERVALS> sorted(std::array<unsigned, menu::INTERVALS> s) {
  static_assert(menu::INTERVALS == 8, "the sorting network is for 8 samples");
  auto exchange = [&s](int i, int j) {
    // Swap through a mask: with std::min/max the compiler may branch.
    const unsigned d = (s[i] ^ s[j]) & (0u - static_cast<unsigned>(s[j] < s[i]));
    s[i] ^= d;
    s[j] ^= d;
  };
  exchange(0, 2), exchange(1, 3), exchange(4, 6), exchange(5, 7);
  exchange(0, 4), exchange(1, 5), exchange(2, 6), exchange(3, 7);
  exchange(0, 1), exchange(2, 3), exchange(4, 5), exchange(6, 7);
  exchange(2, 4), exchange(3, 5);
  exchange(1, 4), exchange(3, 6);
  exchange(1, 2), exchange(3, 4), exchange(5, 6);
  return s;
}

}  // namespace

namespace {

// The detector on the ring sorted ascending, given the wrapped 64-bit sums of
// all INTERVALS samples and of their squares. The kernel rescans the ring
// each round for the samples strictly between two thresholds; each failed
// round moves one threshold onto the extreme sample of the side further from
// the mean, so the loop runs at most INTERVALS/4 + 1 rounds. Sorted, the
// samples taking part are a run s[lo, hi), and each round's sums are the
// sums of the whole ring less the samples left out so far: the same numbers
// for a fraction of the work (this runs at every idle entry).
unsigned typical_interval_sorted(const std::array<unsigned, menu::INTERVALS>& s, std::uint64_t sum,
                                 std::uint64_t sum_sq) {
  // Unsigned on purpose: the kernel sums squares in 64 bits and wraps (it
  // builds with wrapping signed overflow); unsigned keeps the same bits
  // without undefined behaviour, and the wrapped sum of the ring less the
  // wrapped sum of the samples left out is the wrapped sum of the run.
  auto leave_out = [&sum, &sum_sq](unsigned v) {
    sum -= v;
    sum_sq -= static_cast<std::uint64_t>(v) * v;
  };
  unsigned lo = 0, hi = menu::INTERVALS;
  // The first upper threshold, UINT_MAX, leaves them out.
  while (hi > 0 && s[hi - 1] == UINT_MAX) leave_out(s[--hi]);
  for (;;) {
    // Nothing but zeros (or nothing at all): no pattern to speak of.
    if (hi == lo || s[hi - 1] == 0) return menu::NO_INTERVAL;
    const unsigned min = s[lo], max = s[hi - 1];
    const unsigned divisor = hi - lo;
    const std::uint64_t avg = sum / divisor;
    std::uint64_t variance = sum_sq / divisor;
    const std::uint64_t avg_sq = avg * avg;
    variance -= avg_sq;  // mean of squares minus square of mean, never negative in integers

    // Accept a tight spread outright, or a spread small against the mean
    // if enough samples (3/4 of the ring) back it; the guard keeps 36*variance
    // in range (it fails only for a standard deviation above ~715 s).
    if (variance <= UINT64_MAX / 36) {
      if ((avg_sq > variance * 36 && divisor * 4 >= menu::INTERVALS * 3) || variance <= 400) {
        return static_cast<unsigned>(avg);
      }
    }

    if (divisor * 4 <= menu::INTERVALS * 3) {
      // Out of samples to drop. With half the ring still in, the next period
      // is unlikely to exceed the largest of them: a better guess than none.
      if (divisor >= menu::INTERVALS / 2) return max;
      return menu::NO_INTERVAL;
    }

    // The new threshold leaves out every sample equal to the extreme.
    if (avg - min > max - avg) {
      while (lo < hi && s[lo] == min) leave_out(s[lo++]);
    } else {
      while (hi > lo && s[hi - 1] == max) leave_out(s[--hi]);
    }
  }
}

}  // namespace

unsigned get_typical_interval(const std::array<unsigned, menu::INTERVALS>& intervals) {
  std::uint64_t sum = 0, sum_sq = 0;
  for (const unsigned v : intervals) {
    sum += v;
    sum_sq += static_cast<std::uint64_t>(v) * v;
  }
  return typical_interval_sorted(sorted(intervals), sum, sum_sq);
}

MenuGovernor::MenuGovernor(const GovernorParams& params)
    : table_(params.table), tick_nsec_(params.tick_nsec), latency_req_ns_(params.latency_req_ns) {
  if (table_ == nullptr) throw std::invalid_argument("menu: GovernorParams.table is null");
  // Unity: until evidence arrives, trust the sleep length as it is.
  correction_factor_.fill(menu::RESOLUTION * menu::DECAY);
}

namespace {

// menu_update_intervals' moves: for the sorted ring whose place p loses its
// sample and whose new sample ranks q among the other seven, the place of
// the old order (0..7) or the new sample (8) each place of the new order
// takes. 64 rows of 8 bytes, built at compile time.
constexpr auto kRingMoves = [] {
  constexpr unsigned n = menu::INTERVALS;
  std::array<std::array<std::uint8_t, n>, n * n> t{};
  for (unsigned p = 0; p < n; ++p) {
    for (unsigned q = 0; q < n; ++q) {
      for (unsigned i = 0; i < n; ++i) {
        const unsigned j = i < q ? i : i - 1;  // the j-th of the other seven
        t[p * n + q][i] = static_cast<std::uint8_t>(i == q ? n : j + (j >= p ? 1 : 0));
      }
    }
  }
  return t;
}();

}  // namespace

unsigned MenuGovernor::typical_interval_us() const { return typical_interval_sorted(sorted_, sum_, sum_sq_); }

void MenuGovernor::menu_update_intervals(unsigned interval_us) {
  const unsigned old = intervals_[interval_ptr_];
  intervals_[interval_ptr_] = interval_us;
  interval_ptr_ = (interval_ptr_ + 1) % menu::INTERVALS;

  // Keep the detector's view of the ring up to date: the sums (wrapping, as
  // the detector's own) and the samples in ascending order, where the new
  // sample takes the place of the one it overwrote and moves to its rank.
  sum_ += interval_us;
  sum_ -= old;
  sum_sq_ += static_cast<std::uint64_t>(interval_us) * interval_us;
  sum_sq_ -= static_cast<std::uint64_t>(old) * old;

  // Without branches: which way and how far the sample moves are coin
  // tosses, and a loop that searched and shifted mispredicted about 2.5
  // times a call (more than the rest of select). The old sample's first
  // place p and the new one's place q among the other seven are counts, and
  // a table says where each place of the new order takes its value from.
  std::array<unsigned, menu::INTERVALS + 1> from;
  for (unsigned i = 0; i < menu::INTERVALS; ++i) from[i] = sorted_[i];
  from[menu::INTERVALS] = interval_us;
  unsigned p = 0, below = 0;
  for (unsigned i = 0; i < menu::INTERVALS; ++i) {
    p += static_cast<unsigned>(from[i] < old);
    below += static_cast<unsigned>(from[i] < interval_us);
  }
  const unsigned q = below - static_cast<unsigned>(old < interval_us);
  // (A copy: the table's bytes could alias sorted_ as far as the compiler knows.)
  const std::array<std::uint8_t, menu::INTERVALS> move = kRingMoves[p * menu::INTERVALS + q];
  for (unsigned i = 0; i < menu::INTERVALS; ++i) sorted_[i] = from[move[i]];
}

int MenuGovernor::select(IdleContext& ctx, bool* stop_tick) {
  const std::vector<IdleState>& states = table_->states;
  const int state_count = static_cast<int>(states.size());
  const std::int64_t latency_req = latency_req_ns_;
  const std::int64_t tick = tick_nsec_;

  // A select with no reflect since the last one: the entry was rejected.
  if (awaiting_reflect_) last_residency_ns_ = 0;
  awaiting_reflect_ = true;

  if (needs_update_) {
    menu_update();
    needs_update_ = false;
  } else if (last_residency_ns_ == 0) {
    // The rejected entry measured nothing: poison its slot in the ring
    // rather than let an old period stand for it.
    menu_update_intervals(menu::NO_INTERVAL);
  }

  // u64 in the kernel; UINT_MAX µs in ns still fits an int64 comfortably.
  const unsigned typical_us = typical_interval_sorted(sorted_, sum_, sum_sq_);
  assert(typical_us == get_typical_interval(intervals_));  // the kept view is the ring's
  std::uint64_t predicted_ns = static_cast<std::uint64_t>(typical_us) * kNsecPerUsec;
  std::int64_t delta_tick = 0;
  if (predicted_ns > static_cast<std::uint64_t>(RESIDENCY_THRESHOLD_NS)) {
    std::int64_t delta = ctx.get_sleep_length(&delta_tick);
    if (delta < 0) {
      delta = 0;
      delta_tick = 0;
    }
    next_timer_ns_ = delta;
    bucket_ = which_bucket(static_cast<std::uint64_t>(next_timer_ns_));
    // Scale by the bucket's factor, rounding half a microsecond up. Split
    // into quotient and remainder of the divisor so the product cannot wrap
    // (the kernel's 64-bit product can for huge sleep lengths, menu.hpp);
    // the result equals the unsplit division exactly.
    constexpr std::uint64_t kDiv = std::uint64_t{menu::RESOLUTION} * menu::DECAY * kNsecPerUsec;
    const std::uint64_t factor = correction_factor_[static_cast<std::size_t>(bucket_)];
    const std::uint64_t next = static_cast<std::uint64_t>(next_timer_ns_);
    const std::uint64_t scaled = (next / kDiv) * factor + (kDiv / 2 + (next % kDiv) * factor) / kDiv;
    const std::uint64_t timer_us = std::min<std::uint64_t>(scaled, UINT_MAX);
    predicted_ns = std::min(timer_us * kNsecPerUsec, predicted_ns);
  } else {
    // Short periods keep coming: skip the costly next-event path and assume
    // no timer soon, the next tick half a period away.
    next_timer_ns_ = kKtimeMax;
    delta_tick = tick / 2;
    bucket_ = menu::BUCKETS - 1;
  }
  predicted_ns_ = static_cast<std::int64_t>(std::min<std::uint64_t>(predicted_ns, kKtimeMax));

  // No real choice: state 0 it is. Polling state 0 keeps the tick so a
  // spinning CPU is not left without one.
  if (state_count <= 1 || latency_req == 0 ||
      ((next_timer_ns_ < states[1].target_residency_ns || latency_req < states[1].exit_latency_ns) &&
       !states[0].disabled)) {
    *stop_tick = !states[0].polling;
    return 0;
  }

  const bool tick_stopped = ctx.tick_stopped();
  // With the tick gone a too-shallow pick cannot be corrected at the next
  // tick: rather risk the timer-based guess.
  if (tick_stopped && predicted_ns < static_cast<std::uint64_t>(tick)) {
    predicted_ns = static_cast<std::uint64_t>(next_timer_ns_);
  }

  int idx = -1;
  for (int i = 0; i < state_count; ++i) {
    const IdleState& s = states[static_cast<std::size_t>(i)];
    if (s.disabled) continue;
    if (idx == -1) idx = i;  // the first enabled state is the fallback
    if (s.exit_latency_ns > latency_req) break;

    if (static_cast<std::uint64_t>(s.target_residency_ns) > predicted_ns) {
      const IdleState& pick = states[static_cast<std::size_t>(idx)];
      // Busy polling only if a timer ends the period soon; a real idle state
      // that the timer leaves room for is better.
      if (pick.polling && s.target_residency_ns <= next_timer_ns_) {
        predicted_ns = static_cast<std::uint64_t>(s.target_residency_ns);
        idx = i;
        break;
      }
      if (predicted_ns < static_cast<std::uint64_t>(tick)) break;

      if (!tick_stopped) {
        // A long guess but only a shallow fit: keep the tick so the loop
        // gets another chance at the next tick.
        predicted_ns = static_cast<std::uint64_t>(pick.target_residency_ns);
        break;
      }
      // Tick stopped: a shallow pick could last until the next timer, so go
      // one deeper if that still fits before the next event.
      if (pick.target_residency_ns < tick && s.target_residency_ns <= delta_tick) idx = i;
      predicted_ns_ = static_cast<std::int64_t>(std::min<std::uint64_t>(predicted_ns, kKtimeMax));
      return idx;
    }
    idx = i;
  }
  if (idx == -1) idx = 0;  // nothing enabled: state 0 regardless
  predicted_ns_ = static_cast<std::int64_t>(std::min<std::uint64_t>(predicted_ns, kKtimeMax));

  if ((states[static_cast<std::size_t>(idx)].polling || predicted_ns < static_cast<std::uint64_t>(tick)) &&
      !tick_stopped) {
    *stop_tick = false;
    // The kept tick ends the period by delta_tick at the latest: a state
    // whose target lies beyond it cannot pay off.
    if (idx > 0 && states[static_cast<std::size_t>(idx)].target_residency_ns > delta_tick) {
      for (int i = idx - 1; i >= 0; --i) {
        if (states[static_cast<std::size_t>(i)].disabled) continue;
        idx = i;
        if (states[static_cast<std::size_t>(i)].target_residency_ns <= delta_tick) break;
      }
    }
  }
  return idx;
}

void MenuGovernor::reflect(int entered, std::int64_t last_residency_ns, bool got_tick) {
  awaiting_reflect_ = false;
  if (entered < 0 || entered >= static_cast<int>(table_->states.size())) {
    // Rejected by the driver: cpuidle records no residency and does not
    // call the governor back.
    last_residency_ns_ = 0;
    return;
  }
  last_state_idx_ = entered;
  last_residency_ns_ = std::max<std::int64_t>(last_residency_ns, 0);
  needs_update_ = true;
  tick_wakeup_ = got_tick;
}

void MenuGovernor::menu_update() {
  const IdleState& target = table_->states[static_cast<std::size_t>(last_state_idx_)];
  const std::uint64_t next_timer = static_cast<std::uint64_t>(next_timer_ns_);
  std::uint64_t measured_ns;

  if (tick_wakeup_ && next_timer_ns_ > tick_nsec_) {
    // The tick woke us though no timer was due within a tick: the tick
    // should have been stopped, and the CPU might have slept long. Say so,
    // without claiming forever.
    measured_ns = 9 * menu::MAX_INTERESTING / 10;
  } else {
    measured_ns = static_cast<std::uint64_t>(last_residency_ns_);
    // The residency includes the way out; the wakeup came earlier. A period
    // hardly longer than the exit latency probably never reached the state.
    const std::uint64_t exit_ns = static_cast<std::uint64_t>(target.exit_latency_ns);
    if (measured_ns > 2 * exit_ns) {
      measured_ns -= exit_ns;
    } else {
      measured_ns /= 2;
    }
  }

  // A factor above unity would predict sleeping past the next timer.
  measured_ns = std::min(measured_ns, next_timer);

  unsigned& factor = correction_factor_[static_cast<std::size_t>(bucket_)];
  unsigned new_factor = factor - factor / menu::DECAY;
  if (next_timer > 0 && measured_ns < menu::MAX_INTERESTING) {
    new_factor += static_cast<unsigned>(menu::RESOLUTION * measured_ns / next_timer);
  } else {
    new_factor += menu::RESOLUTION;  // idle that long: call it a perfect prediction
  }
  factor = new_factor;  // never 0: with DECAY > 1, f - f/DECAY >= 1 for f >= 1

  // Saturate rather than truncate to 32 bits (menu.hpp); UINT_MAX itself
  // is the "rejected" marker the detector skips.
  menu_update_intervals(static_cast<unsigned>(std::min<std::uint64_t>(measured_ns / kNsecPerUsec, UINT_MAX - 1u)));
}

}  // namespace timerlab
