// standalone_wheel.hpp — one timer base on its own, for notebooks and for
// replaying the timer events of a real trace base by base.
//
// Wraps a TimerBase (wheel.hpp) and the timer API (mod_timer.hpp) around a
// jiffies clock that the user advances. Every operation that the kernel
// traces is logged with the fields of its tracepoint (timer_start,
// timer_cancel, timer_expire_entry), so a notebook can show exactly what the
// kernel would have printed.
//
// Simplifications vs. the kernel
//   * One base: a timer never changes base, whatever its flags.
//   * jiffies only move forward (as in the kernel); a step back is refused.
#pragma once

#include <functional>
#include <vector>

#include "timerlab/mod_timer.hpp"

namespace timerlab {

enum class WheelEventKind : std::uint8_t { timer_start = 0, timer_cancel = 1, timer_expire_entry = 2 };

struct WheelEvent {
  WheelEventKind kind;
  TimerId timer;
  jiffies_t jiffies;        // jiffies when the event happened
  jiffies_t expires;        // timer->expires
  jiffies_t bucket_expiry;  // timer_start: bucket expiry; expire: baseclk
  unsigned idx;             // bucket index (timer_start and expire)
};

class StandaloneWheel {
 public:
  StandaloneWheel(unsigned hz, jiffies_t jiffies);

  unsigned hz() const { return hz_; }
  jiffies_t jiffies() const { return jiffies_; }
  // Throws std::invalid_argument when j is before the current jiffies.
  void set_jiffies(jiffies_t j);

  TimerBase& base() { return base_; }
  const TimerBase& base() const { return base_; }
  TimerPool& pool() { return pool_; }
  const TimerPool& pool() const { return pool_; }

  // A new, not yet armed timer with init flags (TIMER_DEFERRABLE, ...).
  TimerId new_timer(std::uint32_t flags);
  bool valid(TimerId t) const { return t < pool_.size(); }
  // Throws std::out_of_range for an id this wheel never handed out.
  void check(TimerId t) const;

  int mod_timer(TimerId t, jiffies_t expires, unsigned options);
  int del_timer(TimerId t);
  // Bucket expiry of a pending timer as computed when it was enqueued.
  jiffies_t bucket_expiry(TimerId t) const { return bucket_expiry_[t]; }

  using ExpireFn = std::function<void(TimerId, jiffies_t baseclk)>;
  // Advance jiffies to j and run the base (__run_timers); with
  // one_collection, stop after the first due collection.
  std::size_t run(jiffies_t j, bool one_collection, const ExpireFn& on_expire);

  const std::vector<WheelEvent>& events() const { return events_; }
  void clear_events() { events_.clear(); }

  // Context hooks for __mod_timer (mod_timer.hpp).
  TimerBase& timer_base(TimerId) { return base_; }
  TimerBase& target_base(TimerId, TimerBase& current) { return current; }
  void trace_timer_start(TimerBase&, TimerId t, const EnqueueResult& r);
  void trace_timer_cancel(TimerBase&, TimerId t);
  void trigger_dyntick_cpu(TimerBase&, TimerId, bool) {}

 private:
  unsigned hz_;
  jiffies_t jiffies_;
  TimerPool pool_;
  TimerBase base_;
  std::vector<jiffies_t> bucket_expiry_;
  std::vector<WheelEvent> events_;
};

}  // namespace timerlab
