// teo.cpp — the teo governor of Linux v6.17 (see teo.hpp).
#include "timerlab/teo.hpp"

#include <algorithm>
#include <stdexcept>

namespace timerlab {

namespace {

constexpr std::int64_t kKtimeMax = INT64_MAX;

std::uint32_t decayed(std::uint32_t v) { return v - (v >> teo::DECAY_SHIFT); }

}  // namespace

TeoGovernor::TeoGovernor(const GovernorParams& params)
    : table_(params.table),
      tick_nsec_(params.tick_nsec),
      latency_req_ns_(params.latency_req_ns),
      tick_intercepts_fixed_(params.teo_tick_intercepts_fixed) {
  if (table_ == nullptr) throw std::invalid_argument("teo: GovernorParams.table is null");
  state_bins_.resize(table_->states.size());
}

void TeoGovernor::reflect(int entered, std::int64_t last_residency_ns, bool got_tick) {
  if (entered < 0 || entered >= static_cast<int>(table_->states.size())) return;  // rejected: learn nothing
  last_state_idx_ = entered;
  last_residency_ns_ = std::max<std::int64_t>(last_residency_ns, 0);
  // A tick that ends a period whose next timer lay beyond the tick says
  // nothing about the real wakeup pattern: the tick should have been stopped
  // (with the sleep length unread it counts as "beyond", as in the kernel).
  artificial_wakeup_ = got_tick && sleep_length_ns_ > tick_nsec_;
}

void TeoGovernor::teo_update() {
  const std::vector<IdleState>& states = table_->states;
  short_idles_ = decayed(short_idles_);

  std::uint64_t measured_ns;
  if (artificial_wakeup_) {
    measured_ns = UINT64_MAX;  // could have been a long sleep
  } else {
    const std::uint64_t lat_ns = static_cast<std::uint64_t>(states[static_cast<std::size_t>(last_state_idx_)].exit_latency_ns);
    measured_ns = static_cast<std::uint64_t>(last_residency_ns_);
    // The real exit delay varies: take half the worst case as its average.
    // Shorter than the exit latency: the state was hardly reached.
    if (measured_ns >= lat_ns) {
      measured_ns -= lat_ns / 2;
      if (measured_ns < static_cast<std::uint64_t>(RESIDENCY_THRESHOLD_NS)) short_idles_ += teo::PULSE;
    } else {
      measured_ns /= 2;
      short_idles_ += teo::PULSE;
    }
  }

  // Bins of the sleep length (idx_timer) and of the measured duration
  // (idx_duration); the latter only among bins the sleep length reached.
  int idx_timer = 0;
  int idx_duration = 0;
  for (std::size_t i = 0; i < states.size(); ++i) {
    TeoBin& bin = state_bins_[i];
    bin.hits = decayed(bin.hits);
    bin.intercepts = decayed(bin.intercepts);
    const std::int64_t target = states[i].target_residency_ns;
    if (target <= sleep_length_ns_) {
      idx_timer = static_cast<int>(i);
      if (static_cast<std::uint64_t>(target) <= measured_ns) idx_duration = static_cast<int>(i);
    }
  }

  tick_intercepts_ = decayed(tick_intercepts_);
  if (idx_timer == idx_duration) {
    state_bins_[static_cast<std::size_t>(idx_timer)].hits += teo::PULSE;
  } else {
    state_bins_[static_cast<std::size_t>(idx_duration)].intercepts += teo::PULSE;
    // tick_intercepts is meant to count intercepts that came before the
    // tick; the v6.17 snapshot tested the reverse (teo.hpp).
    const std::uint64_t tick = static_cast<std::uint64_t>(tick_nsec_);
    const bool count = tick_intercepts_fixed_ ? measured_ns <= tick : tick <= measured_ns;
    if (count) tick_intercepts_ += teo::PULSE;
  }

  total_ = decayed(total_) + teo::PULSE;
}

bool TeoGovernor::teo_state_ok(int i, bool tick_stopped) const {
  // With the tick stopped nothing corrects a shallow pick at the next tick.
  return !tick_stopped || table_->states[static_cast<std::size_t>(i)].target_residency_ns >= tick_nsec_;
}

int TeoGovernor::teo_find_shallower_state(int state_idx, std::int64_t duration_ns, bool no_poll) const {
  // The deepest enabled state below state_idx that fits duration_ns, else
  // the shallowest enabled one below it, else state_idx itself.
  const std::vector<IdleState>& states = table_->states;
  for (int i = state_idx - 1; i >= 0; --i) {
    const IdleState& s = states[static_cast<std::size_t>(i)];
    if (s.disabled || (no_poll && s.polling)) continue;
    state_idx = i;
    if (s.target_residency_ns <= duration_ns) break;
  }
  return state_idx;
}

int TeoGovernor::select(IdleContext& ctx, bool* stop_tick) {
  const std::vector<IdleState>& states = table_->states;
  const int state_count = static_cast<int>(states.size());
  const std::int64_t latency_req = latency_req_ns_;
  const std::int64_t tick = tick_nsec_;
  const bool tick_stopped = ctx.tick_stopped();
  if (state_bins_.size() != states.size()) state_bins_.resize(states.size());
  auto target = [&](int i) { return states[static_cast<std::size_t>(i)].target_residency_ns; };

  if (last_state_idx_ >= 0) {
    teo_update();
    last_state_idx_ = -1;  // a select without reflect before the next one learns nothing
  }

  // Until read, the sleep length is "infinite": a wakeup after a choice made
  // without it then counts as an intercept (or, by the tick, as artificial).
  sleep_length_ns_ = kKtimeMax;
  std::int64_t delta_tick = tick / 2;

  auto keep_tick = [&](int idx, std::int64_t predicted) {
    *stop_tick = false;
    predicted_ns_ = predicted;
    return idx;
  };

  if (state_count < 2) return keep_tick(0, target(0));  // no choice at all

  std::uint32_t idx_intercept_sum = 0;
  std::uint32_t intercept_sum = 0;
  std::uint32_t idx_hit_sum = 0;
  std::uint32_t hit_sum = 0;
  int constraint_idx = 0;
  int idx0 = 0;
  int idx = states[0].disabled ? -1 : 0;

  for (int i = 1; i < state_count; ++i) {
    const TeoBin& prev_bin = state_bins_[static_cast<std::size_t>(i - 1)];
    intercept_sum += prev_bin.intercepts;
    hit_sum += prev_bin.hits;
    const IdleState& s = states[static_cast<std::size_t>(i)];
    if (s.disabled) continue;
    if (idx < 0) idx0 = i;  // first enabled state
    idx = i;
    if (s.exit_latency_ns <= latency_req) constraint_idx = i;
    // Sums over the bins below the candidate (the deepest enabled state).
    idx_intercept_sum = intercept_sum;
    idx_hit_sum = hit_sum;
  }

  if (idx < 0) return keep_tick(0, target(0));  // nothing enabled: state 0 regardless

  std::int64_t duration_ns;
  if (idx == idx0) {
    // One enabled state: take it; its target decides about the tick.
    duration_ns = target(idx);
  } else {
    // Do the early wakeups (intercepts below the candidate) make up the
    // majority of the periods that were not timer hits below it? Then a
    // shallower state is likely better. Unsigned arithmetic as the kernel's.
    if (2u * idx_intercept_sum > total_ - idx_hit_sum) {
      int first_suitable_idx = idx;
      // The deepest state whose target the idle duration reached in more
      // than half of the relevant early wakeups.
      intercept_sum = 0;
      for (int i = idx - 1; i >= 0; --i) {
        intercept_sum += state_bins_[static_cast<std::size_t>(i)].intercepts;
        const bool disabled = states[static_cast<std::size_t>(i)].disabled;
        if (2u * intercept_sum > idx_intercept_sum) {
          // This one, unless unusable: then the deepest usable one seen.
          idx = (teo_state_ok(i, tick_stopped) && !disabled) ? i : first_suitable_idx;
          break;
        }
        if (disabled) continue;
        if (teo_state_ok(i, tick_stopped)) {
          first_suitable_idx = i;  // usable; a shallower one may still win
          continue;
        }
        // Too shallow for a stopped tick, and so is everything below: stop
        // unless a usable state other than the candidate has been seen.
        if (first_suitable_idx == idx) break;
      }
    }

    if (idx > constraint_idx) idx = constraint_idx;

    // Short idles dominate (timers that close are rare, so these are other
    // wakeups) or the latency limit forces a shallow state anyway: the sleep
    // length would not change the answer, skip its cost.
    if ((idx == 0 || target(idx) < RESIDENCY_THRESHOLD_NS) &&
        (2u * short_idles_ >= total_ || latency_req < teo::LATENCY_THRESHOLD_NS)) {
      return keep_tick(idx, target(idx));
    }

    duration_ns = ctx.get_sleep_length(&delta_tick);
    sleep_length_ns_ = duration_ns;

    if (idx == 0) return keep_tick(idx, duration_ns);

    // The next timer comes before the candidate would pay off.
    if (target(idx) > duration_ns) {
      const int i = teo_find_shallower_state(idx, duration_ns, false);
      if (teo_state_ok(i, tick_stopped)) idx = i;
    }

    // Intercepts before the tick are the bulk of recent periods: expect the
    // tick to matter, do not stop it for a shallow state.
    if (target(idx) < tick && tick_intercepts_ > total_ / 2 + total_ / 8) duration_ns = tick / 2;
  }

  predicted_ns_ = duration_ns;
  if ((!states[static_cast<std::size_t>(idx)].polling && duration_ns >= tick) || tick_stopped) return idx;

  // The kept tick ends the period by delta_tick at the latest.
  if (idx > idx0 && target(idx) > delta_tick) idx = teo_find_shallower_state(idx, delta_tick, false);
  return keep_tick(idx, duration_ns);
}

}  // namespace timerlab
