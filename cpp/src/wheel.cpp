// wheel.cpp — the cold parts of the timer wheel model (see wheel.hpp).
#include "timerlab/wheel.hpp"

#include <bit>
#include <sstream>
#include <stdexcept>

namespace timerlab {

bool hz_supported(unsigned hz) { return hz == 100 || hz == 250 || hz == 300 || hz == 1000; }

unsigned checked_lvl_depth(unsigned hz) {
  if (!hz_supported(hz)) {
    throw std::invalid_argument("hz=" + std::to_string(hz) +
                                " is not a kernel HZ; allowed: 100, 250, 300, 1000");
  }
  return LVL_DEPTH(hz);
}

TimerBase::TimerBase(TimerPool& pool, unsigned hz, jiffies_t jiffies, unsigned cpu)
    : pool_(&pool),
      depth_(checked_lvl_depth(hz)),
      cpu_(cpu),
      clk_(jiffies),
      next_expiry_(jiffies + TIMER_NEXT_MAX_DELTA) {
  heads_.fill(kNoTimer);
}

int TimerBase::next_pending_bucket(unsigned lvl, unsigned clk) const {
  // Bit 0 of the rotated word is bucket `clk`: the distance to the next set
  // bit, wrapping around the level, is its count of trailing zeros.
  const std::uint64_t rotated = std::rotr(pending_map_[lvl], static_cast<int>(clk));
  return rotated ? std::countr_zero(rotated) : -1;
}

void TimerBase::timer_recalc_next_expiry() {
  jiffies_t next = clk_ + TIMER_NEXT_MAX_DELTA;
  jiffies_t clk = clk_;
  for (unsigned lvl = 0; lvl < depth_; ++lvl) {
    const int pos = next_pending_bucket(lvl, static_cast<unsigned>(clk & LVL_MASK));
    const jiffies_t lvl_clk = clk & LVL_CLK_MASK;
    if (pos >= 0) {
      const jiffies_t tmp = (clk + static_cast<jiffies_t>(pos)) << LVL_SHIFT(lvl);
      if (time_before(tmp, next)) next = tmp;
      // Nothing on a coarser level can come before the next bucket of this
      // level if that bucket is reached before this level's clock wraps
      // into the next level's granularity.
      if (static_cast<jiffies_t>(pos) <= ((LVL_CLK_DIV - lvl_clk) & LVL_CLK_MASK)) break;
    }
    // The next level's clock: rounded up when this level is mid-way through
    // a slot of the coarser level, since that slot is then already behind.
    clk = (clk >> LVL_CLK_SHIFT) + (lvl_clk ? 1 : 0);
  }
  next_expiry_ = next;
  next_expiry_recalc_ = false;
  timers_pending_ = next != clk_ + TIMER_NEXT_MAX_DELTA;
}

jiffies_t TimerBase::next_timer_interrupt(jiffies_t basej) {
  if (next_expiry_recalc_) timer_recalc_next_expiry();
  if (!timers_pending_) next_expiry_ = basej + TIMER_NEXT_MAX_DELTA;
  return next_expiry_;
}

int TimerBase::collect_expired_timers() {
  clk_ = next_expiry_;
  jiffies_t clk = clk_;
  int levels = 0;
  for (unsigned lvl = 0; lvl < depth_; ++lvl) {
    const unsigned idx = static_cast<unsigned>(clk & LVL_MASK) + LVL_OFFS(lvl);
    const std::uint64_t bit = std::uint64_t{1} << (idx % LVL_SIZE);
    if (pending_map_[lvl] & bit) {
      pending_map_[lvl] &= ~bit;
      // Move the whole bucket list (hlist_move_list): relabel its nodes.
      const unsigned dest = WHEEL_SIZE_MAX + static_cast<unsigned>(levels);
      heads_[dest] = heads_[idx];
      heads_[idx] = kNoTimer;
      for (TimerId t = heads_[dest]; t != kNoTimer; t = (*pool_)[t].next) {
        (*pool_)[t].list = static_cast<std::uint16_t>(dest);
      }
      ++levels;
    }
    // A coarser level is due only when this level's clock is at a slot boundary.
    if (clk & LVL_CLK_MASK) break;
    clk >>= LVL_CLK_SHIFT;
  }
  return levels;
}

std::string TimerBase::check_invariants() const {
  std::ostringstream err;
  std::size_t counted = 0;
  for (unsigned idx = 0; idx < WHEEL_SIZE(depth_); ++idx) {
    const bool bit = (pending_map_[idx / LVL_SIZE] >> (idx % LVL_SIZE)) & 1;
    if (bit != (heads_[idx] != kNoTimer)) {
      err << "bucket " << idx << ": pending_map bit " << bit << " but list "
          << (heads_[idx] != kNoTimer ? "non-empty" : "empty");
      return err.str();
    }
    TimerId prev = kNoTimer;
    for (TimerId t = heads_[idx]; t != kNoTimer; t = (*pool_)[t].next) {
      const TimerList& n = (*pool_)[t];
      if (n.list != idx || n.idx() != idx || n.prev != prev) {
        err << "timer " << t << " in bucket " << idx << " has list " << n.list << ", idx "
            << n.idx() << ", prev " << n.prev;
        return err.str();
      }
      prev = t;
      ++counted;
    }
  }
  for (unsigned l = WHEEL_SIZE_MAX; l < kHeads; ++l) {
    for (TimerId t = heads_[l]; t != kNoTimer; t = (*pool_)[t].next) ++counted;
  }
  if (counted != pending_count_) {
    err << "pending_count " << pending_count_ << " but " << counted << " timers linked";
    return err.str();
  }
  if (timers_pending_ && !next_expiry_recalc_) {
    TimerBase copy = *this;
    copy.timer_recalc_next_expiry();
    if (copy.next_expiry_ != next_expiry_) {
      err << "next_expiry " << next_expiry_ << " but the wheel's first bucket expires at "
          << copy.next_expiry_;
      return err.str();
    }
  }
  return {};
}

}  // namespace timerlab
