// wheel.hpp — the per-CPU, per-base timer wheel of the Linux kernel.
//
// Models struct timer_base and the wheel functions of kernel/time/timer.c:
// calc_index, calc_wheel_index, enqueue_timer, internal_add_timer,
// detach_if_pending, __forward_timer_base, timer_recalc_next_expiry,
// next_timer_interrupt, collect_expired_timers and __run_timers.
// Reference: shared/reference/kernel-timers.md §1.
//
// Theory of operation
// -------------------
// A base holds LVL_DEPTH levels of 64 buckets. Level n has a granularity of
// 8^n jiffies. A timer goes to the lowest level whose range covers its
// distance from the base clock `clk`, into the bucket of its expiry rounded
// UP to the level's granularity ("bucket expiry"); so a timer never fires
// early and fires late by at most 12.7 % of its timeout at levels >= 1.
//
//   lvl  delta = expires - clk      gran   idx
//    0   0 ..        62               1      0..63
//    1   63 ..       503              8     64..127
//    2   504 ..      4031            64    128..191
//    ...                            8^n    64n..64n+63
//    8   132120576 .. cutoff-1    2^24    512..575   (HZ > 100 only)
//
// Timers are never cascaded to lower levels. The base expires bucket by
// bucket: __run_timers jumps clk to next_expiry, collects at most one bucket
// per level (level n only when clk is a multiple of 8^n), runs them
// highest level first, newest-armed first within a bucket, and repeats until
// clk passes jiffies. While callbacks run, clk is jiffies + 1, so a timer
// re-armed for "now" lands in the next jiffy.
//
// next_expiry caches the earliest bucket expiry. Enqueue lowers it eagerly;
// removing the last timer of a bucket only sets next_expiry_recalc, and the
// stale (early) value is what __forward_timer_base sees until the next
// recalculation. That laziness is kernel behaviour and shows in real traces
// as timers placed from a clk that lags jiffies.
//
// pending_map is one 64-bit word per level, so "next set bucket of a level at
// or after position p, wrapping" is a rotate and a count of trailing zeros.
//
// Invariants (checked by check_invariants()):
//   * bit idx of pending_map is set <=> bucket idx is non-empty;
//   * every queued timer's stored idx names the bucket it is in;
//   * unless next_expiry_recalc, next_expiry == timer_recalc_next_expiry().
//
// Simplifications vs. the kernel
//   * No locks, no running_timer wait loops: the simulation is sequential.
//   * Callbacks are supplied by the caller of run_timers (a functor).
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <string>

#include "timerlab/timer_list.hpp"

namespace timerlab {

inline constexpr unsigned LVL_CLK_SHIFT = 3;
inline constexpr jiffies_t LVL_CLK_DIV = jiffies_t{1} << LVL_CLK_SHIFT;
inline constexpr jiffies_t LVL_CLK_MASK = LVL_CLK_DIV - 1;
inline constexpr unsigned LVL_BITS = 6;
inline constexpr unsigned LVL_SIZE = 1u << LVL_BITS;
inline constexpr jiffies_t LVL_MASK = LVL_SIZE - 1;
inline constexpr unsigned LVL_DEPTH_MAX = 9;
inline constexpr unsigned WHEEL_SIZE_MAX = LVL_SIZE * LVL_DEPTH_MAX;

constexpr unsigned LVL_SHIFT(unsigned n) { return n * LVL_CLK_SHIFT; }
constexpr jiffies_t LVL_GRAN(unsigned n) { return jiffies_t{1} << LVL_SHIFT(n); }
constexpr unsigned LVL_OFFS(unsigned n) { return n * LVL_SIZE; }
// Smallest delta that goes to level n (n >= 1).
constexpr jiffies_t LVL_START(unsigned n) { return (LVL_SIZE - 1) << ((n - 1) * LVL_CLK_SHIFT); }

// The wheel is one level shallower at HZ <= 100 (kernel/time/timer.c).
constexpr unsigned LVL_DEPTH(unsigned hz) { return hz > 100 ? 9u : 8u; }
constexpr unsigned WHEEL_SIZE(unsigned depth) { return LVL_SIZE * depth; }
constexpr jiffies_t WHEEL_TIMEOUT_CUTOFF(unsigned depth) { return LVL_START(depth); }
constexpr jiffies_t WHEEL_TIMEOUT_MAX(unsigned depth) {
  return WHEEL_TIMEOUT_CUTOFF(depth) - LVL_GRAN(depth - 1);
}

// HZ values the kernel offers in Kconfig.hz; anything else is rejected.
bool hz_supported(unsigned hz);
// Throws std::invalid_argument naming the value and the allowed ones.
unsigned checked_lvl_depth(unsigned hz);

struct WheelIndex {
  unsigned idx;
  jiffies_t bucket_expiry;
  bool operator==(const WheelIndex&) const = default;
};

// calc_index: the bucket of `expires` at level `lvl`, rounded up.
constexpr WheelIndex calc_index(jiffies_t expires, unsigned lvl) {
  const jiffies_t e = (expires >> LVL_SHIFT(lvl)) + 1;
  return {LVL_OFFS(lvl) + static_cast<unsigned>(e & LVL_MASK), e << LVL_SHIFT(lvl)};
}

// calc_wheel_index: level from the unsigned distance to clk, already-expired
// timers to the current level-0 slot, overlong timeouts clamped to the last
// level's capacity.
constexpr WheelIndex calc_wheel_index(jiffies_t expires, jiffies_t clk, unsigned depth) {
  const jiffies_t delta = expires - clk;
  if (delta < LVL_START(depth - 1)) {
    // The kernel tests the level boundaries one by one; the level is the
    // number of boundaries at or below delta, computed here without a branch
    // per level (timeouts of mixed sizes make those branches unpredictable).
    // Boundary n is (LVL_SIZE - 1) * LVL_CLK_DIV^(n - 1), so delta reaches it
    // exactly when delta / (LVL_SIZE - 1) has more than LVL_CLK_SHIFT * (n - 1)
    // bits: the count is that bit width rounded up to whole LVL_CLK_SHIFTs.
    // No cap needed: delta < LVL_START(depth - 1) keeps it below depth - 1.
    const unsigned bits = static_cast<unsigned>(std::bit_width(delta / (LVL_SIZE - 1)));
    const unsigned lvl = (bits + LVL_CLK_SHIFT - 1) / LVL_CLK_SHIFT;
    return calc_index(expires, lvl);
  }
  if (static_cast<std::int64_t>(delta) < 0) return {static_cast<unsigned>(clk & LVL_MASK), clk};
  if (delta >= WHEEL_TIMEOUT_CUTOFF(depth)) expires = clk + WHEEL_TIMEOUT_MAX(depth);
  return calc_index(expires, depth - 1);
}

// What internal_add_timer / enqueue_timer report to the caller: where the
// timer went, and whether it became the base's first timer (the only case in
// which the kernel considers waking the base's CPU: trigger_dyntick_cpu).
struct EnqueueResult {
  unsigned idx;
  jiffies_t bucket_expiry;
  bool new_first;
};

class TimerBase {
 public:
  // timers_prepare_cpu: clk = jiffies, nothing pending.
  TimerBase(TimerPool& pool, unsigned hz, jiffies_t jiffies, unsigned cpu = 0);

  unsigned depth() const { return depth_; }
  unsigned cpu() const { return cpu_; }
  jiffies_t clk() const { return clk_; }
  jiffies_t next_expiry() const { return next_expiry_; }
  bool next_expiry_recalc() const { return next_expiry_recalc_; }
  bool timers_pending() const { return timers_pending_; }
  bool is_idle() const { return is_idle_; }
  void set_is_idle(bool idle) { is_idle_ = idle; }
  TimerId running_timer() const { return running_timer_; }
  std::size_t pending_count() const { return pending_count_; }
  std::uint64_t pending_map(unsigned lvl) const { return pending_map_[lvl]; }
  TimerPool& pool() { return *pool_; }

  // __forward_timer_base: move clk up to basej, but never past a bucket
  // that is still due (next_expiry) and never backwards.
  void forward_timer_base(jiffies_t basej);

  // enqueue_timer: link into bucket idx (at the head, as hlist_add_head),
  // store idx in the flags, lower next_expiry if this is the new first.
  EnqueueResult enqueue_timer(TimerId t, unsigned idx, jiffies_t bucket_expiry);
  // internal_add_timer: calc_wheel_index from the current clk, then enqueue.
  EnqueueResult internal_add_timer(TimerId t);
  // detach_if_pending: unlink; an emptied bucket clears its bit and marks
  // next_expiry stale (it is not recomputed here). Returns false if t was
  // not pending.
  bool detach_if_pending(TimerId t);

  // timer_recalc_next_expiry: recompute next_expiry from pending_map.
  void timer_recalc_next_expiry();
  // next_timer_interrupt (6.9+): refresh a stale next_expiry; an empty base
  // gets basej + TIMER_NEXT_MAX_DELTA so bases compare easily.
  jiffies_t next_timer_interrupt(jiffies_t basej);

  // One iteration of the __run_timers loop: if a bucket is due at `jiffies`,
  // collect it (collect_expired_timers), advance clk past it, recompute
  // next_expiry and call expire(timer, baseclk) for every collected timer in
  // kernel order. The timer is detached before expire() runs; expire() may
  // arm, modify or delete timers of this base. Returns false when nothing
  // was due.
  template <class Expire>
  bool run_one_collection(jiffies_t jiffies, Expire&& expire);
  // __run_timers: repeat run_one_collection until clk passes jiffies.
  // Returns the number of timers expired.
  template <class Expire>
  std::size_t run_timers(jiffies_t jiffies, Expire&& expire);

  // Debug check of the invariants in the header comment; returns "" when
  // they hold, else a description of the first violation.
  std::string check_invariants() const;

 private:
  static constexpr unsigned kHeads = WHEEL_SIZE_MAX + LVL_DEPTH_MAX;

  void link_head(TimerId t, unsigned list);
  void unlink(TimerId t);
  int collect_expired_timers();  // returns the number of lists collected
  int next_pending_bucket(unsigned lvl, unsigned clk) const;

  TimerPool* pool_;
  unsigned depth_;
  unsigned cpu_;
  jiffies_t clk_;
  jiffies_t next_expiry_;
  bool next_expiry_recalc_ = false;
  bool is_idle_ = false;
  bool timers_pending_ = false;
  TimerId running_timer_ = kNoTimer;
  std::size_t pending_count_ = 0;
  std::array<std::uint64_t, LVL_DEPTH_MAX> pending_map_{};
  // vectors[0..WHEEL_SIZE) then the lists collected for expiry.
  std::array<TimerId, kHeads> heads_;
};

// ---------------------------------------------------------------------------
// Hot paths, inline.

inline void TimerBase::link_head(TimerId t, unsigned list) {
  TimerList& n = (*pool_)[t];
  const TimerId first = heads_[list];
  n.next = first;
  n.prev = kNoTimer;
  n.list = static_cast<std::uint16_t>(list);
  if (first != kNoTimer) (*pool_)[first].prev = t;
  heads_[list] = t;
}

inline void TimerBase::unlink(TimerId t) {
  TimerList& n = (*pool_)[t];
  if (n.prev == kNoTimer) {
    heads_[n.list] = n.next;
  } else {
    (*pool_)[n.prev].next = n.next;
  }
  if (n.next != kNoTimer) (*pool_)[n.next].prev = n.prev;
  n.next = n.prev = kNoTimer;
  n.list = TimerList::kNotQueued;
}

inline void TimerBase::forward_timer_base(jiffies_t basej) {
  if (time_before_eq(basej, clk_)) return;
  if (time_after(next_expiry_, basej)) {
    clk_ = basej;
  } else {
    // The kernel warns and keeps clk when next_expiry went behind clk.
    if (time_before(next_expiry_, clk_)) return;
    clk_ = next_expiry_;
  }
}

inline EnqueueResult TimerBase::enqueue_timer(TimerId t, unsigned idx, jiffies_t bucket_expiry) {
  link_head(t, idx);
  pending_map_[idx / LVL_SIZE] |= std::uint64_t{1} << (idx % LVL_SIZE);
  (*pool_)[t].set_idx(idx);
  ++pending_count_;
  const bool first = time_before(bucket_expiry, next_expiry_);
  if (first) {
    next_expiry_ = bucket_expiry;
    timers_pending_ = true;
    next_expiry_recalc_ = false;
  }
  return {idx, bucket_expiry, first};
}

inline EnqueueResult TimerBase::internal_add_timer(TimerId t) {
  const WheelIndex wi = calc_wheel_index((*pool_)[t].expires, clk_, depth_);
  return enqueue_timer(t, wi.idx, wi.bucket_expiry);
}

inline bool TimerBase::detach_if_pending(TimerId t) {
  TimerList& n = (*pool_)[t];
  if (!n.pending()) return false;
  const unsigned list = n.list;
  // Only a wheel bucket (not a collected list) owns a pending_map bit.
  if (list < WHEEL_SIZE_MAX && n.prev == kNoTimer && n.next == kNoTimer) {
    pending_map_[list / LVL_SIZE] &= ~(std::uint64_t{1} << (list % LVL_SIZE));
    next_expiry_recalc_ = true;
  }
  unlink(t);
  --pending_count_;
  return true;
}

template <class Expire>
bool TimerBase::run_one_collection(jiffies_t jiffies, Expire&& expire) {
  if (!(time_after_eq(jiffies, clk_) && time_after_eq(jiffies, next_expiry_))) return false;
  int levels = collect_expired_timers();
  clk_ += 1;  // callbacks run with clk one ahead of jiffies
  timer_recalc_next_expiry();
  while (levels-- > 0) {
    // Read per list, as expire_timers does: a callback of a higher level's
    // list that re-arms a timer forwards clk, and the traced baseclk of the
    // lists after it shows that (seen in real 6.18 traces).
    const jiffies_t baseclk = clk_ - 1;
    const unsigned list = WHEEL_SIZE_MAX + static_cast<unsigned>(levels);
    while (heads_[list] != kNoTimer) {
      const TimerId t = heads_[list];
      unlink(t);
      --pending_count_;
      running_timer_ = t;
      expire(t, baseclk);
      running_timer_ = kNoTimer;
    }
  }
  return true;
}

template <class Expire>
std::size_t TimerBase::run_timers(jiffies_t jiffies, Expire&& expire) {
  if (running_timer_ != kNoTimer) return 0;  // a callback re-entered the softirq
  std::size_t n = 0;
  auto count = [&](TimerId t, jiffies_t baseclk) {
    ++n;
    expire(t, baseclk);
  };
  while (run_one_collection(jiffies, count)) {
  }
  return n;
}

}  // namespace timerlab
