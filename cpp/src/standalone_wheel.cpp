// standalone_wheel.cpp — see standalone_wheel.hpp.
#include "timerlab/standalone_wheel.hpp"

#include <exception>
#include <stdexcept>
#include <string>

namespace timerlab {

StandaloneWheel::StandaloneWheel(unsigned hz, jiffies_t jiffies)
    : hz_(hz), jiffies_(jiffies), base_(pool_, hz, jiffies, 0) {}

void StandaloneWheel::set_jiffies(jiffies_t j) {
  if (time_before(j, jiffies_)) {
    throw std::invalid_argument("jiffies=" + std::to_string(j) +
                                " is before the wheel's current jiffies " + std::to_string(jiffies_) +
                                "; jiffies only move forward");
  }
  jiffies_ = j;
}

TimerId StandaloneWheel::new_timer(std::uint32_t flags) {
  if (flags & ~TIMER_INIT_FLAGS) {
    throw std::invalid_argument("timer flags may only combine TIMER_DEFERRABLE, TIMER_PINNED and TIMER_IRQSAFE");
  }
  const TimerId t = pool_.alloc(flags, 0);
  if (bucket_expiry_.size() <= t) bucket_expiry_.resize(t + 1, 0);
  return t;
}

void StandaloneWheel::check(TimerId t) const {
  if (!valid(t)) throw std::out_of_range("timer " + std::to_string(t) + " does not belong to this wheel");
}

int StandaloneWheel::mod_timer(TimerId t, jiffies_t expires, unsigned options) {
  check(t);
  return __mod_timer(*this, t, expires, options);
}

int StandaloneWheel::del_timer(TimerId t) {
  check(t);
  return timer_delete(*this, t);
}

void StandaloneWheel::trace_timer_start(TimerBase&, TimerId t, const EnqueueResult& r) {
  bucket_expiry_[t] = r.bucket_expiry;
  events_.push_back({WheelEventKind::timer_start, t, jiffies_, pool_[t].expires, r.bucket_expiry, r.idx});
}

void StandaloneWheel::trace_timer_cancel(TimerBase&, TimerId t) {
  events_.push_back({WheelEventKind::timer_cancel, t, jiffies_, pool_[t].expires, bucket_expiry_[t], pool_[t].idx()});
}

std::size_t StandaloneWheel::run(jiffies_t j, bool one_collection, const ExpireFn& on_expire) {
  set_jiffies(j);
  std::size_t n = 0;
  // A throwing callback must not leave collected timers stranded: the run
  // completes without further callbacks and the first error is rethrown.
  std::exception_ptr error;
  auto expire = [&](TimerId t, jiffies_t baseclk) {
    ++n;
    // The kernel logs the detach of an expiring timer as timer_cancel.
    trace_timer_cancel(base_, t);
    events_.push_back({WheelEventKind::timer_expire_entry, t, jiffies_, pool_[t].expires, baseclk, pool_[t].idx()});
    if (on_expire && !error) {
      try {
        on_expire(t, baseclk);
      } catch (...) {
        error = std::current_exception();
      }
    }
  };
  if (one_collection) {
    if (base_.running_timer() == kNoTimer) base_.run_one_collection(jiffies_, expire);
  } else {
    base_.run_timers(jiffies_, expire);
  }
  if (error) std::rethrow_exception(error);
  return n;
}

}  // namespace timerlab
