// timer_list.hpp — one timer of the wheel and the pool that owns all timers.
//
// Models struct timer_list and its flag word (include/linux/timer.h) and the
// intrusive hlist the wheel threads through it (include/linux/list.h).
//
// Theory of operation
// -------------------
// The kernel embeds a timer_list in whatever object needs a timeout and links
// it into one bucket list of one timer base. We keep every timer in a single
// TimerPool (a vector) and address it by a 32-bit TimerId, so that a simulation
// of thousands of CPUs moves timers between bases by relinking indices, never
// by copying or allocating. A timer costs 24 bytes.
//
//   flags (u32), bit layout as in the kernel:
//   +-----------------+----+----+----+----+---------------------+
//   | idx (31..22)    | I  | P  | D  | M  | cpu (17..0)         |
//   +-----------------+----+----+----+----+---------------------+
//     bucket index     IRQSAFE PINNED DEFERRABLE MIGRATING  base CPU
//
// `list` tells which head array the node hangs from: a wheel bucket
// (0..WHEEL_SIZE-1), a list of timers collected for expiry (WHEEL_SIZE + lvl),
// or kNotQueued. The kernel gets the same effect from hlist's pprev pointer:
// a timer collected for expiry but not yet run can still be deleted.
//
// Invariants
//   * timer_pending(t) <=> t.list != kNotQueued.
//   * a pending timer sits in exactly one list, the one `list` names.
//
// Simplifications vs. the kernel
//   * No function pointer: callbacks are the caller's business (the engine
//     keeps per-timer metadata in side arrays indexed by TimerId).
//   * TIMER_MIGRATING is never observable: the simulation is single-threaded,
//     so the window between unlocking the old base and locking the new one
//     does not exist.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace timerlab {

// jiffies are `unsigned long`: 64 bits on the 64-bit kernels we model.
using jiffies_t = std::uint64_t;
using TimerId = std::uint32_t;

inline constexpr TimerId kNoTimer = 0xFFFFFFFFu;

// Flag bits (include/linux/timer.h).
inline constexpr std::uint32_t TIMER_CPUMASK = 0x0003FFFFu;
inline constexpr std::uint32_t TIMER_MIGRATING = 0x00040000u;
inline constexpr std::uint32_t TIMER_BASEMASK = TIMER_CPUMASK | TIMER_MIGRATING;
inline constexpr std::uint32_t TIMER_DEFERRABLE = 0x00080000u;
inline constexpr std::uint32_t TIMER_PINNED = 0x00100000u;
inline constexpr std::uint32_t TIMER_IRQSAFE = 0x00200000u;
inline constexpr std::uint32_t TIMER_INIT_FLAGS = TIMER_DEFERRABLE | TIMER_PINNED | TIMER_IRQSAFE;
inline constexpr unsigned TIMER_ARRAYSHIFT = 22;
inline constexpr std::uint32_t TIMER_ARRAYMASK = 0xFFC00000u;

// "No timer" offset of next_expiry (include/linux/timer.h).
inline constexpr jiffies_t TIMER_NEXT_MAX_DELTA = (jiffies_t{1} << 30) - 1;

// Wrap-safe comparisons of jiffies (include/linux/jiffies.h).
constexpr bool time_after(jiffies_t a, jiffies_t b) {
  return static_cast<std::int64_t>(b - a) < 0;
}
constexpr bool time_before(jiffies_t a, jiffies_t b) { return time_after(b, a); }
constexpr bool time_after_eq(jiffies_t a, jiffies_t b) {
  return static_cast<std::int64_t>(a - b) >= 0;
}
constexpr bool time_before_eq(jiffies_t a, jiffies_t b) { return time_after_eq(b, a); }

struct TimerList {
  static constexpr std::uint16_t kNotQueued = 0xFFFF;

  jiffies_t expires = 0;
  std::uint32_t flags = 0;
  TimerId next = kNoTimer;  // next node of the list
  TimerId prev = kNoTimer;  // previous node; kNoTimer when first in its list
  std::uint16_t list = kNotQueued;

  bool pending() const { return list != kNotQueued; }
  unsigned idx() const { return (flags & TIMER_ARRAYMASK) >> TIMER_ARRAYSHIFT; }
  unsigned cpu() const { return flags & TIMER_CPUMASK; }
  void set_idx(unsigned idx) {
    flags = (flags & ~TIMER_ARRAYMASK) | (static_cast<std::uint32_t>(idx) << TIMER_ARRAYSHIFT);
  }
  void set_cpu(unsigned cpu) { flags = (flags & ~TIMER_BASEMASK) | (cpu & TIMER_CPUMASK); }
};

// Owns every timer; ids are reused after free() so long runs stay compact.
class TimerPool {
 public:
  TimerId alloc(std::uint32_t init_flags, unsigned cpu) {
    TimerId id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
      timers_[id] = TimerList{};
    } else {
      if (timers_.size() >= kNoTimer) throw std::length_error("timer pool exhausted (2^32-1 timers)");
      id = static_cast<TimerId>(timers_.size());
      timers_.emplace_back();
    }
    timers_[id].flags = (init_flags & TIMER_INIT_FLAGS) | (cpu & TIMER_CPUMASK);
    return id;
  }
  // The caller detaches the timer first; freeing a queued timer would corrupt a list.
  void free(TimerId id) {
    if (timers_.at(id).pending()) throw std::logic_error("TimerPool::free of a pending timer");
    free_.push_back(id);
  }
  void reserve(std::size_t n) { timers_.reserve(n); }
  TimerList& operator[](TimerId id) { return timers_[id]; }
  const TimerList& operator[](TimerId id) const { return timers_[id]; }
  bool valid(TimerId id) const { return id < timers_.size(); }
  std::size_t size() const { return timers_.size(); }
  std::size_t live() const { return timers_.size() - free_.size(); }

 private:
  std::vector<TimerList> timers_;
  std::vector<TimerId> free_;
};

}  // namespace timerlab
